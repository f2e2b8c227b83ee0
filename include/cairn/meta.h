/* cairn meta: the one interface to all metadata — transactions, prepared
 * statements with `?` placeholders, and per-component versioned migrations.
 *
 * The embedded engine is SQLite (DATA/meta.db, WAL, one serialized writer with
 * group commit, pooled reader connections); the fleet's is PostgreSQL (libpq,
 * docs/fleet.md), behind the same interface, so callers must write portable
 * SQL: standard types
 * (BIGINT, TEXT, BLOB — the PostgreSQL engine maps BLOB to BYTEA in DDL —,
 * booleans as BIGINT 0/1), `?`
 * parameters, INSERT ... ON CONFLICT, no rowid, no SQLite-only functions or
 * pragmas, and no reliance on a statement error leaving the transaction usable.
 * This module never knows what the rows mean and never logs bound values.
 */
#ifndef CAIRN_META_H
#define CAIRN_META_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_meta cn_meta_t;           /* an open database; thread-safe */
typedef struct cn_meta_txn cn_meta_txn_t;   /* one transaction; one thread at a time */
typedef struct cn_meta_stmt cn_meta_stmt_t; /* a prepared statement inside a txn */

typedef struct cn_meta_opts {
    /* Bounded wait, in ms, for a lock held by another process or
     * transaction (or for a writer connection of this process) before
     * CN_E_DB_LOCKED.  0 = 5000. */
    unsigned busy_timeout_ms;
    /* Maximum pooled reader connections; a read begin beyond it waits for one
     * (bounded by busy_timeout_ms).  0 = 32.  On PostgreSQL it also caps the
     * writer pool (at most 4 writer connections, src/meta/meta.c). */
    unsigned max_readers;
    /* false (default): a write commit returns only once it is durable (group
     * commit).  true: skip the WAL fsync — tests and throwaway data only. */
    bool no_sync;
    /* Open an existing database without creating it or its directory. */
    bool must_exist;
    /* false (default): concurrent write runs (cn_meta_run) on the SQLite
     * engine share one transaction and one commit, each body in its own
     * savepoint (src/meta/group.c).  true: one transaction per run. */
    bool no_group;
    /* PostgreSQL: the longest wait, in ms, for a server's answer before its
     * connection is cut as lost (src/meta/engine_pg.c, invariant 12; a
     * schema change waits unbounded).  0 = 3 × busy_timeout_ms. */
    unsigned round_trip_ms;
    /* PostgreSQL: the longest wait, in ms, between two statements of a write
     * transaction before the server ends its session (its writer sessions'
     * idle_in_transaction_session_timeout), and with it the transaction and
     * its row locks: a node that hangs inside one (its process stopped or
     * stuck, its kernel still answering) holds up other nodes' writers of
     * the same rows at most so long.  Blob transfers run outside write
     * transactions, so a node that is not hung is not ended (a repository
     * restore reads its stream inside one: a stalled pipe is ended too).
     * 0 = 60 s; CN_META_IDLE_UNBOUNDED = no bound. */
    unsigned write_idle_ms;
    /* PostgreSQL: a pooled connection idle this long (ms) is closed, all
     * but one of each pool, so a node's pools shrink back after a burst and
     * the server's connection slots go to other nodes (src/meta/meta.c,
     * pool P1).  0 = 60 s; CN_META_IDLE_UNBOUNDED = never. */
    unsigned conn_idle_ms;
} cn_meta_opts_t;

#define CN_META_IDLE_UNBOUNDED UINT_MAX

/* Opens the metadata database.  data_dir_or_url is either a data directory
 * (the SQLite database is DATA/meta.db; the directory is created with mode
 * 0700 if missing), "sqlite:PATH" for an explicit database file, or a
 * "postgres://" / "postgresql://" libpq URI (must_exist does not apply; the
 * database must exist).  opts may be NULL.  On success *out owns the handle; free it with
 * cn_meta_close().  Errors: CN_E_INVALID, CN_E_UNAVAILABLE (the PostgreSQL
 * server refused or is not there), CN_E_DB_LOCKED (held by another process
 * past the busy timeout), CN_E_DB, CN_E_CORRUPT,
 * -errno.  Thread-safe handle; the call itself is not reentrant. */
