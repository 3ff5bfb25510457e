import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Changes made while the agent is not running reach the server when it starts again.
@Suite(.serialized) struct RestartTests {
    @Test func editsDeletesCreatesAndMovesWhileStoppedAreDeliveredOnStart() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("restart")
        defer { folder.remove() }
        for i in 0..<30 { try folder.write("notes/n\(i).json", #"{"docType":"note","i":\#(i)}"#) }
        var agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually { await serverMatchesFolder(folder.path, api: server.api, types: ["note"]) })
        try await agent.stop()
        var ids: [Int: String] = [:]
        for i in 0..<30 { ids[i] = try idOf(folder, "notes/n\(i).json") }
        let before = try await server.api.documents(type: "note")

        // While stopped: edit 0-4, delete 5-9, move 10-14 (one with its folder), create 5 new.
        for i in 0..<5 { try folder.write("notes/n\(i).json", #"{"id":"\#(ids[i]!)","docType":"note","i":\#(i),"v":2}"#) }
        for i in 5..<10 { try folder.remove("notes/n\(i).json") }
        for i in 10..<14 { try folder.move("notes/n\(i).json", "elsewhere/deep/n\(i).json") }
        try folder.move("notes/n14.json", "notes/sub/n14.json")
        try folder.move("notes/sub", "notes/renamed-sub")
        for i in 30..<35 { try folder.write("fresh/f\(i).json", #"{"docType":"note","i":\#(i)}"#) }

        agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        let deleted = Set((5..<10).map { ids[$0]! })
        #expect(await eventually { await serverMatchesFolder(folder.path, api: server.api, types: ["note"], deleted: deleted) })
        let after = try await server.api.documents(type: "note")
        for i in 10..<15 {
            #expect(after[ids[i]!]?["rev"] == before[ids[i]!]?["rev"], "moved, not deleted and re-created")
            #expect(after[ids[i]!]?["deleted_at"] == nil)
        }
        for i in 15..<30 { #expect(after[ids[i]!] == before[ids[i]!], "untouched files are not re-sent") }
        #expect(after.count == 35)
        try await agent.stop()
        await server.stop()
    }
}
