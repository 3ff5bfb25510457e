import DocsyncClock
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import DocsyncWatcher
import Foundation
import Logging

/// What one reconcile pass did, for logs, `sync`'s summary and tests.
public struct ScanSummary: Sendable, Hashable {
    public var queued = 0
    public var moved = 0
    public var deleted = 0
    public var unchanged = 0
    public var invalid = 0
    public var idsAssigned = 0
    public var read = 0
    public var bytesRead = 0
}

/// Turns what is on disk into index state and outbox entries.
///
/// Given the paths a watcher batch names (or the whole tree, at start and after an inotify
/// overflow), it stats them, reads only those whose size/mtime/inode changed, and applies the
/// document rules: ids assigned and written back, moves recognised by id, copies given fresh ids,
/// vanished files turned into tombstones. Each chunk of files is committed in one transaction
/// together with the outbox entries it creates.
struct Scanner: Sendable {
    let root: String
    let index: Index
    let clock: ServerClock
    let maxFileSize: Int
    let logger: Logger
    let walker: TreeWalker
    /// Writes into the tree (an id written into a file) go through it.
    let gate: PathGate
    let attachments: Attachments
    /// Told after each committed chunk that queued work, so pushing starts while a long scan
    /// (an initial import) is still reading.
    let queued: @Sendable () -> Void

    /// Files read and committed per transaction: large enough to amortise the commit, small enough
    /// that an import of 100k files shows progress and keeps memory flat.
    static let chunkSize = 512

    init(
        root: String, gate: PathGate, index: Index, clock: ServerClock, maxFileSize: Int, ignore: IgnoreRules = IgnoreRules(), logger: Logger,
        queued: @escaping @Sendable () -> Void = {}
    ) {
        self.queued = queued
        self.root = root
        self.gate = gate
        self.index = index
        self.clock = clock
        self.maxFileSize = maxFileSize
        self.logger = logger
        self.walker = TreeWalker(root: root, ignore: ignore)
        self.attachments = Attachments(root: root)
    }

    // MARK: - Gathering

    /// A document-named file seen on disk.
    struct Seen {
        var path: String
        var info: EntryInfo
        var nameIsUTF8: Bool
        var force: Bool
    }

    /// Reconciles the whole tree with the index.
    func fullScan() async throws -> ScanSummary {
        let found = walker.walkConcurrently(removeStaleTemporaries: true, threads: ProcessInfo.processInfo.activeProcessorCount)
            .filter { DocumentRules.isDocumentName(lastComponent($0.path)) }
        let known = try await index.read { try $0.allFileStats() }
        // Files a new ignore rule now covers are forgotten, not deleted on the server.
        let nowIgnored = known.keys.filter { walker.isIgnored($0, isDirectory: false) }
        if !nowIgnored.isEmpty { try await index.write { tx in for path in nowIgnored { try tx.deleteFile(at: path) } } }
        var vanished = Set(known.keys).subtracting(nowIgnored)
        var seen: [Seen] = []
        seen.reserveCapacity(found.count)
        var summary = ScanSummary()
        for f in found {
            vanished.remove(f.path)
            if let k = known[f.path], k.stat == FileStat(f.info), k.state == .ok {
                summary.unchanged += 1
                continue
            }
            seen.append(Seen(path: f.path, info: f.info, nameIsUTF8: f.nameIsUTF8, force: false))
        }
        // Documents whose attached files changed, appeared or vanished while the agent was away.
        let pending = Set(seen.map(\.path))
        for path in try await documentsWithChangedAttachments() where !pending.contains(path) {
            if let info = FileSystem.info(walker.absolute(path)), info.kind == .file {
                seen.append(Seen(path: path, info: info, nameIsUTF8: true, force: true))
                summary.unchanged -= 1
            }
        }
        try await apply(seen: seen, vanished: vanished, summary: &summary)
        return summary
    }

