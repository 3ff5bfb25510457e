import DocsyncModel
import DocsyncTestSupport
import Foundation
import Testing

/// Long work says how far it has got; `status --watch` keeps the status in view.
extension HeavySuites {
@Suite(.serialized) struct ProgressTests {
    @Test func aLongSyncPrintsProgressLinesWithRates() async throws {
        let s = try await EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        for i in 0..<3000 { try s.docs.write("items/g\(i / 100)/i\(i).json", #"{"docType":"item","n":\#(i)}"#) }
        // Ticks of 20 ms instead of ten seconds (stderr is not a terminal), so a short sync shows them.
        let (code, _, err) = try await runDocsync(
            ["sync", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile], environment: ["DOCSYNC_PROGRESS_MS": "20"],
            logDirectory: s.work.path)
        #expect(code == 0, "\(err.suffix(500))")
        let lines = err.split(separator: "\n").filter { $0.hasPrefix("progress: ") }
        #expect(!lines.isEmpty, "\(err.suffix(800))")
        #expect(lines.contains { $0.contains("files in the index") && $0.contains("pending") }, "\(lines.prefix(5))")
        #expect(lines.contains { $0.contains("/s") }, "a rate: \(lines.prefix(5))")
        #expect(!err.contains("\u{1B}["), "no terminal control codes when stderr is not a terminal")
    }

    @Test func statusWatchRefreshesUntilInterrupted() async throws {
        let s = try await EndToEndTests.Setup.start()
        defer { Task { await s.finish() } }
        try s.docs.write("notes/a.json", #"{"docType":"note"}"#)
        let (synced, _, _) = try await runDocsync(["sync", s.docs.path, "--endpoint", s.url, "--token-file", s.tokenFile], logDirectory: s.work.path)
        #expect(synced == 0)
        let watcher = try DocsyncProcess(["status", s.docs.path, "--watch", "--json", "--interval", "0.05"], logDirectory: s.work.path, name: "status-watch")
        #expect(await eventually { watcher.stdout.split(separator: "\n").count >= 3 })
        watcher.signal(SIGINT)
        _ = await watcher.wait()
        let objects = watcher.stdout.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)).object }
        #expect(objects.count >= 3 && objects.allSatisfy { $0["synced"] == 1 }, "\(watcher.stdout.prefix(400))")
    }
}
}
