/* meta group commit (src/meta/group.c, invariants G1-G6): many threads'
 * write runs share transactions, and each run's row is committed exactly
 * when its own result says so; a failing, discarding or statement-failing
 * member sinks no other; a body without CN_META_RETRY runs once; a member
 * whose group cannot finish gives up within the busy timeout and takes its
 * changes with it; readers do not wait for a group; and a process killed
 * mid-stream has lost none of the writes it answered.  SQLite only: the
 * PostgreSQL engine runs one transaction per run (no savepoint hooks). */
#include "cn_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "cairn/metrics.h"
#include "cairn/util.h"

static void rmtree(const char *d)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", d);
}

static cn_meta_t *open_dir(const char *dir, unsigned busy_ms, bool no_sync)
{
    cn_meta_opts_t o = { .busy_timeout_ms = busy_ms, .no_sync = no_sync };
    cn_meta_t *m = NULL;
    CN_CHECK_EQ(cn_meta_open(dir, &o, &m), 0);
    return m;
}

static cn_err_t create_table(cn_meta_t *m)
{
    static const cn_meta_migration_t step[] = {
        { 1, "CREATE TABLE g (k TEXT PRIMARY KEY, v BIGINT)", NULL, NULL },
    };
    return cn_meta_migrate(m, "g", step, 1);
}

/* The family group.c reports each committed group's size in. */
static const cn_metric_family_t group_fam = {
    "cairn_meta_group_members",
    "Write runs (bodies) per metadata group transaction.",
    CN_METRIC_HISTOGRAM,
    cn_metric_bounds_count,
    7,
};

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

/* ---- many threads, every kind of member -------------------------------------- */

enum {
    K_OK,      /* inserts, returns 1: committed */
    K_FAIL,    /* inserts, returns an error: rolled back */
    K_DISCARD, /* inserts, discards, returns 1: rolled back, answered 1 */
    K_DUP,     /* inserts a key that exists: CN_E_EXISTS, nothing changed */
    K_SWALLOW, /* inserts, then a failing insert it ignores: CN_E_EXISTS */
    K_KINDS
};

typedef struct {
    char key[32];
    int kind;
    _Atomic int calls;
    cn_err_t res;
    pthread_t caller; /* the thread that called cn_meta_run */
    bool elsewhere;   /* the body ran on another thread (combined) */
} run_t;

static cn_err_t member_body(cn_meta_txn_t *txn, void *ctx)
{
    run_t *r = ctx;
    atomic_fetch_add(&r->calls, 1);
    r->elsewhere = !pthread_equal(pthread_self(), r->caller);
    const char *k = r->kind == K_DUP ? "dup" : r->key;
    cn_err_t err = cn_meta_execf(txn, "INSERT INTO g (k, v) VALUES (?, ?)", "si", k, (int64_t)1);
    if (err < 0)
        return err;
    sleep_us(100); /* long enough for others to queue for a turn */
    if (r->kind == K_SWALLOW)
        (void)cn_meta_execf(txn, "INSERT INTO g (k, v) VALUES ('dup', 2)", "");
    if (r->kind == K_DISCARD)
        cn_meta_discard(txn);
    return r->kind == K_FAIL ? CN_E_CONFLICT : 1;
}

typedef struct {
    cn_meta_t *m;
    run_t *runs;
    int n;
    unsigned flags; /* added to CN_META_RUN_WRITE */
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < w->n; i++) {
        w->runs[i].caller = pthread_self();
        w->runs[i].res = cn_meta_run(w->m, CN_META_RUN_WRITE | w->flags, member_body, &w->runs[i]);
    }
    return NULL;
}

/* A writer beside the groups that begins its own transactions (as the
 * store's recovery does): it waits for the writer slot between groups. */
typedef struct {
    cn_meta_t *m;
    int n, committed;
} direct_t;

static void *direct_main(void *arg)
{
    direct_t *d = arg;
    for (int i = 0; i < d->n; i++) {
        cn_meta_txn_t *txn = NULL;
        if (cn_meta_begin(d->m, CN_META_WRITE, &txn) < 0)
            continue;
        char key[32];
        snprintf(key, sizeof key, "direct-%d", i);
        (void)cn_meta_execf(txn, "INSERT INTO g (k, v) VALUES (?, 3)", "s", key);
        if (cn_meta_commit(txn) >= 0)
            d->committed++;
    }
    return NULL;
}

