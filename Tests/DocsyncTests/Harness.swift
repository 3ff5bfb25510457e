import AsyncHTTPClient
import Testing
@testable import DocsyncAgent
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncPingPong
import DocsyncSyncRails
import DocsyncIndex
import DocsyncModel
import DocsyncServer
import DocsyncTestSupport
import DocsyncFiles
import DocsyncWatcher
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Log lines kept in memory, so tests can assert what the user was told (and how often).
final class CapturedLogs: Sendable {
    let lines = Mutex<[String]>([])

    var all: [String] { lines.withLock { $0 } }

    func count(containing text: String) -> Int { all.filter { $0.contains(text) }.count }

    /// The first twenty lines at warning level and above, for a failure's message.
    var warnings: String {
        all.filter { $0.hasPrefix("warning") || $0.hasPrefix("error") || $0.hasPrefix("critical") }.prefix(20).joined(separator: " | ")
    }

    func logger(_ label: String = "test", level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: label) { _ in CapturingHandler(sink: self) }
        logger.logLevel = level
        return logger
    }
}

struct CapturingHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let meta = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        sink.lines.withLock { $0.append("\(event.level) \(event.message) \(meta)") }
    }
}

/// The reference endpoint running in this process on 127.0.0.1, port 0.
final class TestServer: Sendable {
    let url: String
    var port: Int { Int(url.split(separator: ":").last!)! }
    let token: String
    let data: TempFolder
    let group: ServiceGroup
    let task: Task<Void, any Error>
    let api: APIClient

    static func start(
        token: String = "test-token-123", maxUploadBytes: Int64 = 4 << 30, wallClock: (@Sendable () -> Int64)? = nil,
        configure: (inout ReferenceServer.Configuration) -> Void = { _ in }
    ) async throws -> TestServer {
        let data = try TempFolder("server")
        var configuration = ReferenceServer.Configuration(port: 0, dataDirectory: data.path, token: token, maxUploadBytes: maxUploadBytes)
        configure(&configuration)
        let server = try wallClock.map { try ReferenceServer(configuration: configuration, wallClock: $0) }
            ?? ReferenceServer(configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "server")
        logger.logLevel = .warning
        let app = try server.application(logger: logger) { _, port in continuation.yield(port) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw ProcessFailure("server did not start") }
        return TestServer(url: "http://127.0.0.1:\(port)", token: token, data: data, group: group, task: task)
    }

    init(url: String, token: String, data: TempFolder, group: ServiceGroup, task: Task<Void, any Error>) {
        self.url = url
        self.token = token
        self.data = data
        self.group = group
        self.task = task
        self.api = APIClient(baseURL: url, token: token)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        data.remove()
    }
}

/// An agent running in this process on a temp folder.
final class TestAgent: Sendable {
    let agent: Agent
    let folder: TempFolder
    let task: Task<Void, any Error>
    let index: Index
    let logs: CapturedLogs

    static func start(
        folder: TempFolder, endpoint: String, token: String, logLevel: Logger.Level = .info, clock: ServerClock? = nil,
        adapter: AdapterMaker? = nil, index: Index? = nil, configure: (inout AgentOptions) -> Void = { _ in }
    ) async throws -> TestAgent {
        let logs = CapturedLogs()
        var options = AgentOptions(root: folder.path, endpointURL: endpoint, token: token)
        options.retryPolicy = RetryPolicy(initial: .milliseconds(50), cap: .milliseconds(500))
        configure(&options)
        let agent = try Agent(
            options: options, endpoint: adapter?.make ?? pingPong(options.endpointURL), index: index, clock: clock, logger: logs.logger(level: logLevel))
        let task = Task { try await agent.run() }
        return TestAgent(agent: agent, folder: folder, task: task, index: try index ?? Index.open(root: folder.path), logs: logs)
    }

    init(agent: Agent, folder: TempFolder, task: Task<Void, any Error>, index: Index, logs: CapturedLogs) {
        self.agent = agent
        self.folder = folder
        self.task = task
        self.index = index
        self.logs = logs
    }

    func stop() async throws {
        await agent.stop()
        try await task.value
    }

    /// The index row of `path`, once it exists with content hash of what is on disk now.
    func row(_ path: String) async throws -> FileRow? {
        try await index.read { try $0.file(at: path) }
    }

    /// Waits until the index agrees with every file on disk (the stat it recorded, or for a stat
    /// recorded too soon after a change to be trusted, the content hash) and nothing is pending.
    func settled(timeout: Duration = .seconds(20)) async throws -> Bool {
        try await eventually(timeout: timeout) {
            let found = TreeWalkerProbe.documents(in: folder.path)
            return try await index.read { tx in
                let rows = try tx.allFileStats()
                guard rows.count == found.count, try tx.pendingCount() == 0 else { return false }
                return try found.allSatisfy { path, stat in
                    guard let recorded = rows[path]?.stat else { return false }
                    if recorded.isSettled { return recorded == stat }
                    let bytes = try? Data(contentsOf: URL(fileURLWithPath: self.folder.path + "/" + path))
                    return try tx.file(at: path)?.hash == bytes.map { ContentHash.sha256Hex($0) }
                }
            }
        }
    }
}

/// What a walk of the tree sees, to compare with the index.
enum TreeWalkerProbe {
    static func documents(in root: String) -> [String: FileStat] {
        var out: [String: FileStat] = [:]
        for f in DocsyncWatcherProbe.walk(root) { out[f.0] = f.1 }
        return out
    }
}

enum DocsyncWatcherProbe {
    static func walk(_ root: String) -> [(String, FileStat)] {
        TreeWalker(root: root).walk()
            .filter { DocumentRules.isDocumentName(String($0.path.split(separator: "/").last ?? "")) }
            .map { ($0.path, FileStat(size: $0.info.size, mtimeNs: $0.info.mtimeNs, inode: $0.info.inode)) }
    }
}

