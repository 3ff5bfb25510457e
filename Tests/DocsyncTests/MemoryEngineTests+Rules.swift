import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncStore
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// The engine's rules against the server in memory: push windows, conflicts, a replaced server,
/// tombstones purged while a folder was away, and a selection the server does not apply. Each is
/// what the engine promises whatever the adapter; the HTTP tests keep what only HTTP can show.
extension MemoryEngineTests {
    func put(_ server: MemoryServer, _ body: String) async throws {
        _ = try await server.store.put(DocumentRules.parseObject(Array(body.utf8)), now: Self.now())
    }

    func stored(_ server: MemoryServer, _ id: String) async throws -> JSONObject? {
        try await server.store.get(id: id)?.object
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// More documents than one call takes (a thousand): they go out in windows, and each is stored
    /// once, at revision 1.
    @Test func manyDocumentsGoOutInWindowsAndAreEachStoredOnce() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("memory-windows")
        defer { folder.remove() }
        for i in 0..<2_500 { try folder.write("notes/n\(i).json", #"{"id":"n\#(i)","docType":"note","n":\#(i)}"#) }
        let agent = try await agent(folder, server)
        #expect(await eventually(timeout: .seconds(60)) { (try? await server.store.stats().documents) == 2_500 }, "\(agent.logs.all.suffix(4))")
        #expect(try await agent.settled())
        let stats = try await server.store.stats()
        #expect(stats.seq == 2_500, "one write a document, none sent twice")
        #expect(try await stored(server, "n2499")?[DocumentRules.revKey] == .number("1"))
        try await agent.stop()
    }

    /// The same field edited in two folders: the later save wins in both, and the folder whose
    /// version lost keeps it whole beside the file.
    @Test func theSameFieldEditedInTwoFoldersLeavesOneConflictCopy() async throws {
        let server = MemoryServer()
        let (a, b) = (try TempFolder("memory-conflict-a"), try TempFolder("memory-conflict-b"))
        defer { a.remove(); b.remove() }
        let agentA = try await agent(a, server)
        var agentB = try await agent(b, server)
        try a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"t0"}"#)
        #expect(await eventually(timeout: Self.patience) { b.exists("note/doc.json") })
        try await agentB.stop()
        try a.write("notes/doc.json", #"{"id":"doc","docType":"note","title":"from A"}"#)
        #expect(await eventually(timeout: Self.patience) { (try? await stored(server, "doc"))?["title"] == "from A" })
        try b.write("note/doc.json", #"{"id":"doc","docType":"note","title":"from B"}"#)
        agentB = try await agent(b, server, index: agentB.index)
        #expect(await eventually(timeout: Self.patience) { (try? a.read("notes/doc.json"))?.contains("from B") == true }, "\(agentA.logs.all.suffix(4))")
        #expect(await eventually(timeout: Self.patience) { conflictCopies(in: b).count == 1 }, "\(agentB.logs.all.suffix(4))")
        let copy = try #require(conflictCopies(in: b).first)
        #expect(try DocumentRules.parseObject(Array(b.bytes(copy)))["title"] == "from A", "the losing version, in full")
        #expect(conflictCopies(in: a).isEmpty)
        #expect(try await server.store.stats().documents == 1, "conflict copies are never synced")
        try await agentA.stop()
        try await agentB.stop()
    }

    /// The server's storage replaced under a running agent (its cursor ahead of the new store):
    /// the agent reconciles in full, pulls what the new store has and pushes what it lacks.
    @Test func aServerReplacedUnderTheAgentIsReconciledInFull() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("memory-replaced")
        defer { folder.remove() }
        let agent = try await agent(folder, server)
        for name in ["a", "a2", "a3"] { try folder.write("notes/\(name).json", #"{"id":"\#(name)","docType":"note"}"#) }
        #expect(await eventually(timeout: Self.patience) { (try? await server.store.stats().documents) == 3 })
        server.replaceStore()
        try await put(server, #"{"id":"b","docType":"note","by":"another client"}"#)
        #expect(await eventually(timeout: Self.patience) { folder.exists("note/b.json") }, "the other client's document arrives: \(agent.logs.all.suffix(4))")
        let pushed = await eventually(timeout: Self.patience) { (try? await server.store.stats().documents) == 4 }
        if !pushed {
            // What the new store holds and what the agent last said, to tell a lost push from another.
            let held = (try? await server.store.list(docType: "note", includeDeleted: true, after: "", limit: 100))?.map(\.body) ?? []
            Issue.record("what the new store lacked is not pushed; it holds \(held); the agent: \(agent.logs.all.suffix(20))")
        }
        #expect(try await agent.settled())
        #expect(agent.logs.count(containing: "reconciling everything") >= 1)
        try await agent.stop()
    }

    /// The server replaced while a push's reply is on its way: the agent learns of the new store
    /// by a pull before the old store's acknowledgement arrives, and that acknowledgement does
    /// not count for the new store (taken, the document was never sent to it).
    @Test func anAcknowledgementFromAReplacedServerDoesNotCountForTheNewOne() async throws {
        let server = MemoryServer(pullsWithPush: false)
        let folder = try TempFolder("memory-replaced-in-flight")
        defer { folder.remove() }
        let agent = try await agent(folder, server)
        try folder.write("notes/a.json", #"{"id":"a","docType":"note"}"#)
        #expect(await eventually(timeout: Self.patience) { (try? await server.store.stats().documents) == 1 })
        #expect(try await agent.settled())
        server.holdNextPushReply {
            server.replaceStore()
            _ = await eventually(timeout: Self.patience) { agent.logs.count(containing: "reconciling everything") >= 1 }
        }
        try folder.write("notes/b.json", #"{"id":"b","docType":"note"}"#)
        #expect(await eventually(timeout: Self.patience) { agent.logs.count(containing: "reconciling everything") >= 1 })
        #expect(await eventually(timeout: Self.patience) { (try? await server.store.stats().documents) == 2 }, "both documents reach the new store")
        #expect(try await agent.settled())
        #expect(try await stored(server, "b") != nil)
        try await agent.stop()
    }

    /// Away while a document was deleted and its tombstone purged: the folder learns of the
    /// deletion by a reconcile (the file goes to the trash), and keeps and sends its own edits.
    @Test func anAgentAwayPastTheRetentionAppliesTheDeletionAndKeepsItsOwnEdits() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("memory-retention")
        defer { folder.remove() }
        var agent = try await agent(folder, server)
        for id in ["x", "y", "z"] { try await put(server, #"{"id":"\#(id)","docType":"note","v":1}"#) }
        #expect(await eventually(timeout: Self.patience) { ["x", "y", "z"].allSatisfy { folder.exists("note/\($0).json") } })
        #expect(try await agent.settled())
        try await agent.stop()

        _ = try await server.store.delete(id: "x", docType: "note", now: Self.now())
        #expect(try await server.store.purgeTombstones(deletedBefore: Self.now() + 1) == 1)
        try folder.write("note/y.json", #"{"id":"y","docType":"note","v":2,"offline":true}"#)
        try folder.write("note/w.json", #"{"id":"w","docType":"note"}"#)

        agent = try await self.agent(folder, server, index: agent.index)
        #expect(await eventually(timeout: Self.patience) { !folder.exists("note/x.json") }, "the deletion is applied: \(agent.logs.all.suffix(5))")
        #expect(await eventually(timeout: Self.patience) { (try? await stored(server, "y"))?["offline"] == .bool(true) }, "the offline edit is kept")
        #expect(await eventually(timeout: Self.patience) { (try? await stored(server, "w")) != nil }, "the offline document is pushed")
        #expect(try await agent.settled())
        #expect(try await stored(server, "x") == nil, "the deleted document does not come back")
        let trash = (try? FileManager.default.contentsOfDirectory(atPath: folder.file(".docsync/trash"))) ?? []
        #expect(trash.contains { $0.hasPrefix("x-") }, "x is in the trash: \(trash)")
        try await agent.stop()
    }

    /// A push made before the reconcile it met ended (its reply held in flight until then) also
    /// says deletions were missed: the reconcile that ended dealt with them, and no second one
    /// begins. (The real server's retention test met this under load: two reconciles.)
    @Test func aPushReplyHeldPastTheReconcileBeginsNoSecond() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("memory-retention-held")
        defer { folder.remove() }
        var agent = try await agent(folder, server)
        for id in ["x", "y"] { try await put(server, #"{"id":"\#(id)","docType":"note","v":1}"#) }
        #expect(await eventually(timeout: Self.patience) { ["x", "y"].allSatisfy { folder.exists("note/\($0).json") } })
        #expect(try await agent.settled())
        try await agent.stop()

        _ = try await server.store.delete(id: "x", docType: "note", now: Self.now())
        #expect(try await server.store.purgeTombstones(deletedBefore: Self.now() + 1) == 1)
        try folder.write("note/w.json", #"{"id":"w","docType":"note"}"#)
        let started = Mutex<TestAgent?>(nil)
        server.holdNextPushReply {
            _ = await eventually(timeout: Self.patience) {
                (started.withLock { $0 }?.logs.count(containing: "reconciled with the endpoint") ?? 0) >= 1
            }
        }
        agent = try await self.agent(folder, server, index: agent.index)
        started.withLock { $0 = agent }
        #expect(await eventually(timeout: Self.patience) { !folder.exists("note/x.json") }, "the deletion is applied")
        #expect(await eventually(timeout: Self.patience) { (try? await stored(server, "w")) != nil }, "the push is answered")
        #expect(try await agent.settled())
        #expect(agent.logs.count(containing: "reconciled with the endpoint") == 1, "\(agent.logs.all.suffix(8))")
        #expect(agent.logs.count(containing: "purged deletions this folder has not seen") == 1, "\(agent.logs.all.suffix(8))")
        try await agent.stop()
    }

    /// A server that sends every docType to a folder that syncs only some: the others are not
    /// written, and the selected ones arrive.
    @Test func documentsOutsideTheSelectionAreNotWrittenWhenTheServerSendsThem() async throws {
        let server = MemoryServer()
        let folder = try TempFolder("memory-selection")
        defer { folder.remove() }
        let agent = try await self.agent(folder, server) { $0.selection = TypeSelection(only: ["note"]) }
        try await put(server, #"{"id":"o","docType":"other"}"#)
        try await put(server, #"{"id":"n","docType":"note"}"#)
        #expect(await eventually(timeout: Self.patience) { folder.exists("note/n.json") }, "\(agent.logs.all.suffix(4))")
        try await put(server, #"{"id":"n2","docType":"note"}"#)
        #expect(await eventually(timeout: Self.patience) { folder.exists("note/n2.json") })
        #expect(!folder.exists("other/o.json") && DocsyncWatcherProbe.walk(folder.path).count == 2)
        try await agent.stop()
    }
}
