import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// An endpoint that says whatever a test tells it to: a server that lies about its clock, plants
/// references, sends replies the agent cannot take or forgets its data. Each request goes to
/// `answer`, which returns the status, extra headers and body; unanswered routes get `{}`.
public final class HostileEndpoint: Sendable {
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: String
        /// Writes the body piece by piece instead of `body` (a reply that trickles, or stops half-way).
        public var stream: (@Sendable () -> AsyncThrowingStream<ByteBuffer, any Error>)?

        public init(
            status: Int = 200, headers: [(String, String)] = [], body: String = "",
            stream: (@Sendable () -> AsyncThrowingStream<ByteBuffer, any Error>)? = nil
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.stream = stream
        }
    }

    public typealias Responder = @Sendable (_ method: String, _ path: String, _ body: String) -> Answer?

    private let responder = Mutex<Responder?>(nil)
    private let withQuery = Mutex(false)
    private let requests = Mutex<[(String, String)]>([])
    private let boundPort = Mutex(0)
    private let group = Mutex<ServiceGroup?>(nil)

    public init() {}

    public var url: String { "http://127.0.0.1:\(boundPort.withLock { $0 })" }
    /// Method and path of every request so far.
    public var seen: [(String, String)] { requests.withLock { $0 } }

    public func respond(_ responder: Responder?) { self.responder.withLock { $0 = responder } }

    /// As ``respond(_:)``, the path given with its query (`/v1/…/records?_since=5`).
    public func respondWithQuery(_ responder: Responder?) {
        withQuery.withLock { $0 = true }
        respond(responder)
    }

    public func start() async throws {
        let router = Router()
        router.on("**", method: .get) { request, context in try await self.handle(request, context) }
        router.on("**", method: .post) { request, context in try await self.handle(request, context) }
        router.on("**", method: .put) { request, context in try await self.handle(request, context) }
        let (port, services) = await LoopbackServer.start(router, label: "hostile")
        group.withLock { $0 = services }
        boundPort.withLock { $0 = port }
    }

    public func stop() async {
        await group.withLock { $0 }?.triggerGracefulShutdown()
    }

    private func handle(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        var request = request
        let body = String(buffer: try await request.collectBody(upTo: 64 << 20))
        let path = request.uri.path
        requests.withLock { $0.append((request.method.rawValue, path)) }
        let target = withQuery.withLock { $0 } ? request.uri.description : path
        let answer = responder.withLock { $0 }?(request.method.rawValue, target, body) ?? Answer(body: "{}")
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        for (name, value) in answer.headers { if let field = HTTPField.Name(name) { headers[field] = value } }
        if let stream = answer.stream {
            return Response(status: .init(code: answer.status), headers: headers, body: ResponseBody(asyncSequence: stream()))
        }
        return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.body)))
    }
}

