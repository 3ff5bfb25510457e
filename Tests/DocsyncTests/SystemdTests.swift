import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The real binary under a stand-in for systemd: the notify protocol on a socket of the test's,
/// and the journal's log form.
extension HeavySuites {
@Suite(.serialized) struct SystemdTests {
    @Test func watchTellsSystemdReadyStatusWatchdogAndStoppingInOrder() async throws {
        let s = try await EndToEndTests.Setup.start()
        let notify = try NotifySocket(folder: s.work)
        defer { notify.close() }
        try s.docs.write("notes/a.json", #"{"docType":"note","a":1}"#)
        let agent = try DocsyncProcess(
            ["watch", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000", "JOURNAL_STREAM": "8:12345"],
            logDirectory: s.work.path, name: "watch")
        defer { Task { await agent.stop(); await s.finish() } }

        #expect(await eventually { notify.messages.contains { $0.hasPrefix("READY=1") } })
        #expect(await eventually { notify.messages.filter { $0.contains("WATCHDOG=1") }.count >= 2 }, "keep-alives at half of WatchdogSec")
        #expect(await eventually { notify.messages.contains { $0.contains("STATUS=1 synced, 0 pending") } }, "\(notify.messages)")
        agent.signal(SIGTERM)
        #expect(await agent.wait(timeout: .seconds(20)) == 0, "a clean exit on SIGTERM")
        let messages = notify.messages
        let ready = try #require(messages.firstIndex { $0.hasPrefix("READY=1") })
        #expect(!messages[..<ready].contains { $0.contains("WATCHDOG=1") }, "nothing before READY: \(messages)")
        #expect(messages.last?.hasPrefix("STOPPING=1") == true, "STOPPING=1 last: \(messages)")
        #expect(messages.filter { $0.hasPrefix("READY=1") }.count == 1)

        // Under the journal: a priority prefix instead of a timestamp of our own.
        let lines = agent.stderr.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("<6>info watching ") }, "\(lines.prefix(5))")
        #expect(lines.allSatisfy { $0.hasPrefix("<") }, "\(lines.prefix(5))")
    }

    @Test func serveTellsSystemdOnceItListens() async throws {
        let work = try TempFolder("systemd-serve")
        defer { work.remove() }
        let notify = try NotifySocket(folder: work)
        defer { notify.close() }
        try work.write("token", "t\n")
        let server = try DocsyncProcess(
            ["serve", "--data", work.file("data"), "--port", "0", "--token-file", work.file("token")],
            environment: ["NOTIFY_SOCKET": notify.path], logDirectory: work.path, name: "serve")
        let url = try await server.firstLine()
        #expect(await eventually { notify.messages.contains { $0 == "READY=1\nSTATUS=serving \(url)" } }, "\(notify.messages)")
        await server.stop()
        #expect(notify.messages.last?.hasPrefix("STOPPING=1") == true, "\(notify.messages)")
    }

    @Test func jsonLogLinesAreOneObjectEach() async throws {
        let s = try await EndToEndTests.Setup.start()
        try s.docs.write("notes/a.json", #"{"docType":"note"}"#)
        try s.docs.write("notes/bad.json", "{broken")
        let agent = try DocsyncProcess(
            ["watch", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile, "--log-format", "json"], logDirectory: s.work.path, name: "watch")
        defer { Task { await agent.stop(); await s.finish() } }
        #expect(await eventually { agent.stderr.contains("\"message\":\"watching ") })
        await agent.stop()
        let objects = agent.stderr.split(separator: "\n").map { try? JSONParser.parse(String($0)).object }
        #expect(!objects.isEmpty && objects.allSatisfy { $0 != nil }, "\(agent.stderr.prefix(600))")
        let watching = try #require(objects.compactMap { $0 }.first { $0["message"]?.string?.hasPrefix("watching ") == true })
        #expect(watching["level"] == "info" && watching["scan.invalid"] == "1" && watching["time"]?.string != nil, "\(watching)")
        #expect(objects.compactMap { $0 }.contains { $0["level"] == "warning" && ($0["file.path"]?.string ?? "").contains("bad.json") })
    }
}
}
