@testable import DocsyncGit
import Foundation
import Testing

/// A folder's tree is merged as its bytes come from git, a piece at a time, so that the agent
/// never holds the whole of a large folder's tree: wherever the pieces are cut, the new tree is
/// the one merged from the whole, and a tree git cut short or broke is refused, not merged.
@Suite struct GitTreeStreamTests {
    static let hashSize = 20

    func hash(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: Self.hashSize) }

    func entry(_ mode: String, _ name: String, _ hash: [UInt8]) -> [UInt8] {
        Array(mode.utf8) + [0x20] + Array(name.utf8) + [0] + hash
    }

    /// `a`, `a-b`, `a.json`, the folder `a/`, `b`, the folder `c/`, `d`: in git's order.
    var old: [UInt8] {
        entry("100644", "a", hash(1)) + entry("100644", "a-b", hash(2)) + entry("100644", "a.json", hash(3))
            + entry("40000", "a", hash(4)) + entry("100755", "b", hash(5)) + entry("40000", "c", hash(6)) + entry("120000", "d", hash(7))
    }

    /// Put a new `a-b`, remove `b`, add `bb`, put a file `c` where the folder `c/` is, keep `d`
    /// as it is, and add `e`.
    var changes: [GitTree.Change] {
        var changes = [
            GitTree.Change(name: Array("a-b".utf8), folder: false, entry: (Array("100644".utf8), hash(9))),
            GitTree.Change(name: Array("b".utf8), folder: false, entry: nil),
            GitTree.Change(name: Array("bb".utf8), folder: false, entry: (Array("100644".utf8), hash(10))),
            GitTree.Change(name: Array("c".utf8), folder: false, entry: (Array("100644".utf8), hash(11))),
            GitTree.Change(name: Array("d".utf8), folder: false, entry: (Array("120000".utf8), hash(7))),
            GitTree.Change(name: Array("e".utf8), folder: false, entry: (Array("100644".utf8), hash(12))),
        ]
        changes.sort { GitTree.order($0.name, $0.folder, $1.name, $1.folder) < 0 }
        return changes
    }

    /// The new tree, the old entries the changes met and whether it changed, from `old` cut at `cuts`.
    func merged(_ old: [UInt8], cuts: [Int], changes: [GitTree.Change]) throws(GitError) -> (tree: [UInt8], replaced: [String], changed: Bool) {
        var merge = GitTree.Merge(changes: changes, hashSize: Self.hashSize)
        var tree: [UInt8] = []
        var replaced: [String] = []
        var from = 0
        for to in cuts + [old.count] where to >= from {
            try merge.feed(old[from..<to]) { name, mode, _ in replaced.append(String(decoding: name, as: UTF8.self) + " " + String(decoding: mode, as: UTF8.self)) }
            tree += merge.out
            merge.clearOut()
            from = to
        }
        try merge.finish()
        return (tree + merge.out, replaced, merge.changed)
    }

    @Test func theMergeIsWhatTheChangesSay() throws {
        let made = try merged(old, cuts: [], changes: changes)
        let expected = entry("100644", "a", hash(1)) + entry("100644", "a-b", hash(9)) + entry("100644", "a.json", hash(3))
            + entry("40000", "a", hash(4)) + entry("100644", "bb", hash(10)) + entry("100644", "c", hash(11)) + entry("120000", "d", hash(7))
            + entry("100644", "e", hash(12))
        #expect(made.tree == expected)
        #expect(made.replaced == ["a-b 100644", "b 100755", "d 120000"])
        #expect(made.changed)
    }

    /// Every cut into two pieces, and pieces of one byte.
    @Test func aTreeCutAnywhereMergesAsTheWholeOfIt() throws {
        let whole = try merged(old, cuts: [], changes: changes)
        for cut in 0...old.count {
            let made = try merged(old, cuts: [cut], changes: changes)
            #expect(made.tree == whole.tree && made.replaced == whole.replaced, "cut at \(cut)")
        }
        let bytes = try merged(old, cuts: Array(1..<old.count), changes: changes)
        #expect(bytes.tree == whole.tree && bytes.replaced == whole.replaced)
    }

    /// An entry put as it already is changes nothing, so nothing is written.
    @Test func anEntryPutAsItIsLeavesTheTreeUnchanged() throws {
        let same = [GitTree.Change(name: Array("d".utf8), folder: false, entry: (Array("120000".utf8), hash(7)))]
        let made = try merged(old, cuts: [30], changes: same)
        #expect(made.tree == old)
        #expect(!made.changed)
        let other = [GitTree.Change(name: Array("d".utf8), folder: false, entry: (Array("100644".utf8), hash(7)))]
        #expect(try merged(old, cuts: [30], changes: other).changed, "a mode of its own is a change")
    }

    /// A tree that ends inside an entry (git cut short) is refused wherever it ends.
    @Test func aTreeThatEndsInsideAnEntryIsRefused() {
        var boundaries: Set<Int> = [0]
        var at = 0
        while at < old.count, let entry = GitTree.entry(in: old, at: at, hashSize: Self.hashSize) {
            at = entry.end
            boundaries.insert(at)
        }
        for end in 1..<old.count where !boundaries.contains(end) {
            #expect(throws: GitError.self, "ends at \(end)") { try merged(Array(old[..<end]), cuts: [end / 2], changes: changes) }
        }
    }

    /// Bytes that never make an entry (no name's end) are refused before they fill the memory.
    @Test func bytesThatNeverMakeAnEntryAreRefusedEarly() {
        var merge = GitTree.Merge(changes: changes, hashSize: Self.hashSize)
        let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 64 << 10)
        var fed = 0
        #expect(throws: GitError.self) {
            while fed < 64 << 20 {
                try merge.feed(piece[...]) { _, _, _ in }
                fed += piece.count
            }
        }
        #expect(fed <= 2 << 20, "refused after \(fed) bytes")
    }
}
