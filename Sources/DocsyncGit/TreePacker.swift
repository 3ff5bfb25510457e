import DocsyncModel
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A tree the agent wrote as a loose object for a commit it made: its folder, name and size.
struct WrittenTree: Sendable, Equatable {
    var path: String
    var hash: String
    var size: Int
}

/// The trees the agent wrote for its commits and has not packed yet, in the order they were
/// made. Kept in memory only: after a restart the trees written before stay loose, for git's own
/// packing (`gc --auto`) as before.
final class WrittenTrees: Sendable {
    private let trees = Mutex<[WrittenTree]>([])
    /// The most kept: past it the oldest are let go (left to git), so that a round that keeps
    /// failing cannot grow the list for ever.
    static let most = 10_000

    func record(_ made: [WrittenTree]) {
        trees.withLock { list in
            list.append(contentsOf: made)
            if list.count > Self.most { list.removeFirst(list.count - Self.most) }
        }
    }

    /// All of them, the list left empty.
    func take() -> [WrittenTree] {
        trees.withLock { list in
            defer { list = [] }
            return list
        }
    }

    /// `kept` put back before any recorded since ``take()``.
    func putBack(_ kept: [WrittenTree]) {
        trees.withLock { $0.insert(contentsOf: kept, at: 0) }
    }

    /// The bytes of the trees waiting.
    var bytes: Int { trees.withLock { $0.reduce(0) { $0 + $1.size } } }
}

/// Packs the trees the agent wrote (``WrittenTrees``) into a pack of its own, each version of a
/// folder's tree as a delta on the one made after it (``TreeDelta``), then removes their loose
/// objects. The newest tree of each folder stays loose and out of the pack: the next commit reads
/// it (``LooseObjectReader``), and the next round packs it.
///
/// Every commit of a trickle writes its folder's whole tree (3.8 MB at 100,000 files); git's
/// `gc --auto` packs them once there are about 6,700 loose objects, searching each against ten
/// others for a delta: about 80 ms of CPU a tree at 100,000 files, more than the commit itself.
/// Here a delta costs reading the two trees side by side.
public enum TreePacker {
    /// The longest chain of deltas: git's own default (`pack.depth`). A tree past it is a delta on
    /// the chain's first tree, or whole.
    static let depth = 50
    /// The longest delta held in memory; a tree whose delta is longer is stored whole.
    static let longestDelta = 1 << 20

    public struct Round: Sendable, Equatable {
        /// Trees put in the pack, and how many of them as deltas.
        public var packed = 0
        public var deltas = 0
        /// Bytes of loose objects removed.
        public var freed = 0
        /// The pack's path, when one was written.
        public var pack: String?

        public init() {}
    }

    /// Packs `trees` (oldest first) into a new pack of `store`'s; returns what it did and the
    /// trees to keep for the next round (each folder's newest).
    static func pack(_ trees: [WrittenTree], store: LooseObjectStore) throws(GitError) -> (round: Round, kept: [WrittenTree]) {
        let (chains, kept) = plan(trees, store: store)
        let count = chains.reduce(0) { $0 + $1.count }
        guard count > 0 else { return (Round(), kept) }
        let pack = try PackFile(objects: store.folder, hashSize: store.hashSize, count: count)
        var round = Round()
        for chain in chains { try write(chain, into: pack, store: store, round: &round) }
        round.pack = try pack.publish()
        for tree in chains.joined() {
            let path = store.path(of: tree.hash)
            var info = stat()
            if stat(path, &info) == 0 && unlink(path) == 0 { round.freed += Int(info.st_size) }
        }
        return (round, kept)
    }

    /// Each folder's trees to pack, newest first, and each folder's newest, kept. A tree is
    /// packed once, never when it is also a folder's newest, and only while it is loose (git
    /// may have packed it since).
    static func plan(_ trees: [WrittenTree], store: LooseObjectStore) -> (chains: [[WrittenTree]], kept: [WrittenTree]) {
        let folders = byFolder(trees)
        let kept = folders.compactMap(\.last)
        var seen = Set(kept.map(\.hash))
        let chains = folders.map { versions in
            versions.dropLast().reversed().filter { tree in
                seen.insert(tree.hash).inserted && access(store.path(of: tree.hash), F_OK) == 0
            }
        }
        return (chains.filter { !$0.isEmpty }, kept)
    }

    /// Each folder's newest of `trees`, in the order the folders first come.
    static func newest(_ trees: [WrittenTree]) -> [WrittenTree] {
        byFolder(trees).compactMap(\.last)
    }

    /// `trees` by folder, each folder's in the order they were made, the folders in the order
    /// they first come.
    private static func byFolder(_ trees: [WrittenTree]) -> [[WrittenTree]] {
        var place: [String: Int] = [:]
        var folders: [[WrittenTree]] = []
        for tree in trees {
            if let at = place[tree.path] {
                folders[at].append(tree)
            } else {
                place[tree.path] = folders.count
                folders.append([tree])
            }
        }
        return folders
    }

    /// One folder's trees, newest first: the first whole, each after it a delta on the one before
    /// (up to ``depth``, then on the first), or whole when its delta is too long.
    private static func write(_ chain: [WrittenTree], into pack: PackFile, store: LooseObjectStore, round: inout Round) throws(GitError) {
        var first: (hash: String, offset: Int)?
        var last: (hash: String, offset: Int, depth: Int)?
        for tree in chain {
            let offset = pack.offset
            guard let name = Hex.decode(tree.hash.utf8) else { throw GitError("\(tree.hash) is not an object's name") }
            let base = last.flatMap { $0.depth < depth ? ($0.hash, $0.offset, $0.depth) : first.map { ($0.hash, $0.offset, 0) } }
            if let base, let delta = try delta(of: tree.hash, on: base.0, store: store) {
                try pack.addDelta(delta, on: base.1, name: name)
                round.deltas += 1
                last = (tree.hash, offset, base.2 + 1)
            } else {
                try pack.addWhole(try reader(tree.hash, store: store), name: name)
                first = (tree.hash, offset)
                last = (tree.hash, offset, 0)
            }
            round.packed += 1
        }
    }

    private static func delta(of target: String, on base: String, store: LooseObjectStore) throws(GitError) -> [UInt8]? {
        let target = try reader(target, store: store)
        let limit = min(target.size / 2, longestDelta)
        return try TreeDelta.make(target: target, base: try reader(base, store: store), hashSize: store.hashSize, limit: limit)
    }

    private static func reader(_ hash: String, store: LooseObjectStore) throws(GitError) -> LooseObjectReader {
        guard let reader = LooseObjectReader(hash: hash, in: store) else { throw GitError("the tree \(hash) is no longer a loose object") }
        return reader
    }
}