    /// Paths of documents one of whose referenced files no longer has the stat it was hashed at.
    private func documentsWithChangedAttachments() async throws -> [String] {
        let jobs = try await index.read { tx -> [(UploadRow, String?)] in
            guard try tx.hasUploads() else { return [] }
            return try tx.uploadsWithFiles().map { ($0, try tx.document(id: $0.docID)?.path) }
        }
        var out = Set<String>()
        for (job, documentPath) in jobs {
            guard let documentPath, let path = job.path else { continue }
            let now = FileSystem.info(walker.absolute(path)).map(FileStat.init)
            if now != job.stat || (now == nil) != (job.state == .invalid) { out.insert(documentPath) }
        }
        return out.sorted()
    }

    /// Reconciles the paths a watcher batch named.
    func scan(_ batch: ChangeBatch) async throws -> ScanSummary {
        var seen: [String: Seen] = [:]
        var vanished = Set<String>()
        var walkedFolders: [String] = []
        for path in batch.paths where !walker.isIgnored(path, isDirectory: false) || FileSystem.info(walker.absolute(path))?.kind == .directory {
            let abs = walker.absolute(path)
            guard let info = FileSystem.info(abs) else {
                vanished.insert(path)
                continue
            }
            switch info.kind {
            case .directory:
                walkedFolders.append(path)
                for f in walker.walk(path) where DocumentRules.isDocumentName(lastComponent(f.path)) {
                    seen[f.path] = Seen(path: f.path, info: f.info, nameIsUTF8: f.nameIsUTF8, force: false)
                }
            case .file where DocumentRules.isDocumentName(lastComponent(path)):
                seen[path] = Seen(path: path, info: info, nameIsUTF8: true, force: false)
            default:
                vanished.insert(path)  // replaced by something that is not a document
            }
        }
        // Files that documents refer to: their documents are looked at again (the hash decides
        // whether anything is uploaded).
        let touched = Set(batch.paths).union(batch.attributeOnly)
        let referencing = try await index.read { tx -> [String] in
            guard try tx.hasUploads() else { return [] }
            var paths = Set<String>()
            for path in touched {
                for job in try tx.uploads(atOrUnder: path) {
                    if let p = try tx.document(id: job.docID)?.path { paths.insert(p) }
                }
            }
            return paths.sorted()
        }
        for path in referencing where seen[path] == nil {
            if let info = FileSystem.info(walker.absolute(path)), info.kind == .file {
                seen[path] = Seen(path: path, info: info, nameIsUTF8: true, force: true)
            }
        }
        let attributeOnly = batch.attributeOnly.subtracting(batch.paths)
        let (known, expanded) = try await index.read { [seen, vanished, walkedFolders] tx -> ([String: FileRow], Set<String>) in
            var known: [String: FileRow] = [:]
            for path in seen.keys { if let row = try tx.file(at: path) { known[path] = row } }
            var expanded = Set<String>()
            // A path that vanished may have been a folder: everything the index had under it went too.
            for path in vanished { for row in try tx.files(atOrUnder: path) { expanded.insert(row.path) } }
            // A folder that was walked may have lost files the watcher never reported (a rename
            // into it replaced its contents, an event lost): they are gone as well.
            for folder in walkedFolders { for row in try tx.files(atOrUnder: folder) where seen[row.path] == nil { expanded.insert(row.path) } }
            for path in attributeOnly {
                if let row = try tx.file(at: path), row.state == .invalid { known[path] = row }
            }
            return (known, expanded)
        }
        // A chmod that makes an unreadable file readable arrives as an attribute change only.
        for path in attributeOnly where known[path] != nil && seen[path] == nil {
            if let info = FileSystem.info(walker.absolute(path)), info.kind == .file {
                seen[path] = Seen(path: path, info: info, nameIsUTF8: true, force: true)
            }
        }
        var summary = ScanSummary()
        var changed: [Seen] = []
        for s in seen.values {
            if !s.force, let k = known[s.path], k.stat == FileStat(s.info), k.state == .ok {
                summary.unchanged += 1
            } else {
                changed.append(s)
            }
        }
        try await apply(seen: changed, vanished: expanded, summary: &summary)
        return summary
    }

