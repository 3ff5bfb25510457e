import Dispatch
import GRDB
import Synchronization

/// Bounds how many lean indexes of a process hold a connection at once: opening one more than
/// `capacity` closes those unused for longest (each opens again at its next use).
///
/// The 5 s sweep closes the indexes of idle folders, but while hundreds of folders are busy at
/// once (the first sync, a look that each makes in turn) every one of them stayed open: a
/// connection with its schema, statements and page cache is about half a MiB, and 500 of them were
/// most of a first sync's peak. Ordered by their last use, the folders still at work keep theirs.
final class OpenIndexes: Sendable {
    private struct Member {
        let pool: IdleClosingPool
        var lastUse: UInt64
    }

    private struct State {
        var clock: UInt64 = 0
        var open: [ObjectIdentifier: Member] = [:]
    }

    let capacity: Int
    /// How many closes may wait on the closing thread; an opener past them closes what it took
    /// itself. The connections held open are then at most `capacity + closesBehind` and one per
    /// use under way, however far the closing thread falls behind.
    let closesBehind: Int
    private let state = Mutex(State())
    private let waitingCloses = Atomic(0)
    /// Where closes wait: one at a time, since each checkpoints the log and waits for the disk.
    let closing = DispatchQueue(label: "docsync.index.close-for-room")

    init(capacity: Int, closesBehind: Int = 8) {
        self.capacity = capacity
        self.closesBehind = closesBehind
    }

    /// Closes a pool taken from its index: on the closing thread, without waiting, while only
    /// `closesBehind` closes wait there; past that, here, before the opening that took it goes on.
    /// Unbounded, 500 folders starting at once in CI left 411 descriptors on index files while
    /// their closes waited their turn behind each other's checkpoints; closed here always, the
    /// same first sync took about a tenth longer.
    func close(_ pool: any DatabaseWriter) {
        guard waitingCloses.wrappingAdd(1, ordering: .relaxed).newValue <= closesBehind else {
            waitingCloses.wrappingSubtract(1, ordering: .relaxed)
            try? pool.close()
            return
        }
        closing.async { [self] in
            try? pool.close()
            waitingCloses.wrappingSubtract(1, ordering: .relaxed)
        }
    }

    /// How many indexes are counted open now.
    var count: Int { state.withLock { $0.open.count } }

    /// `pool` was just used (and opened, if `opened`): it becomes the most recent; when the open
    /// ones are more than `capacity`, the least recent unused ones are taken from their pools and
    /// returned, for the caller to close outside any lock.
    func used(_ pool: IdleClosingPool, opened: Bool) -> [any DatabaseWriter] {
        state.withLock { s in
            s.clock += 1
            let id = ObjectIdentifier(pool)
            if opened || s.open[id] != nil { s.open[id] = Member(pool: pool, lastUse: s.clock) }
            guard s.open.count > capacity else { return [] }
            var taken: [any DatabaseWriter] = []
            for member in s.open.values.sorted(by: { $0.lastUse < $1.lastUse }) where member.pool !== pool {
                guard s.open.count > capacity else { break }
                // Lock order: this set, then a pool (a pool never calls in here while holding its own).
                if let connection = member.pool.takeIfUnused() {
                    s.open[ObjectIdentifier(member.pool)] = nil
                    taken.append(connection)
                }
            }
            return taken
        }
    }

    /// `pool` closed its connection (the sweep found it idle); still counted if a use opened it
    /// again meanwhile.
    func closed(_ pool: IdleClosingPool) {
        state.withLock { s in
            if pool.ifOpen == nil { s.open[ObjectIdentifier(pool)] = nil }
        }
    }
}