/// A careful editor's save: the new content goes in only over the content it read (read again
/// otherwise), so a test's edit never overwrites what the agent wrote meanwhile unseen. (A user who
/// does overwrite it has removed that change, which no sync tool can tell from a deliberate edit.)
func carefulEdit(_ folder: TempFolder, _ path: String, _ change: (inout JSONObject) -> Void) throws {
    while true {
        let before = try Array(folder.bytes(path))
        var object = try DocumentRules.parseObject(before)
        change(&object)
        let after = Array((JSONWriter.string(.object(object), style: .pretty) + "\n").utf8)
        if try FileSystem.replace(folder.file(path), with: after, ifItHolds: before) { return }
    }
}

/// The conflict copies a user sees in `folder`: not the agent's hidden temporary file a copy is
/// written to before it is renamed into place (its name holds the copy's name, and it is empty
/// for a moment).
func conflictCopies(in folder: TempFolder) -> [String] {
    (FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? [])
        .filter { $0.contains(".sync-conflict-") && $0.split(separator: "/").last?.hasPrefix(".") == false }
}

/// Reads a document file's id.
/// The client the `docsync` binary uses, so tests exercise its connection behaviour.
let agentClient = try! makeHTTPClient()
private let longerAgentClients = Mutex<[Duration: HTTPClient]>([:])

/// The client the binary makes for folders with this request timeout: its read timeout is
/// stretched to a request timeout over 60 s. One per timeout, kept for the whole run.
func agentClient(requestTimeout: Duration) -> HTTPClient {
    guard requestTimeout > .seconds(60) else { return agentClient }
    return longerAgentClients.withLock { clients in
        if let client = clients[requestTimeout] { return client }
        let client = try! makeHTTPClient(requestTimeout: requestTimeout)
        clients[requestTimeout] = client
        return client
    }
}

/// Makes an agent's adapter (a struct, so that a test's trailing closure stays the agent's options).
struct AdapterMaker: Sendable {
    let make: @Sendable (EndpointContext) -> any DocumentEndpoint
}

/// The sync-rails adapter for `server`, as the CLI makes it for a `syncrails+http://` endpoint.
func syncRailsAdapter(_ server: SyncRailsServer) -> AdapterMaker {
    AdapterMaker { context in
        SyncRailsEndpoint(
            transport: HTTPTransport(
                baseURL: server.origin, client: agentClient(requestTimeout: context.requestTimeout), clock: context.clock, clientID: context.clientID,
                requestTimeout: context.requestTimeout),
            path: "/api/sync", resource: server.resource, token: context.credential)
    }
}

/// The reference endpoint's adapter at `url`, as the CLI makes it for an `http://` endpoint.
func pingPong(_ url: String) -> @Sendable (EndpointContext) -> any DocumentEndpoint {
    { context in
        PingPongEndpoint(
            transport: HTTPTransport(
                baseURL: url, client: agentClient(requestTimeout: context.requestTimeout), clock: context.clock, clientID: context.clientID,
                requestTimeout: context.requestTimeout),
            token: context.credential, selection: context.selection, folderTypes: context.folderTypes, longPollPage: context.longPollPage)
    }
}

func idOf(_ folder: TempFolder, _ path: String) throws -> String? {
    try DocumentRules.parseObject(Array(folder.bytes(path))).object?["id"]?.string
}

extension JSONObject {
    var object: JSONObject? { self }
}

/// The folder as the server should hold it: each file's object by id (sync fields aside).
/// Throws while any file has no id yet: the agent has not seen it.
func folderDocuments(_ root: String) throws -> [String: JSONObject] {
    var out: [String: JSONObject] = [:]
    for (path, _) in DocsyncWatcherProbe.walk(root) {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: root + "/" + path)))
        var object = try DocumentRules.parseObject(bytes)
        guard let id = object["id"]?.string else { throw ProcessFailure("\(path) has no id yet") }
        for key in DocumentRules.reservedKeys { object[key] = nil }
        if object["docType"] == nil, let folder = path.split(separator: "/").first, path.contains("/") { object["docType"] = .string(String(folder)) }
        out[id] = object
    }
    return out
}

/// Whether the server's live documents of `types` are exactly the folder's (same ids, same
/// content), and its tombstones exactly `deleted`, except that those in `mayBeAbsent` (files
/// deleted before the agent ever saw them) may have left no trace at all.
func serverMatchesFolder(_ root: String, api: APIClient, types: [String], deleted: Set<String> = [], mayBeAbsent: Set<String> = []) async -> Bool {
    guard let expected = try? folderDocuments(root) else { return false }
    var live: [String: JSONObject] = [:]
    var tombstones = Set<String>()
    for type in types {
        guard let docs = try? await api.documents(type: type) else { return false }
        for (id, var doc) in docs {
            if doc["deleted_at"] != nil { tombstones.insert(id); continue }
            for key in DocumentRules.reservedKeys { doc[key] = nil }
            live[id] = doc
        }
    }
    return live == expected && tombstones.isSubset(of: deleted) && deleted.subtracting(mayBeAbsent).isSubset(of: tombstones)
}

extension FolderContext {
    /// A folder's context for a part made on its own in a test: the clock uncalibrated, no token.
    static func forTests(_ root: String, index: Index, logger: Logger = CapturedLogs().logger()) throws -> FolderContext {
        FolderContext(
            root: root, gate: try PathGate(root: root), index: index, clock: ServerClock(), logger: logger, metrics: AgentMetrics(folder: "test"),
            policy: RetryPolicy(), credential: Credential(token: "", file: nil), selection: .all)
    }
}
