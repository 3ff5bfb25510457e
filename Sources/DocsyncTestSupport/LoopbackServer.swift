import Hummingbird
import Logging
import ServiceLifecycle

/// Runs `router` on 127.0.0.1 and a free port, for test servers: returns the port once it
/// listens and the service group that stops it.
enum LoopbackServer {
    static func start(_ router: Router<BasicRequestContext>, label: String) async -> (port: Int, group: ServiceGroup) {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: label)
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        return (await iterator.next() ?? 0, group)
    }
}
