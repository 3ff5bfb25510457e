import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel

extension Pusher {
    /// What sending a batch needs from the index, read before it goes.
    struct SendingContext: Sendable {
        /// The revision each document was last known at.
        var revisions: [String: Int64]
        /// Each document's files' uploads (only documents that may have files).
        var mappings: [String: AttachmentMapping]
        /// Which server the index knew when the batch was read (``Round/epoch``).
        var epoch: String?
        /// Where the changes a push brings back start (an endpoint that pulls with its pushes).
        var cursor: SyncCursor?
    }

    /// What sending `entries` needs from the index: the revision each document was last known at,
    /// its files' uploads, the server epoch, the pull cursor.
    /// `nil` when the index cannot be read: a document sent without its files' mapping would send
    /// `{"$file": …}` references instead of their URLs, and a push without its cursor would bring
    /// back every change from the start, so nothing is sent (the round fails and backs off).
    func sendingContext(_ entries: [OutboxEntry]) async -> SendingContext? {
        // The revision each document was last known at (read with its entry): the server refuses a
        // write based on an older one, and the document is merged instead of overwriting someone
        // else's edit.
        let revisions = Dictionary(entries.compactMap { e in e.serverRev.map { (e.docID, $0) } }, uniquingKeysWith: { a, _ in a })
        let pullsToo = endpoint.capabilities.pullsWithPush
        do {
            return try await index.read { tx in
                var mappings: [String: AttachmentMapping] = [:]
                let anyUploads = try tx.hasUploads()
                for e in entries where anyUploads || FileReference.mayAppear(in: e.payload) {
                    mappings[e.docID] = AttachmentMapping(try tx.uploads(docID: e.docID))
                }
                let cursor = pullsToo ? try tx.meta(.cursor).map(SyncCursor.init) : nil
                return SendingContext(revisions: revisions, mappings: mappings, epoch: try tx.meta(.serverReplacedAt), cursor: cursor)
            }
        } catch {
            logger.error("cannot read the index to push; retrying", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Sends `entries` in calls of the endpoint's size, all at once (a probe while offline, and
    /// one-shot `sync`).
    func send(_ entries: [OutboxEntry]) async -> Round {
        guard let context = await sendingContext(entries) else { return Self.unreadable(entries) }
        let capabilities = endpoint.capabilities
        let chunks = Self.chunks(of: entries, documents: capabilities.documentsPerCall, bytes: capabilities.bytesPerCall)
        return await withTaskGroup(of: Round.self) { group in
            for chunk in chunks { group.addTask { await self.push(chunk, context: context) } }
            var all: [Sent] = []
            var epochs = Set<String?>()
            for await round in group {
                all += round.results
                epochs.insert(round.epoch)
            }
            // Calls that met different servers: taken as sent to the one known before (a reply
            // from the old one is never recorded as the new one's).
            return Round(results: all, epoch: epochs.count == 1 ? epochs.first! : context.epoch)
        }
    }

    /// Every entry failed locally: the index could not be read to send them.
    static func unreadable(_ entries: [OutboxEntry]) -> Round {
        Round(results: entries.map { ($0, .failed(.localFile("the index could not be read"))) }, epoch: nil)
    }

    /// Sends `entries` in one push call. Changes from others that come back with the reply are
    /// applied to the folder.
    func push(_ entries: [OutboxEntry], context: SendingContext) async -> Round {
        // A deletion is sent only while the folder at the path is still the one synced: after an
        // `rm -rf` (or a folder moved away), its files' deletions are an accident, not an edit.
        if entries.contains(where: \.isDeletion) && applier.gate.rootIsGone {
            noteFolderGone()
            let gone = EndpointError.localFile("the synced folder \(applier.root) was deleted or moved away")
            return Round(results: entries.map { ($0, .failed(gone)) }, epoch: context.epoch)
        }
        let changes = entries.map { e in
            OutgoingChange(
                id: e.docID, docType: e.docType ?? "", body: Self.wirePayload(e, mapping: context.mappings[e.docID]), baseRevision: context.revisions[e.docID])
        }
        let reply: PushReply
        let started = ContinuousClock.now
        do throws(EndpointError) {
            reply = try await endpoint.push(changes, pullingAfter: context.cursor)
        } catch {
            metrics.call("push", since: started)
            return Round(results: entries.map { ($0, .failed(error)) }, epoch: context.epoch)
        }
        metrics.call("push", since: started)
        var epoch = context.epoch
        if let pulled = reply.pulled {
            // Taken as a pull's reply is (another server, or this one restored, starts the pull
            // over). When this very reply showed the server replaced, the acknowledgements below
            // came from the new one and hold in the epoch it began; a replacement another reply
            // showed meanwhile is not theirs (read back here, it let an old server's
            // acknowledgements in after the puller had found a new one, and they were lost).
            // A failure leaves the cursor where it was: the changes come again with the next pull.
            do {
                let taken = try await self.changes.take(pulled, sentFrom: context.cursor)
                if taken.replaced { epoch = taken.epoch }
            } catch {
                logger.error("cannot apply the changes a push brought back; the next pull brings them again", metadata: ["error": "\(error)"])
            }
        }
        let results = entries.map { e in (e, reply.outcomes[e.docID] ?? .failed(.badReply("the reply does not mention document \(e.docID)"))) }
        return Round(results: results, epoch: epoch)
    }

    /// The text sent for an entry: its payload, with file references replaced by what the server
    /// should hold. Parsed only when the document has files.
    static func wirePayload(_ entry: OutboxEntry, mapping: AttachmentMapping?) -> String {
        guard let mapping, case .object(let object)? = try? JSONParser.parse(entry.payload) else { return entry.payload }
        return JSONWriter.string(.object(mapping.toWire(object)))
    }
}
