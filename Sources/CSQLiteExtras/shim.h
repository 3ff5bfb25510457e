#include <sqlite3.h>

// sqlite3_config is variadic, which Swift cannot call: the settings docsync makes are wrapped here.

// Turns off SQLite's memory statistics. With them on (the default in Debian's build) every
// allocation and free SQLite makes takes one process-wide mutex to keep its counters, which the
// agent's two connections (the scanner's writes, the pusher's reads) then contend for. docsync
// reads none of those counters. Only takes effect before SQLite is first used in the process;
// afterwards SQLite answers SQLITE_MISUSE and nothing changes.
static inline int docsync_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

// Keeps statement journals in memory up to `bytes` (SQLite's default is 64 KiB, eight of the
// index's 8 KiB pages). A statement on a table with triggers and a UNIQUE constraint journals
// every page it touches; past the threshold the journal went to a temporary file, so an import
// wrote each page it changed to that file as well as to the log. Same before-first-use rule.
static inline int docsync_sqlite_statement_journal_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes);
}

// No up-front page cache allocation per connection (SQLite's default takes room for 20 pages,
// 160 KiB of the index's 8 KiB pages, as each connection first reads): pages are allocated as
// they are used. A process with hundreds of folders opens hundreds of connections, most of
// which touch a few pages. Same before-first-use rule.
static inline int docsync_sqlite_page_cache_on_demand(void) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}
