@testable import DocsyncGit
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The deltas the agent writes for its trees (`TreeDelta`), read back by git itself: versions of a
/// folder's tree changed at random (entries added, removed, changed, a file turned into a folder
/// of the same name, names that sort apart as files and folders, trees over 64 KiB so that copies
/// are split and the trees read in pieces, a version equal to an earlier one), packed by
/// `TreePacker`, must each read back from the pack byte for byte, and `git fsck` must find every
/// object whole.
@Suite struct TreeDeltaTests {
    /// An entry: its name, whether it is a folder, which of two blobs a file names.
    private struct Entry: Hashable {
        var name: [UInt8]
        var folder: Bool
        var second = false
    }

    private static func bytes(_ entries: [Entry], blobs: [[UInt8]], emptyTree: [UInt8]) -> [UInt8] {
        let sorted = entries.sorted { GitTree.order($0.name, $0.folder, $1.name, $1.folder) < 0 }
        var out: [UInt8] = []
        for entry in sorted {
            out += Array((entry.folder ? "40000 " : "100644 ").utf8) + entry.name + [0]
            out += entry.folder ? emptyTree : blobs[entry.second ? 1 : 0]
        }
        return out
    }

    /// The next version: a few entries removed, added or changed, now and then many.
    private static func changed(_ entries: [Entry], random: inout SeededGenerator) -> [Entry] {
        var next = entries
        let edits = Int.random(in: 0..<10, using: &random) == 0 ? 400 : Int.random(in: 1...3, using: &random)
        for _ in 0..<edits {
            switch Int.random(in: 0..<4, using: &random) {
            case 0 where !next.isEmpty: next.remove(at: Int.random(in: 0..<next.count, using: &random))
            case 1 where !next.isEmpty:
                let i = Int.random(in: 0..<next.count, using: &random)
                if next[i].folder { next[i].folder = false } else if Bool.random(using: &random) { next[i].second.toggle() } else { next[i].folder = true }
            default:
                // Names that sort differently as a file and as a folder: `a`, `a-1`, `a.b`, `a0`.
                let stem = ["a", "b", "note", String(Int.random(in: 0..<100_000, using: &random))].randomElement(using: &random)!
                let name = Array((stem + ["", "-1", ".b", "0", "_"].randomElement(using: &random)!).utf8)
                if !next.contains(where: { $0.name == name }) { next.append(Entry(name: name, folder: Bool.random(using: &random))) }
            }
        }
        return next
    }

    @Test(arguments: [1, 2, 3])
    func deltasOfRandomTreeVersionsReadBackByteForByte(seed: UInt64) async throws {
        let repo = try TempFolder("tree-delta")
        defer { repo.remove() }
        let git = try GitRunner.find(in: repo.path)
        try await git.check(["init", "-q", "-b", "main"])
        let store = try #require(try await GitRepository.locate(folder: repo.path).objects)
        var blobs: [[UInt8]] = []
        for text in ["one", "two"] { blobs.append(try #require(Hex.decode(try await git.check(["hash-object", "-w", "--stdin"], input: Array(text.utf8)).text.utf8))) }
        let emptyTree = try #require(Hex.decode(try await git.check(["mktree"], input: []).text.utf8))

        var random = SeededGenerator(seed: seed)
        var entries = (0..<3_000).map { Entry(name: Array("n\($0)".utf8), folder: $0 % 7 == 0) }
        var versions: [(hash: String, bytes: [UInt8])] = []
        for version in 0..<130 {
            entries = version == 100 ? entries : Self.changed(entries, random: &random)
            // Now and then the folder goes back to an earlier version, whose tree is the same object.
            let bytes = version == 80 ? versions[40].bytes : Self.bytes(entries, blobs: blobs, emptyTree: emptyTree)
            let object = LooseObject("tree", in: store)
            try object.append(bytes[...])
            versions.append((try object.finish(), bytes))
        }
        let trees = versions.map { WrittenTree(path: "f/", hash: $0.hash, size: $0.bytes.count) }
        let (round, kept) = try TreePacker.pack(trees, store: store)
        #expect(kept == [trees.last!])
        #expect(round.deltas > 100, "\(round)")
        try await git.check(["fsck", "--full", "--strict", "--no-dangling"])
        // Every version read back by git, from the pack (its loose object is gone) but the newest.
        let listed = Array(versions.map(\.hash).joined(separator: "\n").utf8) + [10]
        let read = try await git.check(["cat-file", "--batch"], input: listed).stdout
        var at = 0
        for version in versions {
            let header = try #require(read[at...].firstIndex(of: 10))
            #expect(String(decoding: read[at..<header], as: UTF8.self) == "\(version.hash) tree \(version.bytes.count)")
            #expect(read[(header + 1)..<(header + 1 + version.bytes.count)].elementsEqual(version.bytes))
            at = header + 2 + version.bytes.count
        }
        let loose = versions.filter { access(store.path(of: $0.hash), F_OK) == 0 }
        #expect(Set(loose.map(\.hash)) == [versions.last!.hash])
    }

    /// A file turned into a folder of the same name moves in git's order (`a` sorts before `a-1`,
    /// `a/` after `a.b`): the delta holds that one entry and copies the rest.
    @Test func aFileTurnedFolderIsTheOnlyEntryTheDeltaHolds() async throws {
        let repo = try TempFolder("tree-delta-order")
        defer { repo.remove() }
        let git = try GitRunner.find(in: repo.path)
        try await git.check(["init", "-q", "-b", "main"])
        let store = try #require(try await GitRepository.locate(folder: repo.path).objects)
        let blob = try #require(Hex.decode(try await git.check(["hash-object", "-w", "--stdin"], input: Array("x".utf8)).text.utf8))
        let names = ["a", "a-1", "a.b", "a0"] + (0..<200).map { "z\($0)" }
        func tree(folderA: Bool) throws -> String {
            let entries = names.map { Entry(name: Array($0.utf8), folder: $0 == "a" && folderA) }
            let object = LooseObject("tree", in: store)
            try object.append(Self.bytes(entries, blobs: [blob, blob], emptyTree: blob)[...])
            return try object.finish()
        }
        let (before, after) = (try tree(folderA: false), try tree(folderA: true))
        let target = try #require(LooseObjectReader(hash: after, in: store))
        let base = try #require(LooseObjectReader(hash: before, in: store))
        let delta = try #require(try TreeDelta.make(target: target, base: base, hashSize: 20, limit: 1 << 20))
        // Two sizes, a copy of `a-1` and `a.b`, the 28 bytes of `40000 a\0<hash>`, a copy of the rest.
        #expect(delta.count <= 50, "\(delta.count) bytes")
    }
}
