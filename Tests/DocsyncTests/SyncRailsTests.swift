@testable import DocsyncAgent
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
@testable import DocsyncSyncRails
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The sync-rails adapter against a sync-rails-like server: agents converge through it, the
/// one-second watermark misses nothing, and what the dialect cannot carry is said.
@Suite struct SyncRailsTests {
    let token = "rails-token"

    func file(of id: String, in folder: TempFolder) -> String? {
        DocsyncWatcherProbe.walk(folder.path).map(\.0).first { (try? idOf(folder, $0)) == id }
    }

    func object(of id: String, in folder: TempFolder) -> JSONObject? {
        file(of: id, in: folder).flatMap { try? DocumentRules.parseObject(Array(folder.bytes($0))).object }
    }

    func agent(_ folder: TempFolder, _ server: SyncRailsServer) async throws -> TestAgent {
        try await TestAgent.start(folder: folder, endpoint: server.endpoint, token: token, adapter: syncRailsAdapter(server)) {
            $0.pollInterval = .milliseconds(100)
        }
    }

    @Test func twoAgentsConvergeThroughASyncRailsServer() async throws {
        let server = SyncRailsServer(token: token)
        try await server.start()
        let (folderA, folderB) = (try TempFolder("rails-a"), try TempFolder("rails-b"))
        let a = try await agent(folderA, server)
        let b = try await agent(folderB, server)
        defer { Task { try? await a.stop(); try? await b.stop(); await server.stop(); folderA.remove(); folderB.remove() } }

        try folderA.write("events/launch.json", #"{"id":"launch","docType":"events","title":"Launch"}"#)
        #expect(await eventually { object(of: "launch", in: folderB)?["title"] == "Launch" })
        #expect(server.objects["launch"]?["uuid"] == "launch" && server.objects["launch"]?["docType"] == nil, "the seed's shape")

        let pathB = try #require(file(of: "launch", in: folderB))
        try folderB.write(pathB, #"{"id":"launch","docType":"events","title":"Launch, moved"}"#)
        #expect(await eventually { object(of: "launch", in: folderA)?["title"] == "Launch, moved" })

        try folderA.remove("events/launch.json")
        #expect(await eventually { server.objects["launch"]?["deleted_at"].map { !$0.isNull } == true }, "deleted_at, never removed")
        #expect(await eventually { file(of: "launch", in: folderB) == nil })
        #expect(server.objects.count == 1)
    }

    @Test func anObjectStampedInTheSecondAlreadySeenIsNotMissed() async throws {
        let server = SyncRailsServer(token: token)
        try await server.start()
        defer { Task { await server.stop() } }
        // A fixed second of the server's, in the past: a stamp ahead of the agent's clock never
        // becomes the watermark (see SyncRailsCursorTests).
        let second = Int64(Date().timeIntervalSince1970) - 100
        server.setNow(second)
        server.put(["uuid": "first", "title": "one"])
        let reader = EndpointFixture.syncRailsClient(server, token: token)
        let first = try await reader.pull(after: nil, wait: nil)
        #expect(first.changes.map { $0["id"] } == [.string("first")])
        // Another write in the same second: the watermark posted is a second back, so it comes.
        server.put(["uuid": "second", "title": "two"])
        let next = try await reader.pull(after: first.cursor, wait: nil)
        #expect(next.changes.map { $0["id"] } == [.string("second")], "the first is dropped as seen, unchanged")
        // A change to an object already seen, still in that second, comes too.
        server.put(["uuid": "first", "title": "one, edited"])
        let again = try await reader.pull(after: next.cursor, wait: nil)
        #expect(again.changes.map { $0["title"] } == [.string("one, edited")])
        server.setNow(second + 5)
        let quiet = try await reader.pull(after: again.cursor, wait: nil)
        #expect(quiet.changes.isEmpty)
    }

    @Test func aDocumentOfAnotherDocTypeIsRejectedWithTheReason() async throws {
        let server = SyncRailsServer(token: token)
        try await server.start()
        let folder = try TempFolder("rails-types")
        let a = try await agent(folder, server)
        defer { Task { try? await a.stop(); await server.stop(); folder.remove() } }
        try folder.write("notes/n.json", #"{"id":"n","docType":"note"}"#)
        try folder.write("events/e.json", #"{"id":"e","docType":"events"}"#)
        #expect(await eventually { server.objects["e"] != nil })
        #expect(await eventually {
            (try? await AgentStatus.read(root: folder.path))?.rejected.first?.reason.contains("carries only docType \"events\"") == true
        })
        #expect(server.objects["n"] == nil)
    }

    @Test func theBinarySyncsAFolderWithASyncRailsServer() async throws {
        let server = SyncRailsServer(token: token)
        try await server.start()
        let work = try TempFolder("rails-cli")
        defer { Task { await server.stop(); work.remove() } }
        try work.write("token", token + "\n")
        try work.write("folder/events/a.json", #"{"id":"a","docType":"events","title":"from the CLI"}"#)
        server.put(["uuid": "b", "title": "from the server"])
        let (status, _, stderr) = try await runDocsync(
            ["sync", work.file("folder"), "--endpoint", server.endpoint, "--token-file", work.file("token")], logDirectory: work.path)
        #expect(status == 0, "\(stderr.suffix(400))")
        #expect(server.objects["a"]?["title"] == "from the CLI")
        #expect(try work.read("folder/events/b.json").contains("from the server"))
    }
}

extension EndpointFixture {
    /// A sync-rails client of `server` outside any agent.
    static func syncRailsClient(_ server: SyncRailsServer, token: String) -> any DocumentEndpoint {
        syncRailsAdapter(server).make(EndpointContext(clientID: "reader", clock: ServerClock(), requestTimeout: .seconds(10), credential: token))
    }
}

/// A sync-rails server that sends what a test tells it: the adapter neither traps nor writes
/// what it cannot trust, and says what was wrong.
@Suite struct HostileSyncRailsTests {
    func client(_ endpoint: HostileEndpoint) -> any DocumentEndpoint {
        let origin = endpoint.url
        return SyncRailsEndpoint(
            transport: HTTPTransport(baseURL: origin, client: agentClient, clock: ServerClock()), path: "/api/sync", resource: "events",
            token: "t")
    }

    @Test(arguments: [
        #"not json"#, #"[]"#, #"{"events":[]}"#, #"{"other":{"success":[]}}"#,
    ])
    func aReplyThatIsNotASyncReplyIsABadReply(_ body: String) async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        defer { Task { await endpoint.stop() } }
        endpoint.respond { _, _, _ in .init(body: body) }
        do throws(EndpointError) {
            _ = try await client(endpoint).pull(after: nil, wait: nil)
            Issue.record("accepted \(body)")
        } catch .badReply {
        } catch {
            Issue.record("expected a bad reply, got \(error)")
        }
    }

    @Test func strangeObjectsAreSkippedOrKeptWithoutATrap() async throws {
        let endpoint = HostileEndpoint()
        try await endpoint.start()
        defer { Task { await endpoint.stop() } }
        let objects = [
            #"{"uuid":7,"updated_at":"2026-01-01T00:00:00Z"}"#,  // not a string: no id
            #"{"uuid":"old","updated_at":"0000-01-01T00:00:00Z"}"#,  // before the epoch
            #"{"uuid":"far","updated_at":"9999-12-31T23:59:59Z"}"#,  // the last second there is
            #"{"uuid":"bad","updated_at":"yesterday","deleted_at":null}"#,
            #"42"#,
        ]
        endpoint.respond { _, _, _ in .init(body: #"{"events":{"success":[\#(objects.joined(separator: ","))],"error":[{"message":"no uuid"}]}}"#) }
        let reader = client(endpoint)
        let first = try await reader.pull(after: nil, wait: nil)
        #expect(Set(first.changes.compactMap { $0["id"]?.string }) == ["old", "far", "bad"])
        #expect(first.changes.allSatisfy { $0["docType"] == "events" && $0["uuid"] == nil })
        // The year 9999 is not believed as the watermark (every later change would be "older"):
        // the next call still asks from before it, so `far` comes again (the engine finds it
        // unchanged) and nothing stamped now is dropped.
        #expect(first.cursor.map { SyncRailsCursor($0).postedWatermark.hasPrefix("9999") } == false)
        let second = try await reader.pull(after: first.cursor, wait: nil)
        #expect(second.changes.contains { $0["id"] == "far" })
        #expect(endpoint.seen.count == 2)
    }
}
