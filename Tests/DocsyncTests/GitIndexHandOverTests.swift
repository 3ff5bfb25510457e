import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// The user's index is handed to `update-index` by a hard link, not a copy (`IndexFile.give`):
/// the file the user's index lies in must never be written, and a commit that changes nothing
/// in the index must not leave the index's lock behind.
@Suite struct GitIndexHandOverTests {
    func plan(_ entries: [GitCommitPlan.Entry]) -> GitCommitPlan { .pulled(entries) }

    func repository(_ name: String) throws -> TempFolder {
        let repo = try TempFolder(name)
        try git(["init", "-q", "-b", "main"], in: repo.path)
        try repo.write("notes/n1.json", "{\"n\":1}\n")
        try repo.write("notes/n2.json", "{\"n\":2}\n")
        try git(["add", "-A"], in: repo.path)
        try git(["commit", "-qm", "start"], in: repo.path)
        return repo
    }

    /// Every path the commit changes is one the user staged something else for: git has nothing
    /// to write in the index, which stays the user's, and no `index.lock` is left.
    @Test func aCommitThatLeavesTheIndexAsItIsLeavesNoLockBehind() async throws {
        let repo = try repository("git-index-unchanged")
        defer { repo.remove() }
        try repo.write("notes/n2.json", "{\"mine\":true}\n")
        try git(["add", "notes/n2.json"], in: repo.path)
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        guard case .committed = try await writer.commit([plan([.put(path: "notes/n2.json", bytes: Array("{\"pulled\":2}\n".utf8))])]) else {
            Issue.record("no commit")
            return
        }
        #expect(!repo.exists(".git/index.lock"), "the index's lock is not left behind")
        #expect(try git(["show", "HEAD:notes/n2.json"], in: repo.path) == "{\"pulled\":2}\n")
        #expect(try git(["show", ":notes/n2.json"], in: repo.path) == "{\"mine\":true}\n", "what the user staged is kept")
        try repo.write("notes/n1.json", "{\"n\":10}\n")
        try git(["add", "notes/n1.json"], in: repo.path)
        try git(["commit", "-qm", "the user's next commit"], in: repo.path)
        #expect(try git(["show", "HEAD:notes/n1.json"], in: repo.path) == "{\"n\":10}\n", "the user's git goes on working")
    }

    /// The file the index lay in before a commit holds, after it, the bytes it held: git and the
    /// agent wrote a new file and renamed it over, as git does, never into the user's.
    @Test func theFileTheIndexLiesInIsNeverWrittenWhereItLies() async throws {
        let repo = try repository("git-index-in-place")
        defer { repo.remove() }
        let before = try Data(contentsOf: repo.url(".git/index"))
        let held = try FileHandle(forReadingFrom: repo.url(".git/index"))
        defer { try? held.close() }
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut)
        for n in 0..<3 {
            guard case .committed = try await writer.commit([plan([.put(path: "notes/n1.json", bytes: Array("{\"pulled\":\(n)}\n".utf8))])]) else {
                Issue.record("no commit \(n)")
                return
            }
        }
        try held.seek(toOffset: 0)
        #expect(held.readDataToEndOfFile() == before, "the old index file is as it was")
        #expect(try git(["diff", "--cached", "--name-only"], in: repo.path).isEmpty, "the index followed the commits")
        #expect(!repo.exists(".git/index.lock") && !repo.exists(".git/docsync-index"))
    }
}
