import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Logging

extension Pusher {
    /// What a round's failures say, sorted: transient ones, a credential refused, the longest
    /// wait a server asked for, and whether nothing got through (the endpoint is offline).
    struct RoundReport: Sendable {
        var successes = 0
        var transient: [(OutboxEntry, EndpointError)] = []
        var unauthorized: EndpointError?
        var retryAfter: Duration?
        var wentOffline: Bool { successes == 0 && !transient.isEmpty }

        init(_ results: [Sent]) {
            for (entry, outcome) in results {
                guard case .failed(let error) = outcome else {
                    successes += 1
                    continue
                }
                switch error {
                case .unauthorized: unauthorized = error
                case .unavailable(_, let after):
                    if let after { retryAfter = max(retryAfter ?? .zero, after) }
                    transient.append((entry, error))
                default:
                    if error.isTransient { transient.append((entry, error)) }
                }
            }
        }
    }

    /// What the round's transaction writes besides the outcomes: when to retry, the offline state.
    struct RoundState: Sendable {
        var deadlineNow: Int64
        var backoffMs: Int64
        var wentOffline: Bool
        var cameBack: Bool
        var offlineSince: Int64?
        var endpoint: String
    }

    /// Records a round's outcomes in one transaction: acknowledged entries leave the outbox,
    /// rejected documents are marked, transient failures back off (or the endpoint is offline),
    /// an unauthorized reply pauses pushing; conflicts are merged afterwards.
    func record(_ round: Round, oneShot: Bool) async -> WorkerOutcome {
        let results = round.results
        let report = RoundReport(results)
        consecutiveFailures = report.wentOffline ? consecutiveFailures + 1 : 0
        let backoff = policy.delay(afterFailures: max(consecutiveFailures, 1), retryAfter: report.retryAfter, unit: Double.random(in: 0..<1))
        let state = RoundState(
            deadlineNow: RetryPolicy.deadlineNow(),
            backoffMs: backoff.wholeMilliseconds,
            wentOffline: report.wentOffline, cameBack: report.successes > 0 && offlineSince != nil,
            offlineSince: report.wentOffline ? (offlineSince ?? clock.now()) : nil, endpoint: endpoint.location)
        let (rejected, notAllowed): ([(String, String)], [(String, String)])
        do {
            guard let written = try await writeOutcomes(results, epoch: round.epoch, report: report, state: state) else {
                logger.info("replies from the server this folder synced with before it was replaced are not recorded; the documents go to the new one")
                return .progressed
            }
            (rejected, notAllowed) = written
        } catch {
            logger.error("cannot record push results in the index", metadata: ["error": "\(error)"])
            return .idle(.seconds(1))
        }
        for (entry, outcome) in results {
            switch outcome {
            case .failed(.conflict(let current)):
                conflictStreaks[entry.docID, default: 0] += 1
                await resolveConflict(entry, current: current)
                await holdIfConflictsRepeat(entry)
            case .failed(.conflictWithOwnWrite(let current)):
                await adoptOwnWrite(entry, current: current)
            case .failed:
                break  // another failure neither starts nor ends a streak of conflicts
            case .stored, .storedAsSent:
                conflictStreaks[entry.docID] = nil
            }
        }
        for (path, message) in rejected {
            logger.error("document rejected by the endpoint; fix the file to retry: \(message)", metadata: ["file.path": "\(path)"])
        }
        for (path, message) in notAllowed {
            logger.warning(
                "\(message); the edit stays in the file and is sent again when the file or the token changes (or in an hour)",
                metadata: ["file.path": "\(path)"])
        }
        return settle(report, state: state, backoff: backoff, oneShot: oneShot)
    }

    /// How long a write the token may not make waits before it is tried again unchanged.
    static let notAllowedWait: Duration = .seconds(3600)

