import DocsyncEndpoint
import DocsyncClock
import DocsyncModel
import DocsyncServer
import DocsyncStore
import DocsyncTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// A long poll held while its own client pushes: each push wakes it, and it looks again for
/// changes meant for it. Each look starts where the last ended: an agent importing with its poll
/// open would otherwise have every push read back all it had pushed since the poll began.
@Suite struct LongPollTests {
    /// A reply lists at most `"limit"` changes, with `more` saying the rest waits; a limit outside
    /// 1...1000, or not a whole number, is refused naming it.
    @Test func aReplyListsAtMostTheLimitAndABadLimitIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let docs = (0..<50).map { #"{"id":"l\#($0)","docType":"note"}"# }.joined(separator: ",")
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"documents":[\#(docs)]}"#, headers: [("X-Docsync-Client", "writer")]).status == 200)
        func page(_ body: String) async throws -> (count: Int, more: Bool, cursor: Int) {
            let reply = try await server.api.request("POST", "/api/sync", body: body)
            let object = reply.json?.object
            guard case .array(let listed)? = object?["documents"]?.object?["success"], case .number(let cursor)? = object?["cursor"] else { return (-1, false, -1) }
            return (listed.count, object?["more"] == .bool(true), Int(cursor) ?? -1)
        }
        let first = try await page(#"{"since":0,"limit":20}"#)
        #expect(first.count == 20 && first.more)
        let rest = try await page(#"{"since":\#(first.cursor),"limit":1000}"#)
        #expect(rest.count == 30 && !rest.more)
        #expect(try await page(#"{"since":0}"#).count == 50, "no limit: the server's page")
        #expect(try await page(#"{"since":0,"limit":2e1}"#).count == 20, "an integer as JSON Schema reads one")
        for bad in ["0", "1001", "2.5", "-1", #""20""#, "true", "123456789012345678901234567890"] {
            let reply = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"limit":\#(bad)}"#)
            #expect(reply.status == 400 && (reply.json?.object?["error"]?.string ?? "").hasPrefix("\"limit\" must be a whole number"), "limit \(bad): \(reply.status) \(reply.text)")
        }
    }

    /// An agent with many folders asks its long polls for few changes (each reply waits for its
    /// folder's turn); its catch-ups ask for the server's page.
    @Test func anAdaptersLongPollAsksForItsPageAndItsCatchUpForTheServers() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let docs = (0..<50).map { #"{"id":"w\#($0)","docType":"note"}"# }.joined(separator: ",")
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"documents":[\#(docs)]}"#, headers: [("X-Docsync-Client", "writer")]).status == 200)
        let context = EndpointContext(clientID: "reader", clock: ServerClock(), requestTimeout: .seconds(10), credential: server.token, longPollPage: 20)
        let endpoint = pingPong(server.url)(context)
        let polled = try await endpoint.pull(after: SyncCursor("0"), wait: .seconds(5))
        #expect(polled.changes.count == 20 && polled.more)
        let caughtUp = try await endpoint.pull(after: polled.cursor, wait: nil)
        #expect(caughtUp.changes.count == 30 && !caughtUp.more)
    }

    @Test func aHeldPollLooksOnlyPastWhatItAlreadyLookedAt() async throws {
        let store = LookRecordingStore()
        let data = try TempFolder("long-poll")
        defer { data.remove() }
        let logger = Logger(label: "long-poll", factory: { _ in SwiftLogNoOpLogHandler() })
        let server = try ReferenceServer(configuration: .init(port: 0, dataDirectory: data.path, token: "t"), store: store)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try server.application(logger: logger) { _, port in continuation.yield(port) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        let running = Task { try await group.run() }
        defer { Task { await group.triggerGracefulShutdown(); _ = await running.result } }
        var iterator = ports.makeAsyncIterator()
        let url = "http://127.0.0.1:\(await iterator.next() ?? 0)"
        let api = APIClient(baseURL: url, token: "t")
        let mine = [("X-Docsync-Client", "importer")]

        let poll = Task { try await api.request("POST", "/api/sync", body: #"{"since":0,"documents":[],"wait":30}"#, headers: mine) }
        #expect(await eventually { store.looks.count >= 1 }, "the poll never looked")
        for push in 0..<5 {
            let docs = (0..<10).map { #"{"id":"p\#(push)-\#($0)","docType":"note"}"# }.joined(separator: ",")
            #expect(try await api.request("POST", "/api/sync", body: #"{"since":0,"documents":[\#(docs)]}"#, headers: mine).status == 200)
            #expect(await eventually { store.looks.count >= push + 2 }, "push \(push) did not wake the poll")
        }
        _ = try await api.request("PUT", "/api/document", body: #"{"id":"theirs","docType":"note"}"#, headers: [("X-Docsync-Client", "other")])
        let reply = try await poll.value
        guard case .array(let sent)? = reply.json?.object?["documents"]?.object?["success"] else {
            Issue.record("no documents in \(reply.text)")
            return
        }
        #expect(sent.compactMap { $0.object?["id"]?.string } == ["theirs"], "the poll answers with the other client's write alone")
        let looks = store.looks
        // The first look and the one the first push woke both start at 0 (nothing was stored
        // before); each later one where the one before ended, the last past all 50 pushed.
        #expect(looks == [0, 0, 10, 20, 30, 40, 50], "each look starts where the last ended: \(looks)")
    }
}

/// The memory store, recording where each look of a long poll (a batch call without documents) began.
final class LookRecordingStore: DocumentStore {
    let inner = MemoryDocumentStore()
    private let recorded = Mutex<[Int64]>([])
    var looks: [Int64] { recorded.withLock { $0 } }

    var storeID: String { inner.storeID }
    func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String?, access: Access) async throws -> JSONObject {
        try await inner.put(object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, client: client, access: access)
    }
    func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int, client: String?, selection: TypeSelection, measure: Bool,
        access: Access
    ) async throws -> SyncOutcome {
        if documents.isEmpty { recorded.withLock { $0.append(since) } }
        return try await inner.sync(
            since: since, documents: documents, now: now, limit: limit, maxBytes: maxBytes, client: client, selection: selection, measure: measure,
            access: access)
    }
    func delete(id: String, docType: String, now: Int64, author: String?, access: Access) async throws -> JSONObject {
        try await inner.delete(id: id, docType: docType, now: now, author: author, access: access)
    }
    func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client: String?, author: String?, access: Access
    ) async throws -> JSONObject {
        try await inner.attach(blob: blob, to: id, docType: docType, property: property, url: url, now: now, client: client, author: author, access: access)
    }
    func get(id: String) async throws -> JSONValue? { try await inner.get(id: id) }
    func list(docType: String, includeDeleted: Bool, after: String, limit: Int) async throws -> [(id: String, body: String)] {
        try await inner.list(docType: docType, includeDeleted: includeDeleted, after: after, limit: limit)
    }
    func blob(sha256: String) async throws -> StoredBlob? { try await inner.blob(sha256: sha256) }
    func blobCount() async throws -> Int { try await inner.blobCount() }
    func latestSeq() async throws -> Int64 { try await inner.latestSeq() }
    func stats() async throws -> StoreStats { try await inner.stats() }
    var followsExternalChanges: Bool { false }
    func followExternalChanges(_ published: @escaping @Sendable (Int64) -> Void) async throws {}
    func purgeTombstones(deletedBefore: Int64) async throws -> Int { try await inner.purgeTombstones(deletedBefore: deletedBefore) }
    func close() async {}
}
