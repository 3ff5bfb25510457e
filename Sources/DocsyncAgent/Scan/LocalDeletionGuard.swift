import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import Logging
import Synchronization

/// The folder's own deletions, guarded as pulled ones are (``DeletionGuard``): files deleted here
/// leave as a burst once no more deletions arrive for a pairing window (at most
/// ``longestBurst`` after the first), so an `rm -rf` under way or a folder emptied by a bad
/// script is judged whole before any of it is sent. A burst over the guard's share of the folder
/// is held (`status`, the page and the log say so) until `docsync resolve --deletions apply|restore`;
/// `restore` writes the files back where they were, which withdraws their deletions.
final class LocalDeletionGuard: Sendable {
    let rule: DeletionGuard?
    let pairingMs: Int64
    /// A burst is held back at most this long while deletions keep coming; after it, its
    /// deletions leave as they come (a steady trickle is not a burst).
    static let longestBurstMs: Int64 = 10_000

    private struct Burst { var start: Int64; var last: Int64 }
    private let burst = Mutex<Burst?>(nil)

    init(rule: DeletionGuard?, pairing: Duration) {
        self.rule = rule
        pairingMs = pairing.wholeMilliseconds
    }

    /// After a scan recorded deletions: holds them all when the burst is a mass deletion, else
    /// keeps them back while the burst goes on. Returns why they were held, when this call held them.
    @discardableResult
    func judge(index: Index, logger: Logger) async throws -> String? {
        let now = RetryPolicy.deadlineNow()
        let (rule, pairingMs) = (self.rule, self.pairingMs)
        let extend = burst.withLock { burst -> Bool in
            if let current = burst, now - current.last <= max(pairingMs, 1) * 2 {
                burst?.last = now
            } else {
                burst = Burst(start: now, last: now)
            }
            return now - (burst?.start ?? now) < Self.longestBurstMs
        }
        let held = try await index.write { tx -> String? in
            try tx.pruneLocalDeletions()
            let pending = try tx.pendingDeletionCount()
            let live = try tx.liveCount()
            if let held = try tx.meta(.localDeletionsHeld) {
                try tx.deferDeletions(notBefore: IndexTransaction.heldForDecision)
                // Deletions made while a burst waits for the user's word join it: the count said
                // is all of them (`rm` of a large folder is seen in several batches).
                if held.hasSuffix(Self.burstReasonEnd) { try tx.setMeta(.localDeletionsHeld, Self.burstReason(pending: pending, live: live)) }
                return nil
            }
            if let rule, rule.holds(count: pending, live: live + pending) {
                let reason = Self.burstReason(pending: pending, live: live)
                try tx.setMeta(.localDeletionsHeld, reason)
                try tx.deferDeletions(notBefore: IndexTransaction.heldForDecision)
                return reason
            }
            if extend && pairingMs > 0 { try tx.deferDeletions(notBefore: now + pairingMs) }
            return nil
        }
        if let held {
            logger.warning(
                "\(held); their deletions are held: docsync resolve --deletions apply DIR sends them, --deletions restore DIR writes the files back",
                metadata: ["deletions.held": "\(held)"])
        }
        return held
    }

    /// Why a burst of the folder's deletions is held: how many of its documents were deleted.
    static func burstReason(pending: Int, live: Int) -> String { "\(pending) of the folder's \(live + pending) \(burstReasonEnd)" }
    static let burstReasonEnd = "documents were deleted here at once"

    /// A scan of the whole tree (`docsync sync`) saw every deletion there is: the burst is whole
    /// and judged, so what it kept back waiting for more goes now (a mass deletion stays held).
    func burstIsWhole(index: Index) async throws {
        try await index.write { tx in
            guard try tx.meta(.localDeletionsHeld) == nil else { return }
            try tx.releaseDeferredDeletions()
        }
        burst.withLock { $0 = nil }
    }

    /// The user's word on held local deletions: `apply` sends them, `restore` writes each file
    /// back where it was (never over a file there now); the scanner then finds the document back
    /// and withdraws its unsent deletion.
    func settle(_ decision: String, index: Index, gate: PathGate, writer: FolderWriter, logger: Logger) async throws {
        guard try await index.read({ try $0.meta(.localDeletionsHeld) }) != nil else { return }
        if decision == "apply" {
            try await index.write { tx in
                try tx.releaseHeldLocalDeletions()
                try tx.setMeta(.localDeletionsHeld, nil)
            }
            logger.notice("held deletions of this folder's files are sent")
            return
        }
        var (restored, after, blocked) = (0, "", 0)
        while true {
            let page = try await index.read { [after] in try $0.heldLocalDeletions(after: after, limit: 500) }
            guard let last = page.last else { break }
            after = last.document.id
            let files = page.compactMap { held -> (file: GatedFile, bytes: [UInt8])? in
                guard let body = try? JSONParser.parse(held.document.body), let file = try? gate.file(held.path, createFolders: true) else { return nil }
                return (file, JSONWriter.fileBytes(body))
            }
            let results = try await writer.locked { FileSystem.createAll(files) }
            for result in results { if case .success(true) = result { restored += 1 } else { blocked += 1 } }
        }
        // A file that could not go back (another is at its place) keeps its deletion held and said.
        let reason = blocked == 0 ? nil : "\(blocked) deleted files could not be written back (another file is at their place); move it and resolve again"
        try await index.write { tx in try tx.setMeta(.localDeletionsHeld, reason) }
        logger.notice("held deletions of this folder refused; the files are written back", metadata: [
            "deletions.restored": "\(restored)", "deletions.not_restored": "\(blocked)",
        ])
    }
}
