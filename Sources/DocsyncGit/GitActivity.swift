import DocsyncFiles
import Foundation

/// Whether one of the user's git commands is running in a work tree, seen in `/proc`: a process
/// named `git` whose working folder is in the tree or that names the tree (`git -C TREE`, before
/// its `chdir`), or any process in the tree started in the last
/// ``youngMilliseconds`` (a shell's child between `fork` and `exec` still carries the shell's
/// name, and is git a moment later). docsync takes the index's lock only while none is, and for
/// microseconds, so the user's command never finds it taken.
enum GitActivity {
    /// A process this young may be about to become git.
    static let youngMilliseconds: Int64 = 200

    static func running(in workTree: String) -> Bool {
        let first = look(in: workTree, skipping: [])
        if first.busy { return true }
        // Processes started while the first look read /proc (a few milliseconds): one more look
        // at those alone, so the window left is the microseconds until the locks are released.
        return look(in: workTree, skipping: first.seen).busy
    }

    private static func look(in workTree: String, skipping known: Set<Int32>) -> (busy: Bool, seen: Set<Int32>) {
        let own = getpid()
        let now = uptimeMilliseconds()
        var seen = Set<Int32>()
        for pid in processes() where pid != own {
            seen.insert(pid)
            guard !known.contains(pid), let comm = small("/proc/\(pid)/comm") else { continue }
            guard comm.starts(with: "git".utf8) || isYoung(pid, now: now) else { continue }
            if let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd"),
               cwd == workTree || cwd.hasPrefix(workTree + "/") { return (true, seen) }
            // `git -C TREE …` before its chdir still has the caller's folder (as has a launcher
            // such as `env git -C TREE …` about to exec it).
            if let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
               cmdline.split(separator: 0).contains(where: { $0.elementsEqual(workTree.utf8) || $0.starts(with: Array((workTree + "/").utf8)) }) {
                return (true, seen)
            }
        }
        return (false, seen)
    }

    /// The processes in `/proc`. Listed and read with the project's own `readdir` and `read`
    /// calls (``FileSystem``), not Foundation's: a look reads two files of each process of the
    /// machine at every commit (Foundation's calls cost about 5 ms a commit with 70 processes,
    /// and grow with them).
    private static func processes() -> [Int32] {
        FileSystem.list("/proc")?.compactMap { Int32($0.name) } ?? []
    }

    /// A small file of `/proc` (`comm`, `stat`, `uptime`: under 1 KiB).
    private static func small(_ path: String) -> [UInt8]? {
        try? FileSystem.read(path, maxSize: 4096).bytes
    }

    /// Milliseconds since boot, as `/proc/uptime` says.
    static func uptimeMilliseconds() -> Int64? {
        guard let text = small("/proc/uptime"), let seconds = Double(String(decoding: text.prefix { $0 != 32 }, as: UTF8.self)) else { return nil }
        return Int64(seconds * 1000)
    }

    /// Whether `pid` started less than ``youngMilliseconds`` before `now` (its start time is field
    /// 22 of `/proc/PID/stat`, in clock ticks since boot, counted after the command's `)`).
    static func isYoung(_ pid: Int32, now: Int64?) -> Bool {
        guard let now, let stat = small("/proc/\(pid)/stat"), let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return false }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 19, let ticks = Int64(String(decoding: fields[19], as: UTF8.self)) else { return false }
        let started = ticks * 1000 / Int64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return now - started < youngMilliseconds
    }
}
