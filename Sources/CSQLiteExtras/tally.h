#include <dlfcn.h>
#include <sqlite3.h>
#include <string.h>

// The counts `docsync status` shows, kept by a pre-update hook on the index's writing connection.
// Triggers kept them before; every statement on a table with a trigger then opened a statement
// journal (a copy of each page it touched) and ran a sub-program, most of the cost of writing a
// row (BENCHMARKS.md, run 4). The hook reads the old and new row of each change instead, adds to the counters
// below, and the transaction writes the sums to table `tally` once before it commits.
//
// The hook exists only where SQLite was built with SQLITE_ENABLE_PREUPDATE_HOOK (Debian's and
// Ubuntu's are), so it is looked up at run time; without it the index falls back to triggers.

// Positions in `delta`, in the order of `Index.tallies`.
enum {
    DOCSYNC_TALLY_LIVE, DOCSYNC_TALLY_TOMBSTONES, DOCSYNC_TALLY_DOC_PENDING, DOCSYNC_TALLY_DOC_SYNCED,
    DOCSYNC_TALLY_DOC_REJECTED, DOCSYNC_TALLY_FILE_OK, DOCSYNC_TALLY_FILE_INVALID, DOCSYNC_TALLY_FILE_EXCLUDED,
    DOCSYNC_TALLY_OUTBOX, DOCSYNC_TALLY_COUNT
};

typedef int (*docsync_preupdate_value_fn)(sqlite3 *, int, sqlite3_value **);
typedef void (*docsync_preupdate_callback)(void *, sqlite3 *, int, const char *, const char *, sqlite3_int64, sqlite3_int64);
typedef void *(*docsync_preupdate_hook_fn)(sqlite3 *, docsync_preupdate_callback, void *);

typedef struct {
    docsync_preupdate_value_fn old_value, new_value;
    // Column positions, read from the schema when the hook is installed.
    int document_state, document_deleted_at, file_state;
    long long delta[DOCSYNC_TALLY_COUNT];
} docsync_tally;

// Which state counter a `state` value goes to, or -1.
static inline int docsync_tally_slot(sqlite3_value *value, int first, const char *const names[3]) {
    const unsigned char *text = value ? sqlite3_value_text(value) : 0;
    if (!text) return -1;
    for (int i = 0; i < 3; i++) if (strcmp((const char *)text, names[i]) == 0) return first + i;
    return -1;
}

// Adds one (for the new row) or takes one away (for the old row) from the counters it falls in.
static inline void docsync_tally_count(docsync_tally *t, sqlite3 *db, int is_new, int table) {
    static const char *const document_states[3] = {"pending", "synced", "rejected"};
    static const char *const file_states[3] = {"ok", "invalid", "excluded"};
    docsync_preupdate_value_fn read = is_new ? t->new_value : t->old_value;
    int sign = is_new ? 1 : -1;
    sqlite3_value *value = 0;
    int slot;
    switch (table) {
    case 0:  // document
        if (read(db, t->document_deleted_at, &value) == SQLITE_OK)
            t->delta[sqlite3_value_type(value) == SQLITE_NULL ? DOCSYNC_TALLY_LIVE : DOCSYNC_TALLY_TOMBSTONES] += sign;
        value = 0;
        if (read(db, t->document_state, &value) == SQLITE_OK &&
            (slot = docsync_tally_slot(value, DOCSYNC_TALLY_DOC_PENDING, document_states)) >= 0)
            t->delta[slot] += sign;
        break;
    case 1:  // file
        if (read(db, t->file_state, &value) == SQLITE_OK &&
            (slot = docsync_tally_slot(value, DOCSYNC_TALLY_FILE_OK, file_states)) >= 0)
            t->delta[slot] += sign;
        break;
    default:  // outbox
        t->delta[DOCSYNC_TALLY_OUTBOX] += sign;
    }
}

static inline void docsync_tally_hook(void *context, sqlite3 *db, int op, const char *schema, const char *table,
                                      sqlite3_int64 old_key, sqlite3_int64 new_key) {
    (void)old_key; (void)new_key;
    if (strcmp(schema, "main") != 0) return;
    int which = strcmp(table, "document") == 0 ? 0 : strcmp(table, "file") == 0 ? 1 : strcmp(table, "outbox") == 0 ? 2 : -1;
    if (which < 0) return;
    docsync_tally *t = (docsync_tally *)context;
    if (op != SQLITE_INSERT) docsync_tally_count(t, db, 0, which);
    if (op != SQLITE_DELETE) docsync_tally_count(t, db, 1, which);
}

// Installs the hook on `db` with `t` (which must outlive the connection); 0 where this SQLite has
// no pre-update hook.
static inline int docsync_tally_install(sqlite3 *db, docsync_tally *t) {
    docsync_preupdate_hook_fn install = (docsync_preupdate_hook_fn)dlsym(RTLD_DEFAULT, "sqlite3_preupdate_hook");
    t->old_value = (docsync_preupdate_value_fn)dlsym(RTLD_DEFAULT, "sqlite3_preupdate_old");
    t->new_value = (docsync_preupdate_value_fn)dlsym(RTLD_DEFAULT, "sqlite3_preupdate_new");
    if (!install || !t->old_value || !t->new_value) return 0;
    install(db, docsync_tally_hook, t);
    return 1;
}
