import Foundation

/// Makes commits of pulled changes: on the checked-out branch (`--git-commit`: the user's index
/// follows, their own staged and unstaged changes untouched) or on a branch of docsync's own
/// (`--git-branch NAME`: HEAD, the index and the work tree never touched).
public struct GitHistoryWriter: Sendable {
    public enum Target: Sendable, Hashable {
        case checkedOut
        case branch(String)
    }

    public enum Outcome: Sendable, Equatable {
        case committed(String)
        /// Every file of the plan is in the branch as it is already.
        case nothingToCommit
        /// Not now, and why (a rebase in progress, a detached HEAD).
        case held(String)
        /// Not now: the user's git commands kept running, or kept changing the branch or the
        /// index, through every attempt (and why). Made under git's locks when insisted on.
        case contended(String)
    }

    public let repository: GitRepository
    public let target: Target
    /// The trees written for the commits made, waiting for ``maintain()`` to pack them.
    let written = WrittenTrees()
    /// The index the last commit put in place, while it may still be there.
    let lastIndex = LastWrittenIndex()
    /// Attempts when the user's commands keep moving the branch or the index under a commit.
    static let attempts = 8

    public init(repository: GitRepository, target: Target) {
        self.repository = repository
        self.target = target
    }

    private var builder: GitCommitBuilder { GitCommitBuilder(repository: repository) }

    /// Makes `plans` as commits, one on the other, in one step: the branch moves once. With
    /// `insist` (commits held back by the user's commands for long), a commit on the checked-out
    /// branch is made under git's locks, taken first: the gaps between the user's commands were
    /// looked for long enough (on a loaded machine eight more tries, each built again on the
    /// user's newest commit, took seconds before the locks were tried once).
    public func commit(_ plan: [GitCommitPlan], insist: Bool = false) async throws(GitError) -> Outcome {
        switch target {
        case .branch(let name): return try await commitOnBranch("refs/heads/" + name, plan)
        case .checkedOut: return try await insist ? commitUnderLocks(plan) : commitOnCheckedOut(plan)
        }
    }

    /// The trees the agent wrote for its commits and has not packed yet, in bytes.
    public var treesWaiting: Int { written.bytes }

    /// The agent's own packing of its trees, then git's automatic maintenance, as `git commit`
    /// runs it after each commit. Every commit writes its folder's tree anew as a loose object
    /// (3.8 MB into a folder of 100,000 files): the agent packs those it wrote, each a delta on
    /// the next (``TreePacker``). Git's maintenance does the rest: with git's defaults `gc
    /// --auto`, which packs the loose objects in the background once there are about 6,700 of
    /// them and does nothing before; the repository's own settings decide (`maintenance.*`,
    /// `gc.auto`, `gc.autoDetach`). `maintenance.auto=false` turns both off, as it does git's own.
    @discardableResult
    public func maintain() async throws(GitError) -> TreePacker.Round {
        let auto = try await repository.git.run(["config", "--type=bool", "--get", "maintenance.auto"])
        if auto.status == 0 && auto.text == "false" { return TreePacker.Round() }
        let round = try await packTrees()
        let out = try await repository.git.run(["maintenance", "run", "--auto", "--quiet"])
        guard out.status == 0 else { throw GitError("git maintenance run --auto failed: \(out.stderr)") }
        return round
    }

    /// Packs the trees written so far (``TreePacker``); each folder's newest waits for the next
    /// round. After a failure (a loose object damaged, a full disk) nothing is removed, and the
    /// round's other trees are left loose, to git's own packing: a damaged one cannot fail every
    /// round after it.
    private func packTrees() async throws(GitError) -> TreePacker.Round {
        guard let store = repository.objects else { return TreePacker.Round() }
        let trees = written.take()
        do {
            let (round, kept) = try await repository.git.offThread { () throws(GitError) in try TreePacker.pack(trees, store: store) }
            written.putBack(kept)
            return round
        } catch {
            written.putBack(TreePacker.newest(trees))
            throw error
        }
    }

