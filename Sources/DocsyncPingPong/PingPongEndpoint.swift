import AsyncHTTPClient
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import NIOCore
import Synchronization

/// The PingPong-style REST endpoint, and the reference endpoint's richer dialect of it:
/// `PUT /api/document` (upsert by id, `If-Match` on the revision), `GET /api/document/:id`,
/// `POST /api/app/upload`, replies wrapped in `{"data": …}`, `Authorization: Token token=…`;
/// and, where the server has it, the batch call `POST /api/sync` (push and pull in one call, a
/// long poll, the change sequence as the cursor). Whether it has one is learnt from the first
/// call: a plain PingPong server answers 404/405, and is then pushed to one document per request
/// and not pulled from.
///
/// This is the only code that knows PingPong's routes, its envelope and the wording of its errors.
public final class PingPongEndpoint: DocumentEndpoint {
    let http: HTTPTransport
    /// Whether `/api/sync` exists: `nil` until the server answered one call.
    private let batch = Mutex<Bool?>(nil)
    /// What polls of a plain PingPong endpoint passed on (see `PingPongEndpoint+Poll.swift`).
    let pollMemory = Mutex(PollMemory())
    func setBatch(_ value: Bool) { batch.withLock { $0 = value } }
    /// Single PUTs in flight at once, without the batch call.
    let concurrency: Int

    /// Documents per `/api/sync` call, and how many such calls are kept in flight.
    public static let batchDocuments = 500
    public static let batchesInFlight = 4
    /// Documents per round of single PUTs.
    public static let singleRound = 256

    /// The docTypes asked for in batch calls (a plain PingPong endpoint has no such filter; the
    /// engine drops what it did not select).
    let selection: TypeSelection
    /// The docTypes the folder holds, polled on an endpoint without the batch call.
    let folderTypes: @Sendable () async -> Set<String>
    /// The most changes a long poll asks for (``EndpointContext/longPollPage``).
    let longPollPage: Int?

    public init(
        transport: HTTPTransport, token: String, concurrency: Int = 16, selection: TypeSelection = .all,
        folderTypes: @escaping @Sendable () async -> Set<String> = { [] }, longPollPage: Int? = nil
    ) {
        self.longPollPage = longPollPage
        self.selection = selection
        self.folderTypes = folderTypes
        self.http = transport
        self.concurrency = concurrency
        transport.setAuthorization("Token token=\(token)")
    }

    public var location: String { http.baseURL }

    public var capabilities: EndpointCapabilities {
        switch batch.withLock({ $0 }) {
        case false?:
            Self.polled
        case let known:
            EndpointCapabilities(
                documentsPerCall: Self.batchDocuments, bytesPerCall: ProtocolLimits.agentBatchBytes, callsInFlight: Self.batchesInFlight,
                pull: known == true ? .longPoll : .unknown, pullsWithPush: true, detectsConflicts: true, uploads: true)
        }
    }

    /// A plain PingPong endpoint: one document a request, polled, and its pages never asked ahead
    /// (asking after a page commits it: see `PingPongEndpoint+Poll.swift`).
    static var polled: EndpointCapabilities {
        var capabilities = EndpointCapabilities(
            documentsPerCall: singleRound, bytesPerCall: Int.max, callsInFlight: 1, pull: .poll, pullsWithPush: false,
            detectsConflicts: true, uploads: true)
        capabilities.pagesAskedAhead = false
        return capabilities
    }

    /// Change numbers in order; a poll's cursor (one poll at a time) always moves on.
    public func orders(_ cursor: SyncCursor, after old: SyncCursor) -> Bool {
        guard let new = Int64(cursor.text), let old = Int64(old.text) else { return true }
        return new > old
    }

    public func useCredential(_ credential: String) { http.setAuthorization("Token token=\(credential)") }

    // MARK: - Push

