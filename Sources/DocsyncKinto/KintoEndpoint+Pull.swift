import AsyncHTTPClient
import NIOHTTP1
import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import Foundation
import NIOCore

extension KintoEndpoint {
    /// The bucket's collections, then each collection's records after its own cursor, oldest
    /// first, a page at a time. An idle poll costs one listing and one request per collection.
    public func pull(after cursor: SyncCursor?, wait: Duration?) async throws(EndpointError) -> PullReply {
        var position = KintoCursor(cursor)
        // The attachment plugin's base URL tells which pulled URLs are this server's files.
        if readBatchMax() == nil { try await hello() }
        if takeLost() { return try reset("a write found the bucket gone") }
        guard let collections = try await collectionIDs() else {
            // No bucket: never made yet, or the server lost it (reset, restored from an older
            // copy). When this folder had seen records there, everything is reconciled again.
            _ = takeLost()
            return try reset(position.since.isEmpty ? nil : "the bucket is gone")
        }
        var changes: [JSONObject] = []
        var refused: [IsolatedElement] = []
        var more = false
        for collection in collections where selection.contains(collection) {
            let (reply, limit) = try await page(of: collection, since: position.since[collection])
            if reply.status == 404 { continue }  // gone meanwhile
            guard reply.ok, case .array(let records)? = reply.json.object?["data"] else { throw Self.refusal(reply) }
            refused += reply.isolated
            // The collection's own timestamp older than a record this folder saw: its history
            // went back.
            let etag = Self.etag(reply)
            if let since = position.since[collection], let etag, etag < since {
                return try reset("collection \(collection) is older than what this folder saw")
            }
            let latest = Self.latestBelievable(etag: etag, now: http.clock?.now())
            let authors = try await writers(in: collection, since: position.since[collection], page: records)
            for case .object(let record) in records {
                guard let id = record["id"]?.string, KintoForm.isKintoID(id), let modified = KintoForm.revision(record) else { continue }
                // A stamp past the collection's own timestamp or a day past the server's time is
                // refused alone, and never followed: `_since` it, and every later change is skipped.
                guard modified <= latest else {
                    refused.append(IsolatedElement(id: id, reason: "its last_modified \(modified) is later than the collection's timestamp or a day past the server's time"))
                    continue
                }
                var document = KintoForm.document(record, collection: collection)
                if let author = authors[KintoForm.Version(id: id, modified: modified)] { document[DocumentRules.updatedByKey] = .string(author) }
                changes.append(document)
                position.since[collection] = max(position.since[collection] ?? 0, modified)
            }
            if records.count >= limit || changes.count >= Self.pageSize {
                more = true
                break
            }
        }
        var pulled = PullReply(changes: changes, cursor: position.cursor, more: more)
        pulled.refused = refused
        return pulled
    }

    /// A page of one collection's records after `since`, and how many it asked for. A reply larger
    /// than this side takes (records of many values, or large ones) is asked again for half as
    /// many records, down to one; the smaller page is kept for this endpoint's later pulls.
    private func page(of collection: String, since: Int64?) async throws(EndpointError) -> (HTTPTransport.Reply, Int) {
        while true {
            let limit = readPageLimit()
            var path = "\(bucketPath)/collections/\(collection)/records?_sort=last_modified&_limit=\(limit)"
            // Tombstones come only with `_since`: a first pull takes the live records alone.
            if let since { path += "&_since=\(since)" }
            do throws(EndpointError) {
                return (try await call(.GET, path), limit)
            } catch .tooLarge where limit > 1 {
                halvePageLimit(from: limit)
            }
        }
    }

    /// An empty reply; with a `reason`, one that says the server's history is behind this folder's
    /// (the bucket and collections are made again before the next write).
    private func reset(_ reason: String?) throws(EndpointError) -> PullReply {
        guard reason != nil else { return PullReply(changes: [], cursor: nil) }
        forgetPrepared()
        return PullReply(changes: [], cursor: KintoCursor(nil).cursor, historyBehind: true)
    }

    /// The latest `last_modified` a watermark may take: the collection's own timestamp (its
    /// `ETag`: no record of it is later), and a day past the server's estimated time.
    static func latestBelievable(etag: Int64?, now: Int64?) -> Int64 {
        let clockBound = now.map { $0 + 86_400_000 } ?? Int64.max
        return min(etag ?? Int64.max, clockBound)
    }

    /// A reply's `ETag` (a quoted timestamp in milliseconds).
    static func etag(_ reply: HTTPTransport.Reply) -> Int64? {
        reply.headers.first(name: "ETag").flatMap { Int64($0.trimmingCharacters(in: ["\""])) }
    }

    /// The ids of the bucket's collections; `nil` while the bucket does not exist.
    private func collectionIDs() async throws(EndpointError) -> [String]? {
        let reply: HTTPTransport.Reply
        do throws(EndpointError) {
            reply = try await call(.GET, "\(bucketPath)/collections?_limit=10000")
        } catch .unauthorized(let why) {
            // Kinto answers 403 for a bucket that does not exist as for one that is not ours:
            // made here, it was missing; refused, the credential is wrong.
            if try await bucketWasMissing() { return nil }
            throw .unauthorized(why)
        }
        if reply.status == 404 { return nil }
        guard reply.ok, case .array(let list)? = reply.json.object?["data"] else { throw Self.refusal(reply) }
        return list.compactMap { $0.object?["id"]?.string }.filter(KintoForm.isKintoID).sorted()
    }

