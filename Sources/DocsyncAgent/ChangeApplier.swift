import DocsyncClock
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import DocsyncWatcher
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
struct ChangeApplier: Sendable {
    /// The file changed on disk between the look that planned a write and the write (saved,
    /// moved or deleted by someone else): nothing was written; the change is applied again once
    /// the scanner has recorded the file.
    struct ChangedOnDisk: Error {}

    let root: String
    /// Every file this applier creates, replaces, trashes or copies is reached through it.
    let gate: PathGate
    let index: Index
    let clock: ServerClock
    let scanner: Scanner
    let logger: Logger
    /// Conflict copies kept per document; older ones are removed.
    static let conflictCopiesKept = 5

    struct Summary: Sendable {
        var written = 0, trashed = 0, merged = 0, conflicts = 0, refused = 0, skipped = 0
        /// Documents whose file is changing under us (moved or deleted, not scanned yet): applied
        /// again once the scanner has caught up.
        var deferred: [JSONObject] = []
    }

    /// Applies documents from the server (pulled changes, or the current version a 409 sent back).
    func apply(_ documents: [JSONObject]) async throws -> Summary {
        var summary = Summary()
        for remote in try await applyNew(documents, summary: &summary) {
            do {
                try await apply(remote, summary: &summary)
            } catch {
                setAside(remote, after: error, summary: &summary)
            }
        }
        return summary
    }

    /// A change that could not be applied: again later if its file was changing under us,
    /// otherwise logged.
    private func setAside(_ remote: JSONObject, after error: any Error, summary: inout Summary) {
        if error is ChangedOnDisk {
            summary.deferred.append(remote)
        } else {
            logger.error("cannot apply a change from the server", metadata: ["doc.id": "\(remote["id"]?.string ?? "?")", "error": "\(error)"])
        }
    }

    /// The revision the server gave `remote` (0 if none).
    private static func revision(of remote: JSONObject) -> Int64 {
        if case .number(let r)? = remote[DocumentRules.revKey] { Int64(r) ?? 0 } else { 0 }
    }

    /// When `remote` was changed, in calibrated milliseconds (0 if not stamped).
    private static func changeStamp(of remote: JSONObject) -> Int64 {
        remote[DocumentRules.updatedAtKey]?.string.flatMap { Timestamp(rfc3339: $0)?.unixMilliseconds } ?? 0
    }

    /// What the folder may take of a document from the server: its wire body, with any
    /// `{"$file": …}` it holds defused (see ``FileReference/fromServerKey``): every path by which
    /// server content reaches a file (a new file, an update, a merge, a conflict copy, and so
    /// `resolve --keep theirs`) starts here.
    private static func content(of remote: JSONObject, docType: String) -> JSONObject {
        FileReference.defused(WireForm.body(remote, docType: docType))
    }

    /// Whether `docType` can name a folder inside the synced one.
    private static func isFolderName(_ docType: String) -> Bool {
        DocumentRules.docTypeProblem(docType) == nil && !DocumentRules.isIgnoredName(docType)
    }

