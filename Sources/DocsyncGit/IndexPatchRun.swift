import DocsyncFiles

/// The bytes an index patch reads and writes, each side hashed as it goes (one hash while the
/// two are the same: most of an index is written as it was read), written 256 KiB at a time.
struct PatchStream {
    private var input: GitHasher
    /// `nil` while what was written is what was read.
    private var output: GitHasher?
    private var buffer: [UInt8] = []
    private let fd: Int32
    private let path: String
    let hashSize: Int
    static let piece = 256 << 10

    init(fd: Int32, path: String, hashSize: Int) {
        self.hashSize = hashSize
        self.fd = fd
        self.path = path
        input = GitHasher(hashSize: hashSize)
        buffer.reserveCapacity(Self.piece)
    }

    /// Bytes read and written as they are.
    mutating func copy(_ bytes: ArraySlice<UInt8>) throws(GitError) {
        input.update(bytes)
        output?.update(bytes)
        try append(bytes)
    }

    /// Bytes read (`old`) and written otherwise (`new`).
    mutating func replace(_ old: ArraySlice<UInt8>, with new: [UInt8]) throws(GitError) {
        if output == nil { output = input }
        input.update(old)
        output?.update(new[...])
        try append(new[...])
    }

    /// The hash of what was read.
    var inputHash: [UInt8] { input.finalize() }

    /// Writes the hash of what was written after it, and the rest of the buffer.
    mutating func finish() throws(GitError) {
        try append((output ?? input).finalize()[...])
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
    private var reader: DescriptorReader
    private var stream: PatchStream
    private let replacing: Replacements
    /// The old index's time in seconds: an entry changed in that second or after is racily clean.
    private let indexSeconds: UInt32
    private var replaced: [[UInt8]] = []

    init(input: Int32, stream: PatchStream, replacing: Replacements, indexSeconds: UInt32) {
        reader = DescriptorReader(fd: input, longest: GitIndexFile.longest)
        self.stream = stream
        self.replacing = replacing
        self.indexSeconds = indexSeconds
    }

    mutating func run() throws(GitError) -> IndexPatch.Outcome {
        let hashSize = stream.hashSize
        guard var entries = IndexEntries(&reader, hashSize: hashSize) else { return .leftToGit("not an index of versions 2 to 4") }
        // Entries kept as they are go on in runs, copied and hashed at once: an index of
        // 100,000 entries is a handful of runs, not 100,000 copies.
        reader.kept = reader.at - 12
        for _ in 0..<entries.count {
            guard let (size, flags, name) = entries.next(&reader) else { return .leftToGit("an entry does not read as git writes one") }
            if let why = try entry(size: size, flags: flags, name: name) { return .leftToGit(why) }
            if reader.at - (reader.kept ?? reader.at) >= PatchStream.piece { try keepRun() }
        }
        try keepRun()
        reader.kept = nil
        while reader.need(hashSize + 1) {
            if let why = try extensionRead() { return .leftToGit(why) }
        }
        guard reader.available == hashSize else { return .leftToGit("the index ends inside an extension") }
        let trailer = Array(reader.bytes[reader.at...])
        guard trailer.contains(where: { $0 != 0 }) else { return .leftToGit("the index has no checksum (index.skipHash)") }
        guard trailer == stream.inputHash else { return .leftToGit("the index's checksum does not match: it is damaged") }
        try stream.finish()
        return .written(replaced: replaced.count)
    }

    /// Copies the run of bytes kept as they are, up to `reader.at`, and starts the next there.
    private mutating func keepRun() throws(GitError) {
        if let kept = reader.kept, kept < reader.at { try stream.copy(reader.bytes[kept..<reader.at]) }
        reader.kept = reader.at
    }

    /// One entry, at `reader.at`, taken: replaced or smudged (the run before it copied first), or
    /// left in the run. Why git must write the index instead, if it must.
    private mutating func entry(size: Int, flags: UInt16, name: ArraySlice<UInt8>) throws(GitError) -> String? {
        typealias Field = IndexEntries.Field
        let hashSize = stream.hashSize
        let mode = reader.u32(Field.mode)
        var new: [UInt8]
        if flags & 0x3000 == 0, replacing.filter.mayHold(name), let change = replacing.byPath[Array(name)], mode == change.oldMode,
            reader.bytes[(reader.at + Field.hash)..<(reader.at + Field.hash + hashSize)].elementsEqual(change.oldHash)
        {
            guard flags & 0x4000 == 0 else { return "\(String(decoding: name, as: UTF8.self)) has extended flags (skip-worktree or intent-to-add)" }
            new = Array(reader.bytes[reader.at..<(reader.at + size)])
            for i in 0..<Field.hash { new[i] = 0 }
            Self.put(change.newMode, at: Field.mode, in: &new)
            new.replaceSubrange(Field.hash..<(Field.hash + hashSize), with: change.newHash)
            let kept = flags & 0x0fff
            new[Field.hash + hashSize] = UInt8(kept >> 8)
            new[Field.hash + hashSize + 1] = UInt8(kept & 0xff)
            replaced.append(Array(name))
        } else if mode & 0o170000 != 0o160000, indexSeconds <= reader.u32(Field.mtimeSeconds), reader.u32(Field.size) != 0 {
            new = Array(reader.bytes[reader.at..<(reader.at + size)])
            Self.put(0, at: Field.size, in: &new)
        } else {
            reader.at += size
            return nil
        }
        try keepRun()
        try stream.replace(reader.bytes[reader.at..<(reader.at + size)], with: new)
        reader.at += size
        reader.kept = reader.at
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
            guard let new = IndexCacheTree(replaced: replaced, hashSize: stream.hashSize).invalidated(tree) else {
                return "a replaced path is a folder of the cache tree, or it does not read as git writes it"
            }
            var written = Array("TREE".utf8)
            Self.put(UInt32(new.count), at: 4, in: &written)
            try stream.replace((header + tree)[...], with: written + new)
            return nil
        default:
            return "the index has a \(signature) extension"
        }
    }

    /// `value` big-endian at `offset` of `bytes` (grown to hold it).
    private static func put(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        if bytes.count < offset + 4 { bytes += [UInt8](repeating: 0, count: offset + 4 - bytes.count) }
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * i)) }
    }
}
