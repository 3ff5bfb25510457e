import DocsyncClock
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import DocsyncSchema
import DocsyncWatcher
import Foundation
import Logging

/// Reading what changed: each file judged against the document rules, ids written into new
/// files, a chunk committed at a time.
extension Scanner {
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
        /// What the file holds as a document, or why it is not one.
        let result: Result<Parsed, DocumentProblem>
        let attachments: [AttachmentObservation]
        /// The document's wire body as compact text, and its hash: worked out while reading, off
        /// the index's single writer.
        let wire: (text: String, hash: String)?
        /// How the document fails its docType's schema (empty: it conforms; nil: no schema),
        /// checked while reading, off the writer too.
        let violations: [SchemaViolation]?

        /// `parsed` is judged here, on the reading thread, against `schemas` too; its object is
        /// kept only where the writer will look at it (`keepObject`, or a file reference in it).
        init(
            path: String, info: EntryInfo, stat: FileStat, bytes: [UInt8], hash: String, result parsed: Result<JSONObject, DocumentProblem>,
            attachments: [AttachmentObservation] = [], wire: (text: String, hash: String)? = nil, keepObject: Bool = true,
            schemas: SchemaBook? = nil
        ) {
            self.path = path
            self.info = info
            self.stat = stat
            self.bytes = bytes
            self.hash = hash
            self.result = parsed.map { Parsed($0, path: path, keepObject: keepObject || !attachments.isEmpty) }
            self.attachments = attachments
            self.wire = wire
            if let schemas, case .success(let object) = parsed, case .success(let judged) = result, case .success(let docType) = judged.docType {
                violations = schemas.violations(of: object, docType: docType)
            } else {
                violations = nil
            }
        }

