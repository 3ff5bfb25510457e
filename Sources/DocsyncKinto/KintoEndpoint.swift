import AsyncHTTPClient
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import Foundation
import NIOCore
import Synchronization

/// Kinto (kinto.readthedocs.io): one bucket holds the folder, each docType is a collection, each
/// document a record whose id is the document's. Writes go through `POST /v1/batch` (as many a
/// call as the server's `batch_max_requests`), each checked on its own: `If-Match` on the
/// record's `last_modified`, `If-None-Match: *` on a create; a 412 is a conflict with the record
/// the server holds. Pulls follow each collection's `last_modified` with `_since` (tombstones
/// come as `deleted: true`); Kinto has no long poll, so the engine polls. Credentials are
/// `user:password` (Kinto's basicauth). The bucket and the collections are created on first use.
public final class KintoEndpoint: DocumentEndpoint {
    let http: HTTPTransport
    public let bucket: String
    private struct State {
        var batchMax: Int?
        /// From `GET /v1/`: whether kinto-attachment is there, and where its files are served.
        var attachments: Attachments?
        /// From `GET /v1/`: whether the history plugin is on (who wrote each record).
        var history = false
        var bucketReady = false
        var collections: Set<String> = []
        /// A write found the bucket gone and made it again: the next pull says so.
        var lost = false
        /// Records a pull asks for: fewer once a page was larger than this side takes.
        var pageLimit = KintoEndpoint.pageSize
    }
    private let state = Mutex(State())

    func readBatchMax() -> Int? { state.withLock { $0.batchMax } }
    func setHello(batchMax: Int, attachments: Attachments, history: Bool) {
        state.withLock {
            $0.batchMax = batchMax
            $0.attachments = attachments
            $0.history = history
        }
    }
    func hasHistory() -> Bool { state.withLock { $0.history } }
    func readAttachments() -> Attachments? { state.withLock { $0.attachments } }
    func isBucketReady() -> Bool { state.withLock { $0.bucketReady } }
    func setBucketReady() { state.withLock { $0.bucketReady = true } }
    func knownCollections() -> Set<String> { state.withLock { $0.collections } }
    func addCollection(_ id: String) { _ = state.withLock { $0.collections.insert(id) } }
    func readPageLimit() -> Int { state.withLock { $0.pageLimit } }
    func halvePageLimit(from limit: Int) { state.withLock { $0.pageLimit = min($0.pageLimit, max(1, limit / 2)) } }
    func markLost() { state.withLock { $0.lost = true } }
    func takeLost() -> Bool {
        state.withLock { state in
            let lost = state.lost
            state.lost = false
            return lost
        }
    }
    /// The bucket and collections are made again before the next write (the server lost them).
    func forgetPrepared() {
        state.withLock {
            $0.bucketReady = false
            $0.collections = []
        }
    }

    /// Records a pull asks for per collection and call.
    public static let pageSize = 1000
    /// Kinto's default `batch_max_requests`, until `GET /v1/` says otherwise.
    public static let defaultBatch = 25

    /// - Parameter transport: the server's API root (`http://HOST:PORT/v1`).
    /// The collections (docTypes) pulled; the others are left on the server.
    let selection: TypeSelection

    public init(transport: HTTPTransport, bucket: String, credential: String, selection: TypeSelection = .all) {
        self.selection = selection
        self.http = transport
        self.bucket = bucket
        useCredential(credential)
    }

    public var location: String { http.baseURL + bucketPath }
    var bucketPath: String { "/buckets/\(bucket)" }

    public var capabilities: EndpointCapabilities {
        var capabilities = EndpointCapabilities(
            documentsPerCall: state.withLock { $0.batchMax } ?? Self.defaultBatch, bytesPerCall: ProtocolLimits.agentBatchBytes,
            callsInFlight: 4, pull: .poll, pullsWithPush: false, detectsConflicts: true,
            uploads: state.withLock { $0.attachments?.available } ?? true, filesPerDocument: 1)
        capabilities.serverMembers = [Self.attachmentMember]
        return capabilities
    }

