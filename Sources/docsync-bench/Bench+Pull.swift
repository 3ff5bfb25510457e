import DocsyncTestSupport
import Foundation

/// The pull alone against the raw pull (issue 61, item 2), without the rest of the main run: one
/// server holding the documents, then `--rounds` pairs in alternating order, each side into an
/// empty folder of its own: a fresh `docsync watch` until its index records every file, and the
/// raw pull (``Bench/pullAll(api:into:)``: the same pages written as files the agent's way, none
/// of its bookkeeping). Wall time and CPU of each side: on ext4 the file system's own work (system
/// time) is most of a pull, so where the folders are (`DOCSYNC_TEST_TMP`) is part of the figure.
struct PullRun {
    struct Pair {
        var agentSeconds = 0.0, agentCPU = 0.0, agentSystemCPU = 0.0
        var rawSeconds = 0.0, rawCPU = 0.0, rawSystemCPU = 0.0
    }

    var documents = 0
    var pairs: [Pair] = []

    var table: String {
        let rows = pairs.enumerated().map { i, p in
            "| \(i + 1) | \(fmt(p.agentSeconds, 2)) | \(fmt(p.agentCPU, 2)) (\(fmt(p.agentSystemCPU, 2))) | \(fmt(p.rawSeconds, 2)) | "
                + "\(fmt(p.rawCPU, 2)) (\(fmt(p.rawSystemCPU, 2))) | \(fmt(p.rawSeconds / p.agentSeconds, 2))× |"
        }
        let median = percentile(pairs.map { $0.rawSeconds / $0.agentSeconds }, 50)
        return """
            ## pull run: \(documents) documents into an empty folder, the agent beside the raw pull

            | pair | agent, s | agent CPU, s (system) | raw pull, s | raw CPU, s (system) | agent speed / raw |
            |---:|---:|---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))

            Median of the pairs: the pull at \(fmt(median, 2))× the raw pull.
            """
    }
}

extension Bench {
    func measurePullOnly(count: Int, work: TempFolder) async throws -> PullRun {
        var run = PullRun(documents: count)
        let (server, api) = try await freshServer(work: work, name: "serve-pull")
        defer { stop(server, data: work.file("serve-pull")) }
        log("pull run: \(count) documents onto the server")
        try await syncAll(api: api, count: count, batch: 500, inFlight: 4)
        for round in 0..<rounds {
            var pair = PullRun.Pair()
            for agentFirst in round % 2 == 0 ? [true, false] : [false, true] {
                if agentFirst {
                    (pair.agentSeconds, pair.agentCPU, pair.agentSystemCPU) = try await agentPull(api: api, count: count, work: work, round: round)
                } else {
                    (pair.rawSeconds, pair.rawCPU, pair.rawSystemCPU) = try await timedRawPull(api: api, count: count, into: work.file("raw-\(round)"))
                }
            }
            log("pull run, pair \(round + 1): agent \(fmt(pair.agentSeconds, 2)) s, raw \(fmt(pair.rawSeconds, 2)) s")
            run.pairs.append(pair)
            try? FileManager.default.removeItem(atPath: work.file("pulled-\(round)"))
            try? FileManager.default.removeItem(atPath: work.file("raw-\(round)"))
        }
        return run
    }

    /// A fresh agent into an empty folder until its index records every document: wall time,
    /// CPU and the system part of it.
    private func agentPull(api: APIClient, count: Int, work: TempFolder, round: Int) async throws -> (Double, Double, Double) {
        let folder = work.file("pulled-\(round)")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let start = now()
        let agent = try DocsyncProcess(
            ["watch", folder, "--endpoint", api.baseURL, "--token-file", work.file("token"), "--log-level", "warning"],
            logDirectory: work.path, name: "watch-pull-only-\(round)")
        try await waitForRecordedFiles(in: folder, atLeast: count, process: agent)
        let elapsed = seconds(since: start)
        let stats = ProcessStats.read(pid: agent.pid)!
        await agent.stop()
        return (elapsed, stats.cpuSeconds, stats.systemSeconds)
    }

    /// The raw pull in this process: wall time, and this process's CPU meanwhile.
    private func timedRawPull(api: APIClient, count: Int, into folder: String) async throws -> (Double, Double, Double) {
        let before = ProcessStats.read(pid: getpid())!
        let start = now()
        let written = try await pullAll(api: api, into: folder)
        let elapsed = seconds(since: start)
        let after = ProcessStats.read(pid: getpid())!
        guard written == count else { throw ProcessFailure("the raw pull wrote \(written) of \(count)") }
        return (elapsed, after.cpuSeconds - before.cpuSeconds, after.systemSeconds - before.systemSeconds)
    }
}
