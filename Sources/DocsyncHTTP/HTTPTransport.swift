import AsyncHTTPClient
import DocsyncClock
import DocsyncEndpoint
import DocsyncModel
import NIOCore
import NIOSSL
import NIOHTTP1
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What every HTTP adapter shares: one base URL, the credential header, clock samples taken from
/// every reply, replies read up to a cap, and the failures every server means the same way
/// (no answer, 401/403, 429/5xx) sorted into ``EndpointError``s. Each adapter reads the rest of
/// the statuses itself: only it knows what its server means by them.
public final class HTTPTransport: Sendable {
    /// The servers of one endpoint (several behind one store): requests go to one of them, and
    /// to the next when it does not answer.
    public let baseURLs: [String]
    private let current = Mutex(0)
    /// The server requests go to now.
    public var baseURL: String { baseURLs[current.withLock { $0 }] }
    public let client: HTTPClient
    public let clock: ServerClock?
    /// Sent as `X-Docsync-Client`: a server that knows it leaves this client's writes out of the
    /// changes it returns.
    public let clientID: String?
    public let requestTimeout: TimeAmount
    private let authorization: Mutex<String?>

    /// Replies larger than this are refused rather than buffered.
    public static let maxReplyBytes = ProtocolLimits.maxReplyBytes

    public convenience init(baseURL: String, client: HTTPClient, clock: ServerClock?, clientID: String? = nil, requestTimeout: Duration = .seconds(30)) {
        self.init(baseURLs: [baseURL], client: client, clock: clock, clientID: clientID, requestTimeout: requestTimeout)
    }

    public init(baseURLs: [String], client: HTTPClient, clock: ServerClock?, clientID: String? = nil, requestTimeout: Duration = .seconds(30)) {
        precondition(!baseURLs.isEmpty, "an endpoint has at least one URL")
        self.baseURLs = baseURLs.map { url in
            var url = url
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
        self.client = client
        self.clock = clock
        self.clientID = clientID
        self.requestTimeout = .nanoseconds(requestTimeout.wholeNanoseconds)
        self.authorization = Mutex(nil)
    }

    /// The `Authorization` header's value from now on.
    public func setAuthorization(_ value: String?) { authorization.withLock { $0 = value } }

    var currentAuthorization: String? { authorization.withLock { $0 } }

    /// A reply the transport did not sort out: 2xx, or a 4xx other than 401/403/429.
    public struct Reply: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        /// The body as it came, held once: the parser reads these bytes, not a copy of them.
        public var bytes: [UInt8]
        /// The body as JSON; `.null` when it is empty or not JSON.
        public var json: JSONValue
        /// Objects of the body's lists left out of `json`: well-formed, but no document can hold
        /// them (see ``JSONParser/parseIsolating(_:maxDepth:maxElementBytes:maxElementValues:maxValues:)``). The adapter rejects each alone.
        public var isolated: [IsolatedElement] = []
        public var ok: Bool { (200..<300).contains(status) }
        /// The server's own words for a refusal: its `error`/`message`/`reason`, else the body's start.
        public var message: String { HTTPTransport.errorMessage(json, bytes: bytes, status: status) }
    }

    /// Sends one request; `path` is appended to the base URL (or `url` replaces it). A server
    /// that does not answer (refused, reset, timed out) is passed over for the next one, each
    /// tried once; the one that answers is used from then on. A write that reached the server
    /// that then failed is sent again: writes carry their base revision, so a repeated one is a
    /// conflict with what it already stored, merged as such. `failover: false` for a body that
    /// cannot be sent twice (a file streamed as it is read): it fails, and is retried later.
    /// `parsed: false` leaves a 2xx reply's body to the caller (``Reply/json`` is `.null`): a
    /// listing read one document at a time (``parseListing(_:each:)``).
    public func send(
        _ method: HTTPMethod, _ path: String, url: String? = nil, body: HTTPClientRequest.Body? = nil, contentType: String = "application/json",
        headers: [(String, String)] = [], timeout: TimeAmount? = nil, failover: Bool = true, parsed: Bool = true
    ) async throws(EndpointError) -> Reply {
        let first = current.withLock { $0 }
        var attempt = 0
        while true {
            let index = (first + attempt) % baseURLs.count
            do throws(EndpointError) {
                let reply = try await sendOnce(
                    method, url: url ?? (baseURLs[index] + path), body: body, contentType: contentType, headers: headers, timeout: timeout,
                    parsed: parsed)
                if index != first { current.withLock { $0 = index } }
                return reply
            } catch .unreachable where failover && url == nil && attempt + 1 < baseURLs.count {
                attempt += 1
            }
        }
    }