    public func useCredential(_ credential: String) {
        http.setAuthorization("Basic " + Data(credential.utf8).base64EncodedString())
    }

    public func orders(_ cursor: SyncCursor, after old: SyncCursor) -> Bool {
        let (new, previous) = (KintoCursor(cursor), KintoCursor(old))
        return previous.since.allSatisfy { (new.since[$0.key] ?? Int64.min) >= $0.value }
    }

    // MARK: - Push

    public func push(_ changes: [OutgoingChange], pullingAfter cursor: SyncCursor?) async throws(EndpointError) -> PushReply {
        var outcomes: [String: PushOutcome] = [:]
        var sending: [(change: OutgoingChange, data: JSONObject, request: JSONValue)] = []
        for change in changes {
            guard KintoForm.isKintoID(change.docType), KintoForm.isKintoID(change.id) else {
                outcomes[change.id] = .failed(.rejected("Kinto names collections and records with letters, digits, '_' and '-' only"))
                continue
            }
            guard case .object(let document)? = try? JSONParser.parse(change.body) else {
                outcomes[change.id] = .failed(.rejected("not a JSON object"))
                continue
            }
            let data = KintoForm.data(document)
            sending.append((change, data, request(change, data: data, deleted: document[DocumentRules.deletedAtKey].map { !$0.isNull } ?? false)))
        }
        guard !sending.isEmpty else { return PushReply(outcomes: outcomes) }
        try await prepare(Set(sending.map(\.change.docType)))
        var responses = try await batch(sending.map(\.request))
        // A bucket the server lost refuses writes as a wrong credential would: made again (a
        // create that finds it there changes nothing), the call is sent once more.
        if responses.contains(where: { [401, 403].contains(Self.status($0)) }), try await bucketWasMissing() {
            try await prepare(Set(sending.map(\.change.docType)))
            responses = try await batch(sending.map(\.request))
        }
        // A credential is the call's, not a document's: refused for one, refused for all. A 403
        // is a permission the principal lacks on that record or collection, that document's
        // alone, when the principal may read the bucket; a principal that may not (a wrong
        // basicauth password is another principal) is a credential refused.
        if let refused = responses.first(where: { Self.status($0) == 401 }) {
            throw .unauthorized("\(Self.status(refused)): \(Self.message(refused["body"]?.object))")
        }
        if let refused = responses.first(where: { Self.status($0) == 403 }), try await !mayReadBucket() {
            throw .unauthorized("\(Self.status(refused)): \(Self.message(refused["body"]?.object))")
        }
        for (item, response) in zip(sending, responses) {
            outcomes[item.change.id] = outcome(item.change, sent: item.data, response: response)
        }
        for item in sending where outcomes[item.change.id] == nil {
            outcomes[item.change.id] = .failed(.badReply("the batch reply has no response for \(item.change.id)"))
        }
        return PushReply(outcomes: outcomes)
    }

    /// The batch sub-request for one change.
    private func request(_ change: OutgoingChange, data: JSONObject, deleted: Bool) -> JSONValue {
        var request = JSONObject()
        request["method"] = .string(deleted ? "DELETE" : "PUT")
        request["path"] = .string("\(bucketPath)/collections/\(change.docType)/records/\(change.id)")
        if !deleted { request["body"] = .object(JSONObject([(key: "data", value: .object(data))])) }
        var headers = JSONObject()
        if let base = change.baseRevision, base > 0 {
            headers["If-Match"] = .string("\"\(base)\"")
        } else if !deleted {
            headers["If-None-Match"] = .string("*")
        }
        request["headers"] = .object(headers)
        return .object(request)
    }

