import DocsyncClock
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import Foundation
import Logging

/// Brings the server's changes into the folder.
///
/// New documents become files at `<docType>/<id>.json`; updates rewrite the file wherever it lives,
/// keeping its key order; tombstones move the file to `.docsync/trash/`. A document changed on both
/// sides since the last version they agreed on (the index's `base`) is merged three-way; where both
/// changed the same value, the later change by calibrated `updated_at` wins and the other version is
/// kept in full as `<name>.sync-conflict-<yyyyMMdd-HHmmss>.json` beside the file. An edit always
/// beats a delete. Every write is atomic and recorded in the index before the watcher sees it, so
/// the agent never pushes its own writes back.
struct ChangeApplier: FolderPart {
    /// The file changed on disk between the look that planned a write and the write (saved,
    /// moved or deleted by someone else): nothing was written; the change is applied again once
    /// the scanner has recorded the file.
    struct ChangedOnDisk: Error {}

    /// The folder's shared values, read through ``FolderPart``. Every file this applier creates,
    /// replaces, trashes or copies is reached through its gate.
    let context: FolderContext
    /// The folder's ignore rules: a file they cover is left as it is.
    let walker: TreeWalker
    /// The largest file the folder reads (`--max-file-size`): a pulled document is written
    /// compact where its pretty form would be larger (``JSONWriter/fileBytes(_:limit:)``).
    let maxFileSize: Int
    /// Reads one file again (a local edit the index has not seen yet must reach it before
    /// anything is written over it); the scanner queues what it finds and says so.
    let rescan: @Sendable (String) async throws -> Void
    /// Told when a merge queued a document for the server.
    let pushWork: WakeSignal
    /// The docTypes this applier takes: a document of another is not applied, whatever sent it.
    /// The folder's, or fewer while a grown selection catches up (``selecting(_:)``).
    var selection: TypeSelection
    /// Which properties of a pulled document hold files of the endpoint (fetched into the
    /// folder; see ``Downloader``): the adapter's ``DocumentEndpoint/remoteFiles(in:)``.
    let remoteFiles: @Sendable (JSONObject) -> [RemoteFileFound]
    /// Told when download jobs were queued.
    let downloadsQueued: WakeSignal
    /// The new files written, for the watcher's report of them (see ``OwnNewFiles``); `nil` where
    /// folders take turns (hundreds in one process: the notes of each would add up).
    let ownNewFiles: OwnNewFiles?
    /// Called between a pulled change's write and its record in the index. Tests stand a user's
    /// save in here: the two are not one step, and nothing the agent records may hide that save.
    let beforeRecording: (@Sendable (String) async -> Void)?
    /// Changes that could not be written logged one by one in a call; the rest are counted.
    static let failuresLogged = 3
    /// Conflict copies kept per document; older ones are removed.
    static let conflictCopiesKept = 5

    struct Summary: Sendable {
        var written = 0, trashed = 0, merged = 0, conflicts = 0, refused = 0, skipped = 0
        /// Documents whose file is changing under us (moved or deleted, not scanned yet): applied
        /// again once the scanner has caught up.
        var deferred: [JSONObject] = []
        /// Documents that could not be written (a full disk, a name the file system refuses), and
        /// why: recorded in the index before the cursor passes them, and tried again from there.
        var failed: [(remote: JSONObject, reason: String)] = []
    }

