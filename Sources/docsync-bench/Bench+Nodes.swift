import DocsyncModel
import DocsyncTestSupport
import Foundation
import Synchronization

/// One load run: writers spread over the servers, readers following each server's change feed.
struct LoadRun {
    var servers = 0
    var writes = 0
    var writesPerSecond = Double.nan
    var latency: [Double] = []
    /// Every reader saw every document exactly once (no miss, no repeat).
    var readersExact = false
    /// Documents the store holds afterwards.
    var stored = 0
    /// Updates of the shared documents every writer also edits (through every server).
    var hotWrites = 0
    /// Each shared document's revisions, as the writes' replies gave them, were distinct and
    /// end at its number of writes: revisions strictly increased whatever server took a write.
    var revisionsIncreasing = false
}

/// 9. Several servers on one PostgreSQL database under load, beside one server on SQLite: 8
/// writers creating distinct documents through the servers in turn (`PUT /api/document`), every
/// tenth write also updating one of a few shared documents, and one reader per server following
/// `/api/sync` from the start; afterwards the store must hold every document once, each reader must
/// have seen each created document exactly once, and each shared document's revisions must have
/// gone up by one a write, whichever server took it.
extension Bench {
    static let loadWriters = 8
    /// Documents every writer also updates, so writes through different servers meet on one row.
    static let hotDocuments = 4

    func measureNodes(work: TempFolder, results: inout Results) async throws {
        guard nodeWrites > 0 else { return }
        log("load: \(nodeWrites) writes over 2 servers on PostgreSQL, then 1 server on SQLite")
        let (pgNodes, pgURLs) = try await PostgresCluster.shared().serveNodes(2, work: work, tokenFile: work.file("token"), name: "pg-node")
        let token = try token(work: work)
        results.postgresLoad = try await loadRun(urls: pgURLs, token: token)
        results.postgresBatchDocsPerSecond = try await batchIngest(urls: pgURLs, token: token)
        for node in pgNodes { await node.stop() }
        let sqliteNode = try DocsyncProcess(
            ["serve", "--data", work.file("sqlite-node"), "--port", "0", "--token-file", work.file("token"), "--log-level", "warning"],
            logDirectory: work.path, name: "sqlite-node")
        let sqliteURL = try await sqliteNode.firstLine()
        results.sqliteLoad = try await loadRun(urls: [sqliteURL], token: token)
        results.sqliteBatchDocsPerSecond = try await batchIngest(urls: [sqliteURL], token: token)
        await sqliteNode.stop()
        log("load: PostgreSQL ×2 \(fmt(results.postgresLoad.writesPerSecond, 0))/s, SQLite ×1 \(fmt(results.sqliteLoad.writesPerSecond, 0))/s")
    }

