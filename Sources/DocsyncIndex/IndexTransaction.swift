import DocsyncModel
import DocsyncSQL
import GRDB

/// The index's operations, run inside one `Index.write` or `Index.read` transaction.
/// All SQL is parameterised; callers never see SQL.
public struct IndexTransaction {
    let db: Database
    let statements = StatementMemo()

    public init(db: Database) { self.db = db }

    // MARK: Files

    public func file(at path: String) throws -> FileRow? {
        let s = try RawStatement(self, "SELECT \(FileRow.columns) FROM file WHERE path = ?")
        s.bind(1, path)
        return try s.step() ? FileRow(s) : nil
    }

    public func file(forDocument id: String) throws -> FileRow? {
        let s = try RawStatement(self, "SELECT \(FileRow.columns) FROM file WHERE doc_id = ?")
        s.bind(1, id)
        return try s.step() ? FileRow(s) : nil
    }

    /// The rows at `paths`, keyed by path (one query for a whole chunk of files).
    public func files(at paths: some Collection<String>) throws -> [String: FileRow] {
        var out: [String: FileRow] = [:]
        try fetchIn(sql: "SELECT \(FileRow.columns) FROM file WHERE path IN", paths) { s in
            let file = FileRow(s)
            out[file.path] = file
        }
        return out
    }

    /// The rows holding the documents `ids`, keyed by document id.
    public func files(forDocuments ids: some Collection<String>) throws -> [String: FileRow] {
        var out: [String: FileRow] = [:]
        try fetchIn(sql: "SELECT \(FileRow.columns) FROM file WHERE doc_id IN", ids) { s in
            let file = FileRow(s)
            if let id = file.docID { out[id] = file }
        }
        return out
    }

    /// Calls `row` for each row of `sql` followed by `(?, ?, …)` for `values` and then `suffix`,
    /// up to 500 values at a time (chunks in the order of `values`).
    private func fetchIn<Value: RawBindable>(
        sql: String, _ values: some Collection<Value>, suffix: String = "", row: (borrowing RawStatement) -> Void
    ) throws {
        let all = Array(values)
        for start in stride(from: 0, to: all.count, by: Self.inListSizes.last!) {
            let part = all[start..<min(start + Self.inListSizes.last!, all.count)]
            let (size, placeholders) = Self.inList(part.count)
            let s = try RawStatement(db, cached: "\(sql) (\(placeholders))\(suffix)")
            for i in 0..<size { part[part.startIndex + min(i, part.count - 1)].bind(to: s, at: Int32(i + 1)) }
            while try s.step() { row(s) }
        }
    }

    /// `IN` lists come in a few fixed lengths, the last value repeated to fill one (a repeated
    /// value matches no row twice): their statements are prepared once and cached, not once per chunk.
    static let inListSizes = [1, 4, 16, 64, 256, 500]
    private static let inListPlaceholders = inListSizes.map { repeatElement("?", count: $0).joined(separator: ",") }

    /// The length that holds `count` values (at most the largest), with its placeholders.
    private static func inList(_ count: Int) -> (size: Int, placeholders: String) {
        let i = inListSizes.firstIndex { $0 >= count } ?? inListSizes.count - 1
        return (inListSizes[i], inListPlaceholders[i])
    }

    /// Outbox kinds are written into the SQL as literals, not bound: the uploads' partial index
    /// (`outbox_upload`) serves only statements that name the kind.
    private static func kindLiteral(_ kind: String) -> String {
        precondition(kind == "put" || kind == "upload", "unknown outbox kind \(kind)")
        return "'\(kind)'"
    }

    /// Upload entries are read through their index: the planner would rather walk the whole
    /// outbox in `seq` order than sort the few uploads due.
    private static func indexFor(_ kind: String) -> String {
        kind == "upload" ? " INDEXED BY outbox_upload" : ""
    }

    /// Every file's stat and state, keyed by path: what a full rescan compares the tree against,
    /// without loading hashes and errors (100k files stay a few megabytes).
    public func allFileStats() throws -> [String: FileSummary] {
        var result: [String: FileSummary] = [:]
        let s = try RawStatement(self, "SELECT path, size, mtime_ns, inode, state FROM file")
        while try s.step() {
            result[s.string(0)] = FileSummary(
                stat: FileStat(size: s.int64(1) ?? 0, mtimeNs: s.int64(2) ?? 0, inode: UInt64(bitPattern: s.int64(3) ?? 0)),
                state: FileRow.State(rawValue: s.string(4)) ?? .invalid)
        }
        return result
    }

