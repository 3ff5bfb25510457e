import DocsyncClock
import DocsyncEndpoint
import DocsyncIndex
import DocsyncModel
import DocsyncFiles
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Runs the download jobs of the outbox (entries of kind `download`): files others attached,
/// brought into the folder beside their document.
///
/// A job's bytes come from the cache if these were fetched before, from a file of the folder
/// with the same content, or from the endpoint: streamed to a temporary in `.docsync/files/tmp/`,
/// hashed on the way, checked against the hash the server names, flushed, and renamed to their
/// content address. Then, under the tree lock (scans wait), the file is copied into place and
/// the document's property becomes `{"$file": …}` (see `Downloader+Place.swift`). A job cut short
/// by a stop or a crash is still queued and starts over at the next start; the name it gets is
/// decided when it is placed, and a file already there with these bytes is taken as it is, so
/// nothing is placed twice. A refusal (another server, over the size limit, bytes that do not
/// match, gone from the server) ends the job as `failed`, reported by `status` and tried again at
/// the next start; a URL the adapter would not fetch is `refused` and never fetched.
actor Downloader: Worker, FolderPart {
    /// The folder's shared values, read through ``FolderPart``.
    let context: FolderContext
    let endpoint: any DocumentEndpoint
    /// Files are placed into the folder through it.
    let writer: FolderWriter
    let cache: FileCache
    /// Larger files are not fetched (`--max-download-size`).
    let maxBytes: Int64
    let signal: WakeSignal
    var stopping = false
    private let inFlight = InFlight<Void>(onStop: .cancel)
    var lastFailure: String?
    var progressedInRound = 0

    /// Downloads in flight at once.
    static let concurrency = 2

    init(_ context: FolderContext, endpoint: any DocumentEndpoint, writer: FolderWriter, maxBytes: Int64, signal: WakeSignal) {
        self.context = context
        self.signal = signal
        self.endpoint = endpoint
        self.writer = writer
        self.cache = FileCache(folder: context.root)
        self.maxBytes = maxBytes
    }

    nonisolated func wake() { signal.signal() }

    func cancelInFlight() { inFlight.cancel() }

    /// Each job backs off on its own (its entry's attempts); a round does not fail.
    var backoff: RetryPolicy { policy }

    /// Jobs a stop or crash cut short start over; their temporaries go.
    func prepare() async {
        cache.clearTemporaries()
        let now = clock.now()
        do {
            try await index.write { try $0.resetDownloadsAtStart(queuedAt: now) }
        } catch {
            // The jobs a stop cut short stay due as they were; those that failed wait for the next start.
            logger.error("cannot queue again the downloads a stop cut short", metadata: ["error": "\(error)"])
        }
    }

    func run() async {
        await prepare()
        await loop()
    }

    func workRound() async -> WorkerOutcome { await round(ignoringBackoff: false) }

    /// Runs every job that can run now until none is left or a round makes no progress (for
    /// one-shot `sync`); returns why downloads remain, if they do.
    func drain() async -> String? {
        await prepare()
        for _ in 0..<1000 {
            progressedInRound = 0
            if case .idle = await round(ignoringBackoff: true) { break }
            if progressedInRound == 0 { break }
        }
        return await index.leftAfterDrain(.download, failure: lastFailure, what: "downloads could not be completed")
    }

    /// Keeps ``concurrency`` jobs running while any is due: a slot freed by one job (done, or
    /// cut as too slow) takes the next at once, not when the others of its round end, and jobs
    /// never tried go before retries (``IndexTransaction/dueDownloads(now:limit:excluding:)``).
    private func round(ignoringBackoff: Bool) async -> WorkerOutcome {
        var ran = false
        let work = Task {
            await withTaskGroup(of: OutboxKey.self) { group in
                var running: [OutboxKey: String] = [:]  // key → content in flight
                while !stopping {
                    let picked = await pick(Self.concurrency - running.count, excluding: running, ignoringBackoff: ignoringBackoff)
                    for (entry, job) in picked {
                        running[entry.key] = job.sha256 ?? job.url
                        ran = true
                        group.addTask { await self.run(job, entry: entry); return entry.key }
                    }
                    guard let done = await group.next() else { break }
                    running[done] = nil
                }
            }
        }
        await inFlight.value(of: work)
        if ran { return .progressed }
        if ignoringBackoff { return .idle(nil) }
        return await index.idleUntilDue(.download, logger: logger)
    }

    /// Up to `count` due jobs not in flight, marked downloading. One job per content at a time:
    /// the others find it in the cache when their turn comes.
    private func pick(_ count: Int, excluding running: [OutboxKey: String], ignoringBackoff: Bool) async -> [(OutboxEntry, DownloadRow)] {
        guard count > 0 else { return [] }
        let now = ignoringBackoff ? Int64.max : RetryPolicy.deadlineNow()
        do {
            return try await index.write { tx in
                var jobs: [(OutboxEntry, DownloadRow)] = []
                var contents = Set(running.values)
                for entry in try tx.dueDownloads(now: now, limit: 64, excluding: Set(running.keys)) {
                    guard let property = entry.key.property(of: entry.docID, kind: .download), var job = try tx.download(docID: entry.docID, property: property), job.state == .pending || job.state == .downloading else {
                        try tx.deleteEntry(key: entry.key)
                        continue
                    }
                    guard contents.insert(job.sha256 ?? job.url).inserted else { continue }
                    job.state = .downloading
                    job.bytesReceived = 0
                    try tx.upsertDownload(job)
                    jobs.append((entry, job))
                    if jobs.count == count { break }
                }
                return jobs
            }
        } catch {
            logger.error("cannot read the download queue", metadata: ["error": "\(error)"])
            return []
        }
    }

    private func run(_ job: DownloadRow, entry: OutboxEntry) async {
        let progress = DownloadProgress()
        let (index, docID, property) = (self.index, job.docID, job.property)
        let reporter = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                let received = progress.bytesReceived
                try? await index.write { try $0.setDownloadProgress(docID: docID, property: property, bytesReceived: received) }  // `status` only
            }
        }
        let result: Result<Void, EndpointError>
        do throws(EndpointError) {
            let sha256 = try await bytes(of: job, progress: progress)
            try await place(job, sha256: sha256)
            result = .success(())
        } catch {
            result = .failure(error)
        }
        reporter.cancel()
        _ = await reporter.result
        switch result {
        case .success:
            lastFailure = nil
            progressedInRound += 1
        case .failure where Task.isCancelled:
            // Stopped mid-way: still queued, pending again at the next start.
            break
        case .failure(let error):
            await failed(job, entry: entry, error)
        }
    }
}
