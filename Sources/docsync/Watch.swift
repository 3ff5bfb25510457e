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
        var options = AgentOptions(root: absolutePath(directory), endpointURL: endpoint.endpoint, token: try endpoint.token(), tokenFile: endpoint.tokenFile)
        tuning.apply(to: &options)
        let client = makeHTTPClient()
        do {
            let agent = try Agent(options: options, client: client, logger: logger)
            let group = ServiceGroup(services: [AgentService(agent: agent)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await group.run()
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}

func makeHTTPClient() -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
    configuration.decompression = .disabled
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
}