    /// Writes the documents new to this folder (no row in the index, not tombstones) as a group:
    /// one look-up for all of them, their files created together (one flush to disk), one
    /// transaction recording them all. One at a time (the path below: a few index round trips and a
    /// transaction each) a first pull of 100,000 documents ran at ~300 a second. Returns the
    /// documents left for that path, in their order.
    private func applyNew(_ documents: [JSONObject], summary: inout Summary) async throws -> [JSONObject] {
        struct New {
            let position: Int
            let id: String
            let docType: String
            let rev: Int64
            let stamp: Int64
            let content: JSONObject
            var path = ""
        }
        var candidates: [New] = []
        var ids = Set<String>()
        for (position, remote) in documents.enumerated() {
            // A second version of the same document in one page goes the other way, after the first.
            guard let id = remote["id"]?.string, DocumentRules.isSafeIdentifier(id), ids.insert(id).inserted,
                  let docType = remote["docType"]?.string, Self.isFolderName(docType), remote[DocumentRules.deletedAtKey]?.isNull ?? true
            else { continue }
            candidates.append(New(
                position: position, id: id, docType: docType, rev: Self.revision(of: remote), stamp: Self.changeStamp(of: remote),
                content: Self.content(of: remote, docType: docType)))
        }
        guard !candidates.isEmpty else { return documents }
        let candidateIDs = candidates.map(\.id)
        let known = try await index.read { try $0.documents(ids: candidateIDs) }
        candidates.removeAll { known[$0.id] != nil }
        guard !candidates.isEmpty else { return documents }
        var taken = Set<String>()
        // Opened once: a page's documents share a few folders (a folder the gate refuses is
        // reported when its documents are written, below).
        var folders: [String: GatedFolder] = [:]
        for i in candidates.indices {
            let docType = candidates[i].docType
            if folders[docType] == nil { folders[docType] = try? gate.folder(docType, create: true) }
            candidates[i].path = freePath(for: candidates[i].id, docType: docType, avoiding: taken, in: folders[docType])
            taken.insert(candidates[i].path)
        }
        let paths = candidates.map(\.path)
        // A row at a free path: a file deleted on disk whose deletion the index has not seen yet.
        let recorded = try await index.read { try $0.files(at: paths) }
        var creating: [(new: New, file: GatedFile)] = []
        for new in candidates {
            do {
                guard recorded[new.path] == nil else { throw ChangedOnDisk() }
                let slash = new.path.lastIndex(of: "/")!
                let folderPath = String(new.path[..<slash])
                let folder = try folders[folderPath] ?? gate.folder(folderPath, create: true)
                folders[folderPath] = folder
                creating.append((new, try GatedFile(folder, String(new.path[new.path.index(after: slash)...]))))
            } catch {
                setAside(documents[new.position], after: error, summary: &summary)
            }
        }
        // The content is the wire body: no reserved fields, its docType written out.
        let files = creating.map { (file: $0.file, bytes: JSONWriter.fileBytes(.object($0.new.content))) }
        var records: [Written] = []
        for ((new, target), created) in zip(creating, FileSystem.createAll(files)) {
            do {
                // Not created: a file appeared at that name meanwhile.
                guard try created.get() else { throw ChangedOnDisk() }
                let readStart = FileSystem.realtimeNanoseconds()
                guard let file = try? FileSystem.read(target, maxSize: Int.max) else { throw ChangedOnDisk() }
                records.append(Written(
                    path: new.path, id: new.id, docType: new.docType, file: file, readStart: readStart, content: new.content,
                    base: new.content, rev: new.rev, stamp: new.stamp, pending: nil, now: clock.now()))
            } catch {
                setAside(documents[new.position], after: error, summary: &summary)
            }
        }
        let written = records
        if !written.isEmpty {
            try await index.write { tx in
                for record in written { try record.record(tx) }
            }
        }
        summary.written += written.count
        let handled = Set(candidates.map(\.position))
        return documents.indices.filter { !handled.contains($0) }.map { documents[$0] }
    }

