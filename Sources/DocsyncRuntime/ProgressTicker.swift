import DocsyncIndex
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Shows how far long work has got: files recorded in the index and changes waiting, with rates
/// and an ETA. Once work has lasted two seconds: on a terminal one line updated in place every
/// second; otherwise a plain line every ten seconds (logs, journald). Read from the index from
/// outside the engine, so it costs two counts a tick and nothing on the sync path.
public struct ProgressTicker: Sendable {
    /// The agent's index (read, never opened again).
    let index: Index
    let terminal: Bool
    let every: Duration
    let after: Duration

    public init(index: Index, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.index = index
        terminal = isatty(STDERR_FILENO) == 1
        // Test seam: DOCSYNC_PROGRESS_MS shortens both the tick and the two seconds' grace.
        let override = environment["DOCSYNC_PROGRESS_MS"].flatMap(Int64.init).map { Duration.milliseconds($0) }
        every = override ?? (terminal ? .seconds(1) : .seconds(10))
        after = override ?? .seconds(2)
    }

    struct Sample {
        var files: Int
        var pending: Int
        var at: ContinuousClock.Instant
    }

    /// Runs until cancelled.
    public func run() async {
        var previous: Sample?
        var start: Sample?  // when the work began; rates are averages since
        var peak = 0
        var shown = false
        var writes: UInt64?  // the index's write count at the last read
        while !Task.isCancelled {
            try? await Task.sleep(for: every)
            let seen = index.writes.value
            guard let now = await sample(unchangedSince: seen == writes ? previous : nil) else { continue }
            let before = previous
            (previous, writes) = (now, seen)
            guard let before else { continue }
            guard now.pending > 0 || now.files != before.files else {
                if shown { write("progress: done: \(now.files) files in the index, nothing pending", final: true) }
                (start, peak, shown) = (nil, 0, false)
                continue
            }
            let began = start ?? before
            start = began
            peak = max(peak, before.pending, now.pending)
            if now.at - began.at >= after {
                write(line(now, since: began, peak: peak), final: false)
                shown = true
            }
        }
    }

    /// The counts now: read from the index, or those of `unchanged` (nothing was written since
    /// it was read) stamped with the time, without a read; `nil` when the read fails.
    func sample(unchangedSince unchanged: Sample?) async -> Sample? {
        if let unchanged { return Sample(files: unchanged.files, pending: unchanged.pending, at: .now) }
        return try? await index.read { Sample(files: try $0.fileCount(), pending: try $0.pendingCount(), at: .now) }
    }

    func line(_ now: Sample, since start: Sample, peak: Int) -> String {
        let elapsed = now.at - start.at
        let seconds = max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        let recorded = Double(now.files - start.files) / seconds
        let delivered = Double(peak - now.pending) / seconds
        var text = "progress: \(now.files) files in the index"
        if recorded >= 1 { text += " (+\(Int(recorded))/s)" }
        text += ", \(now.pending) pending"
        if delivered >= 1 { text += " (−\(Int(delivered))/s, ETA \(Int((Double(now.pending) / delivered).rounded(.up))) s)" }
        return text
    }

    private func write(_ text: String, final: Bool) {
        let out = terminal ? "\r\u{1B}[2K" + text + (final ? "\n" : "") : text + "\n"
        var bytes = Array(out.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress!, $0.count) }
    }
}