    public func push(_ changes: [OutgoingChange], pullingAfter cursor: SyncCursor?) async throws(EndpointError) -> PushReply {
        if batch.withLock({ $0 }) != false {
            do throws(EndpointError) {
                return try await pushBatch(changes, since: Self.sequence(cursor))
            } catch .unsupported {
                // No batch call: these go one by one, as everything after them.
            }
        }
        return PushReply(outcomes: await putEach(changes))
    }

    /// One `/api/sync` call. A call refused as a whole (too large, or a document the server
    /// cannot read) is split in halves down to single documents, so only the one at fault is rejected.
    private func pushBatch(_ changes: [OutgoingChange], since: Int64) async throws(EndpointError) -> PushReply {
        let reply: SyncReply
        do throws(EndpointError) {
            reply = try await sync(since: since, documents: changes.map(Self.batchBody), echo: false)
        } catch .rejected(let reason) where changes.count > 1 && (reason.hasPrefix("400") || reason.hasPrefix("413")) {
            let half = changes.count / 2
            var first = try await pushBatch(Array(changes[..<half]), since: since)
            let second = try await pushBatch(Array(changes[half...]), since: since)
            first.outcomes.merge(second.outcomes) { a, _ in a }
            first.pulled = nil  // two partial views of the changes since: the next pull brings them
            return first
        }
        let sent = Set(changes.map(\.id))
        var outcomes: [String: PushOutcome] = [:]
        var others: [JSONObject] = []
        for doc in reply.success {
            if let id = doc["id"]?.string, sent.contains(id), outcomes[id] == nil {
                outcomes[id] = Self.outcome(stored: doc)
            } else {
                others.append(doc)
            }
        }
        for e in reply.errors {
            guard let id = e.id, sent.contains(id) else { continue }
            if case .some(let right) = e.forbidden {
                outcomes[id] = .failed(.forbidden(right: right, reason: e.message))
                continue
            }
            // The reference endpoint words a stale base revision "revision …" and sends the current
            // document, saying when this client wrote it itself.
            outcomes[id] = .failed(
                !e.message.hasPrefix("revision") ? .rejected("400: \(e.message)")
                    : e.yours && e.current != nil ? .conflictWithOwnWrite(current: e.current!) : .conflict(current: e.current))
        }
        for element in reply.isolated {
            guard let id = element.id, sent.contains(id), outcomes[id] == nil else { continue }
            outcomes[id] = .failed(.rejected("the endpoint answered with this document in a form that cannot be represented (\(element.reason))"))
        }
        for id in sent where outcomes[id] == nil {
            outcomes[id] = .failed(.badReply("the reply does not mention document \(id)"))
        }
        var pulled = Self.pullReply(reply, changes: others, since: since)
        pulled.refused.removeAll { $0.id.map(sent.contains) ?? false }
        return PushReply(outcomes: outcomes, pulled: pulled)
    }

    /// An acknowledgement without `docType` says the body was stored exactly as sent.
    static func outcome(stored doc: JSONObject) -> PushOutcome {
        if doc["docType"] == nil && doc["id"] != nil {
            if case .number(let rev)? = doc[DocumentRules.revKey] { return .storedAsSent(revision: Int64(rev)) }
            return .storedAsSent(revision: nil)
        }
        return .stored(doc)
    }

    /// The body of a change in a batch call: its base revision goes inside, as `rev`. A document
    /// the server never acknowledged goes as `rev: 0`, "create it only if absent": a write whose
    /// reply was lost and is sent again must not overwrite an edit someone made meanwhile (the
    /// server answers with a conflict and the current version, and the engine merges).
    ///
    /// A wire body never holds `rev` (``DocumentRules/reservedKeys``), so the member is put in front
    /// of the text as it is, without parsing and writing every document of an import again.
    static func batchBody(_ change: OutgoingChange) -> String {
        let rev = change.baseRevision ?? 0
        if change.body.utf8.first == UInt8(ascii: "{"), change.body.utf8.dropFirst().first != UInt8(ascii: "}") {
            return "{\"\(DocumentRules.revKey)\":\(rev)," + change.body.dropFirst()
        }
        guard case .object(var object)? = try? JSONParser.parse(change.body) else { return change.body }
        object[DocumentRules.revKey] = .number(String(rev))
        return JSONWriter.string(.object(object))
    }

