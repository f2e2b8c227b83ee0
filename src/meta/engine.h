/* The metadata engine interface: what meta.c needs from a database engine.
 *
 * meta.c owns everything engine-independent — the writer pool (the writer
 * slot on a single-writer engine), the reader pool, group commit, statement
 * caching, the failed-transaction rule and migrations.  An engine only opens
 * connections and runs SQL on them.  A connection is used by one thread at a
 * time (meta.c guarantees it).  Engines map their own result codes onto
 * cn_err_t and never log bound values.
 */
#ifndef CN_META_ENGINE_H
#define CN_META_ENGINE_H

#include <stdarg.h>
#include <time.h>

#include "cairn/meta.h"

typedef struct cn__meta_db cn__meta_db_t;     /* engine-wide shared state */
typedef struct cn__meta_conn cn__meta_conn_t; /* one connection */
typedef struct cn__meta_raw cn__meta_raw_t;   /* one compiled statement */

typedef struct cn__meta_engine {
    const char *name;
    /* Every write transaction holds the database's one write lock from its
     * begin to its end, across processes (SQLite: BEGIN IMMEDIATE), so two
     * writers never interleave (cn_meta_single_writer).  meta.c then opens
     * one writer connection; otherwise a pool of them, whose transactions
     * run at once (meta.c, invariant 1). */
    bool single_writer;

    /* target is the engine-specific location (a file path for SQLite). */
    cn_err_t (*db_open)(const char *target, const cn_meta_opts_t *opts, cn__meta_db_t **out);
    void (*db_close)(cn__meta_db_t *db);
    /* Makes every commit already returned by commit() durable, on any
     * connection.  Called with no writer connection held by the caller, by
     * one thread at a time. */
    cn_err_t (*sync)(cn__meta_db_t *db);

    /* writer: a connection that runs write transactions (the only one on a
     * single-writer engine, one of meta.c's writer pool otherwise); else a
     * read-only reader. */
    cn_err_t (*conn_open)(cn__meta_db_t *db, bool writer, cn__meta_conn_t **out);
    void (*conn_close)(cn__meta_conn_t *c);
    cn_err_t (*begin)(cn__meta_conn_t *c, cn_meta_mode_t mode);
    /* Optional: begins the writer's transaction for a schema change, holding
     * whatever makes two processes' schema changes run one after the other
     * and lets the later one see the earlier one's result (PostgreSQL: an
     * advisory lock under READ COMMITTED).  NULL: begin(c, CN_META_WRITE). */
    cn_err_t (*begin_schema)(cn__meta_conn_t *c);
    /* Commits; for writes the commit is visible but durable only after sync(). */
    cn_err_t (*commit)(cn__meta_conn_t *c);
    void (*rollback)(cn__meta_conn_t *c);
    /* Optional, all three or none: one savepoint inside the writer's open
     * transaction, for the group commit (group.c).  savepoint() sets it;
     * release() keeps its changes; rollback_to() undoes them and drops it.
     * Each leaves the transaction open and usable, or fails; in_txn() says
     * whether it is still open (an engine may roll a whole transaction back
     * on an I/O or memory error).  NULL: one transaction per run. */
    cn_err_t (*savepoint)(cn__meta_conn_t *c);
    cn_err_t (*release)(cn__meta_conn_t *c);
    cn_err_t (*rollback_to)(cn__meta_conn_t *c);
    bool (*in_txn)(cn__meta_conn_t *c);
    cn_err_t (*exec)(cn__meta_conn_t *c, const char *sql);
    /* Optional: the engine's own text of a schema step written in the
     * portable dialect (cairn/meta.h), malloc'd; NULL on -ENOMEM.  NULL hook:
     * the text runs as written. */
    char *(*translate_ddl)(const char *sql);
    int64_t (*changes)(cn__meta_conn_t *c);
    const char *(*errmsg)(cn__meta_conn_t *c);

    cn_err_t (*prepare)(cn__meta_conn_t *c, const char *sql, cn__meta_raw_t **out);
    void (*finalize)(cn__meta_raw_t *r);
    void (*reset)(cn__meta_raw_t *r); /* also clears bindings */
    cn_err_t (*bind_int64)(cn__meta_raw_t *r, int idx, int64_t v);
    cn_err_t (*bind_text)(cn__meta_raw_t *r, int idx, const char *s, size_t len);
    cn_err_t (*bind_blob)(cn__meta_raw_t *r, int idx, const void *p, size_t len);
    cn_err_t (*bind_null)(cn__meta_raw_t *r, int idx);
    /* A batch statement's key list (cn_meta_batch_query): n keys of width
     * bytes each, packed in p (n >= 1).  SQLite: one blob of the packed keys;
     * PostgreSQL: a bytea[] parameter, sent as a binary array (CN_E_INVALID
     * when parameter idx is not of that type). */
    cn_err_t (*bind_list)(cn__meta_raw_t *r, int idx, const void *p, size_t width, size_t n);
    cn_err_t (*step)(cn__meta_raw_t *r); /* CN_META_ROW, CN_META_DONE or error */
    /* Optional (cn_meta_pushf): sends r's statement with its bindings
     * without waiting for its answer, which the connection's next use
     * reads and judges (the next step, push, exec or commit returns its
     * error, a rollback drops it).  NULL hook: meta.c steps it at once. */
    cn_err_t (*push)(cn__meta_raw_t *r);
    /* Optional (cn_meta_flush): reads the pushed answers now; the first
     * failure's error, else 0.  NULL hook: nothing is ever left unread. */
    cn_err_t (*flush)(cn__meta_conn_t *c);
    bool (*column_is_null)(cn__meta_raw_t *r, int col);
    int64_t (*column_int64)(cn__meta_raw_t *r, int col);
    const char *(*column_text)(cn__meta_raw_t *r, int col, size_t *len);
    const void *(*column_blob)(cn__meta_raw_t *r, int col, size_t *len);
    int (*column_count)(cn__meta_raw_t *r);
} cn__meta_engine_t;

