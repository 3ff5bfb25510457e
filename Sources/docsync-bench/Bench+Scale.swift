import DocsyncTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `--scale 100000,1000000`: each step of a user's day at each size, side by side, so that what
/// grows with the tree shows as a ratio. Every step is a real process: `docsync sync` (import,
/// unchanged rescan, pull into an empty folder), `docsync watch` until it is watching, `docsync
/// status`, and `curl` listing the whole type from `docsync serve`.
extension Bench {
    struct ScaleStep {
        var name: String
        var seconds: Double
        var cpuSeconds: Double
        var peakRSSBytes: Int
        /// What the step wrote (`wchar`); -1 where it was not read.
        var writtenBytes = -1
    }

    struct ScaleRun {
        var docs: Int
        var steps: [ScaleStep] = []
        var serverPeakRSS = 0
        var indexBytes = 0
        var storeBytes = 0
    }

    func measureScale(sizes: [Int], work: TempFolder) async throws -> [ScaleRun] {
        // Each size's trees stay until every size has run. On an ext4 without a journal (this
        // VM's), files created within minutes of many being deleted take several times as long
        // (the inode allocator skips recently freed inodes, one look-up each; BENCHMARKS.md), so
        // deleting the 100k run's trees made the 1M pull measure that instead of docsync.
        // rm(1) unlinks a million files in seconds; FileManager takes minutes.
        defer { for n in sizes { _ = try? ChildRun.run("/bin/rm", ["-rf", work.file("scale-\(n)")], log: work.file("rm.log")) } }
        var runs: [ScaleRun] = []
        for n in sizes { runs.append(try await measureScale(docs: n, work: work)) }
        return runs
    }

    private func measureScale(docs n: Int, work: TempFolder) async throws -> ScaleRun {
        let base = work.file("scale-\(n)")
        let docsDir = base + "/docs", pulledDir = base + "/pulled"
        log("scale \(n): generating")
        try generate(n, into: docsDir)
        try FileManager.default.createDirectory(atPath: pulledDir, withIntermediateDirectories: true)
        sync()
        let (server, api) = try await freshServer(work: work, name: "scale-serve-\(n)")
        defer { stop(server, data: work.file("scale-serve-\(n)")) }
        let endpoint = ["--endpoint", api.baseURL, "--token-file", work.file("token")]
        var run = ScaleRun(docs: n)
        func step(_ name: String, _ arguments: [String], executable: String = DocsyncProcess.binary) throws {
            log("scale \(n): \(name)")
            let r = try ChildRun.run(executable, arguments, log: base + "/\(name).log")
            guard r.exitStatus == 0 else { throw ProcessFailure("\(name) exited \(r.exitStatus): \(r.output.suffix(2000))") }
            run.steps.append(ScaleStep(name: name, seconds: r.seconds, cpuSeconds: r.cpuSeconds, peakRSSBytes: r.peakRSSBytes, writtenBytes: r.writtenBytes))
        }
        try step("import", ["sync", docsDir] + endpoint)
        try step("rescan", ["sync", docsDir] + endpoint)
        run.steps.append(try await watchStart(docsDir, endpoint: endpoint, work: work))
        try step("status", ["status", docsDir])
        try step("pull", ["sync", pulledDir] + endpoint)
        try step("list (curl)", ["-sf", "-o", "/dev/null", "-H", "@" + work.file("curl-headers"), api.baseURL + "/api/document/type/bench"], executable: "/usr/bin/curl")
        run.serverPeakRSS = ProcessStats.read(pid: server.pid)?.peakRSSBytes ?? -1
        run.indexBytes = Self.bytes(under: docsDir + "/.docsync", matching: "index.sqlite")
        run.storeBytes = Self.bytes(under: work.file("scale-serve-\(n)"), matching: nil)
        return run
    }