    private func sendOnce(
        _ method: HTTPMethod, url: String, body: HTTPClientRequest.Body?, contentType: String, headers: [(String, String)], timeout: TimeAmount?,
        parsed: Bool
    ) async throws(EndpointError) -> Reply {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let clientID { request.headers.add(name: "X-Docsync-Client", value: clientID) }
        request.method = method
        if let authorization = authorization.withLock({ $0 }) { request.headers.add(name: "Authorization", value: authorization) }
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "Cache-Control", value: "no-cache")
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = body
        }
        let (response, bytes) = try await execute(request, timeout: timeout ?? requestTimeout)
        let status = Int(response.status.code)
        let left = !parsed && (200..<300).contains(status)
        let json = left ? nil : try Self.parse(bytes)
        let reply = Reply(status: status, headers: response.headers, bytes: bytes, json: json?.value ?? .null, isolated: json?.isolated ?? [])
        if reply.ok {
            guard !reply.json.isNull || bytes.isEmpty || left else { throw .badReply("the body is not JSON") }
            return reply
        }
        switch status {
        case 401: throw .unauthorized("\(status): \(reply.message)")
        // The token is known but lacks a right: that request's, not every request's (a token
        // that may not write one docType still writes the others).
        case 403: throw .forbidden(right: reply.json.object?["right"]?.string, reason: reply.message)
        case 429, 500...599:
            // A server's wait, believed up to a day (a hostile number must not hold the agent forever).
            let retryAfter = reply.headers.first(name: "Retry-After").flatMap(Int.init).flatMap { (0...86_400).contains($0) ? Duration.seconds($0) : nil }
            throw .unavailable("\(status): \(reply.message)", retryAfter: retryAfter)
        default: return reply
        }
    }

    /// A reply's JSON, `nil` when it is not JSON. Every adapter's documents are held to the limits
    /// a document has on this side (one over them is left out alone), and the whole reply to the
    /// values a page may hold: what its parse takes is bounded, whatever a server sends.
    static func parse(_ bytes: [UInt8]) throws(EndpointError) -> (value: JSONValue, isolated: [IsolatedElement])? {
        try held { () throws(JSONSyntaxError) in
            try JSONParser.parseIsolating(bytes, maxElementBytes: elementBytes, maxElementValues: elementValues, maxValues: ProtocolLimits.maxReplyValues)
        }
    }

    /// A listing's JSON, held to the same limits, its documents handed to `each` one at a time
    /// (``JSONParser/parseListing(_:maxElementBytes:maxElementValues:maxValues:each:)``); `nil`
    /// when it is not JSON.
    public static func parseListing(
        _ bytes: [UInt8], each: (_ document: JSONValue, _ range: Range<Int>, _ values: Int) -> Void
    ) throws(EndpointError) -> (value: JSONValue, isolated: [IsolatedElement])? {
        try held { () throws(JSONSyntaxError) in
            try JSONParser.parseListing(bytes, maxElementBytes: elementBytes, maxElementValues: elementValues, maxValues: ProtocolLimits.maxReplyValues, each: each)
        }
    }

    /// A document of a reply is held to what a document sent may hold, and its entry around it.
    private static var elementBytes: Int { ProtocolLimits.maxDocumentRequestBytes }
    private static var elementValues: Int { ProtocolLimits.maxDocumentRequestValues + ProtocolLimits.envelopeValues }

    /// `parse`'s result; over the reply's values it is too large, and otherwise not JSON (`nil`).
    private static func held<T>(_ parse: () throws(JSONSyntaxError) -> T) throws(EndpointError) -> T? {
        do {
            return try parse()
        } catch where error.overBudget {
            throw .tooLarge("it holds more than \(ProtocolLimits.maxReplyValues) values, more than a page of documents may")
        } catch {
            return nil
        }
    }

    private func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws(EndpointError) -> (HTTPClientResponse, [UInt8]) {
        let sentAt = clock?.seam.bootNanoseconds() ?? 0
        do {
            let response = try await client.execute(request, timeout: timeout)
            let receivedAt = clock?.seam.bootNanoseconds() ?? 0
            clock?.observe(headers: ReplyHeaders(response.headers), sentAt: sentAt, receivedAt: receivedAt)
            let length = response.headers.first(name: "Content-Length").flatMap(Int.init)
            return (response, try await Self.collect(response.body, length: length, upTo: Self.maxReplyBytes))
        } catch let error as FileReadError {
            throw .localFile(error.description)
        } catch is NIOTooManyBytesError {
            throw .tooLarge("it is over \(Self.maxReplyBytes) bytes")
        } catch {
            throw .unreachable(Self.describe(error))
        }
    }

    /// A reply's body in one array, refused past `limit` bytes. Each piece is let go as it is
    /// copied in (collecting into a buffer and copying that for the parser held every reply twice:
    /// 64 MiB more at the reply cap). Room is made for the announced length, up to the limit.
    static func collect(_ body: HTTPClientResponse.Body, length: Int?, upTo limit: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(max(length ?? 0, 0), limit))
        for try await piece in body {
            guard bytes.count + piece.readableBytes <= limit else { throw NIOTooManyBytesError(maxBytes: limit) }
            bytes.append(contentsOf: piece.readableBytesView)
        }
        return bytes
    }

    static func errorMessage(_ json: JSONValue, bytes: [UInt8], status: Int) -> String {
        if let object = json.object {
            for key in ["error", "message", "reason"] {
                if let s = object[key]?.string { return s }
                if let inner = object[key]?.object, let s = inner["message"]?.string { return s }
            }
        }
        let text = String(decoding: bytes.prefix(800), as: UTF8.self).prefix(200)
        return text.isEmpty ? HTTPResponseStatus(statusCode: status).reasonPhrase : String(text)
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? HTTPClientError {
            if e == .deadlineExceeded || e == .readTimeout { return "timed out" }
            if e == .remoteConnectionClosed { return "connection closed by the server" }
            return "\(e)"
        }
        if error is NIOSSLError || error is NIOSSLExtraError {
            // BoringSSL's own words are kept, after what they mean and what to do.
            return "TLS: the server's certificate was not accepted; if it is self-signed or from a private CA, give it with --ca-file PEM (\(error))"
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
    /// The string as one percent-encoded URL path segment (unreserved characters kept).
    public func addingPercentEncodingForPathSegment() -> String {
        var out = ""
        for byte in utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isASCII && (c.isLetter || c.isNumber || "-._~".contains(c)) {
                out.append(c)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count < 2 ? "0" + hex : hex)
            }
        }
        return out
    }
}
