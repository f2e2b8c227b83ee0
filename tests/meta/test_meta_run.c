/* meta run: cn_meta_run commits a body that succeeds, rolls back one that
 * fails, repeats a repeatable body while the writer is held elsewhere, and
 * gives up without CN_META_RETRY; cn_meta_execf / cn_meta_queryf bind every
 * argument kind; a CN_META_RUN_ONE read sees the latest commit of another
 * handle and, on PostgreSQL, runs with no BEGIN (its statement is the
 * transaction); on PostgreSQL two write runs of one handle proceed at once
 * (its writer pool) and conflicting ones still count exactly, while on
 * SQLite the one writer runs them one after the other.  A pushed statement
 * (cn_meta_pushf) is seen by the transaction's next statement, and its
 * failure is reported by that statement or by the run's commit, which then
 * commits nothing; a connection whose pushes were dropped by a rollback
 * serves the next run. */
#include "cn_test.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "cairn/util.h"
#include "meta/test_target.h"

/* The target open_fresh last opened: the data dir or a fresh database URI. */
static char target[512];

static cn_meta_t *open_pool(char *dir, unsigned busy_ms, unsigned max_readers)
{
    CN_CHECK(mkdtemp(dir) != NULL);
    CN_CHECK(cn_test_meta_target(dir, target, sizeof target));
    cn_meta_opts_t o = { .busy_timeout_ms = busy_ms, .no_sync = true, .max_readers = max_readers };
    cn_meta_t *m = NULL;
    CN_CHECK_EQ(cn_meta_open(target, &o, &m), 0);
    return m;
}

static cn_meta_t *open_fresh(char *dir, unsigned busy_ms)
{
    return open_pool(dir, busy_ms, 0);
}

static void rmtree(const char *d)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", d);
}

/* The test table, through a migration: schema text is translated for the
 * engine there (BLOB is BYTEA on PostgreSQL). */
static cn_err_t create_table(cn_meta_t *m)
{
    static const cn_meta_migration_t step[] = {
        { 1, "CREATE TABLE t (k TEXT PRIMARY KEY, v BIGINT, b BLOB, x TEXT)", NULL, NULL },
    };
    return cn_meta_migrate(m, "t", step, 1);
}

typedef struct {
    const char *key;
    int64_t v;
    cn_err_t fail_with; /* returned after the insert when < 0 */
    bool discard;       /* cn_meta_discard after the insert */
    int calls;
} put_t;

static cn_err_t put_row(cn_meta_txn_t *txn, void *ctx)
{
    put_t *p = ctx;
    p->calls++;
    static const uint8_t blob[3] = { 1, 0, 2 };
    cn_err_t err = cn_meta_execf(txn, "INSERT INTO t (k, v, b, x) VALUES (?, ?, ?, ?)", "sibn",
                                 p->key, p->v, blob, sizeof blob);
    if (err < 0)
        return err;
    if (p->discard)
        cn_meta_discard(txn);
    return p->fail_with < 0 ? p->fail_with : 7;
}

typedef struct {
    const char *key;
    int64_t v;
    size_t blob_len;
    bool x_null;
} row_t;

static cn_err_t get_row(cn_meta_txn_t *txn, void *ctx)
{
    row_t *r = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_queryf(txn, &st, "SELECT v, b, x FROM t WHERE k = ?", "t", r->key, strlen(r->key));
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        r->v = cn_meta_column_int64(st, 0);
        cn_meta_column_blob(st, 1, &r->blob_len);
        r->x_null = cn_meta_column_is_null(st, 2);
    }
    cn_meta_finish(st);
    return err;
}

