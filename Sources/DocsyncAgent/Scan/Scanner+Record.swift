import DocsyncClock
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import DocsyncSchema
import DocsyncWatcher
import Foundation
import Logging

/// Recording a chunk in the index: files, documents, moves, tombstones and outbox entries, in one
/// transaction.
extension Scanner {

    static func record(
        _ observed: [Observed], rows: ChunkRows, vanished: Set<String>, movable: Set<String>, stamp: Int64, selection: TypeSelection,
        deletionsNotBefore: Int64 = 0, tx: IndexTransaction
    ) throws -> RecordResult {
        var r = RecordResult()
        let anyUploads = try tx.hasUploads()
        let anyViolations = try tx.hasSchemaViolations()
        var claimedIDs = Set<String>()
        var displaced: [String] = []  // ids whose file now holds another document
        var rows = rows
        for o in observed {
            let previous = try rows.file(at: o.path)
            let document: Judged
            do throws(DocumentProblem) {
                document = try judge(o, claimed: claimedIDs)
            } catch {
                let reason = error.description
                if previous?.error != reason { r.newProblems.append((o.path, reason)) }
                rows.changing(path: o.path, id: previous?.docID)
                try tx.upsertFile(FileRow(
                    path: o.path, docID: previous?.docID, docType: previous?.docType, hash: o.hash.isEmpty ? nil : o.hash,
                    stat: o.stat, state: .invalid, error: reason))
                r.counts.invalid += 1
                continue
            }
            guard selection.contains(document.docType) else {
                // Another folder's docType: reported, not sent. The row holds no document, so
                // deleting the file deletes nothing on the server; it is judged again at every
                // full scan, and is synced once the selection takes its type.
                rows.changing(path: o.path, id: previous?.docID)
                try tx.upsertFile(FileRow(
                    path: o.path, docID: nil, docType: document.docType, hash: o.hash, stat: o.stat, state: .excluded,
                    error: "docType \"\(document.docType)\" is not synced by this folder (--types, --exclude-types)"))
                r.counts.excluded += 1
                continue
            }
            if try holdForSchema(o, document, previous: previous, rows: &rows, anyViolations: anyViolations, tx: tx, result: &r) { continue }
            claimedIDs.insert(document.id)
            if let old = previous?.docID, old != document.id { displaced.append(old) }
            try recordDocument(o, document, previous: previous, rows: &rows, anyUploads: anyUploads, stamp: stamp, tx: tx, result: &r)
        }
        for path in vanished where !r.counts.claimed.contains(path) {
            guard let previous = try tx.file(at: path) else { continue }
            try tx.deleteFile(at: path)
            if let id = previous.docID, !claimedIDs.contains(id) { displaced.append(id) }
        }
        for id in displaced where !claimedIDs.contains(id) {
            if let gone = try recordTombstone(id: id, stamp: stamp, notBefore: deletionsNotBefore, tx: tx) {
                r.counts.deleted += 1
                if gone.docType == DocTypeSchemas.docType { r.counts.schemasChanged = true }
            }
        }
        return r
    }

    /// A file judged a document: its id and docType.
    typealias Judged = (id: String, docType: String)

    /// The document a file holds, or why it is not one (an id another file of the chunk claimed).
    private static func judge(_ o: Observed, claimed: Set<String>) throws(DocumentProblem) -> Judged {
        let parsed = try o.result.get()
        let docType = try parsed.docType.get()
        guard let id = try parsed.declaredID.get() else { throw .badID("no id could be assigned") }
        if claimed.contains(id) { throw .duplicateID(id, otherPath: "another file in this batch") }
        return (id, docType)
    }

