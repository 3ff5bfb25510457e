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
    /// 200 bytes, never empty, and never only what git strips from an identity's ends (`.`,
    /// `,`, `;` and their kin): `commit-tree` refuses an empty name, and every commit would be
    /// held for a name like `...` from the server.
    static func clean(_ text: String, fallback: String) -> String {
        let kept = String(text.unicodeScalars.filter { !GitText.isHidden($0) && $0 != "<" && $0 != ">" }.map(Character.init))
        var out = kept.trimmingCharacters(in: .whitespaces)
        while out.utf8.count > 200 { out.removeLast() }
        return out.unicodeScalars.allSatisfy(isCrud) ? fallback : out
    }

    /// What git's `strbuf_addstr_without_crud` strips from an identity's ends.
    static func isCrud(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value <= 32 || ".,:;<>\"\\'".unicodeScalars.contains(scalar)
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

/// Writes commits with git's plumbing, without moving any ref (moving a branch is the caller's
/// compare-and-swap): the files' blobs with one `git fast-import` (one process for any number of
/// files), then for each commit its tree, made from its parent's (``GitTreeWriter``), and the
/// commit itself (``GitCommitObject``, or `commit-tree`).
///
/// Not fast-import's own commits: it finds a path in a folder by looking at each entry in turn,
/// so each file put into a docType's folder of 100,000 cost a pass over all of them (a pull of
/// 100,000 documents with `--git-commit` spent 33 s in fast-import, the plain pull 17 s in all).
/// Nor a scratch index (`update-index`, `write-tree`): a trickle's commit of one change into a
/// folder of 100,000 spent 220 ms of git's CPU reading and writing an index of 8 MB and writing
/// the tree from it, where the parent's tree of that folder, read and changed in one pass, is all
/// a commit needs.
struct GitCommitBuilder: Sendable {
    let repository: GitRepository

    init(repository: GitRepository) {
        self.repository = repository
    }

    /// What ``build(_:parent:blobs:)`` made.
    struct Built: Sendable {
        var commit: String
        var tree: String
        /// The parent's tree (equal to `tree`: the commits change nothing).
        var parentTree: String?
        /// Each path the commits changed: its entry (`mode sha`) in the parent and at the end,
        /// `nil` where there is none. Known from the plans and the parent's trees they changed.
        var changes: [String: (old: String?, new: String?)]
        /// The trees the agent wrote as loose objects for these commits.
        var trees: [WrittenTree] = []
    }

    /// The new commits, one on the other over `parent`. `blobs`: the plans' blobs when they are
    /// written already (``writeBlobs(_:)``; they do not depend on the parent).
    func build(_ plans: [GitCommitPlan], parent: String?, blobs written: [String]? = nil) async throws(GitError) -> Built {
        let blobs: [String]
        if let written { blobs = written } else { blobs = try await writeBlobs(plans) }
        let (git, store) = (repository.git, repository.objects)
        return try await git.offThread { () throws(GitError) -> Built in
            try Self.commits(plans, parent: parent, blobs: blobs, trees: GitTreeWriter(git: git, store: store))
        }
    }

    /// ``build(_:parent:blobs:)``'s commits, made on this thread.
    private static func commits(_ plans: [GitCommitPlan], parent: String?, blobs: [String], trees: GitTreeWriter) throws(GitError) -> Built {
        let (git, store) = (trees.git, trees.store)
        defer { trees.close() }
        trees.start(on: parent)
        var commit = parent
        var tree = ""
        var next = blobs.makeIterator()
        // Each changed path's entry in the parent (the first commit that changes it says) and
        // after the last commit (`nil`: removed).
        var before: [String: String] = [:]
        var after: [String: String?] = [:]
        for plan in plans {
            let entries = Self.entries(plan, blobs: &next)
            var replaced: [String: String] = [:]
            tree = try trees.apply(try GitTreeWriter.edits(entries), replaced: &replaced)
            for (path, entry) in entries {
                if after[path] == nil { before[path] = replaced[path] }
                after[path] = .some(entry)
            }
            if let store, let written = try GitCommitObject.write(plan, tree: tree, parent: commit, into: store) {
                commit = written
            } else {
                let parents = commit.map { ["-p", $0] } ?? []
                commit = try git.checkHere(["commit-tree", "--no-gpg-sign", tree] + parents, input: Array(plan.message.utf8), extra: Self.identities(plan)).line
            }
        }
        guard let commit, !tree.isEmpty else { throw GitError("no commit to make") }
        var changes: [String: (old: String?, new: String?)] = [:]
        for (path, end) in after where before[path] != end { changes[path] = (before[path], end) }
        return Built(commit: commit, tree: tree, parentTree: trees.parentTree, changes: changes, trees: trees.written)
    }

    /// `plan`'s files with their entries (`100644 sha` with the next of `blobs`; `nil`: removed).
    static func entries(_ plan: GitCommitPlan, blobs: inout IndexingIterator<[String]>) -> [(path: String, entry: String?)] {
        plan.entries.map { entry in
            switch entry {
            case .put(let path, _): (path, "100644 \(blobs.next() ?? "")")
            case .remove(let path): (path, nil)
            }
        }
    }

    /// The blobs of every file the plans put, in their order, written in one fast-import run.
    func writeBlobs(_ plans: [GitCommitPlan]) async throws(GitError) -> [String] {
        let files = plans.flatMap(\.entries).compactMap { entry -> [UInt8]? in
            guard case .put(_, let bytes) = entry else { return nil }
            return bytes
        }
        if files.isEmpty { return [] }
        if files.count == 1 {
            // One blob (a trickle's commit): written by the agent where it may, else one process,
            // where fast-import starts a second to unpack the pack it wrote.
            if let store = repository.objects {
                let bytes = files[0]
                return [try await repository.git.offThread { () throws(GitError) -> String in
                    let blob = LooseObject("blob", in: store)
                    try blob.append(bytes[...])
                    return try blob.finish()
                }]
            }
            return [try await repository.git.check(["hash-object", "-w", "--stdin"], input: files[0]).line]
        }
        var stream: [UInt8] = []
        for (n, bytes) in files.enumerated() {
            stream.append(contentsOf: "blob\nmark :\(n + 1)\ndata \(bytes.count)\n".utf8)
            stream.append(contentsOf: bytes)
            stream.append(10)
        }
        let marks = repository.gitDir + "/docsync-marks-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { unlink(marks) }
        try await repository.git.check(["fast-import", "--quiet", "--export-marks=" + marks], input: stream)
        return try Self.readMarks(marks, count: files.count)
    }

    /// `:N sha` lines of fast-import's marks file, as the shas of marks 1 to `count`.
    static func readMarks(_ path: String, count: Int) throws(GitError) -> [String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw GitError("git fast-import wrote no marks") }
        var shas = [String](repeating: "", count: count)
        for line in text.split(separator: "\n") {
            let parts = line.dropFirst().split(separator: " ")
            guard line.first == ":", parts.count == 2, let n = Int(parts[0]), (1...count).contains(n) else { continue }
            shas[n - 1] = String(parts[1])
        }
        guard !shas.contains("") else { throw GitError("git fast-import left blobs without a mark") }
        return shas
    }

    /// The author (the change's writer, at the server's time of it) and committer (docsync, now)
    /// of `plan`'s commit, as `commit-tree` reads them.
    static func identities(_ plan: GitCommitPlan) -> [String: String] {
        [
            "GIT_AUTHOR_NAME": plan.author.name, "GIT_AUTHOR_EMAIL": plan.author.email, "GIT_AUTHOR_DATE": "@\(plan.authorTime / 1000) +0000",
            "GIT_COMMITTER_NAME": GitIdentity.docsync.name, "GIT_COMMITTER_EMAIL": GitIdentity.docsync.email,
            "GIT_COMMITTER_DATE": "@\(plan.committerTime / 1000) +0000",
        ]
    }
}

extension GitOutput {
    /// The output's first line (a sha, for the plumbing that prints one).
    var line: String { text.split(separator: "\n").first.map(String.init) ?? "" }
}
