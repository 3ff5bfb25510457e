import DocsyncStore
import Logging
import PostgresNIO

/// Tombstone retention on PostgreSQL: the same horizon as the SQLite store's, kept in
/// `docsync_meta`, moved only forwards whatever server of several purges.
extension PostgresDocumentStore {
    public func purgeTombstones(deletedBefore cutoff: Int64) async throws -> Int {
        try await transaction { connection in
            let rows = try await connection.query("""
                WITH gone AS (DELETE FROM document WHERE deleted_at IS NOT NULL AND deleted_at < \(cutoff) RETURNING seq)
                SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM gone
                """, logger: self.logger)
            var (purged, top) = (Int64(0), Int64(0))
            for try await (n, seq) in rows.decode((Int64, Int64).self) { (purged, top) = (n, seq) }
            if purged > 0 { try await Self.raise("purge_horizon", to: top, connection, logger: self.logger) }
            try await Self.raise("purged_before", to: cutoff, connection, logger: self.logger)
            return Int(purged)
        }
    }

    /// Sets `key` to `value` unless it already holds a larger one.
    static func raise(_ key: String, to value: Int64, _ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query("""
            INSERT INTO docsync_meta (key, value) VALUES (\(key), \(String(value)))
            ON CONFLICT (key) DO UPDATE SET value = GREATEST(docsync_meta.value::bigint, excluded.value::bigint)::text
            RETURNING value
            """, logger: logger)
        for try await _ in rows.decode(String.self) {}
    }

    /// The purge horizon and time (see ``SyncOutcome``), 0 while nothing was purged.
    static func horizon(_ connection: PostgresConnection, logger: Logger) async throws -> (Int64, Int64) {
        var (horizon, before) = (Int64(0), Int64(0))
        let rows = try await connection.query(
            "SELECT key, value FROM docsync_meta WHERE key IN ('purge_horizon', 'purged_before')", logger: logger)
        for try await (key, value) in rows.decode((String, String).self) {
            if key == "purge_horizon" { horizon = Int64(value) ?? 0 } else { before = Int64(value) ?? 0 }
        }
        return (horizon, before)
    }
}
