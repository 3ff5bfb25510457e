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
/// What cannot be seen this way: a document of a type the folder neither holds nor selects (there
/// is no route listing the types); a deletion on a server that drops the document instead of
/// keeping it with `deleted_at`.
extension PingPongEndpoint {
    /// Per docType, per document id: the mark (its `updated_at`, or its content's hash) last
    /// passed on; and the marks of the poll whose cursor the engine has not come back with yet.
    struct PollMemory {
        var committed: [String: [String: String]] = [:]
        var offered: (generation: Int, marks: [String: [String: String]])?
        var generation = 0
    }

    /// One poll of every type the folder holds or selects.
    func poll(after cursor: SyncCursor?) async throws(EndpointError) -> PullReply {
        let asked = cursor.flatMap { Self.generation(of: $0) }
        let committed = pollMemory.withLock { memory in
            if let offered = memory.offered, offered.generation == asked {
                memory.committed.merge(offered.marks) { $1 }
            }
            memory.offered = nil
            return memory.committed
        }
        var types = await folderTypes()
        types.formUnion(selection.only ?? [])
        var changes: [JSONObject] = []
        var refused: [IsolatedElement] = []
        var marks: [String: [String: String]] = [:]
        for type in types.sorted() where selection.contains(type) && DocumentRules.docTypeProblem(type) == nil {
            let reply = try await http.send(.GET, "/api/document/type/\(type.addingPercentEncodingForPathSegment())")
            if reply.status == 404 { continue }
            guard case .array(let listed)? = try Self.data(reply) else { throw .badReply("no list under \"data\" for docType \(type)") }
            refused += reply.isolated
            var seen: [String: String] = [:]
            for case .object(var document) in listed {
                guard let id = document["id"]?.string else { continue }
                let mark = Self.mark(document)
                seen[id] = mark
                if committed[type]?[id] == mark { continue }
                if document["docType"] == nil { document["docType"] = .string(type) }
                changes.append(document)
            }
            marks[type] = seen
        }
        let generation = pollMemory.withLock { memory in
            memory.generation += 1
            memory.offered = (memory.generation, marks)
            return memory.generation
        }
        var pulled = PullReply(changes: changes, cursor: SyncCursor("poll:\(generation)"))
        pulled.refused = refused
        return pulled
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
