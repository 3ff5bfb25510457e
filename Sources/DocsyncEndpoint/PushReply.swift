import DocsyncModel

/// One change on its way to the server: the document in wire form and the revision it is based on.
public struct OutgoingChange: Sendable {
    public var id: String
    public var docType: String
    /// The wire form's JSON text (tombstones carry `deleted_at`).
    public var body: String
    /// The server's revision the change was made on; `nil` for a document the server never had.
    public var baseRevision: Int64?

    public init(id: String, docType: String, body: String, baseRevision: Int64?) {
        self.id = id
        self.docType = docType
        self.body = body
        self.baseRevision = baseRevision
    }
}

/// What became of one pushed change.
public enum PushOutcome: Sendable {
    /// Stored exactly as sent, at `revision` when the server keeps revisions.
    case storedAsSent(revision: Int64?)
    /// Stored; the document as the server now holds it (it may have added or changed fields).
    case stored(JSONObject)
    /// Not stored: the error says why and what to do.
    case failed(EndpointError)
}

/// The answer to a push.
public struct PushReply: Sendable {
    public var outcomes: [String: PushOutcome]
    /// Changes made by others, when the endpoint pulls in the same call.
    public var pulled: PullReply?

    public init(outcomes: [String: PushOutcome], pulled: PullReply? = nil) {
        self.outcomes = outcomes
        self.pulled = pulled
    }
}
