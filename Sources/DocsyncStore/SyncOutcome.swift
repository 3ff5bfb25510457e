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
    /// The latest change number when the reply was made, the request's writes included: what
    /// the long polls held meanwhile wait to pass. (`cursor` is short of it while `more`: a
    /// writer far behind, announcing its cursor, left every poll held until its deadline.)
    public var latest: Int64 = 0
    /// The latest change number among the tombstones purged so far (0: none): a client whose
    /// cursor is below it (and not 0) may have missed deletions and must reconcile in full.
    public var horizon: Int64 = 0
    /// Tombstones deleted before this Unix ms time are purged (0: none): a client may forget its own.
    public var purgedBefore: Int64 = 0

    public init() {}
}
