/// A set of paths that changed, handed to the scanner in one piece.
public struct ChangeBatch: Sendable, Hashable {
    /// Paths (relative to the root) whose content may have changed, appeared or vanished.
    public var paths: Set<String> = []
    /// Paths that only saw a metadata change (chmod, touch): worth a look only if the file was
    /// unreadable before. Never a reason to read a file that may still be being written.
    public var attributeOnly: Set<String> = []
    /// The kernel dropped events: only a full rescan can tell what happened.
    public var overflow = false
    /// The root folder itself was moved away or deleted (`rm -rf docs && git clone … docs`): the
    /// watches follow the old folder, so nothing at the path is watched any more. The last batch.
    public var rootGone = false
    /// Folders left without a watch (the inotify limit), when that number changed: they are
    /// rescanned on a timer instead (see `DirectoryWatcher.unwatchedRescan`).
    public var unwatchedFolders: Int?

    public init(paths: Set<String> = [], attributeOnly: Set<String> = [], overflow: Bool = false) {
        self.paths = paths
        self.attributeOnly = attributeOnly
        self.overflow = overflow
    }

    public var isEmpty: Bool { paths.isEmpty && attributeOnly.isEmpty && !overflow && !rootGone && unwatchedFolders == nil }
}

/// Coalesces bursts of filesystem events into batches. A pure state machine over a caller-given
/// monotonic time in nanoseconds, so tests drive it without sleeping.
///
/// A batch is due once no event has arrived for `settle` (an editor's save is a rename, a create
/// and a close within a millisecond or two), or at the latest `maxDelay` after its first event (a
/// `git checkout` of thousands of files still flows, batch by batch).
///
/// A save needs no settle when nothing in it is left half-way: a small batch whose every path was
/// last written (`IN_CLOSE_WRITE`, or renamed into place) is due at once. A document moved away or
/// deleted, a folder's event or an overflow still wait for the quiet period: that is where a save
/// in several steps (vim's rename to a backup, then the new file) would look like a deletion.
public struct EventAggregator: Sendable {
    public let settle: Int64
    public let maxDelay: Int64
    /// The most paths a batch may hold and still be handed on without waiting for the quiet
    /// period: a few saves at once, not a checkout (which keeps coalescing up to `maxDelay`).
    public static let quickPaths = 16
    private var pending = ChangeBatch()
    /// Pending paths whose last event may be a step of something unfinished.
    private var unsettled: Set<String> = []
    private var firstAt: Int64?
    private var lastAt: Int64 = 0

    public init(settleNanoseconds: Int64, maxDelayNanoseconds: Int64) {
        self.settle = settleNanoseconds
        self.maxDelay = maxDelayNanoseconds
    }

    /// A path changed. `finished`: its last event leaves nothing half-way (a file closed after
    /// writing or renamed into place, a file that is not a document gone); otherwise the batch
    /// waits for the quiet period while the path is pending.
    public mutating func add(_ path: String, attributeOnly: Bool = false, finished: Bool = false, at now: Int64) {
        if attributeOnly {
            if !pending.paths.contains(path) { pending.attributeOnly.insert(path) }
        } else {
            pending.paths.insert(path)
            pending.attributeOnly.remove(path)
            if finished { unsettled.remove(path) } else { unsettled.insert(path) }
        }
        touch(now)
    }

    public mutating func addOverflow(at now: Int64) {
        pending.overflow = true
        touch(now)
    }

    private mutating func touch(_ now: Int64) {
        if firstAt == nil { firstAt = now }
        lastAt = now
    }

    /// Whether the pending batch is a few finished saves, due without a quiet period.
    private var isQuick: Bool {
        unsettled.isEmpty && !pending.overflow && !pending.paths.isEmpty && pending.paths.count <= Self.quickPaths
    }

    /// When the pending batch becomes due, or `nil` when nothing is pending (sleep indefinitely).
    public var deadline: Int64? {
        guard let firstAt else { return nil }
        if isQuick { return lastAt }
        return min(lastAt + settle, firstAt + maxDelay)
    }

    /// The pending batch if it is due at `now`, emptying the aggregator.
    public mutating func due(now: Int64) -> ChangeBatch? {
        guard let deadline, now >= deadline else { return nil }
        defer {
            pending = ChangeBatch()
            unsettled = []
            firstAt = nil
        }
        return pending
    }
}