static cn_err_t count_body(cn_meta_txn_t *txn, void *ctx)
{
    const char *key = ctx;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, "SELECT COUNT(*) FROM g WHERE k = ?", "s", key));
    cn_err_t err = cn_meta_step(st);
    int64_t n = err == CN_META_ROW ? cn_meta_column_int64(st, 0) : -1;
    cn_meta_finish(st);
    return err < 0 ? err : (cn_err_t)n;
}

static void test_each_member_by_its_own_result(void)
{
    char dir[] = "/tmp/cn-test-metagroup-XXXXXX";
    CN_CHECK(mkdtemp(dir) != NULL);
    cn_meta_t *m = open_dir(dir, 10000, true);
    CN_CHECK_EQ(create_table(m), 0);
    run_t seed = { .key = "dup", .kind = K_OK };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, member_body, &seed), 1);

    cn_metric_t *hist = cn_metric_series(NULL, &group_fam, "");
    int64_t groups0 = cn_metric_value(hist);
    double members0 = cn_metric_sum(hist);

    enum {
        THREADS = 16,
        PER = 60
    };
    static run_t runs[THREADS][PER];
    pthread_t th[THREADS];
    worker_t w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < PER; i++) {
            run_t *r = &runs[t][i];
            snprintf(r->key, sizeof r->key, "k%d-%d", t, i);
            r->kind = (t + i) % K_KINDS;
            atomic_init(&r->calls, 0);
        }
        /* Half the threads combine (G7-G9): queued behind a holder. */
        w[t] = (worker_t){ m, runs[t], PER, t % 2 ? CN_META_RUN_COMBINE : 0 };
        CN_CHECK_EQ(pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
    }
    direct_t direct = { m, 50, 0 };
    pthread_t dth;
    CN_CHECK_EQ(pthread_create(&dth, NULL, direct_main, &direct), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    pthread_join(dth, NULL);
    CN_CHECK_EQ(direct.committed, 50);
    for (int i = 0; i < 50; i++) {
        char key[32];
        snprintf(key, sizeof key, "direct-%d", i);
        CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, count_body, key), 1);
    }

    int wrong = 0, committed = 0, combined = 0;
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < PER; i++) {
            run_t *r = &runs[t][i];
            combined += r->elsewhere;
            if (r->elsewhere && t % 2 == 0)
                wrong++; /* only flagged bodies run on another thread */
            static const cn_err_t want[K_KINDS] = { 1, CN_E_CONFLICT, 1, CN_E_EXISTS, CN_E_EXISTS };
            int present = cn_meta_run(m, CN_META_RUN_READ, count_body, r->key);
            bool keep = r->kind == K_OK;
            if (r->res != want[r->kind] || present != (keep ? 1 : 0) || r->calls != 1) {
                if (wrong++ < 5)
                    printf("# %s kind %d: result %d, present %d, calls %d\n", r->key, r->kind,
                           (int)r->res, present, (int)r->calls);
            }
            committed += keep;
        }
    }
    CN_CHECK_EQ(wrong, 0);
    printf("# %d of %d flagged runs combined\n", combined, THREADS / 2 * PER);
    CN_CHECK(combined > 0);
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, count_body, (void *)"dup"), 1);

    /* The runs shared transactions: fewer commits than committed members. */
    int64_t groups = cn_metric_value(hist) - groups0;
    double members = cn_metric_sum(hist) - members0;
    printf("# %d committed members in %lld group commits\n", committed, (long long)groups);
    CN_CHECK_EQ((int)members, committed);
    CN_CHECK(groups > 0 && groups < committed);
    cn_meta_close(m);
    rmtree(dir);
}

/* group.c's test hook (src/meta/engine.h). */
void cn__meta_group_counts(cn_meta_t *meta, unsigned *queued, unsigned *waiting, bool *turn);

/* Waits (at most 20 s) until m's group has queued members queued, waiting
 * ones waiting and the turn held as turn: the scenarios below stage their
 * threads by the group's state, not by sleeps. */
static void await_counts(cn_meta_t *m, unsigned queued, unsigned waiting, bool turn)
{
    unsigned q = 0, w = 0;
    bool t = false;
    for (int i = 0; i < 20000; i++) {
        cn__meta_group_counts(m, &q, &w, &t);
        if (q == queued && w == waiting && t == turn)
            return;
        sleep_us(1000);
    }
    printf("# group state %u queued, %u waiting, turn %d\n", q, w, (int)t);
    CN_CHECK(false);
}

