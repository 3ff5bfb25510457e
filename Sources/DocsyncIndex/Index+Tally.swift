import CSQLiteExtras
import GRDB

/// The counts `status` shows, kept as rows change instead of counted when asked: on an index of
/// a million documents, counting took two seconds. Table `tally` holds `document` (live,
/// tombstones, each state), `file` (each state) and `outbox` (entries), changed in the
/// transaction that changes those rows.
///
/// Who keeps it: a pre-update hook on the writing connection (``TallyCounter``), or, where this
/// SQLite has none, temporary triggers on that connection. Triggers were kept in the schema from
/// v12 to v13; why they went is in `tally.h`.
extension Index {
    /// Each kept count and the rows it counts, in the order of `tally.h`'s counters.
    static let tallies: [(name: String, rows: String)] = [
        ("live", "document WHERE deleted_at IS NULL"), ("tombstones", "document WHERE deleted_at IS NOT NULL"),
        ("document:pending", "document WHERE state = 'pending'"), ("document:synced", "document WHERE state = 'synced'"),
        ("document:rejected", "document WHERE state = 'rejected'"), ("file:ok", "file WHERE state = 'ok'"),
        ("file:invalid", "file WHERE state = 'invalid'"), ("file:excluded", "file WHERE state = 'excluded'"), ("outbox", "outbox"),
    ]

    /// Migration v12: the table, counted once, and the triggers that kept it then.
    static func createTally(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE tally (name TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID")
        for (name, rows) in tallies {
            try db.execute(sql: "INSERT INTO tally VALUES (?, (SELECT COUNT(*) FROM \(rows)))", arguments: [name])
        }
        try db.execute(sql: tallyTriggers(temporary: false))
    }

    /// Migration v13: the schema's triggers go (the writing connection keeps the counts).
    static func dropTallyTriggers(_ db: Database) throws {
        for table in ["document", "file", "outbox"] {
            for event in ["insert", "delete", "update"] { try db.execute(sql: "DROP TRIGGER IF EXISTS tally_\(table)_\(event)") }
        }
    }

    /// The triggers that keep the counts; temporary ones live on one connection only.
    static func tallyTriggers(temporary: Bool) -> String {
        let (create, on) = temporary ? ("CREATE TEMP TRIGGER IF NOT EXISTS", "main.") : ("CREATE TRIGGER", "")
        let liveness = { (row: String) in "CASE WHEN \(row).deleted_at IS NULL THEN 'live' ELSE 'tombstones' END" }
        return """
            \(create) tally_document_insert AFTER INSERT ON \(on)document BEGIN
                UPDATE tally SET n = n + 1 WHERE name IN (\(liveness("NEW")), 'document:' || NEW.state);
            END;
            \(create) tally_document_delete AFTER DELETE ON \(on)document BEGIN
                UPDATE tally SET n = n - 1 WHERE name IN (\(liveness("OLD")), 'document:' || OLD.state);
            END;
            \(create) tally_document_update AFTER UPDATE OF deleted_at, state ON \(on)document BEGIN
                UPDATE tally SET n = n - 1 WHERE name IN (\(liveness("OLD")), 'document:' || OLD.state);
                UPDATE tally SET n = n + 1 WHERE name IN (\(liveness("NEW")), 'document:' || NEW.state);
            END;
            \(create) tally_file_insert AFTER INSERT ON \(on)file BEGIN
                UPDATE tally SET n = n + 1 WHERE name = 'file:' || NEW.state;
            END;
            \(create) tally_file_delete AFTER DELETE ON \(on)file BEGIN
                UPDATE tally SET n = n - 1 WHERE name = 'file:' || OLD.state;
            END;
            \(create) tally_file_update AFTER UPDATE OF state ON \(on)file BEGIN
                UPDATE tally SET n = n - 1 WHERE name = 'file:' || OLD.state;
                UPDATE tally SET n = n + 1 WHERE name = 'file:' || NEW.state;
            END;
            \(create) tally_outbox_insert AFTER INSERT ON \(on)outbox BEGIN
                UPDATE tally SET n = n + 1 WHERE name = 'outbox';
            END;
            \(create) tally_outbox_delete AFTER DELETE ON \(on)outbox BEGIN
                UPDATE tally SET n = n - 1 WHERE name = 'outbox';
            END;
            """
    }
}

/// The writing connection's counters (see `tally.h`): reset as a write transaction begins, added
/// to by the hook as its rows change, and written to `tally` just before it commits, so the counts
/// commit or roll back with the rows. Only touched on the writer's queue.
public final class TallyCounter: @unchecked Sendable {
    /// How the counts are kept on this index's writing connection.
    public enum Keeper: Sendable { case hook, triggers }

    private let counters = UnsafeMutablePointer<docsync_tally>.allocate(capacity: 1)
    public private(set) var keeper = Keeper.triggers

    init() { counters.initialize(to: docsync_tally()) }
    deinit { counters.deallocate() }

    /// On the writing connection, once migrated: the hook where SQLite has one (and `preferHook`),
    /// else temporary triggers.
    func install(on db: Database, preferHook: Bool) throws {
        if preferHook, let document = try Self.columns(of: "document", db), let file = try Self.columns(of: "file", db),
            let state = document["state"], let deletedAt = document["deleted_at"], let fileState = file["state"]
        {
            counters.pointee.document_state = state
            counters.pointee.document_deleted_at = deletedAt
            counters.pointee.file_state = fileState
            if docsync_tally_install(db.sqliteConnection, counters) != 0 {
                keeper = .hook
                return
            }
        }
        try db.execute(sql: Index.tallyTriggers(temporary: true))
        keeper = .triggers
    }

    /// Forgets what a transaction that did not commit counted.
    func reset() {
        _ = withUnsafeMutableBytes(of: &counters.pointee.delta) { $0.initializeMemory(as: UInt8.self, repeating: 0) }
    }

    /// Adds what the transaction counted to `tally`.
    func flush(_ db: Database) throws {
        let deltas = withUnsafeBytes(of: counters.pointee.delta) { Array($0.bindMemory(to: Int64.self)) }
        reset()
        for (delta, tally) in zip(deltas, Index.tallies) where delta != 0 {
            try db.cachedStatement(sql: "UPDATE tally SET n = n + ? WHERE name = ?").execute(arguments: [delta, tally.name])
        }
    }

    private static func columns(of table: String, _ db: Database) throws -> [String: Int32]? {
        var out: [String: Int32] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT cid, name FROM pragma_table_info(?)", arguments: [table]) { out[row["name"]] = row["cid"] }
        return out.isEmpty ? nil : out
    }
}
