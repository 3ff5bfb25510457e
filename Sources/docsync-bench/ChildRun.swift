import DocsyncTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One run of a command to its end, measured by the kernel: elapsed time, CPU time and the peak
/// resident set (`wait4`'s rusage, which sees the last page the process touched, not a sample),
/// and the bytes it wrote (`/proc/PID/io`'s `wchar`, read between its exit and its reaping).
struct ChildRun {
    var seconds: Double
    var cpuSeconds: Double
    var peakRSSBytes: Int
    /// Bytes passed to write calls (files, the index, sockets); -1 if it could not be read.
    var writtenBytes: Int
    var exitStatus: Int32
    /// stdout and stderr together.
    var output: String

    /// Runs `executable` with `arguments`, its output to `log` (kept for a look afterwards).
    static func run(_ executable: String, _ arguments: [String], log: String) throws -> ChildRun {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let start = now()
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw ProcessFailure("cannot start \(executable): \(String(cString: strerror(rc)))") }
        // Exited but not yet reaped: its I/O counters are still there to read.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 {
            guard errno == EINTR else { throw ProcessFailure("waitid: \(String(cString: strerror(errno)))") }
        }
        let written = Self.writtenBytes(pid: pid)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw ProcessFailure("wait4: \(String(cString: strerror(errno)))") }
        }
        let elapsed = Double(now() - start) / 1e9
        func secs(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        // Exited normally: the code; killed: 128 + the signal, as a shell says it.
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ChildRun(
            seconds: elapsed, cpuSeconds: secs(usage.ru_utime) + secs(usage.ru_stime), peakRSSBytes: Int(usage.ru_maxrss) * 1024,
            writtenBytes: written, exitStatus: code, output: output)
    }

    /// `wchar` of `/proc/PID/io`: what the process handed to write calls, page cache or not. An
    /// index that rewrites its pages many times over shows here, not in the size of its file.
    static func writtenBytes(pid: pid_t) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("wchar:") })
        else { return -1 }
        return Int(line.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)) ?? -1
    }
}
