import DocsyncClock
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// Drains the outbox into the endpoint.
///
/// With the batch call, `/api/sync` calls of up to `batchChunk` entries go out as a sliding window
/// of `batchesInFlight`; without it, rounds of up to `batchSize` entries go out as single PUTs with
/// `concurrency` in flight. Each reply's outcomes are committed in one transaction (an acknowledged
/// entry leaves the outbox in the same transaction that records what the server now holds).
/// Failures are sorted by kind:
/// - transient (unreachable, 5xx, 429) with nothing getting through: the endpoint is offline; wait
///   with backoff, then probe with one entry until it answers, then drain everything at once;
/// - transient for some entries while others succeed: that entry alone backs off;
/// - 401/403: pause all pushing with one message until the token changes or the agent restarts;
/// - other 4xx: that document is rejected with the server's message until its file changes.
actor Pusher {
    let index: Index
    private(set) var endpoint: PingPongEndpoint
    let clock: ServerClock
    let logger: Logger
    let policy: RetryPolicy
    let concurrency: Int
    let batchSize: Int
    let signal = WakeSignal()
    /// Re-reads the token (from its file) when pushing was paused by a 401/403; `nil` = no change.
    let reloadToken: @Sendable () -> String?
    private var stopping = false
    /// Set once the agent is wired: what the endpoint offers, and where pulled changes go.
    var capabilities = Capabilities()
    var applier: ChangeApplier?
    var lock = TreeLock()
    /// Documents whose file is being uploaded: their own writes wait (both change the revision).
    var uploading = DocumentSet()
    /// Uploads wait for their document's write: told when writes were acknowledged.
    var writesAcknowledged: @Sendable () -> Void = {}

    func attach(
        capabilities: Capabilities, applier: ChangeApplier, lock: TreeLock, uploading: DocumentSet,
        writesAcknowledged: @escaping @Sendable () -> Void
    ) {
        self.capabilities = capabilities
        self.applier = applier
        self.lock = lock
        self.uploading = uploading
        self.writesAcknowledged = writesAcknowledged
    }

    /// Documents per `/api/sync` call, and how many such calls a round has in flight.
    static let batchChunk = 500
    static let batchesInFlight = 4

    private(set) var offlineSince: Int64?
    private var consecutiveFailures = 0
    private var nextTry: ContinuousClock.Instant?
    private(set) var paused: String?
    private(set) var lastError: String?

    init(
        index: Index, endpoint: PingPongEndpoint, clock: ServerClock, logger: Logger, policy: RetryPolicy = RetryPolicy(),
        concurrency: Int = 16, batchSize: Int = 256, reloadToken: @escaping @Sendable () -> String? = { nil }
    ) {
        self.index = index
        self.endpoint = endpoint
        self.clock = clock
        self.logger = logger
        self.policy = policy
        self.concurrency = concurrency
        self.batchSize = batchSize
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
    private var recordings: [Task<Void, Never>] = []
    /// Entries of the rounds being recorded: not due again meanwhile.
    private var recordingKeys = Set<String>()
    /// Clean rounds that may wait for the index's writer before the next reply waits for them.
    /// The writer is shared with the scan: on an import, replies came faster than it recorded
    /// them, and 23-29 rounds (with every entry's payload) were held in memory at once.
    static let recordingBacklog = 4

    private func finishRecording() async {
        await recordings.last?.value
    }

    /// Records a clean round after the ones already being recorded (in order), its entries not
    /// due meanwhile; returns once at most `recordingBacklog` rounds wait to be recorded.
    private func recordInBackground(_ results: [(OutboxEntry, Result<JSONValue, EndpointError>)]) async {
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
                endpoint = endpoint.withToken(token)
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
        if capabilities.batch != false && !offline && !oneShot { return await pushWindow() }
        let now = RetryPolicy.deadlineNow()
        var due: [OutboxEntry]
        let busy = uploading.snapshot()
        do {
            let limit = offline ? 1 : (capabilities.batch == true ? Self.batchChunk * Self.batchesInFlight : batchSize)
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
    private func nothingSent(waitingForUploads: Bool, oneShot: Bool) async -> Outcome {
        if !recordings.isEmpty {
            await finishRecording()
            return .progressed
        }
        if waitingForUploads { return .idle(.seconds(1)) }
        if oneShot { return .idle(nil) }
        let next = try? await index.read { try $0.nextAttemptAt() }
        return .idle(next.map { .milliseconds(max(1, $0 - RetryPolicy.deadlineNow())) })
    }

    private static func isClean(_ results: [(OutboxEntry, Result<JSONValue, EndpointError>)]) -> Bool {
        results.allSatisfy { if case .success = $0.1 { true } else { false } }
    }

    /// Batches a window sends before it reads the outbox again from its start (where entries that
    /// were re-queued or came out of backoff meanwhile wait). The calls in flight go on meanwhile.
    static let windowBatches = 64

    /// Pushes through the batch call with a sliding window: `batchesInFlight` calls are kept in
    /// flight, and as soon as one is answered (or new work is queued) the next due entries are read
    /// and sent, so the endpoint is not left idle while a round waits for its slowest call. The
    /// outbox is read on from the last entry taken, and from its start again once nothing is due
    /// after it or every `windowBatches` calls. Clean replies are recorded in the background, in
    /// order (at most `recordingBacklog` waiting); the first failure stops the window, and it and
    /// the calls still in flight are recorded before anything else is sent.
    private func pushWindow() async -> Outcome {
        enum Event: Sendable {
            case replied([OutboxEntry], [(OutboxEntry, Result<JSONValue, EndpointError>)]?)
            case woken
        }
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
                while filling && running < Self.batchesInFlight && !stopping {
                    if sentSinceStart == Self.windowBatches { (cursor, sentSinceStart) = (0, 0) }
                    let now = RetryPolicy.deadlineNow()
                    let excluding = [inFlight, recordingKeys]
                    let after = cursor
                    let read: [OutboxEntry]
                    do {
                        read = try await index.read { tx in
                            try tx.dueEntries(
                                now: now, limit: Self.batchChunk, excludingAny: excluding, after: after, maxBytes: ProtocolLimits.agentBatchBytes)
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
                    group.addTask { .replied(due, await self.sendBatch(due, revisions: revisions, mappings: mappings)) }
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
                guard let results else {
                    // The endpoint has no batch call after all: the entries stay queued for single PUTs.
                    filling = false
                    continue
                }
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

    /// `entries` in batch calls of at most `batchChunk` documents and ``ProtocolLimits/agentBatchBytes``
    /// (a larger document goes alone).
    static func chunks(of entries: [OutboxEntry]) -> [[OutboxEntry]] {
        var chunks: [[OutboxEntry]] = []
        var current: [OutboxEntry] = []
        var bytes = 0
        for entry in entries {
            let size = entry.payload.utf8.count
            if !current.isEmpty && (current.count == batchChunk || bytes + size > ProtocolLimits.agentBatchBytes) {
                chunks.append(current)
                (current, bytes) = ([], 0)
            }
            current.append(entry)
            bytes += size
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }

    /// What sending `entries` needs from the index: the revision each document was last known at,
    /// and its files' uploads.
    private func sendingContext(_ entries: [OutboxEntry]) async -> ([String: Int64], [String: AttachmentMapping]) {
        // The revision each document was last known at (read with its entry): the server refuses a
        // write based on an older one (409), and the document is merged instead of overwriting
        // someone else's edit.
        let revisions = Dictionary(entries.compactMap { e in e.serverRev.map { (e.docID, $0) } }, uniquingKeysWith: { a, _ in a })
        let mappings = (try? await index.read { tx -> [String: AttachmentMapping] in
            var mappings: [String: AttachmentMapping] = [:]
            let anyUploads = try tx.hasUploads()
            for e in entries where anyUploads || FileReference.mayAppear(in: e.payload) {
                mappings[e.docID] = AttachmentMapping(try tx.uploads(docID: e.docID))
            }
            return mappings
        }) ?? [:]
        return (revisions, mappings)
    }

    private func send(_ entries: [OutboxEntry]) async -> [(OutboxEntry, Result<JSONValue, EndpointError>)] {
        let (revisions, mappings) = await sendingContext(entries)
        if capabilities.batch != false {
            // Several batches in flight keep both the agent and the server busy.
            let chunks = Self.chunks(of: entries)
            let outcomes = await withTaskGroup(of: [(OutboxEntry, Result<JSONValue, EndpointError>)]?.self) { group in
                for chunk in chunks { group.addTask { await self.sendBatch(chunk, revisions: revisions, mappings: mappings) } }
                var all: [[(OutboxEntry, Result<JSONValue, EndpointError>)]?] = []
                for await outcome in group { all.append(outcome) }
                return all
            }
            if outcomes.allSatisfy({ $0 != nil }) { return outcomes.flatMap { $0! } }
        }
        return await withTaskGroup(of: (OutboxEntry, Result<JSONValue, EndpointError>).self) { group in
            var results: [(OutboxEntry, Result<JSONValue, EndpointError>)] = []
            var iterator = entries.makeIterator()
            let endpoint = self.endpoint
            func start(_ entry: OutboxEntry) {
                group.addTask {
                    do throws(EndpointError) {
                        let body = Self.wirePayload(entry, rev: nil, mapping: mappings[entry.docID])
                        return (entry, .success(try await endpoint.put(Array(body.utf8), ifMatch: revisions[entry.docID])))
                    } catch {
                        return (entry, .failure(error))
                    }
                }
            }
            for _ in 0..<concurrency { if let e = iterator.next() { start(e) } }
            for await result in group {
                results.append(result)
                if let e = iterator.next() { start(e) }
            }
            return results
        }
    }

    /// Sends `entries` in one `/api/sync` call; `nil` when the endpoint has no such call (it then
    /// gets one request per document). Changes from others that come back with the reply are
    /// applied to the folder.
    private func sendBatch(
        _ entries: [OutboxEntry], revisions: [String: Int64], mappings: [String: AttachmentMapping]
    ) async -> [(OutboxEntry, Result<JSONValue, EndpointError>)]? {
        let payloads = entries.map { Self.wirePayload($0, rev: revisions[$0.docID], mapping: mappings[$0.docID]) }
        let cursor = (try? await index.read { try $0.meta("cursor") }).flatMap { $0.flatMap { Int64($0) } } ?? 0
        let reply: PingPongEndpoint.SyncReply
        do throws(EndpointError) {
            reply = try await endpoint.sync(since: cursor, documents: payloads, echo: false)
        } catch .rejected(let status, _) where status == 404 || status == 405 {
            capabilities.setBatch(false)
            return nil
        } catch .rejected(let status, _) where entries.count > 1 && (status == 400 || status == 413) {
            // The call as a whole was refused (too large, or one document the server cannot read):
            // each half is sent on its own, down to single documents, so only the one at fault is
            // rejected.
            let half = entries.count / 2
            guard let first = await sendBatch(Array(entries[..<half]), revisions: revisions, mappings: mappings),
                  let second = await sendBatch(Array(entries[half...]), revisions: revisions, mappings: mappings)
            else { return nil }
            return first + second
        } catch {
            return entries.map { ($0, .failure(error)) }
        }
        capabilities.setBatch(true)
        // Another server, or this one restored: its changes since our cursor are not all it has;
        // the pull starts over instead (the acknowledgements below still hold).
        let replaced = (try? await Puller.serverWasReplaced(reply, since: cursor, index: index, logger: logger)) ?? false
        if replaced { wake() }
        let sent = Set(entries.map(\.docID))
        var stored: [String: JSONObject] = [:]
        var others: [JSONObject] = []
        for doc in reply.success {
            if let id = doc["id"]?.string, sent.contains(id), stored[id] == nil { stored[id] = doc } else { others.append(doc) }
        }
        var failed: [String: EndpointError] = [:]
        for e in reply.errors {
            guard let id = e.id else { continue }
            failed[id] = e.message.hasPrefix("revision") ? .conflict(current: e.current.map { .object($0) }) : .rejected(status: 400, message: e.message)
        }
        if let applier, !replaced {
            try? await Puller.apply(others, cursor: reply.more ? cursor : reply.cursor, applier: applier, index: index, lock: lock, logger: logger)
        }
        return entries.map { e in
            if let doc = stored[e.docID] { return (e, .success(.object(doc))) }
            return (e, .failure(failed[e.docID] ?? .badReply("the reply does not mention document \(e.docID)")))
        }
    }

    private func record(_ results: [(OutboxEntry, Result<JSONValue, EndpointError>)], oneShot: Bool) async -> Outcome {
        let successes = results.filter { if case .success = $0.1 { true } else { false } }.count
        let now = clock.now()
        let deadlineNow = RetryPolicy.deadlineNow()
        var transient: [(OutboxEntry, EndpointError)] = []
        var unauthorized: EndpointError?
        var retryAfter: Duration?
        for (entry, result) in results {
            guard case .failure(let error) = result else { continue }
            switch error {
            case .unauthorized: unauthorized = error
            case .unavailable(_, _, let after):
                if let after { retryAfter = max(retryAfter ?? .zero, after) }
                transient.append((entry, error))
            default:
                if error.isTransient { transient.append((entry, error)) }
            }
        }
        let wentOffline = successes == 0 && !transient.isEmpty
        consecutiveFailures = wentOffline ? consecutiveFailures + 1 : 0
        let backoff = policy.delay(afterFailures: max(consecutiveFailures, 1), retryAfter: retryAfter, unit: Double.random(in: 0..<1))
        let backoffMs = Int64(backoff.components.seconds * 1000 + backoff.components.attoseconds / 1_000_000_000_000_000)
        let cameBack = successes > 0 && offlineSince != nil
        let endpointURL = endpoint.baseURL
        let offlineSinceValue = wentOffline ? (offlineSince ?? now) : nil
        // What each acknowledgement records is worked out before the transaction: the index has
        // one writer, and the folder's scanner waits for it.
        let acknowledged = results.map { entry, result -> Acknowledgement? in
            guard case .success(let stored) = result else { return nil }
            return Acknowledgement(entry, stored: stored)
        }
        let rejected: [(String, String)]
        do {
            rejected = try await index.write { [transient, unauthorized] tx in
                var rejected: [(String, String)] = []
                let anyUploads = try tx.hasUploads()
                for ((entry, result), ack) in zip(results, acknowledged) {
                    switch result {
                    case .success:
                        try ack?.record(tx: tx, anyUploads: anyUploads)
                    case .failure(.rejected(let status, let message)):
                        try tx.removeEntry(entry)
                        if var doc = try tx.document(id: entry.docID), doc.bodyHash == entry.bodyHash || entry.bodyHash.hasPrefix("deleted:") {
                            doc.state = .rejected
                            doc.error = "\(status): \(message)"
                            try tx.upsertDocument(doc)
                            rejected.append((doc.path ?? doc.id, doc.error!))
                        }
                    case .failure(.unauthorized), .failure(.conflict):
                        break  // stays queued: paused, or merged below
                    case .failure(let error):
                        let next = wentOffline ? 0 : deadlineNow + backoffMs
                        try tx.recordFailure(key: entry.key, version: entry.version, error: error.description, nextAttemptAt: next)
                    }
                }
                if cameBack { try tx.rescheduleAll(at: 0) }
                try tx.setMeta("offline_since", offlineSinceValue.map(String.init))
                try tx.setMeta("next_retry_at", wentOffline ? String(deadlineNow + backoffMs) : nil)
                if let unauthorized {
                    try tx.setMeta("paused", "token rejected by \(endpointURL): \(unauthorized)")
                }
                try tx.setMeta("last_error", transient.first.map { $0.1.description } ?? unauthorized?.description)
                return rejected
            }
        } catch {
            logger.error("cannot record push results in the index", metadata: ["error": "\(error)"])
            return .idle(.seconds(1))
        }
        let conflicts = results.compactMap { entry, result -> (OutboxEntry, JSONValue?)? in
            if case .failure(.conflict(let current)) = result { return (entry, current) }
            return nil
        }
        for (entry, current) in conflicts { await resolveConflict(entry, current: current) }
        for (path, message) in rejected {
            logger.error("document rejected by the endpoint; fix the file to retry: \(message)", metadata: ["file.path": "\(path)"])
        }
        if let unauthorized, paused == nil {
            paused = "token rejected by \(endpointURL)"
            logger.error("token rejected by \(endpointURL); pushing is paused until the token file changes or the agent restarts", metadata: ["error": "\(unauthorized)"])
        }
        if cameBack {
            logger.info("endpoint reachable again; delivering queued changes", metadata: ["endpoint": "\(endpointURL)"])
        }
        if wentOffline {
            if offlineSince == nil {
                logger.warning("endpoint unavailable; changes stay queued and are retried", metadata: ["error": "\(transient[0].1)", "endpoint": "\(endpointURL)"])
            }
            offlineSince = offlineSinceValue
            lastError = transient[0].1.description
            nextTry = ContinuousClock.now + backoff
            return oneShot ? .idle(nil) : .idle(backoff)
        }
        offlineSince = nil
        nextTry = nil
        if successes > 0 {
            lastError = nil
            writesAcknowledged()
        }
        if paused != nil { return .idle(.seconds(2)) }
        if oneShot && !transient.isEmpty { lastError = transient[0].1.description; return .idle(nil) }
        return .progressed
    }

    /// The server holds a newer revision than the write was based on: merge it into the folder
    /// (the applier re-queues the merged version, based on the current revision).
    private func resolveConflict(_ entry: OutboxEntry, current: JSONValue?) async {
        guard let applier else { return }
        var document = current?.object
        if document == nil {
            do throws(EndpointError) {
                document = try await endpoint.get(id: entry.docID)?.object
            } catch {
                logger.warning("cannot fetch the current version after a conflict", metadata: ["doc.id": "\(entry.docID)", "error": "\(error)"])
                return
            }
        }
        guard let document else { return }
        do {
            _ = try await lock.run { try await applier.apply([document]) }
        } catch {
            logger.error("cannot merge a conflicting version", metadata: ["doc.id": "\(entry.docID)", "error": "\(error)"])
        }
    }

    /// The text sent for an entry: its payload, with the revision it is based on (batch call) and
    /// file references replaced by what the server should hold. Parsed only when something changes.
    static func wirePayload(_ entry: OutboxEntry, rev: Int64?, mapping: AttachmentMapping?) -> String {
        guard rev != nil || mapping != nil, case .object(var object)? = try? JSONParser.parse(entry.payload) else {
            return entry.payload
        }
        if let mapping { object = mapping.toWire(object) }
        if let rev { object[DocumentRules.revKey] = .number(String(rev)) }
        return JSONWriter.string(.object(object))
    }

    /// An acknowledged write: the entry leaves the outbox if it is still the version sent, and the
    /// document remembers what the server holds (revision and merge base).
    struct Acknowledgement: Sendable {
        let entry: OutboxEntry
        let serverRev: Int64?
        /// The server's version as the folder would hold it, when the reply had one.
        let wire: JSONObject?
        let baseText: String?
        let baseHash: String?
        /// The endpoint acknowledged the write without returning it (no `docType`): it stored the
        /// body as sent, which becomes the merge base.
        let storedAsSent: Bool

        init(_ entry: OutboxEntry, stored: JSONValue) {
            self.entry = entry
            if case .number(let rev) = stored.object?[DocumentRules.revKey] { serverRev = Int64(rev) } else { serverRev = nil }
            storedAsSent = stored.object.map { $0["docType"] == nil && $0["id"] != nil } ?? false
            if !storedAsSent, let object = stored.object, let docType = object["docType"]?.string {
                let wire = Scanner.wireBody(object, docType: docType)
                let text = JSONWriter.string(.object(wire))
                self.wire = wire
                baseText = text
                baseHash = ContentHash.sha256Hex(text.utf8)
            } else {
                wire = nil
                baseText = nil
                baseHash = nil
            }
        }

        func record(tx: IndexTransaction, anyUploads: Bool) throws {
            let current = try tx.removeEntry(entry)
            if storedAsSent {
                try recordStoredAsSent(tx: tx, current: current)
                return
            }
            var baseText = self.baseText
            var baseHash = self.baseHash
            if let wire, anyUploads || FileReference.mayAppear(in: entry.payload) {
                // The folder holds file references where the server holds URLs: the base keeps the references.
                guard let doc = try tx.document(id: entry.docID) else { return }
                if let local = try? JSONParser.parse(doc.body).object {
                    let text = JSONWriter.string(.object(AttachmentMapping(try tx.uploads(docID: doc.id)).toLocal(wire, local: local)))
                    baseText = text
                    baseHash = ContentHash.sha256Hex(text.utf8)
                }
            }
            try tx.recordAcknowledged(
                id: entry.docID, key: entry.docKey, pushedHash: entry.bodyHash, serverRev: serverRev, base: baseText, baseHash: baseHash,
                current: current)
        }

        /// The base is the body that was queued (references and all, as the folder holds it). When
        /// the document still has that body (nearly always) only the flag is set; otherwise the
        /// sent body is taken back out of the payload.
        private func recordStoredAsSent(tx: IndexTransaction, current: Bool) throws {
            let sentHash = entry.bodyHash.hasPrefix("deleted:") ? String(entry.bodyHash.dropFirst("deleted:".count)) : entry.bodyHash
            if try tx.recordAcknowledged(
                id: entry.docID, key: entry.docKey, pushedHash: entry.bodyHash, serverRev: serverRev, ifBodyHash: sentHash, current: current)
            {
                return
            }
            guard case .object(let object)? = try? JSONParser.parse(entry.payload), let docType = object["docType"]?.string else { return }
            let text = JSONWriter.string(.object(Scanner.wireBody(object, docType: docType)))
            try tx.recordAcknowledged(
                id: entry.docID, key: entry.docKey, pushedHash: entry.bodyHash, serverRev: serverRev, base: text,
                baseHash: ContentHash.sha256Hex(text.utf8), current: current)
        }
    }

    private func restoreState() async {
        let saved = try? await index.read { tx in (try tx.meta("offline_since"), try tx.meta("paused")) }
        offlineSince = saved?.0.flatMap { Int64($0) }
        // A pause is not carried over a restart: restarting is how a user says "try the token again".
        if saved?.1 != nil { try? await index.write { try $0.setMeta("paused", nil) } }
    }
}
