/* meta core: the writer pool (the writer slot on a single-writer engine),
 * the reader pool, group commit, the statement cache and the
 * failed-transaction rule, over an engine (engine.h).
 *
 * Commit invariants (write transactions):
 *  1. A write transaction runs on a writer connection it holds alone from
 *     begin to end, taken from the writer pool.  On a single-writer engine
 *     (SQLite: the database has one write lock) the pool holds ONE
 *     connection, so its one place is the writer slot and write
 *     transactions run one at a time, as the engine would make them anyway.
 *     Elsewhere (PostgreSQL) the pool holds up to MAX_WRITERS connections
 *     (fewer if max_readers is lower), opened when first needed, and write
 *     transactions run at once on them: the server's row locks and
 *     SERIALIZABLE isolation decide between them exactly as between two
 *     nodes' (engine_pg.c, invariant 4).  Each connection keeps its own
 *     statement cache, and its engine state (a lost COMMIT is resolved on
 *     the connection that sent it).  A thread still holds at most one write
 *     transaction (cairn/meta.h): with one writer its second begin waits
 *     for itself, with a pool it may wait on its own row locks; both end
 *     in CN_E_DB_LOCKED after the busy timeout.
 *  2. After the engine's COMMIT returns, the commit gets a sequence number
 *     (written) before its connection goes back to the pool.  With one
 *     writer, sequence order is log order.
 *  3. The connection is released BEFORE the commit is made durable: the
 *     next writer appends its frames while this one waits for the sync.
 *     That is what lets one sync cover many commits.
 *  4. A sync started when written == S makes every commit <= S durable (all
 *     of them returned from COMMIT before it started, and engine.h's sync
 *     covers every commit returned); the syncer then sets synced = S.  A
 *     committer returns only once synced >= its sequence number; if a sync
 *     fails, each waiter retries.
 * Consequence: another transaction may read a commit a moment before it is
 * durable, never before it is written; a crash in that window loses only
 * commits that were never acknowledged to their callers.
 */
#include "cairn/meta.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cairn/metrics.h"
#include "cairn/util.h"
#include "engine.h"
#include "watch.h"

#define STMT_CACHE_MAX 64
#define DEFAULT_BUSY_MS 5000
#define DEFAULT_READERS 32
/* Writer connections on an engine that is not single-writer.  Not as many
 * as readers: concurrent object writes into one bucket still fail to
 * serialize now and then (SERIALIZABLE's predicate locks are per index page,
 * and new keys of one bucket land on the same pages) and are run again.
 * Measured (4 KiB PUTs into one bucket, one node on PostgreSQL), when every
 * write also updated two shared rows (the version counter, the bucket's
 * generation row; gone since): 4 writers answered up to 1.7x the requests of
 * one at 1.3-2 repeats per request; 8 no more than 4 at 2.5-3.5 repeats; 32,
 * fewer than 4 at 5-11 repeats.  Without them: 0.5-0.75 repeats at 4
 * (bench/fleet.py --part commit). */
#define MAX_WRITERS 4
/* A pooled PostgreSQL connection idle this long is closed (pool P1) unless
 * cn_meta_opts_t says otherwise. */
#define DEFAULT_CONN_IDLE_MS 60000u
#define REAP_EVERY_NS 1000000000LL
#define GROW_BACKOFF_NS 1000000000LL

typedef struct conn {
    cn__meta_conn_t *ec;
    cn_meta_stmt_t *cache[STMT_CACHE_MAX];
    size_t ncache;
    uint64_t tick;
    bool writer;        /* a writer pool's connection */
    int64_t idle_since; /* cn_mono_ns() when last given back */
    struct conn *next_idle;
} conn_t;

/* A pool of connections of one kind, opened when first needed, each handed
 * to one transaction at a time; a take waits for one at most the busy
 * timeout, then fails `full`.  Pool invariants (a server's connection slots
 * are shared by every node, docs/fleet.md "Connections"):
 *  P1. The idle list is last in, first out, so its tail holds the
 *      connections idle longest; past idle_ns (0: never, a single-writer
 *      engine's file handles) they are closed, all but the first, when a
 *      connection is given back at most once a second, so a pool shrinks
 *      back after a burst and the slots it held are free for other nodes.
 *  P2. A connection that cannot be opened while others of the pool are open
 *      (the server is out of slots: "too many clients") is not the take's
 *      error: the take waits for one of those, and the pool grows no more
 *      for GROW_BACKOFF_NS.  With none open, the open's error is returned. */
typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn_t *idle;
    unsigned open; /* connections opened, or being opened */
    unsigned max;
    unsigned out; /* connections handed out now */
    bool writer;
    cn_err_t full;
    int64_t idle_ns;         /* P1 */
    _Atomic int64_t reap_at; /* P1: cn_mono_ns() of the next look (read unlocked) */
    int64_t grow_after;      /* P2: cn_mono_ns() before which no new connection */
} pool_t;

struct cn_meta_stmt {
    conn_t *conn;
    cn_meta_txn_t *txn;
    cn__meta_raw_t *raw;
    char *sql; /* owned copy, cache key; NULL if uncached */
    /* The caller's pointer to the text this statement last matched: a hint
     * only, always confirmed against sql (a freed buffer's address may come
     * back with another text). */
    const char *hint;
    uint64_t last_use;
    bool in_use;
    cn_meta_stmt_t *prev, *next; /* the txn's open statements */
};

struct cn_meta_txn {
    cn_meta_t *m;
    conn_t *conn;
    cn_meta_mode_t mode;
    cn_err_t err; /* first statement error; the txn is failed */
    cn_meta_stmt_t *open;
    bool discard;        /* cn_meta_discard: a run rolls it back, not commits it */
    bool member;         /* a group member's savepoint in the writer's transaction */
    int64_t t0;          /* cn_mono_ns() at begin; 0 once its duration is recorded */
    unsigned statements; /* begun so far (counted in READ_ONE mode) */
    bool one_more;       /* a READ_ONE body began a second: cn__meta_one_more */
};

struct cn_meta {
    const cn__meta_engine_t *eng;
    cn__meta_db_t *db;
    cn_meta_opts_t opts;

    /* Invariant 1.  A connection is handed out, not a mutex held, so a
     * transaction may end on a different thread than the one that began it. */
    pool_t writers, readers;
    conn_t *gconn; /* the group's writer (group.c; the slot's holder owns it) */

    pthread_mutex_t sync_mu;
    pthread_cond_t sync_cv;
    uint64_t written, synced;
    bool syncing;

    cn__meta_group_t *group;         /* group.c's state; NULL: no group commit */
    cn__meta_watch_t *_Atomic watch; /* watch.c's; NULL until started */
};

static const char failed_msg[] = "transaction already failed; roll it back";

/* ---- connections ---------------------------------------------------------- */

static void conn_close(const cn__meta_engine_t *eng, conn_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ncache; i++) {
        eng->finalize(c->cache[i]->raw);
        free(c->cache[i]->sql);
        free(c->cache[i]);
    }
    eng->conn_close(c->ec);
    free(c);
}

static cn_err_t conn_open(cn_meta_t *m, bool writer, conn_t **out)
{
    conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    cn_err_t e = m->eng->conn_open(m->db, writer, &c->ec);
    if (e < 0) {
        free(c);
        return e;
    }
    c->writer = writer;
    *out = c;
    return 0;
}

void cn__meta_deadline_ns(struct timespec *ts, int64_t ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ns += ts->tv_nsec;
    ts->tv_sec += (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

static void pool_init(pool_t *p, bool writer, unsigned max, cn_err_t full)
{
    pthread_mutex_init(&p->mu, NULL);
    cn_cond_init_mono(&p->cv);
    p->writer = writer;
    p->max = max;
    p->full = full;
}

/* Closes p's connections; every one must be back (cn_meta_close). */
static void pool_fini(const cn__meta_engine_t *eng, pool_t *p)
{
    assert(p->out == 0);
    while (p->idle) {
        conn_t *c = p->idle;
        p->idle = c->next_idle;
        conn_close(eng, c);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}

/* An idle connection of p, or a new one while fewer than p->max are open
 * (P2), else waits for one at most the busy timeout (then p->full). */
static cn_err_t pool_take(cn_meta_t *m, pool_t *p, conn_t **out)
{
    struct timespec dl;
    cn__meta_deadline_ns(&dl, m->opts.busy_timeout_ms * 1000000LL);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->idle) {
            *out = p->idle;
            p->idle = p->idle->next_idle;
            p->out++;
            pthread_mutex_unlock(&p->mu);
            return 0;
        }
        if (p->open < p->max && (!p->grow_after || cn_mono_ns() >= p->grow_after)) {
            p->open++;
            p->out++;
            pthread_mutex_unlock(&p->mu);
            cn_err_t e = conn_open(m, p->writer, out);
            if (e >= 0)
                return e;
            pthread_mutex_lock(&p->mu);
            p->open--;
            p->out--;
            pthread_cond_signal(&p->cv);
            if (!p->open) {
                pthread_mutex_unlock(&p->mu);
                return e;
            }
            p->grow_after = cn_mono_ns() + GROW_BACKOFF_NS; /* P2 */
        }
        /* Backing off (P2): woken to grow again once it is over. */
        struct timespec until = dl;
        int64_t dl_ns = (int64_t)dl.tv_sec * 1000000000 + dl.tv_nsec;
        bool backoff = p->open < p->max && p->grow_after && p->grow_after < dl_ns;
        if (backoff)
            until = (struct timespec){ (time_t)(p->grow_after / 1000000000),
                                       (long)(p->grow_after % 1000000000) };
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT && !p->idle && !backoff) {
            pthread_mutex_unlock(&p->mu);
            return p->full;
        }
    }
}

