import DocsyncClock
import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import Logging
import NIOCore
import ServiceLifecycle

/// The reference endpoint, `docsync serve`: PingPong's routes over an embedded ``DocumentStore``.
///
/// | route | does |
/// |---|---|
/// | `POST /api/document` | creates (id generated if absent; 409 if it exists) |
/// | `PUT /api/document` | upserts by id (`If-Match: "<rev>"` makes it conditional) |
/// | `DELETE /api/document` | tombstones `{id, docType}` |
/// | `GET /api/document/{id}` | one document |
/// | `GET /api/document/type/{docType}` | all of a type, tombstones unless `?deleted=false` |
/// | `GET /api/time` | ServerSync's `{"SyncUTC", "SyncDuration"}` |
/// | `GET /api/stats` | `{"documents", "tombstones", "seq", "uploads"}` |
/// | `POST /api/sync` | batch upsert + changes since a cursor (sync-rails' shape), optional long poll |
/// | `POST /api/app/upload` | FileUpload: stores a file, sets the target document's property to its URL |
/// | `GET /api/app/upload/{sha256}/{name}` | an uploaded file |
///
/// Replies are `{"data": …}`; errors `{"error": "…"}`. Every request needs
/// `Authorization: Token token=…`; every reply carries `X-Sync-UTC`, `X-Sync-Duration` and `Date`.
public struct ReferenceServer: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var dataDirectory: String
        public var token: String
        /// Largest document body accepted, bytes.
        public var maxDocumentBytes: Int
        /// Largest uploaded file accepted, bytes (413 beyond it).
        public var maxUploadBytes: Int64
        /// Largest `/api/sync` request body, bytes (never below one document and its envelope).
        public var maxBatchRequestBytes = ProtocolLimits.maxBatchRequestBytes
        /// Timeouts, body pace and the connection cap that keep the server answering.
        public var connections = ConnectionLimits()
        /// Serve HTTPS with these files; `nil`: plain HTTP.
        public var tls: TLSFiles?
        /// A file of named tokens (one a line, `NAME TOKEN`), read again when it changes; when
        /// set, it replaces `token`.
        public var tokenFile: String?
        /// The scheme://host[:port] written into documents as the base of file URLs; `nil` = the
        /// address the server listens on (never the request's `Host`).
        public var publicURL: String?

        public init(
            host: String = "127.0.0.1", port: Int = 8080, dataDirectory: String, token: String, maxDocumentBytes: Int = ProtocolLimits.maxDocumentBytes,
            maxUploadBytes: Int64 = 4 << 30, publicURL: String? = nil
        ) {
            self.host = host
            self.port = port
            self.dataDirectory = dataDirectory
            self.token = token
            self.maxDocumentBytes = maxDocumentBytes
            self.maxUploadBytes = maxUploadBytes
            self.publicURL = publicURL.map { url in var u = url; while u.hasSuffix("/") { u.removeLast() }; return u }
        }
    }

    public let configuration: Configuration
    public let store: DocumentStore
    let blobs: BlobDirectory
    let feed = ChangeFeed()
    let wallClock: @Sendable () -> Int64
    /// Where the server listens, once it does: the base of upload URLs without `--public-url`.
    let listening = ListeningAddress()
    let tlsConfiguration: TLSConfiguration?
    let tokens: TokenStore
    /// `https` with `--tls-cert`, else `http`.
    public var scheme: String { tlsConfiguration == nil ? "http" : "https" }

    /// - Parameter wallClock: the server's UTC in Unix nanoseconds (tests skew it).
    public init(configuration: Configuration, wallClock: @escaping @Sendable () -> Int64 = { SystemClockSeam().wallNanoseconds() }) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        self.store = try DocumentStore(path: configuration.dataDirectory + "/documents.sqlite", maxDocumentBytes: configuration.maxDocumentBytes)
        self.blobs = try BlobDirectory(root: configuration.dataDirectory + "/uploads")
        self.wallClock = wallClock
        self.tlsConfiguration = try configuration.tls?.configuration()
        self.tokens = try configuration.tokenFile.map { try TokenStore(file: $0) } ?? TokenStore(token: configuration.token)
    }

    /// The Hummingbird application. `onRunning` receives the bound address (useful with port 0).
    public func application(logger: Logger, onRunning: @escaping @Sendable (String, Int) async -> Void = { _, _ in })
        throws -> some ApplicationProtocol
    {
        let router = Router(context: BasicRequestContext.self)
        router.middlewares.add(ClockHeadersMiddleware(wallClock: wallClock, storeID: store.storeID))
        router.middlewares.add(TokenMiddleware(tokens: tokens))
        addRoutes(to: router)
        let host = configuration.host
        let listening = self.listening
        let scheme = self.scheme
        let plain = configuration.connections.server
        return Application(
            router: router,
            server: try tlsConfiguration.map { try HTTPServerBuilder.tls(plain, tlsConfiguration: $0) } ?? plain,
            configuration: .init(
                address: .hostname(host, port: configuration.port), serverName: "docsync",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.connections.connectionCap)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                listening.set(scheme: scheme, host: host, port: port)
                await onRunning(host, port)
            },
            logger: logger)
    }

    func addRoutes(to router: Router<BasicRequestContext>) {
        let store = self.store
        let feed = self.feed
        let limit = configuration.maxDocumentBytes + ProtocolLimits.envelopeSlack
        let pace = configuration.connections
        let batchLimit = max(configuration.maxBatchRequestBytes, limit)
        let now: @Sendable () -> Int64 = { [wallClock] in wallClock() / 1_000_000 }

        router.put("/api/document") { request, context in
            try await Self.respond {
                let object = try DocumentStore.validate(try await Self.json(request, limit: limit, pace: pace), requireID: true)
                var ifMatch: Int64?
                if let header = request.headers[.ifMatch] {
                    guard let rev = Int64(header.trimmingCharacters(in: CharacterSet(charactersIn: "\" W/"))) else {
                        throw StoreError(400, "If-Match must be a quoted revision number, like \"3\"")
                    }
                    ifMatch = rev
                }
                let stored = try await store.put(object, now: now(), ifMatch: ifMatch, client: Self.client(request))
                feed.published(try await store.latestSeq())
                return .object(stored)
            }
        }
        router.post("/api/document") { request, context in
            try await Self.respond(status: .created) {
                var object = try DocumentStore.validate(try await Self.json(request, limit: limit, pace: pace), requireID: false)
                if object["id"] == nil {
                    object = JSONObject([(key: "id", value: .string(UUID().uuidString.lowercased()))] + object.members)
                }
                let stored = try await store.put(object, now: now(), mustCreate: true, client: Self.client(request))
                feed.published(try await store.latestSeq())
                return .object(stored)
            }
        }
        router.delete("/api/document") { request, context in
            try await Self.respond {
                guard case .object(let o) = try await Self.json(request, limit: limit, pace: pace),
                      let id = o["id"]?.string, let docType = o["docType"]?.string
                else { throw StoreError(400, "DELETE needs a body {\"id\": …, \"docType\": …}") }
                let stored = try await store.delete(id: id, docType: docType, now: now())
                feed.published(try await store.latestSeq())
                return .object(stored)
            }
        }
        router.get("/api/document/type/{docType}") { request, context in
            let docType = Self.parameter("docType", context)
            let includeDeleted = request.uri.queryParameters.get("deleted") != "false"
            do {
                let bodies = try await store.list(docType: docType, includeDeleted: includeDeleted)
                // Assemble the array from the stored texts: no parse and re-serialise per document.
                var buffer = ByteBuffer(string: "{\"data\":[")
                for (i, body) in bodies.enumerated() {
                    if i > 0 { buffer.writeString(",") }
                    buffer.writeString(body)
                }
                buffer.writeString("]}")
                return Self.response(.ok, buffer)
            } catch {
                return Self.errorResponse(error)
            }
        }
        router.get("/api/document/{id}") { _, context in
            try await Self.respond {
                let id = Self.parameter("id", context)
                guard let doc = try await store.get(id: id) else { throw StoreError(404, "no document with id \(id)") }
                return doc
            }
        }
        router.post("/api/sync") { request, context in
            do {
                // Documents sit three containers deep ({"documents": [doc]}): one level more than a
                // document may have is parsed, so a document one level too deep is refused alone.
                let envelope = 2
                let (parsed, deepest) = try await Self.json(
                    request, limit: batchLimit, maxDepth: ProtocolLimits.maxDocumentDepth + envelope + 1, pace: pace)
                guard case .object(let body) = parsed else {
                    throw StoreError(400, "the body must be {\"since\": <cursor>, \"documents\": [...]}")
                }
                var since: Int64 = 0
                if let s = body["since"], !s.isNull {
                    guard case .number(let n) = s, let v = Int64(n), v >= 0 else { throw StoreError(400, "\"since\" must be a cursor from an earlier reply (or 0)") }
                    since = v
                }
                var documents: [JSONValue] = []
                if let d = body["documents"] {
                    guard case .array(let list) = d else { throw StoreError(400, "\"documents\" must be an array") }
                    documents = list
                }
                // `"echo": false`: the caller's own documents are acknowledged (id, revision and
                // stamps) instead of sent back whole; this store keeps every body exactly as sent.
                let echo = body["echo"] != .bool(false)
                var wait: Duration = .zero
                if case .number(let w)? = body["wait"], let seconds = Double(w) { wait = .milliseconds(Int64(min(max(seconds, 0), 60) * 1000)) }
                let pageSize = 1000
                let client = Self.client(request)
                var outcome = try await store.sync(
                    since: since, documents: documents, now: now(), limit: pageSize, client: client,
                    measureDepth: deepest > ProtocolLimits.maxDocumentDepth + envelope)
                if !outcome.stored.isEmpty { feed.published(outcome.cursor) }
                if documents.isEmpty && outcome.changes.isEmpty && !outcome.more && wait > .zero {
                    // Long poll: hold the request until something changes (or the wait ends).
                    // Ends early when the server shuts down, so a held request never delays a stop.
                    let (after, timeout) = (outcome.cursor, wait)
                    await cancelWhenGracefulShutdown { await feed.wait(after: after, timeout: timeout) }
                    outcome = try await store.sync(since: since, documents: [], now: now(), limit: pageSize, client: client)
                }
                var buffer = ByteBuffer(string: "{\"documents\":{\"success\":[")
                var first = true
                for doc in outcome.stored {
                    if !first { buffer.writeString(",") }
                    first = false
                    buffer.writeBytes(JSONWriter.bytes(.object(echo ? doc : Self.acknowledgement(doc))))
                }
                for text in outcome.changes {
                    if !first { buffer.writeString(",") }
                    first = false
                    buffer.writeString(text)
                }
                buffer.writeString("],\"error\":")
                buffer.writeBytes(JSONWriter.bytes(.array(outcome.errors.map { .object($0) })))
                buffer.writeString("},\"cursor\":\(outcome.cursor),\"more\":\(outcome.more)}")
                return Self.response(.ok, buffer)
            } catch {
                return Self.errorResponse(error)
            }
        }
        UploadRoutes(
            store: store, blobs: blobs, feed: feed, maxUploadBytes: configuration.maxUploadBytes,
            publicURL: configuration.publicURL, listening: listening, pace: pace, now: now
        ).add(to: router)
        router.get("/api/stats") { _, _ in
            try await Self.respond {
                let s = try await store.stats()
                var object = JSONObject()
                object["documents"] = .number(String(s.documents))
                object["tombstones"] = .number(String(s.tombstones))
                object["seq"] = .number(String(s.seq))
                object["uploads"] = .number(String(try await store.blobCount()))
                return .object(object)
            }
        }
        router.get("/api/time") { _, _ in
            // The middleware adds the real stamps as headers; the body repeats them for clients
            // (ServerSync's) that read JSON. SyncDuration here is the handler's, close to zero.
            let t = wallClock()
            return Self.response(.ok, ByteBuffer(string: "{\"SyncUTC\":\(t),\"SyncDuration\":0}"))
        }
    }

    // MARK: - Helpers

    /// A stored document reduced to what its writer does not already know.
    static func acknowledgement(_ doc: JSONObject) -> JSONObject {
        var ack = JSONObject()
        for key in ["id", DocumentRules.revKey, DocumentRules.updatedAtKey, DocumentRules.deletedAtKey] {
            if let value = doc[key] { ack[key] = value }
        }
        return ack
    }

    /// A path parameter, percent-decoded (`my%20notes` is the docType "my notes"); a malformed
    /// escape is kept as it came, and matches nothing.
    static func parameter(_ name: String, _ context: BasicRequestContext) -> String {
        let raw = context.parameters.get(name) ?? ""
        return raw.removingPercentEncoding ?? raw
    }

    /// The `X-Docsync-Client` id a request names (an agent's own, so its writes are not echoed).
    static func client(_ request: Request) -> String? {
        guard let name = HTTPField.Name("X-Docsync-Client"), let value = request.headers[name], DocumentRules.isSafeIdentifier(value) else { return nil }
        return value
    }

    /// A JSON document route's body: at most one document (``ProtocolLimits``), no deeper than a
    /// document may be.
    static func json(_ request: Request, limit: Int, pace: ConnectionLimits) async throws -> JSONValue {
        try await json(request, limit: limit, maxDepth: ProtocolLimits.maxDocumentDepth, pace: pace).value
    }

    /// Reads a JSON body of at most `limit` bytes: a `Content-Length` over it is refused before a
    /// byte of the body is read (a client cannot make the server buffer what it will refuse), and
    /// a body without one is cut off at the limit while it streams; one that trickles in slower
    /// than the connection limits' pace is refused (408).
    static func json(_ request: Request, limit: Int, maxDepth: Int, pace: ConnectionLimits) async throws -> (value: JSONValue, depth: Int) {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw StoreError(413, "the request body is \(length) bytes, over the limit of \(limit) bytes")
        }
        var buffer = ByteBuffer()
        var paced = ConnectionLimits.BodyPace(limits: pace)
        for try await piece in request.body {
            guard buffer.readableBytes + piece.readableBytes <= limit else {
                throw StoreError(413, "the request body is over the limit of \(limit) bytes")
            }
            var piece = piece
            let size = piece.readableBytes
            buffer.writeBuffer(&piece)
            try paced.add(size)
        }
        do {
            return try JSONParser.parseMeasuringDepth(Array(buffer: buffer), maxDepth: maxDepth)
        } catch {
            throw StoreError(400, "the body is not valid JSON: \(error)")
        }
    }

    static func respond(status: HTTPResponse.Status = .ok, _ body: () async throws -> JSONValue) async throws -> Response {
        do {
            let data = try await body()
            var buffer = ByteBuffer(string: "{\"data\":")
            buffer.writeBytes(JSONWriter.bytes(data))
            buffer.writeString("}")
            return response(status, buffer)
        } catch {
            return errorResponse(error)
        }
    }

    static func errorResponse(_ error: any Error) -> Response {
        if let e = error as? StoreError {
            var object = JSONObject([(key: "error", value: .string(e.message))])
            if let current = e.current { object["data"] = current }
            return response(.init(code: e.status), ByteBuffer(bytes: JSONWriter.bytes(.object(object))))
        }
        let object: JSONValue = ["error": .string("internal error: \(error)")]
        return response(.internalServerError, ByteBuffer(bytes: JSONWriter.bytes(object)))
    }

    static func response(_ status: HTTPResponse.Status, _ buffer: ByteBuffer) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }
}