    public func fetch(id: String, docType: String) async throws(EndpointError) -> JSONObject? {
        guard KintoForm.isKintoID(id), KintoForm.isKintoID(docType) else { return nil }
        let reply = try await call(.GET, "\(bucketPath)/collections/\(docType)/records/\(id)")
        if reply.status == 404 { return nil }
        guard reply.ok, let record = reply.json.object?["data"]?.object else { throw Self.refusal(reply) }
        return KintoForm.document(record, collection: docType)
    }

    /// `GET /v1/`: Kinto has no time route; its `Date` header is sampled (one-second resolution).
    public func sampleClock() async throws(EndpointError) {
        _ = try await call(.GET, "/")
    }

    /// The server's batch size, the bucket and `collections`, each made once (`If-None-Match: *`:
    /// one that exists already is fine).
    public func prepare(_ collections: Set<String>) async throws(EndpointError) {
        if readBatchMax() == nil { try await hello() }
        if !isBucketReady() {
            try await create(bucketPath)
            setBucketReady()
        }
        for collection in collections.subtracting(knownCollections()).sorted() {
            try await create("\(bucketPath)/collections/\(collection)")
            addCollection(collection)
        }
    }

    /// `GET /v1/`: the batch size (`settings.batch_max_requests`) and the attachment plugin
    /// (`capabilities.attachments`, with the `base_url` its files are served from).
    func hello() async throws(EndpointError) {
        let hello = try await call(.GET, "/").json.object
        let max = hello?["settings"]?.object?["batch_max_requests"].flatMap { if case .number(let n) = $0 { Int(n) } else { nil } }
        let plugin = hello?["capabilities"]?.object?["attachments"]?.object
        setHello(
            batchMax: min(Swift.max(max ?? Self.defaultBatch, 1), 1000),
            attachments: Attachments(available: plugin != nil, baseURL: plugin?["base_url"]?.string),
            history: hello?["capabilities"]?.object?["history"] != nil)
    }

    /// Whether the bucket had to be made again (the server lost it); forgets what was prepared.
    /// A request to Kinto. A 403 for a whole request is a credential refused: Kinto answers so to a
    /// wrong basicauth password (another principal, with no permission). A right lacking on one
    /// record is read from a batch's sub-response instead (``KintoEndpoint/push(_:pullingAfter:)``).
    func call(
        _ method: HTTPMethod, _ path: String, url: String? = nil, body: HTTPClientRequest.Body? = nil, contentType: String = "application/json",
        headers: [(String, String)] = [], timeout: TimeAmount? = nil, failover: Bool = true
    ) async throws(EndpointError) -> HTTPTransport.Reply {
        do throws(EndpointError) {
            return try await http.send(
                method, path, url: url, body: body, contentType: contentType, headers: headers, timeout: timeout, failover: failover)
        } catch .forbidden(_, let why) {
            throw .unauthorized("403: \(why)")
        }
    }

    /// Whether this principal may read the bucket: a 403 on a write is then a right it lacks,
    /// not a credential the server does not know.
    func mayReadBucket() async throws(EndpointError) -> Bool {
        do throws(EndpointError) {
            return try await call(.GET, bucketPath).ok
        } catch .unauthorized {
            return false
        }
    }

    func bucketWasMissing() async throws(EndpointError) -> Bool {
        forgetPrepared()
        let created = (try? await create(bucketPath)) ?? false
        if created {
            setBucketReady()
            markLost()
        }
        return created
    }

    /// Makes `path` unless it exists; true when it was made.
    @discardableResult
    private func create(_ path: String) async throws(EndpointError) -> Bool {
        let reply: HTTPTransport.Reply
        do throws(EndpointError) {
            reply = try await http.send(.PUT, path, body: .bytes(ByteBuffer(string: #"{"data":{}}"#)), headers: [("If-None-Match", "*")])
        } catch .forbidden(_, let why) {
            // A principal that may read but not make it: there it is, when it can be read.
            if try await call(.GET, path).ok { return false }
            throw .unauthorized("403: \(why)")
        }
        guard reply.ok || reply.status == 412 else { throw Self.refusal(reply) }
        return reply.status == 201
    }
}

/// Where a Kinto folder is in each collection: the `last_modified` of the newest record seen.
struct KintoCursor {
    var since: [String: Int64] = [:]

    init(_ cursor: SyncCursor?) {
        guard let cursor, case .object(let o)? = try? JSONParser.parse(cursor.text) else { return }
        for (collection, value) in o.members {
            if case .number(let text) = value, let t = Int64(text) { since[collection] = t }
        }
    }

    var cursor: SyncCursor {
        let members = since.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.number(String($0.value))) }
        return SyncCursor(JSONWriter.string(.object(JSONObject(members))))
    }
}