/* P1: closes the connections of p idle past p->idle_ns but its first, when
 * the last look was a second ago or more. */
static void pool_reap(cn_meta_t *m, pool_t *p, int64_t now)
{
    if (!p->idle_ns || now < atomic_load(&p->reap_at))
        return; /* the common give: no lock taken for the look */
    conn_t *gone = NULL;
    pthread_mutex_lock(&p->mu);
    if (now >= atomic_load(&p->reap_at)) {
        atomic_store(&p->reap_at, now + REAP_EVERY_NS);
        conn_t **at = p->idle ? &p->idle->next_idle : NULL;
        while (at && *at && now - (*at)->idle_since <= p->idle_ns)
            at = &(*at)->next_idle;
        for (; at && *at; p->open--) {
            conn_t *c = *at;
            *at = c->next_idle;
            c->next_idle = gone;
            gone = c;
        }
    }
    pthread_mutex_unlock(&p->mu);
    while (gone) {
        conn_t *next = gone->next_idle;
        conn_close(m->eng, gone);
        gone = next;
    }
}

/* Gives c back to p, and looks for idle connections to close in both pools
 * (P1: a node's periodic writes give one back every few seconds, so an idle
 * node's readers are closed too). */
static void pool_give(cn_meta_t *m, pool_t *p, conn_t *c)
{
    int64_t now = cn_mono_ns();
    pthread_mutex_lock(&p->mu);
    assert(p->out > 0 && c->writer == p->writer); /* given back once, to its pool */
    p->out--;
    c->idle_since = now;
    c->next_idle = p->idle;
    p->idle = c;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pool_reap(m, &m->writers, now);
    pool_reap(m, &m->readers, now);
}

#ifndef NDEBUG
/* Some writer connection is handed out (the pool does not record to whom). */
static bool writer_held(cn_meta_t *m)
{
    pthread_mutex_lock(&m->writers.mu);
    bool held = m->writers.out > 0;
    pthread_mutex_unlock(&m->writers.mu);
    return held;
}
#endif

/* ---- open / close ----------------------------------------------------------- */

static bool is_pg_url(const char *spec)
{
    return strncmp(spec, "postgres://", 11) == 0 || strncmp(spec, "postgresql://", 13) == 0;
}

static cn_err_t target_path(const char *spec, const cn_meta_opts_t *o, char **out)
{
    if (!spec || !*spec)
        return CN_E_INVALID;
    if (is_pg_url(spec)) {
        *out = strdup(spec); /* libpq parses the URI */
        return *out ? 0 : -ENOMEM;
    }
    struct stat st;
    if (strncmp(spec, "sqlite:", 7) == 0) {
        const char *p = spec + 7;
        if (!*p)
            return CN_E_INVALID;
        if (o->must_exist && stat(p, &st) != 0)
            return CN_E_NOT_FOUND;
        *out = strdup(p);
        return *out ? 0 : -ENOMEM;
    }
    if (o->must_exist) {
        if (stat(spec, &st) != 0 || !S_ISDIR(st.st_mode))
            return CN_E_NOT_FOUND;
    } else {
        CN_TRY(cn_mkdir_p(spec, 0700));
    }
    size_t n = strlen(spec);
    char *p = malloc(n + sizeof "/meta.db");
    if (!p)
        return -ENOMEM;
    memcpy(p, spec, n);
    memcpy(p + n, "/meta.db", sizeof "/meta.db");
    if (o->must_exist && stat(p, &st) != 0) {
        free(p);
        return CN_E_NOT_FOUND;
    }
    *out = p;
    return 0;
}

