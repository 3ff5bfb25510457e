import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A referenced file as found on disk: where it is (relative to the root, symlinks inside the root
/// followed), its content hash and the stat the hash was taken at.
struct AttachedFile: Sendable, Hashable {
    var path: String
    var sha256: String
    var stat: FileStat
}

/// One `{"$file": …}` property of a document, checked against the disk.
struct AttachmentObservation: Sendable, Hashable {
    var property: String
    var written: String
    /// Where the reference points, relative to the root, as far as that is known (a missing file
    /// still has a path, so its appearance can be noticed).
    var path: String?
    var file: Result<AttachedFile, FileReferenceProblem>
}

/// Finds, checks and hashes the files a document refers to, and keeps the FileUpload jobs in step.
struct Attachments: Sendable {
    let root: String
    /// `root` with symlinks resolved: a referenced file must resolve to a path below it.
    let realRoot: String
    /// Files the endpoint keeps per document (`nil`: any number): the first references in
    /// document order are sent, the rest reported.
    let filesPerDocument: Int?
    /// Larger files are reported, never read: hashing 100 GB would hold every other document.
    let maxBytes: Int64
    /// Where files over ``BackgroundHashes/inlineLimit`` are hashed; `nil`: inline, whatever the size.
    let background: BackgroundHashes?

    init(root: String, filesPerDocument: Int? = nil, maxBytes: Int64 = AgentOptions.defaultMaxUploadBytes, background: BackgroundHashes? = nil) {
        self.background = background
        self.root = root
        self.realRoot = Self.realPath(root) ?? root
        self.filesPerDocument = filesPerDocument
        self.maxBytes = maxBytes
    }

    /// Checks each reference of a document at `documentPath` and hashes the files, re-using the
    /// hash the index holds for an unchanged stat (a restart or a rename reads nothing).
    func observe(_ object: JSONObject, documentPath: String, knownHash: (String, FileStat) -> String?) -> [AttachmentObservation] {
        let references = FileReference.all(in: object, documentPath: documentPath)
        let limit = filesPerDocument ?? references.count
        let taken = references.prefix(limit).map(\.property)
        return references.enumerated().map { n, ref in
            if n >= limit {
                return AttachmentObservation(
                    property: ref.property, written: ref.written, path: nil, file: .failure(.beyondLimit(ref.written, limit: limit, taken: taken)))
            }
            switch ref.resolved {
            case .failure(let problem):
                return AttachmentObservation(property: ref.property, written: ref.written, path: nil, file: .failure(problem))
            case .success(let relative):
                return AttachmentObservation(
                    property: ref.property, written: ref.written, path: relative,
                    file: check(relative, written: ref.written, knownHash: knownHash))
            }
        }
    }

    /// What a file that is not a regular file is, in a person's words.
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a folder"
        case S_IFIFO: "a named pipe (FIFO)"
        case S_IFSOCK: "a socket"
        case S_IFCHR, S_IFBLK: "a device"
        default: "not a regular file"
        }
    }

    private func check(_ relative: String, written: String, knownHash: (String, FileStat) -> String?) -> Result<AttachedFile, FileReferenceProblem> {
        guard let real = Self.realPath(root + "/" + relative) else {
            if errno == ENOENT || errno == ENOTDIR { return .failure(.missing(written)) }
            return .failure(.unreadable(written, reason: String(cString: strerror(errno))))
        }
        guard real.hasPrefix(realRoot + "/") else { return .failure(.symlinkOutside(written)) }
        let inside = String(real.dropFirst(realRoot.count + 1))
        if inside == ".docsync" || inside.hasPrefix(".docsync/") { return .failure(.stateFolder(written)) }
        var st = stat()
        guard stat(real, &st) == 0 else { return .failure(.unreadable(written, reason: String(cString: strerror(errno)))) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return .failure(.notAFile(written, kind: Self.kind(of: st.st_mode))) }
        guard Int64(st.st_size) <= maxBytes else { return .failure(.tooLarge(written, size: Int64(st.st_size), limit: maxBytes)) }
        var before = FileStat(EntryInfo(st))
        if let hash = knownHash(inside, before) {
            // Unchanged since it was hashed; still make sure it can be read.
            let fd = open(real, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return .failure(.unreadable(written, reason: String(cString: strerror(errno)))) }
            close(fd)
            return .success(AttachedFile(path: inside, sha256: hash, stat: before))
        }
        // Saved moments ago: hashed once its stat can be trusted (at most 50 ms from now), so the
        // hash is not redone at the next rescan. Not a document save's path: no latency to keep.
        let age = FileSystem.realtimeNanoseconds() - before.mtimeNs
        let margin = FileStat.racyMargin(mtimeNs: before.mtimeNs)
        if age >= 0, age <= margin, margin <= 50_000_000 {
            usleep(UInt32((margin - age) / 1000) + 1000)
            guard stat(real, &st) == 0 else { return .failure(.unreadable(written, reason: String(cString: strerror(errno)))) }
            before = FileStat(EntryInfo(st))
        }
        if Int64(st.st_size) > BackgroundHashes.inlineLimit, let background {
            if let known = background.hash(of: real, before: before) { return .success(AttachedFile(path: inside, sha256: known.hash, stat: known.stat)) }
            background.request(real: real, inside: inside, before: before)
            return .failure(.hashing(written))
        }
        switch Self.hash(real, unchangedFrom: before) {
        case .success(let hashed): return .success(AttachedFile(path: inside, sha256: hashed.hash, stat: hashed.stat))
        case .failure(.unreadable(let reason)): return .failure(.unreadable(written, reason: reason))
        case .failure(.changed): return .failure(.changing(written))
        }
    }

    /// Why a file could not be hashed: unreadable, or changed while read.
    enum HashFailure: Error {
        case unreadable(String)
        case changed
    }

    /// The SHA-256 of the file at `real` and the stat to record with it, if its stat after the
    /// read is still `before` (a file still being written is hashed again when the watcher
    /// reports its close). `proceed` is asked before each piece read.
    static func hash(_ real: String, unchangedFrom before: FileStat, while proceed: () -> Bool = { true }) -> Result<(hash: String, stat: FileStat), HashFailure> {
        let readStart = FileSystem.realtimeNanoseconds()
        let hashed: (hash: String, size: Int64)
        do {
            hashed = try ContentHash.sha256Hex(fileAt: real, while: proceed)
        } catch {
            return .failure(.unreadable(error.description))
        }
        var st = stat()
        guard stat(real, &st) == 0, hashed.size == Int64(st.st_size), FileStat(EntryInfo(st)) == before else { return .failure(.changed) }
        return .success((hashed.hash, FileStat(recording: EntryInfo(st), readBefore: readStart)))
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// What reconciling one document's references changed.
    struct Reconciled {
        /// The server's copy of the document must change although the file did not (a property
        /// goes to `null`, or back to its URL).
        var wireChanged = false
        /// Problems not reported before: (property, reason).
        var newProblems: [(String, String)] = []
    }

    /// Brings the jobs of document `docID` in line with what its file now references: new or
    /// changed content is queued for upload (once: the job remembers the hash it has, and the hash
    /// the server has), bad references are recorded with their reason, removed references leave a
    /// `removed` job so the server's property becomes `null`.
    static func reconcile(docID: String, object: JSONObject, observations: [AttachmentObservation], stamp: Int64, tx: IndexTransaction) throws -> Reconciled {
        var result = Reconciled()
        var existing: [String: UploadRow] = [:]
        for row in try tx.uploads(docID: docID) { existing[row.property] = row }
        for o in observations {
            let before = existing.removeValue(forKey: o.property)
            var row = before ?? UploadRow(docID: docID, property: o.property, reference: o.written, path: o.path, state: .pending)
            row.reference = o.written
            row.path = o.path
            switch o.file {
            case .success(let file):
                row.sha256 = file.sha256
                row.stat = file.stat
                let queued = try tx.outboxEntry(key: row.outboxKey)
                if row.uploadedSHA256 == file.sha256, row.remoteURL != nil {
                    // The server has these bytes in this property already.
                    if before?.state == .invalid || before?.state == .removed { result.wireChanged = true }
                    row.state = .done
                    row.error = nil
                    if let queued { try tx.removeEntry(queued) }
                } else if let queued, queued.bodyHash == file.sha256 {
                    // Already queued with this content: leave its retries alone.
                } else if before?.state == .failed, before?.sha256 == file.sha256 {
                    // Refused by the endpoint with this content; tried again when it changes.
                } else {
                    row.state = .pending
                    row.error = nil
                    row.bytesSent = 0
                    try tx.enqueue(key: row.outboxKey, docID: docID, kind: .upload, payload: "{}", bodyHash: file.sha256, queuedAt: stamp)
                }
            case .failure(.hashing):
                // Its documents are looked at again once the hash is known (`BackgroundHashes`);
                // until then the server keeps what it has, and a new file shows as being hashed.
                if before == nil || before?.state == .invalid {
                    row.state = .hashing
                    row.error = nil
                }
            case .failure(.changing) where before != nil:
                // A save under way is no change yet: the server keeps the file it has (a `null`
                // there would tell every other folder the file was deleted).
                continue
            case .failure(let problem):
                if before?.state != .invalid, before?.remoteURL != nil { result.wireChanged = true }
                row.sha256 = nil
                row.stat = nil
                row.state = .invalid
                row.error = problem.description
                try tx.deleteEntry(key: row.outboxKey)
                if before?.error != row.error { result.newProblems.append((o.property, problem.description)) }
            }
            if row != before { try tx.upsertUpload(row) }
        }
        // References no longer in the document.
        for (property, row) in existing where try forget(row, holding: object[property], tx: tx) { result.wireChanged = true }
        return result
    }

    /// A reference gone from its document: an ordinary value there now drops the job; no property
    /// at all leaves a `removed` job so the server's property becomes `null`. True when the
    /// server's copy must change.
    private static func forget(_ row: UploadRow, holding value: JSONValue?, tx: IndexTransaction) throws -> Bool {
        if value != nil {
            try tx.deleteUpload(docID: row.docID, property: row.property)
            return false
        }
        guard row.state != .removed else { return false }
        var removed = row
        removed.reference = nil
        removed.path = nil
        removed.sha256 = nil
        removed.stat = nil
        removed.state = .removed
        removed.error = nil
        try tx.deleteEntry(key: row.outboxKey)
        try tx.upsertUpload(removed)
        return true
    }
}

