import Foundation
import Synchronization

/// Threads that spin on every core until stopped: the loaded machine a test must also pass on
/// (a CI runner beside other jobs). Each thread yields nothing; the scheduler shares the cores.
public final class CPUHog: Sendable {
    private let running = Atomic<Bool>(true)
    private let finished = Atomic<Int>(0)
    private let count: Int

    /// Starts `threads` spinning threads (by default one per core, plus one).
    public init(threads: Int = ProcessInfo.processInfo.activeProcessorCount + 1) {
        count = threads
        for _ in 0..<threads {
            let thread = Thread { [self] in
                var x: UInt64 = 1
                while running.load(ordering: .relaxed) { x = x &* 6_364_136_223_846_793_005 &+ 1 }
                if x == 0 { print("") }  // keeps the loop from being optimised away
                finished.add(1, ordering: .relaxed)
            }
            thread.start()
        }
    }

    /// Stops the threads and waits until they have ended.
    public func stop() {
        running.store(false, ordering: .relaxed)
        while finished.load(ordering: .relaxed) < count { usleep(1_000) }
    }
}