/* A scenario depends on the group staying joinable (GROUP_MAX_NS, 5 ms)
 * from its BEGIN until its later members (queued or waiting) have joined
 * it: a machine loaded enough to stall
 * the holder longer makes it decide early and hand the turn on, which is
 * correct (G5, G8) but not the case under test.  Each scenario returns
 * whether it was staged as meant; the answers, rows and body counts it
 * checks hold either way.  Up to three attempts; one that was never staged
 * is reported, not failed (a slow machine, not a fault). */
static void staged(bool (*scenario)(void), const char *name)
{
    for (int i = 0; i < 3; i++) {
        if (scenario())
            return;
        printf("# %s: the group aged before its members joined (a loaded machine)\n", name);
    }
    printf("# %s: never staged in 3 attempts; only the answers were checked\n", name);
}

/* ---- scripted write runs, staged by the group's state -------------------------- */

/* One scripted write run on a thread of its own: inserts key (none if
 * NULL), waits for *gate (if set) to open, sleeps hold_us, discards if
 * told, returns ret. */
typedef struct {
    cn_meta_t *m;
    unsigned flags; /* added to CN_META_RUN_WRITE */
    const char *key;
    _Atomic int *gate;
    long hold_us;
    bool discard;
    cn_err_t ret;
    _Atomic int calls, in_body;
    pthread_t caller, th;
    _Atomic bool elsewhere; /* the body ran on another thread than caller */
    cn_err_t res;
} job_t;

static cn_err_t job_body(cn_meta_txn_t *txn, void *ctx)
{
    job_t *j = ctx;
    atomic_fetch_add(&j->calls, 1);
    atomic_store(&j->elsewhere, !pthread_equal(pthread_self(), j->caller));
    if (j->key) {
        cn_err_t err = cn_meta_execf(txn, "INSERT INTO g (k, v) VALUES (?, 1)", "s", j->key);
        if (err < 0)
            return err;
    }
    atomic_store(&j->in_body, 1);
    while (j->gate && !atomic_load(j->gate))
        sleep_us(1000);
    if (j->hold_us) /* even a sleep of 0 may give the CPU away */
        sleep_us(j->hold_us);
    if (j->discard)
        cn_meta_discard(txn);
    return j->ret;
}

static void *job_main(void *arg)
{
    job_t *j = arg;
    j->caller = pthread_self();
    j->res = cn_meta_run(j->m, CN_META_RUN_WRITE | j->flags, job_body, j);
    return NULL;
}

static void job_start(job_t *j)
{
    CN_CHECK_EQ(pthread_create(&j->th, NULL, job_main, j), 0);
}

static int present(cn_meta_t *m, const char *key)
{
    return cn_meta_run(m, CN_META_RUN_READ, count_body, (void *)key);
}

static cn_meta_t *fresh(char *dir, unsigned busy_ms, bool no_sync)
{
    strcpy(dir, "/tmp/cn-test-metagroup-XXXXXX");
    CN_CHECK(mkdtemp(dir) != NULL);
    cn_meta_t *m = open_dir(dir, busy_ms, no_sync);
    CN_CHECK_EQ(create_table(m), 0);
    return m;
}

/* One step of a staged scenario: starts j's thread, then waits until m's
 * group shows queued members queued and waiting ones waiting, its turn
 * held. */
static void stage(cn_meta_t *m, job_t *j, unsigned queued, unsigned waiting)
{
    job_start(j);
    await_counts(m, queued, waiting, true);
}

/* The first step of the scenarios that open a group: a plain transaction
 * holds the writer, then holder starts and takes the group's turn, waiting
 * in its BEGIN.  Returns the transaction; rolling it back lets holder on. */
static cn_meta_txn_t *hold_writer(cn_meta_t *m, job_t *holder)
{
    cn_meta_txn_t *hold = NULL;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &hold), 0);
    stage(m, holder, 0, 0);
    return hold;
}

/* Starts j's thread and waits until its body runs (holds the turn). */
static void start_in_body(job_t *j)
{
    job_start(j);
    while (!atomic_load(&j->in_body))
        sleep_us(1000);
}

/* ---- a group that cannot finish; readers meanwhile --------------------------- */

/* The writer is held by a plain transaction while A (which will open the
 * group) and then B queue, so B joins A's group; B's body then outlasts A's
 * wait for the outcome (300 ms): A gives up, and the group, with both
 * changes, is rolled back.  Staged by the group's state; false when A's
 * group aged (G5) before B joined it, so A committed alone. */
