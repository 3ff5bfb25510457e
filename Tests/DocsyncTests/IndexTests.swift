import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The SQLite index on a real file.
@Suite struct IndexTests {
    func withIndex(_ body: (Index) async throws -> Void) async throws {
        let folder = try TempFolder("index")
        defer { folder.remove() }
        try await body(try Index.open(root: folder.path))
    }

    @Test func openingCreatesTheStateFolderWithItsGitignoreAndMigrates() throws {
        let folder = try TempFolder("index")
        defer { folder.remove() }
        _ = try Index.open(root: folder.path)
        #expect(try folder.read(".docsync/.gitignore") == "*\n")
        #expect(Index.exists(root: folder.path))
        _ = try Index.open(root: folder.path)  // reopening runs no migration twice
    }

    @Test func outboxCollapsesToTheLatestStatePerDocument() async throws {
        try await withIndex { index in
            for n in 1...10 {
                try await index.write { tx in
                    try tx.enqueue(key: "doc:a", docID: "a", kind: "put", payload: "{\"n\":\(n)}", bodyHash: "h\(n)", queuedAt: Int64(n))
                }
            }
            try await index.write { try $0.enqueue(key: "doc:b", docID: "b", kind: "put", payload: "{}", bodyHash: "hb", queuedAt: 11) }
            let due = try await index.read { try $0.dueEntries(now: 100, limit: 10) }
            #expect(due.map(\.key) == ["doc:a", "doc:b"], "order by first queued")
            #expect(due[0].payload == "{\"n\":10}")
            #expect(due[0].version == 10)
        }
    }

    @Test func dueEntriesSkipTheOnesInFlightAndThoseNotDueYet() async throws {
        try await withIndex { index in
            try await index.write { tx in
                for n in 0..<1_200 {
                    try tx.enqueue(key: "doc:\(n)", docID: "\(n)", kind: "put", payload: "{\"n\":\(n)}", bodyHash: "h", queuedAt: Int64(n))
                }
                try tx.recordFailure(key: "doc:1000", version: 1, error: "503", nextAttemptAt: 50)
            }
            let inFlight = Set((0..<1_000).map { "doc:\($0)" }).subtracting(["doc:7"])
            let due = try await index.read { try $0.dueEntries(now: 10, limit: 600, excluding: inFlight) }
            #expect(due.map(\.key) == ["doc:7"] + (1_001..<1_200).map { "doc:\($0)" })
            #expect(due.last?.payload == #"{"n":1199}"#)
            let firstTwo = try await index.read { try $0.dueEntries(now: 10, limit: 2, excluding: inFlight) }
            #expect(firstTwo.map(\.key) == ["doc:7", "doc:1001"])
        }
    }

    @Test func anAcknowledgementOfAnOlderVersionLeavesTheNewerQueued() async throws {
        try await withIndex { index in
            try await index.write { try $0.enqueue(key: "doc:a", docID: "a", kind: "put", payload: "v1", bodyHash: "h1", queuedAt: 1) }
            let sent = try #require(try await index.read { try $0.dueEntries(now: 10, limit: 1) }.first)
            try await index.write { try $0.enqueue(key: "doc:a", docID: "a", kind: "put", payload: "v2", bodyHash: "h2", queuedAt: 2) }
            let removed = try await index.write { try $0.removeEntry(key: sent.key, version: sent.version) }
            #expect(!removed)
            #expect(try await index.read { try $0.outboxEntry(key: "doc:a")?.payload } == "v2")
        }
    }

    @Test func aDocumentEntryCarriesTheBodyAndStampsTheDocumentHoldsWhenRead() async throws {
        try await withIndex { index in
            let body = #"{"id":"a","docType":"note","t":"x"}"#
            try await index.write { tx in
                try tx.upsertDocument(DocumentRow(id: "a", docType: "note", path: "a.json", body: body, bodyHash: "h1", updatedAt: 1_000))
                try tx.enqueue(key: "doc:a", docID: "a", kind: "put", payload: nil, bodyHash: "h1", queuedAt: 1)
            }
            let live = try #require(try await index.read { try $0.dueEntries(now: 10, limit: 1) }.first)
            #expect(live.payload == #"{"id":"a","docType":"note","t":"x","updated_at":"1970-01-01T00:00:01.000Z"}"#)
            // A tombstone: both stamps.
            try await index.write { tx in
                var doc = try #require(try tx.document(id: "a"))
                doc.deletedAt = 2_000
                doc.updatedAt = 2_000
                try tx.upsertDocument(doc)
                try tx.enqueue(key: "doc:a", docID: "a", kind: "put", payload: nil, bodyHash: "deleted:h1", queuedAt: 2)
            }
            let deleted = try #require(try await index.read { try $0.outboxEntry(key: "doc:a") })
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
            try await index.write { try $0.enqueue(key: "doc:a", docID: "a", kind: "put", payload: "v1", bodyHash: "h1", queuedAt: 1) }
            try await index.write { try $0.recordFailure(key: "doc:a", version: 1, error: "boom", nextAttemptAt: 500) }
            #expect(try await index.read { try $0.dueEntries(now: 499, limit: 5) }.isEmpty)
            #expect(try await index.read { try $0.dueEntries(now: 500, limit: 5) }.count == 1)
            #expect(try await index.read { try $0.outboxEntry(key: "doc:a")?.attempts } == 1)
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
                    let kind = i % 10 == 3 ? "upload" : "put"
                    try tx.enqueue(key: "\(kind):\(i)", docID: "d\(i)", kind: kind, payload: "{}", bodyHash: "h", queuedAt: Int64(i))
                }
                try tx.recordFailure(key: "upload:13", version: 1, error: "later", nextAttemptAt: 900)
            }
            let uploads = try await index.read { try $0.dueEntries(now: 100, limit: 10, kind: "upload") }
            #expect(uploads.map(\.key) == ["upload:3", "upload:23", "upload:33"])
            let skipping = try await index.read { try $0.dueEntries(now: 1000, limit: 10, kind: "upload", excluding: ["upload:3"]) }
            #expect(skipping.map(\.key) == ["upload:13", "upload:23", "upload:33"])
            #expect(try await index.read { try $0.nextAttemptAt(kind: "upload") } == 0)
            #expect(try await index.read { try $0.pendingCount(kind: "upload") } == 4)
            let puts = try await index.read { try $0.dueEntries(now: 100, limit: 7, excluding: ["put:0", "put:2"]) }
            #expect(puts.map(\.key) == ["put:1", "put:4", "put:5", "put:6", "put:7", "put:8", "put:9"])
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
