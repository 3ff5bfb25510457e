import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// What the server said, taken into the folder: one path for every reply that carries changes (a
/// pull, a push that pulls too, a reconcile, a grown selection), so the rules hold on all of them.
///
/// - The cursor moves only past what is durable: each change is written and recorded in the index,
///   or recorded as failed (``IndexTransaction/recordPullFailures(_:nextAttemptAt:)``), before the
///   cursor passes it. Failed changes are retried with backoff (``retryFailed()``) and shown by
///   `status` until written.
/// - A server that is not the one the index was synced with is noticed before its cursor is taken.
/// - Nothing here is dropped without a log line: an error is thrown to the caller, which logs it
///   and backs off.
struct ServerChanges: FolderPart {
    let context: FolderContext
    let endpoint: any DocumentEndpoint
    /// Every write into the folder goes through it.
    let writer: FolderWriter
    var applier: ChangeApplier { writer.applier }
    /// Told when the server was replaced: every document was queued to go out again.
    let pushWork: WakeSignal
    /// Holds a mass deletion for the user's word (`nil`: off).
    let deletionGuard: DeletionGuard?
    /// The folder's own deletions held by the same rule: the user's word settles both.
    let localDeletions: LocalDeletionGuard?
    /// The deletions of the pull under way (see ``DeletionGuard``).
    let deletionTally: DeletionTally
    /// Told when changes that could not be written were recorded: ``PullRetrier`` waits on it
    /// (one waiter only, as every ``WakeSignal``).
    let failedWork = WakeSignal()

    init(
        _ context: FolderContext, endpoint: any DocumentEndpoint, writer: FolderWriter, pushWork: WakeSignal, deletionGuard: DeletionGuard?,
        localDeletions: LocalDeletionGuard?
    ) {
        (self.endpoint, self.writer, self.pushWork) = (endpoint, writer, pushWork)
        self.context = context
        (self.deletionGuard, self.localDeletions) = (deletionGuard, localDeletions)
        deletionTally = DeletionTally(quiet: (deletionGuard ?? DeletionGuard()).quiet)
    }

    /// The synced folder was deleted or moved away while changes were being taken: nothing more is
    /// written (a long pull would otherwise go on recording every change as failed).
    struct FolderGone: Error, CustomStringConvertible {
        let root: String
        var description: String { "the synced folder \(root) was deleted or moved away" }
    }

    /// Failed changes retried in one pass at most.
    static let retryBatch = 200

    /// What taking a reply did.
    struct Taken: Sendable {
        /// The server was found replaced: the pull starts over.
        var replaced = false
        /// When it was: the epoch the index took then (``Pusher/Round``); a push whose reply
        /// brought the replacement records its acknowledgements in it, and no later one.
        var epoch: String?
        /// Changes that changed the folder or the index (written, trashed, merged, recorded as
        /// failed); 0 when the reply brought nothing new.
        var changed = 0
        /// The cursor that will be stored once the page's record commits (a pipelined page):
        /// the next page is asked after it, not after the one the index holds yet.
        var cursorAfterRecords: SyncCursor?
    }

    /// Takes a reply: notices a replaced server, begins a reconcile when deletions were missed,
    /// forgets purged tombstones, writes the changes and then stores the cursor (unless the
    /// endpoint orders it before the stored one: replies to calls in flight together come back in
    /// any order). `pipelined` (the puller's catch-up): a page with more to follow leaves its
    /// record committing while the next is written (``PendingRecords``); the last page waits for
    /// them all. `sentFrom`: the cursor the call was made after.
    @discardableResult
    func take(_ reply: PullReply, sentFrom: SyncCursor?, pipelined: Bool = false) async throws -> Taken {
        if let epoch = try await serverWasReplaced(reply) {
            pushWork.signal()
            return Taken(replaced: true, epoch: epoch)
        }
        if reply.missedDeletions {
            try await beginReconcile(sentFrom: sentFrom)
            return Taken(changed: 1)
        }
        if let before = reply.tombstonesPurgedBefore {
            // The server keeps no tombstone deleted before `before`: neither does the index.
            try await index.write { tx in
                guard Int64(try tx.meta(.purgedBefore) ?? "") ?? 0 < before else { return }
                try tx.forgetTombstones(deletedBefore: before)
                try tx.setMeta(.purgedBefore, String(before))
            }
        }
        for element in reply.refused {
            var summary = ChangeApplier.Summary()
            try await applier.refuse(element.id ?? "(no id)", "the server's version cannot be taken (\(element.reason))", summary: &summary)
        }
        let written = try await write(reply.changes, more: reply.more, pipelined: pipelined && reply.more)
        if written.complete { try await noteWaiting([]) }
        var taken = Taken(changed: written.changed)
        if written.complete, let cursor = reply.cursor {
            // Stored after the page's record, and not if that failed.
            try await writer.afterRecords { [index, endpoint] in
                try await index.write { tx in
                    let old = try tx.meta(.cursor).map(SyncCursor.init)
                    // The same cursor again is not written (an idle folder's pulls leave the index as it was).
                    if old != cursor, old.map({ endpoint.orders(cursor, after: $0) }) ?? true { try tx.setMeta(.cursor, cursor.text) }
                }
            }
            if pipelined && reply.more { taken.cursorAfterRecords = cursor }
        }
        // The catch-up's last page: every page recorded (or the failure of one thrown) before the pull ends.
        if pipelined && !reply.more { try await writer.drainRecords() }
        return taken
    }

