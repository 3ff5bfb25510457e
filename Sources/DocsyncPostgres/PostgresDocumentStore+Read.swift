import DocsyncStore
import DocsyncModel
import Logging
import PostgresNIO

extension PostgresDocumentStore {
    /// A push writes and reads its page in one transaction; a pull (no documents) reads outside
    /// one, in three statements: the counter, the rows up to it, the purge horizon.
    public func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int, client writer: String?, selection: TypeSelection,
        measure: Bool, access: Access
    ) async throws -> SyncOutcome {
        let request = PageRequest(since: since, limit: limit, maxBytes: maxBytes, writer: writer, selection: access.readable(selection))
        guard !documents.isEmpty else {
            return try await client.withConnection { connection in
                var outcome = SyncOutcome()
                try await Self.readPage(request, sent: [], into: &outcome, connection, logger: self.logger)
                return outcome
            }
        }
        let maxDocument = maxDocumentBytes
        return try await transaction { connection in
            var outcome = SyncOutcome()
            var sent = Set<String>()
            // Each document's outcome in the batch's order: refused as it was read, or as written.
            var entries: [BatchEntry] = []
            var refused: [Int: JSONObject] = [:]
            for (position, value) in documents.enumerated() {
                let id = value.object?["id"]?.string
                do {
                    let (object, base) = try StoreRules.batchDocument(value, measure: measure)
                    sent.insert(id!)
                    entries.append(BatchEntry(object: object, base: base))
                } catch let error as StoreError {
                    refused[position] = StoreRules.batchError(id: id, error)
                }
            }
            var written = try await Self.putBatch(
                entries, now: now, writer: writer, maxBytes: maxDocument, access: access, on: connection, logger: self.logger).makeIterator()
            for position in documents.indices {
                if let error = refused[position] {
                    outcome.errors.append(error)
                    continue
                }
                switch written.next()! {
                case .success(let object): outcome.stored.append(object)
                case .failure(let error): outcome.errors.append(StoreRules.batchError(id: documents[position].object?["id"]?.string, error))
                }
            }
            try await Self.readPage(request, sent: sent, into: &outcome, connection, logger: self.logger)
            if !outcome.stored.isEmpty { try await Self.notify(connection, logger: self.logger) }
            return outcome
        }
    }

    /// What a page of changes is asked for.
    struct PageRequest {
        let since: Int64
        let limit: Int
        let maxBytes: Int
        let writer: String?
        let selection: TypeSelection
    }

    /// The changes after `request.since` into `outcome`: the page, the cursor and the horizon.
    static func readPage(_ request: PageRequest, sent: Set<String>, into outcome: inout SyncOutcome, _ connection: PostgresConnection, logger: Logger)
        async throws
    {
        // Every number up to the counter's committed value is committed (writers take them in
        // turn and hold the counter until they commit): the page stops there, so a write
        // committing meanwhile is left for the next call instead of being skipped.
        let latest = try await Self.latestSeq(connection, logger: logger)
        var page = ChangePage(since: request.since, limit: request.limit, maxBytes: request.maxBytes, sent: sent)
        page.admit(currents: &outcome.errors)
        // A client's own writes are left out in the query (no client: nothing is left out);
        // so are the docTypes not selected (an empty `only` array: every type).
        let (writer, selection) = (request.writer, request.selection)
        let only = selection.only.map { Array($0) } ?? []
        let except = Array(selection.except)
        let rows = try await connection.query("""
            SELECT id, body, seq FROM document WHERE seq > \(request.since) AND seq <= \(latest) AND (\(writer)::text IS NULL OR writer IS DISTINCT FROM \(writer))
            AND (\(selection.only == nil) OR doc_type = ANY(\(only)::text[])) AND NOT (doc_type = ANY(\(except)::text[]))
            ORDER BY seq LIMIT \(request.limit + 1)
            """, logger: logger)
        for try await (id, body, seq) in rows.decode((String, String, Int64).self) {
            if !page.offer(id: id, body: body, seq: seq) { break }
        }
        outcome.changes = page.changes
        outcome.more = page.more
        outcome.cursor = page.cursor(latest: latest)
        outcome.latest = latest
        // Read after the rows: a purge meanwhile shows as a horizon past the cursor (the client
        // reconciles), never as rows missing without one.
        (outcome.horizon, outcome.purgedBefore) = try await Self.horizon(connection, logger: logger)
    }

    static func latestSeq(_ connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        for try await seq in try await connection.query("SELECT seq FROM docsync_counter WHERE id = 1", logger: logger).decode(Int64.self) { return seq }
        return 0
    }

    public func latestSeq() async throws -> Int64 {
        try await client.withConnection { try await Self.latestSeq($0, logger: self.logger) }
    }

    public func get(id: String) async throws -> JSONValue? {
        for try await body in try await client.query("SELECT body FROM document WHERE id = \(id)", logger: logger).decode(String.self) {
            return try JSONParser.parse(body)
        }
        return nil
    }

    public func list(docType: String, includeDeleted: Bool, after: String, limit: Int) async throws -> [(id: String, body: String)] {
        var page: [(id: String, body: String)] = []
        let rows = includeDeleted
            ? try await client.query(
                "SELECT id, body FROM document WHERE doc_type = \(docType) AND id > \(after) ORDER BY id LIMIT \(limit)", logger: logger)
            : try await client.query(
                "SELECT id, body FROM document WHERE doc_type = \(docType) AND id > \(after) AND deleted_at IS NULL ORDER BY id LIMIT \(limit)",
                logger: logger)
        for try await (id, body) in rows.decode((String, String).self) { page.append((id, body)) }
        return page
    }

    public func blob(sha256: String) async throws -> StoredBlob? {
        let rows = try await client.query("SELECT sha256, size, content_type FROM blob WHERE sha256 = \(sha256)", logger: logger)
        var found: StoredBlob?
        for try await (sha, size, type) in rows.decode((String, Int64, String).self) { found = StoredBlob(sha256: sha, size: size, contentType: type) }
        guard var blob = found else { return nil }
        for try await type in try await client.query("SELECT doc_type FROM blob_use WHERE sha256 = \(sha256)", logger: logger).decode(String.self) {
            blob.docTypes.insert(type)
        }
        return blob
    }

    public func blobCount() async throws -> Int {
        for try await n in try await client.query("SELECT COUNT(*) FROM blob", logger: logger).decode(Int64.self) { return Int(n) }
        return 0
    }

    public func stats() async throws -> StoreStats {
        let rows = try await client.query("""
            SELECT (SELECT COUNT(*) FROM document), (SELECT COUNT(*) FROM document WHERE deleted_at IS NOT NULL),
                   (SELECT seq FROM docsync_counter WHERE id = 1)
            """, logger: logger)
        for try await (n, t, s) in rows.decode((Int64, Int64, Int64).self) { return StoreStats(documents: Int(n), tombstones: Int(t), seq: s) }
        return StoreStats(documents: 0, tombstones: 0, seq: 0)
    }
}

