import DocsyncModel

/// The answer to a pull.
public struct PullReply: Sendable {
    /// Documents in wire form; tombstones carry `deleted_at`. `rev` is the server's revision.
    public var changes: [JSONObject]
    /// Where the next pull starts; `nil` when this reply must not move the stored cursor.
    public var cursor: SyncCursor?
    /// More changes wait: pull again at once.
    public var more: Bool
    /// The identity of the store that answered, when the server names one (a different one
    /// means another server: everything is reconciled again).
    public var storeIdentity: String?
    /// The server's history is behind the cursor that was sent (restored from an older copy).
    public var historyBehind: Bool
    /// The server has purged tombstones newer than the cursor that was sent: deletions were
    /// missed, and the folder must be reconciled against the server's live set.
    public var missedDeletions = false
    /// The server no longer keeps tombstones deleted before this Unix ms time: the index may
    /// forget its own.
    public var tombstonesPurgedBefore: Int64?
    /// Documents the reply held that cannot be represented (a lone surrogate, a duplicate key),
    /// left out of `changes`: each is reported with its id, and the rest is applied.
    public var refused: [IsolatedElement] = []

    public init(changes: [JSONObject], cursor: SyncCursor?, more: Bool = false, storeIdentity: String? = nil, historyBehind: Bool = false) {
        self.changes = changes
        self.cursor = cursor
        self.more = more
        self.storeIdentity = storeIdentity
        self.historyBehind = historyBehind
    }
}

/// A position in the server's changes. Opaque to the engine: it is stored and handed back as is
/// (a sequence number for the reference endpoint, a watermark and the ids seen at it for sync-rails).
public struct SyncCursor: Sendable, Hashable, CustomStringConvertible {
    public var text: String
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}
