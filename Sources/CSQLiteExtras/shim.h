#include <sqlite3.h>

// sqlite3_config is variadic, which Swift cannot call: the one setting docsync makes is wrapped here.

// Turns off SQLite's memory statistics. With them on (the default in Debian's build) every
// allocation and free SQLite makes takes one process-wide mutex to keep its counters, which the
// agent's two connections (the scanner's writes, the pusher's reads) then contend for. docsync
// reads none of those counters. Only takes effect before SQLite is first used in the process;
// afterwards SQLite answers SQLITE_MISUSE and nothing changes.
static inline int docsync_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
