import DocsyncFiles
import DocsyncIndex
import DocsyncModel

/// Documents new to this folder (no row in the index, not tombstones), written as a group: one
/// look-up for all of them, their files created together (one flush to disk), one transaction
/// recording them all: one at a time (a few index round trips and a transaction each) a first
/// pull would be bound by round trips, not by the disk.
extension ChangeApplier {
    /// A new document on its way to a file.
    struct New {
        let position: Int
        let id: String
        let docType: String
        let rev: Int64
        let stamp: Int64
        let content: JSONObject
        var path = ""
    }

    /// Where a page's new files are written before each is renamed into its folder: in the state
    /// folder, which no watch covers, so that the watcher (and anyone watching the folder) sees
    /// one event for a new file instead of its temporary's five. Two folders, half the page's
    /// temporaries each, written by a thread each (``FileSystem/createAll(_:mode:staging:)``).
    static let stagingFolders = [Index.stateFolderName + "/staging", Index.stateFolderName + "/staging-2"]

    /// Removes the temporaries an agent killed in the middle of a page left in the staging folders.
    func removeStaleTemporaries() {
        for path in Self.stagingFolders {
            guard let staging = try? gate.folder(path, create: false) else { continue }
            for entry in staging.entries() where FileSystem.isStaleTemporary(entry.name) {
                if let file = try? GatedFile(staging, entry.name) { FileSystem.remove(file) }
            }
        }
    }

    /// Writes the new documents among `documents`; returns the others, in their order.
    /// With `records`, their record is left committing there (``PendingRecords``).
    func applyNew(_ documents: [JSONObject], summary: inout Summary, records: PendingRecords? = nil) async throws -> [JSONObject] {
        let candidates = try await newDocuments(documents, records: records)
        guard !candidates.isEmpty else { return documents }
        try await create(candidates, from: documents, summary: &summary, records: records)
        let handled = Set(candidates.map(\.position))
        return documents.indices.filter { !handled.contains($0) }.map { documents[$0] }
    }

    /// The documents the index has no row for, each with a free path.
    private func newDocuments(_ documents: [JSONObject], records: PendingRecords?) async throws -> [New] {
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
        guard !candidates.isEmpty else { return [] }
        let candidateIDs = candidates.map(\.id)
        // A document of the page still being recorded is known: read once it is.
        if let records, await records.overlaps(ids: candidateIDs) { try await records.drain() }
        let known = try await index.read { try $0.documents(ids: candidateIDs) }
        candidates.removeAll { known[$0.id] != nil }
        var taken = Set<String>()
        // Opened once: a page's documents share a few folders (a folder the gate refuses is
        // reported when its documents are written).
        var folders: [String: GatedFolder] = [:]
        for i in candidates.indices {
            let docType = candidates[i].docType
            if folders[docType] == nil { folders[docType] = try? gate.folder(docType, create: true) }
            candidates[i].path = freePath(for: candidates[i].id, docType: docType, avoiding: taken, in: folders[docType])
            taken.insert(candidates[i].path)
        }
        return candidates
    }

    /// The modification time a new file is given: the time its document last changed (`stamp`,
    /// the server's milliseconds), as other sync tools carry a file's time across, where that is
    /// more than the stat margins (3 s) before `now`; nil (the time of writing) for a later or
    /// unknown one: a file is never dated in the future.
    ///
    /// A dated file's stat is recorded settled: what was written, with a time no later write can
    /// give it (a write stamps the time it happens, seconds after), so a change made after the
    /// rename shows in the stat, and the file is not read again. An undated one is recorded from
    /// what was written with an unsettled stat, and read once more when it is old enough (what is
    /// at the path then, with its hash: a change made meanwhile, or a file renamed over it, shows
    /// as a hash that differs).
    static func dated(_ stamp: Int64, before now: Int64) -> Int64? {
        guard stamp > 0, stamp < Int64.max / 1_000_000 else { return nil }
        let ns = stamp * 1_000_000
        return now - ns > 3_000_000_000 ? ns : nil
    }

    /// Creates the files of `candidates` (never over a file that appeared meanwhile) and records them.
    private func create(_ candidates: [New], from documents: [JSONObject], summary: inout Summary, records pending: PendingRecords?) async throws {
        let paths = candidates.map(\.path)
        // A path of the page still being recorded is free again only if its file went at once.
        if let pending, await pending.overlaps(ids: [], paths: paths) { try await pending.drain() }
        // A row at a free path: a file deleted on disk whose deletion the index has not seen yet.
        let recorded = try await index.read { try $0.files(at: paths) }
        var folders: [String: GatedFolder] = [:]
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
        let writeStart = FileSystem.realtimeNanoseconds()
        // The content is the wire body: no reserved fields, its docType written out; dated (see
        // `dated`) where the document changed long enough ago.
        let files = creating.map { (file: $0.file, bytes: JSONWriter.fileBytes(.object($0.new.content), limit: maxFileSize), mtimeNs: Self.dated($0.new.stamp, before: writeStart)) }
        let news = creating.map(\.new), bytes = files.map(\.bytes)
        // The texts the index records (hashes, the body) are made on another thread while the
        // files are written: pure work on the content, off the applier's one path.
        async let texts = zip(news, bytes).map { new, bytes in
            Written.Texts(fileBytes: bytes, docType: new.docType, content: new.content, base: new.content)
        }
        // Nobody watches the staging folders: a watched folder sees each file arrive whole.
        let staging = Self.stagingFolders.compactMap { try? gate.folder($0, create: true) }
        let outcomes = FileSystem.createAll(files, staging: staging)
        var records: [Written] = []
        for ((((new, target), created), bytes), texts) in zip(zip(zip(creating, outcomes), bytes), await texts) {
            do {
                // Not created: a file appeared at that name meanwhile.
                let (made, stat) = try created.get()
                guard made, let info = stat ?? FileSystem.info(target), info.kind == .file else { throw ChangedOnDisk() }
                var record = Written(
                    path: new.path, id: new.id, docType: new.docType, file: (bytes, info), readStart: writeStart, texts: texts,
                    rev: new.rev, stamp: new.stamp, pending: nil, now: clock.now(), downloads: fileJobs(id: new.id, content: new.content))
                record.isNew = true
                records.append(record)
            } catch {
                setAside(documents[new.position], after: error, summary: &summary)
            }
        }
        summary.written += records.count
        try await record(records, pending: pending)
    }

    /// Records the files of a page just made: at once, or with `pending` while the next page is
    /// made (``PendingRecords``). Their stats are noted first for the watcher's report of them.
    private func record(_ written: [Written], pending: PendingRecords?) async throws {
        guard !written.isEmpty else { return }
        ownNewFiles?.add(written.compactMap { w in w.recordedStat.map { (w.path, $0) } })
        if let beforeRecording { for record in written { await beforeRecording(record.path) } }
        let (index, downloadsQueued) = (self.index, self.downloadsQueued)
        let commit: @Sendable () async throws -> Void = {
            try await index.writeToEnd { tx in
                for record in written { try record.record(tx) }
            }
            if written.contains(where: { !$0.downloads.isEmpty }) { downloadsQueued.signal() }
        }
        if let pending {
            try await pending.add(ids: written.map(\.id), paths: written.map(\.path), commit)
        } else {
            try await commit()
        }
    }
}
