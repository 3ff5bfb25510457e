@testable import DocsyncAgent
import DocsyncIndex
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Schemas in the agent: a save that fails is held back and said where, a fix goes out, a schema
/// from elsewhere judges the folder again; nothing is deleted or held back from pulls.
@Suite struct SchemaAgentTests {
    static let invoiceSchema = #"""
        {"id": "invoice", "type": "object", "required": ["total"],
         "properties": {"total": {"type": "number"}, "status": {"enum": ["draft", "sent", "paid"]}}}
        """#

    /// The real binaries: `serve`, `watch`, `status --json`.
    @Test func anInvalidSaveIsHeldWithItsPointerAndGoesOutOnceFixed() async throws {
        let work = try TempFolder("schema-e2e")
        let docs = try TempFolder("schema-docs")
        defer { work.remove(); docs.remove() }
        try work.write("token", "tok-schema\n")
        let server = try DocsyncProcess(["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token")], logDirectory: work.path, name: "serve")
        defer { Task { await server.stop() } }
        let url = try await server.firstLine()
        try docs.write("schema/invoice.json", Self.invoiceSchema)
        try docs.write("invoices/inv-1.json", #"{"id": "inv-1", "docType": "invoice", "total": 10}"#)
        let agent = try DocsyncProcess(["watch", docs.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch")
        defer { Task { await agent.stop() } }
        let api = APIClient(baseURL: url, token: "tok-schema")
        #expect(await eventually { (try? await api.documents(type: "invoice").keys.sorted()) == ["inv-1"] }, "\(agent.stderr)")
        #expect(try await api.documents(type: "schema").keys.sorted() == ["invoice"], "the schema syncs like any document")

        try docs.write("invoices/2026/inv-7.json", #"{"id": "inv-7", "docType": "invoice", "total": "12.50", "status": "late"}"#)
        var held: JSONObject?
        #expect(await eventually {
            held = try? await Self.status(docs, work)?["invalid_files"]?.elements?.first?.object
            return held?["path"] == .string("invoices/2026/inv-7.json")
        }, "\(agent.stderr)")
        let errors = held?["errors"]?.elements?.compactMap(\.object) ?? []
        #expect(errors.map { $0["instance"] } == [.string("/total"), .string("/status")])
        #expect(errors.first?["message"] == .string(#"expected a number, got the string "12.50""#))
        #expect(errors.first?["keyword"] == .string("type"))
        #expect(await eventually { agent.stderr.contains(#"/total: expected a number, got the string "12.50""#) }, "the log names the file's error")
        #expect(try await api.documents(type: "invoice")["inv-7"] == nil, "a save that fails is not pushed")

        try docs.write("invoices/2026/inv-7.json", #"{"id": "inv-7", "docType": "invoice", "total": 12.5, "status": "sent"}"#)
        #expect(await eventually { (try? await api.documents(type: "invoice"))?["inv-7"]?["total"] == .number("12.5") }, "\(agent.stderr)")
        #expect(await eventually { (try? await Self.status(docs, work)?["invalid_files"]?.elements?.isEmpty) == true })
    }

    /// `--assert-formats`: a date that is no date holds the save, with the field and the format.
    @Test func withAssertFormatsADateThatIsNoDateIsHeld() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("schema-formats")
        defer { folder.remove() }
        try folder.write("schema/event.json", #"{"id": "event", "properties": {"on": {"type": "string", "format": "date"}}}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token) { $0.assertFormats = true }
        try folder.write("event/e1.json", #"{"id": "e1", "on": "2026-02-30"}"#)
        try folder.write("event/e2.json", #"{"id": "e2", "on": "2028-02-29"}"#)
        var status: AgentStatus?
        #expect(await eventually {
            status = try? await AgentStatus.read(agent.index)
            return status?.schemas.held["event/e1.json"] != nil
        })
        #expect(status?.schemas.held["event/e1.json"]?.first?.description == #"/on: "2026-02-30" is not a date (YYYY-MM-DD)"#)
        #expect(await eventually { (try? await server.api.documents(type: "event"))?["e2"] != nil }, "a real date goes out")
        #expect(try await server.api.documents(type: "event")["e1"] == nil)
        try await agent.stop()
        await server.stop()
    }

    static func status(_ docs: TempFolder, _ work: TempFolder) async throws -> JSONObject? {
        let (code, out, _) = try await runDocsync(["status", "--json", docs.path], logDirectory: work.path)
        guard code == 0 || code == 1 else { return nil }
        return try JSONParser.parse(out.trimmingCharacters(in: .whitespacesAndNewlines)).object
    }
}

extension HeavySuites {
/// Two agents and a server: schemas arriving by pull.
@Suite(.serialized) struct SchemaPullTests {
    @Test func aSchemaPulledFromAnotherAgentJudgesThisFolderWithoutHoldingAnythingBack() async throws {
        let server = try await TestServer.start()
        let (a, b) = (try TempFolder("schema-a"), try TempFolder("schema-b"))
        let agentA = try await TestAgent.start(folder: a, endpoint: server.url, token: server.token)
        let agentB = try await TestAgent.start(folder: b, endpoint: server.url, token: server.token)
        defer { Task { try? await agentA.stop(); try? await agentB.stop(); await server.stop(); a.remove(); b.remove() } }
        // Written before any schema: synced everywhere.
        try b.write("invoice/inv-2.json", #"{"id": "inv-2", "docType": "invoice", "total": "x"}"#)
        #expect(await eventually { a.exists("invoice/inv-2.json") })

        try a.write("schema/invoice.json", SchemaAgentTests.invoiceSchema)
        var status: AgentStatus?
        #expect(await eventually {
            status = try? await AgentStatus.read(agentB.index)
            return status?.schemas.nonconforming.first?.path == "invoice/inv-2.json"
        }, "the schema pulled into B judges B's documents")
        #expect(status?.schemas.nonconforming.first?.errors.first?.description == #"/total: expected a number, got the string "x""#)
        #expect(status?.text(now: 0).contains("1 synced documents do not conform") == true)
        #expect(b.exists("invoice/inv-2.json"), "a document that does not conform is never deleted")

        // Not held back from pulls: another client's edit of it (still failing) reaches B.
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id": "inv-2", "docType": "invoice", "total": "y"}"#).status == 200)
        #expect(await eventually { (try? b.read("invoice/inv-2.json"))?.contains("\"y\"") == true })
        // A document the server holds that fails (written by another client): written here, reported.
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id": "inv-9", "docType": "invoice", "status": "late"}"#).status == 200)
        #expect(await eventually { b.exists("invoice/inv-9.json") })
        #expect(await eventually {
            (try? await AgentStatus.read(agentB.index))?.schemas.nonconforming.map(\.path).contains("invoice/inv-9.json") == true
        })
        #expect((try await AgentStatus.read(agentB.index)).counts.nonconforming == 2, "the metrics' count")
        // A save held back at B under the schema...
        try b.write("invoice/inv-5.json", #"{"id": "inv-5", "docType": "invoice", "total": "z"}"#)
        #expect(await eventually { (try? await AgentStatus.read(agentB.index))?.schemas.held["invoice/inv-5.json"] != nil })
        // (once its stat is settled: only the new schema can send it now)
        #expect(await eventually { (try? await agentB.index.read { try $0.file(at: "invoice/inv-5.json") })??.stat.mtimeNs != FileStat.unsettled })
        // ...goes out when A relaxes the schema, and B's documents conform again.
        try a.write("schema/invoice.json", #"{"id": "invoice", "type": "object"}"#)
        #expect(await eventually { (try? await AgentStatus.read(agentB.index))?.schemas.nonconformingCount == 0 })
        #expect(await eventually { (try? await server.api.documents(type: "invoice"))?["inv-5"] != nil }, "a held save is read again under the new schema")
    }
}
}
