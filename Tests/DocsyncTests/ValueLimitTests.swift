@testable import DocsyncAgent
import DocsyncIndex
import DocsyncModel
@testable import DocsyncStore
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// A document of `numbers` small numbers in one array: `numbers + 4` values (the object, `id`,
/// `docType`, the array), two bytes of text a value.
func valueDense(_ id: String, numbers: Int, docType: String = "t") -> String {
    #"{"id":"\#(id)","docType":"\#(docType)","v":["# + Array(repeating: "0", count: numbers).joined(separator: ",") + "]}"
}

/// A parsed value takes tens of bytes where its text may take two, so the limits the two sides
/// share count values as well as bytes (docs/PROTOCOL.md, Limits). Before them, 27 MB of documents
/// 250 arrays deep, every one within the depth and size limits, took an agent pulling them to
/// 929 MiB (`scripts/tree-amplification.sh`).
@Suite struct ValueLimitTests {
    @Test func aParseStopsAtTheFirstValueOverItsLimit() throws {
        let text = Array("[1,[2,3],{\"a\":null}]".utf8)  // 7 values
        #expect(try JSONParser.parse(text, maxValues: 7).valueCount == 7)
        do {
            _ = try JSONParser.parse(text, maxValues: 6)
            Issue.record("a seventh value was made")
        } catch {
            #expect(error.overBudget && error.reason == "more than 6 values")
        }
    }

    /// One document over its values is left out alone, with its id, and gives its values back:
    /// the reply's own limit counts what is kept, so the documents after it still fit.
    @Test func aDocumentOverItsValuesIsLeftOutAloneAndTheReplyKeepsTheRest() throws {
        let text = #"{"data":[{"id":"a","v":[1,2]},{"id":"dense","v":[\#(Array(repeating: "0", count: 50).joined(separator: ","))]},{"id":"b"}]}"#
        let (value, isolated) = try JSONParser.parseIsolating(Array(text.utf8), maxElementValues: 20, maxValues: 30)
        #expect(value.object?["data"]?.elements?.compactMap { $0.object?["id"]?.string } == ["a", "b"])
        #expect(isolated.map(\.id) == ["dense"] && isolated.first?.reason.contains("more than 20 values") == true)
        // Kept, the values of every document together are over the reply's limit: refused whole.
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parseIsolating(Array(text.utf8), maxElementValues: 100, maxValues: 30) }
    }

    /// The page's count is a bound from the text alone, from its separators and from its size:
    /// never under what the parse makes, for the strangest texts too (brackets and separators
    /// inside strings, escaped quotes, empty containers, values in as few bytes as they can be).
    @Test func theBoundFromTheTextIsNeverUnderTheValuesParsed() throws {
        let texts = [
            #"{}"#, #"[]"#, #"[[],[[]],{}]"#, #"{"a":"[,:]","b\"[":["x\\",1e5,-0.5,true,false,null]}"#,
            #"{"id":"d","docType":"t","v":\#(String(repeating: "[", count: 250))1\#(String(repeating: "]", count: 250))}"#,
            valueDense("n", numbers: 1000), #"{"s":"\u005b\"\\\"[[["}"#, #"  [ 1 , 2 ]  "#, "1", "\"\"", "[1,2,3]", "[[],[]]",
        ]
        for text in texts {
            let parsed = try JSONParser.parse(text).valueCount
            #expect(JSONText.valueBound(text) >= parsed && JSONText.valueBound(bytes: text.utf8.count) >= parsed, "\(text.prefix(60))")
            #expect(JSONText.valueBound(text) <= 2 * parsed + 1, "close enough to cut pages by: \(text.prefix(60))")
        }
        #expect(JSONText.valueBound(valueDense("n", numbers: 1000)) == 1004 + 2, "the two keys' commas")
        // And for any value at all, written compact (the fewest bytes, where the size bound is tightest).
        for _ in 0..<500 {
            let value = Self.randomValue(depth: 0)
            let text = JSONWriter.string(value)
            #expect(JSONText.valueBound(text) >= value.valueCount && JSONText.valueBound(bytes: text.utf8.count) >= value.valueCount, "\(text.prefix(80))")
        }
    }

    static func randomValue(depth: Int) -> JSONValue {
        let scalars: [JSONValue] = [.number("0"), .string(""), .string("a,[:\"]"), .bool(true), .null]
        switch depth < 5 ? Int.random(in: 0..<3) : 0 {
        case 1: return .array((0..<Int.random(in: 0..<5)).map { _ in randomValue(depth: depth + 1) })
        case 2: return .object(JSONObject((0..<Int.random(in: 0..<4)).map { (key: "k\($0)", value: randomValue(depth: depth + 1)) }))
        default: return scalars.randomElement()!
        }
    }

    @Test func aPageIsCutOnceItMayHoldItsValues() {
        var page = ChangePage(since: 0, limit: 1000, maxBytes: .max, maxValues: 2500, sent: [])
        let body = valueDense("x", numbers: 1000)
        let taken = (1...4).map { page.offer(id: "\($0)", body: body, seq: Int64($0)) }
        #expect(taken == [true, true, true, false], "past 2,500: the third document crossed it")
        #expect(page.more && page.changes.count == 3 && page.cursor(latest: 9) == 3)
        var one = ChangePage(since: 0, limit: 1000, maxBytes: .max, maxValues: 10, sent: [])
        let first = one.offer(id: "1", body: body, seq: 1)
        #expect(first, "one document a page, however many values it holds")
    }

    @Test func conflictsCurrentVersionsTakeThePagesRoomWhileTheyFitWhole() throws {
        var page = ChangePage(since: 0, limit: 1000, maxBytes: .max, maxValues: 2500, sent: [])
        let current = try JSONParser.parse(valueDense("c", numbers: 1000))
        var errors = (0..<3).map { JSONObject([("id", .string("c\($0)")), ("message", "revision conflict"), ("current", current)]) }
        errors.insert(JSONObject([("id", "refused"), ("message", "no docType")]), at: 1)
        page.admit(currents: &errors)
        #expect(errors.map { $0["current"] != nil } == [true, false, true, false], "two of 1,004 values fit in 2,500; the third is fetched")
        #expect(errors.map { $0["id"] } == ["c0", "refused", "c1", "c2"], "every entry stays, in order")
        let taken = (1...2).map { page.offer(id: "\($0)", body: valueDense("x", numbers: 1000), seq: Int64($0)) }
        #expect(taken == [true, false], "and one change still moves the cursor")
    }

    @Test func aFileOverTheValuesLimitIsRefusedWithTheReason() throws {
        let limit = ProtocolLimits.maxDocumentValues
        #expect(try DocumentRules.parseObject(Array(valueDense("at", numbers: limit - 4).utf8)).count == 3)
        #expect(throws: DocumentProblem.tooManyValues(limit: limit)) { try DocumentRules.parseObject(Array(valueDense("over", numbers: limit - 3).utf8)) }
        #expect(DocumentProblem.tooManyValues(limit: limit).description.contains("more than \(limit) values"))
    }
}

