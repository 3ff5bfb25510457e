#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Metrics
import Synchronization
import DocsyncFiles
import DocsyncModel

/// Watches a folder tree with the kernel's inotify, called directly (no libinotifytools: it keeps
/// global state, hides its fd and reports stale paths after a folder rename).
///
/// The watches live in an ``InotifyHub``: one instance and one thread, shared by every folder of a
/// process that is given the same hub (a watcher without one has a hub of its own). The hub keeps
/// the map from watch descriptors to folders, adds watches for new folders, and feeds this
/// folder's ``EventAggregator``, whose batches come out of ``start()``'s stream.
///
/// Only `IN_CLOSE_WRITE` and `IN_MOVED_TO` announce new content: a file still being written
/// (`IN_CREATE`, `IN_MODIFY`) is never handed on half-way.
public final class DirectoryWatcher: Sendable {
    public let root: String
    private let settle: Duration
    private let maxDelay: Duration
    private let logger: Logger
    private let hub: InotifyHub
    private let folder = Mutex<FolderWatch?>(nil)
    private let ignore: IgnoreRules

    /// How often folders left without a watch (the inotify limit reached) are rescanned, and
    /// their watches tried again.
    public let unwatchedRescan: Duration
    /// Test seam: act as if the kernel refused watches beyond this many (ENOSPC), as a low
    /// `fs.inotify.max_user_watches` does; tests cannot lower the system's limit for themselves.
    public let watchLimit: Int?
    /// The `folder` label of the `docsync_inotify_watches` gauge (several folders in one process).
    let folderLabel: String

    public init(
        root: String, settle: Duration = .milliseconds(5), maxDelay: Duration = .milliseconds(100), ignore: IgnoreRules = IgnoreRules(),
        unwatchedRescan: Duration = .seconds(30), watchLimit: Int? = nil, folderLabel: String = "", hub: InotifyHub? = nil, logger: Logger
    ) {
        self.folderLabel = folderLabel
        self.unwatchedRescan = unwatchedRescan
        self.watchLimit = watchLimit
        self.root = root
        self.ignore = ignore
        self.settle = settle
        self.maxDelay = maxDelay
        self.hub = hub ?? InotifyHub()
        self.logger = logger
    }

    /// Adds watches over the whole tree, then returns the batches of changes. Watches are in place
    /// when this returns, so a scan started afterwards cannot miss a file created meanwhile.
    public func start() throws(FileSystemError) -> AsyncStream<ChangeBatch> {
        let (stream, continuation) = AsyncStream<ChangeBatch>.makeStream(bufferingPolicy: .unbounded)
        let watch = try hub.register(root: root) { table in
            FolderWatch(
                root: root, table: table, output: continuation, logger: logger, ignore: ignore,
                watches: Gauge(label: "docsync_inotify_watches", dimensions: [("folder", folderLabel)]),
                aggregator: EventAggregator(settleNanoseconds: settle.wholeNanoseconds, maxDelayNanoseconds: maxDelay.wholeNanoseconds),
                watchLimit: watchLimit, unwatchedRescan: unwatchedRescan.wholeNanoseconds)
        }
        folder.withLock { $0 = watch }
        return stream
    }

    /// Stops watching and finishes the stream (pending events are flushed first).
    public func stop() {
        guard let watch = folder.withLock({ f -> FolderWatch? in defer { f = nil }; return f }) else { return }
        hub.unregister(watch)
    }

    /// Stops or resumes reading the kernel's event queue. For tests: events pile up in the kernel
    /// while suspended, up to `fs.inotify.max_queued_events`, then overflow. Returns once the
    /// hub's thread acts on it (an event made after that is not read), `false` if it did not
    /// within a minute. With a shared hub, every folder of it is suspended.
    @discardableResult
    package func setSuspended(_ value: Bool) -> Bool {
        hub.setSuspended(value)
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// A boolean shared between threads.
final class SharedFlag: Sendable {
    private let storage = Mutex(false)
    private let seen = Mutex(false)
    var value: Bool { storage.withLock { $0 } }
    func set(_ v: Bool) { storage.withLock { $0 = v } }
    /// The value the watcher thread acts on now (read by it just before each `poll`).
    var applied: Bool { seen.withLock { $0 } }
    func take() -> Bool {
        let v = value
        seen.withLock { $0 = v }
        return v
    }
}
