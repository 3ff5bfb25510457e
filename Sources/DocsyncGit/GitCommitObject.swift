/// A commit object written by the agent, byte for byte as `git commit-tree --no-gpg-sign`
/// writes it for the same tree, parent, identities and message (`GitCommitObjectTests`): a
/// trickle's commit into a large folder spent 5-8 ms of its CPU starting `commit-tree`, which
/// wrote 250 bytes. Where the agent does not write objects (``LooseObjectStore``), or a time
/// lies before 1970, `commit-tree` writes it as before.
enum GitCommitObject {
    /// The commit's text: its headers, an empty line, and the message as it is.
    private static func text(_ plan: GitCommitPlan, tree: String, parent: String?) -> String? {
        guard plan.authorTime >= 0, plan.committerTime >= 0 else { return nil }
        var text = "tree \(tree)\n"
        if let parent { text += "parent \(parent)\n" }
        text += "author \(ident(plan.author)) \(plan.authorTime / 1000) +0000\n"
        text += "committer \(ident(.docsync)) \(plan.committerTime / 1000) +0000\n\n"
        return text + plan.message
    }

    /// Writes the commit into `store` and returns its hash; `nil` where `commit-tree` must write it.
    static func write(_ plan: GitCommitPlan, tree: String, parent: String?, into store: LooseObjectStore) throws(GitError) -> String? {
        guard let text = text(plan, tree: tree, parent: parent) else { return nil }
        // As commit-tree refuses it.
        guard !plan.message.utf8.contains(0) else { throw GitError("a NUL byte in commit log message not allowed") }
        let object = LooseObject("commit", in: store)
        try object.append(Array(text.utf8)[...])
        return try object.finish()
    }

    /// `Name <email>` as git's `fmt_ident` writes them: each without what git strips from its ends
    /// (``GitIdentity/isCrud(_:)``) and without `<`, `>` and newlines.
    static func ident(_ who: GitIdentity) -> String {
        "\(withoutCrud(who.name)) <\(withoutCrud(who.email))>"
    }

    private static func withoutCrud(_ text: String) -> String {
        let scalars = text.unicodeScalars
        let start = scalars.firstIndex { !GitIdentity.isCrud($0) } ?? scalars.endIndex
        let end = scalars.lastIndex { !GitIdentity.isCrud($0) }.map(scalars.index(after:)) ?? start
        guard start < end else { return "" }
        return String(String.UnicodeScalarView(scalars[start..<end].filter { !"\n<>".unicodeScalars.contains($0) }))
    }
}