    /// This reply and its cursor are superseded: everything is pulled again from the start.
    /// Not when the stored cursor has moved past the one the call was made after: only a reconcile
    /// moves it past deletions it missed, so a reply to a call made before one ended (a push's,
    /// held in flight) says what that reconcile dealt with; were the stored cursor still behind,
    /// the next pull from it would say so again.
    private func beginReconcile(sentFrom: SyncCursor?) async throws {
        await writer.settleRecords()  // a page's cursor committing after the reconcile began would cut it short
        let begun = try await index.write { [endpoint] tx in
            guard !(try tx.isReconciling()) else { return false }  // one is under way
            if let sentFrom, let stored = try tx.meta(.cursor).map(SyncCursor.init), stored != sentFrom, endpoint.orders(stored, after: sentFrom) {
                return false
            }
            try tx.beginReconcile()
            return true
        }
        if begun {
            logger.warning("the endpoint has purged deletions this folder has not seen (offline past its tombstone retention); reconciling with its documents")
        }
    }

    /// Writes `changes` into the folder under the tree lock, again while some wait for their files
    /// to settle, and records those that cannot be written (to be retried) before returning.
    /// `complete` is `false` when some still wait for their files (they come again with the next
    /// pull: the cursor stays); `changed` counts what was written, trashed, merged or recorded as failed.
    @discardableResult
    /// `more`: pages of the same pull follow (its deletions wait for the pull's total).
    /// `pipelined`: the first try's record may still be committing on return (``PendingRecords``).
    func write(
        _ changes: [JSONObject], applier: ChangeApplier? = nil, guarded: Bool = true, more: Bool = false, pipelined: Bool = false
    ) async throws -> (complete: Bool, changed: Int) {
        let applier = applier ?? self.applier
        var docs = guarded ? try await guardDeletions(changes, more: more) : changes
        var attempts = 0
        var changed = 0
        while !docs.isEmpty {
            if applier.gate.rootIsGone { throw FolderGone(root: applier.root) }
            let batch = docs
            let summary = try await writer.apply(batch, with: applier, pipelined: pipelined && attempts == 0)
            try await recordFailures(summary.failed)
            if summary.failed.count > ChangeApplier.failuresLogged {
                logger.error("\(summary.failed.count) pulled changes could not be written; each is retried (docsync status lists them)")
            }
            changed += summary.written + summary.trashed + summary.merged + summary.failed.count
            docs = summary.deferred
            attempts += 1
            if summary.written + summary.trashed + summary.merged > 0 {
                logger.info(
                    "pulled changes", metadata: ["pull.written": "\(summary.written)", "pull.trashed": "\(summary.trashed)",
                                                 "pull.merged": "\(summary.merged)", "pull.conflicts": "\(summary.conflicts)"])
            }
            if !docs.isEmpty {
                // Files moving on disk right now: let the watcher's batch reach the index first.
                if attempts > 50 {
                    logger.warning("some pulled changes wait for their files to settle", metadata: ["pull.deferred": "\(docs.count)"])
                    try await noteWaiting(docs)
                    return (false, changed)
                }
                try? await Task.sleep(for: .milliseconds(150))
            }
        }
        return (true, changed)
    }

    /// Records for `status` which pulled changes still wait for their files after a pull's tries
    /// (the cursor stays, so each pull tries them again), or that none does. A folder behind the
    /// server is never reported in sync, however it came to be behind.
    private func noteWaiting(_ docs: [JSONObject]) async throws {
        let ids = docs.compactMap { $0["id"]?.string }
        let text = ids.isEmpty ? nil : "\(ids.count) (\(ids.prefix(5).joined(separator: ", "))\(ids.count > 5 ? ", …" : ""))"
        guard try await index.read({ try $0.meta(.pullWaiting) }) != text else { return }
        try await index.write { try $0.setMeta(.pullWaiting, text) }
    }

