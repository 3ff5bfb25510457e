import DocsyncIndex
import DocsyncModel

/// `docsync sync`: the whole folder reconciled once, then the process ends.
extension Agent {
    /// One full reconcile and push; `complete` only when every valid document is on the server.
    public func syncOnce() async throws -> SyncReport {
        let held = try FolderLock(root: options.root)
        defer { withExtendedLifetime(held) {} }
        try await beginRun()
        await calibrateClock()
        let summary = try await fullScanSchemasFirst()
        try await scanner.deletions?.burstIsWhole(index: index)
        await settleHashes()
        var failure = await pusher.drain()
        if failure == nil { failure = await uploader.drain() }
        // An upload makes a new revision; a document change queued behind it goes out now.
        if failure == nil, (try await index.read { try $0.pendingCount(kind: .put) }) > 0 { failure = await pusher.drain() }
        if failure == nil, endpoint.capabilities.pull != .none {
            failure = await catchUpOnSelection()
            if failure == nil { failure = await puller.pullAll() }
            if failure == nil { failure = await downloader.drain() }
        }
        if failure == nil, let committer { failure = await committer.drain() }
        await saveCalibration()
        let counts = try await index.read { try $0.statusCounts() }
        return SyncReport(scan: summary, pending: counts.pending, invalid: counts.invalid, rejected: counts.rejected, failure: failure)
    }
}