/* meta.c for batch.c: txn's engine, and the list binding through it
 * (errors as the engine's bind_list; they do not fail the txn). */
const cn__meta_engine_t *cn__meta_txn_engine(const cn_meta_txn_t *txn);
cn_err_t cn__meta_bind_list(cn_meta_stmt_t *st, int idx, const void *p, size_t width, size_t n);
/* run.c: binds the arguments ap describes by the letters of types
 * (cn_meta_execf's) to st's parameters first, first+1, ... */
cn_err_t cn__meta_bind_args(cn_meta_stmt_t *st, int first, const char *types, va_list ap);

/* What an engine tells run.c about a CN_E_UNAVAILABLE it returns because it
 * lost its server (run.c, R5-R7).  Ordered: a later report only raises the
 * attempt's. */
typedef enum {
    CN__META_LOST_NONE = 0,
    /* The connection broke, the server refused a write as read-only, or no
     * server the target accepts could be reached, and the transaction did
     * not commit: it never began, the server rolled it back whole, or (its
     * connection lost in COMMIT) the server said by its id that it aborted. */
    CN__META_LOST_CLEAN,
    /* A COMMIT was sent and its outcome could not be learned: it may have
     * committed.  The run must not be repeated. */
    CN__META_LOST_UNKNOWN
} cn__meta_lost_t;
/* run.c for the engines: reports kind for the attempt that the calling
 * thread is running (the thread that began the transaction runs its body
 * and its commit).  Engines that never lose a server (SQLite) never call it. */
void cn__meta_note_lost(cn__meta_lost_t kind);

extern const cn__meta_engine_t cn__meta_engine_sqlite;
extern const cn__meta_engine_t cn__meta_engine_pg;
/* walbuf.c for engine_sqlite.c: registers (once; not thread-safe, call under
 * a pthread_once) the VFS that gathers a WAL's appends into one write per
 * commit, and returns its name, or NULL if it could not be registered (the
 * default VFS then serves). */
const char *cn__sq_walbuf_vfs(void);

/* meta.c for migrate.c: a write transaction for a schema change (the
 * engine's begin_schema), and a schema step run through the engine's DDL
 * translation.  Errors as cn_meta_begin / cn_meta_exec. */