static void test_commit_and_rollback(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m = open_fresh(dir, 1000);
    CN_CHECK_EQ(create_table(m), 0);

    put_t ok = { .key = "a", .v = 41 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, put_row, &ok), 7);
    put_t bad = { .key = "b", .v = 42, .fail_with = CN_E_CONFLICT };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE | CN_META_RETRY, put_row, &bad), CN_E_CONFLICT);
    CN_CHECK_EQ(bad.calls, 1); /* only lock errors repeat */
    put_t dup = { .key = "a", .v = 43 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, put_row, &dup), CN_E_EXISTS);

    row_t a = { .key = "a" }, b = { .key = "b" };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, get_row, &a), CN_META_ROW);
    CN_CHECK_EQ(a.v, 41);
    CN_CHECK_EQ(a.blob_len, 3);
    CN_CHECK(a.x_null);
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, get_row, &b), CN_META_DONE);

    /* A discarded write run answers the body's value and leaves no row. */
    put_t gone = { .key = "d", .v = 44, .discard = true };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, put_row, &gone), 7);
    row_t d = { .key = "d" };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, get_row, &d), CN_META_DONE);

    /* A read run may not write, and its failure is the body's. */
    put_t ro = { .key = "c", .v = 1 };
    CN_CHECK(cn_meta_run(m, CN_META_RUN_READ, put_row, &ro) < 0);

    cn_meta_txn_t *txn = NULL;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &txn), 0);
    CN_CHECK_EQ(cn_meta_execf(txn, "SELECT ?", "q", 1), CN_E_INVALID);
    cn_meta_rollback(txn);
    cn_meta_close(m);
    rmtree(dir);
}

typedef struct {
    cn_meta_t *m;
    unsigned hold_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool holding;
} holder_t;

static void *hold_writer(void *arg)
{
    holder_t *h = arg;
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(h->m, CN_META_WRITE, &txn);
    pthread_mutex_lock(&h->mu);
    h->holding = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (err >= 0) {
        usleep(h->hold_ms * 1000u);
        cn_meta_rollback(txn);
    }
    return NULL;
}

/* Holds the writer slot for hold_ms on another thread, then runs put_row
 * with flags; returns its result. */
static cn_err_t run_while_held(cn_meta_t *m, unsigned hold_ms, unsigned flags, put_t *p)
{
    holder_t h = { .m = m, .hold_ms = hold_ms };
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    pthread_t t;
    pthread_create(&t, NULL, hold_writer, &h);
    pthread_mutex_lock(&h.mu);
    while (!h.holding)
        pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    cn_err_t err = cn_meta_run(m, CN_META_RUN_WRITE | flags, put_row, p);
    pthread_join(t, NULL);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    return err;
}

static void test_retry_when_locked(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    /* Without CN_META_RETRY a run gives up after one busy timeout (the holder
     * keeps the slot 2.5 of them, far past it).  With it, a repeat allowed
     * until 2 busy timeouts gets the slot once a holder of 1.2 lets go: the
     * margins (1.5 and 0.8 busy timeouts) leave room for a slow scheduler.
     * One reader makes PostgreSQL's writer pool one connection too, the
     * writer slot SQLite always has. */
    cn_meta_t *m = open_pool(dir, 1000, 1);
    CN_CHECK_EQ(create_table(m), 0);
    put_t once = { .key = "once", .v = 1 };
    CN_CHECK_EQ(run_while_held(m, 2500, 0, &once), CN_E_DB_LOCKED);
    CN_CHECK_EQ(once.calls, 0);
    put_t again = { .key = "again", .v = 2 };
    CN_CHECK_EQ(run_while_held(m, 1200, CN_META_RETRY, &again), 7);
    CN_CHECK_EQ(again.calls, 1);
    row_t r = { .key = "again" };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, get_row, &r), CN_META_ROW);
    CN_CHECK_EQ(r.v, 2);
    cn_meta_close(m);
    rmtree(dir);
}

/* Two handles on one database stand for two nodes: each increments one
 * counter by reading it and writing it back.  On PostgreSQL their writers
 * really overlap and SERIALIZABLE refuses one of two (40001), which the
 * engine reports as CN_E_DB_LOCKED and cn_meta_run repeats; on SQLite the
 * second waits for the file lock.  Either way no increment is lost. */
typedef struct {
    cn_meta_t *m;
    int n, failures;
} incr_t;

static _Atomic int incr_attempts;

static bool incr_push; /* the UPDATE through cn_meta_pushf */