    /// Applies documents from the server (pulled changes, or the current version a 409 sent back).
    /// With `records`, the new documents' record may still be committing on return (see
    /// ``PendingRecords``); the others wait for the page before theirs to be recorded.
    func apply(_ documents: [JSONObject], records: PendingRecords? = nil) async throws -> Summary {
        var summary = Summary()
        var documents = documents
        if !selection.isAll {
            let count = documents.count
            documents.removeAll { !selection.contains($0["docType"]?.string ?? "") }
            summary.skipped += count - documents.count
        }
        // Reaches here only when the folder has no passphrase (a sealed endpoint opens these):
        // ciphertext is never written into the folder as if it were a document.
        if documents.contains(where: { SealedForm.isVault($0) || SealedForm.isSealed($0) }) {
            for remote in documents where SealedForm.isVault(remote) || SealedForm.isSealed(remote) {
                try await refuse(remote["id"]?.string ?? "(no id)", Self.sealedWithoutPassphrase, summary: &summary)
            }
            documents.removeAll { SealedForm.isVault($0) || SealedForm.isSealed($0) }
        }
        let rest = try await applyNew(documents, summary: &summary, records: records)
        // Known documents are read from the index: what is pending must be in it.
        if let records, !rest.isEmpty { try await records.drain() }
        for remote in rest {
            do {
                try await apply(remote, summary: &summary)
            } catch {
                setAside(remote, after: error, summary: &summary)
            }
        }
        return summary
    }

    /// A change that could not be applied: again soon if its file was changing under us,
    /// otherwise logged and handed back as failed (the puller records it to be retried).
    func setAside(_ remote: JSONObject, after error: any Error, summary: inout Summary) {
        if error is ChangedOnDisk {
            summary.deferred.append(remote)
        } else {
            // The first few a call: a full disk fails every file of a page alike.
            if summary.failed.count < Self.failuresLogged {
                logger.error(
                    "cannot apply a change from the server; it is retried", metadata: ["doc.id": "\(remote["id"]?.string ?? "?")", "error": "\(error)"])
            }
            summary.failed.append((remote, "\(error)"))
        }
    }

    /// The revision the server gave `remote` (0 if none).
    static func revision(of remote: JSONObject) -> Int64 {
        DocumentRules.revision(of: remote) ?? 0
    }

    /// When `remote` was changed, in calibrated milliseconds (0 if not stamped).
    static func changeStamp(of remote: JSONObject) -> Int64 {
        remote[DocumentRules.updatedAtKey]?.string.flatMap { Timestamp(rfc3339: $0)?.unixMilliseconds } ?? 0
    }

    /// What the folder may take of a document from the server: its wire body, with any
    /// `{"$file": …}` it holds defused (see ``FileReference/fromServerKey``): every path by which
    /// server content reaches a file (a new file, an update, a merge, a conflict copy, and so
    /// `resolve --keep theirs`) starts here.
    static func content(of remote: JSONObject, docType: String) -> JSONObject {
        FileReference.defused(WireForm.body(remote, docType: docType))
    }

    /// Whether `docType` can name a folder inside the synced one.
    static func isFolderName(_ docType: String) -> Bool {
        DocumentRules.docTypeProblem(docType) == nil && !DocumentRules.isIgnoredName(docType)
    }

    /// The server's version as the folder holds it: URLs of uploaded files back to the
    /// `{"$file": …}` references they came from (see ``AttachmentMapping``).
    func localForm(_ wireBody: JSONObject, rev: Int64, known: DocumentRow?) async throws -> JSONObject {
        localForm(wireBody, rev: rev, known: known, attached: try await attachments(of: known))
    }

    /// A known document's upload rows, and whether nothing of it is pending here; `nil` when it
    /// cannot have any (no row in the index, no reference in its body).
    func attachments(of known: DocumentRow?) async throws -> (rows: [UploadRow], quiet: Bool)? {
        guard let known else { return nil }
        return try await index.read { tx -> (rows: [UploadRow], quiet: Bool)? in
            guard try tx.hasUploads() || FileReference.mayAppear(in: known.body) else { return nil }
            return (try tx.uploads(docID: known.id), try tx.outboxEntry(key: .document(known.id)) == nil)
        }
    }

