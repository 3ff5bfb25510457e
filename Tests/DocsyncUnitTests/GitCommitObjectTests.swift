@testable import DocsyncGit
import DocsyncTestSupport
import Testing

/// The agent writes each commit object itself where `commit-tree` did (``GitCommitObject``):
/// it must be the very commit git writes, the same hash, whatever the identities (names the
/// server sends, with crud at their ends, in any script), the times and the message.
@Suite struct GitCommitObjectTests {
    static let plans: [GitCommitPlan] = [
        plan("Ada Lovelace", "ada@docsync", at: 1_767_225_600_123, "pull: 1 change\n\nDocsync-Field: title\n"),
        // git strips these from each end of a name and an email, and keeps them inside.
        plan("..Bob, Jr.;", "'bob'@docsync.", at: 1_767_225_601_999, "ends with no newline"),
        plan("Zoë 山田\u{200F} \"Z\"", "zoë@docsync", at: 0, ""),
        plan("Far Future", "far@docsync", at: Int64.max, "Int64.max ms\n"),
        plan("\\Backslash:", "x\\y@docsync", at: 999, "line one\n\n\nthree empty lines above\n"),
    ]

    static func plan(_ name: String, _ email: String, at time: Int64, _ message: String) -> GitCommitPlan {
        GitCommitPlan(author: GitIdentity(name: name, email: email), authorTime: time, committerTime: 1_767_225_700_000, message: message, entries: [])
    }

    @Test(arguments: ["sha1", "sha256"])
    func eachCommitIsTheOneCommitTreeWrites(format: String) async throws {
        let repo = try TempFolder("commit-object-\(format)")
        let git = try GitRunner.find(in: repo.path)
        try await git.check(["init", "-q", "-b", "main", "--object-format=\(format)"])
        let store = try #require(LooseObjectStore(commonDir: repo.file(".git"), format: format))
        let tree = try await git.check(["hash-object", "-w", "-t", "tree", "--stdin"], input: []).line
        var parent: String?
        for plan in Self.plans {
            let parents = parent.map { ["-p", $0] } ?? []
            let gits = try await git.check(
                ["commit-tree", "--no-gpg-sign", tree] + parents, input: Array(plan.message.utf8), extra: GitCommitBuilder.identities(plan)
            ).line
            let agents = try #require(try GitCommitObject.write(plan, tree: tree, parent: parent, into: store))
            #expect(agents == gits, "\(plan.author.name): the agent wrote \(agents), git \(gits)")
            parent = agents
        }
        try await git.check(["update-ref", "refs/heads/main", try #require(parent)])
        try await git.check(["fsck", "--strict", "--no-dangling"])
    }

    @Test func aTimeBefore1970IsLeftToCommitTreeAndANulByteRefused() throws {
        let repo = try TempFolder("commit-object-odd")
        let store = try #require(LooseObjectStore(commonDir: repo.file(".git"), format: "sha1"))
        let tree = String(repeating: "0", count: 40)
        #expect(try GitCommitObject.write(Self.plan("Old", "old@docsync", at: -1, "before\n"), tree: tree, parent: nil, into: store) == nil)
        #expect(throws: GitError.self) { try GitCommitObject.write(Self.plan("Nul", "nul@docsync", at: 1, "a\0b\n"), tree: tree, parent: nil, into: store) }
    }
}
