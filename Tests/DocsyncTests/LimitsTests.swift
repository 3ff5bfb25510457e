import DocsyncAgent
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
@testable import DocsyncServer
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// `depth` containers: `{"a":{"a":…{"a":1}…}}`.
func nested(_ depth: Int, id: String? = nil, docType: String? = nil) -> String {
    var inner = "1"
    for _ in 0..<(depth - 1) { inner = "{\"a\":\(inner)}" }
    var head = ""
    if let id { head += "\"id\":\"\(id)\"," }
    if let docType { head += "\"docType\":\"\(docType)\"," }
    return "{\(head)\"a\":\(inner)}"
}

/// The limits the agent and the server share (issue 21, findings 3, 4, 5 and 13): a document one
/// side accepts is never one the other chokes on, and one bad document never holds back the rest.
extension LongSuites {
@Suite(.serialized) struct LimitsTests {
    @Test func depthIsCountedInContainers() throws {
        #expect(JSONValue.number("1").containerDepth == 0)
        #expect(try JSONParser.parse(nested(5)).containerDepth == 5)
        #expect(try JSONParser.parseMeasuringDepth(Array(nested(5).utf8), maxDepth: 10).depth == 5)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(nested(11).utf8), maxDepth: 10) }
        let deep = JSONValue.array((0..<3).map { _ in try! JSONParser.parse(nested(300)) })
        #expect(deep.containerDepth == 301)
    }

    /// A document 510 deep was accepted by PUT; wrapped in a sync reply it went over the agent's
    /// parser limit, and a fresh agent pulled nothing, ever.
    @Test func everyRouteRefusesADocumentDeeperThanTheLimit() async throws {
        let server = try await TestServer.start()
        let limit = ProtocolLimits.maxDocumentDepth
        #expect(try await server.api.request("PUT", "/api/document", body: nested(limit, id: "ok", docType: "t")).status == 200)
        let put = try await server.api.request("PUT", "/api/document", body: nested(limit + 1, id: "deep", docType: "t"))
        #expect(put.status == 400 && put.text.contains("nest"), "\(put.text.prefix(200))")
        #expect(try await server.api.request("POST", "/api/document", body: nested(510, docType: "t")).status == 400)
        // In a batch, the one document too deep is refused alone.
        let batch = #"{"since":0,"documents":[\#(nested(limit + 1, id: "deep2", docType: "t")),{"id":"fine","docType":"t"}]}"#
        let reply = try await server.api.request("POST", "/api/sync", body: batch)
        #expect(reply.status == 200)
        let docs = reply.json?.object?["documents"]?.object
        #expect(docs?["error"] == .array([.object(JSONObject([("id", "deep2"), ("message", .string("the document is nested deeper than \(limit) levels"))]))]))
        #expect(try await server.api.documents(type: "t").keys.sorted() == ["fine", "ok"])
        // And every reply the server sends parses within the agent's parser limit.
        let pulled = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[]}"#)
        #expect(try JSONParser.parseMeasuringDepth(pulled.body, maxDepth: JSONParser.maxDepth).depth <= limit + 3, "{\"documents\": {\"success\": [document]}}")
        await server.stop()
    }

