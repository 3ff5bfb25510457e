import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

import ServiceLifecycle

/// The batch call, `POST /api/sync`: documents in, changes since a cursor out, optionally held
/// until something changes (a long poll).
struct SyncRoute: Sendable {
    let store: any DocumentStore
    let feed: ChangeFeed
    /// Largest request body.
    let batchLimit: Int
    let pace: ConnectionLimits
    let now: @Sendable () -> Int64

    func add(to router: Router<BasicRequestContext>) {
        let (store, feed, batchLimit, pace, now) = (self.store, self.feed, self.batchLimit, self.pace, self.now)
        router.post("/api/sync") { request, context in
            do {
                // Documents sit three containers deep ({"documents": [doc]}): one level more than a
                // document may have is parsed, so a document one level too deep is refused alone.
                let envelope = 2
                let (parsed, deepest) = try await ReferenceServer.json(
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
                let client = ReferenceServer.client(request)
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
                    buffer.writeBytes(JSONWriter.bytes(.object(echo ? doc : ReferenceServer.acknowledgement(doc))))
                }
                for text in outcome.changes {
                    if !first { buffer.writeString(",") }
                    first = false
                    buffer.writeString(text)
                }
                buffer.writeString("],\"error\":")
                buffer.writeBytes(JSONWriter.bytes(.array(outcome.errors.map { .object($0) })))
                buffer.writeString("},\"cursor\":\(outcome.cursor),\"more\":\(outcome.more)}")
                return ReferenceServer.response(.ok, buffer)
            } catch {
                return ReferenceServer.errorResponse(error)
            }
        }
    }
}
