import Foundation

/// The git work tree a synced folder is in, found with git's own discovery (`rev-parse`).
public struct GitRepository: Sendable {
    /// The work tree's top folder.
    public let workTree: String
    /// This work tree's git directory (the index and `HEAD`), and the one refs and objects are
    /// shared from (they differ in a linked worktree).
    public let gitDir: String
    public let commonDir: String
    /// The synced folder's place in the work tree (`""` at its top, else `notes/`).
    public let prefix: String
    let git: GitRunner
    /// Where the agent writes objects itself; `nil` where git must (``LooseObjectStore``).
    let objects: LooseObjectStore?

    /// The repository `folder` is in. Fails, saying why, when git is missing, the folder is in no
    /// work tree, or the repository is bare.
    public static func locate(folder: String) async throws(GitError) -> GitRepository {
        let found = try GitRunner.find(in: folder)
        let out = try await found.run([
            "rev-parse", "--is-bare-repository", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--show-object-format", "--show-prefix",
        ])
        guard out.status == 0 else { throw GitError("\(folder) is not in a git work tree (git init, or git clone, first)") }
        let lines = String(decoding: out.stdout, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 5, lines[0] == "false" else { throw GitError("\(folder) is in a bare repository: there is no work tree to commit from") }
        let common = URL(fileURLWithPath: lines[3].hasPrefix("/") ? lines[3] : folder + "/" + lines[3]).standardizedFileURL.path
        let git = GitRunner(executable: found.executable, directory: lines[1])
        // Settings under which git writes its objects its own way: then git writes them.
        let own = try await git.run(["config", "--get-regexp", LooseObjectStore.gitsOwn])
        return GitRepository(
            workTree: lines[1], gitDir: lines[2], commonDir: common, prefix: lines.count > 5 ? lines[5] : "", git: git,
            objects: own.status == 1 ? LooseObjectStore(commonDir: common, format: lines[4]) : nil)
    }

    /// What the user is in the middle of (a rebase, a merge, …), during which docsync makes no
    /// commit on the checked-out branch; `nil` when the repository is at rest.
    public func operationInProgress() -> String? {
        let marks = [
            ("rebase-merge", "a rebase"), ("rebase-apply", "a rebase or git am"), ("MERGE_HEAD", "a merge"),
            ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert"), ("BISECT_LOG", "a bisect"),
        ]
        for (name, what) in marks where FileManager.default.fileExists(atPath: gitDir + "/" + name) { return what }
        return nil
    }

    /// The checked-out branch (`refs/heads/main`), `nil` when HEAD is detached. Read from
    /// `HEAD` itself (`ref: refs/heads/main`), as git does, where a process a commit added up in
    /// a trickle; git is asked only for a `HEAD` that is not a plain file.
    public func checkedOutBranch() async throws(GitError) -> String? {
        if let head = try? String(contentsOfFile: gitDir + "/HEAD", encoding: .utf8) {
            let line = head.trimmingCharacters(in: .whitespacesAndNewlines)
            // reftable's `HEAD` names no branch of its own: git is asked.
            if line != "ref: refs/heads/.invalid" {
                guard line.hasPrefix("ref: refs/") else { return nil }
                return String(line.dropFirst("ref: ".count))
            }
        }
        let out = try await git.run(["symbolic-ref", "-q", "HEAD"])
        return out.status == 0 ? out.text : nil
    }

    /// The commit `ref` points at; `nil` when it does not exist (an unborn branch).
    public func commit(of ref: String) async throws(GitError) -> String? {
        let out = try await git.run(["rev-parse", "-q", "--verify", ref + "^{commit}"])
        return out.status == 0 ? out.text : nil
    }

    /// `path` (relative to the synced folder) as the work tree names it.
    public func treePath(_ path: String) -> String { prefix + path }

    /// The `mode sha` of an `update-index --index-info` record that removes the path whose entry
    /// is `entry` (`mode sha`): a null hash as long as its own (SHA-1 or SHA-256).
    static func removedEntry(of entry: String?) -> String {
        "0 " + String(repeating: "0", count: hashDigits(of: entry))
    }

    /// The hex digits of the hash in `entry` (`mode sha`): 40 (SHA-1) or 64 (SHA-256); 40 for none.
    static func hashDigits(of entry: String?) -> Int {
        entry?.split(separator: " ").last?.utf8.count ?? 40
    }

    /// Stage-0 entries (`mode sha`) of `paths` in the index at `index`, whose hashes are
    /// `hashSize` bytes: read by the agent (``GitIndexFile``) where it can, else listed by git. To
    /// git, a few paths are named (literal pathspecs: a name is never a pattern); many, by
    /// listing the index whole, in one pass, where each pathspec would be matched against every
    /// entry. Only the entries of `paths` are kept, as the listing is read: a trickle of one
    /// change a commit spent 240 ms a commit making a map of an index of 100,000, and its listing
    /// is 7 MB.
    func entries(inIndex index: String, paths: Set<String>, hashSize: Int) async throws(GitError) -> [String: String] {
        guard !paths.isEmpty else { return [:] }
        if let read = try await git.offThread({ GitIndexFile.entries(of: paths, in: index, hashSize: hashSize) }) { return read }
        // Pathspecs are read from where git runs: the top of the work tree, as the paths are.
        let atTop = git.directory == workTree
        let named = paths.count <= Self.namedPaths && atTop ? ["--"] + paths.sorted() : []
        let listing = IndexListing(paths)
        try await git.check(
            ["ls-files", "-s", "-z", "--full-name"] + named, extra: ["GIT_INDEX_FILE": index, "GIT_LITERAL_PATHSPECS": "1"],
            output: { listing.take($0) })
        return listing.found
    }

    /// Up to this many paths are asked for by name.
    static let namedPaths = 256
}
