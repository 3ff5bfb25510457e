import DocsyncStore
import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The document routes: `PUT|POST|DELETE /api/document`, `GET /api/document/{id}`,
/// `GET /api/document/type/{docType}`.
struct DocumentRoutes: Sendable {
    let store: any DocumentStore
    let feed: ChangeFeed
    /// Largest request body: one document and its envelope.
    let limit: Int
    let pace: ConnectionLimits
    let now: @Sendable () -> Int64
    /// `--enforce-schemas`: documents that fail their docType's schema are refused.
    let schemas: SchemaEnforcement?
    /// An encrypted folder's server refuses documents in clear.
    let vault: VaultGuard

    func add(to router: Router<ServerRequestContext>) {
        addWrites(to: router)
        addReads(to: router)
    }

    /// `PUT`, `POST` and `DELETE /api/document`.
    private func addWrites(to router: Router<ServerRequestContext>) {
        let (store, feed, limit, pace, now, schemas, vault) = (self.store, self.feed, self.limit, self.pace, self.now, self.schemas, self.vault)
        router.put("/api/document") { request, context in
            try await ReferenceServer.respond {
                let object = try StoreRules.validate(try await ReferenceServer.json(request, limit: limit, pace: pace), requireID: true)
                try Self.mayWriteAtAll(object, context.access)
                try await vault.check(object)
                try await schemas?.check(object)
                var ifMatch: Int64?
                if let header = request.headers[.ifMatch] {
                    guard let rev = Int64(header.trimmingCharacters(in: CharacterSet(charactersIn: "\" W/"))) else {
                        throw StoreError(.invalid, "If-Match must be a quoted revision number, like \"3\"")
                    }
                    ifMatch = rev
                }
                let stored = try await store.put(
                    StoreRules.authored(object, by: context.author), now: now(), ifMatch: ifMatch, client: ReferenceServer.client(request, token: context.author),
                    access: context.access)
                schemas?.wrote(docType: object["docType"]?.string)
                feed.published(try await store.latestSeq())
                return .object(stored)
            }
        }
        router.post("/api/document") { request, context in
            try await ReferenceServer.respond(status: .created) {
                var object = try StoreRules.validate(try await ReferenceServer.json(request, limit: limit, pace: pace), requireID: false)
                if object["id"] == nil {
                    object = JSONObject([(key: "id", value: .string(UUID().uuidString.lowercased()))] + object.members)
                }
                try Self.mayWriteAtAll(object, context.access)
                try await vault.check(object)
                try await schemas?.check(object)
                let stored = try await store.put(
                    StoreRules.authored(object, by: context.author), now: now(), mustCreate: true, client: ReferenceServer.client(request, token: context.author),
                    access: context.access)
                schemas?.wrote(docType: object["docType"]?.string)
                feed.published(try await store.latestSeq())
                return .object(stored)
            }
        }
        router.delete("/api/document") { request, context in
            try await ReferenceServer.respond {
                guard case .object(let o) = try await ReferenceServer.json(request, limit: limit, pace: pace),
                      let id = o["id"]?.string, let docType = o["docType"]?.string
                else { throw StoreError(.invalid, "DELETE needs a body {\"id\": …, \"docType\": …}") }
                // What no document can have is malformed, not absent (the fuzzer took a 404 for a
                // document it had just made and could not find): the id and docType rules of a write.
                _ = try StoreRules.validate(.object(o), requireID: true)
                try vault.checkDeletion(docType: docType)
                let stored = try await store.delete(id: id, docType: docType, now: now(), author: context.author, access: context.access)
                schemas?.wrote(docType: docType)
                feed.published(try await store.latestSeq())
                return .object(stored)
            }
        }
    }

    /// A write of a docType the token may neither write nor create is refused before anything
    /// else is done with it (a schema's check among them); the store judges the rest.
    static func mayWriteAtAll(_ object: JSONObject, _ access: Access) throws {
        let docType = object["docType"]?.string ?? ""
        guard access.mayCreate(docType) else {
            throw StoreError(.forbidden, "this token may not write documents of docType \(docType)", right: "write:\(docType)")
        }
    }

    /// `GET /api/document/type/{docType}` and `GET /api/document/{id}`.
    private func addReads(to router: Router<ServerRequestContext>) {
        let store = self.store
        router.get("/api/document/type/{docType}") { request, context in
            do {
                return try await TypeListing(
                    store: store, request: request, docType: ReferenceServer.parameter("docType", context), access: context.access).response()
            } catch {
                return ReferenceServer.errorResponse(error)
            }
        }
        router.get("/api/document/{id}") { _, context in
            try await ReferenceServer.respond {
                let id = ReferenceServer.parameter("id", context)
                // One the token may not read answers as one that does not exist.
                guard let doc = try await store.get(id: id, access: context.access) else { throw StoreError(.notFound, "no document with id \(id)") }
                return doc
            }
        }
    }
}
