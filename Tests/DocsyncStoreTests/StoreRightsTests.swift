import DocsyncModel
import DocsyncStore
import Testing

/// Rights per token (``Access``), the matrix of each right against each way a store is written
/// and read, on every store: the rules live in `StoreRules` and `Access`, once, and each store
/// must apply them where it reads what a write would change.
@Suite struct StoreRightsTests {
    let now: Int64 = 1_800_000_000_000
    let conformance = StoreConformanceTests()

    static func access(_ rights: String) -> Access { try! Access(rights: rights.split(separator: " ").map(String.init)) }
    let viewer = access("read:*")
    let bob = access("read:* write:note")
    let inbox = access("create:report")
    let noteReader = access("read:note")
    let starWriter = access("read:note write:*")

    func doc(_ id: String, _ type: String, _ fields: String = "") -> JSONObject {
        try! JSONParser.parse(#"{"id":"\#(id)","docType":"\#(type)"\#(fields.isEmpty ? "" : ",")\#(fields)}"#).object!
    }

    /// A note, a task, a report and the note's schema, written with every right.
    func seeded(_ fixture: StoreFixture, _ body: (any DocumentStore) async throws -> Void) async throws {
        try await conformance.with(fixture) { store in
            for (id, type) in [("n1", "note"), ("t1", "task"), ("r1", "report"), ("note", "schema")] {
                _ = try await store.put(doc(id, type, #""v":1"#), now: now)
            }
            try await body(store)
        }
    }

    /// The right a refused call names, or "allowed".
    func outcome(_ call: () async throws -> Any) async -> String {
        do {
            _ = try await call()
            return "allowed"
        } catch let error as StoreError where error.kind == .forbidden {
            return error.right ?? "forbidden"
        } catch let error as StoreError where error.kind == .notFound {
            return "not found"
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: StoreFixture.all)
    func writesNeedTheirRightWhateverTheStore(_ fixture: StoreFixture) async throws {
        try await seeded(fixture) { store throws in
            func put(_ d: JSONObject, _ a: Access, mustCreate: Bool = false) async -> String {
                await outcome { try await store.put(d, now: now, mustCreate: mustCreate, access: a) }
            }
            #expect(await put(doc("n2", "note"), viewer) == "create:note")
            #expect(await put(doc("n1", "note", #""v":2"#), viewer) == "write:note")
            #expect(await put(doc("n2", "note"), bob) == "allowed")
            #expect(await put(doc("n1", "note", #""v":2"#), bob) == "allowed")
            #expect(await put(doc("t1", "task", #""v":2"#), bob) == "write:task")
            #expect(await put(doc("n1", "task"), bob) == "write:task", "a note made a task needs write:task")
            #expect(await put(doc("t1", "note"), bob) == "write:task", "a task written over as a note needs write:task")
            #expect(await put(doc("r2", "report"), inbox, mustCreate: true) == "allowed")
            #expect(await put(doc("r1", "report", #""v":2"#), inbox) == "write:report", "create only: no update")
            #expect(await put(doc("n3", "note"), inbox) == "create:note")
            // The schema docType is written only with its own right.
            #expect(await put(doc("note", "schema", #""type":"object""#), starWriter) == "write:schema")
            #expect(await put(doc("task", "schema"), starWriter) == "create:schema")
            #expect(await put(doc("task", "schema"), Self.access("write:schema")) == "allowed")
            // A document the writer may not read is not named by its docType.
            let hidden = await outcome { try await store.put(doc("t1", "note"), now: now, access: Self.access("write:note")) }
            #expect(hidden == "write")
            // A refused write stored nothing.
            #expect(try await store.get(id: "r1")?.object?["v"] == .number("1"))
            #expect(try await store.get(id: "t1")?.object?["docType"] == .string("task"))
        }
    }

    @Test(arguments: StoreFixture.all)
    func aBatchStoresWhatItMayAndSaysWhichWasRefused(_ fixture: StoreFixture) async throws {
        try await seeded(fixture) { store in
            let batch: [JSONValue] = [.object(doc("n9", "note")), .object(doc("t9", "task")), .object(doc("t1", "task", #""v":5"#))]
            let outcome = try await store.sync(since: 0, documents: batch, now: now, limit: 100, access: bob)
            #expect(outcome.stored.compactMap { $0["id"]?.string } == ["n9"])
            #expect(outcome.errors.compactMap { $0["id"]?.string } == ["t9", "t1"])
            #expect(outcome.errors.allSatisfy { $0["status"] == .number("403") && $0["current"] == nil })
            #expect(outcome.errors.compactMap { $0["right"]?.string } == ["create:task", "write:task"])
        }
    }

    @Test(arguments: StoreFixture.all)
    func deletesAndUploadsNeedWriteAndAnUnreadableDocumentIsNotThere(_ fixture: StoreFixture) async throws {
        try await seeded(fixture) { store in
            #expect(await outcome { try await store.delete(id: "n1", docType: "note", now: now, author: nil, access: viewer) } == "write:note")
            #expect(await outcome { try await store.delete(id: "r1", docType: "report", now: now, author: nil, access: inbox) } == "write:report")
            #expect(await outcome { try await store.delete(id: "t1", docType: "task", now: now, author: nil, access: noteReader) } == "not found")
            let blob = StoredBlob(sha256: String(repeating: "a", count: 64), size: 1, contentType: "text/plain")
            func attach(_ id: String, _ type: String, _ a: Access) async -> String {
                await outcome {
                    try await store.attach(blob: blob, to: id, docType: type, property: "f", url: "u", now: now, client: nil, author: nil, access: a)
                }
            }
            #expect(await attach("n1", "note", viewer) == "write:note")
            #expect(await attach("t1", "task", noteReader) == "not found")
            #expect(await attach("n1", "note", bob) == "allowed")
            let stored = try #require(try await store.blob(sha256: blob.sha256))
            #expect(stored.docTypes == ["note"])
            #expect(stored.isReadable(by: noteReader) && stored.isReadable(by: viewer) && !stored.isReadable(by: Self.access("read:task")))
            #expect(await outcome { try await store.delete(id: "n1", docType: "note", now: now, author: nil, access: bob) } == "allowed")
        }
    }

    /// A token never learns what it may not read: not a document, not its id, not that it exists.
    @Test(arguments: StoreFixture.all)
    func readsShowOnlyWhatTheTokenMayRead(_ fixture: StoreFixture) async throws {
        try await seeded(fixture) { store in
            #expect(try await store.get(id: "n1", access: noteReader) != nil)
            #expect(try await store.get(id: "t1", access: noteReader) == nil, "answered as an id that does not exist")
            #expect(try await store.get(id: "r1", access: inbox) == nil)
            #expect(await outcome { try await store.list(docType: "task", includeDeleted: true, after: "", limit: 10, access: noteReader) } == "read:task")
            let pulled = try await store.sync(since: 0, documents: [], now: now, limit: 100, access: noteReader)
            #expect(pulled.changes.compactMap { try? JSONParser.parse($0).object?["id"]?.string } == ["n1"])
            let few = try await store.sync(since: 0, documents: [], now: now, limit: 100, selection: TypeSelection(only: ["task", "note"]), access: noteReader)
            #expect(few.changes.count == 1, "a selection never widens what may be read")
            #expect(try await store.sync(since: 0, documents: [], now: now, limit: 100, access: inbox).changes.isEmpty)
            // A conflict says nothing of a current version the writer may not read.
            let stale = try await store.sync(
                since: 0, documents: [.object(doc("t1", "task", #""rev":0"#))], now: now, limit: 100, access: Self.access("read:note write:task"))
            #expect(stale.errors.first?["current"] == nil && stale.errors.first?["message"] != nil)
            let readable = try await store.sync(since: 0, documents: [.object(doc("n1", "note", #""rev":0"#))], now: now, limit: 100, access: bob)
            #expect(readable.errors.first?["current"]?.object?["id"] == .string("n1"))
        }
    }
}
