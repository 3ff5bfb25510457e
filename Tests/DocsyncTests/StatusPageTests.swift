import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// The status page as a person sees it: the real agent's page in headless Chromium (Debian's
/// `chromium`), after a few changes to the folder. A screenshot is kept in `$DOCSYNC_ARTIFACTS`.
extension HeavySuites {
@Suite(.serialized) struct StatusPageTests {
    static let chromium = ProcessInfo.processInfo.environment["DOCSYNC_CHROMIUM"] ?? "/usr/bin/chromium"

    /// Runs headless Chromium on `url` with `arguments`; its stdout.
    func chromium(_ arguments: [String], url: String, work: TempFolder) async throws -> String {
        let browser = try DocsyncProcess(
            executable: Self.chromium,
            arguments: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=\(work.file("chromium"))",
                        "--virtual-time-budget=8000"] + arguments + [url],
            logDirectory: work.path, name: "chromium-\(UUID().uuidString.prefix(4))")
        let status = await browser.wait(timeout: .seconds(90))
        #expect(status == 0, "chromium: \(browser.stderr.suffix(800))")
        return browser.stdout
    }

    @Test func thePageShowsAPendingChangeAnInvalidFileWithItsReasonAndAConflict() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.chromium) else {
            Issue.record("no Chromium at \(Self.chromium): scripts/install-deps.sh installs Debian's chromium")
            return
        }
        let s = try await EndToEndTests.Setup.start()
        try git(["init", "-q", "-b", "main"], in: s.docs.path)
        let agent = try DocsyncProcess(
            ["watch", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile, "--metrics-addr", "127.0.0.1:0", "--git-branch", "pulled"],
            logDirectory: s.work.path, name: "watch")
        defer { Task { await agent.stop(); await s.finish() } }
        var page = ""
        #expect(await eventually {
            guard let start = agent.stderr.range(of: "status page at "), let end = agent.stderr[start.upperBound...].range(of: ",") else { return false }
            page = String(agent.stderr[start.upperBound..<end.lowerBound])
            return true
        })
        let api = APIClient(baseURL: page, token: "")
        func folder() async -> JSONObject? {
            let live = try? await api.request("GET", "status", token: .some(nil)).json?.object
            return live?["folders"]?.elements?.first?.object
        }
        // (the page walks the tree for conflict copies at most every 5 s: this one is there from the first look)
        try s.docs.write("notes/a.sync-conflict-20261124-120000.json", #"{"docType":"note","title":"theirs"}"#)
        try s.docs.write("schema/note.json", #"{"id":"note","properties":{"title":{"type":"string"}}}"#)
        #expect(await eventually { await folder()?["synced"] == 1 }, "the schema is a document too")
        try s.docs.write("notes/a.json", #"{"docType":"note","title":"a"}"#)
        try s.docs.write("notes/broken.json", "{\"docType\": \"note\", oops}")
        try s.docs.write("notes/untitled.json", #"{"docType":"note","title":5}"#)
        #expect(await eventually {
            let now = await folder()
            return now?["synced"] == 2 && now?["invalid"] == 2
        })
        // The server goes away: the next change waits.
        await s.server.stop()
        try s.docs.write("notes/late.json", #"{"docType":"note","title":"late"}"#)
        #expect(await eventually { await folder()?["pending"] == 1 })

        let dom = try await chromium(["--dump-dom"], url: page, work: s.work)
        #expect(dom.contains("needs attention"), "\(dom.prefix(1500))")
        #expect(dom.contains("<th>pending</th><td class=\"n\">1</td>"), "the pending change")
        #expect(dom.contains("notes/broken.json") && dom.contains("invalid: "), "the invalid file and its reason")
        #expect(dom.contains("notes/untitled.json") && dom.contains("/title: expected a string, got the number 5"), "a save its schema holds back, with the field")
        #expect(dom.contains("notes/a.sync-conflict-20261124-120000.json") && dom.contains("docsync resolve"), "the conflict and how to settle it")
        #expect(dom.contains("unreachable since"), "why the change waits")
        #expect(dom.contains("commits onto branch pulled: no commit yet"), "the git mode")

        let folder = ProcessInfo.processInfo.environment["DOCSYNC_ARTIFACTS"] ?? s.work.path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let shot = folder + "/status-page.png"
        _ = try await chromium(["--screenshot=\(shot)", "--window-size=1100,1100", "--hide-scrollbars"], url: page, work: s.work)
        let size = (try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
        #expect(size > 10_000, "a screenshot of the page at \(shot)")
    }
}
}
