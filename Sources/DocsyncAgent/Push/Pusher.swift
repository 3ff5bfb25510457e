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
///   with backoff, then probe with one entry until it answers, then drain everything at once (a
///   window whose other calls are still in flight sends on after the backoff instead);
/// - transient for some entries while others succeed: that entry alone backs off;
/// - unauthorized: pause all pushing with one message until the token changes or the agent restarts;
/// - rejected: that document is rejected with the server's reason until its file changes;
/// - conflict: the server's version is merged into the file, which goes out again.
actor Pusher: Worker, FolderPart {
    /// The folder's shared values, read through ``FolderPart``.
    let context: FolderContext
    let endpoint: any DocumentEndpoint
    /// "The outbox has work": the scanner, the applier and the uploader signal it; the pusher waits on it.
    let signal: WakeSignal
    var stopping = false
    /// Where changes a push brings back go, and how conflicts are merged into the folder.
    let changes: ServerChanges
    var applier: ChangeApplier { changes.applier }
    /// Documents whose file is being uploaded: their own writes wait (both change the revision).
    let uploading: DocumentSet
    /// Uploads wait for their document's write: told when writes were acknowledged.
    let uploadWork: WakeSignal

    /// Conflicts in a row, per document id (see ``holdIfConflictsRepeat(_:)``); cleared when a
    /// write of it is stored.
    var conflictStreaks: [String: Int] = [:]
    /// The longest a document whose writes keep meeting conflicts is held between them.
    static let longestConflictHold: Duration = .seconds(10)
    var offlineSince: Int64?
    var consecutiveFailures = 0
    var nextTry: ContinuousClock.Instant?
    var paused: String?
    var lastError: String?
    /// Set when the folder was found gone before a deletion was sent: the agent stops.
    private(set) var folderGone = false
    /// The round in flight, for a stop to cancel after ``stopGrace``.
    private let round = InFlight<WorkerOutcome>(onStop: .cancelAfter(stopGrace))

    init(_ context: FolderContext, changes: ServerChanges, signal: WakeSignal, uploading: DocumentSet, uploadWork: WakeSignal) {
        self.context = context
        self.changes = changes
        self.endpoint = changes.endpoint
        self.signal = signal
        self.uploading = uploading
        self.uploadWork = uploadWork
    }

    nonisolated func wake() { signal.signal() }

    /// A new token in the token file is used from now on, and the writes the old one was not
    /// allowed to make go again with it.
    func takeNewToken(force: Bool = false) async {
        guard let token = credential.changedInFile(force: force) else { return }
        endpoint.useCredential(token)
        logger.info("the token file holds a new token; using it")
        _ = try? await index.write { try $0.rescheduleNotAllowed(at: 0) }  // a failure leaves them to their hour
    }

    /// Entries back off on their own (their attempts) and the endpoint's outage as a whole
    /// (``nextTry``); a round does not fail. A stop ends `run` after the round in flight:
    /// requests already sent are answered and recorded, or cancelled after ``stopGrace``.
    var backoff: RetryPolicy { policy }

    /// How long a stop lets the calls in flight be answered before it cancels them: a server
    /// that stopped answering must not hold a SIGTERM for the request timeout. A cancelled call's
    /// entries stay in the outbox; if the server stored them, the next push meets its own version.
    static let stopGrace = Duration.seconds(2)

    func cancelInFlight() {
        round.cancel()
    }

    /// The folder is gone: pushing ends, and ``run()``'s caller stops the agent.
    func noteFolderGone() {
        logger.error("the synced folder was deleted or moved away; no deletion of its files is sent")
        folderGone = true
        stop()
    }

    /// Pushes until stopped, sleeping while there is nothing due.
    func run() async {
        await restoreState()
        await loop()
        await finishRecording()
    }

    func workRound() async -> WorkerOutcome {
        await round.value(of: Task { await pushRound() })
    }

    /// The acknowledgements of a round that went through cleanly are recorded while the next
    /// round is read and sent (the endpoint and the index's writer both stay busy); rounds are
    /// still recorded in order, and a round with any failure is recorded before anything else.
    /// The rounds waiting to be recorded, oldest first: each is recorded after the one before it,
    /// and leaves this list when it has been.
    var recordings: [Task<Void, Never>] = []
    /// Entries of the rounds being recorded: not due again meanwhile.
    var recordingKeys = Set<OutboxKey>()
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
    func recordInBackground(_ round: Round) async {
        let keys = round.results.map(\.0.key)
        recordingKeys.formUnion(keys)
        let previous = recordings.last
        recordings.append(Task {
            await previous?.value
            _ = await self.record(round, oneShot: false)
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
                // Its own entries: uploads are the uploader's, drained next (counting them here
                // ended every `sync` of a folder with an attachment before the upload).
                return await index.leftAfterDrain(.put, failure: lastError, what: "changes could not be delivered")
            }
        }
    }

    private func pushRound(oneShot: Bool = false) async -> WorkerOutcome {
        await takeNewToken()
        if paused != nil {
            if let token = credential.usable() {
                endpoint.useCredential(token)
                logger.info("token changed; resuming pushing")
                paused = nil
                try? await index.write { try $0.setMeta(.paused, nil) }  // `status` only; a start clears it too
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
        let round = await send(due)
        guard !oneShot && !offline && Self.isClean(round.results) else {
            await finishRecording()
            return await record(round, oneShot: oneShot)
        }
        await recordInBackground(round)
        return .progressed
    }

    /// What follows a round that found nothing to send: the round being recorded is settled and
    /// the outbox looked at again (it may have changed what is due); else a wait, for the uploader
    /// when only documents being uploaded are due (it wakes us when it is done), or until the
    /// next entry's retry time.
    func nothingSent(waitingForUploads: Bool, oneShot: Bool) async -> WorkerOutcome {
        if !recordings.isEmpty {
            await finishRecording()
            return .progressed
        }
        if waitingForUploads { return .idle(.seconds(1)) }
        if oneShot { return .idle(nil) }
        return await index.idleUntilDue(.put, logger: logger)
    }

    /// An entry and what the endpoint made of it.
    typealias Sent = (entry: OutboxEntry, outcome: PushOutcome)

    /// A batch's outcomes and the server epoch they belong to: the index's `server_replaced_at`
    /// when the batch was read (or when a reply's pulled changes were taken). When the server
    /// is found replaced meanwhile, the index has queued everything again for the new one, and
    /// the old server's acknowledgements are not recorded: recorded, they took the re-queued
    /// entries out and the new server never got those documents.
    struct Round: Sendable {
        var results: [Sent]
        var epoch: String?
    }

    static func isClean(_ results: [Sent]) -> Bool {
        results.allSatisfy { if case .failed = $0.outcome { false } else { true } }
    }

    /// Both are what `status` shows: an index that cannot be read starts the run as online and
    /// unpaused, which the first push corrects.
    private func restoreState() async {
        let saved = try? await index.read { tx in (try tx.meta(.offlineSince), try tx.meta(.paused)) }
        offlineSince = saved?.0.flatMap { Int64($0) }
        // A pause is not carried over a restart: restarting is how a user says "try the token again".
        if saved?.1 != nil { try? await index.write { try $0.setMeta(.paused, nil) } }
    }
}
