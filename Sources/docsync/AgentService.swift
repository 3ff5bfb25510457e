import DocsyncAgent
import ServiceLifecycle

/// Runs an ``Agent`` as a service: SIGINT/SIGTERM stop the watcher, let the push round in flight
/// finish and close the index, then the process exits.
struct AgentService: Service {
    /// Makes the agent when the service starts (in `up`, once the embedded server listens);
    /// `nil` means there is nothing to run (shutdown came first).
    let make: @Sendable () async throws -> Agent?

    init(agent: Agent) { make = { agent } }

    init(make: @escaping @Sendable () async throws -> Agent?) { self.make = make }

    func run() async throws {
        guard let agent = try await make() else { return }
        try await withGracefulShutdownHandler {
            try await agent.run()
        } onGracefulShutdown: {
            Task { await agent.stop() }
        }
    }
}
