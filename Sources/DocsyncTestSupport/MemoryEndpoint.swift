import DocsyncClock
import DocsyncEndpoint
import DocsyncModel
import DocsyncStore
import Foundation
import Synchronization

/// A server in memory: the reference endpoint's rules (``MemoryDocumentStore``, the batch call,
/// revisions, conflicts with the current version, the change cursor) without HTTP, for tests of
/// the engine that need no network. Clients of one `MemoryServer` are ``MemoryEndpoint``s; it
/// passes `EndpointConformanceTests` like every adapter.
public final class MemoryServer: Sendable {
    private let current = Mutex(MemoryDocumentStore())
    /// The store every client's calls reach now.
    public var store: MemoryDocumentStore { current.withLock { $0 } }
    public let token: String
    /// Documents per call and the call's byte budget, as the reference endpoint's.
    public let pageSize = 1000
    private let pullCount = Atomic<Int>(0)
    /// Pulls answered so far, to every client.
    public var pulls: Int { pullCount.load(ordering: .relaxed) }

    private let pushHook = OnceHook()
    private let pullHook = OnceHook()

    /// Whether a push's reply carries the changes since the client's cursor (as the batch call
    /// does); without, the client learns of others' changes by pulls only (as the REST routes).
    public let pullsWithPush: Bool

    public init(token: String = "memory-token", pullsWithPush: Bool = true) {
        self.token = token
        self.pullsWithPush = pullsWithPush
    }

    /// Runs `hook` once, after the next push has been stored and before its reply goes back: a
    /// reply held in flight (while the test replaces the store, say).
    public func holdNextPushReply(_ hook: @escaping @Sendable () async -> Void) { pushHook.set(hook) }

    /// Runs `hook` once, while the next pull is answered (before its reply goes back).
    public func holdNextPullReply(_ hook: @escaping @Sendable () async -> Void) { pullHook.set(hook) }

    func takePushHook() -> (@Sendable () async -> Void)? { pushHook.take() }
    func takePullHook() -> (@Sendable () async -> Void)? { pullHook.take() }

    /// The server's storage replaced by an empty store of another identity (a reset or a new
    /// install at the same address), under clients that keep their cursors.
    public func replaceStore() { current.withLock { $0 = MemoryDocumentStore() } }

    func countPull() { pullCount.add(1, ordering: .relaxed) }

    /// A client of this server, as a folder's agent would make it.
    public func client(id: String, credential: String? = nil, clock: ServerClock? = nil) -> MemoryEndpoint {
        MemoryEndpoint(server: self, clientID: id, credential: credential ?? token, clock: clock)
    }
}

public final class MemoryEndpoint: DocumentEndpoint {
    let server: MemoryServer
    let clientID: String
    let clock: ServerClock?
    private let credential: Mutex<String>

    init(server: MemoryServer, clientID: String, credential: String, clock: ServerClock?) {
        self.server = server
        self.clientID = clientID
        self.clock = clock
        self.credential = Mutex(credential)
    }

    public var location: String { "memory:" }

    public var capabilities: EndpointCapabilities {
        EndpointCapabilities(
            documentsPerCall: server.pageSize, bytesPerCall: ProtocolLimits.maxPageBytes, callsInFlight: 2, pull: .poll, pullsWithPush: server.pullsWithPush,
            detectsConflicts: true, uploads: false)
    }

    public func useCredential(_ credential: String) { self.credential.withLock { $0 = credential } }

    private func authorize() throws(EndpointError) {
        guard credential.withLock({ $0 }) == server.token else { throw .unauthorized("401: unknown token") }
    }

