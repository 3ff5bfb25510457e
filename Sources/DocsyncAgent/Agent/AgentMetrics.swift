import DocsyncClock
import DocsyncIndex
import Foundation
import Metrics

/// What the agent counts, through swift-metrics: `docsync watch --metrics-addr` exports it in
/// Prometheus's text format; without a metrics backend the calls cost a no-op. Names follow
/// Prometheus's conventions (`_total` counters, base units, `_seconds`, `_bytes`). Every series
/// carries the folder's name as its `folder` label: one process may sync several folders.
public struct AgentMetrics: Sendable {
    public let folder: String

    public init(folder: String) { self.folder = folder }

    func labels(_ extra: (String, String)...) -> [(String, String)] { [("folder", folder)] + extra }

    /// Documents the endpoint answered for, by what it said: `stored`, `conflict`, `rejected`,
    /// `unauthorized`, `retried` (a transient failure; the document stays queued).
    func pushed(_ outcome: String, count: Int) {
        guard count > 0 else { return }
        Counter(label: "docsync_pushed_documents_total", dimensions: labels(("outcome", outcome))).increment(by: count)
    }

    /// A call that keeps leaving the agent where it was, counted when the agent backs off for it:
    /// `conflict` (writes of one document answered with a conflict again and again) and `pull`
    /// (long polls answered at once with nothing new), once per streak; `apply` (pulled changes
    /// that could not be written), once per batch of them recorded to be retried.
    func repeated(_ what: String) {
        Counter(label: "docsync_repeated_failures_total", dimensions: labels(("what", what))).increment()
    }

    /// Pull calls by outcome (`ok`, `failed`), and the documents they brought.
    func pulled(documents: Int, ok: Bool) {
        Counter(label: "docsync_pulls_total", dimensions: labels(("outcome", ok ? "ok" : "failed"))).increment()
        if documents > 0 { Counter(label: "docsync_pulled_documents_total", dimensions: labels()).increment(by: documents) }
    }

    /// How long one call to the endpoint took (`push`, `pull`, `upload`), answered or not.
    func call(_ call: String, since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        Timer(label: "docsync_endpoint_call_duration_seconds", dimensions: labels(("call", call)), preferredDisplayUnit: .seconds).record(duration: elapsed)
    }

    func uploaded(bytes: Int64) {
        Counter(label: "docsync_uploaded_bytes_total", dimensions: labels()).increment(by: Int(bytes))
    }

    /// Bytes of attached files fetched from the endpoint (not those found in the cache or the folder).
    func downloaded(bytes: Int64) {
        Counter(label: "docsync_downloaded_bytes_total", dimensions: labels()).increment(by: Int(bytes))
    }

    /// Conflict copies written (the losing side of a document changed on both sides at once).
    func conflictCopy() {
        Counter(label: "docsync_conflict_copies_total", dimensions: labels()).increment()
    }

    /// Full rescans of the tree, by why: `start`, `overflow` (the kernel's event queue), `retry`.
    func rescan(_ reason: String) {
        Counter(label: "docsync_rescans_total", dimensions: labels(("reason", reason))).increment()
    }

    /// Sets the gauges read from the index and the clock, for a scrape: documents by state, the
    /// outbox's depth and its oldest entry's age, folders without a watch, the clock's offset
    /// from this machine's wall clock and its bound. One read transaction, counts only.
    public func refresh(_ index: Index, clock: ServerClock) async throws {
        let now = clock.now()
        let (counts, unwatched, pending, oldest, notAllowed) = try await index.read { tx in
            (try tx.statusCounts(), try tx.meta(.unwatchedFolders).flatMap { Int($0) } ?? 0, try tx.pendingCount(), try tx.oldestQueuedAt(),
             try tx.notAllowed(limit: 0).count)
        }
        Gauge(label: "docsync_documents", dimensions: labels(("state", "not_allowed"))).record(notAllowed)
        for (state, n) in [("synced", counts.synced), ("pending", counts.pending), ("invalid", counts.invalid), ("rejected", counts.rejected),
                              ("excluded", counts.excluded), ("nonconforming", counts.nonconforming)] {
            Gauge(label: "docsync_documents", dimensions: labels(("state", state))).record(n)
        }
        Gauge(label: "docsync_tombstones", dimensions: labels()).record(counts.tombstones)
        Gauge(label: "docsync_outbox_entries", dimensions: labels()).record(pending)
        Gauge(label: "docsync_outbox_oldest_age_seconds", dimensions: labels()).record(oldest.map { Double(max(0, now - $0)) / 1000 } ?? 0)
        Gauge(label: "docsync_unwatched_folders", dimensions: labels()).record(unwatched)
        if let estimate = clock.estimate {
            Gauge(label: "docsync_clock_offset_seconds", dimensions: labels()).record(Double(clock.wallOffset(estimate)) / 1e9)
            Gauge(label: "docsync_clock_bound_seconds", dimensions: labels()).record(Double(estimate.bound) / 1e9)
        }
    }
}
