import DocsyncGit
import DocsyncTestSupport
import Foundation
import Testing

/// The scratch index a commit's tree is made in is kept between commits: it is used again only
/// while it holds the parent's tree, so nothing the user committed meanwhile is ever left out of
/// docsync's next commit.
@Suite struct GitKeptIndexTests {
    func plan(_ path: String, _ text: String) -> GitCommitPlan {
        GitCommitPlan(
            author: GitIdentity(name: "Server", email: "server@docsync"), authorTime: 1_767_225_600_000, committerTime: 1_767_225_600_000,
            message: "pulled \(path)\n", entries: [.put(path: path, bytes: Array(text.utf8))])
    }

    /// Paths in the branch's last commit.
    func committed(_ repo: TempFolder) throws -> [String] {
        try git(["ls-tree", "-r", "--name-only", "HEAD"], in: repo.path).split(separator: "\n").map(String.init)
    }

    @Test func aKeptIndexIsUsedOnlyWhileItHoldsTheParentsTree() async throws {
        let repo = try TempFolder("git-kept")
        defer { repo.remove() }
        try git(["init", "-q", "-b", "main"], in: repo.path)
        try repo.write("mine.txt", "the user's\n")
        try git(["add", "mine.txt"], in: repo.path)
        try git(["commit", "-qm", "start"], in: repo.path)
        let kept = repo.file(".git/test-kept-index")
        let writer = GitHistoryWriter(repository: try await GitRepository.locate(folder: repo.path), target: .checkedOut, keptIndex: kept)

        guard case .committed = try await writer.commit([plan("notes/a.json", "{}\n")]) else { Issue.record("no first commit"); return }
        #expect(try committed(repo) == ["mine.txt", "notes/a.json"])
        #expect(FileManager.default.fileExists(atPath: kept + ".tree"), "the index is kept with the tree it holds")

        // The user commits meanwhile: the branch's tree is no longer the kept index's.
        try repo.write("theirs.txt", "committed by the user\n")
        try git(["add", "theirs.txt"], in: repo.path)
        try git(["commit", "-qm", "the user's commit"], in: repo.path)
        guard case .committed = try await writer.commit([plan("notes/b.json", "{}\n")]) else { Issue.record("no second commit"); return }
        #expect(try committed(repo) == ["mine.txt", "notes/a.json", "notes/b.json", "theirs.txt"], "the user's file is kept")

        // A record of the tree that is not to be believed (a torn write, a stranger's bytes).
        try Data("not a tree\n".utf8).write(to: URL(fileURLWithPath: kept + ".tree"))
        guard case .committed = try await writer.commit([plan("notes/c.json", "{}\n")]) else { Issue.record("no third commit"); return }
        #expect(try committed(repo) == ["mine.txt", "notes/a.json", "notes/b.json", "notes/c.json", "theirs.txt"])

        // The kept index gone: read again from the branch.
        unlink(kept)
        guard case .committed = try await writer.commit([plan("notes/d.json", "{}\n")]) else { Issue.record("no fourth commit"); return }
        #expect(try committed(repo).count == 6)
        #expect(try git(["diff", "--cached", "--name-only"], in: repo.path).isEmpty, "the user's index followed every commit")
        #expect(try git(["fsck", "--no-progress"], in: repo.path).isEmpty)
    }
}
