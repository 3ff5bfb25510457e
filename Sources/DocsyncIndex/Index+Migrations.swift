import DocsyncModel
import GRDB

/// The index's schema, migration by migration: each one kept as it shipped, so an index made by
/// any earlier version is brought up to date in order.
extension Index {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE file (
                    path TEXT PRIMARY KEY NOT NULL,   -- relative to the root, '/'-separated
                    doc_id TEXT,                      -- NULL while the file is invalid
                    doc_type TEXT,
                    hash TEXT,                        -- SHA-256 of the bytes last read
                    size INTEGER NOT NULL,
                    mtime_ns INTEGER NOT NULL,
                    inode INTEGER NOT NULL,
                    state TEXT NOT NULL,              -- 'ok' | 'invalid' | 'excluded' (a docType not synced here)
                    error TEXT                        -- why it is invalid
                );
                CREATE UNIQUE INDEX file_doc_id ON file(doc_id) WHERE doc_id IS NOT NULL;

                CREATE TABLE document (
                    id TEXT PRIMARY KEY NOT NULL,
                    doc_type TEXT NOT NULL,
                    path TEXT,                        -- NULL once deleted
                    body TEXT NOT NULL,               -- latest local content, compact JSON, no stamps
                    body_hash TEXT NOT NULL,
                    pushed_hash TEXT,                 -- body_hash the endpoint acknowledged
                    updated_at INTEGER,               -- Unix ms the latest change was observed
                    deleted_at INTEGER,               -- Unix ms of the tombstone, NULL while live
                    server_rev INTEGER,               -- the endpoint's revision, where it has one
                    base TEXT,                        -- last version both sides agreed on (merge base)
                    state TEXT NOT NULL,              -- 'pending' | 'synced' | 'rejected'
                    error TEXT                        -- the endpoint's message when rejected
                );
                CREATE INDEX document_path ON document(path);

