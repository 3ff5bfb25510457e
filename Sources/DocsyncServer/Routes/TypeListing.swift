import DocsyncStore
import DocsyncModel
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /api/document/type/{docType}`: the documents of one docType, ordered by id, tombstones
/// unless `?deleted=false`.
///
/// The plain form, one `{"data": [ … ]}` of them all, is streamed: the store is read a page at a
/// time and each page written out before the next is read, so a type of a million documents
/// costs the server one page of memory. With `?limit=N` (1 … 10,000), one page:
/// `{"data": [ … ], "next": "<id>"}`, the next page asked with `&after=<id>`; `next` is `null`
/// after the last. Either way a document written while the listing runs appears at most once,
/// in its version at the time its page was read.
struct TypeListing: Sendable {
    let store: any DocumentStore
    let docType: String
    let includeDeleted: Bool
    let limit: Int?
    let after: String
    let access: Access

    /// Documents read from the store at once while streaming.
    static let streamPage = 1_000
    static let maxLimit = 10_000

    init(store: any DocumentStore, request: Request, docType: String, access: Access) throws {
        let query = request.uri.queryParameters
        self.store = store
        self.docType = docType
        self.access = access
        includeDeleted = query.get("deleted") != "false"
        after = query.get("after").map { String($0) } ?? ""
        if let text = query.get("limit").map({ String($0) }) {
            guard let n = Int(text), (1...Self.maxLimit).contains(n) else {
                throw StoreError(.invalid, "limit must be a whole number from 1 to \(Self.maxLimit)")
            }
            limit = n
        } else {
            limit = nil
        }
    }

    func response() async throws -> Response {
        guard let limit else { return try await streamed() }
        let page = try await store.list(docType: docType, includeDeleted: includeDeleted, after: after, limit: limit, access: access)
        var buffer = ByteBuffer(string: "{\"data\":[")
        Self.append(page, to: &buffer, first: true)
        buffer.writeString("],\"next\":")
        if page.count == limit, let last = page.last {
            buffer.writeBytes(JSONWriter.bytes(.string(last.id)))
        } else {
            buffer.writeString("null")
        }
        buffer.writeString("}")
        return ReferenceServer.response(.ok, buffer)
    }

    /// Every document in one array, a page at a time. The first page is read before the reply
    /// starts, so a store that fails at once still gets an error status.
    private func streamed() async throws -> Response {
        let first = try await store.list(docType: docType, includeDeleted: includeDeleted, after: after, limit: Self.streamPage, access: access)
        let listing = self
        let body = ResponseBody { writer in
            var page = first
            var buffer = ByteBuffer(string: "{\"data\":[")
            var isFirst = true
            while true {
                Self.append(page, to: &buffer, first: isFirst)
                isFirst = isFirst && page.isEmpty
                try await writer.write(buffer)
                buffer.clear()
                guard page.count == Self.streamPage, let last = page.last else { break }
                // Every page read under the token's rights, as the first (not only checked once).
                page = try await listing.store.list(
                    docType: listing.docType, includeDeleted: listing.includeDeleted, after: last.id, limit: Self.streamPage, access: listing.access)
            }
            buffer.writeString("]}")
            try await writer.write(buffer)
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: body)
    }

    /// The stored texts as they are: no parse and re-serialise per document.
    private static func append(_ page: [(id: String, body: String)], to buffer: inout ByteBuffer, first: Bool) {
        for (i, document) in page.enumerated() {
            if i > 0 || !first { buffer.writeString(",") }
            buffer.writeString(document.body)
        }
    }
}
