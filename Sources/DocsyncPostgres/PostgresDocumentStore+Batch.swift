import DocsyncModel
import DocsyncStore
import Logging
import PostgresNIO

/// A batch's writes in a fixed number of statements, whatever its size: the documents' locks, one
/// read of their revisions, the rules applied here in the batch's order, then one statement that
/// takes as many change numbers as rows and stores them all.
///
/// Written one at a time, a batch of 500 made a thousand round trips, and held the counter (every
/// writer's turn, see the type) from its first row to its commit; the other node's writers waited
/// all that while.
extension PostgresDocumentStore {
    /// One of the batch's documents: what it asked, and what the rules made of it.
    struct BatchEntry {
        let object: JSONObject
        let base: Int64?
    }

    /// Writes `entries` in order (a later entry of the same id sees the earlier one's revision);
    /// returns, in the same order, what was stored or why not.
    static func putBatch(
        _ entries: [BatchEntry], now: Int64, writer: String?, maxBytes: Int, access: Access = .everything, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> [Result<JSONObject, StoreError>] {
        guard !entries.isEmpty else { return [] }
        let ids = entries.map { $0.object["id"]?.string ?? "" }
        try await lockDocuments(ids, connection, logger: logger)
        var revisions = try await existing(ids, connection, logger: logger)
        var written: [String: StoreRules.Version] = [:]
        var order: [String] = []
        var results: [Result<JSONObject, StoreError>] = []
        for (id, entry) in zip(ids, entries) {
            do {
                let version = try StoreRules.write(
                    entry.object, existing: revisions[id], ifMatch: entry.base, mustCreate: false, now: now, maxBytes: maxBytes, access: access)
                revisions[id] = StoreRules.Existing(rev: version.rev, docType: version.docType)
                // Numbered at its last write, as one write after another would have it.
                if written.updateValue(version, forKey: id) != nil { order.removeAll { $0 == id } }
                order.append(id)
                results.append(.success(version.object))
            } catch {
                guard error.kind == .conflict else {
                    results.append(.failure(error))
                    continue
                }
                let current = try await stored(id, earlier: written[id], writer: writer, connection, logger: logger)
                results.append(.failure(error.holding(current.body, writtenBy: current.writer, asking: writer, access: access)))
            }
        }
        try await insert(order.compactMap { written[$0] }, now: now, writer: writer, connection, logger: logger)
        return results
    }

    /// The revisions and docTypes stored for `ids` (those without a row are missing).
    private static func existing(_ ids: [String], _ connection: PostgresConnection, logger: Logger) async throws -> [String: StoreRules.Existing] {
        var found: [String: StoreRules.Existing] = [:]
        let rows = try await connection.query("SELECT id, rev, doc_type FROM document WHERE id = ANY(\(ids)::text[])", logger: logger)
        for try await (id, rev, type) in rows.decode((String, Int64, String).self) { found[id] = StoreRules.Existing(rev: rev, docType: type) }
        return found
    }

    /// What a conflicting write is told is there: the version this batch wrote before it, else the row.
    static func stored(
        _ id: String, earlier: StoreRules.Version?, writer: String?, _ connection: PostgresConnection, logger: Logger
    ) async throws -> (body: JSONValue?, writer: String?) {
        if let earlier { return (.object(earlier.object), writer) }
        let rows = try await connection.query("SELECT body, writer FROM document WHERE id = \(id)", logger: logger)
        for try await (body, by) in rows.decode((String, String?).self) { return (try JSONParser.parse(body), by) }
        return (nil, nil)
    }

    /// Stores `versions` (one per id) with consecutive change numbers taken from the counter in
    /// the same statement. A row that another write overtook is not stored: the transaction runs again.
    private static func insert(_ versions: [StoreRules.Version], now: Int64, writer: String?, _ connection: PostgresConnection, logger: Logger) async throws {
        guard !versions.isEmpty else { return }
        let count = Int64(versions.count)
        let storedAt = storedNow()
        // `deleted_at` travels as a number; this one stands for none.
        let none = Int64.min
        let rows = try await connection.query("""
            WITH c AS (UPDATE docsync_counter SET seq = seq + \(count) WHERE id = 1 RETURNING seq),
            v AS (SELECT * FROM unnest(\(versions.map(\.id))::text[], \(versions.map(\.docType))::text[], \(versions.map(\.body))::text[],
                    \(versions.map(\.rev))::int8[], \(versions.map(\.updatedAt))::int8[], \(versions.map { $0.deletedAt ?? none })::int8[])
                  WITH ORDINALITY AS v(id, doc_type, body, rev, updated_at, deleted_at, k)),
            i AS (
                INSERT INTO \(unescaped: documentColumns)
                SELECT v.id, v.doc_type, v.body, v.rev, c.seq - \(count) + v.k, v.updated_at, NULLIF(v.deleted_at, \(none)), \(now), \(storedAt), \(writer)
                FROM v, c ORDER BY v.k
                \(unescaped: replacingRow)
                WHERE document.rev < excluded.rev
                RETURNING 1)
            SELECT count(*) FROM i
            """, logger: logger)
        var stored: Int64 = 0
        for try await n in rows.decode(Int64.self) { stored = n }
        guard stored == count else { throw WriteRace() }
    }
}
