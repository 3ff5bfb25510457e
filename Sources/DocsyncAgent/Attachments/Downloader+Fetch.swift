import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension Downloader {
    /// Brings a job's bytes into the cache and returns their hash: found there, copied from a
    /// file of the folder with that content, or fetched.
    func bytes(of job: DownloadRow, progress: DownloadProgress) async throws(EndpointError) -> String {
        if let sha256 = job.sha256 {
            if await cached(sha256) { return sha256 }
            // Unreadable: no local copy is used, and the file is downloaded instead.
            let copies = (try? await index.read { try $0.attachedFiles(sha256: sha256) }) ?? []
            let realRoot = Attachments.realPath(root) ?? root
            for copy in copies {
                guard let path = copy.path, let real = Attachments.realPath(root + "/" + path), real.hasPrefix(realRoot + "/") else { continue }
                if cache.adoptCopy(of: real, sha256: sha256) {
                    await remember(sha256)
                    logger.debug("attached file found in the folder", metadata: ["file.path": "\(path)"])
                    return sha256
                }
            }
        }
        let sha256 = try await fetch(job, progress: progress)
        await remember(sha256)
        return sha256
    }

    /// Whether the cache holds `sha256` as it was stored. The tree's copy is a hard link to the
    /// same file: a change made to it in place shows as another stat, and the entry is dropped.
    func cached(_ sha256: String) async -> Bool {
        let path = cache.path(of: sha256)
        // The cache is only a cache: an entry that cannot be read or recorded is a miss, downloaded again.
        let recorded = try? await index.read { try $0.cachedFile(sha256: sha256) }
        if let recorded, let info = FileSystem.info(path), info.kind == .file, FileStat(info) == recorded { return true }
        unlink(path)
        try? await index.write { try $0.setCachedFile(sha256: sha256, stat: nil) }
        return false
    }

    /// Records the stat of a file just stored in the cache.
    func remember(_ sha256: String) async {
        let stat = FileSystem.info(cache.path(of: sha256)).map { FileStat($0) }
        try? await index.write { try $0.setCachedFile(sha256: sha256, stat: stat) }
    }

    /// Streams the file from the endpoint to a temporary (hashed on the way), checks it, flushes
    /// it and moves it to its content address.
    private func fetch(_ job: DownloadRow, progress: DownloadProgress) async throws(EndpointError) -> String {
        let temporary: (path: String, fd: Int32)
        do {
            temporary = try cache.temporary()
        } catch {
            throw .localFile(error.description)
        }
        var kept = false
        defer {
            close(temporary.fd)
            if !kept { unlink(temporary.path) }
        }
        // Written as it arrives, sent on to the disk as it is written, hashed on another thread.
        var file = WriteBehindFile(fd: temporary.fd, path: temporary.path)
        let hasher = TrailingHasher(fd: temporary.fd)
        var hashed = false
        defer { if !hashed { _ = try? hasher.finish() } }
        let remote = RemoteFile(url: job.url, sha256: job.sha256, fileExtension: job.fileExtension)
        try await endpoint.download(remote, maxBytes: maxBytes, progress: progress) { chunk in
            try file.write(chunk)
            hasher.written(upTo: file.written)
        }
        let sha256: String
        do {
            try file.flush()
        } catch {
            throw .localFile(error.description)
        }
        hashed = true
        do {
            sha256 = try hasher.finish()
        } catch {
            throw .localFile("read \(temporary.path): \(error)")
        }
        if let expected = job.sha256, expected != sha256 {
            throw .rejected("the server sent other bytes than its URL names (SHA-256 \(sha256), not \(expected))")
        }
        do {
            try cache.adopt(temporary.path, sha256: sha256)
        } catch {
            throw .localFile(error.description)
        }
        kept = true
        metrics.downloaded(bytes: progress.bytesReceived)
        return sha256
    }

    /// A job that failed: a refusal ends it (reported until the server's URL changes), anything
    /// else is tried again with backoff.
    func failed(_ job: DownloadRow, entry: OutboxEntry, _ error: EndpointError) async {
        if case .unauthorized = error { credential.refusedBy(endpoint) }
        let permanent: Bool
        switch error {
        case .rejected, .unsupported: permanent = true
        default: permanent = false
        }
        let delay = policy.delay(afterFailures: entry.attempts + 1, unit: Double.random(in: 0..<1))
        let delayMs = delay.wholeMilliseconds
        let message = error.description
        lastFailure = message
        // Not recorded (the index cannot be written): the job stays due and is tried again, its
        // failure said below all the same.
        try? await index.write { tx in
            guard var current = try tx.download(docID: job.docID, property: job.property), current.url == job.url else { return }
            if permanent {
                try tx.deleteEntry(key: job.outboxKey)
            } else {
                try tx.recordFailure(key: entry.key, version: entry.version, error: message, nextAttemptAt: RetryPolicy.deadlineNow() + delayMs)
            }
            current.state = permanent ? .failed : .pending
            current.error = message
            try tx.upsertDownload(current)
        }
        let metadata: Logger.Metadata = ["doc.id": "\(job.docID)", "property": "\(job.property)", "url": "\(job.url)"]
        if permanent {
            logger.error("attached file not downloaded: \(message)", metadata: metadata)
        } else if entry.attempts == 0 {
            logger.warning("download failed; retrying with backoff: \(message)", metadata: metadata)
        }
    }
}
