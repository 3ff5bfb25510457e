import DocsyncModel
import DocsyncSQLiteStore
import DocsyncStore
import DocsyncTestSupport
import GRDB
import Testing

/// The embedded server's database across a release that changed its schema.
@Suite struct SQLiteStoreUpgradeTests {
    /// A database from before the writer joined the sequence's index (migration v6) is upgraded
    /// when the server opens it: every document is there, and a client's pages still leave out
    /// its own writes.
    @Test func aDatabaseFromBeforeTheWriterIndexIsUpgradedAndServesTheSameFeed() async throws {
        let folder = try TempFolder("store-upgrade")
        defer { folder.remove() }
        let path = folder.file("documents.sqlite")
        do {
            let store = try SQLiteDocumentStore(path: path)
            for i in 0..<6 {
                _ = try await store.put(try JSONParser.parse(#"{"id":"d\#(i)","docType":"note"}"#).object!, now: 1, client: i % 2 == 0 ? "mine" : "theirs")
            }
            await store.close()
        }
        // Back to the schema the previous release left.
        let old = try DatabaseQueue(path: path)
        try await old.write { db in
            try db.execute(sql: """
                DROP INDEX document_seq_writer;
                CREATE UNIQUE INDEX document_seq ON document(seq);
                DROP INDEX document_type_seq_writer;
                CREATE INDEX document_type_seq ON document(doc_type, seq);
                DELETE FROM grdb_migrations WHERE identifier = 'v6-seq-writer';
                """)
        }
        try old.close()

        let store = try SQLiteDocumentStore(path: path)
        for selection in [TypeSelection(), TypeSelection(only: ["note"])] {
            let page = try await store.sync(since: 0, documents: [], now: 2, limit: 100, client: "mine", selection: selection)
            #expect(page.changes.compactMap { try? JSONParser.parse($0).object?["id"]?.string } == ["d1", "d3", "d5"], "theirs, in order; none of mine")
            #expect(page.cursor == 6)
        }
        await store.close()
        let indexes = try await DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'document' ORDER BY name")
        }
        #expect(indexes.contains("document_seq_writer") && !indexes.contains("document_seq"), "\(indexes)")
        #expect(indexes.contains("document_type_seq_writer") && !indexes.contains("document_type_seq"), "\(indexes)")
    }
}