static cn_err_t incr_body(cn_meta_txn_t *txn, void *ctx)
{
    (void)ctx;
    incr_attempts++;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, "SELECT v FROM t WHERE k = ?", "s", "ctr");
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    int64_t v = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    if (err != CN_META_ROW)
        return err < 0 ? err : CN_E_NOT_FOUND;
    /* Pushed: a serialization failure then comes with the commit's round
     * trip, and must be repeated as one met here. */
    err = incr_push ? cn_meta_pushf(txn, "UPDATE t SET v = ? WHERE k = ?", "is", v + 1, "ctr")
                    : cn_meta_execf(txn, "UPDATE t SET v = ? WHERE k = ?", "is", v + 1, "ctr");
    return err < 0 ? err : CN_OK;
}

static void *incr_main(void *arg)
{
    incr_t *a = arg;
    for (int i = 0; i < a->n; i++)
        if (cn_meta_run(a->m, CN_META_RUN_WRITE | CN_META_RETRY, incr_body, NULL) < 0)
            a->failures++;
    return NULL;
}

/* threads threads increment "ctr" (at 0) per times each, alternating
 * between handles a and b (a twice: one node), then read it back through
 * b: no increment may be lost. */
static void increments_exact(cn_meta_t *a, cn_meta_t *b, int threads, int per, const char *what)
{
    pthread_t th[8];
    incr_t args[8];
    CN_CHECK(threads <= 8);
    incr_attempts = 0;
    for (int i = 0; i < threads && i < 8; i++) {
        args[i] = (incr_t){ i % 2 ? b : a, per, 0 };
        pthread_create(&th[i], NULL, incr_main, &args[i]);
    }
    int failures = 0;
    for (int i = 0; i < threads && i < 8; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    CN_CHECK_EQ(failures, 0);
    printf("# %s: %d increments took %d attempts\n", what, threads * per, (int)incr_attempts);
    row_t r = { .key = "ctr" };
    CN_CHECK_EQ(cn_meta_run(b, CN_META_RUN_READ, get_row, &r), CN_META_ROW);
    CN_CHECK_EQ(r.v, threads * per);
}

static void test_two_nodes_serialize(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m1 = open_fresh(dir, 5000);
    cn_meta_opts_t o = { .busy_timeout_ms = 5000, .no_sync = true };
    cn_meta_t *m2 = NULL;
    CN_CHECK_EQ(cn_meta_open(target, &o, &m2), 0);
    CN_CHECK_EQ(create_table(m1), 0);
    CN_CHECK_EQ(create_table(m2), 0); /* already there: a no-op */
    put_t ctr = { .key = "ctr", .v = 0 };
    CN_CHECK_EQ(cn_meta_run(m1, CN_META_RUN_WRITE, put_row, &ctr), 7);
    increments_exact(m1, m2, 4, 25, "two handles");
    cn_meta_close(m2);
    cn_meta_close(m1);
    rmtree(dir);
}

static cn_err_t own_txn(cn_meta_txn_t *txn, void *ctx)
{
    int64_t *alone = ctx;
    cn_meta_stmt_t *st = NULL;
    /* An ordinary read's BEGIN asks for REPEATABLE READ; a statement run
     * alone gets the session's default. */
    cn_err_t err = cn_meta_queryf(txn, &st,
                                  "SELECT CASE WHEN current_setting('transaction_isolation')"
                                  " = 'repeatable read' THEN 0 ELSE 1 END",
                                  "");
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        *alone = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    return err;
}

static void test_read_one(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m1 = open_fresh(dir, 1000);
    cn_meta_opts_t o = { .busy_timeout_ms = 1000, .no_sync = true };
    cn_meta_t *m2 = NULL;
    CN_CHECK_EQ(cn_meta_open(target, &o, &m2), 0);
    CN_CHECK_EQ(create_table(m1), 0);
    put_t a = { .key = "a", .v = 5 };
    CN_CHECK_EQ(cn_meta_run(m1, CN_META_RUN_WRITE, put_row, &a), 7);
    row_t r = { .key = "a" };
    CN_CHECK_EQ(cn_meta_run(m2, CN_META_RUN_READ | CN_META_RUN_ONE, get_row, &r), CN_META_ROW);
    CN_CHECK_EQ(r.v, 5);
    static const char *const keys[3] = { "b", "c", "d" };
    for (int i = 0; i < 3; i++) { /* each commit of the other handle, seen at once */
        put_t b = { .key = keys[i], .v = 10 + i };
        CN_CHECK_EQ(cn_meta_run(m1, CN_META_RUN_WRITE, put_row, &b), 7);
        row_t s = { .key = keys[i] };
        CN_CHECK_EQ(cn_meta_run(m2, CN_META_RUN_READ | CN_META_RUN_ONE, get_row, &s), CN_META_ROW);
        CN_CHECK_EQ(s.v, 10 + i);
    }
    if (!strcmp(cn_meta_engine(m2), "postgres")) {
        int64_t alone = -1;
        CN_CHECK_EQ(cn_meta_run(m2, CN_META_RUN_READ | CN_META_RUN_ONE, own_txn, &alone),
                    CN_META_ROW);
        CN_CHECK_EQ(alone, 1);
        /* The connection went back idle: an ordinary read still runs. */
        CN_CHECK_EQ(cn_meta_run(m2, CN_META_RUN_READ, get_row, &r), CN_META_ROW);
    }
    cn_meta_close(m2);
    cn_meta_close(m1);
    rmtree(dir);
}

/* Two reads of rows a and b; the number of times the body ran and whether
 * it ran as one transaction (PostgreSQL: REPEATABLE READ, as a plain read's
 * BEGIN asks) are kept. */
typedef struct {
    bool pg;
    int64_t a, b, runs, isolated;
} two_t;

static cn_err_t two_rows(cn_meta_txn_t *txn, void *ctx)
{
    two_t *t = ctx;
    t->runs++;
    row_t ra = { .key = "a" }, rb = { .key = "b" };
    cn_err_t err = get_row(txn, &ra);
    if (err >= 0 && t->pg)
        err = own_txn(txn, &t->isolated);
    if (err >= 0)
        err = get_row(txn, &rb);
    t->a = ra.v;
    t->b = rb.v;
    return err;
}

/* A CN_META_RUN_ONE body that begins a second statement is run again as a
 * plain read: its second try answers, in one transaction, and the first
 * try's statement failed no other run.  A body of one statement runs once. */
static void test_read_one_more(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m = open_fresh(dir, 1000);
    CN_CHECK_EQ(create_table(m), 0);
    put_t a = { .key = "a", .v = 5 }, b = { .key = "b", .v = 6 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, put_row, &a), 7);
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, put_row, &b), 7);
    two_t t = { .pg = !strcmp(cn_meta_engine(m), "postgres"), .isolated = -1 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ | CN_META_RUN_ONE, two_rows, &t), CN_META_ROW);
    CN_CHECK_EQ(t.runs, 2);
    CN_CHECK_EQ(t.a, 5);
    CN_CHECK_EQ(t.b, 6);
    if (t.pg)
        CN_CHECK_EQ(t.isolated, 0); /* the second try had its BEGIN */
    row_t r = { .key = "a" };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ | CN_META_RUN_ONE, get_row, &r), CN_META_ROW);
    CN_CHECK_EQ(r.v, 5);
    cn_meta_close(m);
    rmtree(dir);
}