CN_API cn_err_t cn_meta_open(const char *data_dir_or_url, const cn_meta_opts_t *opts,
                             cn_meta_t **out);

/* Closes the database.  Every transaction must have ended.  NULL is a no-op. */
CN_API void cn_meta_close(cn_meta_t *meta);

/* "sqlite" or "postgres".  Static string. */
CN_API const char *cn_meta_engine(const cn_meta_t *meta);

/* True when the engine serializes every writer: a write transaction holds
 * the database's one write lock from its begin to its end, for every process
 * and node that writes it, so what a write transaction read stays true until
 * it commits and a write race (another writer inserting the same key or
 * moving the same row meanwhile) cannot happen.  SQLite: true; PostgreSQL
 * (a fleet's shared database): false.  Any thread. */
CN_API bool cn_meta_single_writer(const cn_meta_t *meta);

/* ---- migrations ----------------------------------------------------------
 * Each module owns its schema as an ordered list of steps.  Versions are 1,
 * 2, 3, ... in order; the table cn_schema(component, version) records how far
 * each component has got.  Steps are append-only: never edit a shipped one. */
typedef struct cn_meta_migration {
    int64_t version; /* this step's version: i+1 for steps[i] */
    const char *sql; /* one or more ';'-separated statements, or NULL */
    /* Optional code run after sql, in the same transaction; arg is passed back. */
    cn_err_t (*apply)(cn_meta_txn_t *txn, void *arg);
    void *arg;
} cn_meta_migration_t;

/* Brings component (e.g. "objects", at most 63 bytes) up to steps[n-1].version:
 * in ONE write transaction reads its recorded version, applies each later step
 * in order and records the new version, so either all pending steps land or
 * none does.  Running it again is a no-op.  Errors: CN_E_INVALID (versions
 * not 1..n in order), CN_E_UNSUPPORTED (the database holds a newer version of
 * the component than steps describe), CN_E_DB_LOCKED, any step's error. */
CN_API cn_err_t cn_meta_migrate(cn_meta_t *meta, const char *component,
                                const cn_meta_migration_t *steps, size_t n);

/* The recorded schema version of component in *version (0 if never migrated). */
CN_API cn_err_t cn_meta_schema_version(cn_meta_t *meta, const char *component, int64_t *version);

/* ---- transactions ----------------------------------------------------------
 * A read transaction sees one consistent snapshot and may not write (a write
 * statement fails with CN_E_DB).  On SQLite write transactions are
 * serialized on one writer connection (the writer slot); on PostgreSQL they
 * run at once on a pool of writer connections, decided by the server's row
 * locks and SERIALIZABLE.  A begin waits for a writer connection and for
 * locks held elsewhere at most busy_timeout_ms, then CN_E_DB_LOCKED.
 *
 * Durability (SQLite engine): the writer runs with synchronous=NORMAL, so a
 * COMMIT appends its frames to the WAL without fsync; cn_meta_commit then
 * releases the writer slot and waits in a group sync: one committer fdatasyncs
 * the WAL for everyone whose frames are already written, so concurrent commits
 * share fsyncs.  cn_meta_commit returns 0 only when the commit is durable.
 *
 * Errors inside a transaction: after any statement error the transaction is
 * failed (as on PostgreSQL) — later statements return CN_E_CONFLICT and
 * cn_meta_commit rolls back and returns the first error.  Use INSERT ... ON
 * CONFLICT instead of catching CN_E_EXISTS and carrying on. */
typedef enum {
    CN_META_READ = 0,
    CN_META_WRITE = 1,
    /* A read whose body runs exactly one statement: one statement is one
     * snapshot, so an engine may run it without BEGIN and ROLLBACK (one
     * round trip to PostgreSQL instead of three; SQLite runs it as a READ).
     * A second statement fails the transaction (CN_E_DB; cn_meta_run then
     * runs the body again as a READ). */
    CN_META_READ_ONE = 2
} cn_meta_mode_t;

