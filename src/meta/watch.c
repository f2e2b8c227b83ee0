/* The watcher: how a node of a fleet learns, without a database read per
 * request, that another node changed what it caches, and which node runs a
 * single-runner job (docs/fleet.md, "Cache invalidation across nodes" and
 * "Job leases").
 *
 * On PostgreSQL, one dedicated libpq connection per cn_meta handle that
 * called cn_meta_watch_start, used by one thread only (the watcher's):
 *   - it LISTENs on CHANNEL; cn_meta_notify bumps its topic's row of
 *     cn_topics and sends a NOTIFY in the writer's own transaction, so both
 *     land with the commit, or neither;
 *   - it reads every topic's generation (one SELECT) when notified and at
 *     least every POLL_MS: the fallback that also covers a notice lost with
 *     a broken connection;
 *   - it holds the leases: session advisory locks (pg_try_advisory_lock),
 *     which last exactly as long as its session, so the server frees a
 *     killed node's leases when it sees the connection close;
 *   - it leaves a server that reports it no longer is what the URI's
 *     target_session_attrs asks for (a primary demoted or turned read-only:
 *     libpq checks only at connect), and connects again at the next round.
 *
 * Invariants:
 *  W1. The thread stores a read's generations before its synced_ms (release),
 *      and synced_ms is the monotonic time at which that read BEGAN: every
 *      commit made before synced_ms is in the generations stored.  Readers
 *      load synced_ms (acquire) before a generation.
 *  W2. cn_meta_topic_gen answers true only while synced_ms is younger than
 *      CN_META_TOPIC_FRESH_MS.  A cache that files a state under the value
 *      it read before its read transaction began, and serves it only while
 *      the same value comes back true, serves a state changed anywhere at
 *      most CN_META_TOPIC_FRESH_MS after the change committed: a read that
 *      began after the commit has stored the new generation.  A watcher that
 *      cannot read (cut off, or late) turns such caches off instead of
 *      letting them go stale.
 *  W3. A lease counts as held only while the connection that took it has
 *      answered a read within LEASE_FRESH_MS; when a read fails the
 *      connection is closed and every lease dropped before anything else.
 *      Two nodes can overlap only while the server has not yet noticed a
 *      dead holder's session (TCP keepalives, set on this session, bound it
 *      when the holder's machine is gone; a killed process's socket is
 *      closed at once).
 *
 * This file must never block a caller of cn_meta_topic_gen or cn_meta_lease
 * on the network, log a bound value, or run anything on SQLite.
 */
#include "pg_wait.h"
#include "watch.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "cairn/util.h"
#include "meta/sql/fleet.h"

#define POLL_MS 1000
#define NAME_MAX_LEN 32
#define TOPICS_MAX 16
#define LEASES_MAX 16
#define CHANNEL "cairn_topics"
/* W3's bound: a watcher late by this much (a loaded machine) stops its
 * node's jobs until it reads again. */
#define LEASE_FRESH_MS 3000
/* The leases' advisory lock class ('cair'); the two-key space is apart from
 * the one-key schema lock's (engine_pg.c). */
#define LEASE_CLASS 1667328370

typedef struct topic {
    char name[NAME_MAX_LEN + 1];
    _Atomic uint64_t gen;
} topic_t;

typedef struct lease {
    char name[NAME_MAX_LEN + 1];
    int32_t key;
    atomic_bool held;
} lease_t;

