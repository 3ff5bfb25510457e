@testable import DocsyncAgent
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// The one loop every part of the engine runs: backoff after failures, said once an outage,
/// recovery said, a finished round ends it, a stop ends any wait at once.
struct WorkerLoopTests {
    /// A round that fails twice, then works, then has nothing to do, then is finished.
    @Test func failuresBackOffAreSaidOnceAndAFinishedRoundEndsTheLoop() async throws {
        let logs = CapturedLogs()
        let rounds = Mutex(0)
        let worker = LoopWorker("the test's loop", signal: WakeSignal(), backoff: RetryPolicy(initial: .milliseconds(20), cap: .milliseconds(40)), logger: logs.logger()) {
            let n = rounds.withLock { $0 += 1; return $0 }
            switch n {
            case 1, 2: return .failed(CancellationError())
            case 3: return .idle(.milliseconds(1))
            default: return .finished
            }
        }
        let began = ContinuousClock.now
        await worker.run()
        #expect(rounds.withLock { $0 } == 4)
        #expect(ContinuousClock.now - began >= .milliseconds(40), "two backoffs waited (20 ms, then 40 ms, less their jitter)")
        #expect(logs.count(containing: "the test's loop failed; retrying with backoff") == 1, "said once: \(logs.all)")
        #expect(logs.count(containing: "the test's loop works again") == 1)
    }

    /// A loop waiting for its signal, or out a long backoff, ends as soon as it is stopped; a
    /// round in flight is cancelled only where the worker says it may be. The waits are an hour
    /// long and the loops get a minute to end: a loaded machine may be slow to schedule them, and a
    /// wait that outlived the stop would still be caught, in a minute rather than an hour.
    @Test func aStopEndsAWaitAtOnceAndCancelsOnlyACancellableRound() async throws {
        let logs = CapturedLogs()
        let anHour = Duration.seconds(3600)
        let waiting = LoopWorker("waiting", signal: WakeSignal(), backoff: RetryPolicy(initial: anHour), start: .onSignal, logger: logs.logger()) { .idle(nil) }
        let backingOff = LoopWorker("backing off", signal: WakeSignal(), backoff: RetryPolicy(initial: anHour, cap: anHour), logger: logs.logger()) {
            .failed(CancellationError())
        }
        let sawCancel = Mutex<Bool?>(nil)
        let started = WakeSignal()
        let busy = LoopWorker("busy", signal: WakeSignal(), backoff: RetryPolicy(), cancellable: true, logger: logs.logger()) {
            started.signal()
            try? await Task.sleep(for: anHour)
            sawCancel.withLock { $0 = Task.isCancelled }
            return .idle(nil)
        }
        let ended = Mutex(0)
        for worker in [waiting, backingOff, busy] {
            Task { @Sendable in await worker.run(); ended.withLock { $0 += 1 } }
        }
        await started.wait(timeout: .seconds(10))
        #expect(await eventually { logs.count(containing: "backing off failed") == 1 })
        for worker in [waiting, backingOff, busy] { await worker.stop() }
        #expect(await eventually(timeout: .seconds(60)) { ended.withLock { $0 } == 3 }, "no wait outlives the stop")
        #expect(sawCancel.withLock { $0 } == true, "the cancellable round was cancelled")
    }
}
