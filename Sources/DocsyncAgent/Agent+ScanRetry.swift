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
        scanRetry = Task { await self.rescanUntilItSucceeds() }
    }

    private func rescanUntilItSucceeds() async {
        var failures = 0
        let scanner = self.scanner
        // `scanError` is what `status` shows; the retries below do not depend on it.
        try? await index.write { [lastScanError] in try $0.setMeta(.scanError, lastScanError) }
        while !stopRequested {
            failures += 1
            await stopSignal.wait(timeout: options.retryPolicy.delay(afterFailures: failures, unit: Double.random(in: 0..<1)))
            if stopRequested { break }
            do {
                metrics.rescan("retry")
                let summary = try await writer.locked { try await scanner.fullScan() }
                try? await index.write { try $0.setMeta(.scanError, nil) }
                logger.notice("the folder scanned cleanly again", metadata: ["scan.queued": "\(summary.queued)", "scan.deleted": "\(summary.deleted)"])
                lastScanError = nil
                if summary.queued + summary.deleted > 0 { pusher.wake() }
                break
            } catch {
                lastScanError = "\(error)"
                try? await index.write { [lastScanError] in try $0.setMeta(.scanError, lastScanError) }
                logger.debug("rescan failed again", metadata: ["error": "\(error)"])
            }
        }
        scanRetry = nil
    }
}