    /// The round's transaction; returns the documents rejected and those newly not allowed (path
    /// or id, reason), or `nil` when the server was replaced since the round was read (nothing is
    /// recorded: see ``Pusher/Round``).
    private func writeOutcomes(
        _ results: [Sent], epoch: String?, report: RoundReport, state: RoundState
    ) async throws -> (rejected: [(String, String)], notAllowed: [(String, String)])? {
        // What each acknowledgement records is worked out before the transaction: the index has
        // one writer, and the folder's scanner waits for it.
        let acknowledged = results.map { entry, outcome -> Acknowledgement? in
            if case .failed = outcome { return nil }
            return Acknowledgement(entry, outcome: outcome)
        }
        count(results)
        return try await index.write { tx in
            guard try tx.meta(.serverReplacedAt) == epoch else { return nil }
            var rejected: [(String, String)] = []
            var notAllowed: [(String, String)] = []
            let anyUploads = try tx.hasUploads()
            var stored: [String] = []
            for ((entry, outcome), ack) in zip(results, acknowledged) {
                switch outcome {
                case .stored, .storedAsSent:
                    try ack?.record(tx: tx, anyUploads: anyUploads)
                    stored.append(entry.docID)
                case .failed(.rejected(let reason)), .failed(.unsupported(let reason)):
                    try tx.removeEntry(entry)
                    if var doc = try tx.document(id: entry.docID), doc.bodyHash == entry.bodyHash || entry.isDeletion {
                        doc.state = .rejected
                        doc.error = reason
                        try tx.upsertDocument(doc)
                        rejected.append((doc.path ?? doc.id, reason))
                    }
                case .failed(.unauthorized), .failed(.conflict), .failed(.conflictWithOwnWrite):
                    break  // stays queued: paused, or merged (or based anew) after the transaction
                case .failed(.forbidden(let right, let reason)):
                    // Kept, not retried in a loop: again when the file or the token changes, or
                    // after a long wait (rights on the server may change meanwhile).
                    let text = OutboxEntry.notAllowedMark + " " + reason + (right.map { " (the token needs \($0))" } ?? "")
                    try tx.recordFailure(key: entry.key, version: entry.version, error: text, nextAttemptAt: state.deadlineNow + Self.notAllowedWait.wholeMilliseconds)
                    if entry.attempts == 0 || entry.lastError?.hasPrefix(OutboxEntry.notAllowedMark) != true {
                        let path = try tx.file(forDocument: entry.docID)?.path ?? entry.docID
                        notAllowed.append((path, text))
                    }
                case .failed(let error):
                    let next = state.wentOffline ? 0 : state.deadlineNow + state.backoffMs
                    try tx.recordFailure(key: entry.key, version: entry.version, error: error.description, nextAttemptAt: next)
                }
            }
            try tx.markSeenIfReconciling(stored)
            if state.cameBack { try tx.rescheduleAll(at: 0) }
            try tx.setMeta(.offlineSince, state.offlineSince.map(String.init))
            try tx.setMeta(.nextRetryAt, state.wentOffline ? String(state.deadlineNow + state.backoffMs) : nil)
            if let unauthorized = report.unauthorized {
                try tx.setMeta(.paused, "token rejected by \(state.endpoint): \(unauthorized)")
            }
            try tx.setMeta(.lastError, report.transient.first.map { $0.1.description } ?? report.unauthorized?.description)
            return (rejected, notAllowed)
        }
    }

    /// The round's outcomes, counted for metrics.
    func count(_ results: [Sent]) {
        var counts: [String: Int] = [:]
        for (_, outcome) in results {
            let name = switch outcome {
            case .stored, .storedAsSent: "stored"
            case .failed(.conflict), .failed(.conflictWithOwnWrite): "conflict"
            case .failed(.rejected), .failed(.unsupported): "rejected"
            case .failed(.forbidden): "not_allowed"
            case .failed(.unauthorized): "unauthorized"
            case .failed: "retried"
            }
            counts[name, default: 0] += 1
        }
        for (name, n) in counts { metrics.pushed(name, count: n) }
    }

    /// The pusher's state after a recorded round, said once to the user; what to do next.
    private func settle(_ report: RoundReport, state: RoundState, backoff: Duration, oneShot: Bool) -> WorkerOutcome {
        if let unauthorized = report.unauthorized, paused == nil {
            credential.refuse()
            paused = "token rejected by \(state.endpoint)"
            logger.error(
                "token rejected by \(state.endpoint); pushing is paused until the token file holds a token not refused yet, or the agent restarts",
                metadata: ["error": "\(unauthorized)"])
        }
        if state.cameBack {
            logger.info("endpoint reachable again; delivering queued changes", metadata: ["endpoint": "\(state.endpoint)"])
        }
        if state.wentOffline {
            if offlineSince == nil {
                logger.warning(
                    "endpoint unavailable; changes stay queued and are retried",
                    metadata: ["error": "\(report.transient[0].1)", "endpoint": "\(state.endpoint)"])
            }
            offlineSince = state.offlineSince
            lastError = report.transient[0].1.description
            nextTry = ContinuousClock.now + backoff
            return oneShot ? .idle(nil) : .idle(backoff)
        }
        offlineSince = nil
        nextTry = nil
        if report.successes > 0 {
            lastError = nil
            uploadWork.signal()
        }
        if paused != nil { return .idle(.seconds(2)) }
        if let (_, error) = report.transient.first {
            lastError = error.description
            if oneShot { return .idle(nil) }
        }
        return .progressed
    }

