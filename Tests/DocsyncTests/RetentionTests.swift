import DocsyncAgent
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Tombstone retention (`serve --tombstone-retention`): the server purges old tombstones; an agent
/// away for longer reconciles against the server's documents; the index forgets what the server
/// purged.
extension HeavySuites {
@Suite(.serialized) struct RetentionTests {
    func retentionServer() async throws -> TestServer {
        try await TestServer.start(configure: { $0.tombstoneRetention = .seconds(1) })
    }

    func put(_ server: TestServer, _ body: String) async throws {
        #expect(try await server.api.request("PUT", "/api/document", body: body).status == 200)
    }

    @Test func anAgentOfflinePastTheRetentionAppliesTheDeletionsAndKeepsItsOwnEdits() async throws {
        let server = try await retentionServer()
        let folder = try TempFolder("retention")
        defer { folder.remove() }
        var agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        for id in ["x", "y", "z"] { try await put(server, #"{"id":"\#(id)","docType":"note","v":1}"#) }
        try folder.write("note/mine.json", #"{"id":"mine","docType":"note"}"#)
        #expect(await eventually { ["x", "y", "z"].allSatisfy { folder.exists("note/\($0).json") } })
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["mine"] != nil })
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.pending == 0 })
        try await agent.stop()

        // Away: x is deleted on the server and its tombstone purged; here y is edited, w made.
        #expect(try await server.api.request("DELETE", "/api/document", body: #"{"id":"x","docType":"note"}"#).status == 200)
        try folder.write("note/y.json", #"{"id":"y","docType":"note","v":2,"offline":true}"#)
        try folder.write("note/w.json", #"{"id":"w","docType":"note"}"#)
        #expect(await eventually(timeout: .seconds(10)) { (try? await server.api.documents(type: "note"))?["x"] == nil }, "x's tombstone purged")

        agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually { !folder.exists("note/x.json") }, "the deletion is applied: \(agent.logs.all.suffix(5))")
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["y"]?["offline"] == .bool(true) }, "the offline edit is kept")
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["w"] != nil }, "the offline document is pushed")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.pending == 0 })
        #expect(agent.logs.count(containing: "purged deletions this folder has not seen") == 1)
        // Logged once the reconcile is recorded, which may be after the file went to the trash.
        #expect(await eventually { agent.logs.count(containing: "reconciled with the endpoint reconcile.deleted=1") == 1 }, "\(agent.logs.all.suffix(8))")
        #expect(folder.exists("note/mine.json") && folder.exists("note/z.json"), "what the server still has stays")
        let stored = try await server.api.documents(type: "note")
        #expect(stored.keys.sorted() == ["mine", "w", "y", "z"], "the deleted document does not come back")
        let trash = (try? FileManager.default.contentsOfDirectory(atPath: folder.file(".docsync/trash"))) ?? []
        #expect(trash.contains { $0.hasPrefix("x-") }, "x is in the trash: \(trash)")
        try await agent.stop()
        await server.stop()
    }

    @Test func theIndexForgetsTombstonesTheServerHasPurged() async throws {
        let server = try await retentionServer()
        let folder = try TempFolder("retention-index")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("note/gone.json", #"{"id":"gone","docType":"note"}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["gone"] != nil })
        try folder.remove("note/gone.json")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.tombstones == 1 })
        #expect(await eventually(timeout: .seconds(10)) { (try? await server.api.documents(type: "note"))?["gone"] == nil }, "purged on the server")
        // The next reply the agent gets says so.
        try await put(server, #"{"id":"later","docType":"note"}"#)
        #expect(await eventually { folder.exists("note/later.json") }, "\(agent.logs.all.suffix(12))")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.tombstones == 0 })
        try await agent.stop()
        await server.stop()
    }
}
}
