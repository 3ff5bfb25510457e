import DocsyncGit

extension GitCommitPlan {
    /// A commit of pulled changes as the tests make them: one author, a fixed time, `message`.
    public static func pulled(_ entries: [Entry], message: String = "pulled\n") -> GitCommitPlan {
        GitCommitPlan(
            author: GitIdentity(name: "Server", email: "server@docsync"), authorTime: 1_767_225_600_000, committerTime: 1_767_225_600_000,
            message: message, entries: entries)
    }
}
