import DocsyncIndex
import Foundation

extension Agent {
    /// A scan that failed (the disk full, the index unwritable) is not waited out until the next
    /// change: the whole tree is rescanned with backoff until a scan succeeds, and until then
    /// `status` shows why (`scan_error`). Files saved meanwhile, which the failed scan could not
    /// record, are found by the rescan: their stat differs from what the index holds.
    ///
    /// Before, the failed batch was dropped: files written while the disk was full were never
    /// pushed, not after space was freed nor after a later change of another file, and `status`
    /// said 0 pending.
    func scanFailed(_ error: any Error) {
        logger.error("scan failed; the whole folder is scanned again until it succeeds", metadata: ["error": "\(error)"])
        lastScanError = "\(error)"
        guard scanRetry == nil else { return }
        let policy = options.retryPolicy
        // Woken by the agent's stop, which it looks for first.
        let retry = LoopWorker(
            "the rescan after a failed scan", signal: stopSignal, backoff: policy,
            start: .after(policy.delay(afterFailures: 1, unit: Double.random(in: 0..<1))), logger: logger
        ) { await self.rescanRound() }
        scanRetry = Task {
            // `scanError` is what `status` shows; the retries do not depend on it.
            try? await self.index.write { [lastScanError] in try $0.setMeta(.scanError, lastScanError) }
            await retry.run()
            self.scanRetry = nil
        }
    }

    /// One full rescan: finished once one succeeds (or the agent stops).
    private func rescanRound() async -> WorkerOutcome {
        if stopRequested { return .finished }
        let scanner = self.scanner
        do {
            metrics.rescan("retry")
            let summary = try await writer.locked { try await scanner.fullScan() }
            try? await index.write { try $0.setMeta(.scanError, nil) }
            logger.notice("the folder scanned cleanly again", metadata: ["scan.queued": "\(summary.queued)", "scan.deleted": "\(summary.deleted)"])
            lastScanError = nil
            if summary.queued + summary.deleted > 0 { pusher.wake() }
            return .finished
        } catch {
            lastScanError = "\(error)"
            try? await index.write { [lastScanError] in try $0.setMeta(.scanError, lastScanError) }
            return .failed(error)
        }
    }
}
