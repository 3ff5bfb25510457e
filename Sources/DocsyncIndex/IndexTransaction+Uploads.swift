import DocsyncModel
import DocsyncSQL
import GRDB

/// FileUpload jobs: one row per (document, property).
extension IndexTransaction {
    // MARK: Uploads

    public func uploads(docID: String) throws -> [UploadRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM upload WHERE doc_id = ? ORDER BY property"), arguments: [docID])
            .map(UploadRow.init(row:))
    }

    public func upload(docID: String, property: String) throws -> UploadRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM upload WHERE doc_id = ? AND property = ?"), arguments: [docID, property])
            .map(UploadRow.init(row:))
    }

    /// Whether any document has ever had a file reference (lets bulk paths skip per-document look-ups).
    public func hasUploads() throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM upload)")) ?? false
    }

    /// Jobs whose file is `path` or lies below it (a folder renamed or removed takes its files along).
    public func uploads(atOrUnder path: String) throws -> [UploadRow] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM upload WHERE path = ? OR (path > ? AND path < ?)"),
            arguments: [path, path + "/", path + "0"]
        ).map(UploadRow.init(row:))
    }

    /// Every job that names a file (what a restart checks for attachments changed while it was away).
    public func uploadsWithFiles() throws -> [UploadRow] {
        try Row.fetchAll(db, sql: "SELECT * FROM upload WHERE path IS NOT NULL AND state != 'removed'").map(UploadRow.init(row:))
    }

    /// The hash recorded for `path` if it was taken at exactly this stat (no need to read the file again).
    public func knownHash(path: String, stat: FileStat) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: """
                SELECT sha256 FROM upload WHERE path = ? AND size = ? AND mtime_ns = ? AND inode = ? AND sha256 IS NOT NULL LIMIT 1
                """),
            arguments: [path, stat.size, stat.mtimeNs, Int64(bitPattern: stat.inode)])
    }

    public func upsertUpload(_ u: UploadRow) throws {
        try db.cachedStatement(sql: """
                INSERT INTO upload (doc_id, property, reference, path, sha256, size, mtime_ns, inode, state, error,
                                    bytes_sent, remote_url, uploaded_sha256, remote_rev)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(doc_id, property) DO UPDATE SET reference = excluded.reference, path = excluded.path,
                    sha256 = excluded.sha256, size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,
                    state = excluded.state, error = excluded.error, bytes_sent = excluded.bytes_sent,
                    remote_url = excluded.remote_url, uploaded_sha256 = excluded.uploaded_sha256, remote_rev = excluded.remote_rev
                """).execute(arguments: [
                    u.docID, u.property, u.reference, u.path, u.sha256, u.stat?.size, u.stat?.mtimeNs,
                    u.stat.map { Int64(bitPattern: $0.inode) }, u.state.rawValue, u.error, u.bytesSent, u.remoteURL, u.uploadedSHA256,
                    u.remoteRev,
                ])
    }

    public func setUploadProgress(docID: String, property: String, bytesSent: Int64) throws {
        try db.cachedStatement(sql: "UPDATE upload SET bytes_sent = ? WHERE doc_id = ? AND property = ?")
            .execute(arguments: [bytesSent, docID, property])
    }

    /// Drops a document's jobs and their queued uploads (the document was deleted).
    public func deleteUploads(docID: String) throws {
        for u in try uploads(docID: docID) {
            try deleteEntry(key: u.outboxKey)
        }
        try db.cachedStatement(sql: "DELETE FROM upload WHERE doc_id = ?").execute(arguments: [docID])
    }

    public func deleteUpload(docID: String, property: String) throws {
        try deleteEntry(key: .upload(docID: docID, property: property))
        try db.cachedStatement(sql: "DELETE FROM upload WHERE doc_id = ? AND property = ?").execute(arguments: [docID, property])
    }

    /// Every job that is not simply done, for `status`, with its document's path and retry state.
    public func uploadsNeedingAttention() throws -> [(upload: UploadRow, documentPath: String?, attempts: Int, lastError: String?)] {
        try Row.fetchAll(db, sql: """
            SELECT u.*, d.path AS document_path, o.attempts AS attempts, o.last_error AS last_error
            FROM upload u
            LEFT JOIN document d ON d.id = u.doc_id
            LEFT JOIN outbox o ON o.key = \(OutboxKey.sql(.upload, docID: "u.doc_id", property: "u.property"))
            WHERE u.state NOT IN ('done', 'removed')
            ORDER BY d.path, u.property
            """).map { (UploadRow(row: $0), $0["document_path"], $0["attempts"] ?? 0, $0["last_error"]) }
    }
}
