import DocsyncStore
import DocsyncModel
import Foundation
import Logging
import PostgresNIO

/// The reference endpoint's documents in PostgreSQL, for several `docsync serve` processes on one
/// database. The rules are ``StoreRules`` and ``ChangePage``, as for the SQLite store; this type
/// only stores.
///
/// The change sequence is a counter row updated inside each writing transaction: its row lock
/// makes writers take numbers one after another, and a writer keeps its lock until it commits,
/// so numbers commit in order and a reader that follows them never skips a write committed late
/// (a PostgreSQL sequence hands numbers out at once and they commit in any order). Bodies are
/// `text`: the client's key order and number literals are kept (`jsonb` would rewrite both).
///
/// The counter is every writer's bottleneck, so it is taken last and held briefly: a write first
/// takes its documents' locks (transaction-level advisory locks named after the ids, so a document
/// not yet created has one too; several in one order), reads the revision and applies the rules,
/// and only then takes the number, stores the row and notifies in one statement, and commits.
/// Every writer takes document locks before the counter and in the same order, so no two can wait
/// on each other in a circle.
public final class PostgresDocumentStore: DocumentStore {
    let client: PostgresClient
    let logger: Logger
    let maxDocumentBytes: Int
    public let storeID: String
    private let running: Task<Void, Never>

    /// Connects (the pool runs in the background) and creates the schema if it is missing.
    public init(configuration: PostgresClient.Configuration, maxDocumentBytes: Int = ProtocolLimits.maxDocumentBytes, logger: Logger) async throws {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        self.maxDocumentBytes = maxDocumentBytes
        self.running = Task { await client.run() }
        do {
            self.storeID = try await PostgresSchema.prepare(client, logger: logger)
        } catch {
            running.cancel()
            throw error
        }
    }

    deinit { running.cancel() }

    /// Stops the connection pool.
    public func close() async { running.cancel() }

