import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import Foundation
import Logging

/// Where a downloaded file goes, and what the document says of it afterwards.
///
/// A file new to the folder is named from local data only: `<document name>.<property>.<ext>`
/// beside the document (`-2`, `-3` … when that name holds other bytes), the extension the only
/// part taken from the server (letters and digits, never `json`, else `bin`). The property then
/// holds `{"$file": "<that name>"}` and the file is an attached file like any other: edited, it
/// is uploaded; deleted, the server's property becomes `null`. A new version of a file already
/// attached replaces it in place, unless it was changed here too (then this side's version is
/// the one uploaded, and wins).
extension Downloader {
    func place(_ job: DownloadRow, sha256: String) async throws(EndpointError) {
        do {
            let docID = job.docID
            let docType = try await index.read { try $0.document(id: docID)?.docType } ?? ""
            try await writer.placeDownload(for: docID, docType: docType) { [self] applier in
                if let replaces = job.replaces {
                    try await self.replace(job, at: replaces, sha256: sha256)
                } else {
                    try await self.attach(job, sha256: sha256, applier: applier)
                }
            }
        } catch let error as EndpointError {
            throw error
        } catch is ChangeApplier.ChangedOnDisk {
            throw .unavailable("the document changed on disk meanwhile; the file is placed once it is scanned", retryAfter: nil)
        } catch {
            throw .localFile("\(error)")
        }
    }

    /// A file new to the folder: placed beside its document, and the document's property made a
    /// reference to it.
    private func attach(_ job: DownloadRow, sha256: String, applier: ChangeApplier) async throws {
        let (docID, property) = (job.docID, job.property)
        let (doc, pending) = try await index.read { tx in (try tx.document(id: docID), try tx.outboxEntry(key: .document(docID))) }
        guard let doc, doc.deletedAt == nil, let docPath = doc.path, var content = try? JSONParser.parse(doc.body).object,
              content[property] == .string(job.url)
        else {
            try await superseded(job)  // the document or its property moved on since
            return
        }
        let (name, placed) = try placeFile(sha256, beside: docPath, property: property, fileExtension: job.fileExtension)
        let relative = Self.sibling(of: docPath, named: name)
        let readStart = FileSystem.realtimeNanoseconds()
        guard let info = placed ?? FileSystem.info(root + "/" + relative) else { throw ChangeApplier.ChangedOnDisk() }
        let upload = UploadRow(
            docID: docID, property: property, reference: name, path: relative, sha256: sha256,
            stat: FileStat(recording: info, readBefore: readStart), state: .done, remoteURL: job.url, uploadedSHA256: sha256)
        let reference = JSONValue.object(JSONObject([(key: FileReference.key, value: .string(name))]))
        content[property] = reference
        var base = doc.base.flatMap { try? JSONParser.parse($0).object } ?? content
        if base[property] == .string(job.url) { base[property] = reference }
        try await applier.writeFile(
            path: docPath, id: docID, docType: doc.docType, content: content, base: base, rev: doc.serverRev ?? 0, pending: pending,
            stamp: doc.updatedAt ?? 0
        ) { tx in
            try tx.upsertUpload(upload)
            try tx.finishDownload(docID: docID, property: property, url: job.url)
        }
        logger.info("attached file downloaded", metadata: ["file.path": "\(relative)", "doc.id": "\(docID)", "property": "\(property)"])
    }

    /// A new version of a file already attached here: swapped in, unless it changed here too.
    private func replace(_ job: DownloadRow, at path: String, sha256: String) async throws {
        let (docID, property) = (job.docID, job.property)
        guard let row = try await index.read({ try $0.upload(docID: docID, property: property) }), row.path == path, row.reference != nil,
              row.state == .done, row.remoteURL != job.url, let old = row.sha256
        else {
            try await superseded(job)
            return
        }
        guard old == row.uploadedSHA256 else {
            logger.warning(
                "an attached file changed here and on the server; this side's version is sent and wins", metadata: ["file.path": "\(path)"])
            try await superseded(job)
            return
        }
        let file = try gate.file(path)
        let placed = try old == sha256 ? nil : FileSystem.placeCopy(of: cache.path(of: sha256), at: file) { displaced in
            (try? ContentHash.sha256Hex(fileAt: displaced.path))?.hash == old
        }
        guard old == sha256 || placed != nil else {
            // Saved here meanwhile: the scan that follows uploads that version.
            try await superseded(job)
            return
        }
        let readStart = FileSystem.realtimeNanoseconds()
        guard let info = placed ?? FileSystem.info(file) else { throw ChangeApplier.ChangedOnDisk() }
        var updated = row
        updated.sha256 = sha256
        updated.stat = FileStat(recording: info, readBefore: readStart)
        updated.remoteURL = job.url
        updated.remoteRev = nil
        updated.uploadedSHA256 = sha256
        updated.error = nil
        let final = updated
        try await index.writeToEnd { tx in
            try tx.upsertUpload(final)
            try tx.deleteEntry(key: final.outboxKey)
            try tx.finishDownload(docID: docID, property: property, url: job.url)
        }
        logger.info("attached file updated from the server", metadata: ["file.path": "\(path)", "doc.id": "\(docID)", "property": "\(property)"])
    }

    /// The job no longer applies: it ends (unless a newer one took its place).
    private func superseded(_ job: DownloadRow) async throws {
        try await index.write { tx in try tx.finishDownload(docID: job.docID, property: job.property, url: job.url) }
    }

    /// Copies the cached file beside the document under the first free name (or finds it there
    /// from a run cut short after placing it): its name, and the stat of the copy put there
    /// (`nil` where a file of the same bytes already was).
    private func placeFile(_ sha256: String, beside docPath: String, property: String, fileExtension: String?) throws -> (String, EntryInfo?) {
        let folder = try gate.folder(Self.folder(of: docPath), create: false)
        var stem = String(docPath.split(separator: "/").last ?? "document")
        if stem.hasSuffix(".json") { stem.removeLast(5) }
        let base = "\(stem.prefix(120)).\(Self.safeName(property))"
        let ext = fileExtension.flatMap { $0 == "json" ? nil : $0 } ?? "bin"
        for n in 1...100 {
            let file = try GatedFile(folder, n == 1 ? "\(base).\(ext)" : "\(base)-\(n).\(ext)")
            if let info = FileSystem.info(file) {
                if info.kind == .file, (try? ContentHash.sha256Hex(fileAt: file.path))?.hash == sha256 { return (file.name, nil) }
                continue
            }
            if let placed = try FileSystem.placeCopy(of: cache.path(of: sha256), at: file) { return (file.name, placed) }
        }
        throw EndpointError.localFile("no free name for the attached file beside \(docPath)")
    }

    /// A property's name as part of a file name: letters, digits, `_` and `-`, at most 64.
    static func safeName(_ property: String) -> String {
        var out = ""
        for scalar in property.unicodeScalars.prefix(64) {
            let ok = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
            out.unicodeScalars.append(ok ? scalar : "_")
        }
        return out.isEmpty ? "file" : out
    }

    static func folder(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
    }

    static func sibling(of path: String, named name: String) -> String {
        let folder = folder(of: path)
        return folder.isEmpty ? name : folder + "/" + name
    }
}
