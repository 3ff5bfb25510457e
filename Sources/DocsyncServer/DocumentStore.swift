import DocsyncModel
import DocsyncSQL
import Foundation
import GRDB

/// A write the store refuses, with the HTTP status that says why.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    /// For 409: the document as currently stored.
    public var current: JSONValue?

    public init(_ status: Int, _ message: String, current: JSONValue? = nil) {
        self.status = status
        self.message = message
        self.current = current
    }

    public var description: String { message }
}

/// The reference endpoint's documents, in one SQLite file (embedded, WAL).
///
/// Every stored document carries the server-owned fields `updated_at` (RFC 3339 UTC, ms), `rev`
/// (per-document, strictly increasing) and, for tombstones, `deleted_at`. A global change sequence
/// `seq` orders all writes; documents are never hard-deleted (sync-ios's tombstones).
public struct DocumentStore: Sendable {
    let writer: DatabasePool
    /// Largest stored body, bytes (the server's own fields aside): checked on every route.
    let maxDocumentBytes: Int

    /// This store's identity, made with it: sent with every reply (`X-Docsync-Store`), so an
    /// agent can tell a new or replaced server from the one it synced with.
    public let storeID: String
    private let storage: StorageGuard

    public init(path: String, maxDocumentBytes: Int = ProtocolLimits.maxDocumentBytes) throws {
        self.maxDocumentBytes = maxDocumentBytes
        SQLiteSetup.prepare()
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        writer = try DatabasePool(path: path, configuration: config)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE document (
                    id TEXT PRIMARY KEY NOT NULL,
                    doc_type TEXT NOT NULL,
                    body TEXT NOT NULL,          -- the stored document, compact JSON, literal numbers
                    rev INTEGER NOT NULL,
                    seq INTEGER NOT NULL,        -- global change sequence of the latest write
                    updated_at INTEGER NOT NULL, -- Unix ms
                    deleted_at INTEGER,          -- Unix ms, NULL while live
                    created_at INTEGER NOT NULL,
                    stored_at INTEGER NOT NULL,  -- Unix ns of the latest write (for latency measurements)
                    writer TEXT                  -- X-Docsync-Client of the latest write: not echoed back to it
                );
                CREATE INDEX document_type ON document(doc_type, id);
                CREATE UNIQUE INDEX document_seq ON document(seq);
                """)
        }
        migrator.registerMigration("v2-uploads") { db in
            try db.execute(sql: """
                CREATE TABLE blob (
                    sha256 TEXT PRIMARY KEY NOT NULL, -- the content's address: uploads/<sha256[0..2]>/<sha256>
                    size INTEGER NOT NULL,
                    content_type TEXT NOT NULL,       -- from the first upload of these bytes
                    stored_at INTEGER NOT NULL        -- Unix ms
                );
                """)
        }
        migrator.registerMigration("v3-tombstone-index") { db in
            // `/api/stats` counts tombstones from this small index instead of reading every row.
            try db.execute(sql: "CREATE INDEX document_tombstone ON document(seq) WHERE deleted_at IS NOT NULL")
        }
        migrator.registerMigration("v4-store-id") { db in
            try db.execute(sql: "CREATE TABLE store_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")
            try db.execute(sql: "INSERT INTO store_meta (key, value) VALUES ('store_id', ?)", arguments: [UUID().uuidString.lowercased()])
        }
        try migrator.migrate(writer)
        storeID = try writer.read { db in try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'store_id'") } ?? ""
        storage = try StorageGuard(path: path)
    }

    /// A transaction, once the database file is known to be still where it was opened.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try storage.check()
        return try await writer.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try storage.check()
        return try await writer.read(body)
    }

    /// Validates a document the client sent: an object with a string `docType` and, when
    /// `requireID`, a safe string `id`.
    /// `measureDepth`: the caller's parse could not rule out nesting deeper than
    /// ``ProtocolLimits/maxDocumentDepth`` (it is checked here, per document, so one deep document
    /// in a batch is refused alone).
    static func validate(_ value: JSONValue, requireID: Bool, measureDepth: Bool = false) throws(StoreError) -> JSONObject {
        guard case .object(let object) = value else { throw StoreError(400, "the document must be a JSON object, not \(value.kindName)") }
        if measureDepth, value.containerDepth > ProtocolLimits.maxDocumentDepth {
            throw StoreError(400, "the document is nested deeper than \(ProtocolLimits.maxDocumentDepth) levels")
        }
        guard let docType = object["docType"] else { throw StoreError(400, "the document has no \"docType\"") }
        guard case .string(let type) = docType else { throw StoreError(400, "\"docType\" must be a string") }
        if let why = DocumentRules.docTypeProblem(type) { throw StoreError(400, "invalid \"docType\": \(why)") }
        if let id = object["id"] {
            guard case .string(let s) = id, DocumentRules.isSafeIdentifier(s) else {
                throw StoreError(400, "\"id\" must be a string of letters, digits, '_' and '-' (at most 128)")
            }
        } else if requireID {
            throw StoreError(400, "the document has no \"id\"")
        }
        return object
    }

    /// Upserts `object` by id. `ifMatch` (the revision the write was based on) makes it conditional.
    public func put(_ object: JSONObject, now: Int64, ifMatch: Int64? = nil, mustCreate: Bool = false, client: String? = nil) async throws -> JSONObject {
        try await write { db in
            try Self.put(
                object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, client: client, seq: Self.latestSeq(db) + 1, maxBytes: maxDocumentBytes, db: db)
        }
    }

    /// The latest change sequence, inside a transaction.
    static func latestSeq(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT COALESCE(MAX(seq), 0) FROM document")) ?? 0
    }

    /// Stores `input` as change `seq` (one past the latest: a batch reads the latest once and counts on).
    static func put(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String? = nil, seq: Int64,
        maxBytes: Int = ProtocolLimits.maxDocumentBytes, db: Database
    ) throws -> JSONObject {
        var object = input
        let id = object["id"]!.string!
        // The stored body is read only to report a conflict. The statements of this path (once per
        // document of a batch) bind and read through SQLite's C API (see `RawStatement`).
        let existingRev: Int64?
        do {
            let s = try RawStatement(db, cached: "SELECT rev FROM document WHERE id = ?")
            s.bind(1, id)
            existingRev = try s.step() ? s.int64(0) : nil
        }
        func current() throws -> JSONValue? {
            try String.fetchOne(db.cachedStatement(sql: "SELECT body FROM document WHERE id = ?"), arguments: [id]).map { try JSONParser.parse($0) }
        }
        if mustCreate, existingRev != nil {
            throw StoreError(409, "a document with id \(id) exists already; PUT updates it", current: try current())
        }
        if let ifMatch {
            let currentRev = existingRev ?? 0
            if currentRev != ifMatch {
                throw StoreError(409, "revision \(ifMatch) is not current (current: \(currentRev))", current: try current())
            }
        }
        let rev = (existingRev ?? 0) + 1
        // The change's own time, if the client stamped one (offline work is stamped when it was
        // made, in server-calibrated time) and it is not in the future; otherwise now.
        let updatedAt = stamp(object[DocumentRules.updatedAtKey], now: now) ?? now
        object[DocumentRules.updatedAtKey] = .string(Timestamp(unixMilliseconds: updatedAt).rfc3339)
        var deletedAt: Int64?
        if let d = object[DocumentRules.deletedAtKey], !d.isNull {
            deletedAt = stamp(d, now: now) ?? now
            object[DocumentRules.deletedAtKey] = .string(Timestamp(unixMilliseconds: deletedAt!).rfc3339)
        } else {
            object[DocumentRules.deletedAtKey] = nil
        }
        object[DocumentRules.revKey] = .number(String(rev))
        let body = JSONWriter.string(.object(object))
        // Every route, the batch call included: what is stored is what any agent can take back.
        if body.utf8.count > maxBytes + ProtocolLimits.envelopeSlack {
            throw StoreError(413, "the document is \(body.utf8.count) bytes, over the limit of \(maxBytes)")
        }
        // `created_at` is written by the insert only: an update keeps the first one.
        let s = try RawStatement(db, cached: """
            INSERT INTO document (id, doc_type, body, rev, seq, updated_at, deleted_at, created_at, stored_at, writer)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET doc_type = excluded.doc_type, body = excluded.body, rev = excluded.rev,
                seq = excluded.seq, updated_at = excluded.updated_at, deleted_at = excluded.deleted_at,
                stored_at = excluded.stored_at, writer = excluded.writer
            """)
        s.bind(1, id)
        s.bind(2, object["docType"]!.string!)
        s.bind(3, body)
        s.bind(4, rev)
        s.bind(5, seq)
        s.bind(6, updatedAt)
        s.bind(7, deletedAt)
        s.bind(8, now)
        s.bind(9, storedAtNanoseconds())
        s.bind(10, client)
        try s.run()
        return object
    }

    /// The outcome of one `/api/sync` call.
    public struct SyncOutcome: Sendable {
        /// Stored versions of the documents the request sent.
        public var stored: [JSONObject] = []
        public var errors: [JSONObject] = []
        /// Documents changed since the cursor that the request did not send itself.
        public var changes: [String] = []
        public var cursor: Int64 = 0
        /// More changes wait beyond `cursor` (ask again).
        public var more = false
    }

    /// sync-rails' batch call: upserts every document (each may carry `rev`, the revision it was
    /// based on), then lists what changed since `since`, all in one transaction so the cursor
    /// never skips a concurrent write.
    /// `client` (the `X-Docsync-Client` header) leaves out changes whose latest write was its own.
    public func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int = ProtocolLimits.maxPageBytes, client: String? = nil,
        measureDepth: Bool = false
    ) async throws -> SyncOutcome {
        try await write { db in
            var outcome = SyncOutcome()
            var sent = Set<String>()
            var seq = try Self.latestSeq(db)
            for value in documents {
                let id = value.object?["id"]?.string
                do {
                    let object = try Self.validate(value, requireID: true, measureDepth: measureDepth)
                    var base: Int64?
                    if case .number(let rev)? = object[DocumentRules.revKey] { base = Int64(rev) }
                    sent.insert(id!)
                    outcome.stored.append(try Self.put(
                        object, now: now, ifMatch: base, mustCreate: false, client: client, seq: seq + 1, maxBytes: maxDocumentBytes, db: db))
                    seq += 1
                } catch let error as StoreError {
                    var entry = JSONObject([(key: "id", value: id.map { .string($0) } ?? .null), (key: "message", value: .string(error.message))])
                    if let current = error.current { entry["current"] = current }
                    outcome.errors.append(entry)
                }
            }
            // A client's own writes (this call's among them) are skipped in the query, not read
            // and dropped: a batch would otherwise read back every document it just stored.
            // Rows are read one at a time, and the page ends at `limit` documents or once its
            // bodies pass `maxBytes` (at least one document a page, so a large one still moves the
            // cursor): a reply is at most `maxBytes` plus one document.
            let rows = try Row.fetchCursor(
                db,
                sql: client == nil
                    ? "SELECT id, body, seq FROM document WHERE seq > ? ORDER BY seq LIMIT ?"
                    : "SELECT id, body, seq FROM document WHERE seq > ? AND writer IS NOT ? ORDER BY seq LIMIT ?",
                arguments: client.map { [since, $0, limit + 1] } ?? [since, limit + 1])
            var (taken, bytes, last) = (0, 0, since)
            while let row = try rows.next() {
                if taken == limit || (taken > 0 && bytes >= maxBytes) {
                    outcome.more = true
                    break
                }
                taken += 1
                last = row[2]
                let id: String = row[0]
                if !sent.contains(id) {
                    let body: String = row[1]
                    bytes += body.utf8.count
                    outcome.changes.append(body)
                }
            }
            // A `since` past the latest change comes from a client that synced with another store,
            // or with this one before it was restored from an older copy: the cursor it gets back
            // is lower than the one it sent, which tells it to reconcile in full.
            outcome.cursor = outcome.more ? last : seq
            return outcome
        }
    }

    /// FileUpload's last step: records the blob (once per content) and sets `property` of the target
    /// document to `url`, as a new revision, in one transaction. The blob's file must already be in
    /// place; a crash before the commit leaves an unreferenced file that the next upload of the same
    /// bytes adopts.
    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client: String?
    ) async throws -> JSONObject {
        try await write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT body, doc_type, deleted_at FROM document WHERE id = ?", arguments: [id]) else {
                throw StoreError(404, "no document with id \(id) to attach the file to")
            }
            guard row["doc_type"] == docType else {
                throw StoreError(400, "document \(id) has docType \(row["doc_type"] as String), not \(docType)")
            }
            guard row["deleted_at"] as Int64? == nil else { throw StoreError(404, "document \(id) is deleted") }
            guard case .object(var object) = try JSONParser.parse(row["body"] as String) else { throw StoreError(500, "corrupt stored document") }
            try db.execute(
                sql: "INSERT INTO blob (sha256, size, content_type, stored_at) VALUES (?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING",
                arguments: [blob.sha256, blob.size, blob.contentType, now])
            object[property] = .string(url)
            // The document's own change time stays; the revision and sequence move on.
            return try Self.put(object, now: now, ifMatch: nil, mustCreate: false, client: client, seq: Self.latestSeq(db) + 1, maxBytes: maxDocumentBytes, db: db)
        }
    }

    /// What the store knows of the blob with this address.
    public func blob(sha256: String) async throws -> StoredBlob? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT sha256, size, content_type FROM blob WHERE sha256 = ?", arguments: [sha256])
                .map { StoredBlob(sha256: $0["sha256"], size: $0["size"], contentType: $0["content_type"]) }
        }
    }

    /// How many distinct blobs are stored (for `/api/stats`).
    public func blobCount() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM blob") ?? 0 }
    }

    /// The latest change sequence.
    public func latestSeq() async throws -> Int64 {
        try await read { db in try Self.latestSeq(db) }
    }

    /// Marks a document deleted (a tombstone: the document is kept with `deleted_at`).
    public func delete(id: String, docType: String, now: Int64) async throws -> JSONObject {
        try await write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT body, doc_type FROM document WHERE id = ?", arguments: [id]) else {
                throw StoreError(404, "no document with id \(id)")
            }
            guard row["doc_type"] == docType else { throw StoreError(400, "document \(id) has docType \(row["doc_type"] as String), not \(docType)") }
            guard case .object(var object) = try JSONParser.parse(row["body"] as String) else { throw StoreError(500, "corrupt stored document") }
            if let d = object[DocumentRules.deletedAtKey], !d.isNull { return object }  // already a tombstone
            object[DocumentRules.deletedAtKey] = .string(Timestamp(unixMilliseconds: now).rfc3339)
            object[DocumentRules.updatedAtKey] = nil
            return try Self.put(object, now: now, ifMatch: nil, mustCreate: false, seq: Self.latestSeq(db) + 1, maxBytes: maxDocumentBytes, db: db)
        }
    }

    public func get(id: String) async throws -> JSONValue? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT body FROM document WHERE id = ?", arguments: [id]).map { try JSONParser.parse($0) }
        }
    }

    /// The stored bodies of one docType, ordered by id, as raw JSON texts (no re-serialisation).
    public func list(docType: String, includeDeleted: Bool) async throws -> [String] {
        try await read { db in
            try String.fetchAll(
                db,
                sql: "SELECT body FROM document WHERE doc_type = ? \(includeDeleted ? "" : "AND deleted_at IS NULL") ORDER BY id",
                arguments: [docType])
        }
    }

    /// Counts for `/api/stats`: all documents, tombstones, and the latest change sequence.
    public func stats() async throws -> (documents: Int, tombstones: Int, seq: Int64) {
        try await read { db in
            // Each count from an index: a full scan would read every document's body.
            let row = try Row.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM document) AS n,
                       (SELECT COUNT(*) FROM document WHERE deleted_at IS NOT NULL) AS t,
                       (SELECT COALESCE(MAX(seq), 0) FROM document) AS s
                """)!
            return (row["n"], row["t"], row["s"])
        }
    }

    /// A client stamp the store accepts: a well-formed RFC 3339 time no later than `now` (+2 s for
    /// rounding and calibration error). A stamp from the future is replaced by `now`.
    static func stamp(_ value: JSONValue?, now: Int64) -> Int64? {
        guard let s = value?.string, let t = Timestamp(rfc3339: s) else { return nil }
        return t.unixMilliseconds <= now + 2000 ? min(t.unixMilliseconds, now) : nil
    }
}

/// One stored upload: its content address, length and media type.
public struct StoredBlob: Sendable, Hashable {
    public var sha256: String
    public var size: Int64
    public var contentType: String

    public init(sha256: String, size: Int64, contentType: String) {
        self.sha256 = sha256
        self.size = size
        self.contentType = contentType
    }
}

/// The real clock's Unix nanoseconds: when a write was stored, for measuring sync latency.
func storedAtNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
