import GRDB

/// Deletions from the server held until the user decides (migration v15): kept with the
/// tombstone itself, so the cursor can move past them and either decision can be carried out.
extension IndexTransaction {
    public struct HeldDeletion: Sendable, Hashable {
        public var id: String
        public var change: String
        public var rev: Int64?

        public init(id: String, change: String, rev: Int64?) {
            self.id = id
            self.change = change
            self.rev = rev
        }
    }

    public func holdDeletions(_ held: [HeldDeletion]) throws {
        let s = try db.cachedStatement(sql: """
            INSERT INTO held_deletion (id, change, rev) VALUES (?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET change = excluded.change, rev = excluded.rev
            """)
        for h in held { try s.execute(arguments: [h.id, h.change, h.rev]) }
    }

    public func heldDeletionCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM held_deletion") ?? 0
    }

    public func heldDeletions(limit: Int) throws -> [HeldDeletion] {
        try Row.fetchAll(db, sql: "SELECT id, change, rev FROM held_deletion ORDER BY id LIMIT ?", arguments: [limit])
            .map { HeldDeletion(id: $0[0], change: $0[1], rev: $0[2]) }
    }

    public func releaseHeld(ids: [String]) throws {
        let s = try db.cachedStatement(sql: "DELETE FROM held_deletion WHERE id = ?")
        for id in ids { try s.execute(arguments: [id]) }
    }
}

extension IndexTransaction {
    /// A held deletion the user refused: the document, still in the folder, goes to the server
    /// again, based on the tombstone's revision (`rev`), so it is stored over the deletion.
    public func restoreToServer(id: String, rev: Int64?, queuedAt now: Int64) throws {
        guard var doc = try document(id: id), doc.deletedAt == nil, doc.path != nil else { return }
        doc.serverRev = rev
        doc.state = .pending
        doc.updatedAt = now
        try upsertDocument(doc)
        try enqueue(key: .document(id), docID: id, kind: .put, payload: nil, bodyHash: doc.bodyHash, queuedAt: now)
    }

    /// How many live documents a reconcile would take for deleted on the server (see
    /// ``unseenOnServer(limit:)``): counted before any is trashed.
    public func unseenOnServerCount() throws -> Int {
        try Int.fetchOne(db, sql: """
            SELECT COUNT(*) FROM document d
            WHERE d.deleted_at IS NULL
              AND (d.server_rev IS NOT NULL OR d.pushed_hash IS NOT NULL OR d.pushed_is_body = 1)
              AND NOT EXISTS (SELECT 1 FROM reconcile_seen r WHERE r.id = d.id)
              AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.doc_id = d.id)
            """) ?? 0
    }
}