    /// Reads again the files at `paths` whose recorded stat is not (or no longer) what is on disk,
    /// for the agent's settling of ``FileStat/unsettled`` stats. Only files still there: a path
    /// that is gone is left to the watcher, whose batch tells a move from a delete.
    func reread(_ paths: [String]) async throws -> ScanSummary {
        var seen: [Seen] = []
        for path in paths {
            if let info = FileSystem.info(walker.absolute(path)), info.kind == .file {
                seen.append(Seen(path: path, info: info, nameIsUTF8: true, force: false))
            }
        }
        let known = try await index.read { [seen] tx in try seen.map { try tx.file(at: $0.path)?.stat } }
        var summary = ScanSummary()
        let changed = zip(seen, known).filter { s, k in k != FileStat(s.info) }.map(\.0)
        summary.unchanged = seen.count - changed.count
        try await apply(seen: changed, vanished: [], summary: &summary)
        return summary
    }

    // MARK: - Applying

    /// A file read from disk, judged against the document rules. A class: a chunk's observations
    /// are passed from the readers to the index's writer and looked at several times there, and
    /// copying a reference is one count where copying the fields was eight.
    final class Observed: Sendable {
        let path: String
        let info: EntryInfo
        /// The stat to record with what was read (see ``FileStat/init(recording:readBefore:)``).
        let stat: FileStat
        let bytes: [UInt8]
        let hash: String
        let result: Result<JSONObject, DocumentProblem>
        let attachments: [AttachmentObservation]
        /// The document's wire body as compact text, and its hash: worked out while reading, off
        /// the index's single writer.
        let wire: (text: String, hash: String)?

        init(
            path: String, info: EntryInfo, stat: FileStat, bytes: [UInt8], hash: String, result: Result<JSONObject, DocumentProblem>,
            attachments: [AttachmentObservation] = [], wire: (text: String, hash: String)? = nil
        ) {
            self.path = path
            self.info = info
            self.stat = stat
            self.bytes = bytes
            self.hash = hash
            self.result = result
            self.attachments = attachments
            self.wire = wire
        }
    }

    /// The wire body of a file just read (`bytes`, hashed `hash`).
    static func wire(_ result: Result<JSONObject, DocumentProblem>, path: String, bytes: [UInt8], hash: String) -> (text: String, hash: String)? {
        guard case .success(let object) = result, let docType = try? DocumentRules.docType(of: object, relativePath: path) else { return nil }
        return wireText(object, docType: docType, source: (bytes, hash))
    }

    /// The compact wire text of `object` and its hash. With the `source` it was parsed from (its
    /// bytes and their hash), a source already in the wire form (compact JSON with its docType and
    /// no stamps of its own, as programs write records) is the text, and lends its hash when it
    /// has no whitespace around it either: the same bytes are neither written nor hashed twice.
    /// Any other text is written into room for the source and the docType.
    static func wireText(_ object: JSONObject, docType: String, source: (bytes: [UInt8], hash: String)? = nil) -> (text: String, hash: String) {
        if let source, WireForm.isBody(object), let range = JSONWriter.compactRange(of: source.bytes) {
            let text = String(decoding: source.bytes[range], as: UTF8.self)
            return (text, range.count == source.bytes.count ? source.hash : ContentHash.sha256Hex(text.utf8))
        }
        let capacity = source.map { $0.bytes.count + 16 + docType.utf8.count } ?? 256
        let text = JSONWriter.string(.object(WireForm.body(object, docType: docType)), capacity: capacity)
        return (text, ContentHash.sha256Hex(text.utf8))
    }

