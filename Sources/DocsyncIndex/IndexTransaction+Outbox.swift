import DocsyncModel
import DocsyncSQL
import GRDB

/// The outbox: pending writes, due entries, retries and acknowledgements.
extension IndexTransaction {
    // MARK: Outbox

    /// Queues `payload` for `key`, replacing whatever was pending for it. Attempts and backoff
    /// start over: new content deserves a prompt try even if the previous one was failing.
    /// A `nil` payload is the document's own body with its stamps, read when the entry is: the
    /// body is not stored twice (an entry always goes with the document change that queued it).
    /// `notBefore` (boot-clock milliseconds, as retries) holds it back: see the scanner's deletions.
    public func enqueue(key: OutboxKey, docID: String, kind: OutboxKind, payload: String?, bodyHash: String, queuedAt: Int64, notBefore: Int64 = 0) throws {
        let s = try RawStatement(self, """
                INSERT INTO outbox (key, doc_id, kind, version, payload, body_hash, queued_at, next_attempt_at)
                VALUES (?, ?, ?, 1, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, version = version + 1,
                    payload = excluded.payload, body_hash = excluded.body_hash,
                    attempts = 0, next_attempt_at = excluded.next_attempt_at, last_error = NULL
                """)
        s.bind(1, key.text)
        s.bind(2, docID)
        s.bind(3, kind.rawValue)
        s.bind(4, payload ?? "")
        s.bind(5, bodyHash)
        s.bind(6, queuedAt)
        s.bind(7, notBefore)
        try s.run()
    }

    /// The endpoint is not the server the index was synced with (another store, or the same one
    /// restored from an older copy): nothing it was told can be assumed. The cursor starts over,
    /// and every document the old server held is queued again, based on revision 0 (stored only
    /// where the server has no such document; where it has one, the 409 that comes back is merged
    /// like any conflict). Returns how many documents were queued.
    @discardableResult
    public func forgetServer(queuedAt now: Int64) throws -> Int {
        try setMeta(.cursor, nil)
        try db.execute(sql: """
            UPDATE document SET server_rev = 0, pushed_hash = NULL, state = CASE WHEN state = 'synced' THEN 'pending' ELSE state END
            WHERE server_rev IS NOT NULL AND state != 'invalid'
            """)
        try db.execute(sql: """
            INSERT INTO outbox (key, doc_id, kind, version, payload, body_hash, queued_at)
                SELECT \(OutboxKey.sqlDocument(id: "id")), id, \(OutboxKind.put.literal), 1, '', CASE WHEN deleted_at IS NULL THEN body_hash ELSE '\(OutboxEntry.deletionMark)' || body_hash END, ?
                FROM document WHERE server_rev = 0
            ON CONFLICT(key) DO UPDATE SET attempts = 0, next_attempt_at = 0, last_error = NULL
            """, arguments: [now])
        return db.changesCount
    }

    /// Queues every document the server has (tombstones too) to be sent again over the revision
    /// it has, and every file this folder uploaded: a folder turned to end-to-end encryption sends
    /// each one sealed (docs/ENCRYPTION.md). Returns how many documents were queued.
    public func requeueAll(queuedAt now: Int64) throws -> Int {
        try db.execute(sql: """
            UPDATE document SET pushed_hash = NULL, state = CASE WHEN state = 'synced' THEN 'pending' ELSE state END
            WHERE server_rev IS NOT NULL AND state != 'invalid'
            """)
        try db.execute(sql: """
            INSERT INTO outbox (key, doc_id, kind, version, payload, body_hash, queued_at)
                SELECT \(OutboxKey.sqlDocument(id: "id")), id, \(OutboxKind.put.literal), 1, '', CASE WHEN deleted_at IS NULL THEN body_hash ELSE '\(OutboxEntry.deletionMark)' || body_hash END, ?
                FROM document WHERE server_rev IS NOT NULL AND state != 'invalid'
            ON CONFLICT(key) DO UPDATE SET attempts = 0, next_attempt_at = 0, last_error = NULL
            """, arguments: [now])
        let documents = db.changesCount
        // The files this folder uploaded go again too (sealed), and their documents with them.
        try db.execute(sql: """
            UPDATE upload SET state = 'pending', bytes_sent = 0, uploaded_sha256 = NULL, error = NULL
            WHERE state = 'done' AND path IS NOT NULL AND sha256 IS NOT NULL
            """)
        try db.execute(sql: """
            INSERT INTO outbox (key, doc_id, kind, version, payload, body_hash, queued_at)
                SELECT \(OutboxKey.sql(.upload, docID: "doc_id", property: "property")), doc_id, \(OutboxKind.upload.literal), 1, '{}', sha256, ?
                FROM upload WHERE state = 'pending' AND sha256 IS NOT NULL
            ON CONFLICT(key) DO UPDATE SET attempts = 0, next_attempt_at = 0, last_error = NULL
            """, arguments: [now])
        return documents
    }

