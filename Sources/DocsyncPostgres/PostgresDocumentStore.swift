import DocsyncModel
import DocsyncServer
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
    public func close() { running.cancel() }

    /// `body` in a transaction; its own error comes out as it was thrown (a refusal stays a
    /// ``StoreError``), not wrapped in postgres-nio's.
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> sending T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger, body)
        } catch let error as PostgresTransactionError {
            if let cause = error.closureError { throw cause }
            throw error
        }
    }

    // MARK: - Writes

    public func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client writer: String?) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            let stored = try await Self.put(
                object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, writer: writer, maxBytes: maxBytes, on: connection, logger: self.logger)
            try await Self.notify(connection, logger: self.logger)
            return stored
        }
    }

    /// One write inside a transaction: the next change number, the revision rules, the row.
    static func put(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, writer: String?, maxBytes: Int, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> JSONObject {
        let id = input["id"]?.string ?? ""
        let seq = try await nextSeq(connection, logger: logger)
        var existing: Int64?
        for try await rev in try await connection.query("SELECT rev FROM document WHERE id = \(id) FOR UPDATE", logger: logger).decode(Int64.self) {
            existing = rev
        }
        let version: StoreRules.Version
        do {
            version = try StoreRules.write(input, existingRev: existing, ifMatch: ifMatch, mustCreate: mustCreate, now: now, maxBytes: maxBytes)
        } catch {
            guard error.status == 409 else { throw error }
            var current: JSONValue?
            for try await body in try await connection.query("SELECT body FROM document WHERE id = \(id)", logger: logger).decode(String.self) {
                current = try JSONParser.parse(body)
            }
            throw StoreError(error.status, error.message, current: current)
        }
        let storedAt = Int64(Date().timeIntervalSince1970 * 1_000_000_000)
        try await connection.query("""
            INSERT INTO document (id, doc_type, body, rev, seq, updated_at, deleted_at, created_at, stored_at, writer)
            VALUES (\(version.id), \(version.docType), \(version.body), \(version.rev), \(seq), \(version.updatedAt), \(version.deletedAt), \(now), \(storedAt), \(writer))
            ON CONFLICT (id) DO UPDATE SET doc_type = excluded.doc_type, body = excluded.body, rev = excluded.rev, seq = excluded.seq,
                updated_at = excluded.updated_at, deleted_at = excluded.deleted_at, stored_at = excluded.stored_at, writer = excluded.writer
            """, logger: logger)
        return version.object
    }

    /// The channel every node listens on: a write's transaction notifies it with the counter's
    /// value, delivered when it commits.
    static let channel = "docsync_changes"

    static func notify(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_notify('docsync_changes', (SELECT seq FROM docsync_counter WHERE id = 1)::text)", logger: logger)
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

    /// Takes the next change number (and the counter's lock, until the transaction ends).
    static func nextSeq(_ connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        for try await seq in try await connection.query("UPDATE docsync_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq", logger: logger).decode(Int64.self) {
            return seq
        }
        throw StoreError(500, "the change counter is missing")
    }

    public func delete(id: String, docType: String, now: Int64) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            var row: (String, String)?
            for try await r in try await connection.query("SELECT body, doc_type FROM document WHERE id = \(id) FOR UPDATE", logger: self.logger)
                .decode((String, String).self) { row = r }
            guard let (body, storedType) = row else { throw StoreError(404, "no document with id \(id)") }
            guard let object = try StoreRules.tombstone(of: body, storedType: storedType, id: id, docType: docType, now: now) else {
                guard case .object(let tombstone) = try JSONParser.parse(body) else { throw StoreError(500, "corrupt stored document") }
                return tombstone
            }
            let stored = try await Self.put(object, now: now, ifMatch: nil, mustCreate: false, writer: nil, maxBytes: maxBytes, on: connection, logger: self.logger)
            try await Self.notify(connection, logger: self.logger)
            return stored
        }
    }

    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client writer: String?
    ) async throws -> JSONObject {
        let maxBytes = maxDocumentBytes
        return try await transaction { connection in
            var row: (String, String, Int64?)?
            for try await r in try await connection.query(
                "SELECT body, doc_type, deleted_at FROM document WHERE id = \(id) FOR UPDATE", logger: self.logger).decode((String, String, Int64?).self) { row = r }
            guard let (body, storedType, deletedAt) = row else { throw StoreError(404, "no document with id \(id) to attach the file to") }
            let object = try StoreRules.attaching(url, as: property, to: body, storedType: storedType, deleted: deletedAt != nil, id: id, docType: docType)
            try await connection.query("""
                INSERT INTO blob (sha256, size, content_type, stored_at) VALUES (\(blob.sha256), \(blob.size), \(blob.contentType), \(now))
                ON CONFLICT (sha256) DO NOTHING
                """, logger: self.logger)
            let stored = try await Self.put(object, now: now, ifMatch: nil, mustCreate: false, writer: writer, maxBytes: maxBytes, on: connection, logger: self.logger)
            try await Self.notify(connection, logger: self.logger)
            return stored
        }
    }
}
