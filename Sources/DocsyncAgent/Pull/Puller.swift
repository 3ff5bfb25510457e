import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// Follows the server's changes: a long poll where the endpoint has one (held by the server
/// until something changes, or 25 s pass: changes arrive at once and an idle agent sends two
/// requests a minute), a pull every `pollInterval` where it has not, nothing from a push-only
/// endpoint.
actor Puller: Worker, FolderPart {
    let endpoint: any DocumentEndpoint
    /// The folder's shared values, read through ``FolderPart``.
    let context: FolderContext
    /// Where a reply's changes go (the cursor moves only past what is durable there).
    let changes: ServerChanges
    let wait: Int
    let pollInterval: Duration
    var stopping = false
    var backoff: RetryPolicy { policy }
    /// The next pull asks at once (the first, and after more was said to wait or a failure).
    private var first = true
    private var idle = IdleReturns()
    /// Pulls in a row that found the endpoint's cursor stuck.
    private var stuck = 0
    /// The synced folder went away while a pull was being written: pulling has stopped.
    private(set) var folderGone = false
    private let inFlight = InFlight<Result<Step, EndpointError>>(onStop: .cancel)
    /// Ends a backoff or poll wait early when the agent stops: a retry delay can be a minute long.
    let signal = WakeSignal()
    /// The full reconcile against the server's live set (see ``Reconciler``).
    private let reconciler: Reconciler
    /// What the last pull that found nothing new left, while the index is as it was then.
    private var quiet: QuietPull?
    /// The next page of a catch-up, asked for while this one is written (see `Puller+Ahead`).
    var ahead: PageAhead?
    /// Where the last page of a catch-up ended while its record still commits: the next page is
    /// asked after it (the index holds it once the record is in).
    private var handedCursor: SyncCursor?
    /// The process's turns at heavy work (``AgentOptions/turns``): pulls take theirs behind the
    /// folders' starts and first scans.
    let turns: Permits?

    init(
        _ context: FolderContext, changes: ServerChanges, reconciler: Reconciler, wait: Int = 25, pollInterval: Duration = .seconds(10),
        turns: Permits? = nil
    ) {
        self.context = context
        self.turns = turns
        self.changes = changes
        self.reconciler = reconciler
        self.endpoint = changes.endpoint
        self.wait = wait
        self.pollInterval = pollInterval
    }

    /// The long poll in flight, and the next page asked for ahead of its turn.
    func cancelInFlight() {
        inFlight.cancel()
        ahead?.task.cancel()
    }

    /// One pull: a long poll where the endpoint has them (a catch-up asks at once), then the
    /// wait the reply calls for: none while more is waiting, the poll interval on an endpoint
    /// that polls, a backoff when long polls return at once with nothing.
    func workRound() async -> WorkerOutcome {
        let longPoll = endpoint.capabilities.pull == .longPoll
        let wait: Duration? = first || !longPoll ? nil : .seconds(Self.spread(self.wait))
        let began = ContinuousClock.now
        let work = Task { () -> Result<Step, EndpointError> in
            do throws(EndpointError) {
                return .success(try await self.pullOnce(wait: wait))
            } catch {
                return .failure(error)
            }
        }
        let outcome = await inFlight.value(of: work)
        if stopping { return .finished }
        switch outcome {
        case .success(let step): return settled(step, longPoll: wait != nil, took: ContinuousClock.now - began)
        case .failure(.unsupported(let why)):
            logger.notice("\(why); pushing only")
            return .finished
        case .failure(let error) where folderGone:
            logger.error("\(error); pulling stopped")
            return .finished
        case .failure(let error):
            first = true
            return .failed(error)
        }
    }

    /// What follows a pull that worked.
    private func settled(_ step: Step, longPoll: Bool, took: Duration) -> WorkerOutcome {
        first = step.more
        stuck = noteStuck(step, after: stuck)
        var pause: Duration?
        if !step.more && endpoint.capabilities.pull == .poll { pause = pollInterval }
        if let backoff = idle.after(step, longPoll: longPoll, took: took, policy: policy) {
            if idle.streak == IdleReturns.reported {
                logger.warning("the endpoint answers long polls at once with nothing new; asking with backoff")
                metrics.repeated("pull")
            }
            pause = (pause ?? .zero) + backoff
        }
        return pause.map { .idle($0) } ?? .progressed
    }

    /// Said once per outage, and kept for `status`.
    func failed(_ error: any Error, count: Int) async {
        guard count == 1 else { return }
        logger.warning("pulling failed; retrying with backoff", metadata: ["error": "\(error)"])
        let text = "\(error)"
        try? await index.write { try $0.setMeta(.pullError, text) }  // `status` only; logged
    }

    func recovered(after failures: Int) async {
        logger.info("pulling works again")
        try? await index.write { try $0.setMeta(.pullError, nil) }  // `status` only
    }

    /// A long poll's length, a random part of its last fifth left out: the polls of many folders
    /// (or agents) begun together drift apart instead of ending together for ever.
    static func spread(_ wait: Int) -> Int {
        wait - Int.random(in: 0...(wait / 5))
    }

    /// The cursor to pull from, once a reconcile begun (deletions were missed: the server purged
    /// tombstones past this folder's cursor), here or by a run that ended before it finished, is done.
    /// An index that cannot be read fails the pull (backed off, said on `status`): read as
    /// "no cursor" it pulled everything from the start, and read as "not reconciling" it skipped
    /// a reconcile that was due.
    private func storedCursor() async throws(EndpointError) -> SyncCursor? {
        let (reconciling, cursor): (Bool, String?)
        do {
            (reconciling, cursor) = try await index.read { tx in (try tx.isReconciling(), try tx.meta(.cursor)) }
        } catch {
            throw .localFile("reading the index: \(error)")
        }
        if reconciling {
            try await reconciler.reconcile()
            do {
                return try await index.read { try $0.meta(.cursor) }.map(SyncCursor.init)
            } catch {
                throw .localFile("reading the index: \(error)")
            }
        }
        return cursor.map(SyncCursor.init)
    }

    /// Counts pulls in a row that found the endpoint's cursor stuck (see ``Step/stuck``); says so
    /// at the first.
    private func noteStuck(_ step: Step, after streak: Int) -> Int {
        guard step.stuck else { return 0 }
        if streak == 0 {
            logger.warning("the endpoint says more changes wait but its cursor does not move (does it ignore it?); asking at the poll interval")
            metrics.repeated("pull")
        }
        return streak + 1
    }

    /// Pulls until nothing more is waiting (for one-shot `sync`); returns why it stopped early.
    func pullAll() async -> String? {
        while true {
            do throws(EndpointError) {
                if try await pullOnce(wait: nil).more == false { break }
            } catch .unsupported {
                return nil
            } catch {
                return error.description
            }
        }
        do {
            // Everything is pulled: a burst of deletions is whole, and applied if under the rule.
            try await changes.releaseWaitingDeletions(force: true)
            if try await changes.retryFailed() != nil { return "some pulled changes could not be written; see docsync status" }
        } catch {
            return "retrying pulled changes: \(error)"
        }
        return nil
    }

    /// What one pull did: whether more is waiting, and how many changes changed anything.
    struct Step: Sendable {
        var more: Bool
        var changed: Int
        /// The endpoint said more was waiting, but its cursor did not move and nothing changed (a
        /// server that ignores the cursor, as a Kinto ignoring `_since`): not asked again at once.
        var stuck = false
    }

    /// One call: applies what changed since the stored cursor. A catch-up (no wait) asks and
    /// writes in one turn (``turns``); a long poll waits without one and takes a turn to write
    /// what it brought.
    private func pullOnce(wait: Duration?) async throws(EndpointError) -> Step {
        try await inTurn(wait == nil) { () async throws(EndpointError) -> Step in
            let writes = index.writes.value
            let known = quiet?.writes == writes ? quiet : nil
            let handed = handedCursor
            handedCursor = nil
            let cursor: SyncCursor?
            if let known { cursor = known.cursor } else if let handed { cursor = handed } else { cursor = try await storedCursor() }
            let reply = try await timedFetch(after: cursor, wait: wait)
            if let known, known.matches(reply) { return Step(more: false, changed: 0) }
            if wait == nil { askAhead(after: reply, sentFrom: cursor) }
            let taken = try await inTurn(wait != nil) { () async throws(EndpointError) in try await take(reply, sentFrom: cursor) }
            if taken.replaced { return Step(more: true, changed: 1) }
            handedCursor = taken.cursorAfterRecords
            // Quiet only if nothing wrote the index since its cursor was read, this reply included.
            quiet = taken.changed == 0 && index.writes.value == writes ? QuietPull(reply, sentFrom: cursor, writes: writes) : nil
            if reply.more, !reply.missedDeletions, taken.changed == 0, let sent = cursor, reply.cursor?.text == sent.text {
                return Step(more: false, changed: 0, stuck: true)
            }
            return Step(more: reply.more || reply.missedDeletions, changed: taken.changed)
        }
    }

    /// The reply to a pull after `cursor`, counted in the metrics.
    private func timedFetch(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply {
        let started = ContinuousClock.now
        let reply: PullReply
        do throws(EndpointError) {
            reply = try await fetch(after: cursor, wait: wait)
        } catch {
            if wait == nil { metrics.call("pull", since: started) }
            metrics.pulled(documents: 0, ok: false)
            throw error
        }
        // A long poll's time is the server's waiting, not the call's cost: only quick pulls are timed.
        if wait == nil { metrics.call("pull", since: started) }
        metrics.pulled(documents: reply.changes.count, ok: true)
        return reply
    }

    /// `reply`'s changes written into the folder and the index.
    private func take(_ reply: PullReply, sentFrom cursor: SyncCursor?) async throws(EndpointError) -> ServerChanges.Taken {
        do {
            // Not where folders take turns: a page pending per folder of hundreds adds up.
            return try await changes.take(reply, sentFrom: cursor, pipelined: turns == nil)
        } catch let gone as ServerChanges.FolderGone {
            folderGone = true
            throw .localFile(gone.description)
        } catch {
            // Not even a failure could be recorded (the index cannot be written): the cursor stays,
            // and the pull backs off like any failed one instead of asking again at once.
            logger.error("cannot apply pulled changes", metadata: ["error": "\(error)"])
            throw .localFile("cannot apply pulled changes: \(error)")
        }
    }

    /// `body`, holding one of the process's turns when `needed` and the process has them.
    private func inTurn<T: Sendable>(_ needed: Bool, _ body: () async throws(EndpointError) -> T) async throws(EndpointError) -> T {
        guard needed, let turns else { return try await body() }
        let result: Result<T, EndpointError> = await turns.withPermit(priority: .behind) {
            do throws(EndpointError) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// Long polls answered at once with nothing new (a server that ignores the wait, or the cursor):
/// after a few in a row, the next waits with backoff instead of asking again at once.
struct IdleReturns {
    private(set) var streak = 0
    /// Quick empty answers in a row before the backoff starts (and is said once).
    static let reported = 3
    /// An answer sooner than this to a long poll did not wait.
    static let quick: Duration = .seconds(1)
    /// At most this long between pulls: a server whose quick answers are its own writes coming
    /// back (nothing new here, though it is busy) must not hold others' changes for a minute.
    static let longestPause: Duration = .seconds(10)

    /// The pause before the next pull, if one is due.
    mutating func after(_ step: Puller.Step, longPoll: Bool, took: Duration, policy: RetryPolicy) -> Duration? {
        guard longPoll, !step.more, step.changed == 0, took < Self.quick else {
            streak = 0
            return nil
        }
        streak += 1
        guard streak >= Self.reported else { return nil }
        return min(policy.delay(afterFailures: streak - Self.reported + 1, unit: Double.random(in: 0..<1)), Self.longestPause)
    }
}
