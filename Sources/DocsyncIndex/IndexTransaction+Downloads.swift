import DocsyncModel
import DocsyncSQL
import GRDB

/// One file someone else attached, on its way into the folder.
public struct DownloadRow: Sendable, Hashable {
    public enum State: String, Sendable {
        /// `failed`: fetched and refused (too large, other bytes, gone), tried again at the next
        /// start (a limit may have changed); `refused`: the adapter would not fetch the URL (another
        /// server's), never fetched.
        case pending, downloading, failed, refused
    }

    public var docID: String
    public var property: String
    public var url: String
    public var sha256: String?
    public var fileExtension: String?
    /// The attached file (relative to the root) this version replaces; `nil`: a file new to the folder.
    public var replaces: String?
    public var state: State
    public var bytesReceived: Int64
    public var error: String?

    public init(
        docID: String, property: String, url: String, sha256: String?, fileExtension: String?, replaces: String?, state: State = .pending,
        bytesReceived: Int64 = 0, error: String? = nil
    ) {
        self.docID = docID
        self.property = property
        self.url = url
        self.sha256 = sha256
        self.fileExtension = fileExtension
        self.replaces = replaces
        self.state = state
        self.bytesReceived = bytesReceived
        self.error = error
    }

    init(row: Row) {
        self.init(
            docID: row["doc_id"], property: row["property"], url: row["url"], sha256: row["sha256"], fileExtension: row["extension"],
            replaces: row["replaces"], state: State(rawValue: row["state"]) ?? .pending, bytesReceived: row["bytes_received"], error: row["error"])
    }

    public var outboxKey: OutboxKey { .download(docID: docID, property: property) }
}

