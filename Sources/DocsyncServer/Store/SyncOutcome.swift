import DocsyncModel

/// The outcome of one batch call.
public struct SyncOutcome: Sendable {
    /// Stored versions of the documents the request sent.
    public var stored: [JSONObject] = []
    public var errors: [JSONObject] = []
    /// Documents changed since the cursor that the request did not send itself (stored texts).
    public var changes: [String] = []
    public var cursor: Int64 = 0
    /// More changes wait beyond `cursor` (ask again).
    public var more = false

    public init() {}
}