/* A write run whose body, having written its row, waits inside its
 * transaction until the main thread says go (at most 5 s). */
typedef struct {
    cn_meta_t *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool inside, go;
    cn_err_t res;
} slow_t;

static cn_err_t slow_body(cn_meta_txn_t *txn, void *ctx)
{
    slow_t *s = ctx;
    cn_err_t err = cn_meta_execf(txn, "INSERT INTO t (k, v) VALUES (?, ?)", "si", "slow", 1);
    if (err < 0)
        return err;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&s->mu);
    s->inside = true;
    pthread_cond_broadcast(&s->cv);
    while (!s->go && pthread_cond_timedwait(&s->cv, &s->mu, &dl) == 0) {
    }
    pthread_mutex_unlock(&s->mu);
    return CN_OK;
}

static void *slow_main(void *arg)
{
    slow_t *s = arg;
    s->res = cn_meta_run(s->m, CN_META_RUN_WRITE, slow_body, s);
    return NULL;
}

/* While one write run of a handle sits inside its transaction (a slow
 * body: a lock wait, a round trip), another write run of the same handle,
 * on another row, commits and is read back: on PostgreSQL each takes a
 * connection of the writer pool.  On SQLite the second waits for the one
 * writer for the busy timeout and fails CN_E_DB_LOCKED, as it always did. */
