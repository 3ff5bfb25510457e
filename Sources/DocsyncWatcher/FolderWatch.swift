#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Metrics
import DocsyncFiles
import DocsyncModel

/// One watched folder tree inside an ``InotifyHub``: its watch descriptors, the folders without a
/// watch, and the aggregator whose batches go to its stream. Touched only under the hub's lock,
/// hence unchecked.
final class FolderWatch: @unchecked Sendable {
    let root: String
    let logger: Logger
    let ignore: IgnoreRules
    let output: AsyncStream<ChangeBatch>.Continuation
    private unowned let table: WatchTable
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
    let watchLimit: Int?
    let unwatchedRescan: Int64
    /// Set when the root's own watch reports it moved or deleted.
    private(set) var rootGone = false

    static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
            | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

    init(
        root: String, table: WatchTable, output: AsyncStream<ChangeBatch>.Continuation, logger: Logger, ignore: IgnoreRules,
        watches: Gauge, aggregator: EventAggregator, watchLimit: Int?, unwatchedRescan: Int64
    ) {
        self.root = root
        self.table = table
        self.output = output
        self.logger = logger
        self.ignore = ignore
        self.watches = watches
        self.aggregator = aggregator
        self.watchLimit = watchLimit
        self.unwatchedRescan = unwatchedRescan
    }

    /// Watches `relative` and every folder below it (not hidden, not a symlink).
    func addWatches(under relative: String) {
        var stack = [relative]
        while let dir = stack.popLast() {
            let abs = dir.isEmpty ? root : root + "/" + dir
            let refused = watchLimit.map { wdOf.count >= $0 && wdOf[dir] == nil } ?? false
            let wd = refused ? -1 : table.add(abs, mask: Self.mask, for: self)
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

    /// Forgets (and, if `remove`, unregisters) the watches on `relative` and below: the folder moved
    /// away or was deleted. A move within the tree is re-watched under its new name by IN_MOVED_TO.
    private func dropWatches(under relative: String, remove: Bool) {
        let prefix = relative + "/"
        for (dir, wd) in wdOf where dir == relative || dir.hasPrefix(prefix) {
            table.release(wd, for: self, remove: remove)
            wdOf[dir] = nil
            pathOf[wd] = nil
        }
    }

    /// Gives up every watch of this folder (it stops watching).
    func dropAll() {
        for wd in wdOf.values { table.release(wd, for: self, remove: true) }
        wdOf.removeAll()
        pathOf.removeAll()
    }

    /// When this folder next needs the thread: its pending batch, or its unwatched folders' rescan.
    func deadline() -> Int64? {
        if !unwatched.isEmpty && nextUnwatchedRescan == nil { nextUnwatchedRescan = monotonicNow() + unwatchedRescan }
        switch (aggregator.deadline, nextUnwatchedRescan) {
        case let (a?, b?): return min(a, b)
        case let (a, b): return a ?? b
        }
    }

    /// Hands on what is due at `now` (everything pending when `flush`).
    func emit(now: Int64, flush: Bool = false) {
        rescanUnwatched(now: now)
        var batch = aggregator.due(now: flush ? Int64.max : now) ?? ChangeBatch()
        if unwatched.count != reportedUnwatched {
            reportedUnwatched = unwatched.count
            batch.unwatchedFolders = unwatched.count
        }
        if !batch.isEmpty { output.yield(batch) }
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

    /// The kernel dropped events: everything is rescanned, and watches added for folders it missed.
    func overflowed(at now: Int64) {
        logger.warning("inotify queue overflowed; rescanning the whole tree", metadata: ["file.path": "\(root)"])
        aggregator.addOverflow(at: now)
        addWatches(under: "")
    }

    /// One event of a watch this folder holds.
    func event(wd: Int32, mask: UInt32, name nameBytes: UnsafeRawBufferPointer, now: Int64) {
        if mask & UInt32(IN_MOVE_SELF | IN_DELETE_SELF) != 0, pathOf[wd] == "" {
            rootGone = true
            return
        }
        if let name = String(validating: nameBytes, as: UTF8.self) {
            handle(wd: wd, mask: mask, name: name, now: now)
        } else if let dir = pathOf[wd] {
            // A name that is not UTF-8 cannot be addressed by a path string: rescan its folder,
            // where the walk reports it (as invalid) by its raw entry.
            aggregator.add(dir, at: now)
        }
    }

    private func handle(wd: Int32, mask: UInt32, name: String, now: Int64) {
        if mask & UInt32(IN_IGNORED) != 0 {
            if let dir = pathOf.removeValue(forKey: wd), wdOf[dir] == wd { wdOf[dir] = nil }
            table.release(wd, for: self, remove: false)
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
        if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 {
            aggregator.add(path, finished: true, at: now)
        } else if mask & UInt32(IN_MOVED_FROM | IN_DELETE) != 0 {
            // A document gone may be the first step of a save (vim renames it to a backup, then
            // writes the new file): the batch waits for the quiet period. A temporary's does not.
            aggregator.add(path, finished: !DocumentRules.isDocumentName(name), at: now)
        } else if mask & UInt32(IN_ATTRIB) != 0 {
            aggregator.add(path, attributeOnly: true, at: now)
        }
    }

    /// The root moved away or was deleted: the last batch says so.
    func reportRootGone() {
        logger.critical("the synced folder was moved away or deleted; nothing at \(root) is watched any more", metadata: ["file.path": "\(root)"])
        var last = ChangeBatch()
        last.rootGone = true
        output.yield(last)
    }
}
