@testable import DocsyncIndex
import DocsyncSQL
import DocsyncModel
import DocsyncTestSupport
import Foundation
import GRDB
import Testing

/// The SQLite index on a real file.
@Suite struct IndexTests {
    func withIndex(_ body: (Index) async throws -> Void) async throws {
        let folder = try TempFolder("index")
        defer { folder.remove() }
        try await body(try Index.open(root: folder.path))
    }

    /// Regression: the transaction's statement memo was keyed by line number alone, so two files
    /// using a statement on the same line ran the first one's SQL for both.
    @Test func twoSitesOnTheSameLineInTwoFilesRunTheirOwnStatements() async throws {
        try await withIndex { index in
            let (a, b) = try await index.read { tx -> (String?, String?) in
                let first = try RawStatement(tx, "SELECT 'first'", file: "One.swift", line: 42)
                let a = try first.step() ? first.text(0) : nil
                let second = try RawStatement(tx, "SELECT 'second'", file: "Two.swift", line: 42)
                let b = try second.step() ? second.text(0) : nil
                return (a, b)
            }
            #expect(a == "first")
            #expect(b == "second")
        }
    }

    @Test func openingCreatesTheStateFolderWithItsGitignoreAndMigrates() throws {
        let folder = try TempFolder("index")
        defer { folder.remove() }
        _ = try Index.open(root: folder.path)
        #expect(try folder.read(".docsync/.gitignore") == "*\n")
        #expect(Index.exists(root: folder.path))
        _ = try Index.open(root: folder.path)  // reopening runs no migration twice
    }