    /// ``localForm(_:known:)`` with the rows already read.
    func localForm(_ wireBody: JSONObject, rev: Int64, known: DocumentRow?, attached found: (rows: [UploadRow], quiet: Bool)?) -> JSONObject {
        guard let known, let found, let local = try? JSONParser.parse(known.body).object else { return wireBody }
        var out = AttachmentMapping(found.rows).toLocal(wireBody, local: local)
        // A file this side had on the server is `null` there now: someone removed it. Taken only
        // while nothing is pending here (a restored server's older copy is merged, not obeyed), and
        // from a version newer than the one our upload made.
        if found.quiet {
            for row in AttachmentMapping.removedOnServer(wireBody, rev: rev, rows: found.rows, local: local) { out[row.property] = .null }
        }
        return out
    }

    /// Three-way merge of a local change with the server's version; the later stamp wins where both
    /// changed the same value, the other side's full version going to a conflict copy. The merged
    /// document is written and, unless the server already holds it (or `forcePush`), queued.
    func mergeAndWrite(
        _ summary: inout Summary, doc: DocumentRow, id: String, docType: String, base: JSONValue?, local: JSONObject,
        remote: JSONObject, rev: Int64, remoteStamp: Int64, pending: OutboxEntry?, forcePush: Bool
    ) async throws -> JSONObject {
        let localStamp = doc.updatedAt ?? 0
        let preferLocal = forcePush || localStamp > remoteStamp
        let result = Merge.threeWay(base: base, local: .object(local), remote: .object(remote), preferLocal: preferLocal)
        let merged = result.value?.object ?? remote
        let path = doc.path ?? freePath(for: id, docType: docType)
        if !result.conflicts.isEmpty {
            summary.conflicts += 1
            try writeConflictCopy(of: path, preferLocal ? remote : local)
            logger.warning(
                "conflicting edits; the later one wins, the other is kept beside the file",
                metadata: ["doc.id": "\(id)", "file.path": "\(path)", "conflict.paths": "\(result.conflicts.joined(separator: ","))"])
        }
        try await writeFile(
            path: path, id: id, docType: docType, content: merged, base: remote, rev: rev,
            pending: (merged == remote && !forcePush) ? nil : pending, stamp: max(localStamp, remoteStamp))
        return merged
    }

    // MARK: - Files

    func absolute(_ relative: String) -> String { root + "/" + relative }

    /// `<docType>/<id>.json`, or with a numeric suffix if another file (or one of `taken`) has that name.
    /// `folder`: the docType's folder, already opened through the gate (a page of new documents
    /// looks in it by name, without walking the path again for each).
    func freePath(for id: String, docType: String, avoiding taken: Set<String> = [], in folder: GatedFolder? = nil) -> String {
        var n = 1
        while true {
            let name = n == 1 ? "\(id).json" : "\(id)-\(n).json"
            let candidate = "\(docType)/\(name)"
            // Through the gate: a name under a symlinked folder counts as free, and its write is refused.
            let file = folder.flatMap { try? GatedFile($0, name) } ?? (try? gate.file(candidate))
            if !taken.contains(candidate) && file.flatMap(FileSystem.info) == nil { return candidate }
            n += 1
        }
    }

    /// Writes `content` as the file at `path` (layout kept where the file exists, unchanged content
    /// never rewritten), and records file and document in one transaction. With `pending`, the
    /// merged content is queued for the server (replacing `pending`); otherwise the document is in
    /// sync at `rev`.
    func writeFile(
        path: String, id: String, docType: String, content: JSONObject, base: JSONObject, rev: Int64, pending: OutboxEntry?, stamp: Int64,
        also: (@Sendable (IndexTransaction) throws -> Void)? = nil
    ) async throws {
        let writeStart = FileSystem.realtimeNanoseconds()
        let file = try await put(content, at: path, id: id, docType: docType)
        await beforeRecording?(path)
        // The file is recorded as written (its bytes, the stat of the file put there), never as
        // read back: a save that lands in between is then a change the scanner finds.
        let record = Written(
            path: path, id: id, docType: docType, file: file, readStart: writeStart, content: content, base: base, rev: rev,
            stamp: stamp, pending: pending, now: clock.now(), downloads: fileJobs(id: id, content: content))
        try await index.writeToEnd { tx in
            try record.record(tx)
            try also?(tx)
        }
        if !record.downloads.isEmpty { downloadsQueued.signal() }
        if pending != nil { pushWork.signal() }  // the pusher is told, as for a scanned change
    }