    private func apply(_ remote: JSONObject, summary: inout Summary) async throws {
        guard let id = remote["id"]?.string, DocumentRules.isSafeIdentifier(id) else {
            try await refuse(remote["id"]?.string ?? "(no id)", "its id is not a safe identifier", summary: &summary)
            return
        }
        guard let docType = remote["docType"]?.string, Self.isFolderName(docType) else {
            try await refuse(id, "its docType cannot be a folder name", summary: &summary)
            return
        }
        let rev = Self.revision(of: remote)
        var known = try await index.read { try $0.document(id: id) }
        // A server without revisions (rev 0) is never "older": its content decides.
        if rev > 0, let known, let seen = known.serverRev, seen >= rev {
            summary.skipped += 1  // our own write coming back, or older than what we have
            return
        }
        let remoteDeleted = remote[DocumentRules.deletedAtKey].map { !$0.isNull } ?? false
        let wireBody = Self.content(of: remote, docType: docType)
        var mapped = try await localForm(wireBody, known: known)
        // Our own write coming back before its acknowledgement was recorded: nothing to write.
        if var doc = known, doc.deletedAt == nil, !remoteDeleted, (try? JSONParser.parse(doc.body)) == .object(mapped) {
            doc.serverRev = rev
            doc.base = JSONWriter.string(.object(mapped))
            let final = doc
            try await index.write { tx in
                if let entry = try tx.outboxEntry(key: "doc:\(id)"), entry.bodyHash == final.bodyHash {
                    try tx.removeEntry(entry)
                }
                var synced = final
                if try tx.outboxEntry(key: "doc:\(id)") == nil { synced.state = .synced }
                try tx.upsertDocument(synced)
            }
            summary.skipped += 1
            return
        }
        if let path = known?.path {
            // A .docsyncignore rule has covered the file since it was synced: it stays as it is
            // (the index no longer follows it, so nothing could tell a save there from ours).
            if scanner.walker.isIgnored(path, isDirectory: false) {
                summary.skipped += 1
                return
            }
            guard let info = FileSystem.info(absolute(path)) else {
                summary.deferred.append(remote)  // moved or deleted on disk; the watcher will tell
                return
            }
            // A local edit not scanned yet must reach the index before anything is written over it.
            if let row = try await index.read({ try $0.file(at: path) }), FileStat(info) != row.stat {
                let scanned = try await scanner.scan(ChangeBatch(paths: [path]))
                if scanned.queued + scanned.deleted > 0 { scanner.queued() }
                known = try await index.read { try $0.document(id: id) }
                mapped = try await localForm(wireBody, known: known)
            }
        }
        let remoteStamp = Self.changeStamp(of: remote)
        let pending = try await index.read { try $0.outboxEntry(key: "doc:\(id)") }
        let remoteBody = mapped

        guard var doc = known else {
            // New to this folder.
            if remoteDeleted {
                try await index.write { tx in
                    try tx.upsertDocument(DocumentRow(
                        id: id, docType: docType, path: nil, body: JSONWriter.string(.object(remoteBody)), bodyHash: "", serverRev: rev,
                        base: JSONWriter.string(.object(remoteBody)), state: .synced))
                }
                summary.skipped += 1
                return
            }
            let path = freePath(for: id, docType: docType)
            try await writeFile(path: path, id: id, docType: docType, content: remoteBody, base: remoteBody, rev: rev, pending: nil, stamp: remoteStamp)
            summary.written += 1
            return
        }

        let base = doc.base.flatMap { try? JSONParser.parse($0) }
        let localBody = (try? JSONParser.parse(doc.body))?.object ?? JSONObject()
        let localDeleted = doc.deletedAt != nil

        if pending == nil {
            // Nothing local since the last agreed version: take the server's.
            if remoteDeleted {
                try await trash(&doc, rev: rev, body: remoteBody)
                summary.trashed += 1
            } else {
                let path = doc.path ?? freePath(for: id, docType: docType)
                try await writeFile(path: path, id: id, docType: docType, content: remoteBody, base: remoteBody, rev: rev, pending: nil, stamp: remoteStamp)
                summary.written += 1
            }
            return
        }

        // Changed on both sides.
        summary.merged += 1
        switch (localDeleted, remoteDeleted) {
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
            let merged = try await mergeAndWrite(
                &summary, doc: doc, id: id, docType: docType, base: base, local: localBody, remote: remoteBody, rev: rev,
                remoteStamp: remoteStamp, pending: pending, forcePush: true)
            _ = merged
        case (true, false) where remoteBody == localBody:
            // The server holds our own last version (sent before a crash, never acknowledged):
            // nobody edited it, so the delete stands; re-send the tombstone against this revision.
            doc.serverRev = rev
            doc.base = JSONWriter.string(.object(remoteBody))
            let final = doc
            try await index.write { try $0.upsertDocument(final) }
        case (true, false):
            // Deleted here, edited there: the edit wins, the file comes back.
            logger.info("document deleted here but edited on the server; the edit wins", metadata: ["doc.id": "\(id)"])
            if let p = pending { _ = try await index.write { try $0.removeEntry(p) } }
            let path = freePath(for: id, docType: docType)
            try await writeFile(path: path, id: id, docType: docType, content: remoteBody, base: remoteBody, rev: rev, pending: nil, stamp: remoteStamp)
        case (false, false):
            _ = try await mergeAndWrite(
                &summary, doc: doc, id: id, docType: docType, base: base, local: localBody, remote: remoteBody, rev: rev,
                remoteStamp: remoteStamp, pending: pending, forcePush: false)
        }
    }

