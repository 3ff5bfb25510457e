import DocsyncSQL
import GRDB

/// Pulled changes that could not be written into the folder (see migration v14): the cursor moves
/// past a change only once it is written and recorded, or recorded here; from here it is retried
/// with backoff, shown by `status`, and forgotten once a version of that document is written.
extension IndexTransaction {
    /// One change waiting to be written again.
    public struct PullFailure: Sendable, Hashable {
        public var id: String
        public var change: String
        public var reason: String
        public var attempts: Int
    }

    /// Records that `changes` (id, the change's JSON text, why) could not be written, to be tried
    /// again at `nextAttemptAt`. A change recorded for the same id before is replaced: the newer
    /// one is what the server holds.
    public func recordPullFailures(_ changes: [(id: String, change: String, reason: String)], nextAttemptAt: Int64) throws {
        guard !changes.isEmpty else { return }
        let s = try db.cachedStatement(sql: """
            INSERT INTO pull_failure (id, change, reason, attempts, next_attempt_at) VALUES (?, ?, ?, 1, ?)
            ON CONFLICT(id) DO UPDATE SET change = excluded.change, reason = excluded.reason, next_attempt_at = excluded.next_attempt_at
            """)
        for c in changes { try s.execute(arguments: [c.id, c.change, c.reason, nextAttemptAt]) }
        anyPullFailures.value = true
    }

    /// A retry of `id` failed again with `reason`: the next one at `nextAttemptAt`.
    public func pullFailedAgain(id: String, reason: String, nextAttemptAt: Int64) throws {
        try db.cachedStatement(sql: "UPDATE pull_failure SET attempts = attempts + 1, reason = ?, next_attempt_at = ? WHERE id = ?")
            .execute(arguments: [reason, nextAttemptAt, id])
    }

    /// Every failed change due before `until` waits until then: a pass that could write none of
    /// those it tried (a full disk) holds back the rest too, instead of each being tried on its own.
    public func postponePullFailures(until: Int64) throws {
        try db.cachedStatement(sql: "UPDATE pull_failure SET next_attempt_at = ? WHERE next_attempt_at < ?").execute(arguments: [until, until])
    }

    /// Up to `limit` failed changes due at `now`, oldest deadline first.
    public func duePullFailures(now: Int64, limit: Int) throws -> [PullFailure] {
        try Row.fetchAll(
            db, sql: "SELECT id, change, reason, attempts FROM pull_failure WHERE next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
            arguments: [now, limit]
        ).map { PullFailure(id: $0[0], change: $0[1], reason: $0[2], attempts: $0[3]) }
    }

    /// The earliest deadline of a failed change, if any waits.
    public func nextPullRetry() throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT MIN(next_attempt_at) FROM pull_failure")
    }

    /// Failed changes for `status`: how many, and the first `limit` (id, why, attempts).
    public func pullFailures(limit: Int) throws -> (count: Int, first: [PullFailure]) {
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pull_failure") ?? 0
        let first = try Row.fetchAll(db, sql: "SELECT id, reason, attempts FROM pull_failure ORDER BY id LIMIT ?", arguments: [limit])
            .map { PullFailure(id: $0[0], change: "", reason: $0[1], attempts: $0[2]) }
        return (count, first)
    }

    /// A version of `id` was written (or trashed): no older failure of it is tried again.
    /// Looked up once per transaction: nearly always the table is empty.
    public func clearPullFailure(id: String) throws {
        if anyPullFailures.value == nil {
            anyPullFailures.value = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM pull_failure)") ?? false
        }
        guard anyPullFailures.value == true else { return }
        try db.cachedStatement(sql: "DELETE FROM pull_failure WHERE id = ?").execute(arguments: [id])
    }

    /// Every failed change due now (deadlines from another boot or run mean nothing here).
    public func makePullFailuresDue() throws {
        try db.execute(sql: "UPDATE pull_failure SET next_attempt_at = 0")
    }
}

/// Whether the pull_failure table has rows, learnt once in a transaction (see
/// ``IndexTransaction/clearPullFailure(id:)``).
final class TransactionFlag {
    var value: Bool?
}
