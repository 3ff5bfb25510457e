import DocsyncClock
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import Foundation
import Logging

/// Runs the FileUpload jobs of the outbox (entries of kind `upload`).
///
/// A job waits while its document's own write is queued (the upload fills a property of a document
/// the server must already have), and the document's writes wait while its file is being uploaded
/// (both move the server's revision). Files stream from disk; progress is written to the index
/// about four times a second for `status`. A transient failure backs off per job; a refusal (4xx)
/// marks the job failed until the file changes. A job cut short by a crash is still in the outbox
/// and runs again at the next start; the endpoint stores content once, so nothing is duplicated.
actor Uploader: Worker, FolderPart {
    /// The folder's shared values, read through ``FolderPart``.
    let context: FolderContext
    let realRoot: String
    let endpoint: any DocumentEndpoint
    let uploading: DocumentSet
    /// "Uploads may go": the scanner's batches and the pusher's acknowledged writes signal it.
    let signal: WakeSignal
    /// Called when an upload ends, so document writes that waited for it go out.
    let uploadEnded: @Sendable () -> Void
    var stopping = false
    /// The uploads in flight: cancelled when the agent stops (a large file would otherwise hold
    /// the exit until it is sent; it is sent again at the next start).
    private let inFlight = InFlight<Void>(onStop: .cancel)
    private var lastFailure: String?
    private var succeededInRound = 0

    /// Uploads in flight at once: enough to overlap two files, few enough not to starve documents.
    static let concurrency = 2

    init(
        _ context: FolderContext, endpoint: any DocumentEndpoint, uploading: DocumentSet, signal: WakeSignal,
        uploadEnded: @escaping @Sendable () -> Void
    ) {
        self.context = context
        self.signal = signal
        self.realRoot = Attachments.realPath(context.root) ?? context.root
        self.endpoint = endpoint
        self.uploading = uploading
        self.uploadEnded = uploadEnded
    }

    nonisolated func wake() { signal.signal() }

    func cancelInFlight() { inFlight.cancel() }

    /// Each job backs off on its own (its entry's attempts); a round does not fail.
    var backoff: RetryPolicy { policy }

    func workRound() async -> WorkerOutcome { await round() }

    /// Runs every job that can run now, including ones waiting out a backoff, until none is left
    /// or a round makes no progress; for one-shot `sync`. Returns why uploads remain, if they do.
    func drain() async -> String? {
        var rounds = 0
        while rounds < 1000 {
            rounds += 1
            succeededInRound = 0
            if case .idle = await round(ignoringBackoff: true) { break }
            if succeededInRound == 0 { break }  // everything left failed just now
        }
        return await index.leftAfterDrain(.upload, failure: lastFailure, what: "uploads could not be delivered")
    }

    struct Job: Sendable {
        var entry: OutboxEntry
        var upload: UploadRow
        var docType: String
    }

    private func round(ignoringBackoff: Bool = false) async -> WorkerOutcome {
        let now = ignoringBackoff ? Int64.max : RetryPolicy.deadlineNow()
        let picked: (jobs: [Job], blocked: Bool)
        do {
            picked = try await index.write { tx -> ([Job], Bool) in
                var jobs: [Job] = []
                var blocked = false
                for entry in try tx.dueEntries(now: now, limit: 256, kind: .upload) {
                    // The document's own write goes first.
                    if try tx.outboxEntry(key: .document(entry.docID)) != nil {
                        blocked = true
                        continue
                    }
                    guard let property = entry.key.property(of: entry.docID, kind: .upload), let upload = try tx.upload(docID: entry.docID, property: property), upload.path != nil, upload.sha256 != nil,
                          let doc = try tx.document(id: entry.docID), doc.deletedAt == nil
                    else {
                        try tx.deleteEntry(key: entry.key)  // the job went away (reference removed, document deleted)
                        continue
                    }
                    jobs.append(Job(entry: entry, upload: upload, docType: doc.docType))
                    if jobs.count == Self.concurrency { break }
                }
                return (jobs, blocked)
            }
        } catch {
            logger.error("cannot read the upload queue", metadata: ["error": "\(error)"])
            return .idle(.seconds(1))
        }
        if picked.jobs.isEmpty {
            if ignoringBackoff { return .idle(nil) }
            if picked.blocked { return .idle(.seconds(1)) }  // the pusher wakes us when the document is written
            return await index.idleUntilDue(.upload, logger: logger)
        }
        guard !stopping else { return .idle(nil) }
        let work = Task {
            await withTaskGroup(of: Void.self) { group in
                for job in picked.jobs { group.addTask { await self.run(job) } }
            }
        }
        await inFlight.value(of: work)
        return .progressed
    }

    /// The job's state and progress are what `status` shows; the outbox entry, not they, says
    /// what is still to upload, so one that cannot be recorded loses nothing.
    private func markUploading(_ row: UploadRow) async {
        try? await index.write { tx in
            guard var u = try tx.upload(docID: row.docID, property: row.property) else { return }
            u.state = .uploading
            u.bytesSent = 0
            try tx.upsertUpload(u)
        }
    }

    private func run(_ job: Job) async {
        let row = job.upload
        let path = row.path!
        let docID = row.docID
        // Checked again right before reading: the tree may have changed since the scan.
        guard let real = Attachments.realPath(root + "/" + path), real.hasPrefix(realRoot + "/"), let size = row.stat?.size else {
            await failed(job, .localFile("\(path) is gone or now points outside the synced folder"))
            return
        }
        uploading.insert(docID)
        defer {
            uploading.remove(docID)
            uploadEnded()
        }
        await markUploading(row)
        let progress = UploadProgress()
        let index = self.index
        let reporter = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                let sent = progress.bytesSent
                try? await index.write { try $0.setUploadProgress(docID: docID, property: row.property, bytesSent: sent) }
            }
        }
        let request = FileUploadRequest(
            path: real, size: size, fileName: lastComponent(path), targetID: docID, targetDocType: job.docType,
            targetProperty: row.property)
        let result: Result<JSONObject, EndpointError>
        let started = ContinuousClock.now
        do throws(EndpointError) {
            result = .success(try await endpoint.upload(request, progress: progress))
        } catch {
            result = .failure(error)
        }
        metrics.call("upload", since: started)
        reporter.cancel()
        _ = await reporter.result
        if Task.isCancelled, case .failure = result {
            // Stopped mid-way: not a failure; the job stays queued as it was (recorded outside
            // this cancelled task, which the index would refuse).
            let property = row.property
            await Task {
                try? await index.write { tx in
                    guard var u = try tx.upload(docID: docID, property: property), u.state == .uploading else { return }
                    u.state = .pending
                    try tx.upsertUpload(u)
                }
            }.value
            return
        }
        switch result {
        case .success(let stored): await succeeded(job, stored: stored, sentHash: progress.sha256(), sent: progress.bytesSent)
        case .failure(let error): await failed(job, error)
        }
    }

    private func succeeded(_ job: Job, stored: JSONObject, sentHash: String, sent: Int64) async {
        let property = job.upload.property
        let now = clock.now()
        do {
            try await index.write { tx in
                let current = try tx.removeEntry(job.entry)
                guard var upload = try tx.upload(docID: job.upload.docID, property: property) else { return }
                upload.remoteURL = stored[property]?.string
                // 0: a server without revisions (nothing to compare later versions with).
                let rev = ChangeApplier.revision(of: stored)
                upload.remoteRev = rev > 0 ? rev : nil
                upload.uploadedSHA256 = sentHash
                upload.bytesSent = sent
                if upload.sha256 == sentHash {
                    if current || upload.state == .uploading {
                        upload.state = .done
                        upload.error = nil
                    }
                } else if current, let sha = upload.sha256 {
                    // The file changed while it was sent: what the index knows of it goes next.
                    upload.state = .pending
                    try tx.enqueue(key: upload.outboxKey, docID: upload.docID, kind: .upload, payload: "{}", bodyHash: sha, queuedAt: now)
                }
                try tx.upsertUpload(upload)
                // The upload made a new revision of the document: it is what both sides now hold.
                guard var doc = try tx.document(id: upload.docID), let rev = upload.remoteRev, rev > (doc.serverRev ?? 0)
                else { return }
                if upload.state == .invalid || upload.state == .removed {
                    // The file was deleted (or its reference removed) while it was sent: the server
                    // must not keep its URL. The document goes again, over the upload's revision,
                    // with what the folder says of that property now.
                    doc.serverRev = rev
                    doc.state = .pending
                    try tx.upsertDocument(doc)
                    try tx.enqueue(key: .document(doc.id), docID: doc.id, kind: .put, payload: nil, bodyHash: doc.bodyHash, queuedAt: now)
                    return
                }
                if let local = try? JSONParser.parse(doc.body).object {
                    let base = AttachmentMapping(try tx.uploads(docID: doc.id)).toLocal(WireForm.body(stored, docType: doc.docType), local: local)
                    // A server that changed more than the property (Kinto's attachment plugin adds
                    // the file's metadata) holds a version the folder has not seen: the next pull
                    // brings it, merged into the file like any server change.
                    if Self.changedBesides(property, old: doc.base, new: base, docType: doc.docType) { return }
                    doc.base = JSONWriter.string(.object(base))
                }
                doc.serverRev = rev
                try tx.upsertDocument(doc)
            }
            lastFailure = nil
            succeededInRound += 1
            metrics.uploaded(bytes: sent)
            logger.info("uploaded", metadata: ["doc.id": "\(job.upload.docID)", "property": "\(property)", "file.path": "\(job.upload.path ?? "")", "bytes": "\(sent)"])
        } catch {
            logger.error("cannot record a finished upload", metadata: ["error": "\(error)"])
        }
    }

    /// Whether the server's version after an upload differs from the one before it in more than
    /// the uploaded property.
    static func changedBesides(_ property: String, old: String?, new: JSONObject, docType: String) -> Bool {
        guard let old, case .object(let oldObject)? = try? JSONParser.parse(old) else { return false }
        var before = WireForm.body(oldObject, docType: docType)
        var after = WireForm.body(new, docType: docType)
        before[property] = nil
        after[property] = nil
        return !after.sameContent(as: before)
    }

    private func failed(_ job: Job, _ error: EndpointError) async {
        if case .unauthorized = error { credential.refusedBy(endpoint) }
        let permanent: Bool
        switch error {
        case .rejected, .unsupported: permanent = true
        default: permanent = false
        }
        let delay = policy.delay(afterFailures: job.entry.attempts + 1, unit: Double.random(in: 0..<1))
        let delayMs = delay.wholeMilliseconds
        let message = error.description
        lastFailure = message
        // Not recorded (the index cannot be written): the job stays due and is tried again, its
        // failure said below all the same.
        try? await index.write { tx in
            if permanent {
                try tx.removeEntry(job.entry)
            } else {
                try tx.recordFailure(key: job.entry.key, version: job.entry.version, error: message, nextAttemptAt: RetryPolicy.deadlineNow() + delayMs)
            }
            guard var upload = try tx.upload(docID: job.upload.docID, property: job.upload.property), upload.state == .uploading || upload.state == .pending else { return }
            upload.state = permanent ? .failed : .pending
            upload.error = message
            try tx.upsertUpload(upload)
        }
        let metadata: Logger.Metadata = ["file.path": "\(job.upload.path ?? "")", "doc.id": "\(job.upload.docID)", "property": "\(job.upload.property)"]
        if permanent {
            logger.error("upload refused by the endpoint; it is tried again when the file changes: \(message)", metadata: metadata)
        } else if job.entry.attempts == 0 {
            logger.warning("upload failed; retrying with backoff: \(message)", metadata: metadata)
        }
    }
}
