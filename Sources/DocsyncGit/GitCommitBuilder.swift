import Foundation

/// Who a commit names: its author (the change's writer) or its committer (docsync).
public struct GitIdentity: Sendable, Hashable {
    public var name: String
    public var email: String

    public init(name: String, email: String) {
        self.name = Self.clean(name, fallback: "unknown")
        self.email = Self.clean(email, fallback: "unknown@docsync")
    }

    /// `Name <email>` from a user's map, or `NAME <NAME@docsync>` for a name the map lacks. A
    /// name comes from the server: whatever it holds, it cannot break the commit's header.
    public static func author(_ name: String?, authors: [String: String]) -> GitIdentity {
        guard let name, !name.isEmpty else { return GitIdentity(name: "unknown", email: "unknown@docsync") }
        if let mapped = authors[name], let open = mapped.lastIndex(of: "<"), mapped.hasSuffix(">") {
            return GitIdentity(name: String(mapped[..<open]).trimmingCharacters(in: .whitespaces), email: String(mapped[mapped.index(after: open)..<mapped.index(before: mapped.endIndex)]))
        }
        let local = String(name.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0) ? Character($0) : "-" })
        return GitIdentity(name: name, email: "\(local.prefix(64))@docsync")
    }

    public static let docsync = GitIdentity(name: "docsync", email: "docsync@localhost")

    /// Without `<`, `>`, control characters and bidirectional controls (``GitText``), at most
    /// 200 bytes, never empty.
    static func clean(_ text: String, fallback: String) -> String {
        let kept = String(text.unicodeScalars.filter { !GitText.isHidden($0) && $0 != "<" && $0 != ">" }.map(Character.init))
        var out = kept.trimmingCharacters(in: .whitespaces)
        while out.utf8.count > 200 { out.removeLast() }
        return out.isEmpty ? fallback : out
    }
}

/// One commit to make: its files (put or removed, paths in the work tree) over `parent`.
public struct GitCommitPlan: Sendable {
    public enum Entry: Sendable {
        case put(path: String, bytes: [UInt8])
        case remove(path: String)
        var path: String {
            switch self {
            case .put(let path, _), .remove(let path): path
            }
        }
    }

    public var author: GitIdentity
    /// The change's time on the server (Unix ms): the author date.
    public var authorTime: Int64
    public var committerTime: Int64
    public var message: String
    public var entries: [Entry]

    public init(author: GitIdentity, authorTime: Int64, committerTime: Int64, message: String, entries: [Entry]) {
        self.author = author
        self.authorTime = authorTime
        self.committerTime = committerTime
        self.message = message
        self.entries = entries
    }
}

/// Writes a commit's objects with `git fast-import` (one process for any number of files) onto a
/// ref of docsync's own, never a branch: moving a branch is the caller's compare-and-swap.
struct GitCommitBuilder: Sendable {
    let repository: GitRepository
    static let stagingRef = "refs/docsync/staging"

    /// The new commits, one on the other over `parent` (one fast-import run for all): the last
    /// one and its tree, and the parent's tree (equal: the commits change nothing).
    func build(_ plans: [GitCommitPlan], parent: String?) async throws(GitError) -> (commit: String, tree: String, parentTree: String?) {
        try await repository.git.check(["fast-import", "--quiet", "--force", "--date-format=raw"], input: stream(plans, parent: parent))
        let out = try await repository.git.check(["rev-parse", Self.stagingRef, Self.stagingRef + "^{tree}"] + (parent.map { [$0 + "^{tree}"] } ?? []))
        let shas = out.text.split(separator: "\n").map(String.init)
        guard shas.count >= 2 else { throw GitError("git fast-import made no commit") }
        return (shas[0], shas[1], shas.count > 2 ? shas[2] : nil)
    }

    func stream(_ plans: [GitCommitPlan], parent: String?) -> [UInt8] {
        var out: [UInt8] = []
        func line(_ text: String) { out.append(contentsOf: text.utf8); out.append(10) }
        func data(_ bytes: some Collection<UInt8>) {
            line("data \(bytes.count)")
            out.append(contentsOf: bytes)
            out.append(10)
        }
        line("reset \(Self.stagingRef)")
        for (n, plan) in plans.enumerated() {
            // The first commit goes over `parent`; each next one over the one before it.
            commit(plan, over: n == 0 ? parent : nil, line: line, data: data)
        }
        return out
    }

    private func commit(_ plan: GitCommitPlan, over parent: String?, line: (String) -> Void, data: ([UInt8]) -> Void) {
        line("commit \(Self.stagingRef)")
        line("author \(plan.author.name) <\(plan.author.email)> \(plan.authorTime / 1000) +0000")
        line("committer \(GitIdentity.docsync.name) <\(GitIdentity.docsync.email)> \(plan.committerTime / 1000) +0000")
        data(Array(plan.message.utf8))
        if let parent { line("from \(parent)") }
        for entry in plan.entries {
            switch entry {
            case .put(let path, let bytes):
                line("M 100644 inline \(Self.quoted(path))")
                data(bytes)
            case .remove(let path):
                line("D \(Self.quoted(path))")
            }
        }
    }

    /// A path in fast-import's C-style quotes: any byte it holds is safe.
    static func quoted(_ path: String) -> String {
        var out = "\""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += "\\\""
            case UInt8(ascii: "\\"): out += "\\\\"
            case 10: out += "\\n"
            case 0..<0x20, 0x7F...: out += "\\" + String(byte, radix: 8).leftPad(3)
            default: out += String(UnicodeScalar(byte))
            }
        }
        return out + "\""
    }
}

extension String {
    func leftPad(_ width: Int) -> String { String(repeating: "0", count: Swift.max(0, width - count)) + self }
}
