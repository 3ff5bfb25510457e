import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Logging

extension Pusher {
    /// Records a round's outcomes in one transaction: acknowledged entries leave the outbox,
    /// rejected documents are marked, transient failures back off (or the endpoint is offline),
    /// an unauthorized reply pauses pushing; conflicts are merged afterwards.
    func record(_ results: [Sent], oneShot: Bool) async -> Outcome {
        let successes = results.filter { if case .failed = $0.outcome { false } else { true } }.count
        let now = clock.now()
        let deadlineNow = RetryPolicy.deadlineNow()
        var transient: [(OutboxEntry, EndpointError)] = []
        var unauthorized: EndpointError?
        var retryAfter: Duration?
        for (entry, outcome) in results {
            guard case .failed(let error) = outcome else { continue }
            switch error {
            case .unauthorized: unauthorized = error
            case .unavailable(_, let after):
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
        let endpointURL = endpoint.location
        let offlineSinceValue = wentOffline ? (offlineSince ?? now) : nil
        // What each acknowledgement records is worked out before the transaction: the index has
        // one writer, and the folder's scanner waits for it.
        let acknowledged = results.map { entry, outcome -> Acknowledgement? in
            if case .failed = outcome { return nil }
            return Acknowledgement(entry, outcome: outcome)
        }
        let rejected: [(String, String)]
        do {
            rejected = try await index.write { [transient, unauthorized] tx in
                var rejected: [(String, String)] = []
                let anyUploads = try tx.hasUploads()
                for ((entry, outcome), ack) in zip(results, acknowledged) {
                    switch outcome {
                    case .stored, .storedAsSent:
                        try ack?.record(tx: tx, anyUploads: anyUploads)
                    case .failed(.rejected(let reason)), .failed(.unsupported(let reason)):
                        try tx.removeEntry(entry)
                        if var doc = try tx.document(id: entry.docID), doc.bodyHash == entry.bodyHash || entry.bodyHash.hasPrefix("deleted:") {
                            doc.state = .rejected
                            doc.error = reason
                            try tx.upsertDocument(doc)
                            rejected.append((doc.path ?? doc.id, reason))
                        }
                    case .failed(.unauthorized), .failed(.conflict):
                        break  // stays queued: paused, or merged below
                    case .failed(let error):
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
        let conflicts = results.compactMap { entry, outcome -> (OutboxEntry, JSONObject?)? in
            if case .failed(.conflict(let current)) = outcome { return (entry, current) }
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
    private func resolveConflict(_ entry: OutboxEntry, current: JSONObject?) async {
        guard let applier else { return }
        var document = current
        if document == nil {
            do throws(EndpointError) {
                document = try await endpoint.fetch(id: entry.docID, docType: entry.docType ?? "")
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
}
