import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the index's write-ahead log back into the database file on a connection and thread of
/// its own, so the writer never waits for it.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: during an
/// import that commit copied ~80 MB (a fifth of a second of CPU, and an fsync) while every other
/// write queued behind it, and the pusher's acknowledgements with them. Here the commit only
/// signals; a passive checkpoint (which never blocks the writer nor waits for readers) runs beside
/// it. Should the log still grow past `hardLimit` — a checkpoint that cannot keep up with a
/// long import — the committing connection checkpoints itself, as SQLite would.
final class WALCheckpointer: Sendable {
    /// Log size, in pages, at which a background checkpoint starts (32 MiB of 8 KiB pages).
    static let softLimit: Int32 = 4_000
    /// Log size at which the writer checkpoints itself (256 MiB).
    static let hardLimit: Int32 = 32_000

    private let path: String
    private let queue = DispatchQueue(label: "docsync.index.checkpoint")
    private let running = Atomic<Bool>(false)
    /// Opened on the first checkpoint, after the pool has put the file in WAL mode.
    private let ownConnection = Mutex<DatabaseQueue?>(nil)

    init(path: String) {
        self.path = path
    }

    /// Replaces the connection's automatic checkpoint with this one (a connection that never
    /// writes never calls it).
    func install(on db: Database) {
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, _, pages in
                Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue().committed(pages: pages, connection: connection)
                return SQLITE_OK
            },
            Unmanaged.passUnretained(self).toOpaque())
    }

    /// Called by SQLite after each commit, write lock released, with the log's size in pages.
    private func committed(pages: Int32, connection: OpaquePointer?) {
        if pages >= Self.hardLimit {
            sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            return
        }
        guard pages >= Self.softLimit, !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            defer { running.store(false, ordering: .releasing) }
            // A failed checkpoint (the file is busy, or gone with its folder) is retried at a later commit.
            _ = try? ownConnection.withLock { queue in
                if queue == nil { queue = try DatabaseQueue(path: path) }
                return queue!
            }.writeWithoutTransaction { try $0.checkpoint(.passive) }
        }
    }
}
