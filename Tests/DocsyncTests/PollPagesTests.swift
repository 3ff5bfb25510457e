import DocsyncEndpoint
import DocsyncHTTP
@testable import DocsyncPingPong
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// A plain PingPong endpoint lists a docType in one reply. The listing is read one document at a
/// time and its changes passed on in pages, so a poll of a large type holds its text, not every
/// document parsed (the first poll of 100,000 documents held them all).
@Suite struct PollPagesTests {
    /// The listing's documents (the top-level list, or `data`'s) are handed over one at a time
    /// with their place in the text and their values, and are not kept; other lists stay in the
    /// value; isolation and syntax errors work as in a whole parse.
    @Test func aListingIsHandedOverOneDocumentAtATime() throws {
        let text = #"{"cursor":1,"data":[{"id":"a","n":1},{"id":"b","k":1,"k":2},7,{"id":"c","deep":[{"x":1}]}],"other":[{"id":"kept"}]}"#
        let bytes = Array(text.utf8)
        var handed: [(JSONValue, Range<Int>, Int)] = []
        let (value, isolated) = try JSONParser.parseListing(bytes, maxElementBytes: .max, maxElementValues: .max, maxValues: .max) {
            handed.append(($0, $1, $2))
        }
        #expect(handed.map { $0.0.object?["id"]?.string } == ["a", "c"])
        #expect(handed.map(\.2) == [3, 5], "each document's values, itself included")
        for (document, range, _) in handed { #expect(try JSONParser.parseListed(bytes, at: range) == document) }
        #expect(isolated.map(\.id) == ["b"])
        #expect(value.object?["data"] == [7])
        #expect(value.object?["other"] == [["id": "kept"]])

        // A bare list is a listing too.
        var bare: [String] = []
        _ = try JSONParser.parseListing(Array(#"[{"id":"x"},{"id":"y"}]"#.utf8), maxElementBytes: .max, maxElementValues: .max, maxValues: .max) { document, _, _ in
            bare.append(document.object?["id"]?.string ?? "")
        }
        #expect(bare == ["x", "y"])

        // What is held at once is the text around the documents and one of them: 1,000 documents
        // of 4 values pass under a limit of 20 values that a whole parse goes over.
        let many = Array(("{\"data\":[" + (0..<1000).map { #"{"id":"d\#($0)","n":[1]}"# }.joined(separator: ",") + "]}").utf8)
        var count = 0
        _ = try JSONParser.parseListing(many, maxElementBytes: .max, maxElementValues: .max, maxValues: 20) { _, _, _ in count += 1 }
        #expect(count == 1000)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parseIsolating(many, maxValues: 20) }
        #expect(throws: JSONSyntaxError.self) {
            try JSONParser.parseListing(Array(#"{"data":[{"id":"a"},{"id":tru}]}"#.utf8), maxElementBytes: .max, maxElementValues: .max, maxValues: .max) { _, _, _ in }
        }
    }

    /// 2,500 listed documents arrive in pages of 1,000 from one listing; what a page passed on is
    /// committed when the poll is asked after it, so the next poll passes on only what changed.
    /// A poll asked from an older cursor (the engine could not apply a page) starts again.
    @Test func aLargeListingIsPassedOnInPagesFromOneRequest() async throws {
        let revs = Mutex([Int](repeating: 1, count: 2_500))
        let server = try await Self.plainServer {
            revs.withLock { revs in revs.indices.map { #"{"id":"d\#($0)","docType":"t","rev":"\#(revs[$0])"}"# } }
        }
        defer { Task { await server.stop() } }
        let endpoint = Self.endpoint(server)

        var reply = try await endpoint.pull(after: nil, wait: nil)
        #expect(reply.changes.count == 1_000 && reply.more)
        #expect(!endpoint.capabilities.pagesAskedAhead, "asking after a page commits it: never asked ahead")
        // The engine did not apply that page: asked from where it was, the poll starts over.
        reply = try await endpoint.pull(after: nil, wait: nil)
        #expect(reply.changes.first?["id"] == "d0" && reply.changes.count == 1_000 && reply.more)
        let listingsBefore = Self.listings(server)
        var pages = [reply.changes.count]
        while reply.more {
            reply = try await endpoint.pull(after: reply.cursor, wait: nil)
            pages.append(reply.changes.count)
        }
        #expect(pages == [1_000, 1_000, 500])
        #expect(Self.listings(server) == listingsBefore, "the pages after the first come from the same listing")

        // Everything was committed: the next poll passes on nothing, then only the changed one.
        reply = try await endpoint.pull(after: reply.cursor, wait: nil)
        #expect(reply.changes.isEmpty && !reply.more)
        revs.withLock { $0[1_234] = 2 }
        reply = try await endpoint.pull(after: reply.cursor, wait: nil)
        #expect(reply.changes.map { $0["id"] } == ["d1234"])
    }

    /// Pages are cut by values too: 30 documents of 80,000 values (more than a reply may hold in
    /// all) pass in pages of at most 14, every one of them.
    @Test func aListingOfMoreValuesThanAReplyMayHoldIsPassedOnInPagesByValues() async throws {
        let zeros = Array(repeating: "0", count: 80_000).joined(separator: ",")
        let server = try await Self.plainServer { (0..<30).map { #"{"id":"d\#($0)","docType":"t","v":[\#(zeros)]}"# } }
        defer { Task { await server.stop() } }
        let endpoint = Self.endpoint(server)
        var reply = try await endpoint.pull(after: nil, wait: nil)
        var ids = reply.changes.compactMap { $0["id"]?.string }
        var pages = [reply.changes.count]
        while reply.more {
            reply = try await endpoint.pull(after: reply.cursor, wait: nil)
            ids += reply.changes.compactMap { $0["id"]?.string }
            pages.append(reply.changes.count)
        }
        #expect(pages.allSatisfy { $0 <= 14 } && pages.count == 3, "\(pages)")
        #expect(Set(ids) == Set((0..<30).map { "d\($0)" }))
    }

    /// A plain PingPong server listing docType `t` (its documents from `listing`); `/api/sync` 404.
    static func plainServer(_ listing: @escaping @Sendable () -> [String]) async throws -> HostileEndpoint {
        let server = HostileEndpoint()
        server.respond { method, path, _ in
            switch (method, path) {
            case ("GET", "/api/document/type/t"): .init(body: #"{"data":[\#(listing().joined(separator: ","))]}"#)
            default: .init(status: 404, body: #"{"error":"not found"}"#)
            }
        }
        try await server.start()
        return server
    }

    static func endpoint(_ server: HostileEndpoint) -> PingPongEndpoint {
        PingPongEndpoint(
            transport: HTTPTransport(baseURL: server.url, client: agentClient, clock: nil), token: "t", selection: TypeSelection(only: ["t"]))
    }

    static func listings(_ server: HostileEndpoint) -> Int {
        server.seen.filter { $0 == ("GET", "/api/document/type/t") }.count
    }
}
