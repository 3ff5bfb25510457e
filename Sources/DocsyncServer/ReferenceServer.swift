import DocsyncSQLiteStore
import DocsyncStore
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

/// The reference endpoint, `docsync serve`: the document routes over a ``DocumentStore`` (embedded
/// SQLite by default). The route table is in docs/PROTOCOL.md.
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
/// | `GET /api/openapi.json` | the API's description (docs/openapi.yaml), without a token |
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
        /// The process's metrics in Prometheus's text format, served at `GET /metrics` (behind
        /// the token like every route); `nil`: no such route.
        public var metricsText: (@Sendable () -> ByteBuffer)?
        /// How long a tombstone is kept after its deletion before it is purged; `nil`: forever.
        public var tombstoneRetention: Duration? = Self.defaultTombstoneRetention
        public static let defaultTombstoneRetention: Duration = .seconds(30 * 86_400)
        /// Longest a batch call's long poll is held (a longer `wait` is taken as this).
        public var maxWait: Duration = .seconds(60)
        /// Refuse documents that fail their docType's stored schema (see ``SchemaEnforcement``).
        public var enforceSchemas = false
        /// With `enforceSchemas`: `format` asserted, not only an annotation.
        public var assertFormats = false

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
    public let store: any DocumentStore
    let blobs: BlobDirectory
    let feed = ChangeFeed()
    let wallClock: @Sendable () -> Int64
    /// Where the server listens, once it does: the base of upload URLs without `--public-url`.
    let listening = ListeningAddress()
    let tlsConfiguration: TLSConfiguration?
    let tlsReloader = TLSReloader()
    let tokens: TokenStore
    /// `https` with `--tls-cert`, else `http`.
    public var scheme: String { tlsConfiguration == nil ? "http" : "https" }

    /// - Parameters:
    ///   - store: where documents live; by default the embedded SQLite store in the data folder
    ///     (which keeps the uploads either way: a folder every node shares).
    ///   - wallClock: the server's UTC in Unix nanoseconds (tests skew it).
    public init(
        configuration: Configuration, store: (any DocumentStore)? = nil,
        wallClock: @escaping @Sendable () -> Int64 = { SystemClockSeam().wallNanoseconds() }
    ) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        self.store = try store
            ?? SQLiteDocumentStore(path: configuration.dataDirectory + "/documents.sqlite", maxDocumentBytes: configuration.maxDocumentBytes)
        self.blobs = try BlobDirectory(root: configuration.dataDirectory + "/uploads")
        self.wallClock = wallClock
        self.tlsConfiguration = try configuration.tls?.configuration(reloader: tlsReloader)
        self.tokens = try configuration.tokenFile.map { try TokenStore(file: $0) } ?? TokenStore(token: configuration.token)
    }

    /// SIGHUP: the token file and the TLS files read again. Returns what could not be reloaded.
    public func reload() -> [String] {
        tokens.reload()
        return configuration.tls.flatMap { tlsReloader.reload($0) }.map { [$0] } ?? []
    }

    /// The Hummingbird application. `onRunning` receives the bound address (useful with port 0).
    public func application(logger: Logger, onRunning: @escaping @Sendable (String, Int) async -> Void = { _, _ in })
        throws -> some ApplicationProtocol
    {
        let router = Router(context: ServerRequestContext.self)
        router.middlewares.add(ClockHeadersMiddleware(wallClock: wallClock, storeID: { [store] in store.storeID }))
        router.middlewares.add(TokenMiddleware(tokens: tokens))
        router.middlewares.add(ParsedChargeMiddleware())
        router.middlewares.add(MethodNotAllowedMiddleware(routes: routes()))
        addRoutes(to: router)
        let host = configuration.host
        let listening = self.listening
        let scheme = self.scheme
        let plain = configuration.connections.server
        var application = Application(
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
        application.addServices(StoreCloser(store: store))
        if let retention = configuration.tombstoneRetention {
            application.addServices(TombstonePurger(store: store, retention: retention, wallClock: wallClock, logger: logger))
        }
        if store.followsExternalChanges { application.addServices(ExternalChanges(store: store, feed: feed, logger: logger)) }
        return application
    }

    /// Every route this server answers, as `METHOD /path/{parameter}` (the description's
    /// completeness is tested against it).
    public func routes() -> [String] {
        let router = Router(context: ServerRequestContext.self)
        addRoutes(to: router)
        return router.routes.map { "\($0.method) \($0.path)" }
    }

    func addRoutes(to router: Router<ServerRequestContext>) {
        let limit = configuration.maxDocumentBytes + ProtocolLimits.envelopeSlack
        let pace = configuration.connections
        let now: @Sendable () -> Int64 = { [wallClock] in wallClock() / 1_000_000 }
        let schemas = configuration.enforceSchemas ? SchemaEnforcement(store: store, assertFormats: configuration.assertFormats) : nil
        let vault = VaultGuard(store: store)
        DocumentRoutes(store: store, feed: feed, limit: limit, pace: pace, now: now, schemas: schemas, vault: vault).add(to: router)
        SyncRoute(
            store: store, feed: feed, tokens: tokens, batchLimit: max(configuration.maxBatchRequestBytes, limit), maxWait: configuration.maxWait, pace: pace,
            now: now, schemas: schemas, vault: vault
        ).add(to: router)
        UploadRoutes(
            store: store, blobs: blobs, feed: feed, maxUploadBytes: configuration.maxUploadBytes,
            publicURL: configuration.publicURL, listening: listening, pace: pace, now: now, vault: vault
        ).add(to: router)
        ServiceRoutes(store: store, wallClock: wallClock, metricsText: configuration.metricsText).add(to: router)
    }
}
