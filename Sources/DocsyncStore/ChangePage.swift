#if canImport(Glibc)
import Glibc
#endif
import DocsyncModel

/// One page of the change sequence, as a batch call returns it: fed the rows after `since` in
/// sequence order, it ends at `limit` documents or once its bodies pass `maxBytes` or may hold
/// `maxValues` values (at least one document a page, so a large one still moves the cursor),
/// leaving out what the call itself sent. The values bound what the agent's parse of the page
/// takes: a page of documents made of nested arrays is small in bytes and large in memory.
public struct ChangePage: Sendable {
    let since: Int64
    public let limit: Int
    let maxBytes: Int
    let maxValues: Int
    let sent: Set<String>
    private var taken = 0
    private var bytes = 0
    private var values = 0
    private var last: Int64
    public private(set) var changes: [String] = []
    public private(set) var more = false

    public init(since: Int64, limit: Int, maxBytes: Int, maxValues: Int = ProtocolLimits.maxPageValues, sent: Set<String>) {
        self.since = since
        self.limit = limit
        self.maxBytes = maxBytes
        self.maxValues = maxValues
        self.sent = sent
        self.last = since
    }

    /// Conflicts' current versions take the page's room first, each only while it fits whole; one
    /// that does not is left out of its entry (no `current`), and the client fetches it (the agent
    /// does). A batch of conflicts with large current versions could otherwise make a reply of
    /// any size, past what the agent takes: its batch would be refused, and sent again, for ever.
    public mutating func admit(currents errors: inout [JSONObject]) {
        for i in errors.indices {
            guard let current = errors[i]["current"] else { continue }
            let (size, count) = (JSONWriter.bytes(current).count, current.valueCount)
            if bytes + size <= maxBytes && values + count <= maxValues {
                (bytes, values) = (bytes + size, values + count)
            } else {
                errors[i]["current"] = nil
            }
        }
    }

    /// Takes the next row; `false` once the page is full (the row is not taken).
    public mutating func offer(id: String, body: String, seq: Int64) -> Bool {
        if taken == limit || (taken > 0 && (bytes >= maxBytes || values >= maxValues)) {
            more = true
            return false
        }
        taken += 1
        last = seq
        if !sent.contains(id) {
            bytes += body.utf8.count
            // The bound from the size is free and far from the page's limit on most pages; the
            // text is read only once the page comes near it.
            let bound = JSONText.valueBound(bytes: body.utf8.count)
            values += values + bound < maxValues ? bound : JSONText.valueBound(body)
            changes.append(body)
        }
        return true
    }

    /// The cursor to return: the last row taken when more wait, else the latest change. A `since`
    /// past the latest change comes from a client that synced with another store, or with this one
    /// before it was restored from an older copy: the lower cursor it gets back tells it to
    /// reconcile in full.
    public func cursor(latest: Int64) -> Int64 { more ? last : latest }
}

/// The real clock's Unix nanoseconds: when a write was stored, for measuring sync latency.
public func storedAtNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
