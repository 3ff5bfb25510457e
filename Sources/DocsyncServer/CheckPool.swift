import Dispatch
import Foundation
import DocsyncStore
import Synchronization

/// Where `--enforce-schemas` does its work: on threads of its own, never on the event loops or
/// Swift's cooperative pool that every other request needs, at most ``width`` checks at once, and
/// at most ``maxWaiting`` more in line. A flood of costly documents then waits its turn (each
/// check is bounded by its `CheckBudget`) while requests that need no check go on at once; past
/// the line a request is answered 503 with `Retry-After`, not queued without end.
final class CheckPool: Sendable {
    /// Checks that may run at once: one core of two is left to the server's other work.
    let width: Int
    let maxWaiting: Int

    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "docsync.schema-checks", qos: .userInitiated, attributes: .concurrent)

    init(width: Int = max(1, ProcessInfo.processInfo.activeProcessorCount - 1), maxWaiting: Int = 256) {
        self.width = width
        self.maxWaiting = maxWaiting
    }

    /// `work` on the pool's threads, once a place is free.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        try await enter()
        defer { leave() }
        return await withCheckedContinuation { done in
            queue.async { done.resume(returning: work()) }
        }
    }

    private func enter() async throws {
        enum Entry { case now, wait, refuse }
        let entry: Entry = state.withLock { state in
            if state.running < width {
                state.running += 1
                return .now
            }
            return state.waiting.count < maxWaiting ? .wait : .refuse
        }
        switch entry {
        case .now: return
        case .refuse: throw StoreError(.unavailable, "the server is checking too many documents against their schemas; try again shortly")
        case .wait:
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let admitted = state.withLock { state -> Bool in
                    // A place freed between the first look and now is taken at once.
                    if state.running < width {
                        state.running += 1
                        return true
                    }
                    state.waiting.append(waiter)
                    return false
                }
                if admitted { waiter.resume() }
            }
        }
    }

    /// Hands the place to the next in line (which keeps `running` as it is), or frees it.
    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