static void test_writers_concurrent(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m = open_fresh(dir, 1000);
    CN_CHECK_EQ(create_table(m), 0);
    slow_t s = { .m = m };
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    pthread_t th;
    pthread_create(&th, NULL, slow_main, &s);
    pthread_mutex_lock(&s.mu);
    while (!s.inside)
        pthread_cond_wait(&s.cv, &s.mu);
    pthread_mutex_unlock(&s.mu);

    put_t fast = { .key = "fast", .v = 2 };
    int64_t t0 = cn_mono_ms();
    cn_err_t err = cn_meta_run(m, CN_META_RUN_WRITE, put_row, &fast);
    int64_t took = cn_mono_ms() - t0;
    row_t f = { .key = "fast" }, w = { .key = "slow" };
    cn_err_t seen_fast = cn_meta_run(m, CN_META_RUN_READ, get_row, &f);
    cn_err_t seen_slow = cn_meta_run(m, CN_META_RUN_READ, get_row, &w);
    pthread_mutex_lock(&s.mu);
    bool still_inside = !s.go;
    s.go = true;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(th, NULL);
    printf("# second writer: %d after %lld ms\n", (int)err, (long long)took);
    CN_CHECK(still_inside);
    CN_CHECK_EQ(s.res, CN_OK);
    if (cn_meta_single_writer(m)) {
        CN_CHECK_EQ(err, CN_E_DB_LOCKED);
        CN_CHECK_EQ(fast.calls, 0);
        CN_CHECK_EQ(seen_fast, CN_META_DONE);
    } else {
        CN_CHECK_EQ(err, 7); /* committed while the first was still open */
        CN_CHECK_EQ(seen_fast, CN_META_ROW);
        CN_CHECK_EQ(f.v, 2);
        CN_CHECK(took < 900); /* it did not wait for the first */
    }
    CN_CHECK_EQ(seen_slow, CN_META_DONE); /* the first was not committed yet */
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, get_row, &w), CN_META_ROW);
    CN_CHECK_EQ(w.v, 1);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    cn_meta_close(m);
    rmtree(dir);
}

/* Eight threads of one handle increment one counter by reading it and
 * writing it back.  On PostgreSQL they run at once on the writer pool and
 * SERIALIZABLE refuses the losers (40001, CN_E_DB_LOCKED), which
 * cn_meta_run repeats; on SQLite the one writer serializes them.  Either
 * way no increment is lost. */
static void test_one_handle_increments(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m = open_fresh(dir, 5000);
    CN_CHECK_EQ(create_table(m), 0);
    put_t ctr = { .key = "ctr", .v = 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, put_row, &ctr), 7);
    increments_exact(m, m, 8, 15, "one handle");
    incr_push = true;
    cn_meta_close(m);
    rmtree(dir);
    memcpy(dir, "/tmp/cn-test-metarun-XXXXXX", sizeof dir);
    m = open_fresh(dir, 5000);
    CN_CHECK_EQ(create_table(m), 0);
    ctr.key = "ctr";
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, put_row, &ctr), 7);
    increments_exact(m, m, 8, 15, "one handle, pushed");
    incr_push = false;
    cn_meta_close(m);
    rmtree(dir);
}

/* What test_pushed's body does after pushing its rows. */
typedef enum {
    PUSH_COUNT,   /* counts the table's rows (the pushes' answers come first) */
    PUSH_NOTHING, /* returns: the commit reads the answers */
    PUSH_DISCARD, /* cn_meta_discard: a rollback drops them */
} push_then_t;

typedef struct {
    const char *keys[3];
    push_then_t then;
    int64_t count;
    cn_err_t counted; /* the count's step */
} push_t;

