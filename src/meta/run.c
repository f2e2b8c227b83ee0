/* meta run: the one way a service runs a transaction (cn_meta_run) and the
 * one way it runs a bound statement (cn_meta_execf / cn_meta_queryf).
 *
 * Run invariants:
 *  R1. Every transaction cn_meta_run begins ends inside it: committed when
 *      the body returned >= 0 in a write run and did not discard it, rolled
 *      back otherwise.  The body never commits or rolls back itself.
 *  R2. A run is repeated only when the engine reported the database locked
 *      or busy (CN_E_DB_LOCKED, CN_E_BUSY; PostgreSQL's serialization
 *      failures, deadlocks and lock timeouts arrive as CN_E_DB_LOCKED) and
 *      the caller declared the body repeatable (CN_META_RETRY); a repeated
 *      body saw no committed effect of its failed attempt, because that
 *      attempt was rolled back whole.
 *  R3. Repeats stop at the run's deadline, twice the busy timeout from the
 *      first begin: a caller waits a bounded time, then sees the lock error.
 *  R4. A write run on an engine with savepoints (SQLite) is one member of a
 *      group transaction (group.c, invariants G1-G6): R1 holds per member
 *      (its body's changes are released into the group's transaction or
 *      rolled back to its savepoint, and it is answered only once the
 *      COMMIT holding them is durable), R2 holds because a repeated member's
 *      failed attempt was rolled back with its savepoint or its whole group,
 *      and R3 because every wait in a group is bounded by the busy timeout.
 *  R5. A run with CN_META_RETRY is also repeated when it failed
 *      CN_E_UNAVAILABLE because its engine lost the server (a failover: the
 *      connection broke, the server turned read-only, or no server the
 *      target accepts answered) and the engine reported the attempt's
 *      transaction as not committed (CN__META_LOST_CLEAN, engine.h): it never
 *      began, the server rolled it back whole, or its connection lost in
 *      COMMIT, the server said by the transaction's id that it aborted
 *      (engine_pg.c, invariant 7).  So a repeated body again saw no effect
 *      of its failed attempt.  An attempt whose COMMIT may have happened
 *      (CN__META_LOST_UNKNOWN) is never repeated: its CN_E_UNAVAILABLE is the
 *      answer.  Each repeat begins on a connection opened again, so a
 *      multi-host target finds the new primary.
 *  R6. Failover repeats stop at the same deadline as R3 (twice the busy
 *      timeout from the first begin, 10 s by default: a promotion takes a
 *      second or two, and a request held longer ties up its server thread
 *      while its client may give up), with a pause of 50 ms doubling to at
 *      most 500 ms before each, so that a node does not spin reconnecting
 *      while no primary is up.
 *  R7. The engine reports a loss (cn__meta_note_lost) on the thread running
 *      the attempt, which begins, runs and ends its transaction (run_once;
 *      group.c's members report nothing: SQLite never loses its server).
 *      The report is per attempt: cleared before it, read after it, and a
 *      run nested in another run's body leaves the enclosing attempt the
 *      report of its own last attempt, so the enclosing run does not repeat
 *      past an unknown COMMIT.
 *  R8. cn_meta_keyed (and cn_meta_run_keyed) repeats past an unknown
 *      COMMIT only after a read run found the write's operation key
 *      absent: the key is written by no other run and, once committed,
 *      never removed by this caller's writes, so absent means not committed (a lost COMMIT that committed
 *      on a server the read cannot see, an old primary cut off, is the
 *      failover's own loss, as for every write acknowledged there).  A body
 *      that sets a state (grant, revoke, disable) has the state for its
 *      key: found, the request is answered whether this run or another set
 *      it; absent, nothing that counts for it committed, or another write
 *      undid it since, and the repeat is then ordered after that write.
 */
#include "cairn/meta.h"
#include "cairn/metrics.h"
#include "engine.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Repeated in place (R2): only contention, which a moment's wait mends and
 * which left nothing behind.  Deliberately narrower than the lifecycle
 * worker's act_transient (objects/lifecycle_run.c), which postpones a key
 * to a later pass on I/O, space and availability errors as well: repeating
 * a body at once on those would only fail again until the deadline. */
static bool retryable(cn_err_t err)
{
    return err == CN_E_DB_LOCKED || err == CN_E_BUSY;
}

/* R7: the calling thread's report for the attempt it is running. */
static _Thread_local cn__meta_lost_t lost_note;

