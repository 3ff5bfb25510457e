import Dispatch
import GRDB
import Synchronization

/// The index's connections, which a lean index closes while its folder is idle and opens again
/// at the next use.
///
/// With hundreds of folders in one process, what an open connection keeps even with its caches
/// emptied (SQLite's parsed schema, the mapped `-shm` of the log, GRDB's queue) is most of what an
/// idle folder costs. A use holds the connections open: they are only ever closed between uses.
/// The first are a `DatabasePool` (it puts the file in WAL mode and migrates it); a lean index
/// opens one `DatabaseQueue` again, since a pool writes to the file each time it finds the log
/// empty, as it is after a close.
final class IdleClosingPool: Sendable {
    private struct State {
        var pool: (any DatabaseWriter)?
        var users = 0
    }

    private let state: Mutex<State>
    /// Opens a pool on the already migrated file (the tally's hook installed on its writer).
    private let open: @Sendable () throws -> any DatabaseWriter
    /// The bound on the open indexes of the process, for a lean index.
    private let limit: OpenIndexes?
    /// Closing checkpoints the log and waits for the file: done on a thread of its own, one pool at a time.
    private static let closing = DispatchQueue(label: "docsync.index.close")

    init(first: any DatabaseWriter, limit: OpenIndexes? = nil, open: @escaping @Sendable () throws -> any DatabaseWriter) {
        self.state = Mutex(State(pool: first))
        self.open = open
        self.limit = limit
        close(limit?.used(self, opened: true) ?? [])
    }

    /// Runs `body` on the pool, opened again first if it was closed.
    func use<T>(_ body: (any DatabaseWriter) throws -> T) throws -> T {
        defer { state.withLock { $0.users -= 1 } }
        return try body(try acquire())
    }

    func use<T: Sendable>(_ body: @Sendable (any DatabaseWriter) async throws -> T) async throws -> T {
        defer { state.withLock { $0.users -= 1 } }
        return try await body(try acquire())
    }

    /// The open pool with one more user (also when opening fails, which `use`'s defer undoes).
    private func acquire() throws -> any DatabaseWriter {
        let (pool, opened) = try state.withLock { s -> (any DatabaseWriter, Bool) in
            s.users += 1
            if let pool = s.pool { return (pool, false) }
            let pool = try open()
            s.pool = pool
            return (pool, true)
        }
        // Outside this pool's lock: the set takes the locks of the pools it closes.
        if let limit { close(limit.used(self, opened: opened)) }
        return pool
    }

    /// The pool if it is open, without opening it.
    var ifOpen: (any DatabaseWriter)? { state.withLock { $0.pool } }

    /// Takes the pool away if nothing uses it (the caller closes it); a use that begins after opens another.
    func takeIfUnused() -> (any DatabaseWriter)? {
        state.withLock { s -> (any DatabaseWriter)? in
            guard s.users == 0 else { return nil }
            defer { s.pool = nil }
            return s.pool
        }
    }

    /// Closes the pool if nothing uses it; a use that begins meanwhile opens another.
    func closeIfUnused() async {
        guard let taken = takeIfUnused() else { return }
        limit?.closed(self)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Self.closing.async {
                // A pool that cannot close (a statement still running) closes as it is freed.
                try? taken.close()
                done.resume()
            }
        }
    }

    /// Closes pools taken by ``OpenIndexes``, as it says (see ``OpenIndexes/close(_:)``).
    private func close(_ taken: [any DatabaseWriter]) {
        for pool in taken { limit?.close(pool) }
    }
}
