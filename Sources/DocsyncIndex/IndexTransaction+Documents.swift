import DocsyncModel
import DocsyncSQL
import GRDB

/// Documents: bodies, revisions, merge bases and acknowledgements.
extension IndexTransaction {
    // MARK: Documents

    public func document(id: String) throws -> DocumentRow? {
        let s = try RawStatement(self, "SELECT \(DocumentRow.columns) FROM \(DocumentRow.tables) WHERE d.id = ?")
        s.bind(1, id)
        return try s.step() ? DocumentRow(s) : nil
    }

    /// The documents `ids` that exist, keyed by id.
    public func documents(ids: some Collection<String>) throws -> [String: DocumentRow] {
        var out: [String: DocumentRow] = [:]
        try fetchIn(sql: "SELECT \(DocumentRow.columns) FROM \(DocumentRow.tables) WHERE d.id IN", ids) { s in
            let doc = DocumentRow(s)
            out[doc.id] = doc
        }
        return out
    }

    /// Forgets the revision the server last had of `id`: it has none now (deleted and its
    /// tombstone purged), so the document's next write goes as new, "create it if absent".
    public func forgetServerRevision(of id: String) throws {
        try db.cachedStatement(sql: "UPDATE document SET server_rev = NULL WHERE id = ?").execute(arguments: [id])
    }

    public func upsertDocument(_ d: DocumentRow) throws {
        // A merge base equal to the body (a document the server holds as it is here: nearly all of
        // them) is stored as a flag, not a second copy.
        let baseIsBody = d.base == d.body
        // Likewise the hash the endpoint acknowledged, nearly always the body's (see migration v8).
        let pushedIsBody = d.pushedHash == d.bodyHash
        let doc: Int64
        do {
            let s = try RawStatement(self, """
                    INSERT INTO document (id, doc_type, path, body_hash, pushed_hash, pushed_is_body, updated_at, deleted_at,
                                          server_rev, base, base_is_body, state, error)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET doc_type = excluded.doc_type, path = excluded.path,
                        body_hash = excluded.body_hash, pushed_hash = excluded.pushed_hash, pushed_is_body = excluded.pushed_is_body,
                        updated_at = excluded.updated_at, deleted_at = excluded.deleted_at,
                        server_rev = excluded.server_rev, base = excluded.base, base_is_body = excluded.base_is_body,
                        state = excluded.state, error = excluded.error
                    """)
            s.bind(1, d.id)
            s.bind(2, d.docType)
            s.bind(3, d.path)
            s.bind(4, d.bodyHash)
            s.bind(5, pushedIsBody ? nil : d.pushedHash)
            s.bind(6, pushedIsBody)
            s.bind(7, d.updatedAt)
            s.bind(8, d.deletedAt)
            s.bind(9, d.serverRev)
            s.bind(10, baseIsBody ? nil : d.base)
            s.bind(11, baseIsBody)
            s.bind(12, d.state.rawValue)
            s.bind(13, d.error)
            let before = db.lastInsertedRowID
            try s.run()
            // A new row's key is the last inserted rowid; an existing row (the update branch, which
            // leaves that id alone) is looked up. A new key equal to the previous one only costs the look-up.
            if db.lastInsertedRowID != before {
                doc = db.lastInsertedRowID
            } else {
                let k = try RawStatement(self, "SELECT doc FROM document WHERE id = ?")
                k.bind(1, d.id)
                guard try k.step(), let key = k.int64(0) else { throw DatabaseError(message: "document \(d.id) has no key") }
                doc = key
            }
        }
        // The body's row is written only when the body changed (a state change leaves it alone).
        let s = try RawStatement(self, """
                INSERT INTO document_body (doc, body) VALUES (?, ?)
                ON CONFLICT(doc) DO UPDATE SET body = excluded.body WHERE body IS NOT excluded.body
                """)
        s.bind(1, doc)
        s.bind(2, d.body)
        try s.run()
    }

    /// Records what the endpoint acknowledged, without reading or rewriting the body: the hash it
    /// acknowledged, its revision (kept when `serverRev` is nil), the new merge base (`baseHash` is
    /// its SHA-256: equal to the body's, only the flag is stored), and, when the entry sent was
    /// still the latest (`current`), the synced state. The document is found by its integer `key`
    /// when the caller has it (an outbox entry's ``OutboxEntry/docKey``), else by `id`.
    public func recordAcknowledged(
        id: String, key: Int64? = nil, pushedHash: String, serverRev: Int64?, base: String?, baseHash: String?, current: Bool
    ) throws {
        let s = try RawStatement(self, """
                UPDATE document SET pushed_hash = CASE WHEN body_hash = ?1 THEN NULL ELSE ?1 END, pushed_is_body = body_hash = ?1,
                    server_rev = COALESCE(?2, server_rev),
                    base = CASE WHEN ?4 IS NULL THEN base WHEN body_hash = ?4 THEN NULL ELSE ?3 END,
                    base_is_body = CASE WHEN ?4 IS NULL THEN base_is_body ELSE body_hash = ?4 END,
                    state = CASE WHEN ?5 THEN 'synced' ELSE state END,
                    error = CASE WHEN ?5 THEN NULL ELSE error END
                WHERE doc = COALESCE(?7, (SELECT doc FROM document WHERE id = ?6))
                """)
        s.bind(1, pushedHash)
        s.bind(2, serverRev)
        s.bind(3, base)
        s.bind(4, baseHash)
        s.bind(5, current)
        s.bind(6, id)
        s.bind(7, key)
        try s.run()
    }

    /// Records an acknowledgement whose merge base is the document's body, provided the body is
    /// still the one hashed `bodyHash`; returns whether it was (nothing is written otherwise).
    @discardableResult
    public func recordAcknowledged(
        id: String, key: Int64? = nil, pushedHash: String, serverRev: Int64?, ifBodyHash bodyHash: String, current: Bool
    ) throws -> Bool {
        let s = try RawStatement(self, """
                UPDATE document SET pushed_hash = CASE WHEN body_hash = ?1 THEN NULL ELSE ?1 END, pushed_is_body = body_hash = ?1,
                    server_rev = COALESCE(?2, server_rev), base = NULL, base_is_body = 1,
                    state = CASE WHEN ?3 THEN 'synced' ELSE state END,
                    error = CASE WHEN ?3 THEN NULL ELSE error END
                WHERE doc = COALESCE(?6, (SELECT doc FROM document WHERE id = ?4)) AND body_hash = ?5
                """)
        s.bind(1, pushedHash)
        s.bind(2, serverRev)
        s.bind(3, current)
        s.bind(4, id)
        s.bind(5, bodyHash)
        s.bind(6, key)
        try s.run()
        return db.changesCount > 0
    }

    public func setDocumentPath(id: String, path: String?) throws {
        try db.cachedStatement(sql: "UPDATE document SET path = ? WHERE id = ?").execute(arguments: [path, id])
    }
}
