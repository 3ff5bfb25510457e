@testable import DocsyncGit
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The agent packs the trees its commits wrote (`TreePacker`), each a delta on the next version
/// of its folder, and removes their loose objects: git reads every commit as before, `git fsck`
/// and `git verify-pack` find the repository whole, and a commit after it works on.
@Suite struct TreePackTests {
    /// A repository with git's own automatic packing off, so that only the agent's packs.
    private static func repository(_ name: String, format: String) async throws -> (TempFolder, GitRunner, GitHistoryWriter) {
        let repo = try TempFolder(name)
        let git = try GitRunner.find(in: repo.path)
        try await git.check(["init", "-q", "-b", "main", "--object-format=\(format)"])
        try await git.check(["config", "gc.auto", "0"])
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        return (repo, git, writer)
    }

    private static func note(_ i: Int, _ text: String = "") -> GitCommitPlan.Entry {
        .put(path: "notes/n\(i).json", bytes: Array("{\"id\":\"n\(i)\"\(text)}\n".utf8))
    }

    private static func looseObjects(_ git: GitRunner) async throws -> Int {
        let counts = try await git.check(["count-objects", "-v"]).text.split(separator: "\n")
        return Int(counts.first { $0.hasPrefix("count: ") }?.dropFirst("count: ".count) ?? "") ?? -1
    }

    @Test(arguments: ["sha1", "sha256"])
    func aTricklesTreesArePackedAsDeltasAndEveryCommitReadsAsBefore(format: String) async throws {
        let (repo, git, writer) = try await Self.repository("tree-pack-\(format)", format: format)
        defer { repo.remove() }
        let first = GitCommitPlan.pulled((0..<300).map { Self.note($0) } + [.put(path: "notes/deep/d.json", bytes: Array("{}\n".utf8))])
        _ = try await writer.commit([first])
        // Edits, additions and removals, first, last and in between, one commit each.
        for round in 0..<30 {
            let change: GitCommitPlan.Entry = switch round % 3 {
            case 0: Self.note(round * 10, ",\"edit\":\(round)")
            case 1: Self.note(1000 + round)
            default: .remove(path: "notes/n\(round * 10 + 5).json")
            }
            guard case .committed = try await writer.commit([.pulled([change], message: "change \(round)\n")]) else {
                Issue.record("commit \(round) was not made")
                return
            }
        }
        let history = try await git.check(["log", "-p", "--format=%H %T"]).text
        let looseBefore = try await Self.looseObjects(git)

        let round = try await writer.maintain()
        // 31 trees each of the root and of notes/, the newest of each kept loose for the next
        // commit; those of notes/ as deltas but the newest packed, the root's (one entry, shorter
        // than any delta of it) whole.
        #expect(round.packed == 60 && round.deltas == 29, "\(round)")
        #expect(try await Self.looseObjects(git) == looseBefore - 60)
        #expect(round.freed > 30 * 300 * 30, "the loose trees of notes/ are gone: \(round.freed) bytes")
        let pack = try #require(round.pack)
        #expect(try Int(FileManager.default.attributesOfItem(atPath: pack)[.size] as? UInt64 ?? 0) < round.freed / 10)
        try await git.check(["fsck", "--full", "--strict", "--no-dangling"])
        let verified = try await git.check(["verify-pack", "-v", String(pack.dropLast(".pack".count)) + ".idx"]).text
        #expect(verified.contains("chain length = 1: "), "deltas on deltas: \(verified.suffix(400))")
        #expect(try await git.check(["log", "-p", "--format=%H %T"]).text == history)

        // The next commit reads its parent's tree, still loose; the next round packs it too.
        _ = try await writer.commit([.pulled([Self.note(7, ",\"after\":1")])])
        #expect(try await writer.maintain().packed == 2)
        try await git.check(["fsck", "--full", "--strict", "--no-dangling"])
        #expect(try await git.check(["show", "HEAD:notes/n7.json"]).text == "{\"id\":\"n7\",\"after\":1}")
        // Git's own repacking takes the agent's packs in, deltas and all.
        try await git.check(["gc", "--quiet"])
        try await git.check(["fsck", "--full", "--strict", "--no-dangling"])
        #expect(try await git.check(["log", "-p", "--format=%H %T", "HEAD~1"]).text == history)
    }

    @Test func withGitsAutomaticMaintenanceTurnedOffNothingIsPacked() async throws {
        let (repo, git, writer) = try await Self.repository("tree-pack-off", format: "sha1")
        defer { repo.remove() }
        for i in 0..<5 { _ = try await writer.commit([.pulled([Self.note(i)])]) }
        try await git.check(["config", "maintenance.auto", "false"])
        let looseBefore = try await Self.looseObjects(git)
        #expect(try await writer.maintain() == TreePacker.Round())
        #expect(try await Self.looseObjects(git) == looseBefore)
        #expect(GitPacking.packs(in: repo.path) == 0)
    }

    /// A damaged loose tree fails its round: nothing is removed, no pack or temporary is left,
    /// and the round's trees are left to git rather than tried again at every round.
    @Test func aDamagedLooseTreeFailsItsRoundAndRemovesNothing() async throws {
        let (repo, git, writer) = try await Self.repository("tree-pack-damaged", format: "sha1")
        defer { repo.remove() }
        _ = try await writer.commit([.pulled((0..<50).map { Self.note($0) })])
        for i in 0..<5 { _ = try await writer.commit([.pulled([Self.note(i, ",\"edit\":1")])]) }
        let damaged = try await git.check(["rev-parse", "HEAD~2:notes"]).text
        let file = repo.path + "/.git/objects/" + damaged.prefix(2) + "/" + damaged.dropFirst(2)
        chmod(file, 0o644)
        #expect(truncate(file, 40) == 0)
        let looseBefore = try await Self.looseObjects(git)
        await #expect(throws: GitError.self) { try await writer.maintain() }
        #expect(try await Self.looseObjects(git) == looseBefore)
        let packFolder = try FileManager.default.contentsOfDirectory(atPath: repo.path + "/.git/objects/pack")
        #expect(packFolder.isEmpty, "\(packFolder)")
        #expect(try await writer.maintain().packed == 0, "the failed round's trees are not tried again")
        // The next commit, and the round after it, go on.
        _ = try await writer.commit([.pulled([Self.note(9, ",\"edit\":2")])])
        #expect(try await writer.maintain().packed == 2)
    }
}