    /// The raw batched ingest (batches of 500, 4 in flight to each server) of `nodeWrites`
    /// documents from one client, split evenly over the servers at once: documents a second.
    private func batchIngest(urls: [String], token: String) async throws -> Double {
        let share = max(1, nodeWrites / urls.count)
        // One client spread over the servers: no server sends it back what it wrote through another.
        let client = "bench-batch-\(UUID().uuidString)"
        let start = now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, url) in urls.enumerated() {
                group.addTask { try await syncAll(api: APIClient(baseURL: url, token: token), count: share, batch: 500, inFlight: 4, prefix: "batch\(n)-", client: client) }
            }
            try await group.waitForAll()
        }
        return Double(share * urls.count) / seconds(since: start)
    }

    private func loadRun(urls: [String], token: String) async throws -> LoadRun {
        let (writers, perWriter) = (Self.loadWriters, max(1, nodeWrites / Self.loadWriters))
        let total = writers * perWriter
        let done = LoadDone()
        let readers = urls.map { url in Task { try await Self.follow(APIClient(baseURL: url, token: token), until: total, writing: done) } }
        let start = now()
        let replies = try await withThrowingTaskGroup(of: WriterReplies.self) { group in
            for w in 0..<writers {
                let api = APIClient(baseURL: urls[w % urls.count], token: token)
                group.addTask { try await Self.write(api, writer: w, count: perWriter) }
            }
            var all = WriterReplies()
            for try await r in group {
                all.latencies += r.latencies
                for (id, revs) in r.hotRevisions { all.hotRevisions[id, default: []] += revs }
            }
            return all
        }
        let latencies = replies.latencies
        var run = LoadRun(servers: urls.count, writes: total)
        run.writesPerSecond = Double(total) / seconds(since: start)
        run.latency = latencies
        run.hotWrites = replies.hotRevisions.values.reduce(0) { $0 + $1.count }
        run.revisionsIncreasing = replies.hotRevisions.values.allSatisfy { Set($0).count == $0.count && $0.max() == Int64($0.count) }
        done.finish()
        var exact = true
        for reader in readers {
            let seen = try await reader.value
            let created = seen.filter { !$0.key.hasPrefix("hot-") }
            exact = exact && created.count == total && created.allSatisfy { $0.value == 1 }
        }
        run.readersExact = exact
        let stats = try await APIClient(baseURL: urls[0], token: token).request("GET", "/api/stats").json?.object?["data"]?.object
        if case .number(let n)? = stats?["documents"] { run.stored = Int(n) ?? -1 }
        return run
    }

    /// One writer's documents, each tenth followed by an update of a shared one (no If-Match: the
    /// writes race, and the store must still give each a revision of its own).
    static func write(_ api: APIClient, writer w: Int, count: Int) async throws -> WriterReplies {
        var replies = WriterReplies()
        for i in 0..<count {
            let sent = now()
            let reply = try await api.request("PUT", "/api/document", body: #"{"id":"w\#(w)-\#(i)","docType":"load","n":\#(i)}"#)
            guard reply.status == 200 else { throw ProcessFailure("write refused: \(reply.text)") }
            replies.latencies.append(Double(now() - sent) / 1e6)
            guard i % 10 == 9 else { continue }
            let hot = "hot-\((w + i / 10) % hotDocuments)"
            let update = try await api.request("PUT", "/api/document", body: #"{"id":"\#(hot)","docType":"load","by":\#(w)}"#)
            guard update.status == 200, case .number(let rev)? = update.json?.object?["data"]?.object?[DocumentRules.revKey], let r = Int64(rev) else {
                throw ProcessFailure("update refused: \(update.text)")
            }
            replies.hotRevisions[hot, default: []].append(r)
        }
        return replies
    }

    /// Follows one server's change feed from the start until `total` created documents were seen (or the
    /// writers are done and a last pass found nothing new): how often each id was seen.
    static func follow(_ api: APIClient, until total: Int, writing: LoadDone) async throws -> [String: Int] {
        var (cursor, seen, created): (Int64, [String: Int], Int) = (0, [:], 0)
        let deadline = ContinuousClock.now + .seconds(600)
        while created < total && ContinuousClock.now < deadline {
            let finished = writing.isDone
            let reply = try await api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[]}"#)
            guard let object = reply.json?.object, case .number(let c)? = object["cursor"], let next = Int64(c),
                  case .array(let docs)? = object["documents"]?.object?["success"]
            else { continue }
            for case .object(let d) in docs {
                guard let id = d["id"]?.string else { continue }
                seen[id, default: 0] += 1
                if seen[id] == 1 && !id.hasPrefix("hot-") { created += 1 }
            }
            cursor = next
            if docs.isEmpty {
                if finished { break }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        return seen
    }
}

/// What one writer's replies said: each create's latency, each shared document's revisions.
struct WriterReplies: Sendable {
    var latencies: [Double] = []
    var hotRevisions: [String: [Int64]] = [:]
}

/// Whether the writers of a load run are done.
final class LoadDone: Sendable {
    private let done = Mutex(false)
    var isDone: Bool { done.withLock { $0 } }
    func finish() { done.withLock { $0 = true } }
}
