import DocsyncStore
import DocsyncModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

import ServiceLifecycle

/// The batch call, `POST /api/sync`: documents in, changes since a cursor out, optionally held
/// until something changes (a long poll).
struct SyncRoute: Sendable {
    let store: any DocumentStore
    let feed: ChangeFeed
    /// Asked again while a long poll is held: a revoked token's open poll ends with 401.
    let tokens: TokenStore
    /// How often a held long poll asks whether its token is still good.
    static let tokenRecheck: Duration = .seconds(1)
    /// Largest request body.
    let batchLimit: Int
    /// Longest a long poll is held.
    let maxWait: Duration
    let pace: ConnectionLimits
    let now: @Sendable () -> Int64
    /// `--enforce-schemas`: documents that fail their docType's schema are refused one by one.
    let schemas: SchemaEnforcement?
    /// An encrypted folder's server refuses documents in clear, one by one.
    let vault: VaultGuard

    func add(to router: Router<ServerRequestContext>) {
        router.post("/api/sync") { request, context in
            do {
                return try await handle(request, identity: TokenIdentity(name: context.author ?? "", access: context.access))
            } catch {
                return ReferenceServer.errorResponse(error)
            }
        }
    }

    /// What a batch call asks.
    struct Call {
        var since: Int64 = 0
        var documents: [JSONValue] = []
        /// `"echo": false`: the caller's own documents are acknowledged (id, revision and stamps)
        /// instead of sent back whole; the store keeps every body exactly as sent.
        var echo = true
        var wait: Duration = .zero
        /// Some document may be nested deeper, or hold more values, than a document may (checked
        /// per document).
        var measure = false
        /// `"types"` / `"exclude_types"`: the docTypes whose changes are listed.
        var selection = TypeSelection.all
        /// `"limit"`: the most changes a reply lists (at most ``pageSize``). An agent with many
        /// folders asks its long polls for few, since each reply waits for its folder's turn.
        var limit = SyncRoute.pageSize
    }

    /// Documents per reply.
    static let pageSize = 1000

    private func handle(_ request: Request, identity: TokenIdentity) async throws -> Response {
        var call = try await Self.read(request, limit: batchLimit, pace: pace)
        call.wait = min(call.wait, maxWait)
        let client = ReferenceServer.client(request, token: identity.name)
        let access = identity.access
        // A docType the token may not write at all is refused before its schema is asked.
        let (writable, unwritable) = Self.writable(call.documents, access)
        let (clearOK, clearRefused) = try await vault.partition(writable)
        let (documents, refused) = try await schemas?.partition(clearOK) ?? (clearOK, [])
        var outcome = try await store.sync(
            since: call.since, documents: StoreRules.authored(documents, by: identity.name), now: now(), limit: call.limit, client: client,
            selection: call.selection, measure: call.measure, access: access)
        outcome.errors += unwritable + clearRefused + refused
        for stored in outcome.stored { schemas?.wrote(docType: stored["docType"]?.string) }
        if !outcome.stored.isEmpty { feed.published(outcome.latest) }
        if call.documents.isEmpty && outcome.changes.isEmpty && !outcome.more && call.wait > .zero {
            let deadline = ContinuousClock.now + call.wait
            // A change this caller is not sent (its own write, another docType) wakes the poll
            // too: it waits on, so that a busy server's long polls do not return at once empty.
            // Each look starts where the last one ended: what lies before held nothing for this
            // caller. (From the poll's own cursor, an agent importing while its poll was held
            // had each of its pushes read back everything it had pushed since the poll began.)
            repeat {
                switch await holdLongPoll(after: outcome.cursor, until: deadline, authorization: request.headers[.authorization], identity: identity) {
                case .revoked: return ReferenceServer.errorResponse(HTTPRefusal(401, "invalid token"))
                case .rightsChanged: return ReferenceServer.response(.ok, Self.reply(outcome, echo: call.echo))
                case .due: break
                }
                outcome = try await store.sync(
                    since: outcome.cursor, documents: [], now: now(), limit: call.limit, client: client, selection: call.selection, access: access)
            } while outcome.changes.isEmpty && !outcome.more && ContinuousClock.now < deadline && !Task.isShuttingDownGracefully && !Task.isCancelled
        }
        return ReferenceServer.response(.ok, Self.reply(outcome, echo: call.echo))
    }

    /// The documents of docTypes the token may write or create, and an error entry for each other.
    static func writable(_ documents: [JSONValue], _ access: Access) -> (writable: [JSONValue], refused: [JSONObject]) {
        guard !access.isEverything else { return (documents, []) }
        var (writable, refused) = ([JSONValue](), [JSONObject]())
        for document in documents {
            let docType = document.object?["docType"]?.string ?? ""
            if docType.isEmpty || access.mayCreate(docType) {
                writable.append(document)
            } else {
                let refusal = StoreError(.forbidden, "this token may not write documents of docType \(docType)", right: "write:\(docType)")
                refused.append(StoreRules.batchError(id: document.object?["id"]?.string, refusal))
            }
        }
        return (writable, refused)
    }

    enum Held { case due, revoked, rightsChanged }

