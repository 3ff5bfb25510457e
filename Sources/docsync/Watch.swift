import ArgumentParser
import AsyncHTTPClient
import DocsyncAgent
import ServiceLifecycle

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch a folder and keep the endpoint in step with it until SIGINT/SIGTERM.")

    @Argument(help: "The synced folder.")
    var directory: String

    @OptionGroup var endpoint: EndpointOptions
    @OptionGroup var tuning: AgentTuning

    func run() async throws {
        let logger = bootstrapLogging(tuning.logLevel)
        try await withAgent(directory: directory, endpoint: endpoint, tuning: tuning, logger: logger) { agent in
            let group = ServiceGroup(services: [AgentService(agent: agent)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await group.run()
        }
    }
}
