import DocsyncTestSupport
import Foundation

/// The benchmark's steps after the import, each measured into `results`.
extension Bench {
    /// 3, 4. A restart's rescan of the unchanged tree (until "watching"), then the agent left idle.
    func measureRescanAndIdle(docsDir: String, url: String, work: TempFolder, results: inout Results) async throws {
        let restart = now()
        let agent = try DocsyncProcess(["watch", docsDir, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch2")
        while !agent.stderr.contains("watching") {
            guard agent.isRunning else { throw ProcessFailure("agent exited: \(agent.stderr)") }
            try await Task.sleep(for: .milliseconds(2))
        }
        results.rescanSeconds = seconds(since: restart)
        results.rescanContentBytes = Int(agent.stderr.split(separator: " ").first { $0.hasPrefix("scan.bytes_read=") }?.split(separator: "=").last ?? "") ?? -1
        results.rescanReadBytes = ProcessStats.read(pid: agent.pid)?.readBytes ?? -1
        log("rescan: \(fmt(results.rescanSeconds)) s")
        try await Task.sleep(for: .seconds(2))  // let the restart's own work finish
        (results.idleCPUmsPerMinute, results.idleWakeupsPerMinute) = try await idleCost(agent, scraping: nil)
        await agent.stop()
        // The same agent with its metrics and status listener on, scraped as Prometheus would.
        let listening = try DocsyncProcess(
            ["watch", docsDir, "--endpoint", url, "--token-file", work.file("token"), "--metrics-addr", "127.0.0.1:0"],
            logDirectory: work.path, name: "watch-metrics")
        while !listening.stderr.contains("watching") || !listening.stderr.contains("/metrics") {
            guard listening.isRunning else { throw ProcessFailure("agent exited: \(listening.stderr)") }
            try await Task.sleep(for: .milliseconds(2))
        }
        let line = listening.stderr.split(separator: "\n").first { $0.contains("status page at http://") } ?? ""
        let page = line.split(separator: " ").first { $0.hasPrefix("http://") }.map { String($0.dropLast()) } ?? ""  // "http://H:P/,"
        let address = page + "metrics"
        try await Task.sleep(for: .seconds(2))
        (results.idleListeningCPUmsPerMinute, _) = try await idleCost(listening, scraping: nil)
        (results.idleMetricsCPUmsPerMinute, _) = try await idleCost(listening, scraping: address)
        await listening.stop()
    }

    /// CPU (ms) and wakeups per minute of an idle agent over `--idle-seconds`; with `scraping`, its
    /// metrics are fetched every 15 s meanwhile (Prometheus's default interval).
    func idleCost(_ agent: DocsyncProcess, scraping metrics: String?) async throws -> (Double, Double) {
        let before = ProcessStats.read(pid: agent.pid)!
        let end = ContinuousClock.now + .seconds(idleSeconds)
        while ContinuousClock.now < end {
            if let metrics { _ = try? await APIClient(baseURL: metrics, token: "").request("GET", "", token: .some(nil)) }
            try await Task.sleep(until: min(end, ContinuousClock.now + .seconds(15)), clock: .continuous)
        }
        let after = ProcessStats.read(pid: agent.pid)!
        return (Double(after.cpuNanoseconds(since: before)) / 1e6 * 60 / Double(idleSeconds), Double(after.wakeups(since: before)) * 60 / Double(idleSeconds))
    }

    /// 4b. A fresh agent on an empty folder, until its index records a file for every document
    /// on the server; then the same pages fetched by an in-process client and written as files
    /// the way the agent writes them, without its bookkeeping (index, reading back, hashing).
    /// `--rounds` times, each into folders of its own, the two in alternating order: a file
    /// system that slows after many removals (ext4 skips recently freed inodes for minutes) then
    /// weighs on both sides alike.
    func measurePull(url: String, api: APIClient, work: TempFolder, results: inout Results) async throws {
        for round in 0..<rounds {
            log("pull into an empty folder (round \(round + 1))")
            var result = PullRound()
            if round % 2 == 1 { result.rawDocsPerSecond = try await rawPull(api: api, into: work.file("raw-pulled-\(round)")) }
            let pullDir = work.file("pulled-\(round)")
            try FileManager.default.createDirectory(atPath: pullDir, withIntermediateDirectories: true)
            let pullStart = now()
            let puller = try DocsyncProcess(
                ["watch", pullDir, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch-pull-\(round)")
            try await waitForRecordedFiles(in: pullDir, atLeast: docs, process: puller)
            result.agentSeconds = seconds(since: pullStart)
            let pullStats = ProcessStats.read(pid: puller.pid)!
            (result.agentCPU, result.agentRSS) = (pullStats.cpuSeconds, pullStats.peakRSSBytes)
            if round == rounds - 1 { results.plainTrickleCPUms = try await measurePlainTrickle(url: url, folder: pullDir, agent: puller, work: work) }
            await puller.stop()
            if round % 2 == 0 { result.rawDocsPerSecond = try await rawPull(api: api, into: work.file("raw-pulled-\(round)")) }
            log("pull: \(docs) in \(fmt(result.agentSeconds)) s; raw \(fmt(result.rawDocsPerSecond, 0))/s")
            results.pullRounds.append(result)
        }
    }

    private func rawPull(api: APIClient, into folder: String) async throws -> Double {
        let start = now()
        return Double(try await pullAll(api: api, into: folder)) / seconds(since: start)
    }

    /// 5a. The server's raw ingest limit from an in-process client (single PUTs); 5b. the
    /// inotifywait + curl loop: its import rate and its latency.
    func measureBaselines(url: String, api: APIClient, work: TempFolder, results: inout Results) async throws {
        log("raw ingest, single PUTs")
        do {
            let (rawServer, rawAPI) = try await freshServer(work: work, name: "serve-raw-put")
            defer { stop(rawServer, data: work.file("serve-raw-put")) }
            let rawStart = now()
            try await putAll(api: rawAPI, count: docs, concurrency: 16)
            results.rawDocsPerSecond = Double(docs) / seconds(since: rawStart)
        }
        log("inotifywait + curl baseline")
        let baseDir = work.file("baseline")
        for i in 0..<baselineDocs { try write(document(i, prefix: "b", type: "bench-base"), to: "\(baseDir)/import/g\(i / 100)/b\(i).json") }
        sync()
        let curl = "curl -s -o /dev/null -X PUT -H @\(work.file("curl-headers")) -H 'Content-Type: application/json' --data-binary @\"$f\" \(url)/api/document"
        let loopStart = now()
        let importLoop = try DocsyncProcess(
            executable: "/bin/bash", arguments: ["-c", "find \(baseDir) -name '*.json' | while read -r f; do \(curl); done"],
            logDirectory: work.path, name: "curl-import")
        _ = await importLoop.wait(timeout: .seconds(3600))
        results.baselineImportDocsPerSecond = Double(baselineDocs) / seconds(since: loopStart)
        let watchLoop = try await startCurlWatchLoop(baseDir: baseDir, curl: curl, work: work)
        results.baselineLatency = try await measureLatency(
            prefix: "b", dir: "\(baseDir)/import", api: api, server: work.file("server"), count: min(saves, baselineDocs))
        kill(-watchLoop.pid, SIGKILL)  // SIGTERM is blocked in children (they inherit our mask)
    }

    /// `inotifywait -m -r` piped into curl, once its watches are established. The shell leads a
    /// process group of its own (as every child of ours), which holds the pipeline: it is ended
    /// as one, by SIGKILL, since the signal mask we hand down blocks SIGTERM.
    private func startCurlWatchLoop(baseDir: String, curl: String, work: TempFolder) async throws -> DocsyncProcess {
        let watchLoop = try DocsyncProcess(
            executable: "/bin/bash",
            arguments: ["-c", "inotifywait -m -r -e close_write,moved_to --format '%w%f' \(baseDir) | while read -r f; do case \"$f\" in *.json) \(curl);; esac; done"],
            logDirectory: work.path, name: "curl-watch")
        let watchesDeadline = ContinuousClock.now + .seconds(60)
        while !watchLoop.stderr.contains("Watches established") {
            // The shell runs only as long as the pipeline; a missing inotifywait ends it at once.
            guard watchLoop.isRunning, ContinuousClock.now < watchesDeadline else {
                kill(-watchLoop.pid, SIGKILL)
                throw ProcessFailure("inotifywait did not start (is inotify-tools installed? scripts/install-deps.sh): \(watchLoop.stderr)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return watchLoop
    }

    /// 7. The import and the raw batched ingest again, each round on servers of their own (and
    /// the agent's index removed): one run's figures move with the host.
    func measureMoreRounds(docsDir: String, work: TempFolder, results: inout Results) async throws {
        guard rounds > 1 else { return }
        for n in 2...rounds {
            try FileManager.default.removeItem(atPath: docsDir + "/.docsync")
            let (importServer, importAPI) = try await freshServer(work: work, name: "serve-import\(n)")
            let (measured, roundAgent) = try await measureImport(docsDir: docsDir, server: importServer, api: importAPI, work: work, name: "watch-import\(n)")
            await roundAgent.stop()
            stop(importServer, data: work.file("serve-import\(n)"))
            let round = try await withBaselines(measured, docsDir: docsDir, work: work, n: n)
            results.rounds.append(round)
            log("round \(n): import \(fmt(round.importSeconds)) s; raw batched ingest \(fmt(round.rawBatchDocsPerSecond, 0))/s")
        }
    }

    /// An import round with its two baselines, each on an empty server of its own: the raw
    /// batched ingest (documents made in-process) and the raw importer (the same files read).
    func withBaselines(_ measured: ImportRound, docsDir: String, work: TempFolder, n: Int) async throws -> ImportRound {
        var round = measured
        round.rawBatchDocsPerSecond = try await measureRawBatch(work: work, name: "serve-raw\(n)")
        let raw = try await measureRawImport(docsDir: docsDir + "/import", work: work, name: "serve-rawimport\(n)")
        (round.rawImportDocsPerSecond, round.rawImportCPU) = (raw.docsPerSecond, raw.cpu)
        log("round \(n): raw importer \(fmt(raw.docsPerSecond, 0))/s, \(fmt(raw.cpu, 2)) s CPU")
        return round
    }
}

/// The servers each run starts for itself.
extension Bench {
    /// Ends a server started by `freshServer` and removes its data.
    func stop(_ server: DocsyncProcess, data: String) {
        server.signal(SIGKILL)
        try? FileManager.default.removeItem(atPath: data)
    }

    /// The token every server of the run accepts (`work/token`).
    func token(work: TempFolder) throws -> String {
        try String(contentsOfFile: work.file("token"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A `docsync serve` on an empty data folder of its own, `work/<name>`.
    func freshServer(work: TempFolder, name: String) async throws -> (DocsyncProcess, APIClient) {
        let token = try token(work: work)
        let data = work.file(name)
        try? FileManager.default.removeItem(atPath: data)
        let server = try DocsyncProcess(
            ["serve", "--data", data, "--port", "0", "--token-file", work.file("token"), "--log-level", "warning"],
            logDirectory: work.path, name: name)
        let url = try await server.firstLine()
        return (server, APIClient(baseURL: url, token: token))
    }
}