        /// The parsed object: kept, or parsed again from the bytes read (rarely: a document
        /// without file references in an index that holds upload jobs, when the reader did not
        /// know it would be needed).
        func object() throws(DocumentProblem) -> JSONObject {
            let parsed = try result.get()
            if let object = parsed.object { return object }
            return try DocumentRules.parseObject(bytes, maxSize: Int.max)
        }
    }

    /// The fields of a parsed document the writer reads. The object itself goes on the reading
    /// thread unless asked for: its many small allocations, freed by the writer's thread, made
    /// `malloc` take the reader's arena lock for each.
    struct Parsed: Sendable {
        let docType: Result<String, DocumentProblem>
        let declaredID: Result<String?, DocumentProblem>
        let object: JSONObject?

        init(_ object: JSONObject, path: String, keepObject: Bool) {
            docType = Result { () throws(DocumentProblem) in try DocumentRules.docType(of: object, relativePath: path) }
            declaredID = Result { () throws(DocumentProblem) in try DocumentRules.declaredID(of: object) }
            self.object = keepObject ? object : nil
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

    /// `deletionsNotBefore`: when the deletions this records may leave (boot-clock ms; 0: at once).
    func apply(seen: [Seen], vanished: Set<String>, summary: inout ScanSummary, deletionsNotBefore: Int64 = 0) async throws {
        var vanished = vanished
        let deletedBefore = summary.deleted
        // Files whose index row already holds their id go first, so that of an original and its
        // copy, the original keeps the id.
        let ordered = seen.sorted { $0.path < $1.path }
        // With upload jobs in the index, recording looks at each document's members.
        let keepObjects = try await index.read { try $0.hasUploads() }
        // Reading and parsing the next chunk overlaps committing this one.
        func observing(_ start: Int) -> Task<[Observed], Never> {
            let chunk = ordered[start..<min(start + Self.chunkSize, ordered.count)]
            return Task { [self] in
                // Two halves at once: reading, parsing and hashing use a second core.
                let middle = chunk.startIndex + chunk.count / 2
                async let first = chunk[..<middle].map { observe($0, keepObject: keepObjects) }
                let second = chunk[middle...].map { observe($0, keepObject: keepObjects) }
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
            let result = try await commit(observed, vanished: isLast ? vanished : [], claimedVanished: vanished, deletionsNotBefore: deletionsNotBefore)
            summary.queued += result.queued
            if result.queued + result.deleted > 0 && !isLast { queued() }
            summary.moved += result.moved
            summary.deleted += result.deleted
            summary.unchanged += result.unchanged
            summary.invalid += result.invalid
            summary.idsAssigned += result.idsAssigned
            summary.schemasChanged = summary.schemasChanged || result.schemasChanged
            vanished.subtract(result.claimed)
        } while start < ordered.count
        if deletedBefore < summary.deleted { try await deletions?.judge(index: index, logger: logger) }
    }

    func observe(_ s: Seen, keepObject: Bool) -> Observed {
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
                wire: Self.wire(result, path: s.path, bytes: bytes, hash: hash), keepObject: keepObject, schemas: schemas)
        } catch {
            return Observed(path: s.path, info: s.info, stat: FileStat(recording: s.info, readBefore: readStart), bytes: [], hash: "", result: .failure(error))
        }
    }

    /// The files a parsed document refers to, checked and hashed (outside any transaction).
    func observeAttachments(_ result: Result<JSONObject, DocumentProblem>, path: String) -> [AttachmentObservation] {
        guard case .success(let object) = result, object.members.contains(where: { FileReference.isReference($0.value) }) else { return [] }
        let index = self.index
        return attachments.observe(object, documentPath: path) { file, stat in
            (try? index.readSync { try $0.knownHash(path: file, stat: stat) }) ?? nil
        }
    }

    struct CommitResult: Sendable {
        var queued = 0, moved = 0, deleted = 0, unchanged = 0, invalid = 0, excluded = 0, idsAssigned = 0
        var claimed = Set<String>()
        /// A schema document was recorded or deleted: the folder's schemas changed.
        var schemasChanged = false
    }

    /// Writes one chunk's outcome in a single transaction. `claimedVanished` are vanished paths a
    /// move in this chunk may claim; `vanished` the ones to tombstone now (the last chunk's turn).
    func commit(_ observed: [Observed], vanished: Set<String>, claimedVanished: Set<String>, deletionsNotBefore: Int64 = 0) async throws -> CommitResult {
        // Ids have to be written into files before the transaction that records them: a crash in
        // between leaves a file with an id the index does not know yet, which the next scan adopts.
        let selection = self.selection
        var result: RecordResult
        var assigned = 0
        let everyFileHasAnID = !observed.contains { o in
            guard case .success(let parsed) = o.result else { return false }
            return (try? parsed.declaredID.get()) == .some(nil)
        }
        if everyFileHasAnID,
           let recorded = try await planAndRecord(observed, vanished: vanished, claimedVanished: claimedVanished, deletionsNotBefore: deletionsNotBefore) {
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
                    selection: selection, deletionsNotBefore: deletionsNotBefore, tx: tx)
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
    func planAndRecord(_ observed: [Observed], vanished: Set<String>, claimedVanished: Set<String>, deletionsNotBefore: Int64) async throws -> RecordResult? {
        let stamp = clock.now()
        let selection = self.selection
        return try await index.write { tx in
            // One set of look-ups serves planning and recording: nothing changes in between.
            let rows = try ChunkRows(observed, tx: tx)
            guard !(try self.planIDs(observed, rows: rows, vanished: claimedVanished).contains(true)) else { return nil }
            return try Self.record(
                observed, rows: rows, vanished: vanished, movable: claimedVanished, stamp: stamp, selection: selection,
                deletionsNotBefore: deletionsNotBefore, tx: tx)
        }
    }

    /// For each observed file, whether it needs a fresh id: it has none, or its id is already
    /// taken by another file that still exists (it is a copy).
    func planIDs(_ observed: [Observed], rows: ChunkRows, vanished: Set<String>) throws -> [Bool] {
        func declared(_ o: Observed) -> String?? {
            guard case .success(let parsed) = o.result else { return .none }
            // A file that cannot become a document anyway (no usable docType) is reported as it
            // is: no id is written into it.
            guard case .success = parsed.docType else { return .none }
            do {
                return .some(try parsed.declaredID.get())
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
    func writeID(into o: Observed) -> Observed {
        let id = UUID().uuidString.lowercased()
        let text = DocumentRules.settingID(id, in: o.bytes)
        // Only over the content that was read: if the user saved again meanwhile, their version
        // wins and the next event brings it back here.
        // Before the write: a save landing after it has a later mtime, so the stat recorded is
        // unsettled and that save is read at its event.
        let writeStart = FileSystem.realtimeNanoseconds()
        let written: EntryInfo?
        do {
            written = try FileSystem.replacing(gate.file(o.path), with: text, ifItHolds: o.bytes, mode: o.info.mode)
        } catch {
            return Observed(
                path: o.path, info: o.info, stat: o.stat, bytes: o.bytes, hash: o.hash,
                result: .failure(.unreadable("cannot write the assigned id into the file: \(error.reason)")))
        }
        guard let info = written else {
            return Observed(
                path: o.path, info: o.info, stat: o.stat, bytes: o.bytes, hash: o.hash, result: .failure(.unreadable("changed while being read; will retry")))
        }
        let parsed = Result { () throws(DocumentProblem) in try DocumentRules.parseObject(text, maxSize: Int.max) }
        logger.info("assigned id", metadata: ["file.path": "\(o.path)", "doc.id": "\(id)"])
        let hash = ContentHash.sha256Hex(text)
        return Observed(
            path: o.path, info: info, stat: FileStat(recording: info, readBefore: writeStart), bytes: text, hash: hash, result: parsed, attachments: o.attachments,
            wire: Self.wire(parsed, path: o.path, bytes: text, hash: hash), schemas: schemas)
    }

    struct RecordResult: Sendable {
        var counts = CommitResult()
        var newProblems: [(String, String)] = []
        /// (document path, property, reason) of file references that cannot be uploaded.
        var attachmentProblems: [(String, String, String)] = []
    }
}