/* Starts a transaction; *out is valid until cn_meta_commit/rollback.
 * Errors: CN_E_DB_LOCKED (no writer connection free within the busy
 * timeout), CN_E_BUSY (every reader connection in use past the busy
 * timeout), CN_E_DB, -ENOMEM.  Thread-safe; a thread must not hold two write
 * transactions at once (it would wait on itself until CN_E_DB_LOCKED: on
 * SQLite for the slot, on PostgreSQL for its own row locks). */
CN_API cn_err_t cn_meta_begin(cn_meta_t *meta, cn_meta_mode_t mode, cn_meta_txn_t **out);

/* Commits and frees txn (also on error: txn is always gone afterwards).
 * Statements still open are finished.  Errors: the txn's first statement
 * error (after rolling back), CN_E_DB_LOCKED, CN_E_DB, -errno from the sync. */
CN_API cn_err_t cn_meta_commit(cn_meta_txn_t *txn);

/* As cn_meta_commit, but returns once the commit is written, without
 * waiting for its sync: it becomes durable with the next durable commit of
 * any thread (commits are durable in order).  Only for a writer that can
 * rebuild what a crash loses from its own synced data (the store's pack
 * index, docs/store.md).  Errors: as cn_meta_commit, without the sync's. */
CN_API cn_err_t cn_meta_commit_nowait(cn_meta_txn_t *txn);

/* Rolls back and frees txn.  NULL is a no-op. */
CN_API void cn_meta_rollback(cn_meta_txn_t *txn);

/* Runs one or more ';'-separated statements without parameters or results
 * (DDL, fixed DML).  Errors as cn_meta_step. */
CN_API cn_err_t cn_meta_exec(cn_meta_txn_t *txn, const char *sql);

/* Rows changed by the last INSERT/UPDATE/DELETE run in txn. */
CN_API int64_t cn_meta_changes(const cn_meta_txn_t *txn);

/* The engine's message for the last failure in txn (for logs; never contains
 * bound values).  Static or txn-owned; valid until the next call on txn. */
CN_API const char *cn_meta_errmsg(const cn_meta_txn_t *txn);

/* ---- prepared statements ----------------------------------------------------
 * sql is compiled once per connection and cached; cn_meta_prepare hands out
 * the cached statement, reset, with no bindings.  Parameters are `?`,
 * numbered from 1; result columns from 0.  A statement belongs to its txn and
 * must not outlive it. */

/* Errors: CN_E_INVALID (bad SQL), CN_E_CONFLICT (txn failed), CN_E_DB, -ENOMEM. */
CN_API cn_err_t cn_meta_prepare(cn_meta_txn_t *txn, const char *sql, cn_meta_stmt_t **out);

/* Returns the statement to its connection's cache.  NULL is a no-op. */
CN_API void cn_meta_finish(cn_meta_stmt_t *st);

/* Resets st to run again; clears bindings. */
CN_API void cn_meta_reset(cn_meta_stmt_t *st);

/* Binds parameter idx (1-based).  Text and blob values are copied.  A NULL
 * string in bind_str binds SQL NULL.  Errors: CN_E_INVALID (bad idx), -ENOMEM. */
CN_API cn_err_t cn_meta_bind_int64(cn_meta_stmt_t *st, int idx, int64_t v);
CN_API cn_err_t cn_meta_bind_text(cn_meta_stmt_t *st, int idx, const char *s, size_t len);
CN_API cn_err_t cn_meta_bind_str(cn_meta_stmt_t *st, int idx, const char *s);
CN_API cn_err_t cn_meta_bind_blob(cn_meta_stmt_t *st, int idx, const void *p, size_t len);
CN_API cn_err_t cn_meta_bind_null(cn_meta_stmt_t *st, int idx);