extension UploadRow {
    /// Whether the server's version `rev` was made after the upload that gave the property its
    /// URL, so that what it holds there is news (a server without revisions: always).
    func isOlder(than rev: Int64) -> Bool {
        guard let remoteRev, rev > 0 else { return true }
        return rev > remoteRev
    }
}

/// The difference between the folder's copy of a document and the server's: locally a property
/// holds `{"$file": "…"}`, on the server the uploaded file's URL (`null` until the upload is done,
/// while the reference is bad, or once it was removed). Both directions go through here, so neither
/// side sees that difference as a change.
struct AttachmentMapping: Sendable {
    let rows: [String: UploadRow]

    init(_ rows: [UploadRow]) {
        var byProperty: [String: UploadRow] = [:]
        for row in rows { byProperty[row.property] = row }
        self.rows = byProperty
    }

    static let none = AttachmentMapping([])

    /// The document as the server should hold it.
    /// Both directions build their result in one pass over the members (setting each looks its
    /// key up first: quadratic in a document of many members).
    func toWire(_ local: JSONObject) -> JSONObject {
        var members = local.members.map { member -> (key: String, value: JSONValue) in
            guard FileReference.isReference(member.value) else { return member }
            let row = rows[member.key]
            return (member.key, row?.state == .invalid ? .null : (row?.remoteURL.map { .string($0) } ?? .null))
        }
        let keys = local.keyed
        for (key, row) in rows.sorted(by: { $0.key < $1.key }) where row.state == .removed && keys[key] == nil { members.append((key, .null)) }
        return JSONObject(members)
    }

