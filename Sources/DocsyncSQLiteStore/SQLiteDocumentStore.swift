import DocsyncStore
import DocsyncModel
import DocsyncSQL
import Foundation
import GRDB

/// The reference endpoint's documents in one SQLite file (embedded, WAL): the default store.
///
/// Every stored document carries the server-owned fields `updated_at` (RFC 3339 UTC, ms), `rev`
/// (per-document, strictly increasing) and, for tombstones, `deleted_at`. The change sequence
/// `seq` is one past the latest, taken inside SQLite's single writer, so it is in commit order.
public struct SQLiteDocumentStore: DocumentStore {
    let writer: DatabasePool
    /// Largest stored body, bytes (the server's own fields aside): checked on every route.
    let maxDocumentBytes: Int

    /// This store's identity, made with it: sent with every reply (`X-Docsync-Store`), so an
    /// agent can tell a new or replaced server from the one it synced with.
    public let storeID: String
    private let storage: StorageGuard
    private let scrubber: WALScrubber

    public init(path: String, maxDocumentBytes: Int = ProtocolLimits.maxDocumentBytes) throws {
        self.maxDocumentBytes = maxDocumentBytes
        SQLiteSetup.prepare()
        var config = Configuration()
        config.busyMode = .timeout(10)
        // secure_delete: a document's old body is overwritten, not left in a free page (see WALScrubber).
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL; PRAGMA secure_delete = ON") }
        writer = try DatabasePool(path: path, configuration: config)
        scrubber = WALScrubber(pool: writer)
        try Self.migrator.migrate(writer)
        storeID = try writer.read { db in try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'store_id'") } ?? ""
        storage = try StorageGuard(path: path)
    }

    /// Closes the pool's connections, which checkpoints the WAL into the database file. A pool
    /// left to its last reference closed whenever that went, and its checkpoint could unlink the
    /// `-wal` of a copy put in the same place meanwhile (a restore).
    public func close() async {
        scrubber.stop()
        try? writer.close()
    }

    /// A transaction, once the database file is known to be still where it was opened.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try storage.check()
        defer { scrubber.wrote() }
        return try await writer.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try storage.check()
        return try await writer.read(body)
    }

