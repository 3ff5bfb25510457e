#if canImport(Glibc)
import Glibc
#endif
import DocsyncAgent
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// A server that loses or rewinds its data under a running agent (issue 21, findings 9 and 10).
extension HeavySuites {
@Suite(.serialized) struct ServerReplacedTests {
    /// The data folder deleted while the server runs: `PUT` kept answering 200, and everything
    /// was gone at the restart.
    @Test func aServerWhoseStorageIsGoneFailsLoudly() async throws {
        let server = try await TestServer.start()
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"a","docType":"t"}"#).status == 200)
        try FileManager.default.removeItem(atPath: server.data.path)
        let put = try await server.api.request("PUT", "/api/document", body: #"{"id":"b","docType":"t"}"#)
        #expect(put.status == 503 && put.text.contains("storage is gone"), "\(put.status) \(put.text)")
        #expect(try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[]}"#).status == 503)
        await server.stop()
    }

    /// The server reset (a new, empty store at the same address) under an agent whose cursor is
    /// ahead: the agent never pulled another client's new document, and `status` said "synced".
    @Test func aServerResetUnderTheAgentIsReconciledInFull() async throws {
        let port = freePort()
        let first = try await TestServer.start(configure: { $0.port = port })
        let folder = try TempFolder("reset-server")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: first.url, token: first.token)
        for name in ["a", "a2", "a3"] { try folder.write("notes/\(name).json", #"{"id":"\#(name)","docType":"note"}"#) }
        #expect(await eventually { (try? await first.api.documents(type: "note"))?.count == 3 })
        await first.stop()
        let second = try await TestServer.start(configure: { $0.port = port })
        #expect(try await second.api.request("PUT", "/api/document", body: #"{"id":"b","docType":"note","by":"another client"}"#).status == 200)
        #expect(await eventually(timeout: .seconds(30)) { folder.exists("note/b.json") }, "the other client's document arrives")
        #expect(await eventually { (try? await second.api.documents(type: "note"))?.keys.sorted() == ["a", "a2", "a3", "b"] }, "what the new server lacked is pushed")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.pending == 0 })
        #expect(agent.logs.count(containing: "reconciling everything") >= 1)
        try await agent.stop()
        await second.stop()
    }

    /// The same store restored from an older copy: its sequence is behind the agent's cursor.
    @Test func aServerRestoredFromAnOlderCopyIsReconciledInFull() async throws {
        let port = freePort()
        let data = try TempFolder("restored-data")
        let backup = data.path + "-backup"
        defer { data.remove(); try? FileManager.default.removeItem(atPath: backup) }
        let folder = try TempFolder("restored-folder")
        defer { folder.remove() }
        var server = try await TestServer.start(configure: { $0.port = port; $0.dataDirectory = data.path })
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("notes/old.json", #"{"id":"old","docType":"note","v":1}"#)
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["old"] != nil })
        await server.stop()
        try FileManager.default.copyItem(atPath: data.path, toPath: backup)
        server = try await TestServer.start(configure: { $0.port = port; $0.dataDirectory = data.path })
        try folder.write("notes/new.json", #"{"id":"new","docType":"note"}"#)
        for i in 0..<5 { #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"x\#(i)","docType":"other"}"#).status == 200) }
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["new"] != nil })
        #expect(await eventually { folder.exists("other/x4.json") })
        await server.stop()
        try FileManager.default.removeItem(atPath: data.path)
        try FileManager.default.copyItem(atPath: backup, toPath: data.path)
        server = try await TestServer.start(configure: { $0.port = port; $0.dataDirectory = data.path })
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"later","docType":"note"}"#).status == 200)
        #expect(await eventually(timeout: .seconds(30)) { folder.exists("note/later.json") }, "a change made after the restore arrives")
        #expect(await eventually { (try? await server.api.documents(type: "note"))?.keys.sorted() == ["later", "new", "old"] }, "what the restored copy lacked is pushed")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.pending == 0 })
        try await agent.stop()
        await server.stop()
    }
}
}
