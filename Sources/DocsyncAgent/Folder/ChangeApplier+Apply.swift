import DocsyncClock
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import Logging

/// Applying one document from the server that the folder may already hold: what it is, whether
/// the folder has it already, and then taking it, trashing it or merging it with a local change.
extension ChangeApplier {
    /// One document from the server, as the folder would hold it.
    struct Incoming {
        let remote: JSONObject
        let id: String
        let docType: String
        let rev: Int64
        let deleted: Bool
        /// The server's content in wire form (references defused).
        let wireBody: JSONObject
        /// When it was changed on the server, in calibrated milliseconds.
        let stamp: Int64
    }

    func apply(_ remote: JSONObject, summary: inout Summary) async throws {
        guard let id = remote["id"]?.string, DocumentRules.isSafeIdentifier(id) else {
            try await refuse(remote["id"]?.string ?? "(no id)", "its id is not a safe identifier", summary: &summary)
            return
        }
        guard let docType = remote["docType"]?.string, Self.isFolderName(docType) else {
            try await refuse(id, "its docType cannot be a folder name", summary: &summary)
            return
        }
        let incoming = Incoming(
            remote: remote, id: id, docType: docType, rev: Self.revision(of: remote),
            deleted: remote[DocumentRules.deletedAtKey].map { !$0.isNull } ?? false,
            wireBody: Self.content(of: remote, docType: docType), stamp: Self.changeStamp(of: remote))
        let (known, wasRefused) = try await index.read { (try $0.document(id: id), try $0.meta(.refused(id)) != nil) }
        // A version that can be taken ends an earlier refusal's report (status lists the rest).
        if wasRefused { try await index.write { try $0.setMeta(.refused(id), nil) } }
        // A server without revisions (rev 0) is never "older": its content decides.
        if incoming.rev > 0, let known, let seen = known.serverRev, seen >= incoming.rev {
            summary.skipped += 1  // our own write coming back, or older than what we have
            return
        }
        let attached = try await attachments(of: known)
        try await queueNewVersions(incoming, known: known, rows: attached?.rows ?? [])
        let mapped = localForm(incoming.wireBody, rev: incoming.rev, known: known, attached: attached)
        if try await isOwnWriteComingBack(incoming, known: known, mapped: mapped) {
            summary.skipped += 1
            return
        }
        guard let (current, body) = try await localState(incoming, known: known, mapped: mapped, summary: &summary) else { return }
        let pending = try await index.read { try $0.outboxEntry(key: .document(id)) }
        guard var doc = current else {
            try await applyUnknown(incoming, body: body, summary: &summary)
            return
        }
        if pending == nil {
            // Nothing local since the last agreed version: take the server's.
            if incoming.deleted {
                try await trash(&doc, rev: incoming.rev, body: body)
                summary.trashed += 1
            } else {
                let path = doc.path ?? freePath(for: id, docType: docType)
                let removed = try await attachmentsRemoved(known: doc, body: body)
                try await writeFile(
                    path: path, id: id, docType: docType, content: body, base: body, rev: incoming.rev, pending: nil, stamp: incoming.stamp
                ) { tx in
                    for row in removed { try tx.deleteUpload(docID: row.docID, property: row.property) }
                }
                trashAttachments(removed)
                summary.written += 1
            }
            return
        }
        try await applyOverLocalChange(incoming, doc: doc, body: body, pending: pending, summary: &summary)
    }

    /// Our own write coming back (before its acknowledgement was recorded, or as a server that
    /// rewrites JSON stores it): nothing to write, the document is marked synced at the server's
    /// revision.
    private func isOwnWriteComingBack(_ incoming: Incoming, known: DocumentRow?, mapped: JSONObject) async throws -> Bool {
        guard var doc = known, doc.deletedAt == nil, !incoming.deleted else { return false }
        // By content: a server that stores parsed JSON gives back `1.5` for `1.50`, keys reordered.
        guard let local = try? JSONParser.parse(doc.body), local.sameContent(as: .object(mapped)) else { return false }
        doc.serverRev = incoming.rev
        doc.base = JSONWriter.string(.object(mapped))
        let final = doc
        let id = incoming.id
        try await index.write { tx in
            if let entry = try tx.outboxEntry(key: .document(id)), entry.bodyHash == final.bodyHash {
                try tx.removeEntry(entry)
            }
            var synced = final
            if try tx.outboxEntry(key: .document(id)) == nil { synced.state = .synced }
            try tx.upsertDocument(synced)
        }
        return true
    }

    /// The document as the index knows it once its file has been looked at, and the server's
    /// content in the folder's form; `nil` when the change must wait or be left alone.
    private func localState(
        _ incoming: Incoming, known: DocumentRow?, mapped: JSONObject, summary: inout Summary
    ) async throws -> (DocumentRow?, JSONObject)? {
        var (known, mapped) = (known, mapped)
        if let path = known?.path {
            // A .docsyncignore rule has covered the file since it was synced: it stays as it is
            // (the index no longer follows it, so nothing could tell a save there from ours).
            if walker.isIgnored(path, isDirectory: false) {
                summary.skipped += 1
                return nil
            }
            guard let info = FileSystem.info(absolute(path)) else {
                summary.deferred.append(incoming.remote)  // moved or deleted on disk; the watcher will tell
                return nil
            }
            // A local edit not scanned yet must reach the index before anything is written over it.
            if let row = try await index.read({ try $0.file(at: path) }), FileStat(info) != row.stat {
                try await rescan(path)
                let id = incoming.id
                known = try await index.read { try $0.document(id: id) }
                mapped = try await localForm(incoming.wireBody, rev: incoming.rev, known: known)
            }
        }
        return (known, mapped)
    }

