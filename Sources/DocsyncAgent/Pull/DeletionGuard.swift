import DocsyncIndex
import DocsyncModel
import Synchronization

/// Mass deletion is a decision, not an accident: when what the server says would delete more than
/// `fraction` of the folder's documents (and at least `minimum` of them) in one pull, those
/// deletions are held, said in `status`, the page and the log, and carried out only when the user
/// says so (`docsync resolve --deletions apply|restore DIR`). A purge horizon with an empty live
/// set, or a server that lists every document deleted, would otherwise send the whole folder to
/// the trash without a word.
public struct DeletionGuard: Sendable, Hashable {
    public var fraction: Double
    public var minimum: Int
    /// Deletions that keep coming count as one burst until none came for this long (see ``DeletionTally``).
    public var quiet: Duration

    public init(fraction: Double = 0.5, minimum: Int = 100, quiet: Duration = .seconds(2)) {
        self.fraction = fraction
        self.minimum = minimum
        self.quiet = quiet
    }

    /// Whether deleting `count` documents of a folder that had `live` is held.
    public func holds(count: Int, live: Int) -> Bool {
        count >= minimum && Double(count) > fraction * Double(max(live, 1))
    }
}

/// The server's deletions of one burst: deletions that keep coming (pages of one pull, or one a
/// reply from a client deleting a document every few milliseconds) count together until none
/// came for ``quiet``, against the folder's size when the burst began. Counted per pull, a client
/// deleting 200 documents 30 ms apart had every one trashed and none held.
final class DeletionTally: Sendable {
    /// A burst ends when no deletion came for this long; its deletions wait until then.
    let quiet: Duration

    private struct Burst { var base: Int; var count: Int; var last: ContinuousClock.Instant }
    private let state = Mutex<Burst?>(nil)

    init(quiet: Duration) { self.quiet = quiet }

    /// Adds `count` deletions; returns the burst's total and the folder's size at its start.
    func add(_ count: Int, live: Int, now: ContinuousClock.Instant = .now) -> (count: Int, base: Int) {
        state.withLock { burst in
            if let current = burst, now - current.last < quiet {
                burst?.count += count
                if count > 0 { burst?.last = now }
            } else {
                burst = Burst(base: live, count: count, last: now)
            }
            return (burst!.count, burst!.base)
        }
    }

    /// Whether no deletion came for ``quiet`` (or none ever did); when one is still due to end,
    /// how long until it does.
    func quietFor(now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { burst in
            guard let last = burst?.last else { return nil }
            let left = quiet - (now - last)
            return left > .zero ? left : nil
        }
    }

    /// The user decided: the next deletions count afresh.
    func reset() { state.withLock { $0 = nil } }
}

extension ServerChanges {
    /// `changes` without the deletions the guard holds (recorded in the index, so the cursor may
    /// move past them). Once deletions are held, every later one is held too, until the user decides.
    /// While a burst of deletions goes on (pages of one pull follow, or deletions keep coming one a
    /// reply), they wait in the same table, so that a mass deletion spread over pages or replies is
    /// caught before any of it goes; once the burst is quiet (``DeletionGuard/quiet``), the
    /// puller's retry loop applies them if its total stays under the rule.
    func guardDeletions(_ changes: [JSONObject], more: Bool = false) async throws -> [JSONObject] {
        guard let rule = deletionGuard else { return changes }
        let tombstones = changes.filter { $0[DocumentRules.deletedAtKey].map { !$0.isNull } ?? false }
        let ids = tombstones.compactMap { $0["id"]?.string }
        // The documents these would delete that the folder holds a file of, its size, and whether a hold is on.
        let (holding, live, held) = try await index.read { tx in
            (Set(try tx.documents(ids: ids).values.filter { $0.deletedAt == nil && $0.path != nil }.map(\.id)),
             try tx.liveCount(), try tx.meta(.deletionsHeld) != nil)
        }
        let pull = deletionTally.add(holding.count, live: live)
        let holds = held || rule.holds(count: pull.count, live: pull.base)
        guard !holding.isEmpty else { return changes }
        defer { failedWork.signal() }  // the retry loop applies what waits once the burst is quiet
        let rows = tombstones.compactMap { t -> IndexTransaction.HeldDeletion? in
            guard let id = t["id"]?.string, holding.contains(id) else { return nil }
            return IndexTransaction.HeldDeletion(id: id, change: JSONWriter.string(.object(t)), rev: ChangeApplier.revision(of: t))
        }
        let reason = "the server deleted \(pull.count) of the folder's \(pull.base) documents at once"
        try await index.write { tx in
            try tx.holdDeletions(rows)
            if holds && !held { try tx.setMeta(.deletionsHeld, reason) }
        }
        if holds && !held {
            logger.warning(
                "\(reason); those deletions are held: docsync resolve --deletions apply DIR deletes the files, --deletions restore DIR sends them back",
                metadata: ["deletions.held": "\(pull.count)"])
        }
        let heldIDs = Set(rows.map(\.id))
        return changes.filter { change in
            let deleted = change[DocumentRules.deletedAtKey].map { !$0.isNull } ?? false
            return !(deleted && (change["id"]?.string.map(heldIDs.contains) ?? false))
        }
    }

    /// The deletions a burst left waiting, applied once it is quiet (or at once with `force`, when
    /// a one-shot `sync` has pulled everything): it ended under the rule. A hold
    /// (`deletionsHeld`) keeps them for the user instead. Returns how long until a burst still
    /// going on is quiet.
    @discardableResult
    func releaseWaitingDeletions(force: Bool = false) async throws -> Duration? {
        if !force, let left = deletionTally.quietFor() { return left }
        try await releaseNow()
        return nil
    }

    private func releaseNow() async throws {
        while true {
            let batch = try await index.read { tx in try tx.meta(.deletionsHeld) == nil ? try tx.heldDeletions(limit: 500) : [] }
            if batch.isEmpty { return }
            try await apply(batch)
            try await index.write { try $0.releaseHeld(ids: batch.map(\.id)) }
        }
    }

    /// Held deletions carried out: their files go to the trash, past the guard.
    private func apply(_ held: [IndexTransaction.HeldDeletion]) async throws {
        try await write(held.compactMap { (try? JSONParser.parse($0.change))?.object }, guarded: false)
    }

    /// Carries out the user's word on held deletions (`resolve --deletions`), if there is one.
    func settleHeldDeletions() async throws {
        guard let decision = try await index.read({ try $0.meta(.deletionsDecision) }) else { return }
        try await localDeletions?.settle(decision, index: index, gate: applier.gate, writer: writer, logger: logger)
        pushWork.signal()
        var settled = 0
        while true {
            let batch = try await index.read { try $0.heldDeletions(limit: 500) }
            if batch.isEmpty { break }
            if decision == "apply" {
                try await apply(batch)
            } else {
                let now = applier.clock.now()
                try await index.write { tx in for held in batch { try tx.restoreToServer(id: held.id, rev: held.rev, queuedAt: now) } }
                pushWork.signal()
            }
            try await index.write { try $0.releaseHeld(ids: batch.map(\.id)) }
            settled += batch.count
        }
        try await index.write { tx in
            try tx.setMeta(.deletionsDecision, nil)
            try tx.setMeta(.deletionsHeld, nil)
        }
        deletionTally.reset()
        logger.notice(decision == "apply" ? "held deletions applied" : "held deletions refused; the documents go back to the server", metadata: ["deletions.settled": "\(settled)"])
    }
}