static cn_err_t fsync_parent(char *path)
{
    char *slash = strrchr(path, '/');
    if (!slash)
        return cn_fsync_dir(".");
    if (slash == path)
        return cn_fsync_dir("/");
    *slash = '\0';
    cn_err_t e = cn_fsync_dir(path);
    *slash = '/';
    return e;
}

static const char schema_sql[] = "CREATE TABLE IF NOT EXISTS cn_schema ("
                                 " component TEXT PRIMARY KEY,"
                                 " version BIGINT NOT NULL,"
                                 " updated_at BIGINT NOT NULL)";

cn_err_t cn_meta_open(const char *spec, const cn_meta_opts_t *opts, cn_meta_t **out)
{
    cn_meta_opts_t o = opts ? *opts : (cn_meta_opts_t){ 0 };
    if (!o.busy_timeout_ms)
        o.busy_timeout_ms = DEFAULT_BUSY_MS;
    if (!o.max_readers)
        o.max_readers = DEFAULT_READERS;

    char *path = NULL;
    cn_err_t e = target_path(spec, &o, &path);
    if (e < 0)
        return e;

    cn_meta_t *m = calloc(1, sizeof *m);
    if (!m) {
        free(path);
        return -ENOMEM;
    }
    bool pg = is_pg_url(spec);
    m->eng = pg ? &cn__meta_engine_pg : &cn__meta_engine_sqlite;
    m->opts = o;
    /* Invariant 1: the writer slot, or a pool of MAX_WRITERS (no more than
     * readers). */
    unsigned nwriters = m->eng->single_writer ? 1 : o.max_readers;
    if (nwriters > MAX_WRITERS)
        nwriters = MAX_WRITERS;
    pool_init(&m->writers, true, nwriters, CN_E_DB_LOCKED);
    pool_init(&m->readers, false, o.max_readers, CN_E_BUSY);
    if (!m->eng->single_writer) { /* P1 */
        unsigned idle_ms = o.conn_idle_ms ? o.conn_idle_ms : DEFAULT_CONN_IDLE_MS;
        int64_t ns = idle_ms == CN_META_IDLE_UNBOUNDED ? 0 : idle_ms * 1000000LL;
        m->writers.idle_ns = m->readers.idle_ns = ns;
    }
    pthread_mutex_init(&m->sync_mu, NULL);
    pthread_cond_init(&m->sync_cv, NULL);

    e = m->eng->db_open(path, &m->opts, &m->db);
    if (e < 0)
        goto fail;
    if (cn__meta_can_group(m) && !o.no_group && (e = cn__meta_group_new(&m->group)) < 0)
        goto fail;

    cn_meta_txn_t *t = NULL;
    e = cn__meta_begin_schema(m, &t);
    if (e < 0)
        goto fail;
    e = cn__meta_exec_ddl(t, schema_sql);
    if (e < 0) {
        cn_meta_rollback(t);
        goto fail;
    }
    e = cn_meta_commit(t);
    if (e < 0)
        goto fail;
    /* The database file's own directory entry (new on first start). */
    e = pg ? 0 : fsync_parent(path);
    if (e < 0)
        goto fail;
    free(path);
    *out = m;
    return 0;
fail:
    free(path);
    cn_meta_close(m);
    return e;
}

void cn_meta_close(cn_meta_t *m)
{
    if (!m)
        return;
    cn__meta_watch_free(m->watch); /* its thread and its own connection */
    pool_fini(m->eng, &m->readers);
    pool_fini(m->eng, &m->writers);
    cn__meta_group_free(m->group);
    if (m->db)
        m->eng->db_close(m->db);
    pthread_mutex_destroy(&m->sync_mu);
    pthread_cond_destroy(&m->sync_cv);
    free(m);
}

const char *cn_meta_engine(const cn_meta_t *m)
{
    return m->eng->name;
}

bool cn_meta_single_writer(const cn_meta_t *m)
{
    return m->eng->single_writer;
}

cn__meta_watch_t *_Atomic *cn__meta_watch_slot(cn_meta_t *m, cn__meta_db_t **db)
{
    *db = m->db;
    return &m->watch;
}

/* ---- transactions ------------------------------------------------------------ */