    /// A local file over the depth limit is invalid, with the reason, and the rest of a save syncs.
    @Test func aFileDeeperThanTheLimitIsInvalidAndTheOthersSync() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("deep-files")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        try folder.write("t/ok.json", nested(ProtocolLimits.maxDocumentDepth, id: "ok"))
        try folder.write("t/deep.json", nested(ProtocolLimits.maxDocumentDepth + 1, id: "deep"))
        #expect(await eventually { (try? await server.api.documents(type: "t"))?["ok"] != nil })
        let status = try await AgentStatus.read(root: folder.path)
        #expect(status.invalidFiles.map(\.path) == ["t/deep.json"])
        #expect(status.invalidFiles.first?.reason.contains("nesting deeper than \(ProtocolLimits.maxDocumentDepth) levels") == true)
        #expect(status.rejected.isEmpty)
        try await agent.stop()
        await server.stop()
    }

    /// `/api/sync` skipped the per-document limit (a 50 MB document was stored), and a 250 MB
    /// request was read whole (96 s, ~4 GB of server memory) before anything was said.
    @Test func theBatchCallKeepsThePerDocumentLimitAndRefusesOversizedRequestsBeforeReading() async throws {
        let server = try await TestServer.start(configure: { $0.maxDocumentBytes = 1 << 20 })
        let big = #"{"id":"big","docType":"t","blob":"\#(String(repeating: "x", count: 2 << 20))"}"#
        let reply = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[\#(big),{"id":"small","docType":"t"}]}"#)
        #expect(reply.status == 200)
        guard case .array(let errors)? = reply.json?.object?["documents"]?.object?["error"] else { Issue.record("no errors: \(reply.text.prefix(200))"); return }
        #expect(errors.first?.object?["id"] == "big")
        #expect(try await server.api.documents(type: "t").keys.sorted() == ["small"])
        // A Content-Length over the limit: 413 at once, the body never sent (the client would
        // otherwise be stuck writing 250 MB to a server that does not read it).
        let huge = try await RawHTTP.exchange(
            port: server.port, head: "POST /api/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=\(server.token)\r\nContent-Type: application/json\r\nContent-Length: 250000000\r\n\r\n")
        #expect(huge.hasPrefix("HTTP/1.1 413"), "\(huge.prefix(120))")
        await server.stop()
    }

    /// Five documents of 15 MiB (each under the 16 MiB limit) made one pull page larger than the
    /// agent's reply cap: pulls stopped, pushes went "offline", and the agent's own document was
    /// stored again on every retry.
    @Test func pagesAreCutByBytesSoLargeDocumentsStillArrive() async throws {
        let server = try await TestServer.start()
        let fifteen = String(repeating: "y", count: 15 << 20)
        // Four of 15 MiB: more than a page holds (32 MiB, and the document that crosses it), so the
        // first page says "more".
        for i in 0..<4 {
            #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"big\#(i)","docType":"big","blob":"\#(fifteen)"}"#).status == 200)
        }
        let page = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[]}"#)
        #expect(page.body.count <= ProtocolLimits.maxPageBytes + ProtocolLimits.maxDocumentRequestBytes)
        #expect(page.json?.object?["more"] == true)
        let folder = try TempFolder("large-pull")
        defer { folder.remove() }
        try folder.write("notes/own.json", #"{"id":"own","docType":"note"}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(60)) { (0..<4).allSatisfy { folder.exists("big/big\($0).json") } })
        #expect(await eventually { (try? await server.api.documents(type: "note"))?["own"] != nil })
        try await agent.stop()
        #expect(try await server.api.documents(type: "note")["own"]?["rev"] == .number("1"), "stored once, not on every retry")
        await server.stop()
    }

    /// Twenty 14 MiB files and a small one: one batch call got 413 and all 21 documents were
    /// rejected for good. Calls are now cut by bytes, and a call refused whole is split.
    @Test func aRefusedBatchIsSplitAndOnlyTheDocumentAtFaultIsRejected() async throws {
        let server = try await TestServer.start(configure: { $0.maxDocumentBytes = 1 << 20; $0.maxBatchRequestBytes = 2 << 20 })
        let folder = try TempFolder("split-batch")
        defer { folder.remove() }
        let chunk = String(repeating: "z", count: 700 << 10)
        for i in 0..<12 { try folder.write("t/f\(i).json", #"{"id":"f\#(i)","blob":"\#(chunk)"}"#) }
        try folder.write("t/small.json", #"{"id":"small"}"#)
        try folder.write("t/toolarge.json", #"{"id":"toolarge","blob":"\#(String(repeating: "w", count: 1_200_000))"}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(60)) { (try? await server.api.documents(type: "t"))?.count == 13 })
        #expect(await eventually {
            let status = try? await AgentStatus.read(root: folder.path)
            return status?.rejected.map(\.id) == ["toolarge"] && status?.counts.pending == 0
        })
        try await agent.stop()
        await server.stop()
    }
}
}

/// Replies no document server of ours sends, from an endpoint that sends them on purpose.
extension HeavySuites {
@Suite(.serialized) struct HostileEndpointTests {
    /// A reply the agent cannot take (nested past its parser's limit) used to stop pulling for good
    /// with the error logged at debug only and nothing in `status`.
    @Test func aPullReplyTheAgentCannotTakeIsShownNotHidden() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        endpoint.respond { _, path, _ in
            path == "/api/sync" ? .init(body: #"{"documents":{"success":[{"id":"x","docType":"t","a":\#(deep)}],"error":[]},"cursor":1,"more":false}"#) : nil
        }
        let folder = try TempFolder("hostile-pull")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.pullError?.contains("not JSON") == true })
        #expect(agent.logs.count(containing: "pulling failed") == 1, "said once, not at every retry")
        try await agent.stop()
        await endpoint.stop()
    }

    /// A document 250 levels deep holding many small numbers: its pretty file took 500 spaces a
    /// number, so 400 KB on the wire became a 100 MB file (from a 16 MB document, 4 GB), held
    /// whole in the agent's memory first, and then refused by the folder's own size limit. It
    /// is written as it came, compact, and stays in sync both ways.
    @Test func aDeepDocumentIsPulledIntoAFileNoLargerThanItWasOnTheWire() async throws {
        let server = try await TestServer.start()
        let folder = try TempFolder("deep-pull")
        defer { folder.remove() }
        let numbers = Array(repeating: "1", count: 200_000).joined(separator: ",")
        let body = #"{"id":"deep","docType":"t","v":"# + String(repeating: "[", count: 250) + numbers + String(repeating: "]", count: 250) + "}"
        #expect(try await server.api.request("PUT", "/api/document", body: body).status == 200)
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually { FileSystem.info(folder.file("t/deep.json")) != nil })
        let size = try #require(FileSystem.info(folder.file("t/deep.json"))).size
        #expect(size < body.utf8.count + 4096, "\(size) bytes on disk for \(body.utf8.count) on the wire")
        // The file reads back as the document: not invalid, and an edit of it reaches the server.
        var edited = try #require(try JSONParser.parse(folder.read("t/deep.json")).object)
        edited["note"] = "seen"
        try folder.write("t/deep.json", JSONWriter.string(.object(edited)))
        #expect(await eventually { (try? await server.api.documents(type: "t"))?["deep"]?["note"] == "seen" })
        #expect(try await AgentStatus.read(root: folder.path).invalidFiles.isEmpty)
        try await agent.stop()
        await server.stop()
    }

    /// A purge horizon past the server's own latest change: a reconcile at every reply would move
    /// to the trash whatever the server leaves out. It is not believed.
    @Test func aHorizonPastTheLatestChangeStartsNoReconcile() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        endpoint.respond { _, path, body in
            guard path == "/api/sync" else { return nil }
            let ids = (try? JSONParser.parse(body))?.object?["documents"].flatMap { value -> [String]? in
                guard case .array(let docs) = value else { return nil }
                return docs.compactMap { $0.object?["id"]?.string }
            } ?? []
            let acks = ids.map { #"{"id":"\#($0)","rev":1}"# }.joined(separator: ",")
            return .init(body: #"{"documents":{"success":[\#(acks)],"error":[]},"cursor":5,"more":false,"horizon":1000,"purged_before":1}"#)
        }
        let folder = try TempFolder("hostile-horizon")
        defer { folder.remove() }
        try folder.write("note/a.json", #"{"id":"a","docType":"note"}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.counts.synced == 1 })
        #expect(await eventually { endpoint.seen.filter { $0.1 == "/api/sync" }.count >= 5 }, "several pulls answered")
        #expect(agent.logs.count(containing: "reconcil") == 0, "\(agent.logs.all.suffix(5))")
        #expect(folder.exists("note/a.json"))
        try await agent.stop()
        await endpoint.stop()
    }

    /// Every reply claiming the year 292277026596 (X-Sync-UTC: Int64.max) killed the agent with an
    /// overflow trap, again after every restart.
    @Test func anAgentOutlivesAServerLyingAboutItsClock() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        let stored = Mutex<[String]>([])
        endpoint.respond { _, path, body in
            let lie = [("X-Sync-UTC", "9223372036854775807"), ("X-Sync-Duration", "-9223372036854775808")]
            guard path == "/api/sync" else { return .init(headers: lie, body: "{}") }
            let ids = (try? JSONParser.parse(body))?.object?["documents"].flatMap { value -> [String]? in
                guard case .array(let docs) = value else { return nil }
                return docs.compactMap { $0.object?["id"]?.string }
            } ?? []
            stored.withLock { $0 += ids }
            let acks = ids.map { #"{"id":"\#($0)","rev":1}"# }.joined(separator: ",")
            return .init(headers: lie, body: #"{"documents":{"success":[\#(acks)],"error":[]},"cursor":0,"more":false}"#)
        }
        let folder = try TempFolder("lying-clock")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        try folder.write("notes/a.json", #"{"id":"a","docType":"note"}"#)
        #expect(await eventually { stored.withLock { $0 }.contains("a") })
        #expect(await agent.agent.clock.estimate == nil, "the lie is not believed")
        #expect(agent.logs.count(containing: "ignoring the server's clock headers") == 1)
        try await agent.stop()
        await endpoint.stop()
    }
}
}
