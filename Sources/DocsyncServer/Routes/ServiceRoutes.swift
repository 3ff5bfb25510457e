import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /api/stats` and `GET /api/time`.
struct ServiceRoutes: Sendable {
    let store: any DocumentStore
    let wallClock: @Sendable () -> Int64

    func add(to router: Router<BasicRequestContext>) {
        let (store, wallClock) = (self.store, self.wallClock)
        router.get("/api/stats") { _, _ in
            try await ReferenceServer.respond {
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
