@testable import DocsyncAgent
import DocsyncEndpoint
@testable import DocsyncPingPong
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// One bad document stops one document. Regression: a lone surrogate or a duplicate key in any
/// document of a pull page (or of a push reply) made the whole body "not JSON", and pushes and
/// pulls stalled for ever.
@Suite struct IsolatedDocumentTests {
    func list(_ value: JSONValue?) -> [JSONValue] {
        if case .array(let items)? = value { items } else { [] }
    }

    func parse(_ text: String) throws -> (JSONValue, [IsolatedElement]) {
        let (value, isolated) = try JSONParser.parseIsolating(Array(text.utf8))
        return (value, isolated)
    }

    @Test func anUnrepresentableDocumentIsLeftOutWithItsIdAndTheRestKept() throws {
        let (value, isolated) = try parse(#"""
            {"documents":{"success":[{"id":"a","x":1},{"id":"b","k":1,"k":2},{"id":"c","s":"\ud800 lone"},{"x":{"id":"inner"},"id":"d","t":"\udc00"}]},"cursor":9}
            """#)
        let ids = list(value.object?["documents"]?.object?["success"]).compactMap { $0.object?["id"]?.string }
        #expect(ids == ["a"])
        #expect(value.object?["cursor"] == .number("9"))
        #expect(isolated.map(\.id) == ["b", "c", "d"], "the id at the document's own level, not a nested one")
        #expect(isolated[0].reason.contains("duplicate key"))
        #expect(isolated[1].reason.contains("surrogate"))
    }

    @Test func insideADocumentNothingIsDroppedTheWholeDocumentIs() throws {
        let (value, isolated) = try parse(#"[{"id":"whole","list":[{"k":1,"k":1}]},{"id":"fine"}]"#)
        #expect(list(value).count == 1)
        #expect(isolated.map(\.id) == ["whole"])
    }

    @Test func anElementOverTheByteLimitIsLeftOutAloneWithItsId() throws {
        let text = #"{"data":[{"id":"small","v":1},{"id":"big","v":"\#(String(repeating: "x", count: 200))"},{"id":"after"}]}"#
        let (value, isolated) = try JSONParser.parseIsolating(Array(text.utf8), maxElementBytes: 100)
        #expect(value.object?["data"]?.elements?.compactMap { $0.object?["id"]?.string } == ["small", "after"])
        #expect(isolated.map(\.id) == ["big"] && isolated.first?.reason.contains("over the limit of 100") == true)
        #expect(try JSONParser.parseIsolating(Array(text.utf8)).isolated.isEmpty, "no limit: nothing left out")
    }

    @Test func aSyntaxErrorStillFailsTheWholeBody() {
        #expect(throws: JSONSyntaxError.self) { try parse(#"[{"id":"a"},{"id":"b",]"#) }
        #expect(throws: JSONSyntaxError.self) { try parse(#"[{"id":"a","k":1,"k":2"#) }
        #expect(throws: JSONSyntaxError.self) { try parse(#"{"k":1,"k":2}"#) }  // no list: the body itself
    }

    /// The strangest inputs: an id that is not an identifier, quotes and escapes in keys, deep
    /// nesting inside the bad document; no crash and no id that could name a file.
    @Test func hostileIdsAndDepths() throws {
        let deep = String(repeating: "[", count: 400) + String(repeating: "]", count: 400)
        let (_, isolated) = try parse(#"[{"id":"../../etc","k":1,"k":1},{"i\"d":"x","id":"ok-1","d":\#(deep),"d":0}]"#)
        #expect(isolated.map(\.id) == [nil, "ok-1"])
    }
}

/// The same rule through an agent: the good documents of a page arrive, the bad one is reported.
extension HeavySuites {
@Suite(.serialized) struct IsolatedDocumentAgentTests {
    @Test func aPullPageWithOneUnrepresentableDocumentAppliesTheRest() async throws {
        let endpoint = HostileEndpoint()
        endpoint.respond { _, path, body in
            guard path == "/api/sync" else { return nil }
            if body.contains(#""since":0"#) {
                return .init(body: #"""
                    {"documents":{"success":[{"id":"good1","docType":"note","rev":1},{"id":"bad","docType":"note","t":"\ud800","rev":1},{"id":"good2","docType":"note","rev":1}]},"cursor":3}
                    """#)
            }
            return .init(body: #"{"documents":{"success":[]},"cursor":3}"#)
        }
        try await endpoint.start()
        let folder = try TempFolder("isolated")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { folder.exists("note/good1.json") && folder.exists("note/good2.json") }, "\(agent.logs.all.suffix(5))")
        #expect(await eventually { agent.logs.count(containing: "cannot be taken") == 1 })
        #expect(agent.logs.all.contains { $0.contains("cannot be taken") && $0.contains("bad") }, "reported with its id")
        #expect(!folder.exists("note/bad.json"))
        #expect(agent.logs.count(containing: "pulling failed") == 0)
        try await agent.stop()
        await endpoint.stop()
    }
}
}

extension HeavySuites.IsolatedDocumentAgentTests {
    /// Regression: a 20 MB record (Kinto) was written into the folder although a document may
    /// have 16 MiB; the limit is now the transport's, the same for every adapter.
    @Test func aPulledDocumentOverTheLimitIsRefusedAloneAndTheRestIsWritten() async throws {
        let endpoint = HostileEndpoint()
        let big = String(repeating: "x", count: 20 << 20)
        endpoint.respond { _, path, body in
            guard path == "/api/sync" else { return nil }
            if body.contains(#""since":0"#) {
                return .init(body: #"{"documents":{"success":[{"id":"big","docType":"note","t":"\#(big)","rev":1},{"id":"fine","docType":"note","rev":1}]},"cursor":2}"#)
            }
            return .init(body: #"{"documents":{"success":[]},"cursor":2}"#)
        }
        try await endpoint.start()
        let folder = try TempFolder("isolated-big")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        #expect(await eventually { folder.exists("note/fine.json") }, "\(agent.logs.all.suffix(5))")
        #expect(await eventually { agent.logs.all.contains { $0.contains("big") && $0.contains("over the limit of") } }, "refused with its id and why")
        #expect(!folder.exists("note/big.json"))
        try await agent.stop()
        await endpoint.stop()
    }
}

/// The batch call's body for one change: the base revision inside as `rev`, `0` for a document
/// the server never acknowledged (create only if absent), the rest of the text as it was.
@Suite struct BatchBodyTests {
    @Test func theBaseRevisionGoesInFrontAndTheRestIsKept() throws {
        let body = #"{"id":"a","docType":"note","n":1.50,"t":"é"}"#
        for (base, rev) in [(Int64?.none, "0"), (Int64(7), "7")] {
            let sent = PingPongEndpoint.batchBody(OutgoingChange(id: "a", docType: "note", body: body, baseRevision: base))
            let object = try #require(try JSONParser.parse(sent).object)
            #expect(object["rev"] == .number(rev))
            var rest = object
            rest["rev"] = nil
            #expect(JSONWriter.string(.object(rest)) == body, "the document's own text, literals and order, unchanged")
        }
    }
}
