import Synchronization

/// Wakes one waiting task: "there is new work". Signals are not lost: one that arrives while
/// nobody waits is kept for the next `wait`. A wait can also end by timeout or cancellation.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        var generation = 0
    }

    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let w = s.waiter {
                s.waiter = nil
                return w
            }
            s.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns on a signal, after `timeout` (if given), or when the task is cancelled.
    func wait(timeout: Duration?) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let generation = state.withLock { s -> Int? in
                    if s.pending || Task.isCancelled {
                        s.pending = false
                        return nil
                    }
                    s.waiter = continuation
                    s.generation += 1
                    return s.generation
                }
                guard let generation else {
                    continuation.resume()
                    return
                }
                if let timeout {
                    Task {
                        try? await Task.sleep(for: timeout)
                        let waiter = self.state.withLock { s -> CheckedContinuation<Void, Never>? in
                            guard s.generation == generation, let w = s.waiter else { return nil }
                            s.waiter = nil
                            return w
                        }
                        waiter?.resume()
                    }
                }
            }
        } onCancel: {
            signal()
        }
    }
}
