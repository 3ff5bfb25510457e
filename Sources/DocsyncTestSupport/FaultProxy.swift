import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// What the proxy does with one request.
public enum Fault: Sendable, Hashable {
    /// Forward to the real endpoint and relay its reply.
    case pass
    /// Answer with this status and a JSON error, without forwarding.
    case status(Int, message: String = "injected", retryAfter: Int? = nil)
    /// Wait, then forward (a request timeout shorter than this sees no reply at all).
    case stall(Duration)
    /// Forward (so the server applies the write), then send half a reply and drop the connection:
    /// the client never learns that its write succeeded.
    case dropMidReply
}

/// A real HTTP server on 127.0.0.1 between the agent and the reference endpoint that misbehaves on
/// schedule: refuses (not started, or stopped), stalls, drops connections mid-reply, answers
/// 500/429/401/400. A fake on purpose: the real server cannot fail on demand.
public final class FaultProxy: Sendable {
    public let upstream: String
    private let plan = Mutex<(queue: [Fault], rule: (@Sendable (String, String) -> Fault)?)>(([], nil))
    private let log = Mutex<[(method: String, path: String, at: ContinuousClock.Instant, fault: Fault)]>([])
    private let running = Mutex<(group: ServiceGroup, task: Task<Void, any Error>)?>(nil)
    private let boundPort = Mutex(0)
    private let latency = Mutex<(@Sendable () -> (request: Duration, reply: Duration))?>(nil)
    private let stripSync = Mutex(false)
    private let noBatch = Mutex(false)
    private let uploadFault = Mutex<Fault?>(nil)
    private let readFault = Mutex<Fault?>(nil)
    /// Counts `stop` calls: a stall ends when the proxy stops, so stopping does not wait it out.
    private let stops = Mutex(0)
    var stopCount: Int { stops.withLock { $0 } }
    /// Counts `endStalls` calls: a stall under way then ends and its request goes through.
    private let stallEnds = Mutex(0)
    var stallEndCount: Int { stallEnds.withLock { $0 } }

    /// Every request's URI and body, and every reply's body, appended to this file (a recording
    /// proxy: what a network observer, or the server, sees); `nil`: none kept.
    private let recording = Mutex<FileHandle?>(nil)
    public func record(to path: String?) {
        recording.withLock { handle in
            try? handle?.close()
            handle = path.flatMap { path in
                _ = FileManager.default.createFile(atPath: path, contents: nil)
                return FileHandle(forWritingAtPath: path)
            }
        }
    }
    /// Request body bytes forwarded so far (replies not counted).
    let sentBytes = Atomic<Int>(0)
    public var requestBytes: Int { sentBytes.load(ordering: .relaxed) }

    func recorded(_ parts: [ByteBuffer]) {
        recording.withLock { handle in
            guard let handle else { return }
            for part in parts { handle.write(Data(part.readableBytesView)) }
        }
    }

    /// Lets every request stalled now go through at once, as if its stall were over.
    public func endStalls() { stallEnds.withLock { $0 += 1 } }

    /// What every upload (`/api/app/upload`) meets, ahead of the queue and the rule; `nil`: those.
    public func setUploadFault(_ fault: Fault?) { uploadFault.withLock { $0 = fault } }

    /// What every read meets (a pull, a long poll, a `GET` of a document); `nil`: passed through.
    /// With it an agent can be kept from learning through a pull what a lost reply did not tell it.
    public func setReadFault(_ fault: Fault?) { readFault.withLock { $0 = fault } }

    /// Answers 404 to `/api/sync`: an endpoint with the document routes only, one request per document.
    public func setBatchDisabled(_ value: Bool) { noBatch.withLock { $0 = value } }
    var batchDisabled: Bool { noBatch.withLock { $0 } }

    /// Adds delay to every request (before forwarding) and reply (after the server answered):
    /// a slow, asymmetric network path for clock tests.
    public func setLatency(_ f: (@Sendable () -> (request: Duration, reply: Duration))?) { latency.withLock { $0 = f } }

    /// Drops `X-Sync-UTC`/`X-Sync-Duration` from replies: an endpoint that only sends `Date`.
    public func setStripSyncHeaders(_ value: Bool) { stripSync.withLock { $0 = value } }

    func currentLatency() -> (request: Duration, reply: Duration)? { latency.withLock { $0 }?() }
    var stripsSyncHeaders: Bool { stripSync.withLock { $0 } }
    public var port: Int { boundPort.withLock { $0 } }

    public init(upstream: String) { self.upstream = upstream }

    public var url: String { "http://127.0.0.1:\(port)" }

    /// Faults for the next writes (`/api/document…`, uploads, batch writes), in order; then
    /// `rule`, then `.pass`.
    public func schedule(_ faults: [Fault]) { plan.withLock { $0.queue += faults } }

    /// A standing rule for document requests (method, body) once the queue is empty.
    public func setRule(_ rule: (@Sendable (String, String) -> Fault)?) { plan.withLock { $0.rule = rule } }

    /// Every document request seen, with what was done to it.
    public var requests: [(method: String, path: String, at: ContinuousClock.Instant, fault: Fault)] { log.withLock { $0 } }

