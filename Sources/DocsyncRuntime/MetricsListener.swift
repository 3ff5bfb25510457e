import DocsyncAgent
import DocsyncClock
import DocsyncModel
import DocsyncWatcher
import Foundation
import Hummingbird
import HummingbirdCore
import HTTPTypes
import NIOPosix
import ServiceLifecycle
import Logging
import Metrics
import NIOCore
import Prometheus

/// The process's metrics: swift-metrics bootstrapped once with a Prometheus registry, so that
/// whatever the agent and the server count can be scraped.
public enum MetricsExport {
    static let registry = PrometheusCollectorRegistry()

    /// Bootstraps swift-metrics (once per process; later calls do nothing).
    public static func bootstrap() { _ = bootstrapped }
    private static let bootstrapped: Void = { MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry)) }()

    /// The registry in Prometheus's text exposition format.
    public static func text() -> ByteBuffer {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return ByteBuffer(bytes: bytes)
    }

    static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}

/// `watch --metrics-addr HOST:PORT`: `/metrics` (Prometheus, every series with its `folder`
/// label), `/status` (per folder what `status --json` prints, live, with conflicts and the last
/// changes) and `/`, a page a person opens, on a listener of their own, one for all the folders
/// the process syncs. HummingbirdCore's server without the application layer: three fixed
/// routes need no router, and the application's once-a-second date timer would triple the idle
/// agent's CPU.
public enum MetricsListener {
    public static func application(address: String, folders: [LiveStatus], logger: Logger) throws -> some Service {
        let (host, port) = try parse(address)
        let live = folders
        return Server(
            childChannelSetup: HTTP1Channel(responder: { request, writer, _ in
                let (status, type, body) = isAllowed(host: request.head.authority, listening: host)
                    ? await respond(to: request, live: live)
                    : (.misdirectedRequest, "text/plain", ByteBuffer(string: "this listener answers to its own address and to localhost only\n"))
                var head = HTTPResponse(status: status)
                head.headerFields[.contentType] = type
                head.headerFields[.contentLength] = String(body.readableBytes)
                head.headerFields[.cacheControl] = "no-store"
                try await writer.write(response: head, body: ResponseBody(byteBuffer: body))
            }),
            configuration: .init(address: .hostname(host, port: port), serverName: "docsync-agent"),
            onServerRunning: { channel in
                logger.notice("status page at http://\(host):\(channel.localAddress?.port ?? port)/, metrics at /metrics, status at /status")
            },
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger)
    }

    static func respond(to request: Request, live: [LiveStatus]) async -> (HTTPResponse.Status, String, ByteBuffer) {
        guard request.method == .get else { return (.methodNotAllowed, "text/plain", ByteBuffer(string: "GET only\n")) }
        do {
            switch request.uri.path {
            case "/metrics":
                for folder in live { try await folder.metrics.refresh(folder.index, clock: folder.clock) }
                if let limit = InotifySettings.value("max_user_watches") { Gauge(label: "docsync_inotify_watches_limit").record(limit) }
                return (.ok, MetricsExport.contentType, MetricsExport.text())
            case "/status":
                return (.ok, "application/json", ByteBuffer(string: JSONWriter.string(try await json(live))))
            case "/":
                return (.ok, "text/html; charset=utf-8", ByteBuffer(string: StatusPage.html))
            default:
                return (.notFound, "text/plain", ByteBuffer(string: "not found\n"))
            }
        } catch {
            return (.internalServerError, "text/plain", ByteBuffer(string: "\(error)\n"))
        }
    }

    /// Whether a request's `Host` names this listener: a loopback name or the configured address,
    /// with any port. Anything else is refused (421), so a web page that rebinds its own DNS name
    /// to 127.0.0.1 cannot read `/status` (which names the folders) from a browser.
    static func isAllowed(host authority: String?, listening: String) -> Bool {
        guard let authority, !authority.isEmpty else { return false }
        var name = Substring(authority.lowercased())
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            name = name[name.index(after: name.startIndex)..<close]
        } else if let colon = name.lastIndex(of: ":") {
            name = name[..<colon]
        }
        let allowed: Set<Substring> = ["localhost", "127.0.0.1", "::1", Substring(listening.lowercased())]
        return allowed.contains(name) || name.hasSuffix(".localhost") && name.count <= 253
    }

    /// `/status`: whether every folder is in sync, and each folder's status in the config's order.
    static func json(_ live: [LiveStatus]) async throws -> JSONValue {
        var folders: [JSONValue] = []
        for folder in live { folders.append(try await folder.json()) }
        let inSync = folders.allSatisfy { $0.object?["in_sync"] == .bool(true) }
        return .object(JSONObject([(key: "in_sync", value: .bool(inSync)), (key: "folders", value: .array(folders))]))
    }

    /// `HOST:PORT` (port 0: any free one).
    public static func parse(_ address: String) throws -> (String, Int) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]), (0...65535).contains(port),
              colon > address.startIndex
        else { throw MetricsAddressError(address: address) }
        return (String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
    }
}

/// A `--metrics-addr` that is not `HOST:PORT`.
public struct MetricsAddressError: Error, CustomStringConvertible {
    public let address: String
    public var description: String { "--metrics-addr takes HOST:PORT, e.g. 127.0.0.1:9464 (not \(LogText.escaped(address)))" }
}