/* Runs st one step: CN_META_ROW (a row is available to the column getters),
 * CN_META_DONE (finished), or an error: CN_E_EXISTS (unique or primary key
 * violated), CN_E_INVALID (other constraint), CN_E_DB_LOCKED, CN_E_CORRUPT,
 * -ENOSPC, CN_E_CONFLICT (txn already failed), CN_E_DB.  Any error fails the
 * transaction. */
enum {
    CN_META_DONE = 0,
    CN_META_ROW = 1
};
CN_API cn_err_t cn_meta_step(cn_meta_stmt_t *st);

/* Column getters for the current row (col 0-based).  Pointers returned are
 * owned by the statement and valid until the next step/reset/finish.
 * column_text returns NULL for SQL NULL and sets *len (may be NULL) to the
 * byte length; text is NUL-terminated.  column_blob returns NULL for NULL or
 * empty.  column_int64 returns 0 for NULL. */
CN_API bool cn_meta_column_is_null(cn_meta_stmt_t *st, int col);
CN_API int64_t cn_meta_column_int64(cn_meta_stmt_t *st, int col);
CN_API const char *cn_meta_column_text(cn_meta_stmt_t *st, int col, size_t *len);
CN_API const void *cn_meta_column_blob(cn_meta_stmt_t *st, int col, size_t *len);
CN_API int cn_meta_column_count(cn_meta_stmt_t *st);

/* ---- running a transaction ---------------------------------------------------
 * The one way services run a transaction: begin, body, commit or roll back, with
 * bounded repeats when the database is locked.  See src/meta/run.c (R1-R3). */

/* A transaction body.  Returns >= 0 to commit (a write run, unless the body
 * called cn_meta_discard) and have cn_meta_run return that value, or an
 * error to roll back.  It must not commit, roll back or keep txn. */
typedef cn_err_t (*cn_meta_body_fn)(cn_meta_txn_t *txn, void *ctx);

enum {
    CN_META_RUN_READ = 0,   /* a read transaction (one snapshot) */
    CN_META_RUN_WRITE = 1,  /* a write transaction, committed durably */
    CN_META_RETRY = 2,      /* body is repeatable: rerun it when locked or failed over */
    CN_META_RUN_NOWAIT = 4, /* write: commit with cn_meta_commit_nowait */
    /* read: body runs one statement (CN_META_READ_ONE); one that begins a
     * second is made again at once as a plain read, so a body that usually
     * runs one statement may ask for it */
    CN_META_RUN_ONE = 8,
    /* write: the body may run on another thread (see cn_meta_run) */
    CN_META_RUN_COMBINE = 16
};

/* Runs body(txn, ctx) in one transaction of the kind flags names.  Returns the
 * body's value, the begin's or the commit's error.  With CN_META_RETRY a run
 * that failed CN_E_DB_LOCKED or CN_E_BUSY, or CN_E_UNAVAILABLE with its
 * transaction known rolled back (PostgreSQL lost or failed over before the
 * COMMIT, or a lost COMMIT found aborted; run.c R5-R7), is repeated until
 * twice the busy timeout has passed.  Thread-safe; the same rule as cn_meta_begin applies (a
 * thread holds at most one write transaction).
 *
 * Group commit (SQLite, unless opts.no_group): concurrent write runs share
 * one transaction and one COMMIT, each body in its own savepoint on its own
 * thread (src/meta/group.c).  A body's changes are committed exactly when
 * its run returns >= 0 (and it did not discard); a body may see changes of
 * the group's earlier bodies, as if they had committed just before it; a
 * failing body undoes only its own; it must not wait for another thread's
 * write run (it would wait until the busy timeout, as today).
 *
 * CN_META_RUN_COMBINE (write runs): while another run of the group holds the
 * writer, this run's body is queued and run by that run's thread, in its
 * own savepoint, and this thread sleeps once for its answer (group.c, G7-G9;
 * no effect on PostgreSQL or with opts.no_group).  Only for a body that
 * takes no lock a cn_meta_run caller may hold across its call, keeps no
 * thread-local state, waits for no other thread and never calls cn_meta_run. */
