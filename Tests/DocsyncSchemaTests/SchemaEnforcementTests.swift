import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// `docsync serve --enforce-schemas`: the real server refuses what fails a stored schema, whoever
/// sends it (curl here), one document at a time.
@Suite struct SchemaEnforcementTests {
    private static let invoiceSchema = #"{"id": "invoice", "docType": "schema", "type": "object", "required": ["total"], "properties": {"total": {"type": "number"}}}"#

    /// `curl -X METHOD URL -d BODY`: the status and the body.
    private func curl(_ method: String, _ url: String, token: String, body: String) throws -> (Int, JSONValue?) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "-X", method, "-H", "Authorization: Token token=\(token)", "-H", "Content-Type: application/json",
                             "--data-binary", body, "-w", "\n%{http_code}", url]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.last ?? "") ?? 0
        return (status, try? JSONParser.parse(lines.dropLast().joined(separator: "\n")))
    }

    /// `docsync serve --enforce-schemas` on a data folder in `work`, its token `tok-enforce`.
    private static func serve(in work: TempFolder) async throws -> (DocsyncProcess, String) {
        try work.write("token", "tok-enforce\n")
        let server = try DocsyncProcess(["serve", "--data", work.file("server"), "--port", "0", "--token-file", work.file("token"), "--enforce-schemas"],
                                        logDirectory: work.path, name: "serve")
        return (server, try await server.firstLine())
    }

    @Test func aBadDocumentIsRefusedFromCurlAndAloneInABatch() async throws {
        let work = try TempFolder("enforce")
        defer { work.remove() }
        let (server, url) = try await Self.serve(in: work)
        defer { Task { await server.stop() } }
        let (schemaStatus, _) = try curl("PUT", url + "/api/document", token: "tok-enforce", body: Self.invoiceSchema)
        #expect(schemaStatus == 200)

        let (status, reply) = try curl("PUT", url + "/api/document", token: "tok-enforce",
                                       body: #"{"id": "inv-7", "docType": "invoice", "total": "12.50"}"#)
        #expect(status == 422)
        let error = reply?.object?["errors"]?.elements?.first?.object
        #expect(error?["instance"] == .string("/total"))
        #expect(error?["keyword"] == .string("type"))
        #expect(reply?.object?["error"]?.string?.contains(#"/total: expected a number, got the string "12.50""#) == true)

        let api = APIClient(baseURL: url, token: "tok-enforce")
        let batch = try await api.request("POST", "/api/sync", body: #"""
            {"since": 0, "documents": [{"id": "inv-8", "docType": "invoice", "total": "x"}, {"id": "inv-9", "docType": "invoice", "total": 9}]}
            """#)
        #expect(batch.status == 200)
        let refused = batch.json?.object?["documents"]?.object?["error"]?.elements ?? []
        #expect(refused.compactMap { $0.object?["id"]?.string } == ["inv-8"])
        #expect(refused.first?.object?["errors"]?.elements?.first?.object?["instance"] == .string("/total"))
        #expect(try await api.request("GET", "/api/document/inv-9").status == 200)
        #expect(try await api.request("GET", "/api/document/inv-8").status == 404)
        #expect(try await api.request("GET", "/api/document/inv-7").status == 404)
    }

    @Test func aNewSchemaAppliesAtOnceAndAnInvalidSchemaIsRefused() async throws {
        let work = try TempFolder("enforce")
        defer { work.remove() }
        let (server, url) = try await Self.serve(in: work)
        defer { Task { await server.stop() } }
        let document = #"{"id": "inv-1", "docType": "invoice", "total": "12.50"}"#
        #expect(try curl("PUT", url + "/api/document", token: "tok-enforce", body: document).0 == 200, "no schema yet: stored")
        #expect(try curl("PUT", url + "/api/document", token: "tok-enforce", body: Self.invoiceSchema).0 == 200)
        #expect(try curl("PUT", url + "/api/document", token: "tok-enforce", body: document).0 == 422)
        let (status, reply) = try curl("PUT", url + "/api/document", token: "tok-enforce", body: #"{"id": "note", "docType": "schema", "type": "objekt"}"#)
        #expect(status == 422)
        #expect(reply?.object?["error"]?.string?.contains("not a valid JSON Schema") == true)
        let removed = try curl("DELETE", url + "/api/document", token: "tok-enforce", body: #"{"id": "invoice", "docType": "schema"}"#)
        #expect(removed.0 == 200)
        #expect(try curl("PUT", url + "/api/document", token: "tok-enforce", body: document).0 == 200, "the schema is gone: stored again")
    }

    /// Trust finding (fourth round, 1): a schema whose pattern backtracks without end, and four
    /// documents that make it do so, held every other request for over a minute and kept the
    /// server from ending on SIGTERM. Each check now has a budget and runs on threads of its own:
    /// the costly documents are refused with that reason, a request that needs no check is
    /// answered meanwhile, and SIGTERM in the middle of a batch of them ends the server.
    @Test func aCostlySchemaHoldsNoOtherRequestAndSIGTERMStillEndsTheServer() async throws {
        let work = try TempFolder("enforce")
        defer { work.remove() }
        let (server, url) = try await Self.serve(in: work)
        defer { Task { await server.stop() } }
        let schema = #"{"id": "trap", "docType": "schema", "properties": {"s": {"type": "string", "pattern": "^(a|a)+$"}}}"#
        #expect(try curl("PUT", url + "/api/document", token: "tok-enforce", body: schema).0 == 200)
        let costly: @Sendable (Int) -> String = { n in #"{"id": "t-\#(n)", "docType": "trap", "s": "\#(String(repeating: "a", count: 40))!"}"# }
        let api = APIClient(baseURL: url, token: "tok-enforce")
        let batch = "{\"since\": 0, \"documents\": [" + (0..<400).map(costly).joined(separator: ",") + "]}"
        async let flood: [Int] = withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<4 { group.addTask { try await api.request("PUT", "/api/document", body: costly(1000 + n)).status } }
            for _ in 0..<2 { group.addTask { try await api.request("POST", "/api/sync", body: batch).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        // Answered while the flood is checked: a note has no schema to be checked against.
        let started = ContinuousClock.now
        let note = try await api.request("PUT", "/api/document", body: #"{"id": "n1", "docType": "note", "text": "hello"}"#)
        #expect(note.status == 200)
        #expect(ContinuousClock.now - started < .seconds(5), "a request that needs no check waited \(ContinuousClock.now - started)")
        let statuses = try await flood
        #expect(statuses.filter { $0 == 422 }.count == 4, "\(statuses)")
        let refused = try curl("PUT", url + "/api/document", token: "tok-enforce", body: costly(7))
        #expect(refused.0 == 422)
        #expect(refused.1?.object?["errors"]?.elements?.first?.object?["keyword"] == .string("budget"))

        // SIGTERM while batches of costly documents are being checked.
        let inFlight = Task { try? await api.request("POST", "/api/sync", body: batch) }
        try await Task.sleep(for: .milliseconds(300))
        let signalled = ContinuousClock.now
        server.signal(SIGTERM)
        let code = await server.wait(timeout: .seconds(10))
        #expect(code != nil, "the server did not end on SIGTERM")
        // Over a minute before the budget; a debug build beside the parallel suites on a slow
        // machine once took 6.9 s to let its in-flight checks end.
        #expect(ContinuousClock.now - signalled < .seconds(8))
        inFlight.cancel()
    }
}
