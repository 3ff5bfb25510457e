import DocsyncModel
import Foundation

/// Makes the trees of a build's commits from their parent's, without an index and without
/// holding a whole tree: each folder a commit changes is read (from its loose object by the
/// agent, ``LooseObjectReader``, or from one `cat-file --batch` the build starts when an object
/// is not loose), its changed entries merged in as its bytes come (``GitTree/Merge``), and the
/// new tree handed on as it is made: written by the agent (``LooseObject``), or where git must
/// write it, by `hash-object -t tree`. Folders the commits do not touch are never read.
///
/// The agent holds 64 KiB of a tree at a time, whatever the size of the folder (git's own
/// commands hold the whole of it, as they do for `git commit`): a folder of 100,000 documents is
/// a tree of 4.7 MB, of a million 47 MB. Runs on the caller's thread and waits for git; the
/// builder calls it off the agent's (``GitRunner/offThread(_:)``).
final class GitTreeWriter {
    /// The changes of one commit below one folder: its files (`nil`: removed) and its folders'.
    /// As in git's index, a file put where a folder was takes the folder's place, all of it
    /// (`wiped`: what is put in a folder of that name afterwards starts from nothing), and a
    /// file put in a folder takes the place of a file of the folder's name.
    final class Edits {
        var files: [[UInt8]: (mode: [UInt8], hash: [UInt8])?] = [:]
        var folders: [[UInt8]: Edits] = [:]
        var wiped: Set<[UInt8]> = []
    }

    let git: GitRunner
    /// Where new trees are written, and the commits over them; `nil`: by `hash-object` and `commit-tree`.
    let store: LooseObjectStore?
    /// The build's `cat-file --batch`, asked for one tree after another; started for the first
    /// object that is not loose.
    private var started: ChildSession?
    /// The loose object ``request(_:at:)`` found, whose bytes ``body(_:into:)`` reads.
    private var loose: LooseObjectReader?
    /// The name the build's first commit reads its parent's tree by (`<commit>^{tree}`).
    private var baseName: String?
    /// The tree a build's first commit was made on.
    private(set) var parentTree: String?
    /// The root tree the next commit is made on: a hash, or ``baseName`` until it is read.
    private var current: String?
    /// The binary size of the repository's hashes, once a tree read says.
    private var hashSize: Int?
    /// The trees the agent wrote itself, as loose objects (for ``TreePacker``).
    private(set) var written: [WrittenTree] = []
    /// A new tree goes to `hash-object` in pieces of this size.
    private static let piece = 64 << 10

    init(git: GitRunner, store: LooseObjectStore?) {
        self.git = git
        self.store = store
    }

    /// Ends the build's `cat-file`, if it started one.
    func close() {
        _ = started?.finish()
    }

    private func objects() throws(GitError) -> ChildSession {
        if let started { return started }
        let session = try git.session(["cat-file", "--batch"])
        started = session
        return session
    }