/* A transaction's duration, begin (the wait for a connection included) to
 * its end (a write commit's group sync included). */
static void txn_observe(cn_meta_mode_t mode, int64_t t0)
{
    static const cn_metric_family_t fam = {
        "cairn_meta_transaction_duration_seconds",
        "Metadata transactions from begin to commit or rollback, by kind.",
        CN_METRIC_HISTOGRAM,
        cn_metric_bounds_seconds,
        14,
    };
    static _Atomic(cn_metric_t *) rd, wr;
    if (mode == CN_META_WRITE)
        cn_metric_observe_ns(cn_metric_cached(&wr, &fam, "kind=\"write\""), cn_mono_ns() - t0);
    else
        cn_metric_observe_ns(cn_metric_cached(&rd, &fam, "kind=\"read\""), cn_mono_ns() - t0);
}

static cn_err_t begin(cn_meta_t *m, cn_meta_mode_t mode, bool schema, cn_meta_txn_t **out);

cn_err_t cn_meta_begin(cn_meta_t *m, cn_meta_mode_t mode, cn_meta_txn_t **out)
{
    return begin(m, mode, false, out);
}

cn_err_t cn__meta_begin_schema(cn_meta_t *m, cn_meta_txn_t **out)
{
    return begin(m, CN_META_WRITE, m->eng->begin_schema != NULL, out);
}

static cn_err_t begin(cn_meta_t *m, cn_meta_mode_t mode, bool schema, cn_meta_txn_t **out)
{
    cn_meta_txn_t *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->m = m;
    t->mode = mode;
    t->t0 = cn_mono_ns();
    pool_t *p = mode == CN_META_WRITE ? &m->writers : &m->readers;
    cn_err_t e = pool_take(m, p, &t->conn);
    if (e < 0) {
        free(t);
        return e;
    }
    e = schema ? m->eng->begin_schema(t->conn->ec) : m->eng->begin(t->conn->ec, mode);
    if (e < 0) {
        pool_give(m, p, t->conn);
        free(t);
        return e;
    }
    *out = t;
    return 0;
}

static void finish_open(cn_meta_txn_t *t)
{
    while (t->open)
        cn_meta_finish(t->open);
}

static void txn_release(cn_meta_txn_t *t)
{
    if (t->t0)
        txn_observe(t->mode, t->t0);
    if (!t->member) /* the group's transaction and slot outlive the member */
        pool_give(t->m, t->mode == CN_META_WRITE ? &t->m->writers : &t->m->readers, t->conn);
    free(t);
}

/* Waits until commit seq is durable, syncing on behalf of the group when no
 * other thread is. */
static cn_err_t group_sync(cn_meta_t *m, uint64_t seq)
{
    cn_err_t e = 0;
    pthread_mutex_lock(&m->sync_mu);
    while (m->synced < seq) {
        if (m->syncing) {
            pthread_cond_wait(&m->sync_cv, &m->sync_mu);
            continue;
        }
        m->syncing = true;
        uint64_t target = m->written;
        pthread_mutex_unlock(&m->sync_mu);
        e = m->eng->sync(m->db);
        pthread_mutex_lock(&m->sync_mu);
        m->syncing = false;
        if (e == 0 && target > m->synced)
            m->synced = target;
        assert(m->synced <= m->written); /* invariant 4: only written commits are synced */
        pthread_cond_broadcast(&m->sync_cv);
        if (m->group) { /* a group waiting for this sync may commit (group.c) */
            pthread_mutex_unlock(&m->sync_mu);
            cn__meta_group_synced(m->group);
            pthread_mutex_lock(&m->sync_mu);
        }
        if (e < 0)
            break;
    }
    pthread_mutex_unlock(&m->sync_mu);
    return e;
}

void cn_meta_discard(cn_meta_txn_t *t)
{
    t->discard = true;
}

bool cn_meta_discarded(const cn_meta_txn_t *t)
{
    return t->discard;
}

static cn_err_t commit(cn_meta_txn_t *t, bool wait);

cn_err_t cn_meta_commit(cn_meta_txn_t *t)
{
    return commit(t, true);
}

cn_err_t cn_meta_commit_nowait(cn_meta_txn_t *t)
{
    return commit(t, false);
}

