import DocsyncIndex
import Logging

/// What a worker's round did: something moved (go on at once), or nothing can now (wait for its
/// signal, at most the duration given: a backoff's end, or a poll).
enum WorkerOutcome: Sendable {
    case progressed
    case idle(Duration?)
}

/// The loop the pusher, the uploader and the downloader each run: a round, then straight on or a
/// wait for its signal, until stopped. One loop, so waking, stopping and waiting behave alike on
/// every path; what a round does (and its backoff, its credential) is the worker's own.
protocol Worker: Actor {
    /// "There is work": whoever queues signals it; the worker waits on it (one waiter).
    var signal: WakeSignal { get }
    var stopping: Bool { get }
    /// One round: does what can be done now.
    func workRound() async -> WorkerOutcome
}

extension Worker {
    /// Rounds until ``stopping``; between rounds that made no progress, waits for the signal.
    func loop() async {
        while !stopping {
            switch await workRound() {
            case .progressed: continue
            case .idle(let wait): await signal.wait(timeout: wait)
            }
        }
    }
}

extension Index {
    /// How long a worker of `kind`'s entries idles: until the next one's retry is due, or until
    /// woken when none waits. An index that cannot be read is looked at again in ten seconds: read
    /// as "none waits", a retry due later waited for a wake that only a new change would bring.
    func idleUntilDue(_ kind: OutboxKind, logger: Logger) async -> WorkerOutcome {
        do {
            let next = try await read { try $0.nextAttemptAt(kind: kind) }
            return .idle(next.map { .milliseconds(max(1, $0 - RetryPolicy.deadlineNow())) })
        } catch {
            logger.error("cannot read the outbox; looking again shortly", metadata: ["outbox.kind": "\(kind.rawValue)", "error": "\(error)"])
            return .idle(.seconds(10))
        }
    }

    /// What a one-shot `sync` says is left of `kind`'s entries after draining them: `nil` when
    /// none is, else `failure` or the count (`"3 " + what`). An index that cannot be read says so:
    /// read as "none left", `sync` ended as if everything had gone.
    func leftAfterDrain(_ kind: OutboxKind, failure: String?, what: String) async -> String? {
        do {
            let left = try await read { try $0.pendingCount(kind: kind) }
            return left == 0 ? nil : (failure ?? "\(left) \(what)")
        } catch {
            return "cannot read the index to count what is left: \(error)"
        }
    }
}