static bool bounded_wait(void)
{
    char dir[64];
    cn_meta_t *m = fresh(dir, 300, true);
    job_t a = { .m = m, .key = "a" }, b = { .m = m, .key = "b", .hold_us = 900000 };
    cn_meta_txn_t *hold = hold_writer(m, &a);
    stage(m, &b, 0, 1); /* B waits for a turn */
    cn_meta_rollback(hold);
    while (!atomic_load(&b.in_body))
        sleep_us(1000);
    /* G6: a read while B's body holds the group does not wait for it. */
    int64_t t0 = cn_mono_ns();
    int a_read = present(m, "a");
    CN_CHECK(cn_mono_ns() - t0 < 500 * 1000000LL);
    pthread_join(a.th, NULL);
    pthread_join(b.th, NULL);
    bool joined = a.res != 0; /* 0: A's group aged and committed alone */
    if (joined) {
        CN_CHECK_EQ(a_read, 0);
        CN_CHECK_EQ(a.res, CN_E_DB_LOCKED);
        CN_CHECK(b.res < 0);
        CN_CHECK_EQ(present(m, "a"), 0);
        CN_CHECK_EQ(present(m, "b"), 0);
    }
    /* The writer is free again. */
    run_t c = { .key = "c", .kind = K_OK };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, member_body, &c), 1);
    CN_CHECK_EQ(present(m, "c"), 1);
    cn_meta_close(m);
    rmtree(dir);
    return joined;
}

static void test_bounded_wait_and_readers(void)
{
    staged(bounded_wait, "bounded_wait");
}

/* ---- combining: queued members (G7-G9) ----------------------------------------- */

/* Flagged B, C, D, F arrive while A holds the turn (A waits in its BEGIN
 * for the writer a plain transaction holds) and queue; A's thread runs
 * their bodies in A's group, each answered with its own result, a failing
 * and a discarding one rolled back alone (G2). */
static bool queued_answered(void)
{
    char dir[64];
    cn_meta_t *m = fresh(dir, 5000, false);
    const unsigned C = CN_META_RUN_COMBINE;
    job_t a = { .m = m, .key = "a", .ret = 1 };
    job_t b = { .m = m, .flags = C, .key = "b", .ret = 2 };
    job_t c = { .m = m, .flags = C, .key = "c", .ret = CN_E_CONFLICT };
    job_t d = { .m = m, .flags = C, .key = "d", .ret = 4, .discard = true };
    job_t f = { .m = m, .flags = C, .key = "f", .ret = 6 };
    cn_meta_txn_t *hold = hold_writer(m, &a);
    job_t *q[] = { &b, &c, &d, &f };
    for (unsigned i = 0; i < 4; i++)
        stage(m, q[i], i + 1, 0); /* queues in A's group */
    cn_meta_rollback(hold);
    pthread_join(a.th, NULL);
    bool staged = true;
    for (int i = 0; i < 4; i++) {
        pthread_join(q[i]->th, NULL);
        CN_CHECK_EQ(q[i]->calls, 1);
        staged = staged && q[i]->elsewhere; /* run by A's thread */
    }
    CN_CHECK_EQ(a.res, 1);
    CN_CHECK_EQ(b.res, 2);
    CN_CHECK_EQ(c.res, CN_E_CONFLICT);
    CN_CHECK_EQ(d.res, 4);
    CN_CHECK_EQ(f.res, 6);
    CN_CHECK(!a.elsewhere);
    CN_CHECK_EQ(present(m, "a") + present(m, "b") + present(m, "f"), 3);
    CN_CHECK_EQ(present(m, "c") + present(m, "d"), 0);
    cn_meta_close(m);
    rmtree(dir);
    return staged;
}

static void test_queued_members_answered(void)
{
    staged(queued_answered, "queued_answered");
}

/* G4 through queued members: A (discarding) runs queued B (discarding), C
 * and E (kept), then passes the turn to D, whose body outlasts A's wait for
 * the outcome: A gives up and the group is lost.  B ran before any kept
 * change, so its answer stands; C and E get the loss; nothing committed. */
