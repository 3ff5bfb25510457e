import DocsyncAgent
import DocsyncModel
import DocsyncPostgres
import DocsyncServer
import DocsyncStore
import DocsyncTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// Writes counted across tasks.
final class WriteCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

/// Several reference endpoints on one PostgreSQL database (the test process's throw-away cluster).
extension LongSuites {
@Suite(.serialized) struct PostgresNodesTests {
    let token = "nodes-token"

    /// A node: a reference endpoint in this process on a free port, over its own connection pool.
    struct Node<Store: DocumentStore> {
        let url: String
        let group: ServiceGroup
        let data: TempFolder
        let store: Store
        let running: Task<Void, any Error>

        func stop() async {
            await group.triggerGracefulShutdown()
            data.remove()
        }
    }

    func node(database: String, cluster: PostgresCluster) async throws -> Node<PostgresDocumentStore> {
        var logger = Logger(label: "node")
        logger.logLevel = .critical
        let store = try await PostgresDocumentStore(
            configuration: .init(host: "127.0.0.1", port: cluster.port, username: "postgres", password: nil, database: database, tls: .disable),
            logger: logger)
        return try await node(store: store, logger: logger)
    }

    func node<Store: DocumentStore>(store: Store, logger: Logger) async throws -> Node<Store> {
        let data = try TempFolder("node")
        let server = try ReferenceServer(configuration: .init(port: 0, dataDirectory: data.path, token: token), store: store)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = try server.application(logger: logger) { _, port in continuation.yield(port) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        return Node(url: "http://127.0.0.1:\(port)", group: group, data: data, store: store, running: running)
    }

    @Test func aWriteOnOneNodeReachesAnAgentLongPollingTheOtherWithinASecond() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try cluster.createDatabase()
        let (one, two) = (try await node(database: database, cluster: cluster), try await node(database: database, cluster: cluster))
        let folder = try TempFolder("nodes-agent")
        let agent = try await TestAgent.start(folder: folder, endpoint: two.url, token: token)
        defer { Task { try? await agent.stop(); await one.stop(); await two.stop(); folder.remove() } }
        let (api1, api2) = (APIClient(baseURL: one.url, token: token), APIClient(baseURL: two.url, token: token))
        // The agent follows node 2: a first document through it, to see the long poll running.
        _ = try await api2.request("PUT", "/api/document", body: #"{"id":"first","docType":"note"}"#)
        #expect(await eventually { FileManager.default.fileExists(atPath: folder.file("note/first.json")) })
        try await Task.sleep(for: .milliseconds(300))  // the agent back in its long poll on node 2
        let start = ContinuousClock.now
        let put = try await api1.request("PUT", "/api/document", body: #"{"id":"second","docType":"note","via":"node 1"}"#)
        #expect(put.status == 200)
        #expect(await eventually(timeout: .seconds(5)) { FileManager.default.fileExists(atPath: folder.file("note/second.json")) })
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(1), "a long poll on node 2 woke for node 1's write after \(elapsed)")
    }

    @Test func eightWritersOverTwoNodesAndAReaderThatMissesNothing() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try cluster.createDatabase()
        let nodes = [try await node(database: database, cluster: cluster), try await node(database: database, cluster: cluster)]
        defer { Task { for n in nodes { await n.stop() } } }
        let (writers, each) = (8, 500)
        let written = WriteCount()
        // The reader follows node 2's change feed while the writers write through both nodes.
        let (readerURL, token) = (nodes[1].url, self.token)
        let total = writers * each
        let reader = Task { @Sendable () -> (Set<String>, [Int64]) in
            let api = APIClient(baseURL: readerURL, token: token)
            var (cursor, seen, cursors): (Int64, Set<String>, [Int64]) = (0, [], [])
            let deadline = ContinuousClock.now + .seconds(300)
            while seen.count < total && ContinuousClock.now < deadline {
                let reply = try await api.request("POST", "/api/sync", body: #"{"since":\#(cursor),"documents":[]}"#)
                guard let object = reply.json?.object, case .number(let c)? = object["cursor"], let next = Int64(c),
                      case .array(let docs)? = object["documents"]?.object?["success"]
                else { continue }
                for case .object(let d) in docs { if let id = d["id"]?.string { seen.insert(id) } }
                cursors.append(next)
                cursor = next
                if docs.isEmpty && written.value < total { try await Task.sleep(for: .milliseconds(5)) }
            }
            return (seen, cursors)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                let url = nodes[w % 2].url
                group.addTask {
                    let api = APIClient(baseURL: url, token: token)
                    for i in 0..<each {
                        let reply = try await api.request("PUT", "/api/document", body: #"{"id":"w\#(w)-\#(i)","docType":"load"}"#)
                        guard reply.status == 200 else { throw ProcessFailure("write refused: \(reply.text)") }
                        written.add()
                    }
                }
            }
            try await group.waitForAll()
        }
        let (seen, cursors) = try await reader.value
        #expect(seen.count == writers * each, "the reader saw \(seen.count) of \(writers * each) writes")
        #expect(cursors == cursors.sorted(), "the cursor never went back")
        #expect(try await nodes[0].store.stats().documents == writers * each)
    }

    @Test func theBinaryServesFromPostgresAndKeepsPasswordsOffTheCommandLine() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try cluster.createDatabase()
        let work = try TempFolder("pg-cli")
        defer { work.remove() }
        try work.write("token", token + "\n")
        let url = "postgres://postgres@127.0.0.1:\(cluster.port)/\(database)"
        let (refused, _, said) = try await runDocsync(
            ["serve", "--data", work.file("data"), "--database", "postgres://postgres:secret@127.0.0.1:\(cluster.port)/\(database)"], logDirectory: work.path)
        #expect(refused != 0 && said.contains("--database-password-file or PGPASSWORD"), "\(said)")
        let server = try DocsyncProcess(
            ["serve", "--data", work.file("data"), "--port", "0", "--token-file", work.file("token"), "--database", url],
            logDirectory: work.path, name: "serve")
        defer { Task { await server.stop() } }
        let endpoint = try await server.firstLine()
        try work.write("folder/notes/a.json", #"{"id":"a","docType":"note","n":1.50}"#)
        let (status, _, stderr) = try await runDocsync(
            ["sync", work.file("folder"), "--endpoint", endpoint, "--token-file", work.file("token")], logDirectory: work.path)
        #expect(status == 0, "\(stderr.suffix(400))")
        let stored = try await APIClient(baseURL: endpoint, token: token).request("GET", "/api/document/a")
        #expect(stored.text.contains(#""n":1.50"#), "the exact text, in PostgreSQL: \(stored.text)")
        #expect(!FileManager.default.fileExists(atPath: work.file("data/documents.sqlite")), "no SQLite store beside it")
    }

    @Test func aNodeKilledMidImportLosesNothingTheAgentGoesOnWithTheOther() async throws {
        let work = try TempFolder("pg-kill")
        defer { work.remove() }
        try work.write("token", token + "\n")
        let (nodes, urls) = try await PostgresCluster.shared().serveNodes(2, work: work, tokenFile: work.file("token"), name: "node")
        defer { Task { for node in nodes { await node.stop() } } }
        let count = 3_000
        for i in 0..<count { try work.write("folder/items/g\(i / 100)/i\(i).json", #"{"id":"i\#(i)","docType":"item","n":\#(i)}"#) }
        let agent = try DocsyncProcess(
            ["watch", work.file("folder"), "--endpoint", urls.joined(separator: ","), "--token-file", work.file("token")],
            logDirectory: work.path, name: "agent")
        defer { Task { await agent.stop() } }
        let survivor = APIClient(baseURL: urls[1], token: token)
        func stored() async -> Int {
            guard case .number(let n)? = (try? await survivor.request("GET", "/api/stats"))?.json?.object?["data"]?.object?["documents"] else { return -1 }
            return Int(n) ?? -1
        }
        #expect(await eventually(timeout: .seconds(60)) { await stored() >= 300 })
        nodes[0].signal(SIGKILL)  // the agent's first server, mid-import
        let complete = await eventually(timeout: .seconds(120)) { await stored() == count }
        let held = await stored()
        #expect(complete, "\(held) of \(count); \(agent.stderr.suffix(600))")
        #expect(await eventually { (try? await AgentStatus.read(root: work.file("folder")))?.counts.pending == 0 })
        let page = try await survivor.request("GET", "/api/document/i0")
        #expect(page.json?.object?["data"]?.object?["n"] == 0)
    }

    /// Batches (their documents locked in one order, then the counter) and single writes (one
    /// document, then the counter) on the same documents through two nodes at once: none fails or
    /// waits on another in a circle, none is lost, and each document ends at one revision per write.
    @Test func batchesAndSingleWritesOnTheSameDocumentsNeitherDeadlockNorLoseAWrite() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try cluster.createDatabase()
        let nodes = [try await node(database: database, cluster: cluster), try await node(database: database, cluster: cluster)]
        defer { Task { for n in nodes { await n.stop() } } }
        let ids = (0..<12).map { "shared-\($0)" }
        let counts = try await withThrowingTaskGroup(of: [String: Int].self) { group in
            for w in 0..<8 {
                let store = nodes[w % 2].store
                group.addTask {
                    var writes: [String: Int] = [:]
                    var random = SystemRandomNumberGenerator()
                    for round in 0..<40 {
                        if w < 4 {
                            // A batch of six in a shuffled order: the store must lock them in its own.
                            let batch = Array(ids.shuffled(using: &random).prefix(6))
                            let docs = batch.map { JSONValue.object(JSONObject([(key: "id", value: .string($0)), (key: "docType", value: "load"), (key: "by", value: .string("\(w)-\(round)"))])) }
                            let outcome = try await store.sync(since: 0, documents: docs, now: 1, limit: 1, maxBytes: 1 << 20, client: "w\(w)", measure: false)
                            guard outcome.errors.isEmpty else { throw ProcessFailure("batch refused: \(outcome.errors)") }
                            for id in batch { writes[id, default: 0] += 1 }
                        } else {
                            let id = ids.randomElement(using: &random)!
                            _ = try await store.put(JSONObject([(key: "id", value: .string(id)), (key: "docType", value: "load")]), now: 1)
                            writes[id, default: 0] += 1
                        }
                    }
                    return writes
                }
            }
            var all: [String: Int] = [:]
            for try await writes in group { all.merge(writes, uniquingKeysWith: +) }
            return all
        }
        for id in ids {
            guard case .object(let doc)? = try await nodes[0].store.get(id: id), case .number(let rev)? = doc[DocumentRules.revKey] else {
                Issue.record("\(id) is missing")
                continue
            }
            #expect(Int(rev) == counts[id], "\(id): revision \(rev) after \(counts[id] ?? 0) writes")
        }
    }
}
}
