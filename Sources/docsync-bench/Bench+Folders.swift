import DocsyncTestSupport
import Foundation

/// One `watch` over many folders: how long until the server holds every document, and the
/// agent's memory, threads and CPU once it is idle.
struct FoldersRun {
    var folders = 0
    var perFolder = 0
    var convergedSeconds = Double.nan
    /// After convergence, until the agent's CPU over 5 s fell under 5 % (its acknowledgements,
    /// rescans and first releases done): the idle window begins there.
    var settledSeconds = Double.nan
    var peakRSS = 0
    /// Resident memory read every second of the idle window: its largest and its last reading.
    var idleMaxRSS = 0
    var idleLastRSS = 0
    var idleThreads = 0
    /// CPU over the second half of the idle window, in ms a minute.
    var idleCPUmsPerMinute = Double.nan
}

/// 11. Many folders (`--folders N`, separate): N folders of `--folder-docs` documents, each of its
/// own docType, in one `watch --config`; beside it, as the baseline, the same documents in one
/// folder and one `watch`. Each on a server of its own.
extension Bench {
    func measureFolders(count: Int, work: TempFolder) async throws -> String {
        let many = try await foldersRun(count: count, work: work)
        let one = try await foldersRun(count: 1, perFolder: count * folderDocs, work: work)
        return Self.foldersTable([many, one], idleSeconds: idleSeconds)
    }

    private func foldersRun(count: Int, perFolder: Int? = nil, work: TempFolder) async throws -> FoldersRun {
        let perFolder = perFolder ?? folderDocs
        log("folders: \(count) of \(perFolder) documents in one watch")
        let name = "serve-folders\(count)"
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        let root = work.file("folders\(count)")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try writeFolders(count, of: perFolder, under: root, url: api.baseURL, work: work, sharedType: nil)
        var run = FoldersRun(folders: count, perFolder: perFolder)
        let start = now()
        let agent = try DocsyncProcess(["watch", "--config", config], logDirectory: work.path, name: "watch-folders\(count)")
        defer { agent.signal(SIGKILL) }
        try await waitForDocuments(api, atLeast: count * perFolder, process: agent)
        run.convergedSeconds = seconds(since: start)
        try await settle(agent)
        run.settledSeconds = seconds(since: start) - run.convergedSeconds
        var half: ProcessStats?
        let (window, halfway) = (max(2, idleSeconds), max(2, idleSeconds) / 2)
        for second in 1...window {
            try await Task.sleep(for: .seconds(1))
            let rss = Self.residentBytes(pid: agent.pid)
            run.idleMaxRSS = max(run.idleMaxRSS, rss)
            run.idleLastRSS = rss
            if second == halfway { half = ProcessStats.read(pid: agent.pid) }
        }
        let end = ProcessStats.read(pid: agent.pid)
        run.peakRSS = end?.peakRSSBytes ?? -1
        run.idleThreads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(agent.pid)/task").count) ?? -1
        if let half, let end {
            run.idleCPUmsPerMinute = (end.cpuSeconds - half.cpuSeconds) * 1000 * 60 / Double(window - halfway)
        }
        log("folders: \(count) converged in \(fmt(run.convergedSeconds, 1)) s; idle RSS \(run.idleLastRSS >> 20) MiB")
        return run
    }

    /// `count` folders `f<n>` under `root`, each of `perFolder` documents (`m<n>-<i>`, in folders
    /// `g<k>/` of 100), and the config of one `watch` over them, flushed to disk; returns its
    /// path. Each folder holds a docType of its own (`t<n>`) and selects it alone (`types:`), or,
    /// with `sharedType`, all hold that one and each follows every other.
    func writeFolders(_ count: Int, of perFolder: Int, under root: String, url: String, work: TempFolder, sharedType: String?) throws -> String {
        var config = "log_level: warning\nfolders:\n"
        for f in 0..<count {
            let type = sharedType ?? "t\(f)"
            for i in 0..<perFolder { try write(document(i, prefix: "m\(f)-", type: type), to: "\(root)/f\(f)/g\(i / 100)/d\(i).json") }
            let types = sharedType == nil ? ", types: [\(type)]" : ""
            config += "  - {name: f\(f), path: \(root)/f\(f), endpoint: \"\(url)\", token_file: \(work.file("token"))\(types)}\n"
        }
        try write(config, to: "\(root)/docsync.yaml")
        sync()
        return "\(root)/docsync.yaml"
    }

    /// Returns once `agent` used under 5 % of a core over 5 s, or after 180 s.
    private func settle(_ agent: DocsyncProcess) async throws {
        let deadline = now() + 180_000_000_000
        var last = ProcessStats.read(pid: agent.pid)?.cpuSeconds ?? 0
        while now() < deadline {
            try await Task.sleep(for: .seconds(5))
            let cpu = ProcessStats.read(pid: agent.pid)?.cpuSeconds ?? 0
            if cpu - last < 0.25 { return }
            last = cpu
        }
    }

    /// `VmRSS` of `/proc/PID/status`, in bytes.
    static func residentBytes(pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        return (ProcessStats.kibibytes("VmRSS:", in: status) ?? -1) * 1024
    }

    static func foldersTable(_ runs: [FoldersRun], idleSeconds: Int) -> String {
        let mib = { (bytes: Int) in String(bytes >> 20) }
        let rows = runs.map { r in
            "| \(r.folders) × \(r.perFolder) | \(fmt(r.convergedSeconds, 1)) | \(fmt(r.settledSeconds, 0)) | \(mib(r.peakRSS)) | \(mib(r.idleMaxRSS)) | \(mib(r.idleLastRSS)) | \(r.idleThreads) | \(fmt(r.idleCPUmsPerMinute, 0)) |"
        }
        return """
            ### One watch over many folders (idle window of \(idleSeconds) s once the agent settled)

            | folders × documents | on the server after, s | settled after, s | peak RSS, MiB | idle RSS max, MiB | idle RSS last, MiB | threads idle | idle CPU, ms/min |
            |---|---:|---:|---:|---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))
            """
    }
}