    private func commitOnBranch(_ ref: String, _ plan: [GitCommitPlan]) async throws(GitError) -> Outcome {
        // Moving the checked-out branch would leave the index and the work tree behind it: the
        // user's next commit would undo every pulled change.
        if try await repository.checkedOutBranch() == ref {
            return .held("\(ref.dropFirst("refs/heads/".count)) is the checked-out branch; pick another for --git-branch, or use --git-commit")
        }
        for _ in 0..<Self.attempts {
            let old = try await repository.commit(of: ref)
            var parent = old
            if parent == nil { parent = try await repository.commit(of: "HEAD") }
            let built = try await builder.build(plan, parent: parent)
            if built.tree == built.parentTree && old != nil { return .nothingToCommit }
            let moved = try await repository.git.run(["update-ref", "-m", "docsync: pulled changes", ref, built.commit, old ?? ""])
            if moved.status == 0 {
                written.record(built.trees)
                return .committed(built.commit)
            }
        }
        return .contended("\(ref) keeps moving while docsync commits to it")
    }

    private func commitOnCheckedOut(_ plan: [GitCommitPlan]) async throws(GitError) -> Outcome {
        if let operation = repository.operationInProgress() { return .held("\(operation) is in progress") }
        guard let ref = try await repository.checkedOutBranch() else { return .held("HEAD is detached (no branch to commit to)") }
        var busy = "the index keeps changing"
        var made: (on: String?, built: GitCommitBuilder.Built)?
        for _ in 0..<Self.attempts {
            // Read as the swap reads it, without a process.
            let old = HeadSwap.currentValue(of: ref, commonDir: repository.commonDir)
            // Made again only when the branch moved: a user's `git add` changes the index alone.
            let built: GitCommitBuilder.Built
            if let made, made.on == old {
                built = made.built
            } else {
                built = try await builder.build(plan, parent: old)
                if built.tree == built.parentTree { return .nothingToCommit }
                made = (old, built)
            }
            let before = try await followingIndex(built.changes)
            defer { unlink(followingIndexPath) }
            switch try HeadSwap.swap(swapPlan(ref: ref, old: old, new: built.commit, indexBefore: before)) {
            case .done:
                written.record(built.trees)
                rememberIndex()
                return .committed(built.commit)
            case .changed: continue
            case .busy(let why):
                busy = why
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        return .contended(busy)
    }

    /// The commit made with both of git's locks held from the start, at a moment no git command
    /// of the user's runs (waited for up to ``quietWait``): nothing can move the branch or the
    /// index under it, and a command of the user's started before it is done meets the locks
    /// and fails, as it would beside any other git command. The locks are held for the few
    /// processes that make the commit; commits held back by ``HeadSwap/swap(_:)`` come here only
    /// after a while (`GitCommitter`), so a user's steady loop of commands cannot hold the pulled
    /// changes back for ever.
    private func commitUnderLocks(_ plan: [GitCommitPlan]) async throws(GitError) -> Outcome {
        if let operation = repository.operationInProgress() { return .held("\(operation) is in progress") }
        guard let ref = try await repository.checkedOutBranch() else { return .held("HEAD is detached (no branch to commit to)") }
        // The blobs first, outside the locks: they do not depend on the parent.
        let builder = self.builder
        let blobs = try await builder.writeBlobs(plan)
        guard let held = try await takeLocksWhenQuiet(ref: ref) else {
            return .contended("a git command of the user's holds the index's or the branch's lock")
        }
        defer { held.release() }
        let old = HeadSwap.currentValue(of: ref, commonDir: repository.commonDir)
        let built = try await builder.build(plan, parent: old, blobs: blobs)
        if built.tree == built.parentTree { return .nothingToCommit }
        _ = try await followingIndex(built.changes)
        defer { unlink(followingIndexPath) }
        try held.commit(swapPlan(ref: ref, old: old, new: built.commit, indexBefore: nil))
        written.record(built.trees)
        rememberIndex()
        return .committed(built.commit)
    }

    /// Moving `ref` from `old` to `new` with the user's index following, in this repository.
    private func swapPlan(ref: String, old: String?, new: String, indexBefore: IndexFile.Stamp?) -> HeadSwap.Plan {
        HeadSwap.Plan(
            gitDir: repository.gitDir, commonDir: repository.commonDir, workTree: repository.workTree, ref: ref, old: old, new: new,
            indexBefore: indexBefore, indexAfter: followingIndexPath, reflog: "docsync: pulled changes")
    }

    /// Both locks, taken at a moment no git command of the user's runs, looked for until
    /// ``quietWait`` is over (a command started between the look and the taking holds a lock:
    /// looked for again); then taken if they are free. `nil`: a command of the user's holds one.
    private func takeLocksWhenQuiet(ref: String) async throws(GitError) -> HeadSwap.Held? {
        let quietBy = ContinuousClock.now + Self.quietWait
        while true {
            while GitActivity.running(in: repository.workTree) && ContinuousClock.now < quietBy {
                try? await Task.sleep(for: .milliseconds(5))
            }
            if let held = try HeadSwap.Held.take(gitDir: repository.gitDir, commonDir: repository.commonDir, ref: ref) { return held }
            guard ContinuousClock.now < quietBy else { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// How long a commit under the locks waits for a moment no git command runs (a pager's
    /// `git log` left open runs for hours: it takes no lock, and the commit goes ahead).
    static let quietWait: Duration = .seconds(2)

    /// The user's index as it is, and as it is to be once the branch holds the new commit: each
    /// committed path (`changed`: its entry in the old commit and the new) whose entry the user
    /// left as the old commit had it takes the new commit's entry; a path the user staged
    /// something else for keeps it.
    /// The new index is left in ``followingIndexPath`` (the caller removes it once the swap is
    /// done): the lock is made from it by a link, so the agent never holds the index's bytes.
    private func followingIndex(_ changed: [String: (old: String?, new: String?)]) async throws(GitError) -> IndexFile.Stamp? {
        let (index, scratch) = (repository.gitDir + "/index", followingIndexPath)
        if let patched = try await patchedIndex(changed, index: index, scratch: scratch) { return patched }
        let given = try IndexFile.give(index, to: scratch)
        let hashSize = GitRepository.hashDigits(of: changed.values.lazy.compactMap { $0.new ?? $0.old }.first) / 2
        let staged = try await repository.entries(inIndex: scratch, paths: Set(changed.keys), hashSize: hashSize)
        var lines: [UInt8] = []
        for (path, change) in changed where staged[path] == change.old {
            let entry = change.new ?? GitRepository.removedEntry(of: change.old)
            lines.append(contentsOf: "\(entry)\t\(path)".utf8)
            lines.append(0)
        }
        try await repository.git.check(["update-index", "-z", "--index-info"], input: lines, extra: ["GIT_INDEX_FILE": scratch])
        guard FileManager.default.fileExists(atPath: scratch) else { throw GitError("git update-index wrote no index") }
        return try IndexFile.settle(index, target: scratch, given: given)
    }

    /// The new index written by the agent itself (``IndexPatch``) where git writes objects the
    /// plain way (``GitRepository/objects``: not for a shared repository or one whose files git
    /// must flush); the stamp of the index it goes with. `nil` leaves it to `update-index`: an
    /// index or a change the patch leaves to git, or an index the user's git replaced while it
    /// was read.
    private func patchedIndex(_ changed: [String: (old: String?, new: String?)], index: String, scratch: String) async throws(GitError) -> IndexFile.Stamp? {
        guard let hashSize = repository.objects?.hashSize, let before = IndexFile.stamp(index) else { return nil }
        let (given, known) = (changed, lastIndex.current)
        let outcome = try await repository.git.offThread { () throws(GitError) in
            try IndexPatch.write(from: index, to: scratch, changes: given, hashSize: hashSize, known: known)
        }
        guard case .written = outcome else { return nil }
        guard IndexFile.stamp(index) == before else {
            unlink(scratch)
            return nil
        }
        return before
    }

    /// Once a commit's swap put the index made in ``followingIndexPath`` in place: that file's
    /// stamp and checksum, for the next patch (``IndexPatch``). The scratch name is removed.
    private func rememberIndex() {
        let path = followingIndexPath
        lastIndex.set(repository.objects.flatMap { IndexFile.placed(repository.gitDir + "/index", from: path, hashSize: $0.hashSize) })
    }

    /// Where ``followingIndex(_:)`` makes the user's next index: in the git folder, since the
    /// index's lock is made from it by a link.
    private var followingIndexPath: String { repository.gitDir + "/docsync-index" }
}
