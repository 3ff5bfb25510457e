import Synchronization

/// Wakes long-polling `/api/sync` requests when the change sequence moves: clients follow the
/// server's changes without polling, and an idle agent costs nothing.
final class ChangeFeed: Sendable {
    private struct Waiter {
        var after: Int64
        var continuation: CheckedContinuation<Void, Never>
    }

    private let state = Mutex<(latest: Int64, next: Int, waiters: [Int: Waiter])>((0, 0, [:]))

    /// The latest sequence published.
    var latest: Int64 { state.withLock { $0.latest } }

    /// Records that the sequence reached `seq` and wakes everyone waiting for less.
    func published(_ seq: Int64) {
        let woken = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.latest = max(s.latest, seq)
            let ready = s.waiters.filter { $0.value.after < seq }
            for key in ready.keys { s.waiters[key] = nil }
            return ready.map(\.value.continuation)
        }
        for c in woken { c.resume() }
    }

    /// Returns once the sequence passes `after`, or after `timeout`, or on cancellation.
    func wait(after: Int64, timeout: Duration) async {
        let id = state.withLock { s -> Int in
            s.next += 1
            return s.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let immediate = state.withLock { s -> Bool in
                    if s.latest > after { return true }
                    s.waiters[id] = Waiter(after: after, continuation: c)
                    return false
                }
                if immediate { c.resume(); return }
                Task {
                    try? await Task.sleep(for: timeout)
                    self.cancel(id)
                }
            }
        } onCancel: {
            cancel(id)
        }
    }

    private func cancel(_ id: Int) {
        let c = state.withLock { $0.waiters.removeValue(forKey: id)?.continuation }
        c?.resume()
    }
}
