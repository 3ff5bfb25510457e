import CSQLiteExtras

/// Process-wide SQLite settings, made once before the first connection opens.
public enum SQLiteSetup {
    /// Memory statistics off (see `docsync_sqlite_disable_memstatus`): they take a process-wide
    /// mutex on every SQLite allocation, which the agent's two connections contend for on the bulk
    /// paths (the profile is in BENCHMARKS.md), and statement journals kept in memory up to 4 MiB
    /// (see `docsync_sqlite_statement_journal_spill`), page cache allocated as used
    /// (`docsync_sqlite_page_cache_on_demand`). False where they could not take effect: in a
    /// process that used SQLite before (a test opening its own database first), which keeps the
    /// defaults.
    public static let applied: Bool =
        docsync_sqlite_disable_memstatus() == SQLITE_OK && docsync_sqlite_statement_journal_spill(4 << 20) == SQLITE_OK
        && docsync_sqlite_page_cache_on_demand() == SQLITE_OK

    /// Makes the settings; call before opening a connection. Cheap after the first call.
    @inline(__always) public static func prepare() { _ = applied }
}
