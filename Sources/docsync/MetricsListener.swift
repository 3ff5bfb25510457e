import ArgumentParser
import DocsyncAgent
import DocsyncClock
import DocsyncModel
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import Prometheus

/// The process's metrics: swift-metrics bootstrapped once with a Prometheus registry, so that
/// whatever the agent and the server count can be scraped.
enum MetricsExport {
    static let registry = PrometheusCollectorRegistry()

    /// Bootstraps swift-metrics (once per process; later calls do nothing).
    static func bootstrap() { _ = bootstrapped }
    private static let bootstrapped: Void = { MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry)) }()

    /// The registry in Prometheus's text exposition format.
    static func text() -> ByteBuffer {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return ByteBuffer(bytes: bytes)
    }

    static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}

/// `watch --metrics-addr HOST:PORT`: `/metrics` (Prometheus), `/status` (what `status --json`
/// prints, live, with conflicts and the last changes) and `/`, a page a person opens, on a
/// listener of their own. Meant for loopback or a trusted network: it carries
/// no token, and says nothing a local `docsync status` would not.
enum MetricsListener {
    static func application(address: String, root: String, clock: ServerClock, logger: Logger) throws -> some ApplicationProtocol {
        let (host, port) = try parse(address)
        let router = Router(context: BasicRequestContext.self)
        let live = LiveStatus(root: root)
        router.get("metrics") { _, _ -> Response in
            try await AgentMetrics.refresh(live.index(), clock: clock)
            if let limit = watchLimit() { Gauge(label: "docsync_inotify_watches_limit").record(limit) }
            return Response(status: .ok, headers: [.contentType: MetricsExport.contentType], body: .init(byteBuffer: MetricsExport.text()))
        }
        router.get("status") { _, _ -> Response in
            let text = JSONWriter.string(try await live.json())
            return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("/") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: StatusPage.html)))
        }
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "docsync-agent"),
            onServerRunning: { channel in
                logger.notice("status page at http://\(host):\(channel.localAddress?.port ?? port)/, metrics at /metrics, status at /status")
            },
            logger: logger)
    }

    /// `HOST:PORT` (port 0: any free one).
    static func parse(_ address: String) throws -> (String, Int) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]), (0...65535).contains(port),
              colon > address.startIndex
        else { throw ValidationError("--metrics-addr takes HOST:PORT, e.g. 127.0.0.1:9464") }
        return (String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
    }

    /// `fs.inotify.max_user_watches`.
    static func watchLimit() -> Int? {
        (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8)).flatMap {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}
