#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import DocsyncFiles

/// One inotify instance and one thread for every folder a process watches.
///
/// The kernel allows a user 128 inotify instances by default (`fs.inotify.max_user_instances`),
/// shared with every other program of that user: a config of 500 folders with one instance each
/// could not start. Here the folders' watches share one instance; its thread blocks in `poll` on
/// the instance's fd (an idle tree costs no CPU), routes each event by watch descriptor to the
/// folders holding that watch, and hands each folder's batches to its own stream.
///
/// The thread and the instance exist while at least one folder is registered: the first folder
/// opens them, the last one to leave closes them.
public final class InotifyHub: Sendable {
    private let state = Mutex<HubRun?>(nil)
    /// While set, the thread leaves the kernel's queue alone (see `DirectoryWatcher.setSuspended`).
    let suspended = SharedFlag()

    /// How long the thread lets events gather once the kernel has some (see ``loop(_:)``).
    static let gatherMicroseconds: UInt32 = 2_000

    public init() {}

    /// Opens the instance and starts the thread unless running; adds `folder` (made by `make`
    /// with the instance's watch table) and its watches, all under the lock, so events for it are
    /// routed from its first watch on.
    func register(root: String, _ make: (WatchTable) -> FolderWatch) throws(FileSystemError) -> FolderWatch {
        try state.withLock { current throws(FileSystemError) -> FolderWatch in
            let run: HubRun
            if let current {
                run = current
            } else {
                run = try HubRun.open(root: root)
                current = run
                let thread = Thread { [self] in loop(run) }
                thread.name = "docsync-inotify"
                thread.start()
            }
            let folder = make(run.table)
            run.table.folders[ObjectIdentifier(folder)] = folder
            folder.addWatches(under: "")
            return folder
        }
    }

    /// Flushes what `folder` has pending, finishes its stream and gives up its watches.
    func unregister(_ folder: FolderWatch) {
        state.withLock { current in
            guard let run = current, run.table.folders[ObjectIdentifier(folder)] != nil else { return }
            folder.emit(now: monotonicNow(), flush: true)
            remove(folder, from: run, current: &current)
        }
    }

    private func remove(_ folder: FolderWatch, from run: HubRun, current: inout HubRun?) {
        folder.output.finish()
        folder.dropAll()
        run.table.folders[ObjectIdentifier(folder)] = nil
        if run.table.folders.isEmpty {
            run.stopped = true
            current = nil
            run.poke("S")
        }
    }

    /// Stops or resumes reading the kernel's queue for every folder of this hub; returns once the
    /// thread acts on it, `false` if it has not within a minute (a thread that busy is a finding
    /// for the test that asked, not something to wait out silently).
    @discardableResult
    func setSuspended(_ value: Bool) -> Bool {
        suspended.set(value)
        let running = state.withLock { current -> Bool in
            current?.poke("R")
            return current != nil
        }
        guard running else { return true }
        for _ in 0..<60_000 where suspended.applied != value { usleep(1_000) }
        return suspended.applied == value
    }

