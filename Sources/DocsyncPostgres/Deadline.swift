import DocsyncStore
import PostgresNIO
import Synchronization

/// A database call bounded in time. The call runs in a task of its own; if it has not ended when
/// the deadline passes, the caller gets "unavailable" at once and the task is cancelled (a
/// connection lease waiting on a database that went away ends then; a query in flight ends when
/// its connection does). Failures of the connection itself are "unavailable" as well.
enum Deadline {
    static func race<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = Outcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.waiting(continuation)
            let work = Task {
                do {
                    outcome.finish(.success(try await body()))
                } catch {
                    outcome.finish(.failure(unavailableIfConnection(error)))
                }
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                if Task.isCancelled { return }
                if outcome.finish(.failure(StoreError(.unavailable, "the database did not answer within \(limit); try again shortly"))) {
                    work.cancel()
                }
            }
            outcome.onFinish { timer.cancel() }
        }
    }

    /// A failure on the way to the database (no reply of the server's own: refused, reset,
    /// closed, the pool shut) is the database being away; the server's own errors are left alone.
    static func unavailableIfConnection(_ error: any Error) -> any Error {
        if error is StoreError { return error }
        if let psql = error as? PSQLError, psql.serverInfo == nil {
            return StoreError(.unavailable, "the database connection failed (\(psql.code)); try again shortly")
        }
        if let tx = error as? PostgresTransactionError, let cause = tx.beginError ?? tx.commitError ?? tx.closureError {
            let mapped = unavailableIfConnection(cause)
            return mapped is StoreError ? mapped : error
        }
        return error
    }

    /// One result handed to one waiting continuation, whichever side comes first.
    private final class Outcome<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var result: Result<T, any Error>?
            var onFinish: (@Sendable () -> Void)?
        }

        private let state = Mutex(State())

        func waiting(_ continuation: CheckedContinuation<T, any Error>) {
            state.withLock { $0.continuation = continuation }
        }

        func onFinish(_ action: @escaping @Sendable () -> Void) {
            let done = state.withLock { s in
                if s.result != nil { return true }
                s.onFinish = action
                return false
            }
            if done { action() }
        }

        /// Delivers `result` unless one was delivered already; true if this one was.
        @discardableResult
        func finish(_ result: Result<T, any Error>) -> Bool {
            let (continuation, action) = state.withLock { s -> (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) in
                guard s.result == nil else { return (nil, nil) }
                s.result = result
                defer { s.continuation = nil; s.onFinish = nil }
                return (s.continuation, s.onFinish)
            }
            guard let continuation else { return false }
            continuation.resume(with: result)
            action?()
            return true
        }
    }
}
