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
    /// order (at most `recordingBacklog` waiting); the first failure stops the window, and it and
    /// the calls still in flight are recorded before anything else is sent.
    func pushWindow() async -> WorkerOutcome {
        let capabilities = endpoint.capabilities
        var window = Window()
        var outcome = WorkerOutcome.progressed
        await withTaskGroup(of: WindowEvent.self) { group in
            var (running, waking, filling) = (0, false, true)
            while true {
                window.rewound = false
                var caughtUp = false
                fill: while filling && running < capabilities.callsInFlight && !stopping {
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
                        filling = false
                    }
                }
                if running == 0 {
                    group.cancelAll()  // ends the wait for new work
                    break
                }
                if caughtUp && !waking {
                    waking = true
                    group.addTask { await self.signal.wait(timeout: nil); return .woken }
                }
                guard let event = await group.next() else { break }
                guard case .replied(let due, let round) = event else {
                    waking = false
                    continue
                }
                running -= 1
                window.inFlight.subtract(due.map(\.key))
                if Self.isClean(round.results) {
                    await recordInBackground(round)
                } else {
                    filling = false
                    await finishRecording()
                    outcome = await record(round, oneShot: false)
                }
            }
        }
        if case .progressed = outcome, window.sent == 0 {
            return await nothingSent(waitingForUploads: window.waitingForUploads, oneShot: false)
        }
        return outcome
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
    }

    enum WindowEvent: Sendable {
        case replied([OutboxEntry], Round)
        case woken
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