static cn_err_t commit(cn_meta_txn_t *t, bool wait)
{
    if (!t)
        return CN_E_INVALID;
    cn_meta_t *m = t->m;
    assert(!t->member); /* a body never commits (R1); group.c ends members */
    finish_open(t);
    if (t->err < 0) {
        cn_err_t e = t->err;
        m->eng->rollback(t->conn->ec);
        txn_release(t);
        return e;
    }
    assert(t->conn->writer == (t->mode == CN_META_WRITE)); /* invariant 1 */
    cn_err_t e = m->eng->commit(t->conn->ec);
    if (t->mode != CN_META_WRITE || e < 0) {
        txn_release(t);
        return e;
    }
    /* Invariant 2: the sequence number is taken while the connection is held. */
    assert(writer_held(m));
    pthread_mutex_lock(&m->sync_mu);
    uint64_t seq = ++m->written;
    pthread_mutex_unlock(&m->sync_mu);
    int64_t t0 = t->t0;
    t->t0 = 0; /* recorded below, with the sync */
    txn_release(t);
    /* Not waiting leaves the frames to the next sync: any later durable
     * commit covers them (invariant 4 numbers commits in WAL order). */
    e = m->opts.no_sync || !wait ? 0 : group_sync(m, seq);
    txn_observe(CN_META_WRITE, t0);
    return e;
}

void cn_meta_rollback(cn_meta_txn_t *t)
{
    if (!t)
        return;
    assert(!t->member);
    finish_open(t);
    t->m->eng->rollback(t->conn->ec);
    txn_release(t);
}

static cn_err_t txn_fail(cn_meta_txn_t *t, cn_err_t e)
{
    if (e < 0 && t->err == 0)
        t->err = e;
    return e;
}

/* A READ_ONE transaction has no snapshot beyond its one statement: a
 * second fails the transaction (CN_E_DB), and cn_meta_run starts the body
 * over as a plain read (cn__meta_one_more). */
static cn_err_t count_statement(cn_meta_txn_t *t)
{
    if (t->mode != CN_META_READ_ONE || t->statements++ == 0)
        return 0;
    t->one_more = true;
    return txn_fail(t, CN_E_DB);
}

bool cn__meta_one_more(const cn_meta_txn_t *t)
{
    return t->one_more;
}

cn_err_t cn_meta_exec(cn_meta_txn_t *t, const char *sql)
{
    if (t->err < 0)
        return CN_E_CONFLICT;
    CN_TRY(count_statement(t));
    return txn_fail(t, t->m->eng->exec(t->conn->ec, sql));
}

cn_err_t cn__meta_exec_ddl(cn_meta_txn_t *t, const char *sql)
{
    if (!t->m->eng->translate_ddl)
        return cn_meta_exec(t, sql);
    char *own = t->m->eng->translate_ddl(sql);
    if (!own)
        return txn_fail(t, -ENOMEM);
    cn_err_t e = cn_meta_exec(t, own);
    free(own);
    return e;
}

int64_t cn_meta_changes(const cn_meta_txn_t *t)
{
    return t->m->eng->changes(t->conn->ec);
}

const char *cn_meta_errmsg(const cn_meta_txn_t *t)
{
    if (t->err == CN_E_CONFLICT)
        return failed_msg;
    return t->m->eng->errmsg(t->conn->ec);
}

/* ---- the writer's transaction in parts, for group.c ------------------------------ */

bool cn__meta_can_group(const cn_meta_t *m)
{
    /* One transaction for the members needs the one writer (invariant 1). */
    return m->eng->single_writer && m->eng->savepoint && m->eng->release && m->eng->rollback_to &&
           m->eng->in_txn;
}

cn__meta_group_t *cn__meta_group_of(cn_meta_t *m)
{
    return m->group;
}

cn_err_t cn__meta_wbegin(cn_meta_t *m)
{
    conn_t *c = NULL;
    CN_TRY(pool_take(m, &m->writers, &c));
    cn_err_t e = m->eng->begin(c->ec, CN_META_WRITE);
    if (e < 0)
        pool_give(m, &m->writers, c);
    else
        m->gconn = c;
    return e;
}

/* The group's writer, handed back to the pool (the group ended). */
static void group_give(cn_meta_t *m)
{
    conn_t *c = m->gconn;
    m->gconn = NULL;
    pool_give(m, &m->writers, c);
}

