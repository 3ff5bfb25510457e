@testable import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// The agent reads loose objects itself (`LooseObjectReader`), where `cat-file` read them: each
/// must read as git reads it, whether git wrote it (compressed) or the agent (stored); an object
/// that is not loose is left to `cat-file`; and a damaged file is refused, never read wrong.
@Suite struct LooseObjectReaderTests {
    /// What the reader gives for `hash`: kind, size and content; `nil` when it leaves it to git.
    func read(_ hash: String, _ store: LooseObjectStore) throws -> (String, Int, [UInt8])? {
        guard let reader = LooseObjectReader(hash: hash, in: store) else { return nil }
        var content: [UInt8] = []
        try reader.body { content += $0 }
        return (reader.kind, reader.size, content)
    }

    @Test(arguments: ["sha1", "sha256"]) func objectsReadAsGitReadsThem(format: String) async throws {
        let repo = try LooseObjectTests().repository("loose-read-\(format)", format: format)
        defer { repo.remove() }
        let store = try #require(try await GitRepository.locate(folder: repo.path).objects)
        var random = SystemRandomNumberGenerator()
        for size in [0, 1, 65_535, 65_536, 65_537, 2_600_000] {
            let bytes = (0..<(size + 7) / 8).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }.prefix(size).map { $0 }
            let gits = try gitWith(["hash-object", "-w", "--stdin"], in: repo.path, input: bytes).trimmingCharacters(in: .whitespacesAndNewlines)
            let agents = LooseObject("blob", in: store)
            try agents.append(bytes[...])
            // The agent's copy under another name: the same bytes with one more at the end.
            let stored = LooseObject("blob", in: store)
            try stored.append((bytes + [7])[...])
            let storedHash = try stored.finish()
            #expect(try agents.finish() == gits)
            let read = try #require(try read(gits, store), "\(size) bytes")
            #expect(read.0 == "blob" && read.1 == size && read.2 == bytes, "\(size) bytes, compressed by git")
            #expect(try self.read(storedHash, store)?.2 == bytes + [7], "\(size) + 1 bytes, stored by the agent")
        }
        try repo.write("notes/a.json", "{}\n")
        try git(["add", "-A"], in: repo.path)
        try git(["commit", "-qm", "one"], in: repo.path)
        let commit = try git(["rev-parse", "HEAD"], in: repo.path).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try read(commit, store)?.2 == (try gitBytes(["cat-file", "commit", commit], in: repo.path)))
        #expect(try read(commit, store)?.0 == "commit")
        // Packed objects are cat-file's to read; so is a name that is not a hash.
        try git(["gc", "-q", "--prune=now"], in: repo.path)
        #expect(try read(commit, store) == nil)
        #expect(try read("HEAD", store) == nil)
        #expect(try read(String(repeating: "0", count: store.hashSize * 2), store) == nil)
    }

    /// A loose object cut anywhere or with bytes changed is refused (no header: left to
    /// `cat-file`, which says what is wrong; a damaged content: an error), never read as other
    /// bytes; neither crashes the agent.
    @Test func aDamagedObjectIsRefusedNeverReadWrong() async throws {
        let repo = try LooseObjectTests().repository("loose-read-damaged")
        defer { repo.remove() }
        let store = try #require(try await GitRepository.locate(folder: repo.path).objects)
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        let hash = try gitWith(["hash-object", "-w", "--stdin"], in: repo.path, input: bytes).trimmingCharacters(in: .whitespacesAndNewlines)
        let path = repo.file(".git/objects/\(hash.prefix(2))/\(hash.dropFirst(2))")
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        chmod(path, 0o644)
        for damaged in Damage.cuts(of: whole, count: 120) + Damage.changed(whole, count: 120, most: 4) {
            try Data(damaged).write(to: URL(fileURLWithPath: path))
            let got = try? read(hash, store)
            #expect(got == nil || got!.2 == bytes, "\(damaged.count) bytes of \(whole.count): read as other bytes")
        }
    }

    /// A commit made on a parent whose trees are packed (`git gc`) reads them through
    /// `cat-file`, and the next one, on the agent's loose trees, reads them itself: both trees
    /// are the ones git's index makes, and the repository passes `fsck`.
    @Test func commitsOnPackedAndOnLooseTreesAreGits() async throws {
        let handOver = GitIndexHandOverTests()
        let repo = try handOver.repository("loose-read-commits")
        defer { repo.remove() }
        try git(["gc", "-q", "--prune=now"], in: repo.path)
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        for n in 0..<2 {
            let put: GitCommitPlan.Entry = .put(path: "notes/n\(n + 3).json", bytes: Array("{\"n\":\(n + 3)}\n".utf8))
            guard case .committed = try await writer.commit([handOver.plan([put, .put(path: "notes/n1.json", bytes: Array("{\"pulled\":\(n)}\n".utf8))])]) else {
                Issue.record("no commit \(n)")
                return
            }
        }
        #expect(try git(["ls-tree", "-r", "--name-only", "HEAD"], in: repo.path) == "notes/n1.json\nnotes/n2.json\nnotes/n3.json\nnotes/n4.json\n")
        #expect(try git(["show", "HEAD:notes/n1.json"], in: repo.path) == "{\"pulled\":1}\n")
        #expect(try git(["show", "HEAD~1:notes/n1.json"], in: repo.path) == "{\"pulled\":0}\n")
        #expect(try gitWith(["fsck", "--no-progress", "--strict"], in: repo.path).isEmpty)
    }
}
