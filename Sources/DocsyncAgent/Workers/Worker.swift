import DocsyncIndex
import Logging

/// What a worker's round did: something moved (go on at once); nothing can now (wait for its
/// signal, at most the duration given: a retry's time, or a poll); it failed (wait out the
/// worker's backoff, longer after each failure in a row); or its work is over for this run.
enum WorkerOutcome: Sendable {
    case progressed
    case idle(Duration?)
    case failed(any Error)
    case finished
}

/// Every loop of the engine: a round, then straight on, a wait for its signal or a backoff,
/// until stopped or finished. One loop, so waking, stopping, waiting and backing off behave alike
/// on every path; what a round does is the worker's own. (Syncthing's folder `Serve` is one such
/// loop with its timers.)
protocol Worker: Actor {
    /// "There is work": whoever queues signals it; the worker waits on it (one waiter). A stop
    /// signals it too, so that no wait outlives the agent.
    var signal: WakeSignal { get }
    var stopping: Bool { get set }
    /// The waits after failed rounds.
    var backoff: RetryPolicy { get }
    /// The worker's whole run: ``loop()``, with what comes before and after it where the worker
    /// has some (a requirement, so that a worker called through `any Worker` runs its own).
    func run() async
    /// One round: does what can be done now.
    func workRound() async -> WorkerOutcome
    /// Cancels what a round has in flight (a long poll, an upload), for ``stop()``.
    func cancelInFlight()
    /// The `count`-th failed round in a row (said at the first: once per outage).
    func failed(_ error: any Error, count: Int) async
    /// A round that did not fail, after `failures` that did.
    func recovered(after failures: Int) async
}

extension Worker {
    func run() async { await loop() }

    /// Rounds until ``stopping`` or a finished one; between rounds that made no progress, waits
    /// for the signal, and after a failed one for the backoff (or the signal).
    func loop() async {
        var failures = 0
        while !stopping {
            let outcome = await workRound()
            if stopping { return }
            switch outcome {
            case .progressed, .idle:
                if failures > 0 {
                    await recovered(after: failures)
                    failures = 0
                }
                if case .idle(let wait) = outcome { await signal.wait(timeout: wait) }
            case .finished: return
            case .failed(let error):
                failures += 1
                await failed(error, count: failures)
                await signal.wait(timeout: backoff.delay(afterFailures: failures, unit: Double.random(in: 0..<1)))
            }
        }
    }

    /// Ends the loop: the round in flight is cancelled where it can be, and the wait ends at once.
    func stop() {
        stopping = true
        cancelInFlight()
        signal.signal()
    }

    func cancelInFlight() {}
    func failed(_ error: any Error, count: Int) async {}
    func recovered(after failures: Int) async {}
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
    /// none is, else `failure` or the count (`"3 " + what`).
    func leftAfterDrain(_ kind: OutboxKind, failure: String?, what: String) async -> String? {
        await leftAfterDrain(counting: { try $0.pendingCount(kind: kind) }) { failure ?? "\($0) \(what)" }
    }

    /// What a one-shot `sync` says is left after a part drained its work: `nil` when `counting`
    /// finds none, else what `said` makes of the count. An index that cannot be read says so:
    /// read as "none left", `sync` ended as if everything had gone.
    func leftAfterDrain(counting: @escaping @Sendable (IndexTransaction) throws -> Int, said: (Int) -> String) async -> String? {
        do {
            let left = try await read(counting)
            return left == 0 ? nil : said(left)
        } catch {
            return "cannot read the index to count what is left: \(error)"
        }
    }
}
