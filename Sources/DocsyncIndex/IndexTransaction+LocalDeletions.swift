import GRDB

/// The folder's own deletions while they wait in the outbox (migration v18): how many, when they
/// may leave, and where their files were. Deletions leave as a burst once no more arrive (a move
/// seen in two batches, an `rm -rf` under way), so a mass deletion is judged whole before any of
/// it is sent; one the guard holds waits until the user decides.
extension IndexTransaction {
    /// A deletion held for the user's word is due at this (boot-clock) time: never by itself.
    public static let heldForDecision = Int64.max / 2

    /// Deletions of this folder in the outbox, sent or not yet acknowledged.
    public func pendingDeletionCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE kind = \(OutboxKind.put.literal) AND body_hash LIKE 'deleted:%'") ?? 0
    }

    /// Deletions not tried yet leave no sooner than `notBefore` (boot-clock ms).
    public func deferDeletions(notBefore: Int64) throws {
        try db.execute(sql: """
            UPDATE outbox SET next_attempt_at = ? WHERE kind = \(OutboxKind.put.literal) AND body_hash LIKE 'deleted:%' AND attempts = 0 AND next_attempt_at < ?
            """, arguments: [notBefore, notBefore])
    }

    /// Deletions kept back while their burst went on go out now; those held for the user's word stay.
    public func releaseDeferredDeletions() throws {
        try db.execute(sql: """
            UPDATE outbox SET next_attempt_at = 0
            WHERE kind = \(OutboxKind.put.literal) AND body_hash LIKE 'deleted:%' AND attempts = 0 AND next_attempt_at > 0 AND next_attempt_at != ?
            """, arguments: [Self.heldForDecision])
    }

    /// Held deletions go out now (`resolve --deletions apply`).
    public func releaseHeldLocalDeletions() throws {
        try db.execute(sql: "UPDATE outbox SET next_attempt_at = 0 WHERE kind = \(OutboxKind.put.literal) AND next_attempt_at = ?", arguments: [Self.heldForDecision])
    }

    /// The held deletions' documents with the path each file had, a page at a time.
    public func heldLocalDeletions(after: String, limit: Int) throws -> [(document: DocumentRow, path: String)] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT o.doc_id, l.path FROM outbox o JOIN local_deletion l ON l.id = o.doc_id
            WHERE o.kind = \(OutboxKind.put.literal) AND o.next_attempt_at = ? AND o.doc_id > ? ORDER BY o.doc_id LIMIT ?
            """, arguments: [Self.heldForDecision, after, limit])
        return try rows.compactMap { row in
            let id: String = row[0]
            return try document(id: id).map { ($0, row[1]) }
        }
    }

    /// Notes where a document's file was when its deletion was recorded.
    public func noteLocalDeletion(id: String, path: String) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO local_deletion (id, path) VALUES (?, ?)").execute(arguments: [id, path])
    }

    /// Forgets the places of deletions no longer waiting in the outbox (sent, or withdrawn).
    public func pruneLocalDeletions() throws {
        try db.execute(sql: "DELETE FROM local_deletion WHERE id NOT IN (SELECT doc_id FROM outbox WHERE kind = \(OutboxKind.put.literal))")
    }

    public func heldLocalDeletionCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE kind = \(OutboxKind.put.literal) AND next_attempt_at = ?", arguments: [Self.heldForDecision]) ?? 0
    }
}
