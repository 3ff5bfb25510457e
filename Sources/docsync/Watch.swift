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

    @Option(help: "Serve the status page at /, the live status at /status and Prometheus metrics at /metrics on HOST:PORT (no token: keep it on loopback or a trusted network).")
    var metricsAddr: String?

    func validate() throws {
        if let metricsAddr { _ = try MetricsListener.parse(metricsAddr) }
    }

    func run() async throws {
        let logger = bootstrapLogging(tuning.logLevel, format: tuning.logFormat)
        if metricsAddr != nil { MetricsExport.bootstrap() }
        let systemd = SystemdNotifier()
        let (ready, watching) = AsyncStream<Void>.makeStream()
        try await withAgent(directory: directory, endpoint: endpoint, tuning: tuning, logger: logger, onWatching: { watching.yield() }) { agent in
            var services: [any Service] = [AgentService(agent: agent)]
            if systemd.isActive { services.append(SystemdAgentService(notifier: systemd, root: absolutePath(directory), ready: ready)) }
            if let metricsAddr {
                let (root, clock) = (await agent.options.root, await agent.clock)
                services.append(try MetricsListener.application(address: metricsAddr, root: root, clock: clock, logger: logger))
            }
            let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            let progress = Task { await ProgressTicker(root: absolutePath(directory)).run() }
            defer { progress.cancel() }
            try await group.run()
        }
    }
}
