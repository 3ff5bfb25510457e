#if canImport(Glibc)
import Glibc
#endif

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
}