CN_API cn_err_t cn_meta_run(cn_meta_t *meta, unsigned flags, cn_meta_body_fn body, void *ctx);

/* A write run whose body writes an operation key no other run writes (a
 * random id, a new incarnation), or sets a state (a grant held, a token
 * revoked) that answers the request whoever set it.  When the run fails
 * CN_E_UNAVAILABLE --
 * its COMMIT lost with a server that cannot answer for it any more, e.g. a
 * promoted standby (engine_pg.c invariant 8), or the server gone past the
 * retries -- landed, run in a read run (CN_META_RETRY) with ctx, looks for
 * the key or the state and sets *found: found, the run succeeded; not
 * found, body runs
 * again (CN_META_KEYED_TRIES runs in all).  A lookup that fails keeps the
 * run's error.  flags as cn_meta_run's (CN_META_RUN_WRITE; the body
 * repeatable); landed must not change ctx's state that body relies on. */
#define CN_META_KEYED_TRIES 4
typedef cn_err_t (*cn_meta_landed_fn)(cn_meta_txn_t *txn, void *ctx, bool *found);
CN_API cn_err_t cn_meta_run_keyed(cn_meta_t *meta, unsigned flags, cn_meta_body_fn body,
                                  cn_meta_landed_fn landed, void *ctx);
/* The same for a write made of more than one cn_meta_run call, or run
 * through a service's own wrapper of it: write(ctx) makes the write and
 * returns its error, and is called again in place of body's run. */
typedef cn_err_t (*cn_meta_write_fn)(void *ctx);
CN_API cn_err_t cn_meta_keyed(cn_meta_t *meta, cn_meta_write_fn write, cn_meta_landed_fn landed,
                              void *ctx);

/* Marks txn to be rolled back, not committed, when its cn_meta_run body
 * returns, whatever the body returns: a write body that found nothing to
 * change (or a decided refusal that is an answer, not an error) ends without
 * a commit and its fsync.  cn_meta_discarded tells whether it was marked. */
CN_API void cn_meta_discard(cn_meta_txn_t *txn);
CN_API bool cn_meta_discarded(const cn_meta_txn_t *txn);

/* The busy timeout meta was opened with, in ms. */
CN_API unsigned cn_meta_busy_timeout_ms(const cn_meta_t *meta);

/* Prepares sql and binds one argument per letter of types, in order:
 *   'i' int64_t; 's' const char * (NUL-terminated; NULL binds SQL NULL);
 *   't' const char *, size_t (text); 'b' const void *, size_t (blob); 'n' SQL NULL
 *   (takes no argument).
 * cn_meta_execf then steps once and finishes: CN_META_ROW, CN_META_DONE or
 * an error as cn_meta_step.  cn_meta_queryf hands the bound statement to the
 * caller in *out (finish it with cn_meta_finish).  CN_E_INVALID for an unknown
 * letter. */
CN_API cn_err_t cn_meta_execf(cn_meta_txn_t *txn, const char *sql, const char *types, ...);
/* Binds the arguments types names (cn_meta_execf's letters) as the
 * parameters first, first + 1, ... of st: one row of a multi-row INSERT.
 * Errors: CN_E_INVALID (a bad letter), the binds'. */
CN_API cn_err_t cn_meta_bindf(cn_meta_stmt_t *st, int first, const char *types, ...);
CN_API cn_err_t cn_meta_queryf(cn_meta_txn_t *txn, cn_meta_stmt_t **out, const char *sql,
                               const char *types, ...);

/* cn_meta_execf for a statement run for its effect alone (an INSERT,
 * UPDATE or DELETE that returns no row, whose changes the caller does not
 * count): on PostgreSQL it is sent without waiting for its answer, which
 * comes in one round trip with the transaction's next statement (or its
 * commit) and the other pushes before it.  A failure is therefore reported
 * by that later call (a step, a prepare, cn_meta_exec, another push) or as
 * cn_meta_run's error, and fails the transaction as the statement would
 * have here: push only where the calls after it pass their errors on
 * without telling one from another (the tail of a write body).  cn_meta_
 * changes does not count it.  SQLite runs it at once, as cn_meta_execf.
 * CN_OK, or the error of its preparation, of a push before it, or its own
 * where it ran at once. */
