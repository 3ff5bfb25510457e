import DocsyncModel
import Foundation
import Synchronization

/// A document store in memory: the store seam's contract (``DocumentStore``) without storage, for
/// what builds on a store and wants no files (tests); it passes the same conformance suite as the
/// SQLite and PostgreSQL stores. Nothing outlives the process.
public final class MemoryDocumentStore: DocumentStore, Sendable {
    private struct Row {
        var docType: String
        var body: String
        var rev: Int64
        var seq: Int64
        var deletedAt: Int64?
        /// The client whose write this is: not echoed back to it.
        var writer: String?
    }

    private struct State {
        var rows: [String: Row] = [:]
        /// The id whose latest write took each change number.
        var ids: [Int64: String] = [:]
        /// Never handed out twice, purged changes included.
        var latest: Int64 = 0
        var horizon: Int64 = 0
        var purgedBefore: Int64 = 0
        var blobs: [String: StoredBlob] = [:]
    }

    public let storeID = UUID().uuidString.lowercased()
    private let maxDocumentBytes: Int
    private let state = Mutex(State())

    public init(maxDocumentBytes: Int = ProtocolLimits.maxDocumentBytes) {
        self.maxDocumentBytes = maxDocumentBytes
    }

    public func put(_ object: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String?, access: Access) async throws -> JSONObject {
        try state.withLock { s in
            try Self.put(object, now: now, ifMatch: ifMatch, mustCreate: mustCreate, client: client, max: maxDocumentBytes, access: access, &s)
        }
    }

    private static func put(
        _ input: JSONObject, now: Int64, ifMatch: Int64?, mustCreate: Bool, client: String?, max: Int, access: Access = .everything, _ s: inout State
    ) throws -> JSONObject {
        let id = input["id"]?.string ?? ""
        let existing = s.rows[id]
        let version: StoreRules.Version
        do {
            version = try StoreRules.write(
                input, existing: existing.map { StoreRules.Existing(rev: $0.rev, docType: $0.docType) }, ifMatch: ifMatch, mustCreate: mustCreate,
                now: now, maxBytes: max, access: access)
        } catch {
            guard error.kind == .conflict else { throw error }
            throw error.holding(existing.flatMap { try? JSONParser.parse($0.body) }, writtenBy: existing?.writer, asking: client, access: access)
        }
        s.latest += 1
        if let existing { s.ids[existing.seq] = nil }
        s.rows[id] = Row(docType: version.docType, body: version.body, rev: version.rev, seq: s.latest, deletedAt: version.deletedAt, writer: client)
        s.ids[s.latest] = id
        return version.object
    }

    public func sync(
        since: Int64, documents: [JSONValue], now: Int64, limit: Int, maxBytes: Int, client: String?, selection: TypeSelection, measure: Bool,
        access: Access
    ) async throws -> SyncOutcome {
        let selection = access.readable(selection)
        return try state.withLock { s in
            var outcome = SyncOutcome()
            var sent = Set<String>()
            for value in documents {
                let id = value.object?["id"]?.string
                do {
                    let (object, base) = try StoreRules.batchDocument(value, measure: measure)
                    sent.insert(id ?? "")
                    outcome.stored.append(try Self.put(
                        object, now: now, ifMatch: base, mustCreate: false, client: client, max: maxDocumentBytes, access: access, &s))
                } catch let error as StoreError {
                    outcome.errors.append(StoreRules.batchError(id: id, error))
                }
            }
            var page = ChangePage(since: since, limit: limit, maxBytes: maxBytes, sent: sent)
            page.admit(currents: &outcome.errors)
            for seq in s.ids.keys.filter({ $0 > since }).sorted() {
                guard let id = s.ids[seq], let row = s.rows[id] else { continue }
                if client != nil && row.writer == client { continue }
                if !selection.contains(row.docType) { continue }
                if !page.offer(id: id, body: row.body, seq: seq) { break }
            }
            outcome.changes = page.changes
            outcome.more = page.more
            outcome.cursor = page.cursor(latest: s.latest)
            outcome.latest = s.latest
            (outcome.horizon, outcome.purgedBefore) = (s.horizon, s.purgedBefore)
            return outcome
        }
    }

    public func delete(id: String, docType: String, now: Int64, author: String?, access: Access) async throws -> JSONObject {
        try state.withLock { s in
            guard let row = s.rows[id] else { throw StoreError(.notFound, "no document with id \(id)") }
            guard let object = try StoreRules.tombstone(
                of: row.body, storedType: row.docType, id: id, docType: docType, now: now, author: author, access: access) else {
                guard case .object(let tombstone) = try JSONParser.parse(row.body) else { throw StoreError(.failed, "corrupt stored document") }
                return tombstone  // already a tombstone
            }
            return try Self.put(object, now: now, ifMatch: nil, mustCreate: false, client: nil, max: maxDocumentBytes, &s)
        }
    }

    public func attach(
        blob: StoredBlob, to id: String, docType: String, property: String, url: String, now: Int64, client: String?, author: String?, access: Access
    ) async throws -> JSONObject {
        try state.withLock { s in
            guard let row = s.rows[id] else { throw StoreError(.notFound, "no document with id \(id) to attach the file to") }
            let object = try StoreRules.attaching(
                url, as: property, to: row.body, storedType: row.docType, deleted: row.deletedAt != nil, id: id, docType: docType, author: author,
                access: access)
            if s.blobs[blob.sha256] == nil { s.blobs[blob.sha256] = blob }
            s.blobs[blob.sha256]?.docTypes.insert(row.docType)
            return try Self.put(object, now: now, ifMatch: nil, mustCreate: false, client: client, max: maxDocumentBytes, &s)
        }
    }

    public func get(id: String) async throws -> JSONValue? {
        try state.withLock { s in try s.rows[id].map { try JSONParser.parse($0.body) } }
    }

    public func list(docType: String, includeDeleted: Bool, after: String, limit: Int) async throws -> [(id: String, body: String)] {
        state.withLock { s in
            s.rows.filter { $0.key > after && $0.value.docType == docType && (includeDeleted || $0.value.deletedAt == nil) }
                .sorted { $0.key < $1.key }.prefix(limit).map { ($0.key, $0.value.body) }
        }
    }

    public func blob(sha256: String) async throws -> StoredBlob? { state.withLock { $0.blobs[sha256] } }
    public func blobCount() async throws -> Int { state.withLock { $0.blobs.count } }
    public func latestSeq() async throws -> Int64 { state.withLock { $0.latest } }

    public func stats() async throws -> StoreStats {
        state.withLock { s in
            StoreStats(documents: s.rows.count, tombstones: s.rows.values.filter { $0.deletedAt != nil }.count, seq: s.latest)
        }
    }

    public func purgeTombstones(deletedBefore cutoff: Int64) async throws -> Int {
        state.withLock { s in
            let gone = s.rows.filter { ($0.value.deletedAt ?? .max) < cutoff }
            for (id, row) in gone {
                s.rows[id] = nil
                s.ids[row.seq] = nil
                s.horizon = max(s.horizon, row.seq)
            }
            s.purgedBefore = max(s.purgedBefore, cutoff)
            return gone.count
        }
    }

    public func close() async {}
}
