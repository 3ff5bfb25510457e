import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import Foundation

/// The whole tree against the index, at a start and after an inotify overflow: both read in path
/// order, a chunk at a time, and compared as a merge. What the scan holds at once is a chunk of
/// each side and a chunk of changes waiting to be recorded, plus the paths that vanished (kept to
/// the end, when a file that moved has been seen at its new path): memory follows the size of
/// the change, not of the tree.
extension Scanner {
    /// The two sides of the merge, refilled a chunk at a time.
    private struct Sides {
        var walk: TreeWalker.SortedWalk
        var disk: ArraySlice<TreeWalker.Found> = []
        var known: ArraySlice<(path: String, summary: FileSummary)> = []
        var diskDone = false
        var knownDone = false
        var lastKnown = ""

        var held: Int { disk.count + known.count }

        /// The index's next page of recorded files (of at most `limit`).
        mutating func take(known page: [(path: String, summary: FileSummary)], limit: Int) {
            if page.count < limit { knownDone = true }
            lastKnown = page.last?.path ?? lastKnown
            known = ArraySlice(page)
        }
    }

    /// Reconciles the whole tree with the index.
    func fullScan() async throws -> ScanSummary {
        // Documents whose attached files changed, appeared or vanished while the agent was away
        // are read again even if their own stat did not move (as many as there are attachments).
        let forced = Set(try await documentsWithChangedAttachments())
        let firstKnown = try await index.read { [mergeChunk] in try $0.fileStats(after: "", limit: mergeChunk) }
        // An index without files (a first import) has no stat to compare: the walk leaves the
        // files' `lstat` to the read that follows, which takes it from the open file anyway.
        var sides = Sides(walk: walker.sortedWalk(
            removeStaleTemporaries: true, statFiles: !firstKnown.isEmpty, threads: ProcessInfo.processInfo.activeProcessorCount))
        sides.take(known: firstKnown, limit: mergeChunk)
        var summary = ScanSummary()
        var changed: [Seen] = []
        var vanished = Set<String>()
        var nowIgnored: [String] = []
        while true {
            try await refill(&sides)
            summary.peakHeld = max(summary.peakHeld, sides.held + changed.count + nowIgnored.count)
            guard let step = Self.nextStep(&sides) else { break }
            switch step {
            case .same(let found, let recorded):
                if recorded.stat == FileStat(found.info), recorded.state == .ok, !forced.contains(found.path) {
                    summary.unchanged += 1
                } else {
                    changed.append(Seen(path: found.path, info: found.info, nameIsUTF8: found.nameIsUTF8, force: forced.contains(found.path)))
                }
            case .onDisk(let found):
                changed.append(Seen(path: found.path, info: found.info, nameIsUTF8: found.nameIsUTF8, force: false))
            case .inIndex(let path):
                // A file a new ignore rule now covers is forgotten, not deleted on the server.
                if walker.isIgnored(path, isDirectory: false) { nowIgnored.append(path) } else { vanished.insert(path) }
            }
            if changed.count >= mergeChunk {
                try await apply(seen: changed, vanished: [], summary: &summary)
                changed.removeAll(keepingCapacity: true)
            }
            if nowIgnored.count >= mergeChunk { try await forget(&nowIgnored) }
        }
        try await forget(&nowIgnored)
        try await apply(seen: changed, vanished: vanished, summary: &summary)
        return summary
    }

    private enum Step {
        case same(TreeWalker.Found, FileSummary)
        case onDisk(TreeWalker.Found)
        case inIndex(String)
    }

    /// The next path of either side, in byte order; `nil` when both are done.
    private static func nextStep(_ sides: inout Sides) -> Step? {
        switch (sides.disk.first, sides.known.first) {
        case (nil, nil):
            return nil
        case (let found?, nil):
            sides.disk.removeFirst()
            return .onDisk(found)
        case (nil, let recorded?):
            sides.known.removeFirst()
            return .inIndex(recorded.path)
        case (let found?, let recorded?):
            if found.path == recorded.path {
                sides.disk.removeFirst()
                sides.known.removeFirst()
                return .same(found, recorded.summary)
            }
            if bytewiseLess(found.path, recorded.path) {
                sides.disk.removeFirst()
                return .onDisk(found)
            }
            sides.known.removeFirst()
            return .inIndex(recorded.path)
        }
    }

    /// Reads the next chunk of a side that ran out.
    private func refill(_ sides: inout Sides) async throws {
        while sides.disk.isEmpty, !sides.diskDone {
            let next = sides.walk.next(max: mergeChunk)
            if next.isEmpty { sides.diskDone = true }
            sides.disk = ArraySlice(next.filter { DocumentRules.isDocumentPath($0.path) })
        }
        if sides.known.isEmpty, !sides.knownDone {
            let (after, limit) = (sides.lastKnown, mergeChunk)
            sides.take(known: try await index.read { try $0.fileStats(after: after, limit: limit) }, limit: limit)
        }
    }

    /// Drops the rows of files an ignore rule now covers.
    private func forget(_ paths: inout [String]) async throws {
        guard !paths.isEmpty else { return }
        let chunk = paths
        try await index.write { tx in for path in chunk { try tx.deleteFile(at: path) } }
        paths.removeAll(keepingCapacity: true)
    }

    /// Paths of documents one of whose referenced files no longer has the stat it was hashed at.
    func documentsWithChangedAttachments() async throws -> [String] {
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
}