    /// `docsync watch` from its start until it says it is watching (the rescan and the watches).
    private func watchStart(_ docsDir: String, endpoint: [String], work: TempFolder) async throws -> ScaleStep {
        let start = now()
        let agent = try DocsyncProcess(["watch", docsDir] + endpoint, logDirectory: work.path, name: "scale-watch")
        while !agent.stderr.contains("watching") {
            guard agent.isRunning else { throw ProcessFailure("agent exited: \(agent.stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(2))
        }
        let elapsed = seconds(since: start)
        let stats = ProcessStats.read(pid: agent.pid)
        await agent.stop()
        return ScaleStep(name: "watch start", seconds: elapsed, cpuSeconds: stats?.cpuSeconds ?? -1, peakRSSBytes: stats?.peakRSSBytes ?? -1)
    }

    /// `n` documents of about 1 KiB in folders of `--scale-per-folder`, written with plain syscalls (the
    /// generator should not be what a million-document run waits for).
    private func generate(_ n: Int, into dir: String) throws {
        for i in 0..<n {
            let folder = "\(dir)/import/g\(i / scalePerFolder)"
            if i % scalePerFolder == 0 { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
            let text = document(i, prefix: "d", type: "bench")
            let fd = open("\(folder)/d\(i).json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw ProcessFailure("cannot create \(folder)/d\(i).json: \(String(cString: strerror(errno)))") }
            let written = text.utf8.withContiguousStorageIfAvailable { Glibc.write(fd, $0.baseAddress, $0.count) } ?? -1
            close(fd)
            guard written == text.utf8.count else { throw ProcessFailure("short write in \(folder)") }
        }
    }

    /// Bytes of the files under `dir` (whose names start with `matching`, when given).
    static func bytes(under dir: String, matching prefix: String?) -> Int {
        guard let e = FileManager.default.enumerator(atPath: dir) else { return 0 }
        var total = 0
        while let path = e.nextObject() as? String {
            if let prefix, !(path.split(separator: "/").last ?? "").hasPrefix(prefix) { continue }
            total += (try? FileManager.default.attributesOfItem(atPath: dir + "/" + path)[.size] as? Int) ?? 0
        }
        return total
    }

    /// The runs side by side; the last column is the largest run against the smallest.
    static func scaleTable(_ runs: [ScaleRun]) -> String {
        guard let first = runs.first, let last = runs.last else { return "" }
        func mib(_ b: Int) -> String { fmt(Double(b) / 1_048_576, 0) }
        let head = runs.map { "\($0.docs) docs: s · CPU s · peak RSS MiB · written MiB" }.joined(separator: " | ")
        var lines = ["| step | \(head) | × time · × RSS |", "|---|" + String(repeating: "---|", count: runs.count + 1)]
        for (i, s) in first.steps.enumerated() {
            let cells = runs.map { r in
                let step = r.steps[i]
                let written = step.writtenBytes < 0 ? "–" : mib(step.writtenBytes)
                return "\(fmt(step.seconds, 2)) · \(fmt(step.cpuSeconds, 1)) · \(mib(step.peakRSSBytes)) · \(written)"
            }
            let l = last.steps[i]
            lines.append("| \(s.name) | \(cells.joined(separator: " | ")) | \(fmt(l.seconds / s.seconds, 1)) · \(fmt(Double(l.peakRSSBytes) / Double(s.peakRSSBytes), 2)) |")
        }
        lines.append("| server peak RSS (MiB) | " + runs.map { mib($0.serverPeakRSS) }.joined(separator: " | ")
            + " | \(fmt(Double(last.serverPeakRSS) / Double(first.serverPeakRSS), 2)) |")
        lines.append("| agent index on disk (MiB) | " + runs.map { mib($0.indexBytes) }.joined(separator: " | ") + " | |")
        lines.append("| server store on disk (MiB) | " + runs.map { mib($0.storeBytes) }.joined(separator: " | ") + " | |")
        return lines.joined(separator: "\n")
    }
}
