/// An index's cache tree (its `TREE` extension: the tree object of each folder whose entries
/// have not changed since it was written), with the folders of some paths marked invalid, as
/// git's `cache_tree_invalidate_path` marks them when an entry of those paths is replaced, added
/// or removed.
///
/// A node is its path's last name, a NUL, `count subtrees\n` (`count` the entries it covers,
/// -1 when invalid) and, when valid, its tree's hash; its subtrees follow it. Invalidating the
/// folders of `a/b/c.json` marks the root, `a` and `a/b` (where they are in the tree) invalid and
/// drops their hashes; the rest is kept byte for byte.
struct IndexCacheTree {
    let hashSize: Int
    /// Every folder above a changed path (the root is `[]`).
    private let folders: Set<[UInt8]>
    /// The changed paths: a node named as one of them is a folder git would drop.
    private let paths: Set<[UInt8]>
    /// Deeper than this, the tree is left to git (a folder 500 deep is not one git wrote for a
    /// real repository, and each level is a call).
    static let deepest = 500

    init(changed: some Sequence<[UInt8]>, hashSize: Int) {
        self.hashSize = hashSize
        paths = Set(changed)
        var folders: Set<[UInt8]> = [[]]
        for path in paths { folders.formUnion(Self.folders(above: path)) }
        self.folders = folders
    }

    /// The folders `path` lies in, nearest the root first (`a` and `a/b` for `a/b/c.json`).
    static func folders(above path: [UInt8]) -> [[UInt8]] {
        path.indices.filter { path[$0] == UInt8(ascii: "/") }.map { Array(path[..<$0]) }
    }

    /// The extension's bytes with the folders invalidated; `nil` when git would do more than
    /// that (a changed path is a folder in the tree: git drops it) or the bytes do not read as
    /// git writes them.
    func invalidated(_ tree: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(tree.count)
        var at = 0
        guard node(tree, &at, parent: nil, depth: 0, into: &out), at == tree.count else { return nil }
        return out
    }

    /// The node at `at` and its subtrees, written to `out`.
    private func node(_ tree: [UInt8], _ at: inout Int, parent: [UInt8]?, depth: Int, into out: inout [UInt8]) -> Bool {
        guard depth <= Self.deepest, let nul = tree[at...].firstIndex(of: 0) else { return false }
        let name = tree[at..<nul]
        let path: [UInt8]
        if let parent {
            path = parent.isEmpty ? Array(name) : parent + [UInt8(ascii: "/")] + name
            if paths.contains(path) { return false }
        } else {
            guard name.isEmpty else { return false }
            path = []
        }
        var cursor = nul + 1
        guard let count = Self.number(tree, &cursor, until: UInt8(ascii: " ")), count >= -1,
            let subtrees = Self.number(tree, &cursor, until: UInt8(ascii: "\n")), subtrees >= 0, subtrees <= tree.count
        else { return false }
        let end = cursor + (count >= 0 ? hashSize : 0)
        guard end <= tree.count else { return false }
        if count >= 0 && folders.contains(path) {
            out += tree[at...nul]
            out += Array("-1 \(subtrees)\n".utf8)
        } else {
            out += tree[at..<end]
        }
        at = end
        for _ in 0..<subtrees {
            guard node(tree, &at, parent: path, depth: depth + 1, into: &out) else { return false }
        }
        return true
    }

    /// A decimal number (`-` allowed first) ended by `end`, taken from `tree` at `at`.
    private static func number(_ tree: [UInt8], _ at: inout Int, until end: UInt8) -> Int? {
        var negative = false
        if at < tree.count && tree[at] == UInt8(ascii: "-") {
            negative = true
            at += 1
        }
        var value = 0
        var digits = 0
        while at < tree.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(tree[at]) {
            guard digits < 10 else { return nil }
            value = value * 10 + Int(tree[at] - UInt8(ascii: "0"))
            digits += 1
            at += 1
        }
        guard digits > 0, at < tree.count, tree[at] == end else { return nil }
        at += 1
        return negative ? -value : value
    }
}