    /// A document this folder never had: written to a free path (a tombstone is only recorded).
    private func applyUnknown(_ incoming: Incoming, body: JSONObject, summary: inout Summary) async throws {
        let (id, docType, rev) = (incoming.id, incoming.docType, incoming.rev)
        if incoming.deleted {
            try await index.write { tx in
                try tx.upsertDocument(DocumentRow(
                    id: id, docType: docType, path: nil, body: JSONWriter.string(.object(body)), bodyHash: "", serverRev: rev,
                    base: JSONWriter.string(.object(body)), state: .synced))
            }
            summary.skipped += 1
            return
        }
        let path = freePath(for: id, docType: docType)
        try await writeFile(path: path, id: id, docType: docType, content: body, base: body, rev: rev, pending: nil, stamp: incoming.stamp)
        summary.written += 1
    }

    /// Changed on both sides: edits merge, an edit beats a delete, two deletes agree.
    private func applyOverLocalChange(
        _ incoming: Incoming, doc: DocumentRow, body remoteBody: JSONObject, pending: OutboxEntry?, summary: inout Summary
    ) async throws {
        var doc = doc
        let (id, docType, rev) = (incoming.id, incoming.docType, incoming.rev)
        let base = doc.base.flatMap { try? JSONParser.parse($0) }
        let localBody = (try? JSONParser.parse(doc.body))?.object ?? JSONObject()
        summary.merged += 1
        switch (doc.deletedAt != nil, incoming.deleted) {
        case (true, true):
            doc.serverRev = rev
            doc.base = JSONWriter.string(.object(remoteBody))
            doc.state = .synced
            let final = doc
            try await index.write { tx in
                if let p = pending { try tx.removeEntry(p) }
                try tx.upsertDocument(final)
            }
        case (false, true):
            // Edit beats delete: the document comes back, merged with its last content on the
            // server (edits made elsewhere before the delete come back with it).
            logger.info("document deleted on the server but edited here; the edit wins", metadata: ["doc.id": "\(id)"])
            _ = try await mergeAndWrite(
                &summary, doc: doc, id: id, docType: docType, base: base, local: localBody, remote: remoteBody, rev: rev,
                remoteStamp: incoming.stamp, pending: pending, forcePush: true)
        case (true, false) where remoteBody.sameContent(as: localBody):
            // The server holds our own last version (sent before a crash, never acknowledged; or
            // fetched again by a server without revisions): nobody edited it, so the delete stands;
            // re-send the tombstone against this revision. By content: the index keeps the text
            // of the file, whose members may be in another order than the server's.
            doc.serverRev = rev
            doc.base = JSONWriter.string(.object(remoteBody))
            let final = doc
            try await index.write { try $0.upsertDocument(final) }
        case (true, false):
            // Deleted here, edited there: the edit wins, the file comes back.
            logger.info("document deleted here but edited on the server; the edit wins", metadata: ["doc.id": "\(id)"])
            if let p = pending { _ = try await index.write { try $0.removeEntry(p) } }
            let path = freePath(for: id, docType: docType)
            try await writeFile(
                path: path, id: id, docType: docType, content: remoteBody, base: remoteBody, rev: rev, pending: nil, stamp: incoming.stamp)
        case (false, false) where base == nil:
            try await takeServersOverUnagreed(incoming, doc: doc, local: localBody, remote: remoteBody, pending: pending, summary: &summary)
        case (false, false):
            _ = try await mergeAndWrite(
                &summary, doc: doc, id: id, docType: docType, base: base, local: localBody, remote: remoteBody, rev: rev,
                remoteStamp: incoming.stamp, pending: pending, forcePush: false)
        }
    }

    /// Changed on both sides with no version the two ever agreed on (a new or rebuilt index, a
    /// folder copied in, a create whose reply was lost): nothing says which is newer, and the
    /// file's stamp is only when it was read. The server's version goes into the file and what
    /// the file held beside it as a conflict copy; nothing is sent over the server's version (a
    /// stale copy took the later stamp and overwrote everyone's newer edit: trust finding, fourth
    /// round, 10).
    private func takeServersOverUnagreed(
        _ incoming: Incoming, doc: DocumentRow, local: JSONObject, remote: JSONObject, pending: OutboxEntry?, summary: inout Summary
    ) async throws {
        let path = doc.path ?? freePath(for: incoming.id, docType: incoming.docType)
        if !local.sameContent(as: remote) {
            summary.conflicts += 1
            try writeConflictCopy(of: path, local)
            logger.warning(
                "this file and the server's version were never in agreement; the server's version is in the file, this one beside it",
                metadata: ["doc.id": "\(incoming.id)", "file.path": "\(path)"])
        }
        if let pending { _ = try await index.write { try $0.removeEntry(pending) } }
        try await writeFile(
            path: path, id: incoming.id, docType: incoming.docType, content: remote, base: remote, rev: incoming.rev, pending: nil,
            stamp: incoming.stamp)
    }
}
