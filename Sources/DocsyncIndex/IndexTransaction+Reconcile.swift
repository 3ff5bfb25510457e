import DocsyncModel
import DocsyncSQL
import GRDB

/// A full reconcile against the server's live set, and tombstones the server no longer keeps.
///
/// When the server has purged tombstones this folder never saw, the agent pulls every document
/// from the start; the ids it receives are kept in `reconcile_seen` (on disk: a tree of any size);
/// afterwards the documents the server had and no longer lists are the ones deleted meanwhile.
extension IndexTransaction {
    /// Starts (or starts again) a reconcile: nothing seen yet.
    public func beginReconcile() throws {
        try db.execute(sql: "DELETE FROM reconcile_seen")
        try setMeta(.reconcile, "1")
    }

    public func isReconciling() throws -> Bool { try meta(.reconcile) != nil }

    public func markSeen(_ ids: some Sequence<String>) throws {
        let s = try db.cachedStatement(sql: "INSERT OR IGNORE INTO reconcile_seen (id) VALUES (?)")
        for id in ids { try s.execute(arguments: [id]) }
    }

    /// Documents the server acknowledged while a reconcile runs are on the server, though the
    /// reconcile's pull may have passed their place before they got there: they count as seen, or
    /// they would be taken for deletions.
    public func markSeenIfReconciling(_ ids: [String]) throws {
        guard !ids.isEmpty, try isReconciling() else { return }
        try markSeen(ids)
    }

    /// Up to `limit` live documents the server held (it acknowledged them) that the reconcile has
    /// not seen and that wait for nothing in the outbox: the ones deleted on the server meanwhile.
    public func unseenOnServer(limit: Int) throws -> [(id: String, docType: String)] {
        try Row.fetchAll(db, sql: """
            SELECT d.id, d.doc_type FROM document d
            WHERE d.deleted_at IS NULL
              AND (d.server_rev IS NOT NULL OR d.pushed_hash IS NOT NULL OR d.pushed_is_body = 1)
              AND NOT EXISTS (SELECT 1 FROM reconcile_seen r WHERE r.id = d.id)
              AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.doc_id = d.id)
            LIMIT ?
            """, arguments: [limit]).map { ($0[0], $0[1]) }
    }

    public func endReconcile() throws {
        try db.execute(sql: "DELETE FROM reconcile_seen")
        try setMeta(.reconcile, nil)
    }

    /// Forgets the tombstones deleted before `deletedBefore` (Unix ms) that the server has
    /// acknowledged and nothing waits on: the server has purged its own. Returns how many.
    @discardableResult
    public func forgetTombstones(deletedBefore: Int64) throws -> Int {
        let condition = """
            deleted_at IS NOT NULL AND deleted_at < ? AND state = 'synced'
              AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.doc_id = document.id)
            """
        try db.execute(sql: "DELETE FROM document_body WHERE doc IN (SELECT doc FROM document WHERE \(condition))", arguments: [deletedBefore])
        try db.execute(sql: "DELETE FROM document WHERE \(condition)", arguments: [deletedBefore])
        return db.changesCount
    }
}
