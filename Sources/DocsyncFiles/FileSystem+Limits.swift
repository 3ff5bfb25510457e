#if canImport(Glibc)
import Glibc
#endif
import Foundation

extension FileSystem {
    /// Raises the soft limit on open files to the hard limit: the soft 1,024 many systems start
    /// with is a few hundred idle clients for a server, or a hundred folders for one `watch` (each
    /// holds its index's files, its lock, its folder and its connections). Returns the limit now
    /// in force.
    @discardableResult
    public static func raiseFileLimit() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// The process's umask as the kernel reports it (`/proc/self/status`, Linux 4.7 and later),
    /// read once; nil where it cannot be read. Reading it with `umask(2)` would set it meanwhile.
    static let processUmask: UInt32? = {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") })
        else { return nil }
        return UInt32(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
    }()

    /// Whether a file created with `mode` already has it, so that no `chmod` (and the attribute
    /// event every watcher of its folder then reads) is needed.
    static func creationKeeps(_ mode: UInt32) -> Bool {
        guard let mask = processUmask else { return false }
        return mode & 0o7000 == 0 && mode & mask == 0
    }
}