cn_err_t cn__meta_begin_schema(cn_meta_t *meta, cn_meta_txn_t **out);
cn_err_t cn__meta_exec_ddl(cn_meta_txn_t *txn, const char *sql);

/* ---- meta.c for group.c: the writer's transaction in parts ----------------
 * The group commit (group.c) holds the writer slot and one write transaction
 * across several members' bodies; these are the pieces of begin/commit it
 * runs in its own order.  Only group.c calls them, and only on a
 * single-writer engine (cn__meta_can_group), whose one writer connection is
 * the slot. */

/* The engine is single-writer and has the savepoint hooks (group commit is
 * possible). */
bool cn__meta_can_group(const cn_meta_t *meta);
/* Takes the writer slot (bounded by the busy timeout) and begins a write
 * transaction on the writer connection.  On error the slot is free. */
cn_err_t cn__meta_wbegin(cn_meta_t *meta);
/* A member's handle on the open writer transaction, inside a new savepoint.
 * Its statement errors fail only it.  End it with cn__meta_member_end. */
cn_err_t cn__meta_member_begin(cn_meta_t *meta, cn_meta_txn_t **out);
/* Ends a member whose body returned *res: its savepoint is released (kept)
 * when *res >= 0, no statement failed and the body did not discard, else
 * rolled back to; *res becomes the first statement error if the body
 * swallowed one.  *kept says which.  Frees the handle.  An error means the
 * writer transaction is no longer usable (every member's changes in it are
 * lost and it must be rolled back). */
cn_err_t cn__meta_member_end(cn_meta_txn_t *txn, cn_err_t *res, bool *kept);
/* Commits the writer transaction and releases the slot; *seq is the
 * commit's number for cn__meta_durable.  On error it is rolled back. */
cn_err_t cn__meta_wcommit(cn_meta_t *meta, uint64_t *seq);
/* Rolls the writer transaction back and releases the slot. */
void cn__meta_wrollback(cn_meta_t *meta);
/* Waits until commit seq is durable (the group sync of meta.c). */
cn_err_t cn__meta_durable(cn_meta_t *meta, uint64_t seq);
/* A sync is running now: a commit written meanwhile waits for the next one.
 * Takes meta's sync mutex briefly (order: group.c's mutex, then it). */
bool cn__meta_syncing(cn_meta_t *meta);
/* *ts = CLOCK_MONOTONIC now + ns (ns >= 0), for a timed condition wait. */
void cn__meta_deadline_ns(struct timespec *ts, int64_t ns);
/* The per-meta group state group.c keeps (NULL before the first group). */
typedef struct cn__meta_group cn__meta_group_t;
cn__meta_group_t *cn__meta_group_of(cn_meta_t *meta);
/* Whether txn, a CN_META_READ_ONE read, failed because its body began a
 * second statement (meta.c): the run is then made again as a plain read. */
bool cn__meta_one_more(const cn_meta_txn_t *txn);
/* group.c: creates and frees it (cn_meta_open / cn_meta_close). */
cn_err_t cn__meta_group_new(cn__meta_group_t **out);
void cn__meta_group_free(cn__meta_group_t *g);
/* group.c: runs body as one member of a group transaction (run.c's write
 * runs when cn__meta_can_group); flags: CN_META_RUN_NOWAIT, and
 * CN_META_RUN_COMBINE (the body may run on the turn holder's thread,
 * group.c G7-G9).  Returns as one run of run.c would. */
cn_err_t cn__meta_group_run(cn_meta_t *meta, unsigned flags, cn_meta_body_fn body, void *ctx);
/* group.c, for the tests (tests/meta/test_meta_group.c declares it): the
 * members queued (combining) and waiting for a turn now, and whether the
 * turn is held.  All 0 without group commit. */
void cn__meta_group_counts(cn_meta_t *meta, unsigned *queued, unsigned *waiting, bool *turn);
/* group.c: a sync just ended (meta.c calls it holding none of its mutexes). */
void cn__meta_group_synced(cn__meta_group_t *g);

#endif
