import AsyncHTTPClient
import DocsyncClock
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import NIOCore

/// The sync-rails dialect of the sync-ios seed: one `POST /api/sync` carries
/// `{"updated_at": <watermark>, "<resource>": [objects]}` and is answered by
/// `{"<resource>": {"success": [...], "error": [{"uuid", "message"}]}}` — what was stored, and
/// everything stamped after the watermark. Objects are keyed by `uuid` (our `id`); the server
/// makes every `updated_at`; deletes are `deleted_at` stamps, never removals.
///
/// One resource is one docType (`events` in the seed). There are no revisions (the last write
/// wins on the server), no long poll (the engine polls), no uploads. The server's `updated_at`
/// has one-second resolution: the watermark posted is one second before the latest seen, and
/// what comes back unchanged from that second is dropped (see ``SyncRailsCursor``).
public final class SyncRailsEndpoint: DocumentEndpoint {
    let http: HTTPTransport
    /// The call's path (`/api/sync`) and the resource key, which is also the docType.
    let path: String
    public let resource: String

    /// Objects per call.
    public static let documentsPerCall = 200

    public init(transport: HTTPTransport, path: String, resource: String, token: String) {
        self.http = transport
        self.path = path
        self.resource = resource
        transport.setAuthorization("Token token=\(token)")
    }

    public var location: String { http.baseURL + path + "?resource=" + resource }

    public var capabilities: EndpointCapabilities {
        EndpointCapabilities(
            documentsPerCall: Self.documentsPerCall, bytesPerCall: ProtocolLimits.agentBatchBytes, callsInFlight: 1, pull: .poll,
            pullsWithPush: true, detectsConflicts: false, uploads: false)
    }

    public func useCredential(_ credential: String) { http.setAuthorization("Token token=\(credential)") }

    public func orders(_ cursor: SyncCursor, after old: SyncCursor) -> Bool {
        (SyncRailsCursor(cursor).watermark ?? 0) >= (SyncRailsCursor(old).watermark ?? 0)
    }

    public func push(_ changes: [OutgoingChange], pullingAfter cursor: SyncCursor?) async throws(EndpointError) -> PushReply {
        var outcomes: [String: PushOutcome] = [:]
        var objects: [JSONObject] = []
        for change in changes {
            guard change.docType == resource else {
                outcomes[change.id] = .failed(.rejected("this endpoint carries only docType \"\(resource)\""))
                continue
            }
            guard case .object(let document)? = try? JSONParser.parse(change.body) else {
                outcomes[change.id] = .failed(.rejected("not a JSON object"))
                continue
            }
            objects.append(SyncRailsForm.object(document))
        }
        let reply = try await call(objects, after: cursor)
        let sent = Set(objects.compactMap { $0["uuid"]?.string })
        var others: [JSONObject] = []
        for object in reply.success {
            let document = SyncRailsForm.document(object, docType: resource)
            if let id = document["id"]?.string, sent.contains(id), outcomes[id] == nil {
                outcomes[id] = .stored(document)
            } else {
                others.append(document)
            }
        }
        for (uuid, message) in reply.errors where sent.contains(uuid) { outcomes[uuid] = .failed(.rejected(message)) }
        for element in reply.isolated {
            guard let id = element.id, sent.contains(id), outcomes[id] == nil else { continue }
            outcomes[id] = .failed(.rejected("the endpoint answered with this object in a form that cannot be represented (\(element.reason))"))
        }
        for id in sent where outcomes[id] == nil { outcomes[id] = .failed(.badReply("the reply does not mention \(id)")) }
        let (fresh, next) = reply.cursor.advance(others, all: reply.success, now: serverSeconds)
        var pulled = PullReply(changes: fresh, cursor: next.cursor)
        pulled.refused = reply.isolated.filter { !($0.id.map(sent.contains) ?? false) }
        return PushReply(outcomes: outcomes, pulled: pulled)
    }

    public func pull(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply {
        let reply = try await call([], after: cursor)
        let documents = reply.success.map { SyncRailsForm.document($0, docType: resource) }
        let (fresh, next) = reply.cursor.advance(documents, all: reply.success, now: serverSeconds)
        var pulled = PullReply(changes: fresh, cursor: next.cursor)
        pulled.refused = reply.isolated
        return pulled
    }

    /// The server's time now, Unix seconds: the calibrated clock's estimate, or local time.
    var serverSeconds: Int64 {
        (http.clock?.now() ?? SystemClockSeam().wallNanoseconds() / 1_000_000) / 1000
    }

    /// sync-rails has no route for one object: said, so that nobody takes a `nil` for "the server
    /// has no such document". (The engine asks only after a conflict, which this endpoint never
    /// reports.)
    public func fetch(id: String, docType: String) async throws(EndpointError) -> JSONObject? {
        throw .unsupported("\(location) has no route for one object")
    }

    /// An empty call with a watermark in the future: nothing comes back but the `Date` header.
    public func sampleClock() async throws(EndpointError) {
        _ = try await call([], after: SyncRailsCursor(watermark: Timestamp(unixMilliseconds: 253_402_300_799_000)).cursor)
    }

    struct Reply {
        var success: [JSONObject]
        var errors: [(String, String)]
        var cursor: SyncRailsCursor
        /// Objects of the reply that cannot be represented, left out of `success`.
        var isolated: [IsolatedElement] = []
    }

    private func call(_ objects: [JSONObject], after cursor: SyncCursor?) async throws(EndpointError) -> Reply {
        let position = SyncRailsCursor(cursor)
        var request = JSONObject()
        request["updated_at"] = .string(position.postedWatermark)
        request[resource] = .array(objects.map(JSONValue.object))
        let body = ByteBuffer(string: JSONWriter.string(.object(request)))
        let reply = try await http.send(.POST, path, body: .bytes(body))
        guard reply.ok else {
            if reply.status == 404 || reply.status == 405 { throw .unsupported("\(location) has no sync call (\(reply.status))") }
            throw .rejected("\(reply.status): \(reply.message)")
        }
        guard let lists = reply.json.object?[resource]?.object else { throw .badReply("no \"\(resource)\" in the reply") }
        var success: [JSONObject] = []
        if case .array(let list)? = lists["success"] { for case .object(let o) in list { success.append(o) } }
        var errors: [(String, String)] = []
        if case .array(let list)? = lists["error"] {
            for case .object(let e) in list { if let uuid = e["uuid"]?.string { errors.append((uuid, e["message"]?.string ?? "error")) } }
        }
        return Reply(success: success, errors: errors, cursor: position, isolated: reply.isolated)
    }
}