/// The same limits kept by the reference server and an agent, end to end.
extension LongSuites {
@Suite(.serialized) struct ValueLimitEndToEndTests {
    @Test func everyWriteRouteRefusesADocumentOverTheValuesLimitAlone() async throws {
        let server = try await TestServer.start()
        let limit = ProtocolLimits.maxDocumentRequestValues
        #expect(try await server.api.request("PUT", "/api/document", body: valueDense("at", numbers: limit - 4)).status == 200)
        let put = try await server.api.request("PUT", "/api/document", body: valueDense("over", numbers: limit - 3))
        #expect(put.status == 413 && put.text.contains("more than \(limit) values"), "\(put.text.prefix(200))")
        #expect(try await server.api.request("POST", "/api/document", body: valueDense("over", numbers: limit)).status == 413)
        let batch = #"{"since":0,"documents":[\#(valueDense("over2", numbers: limit)),{"id":"fine","docType":"t"}]}"#
        let reply = try await server.api.request("POST", "/api/sync", body: batch)
        #expect(reply.status == 200)
        let errors = reply.json?.object?["documents"]?.object?["error"]?.elements
        #expect(errors?.map { $0.object?["id"] } == [.string("over2")])
        #expect(errors?.first?.object?["message"]?.string?.contains("values") == true)
        #expect(try await server.api.documents(type: "t").keys.sorted() == ["at", "fine"])
        await server.stop()
    }

