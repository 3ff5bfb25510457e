import DocsyncIndex
import DocsyncWatcher
import Foundation

/// The start of a run: the index, the watches and the clock made ready, then the first scan.
extension Agent {
    /// The index made ready for this run, the watches in place (first, then the scan: nothing
    /// slips between), and the stored clock estimate restored (true if there was one).
    func begin() async throws -> (AsyncStream<ChangeBatch>, Bool) {
        try await beginRun()
        let watcher = DirectoryWatcher(
            root: options.root, settle: options.settle, maxDelay: options.maxDelay, ignore: ignore,
            unwatchedRescan: options.unwatchedRescan, watchLimit: options.watchLimit, folderLabel: metrics.folder, hub: options.watchHub, logger: logger)
        self.watcher = watcher
        let batches = try watcher.start()
        if stopRequested { watcher.stop() }
        return (batches, await restoreCalibration())
    }

    /// `body` when the process's other folders let it (``AgentOptions/turns``): started
    /// together, hundreds of folders would each open their index at once, more than a process
    /// keeps open (see `OpenIndexes`), and close and open them again in turn.
    func gated<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let turns = options.turns else { return try await body() }
        return try await turns.withPermit(priority: .ahead, body)
    }

    /// What the index keeps of another run that this one starts over: retry deadlines (of
    /// another run or boot: due now) and where git commits go; and the temporaries a killed run
    /// left behind.
    func beginRun() async throws {
        applier.removeStaleTemporaries()
        let gitMode = options.git?.target.said
        try await index.write { tx in
            try tx.rescheduleAll(at: 0)
            try tx.setMeta(.gitMode, gitMode)
        }
    }

    /// The full scan that finds what changed while the agent was not running (when the process's
    /// other folders let it: ``AgentOptions/turns``).
    func scanAtStart() async throws {
        metrics.rescan("start")
        let summary = try await gated { try await fullScanSchemasFirst() }
        logger.info(
            "watching \(options.root)",
            metadata: [
                "scan.queued": "\(summary.queued)", "scan.deleted": "\(summary.deleted)", "scan.unchanged": "\(summary.unchanged)",
                "scan.invalid": "\(summary.invalid)", "scan.bytes_read": "\(summary.bytesRead)",
            ])
    }

    /// The docTypes the folder holds, for an endpoint that polls each. One that cannot read
    /// them polls the selected types alone this time; the marks of the others are kept, so the
    /// next poll finds what changed meanwhile.
    static func folderTypes(_ index: Index) -> @Sendable () async -> Set<String> {
        { (try? await index.read { try $0.docTypes() }) ?? [] }
    }
}