    /// Records a document's file (a move when its id was elsewhere) and, when its body changed,
    /// the document and its outbox entry.
    private static func recordDocument(
        _ o: Observed, _ document: Judged, previous: FileRow?, rows: inout ChunkRows, anyUploads: Bool, stamp: Int64, tx: IndexTransaction,
        result r: inout RecordResult
    ) throws {
        // The file that held this id before, elsewhere: a move, its old row goes.
        let holder = try rows.file(forDocument: document.id)
        let existing = try rows.document(id: document.id)
        rows.changing(path: o.path, id: previous?.docID)
        rows.changing(path: holder?.path, id: document.id)
        if let holder, holder.path != o.path {
            try tx.deleteFile(at: holder.path)
            r.counts.claimed.insert(holder.path)
            r.counts.moved += 1
        }
        try tx.upsertFile(FileRow(path: o.path, docID: document.id, docType: document.docType, hash: o.hash, stat: o.stat, state: .ok, error: nil))
        let (bodyText, bodyHash) = try o.wire ?? wireText(o.object(), docType: document.docType)
        var row = existing ?? DocumentRow(id: document.id, docType: document.docType, path: o.path, body: bodyText, bodyHash: "")
        if try withdrawUnsentDeletion(of: row, bodyHash: bodyHash, tx: tx) {
            row.path = o.path
            row.deletedAt = nil
            row.state = .synced
            try tx.upsertDocument(row)
            _ = try reconcileAttachments(o, id: document.id, anyUploads: anyUploads, stamp: stamp, tx: tx, result: &r)
            r.counts.moved += 1
            return
        }
        if row.deletedAt == nil && (row.bodyHash == bodyHash || (existing != nil && sameContent(row.body, bodyText))) {
            if row.path != o.path {
                try tx.setDocumentPath(id: document.id, path: o.path)
                row.path = o.path  // the row is written again below (new text, or sent again): with its new path
            }
            if row.bodyHash != bodyHash { try keepText(bodyText, hash: bodyHash, of: &row, tx: tx) }
            let attached = try reconcileAttachments(o, id: document.id, anyUploads: anyUploads, stamp: stamp, tx: tx, result: &r)
            guard attached.wireChanged else {
                r.counts.unchanged += 1
                return
            }
            // The file is the same but the server's copy changes (an attached file went missing
            // or came back): the document is sent again.
            row.updatedAt = stamp
            row.state = .pending
            try tx.upsertDocument(row)
            try enqueue(row, stamp: stamp, tx: tx)
            r.counts.queued += 1
            return
        }
        if document.docType == DocTypeSchemas.docType { r.counts.schemasChanged = true }
        row.docType = document.docType
        row.path = o.path
        row.body = bodyText
        row.bodyHash = bodyHash
        row.updatedAt = stamp
        row.deletedAt = nil
        row.state = .pending
        row.error = nil
        try tx.upsertDocument(row)
        try enqueue(row, stamp: stamp, tx: tx)
        _ = try reconcileAttachments(o, id: document.id, anyUploads: anyUploads, stamp: stamp, tx: tx, result: &r)
        r.counts.queued += 1
    }

    /// Records the file's text for a document whose content it does not change. Acknowledged stays
    /// acknowledged: the server holds this content.
    private static func keepText(_ text: String, hash: String, of row: inout DocumentRow, tx: IndexTransaction) throws {
        if row.pushedHash == row.bodyHash { row.pushedHash = hash }
        (row.body, row.bodyHash) = (text, hash)
        try tx.upsertDocument(row)
    }

    /// Whether a file's text holds what the index recorded in another text: the pulled version
    /// written with the file's own order of members, say. Sending it would store the same
    /// document again as a new revision, which every other agent pulls and writes in its own
    /// order: with 60 agents, edits went round as revision after revision of the same content.
    static func sameContent(_ recorded: String, _ text: String) -> Bool {
        guard let a = try? JSONParser.parse(recorded).object, let b = try? JSONParser.parse(text).object else { return false }
        return a.sameContent(as: b)
    }