    /// Unix milliseconds now: the server's clock is this machine's.
    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    public func push(_ changes: [OutgoingChange], pullingAfter cursor: SyncCursor?) async throws(EndpointError) -> PushReply {
        try authorize()
        var documents: [JSONValue] = []
        var outcomes: [String: PushOutcome] = [:]
        for change in changes {
            // The base revision goes inside as `rev`; none is `rev: 0`, "create only if absent".
            guard case .object(var object)? = try? JSONParser.parse(change.body) else {
                outcomes[change.id] = .failed(.rejected("400: not a JSON object"))
                continue
            }
            object[DocumentRules.revKey] = .number(String(change.baseRevision ?? 0))
            documents.append(.object(object))
        }
        let since = Self.sequence(cursor)
        let store = server.store  // one store answers the whole call, even if it is replaced meanwhile
        let outcome = try await sync(store, since: since, documents: documents)
        for stored in outcome.stored {
            guard let id = stored["id"]?.string else { continue }
            if case .number(let rev)? = stored[DocumentRules.revKey] { outcomes[id] = .storedAsSent(revision: Int64(rev)) }
        }
        for e in outcome.errors {
            guard let id = e["id"]?.string else { continue }
            let message = e["message"]?.string ?? ""
            let current = e["current"]?.object
            outcomes[id] = .failed(
                !message.hasPrefix("revision") ? .rejected("400: \(message)")
                    : e["yours"] == true && current != nil ? .conflictWithOwnWrite(current: current!) : .conflict(current: current))
        }
        let reply = PushReply(outcomes: outcomes, pulled: server.pullsWithPush ? pullReply(outcome, from: store, since: since) : nil)
        if let hook = server.takePushHook() { await hook() }
        return reply
    }

    public func pull(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply {
        try authorize()
        server.countPull()
        let since = Self.sequence(cursor)
        let store = server.store
        let outcome = try await sync(store, since: since, documents: [])
        var reply = pullReply(outcome, from: store, since: since)
        reply.cursor = SyncCursor(String(outcome.cursor))  // a pull's pages go on from where this one ended
        if let hook = server.takePullHook() { await hook() }
        return reply
    }

    private func sync(_ store: MemoryDocumentStore, since: Int64, documents: [JSONValue]) async throws(EndpointError) -> SyncOutcome {
        do {
            return try await store.sync(
                since: since, documents: documents, now: Self.now(), limit: server.pageSize, maxBytes: ProtocolLimits.maxPageBytes, client: clientID,
                selection: .all, measure: true)
        } catch {
            throw .unavailable("the store failed: \(error)", retryAfter: nil)
        }
    }

    /// The reply's changes, its cursor (none in a push's reply while more wait: the pull that
    /// follows asks from the old one), and what the reference endpoint says of purged deletions.
    private func pullReply(_ outcome: SyncOutcome, from store: MemoryDocumentStore, since: Int64) -> PullReply {
        let changes = outcome.changes.compactMap { (try? JSONParser.parse($0))?.object }
        var reply = PullReply(
            changes: changes, cursor: outcome.more ? nil : SyncCursor(String(outcome.cursor)), more: outcome.more,
            storeIdentity: store.storeID, historyBehind: outcome.cursor < since)
        reply.missedDeletions = since > 0 && outcome.horizon > since && (outcome.more || outcome.horizon <= outcome.cursor)
        reply.tombstonesPurgedBefore = outcome.purgedBefore > 0 ? outcome.purgedBefore : nil
        return reply
    }

    public func fetch(id: String, docType: String) async throws(EndpointError) -> JSONObject? {
        try authorize()
        do {
            return try await server.store.get(id: id)?.object
        } catch {
            throw .unavailable("the store failed: \(error)", retryAfter: nil)
        }
    }

    /// The server's clock is this machine's, read with no wire between: a sample of zero delay.
    public func sampleClock() async throws(EndpointError) {
        guard let clock else { return }
        let at = clock.seam.bootNanoseconds()
        clock.observe(headers: ReplyHeaders(syncUTC: String(Int64(Date().timeIntervalSince1970 * 1e9)), syncDuration: nil, date: nil), sentAt: at, receivedAt: at)
    }

    static func sequence(_ cursor: SyncCursor?) -> Int64 { cursor.flatMap { Int64($0.text) } ?? 0 }
}

/// A hook a test sets to run once, inside the next call of its kind: taken (and cleared) by it.
final class OnceHook: Sendable {
    private let slot = Mutex<(@Sendable () async -> Void)?>(nil)

    func set(_ hook: @escaping @Sendable () async -> Void) { slot.withLock { $0 = hook } }

    func take() -> (@Sendable () async -> Void)? {
        slot.withLock { hook in
            defer { hook = nil }
            return hook
        }
    }
}
