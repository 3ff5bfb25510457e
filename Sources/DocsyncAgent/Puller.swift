import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging
import Synchronization

/// What the endpoint turned out to offer, learnt from its answers.
final class Capabilities: Sendable {
    private let batchState = Mutex<Bool?>(nil)

    /// Whether `/api/sync` exists: `nil` until the endpoint has answered one call.
    var batch: Bool? { batchState.withLock { $0 } }
    func setBatch(_ value: Bool) { batchState.withLock { $0 = value } }
}

/// One writer at a time in the synced tree: scans, pulled changes and merges take turns, so a
/// pulled write never races a scan of the same file.
actor TreeLock {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }

    nonisolated func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }
}

/// Follows the server's changes through `/api/sync` long polls: a request the server holds until
/// something changes (or 25 s pass), so changes arrive at once and an idle agent sends two
/// requests a minute. Endpoints without the batch call are not pulled from.
actor Puller {
    let endpoint: PingPongEndpoint
    let index: Index
    let applier: ChangeApplier
    let lock: TreeLock
    let capabilities: Capabilities
    let policy: RetryPolicy
    let logger: Logger
    let wait: Int
    private var stopping = false
    private var task: Task<Result<Bool, EndpointError>, Never>?
    /// Ends a backoff wait early when the agent stops: a retry delay can be a minute long.
    private let stopped = WakeSignal()

    init(endpoint: PingPongEndpoint, index: Index, applier: ChangeApplier, lock: TreeLock, capabilities: Capabilities,
         policy: RetryPolicy, logger: Logger, wait: Int = 25) {
        self.endpoint = endpoint
        self.index = index
        self.applier = applier
        self.lock = lock
        self.capabilities = capabilities
        self.policy = policy
        self.logger = logger
        self.wait = wait
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
            let wait = first ? nil : self.wait
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
            case .failure(.rejected(let status, _)) where status == 404 || status == 405:
                capabilities.setBatch(false)
                logger.notice("the endpoint has no batch call (/api/sync); pushing one document per request, not pulling")
                return
            case .failure(let error):
                failures += 1
                first = true
                let delay = policy.delay(afterFailures: failures, unit: Double.random(in: 0..<1))
                // Said once per outage, and kept for `status`: a pull that keeps failing (a reply
                // the agent cannot take) used to be logged at debug only, and status said nothing.
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
            } catch .rejected(let status, _) where status == 404 || status == 405 {
                capabilities.setBatch(false)
                return nil
            } catch {
                return error.description
            }
        }
    }

    /// One call: applies what changed since the stored cursor. Returns whether more is waiting.
    private func pullOnce(wait: Int?) async throws(EndpointError) -> Bool {
        let cursor = (try? await index.read { try $0.meta("cursor") }).flatMap { $0.flatMap { Int64($0) } } ?? 0
        let reply = try await endpoint.sync(since: cursor, documents: [], wait: wait)
        capabilities.setBatch(true)
        do {
            if try await Self.serverWasReplaced(reply, since: cursor, index: index, logger: logger) {
                applier.scanner.queued()  // the pusher has everything to send again
                return true
            }
            try await Self.apply(reply.success, cursor: reply.cursor, applier: applier, index: index, lock: lock, logger: logger)
        } catch {
            logger.error("cannot apply pulled changes", metadata: ["error": "\(error)"])
        }
        return reply.more
    }

    /// Whether the server that answered is not the one the index was synced with: another store
    /// (its `X-Docsync-Store` changed: reset, or a new server at the same address) or the same one
    /// restored from an older copy (the cursor it returns is behind the one we sent). Then the
    /// index forgets what it knew of the server (``IndexTransaction/forgetServer(queuedAt:)``): the
    /// next pull starts from the beginning and every document goes out again, so the two sides meet
    /// again instead of the agent trusting a cursor that skips everything (`status` said "synced").
    static func serverWasReplaced(_ reply: PingPongEndpoint.SyncReply, since: Int64, index: Index, logger: Logger) async throws -> Bool {
        let known = try await index.read { try $0.meta("store_id") }
        let otherStore = known != nil && reply.store != nil && known != reply.store
        let behind = reply.cursor < since
        guard otherStore || behind else {
            if known == nil, let store = reply.store { try await index.write { try $0.setMeta("store_id", store) } }
            return false
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let queued = try await index.write { tx in
            let queued = try tx.forgetServer(queuedAt: now)
            try tx.setMeta("store_id", reply.store)
            try tx.setMeta("server_replaced_at", String(now))
            return queued
        }
        logger.warning(
            otherStore
                ? "the endpoint is another store than the one this folder synced with; reconciling everything"
                : "the endpoint's change sequence is behind this folder's cursor (restored from an older copy?); reconciling everything",
            metadata: ["store.known": "\(known ?? "-")", "store.now": "\(reply.store ?? "-")", "sync.cursor": "\(since)", "server.cursor": "\(reply.cursor)",
                       "reconcile.queued": "\(queued)"])
        return true
    }

    /// Applies changes under the tree lock, then advances the stored cursor (never backwards).
    static func apply(_ docs: [JSONObject], cursor: Int64, applier: ChangeApplier, index: Index, lock: TreeLock, logger: Logger) async throws {
        var docs = docs
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
                    return  // the cursor stays: they come again with the next pull
                }
                try? await Task.sleep(for: .milliseconds(150))
            }
            if summary.written + summary.trashed + summary.merged > 0 {
                logger.info(
                    "pulled changes", metadata: ["pull.written": "\(summary.written)", "pull.trashed": "\(summary.trashed)",
                                                 "pull.merged": "\(summary.merged)", "pull.conflicts": "\(summary.conflicts)"])
            }
        }
        try await index.write { tx in
            let old = try tx.meta("cursor").flatMap { Int64($0) } ?? 0
            if cursor > old { try tx.setMeta("cursor", String(cursor)) }
        }
    }
}