static bool lost_group(void)
{
    char dir[64];
    cn_meta_t *m = fresh(dir, 300, true);
    const unsigned C = CN_META_RUN_COMBINE;
    _Atomic int gate = 0;
    job_t a = { .m = m, .ret = 1, .discard = true };
    job_t b = { .m = m, .flags = C, .ret = 5, .discard = true };
    job_t c = { .m = m, .flags = C, .key = "c", .ret = 1 };
    job_t e = { .m = m, .flags = C, .key = "e", .ret = 1 };
    job_t d = { .m = m, .key = "d", .gate = &gate, .ret = 1 };
    cn_meta_txn_t *hold = hold_writer(m, &a);
    job_t *q[] = { &b, &c, &e };
    for (unsigned i = 0; i < 3; i++)
        stage(m, q[i], i + 1, 0); /* queues in A's group */
    stage(m, &d, 3, 1);           /* not combining: waits for a turn */
    cn_meta_rollback(hold);
    pthread_join(a.th, NULL); /* gave up waiting for the outcome */
    atomic_store(&gate, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(q[i]->th, NULL);
    pthread_join(d.th, NULL);
    /* c answered 1: A's group aged (G5) and committed before D joined it. */
    bool staged = b.elsewhere && c.elsewhere && e.elsewhere && d.calls == 1 && c.res != 1;
    CN_CHECK_EQ(a.res, 1);
    CN_CHECK_EQ(b.res, 5);
    /* Staged or not, an answer of 1 is a committed row (G1, G4). */
    CN_CHECK_EQ(present(m, "c"), c.res == 1);
    CN_CHECK_EQ(present(m, "e"), e.res == 1);
    if (staged) {
        CN_CHECK_EQ(c.res, CN_E_DB_LOCKED);
        CN_CHECK_EQ(e.res, CN_E_DB_LOCKED);
        CN_CHECK(d.res < 0);
        CN_CHECK_EQ(present(m, "c") + present(m, "e") + present(m, "d"), 0);
    }
    cn_meta_close(m);
    rmtree(dir);
    return staged;
}

static void test_lost_group_reaches_queued(void)
{
    staged(lost_group, "lost_group");
}

/* G7: a queued member not taken within the busy timeout leaves the queue
 * with CN_E_DB_LOCKED while the holder's body still runs, and its body is
 * never run, not even once the turn is free. */
static void test_queued_member_times_out(void)
{
    char dir[64];
    cn_meta_t *m = fresh(dir, 300, true);
    _Atomic int gate = 0;
    job_t a = { .m = m, .key = "a", .gate = &gate, .ret = 1 };
    job_t b = { .m = m, .flags = CN_META_RUN_COMBINE, .key = "b", .ret = 2 };
    start_in_body(&a);
    stage(m, &b, 1, 0);
    pthread_join(b.th, NULL);
    CN_CHECK_EQ(b.res, CN_E_DB_LOCKED);
    atomic_store(&gate, 1);
    pthread_join(a.th, NULL);
    CN_CHECK_EQ(a.res, 1);
    CN_CHECK_EQ(b.calls, 0);
    CN_CHECK_EQ(present(m, "a"), 1);
    CN_CHECK_EQ(present(m, "b"), 0);
    cn_meta_close(m);
    rmtree(dir);
}

/* G8: A's body outlasts the group's age bound, so A commits alone and hands
 * the turn to the first queued member, B, which runs its own body in a new
 * group and then C's. */
static bool handed_turn(void)
{
    char dir[64];
    cn_meta_t *m = fresh(dir, 5000, true);
    _Atomic int gate = 0;
    job_t a = { .m = m, .key = "a", .gate = &gate, .hold_us = 10000, .ret = 1 };
    job_t b = { .m = m, .flags = CN_META_RUN_COMBINE, .key = "b", .ret = 2 };
    job_t c = { .m = m, .flags = CN_META_RUN_COMBINE, .key = "c", .ret = 3 };
    start_in_body(&a);
    stage(m, &b, 1, 0);
    stage(m, &c, 2, 0);
    atomic_store(&gate, 1);
    pthread_join(a.th, NULL);
    pthread_join(b.th, NULL);
    pthread_join(c.th, NULL);
    CN_CHECK_EQ(a.res, 1);
    CN_CHECK_EQ(b.res, 2);
    CN_CHECK_EQ(c.res, 3);
    CN_CHECK(!b.elsewhere); /* handed the turn: its own thread */
    CN_CHECK_EQ(present(m, "a") + present(m, "b") + present(m, "c"), 3);
    cn_meta_close(m);
    rmtree(dir);
    return c.elsewhere; /* run by B's thread */
}

static void test_queued_member_handed_turn(void)
{
    staged(handed_turn, "handed_turn");
}

/* ---- SIGKILL: no answered write lost ------------------------------------------ */

typedef struct {
    cn_meta_t *m;
    int fd; /* the pipe to the parent */
    int base;
} crash_worker_t;

static cn_err_t crash_body(cn_meta_txn_t *txn, void *ctx)
{
    const int *id = ctx;
    char key[24];
    snprintf(key, sizeof key, "c%d", *id);
    return cn_meta_execf(txn, "INSERT INTO g (k, v) VALUES (?, ?)", "si", key, (int64_t)*id);
}

static void *crash_worker(void *arg)
{
    crash_worker_t *w = arg;
    for (int id = w->base;; id++) {
        unsigned comb = w->base / 1000000 % 2 ? CN_META_RUN_COMBINE : 0;
        if (cn_meta_run(w->m, CN_META_RUN_WRITE | CN_META_RETRY | comb, crash_body, &id) < 0)
            _exit(3);
        /* Answered: tell the parent (a 4-byte write to a pipe is atomic). */
        if (write(w->fd, &id, sizeof id) != (ssize_t)sizeof id)
            _exit(4);
    }
    return NULL;
}

/* The child: 8 writers until killed. */
static void crash_child(const char *dir, int fd)
{
    cn_meta_opts_t o = { .busy_timeout_ms = 10000 };
    cn_meta_t *m = NULL;
    if (cn_meta_open(dir, &o, &m) < 0)
        _exit(2);
    enum {
        N = 8
    };
    pthread_t th[N];
    crash_worker_t w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (crash_worker_t){ m, fd, i * 1000000 };
        pthread_create(&th[i], NULL, crash_worker, &w[i]);
    }
    pause();
    _exit(0);
}

