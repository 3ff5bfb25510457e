import ArgumentParser
import AsyncHTTPClient
import DocsyncClock
import DocsyncModel
import DocsyncTestSupport
import DocsyncFiles
import Foundation
import GRDB
import NIOCore

/// Measures docsync against what a user would write instead, in one run on loopback: the real
/// `docsync serve` and `docsync watch` as processes, the `inotifywait` + `curl` loop, and the
/// server's own ingest limit (the same documents PUT straight from an in-process HTTP client).
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docsync-bench",
        abstract: "Benchmark docsync (release build) against an inotifywait+curl loop and the server's raw ingest limit.")

    @Option(help: "Documents in the initial import (about 1 KiB each).")
    var docs = 10_000

    @Option(help: "Single-document saves in the latency run.")
    var saves = 1_000

    @Option(help: "Saves per second in the latency run.")
    var rate = 20

    @Option(help: "Seconds the idle agent is observed.")
    var idleSeconds = 60

    @Option(help: "Documents the inotifywait+curl loop imports (it is slow; its rate is what is compared).")
    var baselineDocs = 2_000

    @Option(name: .customLong("attachment-mib"), help: "MiB of the attachment moved in the upload run (default 1024; 32 with --quick).")
    var attachmentMiB: Int?

    @Option(help: "Rounds of the initial import and the raw batched ingest, alternating, each on a server of its own (the table shows the median; each round is listed).")
    var rounds = 1

    @Option(help: "Documents imported into a real Kinto (from scripts/install-deps.sh) beside Kinto's raw batch rate; 0 skips.")
    var kintoDocs = 2_000

    @Option(help: "Writes of the load run: 2 servers on one PostgreSQL database (a throw-away cluster), then 1 on SQLite; 0 skips.")
    var nodeWrites = 20_000

    @Option(help: "Agents of the agents run (one folder each, 20 documents each, every folder following all): 2 servers on PostgreSQL, then 1 on SQLite; 0 skips.")
    var agents = 60

    @Option(help: "Documents of ten docTypes on a server of its own, pulled whole and then one type alone; 0 skips.")
    var selectiveDocs = 100_000

    @Option(help: "Folders of the busy run (one `watch`, no `types:`, every folder pulling every other's documents) and saves made meanwhile; 0 skips.")
    var busyFolders = 300

    @Option(help: "Documents per folder in the busy run.")
    var busyDocs = 5

    @Option(help: "Only the scale run: each size's import, rescan, watch start, status, pull and type listing side by side (e.g. 100000,1000000).")
    var scale: String?

    @Option(help: "Documents per folder in the scale run (100: a million in 10,000 folders; 10: in 100,000).")
    var scalePerFolder = 100

    @Option(help: "Only the schema run: this many invoices imported with and without their docType's schema, --rounds times, alternating; and validations per second on one core.")
    var schemaImport: Int?

    @Option(help: "Only the many-folders run: this many folders of --folder-docs documents in one `watch --config`, beside the same documents in one folder (memory and CPU over --idle-seconds).")
    var folders: Int?

    @Option(help: "Documents per folder in the many-folders run.")
    var folderDocs = 200

    @Option(help: "Only the rights run: this many documents written and pulled on a server with one token, and on one with 100 tokens with rights, --rounds times, alternating.")
    var rights: Int?

    @Option(help: "Only the encrypted run: this many documents imported and pulled, and one --attachment-mib file (default 256) up and down, in clear and sealed, --rounds times, alternating.")
    var encrypted: Int?

    @Option(help: "Only the pull run: this many documents on a server, pulled by a fresh agent and by the raw pull, --rounds pairs alternating.")
    var pullOnly: Int?

    @Option(help: "Only the index floor: this many documents recorded as the agent's index records an import, in one row each, and parsed and hashed, --rounds times (CPU a document).")
    var indexFloor: Int?

    @Option(help: "Only the git tree run: ten commits of one change each into one folder of each of these sizes (e.g. 10000,100000,1000000), made by the agent's commit code in this process: the memory they add at their peak, their CPU beside git's floor.")
    var gitTree: String?

    @Flag(help: "Small sizes that finish in under a minute (CI runs this so the benchmark cannot rot).")
    var quick = false

    @Option(help: "Also write the results as JSON to this file.")
    var json: String?

    mutating func validate() throws {
        if quick {
            docs = 1_000
            saves = 100
            idleSeconds = 5
            baselineDocs = 200
            kintoDocs = min(kintoDocs, 200)
            nodeWrites = min(nodeWrites, 800)
            agents = min(agents, 10)
            selectiveDocs = min(selectiveDocs, 5_000)
            (busyFolders, busyDocs) = (min(busyFolders, 20), min(busyDocs, 2))
            attachmentMiB = attachmentMiB ?? 32
        }
        guard rounds >= 1 else { throw ValidationError("--rounds must be at least 1") }
        guard docs > saves else { throw ValidationError("--docs must exceed --saves (saves edit imported documents)") }
        guard FileManager.default.isExecutableFile(atPath: DocsyncProcess.binary) else {
            throw ValidationError("no docsync binary next to the benchmark (\(DocsyncProcess.binary)); build with `swift build -c release`")
        }
    }

    func run() async throws {
        let work = try TempFolder("bench")
        defer { work.remove() }
        var results = Results()
        results.machine = Results.describeMachine()
        let token = UUID().uuidString
        try work.write("token", token + "\n")
        try work.write("curl-headers", "Authorization: Token token=\(token)\n")
        if let only = try await separateRun(work: work) {
            print(only)
            return
        }
        let (server, api) = try await freshServer(work: work, name: "server")
        defer { server.signal(SIGKILL) }
        let url = api.baseURL

        // 1. Initial import.
        log("generating \(docs) documents")
        let docsDir = work.file("docs")
        for i in 0..<docs { try write(document(i, prefix: "d", type: "bench"), to: "\(docsDir)/import/g\(i / 100)/d\(i).json") }
        // A user's folder is on disk before the agent starts: the kernel writing back the files
        // just generated would otherwise compete with the import it is measured by.
        sync()
        // Round 1's agent and server go on to the steps after it; the raw ingest it is compared
        // with runs next, on a server of its own (as empty as the import's was).
        let (measured, agent) = try await measureImport(docsDir: docsDir, server: server, api: api, work: work, name: "watch")
        let round = try await withBaselines(measured, docsDir: docsDir, work: work, n: 1)
        results.rounds.append(round)
        log("import: \(docs) in \(fmt(round.importSeconds)) s; raw batched ingest \(fmt(round.rawBatchDocsPerSecond, 0))/s")

        // 2. Steady-state latency.
        results.latency = try await measureLatency(prefix: "d", dir: "\(docsDir)/import", api: api, server: work.file("server"))
        log("latency p50 \(fmt(percentile(results.latency, 50))) ms")
        await agent.stop()
        // 3, 4. Restart rescan of the unchanged tree, then the idle cost.
        try await measureRescanAndIdle(docsDir: docsDir, url: url, work: work, results: &results)
        // 4b. Pull into an empty folder; 4c. the same into a git work tree, every change committed.
        try await measurePull(url: url, api: api, work: work, results: &results)
        try await measureGitPull(url: url, work: work, results: &results)
        // 5. Baselines: the server's raw ingest limit, the inotifywait + curl loop.
        try await measureBaselines(url: url, api: api, work: work, results: &results)
        // 6. One large attachment: the agent's FileUpload against `curl -F` posting the same file.
        try await measureAttachment(work: work, results: &results)
        // 7. More rounds of the import and the raw batched ingest.
        try await measureMoreRounds(docsDir: docsDir, work: work, results: &results)
        try await measureOthers(work: work, results: &results)
        // Clock estimators on the same jittered samples.
        results.clock = ClockComparison.run(trials: quick ? 500 : 5_000)

        let report = results.markdown(docs: docs, saves: saves, rate: rate, idleSeconds: idleSeconds, baselineDocs: baselineDocs)
        print(report)
        if let json { try Data(results.json(docs: docs).utf8).write(to: URL(fileURLWithPath: json)) }
    }

    // MARK: - Pieces

    /// The steps on servers of their own: another endpoint, other stores, many agents and folders.
    func measureOthers(work: TempFolder, results: inout Results) async throws {
        // 8. Kinto: the agent's import beside Kinto's raw batch rate.
        try await measureKinto(work: work, results: &results)
        // 9. Several servers on PostgreSQL under load, beside one on SQLite.
        try await measureNodes(work: work, results: &results)
        try await measureAgents(work: work, results: &results)
        // 10. A pull of one docType of ten beside a pull of all.
        try await measureSelective(work: work, results: &results)
        // 12. Saves in folders while hundreds of folders pull each other's documents.
        try await measureBusyFolders(work: work, results: &results)
    }

    /// The runs made alone (`--scale`, `--schema-import`): their table, or nil for the full benchmark.
    func separateRun(work: TempFolder) async throws -> String? {
        if let scale {
            let sizes = scale.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return Self.scaleTable(try await measureScale(sizes: sizes, work: work))
        }
        if let schemaImport { return try await measureSchemaImport(count: schemaImport, work: work).table }
        if let folders { return try await measureFolders(count: folders, work: work) }
        if let rights { return try await measureRights(count: rights, work: work).table }
        if let encrypted { return try await measureEncrypted(count: encrypted, work: work).table }
        if let pullOnly { return try await measurePullOnly(count: pullOnly, work: work).table }
        if let indexFloor { return try await measureIndexFloor(count: indexFloor, work: work).table }
        if let gitTree {
            let sizes = gitTree.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return GitTreeRun.table(try await measureGitTree(sizes: sizes, work: work))
        }
        return nil
    }

    /// An agent started on `docsDir` (already on disk) until `server` holds every document: the
    /// round's figures, and the agent, still running.
    func measureImport(docsDir: String, server: DocsyncProcess, api: APIClient, work: TempFolder, name: String) async throws -> (ImportRound, DocsyncProcess) {
        let serverBefore = ProcessStats.read(pid: server.pid)!
        let start = now()
        let agent = try DocsyncProcess(["watch", docsDir, "--endpoint", api.baseURL, "--token-file", work.file("token")], logDirectory: work.path, name: name)
        try await waitForDocuments(api, atLeast: docs, process: agent)
        var round = ImportRound()
        round.importSeconds = seconds(since: start)
        let agentStats = ProcessStats.read(pid: agent.pid)!
        round.agentCPU = agentStats.cpuSeconds
        round.serverCPU = ProcessStats.read(pid: server.pid)!.cpuSeconds - serverBefore.cpuSeconds
        round.agentRSS = agentStats.peakRSSBytes
        round.importDocsPerSecond = Double(docs) / round.importSeconds
        return (round, agent)
    }

    /// The server's raw ingest limit: the same documents in the batch call docsync uses, from an
    /// in-process client, on an empty server of its own.
    func measureRawBatch(work: TempFolder, name: String) async throws -> Double {
        let (server, api) = try await freshServer(work: work, name: name)
        defer { stop(server, data: work.file(name)) }
        let start = now()
        try await syncAll(api: api, count: docs, batch: 500, inFlight: 4)
        return Double(docs) / seconds(since: start)
    }

    /// On a server of its own: a fresh agent on the server used so far would first pull every
    /// document of the runs before, and the figure would measure that too.
    func measureAttachment(work: TempFolder, results: inout Results) async throws {
        let mib = attachmentMiB ?? 1024
        log("attachment of \(mib) MiB")
        let (server, api) = try await freshServer(work: work, name: "serve-att")
        defer { stop(server, data: work.file("serve-att")) }
        let url = api.baseURL
        let size = mib << 20
        let folder = try TempFolder("bench-att")
        defer { folder.remove() }
        let sha = try folder.writeRandom("files/big.bin", size: size, seed: 7)
        try folder.write("notes/att.json", #"{"id":"att","docType":"bench-att","file":{"$file":"../files/big.bin"}}"#)
        sync()  // the file just written is on disk before either upload reads it (see measureDownload)
        let start = now()
        let agent = try DocsyncProcess(["watch", folder.path, "--endpoint", url, "--token-file", work.file("token")], logDirectory: work.path, name: "watch-att")
        while true {
            if let doc = try await api.documents(type: "bench-att")["att"], doc["file"]?.string?.contains(sha) == true { break }
            guard agent.isRunning else { throw ProcessFailure("agent exited: \(agent.stderr)") }
            try await Task.sleep(for: .milliseconds(10))
        }
        results.attachmentSeconds = seconds(since: start)
        results.attachmentBytes = size
        results.attachmentAgentRSS = ProcessStats.read(pid: agent.pid)?.peakRSSBytes ?? -1
        results.serverRSS = ProcessStats.read(pid: server.pid)?.peakRSSBytes ?? -1
        await agent.stop()
        let fileURL = try await api.documents(type: "bench-att")["att"]?["file"]?.string ?? ""
        try await measureDownload(url: url, fileURL: fileURL, sha: sha, server: server, work: work, results: &results)
        // The baseline: curl posting the same multipart FileUpload.
        try work.write("target.json", #"{"targetId":"att","targetDocType":"bench-att","targetProperty":"curl"}"#)
        sync()
        let curlStart = now()
        let curl = try DocsyncProcess(
            executable: "/usr/bin/curl",
            arguments: ["-s", "-o", "/dev/null", "-H", "@\(work.file("curl-headers"))", "-F", "file=@\(folder.file("files/big.bin"))",
                        "-F", "targetDocument=<\(work.file("target.json"))", "\(url)/api/app/upload"],
            logDirectory: work.path, name: "curl-upload")
        _ = await curl.wait(timeout: .seconds(3600))
        results.curlAttachmentSeconds = seconds(since: curlStart)
        results.serverRSS = ProcessStats.read(pid: server.pid)?.peakRSSBytes ?? results.serverRSS
    }

    func log(_ s: String) { FileHandle.standardError.write(Data("docsync-bench: \(s)\n".utf8)) }

    /// About 1 KiB of JSON with the shapes real records have.
    func document(_ i: Int, prefix: String, type: String, edit: Int = 0) -> String {
        let body = String(repeating: "lorem ipsum dolor sit amet ", count: 30)
        return #"{"id":"\#(prefix)\#(i)","docType":"\#(type)","title":"Document \#(i)","n":\#(i),"edit":\#(edit),"price":\#(i).25,"tags":["a","b","c"],"body":"\#(body)"}"#
    }

    func write(_ text: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// Waits until the agent's index records `count` files in `folder` (read-only, beside the agent).
    func waitForRecordedFiles(in folder: String, atLeast count: Int, process: DocsyncProcess) async throws {
        let path = folder + "/.docsync/index.sqlite"
        var db: DatabaseQueue?
        while true {
            if db == nil, FileManager.default.fileExists(atPath: path) {
                db = try? readOnly(path)
            }
            if let db, let n = try? await db.read({ try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM file WHERE state = 'ok'") ?? 0 }), n >= count { return }
            guard process.isRunning else { throw ProcessFailure("agent exited: \(process.stderr)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Every document on the server, page by page through `/api/sync`, written to
    /// `<folder>/<docType>/<id>.json` as the agent writes new files (a page's temporaries written
    /// by two threads into two staging folders, made durable together, then renamed into place);
    /// returns how many.
    func pullAll(api: APIClient, into folder: String) async throws -> Int {
        var cursor: Int64 = 0
        var written = 0
        var folders: [String: GatedFolder] = [:]
        try FileSystem.makeDirectories(folder)
        let gate = try PathGate(root: folder)
        let staging = [try gate.folder(".staging", create: true), try gate.folder(".staging-2", create: true)]
        while true {
            let reply = try await api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[]}"#)
            guard reply.status == 200, let object = reply.json?.object, case .number(let c)? = object["cursor"], let next = Int64(c),
                  case .array(let documents)? = object["documents"]?.object?["success"]
            else { throw ProcessFailure("sync refused: \(reply.status) \(reply.text)") }
            var files: [(file: GatedFile, bytes: [UInt8])] = []
            for case .object(var doc) in documents {
                guard let id = doc["id"]?.string, let docType = doc["docType"]?.string else { continue }
                for key in DocumentRules.reservedKeys { doc[key] = nil }
                let dir = try folders[docType] ?? gate.folder(docType, create: true)
                folders[docType] = dir
                files.append((try GatedFile(dir, "\(id).json"), JSONWriter.fileBytes(.object(doc))))
            }
            for result in FileSystem.createAll(files.map { ($0.file, $0.bytes, nil) }, staging: staging) where try result.get().created { written += 1 }
            cursor = next
            if object["more"] != .bool(true) { return written }
        }
    }

    func waitForDocuments(_ api: APIClient, atLeast count: Int, process: DocsyncProcess) async throws {
        while true {
            let stats = try await api.request("GET", "/api/stats")
            if case .number(let n)? = stats.json?.object?["data"]?.object?["documents"], Int(n) ?? 0 >= count { return }
            guard process.isRunning else { throw ProcessFailure("agent exited: \(process.stderr)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Saves `count` documents once each at `rate` per second; returns close-to-stored latencies (ms),
    /// read from the server's own record of when each write was stored.
    func measureLatency(prefix: String, dir: String, api: APIClient, server: String, count: Int? = nil) async throws -> [Double] {
        let count = count ?? saves
        var closedAt: [String: Int64] = [:]
        let interval = 1.0 / Double(rate)
        let start = now()
        for i in 0..<count {
            let due = start + UInt64(Double(i) * interval * 1e9)
            if now() < due { try await Task.sleep(for: .nanoseconds(Int64(due - now()))) }
            try write(document(i, prefix: prefix, type: prefix == "d" ? "bench" : "bench-base", edit: 1), to: "\(dir)/g\(i / 100)/\(prefix)\(i).json")
            closedAt["\(prefix)\(i)"] = SystemClockSeam().wallNanoseconds()
        }
        let db = try readOnly(server + "/documents.sqlite")
        let deadline = now() + 60_000_000_000
        var stored: [String: Int64] = [:]
        while now() < deadline {
            stored = try await db.read { db in
                var out: [String: Int64] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT id, stored_at FROM document WHERE body LIKE '%\"edit\":1%' AND id LIKE ?", arguments: ["\(prefix)%"]) {
                    out[row["id"]] = row["stored_at"]
                }
                return out
            }
            if stored.count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return closedAt.compactMap { id, closed in stored[id].map { Double($0 - closed) / 1e6 } }
    }
}

/// A database the agent or the server writes, opened to read it only.
func readOnly(_ path: String) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.readonly = true
    return try DatabaseQueue(path: path, configuration: configuration)
}

func fmt(_ v: Double, _ digits: Int = 1) -> String {
    guard v.isFinite else { return "n/a" }
    return String(format: "%.\(digits)f", v)
}
