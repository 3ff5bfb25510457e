import ArgumentParser
import AsyncHTTPClient
import DocsyncRuntime
import DocsyncAgent
import DocsyncFiles
import DocsyncIndex
import ServiceLifecycle

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch a folder, or every folder of a config file, and keep the endpoints in step until SIGINT/SIGTERM.")

    @Argument(help: "The synced folder (without --config).")
    var directory: String?

    @Option(help: "A config file naming several folders, each with its endpoint and token file (see `docsync init`); flags given override it.")
    var config: String?

    @Option(help: EndpointOptions.endpointHelp)
    var endpoint: String?

    @Option(help: EndpointOptions.tokenFileHelp)
    var tokenFile: String?

    @Option(help: EndpointOptions.caFileHelp)
    var caFile: String?

    @OptionGroup var tuning: AgentTuning

    @Option(help: "Serve the status page at /, the live status at /status and Prometheus metrics at /metrics on HOST:PORT (no token: keep it on loopback or a trusted network). Also DOCSYNC_METRICS_ADDR.")
    var metricsAddr: String?

    func validate() throws {
        if config != nil {
            if directory != nil || endpoint != nil || tokenFile != nil || caFile != nil {
                throw ValidationError("with --config the folders, endpoints and token files come from the file: drop DIR, --endpoint, --token-file and --ca-file")
            }
        } else {
            guard directory != nil else { throw ValidationError("name the folder to watch, or pass --config FILE") }
            guard let endpoint else { throw ValidationError("--endpoint is required without --config") }
            _ = try EndpointChoice(url: endpoint)
        }
        if let metricsAddr { _ = try MetricsListener.parse(metricsAddr) }
    }

    func plan() throws -> WatchPlan {
        if let config { return try WatchPlan.config(config, tuning: tuning, metricsAddr: metricsAddr) }
        return try WatchPlan.single(
            directory: directory ?? ".", endpoint: endpoint ?? "", tokenFile: tokenFile, caFile: caFile, tuning: tuning, metricsAddr: metricsAddr)
    }

    func run() async throws {
        let plan = try plan()
        let logger = bootstrapLogging(plan.level, format: plan.format)
        for skipped in plan.skipped { logger.error("\(skipped); the other folders go on") }
        if plan.metricsAddr != nil { MetricsExport.bootstrap() }
        FileSystem.raiseFileLimit()  // every folder holds its index's files, its lock and its connections
        if Index.Footprint.forFolders(plan.folders.count) == .lean { LeanMemory.preferMappedBlocks() }
        let systemd = SystemdNotifier()
        let (ready, watching) = AsyncStream<Void>.makeStream()
        try await withAgents(plan, logger: logger, onWatching: { watching.yield() }) { agents in
            var folders: [LiveStatus] = []
            for agent in agents {
                let (root, clock) = (await agent.options.root, await agent.clock)
                folders.append(LiveStatus(name: agent.metrics.folder, root: root, clock: clock, metrics: agent.metrics, index: agent.index))
            }
            // With several folders, one that ends leaves the others running (``AgentService``).
            let running = agents.count > 1 ? RunningFolders(agents.count) : nil
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = agents.map {
                .init(service: AgentService(agent: $0, folders: running, logger: logger), successTerminationBehavior: running == nil ? .cancelGroup : .ignore)
            }
            var others: [any Service] = [HangupReload(logger: logger, what: "the token files") {
                for agent in agents { await agent.tokenFileMayHaveChanged() }
                return []
            }]
            if systemd.isActive { others.append(SystemdAgentService(notifier: systemd, folders: folders, ready: ready)) }
            if Index.Footprint.forFolders(agents.count) == .lean { others.append(LeanMemory(indexes: agents.map(\.index))) }
            if let address = plan.metricsAddr { others.append(try MetricsListener.application(address: address, folders: folders, logger: logger)) }
            services += others.map { .init(service: $0) }
            let group = signalledGroup(services, logger: logger)
            let progress = Task {
                await withDiscardingTaskGroup { tickers in
                    for folder in folders { tickers.addTask { await ProgressTicker(index: folder.index).run() } }
                }
            }
            defer { progress.cancel() }
            try await group.run()
        }
    }
}