    private func apply(seen: [Seen], vanished: Set<String>, summary: inout ScanSummary) async throws {
        var vanished = vanished
        // Files whose index row already holds their id go first, so that of an original and its
        // copy, the original keeps the id.
        let ordered = seen.sorted { $0.path < $1.path }
        // Reading and parsing the next chunk overlaps committing this one.
        func observing(_ start: Int) -> Task<[Observed], Never> {
            let chunk = ordered[start..<min(start + Self.chunkSize, ordered.count)]
            return Task { [self] in
                // Two halves at once: reading, parsing and hashing use a second core.
                let middle = chunk.startIndex + chunk.count / 2
                async let first = chunk[..<middle].map(observe)
                let second = chunk[middle...].map(observe)
                return await first + second
            }
        }
        var start = 0
        var next = observing(0)
        repeat {
            let observed = await next.value
            start += Self.chunkSize
            let isLast = start >= ordered.count
            if !isLast { next = observing(start) }
            for o in observed { summary.read += 1; summary.bytesRead += o.bytes.count }
            let result = try await commit(observed, vanished: isLast ? vanished : [], claimedVanished: vanished)
            summary.queued += result.queued
            if result.queued + result.deleted > 0 && !isLast { queued() }
            summary.moved += result.moved
            summary.deleted += result.deleted
            summary.unchanged += result.unchanged
            summary.invalid += result.invalid
            summary.idsAssigned += result.idsAssigned
            vanished.subtract(result.claimed)
        } while start < ordered.count
    }

    private func observe(_ s: Seen) -> Observed {
        let abs = walker.absolute(s.path)
        if !s.nameIsUTF8 {
            return Observed(path: s.path, info: s.info, stat: FileStat(recording: s.info), bytes: [], hash: "", result: .failure(.nameNotUTF8))
        }
        let readStart = FileSystem.realtimeNanoseconds()
        do throws(DocumentProblem) {
            let (bytes, info) = try FileSystem.read(abs, maxSize: maxFileSize)
            let hash = ContentHash.sha256Hex(bytes)
            let result = Result { () throws(DocumentProblem) in try DocumentRules.parseObject(bytes, maxSize: maxFileSize) }
            return Observed(
                path: s.path, info: info, stat: FileStat(recording: info, readBefore: readStart), bytes: bytes, hash: hash, result: result, attachments: observeAttachments(result, path: s.path),
                wire: Self.wire(result, path: s.path, bytes: bytes, hash: hash))
        } catch {
            return Observed(path: s.path, info: s.info, stat: FileStat(recording: s.info, readBefore: readStart), bytes: [], hash: "", result: .failure(error))
        }
    }

    /// The files a parsed document refers to, checked and hashed (outside any transaction).
    private func observeAttachments(_ result: Result<JSONObject, DocumentProblem>, path: String) -> [AttachmentObservation] {
        guard case .success(let object) = result, object.members.contains(where: { FileReference.isReference($0.value) }) else { return [] }
        let index = self.index
        return attachments.observe(object, documentPath: path) { file, stat in
            (try? index.readSync { try $0.knownHash(path: file, stat: stat) }) ?? nil
        }
    }

    struct CommitResult: Sendable {
        var queued = 0, moved = 0, deleted = 0, unchanged = 0, invalid = 0, idsAssigned = 0
        var claimed = Set<String>()
    }

