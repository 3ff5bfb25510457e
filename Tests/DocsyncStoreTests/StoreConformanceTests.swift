import DocsyncSQLiteStore
import DocsyncStore
import DocsyncModel
import DocsyncPostgres
import Logging
import DocsyncServer
import DocsyncTestSupport
import Testing

/// A document store to test, and how to make a fresh one: a new store adds a case here and
/// passes `StoreConformanceTests` unchanged.
struct StoreFixture: Sendable, CustomTestStringConvertible {
    let name: String
    let make: @Sendable () async throws -> (store: any DocumentStore, cleanup: @Sendable () async -> Void)

    var testDescription: String { name }

    static let all: [StoreFixture] = [memory, sqlite, postgres]

    static let memory = StoreFixture(name: "memory") {
        let store = MemoryDocumentStore()
        return (store, {})
    }

    static let sqlite = StoreFixture(name: "sqlite") {
        let folder = try TempFolder("store")
        let store = try SQLiteDocumentStore(path: folder.file("documents.sqlite"))
        return (store, { await store.close(); folder.remove() })
    }

    /// A database of its own on the test process's throw-away PostgreSQL cluster.
    static let postgres = StoreFixture(name: "postgres") {
        let cluster = try await PostgresCluster.shared()
        let database = try cluster.createDatabase()
        var logger = Logger(label: "postgres")
        logger.logLevel = .critical
        let store = try await PostgresDocumentStore(
            configuration: .init(host: "127.0.0.1", port: cluster.port, username: "postgres", password: nil, database: database, tls: .disable),
            logger: logger)
        return (store, { await store.close() })
    }
}

/// The contract of the store seam, in code (see ``DocumentStore``): revisions, If-Match, stamps,
/// tombstones, the change sequence and "not echoed to its writer", for every store.
@Suite struct StoreConformanceTests {
    let now: Int64 = 1_800_000_000_000

    func with(_ fixture: StoreFixture, _ body: (any DocumentStore) async throws -> Void) async throws {
        let (store, cleanup) = try await fixture.make()
        do {
            try await body(store)
        } catch {
            await cleanup()
            throw error
        }
        await cleanup()
    }