    /// Starts listening on `port` (0: any free port; the same port again after `stop()`).
    public func start(port: Int = 0) async throws {
        let router = Router()
        let upstream = self.upstream
        let proxy = self
        router.addMiddleware { ProxyMiddleware(proxy: proxy, upstream: upstream) }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "fault-proxy")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else { throw ProcessFailure("fault proxy did not start") }
        boundPort.withLock { $0 = bound }
        running.withLock { $0 = (group, task) }
    }

    /// Stops listening: connections are refused until `start(port:)` again.
    public func stop() async {
        stops.withLock { $0 += 1 }
        guard let (group, task) = running.withLock({ s -> (ServiceGroup, Task<Void, any Error>)? in defer { s = nil }; return s }) else { return }
        await group.triggerGracefulShutdown()
        // The listener closes at once; requests still forwarded after a moment (a long poll the
        // server holds for 25 s) are cut, not waited out: the agent that made them is gone.
        let cut = Task {
            try await Task.sleep(for: .milliseconds(500))
            task.cancel()
        }
        _ = try? await task.value
        cut.cancel()
    }

    func next(method: String, path: String, body: String) -> Fault {
        // Writes only: document routes (not their reads: a plain endpoint's agent polls them),
        // uploads, and batch calls that carry documents (not long polls).
        let isBatchWrite = path == "/api/sync" && body.contains("\"documents\":[{")
        let isDocumentWrite = path.hasPrefix("/api/document") && method != "GET"
        guard isDocumentWrite || path.hasPrefix("/api/app/upload") || isBatchWrite else {
            let isRead = path == "/api/sync" || (path.hasPrefix("/api/document") && method == "GET")
            return isRead ? readFault.withLock { $0 } ?? .pass : .pass
        }
        let forUploads = path.hasPrefix("/api/app/upload") ? uploadFault.withLock { $0 } : nil
        let fault = forUploads ?? plan.withLock { p -> Fault in
            if !p.queue.isEmpty { return p.queue.removeFirst() }
            return p.rule?(method, body) ?? .pass
        }
        log.withLock { $0.append((method, path, ContinuousClock.now, fault)) }
        return fault
    }
}

struct ProxyMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let proxy: FaultProxy
    let upstream: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 1 << 30)
        let delays = proxy.currentLatency()
        if let delays { try await Task.sleep(for: delays.request) }
        var response = try await respond(request, body: body)
        if proxy.stripsSyncHeaders {
            response.headers[HTTPField.Name("X-Sync-UTC")!] = nil
            response.headers[HTTPField.Name("X-Sync-Duration")!] = nil
        }
        if let delays { try await Task.sleep(for: delays.reply) }
        return response
    }

    func respond(_ request: Request, body: ByteBuffer) async throws -> Response {
        if proxy.batchDisabled && request.uri.path == "/api/sync" {
            return Response(status: .notFound, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\"not found\"}")))
        }
        let fault = proxy.next(method: request.method.rawValue, path: request.uri.path, body: String(buffer: body))
        switch fault {
        case .status(let code, let message, let retryAfter):
            var headers: HTTPFields = [.contentType: "application/json"]
            if let retryAfter { headers[HTTPField.Name("Retry-After")!] = String(retryAfter) }
            return Response(status: .init(code: code), headers: headers, body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\"\(message)\"}")))
        case .stall(let duration):
            let end = ContinuousClock.now + duration
            let (stops, ends) = (proxy.stopCount, proxy.stallEndCount)
            while ContinuousClock.now < end && proxy.stallEndCount == ends {
                if proxy.stopCount != stops { throw CancellationError() }
                try await Task.sleep(for: .milliseconds(min(20, max(1, (end - ContinuousClock.now) / .milliseconds(1)))))
            }
            return try await forward(request, body: body)
        case .pass:
            return try await forward(request, body: body)
        case .dropMidReply:
            let full = try await forward(request, body: body)
            return Response(
                status: full.status, headers: [.contentType: "application/json", .contentLength: "100000"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "{\"data\":{\"id\":"))
                    throw CancellationError()  // the connection is closed mid-body
                })
        }
    }

    func forward(_ request: Request, body: ByteBuffer) async throws -> Response {
        var out = HTTPClientRequest(url: upstream + (request.uri.string))
        out.method = .init(rawValue: request.method.rawValue)
        for field in request.headers where field.name != .contentLength {
            out.headers.add(name: field.name.rawName, value: field.value)
        }
        if body.readableBytes > 0 { out.body = .bytes(body) }
        proxy.sentBytes.add(body.readableBytes, ordering: .relaxed)
        let reply = try await HTTPClient.shared.execute(out, timeout: .seconds(30))
        let bytes = try await reply.body.collect(upTo: 1 << 30)
        proxy.recorded([ByteBuffer(string: "\n\(request.method.rawValue) \(request.uri.string)\n"), body, ByteBuffer(string: "\n"), bytes])
        var headers = HTTPFields()
        for h in reply.headers where h.name.lowercased() != "content-length" && h.name.lowercased() != "transfer-encoding" {
            if let name = HTTPField.Name(h.name) { headers.append(HTTPField(name: name, value: h.value)) }
        }
        return Response(status: .init(code: Int(reply.status.code)), headers: headers, body: .init(byteBuffer: bytes))
    }
}

