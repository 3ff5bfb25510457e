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