    /// Paths after `after`, in order, of files whose stat was recorded as ``FileStat/unsettled``;
    /// at most `limit`.
    public func unsettledFiles(after: String = "", limit: Int) throws -> [String] {
        let s = try RawStatement(
            db, cached: "SELECT path FROM file INDEXED BY file_unsettled WHERE mtime_ns = \(FileStat.unsettled) AND path > ? ORDER BY path LIMIT ?")
        s.bind(1, after)
        s.bind(2, Int64(limit))
        var paths: [String] = []
        while try s.step() { paths.append(s.string(0)) }
        return paths
    }

    /// Rows at `path` itself or anywhere below it (a folder that vanished takes its files with it).
    public func files(atOrUnder path: String) throws -> [FileRow] {
        let s = try RawStatement(self, "SELECT \(FileRow.columns) FROM file WHERE path = ? OR (path > ? AND path < ?)")
        s.bind(1, path)
        s.bind(2, path + "/")
        s.bind(3, path + "0")  // '0' is the character after '/'
        var rows: [FileRow] = []
        while try s.step() { rows.append(FileRow(s)) }
        return rows
    }

    public func upsertFile(_ f: FileRow) throws {
        let s = try RawStatement(self, """
                INSERT INTO file (path, doc_id, doc_type, hash, size, mtime_ns, inode, state, error)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(path) DO UPDATE SET doc_id = excluded.doc_id, doc_type = excluded.doc_type,
                    hash = excluded.hash, size = excluded.size, mtime_ns = excluded.mtime_ns,
                    inode = excluded.inode, state = excluded.state, error = excluded.error
                """)
        s.bind(1, f.path)
        s.bind(2, f.docID)
        s.bind(3, f.docType)
        s.bind(4, f.hash)
        s.bind(5, f.stat.size)
        s.bind(6, f.stat.mtimeNs)
        s.bind(7, Int64(bitPattern: f.stat.inode))
        s.bind(8, f.state.rawValue)
        s.bind(9, f.error)
        try s.run()
    }

    public func updateStat(path: String, stat: FileStat) throws {
        try db.cachedStatement(sql: "UPDATE file SET size = ?, mtime_ns = ?, inode = ? WHERE path = ?").execute(arguments: [stat.size, stat.mtimeNs, Int64(bitPattern: stat.inode), path])
    }

    public func deleteFile(at path: String) throws {
        try db.cachedStatement(sql: "DELETE FROM file WHERE path = ?").execute(arguments: [path])
    }

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

    // MARK: Outbox

    /// Queues `payload` for `key`, replacing whatever was pending for it. Attempts and backoff
    /// start over: new content deserves a prompt try even if the previous one was failing.
    /// A `nil` payload is the document's own body with its stamps, read when the entry is: the
    /// body is not stored twice (an entry always goes with the document change that queued it).
    public func enqueue(key: String, docID: String, kind: String, payload: String?, bodyHash: String, queuedAt: Int64) throws {
        let s = try RawStatement(self, """
                INSERT INTO outbox (key, doc_id, kind, version, payload, body_hash, queued_at)
                VALUES (?, ?, ?, 1, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, version = version + 1,
                    payload = excluded.payload, body_hash = excluded.body_hash,
                    attempts = 0, next_attempt_at = 0, last_error = NULL
                """)
        s.bind(1, key)
        s.bind(2, docID)
        s.bind(3, kind)
        s.bind(4, payload ?? "")
        s.bind(5, bodyHash)
        s.bind(6, queuedAt)
        try s.run()
    }

    /// The endpoint is not the server the index was synced with (another store, or the same one
    /// restored from an older copy): nothing it was told can be assumed. The cursor starts over,
    /// and every document the old server held is queued again, based on revision 0 (stored only
    /// where the server has no such document; where it has one, the 409 that comes back is merged
    /// like any conflict). Returns how many documents were queued.
    @discardableResult
    public func forgetServer(queuedAt now: Int64) throws -> Int {
        try setMeta("cursor", nil)
        try db.execute(sql: """
            UPDATE document SET server_rev = 0, pushed_hash = NULL, state = CASE WHEN state = 'synced' THEN 'pending' ELSE state END
            WHERE server_rev IS NOT NULL AND state != 'invalid'
            """)
        try db.execute(sql: """
            INSERT INTO outbox (key, doc_id, kind, version, payload, body_hash, queued_at)
                SELECT 'doc:' || id, id, 'put', 1, '', CASE WHEN deleted_at IS NULL THEN body_hash ELSE 'deleted:' || body_hash END, ?
                FROM document WHERE server_rev = 0
            ON CONFLICT(key) DO UPDATE SET attempts = 0, next_attempt_at = 0, last_error = NULL
            """, arguments: [now])
        return db.changesCount
    }

