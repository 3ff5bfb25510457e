/// A worker's round in flight, held so that ``Worker/stop()`` can cancel it. What a stop does
/// with it is the worker's choice (``OnStop``); the holding, running and cancelling are here once.
final class InFlight<Value: Sendable> {
    /// What a stop does with the round in flight.
    enum OnStop: Sendable {
        /// Cancels it at once: a long poll, an upload, a check of every document against a schema.
        case cancel
        /// Lets it be answered for a while, then cancels it: push calls, whose replies are worth
        /// recording, to a server that may have stopped answering.
        case cancelAfter(Duration)
        /// Lets it end: a scan, whose cancellation would be taken for a failed scan.
        case letEnd
    }

    private let onStop: OnStop
    private var task: Task<Value, Never>?

    init(onStop: OnStop) {
        self.onStop = onStop
    }

    /// Holds `running` (the round, started by the worker as a task of its own, so that it keeps
    /// the worker's isolation) while it runs, so that ``cancel()`` can reach it; returns its value.
    func value(of running: Task<Value, Never>, isolation: isolated (any Actor)? = #isolation) async -> Value {
        task = running
        defer { task = nil }
        return await running.value
    }

    /// What a stop calls: cancels the round in flight, if any, as ``OnStop`` says.
    func cancel() {
        guard let task else { return }
        switch onStop {
        case .cancel: task.cancel()
        case .letEnd: break
        case .cancelAfter(let grace):
            Task {
                try? await Task.sleep(for: grace)
                task.cancel()
            }
        }
    }
}
