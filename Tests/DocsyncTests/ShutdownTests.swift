import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Trust finding (fourth round, 2): SIGTERM must always work. A `watch --config` of 300 folders
/// ran 8 minutes after two SIGTERMs, 200 pulling folders ignored it for 10 s, and an agent
/// checking a costly schema ignored it. Whatever the process is doing, it ends within 5 s with
/// its state durable (the real binary, each under its heavy state).
extension LongSuites {
@Suite(.serialized) struct ShutdownTests {
    /// SIGTERM now; whether `process` ended within 5 s.
    static func endsWithinFiveSeconds(_ process: DocsyncProcess) async -> Bool {
        let sent = ContinuousClock.now
        process.signal(SIGTERM)
        let code = await process.wait(timeout: .seconds(10))
        return code != nil && ContinuousClock.now - sent < .seconds(5)
    }

    /// `count` documents of `type` stored on the server in batches.
    static func store(_ count: Int, type: String, body: (Int) -> String = { _ in "" }, api: APIClient) async throws {
        for start in stride(from: 0, to: count, by: 500) {
            let docs = (start..<min(start + 500, count)).map { #"{"id":"\#(type)-\#($0)","docType":"\#(type)"\#(body($0))}"# }
            #expect(try await api.request("POST", "/api/sync", body: #"{"since":0,"echo":false,"documents":[\#(docs.joined(separator: ","))]}"#).status == 200)
        }
    }

    @Test func aLargePullEndsOnSIGTERMAndGoesOnFromWhereItWas() async throws {
        let s = try await HeavySuites.EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        try await Self.store(20_000, type: "note", api: s.api)
        let agent = try s.watch()
        #expect(await eventually { ((try? FileManager.default.contentsOfDirectory(atPath: s.docs.file("note")))?.count ?? 0) > 100 })
        #expect(await Self.endsWithinFiveSeconds(agent), "\(agent.stderr.suffix(1000))")
        let again = try s.watch(name: "watch-again")
        defer { Task { await again.stop() } }
        #expect(await eventually(timeout: .seconds(120)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: s.docs.file("note")))?.count ?? 0) == 20_000
        }, "every document once, no copy beside it: \(again.stderr.suffix(1000))")
    }

    @Test func anAgentCheckingACostlySchemaEndsOnSIGTERM() async throws {
        let s = try await HeavySuites.EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        let schema = #"{"id":"trap","docType":"schema","properties":{"s":{"type":"string","pattern":"^(a|a)+$"}}}"#
        #expect(try await s.api.request("PUT", "/api/document", body: schema).status == 200)
        try await Self.store(2_000, type: "trap", body: { _ in #","s":"\#(String(repeating: "a", count: 40))!""# }, api: s.api)
        let agent = try s.watch()
        #expect(await eventually { s.docs.exists("trap") })
        #expect(await Self.endsWithinFiveSeconds(agent), "\(agent.stderr.suffix(1000))")
    }

    /// A graceful shutdown that cannot finish ends at the deadline all the same: a batch call
    /// whose body never ends holds the server's request open, and the process exits by itself
    /// (saying so) within the 5 s, its countdown begun at the signal.
    @Test func aServerHoldingABodyThatNeverEndsEndsOnSIGTERM() async throws {
        let s = try await HeavySuites.EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        let port = Int(s.url.split(separator: ":").last!)!
        let head = "POST /api/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=\(s.api.token)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        let fd = try #require(RawHTTP.connect(port: port))
        defer { close(fd) }
        #expect(await RawHTTP.offPool { RawHTTP.send(fd, head + "1\r\n{\r\n") })
        // The server is inside the request (its head read, its body awaited), not merely up: a
        // connection whose head is still unread is idle, and a graceful shutdown rightly closes it.
        #expect(await eventually {
            guard let reply = try? await s.api.request("GET", "/metrics"), reply.status == 200 else { return false }
            return (Scrape(reply.text).value("docsync_server_requests_in_flight") ?? 0) >= 2
        }, "the held request and the scrape itself in flight")
        #expect(await Self.endsWithinFiveSeconds(s.server), "\(s.server.stderr.suffix(1000))")
        #expect(s.server.stderr.contains("exiting now"), "ended by the deadline, not by a graceful shutdown: \(s.server.stderr.suffix(500))")
    }

    @Test func twoHundredFoldersPullingEachOthersDocumentsEndOnSIGTERM() async throws {
        let s = try await HeavySuites.EndToEndTests.Setup.start()
        let work = try TempFolder("shutdown-many")
        defer { Task { await s.finish(); work.remove() } }
        var config = "log_level: warning\nfolders:\n"
        for i in 0..<200 {
            for n in 0..<3 { try work.write("f\(i)/notes/n\(n).json", #"{"docType":"note","folder":\#(i),"n":\#(n)}"#) }
            config += "  - {name: f\(i), path: \(work.file("f\(i)")), endpoint: \"\(s.url)\", token_file: \(s.tokenFile)}\n"
        }
        try work.write("docsync.yaml", config)
        let agent = try DocsyncProcess(["watch", "--config", work.file("docsync.yaml")], logDirectory: work.path, name: "watch")
        // Busy: folders have started pulling the others' documents (which folders first is the
        // turns' choice; on a loaded machine the first scans alone take tens of seconds).
        #expect(await eventually(timeout: .seconds(120), every: .milliseconds(250)) {
            (0..<200).contains { ((try? FileManager.default.contentsOfDirectory(atPath: work.file("f\($0)/note")))?.count ?? 0) > 10 }
        }, "\(agent.stderr.suffix(1000))")
        #expect(await Self.endsWithinFiveSeconds(agent), "\(agent.stderr.suffix(1000))")
    }
}
}
