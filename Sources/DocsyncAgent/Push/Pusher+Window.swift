import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel

extension Pusher {
    /// Batches a window sends before it reads the outbox again from its start (where entries that
    /// were re-queued or came out of backoff meanwhile wait). The calls in flight go on meanwhile.
    static let windowBatches = 64

    /// Pushes with a sliding window: the endpoint's `callsInFlight` calls are kept in
    /// flight, and as soon as one is answered (or new work is queued) the next due entries are read
    /// and sent, so the endpoint is not left idle while a round waits for its slowest call. The
    /// outbox is read on from the last entry taken, and from its start again once nothing is due
    /// after it or every `windowBatches` calls. Clean replies are recorded in the background, in
    /// order (at most `recordingBacklog` waiting); a reply with a failure is recorded before
    /// anything else is sent, and what it says decides what the window does next
    /// (``afterFailure(_:_:)``). The calls in flight go on whatever it says.
    func pushWindow() async -> WorkerOutcome {
        let capabilities = endpoint.capabilities
        var window = Window()
        var outcome = WorkerOutcome.progressed
        await withTaskGroup(of: WindowEvent.self) { group in
            var (running, waking) = (0, false)
            while true {
                window.rewound = false
                var caughtUp = false
                fill: while window.filling && running < capabilities.callsInFlight && !stopping {
                    switch await nextBatch(&window, capabilities) {
                    case .batch(let due):
                        running += 1
                        guard let context = await sendingContext(due) else {
                            group.addTask { .replied(due, Self.unreadable(due)) }
                            continue
                        }
                        group.addTask { .replied(due, await self.push(due, context: context)) }
                    case .caughtUp:
                        caughtUp = true
                        break fill
                    case .failed:
                        outcome = .idle(.seconds(1))
                        (window.filling, window.pauses) = (false, window.pauses + 1)
                    }
                }
                if running == 0 {
                    group.cancelAll()  // ends the wait for new work, and a pause's
                    break
                }
                if caughtUp && !waking {
                    waking = true
                    group.addTask { await self.signal.wait(timeout: nil); return .woken }
                }
                switch await group.next() {
                case nil: return
                case .woken?: waking = false
                case .resume(let pause)?:
                    guard pause == window.pauses, paused == nil, !stopping else { continue }
                    (window.filling, outcome) = (true, .progressed)
                case .replied(let due, let round)?:
                    running -= 1
                    if let wait = await take(round, of: due, &window, &outcome) {
                        let pause = window.pauses
                        group.addTask {
                            try? await Task.sleep(for: wait)
                            return .resume(pause)
                        }
                    }
                }
            }
        }
        if case .progressed = outcome, window.sent == 0 {
            return await nothingSent(waitingForUploads: window.waitingForUploads, oneShot: false)
        }
        return outcome
    }

    /// A reply: recorded in the background when clean; else recorded now, and what it says
    /// decides what the window does next. Returns the backoff to wait before sending on, if any.
    private func take(_ round: Round, of due: [OutboxEntry], _ window: inout Window, _ outcome: inout WorkerOutcome) async -> Duration? {
        window.inFlight.subtract(due.map(\.key))
        if Self.isClean(round.results) {
            await recordInBackground(round)
            return nil
        }
        await finishRecording()
        outcome = await record(round, oneShot: false)
        return afterFailure(outcome, &window)
    }

    /// What the window does after a reply with a failure, recorded as `outcome`: it sends on at
    /// once after failures of documents' own (a rejection, a conflict, some entries backing off
    /// while others were stored); after the endpoint failed the whole call, it sends nothing more
    /// for the backoff, returned here, then sends on (the calls still in flight, one of them
    /// perhaps stuck for minutes, are not waited for); while pushing is paused, or the outbox
    /// cannot be read, it sends nothing more and ends when its calls are answered.
    private func afterFailure(_ outcome: WorkerOutcome, _ window: inout Window) -> Duration? {
        switch outcome {
        case .progressed:
            return nil
        case .idle(let wait?) where paused == nil && !stopping:
            window.filling = false
            window.pauses += 1  // an earlier pause's end no longer resumes
            return wait
        default:
            window.filling = false
            return nil
        }
    }

    /// What the window has in flight and where it reads the outbox on from.
    struct Window {
        var inFlight = Set<OutboxKey>()
        var cursor: Int64 = 0
        var sent = 0
        var sentSinceStart = 0
        /// The read went back to the outbox's start once since the last reply.
        var rewound = false
        var waitingForUploads = false
        /// New calls are sent; not during a failure's backoff, nor after pushing was paused.
        var filling = true
        /// Backoffs begun: only the latest one's end resumes sending.
        var pauses = 0
    }

    enum WindowEvent: Sendable {
        case replied([OutboxEntry], Round)
        case woken
        /// The backoff of the pause with this number is over.
        case resume(Int)
    }

    enum WindowRead {
        case batch([OutboxEntry])
        case caughtUp
        case failed
    }

    /// The next due entries for the window (none of a document being uploaded), read on from its
    /// cursor; from the start again once nothing is due after it, or every `windowBatches` calls.
    private func nextBatch(_ window: inout Window, _ capabilities: EndpointCapabilities) async -> WindowRead {
        while true {
            if window.sentSinceStart == Self.windowBatches { (window.cursor, window.sentSinceStart) = (0, 0) }
            let (now, excluding, after) = (RetryPolicy.deadlineNow(), [window.inFlight, recordingKeys], window.cursor)
            let read: [OutboxEntry]
            do {
                read = try await index.read { tx in
                    try tx.dueEntries(
                        now: now, limit: capabilities.documentsPerCall, excludingAny: excluding, after: after, maxBytes: capabilities.bytesPerCall)
                }
            } catch {
                logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
                return .failed
            }
            guard let last = read.last else {
                if window.cursor > 0 && !window.rewound {
                    (window.cursor, window.rewound) = (0, true)
                    continue
                }
                return .caughtUp
            }
            window.cursor = last.seq
            let busy = uploading.snapshot()
            let due = busy.isEmpty ? read : read.filter { !busy.contains($0.docID) }
            if due.count < read.count { window.waitingForUploads = true }
            if due.isEmpty { continue }
            window.inFlight.formUnion(due.map(\.key))
            window.sent += 1
            window.sentSinceStart += 1
            return .batch(due)
        }
    }

    /// `entries` in push calls of at most `documents` entries and `bytes` of payload (a larger
    /// document goes alone).
    static func chunks(of entries: [OutboxEntry], documents: Int, bytes budget: Int) -> [[OutboxEntry]] {
        var chunks: [[OutboxEntry]] = []
        var current: [OutboxEntry] = []
        var bytes = 0
        for entry in entries {
            let size = entry.payload.utf8.count
            if !current.isEmpty && (current.count == documents || bytes > budget - size) {
                chunks.append(current)
                (current, bytes) = ([], 0)
            }
            current.append(entry)
            bytes += size
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }
}
