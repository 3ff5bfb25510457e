import DocsyncModel
import DocsyncSQL
import GRDB

/// The index's operations, run inside one `Index.write` or `Index.read` transaction.
/// All SQL is parameterised; callers never see SQL.
public struct IndexTransaction {
    let db: Database
    let statements = StatementMemo()
    let anyPullFailures = TransactionFlag()
    /// The most values one `IN` list holds (one of ``inListSizes``): a lean index keeps its lists
    /// short, since each length's statement stays prepared on its connection.
    let inListLimit: Int

    public init(db: Database) { self.init(db: db, inListLimit: Self.longestInList) }

    init(db: Database, inListLimit: Int) {
        self.db = db
        self.inListLimit = inListLimit
    }

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
    /// up to ``inListLimit`` values at a time (chunks in the order of `values`).
    func fetchIn<Value: RawBindable>(
        sql: String, _ values: some Collection<Value>, suffix: String = "", row: (borrowing RawStatement) -> Void
    ) throws {
        let all = Array(values)
        for start in stride(from: 0, to: all.count, by: inListLimit) {
            let part = all[start..<min(start + inListLimit, all.count)]
            let (size, placeholders) = Self.inList(part.count)
            let s = try RawStatement(db, cached: "\(sql) (\(placeholders))\(suffix)")
            for i in 0..<size { part[part.startIndex + min(i, part.count - 1)].bind(to: s, at: Int32(i + 1)) }
            while try s.step() { row(s) }
        }
    }

    /// `IN` lists come in a few fixed lengths, the last value repeated to fill one (a repeated
    /// value matches no row twice): their statements are prepared once and cached, not once per chunk.
    /// A statement's program grows with its list (one lookup a value): at 300 folders the cached
    /// 256- and 500-value lists of the open lean indexes were about 7 MB of the agent's heap.
    static let inListSizes = [1, 4, 16, 64, 256, 500]
    /// The longest list any index asks in one statement, and the longest a lean index asks.
    static let longestInList = inListSizes.last!
    static let leanInListLimit = 64
    static let inListPlaceholders = inListSizes.map { repeatElement("?", count: $0).joined(separator: ",") }

    /// The length that holds `count` values (at most the largest), with its placeholders.
    static func inList(_ count: Int) -> (size: Int, placeholders: String) {
        let i = inListSizes.firstIndex { $0 >= count } ?? inListSizes.count - 1
        return (inListSizes[i], inListPlaceholders[i])
    }

    /// Every file's stat and state, keyed by path (for tests and small trees; a full scan pages
    /// through ``fileStats(after:limit:)`` instead).
    public func allFileStats() throws -> [String: FileSummary] {
        var result: [String: FileSummary] = [:]
        var after = ""
        let pageSize = 4096
        while true {
            let page = try fileStats(after: after, limit: pageSize)
            for row in page { result[row.path] = row.summary }
            guard page.count == pageSize, let last = page.last else { return result }
            after = last.path
        }
    }

    /// The files after `after` in path order (SQLite's BINARY collation: bytes), at most `limit`:
    /// a full scan reads the index a page at a time, beside a walk in the same order.
    public func fileStats(after: String, limit: Int) throws -> [(path: String, summary: FileSummary)] {
        var result: [(path: String, summary: FileSummary)] = []
        result.reserveCapacity(limit)
        let s = try RawStatement(db, cached: "SELECT path, size, mtime_ns, inode, state FROM file WHERE path > ? ORDER BY path LIMIT ?")
        s.bind(1, after)
        s.bind(2, Int64(limit))
        while try s.step() {
            result.append((s.string(0), FileSummary(
                stat: FileStat(size: s.int64(1) ?? 0, mtimeNs: s.int64(2) ?? 0, inode: UInt64(bitPattern: s.int64(3) ?? 0)),
                state: FileRow.State(rawValue: s.string(4)) ?? .invalid)))
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

    /// Records a settled `stat` for the file at `path` if its row still holds content `hash` under
    /// an unsettled stat, state ok (the agent's own record, confirmed by a read); whether it did.
    public func settleFile(at path: String, hash: String, stat: FileStat) throws -> Bool {
        let s = try RawStatement(self, """
                UPDATE file SET size = ?, mtime_ns = ?, inode = ?
                WHERE path = ? AND hash = ? AND mtime_ns = \(FileStat.unsettled) AND state = 'ok'
                """)
        s.bind(1, stat.size)
        s.bind(2, stat.mtimeNs)
        s.bind(3, Int64(bitPattern: stat.inode))
        s.bind(4, path)
        s.bind(5, hash)
        try s.run()
        return db.changesCount > 0
    }

    public func deleteFile(at path: String) throws {
        try db.cachedStatement(sql: "DELETE FROM file WHERE path = ?").execute(arguments: [path])
        try db.cachedStatement(sql: "DELETE FROM schema_violation WHERE path = ?").execute(arguments: [path])
    }

    // MARK: Meta

    /// A `meta` row's value (see ``MetaKey`` for what each holds).
    public func meta(_ key: MetaKey) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [key.name])
    }