CN_API cn_err_t cn_meta_pushf(cn_meta_txn_t *txn, const char *sql, const char *types, ...);
/* cn_meta_pushf for a prepared, bound statement (instead of its first
 * cn_meta_step); finish it as any. */
CN_API cn_err_t cn_meta_push(cn_meta_stmt_t *st);
/* Reads the answers of txn's pushes now, for a caller that tells one error
 * from another: the first failure's error (which fails txn), else 0; the
 * transaction's earlier error if it has one.  A round trip on PostgreSQL
 * when something was pushed since the last statement; else nothing. */
CN_API cn_err_t cn_meta_flush(cn_meta_txn_t *txn);

/* ---- batch lookups (src/meta/batch.c) ------------------------------------------
 * One statement answers a whole list of keys: a `have` of 10,000 digests is
 * one round trip on PostgreSQL, not 10,000.  A batch statement is written
 * once per engine, because the list travels in each engine's own form: its
 * parameter ?1 is the key list, and must be used only as
 *   SQLite:     a blob of the n keys packed (key i at bytes i*width ..
 *               (i+1)*width-1), walked with substr() in a recursive CTE;
 *   PostgreSQL: ?1::bytea[], an array of n bytea (sent binary), walked with
 *               unnest(...) WITH ORDINALITY.
 * Its further parameters ?2, ?3, ... are bound by types as cn_meta_execf's.
 * Column 0 of every row it returns is the 0-based position of a key in the
 * list; a key repeated in the list has one position per occurrence. */
typedef struct cn_meta_batch_sql {
    const char *sqlite;
    const char *pg;
} cn_meta_batch_sql_t;

/* Runs the engine's text of sql (no parameters) alone in one write
 * transaction, repeated on contention; does nothing on a single-writer
 * engine (cn_meta_single_writer).  For the periodic folds of delta rows
 * that only shared engines append (docs/architecture.md, "Usage totals").
 * Errors: cn_meta_run's. */
CN_API cn_err_t cn_meta_run_shared(cn_meta_t *meta, const cn_meta_batch_sql_t *sql);

/* Keys in one batch statement (a caller with more splits its list). */
#define CN_META_BATCH_MAX 16384

/* The engine's text of sql for txn (what test suites prepare). */
CN_API const char *cn_meta_batch_text(const cn_meta_txn_t *txn, const cn_meta_batch_sql_t *sql);
/* Whether each statement of txn is a round trip to a server (PostgreSQL):
 * for a caller that batches reads it could make one at a time only where
 * that saves waiting (on SQLite a statement is a call, and a small batch
 * statement costs more than the lookups it replaces). */
CN_API bool cn_meta_round_trips(const cn_meta_txn_t *txn);

/* Prepares the engine's text of sql, binds keys (n keys of width bytes,
 * 1 <= n <= CN_META_BATCH_MAX, 1 <= width <= 8192) as ?1 and the arguments
 * types names as ?2.. (cn_meta_execf's letters), and hands the statement to
 * the caller in *out: step it, read column 0 (a position) and any further
 * columns, finish it with cn_meta_finish.  Errors: CN_E_LIMIT (n too
 * large), CN_E_INVALID (n or width 0, width too large, ?1 not in the
 * engine's list form, a bad letter), cn_meta_prepare's. */
CN_API cn_err_t cn_meta_batch_query(cn_meta_txn_t *txn, cn_meta_stmt_t **out,
                                    const cn_meta_batch_sql_t *sql, const void *keys, size_t width,
                                    size_t n, const char *types, ...);