    /// Puts `content` in the file at `path`: the bytes and stat the file has then, or `nil` where
    /// the file is not a document right now and the server's version went beside it.
    private func put(_ content: JSONObject, at path: String, id: String, docType: String) async throws -> (bytes: [UInt8], info: EntryInfo)? {
        let target = try gate.file(path, createFolders: true)
        var fileObject = content
        for key in DocumentRules.reservedKeys { fileObject[key] = nil }
        // What the file holds must be what the index last read there: a save not scanned yet is
        // merged first, never written over.
        let recorded = try await index.read { try $0.file(at: path) }
        guard FileSystem.info(target) != nil else {
            // Deleted (or moved away) since the index saw it: the watcher reports that first.
            guard recorded == nil else { throw ChangedOnDisk() }
            let bytes = JSONWriter.fileBytes(.object(fileObject), limit: maxFileSize)
            guard let info = try FileSystem.replacing(target, with: bytes, ifItHolds: nil) else { throw ChangedOnDisk() }
            return (bytes, info)
        }
        let current = try? FileSystem.read(target, maxSize: JSONWriter.largestFile(limit: maxFileSize))
        guard let recorded, recorded.hash == current.map({ ContentHash.sha256Hex($0.bytes) }) else { throw ChangedOnDisk() }
        guard let current, let existing = try? DocumentRules.parseObject(current.bytes, maxSize: Int.max) else {
            // Not a document right now (half edited, broken, unreadable): the file stays as the
            // user left it, the server's version goes beside it; once the file is fixed, it is sent.
            try writeConflictCopy(of: path, content)
            logger.warning("the file is not a valid document; the server's version is kept beside it", metadata: ["file.path": "\(path)", "doc.id": "\(id)"])
            return nil
        }
        // A docType the file leaves to its folder stays implicit.
        if existing["docType"] == nil, (try? DocumentRules.docType(of: JSONObject(), relativePath: path)) == docType {
            fileObject["docType"] = nil
        }
        let laidOut = Merge.keepingOrder(of: .object(existing), .object(fileObject))
        guard laidOut != .object(existing) else { return current }
        let bytes = JSONWriter.fileBytes(laidOut, limit: maxFileSize)
        guard let info = try FileSystem.replacing(target, with: bytes, ifItHolds: current.bytes, mode: current.info.mode) else { throw ChangedOnDisk() }
        return (bytes, info)
    }

    /// Moves the file of a document deleted on the server into `.docsync/trash/` (recoverable).
    func trash(_ doc: inout DocumentRow, rev: Int64, body: JSONObject) async throws {
        if let path = doc.path, let source = try? gate.file(path), FileSystem.info(source) != nil {
            let recorded = try await index.read { try $0.file(at: path) }
            let trashDir = try gate.folder(Index.stateFolderName + "/trash", create: true)
            let target = try moveToTrash(source, into: trashDir, stem: "\(doc.id)-\(Timestamp(unixMilliseconds: clock.now()).compactUTC)")
            // Saved just before it moved: it comes back, and is merged once scanned.
            if (try? FileSystem.read(target, maxSize: JSONWriter.largestFile(limit: maxFileSize))).map({ ContentHash.sha256Hex($0.bytes) }) != recorded?.hash {
                if try FileSystem.move(target, to: source) { throw ChangedOnDisk() }
                logger.warning("a file deleted on the server was saved meanwhile; that version is in .docsync/trash", metadata: ["file.path": "\(path)", "trash.path": "\(target.path)"])
            }
            logger.info("deleted on the server; moved to .docsync/trash", metadata: ["file.path": "\(path)", "doc.id": "\(doc.id)"])
        }
        let path = doc.path
        var updated = doc
        updated.path = nil
        updated.deletedAt = clock.now()
        updated.serverRev = rev
        updated.base = JSONWriter.string(.object(body))
        updated.state = .synced
        let final = updated
        try await index.writeToEnd { tx in
            if let path { try tx.deleteFile(at: path) }
            try tx.upsertDocument(final)
            try tx.clearPullFailure(id: final.id)
            try tx.deleteDownloads(docID: final.id)
        }
        doc = final
    }