    /// Entries whose time has come, oldest first, leaving out `excluding` (already in flight) and,
    /// with `after`, every entry queued before that `seq` (a reader going through the outbox in
    /// order does not walk again what it has passed).
    public func dueEntries(now: Int64, limit: Int, kind: String = "put", excluding: Set<String> = [], after: Int64 = 0) throws -> [OutboxEntry] {
        try dueEntries(now: now, limit: limit, kind: kind, excludingAny: [excluding], after: after)
    }

    /// As above, leaving out the keys in any of `sets` (the pusher's in-flight and still-recording
    /// keys, thousands each: looked up where they are, not copied into one set per call), and
    /// stopping before the payloads pass `maxBytes` (the first entry is always taken).
    public func dueEntries(
        now: Int64, limit: Int, kind: String = "put", excludingAny sets: [Set<String>], after: Int64 = 0, maxBytes: Int = .max
    ) throws -> [OutboxEntry] {
        var out: [OutboxEntry] = []
        var bytes = 0
        /// Whether `entry` still fits; counts it if so.
        func fits(_ entry: OutboxEntry) -> Bool {
            let size = entry.payload.utf8.count
            if !out.isEmpty && bytes + size > maxBytes { return false }
            bytes += size
            return true
        }
        let sets = sets.filter { !$0.isEmpty }
        if sets.isEmpty || after > 0 {
            // The range read in order, joined and decoded as it goes. A reader going on `after`
            // the entries it took has those in flight behind it: the few left out here are
            // dropped once read, and the range read on until `limit` entries are kept.
            var from = after
            var full = false
            while out.count < limit && !full {
                let wanted = limit - out.count
                var rows = 0
                // Keyed by its text, not its line: the text depends on `kind`.
                let s = try RawStatement(db, cached: """
                    SELECT \(OutboxEntry.columns) FROM outbox o\(Self.indexFor(kind)) LEFT JOIN document d ON d.id = o.doc_id LEFT JOIN document_body b ON b.doc = d.doc
                    WHERE o.next_attempt_at <= ? AND o.kind = \(Self.kindLiteral(kind)) AND o.seq > ? ORDER BY o.seq LIMIT ?
                    """)
                s.bind(1, now)
                s.bind(2, from)
                s.bind(3, wanted)
                while try s.step() {
                    let entry = OutboxEntry(s)
                    rows += 1
                    from = entry.seq
                    if sets.contains(where: { $0.contains(entry.key) }) { continue }
                    guard fits(entry) else {
                        full = true
                        break
                    }
                    out.append(entry)
                }
                if rows < wanted { break }  // the end of the range
            }
            return out
        }
        // From the start, the entries in flight are usually the oldest ones, thousands of them:
        // they are skipped by key alone, and only the entries taken are joined and decoded.
        var seqs: [Int64] = []
        do {
            let s = try RawStatement(
                db, cached: "SELECT seq, key FROM outbox\(Self.indexFor(kind)) WHERE next_attempt_at <= ? AND kind = \(Self.kindLiteral(kind)) AND seq > ? ORDER BY seq")
            s.bind(1, now)
            s.bind(2, after)
            while seqs.count < limit, try s.step() {
                let key = s.string(1)
                if !sets.contains(where: { $0.contains(key) }) { seqs.append(s.int64(0) ?? 0) }
            }
        }
        out.reserveCapacity(seqs.count)
        var full = false
        try fetchIn(
            sql: "SELECT \(OutboxEntry.columns) FROM outbox o LEFT JOIN document d ON d.id = o.doc_id LEFT JOIN document_body b ON b.doc = d.doc WHERE o.seq IN", seqs,
            suffix: " ORDER BY o.seq"
        ) {
            guard !full else { return }
            let entry = OutboxEntry($0)
            if fits(entry) { out.append(entry) } else { full = true }
        }
        return out
    }

    public func outboxEntry(key: String) throws -> OutboxEntry? {
        let s = try RawStatement(self, "SELECT \(OutboxEntry.columns) FROM outbox o LEFT JOIN document d ON d.id = o.doc_id LEFT JOIN document_body b ON b.doc = d.doc WHERE o.key = ?")
        s.bind(1, key)
        return try s.step() ? OutboxEntry(s) : nil
    }