    /// The server's version as the folder holds it: URLs of uploaded files back to the
    /// `{"$file": …}` references they came from (see ``AttachmentMapping``).
    private func localForm(_ wireBody: JSONObject, known: DocumentRow?) async throws -> JSONObject {
        guard let known else { return wireBody }
        let rows = try await index.read { tx -> [UploadRow]? in
            guard try tx.hasUploads() || FileReference.mayAppear(in: known.body) else { return nil }
            return try tx.uploads(docID: known.id)
        }
        guard let rows, let local = try? JSONParser.parse(known.body).object else { return wireBody }
        return AttachmentMapping(rows).toLocal(wireBody, local: local)
    }

    /// Three-way merge of a local change with the server's version; the later stamp wins where both
    /// changed the same value, the other side's full version going to a conflict copy. The merged
    /// document is written and, unless the server already holds it (or `forcePush`), queued.
    private func mergeAndWrite(
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
    private func writeFile(
        path: String, id: String, docType: String, content: JSONObject, base: JSONObject, rev: Int64, pending: OutboxEntry?, stamp: Int64
    ) async throws {
        let target = try gate.file(path, createFolders: true)
        var fileObject = content
        for key in DocumentRules.reservedKeys { fileObject[key] = nil }
        // What the file holds must be what the index last read there: a save not scanned yet is
        // merged first, never written over.
        let recorded = try await index.read { try $0.file(at: path) }
        var keptBeside = false
        if FileSystem.info(target) == nil {
            // Deleted (or moved away) since the index saw it: the watcher reports that first.
            guard recorded == nil else { throw ChangedOnDisk() }
            guard try FileSystem.replace(target, with: JSONWriter.fileBytes(.object(fileObject)), ifItHolds: nil) else { throw ChangedOnDisk() }
        } else {
            let current = try? FileSystem.read(target, maxSize: Int.max)
            guard let recorded, recorded.hash == current.map({ ContentHash.sha256Hex($0.bytes) }) else { throw ChangedOnDisk() }
            if let current, let existing = try? DocumentRules.parseObject(current.bytes, maxSize: Int.max) {
                // A docType the file leaves to its folder stays implicit.
                if existing["docType"] == nil, (try? DocumentRules.docType(of: JSONObject(), relativePath: path)) == docType {
                    fileObject["docType"] = nil
                }
                let laidOut = Merge.keepingOrder(of: .object(existing), .object(fileObject))
                if laidOut != .object(existing) {
                    guard try FileSystem.replace(target, with: JSONWriter.fileBytes(laidOut), ifItHolds: current.bytes, mode: current.info.mode) else {
                        throw ChangedOnDisk()
                    }
                }
            } else {
                // Not a document right now (half edited, broken, unreadable): the file stays as the
                // user left it, the server's version goes beside it; once the file is fixed, it is sent.
                try writeConflictCopy(of: path, content)
                logger.warning(
                    "the file is not a valid document; the server's version is kept beside it", metadata: ["file.path": "\(path)", "doc.id": "\(id)"])
                keptBeside = true
            }
        }
        let readStart = FileSystem.realtimeNanoseconds()
        let written = keptBeside ? nil : try? FileSystem.read(target, maxSize: Int.max)
        if !keptBeside && written == nil { throw ChangedOnDisk() }
        let record = Written(
            path: path, id: id, docType: docType, file: written, readStart: readStart, content: content, base: base, rev: rev,
            stamp: stamp, pending: pending, now: clock.now())
        try await index.write { tx in try record.record(tx) }
        if pending != nil { scanner.queued() }  // the pusher is told, as for a scanned change
    }

    /// A document written to the folder (or, with `file` nil, kept beside a file that is not a
    /// document right now), as the index records it.
    struct Written {
        let path: String
        let id: String
        let docType: String
        /// The file as read back just after writing it, and when that read started.
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

        /// Texts and hashes are made here, outside the transaction that records them.
        init(
            path: String, id: String, docType: String, file: (bytes: [UInt8], info: EntryInfo)?, readStart: Int64, content: JSONObject,
            base: JSONObject, rev: Int64, stamp: Int64, pending: OutboxEntry?, now: Int64
        ) {
            self.path = path
            self.id = id
            self.docType = docType
            self.file = file
            self.readStart = readStart
            fileHash = file.map { ContentHash.sha256Hex($0.bytes) }
            let body = WireForm.body(content, docType: docType)
            bodyText = JSONWriter.string(.object(body))
            bodyHash = ContentHash.sha256Hex(bodyText.utf8)
            // A base equal to the body (every document a pull writes new) is not written out twice.
            baseText = base == body ? bodyText : JSONWriter.string(.object(base))
            self.rev = rev
            self.stamp = stamp
            self.pending = pending
            self.now = now
        }

        /// Records file and document (and the outbox entry) in `tx`.
        func record(_ tx: IndexTransaction) throws {
            if let holder = try tx.file(forDocument: id), holder.path != path { try tx.deleteFile(at: holder.path) }
            if let file {
                try tx.upsertFile(FileRow(
                    path: path, docID: id, docType: docType, hash: fileHash,
                    stat: FileStat(recording: file.info, readBefore: readStart), state: .ok, error: nil))
            }
            var doc = try tx.document(id: id) ?? DocumentRow(id: id, docType: docType, path: path, body: bodyText, bodyHash: bodyHash)
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
                try tx.enqueue(key: pending.key, docID: id, kind: "put", payload: nil, bodyHash: bodyHash, queuedAt: now)
            } else {
                doc.state = .synced
                doc.pushedHash = bodyHash
                if let entry = try tx.outboxEntry(key: "doc:\(id)") { try tx.removeEntry(entry) }
            }
            try tx.upsertDocument(doc)
        }
    }

