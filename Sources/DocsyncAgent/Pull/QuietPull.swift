import DocsyncEndpoint

/// What a pull that found nothing new left behind. While the index has not been written since
/// (its write count is the same), it still holds this cursor and no reconcile, and taking a reply
/// just as empty would change nothing: the next pull is sent from this cursor without reading the
/// index, and such a reply is not taken. An idle folder's polls then touch no index, which among
/// hundreds of folders stays closed (see `IdleClosingPool`).
struct QuietPull: Sendable {
    let cursor: SyncCursor?
    let store: String?
    let purgedBefore: Int64?
    /// The index's write count when `cursor` was read.
    let writes: UInt64

    /// Quiet if `reply`, to a pull sent from `cursor`, brought nothing to take.
    init?(_ reply: PullReply, sentFrom cursor: SyncCursor?, writes: UInt64) {
        self.cursor = cursor
        self.store = reply.storeIdentity
        self.purgedBefore = reply.tombstonesPurgedBefore
        self.writes = writes
        guard matches(reply) else { return nil }
    }

    /// Whether `reply` brings nothing this quiet pull's did not: no change, no refusal, no page
    /// to follow, no missed deletion, the same cursor, store and purge horizon.
    func matches(_ reply: PullReply) -> Bool {
        reply.changes.isEmpty && reply.refused.isEmpty && !reply.more && !reply.missedDeletions && !reply.historyBehind
            && (reply.cursor == nil || reply.cursor == cursor) && reply.storeIdentity == store
            && reply.tombstonesPurgedBefore == purgedBefore
    }
}
