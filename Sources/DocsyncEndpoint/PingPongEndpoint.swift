import AsyncHTTPClient
#if canImport(Glibc)
import Glibc
#endif
import DocsyncClock
import DocsyncModel
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// The PingPong-style REST endpoint: `PUT /api/document` (upsert by id), `GET /api/document/:id`,
/// `GET /api/document/type/:docType`, replies wrapped in `{"data": …}`, and
/// `Authorization: Token token=…` on every request.
///
/// Every reply doubles as a clock sample (issue 4): the send and receive instants on the boot-time
/// clock with the server's `X-Sync-UTC`/`X-Sync-Duration` or `Date` headers go to `clock`.
public struct PingPongEndpoint: Sendable {
    public let baseURL: String
    private var authorization: String
    private let client: HTTPClient
    private let clock: ServerClock?
    public var requestTimeout: TimeAmount = .seconds(30)
    /// Sent as `X-Docsync-Client`: the endpoint leaves this client's own writes out of the changes
    /// it returns.
    public var clientID: String?

    /// Replies larger than this are refused rather than buffered.
    static let maxReplyBytes = ProtocolLimits.maxReplyBytes

    public init(baseURL: String, token: String, client: HTTPClient, clock: ServerClock? = nil) {
        var url = baseURL
        while url.hasSuffix("/") { url.removeLast() }
        self.baseURL = url
        self.authorization = "Token token=\(token)"
        self.client = client
        self.clock = clock
    }

    /// The same endpoint with another token (the token file changed).
    public func withToken(_ token: String) -> PingPongEndpoint {
        var copy = self
        copy.authorization = "Token token=\(token)"
        return copy
    }

    /// Upserts one document; returns the document as the endpoint stored it. With `ifMatch`, only
    /// if the stored revision is still that one (else `.conflict` with the current document).
    public func put(_ document: [UInt8], ifMatch: Int64? = nil) async throws(EndpointError) -> JSONValue {
        try await dataReply(send(.PUT, "/api/document", body: document, headers: ifMatch.map { [("If-Match", "\"\($0)\"")] } ?? []))
    }

    /// The reply to a batch call.
    public struct SyncReply: Sendable {
        /// Stored versions of what was sent, and what changed on the server since the cursor.
        public var success: [JSONObject]
        public var errors: [(id: String?, message: String, current: JSONObject?)]
        public var cursor: Int64
        public var more: Bool
        /// The identity of the store that answered (`X-Docsync-Store`), when the server names one.
        public var store: String?
    }

    /// sync-rails' batch call: sends `documents` (each may carry `rev`, its base revision) and
    /// receives everything changed since `since`. With `wait`, an empty call is held by the server
    /// until something changes (a long poll). With `echo: false` the endpoint may acknowledge a sent
    /// document (`id`, `rev`, stamps: no `docType`) instead of returning it whole, which says it
    /// stored the body exactly as sent. `.rejected(404/405)` means the endpoint has no batch call.
    public func sync(since: Int64, documents: [String], wait: Int? = nil, echo: Bool = true) async throws(EndpointError) -> SyncReply {
        // Written once into a buffer of the right size: the documents are most of a call's bytes.
        var body = ByteBuffer()
        body.reserveCapacity(documents.reduce(64) { $0 + $1.utf8.count + 1 })
        body.writeString("{\"since\":\(since),")
        if !echo { body.writeString("\"echo\":false,") }
        if let wait { body.writeString("\"wait\":\(wait),") }
        body.writeString("\"documents\":[")
        for (i, d) in documents.enumerated() {
            if i > 0 { body.writeInteger(UInt8(ascii: ",")) }
            body.writeString(d)
        }
        body.writeString("]}")
        let timeout = wait.map { requestTimeout + .seconds(Int64($0)) } ?? requestTimeout
        let reply = try await send(.POST, "/api/sync", body: .bytes(body), contentType: "application/json", timeout: timeout)
        guard let object = reply.json.object, let documents = object["documents"]?.object,
              case .number(let cursorText)? = object["cursor"], let cursor = Int64(cursorText)
        else { throw .badReply("not a sync reply") }
        var success: [JSONObject] = []
        if case .array(let list)? = documents["success"] { for case .object(let o) in list { success.append(o) } }
        var errors: [(String?, String, JSONObject?)] = []
        if case .array(let list)? = documents["error"] {
            for case .object(let e) in list { errors.append((e["id"]?.string, e["message"]?.string ?? "error", e["current"]?.object)) }
        }
        return SyncReply(success: success, errors: errors, cursor: cursor, more: object["more"] == true, store: reply.store)
    }

    /// The document with `id`, or `nil` if the endpoint has none.
    public func get(id: String) async throws(EndpointError) -> JSONValue? {
        do {
            return try await dataReply(send(.GET, "/api/document/\(id)"))
        } catch .rejected(status: 404, _) {
            return nil
        }
    }