                CREATE TABLE outbox (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    key TEXT NOT NULL UNIQUE,         -- 'doc:<id>' (uploads later get their own keys)
                    doc_id TEXT NOT NULL,
                    kind TEXT NOT NULL,               -- 'put'
                    version INTEGER NOT NULL,         -- bumped whenever the entry is replaced
                    payload TEXT NOT NULL,            -- the wire document, stamps included ('' = the document's body + stamps)
                    body_hash TEXT NOT NULL,
                    queued_at INTEGER NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT
                );
                CREATE INDEX outbox_due ON outbox(next_attempt_at, seq);

                CREATE TABLE meta (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                );
                """)
        }
        migrator.registerMigration("v2-uploads") { db in
            try db.execute(sql: """
                -- FileUpload jobs: one per (document, property) holding a {"$file": …} reference.
                -- The outbox carries the retries (key 'upload:<doc_id>:<property>', kind 'upload').
                CREATE TABLE upload (
                    doc_id TEXT NOT NULL,
                    property TEXT NOT NULL,
                    reference TEXT,                   -- the path as written; NULL once the reference was removed
                    path TEXT,                        -- the file it names, relative to the root; NULL if it cannot
                    sha256 TEXT,                      -- content of that file when last hashed
                    size INTEGER,
                    mtime_ns INTEGER,                 -- stat at hashing time: unchanged stat, no re-hash
                    inode INTEGER,
                    state TEXT NOT NULL,              -- 'pending' | 'uploading' | 'done' | 'failed' | 'invalid' | 'removed'
                    error TEXT,                       -- why invalid or failed, or the last transient failure
                    bytes_sent INTEGER NOT NULL DEFAULT 0,
                    remote_url TEXT,                  -- what the server holds in the property
                    uploaded_sha256 TEXT,             -- the content behind remote_url
                    PRIMARY KEY (doc_id, property)
                );
                CREATE INDEX upload_path ON upload(path);
                """)
        }
        migrator.registerMigration("v3-base-is-body") { db in
            // The merge base is usually the body itself: a flag instead of a second copy halves the
            // index of a folder that is in sync.
            try db.execute(sql: """
                ALTER TABLE document ADD COLUMN base_is_body INTEGER NOT NULL DEFAULT 0;
                UPDATE document SET base = NULL, base_is_body = 1 WHERE base = body;
                """)
        }
        migrator.registerMigration("v4-fewer-indexes") { db in
            // Neither index served a query (the outbox is read in seq order, documents by id), and
            // each insert and delete paid for them.
            try db.execute(sql: """
                DROP INDEX document_path;
                DROP INDEX outbox_due;
                """)
        }
        migrator.registerMigration("v5-upload-entries") { db in
            // The uploader asks for its entries each time writes are acknowledged; among 100k
            // document entries, finding none took a scan of the whole outbox. Only upload entries
            // are in this index, so document entries pay nothing for it.
            try db.execute(sql: "CREATE INDEX outbox_upload ON outbox(next_attempt_at) WHERE kind = 'upload'")
        }
        migrator.registerMigration("v6-unsettled-files") { db in
            // Files whose stat was recorded too soon after a change to be trusted (see
            // `FileStat.unsettled`): the agent reads them again once they are old enough. Only
            // those rows are in the index.
            try db.execute(sql: "CREATE INDEX file_unsettled ON file(path) WHERE mtime_ns = \(FileStat.unsettled)")
        }
        migrator.registerMigration("v7-lean-rows") { db in
            // What each file of an import costs the index, in b-trees written twice (queued, then
            // acknowledged) and in WAL pages:
            // - A document's body moves to its own table, keyed by the document's new integer key.
            //   An acknowledgement then rewrites the document's ~200-byte row, not a row holding
            //   the kilobyte body as well: a batch of them dirties a few pages instead of dozens.
            // - `file` is keyed by its path alone (WITHOUT ROWID): one b-tree per insert, not a
            //   table and its path index.
            // - The outbox's seq no longer uses AUTOINCREMENT, which updated `sqlite_sequence` on
            //   every insert. A seq orders entries only; one reused after the newest entry went is
            //   still newer than every entry there.
            try db.execute(sql: """
                CREATE TABLE document_new (
                    doc INTEGER PRIMARY KEY,          -- stable key of the body's row
                    id TEXT NOT NULL UNIQUE,
                    doc_type TEXT NOT NULL,
                    path TEXT,
                    body_hash TEXT NOT NULL,
                    pushed_hash TEXT,
                    updated_at INTEGER,
                    deleted_at INTEGER,
                    server_rev INTEGER,
                    base TEXT,
                    base_is_body INTEGER NOT NULL DEFAULT 0,
                    state TEXT NOT NULL,
                    error TEXT
                );
                CREATE TABLE document_body (
                    doc INTEGER PRIMARY KEY,          -- document.doc
                    body TEXT NOT NULL                -- latest local content, compact JSON, no stamps
                );
                INSERT INTO document_new (doc, id, doc_type, path, body_hash, pushed_hash, updated_at, deleted_at,
                                          server_rev, base, base_is_body, state, error)
                    SELECT rowid, id, doc_type, path, body_hash, pushed_hash, updated_at, deleted_at,
                           server_rev, base, base_is_body, state, error FROM document;
                INSERT INTO document_body (doc, body) SELECT rowid, body FROM document;
                DROP TABLE document;
                ALTER TABLE document_new RENAME TO document;

                CREATE TABLE file_new (
                    path TEXT PRIMARY KEY NOT NULL,
                    doc_id TEXT,
                    doc_type TEXT,
                    hash TEXT,
                    size INTEGER NOT NULL,
                    mtime_ns INTEGER NOT NULL,
                    inode INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    error TEXT
                ) WITHOUT ROWID;
                INSERT INTO file_new SELECT path, doc_id, doc_type, hash, size, mtime_ns, inode, state, error FROM file;
                DROP TABLE file;
                ALTER TABLE file_new RENAME TO file;
                CREATE UNIQUE INDEX file_doc_id ON file(doc_id) WHERE doc_id IS NOT NULL;
                CREATE INDEX file_unsettled ON file(path) WHERE mtime_ns = \(FileStat.unsettled);

                CREATE TABLE outbox_new (
                    seq INTEGER PRIMARY KEY,
                    key TEXT NOT NULL UNIQUE,
                    doc_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    payload TEXT NOT NULL,
                    body_hash TEXT NOT NULL,
                    queued_at INTEGER NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT
                );
                INSERT INTO outbox_new SELECT seq, key, doc_id, kind, version, payload, body_hash, queued_at, attempts,
                                              next_attempt_at, last_error FROM outbox;
                DROP TABLE outbox;
                ALTER TABLE outbox_new RENAME TO outbox;
                CREATE INDEX outbox_upload ON outbox(next_attempt_at) WHERE kind = 'upload';
                """)
        }
        migrator.registerMigration("v8-pushed-is-body") { db in
            // An acknowledgement that records the 64-character hash grows each document's row:
            // rows written side by side by an import no longer fit their page, and acknowledging a
            // batch splits pages all along the table. The hash acknowledged is nearly always the
            // body's own: a flag says so, and the row keeps its size.
            try db.execute(sql: """
                ALTER TABLE document ADD COLUMN pushed_is_body INTEGER NOT NULL DEFAULT 0;
                UPDATE document SET pushed_hash = NULL, pushed_is_body = 1 WHERE pushed_hash = body_hash;
                """)
        }
        migrator.registerMigration("v9-reconcile") { db in
            // The ids a full reconcile has received from the server (see IndexTransaction+Reconcile).
            try db.execute(sql: "CREATE TABLE reconcile_seen (id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID")
        }
        migrator.registerMigration("v10-downloads") { db in
            try db.execute(sql: """
                -- Files others attached, on their way into the folder: one per (document, property).
                -- The outbox carries the retries (key 'download:<doc_id>:<property>', kind 'download').
                CREATE TABLE download (
                    doc_id TEXT NOT NULL,
                    property TEXT NOT NULL,
                    url TEXT NOT NULL,                -- what the server's property holds
                    sha256 TEXT,                      -- what the bytes must hash to, when the server names it
                    extension TEXT,                   -- the file's extension where it came from (letters, digits)
                    replaces TEXT,                    -- the attached file this version replaces; NULL for a new one
                    state TEXT NOT NULL,              -- 'pending' | 'downloading' | 'failed'
                    bytes_received INTEGER NOT NULL DEFAULT 0,
                    error TEXT,
                    PRIMARY KEY (doc_id, property)
                );
                CREATE INDEX outbox_download ON outbox(next_attempt_at) WHERE kind = 'download';
                -- Files in .docsync/files by content, with the stat they had when stored: the tree's
                -- copy is a hard link to the same inode, so a change made to it in place shows as
                -- another stat here, and the entry is not used again.
                CREATE TABLE cached_file (
                    sha256 TEXT PRIMARY KEY NOT NULL,
                    size INTEGER NOT NULL,
                    mtime_ns INTEGER NOT NULL,
                    inode INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v11-upload-rev") { db in
            // The revision our upload made: a pulled version older than it (Kinto's plugin writes
            // the record before the property gets the file's URL) is not taken as a removal.
            try db.execute(sql: "ALTER TABLE upload ADD COLUMN remote_rev INTEGER")
        }
        migrator.registerMigration("v12-tally") { db in try Index.createTally(db) }
        // A migration from here on that changes rows of document, file or outbox recounts `tally`
        // (the connection's counter is installed once the index is migrated).
        migrator.registerMigration("v13-tally-off-schema") { db in try Index.dropTallyTriggers(db) }
        migrator.registerMigration("v14-pull-failures") { db in
            // Pulled changes that could not be written (a full disk, a name too long): kept with
            // the change itself, so the cursor can move past them and they are retried from here.
            try db.execute(sql: """
                CREATE TABLE pull_failure (
                    id TEXT PRIMARY KEY NOT NULL,     -- the document's id as the server sent it
                    change TEXT NOT NULL,             -- the change, as pulled (wire form)
                    reason TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 1,
                    next_attempt_at INTEGER NOT NULL  -- on RetryPolicy.deadlineNow()'s clock
                ) WITHOUT ROWID
                """)
        }
        migrator.registerMigration("v15-held-deletions") { db in
            // Deletions from the server held for the user's word: one pull would have deleted more
            // of the folder than the guard allows (see DeletionGuard).
            try db.execute(sql: """
                CREATE TABLE held_deletion (
                    id TEXT PRIMARY KEY NOT NULL,
                    change TEXT NOT NULL,             -- the tombstone, as pulled (wire form)
                    rev INTEGER                       -- its revision on the server
                ) WITHOUT ROWID
                """)
        }
        migrator.registerMigration("v16-git-changes") { db in
            // Pulled changes waiting to be committed to git (`--git-commit`, `--git-branch`):
            // recorded with the write, so a commit held back (a rebase, a lock) is made later.
            try db.execute(sql: """
                CREATE TABLE git_change (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    batch INTEGER NOT NULL,           -- the pull batch (one commit per author and batch)
                    path TEXT,                        -- the file docsync wrote (NULL: deleted)
                    old_path TEXT,                    -- where it was before (a move, a deletion)
                    file_hash TEXT,                   -- sha256 of the bytes docsync wrote
                    doc_type TEXT NOT NULL,
                    doc_id TEXT NOT NULL,
                    author TEXT,                      -- updated_by, as the server said
                    changed_at INTEGER NOT NULL,      -- the change's updated_at (Unix ms)
                    what TEXT NOT NULL                -- the top-level fields changed, or "deleted"
                )
                """)
        }
        migrator.registerMigration("v17-schema-violations") { db in
            // Files that fail their docType's schema (see docs/SCHEMAS.md): a save held back
            // (`held` 1, the file is `invalid`), or a synced document that does not conform.
            try db.execute(sql: """
                CREATE TABLE schema_violation (
                    path TEXT PRIMARY KEY NOT NULL,
                    doc_id TEXT,
                    doc_type TEXT NOT NULL,
                    held INTEGER NOT NULL,
                    errors TEXT NOT NULL              -- [{"instance", "keyword", "message"}]
                ) WITHOUT ROWID;
                CREATE INDEX schema_violation_type ON schema_violation(doc_type);
                """)
        }
        migrator.registerMigration("v18-local-deletions") { db in
            // Where each file deleted in the folder was, while its deletion waits in the outbox:
            // a mass deletion held by the guard is undone by writing the files back there.
            try db.execute(sql: """
                CREATE TABLE local_deletion (
                    id TEXT PRIMARY KEY NOT NULL,
                    path TEXT NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v19-seal-counters") { db in
            try db.execute(sql: "CREATE TABLE seal_counter (id TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID")
        }
        return migrator
    }
}