/// The tables, made once per database: by whichever node starts first (an advisory lock keeps
/// two nodes starting together from racing).
enum PostgresSchema {
    static func prepare(_ client: PostgresClient, logger: Logger) async throws -> String {
        try await client.withTransaction(logger: logger) { connection in
            for try await _ in try await connection.query("SELECT pg_advisory_xact_lock(7042771)::text", logger: logger) {}
            for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            for try await id in try await connection.query("SELECT value FROM docsync_meta WHERE key = 'store_id'", logger: logger).decode(String.self) {
                return id
            }
            throw StoreError(.failed, "the store has no id")
        }
    }

    static let statements = [
        "CREATE TABLE IF NOT EXISTS docsync_meta (key text PRIMARY KEY, value text NOT NULL)",
        "INSERT INTO docsync_meta (key, value) VALUES ('store_id', gen_random_uuid()::text) ON CONFLICT (key) DO NOTHING",
        "CREATE TABLE IF NOT EXISTS docsync_counter (id int PRIMARY KEY, seq bigint NOT NULL)",
        "INSERT INTO docsync_counter (id, seq) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
        """
        CREATE TABLE IF NOT EXISTS document (
            id text PRIMARY KEY, doc_type text NOT NULL,
            body text NOT NULL,  -- the exact text: key order and number literals kept
            rev bigint NOT NULL, seq bigint NOT NULL UNIQUE, updated_at bigint NOT NULL, deleted_at bigint,
            created_at bigint NOT NULL, stored_at bigint NOT NULL, writer text)
        """,
        "CREATE INDEX IF NOT EXISTS document_type ON document (doc_type, id)",
        "CREATE INDEX IF NOT EXISTS document_type_seq ON document (doc_type, seq)",
        "CREATE TABLE IF NOT EXISTS blob (sha256 text PRIMARY KEY, size bigint NOT NULL, content_type text NOT NULL, stored_at bigint NOT NULL)",
        // The docTypes each upload was attached to: who may fetch it (rights per token).
        "CREATE TABLE IF NOT EXISTS blob_use (sha256 text NOT NULL, doc_type text NOT NULL, PRIMARY KEY (sha256, doc_type))",
    ]
}
