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
/// One thread blocks in `ppoll` on the inotify fd, so an idle tree costs no CPU; it keeps the map
/// from watch descriptors to folders, adds watches for new folders, and feeds an
/// ``EventAggregator`` whose batches come out of ``start()``'s stream.
///
/// Only `IN_CLOSE_WRITE` and `IN_MOVED_TO` announce new content: a file still being written
/// (`IN_CREATE`, `IN_MODIFY`) is never handed on half-way.
public final class DirectoryWatcher: Sendable {
    public let root: String
    private let settle: Duration
    private let maxDelay: Duration
    private let logger: Logger
    private let state = Mutex<(fd: Int32, wake: Int32, thread: Bool)>((-1, -1, false))
    /// While set, the thread leaves the kernel's queue alone (tests use it to make the queue
    /// overflow for real, the way a stalled process would).
    let suspended = SharedFlag()

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
        unwatchedRescan: Duration = .seconds(30), watchLimit: Int? = nil, folderLabel: String = "", logger: Logger
    ) {
        self.folderLabel = folderLabel
        self.unwatchedRescan = unwatchedRescan
        self.watchLimit = watchLimit
        self.root = root
        self.ignore = ignore
        self.settle = settle
        self.maxDelay = maxDelay
        self.logger = logger
    }

    /// Adds watches over the whole tree, then returns the batches of changes. Watches are in place
    /// when this returns, so a scan started afterwards cannot miss a file created meanwhile.
    public func start() throws(FileSystemError) -> AsyncStream<ChangeBatch> {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            if errno == EMFILE {
                throw FileSystemError("inotify_init1 (raise fs.inotify.max_user_instances)", path: root)
            }
            throw FileSystemError("inotify_init1", path: root)
        }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            close(fd)
            throw FileSystemError("pipe", path: root)
        }
        for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let loop = WatchLoop(
            root: root, fd: fd, wake: pipeFDs[0], logger: logger, suspended: suspended, ignore: ignore,
            watches: Gauge(label: "docsync_inotify_watches", dimensions: [("folder", folderLabel)]),
            aggregator: EventAggregator(
                settleNanoseconds: settle.wholeNanoseconds, maxDelayNanoseconds: maxDelay.wholeNanoseconds))
        loop.watchLimit = watchLimit
        loop.unwatchedRescan = unwatchedRescan.wholeNanoseconds
        loop.addWatches(under: "")
        state.withLock { $0 = (fd, pipeFDs[1], true) }
        let (stream, continuation) = AsyncStream<ChangeBatch>.makeStream(bufferingPolicy: .unbounded)
        let thread = Thread {
            loop.run(continuation)
            close(loop.fd)
            close(loop.wake)
        }
        thread.name = "docsync-inotify"
        thread.start()
        return stream
    }

    /// Stops the thread and finishes the stream (pending events are flushed first).
    public func stop() {
        let wake = state.withLock { s -> Int32 in
            defer { s.thread = false }
            return s.thread ? s.wake : -1
        }
        guard wake >= 0 else { return }
        var byte = UInt8(ascii: "S")
        _ = write(wake, &byte, 1)
        close(wake)
    }

    /// Stops or resumes reading the kernel's event queue. For tests: events pile up in the kernel
    /// while suspended, up to `fs.inotify.max_queued_events`, then overflow. Returns once the
    /// watcher's thread acts on it (at most 2 s): an event made after that is not read.
    package func setSuspended(_ value: Bool) {
        suspended.set(value)
        let wake = state.withLock { $0.thread ? $0.wake : -1 }
        guard wake >= 0 else { return }
        var byte = UInt8(ascii: "R")
        _ = write(wake, &byte, 1)
        for _ in 0..<2_000 where suspended.applied != value { usleep(1_000) }
    }
}

/// The watcher thread's state. Owned by that thread alone once started, hence unchecked.
final class WatchLoop: @unchecked Sendable {
    let root: String
    let fd: Int32
    let wake: Int32
    let logger: Logger
    let suspended: SharedFlag
    let ignore: IgnoreRules
    var aggregator: EventAggregator
    private var pathOf: [Int32: String] = [:]
    /// Folders to their watches; every change is reported as the `docsync_inotify_watches` gauge.
    private var wdOf: [String: Int32] = [:] { didSet { watches.record(wdOf.count) } }
    private let watches: Gauge
    private var warnedLimit = false
    /// Folders whose watch the kernel refused (ENOSPC); their subfolders were not walked either.
    private var unwatched = Set<String>()
    private var reportedUnwatched = 0
    private var nextUnwatchedRescan: Int64?
    var watchLimit: Int?
    var unwatchedRescan: Int64 = 30_000_000_000
    /// Set when the root's own watch reports it moved or deleted.
    private var rootGone = false

