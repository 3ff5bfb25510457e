import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import NIOCore

extension PingPongEndpoint {
    /// The reply to a batch call.
    struct SyncReply: Sendable {
        /// Stored versions of what was sent, and what changed on the server since the cursor.
        var success: [JSONObject]
        /// `yours`: the current version was written by this client (the reference endpoint says so).
        var errors: [(id: String?, message: String, current: JSONObject?, yours: Bool, forbidden: String??)]
        var cursor: Int64
        var more: Bool
        /// The server's purge horizon and time (0: nothing purged).
        var horizon: Int64 = 0
        var purgedBefore: Int64 = 0
        /// The identity of the store that answered (`X-Docsync-Store`), when the server names one.
        var store: String?
        /// Documents of the reply that cannot be represented, left out of `success`.
        var isolated: [IsolatedElement] = []
    }

    /// The batch call: sends `documents` (each may carry `rev`, its base revision) and receives
    /// everything changed since `since`. With `wait`, an empty call is held by the server until
    /// something changes (a long poll). With `echo: false` the endpoint may acknowledge a sent
    /// document (`id`, `rev`, stamps: no `docType`) instead of returning it whole.
    /// Throws ``EndpointError/unsupported(_:)`` when the server has no such call (404/405).
    func sync(since: Int64, documents: [String], wait: Int? = nil, echo: Bool = true) async throws(EndpointError) -> SyncReply {
        var body = ByteBuffer()
        body.reserveCapacity(documents.reduce(64) { $0 + $1.utf8.count + 1 })
        body.writeString("{\"since\":\(since),")
        if !echo { body.writeString("\"echo\":false,") }
        if let wait { body.writeString("\"wait\":\(wait),") }
        if wait != nil, let longPollPage { body.writeString("\"limit\":\(longPollPage),") }
        if let only = selection.only { body.writeString("\"types\":\(JSONWriter.string(.array(only.sorted().map { .string($0) }))),") }
        if !selection.except.isEmpty { body.writeString("\"exclude_types\":\(JSONWriter.string(.array(selection.except.sorted().map { .string($0) }))),") }
        body.writeString("\"documents\":[")
        for (i, d) in documents.enumerated() {
            if i > 0 { body.writeInteger(UInt8(ascii: ",")) }
            body.writeString(d)
        }
        body.writeString("]}")
        let timeout = wait.map { http.requestTimeout + .seconds(Int64($0)) } ?? http.requestTimeout
        let reply = try await http.send(.POST, "/api/sync", body: .bytes(body), timeout: timeout)
        if reply.status == 404 || reply.status == 405 {
            setBatch(false)
            throw .unsupported("the endpoint has no batch call (/api/sync)")
        }
        guard reply.ok else { throw Self.refusal(reply) }
        setBatch(true)
        return try Self.syncReply(reply)
    }

    private static func syncReply(_ reply: HTTPTransport.Reply) throws(EndpointError) -> SyncReply {
        guard let object = reply.json.object, let documents = object["documents"]?.object,
              case .number(let cursorText)? = object["cursor"], let cursor = Int64(cursorText)
        else { throw .badReply("not a sync reply") }
        var success: [JSONObject] = []
        if case .array(let list)? = documents["success"] { for case .object(let o) in list { success.append(o) } }
        var errors: [(String?, String, JSONObject?, Bool, String??)] = []
        if case .array(let list)? = documents["error"] {
            for case .object(let e) in list {
                // `"status": 403` (and the right it lacks): the reference endpoint's refusal of rights.
                let forbidden: String?? = e["status"] == .number("403") ? .some(e["right"]?.string) : .none
                errors.append((e["id"]?.string, e["message"]?.string ?? "error", e["current"]?.object, e["yours"] == .bool(true), forbidden))
            }
        }
        func number(_ key: String) -> Int64 { if case .number(let n)? = object[key] { Int64(n) ?? 0 } else { 0 } }
        return SyncReply(
            success: success, errors: errors, cursor: cursor, more: object["more"] == true, horizon: number("horizon"),
            purgedBefore: number("purged_before"), store: reply.headers.first(name: "X-Docsync-Store"), isolated: reply.isolated)
    }

    /// What a 2xx reply carries: what is under `"data"` (PingPong's envelope), or the reply itself
    /// where a server sends it bare (a JSON array for a listing, a document with an `id`: most REST
    /// servers do, and the seed names the envelope for its writes only); a refusal otherwise.
    static func data(_ reply: HTTPTransport.Reply) throws(EndpointError) -> JSONValue? {
        guard reply.ok else { throw refusal(reply) }
        return try data(of: reply.json)
    }

    /// What a body carries, as ``data(_:)`` reads it (a listing read one document at a time has
    /// only its body).
    static func data(of json: JSONValue) throws(EndpointError) -> JSONValue? {
        switch json {
        case .object(let object) where object["data"] != nil: return object["data"]
        case .object(let object) where object["id"] != nil: return json
        case .array: return json
        default: throw .badReply("neither a \"data\" envelope, a document nor a list in the reply")
        }
    }

    /// A 4xx the transport left to us: 409 is a stale revision (with the current document).
    static func refusal(_ reply: HTTPTransport.Reply) -> EndpointError {
        if reply.status == 409 { return .conflict(current: reply.json.object?["data"]?.object ?? reply.json.object?["current"]?.object) }
        return .rejected("\(reply.status): \(reply.message)")
    }

    /// A reply's changes as a pull's: deletions missed when the purge horizon passed `since`.
    static func pullReply(_ reply: SyncReply, changes: [JSONObject], since: Int64) -> PullReply {
        var pulled = PullReply(
            changes: changes, cursor: reply.more ? nil : SyncCursor(String(reply.cursor)), more: reply.more, storeIdentity: reply.store,
            historyBehind: reply.cursor < since)
        // A horizon past the server's own latest change is nonsense (a broken or hostile server):
        // taken at its word, every reply would start a reconcile that trashes what it omits.
        let sane = reply.more || reply.horizon <= reply.cursor
        pulled.missedDeletions = since > 0 && reply.horizon > since && sane
        pulled.tombstonesPurgedBefore = reply.purgedBefore > 0 ? reply.purgedBefore : nil
        pulled.refused = reply.isolated
        return pulled
    }

    /// The reference endpoint's cursor is its change sequence.
    static func sequence(_ cursor: SyncCursor?) -> Int64 { cursor.flatMap { Int64($0.text) } ?? 0 }
}
