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

    /// Values a document may hold: every object, array, string, number, `true`, `false` and `null`
    /// in it, itself included. Bytes alone do not bound what a document costs whoever parses it: a
    /// parsed value takes tens of bytes of memory where its text may take two (`[]`), so a
    /// document within 16 MiB took hundreds of MiB. At this limit it takes about 70 MiB parsed,
    /// and a record needs far fewer (a 16 MiB document at the limit averages 16 bytes a value).
    public static let maxDocumentValues = 1 << 20

    /// Values the fields of the agent and the server (`id`, `docType`, `rev`, the stamps) and a
    /// reply's entry around a document (a conflict's) may add to a document at its limit.
    public static let envelopeValues = 64

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

    /// The changes of one `/api/sync` reply also stop once they may hold this many values (counted
    /// from above: ``JSONText/valueBound(_:)``), so a page of value-dense documents stays small.
    public static let maxPageValues = 1 << 20

    /// Most values the agent keeps from one reply (a document left out alone gives its values
    /// back): a full page, the document that crosses it, and room for the envelope and the
    /// acknowledgements of a batch. About 150 MiB parsed; a reply with more is refused whole.
    public static let maxReplyValues = maxPageValues + maxDocumentValues + (1 << 16)

    /// Largest reply the agent buffers: a full page and one document at its limit, with room.
    public static let maxReplyBytes = 64 << 20

    /// Most values a document may hold as sent or stored (a file's and the fields added to it).
    public static var maxDocumentRequestValues: Int { maxDocumentValues + envelopeValues }

    /// Largest body of the single-document routes (`PUT`/`POST`/`DELETE /api/document`).
    public static var maxDocumentRequestBytes: Int { maxDocumentBytes + envelopeSlack }
}

extension JSONValue {
    /// What a document is held to by the protocol's limits, as the parser counts it, in one walk:
    /// its nesting in containers (0 for a scalar, 1 for a flat object or array) and its values,
    /// itself included (``ProtocolLimits/maxDocumentDepth``, ``ProtocolLimits/maxDocumentValues``).
    /// Iterative, so a hostile depth cannot exhaust the stack.
    public var shape: (depth: Int, values: Int) {
        var (deepest, values) = (0, 0)
        var stack: [(JSONValue, Int)] = [(self, 0)]
        while let (value, outer) = stack.popLast() {
            values += 1
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
        return (deepest, values)
    }

    /// Nesting levels in containers (see ``shape``).
    public var containerDepth: Int { shape.depth }

    /// Values in it, itself included (see ``shape``).
    public var valueCount: Int { shape.values }
}
