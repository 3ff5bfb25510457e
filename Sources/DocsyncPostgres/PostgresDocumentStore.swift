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
/// The counter is every writer's bottleneck, so it is taken last and held briefly. A single write
/// reads the revision and applies the rules, then takes the number, stores the row (only if the
/// revision is still the one it read) and notifies in one statement that commits on its own.
/// Batches, deletions and attachments run in a transaction that first takes its documents' locks
/// (transaction-level advisory locks named after the ids, so a document not yet created has one
/// too; several in one order) and stores last. Every writer takes the counter before a document's
/// row, and document locks before either, so no two can wait on each other in a circle.
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
                if attempt < Self.attempts, cause is WriteRace { continue }
                if attempt < Self.attempts, let psql = cause as? PSQLError, let state = psql.serverInfo?[.sqlState], ["40P01", "40001"].contains(state) {
                    continue
                }
                if cause is WriteRace { throw Self.keptRacing }
                if let cause = error.closureError { throw cause }
                throw error
            }
        }
    }

    // MARK: - Writes

    /// The row every write stores: `INSERT INTO` these columns, in this order.
    static let documentColumns = "document (id, doc_type, body, rev, seq, updated_at, deleted_at, created_at, stored_at, writer)"

    /// What a write over a stored row replaces (the single write and the batch add the condition
    /// under which it may).
    static let replacingRow = """
        ON CONFLICT (id) DO UPDATE SET doc_type = excluded.doc_type, body = excluded.body, rev = excluded.rev, seq = excluded.seq,
            updated_at = excluded.updated_at, deleted_at = excluded.deleted_at, stored_at = excluded.stored_at, writer = excluded.writer
        """

    /// When a row is stored, in nanoseconds since 1970.
    static func storedNow() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000_000) }

    /// Takes the locks of documents `ids` (until the transaction ends), in the order of their
    /// lock numbers: PostgreSQL runs a volatile function after the sort its query asks for.
    static func lockDocuments(_ ids: [String], _ connection: PostgresConnection, logger: Logger) async throws {
        let query: PostgresQuery = """
            SELECT pg_advisory_xact_lock(1, h)::text FROM (SELECT DISTINCT hashtext(x) AS h FROM unnest(\(ids)::text[]) AS x) AS l ORDER BY h
            """
        // Read to the end: a statement's error (a deadlock broken here) comes with its rows.
        for try await _ in try await connection.query(query, logger: logger) {}
    }

    /// The document's revision and docType (`nil` without a row); read once its lock is held, so it is current.
    static func existing(_ id: String, _ connection: PostgresConnection, logger: Logger) async throws -> StoreRules.Existing? {
        let rows = try await connection.query("SELECT rev, doc_type FROM document WHERE id = \(id)", logger: logger)
        for try await (rev, type) in rows.decode((Int64, String).self) { return StoreRules.Existing(rev: rev, docType: type) }
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

    public func delete(id: String, docType: String, now: Int64, author: String?, access: Access) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            try await Self.lockDocuments([id], connection, logger: self.logger)
            var row: (String, String)?
            for try await r in try await connection.query("SELECT body, doc_type FROM document WHERE id = \(id)", logger: self.logger)
                .decode((String, String).self) { row = r }
            guard let (body, storedType) = row else { throw StoreError(.notFound, "no document with id \(id)") }
            guard let object = try StoreRules.tombstone(
                of: body, storedType: storedType, id: id, docType: docType, now: now, author: author, access: access) else {
                guard case .object(let tombstone) = try JSONParser.parse(body) else { throw StoreError(.failed, "corrupt stored document") }
                return tombstone
            }
            return try await Self.putHoldingLock(
                object, now: now, ifMatch: nil, mustCreate: false, writer: nil, maxBytes: maxBytes, on: connection, logger: self.logger)
        }
    }

    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client writer: String?, author: String?,
        access: Access
    ) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            try await Self.lockDocuments([id], connection, logger: self.logger)
            var row: (String, String, Int64?)?
            for try await r in try await connection.query(
                "SELECT body, doc_type, deleted_at FROM document WHERE id = \(id)", logger: self.logger).decode((String, String, Int64?).self) { row = r }
            guard let (body, storedType, deletedAt) = row else { throw StoreError(.notFound, "no document with id \(id) to attach the file to") }
            let object = try StoreRules.attaching(
                url, as: property, to: body, storedType: storedType, deleted: deletedAt != nil, id: id, docType: docType, author: author, access: access)
            try await connection.query("""
                INSERT INTO blob (sha256, size, content_type, stored_at) VALUES (\(blob.sha256), \(blob.size), \(blob.contentType), \(now))
                ON CONFLICT (sha256) DO NOTHING
                """, logger: self.logger)
            try await connection.query(
                "INSERT INTO blob_use (sha256, doc_type) VALUES (\(blob.sha256), \(storedType)) ON CONFLICT DO NOTHING", logger: self.logger)
            return try await Self.putHoldingLock(
                object, now: now, ifMatch: nil, mustCreate: false, writer: writer, maxBytes: maxBytes, on: connection, logger: self.logger)
        }
    }
}