    /// The server holds a newer revision than the write was based on: merge it into the folder
    /// (the applier re-queues the merged version, based on the current revision).
    private func resolveConflict(_ entry: OutboxEntry, current: JSONObject?) async {
        var document = current
        if document == nil {
            do throws(EndpointError) {
                document = try await endpoint.fetch(id: entry.docID, docType: entry.docType ?? "")
            } catch {
                logger.warning("cannot fetch the current version after a conflict", metadata: ["doc.id": "\(entry.docID)", "error": "\(error)"])
                return
            }
        }
        guard let document else {
            // The server has no such document: deleted there, and its tombstone purged since. An
            // edit beats a delete, so it goes again as a new document ("create it if absent").
            do {
                try await index.write { try $0.forgetServerRevision(of: entry.docID) }
                logger.info("the endpoint no longer has this document (deleted, its tombstone purged); sending it as new", metadata: ["doc.id": "\(entry.docID)"])
            } catch {
                logger.error("cannot record that the endpoint lost a document", metadata: ["doc.id": "\(entry.docID)", "error": "\(error)"])
            }
            return
        }
        do {
            // Through the one way in: noted for git, checked against the schemas, the folder's
            // presence and the deletion guard as any pulled change.
            _ = try await changes.write([document], guarded: false)
        } catch {
            logger.error("cannot merge a conflicting version", metadata: ["doc.id": "\(entry.docID)", "error": "\(error)"])
        }
    }

    /// The server's version is this folder's own earlier write, whose reply was lost: what waits
    /// here was made after it, so it goes again over that revision, unmerged. (Taken for someone
    /// else's edit, it made a deletion lose to the folder's own older version: the file came back.)
    private func adoptOwnWrite(_ entry: OutboxEntry, current: JSONObject) async {
        guard case .number(let text)? = current[DocumentRules.revKey], let rev = Int64(text) else { return }
        let base = JSONWriter.string(.object(WireForm.body(current, docType: entry.docType ?? "")))
        let deleted = current[DocumentRules.deletedAtKey].map { $0 != .null } ?? false
        let hash = OutboxEntry.bodyHash(ContentHash.sha256Hex(base.utf8), deleted: deleted)
        do {
            let acknowledged = try await index.write { tx -> Bool in
                // The lost write was this very version: acknowledged as stored, nothing goes again.
                if hash == entry.bodyHash {
                    try Acknowledgement(entry, outcome: .storedAsSent(revision: rev)).record(tx: tx, anyUploads: false)
                    return true
                }
                guard var doc = try tx.document(id: entry.docID) else { return false }
                doc.serverRev = rev
                doc.base = base
                try tx.upsertDocument(doc)
                return false
            }
            let what = acknowledged ? "it was this version: acknowledged" : "sending the later change over it"
            logger.info("the endpoint holds this folder's own earlier write (its reply was lost); \(what)", metadata: ["doc.id": "\(entry.docID)"])
        } catch {
            logger.error("cannot record the revision of this folder's own earlier write", metadata: ["doc.id": "\(entry.docID)", "error": "\(error)"])
        }
    }

    /// A document whose writes keep meeting a conflict (a server that answers each one with yet
    /// another current version) waits with backoff after the second in a row, instead of being
    /// merged and sent again as fast as the agent can; said once, and kept on its entry for
    /// `status`. The merge has queued a new version by now, so the hold applies to whatever
    /// version waits. A conflict is an answer, not an outage: the hold is at most
    /// `longestConflictHold`, or two people saving the same document at once would wait a
    /// minute for each other's edits.
    func holdIfConflictsRepeat(_ entry: OutboxEntry) async {
        let streak = conflictStreaks[entry.docID] ?? 0
        guard streak >= 2 else { return }
        let delay = min(policy.delay(afterFailures: streak - 1, unit: Double.random(in: 0..<1)), Self.longestConflictHold)
        let until = RetryPolicy.deadlineNow() + Int64(delay / .milliseconds(1))
        let why = "the endpoint answered \(streak) writes in a row with a conflict"
        if streak == 3 {
            logger.warning("\(why); backing off", metadata: ["doc.id": "\(entry.docID)"])
            metrics.repeated("conflict")
        }
        do {
            try await index.write { try $0.deferEntry(key: entry.key, error: why, nextAttemptAt: until) }
        } catch {
            logger.error("cannot hold a conflicting write", metadata: ["doc.id": "\(entry.docID)", "error": "\(error)"])
        }
    }
}