    static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
            | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

    init(
        root: String, fd: Int32, wake: Int32, logger: Logger, suspended: SharedFlag, ignore: IgnoreRules, watches: Gauge,
        aggregator: EventAggregator
    ) {
        self.watches = watches
        self.ignore = ignore
        self.root = root
        self.fd = fd
        self.wake = wake
        self.logger = logger
        self.suspended = suspended
        self.aggregator = aggregator
    }

    /// Watches `relative` and every folder below it (not hidden, not a symlink).
    func addWatches(under relative: String) {
        var stack = [relative]
        while let dir = stack.popLast() {
            let abs = dir.isEmpty ? root : root + "/" + dir
            let refused = watchLimit.map { wdOf.count >= $0 && wdOf[dir] == nil } ?? false
            let wd = refused ? -1 : inotify_add_watch(fd, abs, Self.mask)
            if wd < 0 {
                let code = refused ? ENOSPC : errno
                if code == ENOSPC {
                    unwatched.insert(dir)
                    if !warnedLimit {
                        warnedLimit = true
                        warnLimit(at: abs)
                    }
                } else if code != ENOENT && code != ENOTDIR {
                    logger.warning("cannot watch folder", metadata: ["file.path": "\(abs)", "error": "\(String(cString: strerror(code)))"])
                }
                continue
            }
            if let old = pathOf[wd], old != dir { wdOf[old] = nil }
            pathOf[wd] = dir
            wdOf[dir] = wd
            unwatched.remove(dir)
            guard let entries = FileSystem.list(abs) else { continue }
            for entry in entries where entry.type == UInt8(DT_DIR) && !DocumentRules.isIgnoredName(entry.name) {
                let child = dir.isEmpty ? entry.name : dir + "/" + entry.name
                if ignore.isEmpty || !ignore.isIgnored(child, isDirectory: true) { stack.append(child) }
            }
        }
    }

    /// Says which limit ran out, and the number in force: the watches this agent holds when the
    /// kernel refused the next (what is left of the per-user limit, which every program of this
    /// user that watches files shares), beside the sysctl's value.
    private func warnLimit(at abs: String) {
        let sysctl = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        logger.error(
            "inotify watch limit reached after \(wdOf.count) watches: the kernel refuses more for this user (fs.inotify.max_user_watches is \(sysctl), shared with every other program of this user that watches files). Raise it, e.g. `sudo sysctl fs.inotify.max_user_watches=524288`; until then the folders without a watch are rescanned every \(unwatchedRescan / 1_000_000_000) s, and `docsync status` counts them.",
            metadata: ["file.path": "\(abs)"])
    }

    /// Folders without a watch: their watches are tried again (the limit may have been raised),
    /// and those still refused are rescanned, their subtrees with them.
    private func rescanUnwatched(now: Int64) {
        guard let due = nextUnwatchedRescan, now >= due else { return }
        let folders = unwatched
        unwatched.removeAll()
        for dir in folders { addWatches(under: dir) }
        for dir in folders { aggregator.add(dir, at: now) }
        nextUnwatchedRescan = unwatched.isEmpty ? nil : now + unwatchedRescan
    }

    /// Forgets (and, if `remove`, unregisters) the watches on `relative` and below: the folder moved
    /// away or was deleted. A move within the tree is re-watched under its new name by IN_MOVED_TO.
    private func dropWatches(under relative: String, remove: Bool) {
        let prefix = relative + "/"
        for (dir, wd) in wdOf where dir == relative || dir.hasPrefix(prefix) {
            if remove { inotify_rm_watch(fd, wd) }
            wdOf[dir] = nil
            pathOf[wd] = nil
        }
    }