void cn__meta_note_lost(cn__meta_lost_t kind)
{
    if (kind > lost_note)
        lost_note = kind;
}

/* R5: a failed attempt that a failover explains and that left nothing. */
static bool failover_clean(cn_err_t err, cn__meta_lost_t seen)
{
    return err == CN_E_UNAVAILABLE && seen == CN__META_LOST_CLEAN;
}

/* R6: waits the n-th failover pause (n >= 0), never past deadline. */
static void failover_pause(unsigned n, uint64_t deadline)
{
    uint64_t ms = n >= 4 ? 500 : 50u << n, now = now_ms();
    if (now + ms > deadline)
        ms = deadline > now ? deadline - now : 0;
    cn_sleep_ms((int64_t)ms);
}

static cn_err_t run_once(cn_meta_t *meta, cn_meta_mode_t mode, unsigned flags, cn_meta_body_fn body,
                         void *ctx)
{
    bool nowait = (flags & CN_META_RUN_NOWAIT) != 0;
    if (mode == CN_META_WRITE && cn__meta_group_of(meta))
        return cn__meta_group_run(meta, flags & (CN_META_RUN_NOWAIT | CN_META_RUN_COMBINE), body,
                                  ctx);
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(meta, mode, &txn);
    if (err < 0)
        return err;
    cn_err_t res = body(txn, ctx);
    if (mode == CN_META_READ_ONE && cn__meta_one_more(txn)) {
        cn_meta_rollback(txn);
        return run_once(meta, CN_META_READ, flags, body, ctx);
    }
    if (res < 0 || mode != CN_META_WRITE || cn_meta_discarded(txn)) {
        cn_meta_rollback(txn);
        return res;
    }
    err = nowait ? cn_meta_commit_nowait(txn) : cn_meta_commit(txn);
    return err < 0 ? err : res;
}

cn_err_t cn_meta_run(cn_meta_t *meta, unsigned flags, cn_meta_body_fn body, void *ctx)
{
    cn_meta_mode_t mode = (flags & CN_META_RUN_WRITE) ? CN_META_WRITE
                          : (flags & CN_META_RUN_ONE) ? CN_META_READ_ONE
                                                      : CN_META_READ;
    uint64_t deadline = now_ms() + 2u * cn_meta_busy_timeout_ms(meta);
    /* Registered before any retry, so that a scrape shows the family at 0. */
    static const cn_metric_family_t fam = {
        .name = "cairn_meta_busy_retries_total",
        .help = "Metadata transactions run again because the database was locked or busy.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t fofam = {
        .name = "cairn_meta_failover_retries_total",
        .help = "Metadata transactions run again because the connection to the database "
                "server was lost before their commit (a failover or restart).",
        .kind = CN_METRIC_COUNTER,
    };
    static _Atomic(cn_metric_t *) slot, foslot;
    cn_metric_t *retries = cn_metric_cached(&slot, &fam, "%s", "");
    cn_metric_t *foretries = cn_metric_cached(&foslot, &fofam, "%s", "");
    cn__meta_lost_t outer = lost_note, seen;
    unsigned lost = 0;
    cn_err_t err;
    for (;;) {
        lost_note = CN__META_LOST_NONE;
        err = run_once(meta, mode, flags, body, ctx);
        seen = lost_note;
        if (!(flags & CN_META_RETRY) || now_ms() >= deadline)
            break;
        if (retryable(err)) {
            cn_metric_add(retries, 1);
        } else if (failover_clean(err, seen)) {
            failover_pause(lost++, deadline);
            cn_metric_add(foretries, 1);
        } else {
            break;
        }
    }
    lost_note = outer > seen ? outer : seen; /* R7 */
    return err;
}

cn_err_t cn__meta_bind_args(cn_meta_stmt_t *st, int first, const char *types, va_list ap)
{
    cn_err_t err = CN_OK;
    for (int i = 0; types[i] && err >= 0; i++) {
        int idx = first + i;
        switch (types[i]) {
        case 'i': err = cn_meta_bind_int64(st, idx, va_arg(ap, int64_t)); break;
        case 's': err = cn_meta_bind_str(st, idx, va_arg(ap, const char *)); break;
        case 't': {
            const char *p = va_arg(ap, const char *);
            size_t n = va_arg(ap, size_t);
            err = cn_meta_bind_text(st, idx, p, n);
            break;
        }
        case 'b': {
            const void *p = va_arg(ap, const void *);
            size_t n = va_arg(ap, size_t);
            err = cn_meta_bind_blob(st, idx, p, n);
            break;
        }
        case 'n': err = cn_meta_bind_null(st, idx); break;
        default: err = CN_E_INVALID; break;
        }
    }
    return err;
}

