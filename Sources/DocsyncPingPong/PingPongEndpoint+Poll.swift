import DocsyncEndpoint
import DocsyncHTTP
import DocsyncModel

/// Pulling from a plain PingPong endpoint, which has no change feed: every docType the folder
/// holds or selects is listed (`GET /api/document/type/:docType`) each poll, and the documents
/// stamped at or after the latest `updated_at` seen for that type are returned (a server that
/// stamps nothing has every document returned; the engine passes over what it already has).
///
/// What cannot be seen this way: a document of a type the folder neither holds nor selects (there
/// is no route listing the types); a deletion on a server that drops the document instead of
/// keeping it with `deleted_at`; a change whose `updated_at` goes backwards.
extension PingPongEndpoint {
    /// The cursor of the poll: per docType, the latest `updated_at` seen (Unix ms), as JSON.
    struct PollCursor {
        var marks: [String: Int64] = [:]

        init(_ cursor: SyncCursor?) {
            guard let text = cursor?.text, text.hasPrefix("{"), let object = try? JSONParser.parse(text).object else { return }
            for (type, value) in object.members { if case .number(let n) = value, let ms = Int64(n) { marks[type] = ms } }
        }

        var cursor: SyncCursor {
            SyncCursor(JSONWriter.string(.object(JSONObject(marks.sorted { $0.key < $1.key }.map { (key: $0.key, value: .number(String($0.value))) }))))
        }
    }

    /// One poll of every type the folder holds or selects.
    func poll(after cursor: SyncCursor?) async throws(EndpointError) -> PullReply {
        var position = PollCursor(cursor)
        var types = await folderTypes()
        types.formUnion(selection.only ?? [])
        var changes: [JSONObject] = []
        for type in types.sorted() where selection.contains(type) && DocumentRules.docTypeProblem(type) == nil {
            let reply = try await http.send(.GET, "/api/document/type/\(type.addingPercentEncodingForPathSegment())")
            if reply.status == 404 { continue }
            guard case .array(let listed)? = try Self.data(reply) else { throw .badReply("no list under \"data\" for docType \(type)") }
            let since = position.marks[type]
            for case .object(var document) in listed {
                let stamp = document[DocumentRules.updatedAtKey]?.string.flatMap { Timestamp(rfc3339: $0)?.unixMilliseconds }
                // Two writes in one millisecond: the latest one seen is listed again, never skipped.
                if let since, let stamp, stamp < since { continue }
                if document["docType"] == nil { document["docType"] = .string(type) }
                changes.append(document)
                if let stamp { position.marks[type] = max(position.marks[type] ?? stamp, stamp) }
            }
        }
        return PullReply(changes: changes, cursor: position.cursor)
    }
}
