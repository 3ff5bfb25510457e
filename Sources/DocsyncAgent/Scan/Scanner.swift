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
    /// The most file records a full scan held at once (a chunk of the walk, of the index and of
    /// changes waiting): bounded by the chunk size, not the tree's size.
    public var peakHeld = 0
    /// A schema document was recorded or deleted (see `SchemaCheck`).
    public var schemasChanged = false

    /// Adds what another pass of the same reconcile did.
    mutating func add(_ other: ScanSummary) {
        queued += other.queued
        moved += other.moved
        deleted += other.deleted
        unchanged += other.unchanged
        invalid += other.invalid
        idsAssigned += other.idsAssigned
        read += other.read
        bytesRead += other.bytesRead
        peakHeld = max(peakHeld, other.peakHeld)
        schemasChanged = schemasChanged || other.schemasChanged
    }
}

/// Turns what is on disk into index state and outbox entries.
///
/// Given the paths a watcher batch names (or the whole tree, at start and after an inotify
/// overflow), it stats them, reads only those whose size/mtime/inode changed, and applies the
/// document rules: ids assigned and written back, moves recognised by id, copies given fresh ids,
/// vanished files turned into tombstones. Each chunk of files is committed in one transaction
/// together with the outbox entries it creates.
struct Scanner: FolderPart {
    /// The folder's shared values, read through ``FolderPart``: an id written into a file goes
    /// through its gate, and a file of a docType outside its selection is recorded as
    /// `excluded`, not queued.
    let context: FolderContext
    let maxFileSize: Int
    let walker: TreeWalker
    let attachments: Attachments
    /// Told after each committed chunk that queued work, so pushing starts while a long scan
    /// (an initial import) is still reading.
    let queued: @Sendable () -> Void
    /// The schemas saves are checked against as they are read.
    let schemas: SchemaBook
    /// How long a deletion that a watcher batch found waits before it is sent, in milliseconds:
    /// the file may reappear in a later batch with the same id (a move the watcher saw in two
    /// pieces under load), and the pair is then one move, not a deletion and a new revision.
    let movePairingMs: Int64
    /// Judges the deletions a scan recorded: a burst leaves once whole, a mass deletion is held.
    let deletions: LocalDeletionGuard?

    /// Files read and committed per transaction: large enough to amortise the commit, small enough
    /// that an import of 100k files shows progress and keeps memory flat.
    static let chunkSize = 512
    /// Paths read at once from each side of a full scan's merge (the walk and the index).
    var mergeChunk = 4096

    init(
        _ context: FolderContext, maxFileSize: Int, ignore: IgnoreRules = IgnoreRules(),
        filesPerDocument: Int? = nil, maxUploadBytes: Int64 = AgentOptions.defaultMaxUploadBytes,
        schemas: SchemaBook = SchemaBook(), movePairing: Duration = .zero, hashes: BackgroundHashes? = nil,
        deletionGuard: DeletionGuard? = nil, queued: @escaping @Sendable () -> Void = {}
    ) {
        self.context = context
        self.movePairingMs = movePairing.wholeMilliseconds
        self.deletions = LocalDeletionGuard(rule: deletionGuard, pairing: movePairing)
        self.schemas = schemas
        self.queued = queued
        self.maxFileSize = maxFileSize
        self.walker = TreeWalker(root: context.root, ignore: ignore)
        self.attachments = Attachments(root: context.root, filesPerDocument: filesPerDocument, maxBytes: maxUploadBytes, background: hashes)
    }

    // MARK: - Gathering

    /// A document-named file seen on disk.
    struct Seen {
        var path: String
        var info: EntryInfo
        var nameIsUTF8: Bool
        var force: Bool
    }

    /// Reconciles the paths a watcher batch named.
    func scan(_ batch: ChangeBatch) async throws -> ScanSummary {
        var (summary, recorded) = try await scanLeavingRecorded(batch)
        summary.add(try await confirmThenJudge(recorded))
        return summary
    }

