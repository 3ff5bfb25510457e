import DocsyncFiles

/// The bytes an index patch reads and writes, each side hashed as it goes (one hash while the
/// two are the same: most of an index is written as it was read), written 256 KiB at a time.
/// What was read is not hashed when its checksum is known (``IndexPatch``).
struct PatchStream {
    /// `nil` when the checksum of what is read is known.
    private var input: GitHasher?
    /// `nil` while what was written is what was read.
    private var output: GitHasher?
    private let knownChecksum: [UInt8]?
    private var buffer: [UInt8] = []
    private let fd: Int32
    private let path: String
    let hashSize: Int
    static let piece = 256 << 10

    init(fd: Int32, path: String, hashSize: Int, knownChecksum: [UInt8]? = nil) {
        self.hashSize = hashSize
        self.fd = fd
        self.path = path
        self.knownChecksum = knownChecksum
        if knownChecksum == nil { input = GitHasher(hashSize: hashSize) } else { output = GitHasher(hashSize: hashSize) }
        buffer.reserveCapacity(Self.piece)
    }

    /// Bytes read and written as they are.
    mutating func copy(_ bytes: ArraySlice<UInt8>) throws(GitError) {
        input?.update(bytes)
        output?.update(bytes)
        try append(bytes)
    }

    /// Bytes read (`old`) and written otherwise (`new`).
    mutating func replace(_ old: ArraySlice<UInt8>, with new: [UInt8]) throws(GitError) {
        if output == nil { output = input }
        input?.update(old)
        output?.update(new[...])
        try append(new[...])
    }

    /// The checksum what was read should end with: its hash, or the one known.
    var inputHash: [UInt8] { input?.finalize() ?? knownChecksum ?? [] }

    /// Writes the hash of what was written after it, and the rest of the buffer.
    mutating func finish() throws(GitError) {
        guard let hash = (output ?? input)?.finalize() else { throw GitError("an index patch had no hash to write") }
        try append(hash[...])
        try flush()
    }

    private mutating func append(_ bytes: ArraySlice<UInt8>) throws(GitError) {
        buffer += bytes
        if buffer.count >= Self.piece { try flush() }
    }