    /// Entries whose time has come, oldest first, leaving out `excluding` (already in flight) and,
    /// with `after`, every entry queued before that `seq` (a reader going through the outbox in
    /// order does not walk again what it has passed).
    public func dueEntries(now: Int64, limit: Int, kind: OutboxKind = .put, excluding: Set<OutboxKey> = [], after: Int64 = 0) throws -> [OutboxEntry] {
        try dueEntries(now: now, limit: limit, kind: kind, excludingAny: [excluding], after: after)
    }

    /// As above, leaving out the keys in any of `sets` (the pusher's in-flight and still-recording
    /// keys, thousands each: looked up where they are, not copied into one set per call), and
    /// stopping before the payloads pass `maxBytes` (the first entry is always taken).
    public func dueEntries(
        now: Int64, limit: Int, kind: OutboxKind = .put, excludingAny sets: [Set<OutboxKey>], after: Int64 = 0, maxBytes: Int = .max
    ) throws -> [OutboxEntry] {
        let sets = sets.filter { !$0.isEmpty }
        var budget = ByteBudget(maxBytes: maxBytes)
        if sets.isEmpty || after > 0 {
            return try dueInOrder(now: now, limit: limit, kind: kind, excludingAny: sets, after: after, budget: &budget)
        }
        return try dueSkippingKeys(now: now, limit: limit, kind: kind, excludingAny: sets, budget: &budget)
    }

    /// Payload bytes of a call so far: the first entry always fits.
    struct ByteBudget {
        let maxBytes: Int
        var bytes = 0
        var taken = 0

        /// Whether `entry` still fits; counts it if so.
        mutating func fits(_ entry: OutboxEntry) -> Bool {
            let size = entry.payload.utf8.count
            if taken > 0 && bytes > maxBytes - size { return false }
            bytes += size
            taken += 1
            return true
        }
    }

    /// The range after `after` read in order, joined and decoded as it goes. A reader going on
    /// `after` the entries it took has those in flight behind it: the few left out here are
    /// dropped once read, and the range read on until `limit` entries are kept.
    private func dueInOrder(
        now: Int64, limit: Int, kind: OutboxKind, excludingAny sets: [Set<OutboxKey>], after: Int64, budget: inout ByteBudget
    ) throws -> [OutboxEntry] {
        var out: [OutboxEntry] = []
        var from = after
        while out.count < limit {
            let wanted = limit - out.count
            var rows = 0
            // Keyed by its text, not its line: the text depends on `kind`.
            let s = try RawStatement(db, cached: """
                SELECT \(OutboxEntry.columns) FROM outbox o\(kind.indexedBy) LEFT JOIN document d ON d.id = o.doc_id LEFT JOIN document_body b ON b.doc = d.doc
                WHERE o.next_attempt_at <= ? AND o.kind = \(kind.literal) AND o.seq > ? ORDER BY o.seq LIMIT ?
                """)
            s.bind(1, now)
            s.bind(2, from)
            s.bind(3, wanted)
            while try s.step() {
                let entry = OutboxEntry(s)
                rows += 1
                from = entry.seq
                if sets.contains(where: { $0.contains(entry.key) }) { continue }
                guard budget.fits(entry) else { return out }
                out.append(entry)
            }
            if rows < wanted { break }  // the end of the range
        }
        return out
    }

    /// From the start, the entries in flight are usually the oldest ones, thousands of them: they
    /// are skipped by key alone, and only the entries taken are joined and decoded.
    private func dueSkippingKeys(
        now: Int64, limit: Int, kind: OutboxKind, excludingAny sets: [Set<OutboxKey>], budget: inout ByteBudget
    ) throws -> [OutboxEntry] {
        var seqs: [Int64] = []
        do {
            let s = try RawStatement(
                db, cached: "SELECT seq, key FROM outbox\(kind.indexedBy) WHERE next_attempt_at <= ? AND kind = \(kind.literal) AND seq > ? ORDER BY seq")
            s.bind(1, now)
            s.bind(2, Int64(0))
            while seqs.count < limit, try s.step() {
                let key = OutboxKey(stored: s.string(1))
                if !sets.contains(where: { $0.contains(key) }) { seqs.append(s.int64(0) ?? 0) }
            }
        }
        var out: [OutboxEntry] = []
        out.reserveCapacity(seqs.count)
        var full = false
        var local = budget
        try fetchIn(
            sql: "SELECT \(OutboxEntry.columns) FROM outbox o LEFT JOIN document d ON d.id = o.doc_id LEFT JOIN document_body b ON b.doc = d.doc WHERE o.seq IN", seqs,
            suffix: " ORDER BY o.seq"
        ) {
            guard !full else { return }
            let entry = OutboxEntry($0)
            if local.fits(entry) { out.append(entry) } else { full = true }
        }
        budget = local
        return out
    }

    public func outboxEntry(key: OutboxKey) throws -> OutboxEntry? {
        let s = try RawStatement(self, "SELECT \(OutboxEntry.columns) FROM outbox o LEFT JOIN document d ON d.id = o.doc_id LEFT JOIN document_body b ON b.doc = d.doc WHERE o.key = ?")
        s.bind(1, key.text)
        return try s.step() ? OutboxEntry(s) : nil
    }

