import Foundation
import GRDB

/// The embedded store's schema, one migration per change, applied when a server opens its file.
extension SQLiteDocumentStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE document (
                    id TEXT PRIMARY KEY NOT NULL,
                    doc_type TEXT NOT NULL,
                    body TEXT NOT NULL,          -- the stored document, compact JSON, literal numbers
                    rev INTEGER NOT NULL,
                    seq INTEGER NOT NULL,        -- global change sequence of the latest write
                    updated_at INTEGER NOT NULL, -- Unix ms
                    deleted_at INTEGER,          -- Unix ms, NULL while live
                    created_at INTEGER NOT NULL,
                    stored_at INTEGER NOT NULL,  -- Unix ns of the latest write (for latency measurements)
                    writer TEXT                  -- X-Docsync-Client of the latest write: not echoed back to it
                );
                CREATE INDEX document_type ON document(doc_type, id);
                CREATE UNIQUE INDEX document_seq ON document(seq);
                """)
        }
        migrator.registerMigration("v2-uploads") { db in
            try db.execute(sql: """
                CREATE TABLE blob (
                    sha256 TEXT PRIMARY KEY NOT NULL, -- the content's address: uploads/<sha256[0..2]>/<sha256>
                    size INTEGER NOT NULL,
                    content_type TEXT NOT NULL,       -- from the first upload of these bytes
                    stored_at INTEGER NOT NULL        -- Unix ms
                );
                """)
        }
        migrator.registerMigration("v3-tombstone-index") { db in
            // `/api/stats` counts tombstones from this small index instead of reading every row.
            try db.execute(sql: "CREATE INDEX document_tombstone ON document(seq) WHERE deleted_at IS NOT NULL")
        }
        migrator.registerMigration("v4-store-id") { db in
            try db.execute(sql: "CREATE TABLE store_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")
            try db.execute(sql: "INSERT INTO store_meta (key, value) VALUES ('store_id', ?)", arguments: [UUID().uuidString.lowercased()])
        }
        migrator.registerMigration("v5-type-sequence") { db in
            // A pull of a few docTypes reads their changes from here (see `fill`).
            try db.execute(sql: "CREATE INDEX document_type_seq ON document(doc_type, seq)")
        }
        migrator.registerMigration("v6-seq-writer") { db in
            // A batch call's page leaves out its own client's writes (`writer IS NOT ?`, see
            // `fill`): with the writer in the sequence's indexes, that test is made on the index
            // entry, not on a table row read for it; an agent's push skipped the rows of its own
            // batches still in flight that way, a tenth of an import's server CPU. The sequence
            // stays unique by construction: each number is taken inside the single writer.
            try db.execute(sql: """
                DROP INDEX document_seq;
                CREATE INDEX document_seq_writer ON document(seq, writer);
                DROP INDEX document_type_seq;
                CREATE INDEX document_type_seq_writer ON document(doc_type, seq, writer);
                """)
        }
        migrator.registerMigration("v7-blob-use") { db in
            // The docTypes each upload was attached to: a token may fetch a file when it may read
            // one of them (rights per token, docs/OPERATIONS.md). Uploads made before are every docType's.
            try db.execute(sql: """
                CREATE TABLE blob_use (
                    sha256 TEXT NOT NULL,
                    doc_type TEXT NOT NULL,
                    PRIMARY KEY (sha256, doc_type)
                ) WITHOUT ROWID;
                INSERT INTO blob_use (sha256, doc_type) SELECT b.sha256, d.doc_type FROM blob b, (SELECT DISTINCT doc_type FROM document) d;
                """)
        }
        return migrator
    }
}