    /// Every document of `docType`, tombstones included unless `includeDeleted` is false.
    public func list(docType: String, includeDeleted: Bool = true) async throws(EndpointError) -> [JSONValue] {
        let segment = docType.addingPercentEncodingForPathSegment()
        let reply = try await dataReply(send(.GET, "/api/document/type/\(segment)\(includeDeleted ? "" : "?deleted=false")"))
        guard case .array(let docs) = reply else { throw .badReply("expected an array under \"data\"") }
        return docs
    }

    /// `GET /api/time`, for calibrating the clock when no other traffic flows.
    public func time() async throws(EndpointError) -> JSONValue {
        try await send(.GET, "/api/time").json
    }

    // MARK: - Transport

    struct Reply {
        var status: Int
        var json: JSONValue
        var store: String?
    }

    private func dataReply(_ reply: Reply) throws(EndpointError) -> JSONValue {
        guard let data = reply.json.object?["data"] else { throw .badReply("no \"data\" in the reply") }
        return data
    }

    private func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [], timeout: TimeAmount? = nil
    ) async throws(EndpointError) -> Reply {
        try await send(method, path, body: body.map { .bytes(ByteBuffer(bytes: $0)) }, contentType: "application/json", headers: headers, timeout: timeout)
    }

    func send(
        _ method: HTTPMethod, _ path: String, body: HTTPClientRequest.Body?, contentType: String, headers: [(String, String)] = [],
        timeout: TimeAmount? = nil
    ) async throws(EndpointError) -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let clientID { request.headers.add(name: "X-Docsync-Client", value: clientID) }
        request.method = method
        request.headers.add(name: "Authorization", value: authorization)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "Cache-Control", value: "no-cache")
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = body
        }
        let sentAt = clock?.seam.bootNanoseconds() ?? 0
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await client.execute(request, timeout: timeout ?? requestTimeout)
            let receivedAt = clock?.seam.bootNanoseconds() ?? 0
            clock?.observe(headers: ReplyHeaders(response.headers), sentAt: sentAt, receivedAt: receivedAt)
            bytes = try await response.body.collect(upTo: Self.maxReplyBytes)
        } catch let error as FileReadError {
            throw .localFile(error.description)
        } catch {
            throw .unreachable(Self.describe(error))
        }
        let status = Int(response.status.code)
        let json = (try? JSONParser.parse(Array(buffer: bytes))) ?? .null
        if (200..<300).contains(status) {
            guard !json.isNull || bytes.readableBytes == 0 else { throw .badReply("the body is not JSON") }
            return Reply(status: status, json: json, store: response.headers.first(name: "X-Docsync-Store"))
        }
        let message = Self.errorMessage(json, bytes: bytes, status: response.status)
        switch status {
        case 401, 403: throw .unauthorized(status: status, message: message)
        case 409: throw .conflict(current: json.object?["data"] ?? json.object?["current"])
        case 429, 500...599:
            let retryAfter = response.headers.first(name: "Retry-After").flatMap(Int.init).map { Duration.seconds($0) }
            throw .unavailable(status: status, message: message, retryAfter: retryAfter)
        default: throw .rejected(status: status, message: message)
        }
    }

    static func errorMessage(_ json: JSONValue, bytes: ByteBuffer, status: HTTPResponseStatus) -> String {
        if let object = json.object {
            for key in ["error", "message", "reason"] {
                if let s = object[key]?.string { return s }
                if let inner = object[key]?.object, let s = inner["message"]?.string { return s }
            }
        }
        let text = String(buffer: bytes).prefix(200)
        return text.isEmpty ? status.reasonPhrase : String(text)
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? HTTPClientError {
            if e == .deadlineExceeded || e == .readTimeout { return "timed out" }
            if e == .remoteConnectionClosed { return "connection closed by the server" }
            return "\(e)"
        }
        if let e = error as? IOError {
            // NIO phrases a refused connect as "connection reset (error set): …"; the errno says it plainly.
            return String(cString: strerror(e.errnoCode)).lowercased()
        }
        return "\(error)"
    }
}

extension ReplyHeaders {
    init(_ headers: HTTPHeaders) {
        self.init(
            syncUTC: headers.first(name: "X-Sync-UTC"),
            syncDuration: headers.first(name: "X-Sync-Duration"),
            date: headers.first(name: "Date"))
    }
}

extension String {
    func addingPercentEncodingForPathSegment() -> String {
        var out = ""
        for byte in utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isASCII && (c.isLetter || c.isNumber || "-._~".contains(c)) {
                out.append(c)
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return out
    }

    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

/// The HTTP client every docsync command uses against an endpoint.
///
/// A refused or failed connect is reported to the caller at once instead of being retried inside
/// the connection pool until the connect timeout: the agent has its own retry policy (with
/// backoff and logging), and an agent started offline must not sit for seconds before scanning.
///
/// `caFile`: PEM certificates trusted for `https://` endpoints instead of the system's.
public func makeHTTPClient(caFile: String? = nil) throws -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    if let caFile {
        guard access(caFile, R_OK) == 0 else { throw EndpointError.localFile("cannot read the CA file \(caFile)") }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caFile)
        configuration.tlsConfiguration = tls
    }
    configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
    var pool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
    pool.retryConnectionEstablishment = false
    configuration.connectionPool = pool
    configuration.decompression = .disabled
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
}
