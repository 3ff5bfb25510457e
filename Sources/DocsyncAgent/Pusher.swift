import DocsyncClock
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// Drains the outbox into the endpoint.
///
/// Push calls of the size the endpoint declares (``EndpointCapabilities``) go out as a sliding
/// window of its `callsInFlight`. Each reply's outcomes are committed in one transaction (an acknowledged
/// entry leaves the outbox in the same transaction that records what the server now holds).
/// Failures are sorted by kind:
/// - transient (unreachable, 5xx, 429) with nothing getting through: the endpoint is offline; wait
///   with backoff, then probe with one entry until it answers, then drain everything at once;
/// - transient for some entries while others succeed: that entry alone backs off;
/// - unauthorized: pause all pushing with one message until the token changes or the agent restarts;
/// - rejected: that document is rejected with the server's reason until its file changes;
/// - conflict: the server's version is merged into the file, which goes out again.
actor Pusher {
    let index: Index
    let endpoint: any DocumentEndpoint
    let clock: ServerClock
    let logger: Logger
    let policy: RetryPolicy
    let signal = WakeSignal()
    /// Re-reads the token (from its file) when pushing was paused by a 401/403; `nil` = no change.
    let reloadToken: @Sendable () -> String?
    var stopping = false
    /// Set once the agent is wired: where pulled changes go.
    var applier: ChangeApplier?
    var lock = TreeLock()
    /// Documents whose file is being uploaded: their own writes wait (both change the revision).
    var uploading = DocumentSet()
    /// Uploads wait for their document's write: told when writes were acknowledged.
    var writesAcknowledged: @Sendable () -> Void = {}

    func attach(applier: ChangeApplier, lock: TreeLock, uploading: DocumentSet, writesAcknowledged: @escaping @Sendable () -> Void) {
        self.applier = applier
        self.lock = lock
        self.uploading = uploading
        self.writesAcknowledged = writesAcknowledged
    }

    var offlineSince: Int64?
    var consecutiveFailures = 0
    var nextTry: ContinuousClock.Instant?
    var paused: String?
    var lastError: String?

    let metrics: AgentMetrics

    init(
        index: Index, endpoint: any DocumentEndpoint, clock: ServerClock, logger: Logger, policy: RetryPolicy = RetryPolicy(),
        reloadToken: @escaping @Sendable () -> String? = { nil }, metrics: AgentMetrics
    ) {
        self.metrics = metrics
        self.index = index
        self.endpoint = endpoint
        self.clock = clock
        self.logger = logger
        self.policy = policy
        self.reloadToken = reloadToken
    }

    nonisolated func wake() { signal.signal() }

    /// Ends `run` after the round in flight: requests already sent are answered and recorded.
    func stop() {
        stopping = true
        signal.signal()
    }

    /// Pushes until stopped, sleeping while there is nothing due.
    func run() async {
        await restoreState()
        while !stopping {
            let outcome = await pushRound()
            if stopping { break }
            switch outcome {
            case .progressed: continue
            case .idle(let wait): await signal.wait(timeout: wait)
            }
        }
        await finishRecording()
    }

    /// The acknowledgements of a round that went through cleanly are recorded while the next
    /// round is read and sent (the endpoint and the index's writer both stay busy); rounds are
    /// still recorded in order, and a round with any failure is recorded before anything else.
    /// The rounds waiting to be recorded, oldest first: each is recorded after the one before it,
    /// and leaves this list when it has been.
    var recordings: [Task<Void, Never>] = []
    /// Entries of the rounds being recorded: not due again meanwhile.
    var recordingKeys = Set<String>()
    /// Clean rounds that may wait for the index's writer before the next reply waits for them.
    /// The writer is shared with the scan: during an import replies can come faster than it
    /// records them, and without this bound every waiting round (with its entries' payloads)
    /// would be held in memory.
    static let recordingBacklog = 4

    func finishRecording() async {
        await recordings.last?.value
    }

    /// Records a clean round after the ones already being recorded (in order), its entries not
    /// due meanwhile; returns once at most `recordingBacklog` rounds wait to be recorded.
    func recordInBackground(_ results: [Sent]) async {
        let keys = results.map(\.0.key)
        recordingKeys.formUnion(keys)
        let previous = recordings.last
        recordings.append(Task {
            await previous?.value
            _ = await self.record(results, oneShot: false)
            self.recordingKeys.subtract(keys)
            self.recordings.removeFirst()  // this task: the ones before it are done and gone
        })
        while recordings.count > Self.recordingBacklog, let oldest = recordings.first { await oldest.value }
    }

    /// Pushes until the outbox is empty or an attempt fails; for one-shot `sync`.
    /// Returns the failure that stopped it, if any.
    func drain() async -> String? {
        // What is due goes out through the window (calls in flight while replies are recorded);
        // what a failure left, and an endpoint already known to be offline, round by round.
        if offlineSince == nil && paused == nil {
            _ = await pushWindow()
            if let paused { return paused }
            if offlineSince != nil { return lastError }
        }
        while true {
            let outcome = await pushRound(oneShot: true)
            if let paused { return paused }
            if case .idle = outcome {
                let pending = (try? await index.read { try $0.pendingCount() }) ?? 0
                return pending == 0 ? nil : (lastError ?? "\(pending) changes could not be delivered")
            }
        }
    }

    enum Outcome {
        case progressed
        case idle(Duration?)
    }

    private func pushRound(oneShot: Bool = false) async -> Outcome {
        if paused != nil {
            if let token = reloadToken() {
                endpoint.useCredential(token)
                logger.info("token changed; resuming pushing")
                paused = nil
                try? await index.write { try $0.setMeta("paused", nil) }
            } else {
                return oneShot ? .idle(nil) : .idle(.seconds(2))
            }
        }
        if let nextTry, !oneShot {
            let now = ContinuousClock.now
            if now < nextTry { return .idle(nextTry - now) }
        }
        let offline = offlineSince != nil
        if !offline && !oneShot { return await pushWindow() }
        let now = RetryPolicy.deadlineNow()
        var due: [OutboxEntry]
        let busy = uploading.snapshot()
        do {
            let capabilities = endpoint.capabilities
            let limit = offline ? 1 : capabilities.documentsPerCall * capabilities.callsInFlight
            let excluding = recordingKeys
            due = try await index.read { tx in try tx.dueEntries(now: now, limit: limit, excluding: excluding) }
        } catch {
            logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
            return .idle(.seconds(1))
        }
        let read = due.count
        if !busy.isEmpty { due.removeAll { busy.contains($0.docID) } }
        if due.isEmpty { return await nothingSent(waitingForUploads: due.count < read, oneShot: oneShot) }
        let results = await send(due)
        guard !oneShot && !offline && Self.isClean(results) else {
            await finishRecording()
            return await record(results, oneShot: oneShot)
        }
        await recordInBackground(results)
        return .progressed
    }

    /// What follows a round that found nothing to send: the round being recorded is settled and
    /// the outbox looked at again (it may have changed what is due); else a wait, for the uploader
    /// when only documents being uploaded are due (it wakes us when it is done), or until the
    /// next entry's retry time.
    func nothingSent(waitingForUploads: Bool, oneShot: Bool) async -> Outcome {
        if !recordings.isEmpty {
            await finishRecording()
            return .progressed
        }
        if waitingForUploads { return .idle(.seconds(1)) }
        if oneShot { return .idle(nil) }
        let next = try? await index.read { try $0.nextAttemptAt() }
        return .idle(next.map { .milliseconds(max(1, $0 - RetryPolicy.deadlineNow())) })
    }

    /// An entry and what the endpoint made of it.
    typealias Sent = (entry: OutboxEntry, outcome: PushOutcome)

    static func isClean(_ results: [Sent]) -> Bool {
        results.allSatisfy { if case .failed = $0.outcome { false } else { true } }
    }

    private func restoreState() async {
        let saved = try? await index.read { tx in (try tx.meta("offline_since"), try tx.meta("paused")) }
        offlineSince = saved?.0.flatMap { Int64($0) }
        // A pause is not carried over a restart: restarting is how a user says "try the token again".
        if saved?.1 != nil { try? await index.write { try $0.setMeta("paused", nil) } }
    }
}
