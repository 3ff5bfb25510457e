import GRDB
import Synchronization

/// Leaves nothing old in the write-ahead log once writes pause: a second after the last write, the
/// log is copied into the database file and truncated to nothing. With `secure_delete` (freed
/// content overwritten with zeros), a document overwritten — a folder's documents sent again
/// sealed when it is encrypted (docs/ENCRYPTION.md) — leaves no copy of its old body in the
/// store's files. Under a steady stream of writes the log keeps its recent pages until a pause.
final class WALScrubber: Sendable {
    static let quiet: Duration = .seconds(1)

    private let pool: DatabasePool
    private let pending = Mutex<Task<Void, Never>?>(nil)

    init(pool: DatabasePool) { self.pool = pool }

    /// A write committed: the scrub waits for the next quiet second.
    func wrote() {
        let task = Task { [pool] in
            guard (try? await Task.sleep(for: Self.quiet)) != nil else { return }
            // A reader holding an old snapshot makes the truncation fail: the next write retries.
            _ = try? await pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        }
        pending.withLock { old in
            old?.cancel()
            old = task
        }
    }

    /// No scrub runs after this (the store closes).
    func stop() { pending.withLock { $0?.cancel() } }
}