static cn_err_t push_body(cn_meta_txn_t *txn, void *ctx)
{
    push_t *p = ctx;
    p->count = -1;
    cn_err_t err = 0;
    for (int i = 0; i < 3 && p->keys[i] && err >= 0; i++)
        err =
            cn_meta_pushf(txn, "INSERT INTO t (k, v) VALUES (?, ?)", "si", p->keys[i], (int64_t)i);
    if (err < 0 || p->then == PUSH_NOTHING)
        return err < 0 ? err : CN_OK;
    if (p->then == PUSH_DISCARD) {
        cn_meta_discard(txn);
        return CN_OK;
    }
    cn_meta_stmt_t *st = NULL;
    err = cn_meta_queryf(txn, &st, "SELECT COUNT(*) FROM t", "");
    if (err >= 0)
        err = p->counted = cn_meta_step(st);
    if (err == CN_META_ROW)
        p->count = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static int64_t rows_now(cn_meta_t *m)
{
    push_t p = { .then = PUSH_COUNT };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, push_body, &p), CN_OK);
    return p.count;
}

static void test_pushed(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m = open_fresh(dir, 1000);
    CN_CHECK_EQ(create_table(m), 0);
    /* Seen by the next statement, then committed. */
    push_t two = { { "p1", "p2" }, PUSH_COUNT, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, push_body, &two), CN_OK);
    CN_CHECK_EQ(two.count, 2);
    CN_CHECK_EQ(rows_now(m), 2);
    /* A failed push (a duplicate key) is the next statement's error... */
    push_t dup = { { "p3", "p1" }, PUSH_COUNT, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, push_body, &dup), CN_E_EXISTS);
    if (strcmp(cn_meta_engine(m), "postgres") == 0)
        CN_CHECK_EQ(dup.counted, CN_E_EXISTS); /* SQLite: the push's own error */
    CN_CHECK_EQ(rows_now(m), 2);               /* p3 left with it */
    /* ... or the commit's, which then commits nothing, not even the pushes
     * before the failed one or after it. */
    push_t last = { { "p4", "p2", "p5" }, PUSH_NOTHING, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, push_body, &last), CN_E_EXISTS);
    CN_CHECK_EQ(rows_now(m), 2);
    /* Dropped by a discard; the connection serves the next run. */
    push_t gone = { { "p6" }, PUSH_DISCARD, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, push_body, &gone), CN_OK);
    CN_CHECK_EQ(rows_now(m), 2);
    push_t ok = { { "p7" }, PUSH_NOTHING, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, push_body, &ok), CN_OK);
    CN_CHECK_EQ(rows_now(m), 3);
    /* More pushes than one pipeline holds, in one transaction, with a
     * statement between them at both edges of its room. */
    cn_meta_txn_t *txn = NULL;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &txn), 0);
    for (int i = 0; i < 300; i++) {
        char k[8];
        snprintf(k, sizeof k, "m%03d", i);
        CN_CHECK_EQ(cn_meta_pushf(txn, "INSERT INTO t (k, v) VALUES (?, ?)", "si", k, (int64_t)i),
                    CN_OK);
        /* At 122 the pipeline holds 125 (BEGIN, cn_xid, 123 rows): the
         * count joins it; at 248, 126 (rows since the count read it): it
         * is read first. */
        if (i == 122 || i == 248) {
            int64_t n = 0;
            cn_meta_stmt_t *st = NULL;
            CN_CHECK_EQ(cn_meta_queryf(txn, &st, "SELECT COUNT(*) FROM t", ""), CN_OK);
            CN_CHECK_EQ(cn_meta_step(st), CN_META_ROW);
            n = cn_meta_column_int64(st, 0);
            cn_meta_finish(st);
            CN_CHECK_EQ(n, 3 + i + 1);
        }
    }
    CN_CHECK_EQ(cn_meta_commit(txn), 0);
    CN_CHECK_EQ(rows_now(m), 303);
    /* cn_meta_flush reads them at once: the duplicate is its error (the
     * push's own on SQLite), and it fails the transaction. */
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &txn), 0);
    CN_CHECK_EQ(cn_meta_flush(txn), 0); /* nothing pushed */
    cn_err_t pushed =
        cn_meta_pushf(txn, "INSERT INTO t (k, v) VALUES (?, ?)", "si", "p1", (int64_t)9);
    CN_CHECK_EQ(pushed < 0 ? pushed : cn_meta_flush(txn), CN_E_EXISTS);
    CN_CHECK(cn_meta_commit(txn) < 0);
    CN_CHECK_EQ(rows_now(m), 303);
    cn_meta_close(m);
    rmtree(dir);
}

