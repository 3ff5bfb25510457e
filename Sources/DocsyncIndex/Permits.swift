import Synchronization

/// Lets at most `count` tasks at a time into a section; the rest wait suspended, holding no
/// thread, and go in the order they came.
///
/// An index lets in as many async reads as its pool has readers: GRDB hands out a reader by
/// blocking a thread until one is free, and with hundreds of folders in one process each waiting
/// read held one of libdispatch's worker threads; at its cap (about 255) no thread was left to
/// run the reads holding the readers, and every folder stopped. `watch` lets a few folders at a
/// time make their first scan (see `AgentOptions.firstScans`).
public final class Permits: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(_ count: Int) {
        state = Mutex(State(free: max(1, count)))
    }

    /// Runs `body` holding a permit.
    public func withPermit<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        let taken = state.withLock { state in
            guard state.free > 0 else { return false }
            state.free -= 1
            return true
        }
        if taken { return }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            // Looked at again under the lock: a permit may have come back since.
            let now = state.withLock { state in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    /// A permit goes straight to the longest waiter, if any.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