struct cn__meta_watch {
    char *uri;
    unsigned rt_ms; /* each wait for an answer, at most (engine_pg.c, invariant 12) */
    PGconn *pg;     /* the thread's alone once it runs */
    int want;       /* cn__meta_pg_want of pg, at its connect */
    pthread_t thread;
    bool running;
    int efd; /* wakes the thread: a new lease, or stop */
    atomic_bool stop;
    _Atomic int64_t synced_ms; /* W1; 0: never */
    bool down_logged;
    /* Topics are appended by the thread only; leases by cn_meta_lease under
     * mu.  Both lists only grow; a name is written before its count. */
    atomic_size_t ntopics;
    atomic_bool overflow; /* more topic rows than TOPICS_MAX */
    topic_t topics[TOPICS_MAX];
    pthread_mutex_t mu;
    atomic_size_t nleases;
    lease_t leases[LEASES_MAX];
    /* cn_meta_watch_label: the session's application_name (under mu), set
     * on the connection by the thread at its next round when dirty. */
    char label[96];
    bool label_dirty;
    /* cn_meta_topic_sync: tickets asked, and the last asked before the
     * latest successful round began (under mu, signalled on cv). */
    pthread_cond_t cv;
    uint64_t asked, done;
};

static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;

static bool is_pg(cn_meta_t *meta)
{
    return strcmp(cn_meta_engine(meta), "postgres") == 0;
}

static bool name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '.' || s[i] == '-'))
            return false;
    return true;
}

static cn__meta_watch_t *watch_of(cn_meta_t *meta)
{
    cn__meta_db_t *db = NULL;
    return atomic_load_explicit(cn__meta_watch_slot(meta, &db), memory_order_acquire);
}

static void wake(cn__meta_watch_t *w)
{
    uint64_t one = 1;
    if (write(w->efd, &one, sizeof one) < 0)
        (void)0; /* the thread reads again within POLL_MS anyway */
}

/* ---- the thread's connection ----------------------------------------------------- */