    /// Moves `source` to `<stem>.json` in the trash (`<stem>-2.json` and on, for another file
    /// trashed in the same second) and returns where it went.
    func moveToTrash(_ source: GatedFile, into trash: GatedFolder, stem: String, extension ext: String = "json") throws -> GatedFile {
        var n = 1
        while true {
            let target = try GatedFile(trash, n == 1 ? "\(stem).\(ext)" : "\(stem)-\(n).\(ext)")
            switch Result(catching: { () throws(FileSystemError) in try FileSystem.move(source, to: target) }) {
            case .success(true): return target
            case .success(false): n += 1
            case .failure(let error) where error.code == ENOENT: throw ChangedOnDisk()  // moved or deleted meanwhile
            case .failure(let error): throw error
            }
        }
    }

    /// `<name>.sync-conflict-<UTC yyyyMMdd-HHmmss>.json` beside the document (`…-2.json` and on
    /// for more in the same second); never synced. The newest few are kept.
    func writeConflictCopy(of path: String, _ version: JSONObject) throws {
        let document = try gate.file(path)
        let folder = document.folder
        let stem = (document.name.hasSuffix(".json") ? String(document.name.dropLast(5)) : document.name) + ".sync-conflict-"
        // Oldest first: by time, then by the number a copy made in the same second carries.
        func age(_ name: String) -> (String, Int) {
            let rest = name.dropFirst(stem.count).dropLast(".json".count)  // yyyyMMdd-HHmmss[-n]
            return (String(rest.prefix(15)), Int(rest.dropFirst(16)) ?? 1)
        }
        var copies = folder.entries().map(\.name).filter { $0.hasPrefix(stem) && $0.hasSuffix(".json") }
        var fileObject = version
        for key in DocumentRules.reservedKeys { fileObject[key] = nil }
        let bytes = JSONWriter.fileBytes(.object(fileObject), limit: maxFileSize)
        let stamp = Timestamp(unixMilliseconds: clock.now()).compactUTC
        // After every copy of the same second, also one already pruned: a lower number would sort
        // this copy among the oldest.
        var n = (copies.map(age).filter { $0.0 == stamp }.map(\.1).max() ?? 0) + 1
        func name(_ n: Int) -> String { stem + stamp + (n == 1 ? "" : "-\(n)") + ".json" }
        while try !FileSystem.replace(GatedFile(folder, name(n)), with: bytes, ifItHolds: nil) { n += 1 }
        copies.append(name(n))
        metrics.conflictCopy()
        for old in copies.sorted(by: { age($0) < age($1) }).dropLast(Self.conflictCopiesKept) {
            if let copy = try? GatedFile(folder, old) { FileSystem.remove(copy) }
        }
    }

    static let sealedWithoutPassphrase =
        "it is end-to-end encrypted and this folder has no passphrase (start the agent with --passphrase-file; docs/ENCRYPTION.md)"

    func refuse(_ id: String, _ reason: String, summary: inout Summary) async throws {
        summary.refused += 1
        let key = MetaKey.refused(id)
        let known = try await index.read { try $0.meta(key) }
        if known == nil {
            logger.error("refused a document from the server: \(reason); nothing was written", metadata: ["doc.id": "\(id.prefix(200))"])
            try await index.write { try $0.setMeta(key, reason) }
        }
    }
}
