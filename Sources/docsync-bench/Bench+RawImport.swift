import DocsyncTestSupport
import Foundation

/// The raw importer: what any importer of the folder must do, and no more. It reads the same
/// files the agent imports and posts them through the batch call in batches of 500, 4 in flight,
/// on an empty server of its own: no index, no merge base, no outbox, no acknowledgement kept.
extension Bench {
    struct RawImport {
        var docsPerSecond = Double.nan
        /// The importer's CPU (this process's, user + system), seconds.
        var cpu = Double.nan
    }

    func measureRawImport(docsDir: String, work: TempFolder, name: String) async throws -> RawImport {
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        let files = Self.jsonFiles(under: docsDir)
        let cpuBefore = Self.ownCPUSeconds()
        let start = now()
        let batches = stride(from: 0, to: files.count, by: 500).map { files[$0..<min($0 + 500, files.count)] }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func add() {
                let batch = batches[next]
                next += 1
                group.addTask {
                    var body = Data(#"{"echo":false,"documents":["#.utf8)
                    for (n, path) in batch.enumerated() {
                        if n > 0 { body.append(UInt8(ascii: ",")) }
                        body.append(try Data(contentsOf: URL(fileURLWithPath: path)))
                    }
                    body.append(contentsOf: "]}".utf8)
                    let reply = try await api.request("POST", "/api/sync", body: String(decoding: body, as: UTF8.self))
                    guard reply.status == 200 else { throw ProcessFailure("raw import refused: \(reply.status) \(reply.text.prefix(300))") }
                }
            }
            for _ in 0..<min(4, batches.count) { add() }
            while try await group.next() != nil {
                if next < batches.count { add() }
            }
        }
        return RawImport(docsPerSecond: Double(files.count) / seconds(since: start), cpu: Self.ownCPUSeconds() - cpuBefore)
    }

    /// The `.json` files under `root`, the agent's state folder left out, in a stable order.
    static func jsonFiles(under root: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var out: [String] = []
        while let relative = walker.nextObject() as? String {
            if relative.hasPrefix(".docsync") { walker.skipDescendants(); continue }
            if relative.hasSuffix(".json") { out.append(root + "/" + relative) }
        }
        return out.sorted()
    }

    /// This process's CPU so far (user + system), seconds; `withChildren`: with its children's that
    /// have ended and been waited for.
    static func ownCPUSeconds(withChildren: Bool = false) -> Double {
        let seconds = { (t: timeval) in Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        var total = 0.0
        for who in withChildren ? [RUSAGE_SELF, RUSAGE_CHILDREN] : [RUSAGE_SELF] {
            var usage = rusage()
            getrusage(who.rawValue, &usage)
            total += seconds(usage.ru_utime) + seconds(usage.ru_stime)
        }
        return total
    }
}
