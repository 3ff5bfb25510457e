import DocsyncIndex
import Logging

/// Writes again, each when its backoff ends, the pulled changes that could not be written (a
/// full disk, say), beside the pulls and without waiting for one: freed space is used within one
/// backoff step. Also settles held deletions, and applies a burst of pulled deletions once it is
/// quiet.
actor PullRetrier: Worker {
    let changes: ServerChanges
    let logger: Logger
    var stopping = false
    var signal: WakeSignal { changes.failedWork }
    var backoff: RetryPolicy { changes.policy }
    /// After a look that found nothing waiting: the index as it was before that look. While it is
    /// unchanged, nothing can have come to wait, and the index (closed while idle among hundreds
    /// of folders) is not opened to be told so.
    private var unchanged: IndexStamp?
    /// A burst of pulled deletions waits to be applied until it is quiet: when it will be.
    private var burstEnds: Duration?

    init(changes: ServerChanges, logger: Logger) {
        self.changes = changes
        self.logger = logger
    }

    func run() async {
        // Deadlines of another run or boot are due now; a failure leaves them to their stored
        // time, at most one backoff step of that run.
        try? await changes.index.write { try $0.makePullFailuresDue() }
        await loop()
    }

    func workRound() async -> WorkerOutcome {
        do {
            let before = changes.index.stamp
            var next: Int64?
            if before != unchanged || burstEnds != nil {
                try await changes.settleHeldDeletions()
                burstEnds = try await changes.releaseWaitingDeletions()
                next = try await changes.retryFailed()
                unchanged = next == nil && burstEnds == nil ? before : nil
            }
            // With none due, it looks again within `cap`, at a random point of its second half:
            // the folders of one process, started together, would otherwise all open their index
            // at once.
            var wait = next.map { .milliseconds(max(0, $0 - RetryPolicy.deadlineNow())) } ?? backoff.cap * Double.random(in: 0.5...1)
            if let burstEnds { wait = min(wait, burstEnds + .milliseconds(20)) }
            return .idle(wait)
        } catch {
            return .failed(error)
        }
    }

    func failed(_ error: any Error, count: Int) async {
        if count == 1 { logger.error("cannot retry pulled changes", metadata: ["error": "\(error)"]) }
    }
}
