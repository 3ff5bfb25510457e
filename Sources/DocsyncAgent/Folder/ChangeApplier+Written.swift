import DocsyncFiles
import DocsyncIndex
import DocsyncModel

extension ChangeApplier {
    /// A document written to the folder (or, with `file` nil, kept beside a file that is not a
    /// document right now), as the index records it.
    struct Written {
        let path: String
        let id: String
        let docType: String
        /// The file as written (the bytes, and its stat taken after) or as read back, and a time
        /// from before its write or read: a stat too close to it is recorded unsettled.
        let file: (bytes: [UInt8], info: EntryInfo)?
        let readStart: Int64
        let fileHash: String?
        let bodyText: String
        let bodyHash: String
        let baseText: String
        let rev: Int64
        let stamp: Int64
        /// Queued for the server (the merge of a local change); nil: in sync at `rev`.
        let pending: OutboxEntry?
        let now: Int64
        /// Files of the endpoint the content's properties point at (see ``fileJobs(id:content:)``).
        let downloads: [DownloadRow]
        /// A document the index had no row of when its page was planned (under the tree lock,
        /// which no other writer of documents holds meanwhile): nothing of it to look up.
        var isNew = false

        /// Texts and hashes are made here, outside the transaction that records them.
        init(
            path: String, id: String, docType: String, file: (bytes: [UInt8], info: EntryInfo)?, readStart: Int64, content: JSONObject,
            base: JSONObject, rev: Int64, stamp: Int64, pending: OutboxEntry?, now: Int64, downloads: [DownloadRow] = []
        ) {
            self.init(
                path: path, id: id, docType: docType, file: file, readStart: readStart,
                texts: Texts(fileBytes: file?.bytes, docType: docType, content: content, base: base),
                rev: rev, stamp: stamp, pending: pending, now: now, downloads: downloads)
        }

        /// With its texts made beforehand (a page's new files: while the files are written).
        init(
            path: String, id: String, docType: String, file: (bytes: [UInt8], info: EntryInfo)?, readStart: Int64, texts: Texts,
            rev: Int64, stamp: Int64, pending: OutboxEntry?, now: Int64, downloads: [DownloadRow] = []
        ) {
            self.downloads = downloads
            self.path = path
            self.id = id
            self.docType = docType
            self.file = file
            self.readStart = readStart
            fileHash = texts.fileHash
            bodyText = texts.bodyText
            bodyHash = texts.bodyHash
            baseText = texts.baseText
            self.rev = rev
            self.stamp = stamp
            self.pending = pending
            self.now = now
        }

        /// What the index records of a document beside its file's stat: the file's hash, the
        /// body (compact, no stamps) and its hash, the merge base. Pure work on the content.
        struct Texts: Sendable {
            let fileHash: String?
            let bodyText: String
            let bodyHash: String
            let baseText: String

            init(fileBytes: [UInt8]?, docType: String, content: JSONObject, base: JSONObject) {
                fileHash = fileBytes.map { ContentHash.sha256Hex($0) }
                let body = WireForm.body(content, docType: docType)
                bodyText = JSONWriter.string(.object(body))
                bodyHash = ContentHash.sha256Hex(bodyText.utf8)
                // A base equal to the body (every document a pull writes new) is not written out twice.
                baseText = base == body ? bodyText : JSONWriter.string(.object(base))
            }
        }

        /// The stat the file's row holds: unsettled if it was taken too soon after the write.
        var recordedStat: FileStat? { file.map { FileStat(recording: $0.info, readBefore: readStart) } }

        /// Records file and document (and the outbox entry) in `tx`.
        func record(_ tx: IndexTransaction) throws {
            if !isNew, let holder = try tx.file(forDocument: id), holder.path != path { try tx.deleteFile(at: holder.path) }
            if let stat = recordedStat {
                try tx.upsertFile(FileRow(path: path, docID: id, docType: docType, hash: fileHash, stat: stat, state: .ok, error: nil))
            }
            let known = isNew ? nil : try tx.document(id: id)
            var doc = known ?? DocumentRow(id: id, docType: docType, path: path, body: bodyText, bodyHash: bodyHash)
            doc.docType = docType
            doc.path = path
            doc.body = bodyText
            doc.bodyHash = bodyHash
            doc.deletedAt = nil
            doc.serverRev = rev
            doc.base = baseText
            doc.updatedAt = stamp
            if let pending {
                doc.state = .pending
                doc.updatedAt = now
                try tx.enqueue(key: pending.key, docID: id, kind: .put, payload: nil, bodyHash: bodyHash, queuedAt: now)
            } else {
                doc.state = .synced
                doc.pushedHash = bodyHash
                if known != nil, let entry = try tx.outboxEntry(key: .document(id)) { try tx.removeEntry(entry) }
            }
            try tx.upsertDocument(doc)
            try tx.clearPullFailure(id: id)
            try recordDownloads(tx, documentWasKnown: known != nil)
        }
    }
}