    /// The edits of `entries` (`path` → `mode hash`, `nil` removed), paths split at `/`. A path
    /// with an empty, `.`, `..` or `.git` part is refused: git would refuse it in a tree. So is
    /// one with a NUL, which ends a name in a tree: the agent writes trees itself, and such a
    /// name would make one that does not read back.
    static func edits(_ entries: [(path: String, entry: String?)]) throws(GitError) -> Edits {
        let root = Edits()
        paths: for (path, entry) in entries {
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            guard !path.utf8.contains(0), parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && $0.lowercased() != ".git" }) else {
                throw GitError("cannot commit \(path): not a path git keeps")
            }
            let file = try entry.map { text throws(GitError) in
                let fields = text.split(separator: " ")
                guard fields.count == 2, let hash = Hex.decode(fields[1].utf8) else { throw GitError("cannot commit \(path): no blob") }
                return (mode: Array(fields[0].utf8), hash: hash)
            }
            var folder = root
            for part in parts.dropLast() {
                let name = Array(part.utf8)
                // Below a file put in this commit there is nothing to remove.
                if file == nil, case .some(.some) = folder.files[name] { continue paths }
                if file != nil { folder.files[name] = .some(nil) }
                if let known = folder.folders[name] {
                    folder = known
                } else {
                    let made = Edits()
                    folder.folders[name] = made
                    folder = made
                }
            }
            let name = Array(parts.last!.utf8)
            if file != nil {
                folder.folders[name] = nil
                folder.wiped.insert(name)
            }
            folder.files[name] = .some(file)
        }
        return root
    }

    /// The build's first commit goes on `base`'s tree (a commit; `nil`: on nothing).
    func start(on base: String?) {
        baseName = base.map { $0 + "^{tree}" }
        current = baseName
    }

    /// The root tree of `edits` made on the tree the last commit made (or ``start(on:)`` named).
    /// `replaced` hears each changed file's entry in the tree the edits were made on (`mode
    /// hash`, by path).
    func apply(_ edits: Edits, replaced: inout [String: String]) throws(GitError) -> String {
        guard let made = try write(edits, at: "", old: current, replaced: &replaced) else { throw GitError("git wrote no tree") }
        current = made
        return made
    }

    /// The new tree of the folder at `path` (its old one `old`, a name git knows it by), `nil`
    /// when it is left empty. The root is written even empty.
    private func write(_ edits: Edits, at path: String, old: String?, replaced: inout [String: String]) throws(GitError) -> String? {
        var changes = edits.files.map { GitTree.Change(name: $0.key, folder: false, entry: $0.value) }
        if !edits.folders.isEmpty {
            let kept = Set(edits.folders.keys).subtracting(edits.wiped)
            let olds = try old.map { name throws(GitError) in try subtrees(kept, of: name, at: path) } ?? [:]
            for (name, inner) in edits.folders {
                let child = path + String(decoding: name, as: UTF8.self) + "/"
                let was = olds[name]
                let made = try write(inner, at: child, old: was, replaced: &replaced)
                if made == was { continue }
                changes.append(GitTree.Change(name: name, folder: true, entry: try made.map { hex throws(GitError) in
                    guard let hash = Hex.decode(hex.utf8) else { throw GitError("git wrote no tree for \(child)") }
                    return (GitTree.folderMode, hash)
                }))
            }
        }
        for name in edits.wiped where edits.folders[name] == nil {
            changes.append(GitTree.Change(name: name, folder: true, entry: nil))
        }
        changes.sort { GitTree.order($0.name, $0.folder, $1.name, $1.folder) < 0 }
        return try merge(changes, into: old, at: path, hashSize: hashSize ?? edits.hashSize, replaced: &replaced)
    }

    /// The hashes of the folders among `names` in the tree `tree` (a file found under a folder's
    /// name is not one: the edits below that name make a new folder, which takes the file's place).
    private func subtrees(_ names: Set<[UInt8]>, of tree: String, at path: String) throws(GitError) -> [[UInt8]: String] {
        let header = try request(tree, at: path)
        var finder = GitTree.Finder(names: names, hashSize: header.hashSize)
        try body(header.size) { piece throws(GitError) in try finder.feed(piece) }
        return finder.found.filter(\.value.folder).mapValues { Hex.encode($0.hash) }
    }

    /// The tree of `changes` made on the tree `old` (none: on nothing), at `path`: its bytes
    /// merged as they come and handed on as they are made; `nil` when it is left empty.
    private func merge(
        _ changes: [GitTree.Change], into old: String?, at path: String, hashSize: Int, replaced: inout [String: String]
    ) throws(GitError) -> String? {
        var merge = GitTree.Merge(changes: changes, hashSize: hashSize)
        var made: NewTree?
        var oldHash: String?
        if let old {
            let header = try request(old, at: path)
            oldHash = header.hash
            try body(header.size) { piece throws(GitError) in
                try merge.feed(piece) { name, mode, hash in
                    replaced[path + String(decoding: name, as: UTF8.self)] = String(decoding: mode, as: UTF8.self) + " " + Hex.encode(hash)
                }
                if merge.out.count >= Self.piece { try handOn(&merge, to: &made) }
            }
        }
        try merge.finish()
        if made == nil {
            if merge.out.isEmpty && !path.isEmpty { return nil }
            if !merge.changed, let oldHash { return oldHash }
        }
        try handOn(&merge, to: &made)
        guard let hash = try made?.finish(), hash.utf8.count == hashSize * 2 else { throw GitError("git gave no tree for \(Self.name(path))") }
        if case .here(let object)? = made { written.append(WrittenTree(path: path, hash: hash, size: object.size)) }
        return hash
    }

    /// A tree being written: by the agent, or by `hash-object`.
    private enum NewTree {
        case here(LooseObject)
        case git(ChildSession)

        func append(_ bytes: ArraySlice<UInt8>) throws(GitError) {
            switch self {
            case .here(let object): try object.append(bytes)
            // A hash-object that stops reading has failed: its status and message say why.
            case .git(let session): session.write(bytes)
            }
        }

        func finish() throws(GitError) -> String {
            switch self {
            case .here(let object): return try object.finish()
            case .git(let session):
                let done = session.finish()
                guard done.status == 0 else {
                    throw GitError("git hash-object failed: \(String(decoding: done.stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).prefix(500))")
                }
                return String(decoding: done.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
    }

    /// Hands the merged bytes so far on to the new tree, started with the first of them. Stored,
    /// not compressed: a tree of 100,000 entries is hashes that do not compress, and zlib was
    /// half of the time it took to write; `git gc` packs it as it does any object.
    private func handOn(_ merge: inout GitTree.Merge, to made: inout NewTree?) throws(GitError) {
        if made == nil {
            if let store {
                made = .here(LooseObject("tree", in: store))
            } else {
                made = .git(try git.session(["-c", "core.looseCompression=0", "hash-object", "-w", "-t", "tree", "--stdin"]))
            }
        }
        try made?.append(merge.out[...])
        merge.clearOut()
    }

    /// Asks `cat-file` for the tree `name` (of the folder at `path`): its hash, size and hash size.
    /// Its bytes come next (``body(_:into:)``).
    private func request(_ name: String, at path: String) throws(GitError) -> (hash: String, size: Int, hashSize: Int) {
        if let (hash, reader) = looseTree(name) {
            guard reader.kind == "tree" else { throw GitError("git gave a \(reader.kind), not a tree, for \(Self.name(path))") }
            loose = reader
            return found(hash, size: reader.size, asked: name)
        }
        let objects = try objects()
        guard !name.contains("\n"), objects.write(Array((name + "\n").utf8)[...]), let line = objects.readLine() else {
            throw GitError("git cat-file stopped: \(String(decoding: objects.finish().stderr, as: UTF8.self).prefix(500))")
        }
        let header = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard header.count == 3, let size = Int(header[2]), size >= 0 else {
            throw GitError(name == baseName ? "git cannot read the tree of \(name.dropLast(7))" : "git has no tree for \(Self.name(path))")
        }
        guard header[1] == "tree" else {
            try body(size) { _ in }
            throw GitError("git gave a \(header[1]), not a tree, for \(Self.name(path))")
        }
        return found(String(header[0]), size: size, asked: name)
    }

    /// The tree `hash` of `size` bytes, found for the name `asked`: the build's parent tree when
    /// asked by ``baseName``; its hashes say the repository's hash size.
    private func found(_ hash: String, size: Int, asked name: String) -> (hash: String, size: Int, hashSize: Int) {
        if name == baseName { parentTree = hash }
        hashSize = hash.utf8.count / 2
        return (hash, size, hash.utf8.count / 2)
    }

    /// The `size` bytes of the object ``request(_:at:)`` asked for, handed to `sink` in pieces.
    private func body(_ size: Int, into sink: (ArraySlice<UInt8>) throws(GitError) -> Void) throws(GitError) {
        if let reader = loose {
            loose = nil
            return try reader.body(into: sink)
        }
        let objects = try objects()
        guard try objects.read(size, into: sink), try objects.read(1, into: { _ in }) else { throw GitError("git cat-file was cut short") }
    }

    /// The object `name` (a tree's hash, or ``baseName``: a commit's tree) read from its loose
    /// object, and its hash; `nil` when it, or the commit, is not loose.
    private func looseTree(_ name: String) -> (String, LooseObjectReader)? {
        guard let store else { return nil }
        var hash = name
        if name == baseName {
            guard let commit = LooseObjectReader(hash: String(name.dropLast("^{tree}".count)), in: store), commit.kind == "commit" else { return nil }
            var head: [UInt8] = []
            guard (try? commit.body(into: { piece in if head.count < 128 { head += piece.prefix(128) } })) != nil else { return nil }
            let line = head.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first ?? []
            guard line.starts(with: "tree ".utf8) else { return nil }
            hash = String(decoding: line.dropFirst(5), as: UTF8.self)
        }
        return LooseObjectReader(hash: hash, in: store).map { (hash, $0) }
    }

    /// A folder's path as messages say it.
    private static func name(_ path: String) -> String {
        path.isEmpty ? "the top folder" : path
    }
}

extension GitTreeWriter.Edits {
    /// The binary size of the hashes the edits carry (SHA-1 unless they say otherwise).
    var hashSize: Int {
        if let size = files.values.lazy.compactMap({ $0?.hash.count }).first { return size }
        return folders.values.lazy.map(\.hashSize).first ?? 20
    }
}