    /// The earliest `next_attempt_at` among waiting entries of `kind`, if any.
    public func nextAttemptAt(kind: OutboxKind = .put) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(next_attempt_at) FROM outbox WHERE kind = \(kind.literal)"))
    }

    /// Removes the entry if it is still the version that was read; returns whether it was.
    /// A newer version (the file changed while the request was in flight) stays queued.
    @discardableResult
    public func removeEntry(_ entry: OutboxEntry) throws -> Bool {
        // Found by its seq (the table's own key; a replaced entry keeps it), not through the index of keys.
        let s = try RawStatement(self, "DELETE FROM outbox WHERE seq = ? AND key = ? AND version = ?")
        s.bind(1, entry.seq)
        s.bind(2, entry.key.text)
        s.bind(3, entry.version)
        try s.run()
        return db.changesCount > 0
    }

    /// Removes the entry whatever its version (the work it stood for is no longer wanted).
    public func deleteEntry(key: OutboxKey) throws {
        try db.cachedStatement(sql: "DELETE FROM outbox WHERE key = ?").execute(arguments: [key.text])
    }

    public func recordFailure(key: OutboxKey, version: Int64, error: String, nextAttemptAt: Int64) throws {
        try db.cachedStatement(sql: """
                UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?
                WHERE key = ? AND version = ?
                """).execute(arguments: [error, nextAttemptAt, key.text, version])
    }

    /// Holds `key`'s entry, whatever its version, until `nextAttemptAt`, counting an attempt that
    /// failed with `error` (a write the server keeps answering with a conflict: the merge queued a
    /// new version, which must still wait).
    public func deferEntry(key: OutboxKey, error: String, nextAttemptAt: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE key = ?")
            .execute(arguments: [error, nextAttemptAt, key.text])
    }

    /// Makes every waiting entry due at `at` (the endpoint came back, or pushing resumed).
    public func rescheduleAll(at: Int64) throws {
        // Not what waits for a reason of its own: a deletion held for the user's word, a write the
        // token may not make (``rescheduleNotAllowed(at:)``).
        try db.cachedStatement(sql: """
            UPDATE outbox SET next_attempt_at = ? WHERE next_attempt_at > ? AND next_attempt_at < ?
                AND (last_error IS NULL OR last_error NOT LIKE 'not allowed:%')
            """).execute(arguments: [at, at, Self.heldForDecision])
    }

    /// Writes the token was not allowed to make go again at `at` (the token file changed).
    public func rescheduleNotAllowed(at: Int64) throws {
        try db.execute(sql: "UPDATE outbox SET next_attempt_at = ? WHERE last_error LIKE 'not allowed:%' AND next_attempt_at > ?", arguments: [at, at])
    }

    /// The entries the token was not allowed to send: the document's path (or id) and why.
    public func notAllowed(limit: Int) throws -> (count: Int, first: [(what: String, reason: String)]) {
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE last_error LIKE 'not allowed:%'") ?? 0
        guard count > 0 else { return (0, []) }
        let rows = try Row.fetchAll(db, sql: """
            SELECT COALESCE(f.path, o.doc_id), o.last_error FROM outbox o LEFT JOIN file f ON f.doc_id = o.doc_id
            WHERE o.last_error LIKE 'not allowed:%' ORDER BY o.seq LIMIT ?
            """, arguments: [limit])
        return (count, rows.map { ($0[0], $0[1]) })
    }

    /// Entries waiting, of one kind or (`nil`) all.
    public func pendingCount(kind: OutboxKind? = nil) throws -> Int {
        if let kind { return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE kind = \(kind.literal)") ?? 0 }
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0
    }

    /// The files changed last (written here or pulled), newest first: path and mtime (ns).
    public func recentFiles(limit: Int) throws -> [(path: String, mtimeNs: Int64)] {
        try Row.fetchAll(db, sql: "SELECT path, mtime_ns FROM file WHERE mtime_ns > 0 ORDER BY mtime_ns DESC LIMIT ?", arguments: [limit])
            .map { (path: $0[0], mtimeNs: $0[1]) }
    }

    /// Files the index records.
    public func fileCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM file") ?? 0
    }

    /// SQLite's `PRAGMA quick_check`: `["ok"]` for a sound file, else what is wrong.
    public func quickCheck() throws -> [String] {
        try String.fetchAll(db, sql: "PRAGMA quick_check")
    }

    /// When the oldest waiting entry was queued (the stamp it was queued with), if any waits.
    public func oldestQueuedAt() throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT MIN(queued_at) FROM outbox")
    }

    public func lastOutboxError() throws -> String? {
        try String.fetchOne(db, sql: "SELECT last_error FROM outbox WHERE last_error IS NOT NULL ORDER BY attempts DESC, seq LIMIT 1")
    }
}