/* A keyed write (cn_meta_run_keyed): its body fails CN_E_UNAVAILABLE, as a
 * COMMIT lost with its server, on its first `lost` runs (rolled back). */
typedef struct {
    put_t put;
    int lost;
    int looks;
} keyed_t;

static cn_err_t keyed_body(cn_meta_txn_t *txn, void *ctx)
{
    keyed_t *k = ctx;
    cn_err_t err = put_row(txn, &k->put);
    return err >= 0 && k->put.calls <= k->lost ? CN_E_UNAVAILABLE : err;
}

/* A body whose write had landed before: it only loses its answer. */
static cn_err_t lost_body(cn_meta_txn_t *txn, void *ctx)
{
    (void)txn;
    keyed_t *k = ctx;
    k->put.calls++;
    return CN_E_UNAVAILABLE;
}

static cn_err_t keyed_landed(cn_meta_txn_t *txn, void *ctx, bool *found)
{
    keyed_t *k = ctx;
    k->looks++;
    row_t r = { .key = k->put.key };
    cn_err_t err = get_row(txn, &r);
    *found = err == CN_META_ROW;
    return err < 0 ? err : CN_OK;
}

static void test_keyed(void)
{
    char dir[] = "/tmp/cn-test-metarun-XXXXXX";
    cn_meta_t *m = open_fresh(dir, 1000);
    CN_CHECK_EQ(create_table(m), 0);
    unsigned w = CN_META_RUN_WRITE | CN_META_RETRY;
    /* lost once, not landed: run again */
    keyed_t once = { .put = { .key = "k1", .v = 1 }, .lost = 1 };
    CN_CHECK_EQ(cn_meta_run_keyed(m, w, keyed_body, keyed_landed, &once), 7);
    CN_CHECK_EQ(once.put.calls, 2);
    CN_CHECK_EQ(once.looks, 1);
    /* lost every time: CN_META_KEYED_TRIES runs, then the error */
    keyed_t never = { .put = { .key = "k2", .v = 2 }, .lost = 100 };
    CN_CHECK_EQ(cn_meta_run_keyed(m, w, keyed_body, keyed_landed, &never), CN_E_UNAVAILABLE);
    CN_CHECK_EQ(never.put.calls, CN_META_KEYED_TRIES);
    row_t k2 = { .key = "k2" };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, get_row, &k2), CN_META_DONE);
    /* the key already there (the lost COMMIT had landed): done, not run again */
    keyed_t landed = { .put = { .key = "k1" }, .lost = 100 };
    CN_CHECK_EQ(cn_meta_run_keyed(m, w, lost_body, keyed_landed, &landed), CN_OK);
    CN_CHECK_EQ(landed.put.calls, 1);
    CN_CHECK_EQ(landed.looks, 1);
    /* another error is the run's, unlooked */
    keyed_t dup = { .put = { .key = "k1", .v = 4 } };
    CN_CHECK_EQ(cn_meta_run_keyed(m, w, keyed_body, keyed_landed, &dup), CN_E_EXISTS);
    CN_CHECK_EQ(dup.looks, 0);
    cn_meta_close(m);
    rmtree(dir);
}

CN_TEST_MAIN(CN_TEST(test_commit_and_rollback), CN_TEST(test_pushed), CN_TEST(test_keyed),
             CN_TEST(test_retry_when_locked), CN_TEST(test_two_nodes_serialize),
             CN_TEST(test_read_one), CN_TEST(test_read_one_more), CN_TEST(test_writers_concurrent),
             CN_TEST(test_one_handle_increments), )