    @Test func anIndexWrittenBeforeTheBodiesMovedKeepsEverythingItHeld() async throws {
        let folder = try TempFolder("index")
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: Index.stateDirectory(root: folder.path), withIntermediateDirectories: true)
        let bodyA = #"{"id":"a","docType":"note","t":1}"#
        let bodyB = #"{"id":"b","docType":"note","t":2}"#
        do {
            // The index as the release before wrote it (schema v6), with one synced document, one
            // waiting to be pushed, their files and the entry.
            let old = try DatabasePool(path: Index.stateDirectory(root: folder.path) + "/index.sqlite")
            try Index.migrator.migrate(old, upTo: "v6-unsettled-files")
            try await old.write { db in
                try db.execute(sql: """
                    INSERT INTO document (id, doc_type, path, body, body_hash, pushed_hash, updated_at, server_rev, state, base_is_body)
                        VALUES ('a', 'note', 'a.json', ?, 'ha', 'ha', 1000, 3, 'synced', 1);
                    INSERT INTO document (id, doc_type, path, body, body_hash, updated_at, state)
                        VALUES ('b', 'note', 'b.json', ?, 'hb', 2000, 'pending');
                    INSERT INTO file (path, doc_id, doc_type, hash, size, mtime_ns, inode, state)
                        VALUES ('a.json', 'a', 'note', 'fa', 10, 5, 7, 'ok'), ('b.json', 'b', 'note', 'fb', 11, 6, 8, 'ok');
                    INSERT INTO outbox (key, doc_id, kind, version, payload, body_hash, queued_at) VALUES ('doc:b', 'b', 'put', 1, '', 'hb', 2000);
                    """, arguments: [bodyA, bodyB])
            }
        }
        let index = try Index.open(root: folder.path)
        let (a, b, files, due) = try await index.read { tx in
            (try tx.document(id: "a"), try tx.document(id: "b"), try tx.allFileStats(), try tx.dueEntries(now: 10_000, limit: 10))
        }
        #expect(a?.body == bodyA && a?.base == bodyA && a?.serverRev == 3 && a?.state == .synced && a?.pushedHash == "ha")
        #expect(b?.body == bodyB && b?.base == nil && b?.state == .pending && b?.pushedHash == nil)
        #expect(files["a.json"]?.stat == FileStat(size: 10, mtimeNs: 5, inode: 7) && files["b.json"]?.stat.size == 11)
        #expect(due.map(\.key.text) == ["doc:b"])
        #expect(due.first?.payload == #"{"id":"b","docType":"note","t":2,"updated_at":"1970-01-01T00:00:02.000Z"}"#)
        // Written after the migration: the new document keeps its own body, its entry comes last.
        let bodyC = #"{"id":"c","docType":"note","t":3}"#
        try await index.write { tx in
            try tx.upsertDocument(DocumentRow(id: "c", docType: "note", path: "c.json", body: bodyC, bodyHash: "hc", updatedAt: 3_000))
            try tx.enqueue(key: .document("c"), docID: "c", kind: .put, payload: nil, bodyHash: "hc", queuedAt: 3_000)
        }
        let after = try await index.read { tx in (try tx.documents(ids: ["a", "b", "c"]), try tx.dueEntries(now: 10_000, limit: 10)) }
        #expect(after.0.mapValues(\.body) == ["a": bodyA, "b": bodyB, "c": bodyC])
        #expect(after.1.map(\.key.text) == ["doc:b", "doc:c"])
    }

    @Test func aDocumentKeepsItsBodyThroughAcknowledgementsAndStateChanges() async throws {
        try await withIndex { index in
            try await index.write { tx in
                // Another table's insert first: the document's new key is not the last one inserted before it.
                try tx.enqueue(key: .document("x"), docID: "x", kind: .put, payload: "{}", bodyHash: "hx", queuedAt: 1)
                try tx.upsertDocument(DocumentRow(id: "a", docType: "note", path: "a.json", body: "v1", bodyHash: "h1"))
                try tx.upsertDocument(DocumentRow(id: "b", docType: "note", path: "b.json", body: "w1", bodyHash: "g1"))
                try tx.recordAcknowledged(id: "a", pushedHash: "h1", serverRev: 4, base: nil, baseHash: "h1", current: true)
                // An older version of b acknowledged after b changed: the hash recorded is the one sent.
                try tx.recordAcknowledged(id: "b", pushedHash: "g0", serverRev: 2, base: "w0", baseHash: "g0", current: false)
                var b = try #require(try tx.document(id: "b"))
                b.state = .rejected
                try tx.upsertDocument(b)
                var a = try #require(try tx.document(id: "a"))
                a.body = "v2"
                a.bodyHash = "h2"
                try tx.upsertDocument(a)
            }
            let (a, b) = try await index.read { tx in (try tx.document(id: "a"), try tx.document(id: "b")) }
            #expect(a?.body == "v2" && a?.base == "v1" && a?.pushedHash == "h1" && a?.serverRev == 4)
            #expect(b?.body == "w1" && b?.base == "w0" && b?.pushedHash == "g0" && b?.state == .rejected)
        }
    }

    @Test func theLogIsCopiedIntoTheIndexFileWhileWritesGoOn() async throws {
        let folder = try TempFolder("index")
        defer { folder.remove() }
        let index = try Index.open(root: folder.path)
        let file = Index.stateDirectory(root: folder.path) + "/index.sqlite"
        func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
        // 48 MiB of bodies in 12 transactions: past the size at which the log is copied back.
        let filler = String(repeating: "x", count: 4_000)
        for chunk in 0..<12 {
            try await index.write { tx in
                for i in 0..<1_000 {
                    try tx.upsertDocument(DocumentRow(id: "d\(chunk)-\(i)", docType: "note", path: nil, body: filler + "\(i)", bodyHash: "h"))
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while size(file) < 30_000_000, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(size(file) >= 30_000_000, "the index file holds what was written, not only its log")
        #expect(size(file + "-wal") < 300_000_000)
        #expect(try await index.read { try $0.document(id: "d11-999")?.body } == filler + "999")
    }

    @Test func outboxCollapsesToTheLatestStatePerDocument() async throws {
        try await withIndex { index in
            for n in 1...10 {
                try await index.write { tx in
                    try tx.enqueue(key: .document("a"), docID: "a", kind: .put, payload: "{\"n\":\(n)}", bodyHash: "h\(n)", queuedAt: Int64(n))
                }
            }
            try await index.write { try $0.enqueue(key: .document("b"), docID: "b", kind: .put, payload: "{}", bodyHash: "hb", queuedAt: 11) }
            let due = try await index.read { try $0.dueEntries(now: 100, limit: 10) }
            #expect(due.map(\.key.text) == ["doc:a", "doc:b"], "order by first queued")
            #expect(due[0].payload == "{\"n\":10}")
            #expect(due[0].version == 10)
        }
    }

    @Test func dueEntriesSkipTheOnesInFlightAndThoseNotDueYet() async throws {
        try await withIndex { index in
            try await index.write { tx in
                for n in 0..<1_200 {
                    try tx.enqueue(key: .document("\(n)"), docID: "\(n)", kind: .put, payload: "{\"n\":\(n)}", bodyHash: "h", queuedAt: Int64(n))
                }
                try tx.recordFailure(key: .document("1000"), version: 1, error: "503", nextAttemptAt: 50)
            }
            let inFlight = Set((0..<1_000).map { OutboxKey.document("\($0)") }).subtracting([.document("7")])
            let due = try await index.read { try $0.dueEntries(now: 10, limit: 600, excluding: inFlight) }
            #expect(due.map(\.key.text) == ["doc:7"] + (1_001..<1_200).map { "doc:\($0)" })
            #expect(due.last?.payload == #"{"n":1199}"#)
            let firstTwo = try await index.read { try $0.dueEntries(now: 10, limit: 2, excluding: inFlight) }
            #expect(firstTwo.map(\.key.text) == ["doc:7", "doc:1001"])
            // Going on after an entry read before: what follows it in order, less what is in flight
            // or not due.
            let five = try #require(try await index.read { try $0.outboxEntry(key: .document("5")) })
            let onFromFive = try await index.read { try $0.dueEntries(now: 10, limit: 5, excludingAny: [inFlight], after: five.seq) }
            #expect(onFromFive.map(\.key.text) == ["doc:7", "doc:1001", "doc:1002", "doc:1003", "doc:1004"])
            let seven = try #require(onFromFive.first)
            let onFromSeven = try await index.read { try $0.dueEntries(now: 10, limit: 1_000, excludingAny: [[], inFlight], after: seven.seq) }
            #expect(onFromSeven.map(\.key.text) == (1_001..<1_200).map { "doc:\($0)" })
        }
    }

    @Test func anAcknowledgementOfAnOlderVersionLeavesTheNewerQueued() async throws {
        try await withIndex { index in
            try await index.write { try $0.enqueue(key: .document("a"), docID: "a", kind: .put, payload: "v1", bodyHash: "h1", queuedAt: 1) }
            let sent = try #require(try await index.read { try $0.dueEntries(now: 10, limit: 1) }.first)
            try await index.write { try $0.enqueue(key: .document("a"), docID: "a", kind: .put, payload: "v2", bodyHash: "h2", queuedAt: 2) }
            let removed = try await index.write { try $0.removeEntry(sent) }
            #expect(!removed)
            #expect(try await index.read { try $0.outboxEntry(key: .document("a"))?.payload } == "v2")
        }
    }

    @Test func aDocumentEntryCarriesTheBodyAndStampsTheDocumentHoldsWhenRead() async throws {
        try await withIndex { index in
            let body = #"{"id":"a","docType":"note","t":"x"}"#
            try await index.write { tx in
                try tx.upsertDocument(DocumentRow(id: "a", docType: "note", path: "a.json", body: body, bodyHash: "h1", updatedAt: 1_000))
                try tx.enqueue(key: .document("a"), docID: "a", kind: .put, payload: nil, bodyHash: "h1", queuedAt: 1)
            }
            let live = try #require(try await index.read { try $0.dueEntries(now: 10, limit: 1) }.first)
            #expect(live.payload == #"{"id":"a","docType":"note","t":"x","updated_at":"1970-01-01T00:00:01.000Z"}"#)
            // A tombstone: both stamps.
            try await index.write { tx in
                var doc = try #require(try tx.document(id: "a"))
                doc.deletedAt = 2_000
                doc.updatedAt = 2_000
                try tx.upsertDocument(doc)
                try tx.enqueue(key: .document("a"), docID: "a", kind: .put, payload: nil, bodyHash: "deleted:h1", queuedAt: 2)
            }
            let deleted = try #require(try await index.read { try $0.outboxEntry(key: .document("a")) })
            #expect(deleted.payload == #"{"id":"a","docType":"note","t":"x","updated_at":"1970-01-01T00:00:02.000Z","deleted_at":"1970-01-01T00:00:02.000Z"}"#)
        }
    }

    @Test func aMergeBaseEqualToTheBodyComesBackAsTheBodyAndADifferentOneAsItself() async throws {
        try await withIndex { index in
            try await index.write { tx in
                try tx.upsertDocument(DocumentRow(id: "same", docType: "n", path: nil, body: "{\"a\":1}", bodyHash: "h", base: "{\"a\":1}"))
                try tx.upsertDocument(DocumentRow(id: "other", docType: "n", path: nil, body: "{\"a\":2}", bodyHash: "h", base: "{\"a\":1}"))
                try tx.upsertDocument(DocumentRow(id: "none", docType: "n", path: nil, body: "{\"a\":3}", bodyHash: "h"))
            }
            let docs = try await index.read { try $0.documents(ids: ["same", "other", "none"]) }
            #expect(docs["same"]?.base == "{\"a\":1}")
            #expect(docs["other"]?.base == "{\"a\":1}")
            #expect(docs["none"]?.base == nil)
            // An acknowledgement whose base hashes like the body stores the flag; the body changing
            // afterwards does not drag the base along.
            try await index.write { tx in
                try tx.recordAcknowledged(id: "none", pushedHash: "h", serverRev: 7, base: "{\"a\":3}", baseHash: "h", current: true)
            }
            var acked = try #require(try await index.read { try $0.document(id: "none") })
            #expect(acked.base == "{\"a\":3}")
            #expect(acked.serverRev == 7)
            #expect(acked.state == .synced)
            acked.body = "{\"a\":4}"
            acked.bodyHash = "h4"
            try await index.write { [acked] in try $0.upsertDocument(acked) }
            #expect(try await index.read { try $0.document(id: "none")?.base } == "{\"a\":3}")
        }
    }

    @Test func failuresBackOffPerEntry() async throws {
        try await withIndex { index in
            try await index.write { try $0.enqueue(key: .document("a"), docID: "a", kind: .put, payload: "v1", bodyHash: "h1", queuedAt: 1) }
            try await index.write { try $0.recordFailure(key: .document("a"), version: 1, error: "boom", nextAttemptAt: 500) }
            #expect(try await index.read { try $0.dueEntries(now: 499, limit: 5) }.isEmpty)
            #expect(try await index.read { try $0.dueEntries(now: 500, limit: 5) }.count == 1)
            #expect(try await index.read { try $0.outboxEntry(key: .document("a"))?.attempts } == 1)
            #expect(try await index.read { try $0.nextAttemptAt() } == 500)
        }
    }

    @Test func filesUnderAFolderAreFoundByPrefixOnly() async throws {
        try await withIndex { index in
            let stat = FileStat(size: 1, mtimeNs: 1, inode: 1)
            for path in ["a/x.json", "a/b/y.json", "ab/z.json", "a.json"] {
                try await index.write { try $0.upsertFile(FileRow(path: path, docID: nil, docType: nil, hash: nil, stat: stat, state: .ok, error: nil)) }
            }
            let under = try await index.read { try $0.files(atOrUnder: "a") }.map(\.path).sorted()
            #expect(under == ["a/b/y.json", "a/x.json"])
        }
    }

    /// Rows are bound and read through SQLite's C API: text of any script (and a NUL inside a
    /// JSON string's escape-free text), NULL against empty, and 64-bit inodes come back as stored.
    @Test func rowsComeBackExactlyAsStored() async throws {
        try await withIndex { index in
            let path = "Überweisungen/2026 — café 😀.json"
            let stat = FileStat(size: 1 << 40, mtimeNs: -5, inode: UInt64.max - 1)
            let body = "{\"name\":\"Zoë \u{0} 東京\"}"
            try await index.write { tx in
                try tx.upsertFile(FileRow(path: path, docID: "d1", docType: "", hash: nil, stat: stat, state: .ok, error: "ä"))
                try tx.upsertDocument(DocumentRow(id: "d1", docType: "", path: path, body: body, bodyHash: "h", updatedAt: nil, deletedAt: 7))
            }
            let file = try #require(try await index.read { try $0.file(at: path) })
            #expect(file.docID == "d1")
            #expect(file.docType == "")
            #expect(file.hash == nil)
            #expect(file.stat == stat)
            #expect(file.error == "ä")
            #expect(try await index.read { try $0.files(at: [path, "missing.json"]) }.keys.sorted() == [path])
            #expect(try await index.read { try $0.allFileStats() }[path]?.stat == stat)
            let doc = try #require(try await index.read { try $0.documents(ids: ["d1"]) }["d1"])
            #expect(doc.body == body)
            #expect(doc.path == path)
            #expect(doc.updatedAt == nil)
            #expect(doc.deletedAt == 7)
        }
    }

    /// Lookups by list are bound in fixed lengths (padded with the last value) and chunks of 500.
    @Test func lookupsByListFindEveryRowOnceWhateverTheListLength() async throws {
        try await withIndex { index in
            let stat = FileStat(size: 1, mtimeNs: 1, inode: 1)
            let paths = (0..<1203).map { "f\($0).json" }
            try await index.write { tx in
                for p in paths { try tx.upsertFile(FileRow(path: p, docID: nil, docType: nil, hash: nil, stat: stat, state: .ok, error: nil)) }
            }
            for n in [1, 2, 5, 17, 500, 501, 1203] {
                let asked = Array(paths.prefix(n)) + ["missing-\(n).json"]
                let found = try await index.read { try $0.files(at: asked) }
                #expect(found.keys.sorted() == paths.prefix(n).sorted(), "\(n) paths")
            }
        }
    }

    /// Uploads and document writes share the outbox; each side sees only its own entries, in order.
    @Test func entriesOfEachKindComeOutSeparatelyInOrder() async throws {
        try await withIndex { index in
            try await index.write { tx in
                for i in 0..<40 {
                    let kind: OutboxKind = i % 10 == 3 ? .upload : .put
                    try tx.enqueue(key: OutboxKey(stored: "\(kind.rawValue):\(i)"), docID: "d\(i)", kind: kind, payload: "{}", bodyHash: "h", queuedAt: Int64(i))
                }
                try tx.recordFailure(key: OutboxKey(stored: "upload:13"), version: 1, error: "later", nextAttemptAt: 900)
            }
            let uploads = try await index.read { try $0.dueEntries(now: 100, limit: 10, kind: .upload) }
            #expect(uploads.map(\.key.text) == ["upload:3", "upload:23", "upload:33"])
            let skipping = try await index.read { try $0.dueEntries(now: 1000, limit: 10, kind: .upload, excluding: [OutboxKey(stored: "upload:3")]) }
            #expect(skipping.map(\.key.text) == ["upload:13", "upload:23", "upload:33"])
            #expect(try await index.read { try $0.nextAttemptAt(kind: .upload) } == 0)
            #expect(try await index.read { try $0.pendingCount(kind: .upload) } == 4)
            let puts = try await index.read { try $0.dueEntries(now: 100, limit: 7, excluding: [OutboxKey(stored: "put:0"), OutboxKey(stored: "put:2")]) }
            #expect(puts.map(\.key.text) == ["put:1", "put:4", "put:5", "put:6", "put:7", "put:8", "put:9"])
        }
    }

    @Test func aDocumentIDBelongsToOneFile() async throws {
        try await withIndex { index in
            let stat = FileStat(size: 1, mtimeNs: 1, inode: 1)
            try await index.write { try $0.upsertFile(FileRow(path: "a.json", docID: "x", docType: "t", hash: nil, stat: stat, state: .ok, error: nil)) }
            await #expect(throws: (any Error).self) {
                try await index.write { try $0.upsertFile(FileRow(path: "b.json", docID: "x", docType: "t", hash: nil, stat: stat, state: .ok, error: nil)) }
            }
        }
    }
}