    /// Holds a long poll until something changes after `after`, or `deadline` passes, or the server
    /// shuts down (a held request never delays a stop). The token that opened it is asked again
    /// every ``tokenRecheck`` and before answering: a revoked one ends the poll with 401, one whose
    /// rights changed ends it at once with what it had, so a reader is never told of a change it
    /// may no longer read.
    private func holdLongPoll(after: Int64, until deadline: ContinuousClock.Instant, authorization: String?, identity: TokenIdentity) async -> Held {
        let header = Array((authorization ?? "").utf8)
        while true {
            let slice = min(deadline - ContinuousClock.now, Self.tokenRecheck)
            if slice > .zero { await cancelWhenGracefulShutdown { [feed] in await feed.wait(after: after, timeout: slice) } }
            guard let now = tokens.identify(header) else { return .revoked }
            if now.access != identity.access { return .rightsChanged }
            if feed.latest > after || ContinuousClock.now >= deadline || Task.isShuttingDownGracefully || Task.isCancelled { return .due }
        }
    }

    /// The request body, checked: a JSON object no deeper than its documents may be.
    static func read(_ request: Request, limit: Int, pace: ConnectionLimits) async throws -> Call {
        // Documents sit three containers deep ({"documents": [doc]}): one level more than a
        // document may have is parsed, so a document one level too deep is refused alone.
        let envelope = 2
        let (parsed, deepest, values) = try await ReferenceServer.json(
            request, limit: limit, maxDepth: ProtocolLimits.maxDocumentDepth + envelope + 1, pace: pace)
        guard case .object(let body) = parsed else {
            throw StoreError(.invalid, "the body must be {\"since\": <cursor>, \"documents\": [...]}")
        }
        // No document can be over the values limit where the whole body is not.
        var call = Call(measure: deepest > ProtocolLimits.maxDocumentDepth + envelope || values > ProtocolLimits.maxDocumentRequestValues)
        if let s = body["since"], !s.isNull {
            guard case .number(let n) = s, let v = Int64(n), v >= 0 else {
                throw StoreError(.invalid, "\"since\" must be a cursor from an earlier reply (or 0)")
            }
            call.since = v
        }
        if let d = body["documents"] {
            guard case .array(let list) = d else { throw StoreError(.invalid, "\"documents\" must be an array") }
            call.documents = list
        }
        switch body["echo"] {
        case nil, .null?: break
        case .bool(let echo)?: call.echo = echo
        default: throw StoreError(.invalid, "\"echo\" must be true or false")
        }
        call.selection = TypeSelection(only: try types(body["types"], "types").map(Set.init), except: Set(try types(body["exclude_types"], "exclude_types") ?? []))
        switch body["wait"] {
        case nil, .null?: break
        case .number(let w)?:
            guard let seconds = Double(w), seconds.isFinite, seconds >= 0 else { throw Self.badWait }
            call.wait = .milliseconds(Int64(min(seconds, 60) * 1000))
        default: throw Self.badWait
        }
        switch body["limit"] {
        case nil, .null?: break
        case .number(let n)?:
            // Read as JSON Schema reads an integer: 1e2 and 100.0 are 100.
            guard let limit = Double(n), limit.rounded() == limit, limit >= 1, limit <= Double(pageSize) else { throw Self.badLimit }
            call.limit = Int(limit)
        default: throw Self.badLimit
        }
        return call
    }

    static let badWait = StoreError(.invalid, "\"wait\" must be a number of seconds from 0 (at most 60 are waited)")
    static let badLimit = StoreError(.invalid, "\"limit\" must be a whole number of changes from 1 to \(pageSize)")

    /// A list of docTypes, checked: at most ``TypeSelection/maxTypes``, each a valid docType.
    static func types(_ value: JSONValue?, _ key: String) throws -> [String]? {
        guard let value, !value.isNull else { return nil }
        guard case .array(let list) = value, list.count <= TypeSelection.maxTypes else {
            throw StoreError(.invalid, "\"\(key)\" must be an array of at most \(TypeSelection.maxTypes) docTypes")
        }
        return try list.map { item in
            guard let type = item.string, DocumentRules.docTypeProblem(type) == nil else {
                throw StoreError(.invalid, "\"\(key)\" holds \(item.kindName) that is not a docType")
            }
            return type
        }
    }

    /// `{"documents": {"success": [...], "error": [...]}, "cursor": N, "more": bool}`, written
    /// from the stored texts (changes are not parsed and written again).
    static func reply(_ outcome: SyncOutcome, echo: Bool) -> ByteBuffer {
        var buffer = ByteBuffer(string: "{\"documents\":{\"success\":[")
        var first = true
        for doc in outcome.stored {
            if !first { buffer.writeString(",") }
            first = false
            buffer.writeBytes(JSONWriter.bytes(.object(echo ? doc : ReferenceServer.acknowledgement(doc))))
        }
        for text in outcome.changes {
            if !first { buffer.writeString(",") }
            first = false
            buffer.writeString(text)
        }
        buffer.writeString("],\"error\":")
        buffer.writeBytes(JSONWriter.bytes(.array(outcome.errors.map { .object($0) })))
        buffer.writeString("},\"cursor\":\(outcome.cursor),\"more\":\(outcome.more)")
        if outcome.horizon > 0 { buffer.writeString(",\"horizon\":\(outcome.horizon),\"purged_before\":\(outcome.purgedBefore)") }
        buffer.writeString("}")
        return buffer
    }
}