    private mutating func flush() throws(GitError) {
        let (fd, path) = (self.fd, self.path)
        let written = buffer.withUnsafeBytes { raw in Result { () throws(FileSystemError) in try FileSystem.writeAll(raw, to: fd, path: path) } }
        if case .failure(let error) = written { throw GitError("cannot write \(path): \(error)") }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// One run of ``IndexPatch``: the header, the entries, the extensions and the checksum, in turn.
struct Patch {
    typealias Field = IndexEntries.Field
    private var reader: DescriptorReader
    private var stream: PatchStream
    private let edits: IndexEdits
    /// The old index's time in seconds: an entry changed in that second or after is racily clean.
    private let indexSeconds: UInt32
    private var version: UInt32 = 2
    private var names = PatchNames(kept: false)
    /// The paths replaced, added and removed so far: the cache tree's folders of them go invalid.
    private var changed: [[UInt8]] = []
    /// The next of `edits.added` to add.
    private var nextAdded = 0
    /// Paths added that the entries read now may lie under (a file added where the index has a folder).
    private var openAdded: [[UInt8]] = []
    private var removed = 0

    init(input: Int32, stream: PatchStream, edits: IndexEdits, indexSeconds: UInt32) {
        reader = DescriptorReader(fd: input, longest: GitIndexFile.longest)
        self.stream = stream
        self.edits = edits
        self.indexSeconds = indexSeconds
    }

    mutating func run() throws(GitError) -> IndexPatch.Outcome {
        let hashSize = stream.hashSize
        guard var entries = IndexEntries(&reader, hashSize: hashSize) else { return .leftToGit("not an index of versions 2 to 4") }
        version = entries.version
        if let why = try header(count: Int(entries.count)) { return .leftToGit(why) }
        // Entries kept as they are go on in runs, copied and hashed at once: an index of
        // 100,000 entries is a handful of runs, not 100,000 copies. Most are passed over on
        // the bytes read (``PlainRun``); the general path takes each of the rest.
        var left = Int(entries.count)
        while left > 0 {
            left -= passOver(atMost: left)
            if left > 0 {
                guard let (size, flags, name) = entries.next(&reader) else { return .leftToGit("an entry does not read as git writes one") }
                if let why = try entry(size: size, flags: flags, name: name) { return .leftToGit(why) }
                left -= 1
            }
            if reader.at - (reader.kept ?? reader.at) >= PatchStream.piece { try keepRun() }
        }
        try keepRun()
        while nextAdded < edits.added.count { try add() }
        guard removed == edits.removals else { return .leftToGit("a path to remove is not in the index as the last commit had it") }
        reader.kept = nil
        while reader.need(hashSize + 1) {
            if let why = try extensionRead() { return .leftToGit(why) }
        }
        guard reader.available == hashSize else { return .leftToGit("the index ends inside an extension") }
        let trailer = Array(reader.bytes[reader.at...])
        guard trailer.contains(where: { $0 != 0 }) else { return .leftToGit("the index has no checksum (index.skipHash)") }
        guard trailer == stream.inputHash else { return .leftToGit("the index's checksum does not match: it is damaged") }
        try stream.finish()
        return .written(changed: changed.count)
    }

    /// The header, just read: kept in the first run, or written with the count the entries added
    /// and removed make (each one must then be added or removed as planned, or git writes the index).
    private mutating func header(count: Int) throws(GitError) -> String? {
        let start = reader.at - 12
        guard !edits.added.isEmpty || edits.removals > 0 else {
            reader.kept = start
            return nil
        }
        let newCount = count + edits.added.count - edits.removals
        guard newCount >= 0, newCount <= Int(UInt32.max) else { return "the index cannot hold the entries added" }
        var new = Array(reader.bytes[start..<reader.at])
        PatchEntryBytes.put(UInt32(newCount), at: 8, in: &new)
        try stream.replace(reader.bytes[start..<reader.at], with: new)
        reader.kept = reader.at
        names = PatchNames(kept: version == 4)
        return nil
    }

    /// Passes over the entries after `reader.at` kept as they are, as far as the bytes read
    /// go (versions 2 and 3, with no added path open); how many.
    private mutating func passOver(atMost limit: Int) -> Int {
        guard version != 4, openAdded.isEmpty else { return 0 }
        let next = nextAdded < edits.added.count ? edits.added[nextAdded].path : nil
        let run = PlainRun(hashSize: stream.hashSize, filter: edits.filter, nextAdded: next, indexSeconds: indexSeconds)
        let from = reader.at
        let (end, count) = reader.bytes.withUnsafeBufferPointer { run.pass($0, from: from, limit: limit) }
        reader.at = end
        return count
    }

    /// Copies the run of bytes kept as they are, up to `reader.at`, and starts the next there.
    private mutating func keepRun() throws(GitError) {
        if let kept = reader.kept, kept < reader.at { try stream.copy(reader.bytes[kept..<reader.at]) }
        reader.kept = reader.at
    }

    /// One entry, at `reader.at`, taken, after the paths to add that go before it: replaced,
    /// removed, smudged or written under its name anew (the run before it copied first), or left
    /// in the run. Why git must write the index instead, if it must.
    private mutating func entry(size: Int, flags: UInt16, name: ArraySlice<UInt8>) throws(GitError) -> String? {
        while nextAdded < edits.added.count, edits.added[nextAdded].path.lexicographicallyPrecedes(name) { try add() }
        if nextAdded < edits.added.count, edits.added[nextAdded].path.elementsEqual(name) {
            return "\(String(decoding: name, as: UTF8.self)) is to be added, and the index holds it"
        }
        let mode = reader.u32(Field.mode)
        var new: [UInt8]?
        if flags & 0x3000 == 0, edits.filter.mayHold(name), let edit = edits.byPath[Array(name)] {
            if mode == edit.old.mode, reader.bytes[(reader.at + Field.hash)..<(reader.at + Field.hash + stream.hashSize)].elementsEqual(edit.old.hash) {
                guard flags & 0x4000 == 0 else { return "\(String(decoding: name, as: UTF8.self)) has extended flags (skip-worktree or intent-to-add)" }
                guard let to = edit.new else { return try remove(size: size, name: name) }
                // The fields before the name as `--index-info` writes them, the name as it was.
                let nameStart = Field.hash + stream.hashSize + 2
                new = PatchEntryBytes.fixed(mode: to.mode, hash: to.hash, nameLength: Int(flags & 0xfff))
                    + reader.bytes[(reader.at + nameStart)..<(reader.at + size)]
                changed.append(Array(name))
            } else if edit.new == nil {
                return "\(String(decoding: name, as: UTF8.self)) is to be removed, and the user staged something else"
            }
        }
        if let why = folderConflict(name) { return why }
        if new == nil, mode & 0o170000 != 0o160000, indexSeconds <= reader.u32(Field.mtimeSeconds), reader.u32(Field.size) != 0 {
            new = Array(reader.bytes[reader.at..<(reader.at + size)])
            PatchEntryBytes.put(0, at: Field.size, in: &new!)
        }
        if names.shifted {
            let nameStart = Field.hash + stream.hashSize + (flags & 0x4000 != 0 ? 4 : 2)
            new = PatchEntryBytes.renamed(new ?? Array(reader.bytes[reader.at..<(reader.at + size)]), nameStart: nameStart, name: name, after: names.written)
        }
        names.wrote(name)
        guard let new else {
            reader.at += size
            return nil
        }
        try keepRun()
        try stream.replace(reader.bytes[reader.at..<(reader.at + size)], with: new)
        reader.at += size
        reader.kept = reader.at
        return nil
    }

    /// Leaves out the entry at `reader.at` (the run before it copied first).
    private mutating func remove(size: Int, name: ArraySlice<UInt8>) throws(GitError) -> String? {
        changed.append(Array(name))
        try keepRun()
        try stream.replace(reader.bytes[reader.at..<(reader.at + size)], with: [])
        reader.at += size
        reader.kept = reader.at
        removed += 1
        names.removed()
        return nil
    }

    /// Writes the next path to add, at `reader.at` (the run before it copied first).
    private mutating func add() throws(GitError) {
        let (path, entry) = edits.added[nextAdded]
        nextAdded += 1
        try keepRun()
        try stream.replace(reader.bytes[reader.at..<reader.at], with: PatchEntryBytes.added(path, mode: entry.mode, hash: entry.hash, version: version, after: names.written))
        names.added(path)
        changed.append(path)
        openAdded.append(path)
    }

    /// Why an entry the index keeps cannot stay beside the paths added, if it cannot: it lies
    /// under one (git's `--index-info` would remove it), or one lies under it.
    private mutating func folderConflict(_ name: ArraySlice<UInt8>) -> String? {
        let slash = UInt8(ascii: "/")
        if !openAdded.isEmpty {
            // Entries under a path follow it in the index's order; once one does not, none will.
            openAdded.removeAll { !name.starts(with: $0) }
            if let file = openAdded.first(where: { name.count > $0.count && name[name.startIndex + $0.count] == slash }) {
                return "\(String(decoding: file, as: UTF8.self)) is added as a file, and the index has a folder there"
            }
        }
        var k = nextAdded
        while k < edits.added.count, edits.added[k].path.starts(with: name) {
            let path = edits.added[k].path
            if path.count > name.count && path[name.count] == slash {
                return "\(String(decoding: path, as: UTF8.self)) is added under \(String(decoding: name, as: UTF8.self)), a file of the index"
            }
            k += 1
        }
        return nil
    }

    /// One extension, at `reader.at`. Why git must write the index instead, if it must.
    private mutating func extensionRead() throws(GitError) -> String? {
        guard reader.need(8) else { return "an extension's header is cut" }
        let signature = String(decoding: reader.bytes[reader.at..<(reader.at + 4)], as: UTF8.self)
        let length = Int(reader.u32(4))
        switch signature {
        case "REUC":
            return try reader.take(8 + length) { piece throws(GitError) in try stream.copy(piece) } ? nil : "an extension is cut"
        case "TREE":
            guard length <= IndexPatch.treeHeld else { return "the cache tree is over \(IndexPatch.treeHeld) bytes" }
            var tree: [UInt8] = []
            tree.reserveCapacity(length)
            let header = Array(reader.bytes[reader.at..<(reader.at + 8)])
            reader.at += 8
            guard reader.take(length, { tree += $0 }) else { return "the cache tree is cut" }
            guard let new = IndexCacheTree(changed: changed, hashSize: stream.hashSize).invalidated(tree) else {
                return "a changed path is a folder of the cache tree, or it does not read as git writes it"
            }
            var written = Array("TREE".utf8)
            PatchEntryBytes.put(UInt32(new.count), at: 4, in: &written)
            try stream.replace((header + tree)[...], with: written + new)
            return nil
        default:
            return "the index has a \(signature) extension"
        }
    }
}
