@testable import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Agents whose tokens may do only some things (issue 57): a read-only token's edit is kept in its
/// file and held as "not allowed", without a loop of requests, while a writer's edit of the same
/// document still reaches it; a drop box creates and reads nothing back.
extension HeavySuites {
@Suite(.serialized) struct RightsAgentTests {
    @Test func aReadOnlyAgentKeepsItsEditHeldAndStillReceivesTheWritersEdit() async throws {
        let tokens = try TempFolder("rights-agent")
        try tokens.write("tokens", "alice tok-alice\nviewer tok-viewer read:*\n")
        let server = try await TestServer.start(configure: { [tokens] in $0.tokenFile = tokens.file("tokens") })
        let (writerFolder, viewerFolder) = (try TempFolder("rights-writer"), try TempFolder("rights-viewer"))
        defer { for f in [tokens, writerFolder, viewerFolder] { f.remove() } }
        let writer = try await TestAgent.start(folder: writerFolder, endpoint: server.url, token: "tok-alice")
        let viewer = try await TestAgent.start(folder: viewerFolder, endpoint: server.url, token: "tok-viewer")
        try writerFolder.write("note/n1.json", #"{"id":"n1","title":"first"}"#)
        #expect(await eventually { viewerFolder.exists("note/n1.json") })

        try viewerFolder.write("note/n1.json", "{\n  \"id\": \"n1\",\n  \"title\": \"first\",\n  \"mine\": true\n}\n")
        #expect(await eventually { (try? await AgentStatus.read(viewer.index))?.notAllowedCount == 1 })
        let status = try await AgentStatus.read(viewer.index)
        #expect(!status.inSync())
        #expect(status.text(now: 0).contains("edits this token may not send"), "\(status.text(now: 0))")
        #expect(status.notAllowed.first?.reason.contains("write:note") == true, "\(status.notAllowed)")
        #expect(status.json(now: 0).object?["not_allowed"] == .number("1"))
        #expect(try viewerFolder.read("note/n1.json").contains("\"mine\": true"), "the edit stays in the file")

        // The writer edits the same document: it reaches the viewer's file, merged with the edit.
        try writerFolder.write("note/n1.json", "{\n  \"id\": \"n1\",\n  \"title\": \"second\"\n}\n")
        #expect(await eventually {
            let text = (try? viewerFolder.read("note/n1.json")) ?? ""
            return text.contains("second") && text.contains("\"mine\": true")
        }, "\((try? viewerFolder.read("note/n1.json")) ?? "")")
        // The merge queued the edit once more: refused once more, then held, not retried in a loop.
        let attempts = { try await viewer.index.read { try $0.outboxEntry(key: .document("n1"))?.attempts } }
        #expect(await eventually {
            let held = (try? await AgentStatus.read(viewer.index))?.notAllowedCount == 1
            return held ? (try? await attempts()) == 1 : false
        })
        try writerFolder.write("note/other.json", #"{"id":"other"}"#)  // the viewer pulls and its pusher wakes
        #expect(await eventually { viewerFolder.exists("note/other.json") })
        #expect(try await attempts() == 1, "no request about the held edit until its file or the token changes")
        let stored = try await server.api.request("GET", "/api/document/n1", token: .some("tok-alice"))
        #expect(stored.json?.object?["data"]?.object?["mine"] == nil, "the read-only token wrote nothing")
        try await writer.stop()
        try await viewer.stop()
        await server.stop()
    }

    @Test func aDropBoxCreatesAReportAndCannotReadItBack() async throws {
        let tokens = try TempFolder("rights-inbox")
        try tokens.write("tokens", "alice tok-alice\ninbox tok-inbox create:report\n")
        let server = try await TestServer.start(configure: { [tokens] in $0.tokenFile = tokens.file("tokens") })
        let folder = try TempFolder("rights-dropbox")
        defer { tokens.remove(); folder.remove() }
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"n1","docType":"note"}"#, token: .some("tok-alice")).status == 200)
        let inbox = try await TestAgent.start(folder: folder, endpoint: server.url, token: "tok-inbox")
        try folder.write("report/r1.json", #"{"id":"r1","text":"broken window"}"#)
        let alice = APIClient(baseURL: server.url, token: "tok-alice")
        #expect(await eventually { (try? await alice.documents(type: "report"))?["r1"] != nil })
        #expect(try await server.api.request("GET", "/api/document/r1", token: .some("tok-inbox")).status == 404)
        #expect(try await AgentStatus.read(inbox.index).inSync(), "the report was created")
        #expect(!folder.exists("note/n1.json"), "nothing of another docType is written into the folder")
        try await inbox.stop()
        await server.stop()
    }
}
}
