import GRDB

/// The counts `status` shows, kept as rows change instead of counted when asked: on an index of
/// a million documents, counting took two seconds. Triggers keep table `tally` in step with
/// `document` (live, tombstones, each state), `file` (each state) and `outbox` (entries), in the
/// transaction that changes them.
extension Index {
    /// Each kept count and the rows it counts, for the first count when the table is made.
    static let tallies: [(name: String, rows: String)] = [
        ("live", "document WHERE deleted_at IS NULL"), ("tombstones", "document WHERE deleted_at IS NOT NULL"),
        ("document:pending", "document WHERE state = 'pending'"), ("document:synced", "document WHERE state = 'synced'"),
        ("document:rejected", "document WHERE state = 'rejected'"), ("file:ok", "file WHERE state = 'ok'"),
        ("file:invalid", "file WHERE state = 'invalid'"), ("file:excluded", "file WHERE state = 'excluded'"), ("outbox", "outbox"),
    ]

    static func createTally(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE tally (name TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID")
        for (name, rows) in tallies {
            try db.execute(sql: "INSERT INTO tally VALUES (?, (SELECT COUNT(*) FROM \(rows)))", arguments: [name])
        }
        let liveness = { (row: String) in "CASE WHEN \(row).deleted_at IS NULL THEN 'live' ELSE 'tombstones' END" }
        try db.execute(sql: """
            CREATE TRIGGER tally_document_insert AFTER INSERT ON document BEGIN
                UPDATE tally SET n = n + 1 WHERE name IN (\(liveness("NEW")), 'document:' || NEW.state);
            END;
            CREATE TRIGGER tally_document_delete AFTER DELETE ON document BEGIN
                UPDATE tally SET n = n - 1 WHERE name IN (\(liveness("OLD")), 'document:' || OLD.state);
            END;
            CREATE TRIGGER tally_document_update AFTER UPDATE OF deleted_at, state ON document BEGIN
                UPDATE tally SET n = n - 1 WHERE name IN (\(liveness("OLD")), 'document:' || OLD.state);
                UPDATE tally SET n = n + 1 WHERE name IN (\(liveness("NEW")), 'document:' || NEW.state);
            END;
            CREATE TRIGGER tally_file_insert AFTER INSERT ON file BEGIN
                UPDATE tally SET n = n + 1 WHERE name = 'file:' || NEW.state;
            END;
            CREATE TRIGGER tally_file_delete AFTER DELETE ON file BEGIN
                UPDATE tally SET n = n - 1 WHERE name = 'file:' || OLD.state;
            END;
            CREATE TRIGGER tally_file_update AFTER UPDATE OF state ON file BEGIN
                UPDATE tally SET n = n - 1 WHERE name = 'file:' || OLD.state;
                UPDATE tally SET n = n + 1 WHERE name = 'file:' || NEW.state;
            END;
            CREATE TRIGGER tally_outbox_insert AFTER INSERT ON outbox BEGIN
                UPDATE tally SET n = n + 1 WHERE name = 'outbox';
            END;
            CREATE TRIGGER tally_outbox_delete AFTER DELETE ON outbox BEGIN
                UPDATE tally SET n = n - 1 WHERE name = 'outbox';
            END;
            """)
    }
}
