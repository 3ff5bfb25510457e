import DocsyncFiles
import DocsyncGit
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// How pulled changes go into git: onto the checked-out branch or a branch of docsync's own,
/// with the server's token names mapped to `Name <email>`.
public struct GitHistoryOptions: Sendable, Hashable {
    public var target: GitHistoryWriter.Target
    /// `updated_by` name → `Name <email>`; a name not here is `NAME <NAME@docsync>`.
    public var authors: [String: String]

    public init(target: GitHistoryWriter.Target, authors: [String: String] = [:]) {
        self.target = target
        self.authors = authors
    }
}

extension GitHistoryWriter.Target {
    /// As `status` says it.
    var said: String {
        switch self {
        case .checkedOut: "the checked-out branch"
        case .branch(let name): "branch \(name)"
        }
    }
}

/// Commits the pulled changes ``GitRecorder`` noted, one commit per author and pull batch, with
/// the change's author and the server's time of it. Held back (and said, on `status`) while the
/// repository is busy or in the middle of something; nothing recorded is dropped until it is
/// committed or found to be already there.
actor GitCommitter: Worker, FolderPart {
    /// The folder's shared values, read through ``FolderPart``.
    let context: FolderContext
    let options: GitHistoryOptions
    let signal: WakeSignal
    var stopping = false
    private var writer: GitHistoryWriter?
    /// The last reason given for holding commits back, said once until it changes.
    private var held: String?
    /// Since when the user's git commands have held every commit back (``patience``).
    private var contendedSince: ContinuousClock.Instant?
    /// How long commits wait for a gap between the user's git commands before they are made
    /// under git's locks, taken first (``GitHistoryWriter/commit(_:insist:)``).
    static let patience: Duration = .seconds(5)
    static let batchLimit = 20_000
    /// When git's automatic maintenance last ran (``GitHistoryWriter/maintain()``): after the
    /// first commit, then at most every ``maintenanceEvery``, not after every commit as
    /// `git commit` does (it is a process of git's each time, for a trickle's commit a second).
    private var maintainedAt: ContinuousClock.Instant?
    static let maintenanceEvery: Duration = .seconds(600)
    /// Loose trees waiting to be packed that bring maintenance forward: a trickle of a change a
    /// second into 100,000 files writes 2.3 GB of them in ten minutes.
    static let treesWaitingMost = 1 << 30

    /// The largest file docsync writes for a pulled document (``JSONWriter/largestFile(limit:)``).
    let maxWritten: Int

    init(_ context: FolderContext, options: GitHistoryOptions, maxFileSize: Int, signal: WakeSignal) {
        self.context = context
        self.options = options
        self.maxWritten = JSONWriter.largestFile(limit: maxFileSize)
        self.signal = signal
    }


    /// Commits what waits (a one-shot `sync`); why some is still held, if it is.
    func drain() async -> String? {
        while true {
            switch await workRound() {
            case .progressed: continue
            case .idle, .failed, .finished:
                let why = held ?? "held back"
                return await index.leftAfterDrain(counting: { try $0.gitChangeCount() }) { "\($0) pulled changes are not committed to git: \(why)" }
            }
        }
    }

    /// After a failure to find the repository or to run git.
    let backoff = RetryPolicy(initial: .seconds(10), cap: .seconds(60))

    func workRound() async -> WorkerOutcome {
        do {
            let writer = try await located()
            let changes = try await index.read { try $0.oldestGitChanges(limit: Self.batchLimit) }
            guard !changes.isEmpty else { return .idle(nil) }
            let planned = Self.groups(changes).compactMap { plan($0, in: writer.repository) }
            var outcome = GitHistoryWriter.Outcome.nothingToCommit
            if !planned.isEmpty { outcome = try await writer.commit(planned, insist: insisting()) }
            switch outcome {
            case .held(let why):
                contendedSince = nil
                await hold(why)
                return .idle(.seconds(1))
            case .contended(let why):
                contendedSince = contendedSince ?? .now
                await hold(why)
                return .idle(.milliseconds(200))
            case .committed, .nothingToCommit:
                contendedSince = nil
            }
            try await settle(changes, outcome: outcome, commits: planned.count)
            await hold(nil)
            if case .committed = outcome { await maintain(writer) }
            return .progressed
        } catch {
            await hold("\(error)")
            self.writer = nil
            return .failed(error)
        }
    }

    /// Whether the user's commands have held commits back longer than ``patience`` (said in the
    /// log each time: a command of theirs may meet docsync's locks).
    private func insisting() -> Bool {
        guard let since = contendedSince, ContinuousClock.now - since > Self.patience else { return false }
        logger.notice("committing under git's locks: the user's git commands left no gap", metadata: ["git.held_ms": "\((ContinuousClock.now - since).components.seconds * 1000)"])
        return true
    }

    private func located() async throws -> GitHistoryWriter {
        if let writer { return writer }
        let found = GitHistoryWriter(repository: try await GitRepository.locate(folder: root), target: options.target)
        // The scratch index earlier versions made the trees in (8 MB at 100,000 files): unused now.
        for leftover in ["/git-build-index", "/git-build-index.tree"] { unlink(Index.stateDirectory(root: root) + leftover) }
        writer = found
        return found
    }

    /// Runs git's automatic maintenance when it is due; a failure is logged, and commits go on.
    private func maintain(_ writer: GitHistoryWriter) async {
        if let maintainedAt, ContinuousClock.now - maintainedAt < Self.maintenanceEvery, writer.treesWaiting < Self.treesWaitingMost { return }
        maintainedAt = .now
        do {
            let round = try await writer.maintain()
            if round.packed > 0 {
                logger.debug("packed the trees of docsync's commits", metadata: ["git.trees": "\(round.packed)", "git.freed_bytes": "\(round.freed)"])
            }
        } catch {
            logger.warning("git's automatic maintenance failed: \(error)")
        }
    }

    /// Changes by batch and author, in the order their first change came, the groups of one
    /// author that follow each other made one: one commit each. A catch-up by one writer is then
    /// a commit per round, not one per page of the pull: each commit writes its trees again, and
    /// 100,000 documents in 101 commits spent two thirds of the pull in `git fast-import`.
    static func groups(_ changes: [IndexTransaction.GitChange]) -> [[IndexTransaction.GitChange]] {
        var order: [String] = []
        var groups: [String: [IndexTransaction.GitChange]] = [:]
        for change in changes {
            let key = "\(change.batch)\u{0}\(change.author ?? "")"
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(change)
        }
        var merged: [[IndexTransaction.GitChange]] = []
        for group in order.map({ groups[$0]! }) {
            if let last = merged.last, last[0].author == group[0].author {
                merged[merged.count - 1] += group
            } else {
                merged.append(group)
            }
        }
        return merged
    }

    /// The commit of one group: the changes whose files are still as docsync wrote them; `nil`
    /// when none is.
    private func plan(_ group: [IndexTransaction.GitChange], in repository: GitRepository) -> GitCommitPlan? {
        let kept = group.map { ($0, committed($0, in: repository)) }.filter { !$0.1.isEmpty }
        guard !kept.isEmpty else { return nil }
        let now = Self.wallNow
        return GitCommitPlan(
            author: GitIdentity.author(group[0].author, authors: options.authors),
            authorTime: group.map(\.changedAt).max().flatMap { $0 > 0 ? $0 : nil } ?? now,
            committerTime: now, message: Self.message(kept.map(\.0)), entries: kept.flatMap(\.1))
    }

    /// This machine's time (Unix ms): a commit's committer date, and what `status` shows.
    static var wallNow: Int64 { FileSystem.realtimeNanoseconds() / 1_000_000 }

    /// The changes are done with: committed, or already in the branch, or left to the user.
    private func settle(_ changes: [IndexTransaction.GitChange], outcome: GitHistoryWriter.Outcome, commits: Int) async throws {
        let seqs = changes.map(\.seq)
        let now = Self.wallNow
        try await index.write { tx in
            try tx.removeGitChanges(seqs: seqs)
            if case .committed(let sha) = outcome { try tx.setMeta(.gitLastCommit, "\(sha) \(now)") }
        }
        if case .committed(let sha) = outcome {
            logger.info("committed pulled changes", metadata: ["git.commit": "\(sha.prefix(12))", "git.commits": "\(commits)", "git.changes": "\(changes.count)"])
        }
    }

    /// What of `change` is committed: the file as docsync wrote it (not if it holds other bytes
    /// now: the user's edit is theirs to commit), and the removal of where it was (not if a file
    /// is there again).
    private func committed(_ change: IndexTransaction.GitChange, in repository: GitRepository) -> [GitCommitPlan.Entry] {
        var out: [GitCommitPlan.Entry] = []
        // Read as the scanner reads: never through a symlink, never waiting on a FIFO, never more
        // than the largest file docsync writes (one put there since is the user's, not read).
        if let path = change.path, let hash = change.fileHash,
           let bytes = try? FileSystem.read(root + "/" + path, maxSize: maxWritten).bytes, ContentHash.sha256Hex(bytes) == hash {
            out.append(.put(path: repository.treePath(path), bytes: bytes))
        } else if change.path != nil {
            return []
        }
        if let old = change.oldPath, old != change.path, FileSystem.info(root + "/" + old) == nil {
            out.append(.remove(path: repository.treePath(old)))
        }
        return out
    }

    /// `note/a: title, tags` for one document; for several, a count and a line each.
    static func message(_ group: [IndexTransaction.GitChange]) -> String {
        // Every part comes from the server: one line each, nothing hidden (``GitText``).
        let lines = group.map { "\(GitText.line($0.docType))/\(GitText.line($0.docID)): \(GitText.line($0.what, maxBytes: 1000))" }
        if lines.count == 1 { return lines[0] + "\n" }
        let shown = lines.prefix(1000).joined(separator: "\n")
        let more = lines.count > 1000 ? "\n… and \(lines.count - 1000) more" : ""
        return "\(lines.count) documents changed on the server\n\n\(shown)\(more)\n"
    }

    /// Says why commits are held back (once per reason) and keeps it for `status`; `nil`: they are not.
    private func hold(_ why: String?) async {
        guard why != held else { return }
        held = why
        if let why { logger.warning("pulled changes are not committed to git for now: \(why)") }
        let value = why.map { "\($0)\t\(Self.wallNow)" }
        _ = try? await index.write { try $0.setMeta(.gitHeld, value) }  // `status` only; the log said it
    }
}