    /// Writes one chunk's outcome in a single transaction. `claimedVanished` are vanished paths a
    /// move in this chunk may claim; `vanished` the ones to tombstone now (the last chunk's turn).
    private func commit(_ observed: [Observed], vanished: Set<String>, claimedVanished: Set<String>) async throws -> CommitResult {
        // Ids have to be written into files before the transaction that records them: a crash in
        // between leaves a file with an id the index does not know yet, which the next scan adopts.
        let maxFileSize = self.maxFileSize
        var result: RecordResult
        var assigned = 0
        let everyFileHasAnID = !observed.contains { o in
            guard case .success(let object) = o.result else { return false }
            return (try? DocumentRules.declaredID(of: object)) == .some(nil)
        }
        if everyFileHasAnID, let recorded = try await planAndRecord(observed, vanished: vanished, claimedVanished: claimedVanished) {
            // The usual case, every file carrying its id (and none a copy): planned and recorded
            // in one transaction.
            result = recorded
        } else {
            var prepared: [Observed] = []
            let plan = try await index.read { tx in try self.planIDs(observed, rows: ChunkRows(observed, tx: tx), vanished: claimedVanished) }
            for (o, needsID) in zip(observed, plan) {
                guard needsID, case .success = o.result else {
                    prepared.append(o)
                    continue
                }
                prepared.append(writeID(into: o))
                assigned += 1
            }
            let stamp = clock.now()
            result = try await index.write { [prepared] tx in
                try Self.record(
                    prepared, rows: ChunkRows(prepared, tx: tx), vanished: vanished, movable: claimedVanished, stamp: stamp,
                    maxFileSize: maxFileSize, tx: tx)
            }
        }
        result.counts.idsAssigned = assigned
        for (path, reason) in result.newProblems {
            logger.warning("invalid document, not synced: \(reason)", metadata: ["file.path": "\(path)"])
        }
        for (path, property, reason) in result.attachmentProblems {
            logger.warning(
                "file reference cannot be uploaded: \(reason); the property is null on the server until this is fixed",
                metadata: ["file.path": "\(path)", "property": "\(property)"])
        }
        return result.counts
    }

    /// Records the chunk if no file in it needs an id written first; `nil` (nothing written) if one does.
    private func planAndRecord(_ observed: [Observed], vanished: Set<String>, claimedVanished: Set<String>) async throws -> RecordResult? {
        let stamp = clock.now()
        let maxFileSize = self.maxFileSize
        return try await index.write { tx in
            // One set of look-ups serves planning and recording: nothing changes in between.
            let rows = try ChunkRows(observed, tx: tx)
            guard !(try self.planIDs(observed, rows: rows, vanished: claimedVanished).contains(true)) else { return nil }
            return try Self.record(
                observed, rows: rows, vanished: vanished, movable: claimedVanished, stamp: stamp, maxFileSize: maxFileSize, tx: tx)
        }
    }

    /// For each observed file, whether it needs a fresh id: it has none, or its id is already
    /// taken by another file that still exists (it is a copy).
    private func planIDs(_ observed: [Observed], rows: ChunkRows, vanished: Set<String>) throws -> [Bool] {
        func declared(_ o: Observed) -> String?? {
            guard case .success(let object) = o.result else { return .none }
            // A file that cannot become a document anyway (no usable docType) is reported as it
            // is: no id is written into it.
            guard (try? DocumentRules.docType(of: object, relativePath: o.path)) != nil else { return .none }
            do {
                return .some(try DocumentRules.declaredID(of: object))
            } catch {
                return .none  // an invalid id is reported, not replaced
            }
        }
        var declaredAt: [String: String] = [:]
        for o in observed { if case .some(.some(let id)) = declared(o) { declaredAt[o.path] = id } }
        // Files whose index row already holds the id they declare go first: of an original and
        // its copy, the original keeps the id.
        var holders = Set<Int>()
        for i in observed.indices {
            if let id = declaredAt[observed[i].path], try rows.file(at: observed[i].path)?.docID == id { holders.insert(i) }
        }
        let order = observed.indices.sorted { holders.contains($0) && !holders.contains($1) }
        var claimed = Set<String>()
        var plan = [Bool](repeating: false, count: observed.count)
        for i in order {
            guard case .some(let maybeID) = declared(observed[i]) else { continue }
            guard let id = maybeID, !claimed.contains(id) else {
                plan[i] = true  // no id yet, or a second file in this batch with the same one
                continue
            }
            if let holder = try rows.file(forDocument: id), holder.path != observed[i].path,
               !vanished.contains(holder.path), FileSystem.info(walker.absolute(holder.path)) != nil,
               observed.contains(where: { $0.path == holder.path }) ? declaredAt[holder.path] == id : true
            {
                plan[i] = true  // the file that has this id is still there and keeps it: this one is a copy
                continue
            }
            claimed.insert(id)
        }
        return plan
    }

