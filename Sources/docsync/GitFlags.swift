import ArgumentParser
import DocsyncAgent
import DocsyncGit
import Foundation

/// `--git-commit`, `--git-branch NAME` and `--authors FILE`: pulled changes committed to git.
struct GitFlags: ParsableArguments {
    @Flag(help: "Commit each pulled change docsync writes onto the checked-out branch of the folder's git repository, with its author and the server's time (see docs/GIT.md).")
    var gitCommit = false

    @Option(help: "Commit pulled changes on this branch instead (made from HEAD), never touching HEAD, the index or the work tree.")
    var gitBranch: String?

    @Option(help: "A file of `NAME Full Name <email>` lines: how the server's token names appear as git authors (default: NAME <NAME@docsync>).")
    var authors: String?

    func validate() throws {
        if gitCommit && gitBranch != nil { throw ValidationError("--git-commit and --git-branch exclude each other: pick one") }
        if let gitBranch { try Self.checkBranch(gitBranch, "--git-branch") }
        if authors != nil && !gitCommit && gitBranch == nil { throw ValidationError("--authors is for --git-commit or --git-branch") }
        if let authors { _ = try Self.readAuthors(authors) }
    }

    /// What the flags ask for, over `current` (a config file's choice, or none).
    func options(over current: GitHistoryOptions?) throws -> GitHistoryOptions? {
        var git = current
        if gitCommit { git = GitHistoryOptions(target: .checkedOut, authors: current?.authors ?? [:]) }
        if let gitBranch { git = GitHistoryOptions(target: .branch(gitBranch), authors: current?.authors ?? [:]) }
        if let authors { git?.authors = try Self.readAuthors(authors) }
        return git
    }

    /// A branch name as `git check-ref-format --branch` takes it, and not one that would make a
    /// ref the user never meant: `HEAD` (a `refs/heads/HEAD` beside HEAD) or a full ref name
    /// (`refs/heads/main` would become `refs/heads/refs/heads/main`).
    static func checkBranch(_ name: String, _ place: String) throws {
        if let why = branchProblem(name) { throw ValidationError("\(place): \"\(name)\" \(why)") }
    }

    static func branchProblem(_ name: String) -> String? {
        if name == "HEAD" || name == "@" { return "names HEAD, not a branch" }
        if name.hasPrefix("refs/") { return "is a full ref name: give the branch's name alone (\(name.split(separator: "/").dropFirst(2).joined(separator: "/")))" }
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        let bad = name.isEmpty || name.hasPrefix("-") || name.hasSuffix(".") || name.contains("..") || name.contains("@{")
            || components.contains { $0.isEmpty || $0.hasPrefix(".") || $0.hasSuffix(".lock") }
            || name.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7F || "~^:?*[\\".unicodeScalars.contains($0) }
        return bad ? "is not a branch name git takes (git check-ref-format --branch)" : nil
    }

    /// `NAME Full Name <email>` per line; `#` starts a comment line.
    static func readAuthors(_ path: String) throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20, let text = String(data: data, encoding: .utf8) else {
            throw ValidationError("--authors \(path): cannot be read as a UTF-8 text file of at most 1 MiB")
        }
        var map: [String: String] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[1].contains("<"), parts[1].hasSuffix(">") else {
                throw ValidationError("--authors \(path), line \(number + 1): expected NAME Full Name <email>")
            }
            map[parts[0]] = parts[1]
        }
        return map
    }
}
