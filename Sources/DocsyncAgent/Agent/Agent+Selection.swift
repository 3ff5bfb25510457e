import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Logging

/// A folder's selection of docTypes changing between runs. The stored cursor only ever saw the
/// old selection's types: when the selection grows, the added types are pulled once from the
/// start, by an adapter asking for them alone; what the folder already has is not pulled again.
/// A shrinking selection needs nothing: the dropped types' files stay as they are.
extension Agent {
    /// Catches up on newly selected docTypes once, then records the selection as the cursor's
    /// (one-shot `sync`). Returns why it failed, if it did.
    func catchUpOnSelection() async -> String? {
        switch await catchUpRound() {
        case .failed(let error): "catching up on newly selected docTypes: \(error)"
        default: nil
        }
    }

    /// The catch-up as a worker's round (a `watch` retries it with backoff before it pulls):
    /// finished once done, or on a push-only endpoint (nothing to pull).
    func catchUpRound() async -> WorkerOutcome {
        do throws(EndpointError) {
            try await catchUpOnSelectionOnce()
            return .finished
        } catch .unsupported {
            return .finished
        } catch {
            return .failed(error)
        }
    }

    private func catchUpOnSelectionOnce() async throws(EndpointError) {
        let current = options.selection
        // Read as "nothing stored" when the index could not be read, the new selection was stored
        // and its catch-up skipped for good: the failure is retried with backoff instead.
        let stored: String?, cursor: String?
        do {
            (stored, cursor) = try await index.read { tx in (try tx.meta(.typeSelection), try tx.meta(.cursor)) }
        } catch {
            throw .localFile("reading the index: \(error)")
        }
        let previous = stored.flatMap(TypeSelection.init(text:)) ?? .all
        // Without a cursor the next pull starts from the beginning anyway, for every selected type.
        if cursor != nil, previous != current, let added = current.added(since: previous) {
            logger.notice("the selection of docTypes grew: pulling the newly selected ones from the start", metadata: ["types.added": "\(added.text)"])
            let (applier, changes) = (applier.selecting(added), serverChanges)
            let (_, pulled) = try await fresh.pull(adjusting: { $0.selection = added }) { documents in
                try await changes.write(documents, applier: applier)
            }
            logger.notice("caught up on the newly selected docTypes", metadata: ["pull.documents": "\(pulled)"])
        }
        // Not recorded: the next start takes the selection for new again and catches up once more.
        if stored != current.text { try? await index.write { try $0.setMeta(.typeSelection, current.text) } }
    }

}

extension ChangeApplier {
    /// This applier taking only the documents of `selection`.
    func selecting(_ selection: TypeSelection) -> ChangeApplier {
        var copy = self
        copy.selection = selection
        return copy
    }
}