    /// The thread: sleeps until the kernel has events, a wake byte comes, or a folder's batch is
    /// due; then hands every folder what is due.
    private func loop(_ run: HubRun) {
        let bufferSize = 256 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        var fds = [pollfd(fd: run.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: run.wake, events: Int16(POLLIN), revents: 0)]
        while true {
            let deadline = state.withLock { _ in run.table.folders.values.compactMap { $0.deadline() }.min() }
            var timeoutMs: Int32 = -1
            if let deadline {
                // Milliseconds rounded up; with nothing pending, indefinitely (no idle wakeups).
                let wait = max(0, deadline - monotonicNow())
                timeoutMs = Int32(min(Int64(Int32.max), (wait + 999_999) / 1_000_000))
            }
            fds[0].revents = 0
            fds[1].revents = 0
            fds[0].events = suspended.take() ? 0 : Int16(POLLIN)
            if poll(&fds, 2, timeoutMs) < 0 && errno != EINTR {
                Logger(label: "docsync.watcher").error("inotify poll failed", metadata: ["error": "\(String(cString: strerror(errno)))"])
                usleep(100_000)  // not a busy loop, should the failure repeat
            }
            // Events come in bursts (a save is three to five, a pull thousands): a moment's pause
            // lets the burst gather, so the thread wakes and reads once for it, not per event,
            // and the kernel has no waiter to wake meanwhile. Batches wait far longer than this
            // for their settle window anyway.
            if fds[0].revents != 0 { usleep(Self.gatherMicroseconds) }
            if fds[1].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 64)
                _ = read(run.wake, &bytes, bytes.count)
            }
            let done = state.withLock { current -> Bool in
                if run.stopped { return true }
                if fds[0].revents != 0 { drain(run, buffer, bufferSize) }
                deliver(run, current: &current)
                return run.stopped
            }
            if done { break }
        }
        run.close()
    }

    /// Hands every folder what is due; a folder whose root went away gets its last batch and leaves.
    private func deliver(_ run: HubRun, current: inout HubRun?) {
        let now = monotonicNow()
        for folder in Array(run.table.folders.values) {
            if folder.rootGone {
                folder.reportRootGone()
                remove(folder, from: run, current: &current)
            } else {
                folder.emit(now: now)
            }
        }
    }

    /// Reads the instance's queue until empty, routing each event to the folders holding its watch.
    private func drain(_ run: HubRun, _ buffer: UnsafeMutableRawPointer, _ size: Int) {
        while true {
            let n = read(run.fd, buffer, size)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }  // EAGAIN: drained
            var offset = 0
            let now = monotonicNow()
            var overflowed = false
            while offset + 16 <= n {
                let wd = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let name = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(start: buffer + offset + 16, count: length).prefix(while: { $0 != 0 }))
                offset += 16 + length
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    overflowed = true
                    continue
                }
                for folder in run.table.owners[wd] ?? [] { folder.event(wd: wd, mask: mask, name: name, now: now) }
            }
            // The kernel dropped events, of any folder: every folder rescans.
            if overflowed { for folder in run.table.folders.values { folder.overflowed(at: now) } }
        }
    }
}

/// An open instance: its fd, the pipe that wakes its thread, and the watch table. Touched under
/// the hub's lock (the fds are read by the thread alone), hence unchecked.
final class HubRun: @unchecked Sendable {
    let fd: Int32
    let wake: Int32
    private let wakeWrite: Int32
    let table: WatchTable
    var stopped = false

    private init(fd: Int32, wake: Int32, wakeWrite: Int32) {
        self.fd = fd
        self.wake = wake
        self.wakeWrite = wakeWrite
        self.table = WatchTable(fd: fd)
    }

    static func open(root: String) throws(FileSystemError) -> HubRun {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            if errno == EMFILE {
                throw FileSystemError("inotify_init1 (raise fs.inotify.max_user_instances)", path: root)
            }
            throw FileSystemError("inotify_init1", path: root)
        }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            Glibc.close(fd)
            throw FileSystemError("pipe", path: root)
        }
        for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return HubRun(fd: fd, wake: pipeFDs[0], wakeWrite: pipeFDs[1])
    }

    /// Wakes the thread (`S`: see whether it should stop; `R`: the suspension changed).
    func poke(_ byte: Unicode.Scalar) {
        var value = UInt8(ascii: byte)
        _ = write(wakeWrite, &value, 1)
    }

    func close() {
        Glibc.close(fd)
        Glibc.close(wake)
        Glibc.close(wakeWrite)
    }
}

/// Which folders hold each watch descriptor. One instance gives one descriptor per inode, so two
/// folders watching the same folder (one config naming a folder and a folder inside it) share it:
/// it is removed from the kernel only when the last of them lets go.
final class WatchTable: @unchecked Sendable {
    private let fd: Int32
    var owners: [Int32: [FolderWatch]] = [:]
    var folders: [ObjectIdentifier: FolderWatch] = [:]

    init(fd: Int32) {
        self.fd = fd
    }

    /// `inotify_add_watch` for `folder`; a negative result leaves `errno` as the kernel set it.
    func add(_ path: String, mask: UInt32, for folder: FolderWatch) -> Int32 {
        let wd = inotify_add_watch(fd, path, mask)
        guard wd >= 0 else { return wd }
        if owners[wd]?.contains(where: { $0 === folder }) != true { owners[wd, default: []].append(folder) }
        return wd
    }

    /// `folder` no longer holds `wd`; the kernel's watch goes (if `remove`) with its last holder.
    func release(_ wd: Int32, for folder: FolderWatch, remove: Bool) {
        guard var holders = owners[wd] else { return }
        holders.removeAll { $0 === folder }
        owners[wd] = holders.isEmpty ? nil : holders
        if holders.isEmpty && remove { inotify_rm_watch(fd, wd) }
    }
}