    /// `body` in a transaction; its own error comes out as it was thrown (a refusal stays a
    /// ``StoreError``), not wrapped in postgres-nio's.
    /// A transaction PostgreSQL ended to break a deadlock or a serialization conflict is run again
    /// (a few times: each run is a fresh start).
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> sending T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await client.withTransaction(logger: logger, body)
            } catch let error as PostgresTransactionError {
                let cause = error.closureError ?? error.beginError ?? error.commitError
                if attempt < 5, cause is WriteRace { continue }
                if attempt < 5, let psql = cause as? PSQLError, let state = psql.serverInfo?[.sqlState], ["40P01", "40001"].contains(state) {
                    continue
                }
                if cause is WriteRace { throw StoreError(.unavailable, "the write kept meeting concurrent writes of the same document; try again") }
                if let cause = error.closureError { throw cause }
                throw error
            }
        }
    }

    // MARK: - Writes

    public func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client writer: String?) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            try await Self.put(
                object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, writer: writer, maxBytes: maxBytes, on: connection, logger: self.logger)
        }
    }

    /// One write inside a transaction: the document's lock, the revision rules, then the next
    /// change number (the counter's lock, held to the commit), the row and the notification in
    /// one statement. (A batch writes its rows in one statement of its own: `insert` in
    /// `PostgresDocumentStore+Batch.swift`; one row through it measured no faster, perhaps slower.)
    static func put(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, writer: String?, maxBytes: Int,
        locked: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws -> JSONObject {
        let id = input["id"]?.string ?? ""
        if !locked { try await lockDocuments([id], connection, logger: logger) }
        let existing = try await revision(id, connection, logger: logger)
        let version: StoreRules.Version
        do {
            version = try StoreRules.write(input, existingRev: existing, ifMatch: ifMatch, mustCreate: mustCreate, now: now, maxBytes: maxBytes)
        } catch {
            guard error.kind == .conflict else { throw error }
            let current = try await stored(id, earlier: nil, writer: writer, connection, logger: logger)
            throw error.holding(current.body, writtenBy: current.writer, asking: writer)
        }
        let storedAt = Int64(Date().timeIntervalSince1970 * 1_000_000_000)
        let rows = try await connection.query("""
            WITH c AS (UPDATE docsync_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq),
            i AS (
                INSERT INTO document (id, doc_type, body, rev, seq, updated_at, deleted_at, created_at, stored_at, writer)
                SELECT \(version.id), \(version.docType), \(version.body), \(version.rev), c.seq, \(version.updatedAt), \(version.deletedAt), \(now), \(storedAt), \(writer)
                FROM c
                ON CONFLICT (id) DO UPDATE SET doc_type = excluded.doc_type, body = excluded.body, rev = excluded.rev, seq = excluded.seq,
                    updated_at = excluded.updated_at, deleted_at = excluded.deleted_at, stored_at = excluded.stored_at, writer = excluded.writer
                WHERE document.rev < excluded.rev
                RETURNING seq)
            SELECT seq, pg_notify('docsync_changes', seq::text)::text FROM i
            """, logger: logger)
        var written = false
        for try await _ in rows.decode((Int64, String?).self) { written = true }
        // Nothing written: a revision as high was stored meanwhile (the document's lock should
        // make that impossible); the transaction runs again rather than lose either write.
        guard written else { throw WriteRace() }
        return version.object
    }

    /// Takes the locks of documents `ids` (until the transaction ends), in the order of their
    /// lock numbers: PostgreSQL runs a volatile function after the sort its query asks for.
    static func lockDocuments(_ ids: [String], _ connection: PostgresConnection, logger: Logger) async throws {
        let query: PostgresQuery = """
            SELECT pg_advisory_xact_lock(1, h)::text FROM (SELECT DISTINCT hashtext(x) AS h FROM unnest(\(ids)::text[]) AS x) AS l ORDER BY h
            """
        // Read to the end: a statement's error (a deadlock broken here) comes with its rows.
        for try await _ in try await connection.query(query, logger: logger) {}
    }

    /// The document's revision (`nil` without a row); read once its lock is held, so it is current.
    static func revision(_ id: String, _ connection: PostgresConnection, logger: Logger) async throws -> Int64? {
        for try await rev in try await connection.query("SELECT rev FROM document WHERE id = \(id)", logger: logger).decode(Int64.self) {
            return rev
        }
        return nil
    }

    /// A write that found its revision taken: its transaction is run again.
    struct WriteRace: Error {}

    /// The channel every node listens on: a write's transaction notifies it with the counter's
    /// value, delivered when it commits.
    static let channel = "docsync_changes"

    static func notify(_ connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.query("SELECT pg_notify('docsync_changes', (SELECT seq FROM docsync_counter WHERE id = 1)::text)", logger: logger) {}
    }

    public var followsExternalChanges: Bool { true }

    /// `LISTEN docsync_changes` on a connection of its own, again after a lost connection.
    public func followExternalChanges(_ published: @escaping @Sendable (Int64) -> Void) async throws {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notes in
                        for try await note in notes {
                            if let seq = Int64(note.payload) { published(seq) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("lost the database's change notifications; listening again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    public func delete(id: String, docType: String, now: Int64, author: String?) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            try await Self.lockDocuments([id], connection, logger: self.logger)
            var row: (String, String)?
            for try await r in try await connection.query("SELECT body, doc_type FROM document WHERE id = \(id)", logger: self.logger)
                .decode((String, String).self) { row = r }
            guard let (body, storedType) = row else { throw StoreError(.notFound, "no document with id \(id)") }
            guard let object = try StoreRules.tombstone(of: body, storedType: storedType, id: id, docType: docType, now: now, author: author) else {
                guard case .object(let tombstone) = try JSONParser.parse(body) else { throw StoreError(.failed, "corrupt stored document") }
                return tombstone
            }
            return try await Self.put(
                object, now: now, ifMatch: nil, mustCreate: false, writer: nil, maxBytes: maxBytes, locked: true, on: connection, logger: self.logger)
        }
    }

    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client writer: String?, author: String?
    ) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            try await Self.lockDocuments([id], connection, logger: self.logger)
            var row: (String, String, Int64?)?
            for try await r in try await connection.query(
                "SELECT body, doc_type, deleted_at FROM document WHERE id = \(id)", logger: self.logger).decode((String, String, Int64?).self) { row = r }
            guard let (body, storedType, deletedAt) = row else { throw StoreError(.notFound, "no document with id \(id) to attach the file to") }
            let object = try StoreRules.attaching(url, as: property, to: body, storedType: storedType, deleted: deletedAt != nil, id: id, docType: docType, author: author)
            try await connection.query("""
                INSERT INTO blob (sha256, size, content_type, stored_at) VALUES (\(blob.sha256), \(blob.size), \(blob.contentType), \(now))
                ON CONFLICT (sha256) DO NOTHING
                """, logger: self.logger)
            return try await Self.put(
                object, now: now, ifMatch: nil, mustCreate: false, writer: writer, maxBytes: maxBytes, locked: true, on: connection, logger: self.logger)
        }
    }
}
