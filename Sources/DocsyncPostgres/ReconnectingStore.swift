import DocsyncModel
import DocsyncStore
import Logging
import PostgresNIO
import Synchronization

/// The PostgreSQL store as a node serves it, through the database's outages.
///
/// A node started while the database is away serves at once: every call answers "unavailable"
/// (503 with `Retry-After`) while the store connects in the background, with backoff, for as long
/// as it takes. Each call is bounded by `deadline`: a database that went away mid-call answers
/// 503 within the request's deadline instead of after the pool's minutes of retries (before, `GET
/// /api/stats` hung 18 s and more, and a node started during an outage exited after 70 s).
/// Failures of the connection (no reply from the server itself) are "unavailable" too; the
/// server's own refusals stay what they were.
public final class ReconnectingStore: DocumentStore {
    private final class Holder: Sendable {
        let store = Mutex<PostgresDocumentStore?>(nil)
    }

    private let holder = Holder()
    private let connecting: Task<Void, Never>
    let deadline: Duration

    public init(deadline: Duration = .seconds(5), logger: Logger, connect: @escaping @Sendable () async throws -> PostgresDocumentStore) {
        self.deadline = deadline
        let holder = self.holder
        connecting = Task {
            var failures = 0
            while !Task.isCancelled {
                do {
                    let store = try await connect()
                    holder.store.withLock { $0 = store }
                    if failures > 0 { logger.notice("the database answers; serving") }
                    return
                } catch {
                    failures += 1
                    if failures == 1 { logger.error("the database cannot be reached; every call answers 503 until it can: \(error)") }
                    try? await Task.sleep(for: .seconds(min(10, failures)))
                }
            }
        }
    }

    /// Waits until the store is connected, at most `timeout`; whether it is. A server waits so
    /// long before it says it listens: a database that answers is ready from the first request.
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while connected == nil && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return connected != nil
    }

    /// The store once connected: for tests, and for what only PostgreSQL does.
    public var connected: PostgresDocumentStore? { holder.store.withLock { $0 } }

    public var storeID: String { connected?.storeID ?? "" }

    /// `body` on the connected store, within the deadline.
    private func call<T: Sendable>(_ body: @escaping @Sendable (PostgresDocumentStore) async throws -> T) async throws -> T {
        guard let store = connected else { throw StoreError(.unavailable, "the database cannot be reached yet; try again shortly") }
        return try await Deadline.race(deadline) { try await body(store) }
    }

    public func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String?, access: Access) async throws -> JSONObject {
        try await call { try await $0.put(object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, client: client, access: access) }
    }

    public func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int, client: String?, selection: TypeSelection, measure: Bool,
        access: Access
    ) async throws -> SyncOutcome {
        try await call {
            try await $0.sync(
                since: since, documents: documents, now: now, limit: limit, maxBytes: maxBytes, client: client, selection: selection,
                measure: measure, access: access)
        }
    }

    public func delete(id: String, docType: String, now: Int64, author: String?, access: Access) async throws -> JSONObject {
        try await call { try await $0.delete(id: id, docType: docType, now: now, author: author, access: access) }
    }

    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client: String?, author: String?, access: Access
    ) async throws -> JSONObject {
        try await call {
            try await $0.attach(
                blob: blob, to: id, docType: docType, property: property, url: url, now: now, client: client, author: author, access: access)
        }
    }

    public func get(id: String) async throws -> JSONValue? { try await call { try await $0.get(id: id) } }

    public func list(docType: String, includeDeleted: Bool, after: String, limit: Int) async throws -> [(id: String, body: String)] {
        let rows = try await call { store in
            try await store.list(docType: docType, includeDeleted: includeDeleted, after: after, limit: limit).map { Row(id: $0.id, body: $0.body) }
        }
        return rows.map { ($0.id, $0.body) }
    }

    private struct Row: Sendable {
        var id: String
        var body: String
    }

    public func blob(sha256: String) async throws -> StoredBlob? { try await call { try await $0.blob(sha256: sha256) } }
    public func blobCount() async throws -> Int { try await call { try await $0.blobCount() } }
    public func latestSeq() async throws -> Int64 { try await call { try await $0.latestSeq() } }
    public func stats() async throws -> StoreStats { try await call { try await $0.stats() } }
    public func purgeTombstones(deletedBefore: Int64) async throws -> Int { try await call { try await $0.purgeTombstones(deletedBefore: deletedBefore) } }

    public var followsExternalChanges: Bool { true }

    /// Follows the database's notifications once it is connected.
    public func followExternalChanges(_ published: @escaping @Sendable (Int64) -> Void) async throws {
        while connected == nil {
            try await Task.sleep(for: .milliseconds(200))
        }
        try await connected?.followExternalChanges(published)
    }

    public func close() async {
        connecting.cancel()
        await connected?.close()
    }
}
