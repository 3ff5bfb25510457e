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
    func pushWindow() async -> Outcome {
        enum Event: Sendable {
            case replied([OutboxEntry], [Sent])
            case woken
        }
        let capabilities = endpoint.capabilities
        var inFlight = Set<String>()
        var cursor: Int64 = 0
        var sent = 0
        var sentSinceStart = 0
        var filling = true
        var waitingForUploads = false
        var outcome = Outcome.progressed
        await withTaskGroup(of: Event.self) { group in
            var running = 0
            var waking = false
            while true {
                var rewound = false
                var caughtUp = false
                while filling && running < capabilities.callsInFlight && !stopping {
                    if sentSinceStart == Self.windowBatches { (cursor, sentSinceStart) = (0, 0) }
                    let now = RetryPolicy.deadlineNow()
                    let excluding = [inFlight, recordingKeys]
                    let after = cursor
                    let read: [OutboxEntry]
                    do {
                        read = try await index.read { tx in
                            try tx.dueEntries(
                                now: now, limit: capabilities.documentsPerCall, excludingAny: excluding, after: after, maxBytes: capabilities.bytesPerCall)
                        }
                    } catch {
                        logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
                        outcome = .idle(.seconds(1))
                        filling = false
                        break
                    }
                    guard let last = read.last else {
                        if cursor > 0 && !rewound {
                            (cursor, rewound) = (0, true)
                            continue
                        }
                        caughtUp = true
                        break
                    }
                    cursor = last.seq
                    let busy = uploading.snapshot()
                    let due = busy.isEmpty ? read : read.filter { !busy.contains($0.docID) }
                    if due.count < read.count { waitingForUploads = true }
                    if due.isEmpty { continue }
                    inFlight.formUnion(due.map(\.key))
                    sent += 1
                    sentSinceStart += 1
                    running += 1
                    let (revisions, mappings) = await sendingContext(due)
                    group.addTask { .replied(due, await self.push(due, revisions: revisions, mappings: mappings)) }
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
                guard case .replied(let due, let results) = event else {
                    waking = false
                    continue
                }
                running -= 1
                inFlight.subtract(due.map(\.key))
                if Self.isClean(results) {
                    await recordInBackground(results)
                } else {
                    filling = false
                    await finishRecording()
                    outcome = await record(results, oneShot: false)
                }
            }
        }
        if case .progressed = outcome, sent == 0 { return await nothingSent(waitingForUploads: waitingForUploads, oneShot: false) }
        return outcome
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