    /// Upserts `object` by id. `ifMatch` (the revision the write was based on) makes it conditional.
    public func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String?, access: Access) async throws -> JSONObject {
        try await write { db in
            try Self.put(
                object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, client: client, seq: Self.latestSeq(db) + 1, maxBytes: maxDocumentBytes,
                access: access, db: db)
        }
    }

    /// The latest change sequence, inside a transaction.
    static func latestSeq(_ db: Database) throws -> Int64 {
        // Never below the purge horizon: purging the latest change must not hand its number out again.
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT MAX(COALESCE((SELECT MAX(seq) FROM document), 0),
                       COALESCE((SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'purge_horizon'), 0))
            """)) ?? 0
    }

    /// Stores `input` as change `seq` (one past the latest: a batch reads the latest once and counts on).
    static func put(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String? = nil, seq: Int64,
        maxBytes: Int = ProtocolLimits.maxDocumentBytes, access: Access = .everything, db: Database
    ) throws -> JSONObject {
        let id = input["id"]?.string ?? ""
        // The statements of this path (once per document of a batch) bind and read through
        // SQLite's C API (see `RawStatement`).
        let existing: StoreRules.Existing?
        do {
            let s = try RawStatement(db, cached: "SELECT rev, doc_type FROM document WHERE id = ?")
            s.bind(1, id)
            existing = try s.step() ? StoreRules.Existing(rev: s.int64(0) ?? 0, docType: s.string(1)) : nil
        }
        let version: StoreRules.Version
        do {
            version = try StoreRules.write(
                input, existing: existing, ifMatch: ifMatch, mustCreate: mustCreate, now: now, maxBytes: maxBytes, access: access)
        } catch {
            guard error.kind == .conflict else { throw error }
            // The stored body is read only to report a conflict, and whether the caller wrote it.
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT body, writer FROM document WHERE id = ?"), arguments: [id])
            throw error.holding(try row.map { try JSONParser.parse($0[0] as String) }, writtenBy: row?[1], asking: client, access: access)
        }
        try save(version, seq: seq, now: now, client: client, db: db)
        return version.object
    }

    /// Upserts the row (`created_at` is written by the insert only: an update keeps the first one).
    private static func save(_ v: StoreRules.Version, seq: Int64, now: Int64, client: String?, db: Database) throws {
        let s = try RawStatement(db, cached: """
            INSERT INTO document (id, doc_type, body, rev, seq, updated_at, deleted_at, created_at, stored_at, writer)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET doc_type = excluded.doc_type, body = excluded.body, rev = excluded.rev,
                seq = excluded.seq, updated_at = excluded.updated_at, deleted_at = excluded.deleted_at,
                stored_at = excluded.stored_at, writer = excluded.writer
            """)
        s.bind(1, v.id)
        s.bind(2, v.docType)
        s.bind(3, v.body)
        s.bind(4, v.rev)
        s.bind(5, seq)
        s.bind(6, v.updatedAt)
        s.bind(7, v.deletedAt)
        s.bind(8, now)
        s.bind(9, storedAtNanoseconds())
        s.bind(10, client)
        try s.run()
    }

    public func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int, client: String?, selection: TypeSelection, measure: Bool,
        access: Access
    ) async throws -> SyncOutcome {
        let selection = access.readable(selection)
        return try await write { db in
            var outcome = SyncOutcome()
            var sent = Set<String>()
            var seq = try Self.latestSeq(db)
            for value in documents {
                let id = value.object?["id"]?.string
                do {
                    let (object, base) = try StoreRules.batchDocument(value, measure: measure)
                    sent.insert(id!)
                    outcome.stored.append(try Self.put(
                        object, now: now, ifMatch: base, mustCreate: false, client: client, seq: seq + 1, maxBytes: maxDocumentBytes, access: access,
                        db: db))
                    seq += 1
                } catch let error as StoreError {
                    outcome.errors.append(StoreRules.batchError(id: id, error))
                }
            }
            var page = ChangePage(since: since, limit: limit, maxBytes: maxBytes, sent: sent)
            page.admit(currents: &outcome.errors)
            try Self.fill(&page, since: since, client: client, selection: selection, db: db)
            outcome.changes = page.changes
            outcome.more = page.more
            outcome.cursor = page.cursor(latest: seq)
            outcome.latest = seq
            (outcome.horizon, outcome.purgedBefore) = try Self.horizon(db)
            return outcome
        }
    }

    public func purgeTombstones(deletedBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            let top = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM document WHERE deleted_at IS NOT NULL AND deleted_at < ?", arguments: [cutoff])
            let (horizon, before) = try Self.horizon(db)
            var purged = 0
            if let top {
                try db.execute(sql: "DELETE FROM document WHERE deleted_at IS NOT NULL AND deleted_at < ?", arguments: [cutoff])
                purged = db.changesCount
                try db.execute(sql: "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('purge_horizon', ?)", arguments: [String(max(horizon, top))])
            }
            if cutoff > before {
                try db.execute(sql: "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('purged_before', ?)", arguments: [String(cutoff)])
            }
            return purged
        }
    }

    /// The purge horizon and time (see ``SyncOutcome``), 0 while nothing was purged.
    static func horizon(_ db: Database) throws -> (Int64, Int64) {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT key, value FROM store_meta WHERE key IN ('purge_horizon', 'purged_before')"))
        func value(_ key: String) -> Int64 { rows.first { $0["key"] == key }.flatMap { Int64($0["value"] as String) } ?? 0 }
        return (value("purge_horizon"), value("purged_before"))
    }

    /// Feeds `page` the changes after `since`. A client's own writes (this call's among them) are
    /// skipped in the query, not read and dropped: a batch would otherwise read back every
    /// document it just stored.
    static func fill(_ page: inout ChangePage, since: Int64, client: String?, selection: TypeSelection, db: Database) throws {
        let writer = client == nil ? "" : " AND writer IS NOT ?"
        let clientArgument: [any DatabaseValueConvertible] = client.map { [$0] } ?? []
        if let only = selection.only {
            // A few types: each type's next change numbers from the (doc_type, seq, writer) index
            // alone (the writer tested there), merged; then the bodies of the first ones. Cost
            // follows those types' changes alone.
            var seqs: [Int64] = []
            for type in only where !selection.except.contains(type) {
                seqs += try Int64.fetchAll(
                    db.cachedStatement(sql: "SELECT seq FROM document WHERE doc_type = ? AND seq > ?\(writer) ORDER BY seq LIMIT ?"),
                    arguments: StatementArguments([type, since] + clientArgument + [page.limit + 1]))
            }
            seqs.sort()
            for seq in seqs.prefix(page.limit + 1) {
                guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, body FROM document WHERE seq = ?"), arguments: [seq]),
                      page.offer(id: row[0], body: row[1], seq: seq)
                else { break }
            }
            return
        }
        // Every type, or all but a few: the change sequence in order, those few left out.
        let except = selection.except.sorted()
        let notIn = except.isEmpty ? "" : " AND doc_type NOT IN (\(Array(repeating: "?", count: except.count).joined(separator: ",")))"
        let rows = try Row.fetchCursor(
            db, sql: "SELECT id, body, seq FROM document WHERE seq > ?\(writer)\(notIn) ORDER BY seq LIMIT ?",
            arguments: StatementArguments([since] + clientArgument + except + [page.limit + 1]))
        while let row = try rows.next(), page.offer(id: row[0], body: row[1], seq: row[2]) {}
    }

    /// FileUpload's last step: records the blob (once per content) and sets `property` of the target
    /// document to `url`, as a new revision, in one transaction. The blob's file must already be in
    /// place; a crash before the commit leaves an unreferenced file that the next upload of the same
    /// bytes adopts.
    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client: String?, author: String?, access: Access
    ) async throws -> JSONObject {
        try await write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT body, doc_type, deleted_at FROM document WHERE id = ?", arguments: [id]) else {
                throw StoreError(.notFound, "no document with id \(id) to attach the file to")
            }
            let object = try StoreRules.attaching(
                url, as: property, to: row["body"], storedType: row["doc_type"], deleted: row["deleted_at"] as Int64? != nil, id: id, docType: docType,
                author: author, access: access)
            try db.execute(
                sql: "INSERT INTO blob (sha256, size, content_type, stored_at) VALUES (?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING",
                arguments: [blob.sha256, blob.size, blob.contentType, now])
            try db.execute(sql: "INSERT OR IGNORE INTO blob_use (sha256, doc_type) VALUES (?, ?)", arguments: [blob.sha256, row["doc_type"] as String])
            // The document's own change time stays; the revision and sequence move on.
            return try Self.put(object, now: now, ifMatch: nil, mustCreate: false, client: client, seq: Self.latestSeq(db) + 1, maxBytes: maxDocumentBytes, db: db)
        }
    }

    public func delete(id: String, docType: String, now: Int64, author: String?, access: Access) async throws -> JSONObject {
        try await write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT body, doc_type FROM document WHERE id = ?", arguments: [id]) else {
                throw StoreError(.notFound, "no document with id \(id)")
            }
            let stored: String = row["body"]
            guard let object = try StoreRules.tombstone(
                of: stored, storedType: row["doc_type"], id: id, docType: docType, now: now, author: author, access: access) else {
                guard case .object(let tombstone) = try JSONParser.parse(stored) else { throw StoreError(.failed, "corrupt stored document") }
                return tombstone  // already a tombstone
            }
            return try Self.put(object, now: now, ifMatch: nil, mustCreate: false, seq: Self.latestSeq(db) + 1, maxBytes: maxDocumentBytes, db: db)
        }
    }

    /// What the store knows of the blob with this address.
    public func blob(sha256: String) async throws -> StoredBlob? {
        try await read { db in
            guard var blob = try Row.fetchOne(db, sql: "SELECT sha256, size, content_type FROM blob WHERE sha256 = ?", arguments: [sha256])
                .map({ StoredBlob(sha256: $0["sha256"], size: $0["size"], contentType: $0["content_type"]) }) else { return nil }
            blob.docTypes = Set(try String.fetchAll(db, sql: "SELECT doc_type FROM blob_use WHERE sha256 = ?", arguments: [sha256]))
            return blob
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
    public func get(id: String) async throws -> JSONValue? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT body FROM document WHERE id = ?", arguments: [id]).map { try JSONParser.parse($0) }
        }
    }

    /// A page of the stored bodies of one docType, ordered by id, as raw JSON texts (no
    /// re-serialisation).
    public func list(docType: String, includeDeleted: Bool, after: String, limit: Int) async throws -> [(id: String, body: String)] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT id, body FROM document INDEXED BY document_type WHERE doc_type = ? AND id > ? \(includeDeleted ? "" : "AND deleted_at IS NULL")
                    ORDER BY id LIMIT ?
                    """),
                arguments: [docType, after, limit]
            ).map { ($0["id"], $0["body"]) }
        }
    }

    /// Counts for `/api/stats`: all documents, tombstones, and the latest change sequence.
    public func stats() async throws -> StoreStats {
        try await read { db in
            // Each count from an index: a full scan would read every document's body.
            let row = try Row.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM document) AS n,
                       (SELECT COUNT(*) FROM document WHERE deleted_at IS NOT NULL) AS t
                """)!
            return StoreStats(documents: row["n"], tombstones: row["t"], seq: try Self.latestSeq(db))
        }
    }
}
