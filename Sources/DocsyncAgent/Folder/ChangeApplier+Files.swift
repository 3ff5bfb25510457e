import DocsyncEndpoint
import DocsyncFiles
import DocsyncIndex
import DocsyncModel
import Logging

/// Files others attached, as pulled documents name them: download jobs for the ``Downloader``,
/// and files the server no longer has moved to the trash.
extension ChangeApplier {
    /// The properties of `content` (a document about to be written to the folder) that hold one
    /// of the endpoint's files: a job each. A URL the endpoint would not serve is a job already
    /// failed, so `status` reports it.
    func fileJobs(id: String, content: JSONObject) -> [DownloadRow] {
        var jobs: [DownloadRow] = []
        for found in remoteFiles(content) {
            let (property, match) = (found.property, found.match)
            guard property != "id", property != "docType", !DocumentRules.reservedKeys.contains(property) else { continue }
            if let why = DocumentRules.fileProperty(problemWith: property) {
                // No job: its key would be cut or forged. Said, and the value stays as the server has it.
                logger.warning("a file attached on the server is not fetched, the property cannot carry one: \(why)", metadata: ["doc.id": "\(id)", "property": "\(property)"])
                continue
            }
            switch match {
            case .file(let file):
                jobs.append(DownloadRow(
                    docID: id, property: property, url: file.url, sha256: file.sha256, fileExtension: file.fileExtension, replaces: nil))
            case .refused(let url, let reason):
                jobs.append(DownloadRow(
                    docID: id, property: property, url: url, sha256: nil, fileExtension: nil, replaces: nil, state: .refused, error: reason))
            }
        }
        return jobs
    }

    /// New versions of files attached here: the server's property names another of its files
    /// than the one this side has. Queued before the document is applied (which sees no change:
    /// the folder's reference stays as it is).
    func queueNewVersions(_ incoming: Incoming, known: DocumentRow?, rows: [UploadRow]) async throws {
        guard let known, !incoming.deleted else { return }
        var jobs: [DownloadRow] = []
        let attached = rows.filter { $0.state == .done && $0.reference != nil && $0.path != nil && $0.isOlder(than: incoming.rev) }
        guard !attached.isEmpty else { return }
        let files = Dictionary(remoteFiles(incoming.wireBody).map { ($0.property, $0.match) }, uniquingKeysWith: { first, _ in first })
        for row in attached {
            guard case .file(let file)? = files[row.property], file.url != row.remoteURL else { continue }
            jobs.append(DownloadRow(
                docID: known.id, property: row.property, url: file.url, sha256: file.sha256, fileExtension: file.fileExtension,
                replaces: row.path))
        }
        guard !jobs.isEmpty else { return }
        let (now, queued) = (clock.now(), jobs)
        try await index.write { tx in
            for job in queued { try tx.queueDownload(job, queuedAt: now) }
        }
        downloadsQueued.signal()
    }

    /// The attached files of `known` whose property `body` (what is about to be written) sets
    /// to `null`: removed on the server.
    func attachmentsRemoved(known: DocumentRow, body: JSONObject) async throws -> [UploadRow] {
        guard FileReference.mayAppear(in: known.body), let local = try? JSONParser.parse(known.body).object else { return [] }
        let rows = try await index.read { try $0.uploads(docID: known.id) }
        return rows.filter { $0.state == .done && FileReference.isReference(local[$0.property]) && body[$0.property]?.isNull == true }
    }

    /// Moves files removed on the server into `.docsync/trash/` (recoverable), each only if it
    /// still holds what was attached: a file changed here since stays.
    func trashAttachments(_ removed: [UploadRow]) {
        for row in removed {
            guard let path = row.path, let file = try? gate.file(path), let info = FileSystem.info(file) else { continue }
            let unchanged = row.stat.map { FileStat(info) == $0 } == true
                || (try? ContentHash.sha256Hex(fileAt: file.path))?.hash == row.sha256
            guard unchanged else {
                logger.warning("an attached file removed on the server was changed here; it stays", metadata: ["file.path": "\(path)"])
                continue
            }
            do {
                let trash = try gate.folder(Index.stateFolderName + "/trash", create: true)
                let ext = RemoteFile.safeExtension(of: Substring(file.name)) ?? "bin"
                let stem = "\(row.docID)-\(Downloader.safeName(row.property))-\(Timestamp(unixMilliseconds: clock.now()).compactUTC)"
                let target = try moveToTrash(file, into: trash, stem: stem, extension: ext)
                logger.info("attached file removed on the server; moved to .docsync/trash", metadata: ["file.path": "\(path)", "trash.path": "\(target.path)"])
            } catch {
                logger.warning("cannot move an attached file removed on the server to the trash", metadata: ["file.path": "\(path)", "error": "\(error)"])
            }
        }
    }
}

extension ChangeApplier.Written {
    /// Brings the document's download jobs in line with the content written: jobs for URLs it
    /// no longer holds end; new ones are queued (a job for the same URL keeps its retries).
    /// A document new to the index has no jobs yet: a first pull asks nothing per document.
    func recordDownloads(_ tx: IndexTransaction, documentWasKnown: Bool) throws {
        let existing = documentWasKnown ? try tx.downloads(docID: id) : []
        for job in existing where job.replaces == nil && !downloads.contains(where: { $0.property == job.property && $0.url == job.url }) {
            try tx.deleteDownload(docID: id, property: job.property)
        }
        for job in downloads {
            if job.state == .refused {
                if try tx.download(docID: id, property: job.property)?.url != job.url { try tx.upsertDownload(job) }
            } else {
                try tx.queueDownload(job, queuedAt: now)
            }
        }
    }
}