    /// Three documents of 700,000 values each, within every limit: the server's pages hold two of
    /// them at most, so each reply stays within what an agent parses, and all three arrive.
    @Test func valueDenseDocumentsArriveInPagesTheAgentTakes() async throws {
        let server = try await TestServer.start()
        for i in 0..<3 {
            #expect(try await server.api.request("PUT", "/api/document", body: valueDense("dense\(i)", numbers: 700_000)).status == 200)
        }
        let page = try await server.api.request("POST", "/api/sync", body: #"{"since":0,"documents":[]}"#)
        #expect(page.json?.object?["more"] == true && page.json?.object?["documents"]?.object?["success"]?.elements?.count == 2)
        let folder = try TempFolder("dense-pull")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(60)) { (0..<3).allSatisfy { folder.exists("t/dense\($0).json") } }, "\(agent.logs.all.suffix(3))")
        #expect(try await AgentStatus.read(root: folder.path).pullError == nil)
        try await agent.stop()
        await server.stop()
    }

    /// Four writes in conflict with documents of 700,000 values: their current versions together
    /// would be a reply past what the agent takes, and the batch would be refused and sent again
    /// for ever. The first goes with its conflict; the others are left for the client to fetch.
    @Test func aBatchOfConflictsSendsTheCurrentVersionsThatFitAndNoMore() async throws {
        let server = try await TestServer.start()
        for i in 0..<4 {
            #expect(try await server.api.request("PUT", "/api/document", body: valueDense("dense\(i)", numbers: 700_000)).status == 200)
        }
        let stale = (0..<4).map { #"{"id":"dense\#($0)","docType":"t","rev":0,"mine":true}"# }.joined(separator: ",")
        let reply = try await server.api.request("POST", "/api/sync", body: #"{"since":4,"echo":false,"documents":[\#(stale)]}"#)
        let errors = try #require(reply.json?.object?["documents"]?.object?["error"]?.elements)
        #expect(errors.map { $0.object?["id"] } == ["dense0", "dense1", "dense2", "dense3"].map { .string($0) })
        #expect(errors.map { $0.object?["current"] != nil } == [true, false, false, false])
        #expect(try JSONParser.parse(reply.body, maxValues: ProtocolLimits.maxReplyValues).valueCount > 700_000, "what the agent takes")
        await server.stop()
    }

    /// A document of 300,000 string members (a table of translations, say; 4 MB, within every
    /// limit): each member was looked up by reading the members in turn, at several steps of the
    /// pull (files named by the endpoint, the comparison with the file, the merge), some 10^11
    /// steps in all. It is pulled, edited on both sides at once, and merged.
    @Test func aDocumentOfManyMembersIsPulledEditedOnBothSidesAndMerged() async throws {
        let server = try await TestServer.start()
        let members = (0..<300_000).map { #""k\#($0)":"v""# }.joined(separator: ",")
        #expect(try await server.api.request("PUT", "/api/document", body: #"{"id":"wide","docType":"t",\#(members)}"#).status == 200)
        let folder = try TempFolder("wide-pull")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(60)) { folder.exists("t/wide.json") })
        try await agent.stop()
        // Offline, the folder changes one member while the server changes another.
        var local = try #require(try JSONParser.parse(folder.read("t/wide.json")).object)
        local["k7"] = "mine"
        try folder.write("t/wide.json", JSONWriter.string(.object(local), style: .pretty))
        var remote = try #require(try await server.api.documents(type: "t")["wide"])
        remote["k299999"] = "theirs"
        #expect(try await server.api.request("PUT", "/api/document", body: JSONWriter.string(.object(remote))).status == 200)
        let again = try await TestAgent.start(folder: folder, endpoint: server.url, token: server.token)
        #expect(await eventually(timeout: .seconds(60)) {
            let stored = try? await server.api.documents(type: "t")["wide"]
            return stored?["k7"] == "mine" && stored?["k299999"] == "theirs"
        })
        #expect(await eventually { (try? JSONParser.parse(folder.read("t/wide.json")).object?["k299999"]) == "theirs" })
        try await again.stop()
        await server.stop()
    }

    /// A hostile server's page of 30,000 documents 250 arrays deep (16 MB, each document within
    /// every limit): the agent stops parsing at the reply's values limit, says why, writes
    /// nothing of it and keeps running. A local file over the limit is refused with the reason.
    @Test func aReplyOverTheValuesLimitIsRefusedAndShown() async throws {
        let endpoint = HostileEndpoint()
        let deep = String(repeating: "[", count: 250) + "1" + String(repeating: "]", count: 250)
        let documents = (0..<30_000).map { #"{"id":"d\#($0)","docType":"t","v":\#(deep)}"# }.joined(separator: ",")
        endpoint.respond { _, path, _ in
            path == "/api/sync" ? .init(body: #"{"documents":{"success":[\#(documents)],"error":[]},"cursor":1,"more":false}"#) : nil
        }
        try await endpoint.start()
        let folder = try TempFolder("values-hostile")
        defer { folder.remove() }
        try folder.write("t/over.json", valueDense("over", numbers: ProtocolLimits.maxDocumentValues))
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.pullError?.contains("more than \(ProtocolLimits.maxReplyValues) values") == true })
        let status = try await AgentStatus.read(root: folder.path)
        #expect(status.invalidFiles.map(\.path) == ["t/over.json"] && status.invalidFiles.first?.reason.contains("values") == true)
        #expect(!folder.exists("t/d0.json"))
        try await agent.stop()
        await endpoint.stop()
    }

    /// A plain PingPong server lists a docType in one reply, without pages. A listing of more
    /// values than any reply may hold (30 documents of 80,000 numbers) is read one document at a
    /// time and arrives whole, in pages; what is over the reply's bytes is refused and shown, the
    /// agent keeps running (docs/SYNC.md, the plain endpoints' ceiling).
    @Test func aPlainListingOfMoreValuesThanAReplyHoldsArrivesInPages() async throws {
        let zeros = Array(repeating: "0", count: 80_000).joined(separator: ",")
        let dense = (0..<30).map { #"{"id":"d\#($0)","docType":"t","v":[\#(zeros)]}"# }.joined(separator: ",")
        let listing = Mutex(dense)
        let endpoint = try await PollPagesTests.plainServer { [listing.withLock { $0 }] }
        let folder = try TempFolder("values-plain")
        defer { folder.remove() }
        try folder.write("t/a.json", #"{"id":"a","docType":"t"}"#)
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t") { $0.pollInterval = .milliseconds(200) }
        #expect(await eventually(timeout: .seconds(60)) { (0..<30).allSatisfy { folder.exists("t/d\($0).json") } })

        // Over the reply cap in bytes (64 MiB): refused and shown, nothing of it written.
        let padding = String(repeating: " ", count: ProtocolLimits.maxReplyBytes)
        listing.withLock { $0 = #"{"id":"big","docType":"t"}"# + padding }
        #expect(await eventually(timeout: .seconds(60)) { (try? await AgentStatus.read(root: folder.path))?.pullError?.contains("over \(ProtocolLimits.maxReplyBytes) bytes") == true })
        #expect(!folder.exists("t/big.json"))
        listing.withLock { $0 = #"{"id":"b","docType":"t","n":1}"# }
        #expect(await eventually(timeout: .seconds(60)) { folder.exists("t/b.json") }, "the poll after the refusal")
        #expect(await eventually { (try? await AgentStatus.read(root: folder.path))?.pullError == nil })
        try await agent.stop()
        await endpoint.stop()
    }
}
}

/// The folder's and the server's forms of a document with files differ only at the files'
/// properties, however many members the document has (each property was set one by one, a lookup
/// each: quadratic in the members).
@Suite struct ManyMemberAttachmentTests {
    @Test(.timeLimit(.minutes(1))) func bothDirectionsChangeOnlyTheFilesProperties() throws {
        let n = 200_000
        let reference = JSONValue.object(JSONObject([(key: "$file", value: "photo.png")]))
        let local = JSONObject((0..<n).map { (key: "k\($0)", value: $0 % 2 == 0 ? reference : JSONValue.string("v")) })
        let mapping = AttachmentMapping([
            UploadRow(docID: "d", property: "k0", reference: "photo.png", path: "photo.png", state: .done, remoteURL: "http://s/f"),
            UploadRow(docID: "d", property: "gone", reference: nil, path: nil, state: .removed),
        ])
        let wire = mapping.toWire(local)
        #expect(wire.count == n + 1 && wire["k0"] == "http://s/f" && wire["k2"] == .null && wire["k1"] == "v" && wire["gone"] == .null)
        var remote = wire
        remote["extra"] = "server's"
        let back = mapping.toLocal(remote, local: local)
        #expect(back.count == n + 1 && back["k0"] == reference && back["k2"] == reference && back["gone"] == nil && back["extra"] == "server's")
        #expect(Array(back.keys.prefix(3)) == ["k0", "k1", "k2"])
    }
}