cn_err_t cn__meta_member_begin(cn_meta_t *m, cn_meta_txn_t **out)
{
    assert(m->gconn && writer_held(m)); /* invariant 1: members run inside the slot */
    cn_meta_txn_t *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->m = m;
    t->mode = CN_META_WRITE;
    t->member = true;
    t->conn = m->gconn;
    t->t0 = cn_mono_ns();
    cn_err_t e = m->eng->savepoint(t->conn->ec);
    if (e < 0) {
        free(t);
        return e;
    }
    *out = t;
    return 0;
}

cn_err_t cn__meta_member_end(cn_meta_txn_t *t, cn_err_t *res, bool *kept)
{
    cn_meta_t *m = t->m;
    finish_open(t);
    /* As commit(): a statement error the body swallowed is still its result. */
    if (*res >= 0 && t->err < 0)
        *res = t->err;
    bool keep = *res >= 0 && !t->discard;
    *kept = keep;
    const cn__meta_engine_t *eng = m->eng;
    cn_err_t e = keep ? eng->release(t->conn->ec) : eng->rollback_to(t->conn->ec);
    if (e >= 0 && !eng->in_txn(t->conn->ec))
        e = CN_E_DB; /* the engine rolled the whole transaction back */
    txn_release(t);
    return e;
}

cn_err_t cn__meta_wcommit(cn_meta_t *m, uint64_t *seq)
{
    assert(m->gconn && writer_held(m));
    cn_err_t e = m->eng->commit(m->gconn->ec);
    /* Invariant 2: numbered while the slot is held. */
    pthread_mutex_lock(&m->sync_mu);
    *seq = e < 0 ? 0 : ++m->written;
    pthread_mutex_unlock(&m->sync_mu);
    group_give(m);
    return e;
}

void cn__meta_wrollback(cn_meta_t *m)
{
    m->eng->rollback(m->gconn->ec);
    group_give(m);
}

bool cn__meta_syncing(cn_meta_t *m)
{
    pthread_mutex_lock(&m->sync_mu);
    bool busy = m->syncing;
    pthread_mutex_unlock(&m->sync_mu);
    return busy && !m->opts.no_sync;
}

cn_err_t cn__meta_durable(cn_meta_t *m, uint64_t seq)
{
    return m->opts.no_sync ? 0 : group_sync(m, seq);
}

/* ---- statements ---------------------------------------------------------------- */

static void stmt_link(cn_meta_txn_t *t, cn_meta_stmt_t *s)
{
    s->txn = t;
    s->in_use = true;
    s->prev = NULL;
    s->next = t->open;
    if (t->open)
        t->open->prev = s;
    t->open = s;
}

cn_err_t cn_meta_prepare(cn_meta_txn_t *t, const char *sql, cn_meta_stmt_t **out)
{
    if (t->err < 0)
        return CN_E_CONFLICT;
    CN_TRY(count_statement(t));
    conn_t *c = t->conn;
    /* Callers pass their SQL as constant strings: a cached statement is
     * found by the caller's pointer first, one string compare to confirm,
     * instead of a compare against every cached text (a PUT prepares about
     * ten statements on a connection caching dozens, many sharing their
     * first words). */
    cn_meta_stmt_t *hit = NULL;
    for (size_t i = 0; i < c->ncache && !hit; i++) {
        cn_meta_stmt_t *s = c->cache[i];
        if (s->hint == sql && !s->in_use && strcmp(s->sql, sql) == 0)
            hit = s;
    }
    for (size_t i = 0; i < c->ncache && !hit; i++) {
        cn_meta_stmt_t *s = c->cache[i];
        if (!s->in_use && strcmp(s->sql, sql) == 0)
            hit = s;
    }
    if (hit) {
        hit->hint = sql;
        hit->last_use = ++c->tick;
        stmt_link(t, hit);
        *out = hit;
        return 0;
    }
    cn_meta_stmt_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->conn = c;
    cn_err_t e = t->m->eng->prepare(c->ec, sql, &s->raw);
    if (e < 0) {
        free(s);
        return txn_fail(t, e);
    }
    /* Cache it: in a free slot, else in place of the least recently used
     * idle statement; if every cached one is in use it stays uncached. */
    size_t slot = c->ncache;
    if (slot == STMT_CACHE_MAX) {
        uint64_t best = UINT64_MAX;
        for (size_t i = 0; i < c->ncache; i++)
            if (!c->cache[i]->in_use && c->cache[i]->last_use < best) {
                best = c->cache[i]->last_use;
                slot = i;
            }
    }
    if (slot < STMT_CACHE_MAX && (s->sql = strdup(sql)) != NULL) {
        s->hint = sql;
        if (slot < c->ncache) {
            t->m->eng->finalize(c->cache[slot]->raw);
            free(c->cache[slot]->sql);
            free(c->cache[slot]);
        } else {
            c->ncache++;
        }
        c->cache[slot] = s;
    }
    s->last_use = ++c->tick;
    stmt_link(t, s);
    *out = s;
    return 0;
}