    /// Moves the file of a document deleted on the server into `.docsync/trash/` (recoverable).
    private func trash(_ doc: inout DocumentRow, rev: Int64, body: JSONObject) async throws {
        if let path = doc.path, let source = try? gate.file(path), FileSystem.info(source) != nil {
            let recorded = try await index.read { try $0.file(at: path) }
            let trashDir = try gate.folder(Index.stateFolderName + "/trash", create: true)
            let target = try moveToTrash(source, into: trashDir, stem: "\(doc.id)-\(Timestamp(unixMilliseconds: clock.now()).compactUTC)")
            // Saved just before it moved: it comes back, and is merged once scanned.
            if (try? FileSystem.read(target, maxSize: Int.max)).map({ ContentHash.sha256Hex($0.bytes) }) != recorded?.hash {
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
        try await index.write { tx in
            if let path { try tx.deleteFile(at: path) }
            try tx.upsertDocument(final)
        }
        doc = final
    }

    /// Moves `source` to `<stem>.json` in the trash (`<stem>-2.json` and on, for another file
    /// trashed in the same second) and returns where it went.
    private func moveToTrash(_ source: GatedFile, into trash: GatedFolder, stem: String) throws -> GatedFile {
        var n = 1
        while true {
            let target = try GatedFile(trash, n == 1 ? stem + ".json" : "\(stem)-\(n).json")
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
    private func writeConflictCopy(of path: String, _ version: JSONObject) throws {
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
        let bytes = JSONWriter.fileBytes(.object(fileObject))
        let stamp = Timestamp(unixMilliseconds: clock.now()).compactUTC
        // After every copy of the same second, also one already pruned: a lower number would sort
        // this copy among the oldest.
        var n = (copies.map(age).filter { $0.0 == stamp }.map(\.1).max() ?? 0) + 1
        func name(_ n: Int) -> String { stem + stamp + (n == 1 ? "" : "-\(n)") + ".json" }
        while try !FileSystem.replace(GatedFile(folder, name(n)), with: bytes, ifItHolds: nil) { n += 1 }
        copies.append(name(n))
        for old in copies.sorted(by: { age($0) < age($1) }).dropLast(Self.conflictCopiesKept) {
            if let copy = try? GatedFile(folder, old) { FileSystem.remove(copy) }
        }
    }

    private func refuse(_ id: String, _ reason: String, summary: inout Summary) async throws {
        summary.refused += 1
        let key = "refused:" + String(id.prefix(200))
        let known = try await index.read { try $0.meta(key) }
        if known == nil {
            logger.error("refused a document from the server: \(reason); nothing was written", metadata: ["doc.id": "\(id.prefix(200))"])
            try await index.write { try $0.setMeta(key, reason) }
        }
    }
}
