import DocsyncModel

/// Where the reference endpoint keeps its documents: what the routes need from any store.
///
/// The contract every store keeps (written as tests in `StoreConformanceTests`):
/// - each write gives the document a revision one above its last (`rev`, from 1); a write with
///   `ifMatch` is refused (409, with the current document) unless that is the stored revision,
///   checked in the transaction that writes;
/// - `updated_at` is the client's stamp when it is well formed and not in the future, else the
///   store's `now`; `deleted_at` makes a tombstone; nothing is removed;
/// - every write takes the next number of one change sequence, in commit order, and a reader that
///   follows the sequence (`sync(since:)`) sees every change exactly once;
/// - a write made with a client id is not returned to that client by `sync`;
/// - a body is stored as its exact text: key order and number literals kept.
///
/// The rules themselves are in ``StoreRules`` and ``ChangePage``; a store supplies the storage.
public protocol DocumentStore: Sendable {
    /// This store's identity, made with it (sent as `X-Docsync-Store`).
    var storeID: String { get }

    /// Upserts `object` by id. `ifMatch`: only over that revision; `mustCreate`: only if new.
    /// Returns the document as stored. `access`: what the caller's token may do (``Access``),
    /// checked against what is stored, in the transaction that writes.
    func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String?, access: Access) async throws -> JSONObject

    /// The batch call: upserts every document (each may carry `rev`, its base revision), then
    /// lists what changed after `since`, in one transaction so the cursor never skips a write.
    /// Only changes of the docTypes in `selection` that `access` may read are listed; a store
    /// answers a selection of a few types in time proportional to their changes, not to every change.
    func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int, client: String?, selection: TypeSelection, measure: Bool,
        access: Access
    ) async throws -> SyncOutcome

    /// Marks a document deleted (its tombstone keeps the body with `deleted_at`), by `author`.
    func delete(id: String, docType: String, now: Int64, author: String?, access: Access) async throws -> JSONObject

    /// Records an uploaded blob and sets `property` of the target document to `url`, as a new revision.
    func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client: String?, author: String?, access: Access
    ) async throws -> JSONObject

    func get(id: String) async throws -> JSONValue?
    /// The stored texts of one docType with ids after `after`, ordered by id, at most `limit`:
    /// a listing is read a page at a time, whatever the number of documents.
    func list(docType: String, includeDeleted: Bool, after: String, limit: Int) async throws -> [(id: String, body: String)]
    func blob(sha256: String) async throws -> StoredBlob?
    func blobCount() async throws -> Int
    /// The latest change sequence.
    func latestSeq() async throws -> Int64
    func stats() async throws -> StoreStats

    /// Whether other processes write to the same storage (several servers on one database): the
    /// server then follows their writes to wake its long polls.
    var followsExternalChanges: Bool { get }

    /// Calls `published` with the change numbers other processes commit, as they do, until
    /// cancelled.
    func followExternalChanges(_ published: @escaping @Sendable (Int64) -> Void) async throws

    /// Removes the tombstones deleted before `deletedBefore` (Unix ms), moving the purge horizon
    /// (``SyncOutcome/horizon``) to the latest change number among them. Returns how many went.
    func purgeTombstones(deletedBefore: Int64) async throws -> Int

    /// Lets go of the storage (connections, file handles) once the server has stopped: the files
    /// may be copied or replaced as soon as the server's run returns.
    func close() async
}

extension DocumentStore {
    /// A store only this process writes: its routes publish every change themselves.
    public var followsExternalChanges: Bool { false }
    public func followExternalChanges(_ published: @escaping @Sendable (Int64) -> Void) async throws {}

    public func delete(id: String, docType: String, now: Int64, author: String? = nil) async throws -> JSONObject {
        try await delete(id: id, docType: docType, now: now, author: author, access: .everything)
    }

    public func put(
        _ object: JSONObject, now: Int64, ifMatch: Int64? = nil, mustCreate: Bool = false, client: String? = nil, access: Access = .everything
    ) async throws -> JSONObject {
        try await put(object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, client: client, access: access)
    }

    public func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int = ProtocolLimits.maxPageBytes, client: String? = nil,
        selection: TypeSelection = .all, measure: Bool = false, access: Access = .everything
    ) async throws -> SyncOutcome {
        try await sync(
            since: since, documents: documents, now: now, limit: limit, maxBytes: maxBytes, client: client, selection: selection,
            measure: measure, access: access)
    }

    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client: String?, author: String?
    ) async throws -> JSONObject {
        try await attach(blob: blob, to: id, docType: docType, property: property, url: url, now: now, client: client, author: author, access: .everything)
    }

    /// The document `id` as `access` may see it: one of a docType it may not read is not there.
    public func get(id: String, access: Access) async throws -> JSONValue? {
        guard let document = try await get(id: id) else { return nil }
        guard access.isEverything || access.mayRead(document.object?["docType"]?.string ?? "") else { return nil }
        return document
    }

    /// A page of one docType's documents, refused (403) when `access` may not read it.
    public func list(docType: String, includeDeleted: Bool, after: String, limit: Int, access: Access) async throws -> [(id: String, body: String)] {
        guard access.mayRead(docType) else {
            throw StoreError(.forbidden, "this token may not read documents of docType \(docType)", right: "read:\(docType)")
        }
        return try await list(docType: docType, includeDeleted: includeDeleted, after: after, limit: limit)
    }
}