/// Download jobs: one row per (document, property), retried through the outbox.
extension IndexTransaction {
    public func download(docID: String, property: String) throws -> DownloadRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM download WHERE doc_id = ? AND property = ?"), arguments: [docID, property])
            .map(DownloadRow.init(row:))
    }

    public func downloads(docID: String) throws -> [DownloadRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM download WHERE doc_id = ?"), arguments: [docID]).map(DownloadRow.init(row:))
    }

    /// Queues `job` unless the same URL is queued (or refused) already: a document pulled again
    /// does not restart its download, and a refused one is tried again only for another URL.
    public func queueDownload(_ job: DownloadRow, queuedAt: Int64) throws {
        if let existing = try download(docID: job.docID, property: job.property), existing.url == job.url { return }
        try upsertDownload(job)
        try enqueue(key: job.outboxKey, docID: job.docID, kind: .download, payload: "{}", bodyHash: job.sha256 ?? job.url, queuedAt: queuedAt)
    }

    public func upsertDownload(_ d: DownloadRow) throws {
        try db.cachedStatement(sql: """
                INSERT INTO download (doc_id, property, url, sha256, extension, replaces, state, bytes_received, error)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(doc_id, property) DO UPDATE SET url = excluded.url, sha256 = excluded.sha256,
                    extension = excluded.extension, replaces = excluded.replaces, state = excluded.state,
                    bytes_received = excluded.bytes_received, error = excluded.error
                """).execute(arguments: [
                    d.docID, d.property, d.url, d.sha256, d.fileExtension, d.replaces, d.state.rawValue, d.bytesReceived, d.error,
                ])
    }

    public func setDownloadProgress(docID: String, property: String, bytesReceived: Int64) throws {
        try db.cachedStatement(sql: "UPDATE download SET bytes_received = ? WHERE doc_id = ? AND property = ?")
            .execute(arguments: [bytesReceived, docID, property])
    }

    /// Ends a job: its row and its queue entry go.
    public func deleteDownload(docID: String, property: String) throws {
        try deleteEntry(key: .download(docID: docID, property: property))
        try db.cachedStatement(sql: "DELETE FROM download WHERE doc_id = ? AND property = ?").execute(arguments: [docID, property])
    }

    /// Ends the job for `url`; a newer job for the same property (another URL) stays.
    public func finishDownload(docID: String, property: String, url: String) throws {
        if try download(docID: docID, property: property)?.url == url { try deleteDownload(docID: docID, property: property) }
    }

    /// A document's jobs go with it (deleted, or trashed from the server).
    public func deleteDownloads(docID: String) throws {
        for property in try String.fetchAll(db, sql: "SELECT property FROM download WHERE doc_id = ?", arguments: [docID]) {
            try deleteDownload(docID: docID, property: property)
        }
    }

    /// At a start: jobs in flight when the agent stopped are simply pending again (their temporary
    /// is dropped), and failed ones are tried once more.
    public func resetDownloadsAtStart(queuedAt: Int64) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM download WHERE state IN ('downloading', 'failed')").map(DownloadRow.init(row:))
        for var row in rows {
            row.state = .pending
            row.bytesReceived = 0
            try upsertDownload(row)
            try enqueue(key: row.outboxKey, docID: row.docID, kind: .download, payload: "{}", bodyHash: row.sha256 ?? row.url, queuedAt: queuedAt)
        }
    }

    /// Every job, for `status`, with its document's path and retry state.
    public func downloadsForStatus() throws -> [(download: DownloadRow, documentPath: String?, attempts: Int, lastError: String?)] {
        try Row.fetchAll(db, sql: """
            SELECT w.*, d.path AS document_path, o.attempts AS attempts, o.last_error AS last_error
            FROM download w
            LEFT JOIN document d ON d.id = w.doc_id
            LEFT JOIN outbox o ON o.key = \(OutboxKey.sql(.download, docID: "w.doc_id", property: "w.property"))
            ORDER BY d.path, w.property
            """).map { (DownloadRow(row: $0), $0["document_path"], $0["attempts"] ?? 0, $0["last_error"]) }
    }

    /// The stat a cached file had when it was stored (`nil`: not cached).
    public func cachedFile(sha256: String) throws -> FileStat? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT size, mtime_ns, inode FROM cached_file WHERE sha256 = ?"), arguments: [sha256]).map {
            FileStat(size: $0["size"], mtimeNs: $0["mtime_ns"], inode: UInt64(bitPattern: $0["inode"]))
        }
    }

    public func setCachedFile(sha256: String, stat: FileStat?) throws {
        guard let stat else {
            try db.cachedStatement(sql: "DELETE FROM cached_file WHERE sha256 = ?").execute(arguments: [sha256])
            return
        }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO cached_file (sha256, size, mtime_ns, inode) VALUES (?, ?, ?, ?)")
            .execute(arguments: [sha256, stat.size, stat.mtimeNs, Int64(bitPattern: stat.inode)])
    }

    /// The attached files whose content is `sha256` (a copy already in the folder needs no download).
    public func attachedFiles(sha256: String) throws -> [UploadRow] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM upload WHERE sha256 = ? AND path IS NOT NULL AND state != 'removed'"), arguments: [sha256]
        ).map(UploadRow.init(row:))
    }

    /// Download entries due at `now`, those never tried first, then retries by when they became
    /// due: a file that keeps failing (a server trickling it) never holds a slot ahead of one not
    /// tried yet. `excluding`: keys in flight.
    public func dueDownloads(now: Int64, limit: Int, excluding: Set<OutboxKey>) throws -> [OutboxEntry] {
        let s = try RawStatement(self, """
            SELECT \(OutboxEntry.columns) FROM outbox o LEFT JOIN document d ON d.id = o.doc_id LEFT JOIN document_body b ON b.doc = d.doc
            WHERE o.kind = \(OutboxKind.download.literal) AND o.next_attempt_at <= ? ORDER BY o.attempts > 0, o.next_attempt_at, o.seq LIMIT ?
            """)
        s.bind(1, now)
        s.bind(2, Int64(limit + excluding.count))
        var out: [OutboxEntry] = []
        while out.count < limit, try s.step() {
            let entry = OutboxEntry(s)
            if !excluding.contains(entry.key) { out.append(entry) }
        }
        return out
    }
}