    /// The earliest `next_attempt_at` among waiting entries of `kind`, if any.
    public func nextAttemptAt(kind: String = "put") throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(next_attempt_at) FROM outbox WHERE kind = \(Self.kindLiteral(kind))"))
    }

    /// Removes the entry if it is still the version that was read; returns whether it was.
    /// A newer version (the file changed while the request was in flight) stays queued.
    @discardableResult
    public func removeEntry(_ entry: OutboxEntry) throws -> Bool {
        // Found by its seq (the table's own key; a replaced entry keeps it), not through the index of keys.
        let s = try RawStatement(self, "DELETE FROM outbox WHERE seq = ? AND key = ? AND version = ?")
        s.bind(1, entry.seq)
        s.bind(2, entry.key)
        s.bind(3, entry.version)
        try s.run()
        return db.changesCount > 0
    }

    /// Removes the entry whatever its version (the work it stood for is no longer wanted).
    public func deleteEntry(key: String) throws {
        try db.cachedStatement(sql: "DELETE FROM outbox WHERE key = ?").execute(arguments: [key])
    }

    public func recordFailure(key: String, version: Int64, error: String, nextAttemptAt: Int64) throws {
        try db.cachedStatement(sql: """
                UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?
                WHERE key = ? AND version = ?
                """).execute(arguments: [error, nextAttemptAt, key, version])
    }

    /// Makes every waiting entry due at `at` (the endpoint came back, or pushing resumed).
    public func rescheduleAll(at: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET next_attempt_at = ? WHERE next_attempt_at > ?").execute(arguments: [at, at])
    }

    /// Entries waiting, of one kind or (`nil`) all.
    public func pendingCount(kind: String? = nil) throws -> Int {
        if let kind { return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE kind = \(Self.kindLiteral(kind))") ?? 0 }
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0
    }

    public func lastOutboxError() throws -> String? {
        try String.fetchOne(db, sql: "SELECT last_error FROM outbox WHERE last_error IS NOT NULL ORDER BY attempts DESC, seq LIMIT 1")
    }

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
                                    bytes_sent, remote_url, uploaded_sha256)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(doc_id, property) DO UPDATE SET reference = excluded.reference, path = excluded.path,
                    sha256 = excluded.sha256, size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,
                    state = excluded.state, error = excluded.error, bytes_sent = excluded.bytes_sent,
                    remote_url = excluded.remote_url, uploaded_sha256 = excluded.uploaded_sha256
                """).execute(arguments: [
                    u.docID, u.property, u.reference, u.path, u.sha256, u.stat?.size, u.stat?.mtimeNs,
                    u.stat.map { Int64(bitPattern: $0.inode) }, u.state.rawValue, u.error, u.bytesSent, u.remoteURL, u.uploadedSHA256,
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
        try deleteEntry(key: UploadRow.outboxKey(docID: docID, property: property))
        try db.cachedStatement(sql: "DELETE FROM upload WHERE doc_id = ? AND property = ?").execute(arguments: [docID, property])
    }

    /// Every job that is not simply done, for `status`, with its document's path and retry state.
    public func uploadsNeedingAttention() throws -> [(upload: UploadRow, documentPath: String?, attempts: Int, lastError: String?)] {
        try Row.fetchAll(db, sql: """
            SELECT u.*, d.path AS document_path, o.attempts AS attempts, o.last_error AS last_error
            FROM upload u
            LEFT JOIN document d ON d.id = u.doc_id
            LEFT JOIN outbox o ON o.key = 'upload:' || u.doc_id || ':' || u.property
            WHERE u.state NOT IN ('done', 'removed')
            ORDER BY d.path, u.property
            """).map { (UploadRow(row: $0), $0["document_path"], $0["attempts"] ?? 0, $0["last_error"]) }
    }

    // MARK: Meta

    public func meta(_ key: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [key])
    }

    public func setMeta(_ key: String, _ value: String?) throws {
        if let value {
            try db.cachedStatement(sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").execute(arguments: [key, value])
        } else {
            try db.cachedStatement(sql: "DELETE FROM meta WHERE key = ?").execute(arguments: [key])
        }
    }

    // MARK: Status

    public func statusCounts() throws -> StatusCounts {
        let row = try Row.fetchOne(db, sql: """
            SELECT
              (SELECT COUNT(*) FROM document WHERE deleted_at IS NULL) AS live,
              (SELECT COUNT(*) FROM document WHERE deleted_at IS NOT NULL) AS tombstones,
              (SELECT COUNT(*) FROM document d WHERE d.state = 'synced'
                 AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.doc_id = d.id)) AS synced,
              (SELECT COUNT(*) FROM outbox) AS pending,
              (SELECT COUNT(*) FROM file WHERE state = 'invalid') AS invalid,
              (SELECT COUNT(*) FROM document WHERE state = 'rejected') AS rejected
            """)!
        return StatusCounts(
            live: row["live"], tombstones: row["tombstones"], synced: row["synced"],
            pending: row["pending"], invalid: row["invalid"], rejected: row["rejected"])
    }

    public func invalidFiles() throws -> [(path: String, error: String)] {
        try Row.fetchAll(db, sql: "SELECT path, error FROM file WHERE state = 'invalid' ORDER BY path")
            .map { ($0["path"], $0["error"] ?? "invalid") }
    }

    public func rejectedDocuments() throws -> [(id: String, path: String?, error: String)] {
        try Row.fetchAll(db, sql: "SELECT id, path, error FROM document WHERE state = 'rejected' ORDER BY id")
            .map { ($0["id"], $0["path"], $0["error"] ?? "rejected") }
    }
}

public struct StatusCounts: Sendable, Hashable, Codable {
    public var live: Int
    public var tombstones: Int
    public var synced: Int
    public var pending: Int
    public var invalid: Int
    public var rejected: Int
}

// Files, documents and outbox entries are read by column position (the lists below) through
// `RawStatement`: they are the rows read by the thousand.

extension FileRow {
    static let columns = "path, doc_id, doc_type, hash, size, mtime_ns, inode, state, error"

    init(_ s: borrowing RawStatement) {
        self.init(
            path: s.string(0), docID: s.text(1), docType: s.text(2), hash: s.text(3),
            stat: FileStat(size: s.int64(4) ?? 0, mtimeNs: s.int64(5) ?? 0, inode: UInt64(bitPattern: s.int64(6) ?? 0)),
            state: State(rawValue: s.string(7)) ?? .invalid, error: s.text(8))
    }
}

extension DocumentRow {
    static let columns = """
        d.id, d.doc_type, d.path, b.body, d.body_hash, d.pushed_hash, d.updated_at, d.deleted_at, d.server_rev, d.base,
        d.base_is_body, d.state, d.error, d.pushed_is_body
        """
    /// The document (`d`) with its body (`b`).
    static let tables = "document d JOIN document_body b ON b.doc = d.doc"

    init(_ s: borrowing RawStatement) {
        let body = s.string(3)
        self.init(
            id: s.string(0), docType: s.string(1), path: s.text(2), body: body, bodyHash: s.string(4),
            pushedHash: s.bool(13) ? s.string(4) : s.text(5), updatedAt: s.int64(6), deletedAt: s.int64(7),
            serverRev: s.int64(8), base: s.bool(10) ? body : s.text(9), state: State(rawValue: s.string(11)) ?? .pending,
            error: s.text(12))
    }
}

extension OutboxEntry {
    /// The entry and the revision its document is at (`o` the outbox, `d` the document, `b` its body, joined).
    static let columns = """
        o.seq, o.key, o.doc_id, o.kind, o.version, o.payload, o.body_hash, o.queued_at, o.attempts, o.next_attempt_at,
        o.last_error, d.server_rev, b.body, d.updated_at, d.deleted_at, d.doc, d.doc_type
        """

    convenience init(_ s: borrowing RawStatement) {
        var payload = s.string(5)
        if payload.isEmpty {
            // Stored as "the document's body": what the document holds now is what was queued.
            let (updatedAt, deletedAt) = (s.int64(13), s.int64(14))
            payload = s.withUTF8(12) { body in
                guard let body else { return DocumentRules.stampedWireText(body: "{}", updatedAt: updatedAt, deletedAt: deletedAt) }
                return DocumentRules.stampedWireText(utf8: body, updatedAt: updatedAt, deletedAt: deletedAt)
            }
        }
        self.init(
            seq: s.int64(0) ?? 0, key: s.string(1), docID: s.string(2), kind: s.string(3), version: s.int64(4) ?? 0,
            payload: payload, bodyHash: s.string(6), queuedAt: s.int64(7) ?? 0,
            attempts: Int(s.int64(8) ?? 0), nextAttemptAt: s.int64(9) ?? 0, lastError: s.text(10), serverRev: s.int64(11),
            docKey: s.int64(15), docType: s.text(16))
    }
}

extension UploadRow {
    init(row: Row) {
        let size: Int64? = row["size"]
        self.init(
            docID: row["doc_id"], property: row["property"], reference: row["reference"], path: row["path"], sha256: row["sha256"],
            stat: size.map { FileStat(size: $0, mtimeNs: row["mtime_ns"] ?? 0, inode: UInt64(bitPattern: row["inode"] ?? 0)) },
            state: State(rawValue: row["state"]) ?? .pending, error: row["error"], bytesSent: row["bytes_sent"],
            remoteURL: row["remote_url"], uploadedSHA256: row["uploaded_sha256"])
    }
}