    /// One `PUT /api/document` per change, `concurrency` at a time, the base revision as `If-Match`.
    private func putEach(_ changes: [OutgoingChange]) async -> [String: PushOutcome] {
        await withTaskGroup(of: (String, PushOutcome).self) { group in
            var outcomes: [String: PushOutcome] = [:]
            var iterator = changes.makeIterator()
            func start(_ change: OutgoingChange) {
                group.addTask {
                    do throws(EndpointError) {
                        return (change.id, .stored(try await self.put(Array(change.body.utf8), ifMatch: change.baseRevision)))
                    } catch {
                        return (change.id, .failed(error))
                    }
                }
            }
            for _ in 0..<concurrency { if let c = iterator.next() { start(c) } }
            for await (id, outcome) in group {
                outcomes[id] = outcome
                if let c = iterator.next() { start(c) }
            }
            return outcomes
        }
    }

    /// Upserts one document; returns it as the endpoint stored it.
    func put(_ document: [UInt8], ifMatch: Int64?) async throws(EndpointError) -> JSONObject {
        let reply = try await http.send(
            .PUT, "/api/document", body: .bytes(ByteBuffer(bytes: document)), headers: ifMatch.map { [("If-Match", "\"\($0)\"")] } ?? [])
        guard case .object(let stored)? = try Self.data(reply) else { throw .badReply("no document under \"data\"") }
        return stored
    }

    // MARK: - Pull

    public func pull(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply {
        if batch.withLock({ $0 }) == false { return try await poll(after: cursor) }
        let since = Self.sequence(cursor)
        let reply: SyncReply
        do throws(EndpointError) {
            reply = try await sync(since: since, documents: [], wait: wait.map { Int($0.components.seconds) })
        } catch .unsupported {
            return try await poll(after: nil)  // a plain PingPong endpoint: polled from now on
        }
        var pulled = Self.pullReply(reply, changes: reply.success, since: since)
        pulled.cursor = SyncCursor(String(reply.cursor))
        return pulled
    }

    public func fetch(id: String, docType: String) async throws(EndpointError) -> JSONObject? {
        let reply = try await http.send(.GET, "/api/document/\(id.addingPercentEncodingForPathSegment())")
        if reply.status == 404 { return nil }
        return try Self.data(reply)?.object
    }

    /// `GET /api/time`: a server without it still answers with a `Date` header, which is sampled.
    public func sampleClock() async throws(EndpointError) {
        _ = try await http.send(.GET, "/api/time")
    }

    // MARK: - Upload

    /// `POST /api/app/upload`: the `targetDocument` part, then the file streamed as the `file` part.
    public func upload(_ request: FileUploadRequest, progress: UploadProgress) async throws(EndpointError) -> JSONObject {
        var target = JSONObject()
        target["targetId"] = .string(request.targetID)
        target["targetDocType"] = .string(request.targetDocType)
        target["targetProperty"] = .string(request.targetProperty)
        let multipart = MultipartUpload(
            fields: [("targetDocument", JSONWriter.string(.object(target)))], fileField: "file", upload: request, progress: progress)
        let reply = try await http.send(
            .POST, "/api/app/upload", body: multipart.body, contentType: multipart.contentType, timeout: http.requestTimeout + multipart.extraTime,
            failover: false)
        // The target document is not on the server yet (404), or its revision moved meanwhile (409): later.
        if reply.status == 404 || reply.status == 409 { throw .unavailable("\(reply.status): \(reply.message)", retryAfter: nil) }
        guard case .object(let document)? = try Self.data(reply) else { throw .badReply("no document under \"data\"") }
        return document
    }
}