static cn_err_t crash_check_body(cn_meta_txn_t *txn, void *ctx)
{
    const int *id = ctx;
    cn_meta_stmt_t *st = NULL;
    char key[24];
    snprintf(key, sizeof key, "c%d", *id);
    CN_TRY(cn_meta_queryf(txn, &st, "SELECT v FROM g WHERE k = ?", "s", key));
    cn_err_t err = cn_meta_step(st);
    bool ok = err == CN_META_ROW && cn_meta_column_int64(st, 0) == *id;
    cn_meta_finish(st);
    return err < 0 ? err : ok;
}

static cn_err_t clear_body(cn_meta_txn_t *txn, void *ctx)
{
    (void)ctx;
    return cn_meta_exec(txn, "DELETE FROM g");
}

static void test_crash_loses_no_answered_write(void)
{
    char dir[] = "/tmp/cn-test-metagroup-XXXXXX";
    CN_CHECK(mkdtemp(dir) != NULL);
    cn_meta_t *m = open_dir(dir, 10000, false);
    CN_CHECK_EQ(create_table(m), 0);
    cn_meta_close(m);
    static int ids[200000];
    for (int round = 0; round < 3; round++) {
        int p[2];
        CN_CHECK_EQ(pipe(p), 0);
        pid_t pid = fork();
        CN_CHECK(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            crash_child(dir, p[1]);
        }
        close(p[1]);
        /* Read answers for a while, then kill mid-stream. */
        size_t n = 0;
        int64_t t0 = cn_mono_ns(), stop = (150 + 100 * round) * 1000000LL;
        while (cn_mono_ns() - t0 < stop && n < sizeof ids / sizeof ids[0]) {
            ssize_t r = read(p[0], &ids[n], sizeof ids[0]);
            if (r != (ssize_t)sizeof ids[0])
                break;
            n++;
        }
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        CN_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* Answers already in the pipe were given before the kill. */
        while (n < sizeof ids / sizeof ids[0] && read(p[0], &ids[n], sizeof ids[0]) == 4)
            n++;
        close(p[0]);
        m = open_dir(dir, 10000, false);
        int missing = 0;
        for (size_t i = 0; i < n; i++)
            if (cn_meta_run(m, CN_META_RUN_READ, crash_check_body, &ids[i]) != 1)
                missing++;
        printf("# round %d: %zu answered writes, %d missing after SIGKILL\n", round, n, missing);
        CN_CHECK(n > 0);
        CN_CHECK_EQ(missing, 0);
        /* The next round's child writes new keys: clear this round's. */
        CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, clear_body, NULL), 0);
        cn_meta_close(m);
    }
    rmtree(dir);
}

CN_TEST_MAIN(CN_TEST(test_each_member_by_its_own_result), CN_TEST(test_bounded_wait_and_readers),
             CN_TEST(test_queued_members_answered), CN_TEST(test_lost_group_reaches_queued),
             CN_TEST(test_queued_member_times_out), CN_TEST(test_queued_member_handed_turn),
             CN_TEST(test_crash_loses_no_answered_write), )