    func doc(_ id: String, _ fields: String = "") -> JSONObject {
        try! JSONParser.parse(#"{"id":"\#(id)","docType":"note"\#(fields.isEmpty ? "" : ",")\#(fields)}"#).object!
    }

    func rev(_ object: JSONObject?) -> Int64? { if case .number(let r)? = object?[DocumentRules.revKey] { Int64(r) } else { nil } }

    @Test(arguments: StoreFixture.all)
    func revisionsStrictlyIncreasePerDocument(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            var revisions: [Int64] = []
            for i in 0..<5 { revisions.append(rev(try await store.put(doc("a", #""v":\#(i)"#), now: now)) ?? 0) }
            #expect(revisions == [1, 2, 3, 4, 5])
            #expect(rev(try await store.put(doc("b"), now: now)) == 1, "per document")
        }
    }

    @Test(arguments: StoreFixture.all)
    func ifMatchRefusesAStaleRevisionWithTheCurrentDocument(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            _ = try await store.put(doc("a", #""v":1"#), now: now)
            _ = try await store.put(doc("a", #""v":2"#), now: now, ifMatch: 1)
            await #expect { try await store.put(doc("a", #""v":3"#), now: now, ifMatch: 1) } throws: { error in
                guard let e = error as? StoreError else { return false }
                return e.kind == .conflict && e.current?.object?["v"] == 2
            }
            await #expect(throws: StoreError.self) { try await store.put(doc("a"), now: now, mustCreate: true) }
            #expect(try await store.get(id: "a")?.object?["v"] == 2, "the refused write changed nothing")
        }
    }

    /// A client whose reply was lost meets its own write as the current version: the store says
    /// so, so the client's later change is not taken for a conflict with someone else.
    @Test(arguments: StoreFixture.all)
    func aConflictSaysWhenTheCurrentVersionIsTheCallersOwn(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            _ = try await store.put(doc("a", #""v":1"#), now: now, client: "agent-a")
            _ = try await store.put(doc("a", #""v":2"#), now: now, ifMatch: 1, client: "agent-a")
            func conflict(asking client: String) async -> StoreError? {
                do {
                    _ = try await store.put(doc("a", #""v":3"#), now: now, ifMatch: 1, client: client)
                    return nil
                } catch {
                    return error as? StoreError
                }
            }
            let own = await conflict(asking: "agent-a")
            #expect(own?.kind == .conflict && own?.currentIsCallers == true && own?.current?.object?["v"] == 2)
            let other = await conflict(asking: "agent-b")
            #expect(other?.kind == .conflict && other?.currentIsCallers == false)
        }
    }

    @Test(arguments: StoreFixture.all)
    func aClientStampIsKeptUnlessItIsFromTheFuture(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            let past = Timestamp(unixMilliseconds: now - 60_000).rfc3339
            let future = Timestamp(unixMilliseconds: now + 3_600_000).rfc3339
            let kept = try await store.put(doc("p", #""updated_at":"\#(past)""#), now: now)
            let replaced = try await store.put(doc("f", #""updated_at":"\#(future)""#), now: now)
            let garbage = try await store.put(doc("g", #""updated_at":"yesterday""#), now: now)
            #expect(kept[DocumentRules.updatedAtKey]?.string == past)
            #expect(replaced[DocumentRules.updatedAtKey]?.string == Timestamp(unixMilliseconds: now).rfc3339)
            #expect(garbage[DocumentRules.updatedAtKey]?.string == Timestamp(unixMilliseconds: now).rfc3339)
        }
    }

    @Test(arguments: StoreFixture.all)
    func aDeleteLeavesATombstoneThatIsListedAndFollowed(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            _ = try await store.put(doc("t", #""v":1"#), now: now)
            let before = try await store.latestSeq()
            let tombstone = try await store.delete(id: "t", docType: "note", now: now + 1)
            #expect(tombstone[DocumentRules.deletedAtKey]?.string != nil)
            #expect(try await store.get(id: "t")?.object?[DocumentRules.deletedAtKey]?.string != nil, "never removed")
            #expect(try await store.list(docType: "note", includeDeleted: true, after: "", limit: 10).count == 1)
            #expect(try await store.list(docType: "note", includeDeleted: false, after: "", limit: 10).isEmpty)
            let after = try await store.sync(since: before, documents: [], now: now, limit: 100)
            #expect(after.changes.count == 1 && after.changes[0].contains("deleted_at"))
            #expect(try await store.stats().tombstones == 1)
        }
    }

    @Test(arguments: StoreFixture.all)
    func aFollowerOfTheSequenceSeesEveryChangeOnceInPages(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            for i in 0..<7 { _ = try await store.put(doc("d\(i)"), now: now) }
            _ = try await store.put(doc("d3", #""v":2"#), now: now)
            var (cursor, seen, calls) = (Int64(0), [String](), 0)
            while true {
                let page = try await store.sync(since: cursor, documents: [], now: now, limit: 3)
                seen += page.changes.compactMap { try? JSONParser.parse($0).object?["id"]?.string }
                cursor = page.cursor
                calls += 1
                if !page.more { break }
            }
            #expect(seen == ["d0", "d1", "d2", "d4", "d5", "d6", "d3"], "in sequence order, the rewritten one once, last")
            #expect(calls == 3 && cursor == 8)
            #expect(try await store.sync(since: cursor, documents: [], now: now, limit: 3).changes.isEmpty)
        }
    }

    /// A selection of docTypes: only those types' changes, in sequence order, paged and counted
    /// as a follower of the whole sequence would see them; or every type but some.
    @Test(arguments: StoreFixture.all)
    func aSelectionOfDocTypesIsServedInSequenceOrderInPages(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            for i in 0..<12 {
                let type = ["a", "b", "c"][i % 3]
                _ = try await store.put(try JSONParser.parse(#"{"id":"\#(type)\#(i)","docType":"\#(type)"}"#).object!, now: now)
            }
            _ = try await store.put(try JSONParser.parse(#"{"id":"b1","docType":"b","v":2}"#).object!, now: now, client: "w")
            func follow(_ selection: TypeSelection, client: String? = nil) async throws -> [String] {
                var (cursor, seen) = (Int64(0), [String]())
                while true {
                    let page = try await store.sync(since: cursor, documents: [], now: now, limit: 2, client: client, selection: selection)
                    seen += page.changes.compactMap { try? JSONParser.parse($0).object?["id"]?.string }
                    #expect(page.cursor >= cursor)
                    cursor = page.cursor
                    if !page.more { break }
                }
                #expect(cursor == 13, "the cursor ends at the latest change, whatever was selected")
                return seen
            }
            #expect(try await follow(TypeSelection(only: ["b"])) == ["b4", "b7", "b10", "b1"])
            #expect(try await follow(TypeSelection(only: ["a", "c"])) == ["a0", "c2", "a3", "c5", "a6", "c8", "a9", "c11"])
            #expect(try await follow(TypeSelection(only: ["a", "b"], except: ["a"])) == ["b4", "b7", "b10", "b1"])
            #expect(try await follow(TypeSelection(except: ["a", "c"])) == ["b4", "b7", "b10", "b1"])
            #expect(try await follow(TypeSelection(only: ["b"]), client: "w") == ["b4", "b7", "b10"], "not echoed to its writer")
            #expect(try await follow(TypeSelection(only: ["nothing"])).isEmpty)
        }
    }

    /// Tombstones past their retention go; the change numbers never go back; a follower whose
    /// cursor is below the purge horizon is told so by `horizon`.
    @Test(arguments: StoreFixture.all)
    func purgedTombstonesMoveTheHorizonAndTheSequenceGoesOn(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            _ = try await store.put(doc("keep"), now: now)
            _ = try await store.put(doc("old"), now: now)
            let seen = try await store.latestSeq()
            _ = try await store.delete(id: "old", docType: "note", now: now + 10)
            #expect(try await store.purgeTombstones(deletedBefore: now + 10) == 0, "deleted at the cutoff: kept")
            #expect(try await store.purgeTombstones(deletedBefore: now + 11) == 1)
            let (gone, tombstones) = (try await store.get(id: "old"), try await store.stats().tombstones)
            #expect(gone == nil && tombstones == 0)
            let after = try await store.sync(since: seen, documents: [], now: now, limit: 100)
            #expect(after.horizon == seen + 1 && after.purgedBefore == now + 11, "the purged tombstone was change \(seen + 1)")
            #expect(try await store.latestSeq() == seen + 1, "the sequence does not go back")
            let next = try await store.put(doc("new"), now: now)
            #expect(rev(next) == 1)
            let page = try await store.sync(since: seen + 1, documents: [], now: now, limit: 100)
            #expect(page.changes.count == 1 && page.cursor == seen + 2, "the next change gets a new number")
            #expect(try await store.purgeTombstones(deletedBefore: now) == 0)
            #expect(try await store.sync(since: 0, documents: [], now: now, limit: 100).purgedBefore == now + 11, "the time only moves on")
        }
    }

    @Test(arguments: StoreFixture.all)
    func aWriterIsNotSentItsOwnWritesBack(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            let mine = try await store.sync(since: 0, documents: [.object(doc("m"))], now: now, limit: 100, client: "agent-a")
            #expect(mine.stored.count == 1 && mine.changes.isEmpty)
            _ = try await store.put(doc("o"), now: now, client: "agent-b")
            let forA = try await store.sync(since: 0, documents: [], now: now, limit: 100, client: "agent-a")
            let forB = try await store.sync(since: 0, documents: [], now: now, limit: 100, client: "agent-b")
            #expect(forA.changes.map { try? JSONParser.parse($0).object?["id"] } == [.string("o")])
            #expect(forB.changes.map { try? JSONParser.parse($0).object?["id"] } == [.string("m")])
        }
    }

    @Test(arguments: StoreFixture.all)
    func aBatchRefusesAStaleOrBadDocumentAloneAndStoresTheRest(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            _ = try await store.put(doc("s", #""v":1"#), now: now)
            _ = try await store.put(doc("s", #""v":2"#), now: now)
            let stale: JSONValue = .object(doc("s", #""v":9,"rev":1"#))
            let outcome = try await store.sync(
                since: 0, documents: [stale, ["docType": "note"], .object(doc("fine"))], now: now, limit: 100, client: "c")
            #expect(outcome.stored.map { $0["id"] } == [.string("fine")])
            #expect(outcome.errors.count == 2)
            #expect(outcome.errors[0]["message"]?.string?.hasPrefix("revision") == true)
            #expect(outcome.errors[0]["current"]?.object?["v"] == 2)
        }
    }

    @Test(arguments: StoreFixture.all)
    func theExactTextIsKept(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            _ = try await store.put(try JSONParser.parse(#"{"z":1.50,"id":"x","docType":"note","a":12345678901234567890}"#).object!, now: now)
            let text = try #require(try await store.list(docType: "note", includeDeleted: true, after: "", limit: 10).first?.body)
            #expect(text.hasPrefix(#"{"z":1.50,"id":"x","docType":"note","a":12345678901234567890,"#), "\(text)")
        }
    }

    @Test(arguments: StoreFixture.all)
    func aCursorPastTheLatestChangeIsAnsweredWithTheLatest(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            for i in 0..<3 { _ = try await store.put(doc("r\(i)"), now: now) }
            let outcome = try await store.sync(since: 50, documents: [], now: now, limit: 100)
            #expect(outcome.cursor == 3, "a lower cursor tells the client to reconcile")
        }
    }

    /// A batch is written in its order: a document named twice is written twice (the second
    /// seeing the first's revision), a stale base is told the version the batch itself just wrote,
    /// a deletion keeps its tombstone, and a reader sees each document once, at its last version,
    /// numbered where it was last written.
    @Test(arguments: StoreFixture.all)
    func aBatchIsWrittenInItsOrderAndADocumentNamedTwiceIsWrittenTwice(_ fixture: StoreFixture) async throws {
        try await with(fixture) { store in
            _ = try await store.put(doc("gone"), now: now)
            let before = try await store.sync(since: 0, documents: [], now: now, limit: 100).cursor
            let batch: [JSONValue] = [
                .object(doc("t", #""v":1"#)), .object(doc("u")), .object(doc("t", #""v":2,"rev":1"#)),
                .object(doc("t", #""v":3,"rev":1"#)), .object(doc("gone", #""deleted_at":"2026-11-27T10:00:00Z""#)),
            ]
            let outcome = try await store.sync(since: before, documents: batch, now: now, limit: 100, client: "c")
            #expect(outcome.stored.map { $0["id"]?.string ?? "" } == ["t", "u", "t", "gone"])
            #expect(outcome.stored.map { rev($0) } == [1, 1, 2, 2])
            #expect(outcome.errors.count == 1)
            #expect(outcome.errors.first?["current"]?.object?["v"] == 2, "told the version the batch wrote before")

            let read = try await store.sync(since: before, documents: [], now: now, limit: 100)
            let seen = read.changes.compactMap { try? JSONParser.parse($0).object }
            #expect(seen.map { $0["id"]?.string ?? "" } == ["u", "t", "gone"])
            #expect(seen.map { rev($0) } == [1, 2, 2])
            #expect(seen.last?["deleted_at"] != nil)
        }
    }
}