    /// A document whose file is gone (and no other file holds it) becomes a tombstone, queued;
    /// the tombstone, or nil when there was nothing to delete.
    private static func recordTombstone(id: String, stamp: Int64, notBefore: Int64, tx: IndexTransaction) throws -> DocumentRow? {
        guard try tx.file(forDocument: id) == nil, var row = try tx.document(id: id), row.deletedAt == nil else { return nil }
        // Where the file was: a held mass deletion is undone by writing it back there.
        if let path = row.path { try tx.noteLocalDeletion(id: id, path: path) }
        row.path = nil
        row.deletedAt = stamp
        row.updatedAt = stamp
        row.state = .pending
        try tx.upsertDocument(row)
        try tx.deleteUploads(docID: id)
        try enqueue(row, stamp: stamp, notBefore: notBefore, tx: tx)
        return row
    }

    /// A chunk's file and document rows, fetched up front in three queries instead of several per
    /// file (for planning ids and for recording). A path or id the transaction has already changed
    /// is read again from the index.
    struct ChunkRows {
        let tx: IndexTransaction
        let filesAt: [String: FileRow]
        let filesHolding: [String: FileRow]
        let documents: [String: DocumentRow]
        var changedPaths = Set<String>()
        var changedIDs = Set<String>()

        init(_ observed: [Observed], tx: IndexTransaction) throws {
            self.tx = tx
            let ids = Set(observed.compactMap { o -> String? in
                guard case .success(let parsed) = o.result else { return nil }
                return (try? parsed.declaredID.get()) ?? nil
            })
            filesAt = try tx.files(at: observed.map(\.path))
            filesHolding = try tx.files(forDocuments: ids)
            documents = try tx.documents(ids: ids)
        }

        /// Marks what the caller is about to change.
        mutating func changing(path: String?, id: String?) {
            if let path { changedPaths.insert(path) }
            if let id { changedIDs.insert(id) }
        }

        func file(at path: String) throws -> FileRow? {
            changedPaths.contains(path) ? try tx.file(at: path) : filesAt[path]
        }

        func file(forDocument id: String) throws -> FileRow? {
            changedIDs.contains(id) ? try tx.file(forDocument: id) : filesHolding[id]
        }

        func document(id: String) throws -> DocumentRow? {
            changedIDs.contains(id) ? try tx.document(id: id) : documents[id]
        }
    }

    static func reconcileAttachments(
        _ o: Observed, id: String, anyUploads: Bool, stamp: Int64, tx: IndexTransaction, result: inout RecordResult
    ) throws -> Attachments.Reconciled {
        // While no document has ever referenced a file there are no jobs: the bulk path skips the look-up.
        if o.attachments.isEmpty, !anyUploads { return Attachments.Reconciled() }
        let reconciled = try Attachments.reconcile(docID: id, object: o.object(), observations: o.attachments, stamp: stamp, tx: tx)
        for (property, reason) in reconciled.newProblems { result.attachmentProblems.append((o.path, property, reason)) }
        return reconciled
    }

    /// Queues the document as the row now holds it (body, `updated_at`, and `deleted_at` for a tombstone).
    static func enqueue(_ row: DocumentRow, stamp: Int64, notBefore: Int64 = 0, tx: IndexTransaction) throws {
        try tx.enqueue(
            key: .document(row.id), docID: row.id, kind: .put, payload: nil,
            bodyHash: OutboxEntry.bodyHash(row.bodyHash, deleted: row.deletedAt != nil), queuedAt: stamp, notBefore: notBefore)
    }

    /// The other half of a move the watcher reported in two batches (under load, the folder a
    /// file moved into can be seen a settle window after the file left): the document comes
    /// back unchanged while the deletion its leaving queued has not been sent (it waits out the
    /// pairing window, see `Scanner.movePairing`). The deletion is withdrawn; true if it was.
    static func withdrawUnsentDeletion(of row: DocumentRow, bodyHash: String, tx: IndexTransaction) throws -> Bool {
        guard row.deletedAt != nil, row.pushedHash == bodyHash, let entry = try tx.outboxEntry(key: .document(row.id)),
              entry.isDeletion, entry.documentHash == bodyHash, entry.attempts == 0, entry.nextAttemptAt > RetryPolicy.deadlineNow()
        else { return false }
        return try tx.removeEntry(entry)
    }
}