/* found[i] = sql returns a row for key i, for each of the n keys (n may be
 * 0: nothing runs); *nfound (may be NULL) = how many found[i] are true.
 * Lists longer than CN_META_BATCH_MAX run as several statements in txn.
 * Errors: CN_E_CORRUPT (a row names no position of the list), as
 * cn_meta_batch_query and cn_meta_step. */
CN_API cn_err_t cn_meta_batch_found(cn_meta_txn_t *txn, const cn_meta_batch_sql_t *sql,
                                    const void *keys, size_t width, size_t n, bool *found,
                                    size_t *nfound, const char *types, ...);

/* ---- the fleet: change topics and job leases (src/meta/watch.c) -------------
 * On PostgreSQL several nodes share one database and no memory.  A cache of
 * database state that must not outlive a change made through another node
 * keys its entries on a topic's generation; a job that must run on one node
 * at a time holds a lease.  Both live on one dedicated connection per node,
 * owned by one thread (the watcher, cn_meta_watch_start).  On SQLite every
 * process shares the data directory and these are no-ops (below).
 * docs/fleet.md, "Cache invalidation across nodes" and "Job leases". */

/* How old (ms) the watcher's last successful read of the topics may be for
 * cn_meta_topic_gen to answer true: the bound on how long a cache keyed on a
 * topic can serve a state another node has changed. */
#define CN_META_TOPIC_FRESH_MS 1500

/* Creates what cn_meta_notify writes (idempotent: a migration of the
 * "fleet" component).  Call it at open in a service that notifies.
 * SQLite: nothing, 0.  Errors as cn_meta_migrate. */
CN_API cn_err_t cn_meta_notify_init(cn_meta_t *meta);

/* Inside txn, a write transaction of meta: topic (1 to 32 of [a-z0-9_.-])
 * changed.  On PostgreSQL it bumps the topic's generation row and sends a
 * NOTIFY, both delivered by the commit (nothing if txn rolls back); every
 * node's watcher sees the new generation at once, or within a second when
 * the notice is lost.  Call it last in the body (it holds the topic's row
 * lock until the commit).  SQLite: nothing, 0.  Errors as cn_meta_step. */
CN_API cn_err_t cn_meta_notify(cn_meta_t *meta, cn_meta_txn_t *txn, const char *topic);

/* Starts the watcher of meta (once; a second call is a no-op): on
 * PostgreSQL one more connection to the same database and a thread that
 * listens for notices, reads the topic generations when told and at least
 * every second, and takes the leases asked for.  A database that does not
 * answer after the first read is not an error: the thread keeps trying.
 * Runs cn_meta_notify_init first.  SQLite: nothing.  Stopped by
 * cn_meta_close.  Errors: cn_meta_notify_init's, -ENOMEM, -errno. */
CN_API cn_err_t cn_meta_watch_start(cn_meta_t *meta);

/* topic's generation as this node last read it, in *gen.  true: a cache may
 * key entries on *gen (filed under the value read before the read
 * transaction that produced them, and served only while it is still
 * returned): the read is younger than CN_META_TOPIC_FRESH_MS.  false: the
 * watcher is behind, not started, or cut off: cache nothing.  Never blocks.
 * SQLite: true and 0 (no other node). */
CN_API bool cn_meta_topic_gen(cn_meta_t *meta, const char *topic, uint64_t *gen);

/* Waits, at most timeout_ms, until the watcher has read the topics in a
 * read begun after this call: a writer that just committed cn_meta_notify
 * then sees its own bump in cn_meta_topic_gen (no needless miss of a state
 * cached right after).  Returns at once on SQLite or without a watcher. */
CN_API void cn_meta_topic_sync(cn_meta_t *meta, unsigned timeout_ms);

/* Single-runner jobs.  true when this node holds the lease on job (1 to 32
 * of [a-z0-9_.-]): run the job now.  The first call asks the watcher to
 * take it; the watcher tries every second while it is free, and a lease
 * whose connection stopped answering (no read for 3 s) is dropped (a node that died or was
 * cut off loses it when the server ends its session).  At most 16 jobs.
 * Never blocks.  PostgreSQL: a session advisory lock on the watcher's
 * connection; false without a started watcher.  SQLite: always true (one
 * process runs the jobs of its data directory). */