    /// Inserts a fresh UUID into the file, atomically, unless the file changed since it was read.
    private func writeID(into o: Observed) -> Observed {
        let id = UUID().uuidString.lowercased()
        let text = DocumentRules.settingID(id, in: o.bytes)
        // Only over the content that was read: if the user saved again meanwhile, their version
        // wins and the next event brings it back here.
        let written: Bool
        let target: GatedFile
        do {
            target = try gate.file(o.path)
            written = try FileSystem.replace(target, with: text, ifItHolds: o.bytes, mode: o.info.mode)
        } catch {
            return Observed(
                path: o.path, info: o.info, stat: o.stat, bytes: o.bytes, hash: o.hash,
                result: .failure(.unreadable("cannot write the assigned id into the file: \(error.reason)")))
        }
        guard written else {
            return Observed(
                path: o.path, info: o.info, stat: o.stat, bytes: o.bytes, hash: o.hash, result: .failure(.unreadable("changed while being read; will retry")))
        }
        let readStart = FileSystem.realtimeNanoseconds()
        let info = FileSystem.info(target) ?? o.info
        let parsed = Result { () throws(DocumentProblem) in try DocumentRules.parseObject(text, maxSize: Int.max) }
        logger.info("assigned id", metadata: ["file.path": "\(o.path)", "doc.id": "\(id)"])
        let hash = ContentHash.sha256Hex(text)
        return Observed(
            path: o.path, info: info, stat: FileStat(recording: info, readBefore: readStart), bytes: text, hash: hash, result: parsed, attachments: o.attachments,
            wire: Self.wire(parsed, path: o.path, bytes: text, hash: hash))
    }

    struct RecordResult: Sendable {
        var counts = CommitResult()
        var newProblems: [(String, String)] = []
        /// (document path, property, reason) of file references that cannot be uploaded.
        var attachmentProblems: [(String, String, String)] = []
    }

