import DocsyncModel
import GRDB

/// Files that fail their docType's schema (migration v17; see the agent's `SchemaCheck`).
extension IndexTransaction {
    public struct SchemaViolationRow: Sendable, Hashable {
        public var path: String
        public var docID: String?
        public var docType: String
        /// The save is held back (the file is `invalid`); otherwise the document is synced as it
        /// is and only reported.
        public var held: Bool
        /// `[{"instance", "keyword", "message"}]`, as JSON text.
        public var errors: String

        public init(path: String, docID: String?, docType: String, held: Bool, errors: String) {
            self.path = path
            self.docID = docID
            self.docType = docType
            self.held = held
            self.errors = errors
        }
    }

    public func setSchemaViolation(_ row: SchemaViolationRow) throws {
        try db.cachedStatement(sql: """
            INSERT INTO schema_violation (path, doc_id, doc_type, held, errors) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(path) DO UPDATE SET doc_id = excluded.doc_id, doc_type = excluded.doc_type, held = excluded.held, errors = excluded.errors
            """).execute(arguments: [row.path, row.docID, row.docType, row.held, row.errors])
    }

    public func clearSchemaViolation(path: String) throws {
        try db.cachedStatement(sql: "DELETE FROM schema_violation WHERE path = ?").execute(arguments: [path])
    }

    /// Reports a synced document that fails (`row.held` is false); a held save at the path stays.
    public func reportSchemaViolation(_ row: SchemaViolationRow) throws {
        try db.cachedStatement(sql: """
            INSERT INTO schema_violation (path, doc_id, doc_type, held, errors) VALUES (?, ?, ?, 0, ?)
            ON CONFLICT(path) DO UPDATE SET doc_id = excluded.doc_id, doc_type = excluded.doc_type, errors = excluded.errors
            WHERE schema_violation.held = 0
            """).execute(arguments: [row.path, row.docID, row.docType, row.errors])
    }

    /// Clears a synced document's report; a held save at the path stays.
    public func clearReportedSchemaViolation(path: String) throws {
        try db.cachedStatement(sql: "DELETE FROM schema_violation WHERE path = ? AND held = 0").execute(arguments: [path])
    }

    /// Whether any file fails its schema (the bulk paths skip the clearing when none does).
    public func hasSchemaViolations() throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM schema_violation)")) ?? false
    }

    /// The rows, held ones or reported ones, by path, at most `limit`.
    public func schemaViolations(held: Bool, limit: Int) throws -> [SchemaViolationRow] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT path, doc_id, doc_type, held, errors FROM schema_violation WHERE held = ? ORDER BY path LIMIT ?
            """), arguments: [held, limit]).map {
            SchemaViolationRow(path: $0[0], docID: $0[1], docType: $0[2], held: $0[3], errors: $0[4])
        }
    }

    public func schemaViolationCount(held: Bool) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM schema_violation WHERE held = ?"), arguments: [held]) ?? 0
    }

    /// The paths of held saves of `docType`: judged again when its schema changes.
    public func heldSchemaPaths(docType: String) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT path FROM schema_violation WHERE doc_type = ? AND held = 1"), arguments: [docType])
    }

    /// Live documents of `docType` with ids after `after`, by id, at most `limit`: bodies and
    /// paths, for checking a docType again a page at a time.
    public func liveDocuments(ofType docType: String, after: String, limit: Int) throws -> [(id: String, path: String?, body: String)] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT d.id, d.path, b.body FROM document d JOIN document_body b ON b.doc = d.doc
            WHERE d.doc_type = ? AND d.deleted_at IS NULL AND d.id > ? ORDER BY d.id LIMIT ?
            """), arguments: [docType, after, limit]).map { ($0[0], $0[1], $0[2]) }
    }

    /// Records `path`'s stat as one that cannot be trusted, so the agent reads the file again
    /// (see the agent's stat settling): used to judge a held save again under a new schema.
    public func markUnsettled(path: String) throws {
        try db.cachedStatement(sql: "UPDATE file SET mtime_ns = \(FileStat.unsettled) WHERE path = ?").execute(arguments: [path])
    }
}
