import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// Follows the server's changes: a long poll where the endpoint has one (held by the server
/// until something changes, or 25 s pass: changes arrive at once and an idle agent sends two
/// requests a minute), a pull every `pollInterval` where it has not, nothing from a push-only
/// endpoint.
actor Puller {
    let endpoint: any DocumentEndpoint
    let index: Index
    let applier: ChangeApplier
    let lock: TreeLock
    let policy: RetryPolicy
    let logger: Logger
    let wait: Int
    let pollInterval: Duration
    private var stopping = false
    private var task: Task<Result<Bool, EndpointError>, Never>?
    /// Ends a backoff or poll wait early when the agent stops: a retry delay can be a minute long.
    private let stopped = WakeSignal()

    let metrics: AgentMetrics
    /// The agent's full reconcile against the server's live set (see `Agent+Reconcile`).
    private var reconcile: (@Sendable () async throws(EndpointError) -> Void)?

    func attach(reconcile: @escaping @Sendable () async throws(EndpointError) -> Void) { self.reconcile = reconcile }

    init(
        endpoint: any DocumentEndpoint, index: Index, applier: ChangeApplier, lock: TreeLock, policy: RetryPolicy, logger: Logger,
        wait: Int = 25, pollInterval: Duration = .seconds(10), metrics: AgentMetrics
    ) {
        self.metrics = metrics
        self.endpoint = endpoint
        self.index = index
        self.applier = applier
        self.lock = lock
        self.policy = policy
        self.logger = logger
        self.wait = wait
        self.pollInterval = pollInterval
    }

    func stop() {
        stopping = true
        task?.cancel()
        stopped.signal()
    }

    func run() async {
        var failures = 0
        var first = true
        while !stopping {
            let longPoll = endpoint.capabilities.pull == .longPoll
            let wait: Duration? = first || !longPoll ? nil : .seconds(self.wait)
            let work = Task { () -> Result<Bool, EndpointError> in
                do throws(EndpointError) {
                    return .success(try await self.pullOnce(wait: wait))
                } catch {
                    return .failure(error)
                }
            }
            task = work
            let outcome = await work.value
            task = nil
            if stopping { return }
            switch outcome {
            case .success(let more):
                if failures > 0 {
                    logger.info("pulling works again")
                    try? await index.write { try $0.setMeta("pull_error", nil) }
                }
                failures = 0
                first = more
                if !more && endpoint.capabilities.pull == .poll { await stopped.wait(timeout: pollInterval) }
            case .failure(.unsupported(let why)):
                logger.notice("\(why); pushing only")
                return
            case .failure(let error):
                failures += 1
                first = true
                let delay = policy.delay(afterFailures: failures, unit: Double.random(in: 0..<1))
                // Said once per outage, and kept for `status`.
                if failures == 1 {
                    logger.warning("pulling failed; retrying with backoff", metadata: ["error": "\(error)"])
                    try? await index.write { try $0.setMeta("pull_error", error.description) }
                }
                await stopped.wait(timeout: delay)
            }
        }
    }

    /// Pulls until nothing more is waiting (for one-shot `sync`); returns why it stopped early.
    func pullAll() async -> String? {
        while true {
            do throws(EndpointError) {
                if try await pullOnce(wait: nil) == false { return nil }
            } catch .unsupported {
                return nil
            } catch {
                return error.description
            }
        }
    }

    /// One call: applies what changed since the stored cursor. Returns whether more is waiting.
    private func pullOnce(wait: Duration?) async throws(EndpointError) -> Bool {
        // Deletions were missed (the server purged tombstones past this folder's cursor): the
        // reconcile, begun then or by a run that ended before it finished, comes first.
        if let reconcile, (try? await index.read { try $0.isReconciling() }) == true {
            try await reconcile()
        }
        let cursor = (try? await index.read { try $0.meta("cursor") }).flatMap { $0.map(SyncCursor.init) }
        let started = ContinuousClock.now
        let reply: PullReply
        do throws(EndpointError) {
            reply = try await endpoint.pull(after: cursor, wait: wait)
        } catch {
            if wait == nil { metrics.call("pull", since: started) }
            metrics.pulled(documents: 0, ok: false)
            throw error
        }
        // A long poll's time is the server's waiting, not the call's cost: only quick pulls are timed.
        if wait == nil { metrics.call("pull", since: started) }
        metrics.pulled(documents: reply.changes.count, ok: true)
        do {
            if try await Self.serverWasReplaced(reply, index: index, logger: logger) {
                applier.scanner.queued()  // the pusher has everything to send again
                return true
            }
            try await Self.apply(reply, endpoint: endpoint, applier: applier, index: index, lock: lock, logger: logger)
        } catch {
            logger.error("cannot apply pulled changes", metadata: ["error": "\(error)"])
        }
        return reply.more || reply.missedDeletions
    }

    /// Whether the server that answered is not the one the index was synced with: another store
    /// (its identity changed: reset, or a new server at the same address) or the same one restored
    /// from an older copy (its history is behind our cursor). Then the index forgets what it knew
    /// of the server (``IndexTransaction/forgetServer(queuedAt:)``): the next pull starts from the
    /// beginning and every document goes out again, so the two sides meet again instead of the
    /// agent trusting a cursor that skips everything.
    static func serverWasReplaced(_ reply: PullReply, index: Index, logger: Logger) async throws -> Bool {
        let known = try await index.read { try $0.meta("store_id") }
        let otherStore = known != nil && reply.storeIdentity != nil && known != reply.storeIdentity
        guard otherStore || reply.historyBehind else {
            if known == nil, let store = reply.storeIdentity { try await index.write { try $0.setMeta("store_id", store) } }
            return false
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let cursor = try await index.read { try $0.meta("cursor") }
        let queued = try await index.write { tx in
            let queued = try tx.forgetServer(queuedAt: now)
            try tx.setMeta("store_id", reply.storeIdentity)
            try tx.setMeta("server_replaced_at", String(now))
            return queued
        }
        logger.warning(
            otherStore
                ? "the endpoint is another store than the one this folder synced with; reconciling everything"
                : "the endpoint's change history is behind this folder's cursor (restored from an older copy?); reconciling everything",
            metadata: ["store.known": "\(known ?? "-")", "store.now": "\(reply.storeIdentity ?? "-")", "sync.cursor": "\(cursor ?? "-")",
                       "server.cursor": "\(reply.cursor?.text ?? "-")", "reconcile.queued": "\(queued)"])
        return true
    }

    /// Applies `changes` under the tree lock, again while some wait for their files to settle.
    /// Returns `false` when some still wait (they come again with the next pull: the cursor stays).
    @discardableResult
    static func applyChanges(_ changes: [JSONObject], applier: ChangeApplier, lock: TreeLock, logger: Logger) async throws -> Bool {
        var docs = changes
        var attempts = 0
        while !docs.isEmpty {
            let batch = docs
            let summary = try await lock.run { try await applier.apply(batch) }
            docs = summary.deferred
            attempts += 1
            if !docs.isEmpty {
                // Files moving on disk right now: let the watcher's batch reach the index first.
                if attempts > 50 {
                    logger.warning("some pulled changes wait for their files to settle", metadata: ["pull.deferred": "\(docs.count)"])
                    return false
                }
                try? await Task.sleep(for: .milliseconds(150))
            }
            if summary.written + summary.trashed + summary.merged > 0 {
                logger.info(
                    "pulled changes", metadata: ["pull.written": "\(summary.written)", "pull.trashed": "\(summary.trashed)",
                                                 "pull.merged": "\(summary.merged)", "pull.conflicts": "\(summary.conflicts)"])
            }
        }
        return true
    }

    /// Applies a reply's changes under the tree lock, then stores its cursor (unless the endpoint
    /// orders it before the stored one: replies to calls in flight together come back in any order).
    static func apply(
        _ reply: PullReply, endpoint: any DocumentEndpoint, applier: ChangeApplier, index: Index, lock: TreeLock, logger: Logger
    ) async throws {
        if reply.missedDeletions {
            // This reply and its cursor are superseded: everything is pulled again from the start.
            let begun = try await index.write { tx in
                guard !(try tx.isReconciling()) else { return false }  // one is under way
                try tx.beginReconcile()
                return true
            }
            if begun {
                logger.warning("the endpoint has purged deletions this folder has not seen (offline past its tombstone retention); reconciling with its documents")
            }
            return
        }
        if let before = reply.tombstonesPurgedBefore {
            // The server keeps no tombstone deleted before `before`: neither does the index.
            try await index.write { tx in
                guard Int64(try tx.meta("purged_before") ?? "") ?? 0 < before else { return }
                try tx.forgetTombstones(deletedBefore: before)
                try tx.setMeta("purged_before", String(before))
            }
        }
        guard try await applyChanges(reply.changes, applier: applier, lock: lock, logger: logger), let cursor = reply.cursor else { return }
        try await index.write { tx in
            let old = try tx.meta("cursor").map(SyncCursor.init)
            if old.map({ endpoint.orders(cursor, after: $0) }) ?? true { try tx.setMeta("cursor", cursor.text) }
        }
    }
}
