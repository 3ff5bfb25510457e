import DocsyncStore
import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import NIOCore

/// `GET /api/stats`, `GET /api/time`, `GET /metrics` and `GET /api/openapi.json`.
struct ServiceRoutes: Sendable {
    let store: any DocumentStore
    let wallClock: @Sendable () -> Int64
    let metricsText: (@Sendable () -> ByteBuffer)?

    /// Counts are of every document: a token that may not read them all learns none of them.
    static func countsRefusal(_ access: Access) -> StoreError? {
        access.readsEverything ? nil : StoreError(.forbidden, "the store's counts are for tokens that may read every docType", right: "read:*")
    }

    /// The one route served without a token: the API's description hides nothing of the store.
    static let descriptionPath = "/api/openapi.json"

    func add(to router: Router<ServerRequestContext>) {
        router.get(RouterPath(Self.descriptionPath)) { _, _ in
            ReferenceServer.response(.ok, ByteBuffer(string: Self.openAPIDescription))
        }
        if let metricsText {
            let store = self.store
            router.get("/metrics") { _, context -> Response in
                if let refusal = Self.countsRefusal(context.access) { return ReferenceServer.errorResponse(refusal) }
                let s = try await store.stats()
                Gauge(label: "docsync_server_documents", dimensions: [("state", "live")]).record(s.documents - s.tombstones)
                Gauge(label: "docsync_server_documents", dimensions: [("state", "tombstone")]).record(s.tombstones)
                Gauge(label: "docsync_server_change_sequence").record(s.seq)
                Gauge(label: "docsync_server_stored_files").record(try await store.blobCount())
                var response = Response(status: .ok, body: .init(byteBuffer: metricsText()))
                response.headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return response
            }
        }
        let (store, wallClock) = (self.store, self.wallClock)
        router.get("/api/stats") { _, context in
            try await ReferenceServer.respond {
                if let refusal = Self.countsRefusal(context.access) { throw refusal }
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
            return ReferenceServer.response(.ok, ByteBuffer(string: "{\"SyncUTC\":\(t),\"SyncDuration\":0}"))
        }
    }
}
