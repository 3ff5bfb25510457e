import DocsyncModel
import DocsyncTestSupport
import Foundation

/// The second leg of the attachment run: the file A attached travels on to a second folder. A
/// fresh `docsync watch` on an empty folder pulls the document and downloads the file (streamed,
/// hashed, flushed, cached, linked beside the document); the baseline is `curl -o` fetching the
/// same URL, then `sync FILE` flushing it.
extension Bench {
    func measureDownload(
        url: String, fileURL: String, sha: String, server: DocsyncProcess, work: TempFolder, results: inout Results
    ) async throws {
        let folder = try TempFolder("bench-att-b")
        defer { folder.remove() }
        // Each run starts with nothing left to write back: the upload before it leaves hundreds of
        // MiB dirty, which the flush of the first run to follow would otherwise wait behind.
        sync()
        let start = now()
        let agent = try DocsyncProcess(
            ["watch", folder.path, "--endpoint", url, "--token-file", work.file("token"), "--max-download-size", "64G"],
            logDirectory: work.path, name: "watch-att-b")
        let placed = folder.file("bench-att/att.file.bin")
        while true {
            // Placed whole (a copy renamed into place) and named by the document: done.
            let text = try? String(contentsOfFile: folder.file("bench-att/att.json"), encoding: .utf8)
            if text?.contains("\"$file\"") == true, FileManager.default.fileExists(atPath: placed) { break }
            guard agent.isRunning else { throw ProcessFailure("agent exited: \(agent.stderr)") }
            try await Task.sleep(for: .milliseconds(10))
        }
        results.downloadSeconds = seconds(since: start)
        results.downloadAgentRSS = ProcessStats.read(pid: agent.pid)?.peakRSSBytes ?? -1
        results.serverRSS = ProcessStats.read(pid: server.pid)?.peakRSSBytes ?? results.serverRSS
        await agent.stop()
        guard (try ContentHash.sha256Hex(fileAt: placed)).hash == sha else { throw ProcessFailure("the downloaded file differs") }
        sync()
        let curlStart = now()
        let curl = try DocsyncProcess(
            executable: "/usr/bin/curl", arguments: ["-s", "-o", work.file("curl-download.bin"), "-H", "@\(work.file("curl-headers"))", fileURL],
            logDirectory: work.path, name: "curl-download")
        _ = await curl.wait(timeout: .seconds(3600))
        results.curlDownloadOnlySeconds = seconds(since: curlStart)
        // The agent flushes what it downloaded before using it; the fair baseline does too.
        let flush = try DocsyncProcess(executable: "/usr/bin/sync", arguments: [work.file("curl-download.bin")], logDirectory: work.path, name: "sync")
        _ = await flush.wait(timeout: .seconds(3600))
        results.curlDownloadSeconds = seconds(since: curlStart)
        try? FileManager.default.removeItem(atPath: work.file("curl-download.bin"))
    }
}
