@testable import DocsyncAgent
import DocsyncHTTP
import DocsyncKinto
import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization
import Testing

/// A Kinto that lies, against the engine's rules: its watermark (`_since`, the newest
/// `last_modified` seen) range-checked, a listing that ignores `_since` not followed at once, a
/// write answered 412 every time asked with backoff.
extension LongSuites {
@Suite(.serialized) struct HostileKintoTests {
    /// An agent on bucket `b` of the hostile Kinto at `endpoint`.
    static func agent(_ folder: TempFolder, _ endpoint: HostileEndpoint, poll: Duration) async throws -> TestAgent {
        let url = endpoint.url + "/v1"
        let adapter = AdapterMaker { context in
            KintoEndpoint(
                transport: HTTPTransport(baseURL: url, client: agentClient, clock: context.clock, clientID: context.clientID, requestTimeout: context.requestTimeout),
                bucket: "b", credential: context.credential, selection: context.selection)
        }
        return try await TestAgent.start(folder: folder, endpoint: "kinto+" + url + "/buckets/b", token: "u:p", adapter: adapter) { $0.pollInterval = poll }
    }

    /// The routes every hostile Kinto here answers the same; `nil` for a records listing.
    static func bucketRoutes(_ method: String, _ target: String) -> HostileEndpoint.Answer? {
        if target == "/v1/" { return .init(body: #"{"settings":{"batch_max_requests":25},"capabilities":{}}"#) }
        if method == "PUT" { return .init(status: 412, body: "{}") }
        if target.hasPrefix("/v1/buckets/b/collections?") { return .init(body: #"{"data":[{"id":"note"}]}"#) }
        return nil
    }

    /// Regression: a Kinto that ignores `_since` and has a full page of records was listed six
    /// times a second for ever (64 % of a core): each page said "more", and nothing moved.
    @Test func aKintoThatIgnoresSinceIsNotListedAgainAtOnce() async throws {
        let endpoint = HostileEndpoint()
        let listings = Mutex(0)
        let page = (0..<1000).map { #"{"id":"r\#($0)","last_modified":\#(1_700_000_000_000 + $0)}"# }.joined(separator: ",")
        endpoint.respondWithQuery { method, target, _ in
            if let answer = Self.bucketRoutes(method, target) { return answer }
            guard target.hasPrefix("/v1/buckets/b/collections/note/records") else { return nil }
            listings.withLock { $0 += 1 }
            return .init(headers: [("ETag", "\"1700000000999\"")], body: #"{"data":[\#(page)]}"#)  // whatever `_since` says
        }
        try await endpoint.start()
        let folder = try TempFolder("kinto-since")
        defer { folder.remove() }
        let agent = try await Self.agent(folder, endpoint, poll: .seconds(2))
        #expect(await eventually { folder.exists("note/r999.json") }, "\(agent.logs.all.suffix(5))")
        let more = try await growth(over: .seconds(4)) { [listings.withLock { $0 }] }[0]
        #expect(more <= 4, "\(more) listings in 4 s")
        #expect(agent.logs.count(containing: "its cursor does not move") == 1, "said once")
        try await agent.stop()
        await endpoint.stop()
    }

    /// Regression (the rule on Kinto): every write answered 412 with yet another current record
    /// made 384 batch calls in 20 s; conflicts in a row now back off as on every adapter.
    @Test func aKintoAnsweringEveryWrite412IsAskedWithBackoff() async throws {
        let endpoint = HostileEndpoint()
        let writes = Mutex(0)
        endpoint.respondWithQuery { method, target, _ in
            if let answer = Self.bucketRoutes(method, target) { return answer }
            if target.hasPrefix("/v1/buckets/b/collections/note/records") { return .init(headers: [("ETag", "\"1\"")], body: #"{"data":[]}"#) }
            guard target == "/v1/batch" else { return nil }
            let n = writes.withLock { w -> Int in
                w += 1
                return w
            }
            let existing = #"{"id":"loop","last_modified":\#(1_700_000_000_000 + n),"v":\#(n)}"#
            // The create is stored (the two sides agree on a version); every later write meets yet another.
            if n == 1 {
                return .init(body: #"{"responses":[{"status":201,"path":"/v1/buckets/b/collections/note/records/loop","body":{"data":{"id":"loop","last_modified":1700000000000,"v":0}}}]}"#)
            }
            return .init(body: #"{"responses":[{"status":412,"path":"/v1/buckets/b/collections/note/records/loop","body":{"details":{"existing":\#(existing)}}}]}"#)
        }
        try await endpoint.start()
        let folder = try TempFolder("kinto-412")
        defer { folder.remove() }
        try folder.write("note/loop.json", #"{"id":"loop","docType":"note","v":0}"#)
        let agent = try await Self.agent(folder, endpoint, poll: .seconds(2))
        #expect(await eventually {
            guard writes.withLock({ $0 }) >= 1 else { return false }
            return (try? await AgentStatus.read(root: folder.path))?.counts.pending == 0
        })
        try folder.write("note/loop.json", #"{"id":"loop","docType":"note","v":0,"edited":true}"#)
        #expect(await eventually { writes.withLock { $0 } >= 3 }, "\(agent.logs.all.suffix(5))")
        let more = try await growth(over: .seconds(4)) { [writes.withLock { $0 }] }[0]
        // The test policy backs off 50 ms doubling to 500 ms: about a dozen calls in 4 s.
        #expect(more <= 25, "\(more) batch calls in 4 s")
        #expect(agent.logs.count(containing: "writes in a row with a conflict") == 1, "said once")
        try await agent.stop()
        await endpoint.stop()
    }

    /// Regression: a record stamped 9999-12-31 made the agent ask for changes "since 9999-12-31"
    /// from then on: every later change was skipped while `status` said synced.
    @Test func aRecordStampedFarInTheFutureIsRefusedAndLaterChangesStillCome() async throws {
        let endpoint = HostileEndpoint()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let far: Int64 = 253_402_300_799_000
        // The server's records: (id, last_modified); "later" is added once the first pull is in.
        let records = Mutex<[(String, Int64)]>([("future", far), ("a", now - 1000)])
        endpoint.respondWithQuery { method, target, _ in
            if let answer = Self.bucketRoutes(method, target) { return answer }
            guard target.hasPrefix("/v1/buckets/b/collections/note/records") else { return nil }
            let since = target.components(separatedBy: "_since=").dropFirst().first.flatMap { Int64($0.prefix { $0.isNumber }) } ?? 0
            let all = records.withLock { $0 }
            let listed = all.filter { $0.1 > since }.sorted { $0.1 < $1.1 }
                .map { #"{"id":"\#($0.0)","last_modified":\#($0.1),"title":"\#($0.0)"}"# }
            return .init(headers: [("ETag", "\"\(all.map(\.1).max() ?? 0)\"")], body: #"{"data":[\#(listed.joined(separator: ","))]}"#)
        }
        try await endpoint.start()
        let folder = try TempFolder("kinto-watermark")
        defer { folder.remove() }
        let agent = try await Self.agent(folder, endpoint, poll: .milliseconds(200))
        #expect(await eventually { folder.exists("note/a.json") }, "\(agent.logs.all.suffix(5))")
        records.withLock { $0.append(("later", now + 1000)) }
        #expect(await eventually { folder.exists("note/later.json") }, "a later change still comes: \(agent.logs.all.suffix(5))")
        #expect(!folder.exists("note/future.json"))
        #expect(agent.logs.count(containing: "last_modified \(far) is later than") == 1, "refused with why, once")
        try await agent.stop()
        await endpoint.stop()
    }
}
}
