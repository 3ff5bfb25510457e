import DocsyncTestSupport
import Foundation

/// 12. Saves while many folders pull (issue 61, item 4): `--busy-folders` folders of
/// `--busy-docs` documents in one `watch --config`, no `types:`, so that each pulls every
/// other's documents. Saves in folders spread over the config, each once its folder has
/// started, and how long each took to reach the server; until all folders started, and until
/// the first, middle and last folder hold every document.
struct BusyRun {
    var folders = 0
    var perFolder = 0
    var startedSeconds = Double.nan
    var convergedSeconds = Double.nan
    var latencies: [Double] = []
    var whilePulling = 0
    var peakRSS = 0
    var agentCPU = Double.nan
}

extension Bench {
    func measureBusyFolders(work: TempFolder, results: inout Results) async throws {
        guard busyFolders > 0 else { return }
        let (count, perFolder, saves) = (busyFolders, busyDocs, 20)
        log("busy folders: \(count) of \(perFolder) documents, no types:, \(saves) saves")
        let (server, api) = try await freshServer(work: work, name: "serve-busy")
        defer { stop(server, data: work.file("serve-busy")) }
        let root = work.file("busy")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try writeFolders(count, of: perFolder, under: root, url: api.baseURL, work: work, sharedType: "busy")
        var run = BusyRun(folders: count, perFolder: perFolder)
        let start = now()
        let agent = try DocsyncProcess(["watch", "--config", config], logDirectory: work.path, name: "watch-busy")
        defer { agent.signal(SIGKILL) }
        for k in 0..<saves {
            let folder = (k * count / saves + 1) % count
            try await until(agent) { (try? await api.request("GET", "/api/document/m\(folder)-0").status) == 200 }
            let pulling = Self.pulledCount(root, folder: count - 1) < count * perFolder - perFolder
            let id = "busy-save-\(k)"
            let saved = now()
            try write(document(k, prefix: "busy-save-", type: "busy"), to: "\(root)/f\(folder)/mine/\(id).json")
            try await until(agent) { (try? await api.request("GET", "/api/document/\(id)").status) == 200 }
            run.latencies.append(seconds(since: saved))
            if pulling { run.whilePulling += 1 }
        }
        try await waitForDocuments(api, atLeast: count * perFolder + saves, process: agent)
        run.startedSeconds = seconds(since: start)
        let everyone = count * perFolder + saves
        try await until(agent) { [0, count / 2, count - 1].allSatisfy { Self.heldCount(root, folder: $0, own: perFolder) >= everyone } }
        run.convergedSeconds = seconds(since: start)
        let stats = ProcessStats.read(pid: agent.pid)
        (run.peakRSS, run.agentCPU) = (stats?.peakRSSBytes ?? -1, stats?.cpuSeconds ?? .nan)
        log("busy folders: slowest save \(fmt(run.latencies.max() ?? .nan, 2)) s, converged in \(fmt(run.convergedSeconds, 1)) s")
        results.busy = run
    }

    /// Polls `condition` every 25 ms while `agent` runs.
    private func until(_ agent: DocsyncProcess, _ condition: () async -> Bool) async throws {
        while await !condition() {
            guard agent.isRunning else { throw ProcessFailure("agent exited: \(agent.stderr.suffix(2_000))") }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    /// The documents folder `folder` pulled from the others (written under their docType's folder).
    static func pulledCount(_ root: String, folder: Int) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "\(root)/f\(folder)/busy").count) ?? 0
    }

    /// Every document folder `folder` holds: its `own` first documents, the saves made in it
    /// (under `mine/`) and the pulled.
    static func heldCount(_ root: String, folder: Int, own: Int) -> Int {
        own + pulledCount(root, folder: folder) + ((try? FileManager.default.contentsOfDirectory(atPath: "\(root)/f\(folder)/mine").count) ?? 0)
    }
}

extension Results {
    func busyTable() -> String {
        let r = busy
        guard r.folders > 0 else { return "" }
        let p = { (q: Double) in fmt(percentile(r.latencies, q), 2) }
        return """


            ### Saves while \(r.folders) folders of \(r.perFolder) documents pull each other's (one `watch`, no `types:`)

            | saves | made while folders still pulled | save → stored p50 / max, s | every folder's documents and the saves on the server, s | first, middle and last folder hold every document, s | agent CPU s / peak RSS |
            |---:|---:|---:|---:|---:|---:|
            | \(r.latencies.count) | \(r.whilePulling) | \(p(50)) / \(fmt(r.latencies.max() ?? .nan, 2)) | \(fmt(r.startedSeconds, 1)) | \(fmt(r.convergedSeconds, 1)) | \(fmt(r.agentCPU, 1)) / \(r.peakRSS >> 20) MiB |
            """
    }
}
