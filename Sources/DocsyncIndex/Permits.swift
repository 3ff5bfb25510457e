import Synchronization

/// Lets at most `count` tasks at a time into a section; the rest wait suspended, holding no
/// thread, and go in the order they came, those of ``Priority/ahead`` before any ``Priority/behind``.
///
/// An index lets in as many async reads as its pool has readers: GRDB hands out a reader by
/// blocking a thread until one is free, and with hundreds of folders in one process each waiting
/// read held one of libdispatch's worker threads; at its cap (about 255) no thread was left to
/// run the reads holding the readers, and every folder stopped. `watch` lets a few folders at a
/// time make their first scan and their catch-up pulls (see `AgentOptions.turns`).
public final class Permits: Sendable {
    /// Who goes first when a permit comes back.
    public enum Priority: Sendable {
        /// Work that others wait on, or that holds little: a folder's start and first scan.
        case ahead
        /// Work that can wait its turn without anyone waiting on it: pulling others' changes.
        case behind
    }

    private struct State {
        var free: Int
        var ahead: [CheckedContinuation<Void, Never>] = []
        var behind: [CheckedContinuation<Void, Never>] = []

        mutating func enqueue(_ waiter: CheckedContinuation<Void, Never>, _ priority: Priority) {
            switch priority {
            case .ahead: ahead.append(waiter)
            case .behind: behind.append(waiter)
            }
        }

        /// The next waiter: the longest waiting of the first priority that has one.
        mutating func next() -> CheckedContinuation<Void, Never>? {
            if !ahead.isEmpty { return ahead.removeFirst() }
            if !behind.isEmpty { return behind.removeFirst() }
            return nil
        }
    }

    private let state: Mutex<State>

    public init(_ count: Int) {
        state = Mutex(State(free: max(1, count)))
    }

    /// Runs `body` holding a permit.
    public func withPermit<T>(
        priority: Priority = .ahead, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        await acquire(priority)
        defer { release() }
        return try await body()
    }

    private func acquire(_ priority: Priority) async {
        // A free permit is taken at once only when no one of this priority or before waits: a
        // task `behind` must not slip past a queue of `ahead` ones the moment a permit comes back.
        let taken = state.withLock { state in
            guard state.free > 0, state.ahead.isEmpty, priority == .ahead || state.behind.isEmpty else { return false }
            state.free -= 1
            return true
        }
        if taken { return }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            // Looked at again under the lock: a permit may have come back since. Queued even so,
            // then handed on in order.
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.enqueue(waiter, priority)
                guard state.free > 0, let next = state.next() else { return nil }
                state.free -= 1
                return next
            }
            next?.resume()
        }
    }

    /// How many wait (for the tests).
    var waiting: Int { state.withLock { $0.ahead.count + $0.behind.count } }

    /// A permit goes straight to the next waiter, if any.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let next = state.next() else {
                state.free += 1
                return nil
            }
            return next
        }
        next?.resume()
    }
}