    func run(_ output: AsyncStream<ChangeBatch>.Continuation) {
        let bufferSize = 256 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        var stopping = false
        while !stopping {
            // Sleep until the kernel has events or the pending batch is due; with nothing pending,
            // indefinitely (an idle tree costs no wakeups). Milliseconds are rounded up.
            var timeoutMs: Int32 = -1
            if !unwatched.isEmpty && nextUnwatchedRescan == nil { nextUnwatchedRescan = monotonicNow() + unwatchedRescan }
            if let deadline = [aggregator.deadline, nextUnwatchedRescan].compactMap({ $0 }).min() {
                let wait = max(0, deadline - monotonicNow())
                timeoutMs = Int32(min(Int64(Int32.max), (wait + 999_999) / 1_000_000))
            }
            fds[0].revents = 0
            fds[1].revents = 0
            fds[0].events = suspended.take() ? 0 : Int16(POLLIN)
            let ready = poll(&fds, 2, timeoutMs)
            if ready < 0 && errno != EINTR {
                logger.error("inotify poll failed", metadata: ["error": "\(String(cString: strerror(errno)))"])
                break
            }
            if fds[1].revents != 0 {
                var byte: UInt8 = 0
                let n = read(wake, &byte, 1)
                if n <= 0 || byte == UInt8(ascii: "S") { stopping = true }
            }
            if fds[0].revents != 0 { drain(buffer, bufferSize) }
            if rootGone {
                logger.critical("the synced folder was moved away or deleted; nothing at \(root) is watched any more", metadata: ["file.path": "\(root)"])
                var last = ChangeBatch()
                last.rootGone = true
                output.yield(last)
                break
            }
            let now = monotonicNow()
            rescanUnwatched(now: now)
            var batch = aggregator.due(now: stopping ? Int64.max : now) ?? ChangeBatch()
            if unwatched.count != reportedUnwatched {
                reportedUnwatched = unwatched.count
                batch.unwatchedFolders = unwatched.count
            }
            if !batch.isEmpty { output.yield(batch) }
        }
        output.finish()
    }

    private func drain(_ buffer: UnsafeMutableRawPointer, _ size: Int) {
        while true {
            let n = read(fd, buffer, size)
            if n < 0 {
                if errno == EINTR { continue }
                return  // EAGAIN: drained
            }
            if n == 0 { return }
            var offset = 0
            let now = monotonicNow()
            var overflowed = false
            while offset + 16 <= n {
                let wd = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let nameBytes = UnsafeRawBufferPointer(start: buffer + offset + 16, count: length).prefix(while: { $0 != 0 })
                offset += 16 + length
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    overflowed = true
                    continue
                }
                if mask & UInt32(IN_MOVE_SELF | IN_DELETE_SELF) != 0, pathOf[wd] == "" {
                    rootGone = true
                    continue
                }
                if let name = String(validating: nameBytes, as: UTF8.self) {
                    handle(wd: wd, mask: mask, name: name, now: now)
                } else if let dir = pathOf[wd] {
                    // A name that is not UTF-8 cannot be addressed by a path string: rescan its
                    // folder, where the walk reports it (as invalid) by its raw entry.
                    aggregator.add(dir, at: now)
                }
            }
            if overflowed {
                logger.warning("inotify queue overflowed; rescanning the whole tree", metadata: ["file.path": "\(root)"])
                aggregator.addOverflow(at: now)
                addWatches(under: "")
            }
        }
    }

    private func handle(wd: Int32, mask: UInt32, name: String, now: Int64) {
        if mask & UInt32(IN_IGNORED) != 0 {
            if let dir = pathOf.removeValue(forKey: wd), wdOf[dir] == wd { wdOf[dir] = nil }
            return
        }
        guard let dir = pathOf[wd], !name.isEmpty, !DocumentRules.isIgnoredName(name) else { return }
        let path = dir.isEmpty ? name : dir + "/" + name
        if !ignore.isEmpty && ignore.isIgnored(path, isDirectory: mask & UInt32(IN_ISDIR) != 0) { return }
        if mask & UInt32(IN_ISDIR) != 0 {
            if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                addWatches(under: path)
                aggregator.add(path, at: now)
            } else if mask & UInt32(IN_MOVED_FROM | IN_DELETE) != 0 {
                dropWatches(under: path, remove: mask & UInt32(IN_MOVED_FROM) != 0)
                aggregator.add(path, at: now)
            }
            return
        }
        if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) != 0 {
            aggregator.add(path, at: now)
        } else if mask & UInt32(IN_ATTRIB) != 0 {
            aggregator.add(path, attributeOnly: true, at: now)
        }
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