    private static func record(
        _ observed: [Observed], rows: ChunkRows, vanished: Set<String>, movable: Set<String>, stamp: Int64, maxFileSize: Int,
        tx: IndexTransaction
    ) throws -> RecordResult {
        var r = RecordResult()
        let anyUploads = try tx.hasUploads()
        var claimedIDs = Set<String>()
        var displaced: [String] = []  // ids whose file now holds another document
        var rows = rows
        for o in observed {
            let previous = try rows.file(at: o.path)
            let document: (id: String, docType: String, object: JSONObject)
            do throws(DocumentProblem) {
                let object = try o.result.get()
                let docType = try DocumentRules.docType(of: object, relativePath: o.path)
                guard let id = try DocumentRules.declaredID(of: object) else { throw .badID("no id could be assigned") }
                if claimedIDs.contains(id) { throw .duplicateID(id, otherPath: "another file in this batch") }
                document = (id, docType, object)
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
            claimedIDs.insert(document.id)
            if let old = previous?.docID, old != document.id { displaced.append(old) }
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
            try tx.upsertFile(FileRow(
                path: o.path, docID: document.id, docType: document.docType, hash: o.hash, stat: o.stat,
                state: .ok, error: nil))
            let (bodyText, bodyHash) = o.wire ?? wireText(document.object, docType: document.docType)
            var row = existing
                ?? DocumentRow(id: document.id, docType: document.docType, path: o.path, body: bodyText, bodyHash: "")
            if row.bodyHash == bodyHash && row.deletedAt == nil {
                if row.path != o.path { try tx.setDocumentPath(id: document.id, path: o.path) }
                let attached = try reconcileAttachments(o, id: document.id, object: document.object, anyUploads: anyUploads, stamp: stamp, tx: tx, result: &r)
                if attached.wireChanged {
                    // The file is the same but the server's copy changes (an attached file went
                    // missing or came back): the document is sent again.
                    row.updatedAt = stamp
                    row.state = .pending
                    try tx.upsertDocument(row)
                    try enqueue(row, stamp: stamp, tx: tx)
                    r.counts.queued += 1
                } else {
                    r.counts.unchanged += 1
                }
                continue
            }
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
            _ = try reconcileAttachments(o, id: document.id, object: document.object, anyUploads: anyUploads, stamp: stamp, tx: tx, result: &r)
            r.counts.queued += 1
        }
        for path in vanished where !r.counts.claimed.contains(path) {
            guard let previous = try tx.file(at: path) else { continue }
            try tx.deleteFile(at: path)
            if let id = previous.docID, !claimedIDs.contains(id) { displaced.append(id) }
        }
        for id in displaced where !claimedIDs.contains(id) {
            guard try tx.file(forDocument: id) == nil, var row = try tx.document(id: id), row.deletedAt == nil else { continue }
            row.path = nil
            row.deletedAt = stamp
            row.updatedAt = stamp
            row.state = .pending
            try tx.upsertDocument(row)
            try tx.deleteUploads(docID: id)
            try enqueue(row, stamp: stamp, tx: tx)
            r.counts.deleted += 1
        }
        return r
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
                guard case .success(let object) = o.result else { return nil }
                return (try? DocumentRules.declaredID(of: object)) ?? nil
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

    private static func reconcileAttachments(
        _ o: Observed, id: String, object: JSONObject, anyUploads: Bool, stamp: Int64, tx: IndexTransaction, result: inout RecordResult
    ) throws -> Attachments.Reconciled {
        // While no document has ever referenced a file there are no jobs: the bulk path skips the look-up.
        if o.attachments.isEmpty, !anyUploads { return Attachments.Reconciled() }
        let reconciled = try Attachments.reconcile(docID: id, object: object, observations: o.attachments, stamp: stamp, tx: tx)
        for (property, reason) in reconciled.newProblems { result.attachmentProblems.append((o.path, property, reason)) }
        return reconciled
    }

    /// Queues the document as the row now holds it (body, `updated_at`, and `deleted_at` for a tombstone).
    private static func enqueue(_ row: DocumentRow, stamp: Int64, tx: IndexTransaction) throws {
        try tx.enqueue(
            key: "doc:\(row.id)", docID: row.id, kind: "put", payload: nil,
            bodyHash: row.deletedAt == nil ? row.bodyHash : "deleted:" + row.bodyHash, queuedAt: stamp)
    }
}

func lastComponent(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
}

extension FileStat {
    /// How long after its mtime a file's stat can be trusted: 50 ms, or 3 s for an mtime on a
    /// whole second (see ``init(recording:readBefore:)``).
    static func racyMargin(mtimeNs: Int64) -> Int64 { mtimeNs % 1_000_000_000 == 0 ? 3_000_000_000 : 50_000_000 }

    /// The stat as it is on disk now, to compare with a recorded one.
    init(_ info: EntryInfo) {
        self.init(size: info.size, mtimeNs: info.mtimeNs, inode: info.inode)
    }

    /// The stat to record for content read (or written) just after `now`: ``unsettled`` if the
    /// file changed too recently for its mtime to tell a change made right after. Kernels before
    /// 6.13 stamp files from a clock that ticks every 1-10 ms, file systems with whole-second
    /// mtimes (FAT, ext3, some NFS servers) every second or two: a same-size save within that
    /// tick would otherwise look unchanged for good. The margin is 50 ms, or 3 s for an mtime on
    /// a whole second; such a file is read again at its next event or rescan (git's "racily
    /// clean" entries, handled the same way).
    init(recording info: EntryInfo, readBefore now: Int64 = FileSystem.realtimeNanoseconds()) {
        let settled = now - info.mtimeNs > Self.racyMargin(mtimeNs: info.mtimeNs)
        self.init(size: info.size, mtimeNs: settled ? info.mtimeNs : FileStat.unsettled, inode: info.inode)
    }
}