    /// ``scan(_:)``, except the files that may hold just what the index recorded, returned for
    /// ``confirmThenJudge(_:rest:locked:)`` outside the tree lock.
    func scanLeavingRecorded(_ batch: ChangeBatch) async throws -> (ScanSummary, [Recorded]) {
        var (seen, vanished, walkedFolders) = look(at: batch.paths)
        // Files that documents refer to: their documents are looked at again (the hash decides
        // whether anything is uploaded).
        for path in try await documentsReferring(to: Set(batch.paths).union(batch.attributeOnly)) where seen[path] == nil {
            if let info = FileSystem.info(walker.absolute(path)), info.kind == .file {
                seen[path] = Seen(path: path, info: info, nameIsUTF8: true, force: true)
            }
        }
        let attributeOnly = batch.attributeOnly.subtracting(batch.paths)
        let (known, expanded) = try await index.read { [seen, vanished, walkedFolders] tx -> ([String: FileRow], Set<String>) in
            var known = try tx.files(at: Array(seen.keys))
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
        let (recorded, rest) = Self.split(changed, known: known)
        let pairing = expanded.isEmpty || movePairingMs == 0 ? 0 : RetryPolicy.deadlineNow() + movePairingMs
        try await apply(seen: rest, vanished: expanded, summary: &summary, deletionsNotBefore: pairing)
        return (summary, recorded)
    }

    /// What is on disk at `paths` now: the document files there (folders walked), the paths that
    /// are gone (or no longer documents), and the folders walked.
    private func look(at paths: Set<String>) -> (seen: [String: Seen], vanished: Set<String>, walked: [String]) {
        var seen: [String: Seen] = [:]
        var vanished = Set<String>()
        var walkedFolders: [String] = []
        for path in paths where !walker.isIgnored(path, isDirectory: false) || FileSystem.info(walker.absolute(path))?.kind == .directory {
            guard let info = FileSystem.info(walker.absolute(path)) else {
                vanished.insert(path)
                continue
            }
            switch info.kind {
            case .directory:
                walkedFolders.append(path)
                for f in walker.walk(path) where DocumentRules.isDocumentPath(f.path) {
                    seen[f.path] = Seen(path: f.path, info: f.info, nameIsUTF8: f.nameIsUTF8, force: false)
                }
            case .file where DocumentRules.isDocumentPath(path):
                seen[path] = Seen(path: path, info: info, nameIsUTF8: true, force: false)
            default:
                vanished.insert(path)  // replaced by something that is not a document
            }
        }
        return (seen, vanished, walkedFolders)
    }

    /// The documents whose upload jobs point at or under `touched`.
    private func documentsReferring(to touched: Set<String>) async throws -> [String] {
        try await index.read { tx -> [String] in
            guard try tx.hasUploads() else { return [] }
            var paths = Set<String>()
            for path in touched {
                for job in try tx.uploads(atOrUnder: path) {
                    if let p = try tx.document(id: job.docID)?.path { paths.insert(p) }
                }
            }
            return paths.sorted()
        }
    }

    /// For the agent's settling of ``FileStat/unsettled`` stats: the files at `paths` that are old
    /// enough by `now` to be read again and whose stat is not what is recorded, split into those
    /// that may hold what was recorded (to confirm) and the rest (to judge). Files still changing,
    /// or dated in the future, wait for their next event or rescan; a path that is gone is left to
    /// the watcher, whose batch tells a move from a delete.
    func lookAgain(_ paths: [String], readyBefore now: Int64) async throws -> (recorded: [Recorded], rest: [Seen]) {
        var seen: [Seen] = []
        for path in paths {
            if let info = FileSystem.info(walker.absolute(path)), info.kind == .file, FileStat(recording: info, readBefore: now).isSettled {
                seen.append(Seen(path: path, info: info, nameIsUTF8: true, force: false))
            }
        }
        guard !seen.isEmpty else { return ([], []) }
        let known = try await index.read { [seen] tx in try tx.files(at: seen.map(\.path)) }
        return Self.split(seen.filter { known[$0.path]?.stat != FileStat($0.info) }, known: known)
    }
}