cn_err_t cn_meta_queryf(cn_meta_txn_t *txn, cn_meta_stmt_t **out, const char *sql,
                        const char *types, ...)
{
    cn_meta_stmt_t *st = NULL;
    *out = NULL;
    cn_err_t err = cn_meta_prepare(txn, sql, &st);
    if (err < 0)
        return err;
    va_list ap;
    va_start(ap, types);
    err = cn__meta_bind_args(st, 1, types, ap);
    va_end(ap);
    if (err < 0) {
        cn_meta_finish(st);
        return err;
    }
    *out = st;
    return CN_OK;
}

cn_err_t cn_meta_bindf(cn_meta_stmt_t *st, int first, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    cn_err_t err = cn__meta_bind_args(st, first, types, ap);
    va_end(ap);
    return err;
}

/* cn_meta_execf (push false) and cn_meta_pushf (push true). */
static cn_err_t run_bound(cn_meta_txn_t *txn, bool push, const char *sql, const char *types,
                          va_list ap)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, sql, &st);
    if (err < 0)
        return err;
    err = cn__meta_bind_args(st, 1, types, ap);
    if (err >= 0)
        err = push ? cn_meta_push(st) : cn_meta_step(st);
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_meta_execf(cn_meta_txn_t *txn, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    cn_err_t err = run_bound(txn, false, sql, types, ap);
    va_end(ap);
    return err;
}

cn_err_t cn_meta_pushf(cn_meta_txn_t *txn, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    cn_err_t err = run_bound(txn, true, sql, types, ap);
    va_end(ap);
    return err < 0 ? err : CN_OK;
}

/* cn_meta_keyed's lookup: landed with its ctx, and what it found. */
typedef struct keyed {
    cn_meta_landed_fn landed;
    void *ctx;
    bool found;
} keyed_t;

static cn_err_t landed_body(cn_meta_txn_t *txn, void *ctx)
{
    keyed_t *k = ctx;
    k->found = false;
    return k->landed(txn, k->ctx, &k->found);
}

cn_err_t cn_meta_keyed(cn_meta_t *meta, cn_meta_write_fn write, cn_meta_landed_fn landed, void *ctx)
{
    cn_err_t err = write(ctx);
    for (int runs = 1; err == CN_E_UNAVAILABLE && runs < CN_META_KEYED_TRIES; runs++) {
        keyed_t k = { landed, ctx, false };
        if (cn_meta_run(meta, CN_META_RUN_READ | CN_META_RETRY, landed_body, &k) < 0)
            break;
        if (k.found) {
            cn_info("meta", "a write whose outcome was lost with its server had landed");
            return CN_OK;
        }
        cn_warn("meta", "a write whose outcome was lost with its server had not landed: "
                        "running it again");
        err = write(ctx);
    }
    return err;
}

/* cn_meta_run_keyed's write: one cn_meta_run of body; landed is asked with
 * the caller's ctx through keyed_landed. */
typedef struct keyed_run {
    cn_meta_t *meta;
    unsigned flags;
    cn_meta_body_fn body;
    cn_meta_landed_fn landed;
    void *ctx;
} keyed_run_t;

static cn_err_t keyed_write(void *ctx)
{
    const keyed_run_t *kr = ctx;
    return cn_meta_run(kr->meta, kr->flags, kr->body, kr->ctx);
}

static cn_err_t keyed_landed(cn_meta_txn_t *txn, void *ctx, bool *found)
{
    const keyed_run_t *kr = ctx;
    return kr->landed(txn, kr->ctx, found);
}

cn_err_t cn_meta_run_keyed(cn_meta_t *meta, unsigned flags, cn_meta_body_fn body,
                           cn_meta_landed_fn landed, void *ctx)
{
    keyed_run_t kr = { meta, flags, body, landed, ctx };
    return cn_meta_keyed(meta, keyed_write, keyed_landed, &kr);
}

static cn_err_t shared_body(cn_meta_txn_t *txn, void *ctx)
{
    cn_err_t err = cn_meta_execf(txn, cn_meta_batch_text(txn, ctx), "");
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_meta_run_shared(cn_meta_t *meta, const cn_meta_batch_sql_t *sql)
{
    if (cn_meta_single_writer(meta))
        return CN_OK;
    return cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, shared_body, (void *)sql);
}
