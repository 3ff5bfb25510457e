/// The limits the agent and the reference endpoint agree on, so that nothing one side accepts is
/// refused or choked on by the other (docs/PROTOCOL.md lists them with their reasons).
///
/// Before they were shared, a document 510 deep was stored by `PUT` and then, wrapped in a sync
/// reply, went over the agent's parser limit: a fresh agent could pull nothing, ever; five 15 MiB
/// documents made one pull page larger than the agent's reply cap.
public enum ProtocolLimits {
    /// Nesting levels a document may have, in containers (the document object itself is level 1). Well inside the
    /// parser's own limit (`JSONParser.maxDepth`), so a reply that wraps documents in a few levels
    /// of its own always parses.
    public static let maxDocumentDepth = 256

    /// Largest document, bytes: a file on disk, a body on the wire, a stored body (stamps aside).
    public static let maxDocumentBytes = 16 << 20

    /// Room the server's own fields (`rev`, `updated_at`, `deleted_at`) and a request's envelope
    /// may add to a document at its limit.
    public static let envelopeSlack = 4096

    /// Largest `/api/sync` request body the server reads; refused with 413 before its body is read
    /// when `Content-Length` says more.
    public static let maxBatchRequestBytes = 64 << 20

    /// What the agent puts in one batch call: documents are added while the call stays under this
    /// (a single larger document goes alone), so four calls in flight hold at most ~32 MiB.
    public static let agentBatchBytes = 8 << 20

    /// The changes (and echoed documents and conflicts) of one `/api/sync` reply stop once they
    /// pass this many bytes; `more` says there is another page. A reply is therefore at most this
    /// plus one document plus its envelope.
    public static let maxPageBytes = 32 << 20

    /// Largest reply the agent buffers: a full page and one document at its limit, with room.
    public static let maxReplyBytes = 64 << 20

    /// Largest body of the single-document routes (`PUT`/`POST`/`DELETE /api/document`).
    public static var maxDocumentRequestBytes: Int { maxDocumentBytes + envelopeSlack }
}

extension JSONValue {
    /// Nesting levels in containers, as the parser counts them: 0 for a scalar, 1 for a flat
    /// object or array. Iterative, so a hostile depth cannot exhaust the stack.
    public var containerDepth: Int {
        var deepest = 0
        var stack: [(JSONValue, Int)] = [(self, 0)]
        while let (value, outer) = stack.popLast() {
            switch value {
            case .array(let items):
                deepest = max(deepest, outer + 1)
                for item in items { stack.append((item, outer + 1)) }
            case .object(let object):
                deepest = max(deepest, outer + 1)
                for member in object.members { stack.append((member.value, outer + 1)) }
            default: break
            }
        }
        return deepest
    }
}
