import DocsyncModel
import Foundation

/// Makes the trees of a build's commits from their parent's, without an index: each folder a
/// commit changes is read (`cat-file --batch`, the folders of one level in one process), its
/// changed entries merged in (``GitTree``), and the new tree written (`hash-object -t tree`, which
/// checks that it reads as a tree). Folders the commits do not touch are never read.
///
/// A build's trees are kept while it lasts (`written`), so its next commit does not read again a
/// folder the last one wrote. The agent holds at most the trees of the folders a build changes:
/// 4.7 MB for a folder of 100,000 documents, as git's own commands hold them.
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

    /// A tree: its hash as git prints it and its bytes.
    struct Tree {
        var hash: String
        var bytes: [UInt8]
    }

    let git: GitRunner
    /// The trees written during this build, by their folder's path (`""`, `notes/`).
    private var written: [String: Tree] = [:]
    /// The tree a build's first commit was made on.
    private(set) var parentTree: String?
    /// The root tree the next commit is made on.
    private var current: Tree?

    init(git: GitRunner) {
        self.git = git
    }

    /// The edits of `entries` (`path` → `mode hash`, `nil` removed), paths split at `/`. A path
    /// with an empty, `.`, `..` or `.git` part is refused: git would refuse it in a tree.
    static func edits(_ entries: [(path: String, entry: String?)]) throws(GitError) -> Edits {
        let root = Edits()
        paths: for (path, entry) in entries {
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && $0.lowercased() != ".git" }) else {
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
    func start(on base: String?) async throws(GitError) {
        guard let base else { return }
        guard let root = try await read([base + "^{tree}"]).first ?? nil else { throw GitError("git cannot read the tree of \(base)") }
        current = root
        parentTree = root.hash
    }

    /// The root tree of `edits` made on the tree the last commit made (or ``start(on:)`` read).
    /// `replaced` hears each changed file's entry in the tree the edits were made on (`mode
    /// hash`, by path).
    func apply(_ edits: Edits, replaced: inout [String: String]) async throws(GitError) -> String {
        guard let made = try await write(edits, at: "", old: current, replaced: &replaced) else { throw GitError("git wrote no tree") }
        if let tree = written[""], tree.hash == made { current = tree }
        return made
    }

    /// The new tree of the folder at `path` (its old one `old`), `nil` when it is left empty. The
    /// root is written even empty.
    private func write(_ edits: Edits, at path: String, old: Tree?, replaced: inout [String: String]) async throws(GitError) -> String? {
        let oldBytes = old?.bytes ?? []
        let hashSize = old.map { $0.hash.utf8.count / 2 } ?? edits.hashSize
        var changes = edits.files.map { GitTree.Change(name: $0.key, folder: false, entry: $0.value) }
        if !edits.folders.isEmpty {
            let found = try GitTree.entries(named: Set(edits.folders.keys), in: oldBytes, hashSize: hashSize)
            let olds = try await subtrees(found, at: path)
            for (name, inner) in edits.folders {
                let child = path + String(decoding: name, as: UTF8.self) + "/"
                let was = olds[name]
                let made = try await write(inner, at: child, old: edits.wiped.contains(name) ? nil : was, replaced: &replaced)
                if made == was?.hash { continue }
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
        let bytes = try GitTree.merge(oldBytes, hashSize: hashSize, changes: changes) { name, mode, hash in
            replaced[path + String(decoding: name, as: UTF8.self)] = String(decoding: mode, as: UTF8.self) + " " + Hex.encode(hash)
        }
        if bytes.isEmpty && !path.isEmpty { return nil }
        if let old, bytes == old.bytes { return old.hash }
        // Stored, not compressed: a tree of 100,000 entries is hashes that do not compress, and
        // zlib was half of the time it took to write; `git gc` packs it as it does any object.
        let hash = try await git.check(["-c", "core.looseCompression=0", "hash-object", "-w", "-t", "tree", "--stdin"], input: bytes).line
        guard hash.utf8.count == hashSize * 2 else { throw GitError("git hash-object gave no tree for \(path.isEmpty ? "the top" : path)") }
        written[path] = Tree(hash: hash, bytes: bytes)
        return hash
    }

    /// The trees of the folders `found` below `path` (a file found under a folder's name is not
    /// one: the edits below that name make a new folder, which takes the file's place).
    private func subtrees(_ found: [[UInt8]: (folder: Bool, hash: [UInt8])], at path: String) async throws(GitError) -> [[UInt8]: Tree] {
        var trees: [[UInt8]: Tree] = [:]
        var wanted: [([UInt8], String)] = []
        for (name, entry) in found where entry.folder {
            let hash = Hex.encode(entry.hash)
            if let known = written[path + String(decoding: name, as: UTF8.self) + "/"], known.hash == hash {
                trees[name] = known
            } else {
                wanted.append((name, hash))
            }
        }
        let read = try await read(wanted.map(\.1))
        for ((name, _), tree) in zip(wanted, read) { trees[name] = tree }
        return trees
    }

    /// The trees named by `names` (hashes, or `commit^{tree}`), in one `cat-file --batch`; `nil`
    /// for one git does not have as a tree.
    func read(_ names: [String]) async throws(GitError) -> [Tree?] {
        if names.isEmpty { return [] }
        var out = try await git.check(["cat-file", "--batch"], input: Array(names.map { $0 + "\n" }.joined().utf8)).stdout
        if names.count == 1 { return [Self.only(&out)] }
        var trees: [Tree?] = []
        var at = 0
        while trees.count < names.count {
            guard let object = Self.object(in: out, at: at) else { throw GitError("git cat-file was cut short") }
            trees.append(object.tree ? Tree(hash: object.hash, bytes: Array(out[object.body])) : nil)
            at = object.next
        }
        return trees
    }

    /// The one tree `cat-file --batch` gave in `out`, its bytes moved to the front of `out`'s own
    /// buffer rather than copied: a folder of 100,000 files is a tree of 4.7 MB.
    private static func only(_ out: inout [UInt8]) -> Tree? {
        guard let object = object(in: out, at: 0), object.tree else { return nil }
        out.removeSubrange(object.body.upperBound...)
        out.removeSubrange(..<object.body.lowerBound)
        return Tree(hash: object.hash, bytes: out)
    }

    /// The object `cat-file --batch` printed at `at` (`<hash> <type> <size>` and a line, the
    /// body and a line; `<name> missing` and the like a line alone): `nil` when it is cut short.
    private static func object(in out: [UInt8], at: Int) -> (hash: String, tree: Bool, body: Range<Int>, next: Int)? {
        guard let newline = out[at...].firstIndex(of: 0x0a) else { return nil }
        let header = String(decoding: out[at..<newline], as: UTF8.self).split(separator: " ")
        guard header.count == 3, let size = Int(header[2]), size >= 0 else { return ("", false, newline..<newline, newline + 1) }
        guard newline + 1 + size <= out.count else { return nil }
        return (String(header[0]), header[1] == "tree", (newline + 1)..<(newline + 1 + size), newline + 2 + size)
    }
}

extension GitTreeWriter.Edits {
    /// The binary size of the hashes the edits carry (SHA-1 unless they say otherwise).
    var hashSize: Int {
        if let size = files.values.lazy.compactMap({ $0?.hash.count }).first { return size }
        return folders.values.lazy.map(\.hashSize).first ?? 20
    }
}