    /// What one sub-response says of its change.
    private func outcome(_ change: OutgoingChange, sent: JSONObject, response: JSONObject) -> PushOutcome {
        let status = Self.status(response)
        let body = response["body"]?.object
        switch status {
        case 200, 201:
            guard let record = body?["data"]?.object else { return .failed(.badReply("no record in the reply for \(change.id)")) }
            let stored = KintoForm.document(record, collection: change.docType)
            if record["deleted"] == true || KintoForm.data(stored).sameContent(as: sent) {
                return .storedAsSent(revision: KintoForm.revision(record))
            }
            return .stored(stored)
        case 404 where change.body.contains("\"\(DocumentRules.deletedAtKey)\""):
            return .storedAsSent(revision: nil)  // deleting what the server never had (or no longer has)
        case 412:
            // The record changed since the base (or was deleted: then the edit is merged against
            // a tombstone and sent again as a create).
            if let existing = body?["details"]?.object?["existing"]?.object {
                return .failed(.conflict(current: KintoForm.document(existing, collection: change.docType)))
            }
            return .failed(.conflict(current: JSONObject([
                (key: "id", value: .string(change.id)), (key: "docType", value: .string(change.docType)),
                (key: DocumentRules.deletedAtKey, value: .string(Timestamp(unixMilliseconds: 0).rfc3339)),
            ])))
        case 401: return .failed(.unauthorized("\(status): \(Self.message(body))"))
        case 403: return .failed(.forbidden(right: "write on the collection \(change.docType)", reason: "403: \(Self.message(body))"))
        case 429, 500...599: return .failed(.unavailable("\(status): \(Self.message(body))", retryAfter: nil))
        default: return .failed(.rejected("\(status): \(Self.message(body))"))
        }
    }

    static func status(_ response: JSONObject) -> Int {
        response["status"].flatMap { if case .number(let n) = $0 { Int(n) } else { nil } } ?? 0
    }

    static func message(_ body: JSONObject?) -> String { body?["message"]?.string ?? body?["error"]?.string ?? "no reason given" }

    /// `POST /v1/batch`: the sub-responses, in the order of the requests.
    private func batch(_ requests: [JSONValue]) async throws(EndpointError) -> [JSONObject] {
        let body = JSONWriter.string(.object(JSONObject([(key: "requests", value: .array(requests))])))
        let sentAt = http.clock?.seam.bootNanoseconds()
        let reply = try await call(.POST, "/batch", body: .bytes(ByteBuffer(string: body)))
        guard reply.ok else { throw Self.refusal(reply) }
        guard case .array(let list)? = reply.json.object?["responses"] else { throw .badReply("no \"responses\" in the batch reply") }
        let responses = list.compactMap(\.object)
        if let clock = http.clock, let sentAt { Self.sampleStamps(of: responses, into: clock, sentAt: sentAt) }
        return responses
    }

    /// Kinto has no time route, but each write's `last_modified` is its clock in milliseconds,
    /// read while the call was served: a thousand times finer than the `Date` header. The
    /// smallest stamp of a batch is taken (Kinto moves a stamp 1 ms on when a collection already
    /// has one that late, so later writes of a burst can run ahead of its clock).
    static func sampleStamps(of responses: [JSONObject], into clock: ServerClock, sentAt: Int64) {
        let receivedAt = clock.seam.bootNanoseconds()
        let stamps = responses.compactMap { r -> Int64? in
            guard [200, 201].contains(status(r)), let record = r["body"]?.object?["data"]?.object else { return nil }
            return KintoForm.revision(record)
        }
        if let earliest = stamps.min() { clock.observe(writeStampMilliseconds: earliest, sentAt: sentAt, receivedAt: receivedAt) }
    }

    /// A status the transport left to us, on a call that is not about one document: a batch
    /// envelope or a listing the server did not take is retried, never blamed on a document.
    static func refusal(_ reply: HTTPTransport.Reply) -> EndpointError {
        .badReply("\(reply.status): \(reply.message)")
    }
}
