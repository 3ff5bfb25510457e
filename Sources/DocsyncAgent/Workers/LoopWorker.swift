import Logging

/// One of the agent's own loops as a worker (the stat settler, the schema refresh, the clock's
/// upkeep, the background hashes, the selection's catch-up, the rescan after a failed scan): its
/// round a function, woken by its signal, backing off and stopping as every worker does.
actor LoopWorker: Worker {
    /// How the loop begins.
    enum Start: Sendable {
        /// With a round.
        case now
        /// With a wait for its signal (work that only a signal can bring).
        case onSignal
        /// After a wait (a retry's first backoff), or its signal.
        case after(Duration)
    }

    /// What the log calls it.
    let name: String
    let signal: WakeSignal
    let backoff: RetryPolicy
    var stopping = false
    private let start: Start
    private let logger: Logger
    private let round: @Sendable () async -> WorkerOutcome
    private let inFlight: InFlight<WorkerOutcome>

    init(
        _ name: String, signal: WakeSignal, backoff: RetryPolicy, start: Start = .now, cancellable: Bool = false, logger: Logger,
        round: @escaping @Sendable () async -> WorkerOutcome
    ) {
        self.name = name
        self.signal = signal
        self.backoff = backoff
        self.start = start
        self.inFlight = InFlight(onStop: cancellable ? .cancel : .letEnd)
        self.logger = logger
        self.round = round
    }

    func run() async {
        switch start {
        case .now: break
        case .onSignal: await signal.wait(timeout: nil)
        case .after(let wait): await signal.wait(timeout: wait)
        }
        await loop()
    }

    func workRound() async -> WorkerOutcome {
        await inFlight.value(of: Task { await round() })
    }

    /// Cancels the round in flight where the loop is `cancellable` (a check of every document
    /// against a changed schema); otherwise lets it end (a scan).
    func cancelInFlight() {
        inFlight.cancel()
    }

    func failed(_ error: any Error, count: Int) async {
        if count == 1 { logger.warning("\(name) failed; retrying with backoff", metadata: ["error": "\(error)"]) }
    }

    func recovered(after failures: Int) async {
        logger.info("\(name) works again")
    }
}
