import GRDB

/// Pulled changes waiting for their git commit (migration v16; see `GitCommitter`).
extension IndexTransaction {
    public struct GitChange: Sendable, Hashable {
        public var seq: Int64 = 0
        public var batch: Int64 = 0
        /// Where docsync wrote the file; `nil` for a deletion.
        public var path: String?
        /// Where the file was before: a move's origin, a deletion's file.
        public var oldPath: String?
        /// sha256 of the bytes docsync wrote (a file that holds others now is not committed).
        public var fileHash: String?
        public var docType: String
        public var docID: String
        public var author: String?
        /// The change's time on the server (Unix ms).
        public var changedAt: Int64
        /// The top-level fields it changed (`title, tags`), `new`, or `deleted`.
        public var what: String

        public init(
            path: String?, oldPath: String?, fileHash: String?, docType: String, docID: String, author: String?, changedAt: Int64, what: String
        ) {
            self.path = path
            self.oldPath = oldPath
            self.fileHash = fileHash
            self.docType = docType
            self.docID = docID
            self.author = author
            self.changedAt = changedAt
            self.what = what
        }
    }

    /// Records the changes of one pull batch, in order.
    public func recordGitChanges(_ changes: [GitChange]) throws {
        guard !changes.isEmpty else { return }
        let batch = (try Int64.fetchOne(db, sql: "SELECT MAX(batch) FROM git_change") ?? 0) + 1
        let s = try db.cachedStatement(sql: """
            INSERT INTO git_change (batch, path, old_path, file_hash, doc_type, doc_id, author, changed_at, what)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for c in changes {
            try s.execute(arguments: [batch, c.path, c.oldPath, c.fileHash, c.docType, c.docID, c.author, c.changedAt, c.what])
        }
    }

    /// The oldest changes waiting, whole batches of them, about `limit` (a batch larger than
    /// `limit` alone comes in parts), in the order they were pulled.
    public func oldestGitChanges(limit: Int) throws -> [GitChange] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT seq, batch, path, old_path, file_hash, doc_type, doc_id, author, changed_at, what FROM git_change
            ORDER BY seq LIMIT ?
            """, arguments: [limit + 1])
        var changes = rows.map { row in
            var change = GitChange(
                path: row[2], oldPath: row[3], fileHash: row[4], docType: row[5], docID: row[6], author: row[7], changedAt: row[8], what: row[9])
            change.seq = row[0]
            change.batch = row[1]
            return change
        }
        guard changes.count > limit, let cut = changes.last?.batch else { return changes }
        let whole = changes.filter { $0.batch != cut }
        changes.removeLast()
        return whole.isEmpty ? changes : whole
    }

    public func removeGitChanges(seqs: [Int64]) throws {
        let s = try db.cachedStatement(sql: "DELETE FROM git_change WHERE seq = ?")
        for seq in seqs { try s.execute(arguments: [seq]) }
    }

    public func gitChangeCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM git_change") ?? 0
    }
}