    /// Records changes that could not be written, due again after the first backoff step.
    private func recordFailures(_ failed: [(remote: JSONObject, reason: String)]) async throws {
        guard !failed.isEmpty else { return }
        let rows = failed.map { (id: $0.remote["id"]?.string ?? "", change: JSONWriter.string(.object($0.remote)), reason: $0.reason) }
        let next = policy.deadline(afterFailures: 1)
        try await index.write { try $0.recordPullFailures(rows, nextAttemptAt: next) }
        metrics.repeated("apply")
        failedWork.signal()
    }

    /// Tries the failed changes that are due once more; returns when the next one is due (on
    /// ``RetryPolicy/deadlineNow()``'s clock), `nil` when none waits.
    func retryFailed() async throws -> Int64? {
        let due = try await index.read { try $0.duePullFailures(now: RetryPolicy.deadlineNow(), limit: Self.retryBatch) }
        if !due.isEmpty {
            let changes = due.compactMap { row -> JSONObject? in (try? JSONParser.parse(row.change))?.object }
            let summary = try await writer.apply(changes)
            let failedAgain = Dictionary(summary.failed.map { ($0.remote["id"]?.string ?? "", $0.reason) }, uniquingKeysWith: { a, _ in a })
            let waiting = Set(summary.deferred.compactMap { $0["id"]?.string })
            let now = RetryPolicy.deadlineNow()
            try await index.write { [policy] tx in
                for row in due where !waiting.contains(row.id) {
                    if let reason = failedAgain[row.id] {
                        try tx.pullFailedAgain(id: row.id, reason: reason, nextAttemptAt: policy.deadline(afterFailures: row.attempts + 1, from: now))
                    } else {
                        try tx.clearPullFailure(id: row.id)
                    }
                }
            }
            let written = due.count - failedAgain.count - waiting.count
            if written > 0 { logger.info("changes that could not be written before are in the folder now", metadata: ["pull.written": "\(written)"]) }
            if failedAgain.count == due.count { try await postponeAll(after: due, reason: failedAgain.values.first ?? "") }
        }
        return try await index.read { try $0.nextPullRetry() }
    }

    /// None of a pass's changes could be written (a full disk): every failed change waits the
    /// pass's next backoff step, so that thousands of them are tried a batch a step, not each on
    /// its own clock (a 77,000-document pull onto a full disk tried 1,400 a second, each logged).
    private func postponeAll(after due: [IndexTransaction.PullFailure], reason: String) async throws {
        let attempts = due.map(\.attempts).max() ?? 0
        let until = policy.deadline(afterFailures: attempts + 1)
        try await index.write { try $0.postponePullFailures(until: until) }
        logger.error("\(due.count) pulled changes still cannot be written; all that wait are tried again later", metadata: ["error": "\(reason)"])
    }

    /// Whether the server that answered is not the one the index was synced with: another store
    /// (its identity changed: reset, or a new server at the same address) or the same one restored
    /// from an older copy (its history is behind our cursor). Then the index forgets what it knew
    /// of the server (``IndexTransaction/forgetServer(queuedAt:)``): the next pull starts from the
    /// beginning and every document goes out again, so the two sides meet again instead of the
    /// agent trusting a cursor that skips everything.
    /// Returns the new server epoch when it was replaced, `nil` when it was not.
    func serverWasReplaced(_ reply: PullReply) async throws -> String? {
        let known = try await index.read { try $0.meta(.storeID) }
        let otherStore = known != nil && reply.storeIdentity != nil && known != reply.storeIdentity
        guard otherStore || reply.historyBehind else {
            if known == nil, let store = reply.storeIdentity { try await index.write { try $0.setMeta(.storeID, store) } }
            return nil
        }
        await writer.settleRecords()  // forgotten after every page's record, not before one
        let now = applier.clock.now()
        // Unique, not only a time: two replacements in one millisecond are two epochs.
        let epoch = "\(now)-\(UUID().uuidString)"
        let cursor = try await index.read { try $0.meta(.cursor) }
        let queued = try await index.write { tx in
            let queued = try tx.forgetServer(queuedAt: now)
            try tx.setMeta(.storeID, reply.storeIdentity)
            try tx.setMeta(.serverReplacedAt, epoch)
            return queued
        }
        logger.warning(
            otherStore
                ? "the endpoint is another store than the one this folder synced with; reconciling everything"
                : "the endpoint's change history is behind this folder's cursor (restored from an older copy?); reconciling everything",
            metadata: ["store.known": "\(known ?? "-")", "store.now": "\(reply.storeIdentity ?? "-")", "sync.cursor": "\(cursor ?? "-")",
                       "server.cursor": "\(reply.cursor?.text ?? "-")", "reconcile.queued": "\(queued)"])
        return epoch
    }
}