    /// The jobs of files this side attached and the server held, whose property the server's
    /// version `rev` holds as `null`: removed by someone else.
    static func removedOnServer(_ remote: JSONObject, rev: Int64, rows: [UploadRow], local: JSONObject) -> [UploadRow] {
        rows.filter { row in
            row.state == .done && row.remoteURL != nil && row.isOlder(than: rev) && FileReference.isReference(local[row.property])
                && remote[row.property]?.isNull == true
        }
    }

    /// The server's version of a document as the folder would hold it: the folder owns the
    /// properties it fills from files, so whatever the server has there maps to the local reference.
    func toLocal(_ remote: JSONObject, local: JSONObject) -> JSONObject {
        let references = Dictionary(local.members.filter { FileReference.isReference($0.value) }, uniquingKeysWith: { first, _ in first })
        let (localKeys, remoteKeys) = (local.keyed, remote.keyed)
        let removed = Set(rows.filter { $0.value.state == .removed && localKeys[$0.key] == nil }.map(\.key))
        var members: [(key: String, value: JSONValue)] = remote.members.compactMap { member in
            if let reference = references[member.key] { return (member.key, reference) }
            return removed.contains(member.key) && member.value.isNull ? nil : member
        }
        for member in local.members where references[member.key] != nil && remoteKeys[member.key] == nil { members.append(member) }
        return JSONObject(members)
    }
}