static bool pg_ok(const cn__meta_watch_t *w, const char *sql)
{
    PGresult *r = cn__pg_exec(w->pg, sql, w->rt_ms);
    ExecStatusType s = PQresultStatus(r);
    PQclear(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* W3: every lease goes with the connection. */
static void drop_conn(cn__meta_watch_t *w, const char *why)
{
    size_t n = atomic_load(&w->nleases);
    for (size_t i = 0; i < n; i++)
        if (atomic_exchange(&w->leases[i].held, false))
            cn_warn("meta", "lease %s lost (%s)", w->leases[i].name, why);
    if (w->pg && !w->down_logged) {
        cn_warn("meta", "watcher: %s; caches keyed on topics are off until it reads again", why);
        w->down_logged = true;
    }
    PQfinish(w->pg);
    w->pg = NULL;
}

static bool connect_pg(cn__meta_watch_t *w)
{
    /* connect_timeout after the URI overrides its own: the watcher retries
     * every POLL_MS rather than wait long on one attempt. */
    const char *const kw[] = { "dbname", "connect_timeout", "tcp_user_timeout", "application_name",
                               NULL };
    const char *const val[] = { w->uri, "3", CN__META_PG_USER_TIMEOUT_MS, CN_META_WATCH_APP, NULL };
    w->pg = PQconnectdbParams(kw, val, 1);
    if (!w->pg || PQstatus(w->pg) != CONNECTION_OK) {
        if (!w->down_logged)
            cn_warn("meta", "watcher: cannot connect: %s",
                    w->pg ? PQerrorMessage(w->pg) : "out of memory");
        w->down_logged = true;
        PQfinish(w->pg);
        w->pg = NULL;
        return false;
    }
    PQsetNoticeProcessor(w->pg, quiet, NULL);
    w->want = cn__meta_pg_want(w->pg);
    pthread_mutex_lock(&w->mu);
    w->label_dirty = w->label[0] != 0; /* a new session: label it again */
    pthread_mutex_unlock(&w->mu);
    /* A holder whose machine vanished or was cut off loses its leases when
     * the server gives its session up (about 9 s; ignored on unix sockets,
     * where the kernel closes a dead process's socket at once): by the
     * keepalives while nothing waits for the holder's acknowledgement, by
     * the user timeout while a NOTIFY does (keepalives are not sent then,
     * and the kernel would retry for many minutes). */
    pg_ok(w, CN__META_PG_SERVER_TCP);
    if (!pg_ok(w, "LISTEN " CHANNEL)) {
        drop_conn(w, "LISTEN failed");
        return false;
    }
    if (w->down_logged)
        cn_info("meta", "watcher: connected");
    w->down_logged = false;
    return true;
}

static topic_t *topic_find(cn__meta_watch_t *w, const char *name, size_t len)
{
    size_t n = atomic_load_explicit(&w->ntopics, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (strlen(w->topics[i].name) == len && !memcmp(w->topics[i].name, name, len))
            return &w->topics[i];
    return NULL;
}

/* One read of every topic's generation (W1: the caller stores synced_ms). */
static bool read_topics(cn__meta_watch_t *w)
{
    PGresult *r = cn__pg_exec(w->pg, cn__sql_fleet[CN_SQL_FLEET_TOPIC_LIST], w->rt_ms);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQnfields(r) == 2;
    for (int i = 0; ok && i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        size_t len = (size_t)PQgetlength(r, i, 0);
        uint64_t gen = strtoull(PQgetvalue(r, i, 1), NULL, 10);
        topic_t *t = topic_find(w, name, len);
        size_t n = atomic_load(&w->ntopics);
        if (!t && (len > NAME_MAX_LEN || n == TOPICS_MAX)) {
            atomic_store(&w->overflow, true);
            continue;
        }
        if (!t) {
            t = &w->topics[n];
            memcpy(t->name, name, len);
            t->name[len] = '\0';
            atomic_store(&t->gen, gen);
            atomic_store_explicit(&w->ntopics, n + 1, memory_order_release);
        }
        atomic_store_explicit(&t->gen, gen, memory_order_release);
    }
    PQclear(r);
    return ok;
}

/* Tries each free lease once; false when the connection failed. */
static bool take_leases(cn__meta_watch_t *w)
{
    size_t n = atomic_load_explicit(&w->nleases, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        lease_t *l = &w->leases[i];
        if (atomic_load(&l->held))
            continue;
        char sql[96];
        snprintf(sql, sizeof sql, "SELECT pg_try_advisory_lock(%d, %d)", LEASE_CLASS, (int)l->key);
        PGresult *r = cn__pg_exec(w->pg, sql, w->rt_ms);
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        bool got = ok && !strcmp(PQgetvalue(r, 0, 0), "t");
        PQclear(r);
        if (!ok)
            return false;
        if (got) {
            atomic_store(&l->held, true);
            cn_info("meta", "lease %s taken: this node runs it", l->name);
        }
    }
    return true;
}

/* Names the session after its node when asked (cn_meta_watch_label);
 * false when the connection failed. */
static bool set_label(cn__meta_watch_t *w)
{
    char sql[160] = "";
    pthread_mutex_lock(&w->mu);
    if (w->label_dirty)
        snprintf(sql, sizeof sql, "SET application_name = '%s'", w->label);
    w->label_dirty = false;
    pthread_mutex_unlock(&w->mu);
    return !sql[0] || pg_ok(w, sql);
}

/* One round: connect if needed, read the topics, try the free leases. */
static void round_once(cn__meta_watch_t *w)
{
    if (!w->pg && !connect_pg(w))
        return;
    if (!set_label(w)) {
        drop_conn(w, "a read failed");
        return;
    }
    int64_t began = cn_mono_ms();
    pthread_mutex_lock(&w->mu);
    uint64_t serving = w->asked;
    pthread_mutex_unlock(&w->mu);
    /* Notices queued so far are answered by this read. */
    PQconsumeInput(w->pg);
    for (PGnotify *nt; (nt = PQnotifies(w->pg));)
        PQfreemem(nt);
    bool read = read_topics(w);
    /* A server that reported (by this read at the latest) it is no longer
     * what target_session_attrs asked for: its topics are not the primary's
     * and its leases are left (the next round's connect walks the hosts). */
    if (read && cn__meta_pg_off_target(w->pg, w->want)) {
        drop_conn(w, "the server is no longer a primary");
        return;
    }
    if (!read || !take_leases(w)) {
        drop_conn(w, PQstatus(w->pg) == CONNECTION_OK ? "a read failed" : "connection lost");
        return;
    }
    atomic_store_explicit(&w->synced_ms, began, memory_order_release);
    pthread_mutex_lock(&w->mu);
    w->done = serving;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Waits up to ms for a notice, a wake-up or the socket to close; true when
 * a notice came (read again at once). */
static bool wait_notice(cn__meta_watch_t *w, int ms)
{
    struct pollfd p[2] = { { .fd = w->efd, .events = POLLIN },
                           { .fd = w->pg ? PQsocket(w->pg) : -1, .events = POLLIN } };
    if (poll(p, 2, ms < 0 ? 0 : ms) <= 0)
        return false;
    if (p[0].revents & POLLIN) {
        uint64_t v;
        if (read(w->efd, &v, sizeof v) < 0)
            (void)0; /* a lost wake-up costs one poll period */
        return true;
    }
    if (!w->pg || !p[1].revents)
        return false;
    if (!PQconsumeInput(w->pg))
        return true; /* broken: the next round finds out and drops it */
    PGnotify *nt = PQnotifies(w->pg);
    bool any = nt != NULL;
    for (; nt; nt = PQnotifies(w->pg))
        PQfreemem(nt);
    return any;
}

static void *watch_main(void *arg)
{
    cn__meta_watch_t *w = arg;
    int64_t next = cn_mono_ms() + POLL_MS;
    while (!atomic_load(&w->stop)) {
        int64_t now = cn_mono_ms();
        bool told = now < next && wait_notice(w, (int)(next - now));
        if (atomic_load(&w->stop))
            break;
        if (!told && cn_mono_ms() < next)
            continue;
        /* A period measured from the start of each read keeps synced_ms
         * within about POLL_MS of now (W2). */
        next = cn_mono_ms() + POLL_MS;
        round_once(w);
    }
    return NULL;
}

/* ---- the handle ------------------------------------------------------------------ */

void cn__meta_watch_free(cn__meta_watch_t *w)
{
    if (!w)
        return;
    if (w->running) {
        atomic_store(&w->stop, true);
        wake(w);
        pthread_join(w->thread, NULL);
    }
    PQfinish(w->pg); /* the server frees every lease of the session */
    if (w->efd >= 0)
        close(w->efd);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->uri);
    free(w);
}

static cn_err_t watch_new(const cn__meta_db_t *db, cn__meta_watch_t **out)
{
    cn__meta_watch_t *w = calloc(1, sizeof *w);
    if (!w || !(w->uri = strdup(cn__meta_pg_uri(db)))) {
        free(w);
        return -ENOMEM;
    }
    w->rt_ms = cn__meta_pg_round_trip_ms(db);
    pthread_mutex_init(&w->mu, NULL);
    cn_cond_init_mono(&w->cv);
    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->efd < 0) {
        cn_err_t e = -errno;
        cn__meta_watch_free(w);
        return e;
    }
    /* The first round here, so a cache works from the start. */
    round_once(w);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, watch_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        cn__meta_watch_free(w);
        return -rc;
    }
    w->running = true;
    *out = w;
    return 0;
}

cn_err_t cn_meta_notify_init(cn_meta_t *meta)
{
    return is_pg(meta) ? cn__sql_migrate(meta, &cn__sql_fleet_set) : 0;
}

cn_err_t cn_meta_watch_start(cn_meta_t *meta)
{
    if (!is_pg(meta))
        return 0;
    /* The table it reads, before its first read. */
    CN_TRY(cn_meta_notify_init(meta));
    cn__meta_db_t *db = NULL;
    cn__meta_watch_t *_Atomic *slot = cn__meta_watch_slot(meta, &db);
    pthread_mutex_lock(&start_mu);
    cn_err_t e = 0;
    if (!atomic_load(slot)) {
        cn__meta_watch_t *w = NULL;
        e = watch_new(db, &w);
        if (e >= 0)
            atomic_store_explicit(slot, w, memory_order_release);
    }
    pthread_mutex_unlock(&start_mu);
    return e;
}

static bool fresh(cn__meta_watch_t *w, int64_t bound_ms)
{
    int64_t s = atomic_load_explicit(&w->synced_ms, memory_order_acquire);
    return s && cn_mono_ms() - s < bound_ms;
}

bool cn_meta_topic_gen(cn_meta_t *meta, const char *topic, uint64_t *gen)
{
    *gen = 0;
    if (!is_pg(meta))
        return true;
    cn__meta_watch_t *w = watch_of(meta);
    if (!w || !topic || !fresh(w, CN_META_TOPIC_FRESH_MS))
        return false;
    topic_t *t = topic_find(w, topic, strlen(topic));
    if (t)
        *gen = atomic_load_explicit(&t->gen, memory_order_acquire);
    /* Absent: never bumped (0), unless it did not fit in the list. */
    return t || !atomic_load(&w->overflow);
}

/* FNV-1a of job: the lock's key within LEASE_CLASS. */
static int32_t job_key(const char *job)
{
    uint32_t h = 2166136261u;
    for (const char *p = job; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return (int32_t)(h & 0x7fffffff);
}

bool cn_meta_lease(cn_meta_t *meta, const char *job)
{
    if (!is_pg(meta))
        return true;
    cn__meta_watch_t *w = watch_of(meta);
    if (!w || !name_ok(job))
        return false;
    size_t n = atomic_load_explicit(&w->nleases, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(w->leases[i].name, job))
            return atomic_load(&w->leases[i].held) && fresh(w, LEASE_FRESH_MS);
    pthread_mutex_lock(&w->mu);
    n = atomic_load(&w->nleases);
    bool known = false;
    for (size_t i = 0; i < n && !known; i++)
        known = !strcmp(w->leases[i].name, job);
    if (!known && n < LEASES_MAX) {
        lease_t *l = &w->leases[n];
        snprintf(l->name, sizeof l->name, "%s", job);
        l->key = job_key(job);
        atomic_store_explicit(&w->nleases, n + 1, memory_order_release);
        wake(w);
    }
    pthread_mutex_unlock(&w->mu);
    return false;
}

void cn_meta_topic_sync(cn_meta_t *meta, unsigned timeout_ms)
{
    cn__meta_watch_t *w = is_pg(meta) ? watch_of(meta) : NULL;
    if (!w)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (int64_t)(timeout_ms % 1000) * 1000000;
    ts.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_mutex_lock(&w->mu);
    uint64_t ticket = ++w->asked;
    pthread_mutex_unlock(&w->mu);
    wake(w);
    pthread_mutex_lock(&w->mu);
    while (w->done < ticket && pthread_cond_timedwait(&w->cv, &w->mu, &ts) == 0)
        ;
    pthread_mutex_unlock(&w->mu);
}

/* ---- notices --------------------------------------------------------------------- */

cn_err_t cn_meta_notify(cn_meta_t *meta, cn_meta_txn_t *txn, const char *topic)
{
    if (!name_ok(topic))
        return CN_E_INVALID;
    if (!is_pg(meta))
        return 0;
    cn_err_t e = cn_meta_execf(txn, cn__sql_fleet[CN_SQL_FLEET_TOPIC_BUMP], "s", topic);
    if (e >= 0)
        e = cn_meta_execf(txn, "SELECT pg_notify('" CHANNEL "', ?)", "s", topic);
    return e < 0 ? e : 0;
}

/* ---- who holds the leases (cairn admin fleet status) -------------------------------- */

void cn_meta_watch_label(cn_meta_t *meta, const char *node)
{
    cn__meta_watch_t *w = is_pg(meta) ? watch_of(meta) : NULL;
    size_t n = node ? strlen(node) : 0;
    if (!w || n == 0 || n > 64)
        return;
    for (size_t i = 0; i < n; i++) /* embedded in SET's text: a node id's characters only */
        if (!((node[i] >= 'a' && node[i] <= 'z') || (node[i] >= 'A' && node[i] <= 'Z') ||
              (node[i] >= '0' && node[i] <= '9') || strchr("._-", node[i])))
            return;
    pthread_mutex_lock(&w->mu);
    snprintf(w->label, sizeof w->label, CN_META_WATCH_APP "/%s", node);
    w->label_dirty = true;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

typedef struct holders {
    const char *const *jobs;
    size_t n;
    cn_meta_lease_fn fn;
    void *arg;
} holders_t;

/* The advisory leases: one row per granted lock of the class, matched to
 * the job names by key (a key no job asked about is not reported). */
static cn_err_t advisory_body(cn_meta_txn_t *txn, void *ctx)
{
    holders_t *h = ctx;
    bool seen[LEASES_MAX] = { false };
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(
        txn, &st,
        "SELECT l.objid::BIGINT, a.application_name, l.pid FROM pg_locks l"
        " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
        " AND l.objsubid = 2 AND l.classid::BIGINT = ? ORDER BY l.objid",
        "i", (int64_t)LEASE_CLASS);
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        int64_t key = cn_meta_column_int64(st, 0);
        for (size_t i = 0; i < h->n && e >= 0; i++) {
            if (seen[i] || job_key(h->jobs[i]) != key)
                continue;
            seen[i] = true;
            cn_meta_lease_info_t li = { h->jobs[i], cn_meta_column_text(st, 1, NULL),
                                        cn_meta_column_int64(st, 2), 0 };
            e = h->fn(h->arg, &li);
        }
    }
    cn_meta_finish(st);
    for (size_t i = 0; i < h->n && e >= 0; i++)
        if (!seen[i])
            e = h->fn(h->arg, &(cn_meta_lease_info_t){ h->jobs[i], NULL, 0, 0 });
    return e < 0 ? e : 0;
}

/* The lifecycle worker's lease row (objects schema step 4): bucket 0 of
 * obj_lifecycle, its holder in cursor until pass_ms. */
static cn_err_t lifecycle_body(cn_meta_txn_t *txn, void *ctx)
{
    holders_t *h = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(
        txn, &st, "SELECT cursor, pass_ms FROM obj_lifecycle WHERE bucket_id = 0", "");
    if (e >= 0)
        e = cn_meta_step(st);
    cn_meta_lease_info_t li = { "lifecycle", NULL, 0, 0 };
    char holder[96] = "";
    if (e == CN_META_ROW && cn_meta_column_int64(st, 1) > cn_wall_ms()) {
        size_t len = 0;
        const void *p = cn_meta_column_blob(st, 0, &len);
        snprintf(holder, sizeof holder, "%.*s", (int)(len < 95 ? len : 95),
                 p ? (const char *)p : "");
        li.holder = holder;
        li.expires_ms = cn_meta_column_int64(st, 1);
    }
    cn_meta_finish(st);
    if (e >= 0)
        e = h->fn(h->arg, &li);
    return e < 0 ? e : 0;
}

cn_err_t cn_meta_lease_holders(cn_meta_t *meta, const char *const *jobs, size_t n,
                               cn_meta_lease_fn fn, void *arg)
{
    if (!is_pg(meta))
        return CN_E_UNSUPPORTED;
    if (n > LEASES_MAX)
        return CN_E_INVALID;
    for (size_t i = 0; i < n; i++)
        if (!name_ok(jobs[i]))
            return CN_E_INVALID;
    holders_t h = { jobs, n, fn, arg };
    CN_TRY(cn_meta_run(meta, CN_META_RUN_READ, advisory_body, &h));
    /* Its own transaction: a database the objects service never migrated
     * has no such table (a prepare error), and then no lifecycle lease. */
    cn_err_t e = cn_meta_run(meta, CN_META_RUN_READ, lifecycle_body, &h);
    return e == CN_E_INVALID ? fn(arg, &(cn_meta_lease_info_t){ "lifecycle", NULL, 0, 0 }) : e;
}