CN_API bool cn_meta_lease(cn_meta_t *meta, const char *job);

/* The watcher session's application_name on PostgreSQL: this, or after
 * cn_meta_watch_label "cairn-watch/NODE" (visible in pg_stat_activity). */
#define CN_META_WATCH_APP "cairn-watch"

/* Names the watcher's session after this node (1 to 64 of A-Z a-z 0-9 . _ -;
 * anything else is ignored), from its next round on and after every
 * reconnect, so who holds a lease can be told.  No-op on SQLite or without
 * a started watcher.  Never blocks. */
CN_API void cn_meta_watch_label(cn_meta_t *meta, const char *node);

/* One lease as read from the database by cn_meta_lease_holders. */
typedef struct cn_meta_lease_info {
    const char *job;    /* the job's name */
    const char *holder; /* advisory leases: the holding session's application_name
                         * ("cairn-watch/NODE"); the lifecycle row: its holder
                         * string; NULL when nobody holds it */
    int64_t pid;        /* advisory: the holding server process; 0 otherwise */
    int64_t expires_ms; /* the lifecycle row: when it runs out (Unix ms); 0 otherwise */
} cn_meta_lease_info_t;
typedef cn_err_t (*cn_meta_lease_fn)(void *arg, const cn_meta_lease_info_t *li);

/* Who holds each lease, as the database sees it now (any process may ask:
 * no watcher needed): fn once for each of jobs[0..n) (advisory leases, n at
 * most 16, in order), then once for "lifecycle" (the lifecycle worker's
 * lease row).  Reads only.  PostgreSQL only: CN_E_UNSUPPORTED on SQLite
 * (one process runs every job there).  Errors: CN_E_INVALID (a bad job
 * name), meta errors, fn's. */
CN_API cn_err_t cn_meta_lease_holders(cn_meta_t *meta, const char *const *jobs, size_t n,
                                      cn_meta_lease_fn fn, void *arg);

/* ---- fleet import (src/meta/import.c; docs/fleet.md "Moving an embedded
 * deployment in") ------------------------------------------------------------ */

typedef struct cn_meta_import_opts {
    /* Names the import (the same source gives the same id): a target
     * holding another id's progress, or any component but the import's own
     * without progress, is refused.  1 to 128 bytes. */
    const char *import_id;
    /* Called after each table (rows copied, or -1 when an earlier run had
     * copied it); an error stops the import there (resumable).  May be NULL. */
    cn_err_t (*progress)(void *arg, const char *table, int64_t rows);
    void *arg;
} cn_meta_import_opts_t;

/* Copies every service's rows of src (an embedded SQLite database, read
 * only) into dst, table by table in schema order, each table and its
 * progress in one write transaction of dst; dst's components are migrated
 * to src's versions first.  Not copied: pins, the pack index, the node
 * registry, the topics, cn_schema.  A second call with the same id resumes
 * after the last table copied.  Errors: CN_E_INVALID (src not SQLite, a bad
 * id), CN_E_EXISTS (dst is used, by another deployment or by this import
 * already finished), CN_E_UNSUPPORTED (a component or table this binary does
 * not know), meta errors, progress's. */
CN_API cn_err_t cn_meta_import(cn_meta_t *src, cn_meta_t *dst, const cn_meta_import_opts_t *opts);

/* Marks the import finished (after its blobs are in): a later import of any
 * source into dst is refused with CN_E_EXISTS. */
CN_API cn_err_t cn_meta_import_finish(cn_meta_t *dst, const char *import_id);

/* Calls fn for the digest (32 bytes) of every blob src's store keeps in a
 * pack file (the ones not under DATA/blobs).  Reads only. */
typedef cn_err_t (*cn_meta_import_digest_fn)(void *arg, const void *digest);
CN_API cn_err_t cn_meta_import_packed(cn_meta_t *src, cn_meta_import_digest_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
