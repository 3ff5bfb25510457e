import DocsyncAgent
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// A server without revisions that hands out its copy of a document again and again (as a
/// sync-rails server does within a second): the agent tells an old copy from an edit by content.
@Suite struct RevlessServerTests {
    /// The document as the server keeps it: no `rev`, members in the server's order.
    static let served = #"{"id":"x","docType":"note","a":1,"b":2}"#

    /// The folder holds the document in an order of its own (a save that only reordered it, not
    /// sent), then deletes it while the server still serves its copy and refuses writes. The
    /// deletion stands and waits to be sent. It was taken for an edit made on the server (the
    /// index keeps the file's text, compared member by member in order with the server's) and the
    /// file came back.
    @Test func aDeletionStandsAgainstTheServersCopyInAnotherOrder() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        endpoint.respond { _, path, body in
            guard path == "/api/sync" else { return nil }
            if body.contains(#""documents":[{"#) { return .init(status: 503, body: #"{"error":"away"}"#) }
            return .init(body: #"{"documents":{"success":[\#(Self.served)],"error":[]},"cursor":1,"more":false}"#)
        }
        let folder = try TempFolder("revless")
        defer { folder.remove() }
        let agent = try await TestAgent.start(folder: folder, endpoint: endpoint.url, token: "t")
        func pending() async -> Int? { (try? await AgentStatus.read(root: folder.path))?.counts.pending }
        #expect(await eventually { folder.exists("note/x.json") })

        try folder.write("note/x.json", #"{"b":2,"a":1,"docType":"note","id":"x"}"#)
        try folder.write("note/marker.json", #"{"id":"marker","docType":"note"}"#)
        #expect(await eventually { await pending() == 1 }, "the marker waits to be sent; the reorder is not sent")

        try folder.remove("note/x.json")
        #expect(await eventually { await pending() == 2 }, "the deletion waits to be sent")
        let pulls = endpoint.seen.filter { $0.1 == "/api/sync" }.count
        #expect(await eventually(timeout: .seconds(20)) { endpoint.seen.filter { $0.1 == "/api/sync" }.count >= pulls + 3 })
        #expect(!folder.exists("note/x.json"), "the server's old copy does not bring the file back")
        #expect(await pending() == 2)
        try await agent.stop()
        await endpoint.stop()
    }
}
