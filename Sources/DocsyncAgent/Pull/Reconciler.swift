import DocsyncClock
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// A folder that was away longer than the server keeps tombstones has missed deletions that no
/// pull will bring. It is reconciled against the server's live set instead: everything is pulled
/// from the start, and the documents the server held (it acknowledged them) and no longer lists
/// were deleted there meanwhile: they go to the trash, as a pulled tombstone would send them.
/// Local changes are left to the outbox: pushed as usual, never taken for deletions.
struct Reconciler: FolderPart {
    let fresh: FreshPull
    let changes: ServerChanges
    var context: FolderContext { changes.context }

    static let chunk = 500

    func reconcile() async throws(EndpointError) {
        logger.notice("reconciling with the endpoint's documents")
        // The server leaves a client's own writes out of its pulls; here they must come back too.
        let clientID = "reconcile-" + UUID().uuidString.lowercased()
        let (latest, received) = try await fresh.pull(adjusting: { $0.clientID = clientID }) { changes in
            try await self.applyAndMarkSeen(changes)
        }
        let deleted = try await trashUnseen()
        do {
            try await index.write { tx in
                try tx.endReconcile()
                if let latest { try tx.setMeta(.cursor, latest.text) }
            }
        } catch {
            throw .localFile("ending the reconcile: \(error)")
        }
        logger.notice("reconciled with the endpoint", metadata: ["reconcile.received": "\(received)", "reconcile.deleted": "\(deleted)"])
    }

    /// Applies documents as pulled changes, and notes them seen.
    private func applyAndMarkSeen(_ documents: [JSONObject]) async throws(EndpointError) {
        do {
            try await changes.write(documents)
            let ids = documents.compactMap { $0["id"]?.string }
            try await index.write { try $0.markSeen(ids) }
        } catch {
            throw .localFile("applying the reconcile's documents: \(error)")
        }
    }

    /// The documents of this folder's selection the server no longer lists, as tombstones, a chunk
    /// at a time. Returns how many.
    private func trashUnseen() async throws(EndpointError) -> Int {
        var deleted = 0
        // Counted before any goes: a reconcile that would trash most of the folder is held whole,
        // not after half of it went chunk by chunk.
        if let rule = changes.deletionGuard {
            let counts: (unseen: Int, live: Int)
            do {
                counts = try await index.read { tx in (try tx.unseenOnServerCount(), try tx.liveCount()) }
            } catch {
                throw .localFile("reading the index: \(error)")  // not counted, the reconcile would go chunk by chunk
            }
            if rule.holds(count: counts.unseen, live: counts.live) { _ = changes.deletionTally.add(counts.unseen, live: counts.live) }
        }
        while true {
            let unseen: [(id: String, docType: String)]
            do {
                unseen = try await index.read { try $0.unseenOnServer(limit: Self.chunk) }
            } catch {
                throw .localFile("reading the index: \(error)")
            }
            if unseen.isEmpty { return deleted }
            let stamp = JSONValue.string(Timestamp(unixMilliseconds: clock.now()).rfc3339)
            let tombstones = unseen.filter { selection.contains($0.docType) }.map { doc in
                JSONObject([
                    (key: "id", value: .string(doc.id)), (key: "docType", value: .string(doc.docType)),
                    (key: DocumentRules.updatedAtKey, value: stamp), (key: DocumentRules.deletedAtKey, value: stamp),
                ])
            }
            try await applyAndMarkSeen(tombstones)
            do {
                try await index.write { try $0.markSeen(unseen.map(\.id)) }  // the other types' too
            } catch {
                throw .localFile("\(error)")
            }
            deleted += tombstones.count
        }
    }
}