void cn_meta_finish(cn_meta_stmt_t *s)
{
    if (!s || !s->in_use)
        return;
    cn_meta_txn_t *t = s->txn;
    const cn__meta_engine_t *eng = t->m->eng;
    if (s->prev)
        s->prev->next = s->next;
    else
        t->open = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    s->txn = NULL;
    s->in_use = false;
    if (s->sql) {
        eng->reset(s->raw);
    } else {
        eng->finalize(s->raw);
        free(s);
    }
}

void cn_meta_reset(cn_meta_stmt_t *s)
{
    s->txn->m->eng->reset(s->raw);
}

/* Bind errors are the caller's mistake (a bad index); they do not fail the txn. */
static cn_err_t bind_check(cn_err_t e)
{
    return e < 0 ? e : 0;
}

cn_err_t cn_meta_bind_int64(cn_meta_stmt_t *s, int idx, int64_t v)
{
    return bind_check(s->txn->m->eng->bind_int64(s->raw, idx, v));
}

cn_err_t cn_meta_bind_text(cn_meta_stmt_t *s, int idx, const char *p, size_t len)
{
    if (!p)
        return cn_meta_bind_null(s, idx);
    return bind_check(s->txn->m->eng->bind_text(s->raw, idx, p, len));
}

cn_err_t cn_meta_bind_str(cn_meta_stmt_t *s, int idx, const char *p)
{
    return cn_meta_bind_text(s, idx, p, p ? strlen(p) : 0);
}

cn_err_t cn_meta_bind_blob(cn_meta_stmt_t *s, int idx, const void *p, size_t len)
{
    return bind_check(s->txn->m->eng->bind_blob(s->raw, idx, p, len));
}

cn_err_t cn_meta_bind_null(cn_meta_stmt_t *s, int idx)
{
    return bind_check(s->txn->m->eng->bind_null(s->raw, idx));
}

cn_err_t cn__meta_bind_list(cn_meta_stmt_t *s, int idx, const void *p, size_t width, size_t n)
{
    return bind_check(s->txn->m->eng->bind_list(s->raw, idx, p, width, n));
}

const cn__meta_engine_t *cn__meta_txn_engine(const cn_meta_txn_t *t)
{
    return t->m->eng;
}

cn_err_t cn_meta_step(cn_meta_stmt_t *s)
{
    cn_meta_txn_t *t = s->txn;
    if (t->err < 0)
        return CN_E_CONFLICT;
    return txn_fail(t, t->m->eng->step(s->raw));
}

cn_err_t cn_meta_push(cn_meta_stmt_t *s)
{
    cn_meta_txn_t *t = s->txn;
    if (t->err < 0)
        return CN_E_CONFLICT;
    if (!t->m->eng->push)
        return cn_meta_step(s);
    return txn_fail(t, t->m->eng->push(s->raw));
}

cn_err_t cn_meta_flush(cn_meta_txn_t *t)
{
    if (t->err < 0)
        return t->err;
    return t->m->eng->flush ? txn_fail(t, t->m->eng->flush(t->conn->ec)) : 0;
}

bool cn_meta_column_is_null(cn_meta_stmt_t *s, int col)
{
    return s->txn->m->eng->column_is_null(s->raw, col);
}

int64_t cn_meta_column_int64(cn_meta_stmt_t *s, int col)
{
    return s->txn->m->eng->column_int64(s->raw, col);
}

const char *cn_meta_column_text(cn_meta_stmt_t *s, int col, size_t *len)
{
    return s->txn->m->eng->column_text(s->raw, col, len);
}

const void *cn_meta_column_blob(cn_meta_stmt_t *s, int col, size_t *len)
{
    return s->txn->m->eng->column_blob(s->raw, col, len);
}

int cn_meta_column_count(cn_meta_stmt_t *s)
{
    return s->txn->m->eng->column_count(s->raw);
}

unsigned cn_meta_busy_timeout_ms(const cn_meta_t *meta)
{
    return meta->opts.busy_timeout_ms;
}
