import CSQLiteExtras

/// Process-wide SQLite settings, made once before the first connection opens.
public enum SQLiteSetup {
    /// Memory statistics off (see `docsync_sqlite_disable_memstatus`): they take a process-wide
    /// mutex on every SQLite allocation, which the agent's two connections contend for on the bulk
    /// paths (the profile is in BENCHMARKS.md). False where it could not take effect: in a process
    /// that used SQLite before (a test opening its own database first), which keeps the default.
    public static let memoryStatisticsOff: Bool = docsync_sqlite_disable_memstatus() == SQLITE_OK

    /// Makes the settings; call before opening a connection. Cheap after the first call.
    @inline(__always) public static func prepare() { _ = memoryStatisticsOff }
}
