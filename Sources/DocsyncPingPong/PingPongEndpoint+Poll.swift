import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel
import Synchronization

/// Pulling from a plain PingPong endpoint, which has no change feed: every docType the folder
/// holds or selects is listed (`GET /api/document/type/:docType`) each poll, and the documents
/// that changed since the last poll the engine took are returned.
///
/// "Changed" is per document: its `updated_at` and revision (or, on a server that keeps neither,
/// its content) differ from what was passed on before. Not a high-water mark of `updated_at`: the
/// stamps are the writers', so an edit made offline an hour ago, or one stamped a moment before
/// another that arrived first, reaches the server after later stamps and would be skipped for
/// good. What was passed on is committed only when the engine asks for the next poll with the
/// cursor of this one (it applied the changes); it lives in memory, so the first poll after a
/// start passes on everything and the engine skips what it has.
///
/// A listing has no pages, but what is passed on has: a listing is read one document at a time
/// (``PollListing``), and its changes go to the engine in pages (`more`), each parsed again from
/// the listing's text as it goes. Held whole, the first poll of 100,000 documents was every one
/// of them parsed at once.
///
/// What cannot be seen this way: a document of a type the folder neither holds nor selects (there
/// is no route listing the types); a deletion on a server that drops the document instead of
/// keeping it with `deleted_at`.
extension PingPongEndpoint {
    /// Per docType, per document id: the mark (its `updated_at`, or its content's hash) last
    /// passed on; the page the engine has not come back from yet; the rest of its poll.
    struct PollMemory {
        var committed: [String: [String: String]] = [:]
        var offered: OfferedPage?
        var rest: PollRest?
        var generation = 0
    }

    /// What one page passed on: the marks of its documents, and the whole listing's marks of the
    /// types it finished (they replace what was committed, so a document gone from a listing is
    /// forgotten).
    struct OfferedPage {
        var generation: Int
        var marks: [String: [String: String]] = [:]
        var finished: [String: [String: String]] = [:]
    }

    /// A poll whose changes did not fit one page: the types still to list, and the listing under way.
    struct PollRest {
        var after: Int
        var types: [String]
        var listing: PollListing?
    }

    /// Documents passed on in one page, at most (as the reference endpoint's pages), and the
    /// values they may hold (``ProtocolLimits/maxPageValues``).
    static let pollPage = 1_000

    /// One page of a poll of every type the folder holds or selects.
    func poll(after cursor: SyncCursor?) async throws(EndpointError) -> PullReply {
        let asked = cursor.flatMap { Self.generation(of: $0) }
        let (committed, resumed) = pollMemory.withLock { memory in
            if let offered = memory.offered, offered.generation == asked {
                for (type, marks) in offered.marks { memory.committed[type, default: [:]].merge(marks) { $1 } }
                for (type, seen) in offered.finished { memory.committed[type] = seen }
            }
            memory.offered = nil
            defer { memory.rest = nil }
            return (memory.committed, memory.rest?.after == asked ? memory.rest : nil)
        }
        var rest: PollRest
        if let resumed { rest = resumed } else { rest = PollRest(after: 0, types: await pollTypes(), listing: nil) }
        var page = PollPage()
        while page.hasRoom {
            if var listing = rest.listing {
                rest.listing = nil  // the only reference, so taking from it copies nothing
                try page.take(from: &listing)
                if !listing.isDone { rest.listing = listing }
                continue
            }
            guard !rest.types.isEmpty else { break }
            let type = rest.types.removeFirst()
            guard let listing = try await list(type, committed: committed[type] ?? [:]) else { continue }
            page.refused += listing.refused
            rest.listing = listing
        }
        let more = rest.listing != nil || !rest.types.isEmpty
        let generation = pollMemory.withLock { memory in
            memory.generation += 1
            memory.offered = OfferedPage(generation: memory.generation, marks: page.marks, finished: page.finished)
            if more {
                rest.after = memory.generation
                memory.rest = rest
            }
            return memory.generation
        }
        var pulled = PullReply(changes: page.documents, cursor: SyncCursor("poll:\(generation)"), more: more)
        pulled.refused = page.refused
        return pulled
    }

    /// The types a poll lists, in order.
    private func pollTypes() async -> [String] {
        var types = await folderTypes()
        types.formUnion(selection.only ?? [])
        return types.sorted().filter { selection.contains($0) && DocumentRules.docTypeProblem($0) == nil }
    }

    /// The listing of `type`, read one document at a time; `nil` when the server has no such type.
    private func list(_ type: String, committed: [String: String]) async throws(EndpointError) -> PollListing? {
        let reply = try await http.send(.GET, "/api/document/type/\(type.addingPercentEncodingForPathSegment())", parsed: false)
        if reply.status == 404 { return nil }
        guard reply.ok else { throw Self.refusal(reply) }
        return try PollListing(type: type, bytes: reply.bytes, committed: committed)
    }

    /// What tells one version of a listed document from another: its `updated_at` and revision,
    /// or where the server keeps neither, its content.
    static func mark(_ document: JSONObject) -> String {
        let stamp = document[DocumentRules.updatedAtKey]?.string
        let rev = document[DocumentRules.revKey].map { JSONWriter.string($0) }
        if stamp == nil && rev == nil { return ContentHash.sha256Hex(JSONWriter.bytes(.object(document))) }
        return "\(stamp ?? "")|\(rev ?? "")"
    }

    /// The poll a cursor came from, if it is one of this process's polls.
    static func generation(of cursor: SyncCursor) -> Int? {
        cursor.text.hasPrefix("poll:") ? Int(cursor.text.dropFirst(5)) : nil
    }
}