    /// Sets a `meta` row; `nil` removes it.
    public func setMeta(_ key: MetaKey, _ value: String?) throws {
        if let value {
            try db.cachedStatement(sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").execute(arguments: [key.name, value])
        } else {
            try db.cachedStatement(sql: "DELETE FROM meta WHERE key = ?").execute(arguments: [key.name])
        }
    }

    /// The docTypes of the folder's documents (tombstones' too).
    public func docTypes() throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT DISTINCT doc_type FROM document"))
    }

    // MARK: Status

    /// The counts `status` shows, read from the kept tally (see `Index+Tally.swift`).
    /// Synced documents are those in state `synced` less those with work still waiting (a file
    /// job): found from the outbox, so the cost follows what is pending, not the index's size.
    public func statusCounts() throws -> StatusCounts {
        var tally: [String: Int] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT name, n FROM tally")) { tally[row["name"]] = row["n"] }
        let waiting = try Int.fetchOne(db.cachedStatement(sql: """
            SELECT COUNT(*) FROM (SELECT DISTINCT doc_id FROM outbox) o JOIN document d ON d.id = o.doc_id WHERE d.state = 'synced'
            """)) ?? 0
        return StatusCounts(
            live: tally["live"] ?? 0, tombstones: tally["tombstones"] ?? 0, synced: (tally["document:synced"] ?? 0) - waiting,
            pending: tally["outbox"] ?? 0, invalid: tally["file:invalid"] ?? 0, rejected: tally["document:rejected"] ?? 0,
            excluded: tally["file:excluded"] ?? 0, nonconforming: try schemaViolationCount(held: false))
    }

    /// The documents the folder holds, from the kept counts alone. ``statusCounts()`` also counts
    /// the synced documents waiting in the outbox, a join over the whole outbox: asked at every
    /// pulled page (the deletion guard), it was a fifth of an import's CPU.
    public func liveCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT n FROM tally WHERE name = 'live'")) ?? 0
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
    /// Files of docTypes the folder does not sync.
    public var excluded: Int = 0
    /// Synced documents that fail their docType's schema (reported, not held).
    public var nonconforming: Int = 0
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
            seq: s.int64(0) ?? 0, key: OutboxKey(stored: s.string(1)), docID: s.string(2), kind: OutboxKind(rawValue: s.string(3)) ?? .put, version: s.int64(4) ?? 0,
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
            remoteURL: row["remote_url"], uploadedSHA256: row["uploaded_sha256"], remoteRev: row["remote_rev"])
    }
}

extension IndexTransaction {
    /// Documents from the server that were refused and not taken since (``MetaKey/refused(_:)``):
    /// how many, and the first `limit` with why.
    public func refusedFromServer(limit: Int) throws -> (count: Int, first: [(id: String, reason: String)]) {
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM meta WHERE key >= 'refused:' AND key < 'refused;'") ?? 0
        let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM meta WHERE key >= 'refused:' AND key < 'refused;' ORDER BY key LIMIT ?", arguments: [limit])
        return (count, rows.map { (id: String(($0["key"] as String).dropFirst("refused:".count)), reason: $0["value"]) })
    }
}
