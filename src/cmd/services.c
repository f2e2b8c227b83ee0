/* Where cairnd opens and closes the services every adapter shares: the
 * metadata engine, the store, identity (with the first administrator) and
 * the objects service, in that order, closed in reverse.
 *
 * Environment: JAY_MAX_OBJECT_SIZE (bytes; the object/part size limit of
 * every object face), CAIRN_UPLOAD_EXPIRY_SECONDS (unfinished multipart
 * uploads expire this long after creation; default 7 days),
 * CAIRN_RATE_LIMIT ("RATE[,BURST]" requests per second per token, shared by
 * every face; unset = off), CAIRN_SWEEP_INTERVAL_SECONDS (how often the
 * maintenance thread sweeps unreferenced blobs; default
 * 600), CAIRN_SWEEP_GRACE_SECONDS (a blob younger than this is never swept;
 * default 3600), CAIRN_BLOB_DEADLINE_MS (the S3 blob tier's retry deadline
 * per backend request; default 30000, docs/fleet.md), CAIRN_RELAY_IDLE_MS
 * (how long the tier's relay of a blob too big for its cache waits for its
 * reader; default 10000),
 * CAIRN_UPLOAD_SWEEP_SECONDS (how often expired uploads are aborted;
 * default 600).  On PostgreSQL the sweep and the upload expiry are leased
 * jobs: one node of the fleet runs each (docs/fleet.md "Job leases"). */
#include "cairnd.h"
#include "cairn/util.h"
#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/identity.h"
#include "cairn/objects.h"
#include "cairn/blobs.h"
#include "cairn/repos.h"

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const cn_services_sections[] = { "store", "objects", "meta", NULL };

/* [store] direct_io (bool, default true): large staged files bypass the
 * page cache (docs/store.md, "Write path"). */
static cn_err_t store_direct_key(const cn_toml_val_t *kv, cn_store_opts_t *so)
{
    bool on;
    if (cn_toml_bool(kv, &on) < 0) {
        cn_error("cairnd", "--config: line %d: direct_io must be true or false", cn_toml_line(kv));
        return CN_E_INVALID;
    }
    so->page_cache_writes = !on;
    return CN_OK;
}

/* [store]: pack_max_bytes (default CN_STORE_PACK_DEFAULT_MAX, 64 KiB; 0 = new
 * blobs as files, packs on disk still served), pack_compact_live_percent
 * (compaction threshold, 1..100), pack_zero_ahead (bytes, 0..1 GiB; default
 * CN_STORE_PACK_ZERO_AHEAD): docs/store.md, "Pack files"; min_free_bytes
 * (bytes, 0 = none; default 1 % of the file system, 8..256 MiB): "Free
 * space"; direct_io
 * (store_direct_key).  Test switch: CAIRN_TEST_PACK_MAX, when set, is the
 * default pack_max_bytes (the config still wins), so that a test directory
 * can run with packs forced on. */
static cn_err_t store_config(const cn_toml_t *config, cn_store_opts_t *so)
{
    static const struct {
        const char *key;
        int64_t lo, hi;
    } ints[] = { { "pack_max_bytes", 0, 256 * 1024 },
                 { "pack_compact_live_percent", 1, 100 },
                 { "pack_zero_ahead", 0, 1 << 30 },
                 { "min_free_bytes", 0, INT64_MAX } };
    const cn_toml_val_t *tab = config ? cn_toml_get(cn_toml_root(config), "store") : NULL;
    const char *tp = getenv("CAIRN_TEST_PACK_MAX");
    if (tp && *tp)
        so->pack_max_bytes = strtoull(tp, NULL, 10);
    for (size_t k = 0; tab && k < cn_toml_len(tab); k++) {
        const cn_toml_val_t *kv = cn_toml_at(tab, k);
        const char *key = cn_toml_key(kv);
        if (!strcmp(key, "direct_io")) {
            CN_TRY(store_direct_key(kv, so));
            continue;
        }
        size_t i = 0;
        while (i < sizeof ints / sizeof ints[0] && strcmp(key, ints[i].key) != 0)
            i++;
        if (i == sizeof ints / sizeof ints[0]) {
            cn_error("cairnd", "--config: line %d: unknown key '%s' in [store]", cn_toml_line(kv),
                     key);
            return CN_E_INVALID;
        }
        int64_t v = -1;
        if (cn_toml_int(kv, &v) < 0 || v < ints[i].lo || v > ints[i].hi) {
            cn_error("cairnd", "--config: line %d: %s must be an integer from %lld to %lld",
                     cn_toml_line(kv), key, (long long)ints[i].lo, (long long)ints[i].hi);
            return CN_E_INVALID;
        }
        if (i == 0)
            so->pack_max_bytes = (uint64_t)v;
        else if (i == 1)
            so->pack_compact_pct = (unsigned)v;
        else if (i == 2)
            so->pack_zero_ahead = (uint64_t)v;
        else
            so->min_free_bytes = (uint64_t)v;
    }
    return CN_OK;
}

/* A lifecycle setting: seconds, or with an s, m or h suffix (dur), else a
 * plain count; 1 .. 10^9 of them. */
static cn_err_t lc_value(const char *what, const char *v, bool dur, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long n = v ? strtoll(v, &end, 10) : -1;
    int64_t mul = 1;
    if (dur && end && *end && !end[1])
        mul = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 : 0;
    bool ok = v && end != v && errno == 0 && n >= 1 && n <= 1000000000 && mul &&
              (!*end || (dur && !end[1]));
    if (!ok) {
        cn_error("cairnd", "%s wants %s from 1, not '%s'", what,
                 dur ? "seconds (or with s, m or h)" : "an integer", v ? v : "");
        return CN_E_INVALID;
    }
    *out = (int64_t)n * mul;
    return CN_OK;
}

/* [section] key of config as text (an integer or a string), or NULL. */
static const char *config_text(const cn_toml_t *config, const char *section, const char *key,
                               char *buf, size_t cap)
{
    const cn_toml_val_t *tab = config ? cn_toml_get(cn_toml_root(config), section) : NULL;
    const cn_toml_val_t *v = tab ? cn_toml_get(tab, key) : NULL;
    int64_t n = 0;
    if (!v)
        return NULL;
    if (cn_toml_int(v, &n) >= 0) {
        snprintf(buf, cap, "%lld", (long long)n);
        return buf;
    }
    const char *s = cn_toml_str(v);
    return s ? s : "";
}

/* [objects] holds the lifecycle keys only. */
static cn_err_t lc_config_keys(const cn_toml_t *config)
{
    const cn_toml_val_t *tab = config ? cn_toml_get(cn_toml_root(config), "objects") : NULL;
    for (size_t k = 0; tab && k < cn_toml_len(tab); k++) {
        const cn_toml_val_t *kv = cn_toml_at(tab, k);
        const char *key = cn_toml_key(kv);
        if (strcmp(key, "lifecycle_interval") && strcmp(key, "lifecycle_max_ops") &&
            strcmp(key, "lifecycle_day_seconds")) {
            cn_error("cairnd", "--config: line %d: unknown key '%s' in [objects]", cn_toml_line(kv),
                     key);
            return CN_E_INVALID;
        }
    }
    return CN_OK;
}

/* The lifecycle worker's settings from flags over config's [objects] into
 * *lo (interval_ms, max_ops, day_ms); a bad value or key is logged:
 * CN_E_INVALID. */
static cn_err_t lc_settings(const cn_toml_t *config, const cn_services_lc_flags_t *flags,
                            cn_objects_lc_opts_t *lo)
{
    char b1[32], b2[32], b3[32];
    const cn_services_lc_flags_t f = {
        flags->interval ? flags->interval
                        : config_text(config, "objects", "lifecycle_interval", b1, 32),
        flags->max_ops ? flags->max_ops
                       : config_text(config, "objects", "lifecycle_max_ops", b2, 32),
        flags->day_seconds ? flags->day_seconds
                           : config_text(config, "objects", "lifecycle_day_seconds", b3, 32),
    };
    int64_t day_s = 0;
    cn_err_t e = lc_config_keys(config);
    if (e >= 0 && f.interval)
        e = lc_value("--lifecycle-interval", f.interval, true, &lo->interval_ms);
    if (e >= 0 && f.max_ops)
        e = lc_value("--lifecycle-max-ops", f.max_ops, false, &lo->max_ops);
    if (e >= 0 && f.day_seconds)
        e = lc_value("--lifecycle-day-seconds", f.day_seconds, false, &day_s);
    if (e < 0)
        return e;
    lo->interval_ms *= 1000;
    lo->day_ms = day_s * 1000;
    return CN_OK;
}

/* [meta] key of config in ms: 0 when absent, -1 for "0" when zero_off
 * (the key's "no bound"), else 1 .. max seconds. */
static cn_err_t meta_secs(const cn_toml_t *config, const char *key, int64_t max, bool zero_off,
                          int64_t *ms)
{
    char buf[32], what[64];
    const char *v = config_text(config, "meta", key, buf, sizeof buf);
    int64_t s = 0;
    *ms = 0;
    if (!v)
        return CN_OK;
    if (zero_off && strcmp(v, "0") == 0) {
        *ms = -1;
        return CN_OK;
    }
    snprintf(what, sizeof what, "[meta] %s", key);
    CN_TRY(lc_value(what, v, true, &s));
    if (s > max) {
        cn_error("cairnd", "%s is at most %lld s, not %lld", what, (long long)max, (long long)s);
        return CN_E_INVALID;
    }
    *ms = s * 1000;
    return CN_OK;
}

/* [meta] round_trip_timeout: seconds (or with s, m or h) that a PostgreSQL
 * server may take to answer before its connection is cut as lost
 * (docs/fleet.md, "PostgreSQL stops answering"; the engine's default,
 * 3 × the busy timeout, when absent).  [meta] idle_write_timeout: seconds a
 * write transaction may wait between statements before the server ends its
 * session (docs/fleet.md, "A node that hangs"; 60 s when absent, 0 = no
 * bound).  [meta] idle_connection_timeout: seconds a pooled connection
 * stays open unused (docs/fleet.md, "Connections"; 60 s when absent, 0 =
 * for ever).  SQLite has no use for any of them. */
static cn_err_t meta_config(const cn_toml_t *config, cn_meta_opts_t *mo)
{
    const cn_toml_val_t *tab = config ? cn_toml_get(cn_toml_root(config), "meta") : NULL;
    for (size_t k = 0; tab && k < cn_toml_len(tab); k++) {
        const cn_toml_val_t *kv = cn_toml_at(tab, k);
        if (strcmp(cn_toml_key(kv), "round_trip_timeout") != 0 &&
            strcmp(cn_toml_key(kv), "idle_write_timeout") != 0 &&
            strcmp(cn_toml_key(kv), "idle_connection_timeout") != 0) {
            cn_error("cairnd", "--config: line %d: unknown key '%s' in [meta]", cn_toml_line(kv),
                     cn_toml_key(kv));
            return CN_E_INVALID;
        }
    }
    int64_t ms = 0;
    CN_TRY(meta_secs(config, "round_trip_timeout", 3600, false, &ms));
    if (ms > 0)
        mo->round_trip_ms = (unsigned)ms;
    CN_TRY(meta_secs(config, "idle_write_timeout", 86400, true, &ms));
    if (ms != 0)
        mo->write_idle_ms = ms < 0 ? CN_META_IDLE_UNBOUNDED : (unsigned)ms;
    CN_TRY(meta_secs(config, "idle_connection_timeout", 86400, true, &ms));
    if (ms != 0)
        mo->conn_idle_ms = ms < 0 ? CN_META_IDLE_UNBOUNDED : (unsigned)ms;
    return CN_OK;
}

cn_err_t cn_services_config_check(const cn_toml_t *config, const cn_services_lc_flags_t *flags)
{
    cn_store_opts_t so = { 0 };
    cn_meta_opts_t mo = { 0 };
    cn_objects_lc_opts_t lo = { 0 };
    CN_TRY(store_config(config, &so));
    CN_TRY(meta_config(config, &mo));
    return lc_settings(config, flags, &lo);
}

cn_err_t cn_services_lifecycle_start(cn_services_t *svc, const cn_services_lc_flags_t *flags)
{
    cn_objects_lc_opts_t lo = { .holder = svc->data_dir, .node_id = svc->node_id };
    cn_err_t e = lc_settings(svc->config, flags, &lo);
    if (e < 0)
        return e;
    int64_t day_s = lo.day_ms / 1000;
    if (day_s)
        cn_warn("cairnd", "--lifecycle-day-seconds %lld: a lifecycle day is %lld s (tests only)",
                (long long)day_s, (long long)day_s);
    e = cn_objects_lifecycle_start(svc->objects, &lo);
    if (e < 0)
        cn_error("cairnd", "cannot start the lifecycle worker: %s", cn_strerror(e));
    return e;
}

/* The maintenance thread's state; lives inside cn_services_t's allocation. */
typedef struct {
    cn_services_t pub;
    pthread_t thread;
    bool running;
    bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t interval_ms;
    int64_t grace_ms;
    int64_t upload_ms; /* PostgreSQL: the upload expiry's period (below) */
} services_impl_t;

/* The blob sweep, which also reaps expired pin rows (cn_store_sweep). */
static void run_sweep(services_impl_t *si)
{
    cn_store_sweep_stats_t st = { 0 };
    cn_err_t e = cn_store_sweep(si->pub.store, si->grace_ms, &st);
    if (e < 0)
        cn_warn("cairnd", "blob sweep failed: %s", cn_strerror(e));
    else
        cn_debug("cairnd", "sweep: %llu blobs removed, %llu kept live, %llu pinned",
                 (unsigned long long)st.deleted, (unsigned long long)st.live,
                 (unsigned long long)st.pinned);
}

static void run_upload_expiry(services_impl_t *si)
{
    uint64_t removed = 0;
    cn_err_t e = cn_objects_sweep_uploads(si->pub.objects, 0, &removed);
    if (e < 0)
        cn_warn("cairnd", "upload sweep failed: %s", cn_strerror(e));
    else if (removed)
        cn_info("cairnd", "expired %llu unfinished multipart upload(s)",
                (unsigned long long)removed);
}

/* The usage totals' fold (docs/architecture.md, "Usage totals"): moves the
 * deltas PostgreSQL's writers append into the base rows, so a read sums a
 * bounded number of them.  Answers are exact with or without it. */
static void run_usage_fold(services_impl_t *si)
{
    cn_err_t e = si->pub.objects ? cn_objects_usage_fold(si->pub.objects) : 0;
    if (e >= 0 && si->pub.blobs)
        e = cn_blobs_usage_fold(si->pub.blobs);
    if (e >= 0 && si->pub.store)
        e = cn_store_usage_fold(si->pub.store);
    if (e < 0)
        cn_warn("cairnd", "usage fold failed: %s", cn_strerror(e));
}

#define USAGE_FOLD_MS 10000 /* the fold's period */

/* A single-runner job on PostgreSQL: run only while this node holds its
 * lease (cn_meta_lease, docs/fleet.md "Job leases"), every every_ms, and at
 * once when the lease was just taken (the node that had it may have died
 * before its turn; each job is safe to run again). */
typedef struct job {
    const char *lease;
    int64_t every_ms;
    void (*run)(services_impl_t *si);
    int64_t next_ms; /* monotonic */
    bool held;
} job_t;

#define LEASE_TICK_MS 1000 /* how often a node asks for its jobs' leases */

static void job_tick(services_impl_t *si, job_t *j)
{
    bool held = cn_meta_lease(si->pub.meta, j->lease);
    if (held != j->held)
        cn_info("cairnd", "job %s: %s this node", j->lease, held ? "runs on" : "no longer runs on");
    int64_t now = cn_mono_ms();
    if (held && (!j->held || now >= j->next_ms)) {
        j->next_ms = now + j->every_ms;
        j->run(si);
    }
    j->held = held;
}

/* Sweeps blobs nothing references every interval until cn_services_close
 * asks it to stop (the objects service expires unfinished uploads on its
 * own thread).  On PostgreSQL it wakes every LEASE_TICK_MS and runs the
 * sweep and the upload expiry as leased jobs: one node of the fleet each. */
static void *maintenance_main(void *arg)
{
    services_impl_t *si = arg;
    bool fleet = !strcmp(cn_meta_engine(si->pub.meta), "postgres");
    job_t jobs[] = { { "blob-sweep", si->interval_ms, run_sweep, 0, false },
                     { "upload-expiry", si->upload_ms, run_upload_expiry, 0, false },
                     { "usage-fold", USAGE_FOLD_MS, run_usage_fold, 0, false } };
    int64_t wait_ms = fleet ? LEASE_TICK_MS : si->interval_ms;
    pthread_mutex_lock(&si->mu);
    while (!si->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (wait_ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(wait_ms / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&si->cv, &si->mu, &ts);
        if (si->stop)
            break;
        pthread_mutex_unlock(&si->mu);
        for (size_t i = 0; fleet && i < sizeof jobs / sizeof jobs[0]; i++)
            job_tick(si, &jobs[i]);
        /* The store's gauges follow the other nodes' puts and removals too
         * (this node's own set them at once: src/store/usage.c). */
        uint64_t sb, sy;
        if (fleet && si->pub.store)
            (void)cn_store_usage(si->pub.store, &sb, &sy);
        if (!fleet)
            run_sweep(si);
        pthread_mutex_lock(&si->mu);
    }
    pthread_mutex_unlock(&si->mu);
    return NULL;
}

static cn_err_t env_u64(const char *name, uint64_t *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x == 0) {
        cn_error("cairnd", "%s: want a positive integer, got '%s'", name, v);
        return CN_E_INVALID;
    }
    *out = x;
    return 0;
}

static cn_err_t env_rate(cn_identity_t *id)
{
    const char *v = getenv("CAIRN_RATE_LIMIT");
    if (!v || !*v)
        return 0;
    char *end = NULL;
    double rate = strtod(v, &end), burst = rate;
    if (end && *end == ',')
        burst = strtod(end + 1, &end);
    if (!end || *end || rate < 0 || burst < 0) {
        cn_error("cairnd", "CAIRN_RATE_LIMIT: want RATE[,BURST], got '%s'", v);
        return CN_E_INVALID;
    }
    cn_identity_set_rate(id, rate, burst < 1 ? 1 : burst);
    return 0;
}

cn_err_t cn_services_open(const char *data_dir, const char *meta, const char *identity_key,
                          const char *const *identity_prev, const cn_toml_t *config,
                          const struct cn_store_tier *tier, cn_services_t **out)
{
    *out = NULL;
    struct stat st;
    bool existed = stat(data_dir, &st) == 0;
    if (existed && !S_ISDIR(st.st_mode)) {
        cn_error("cairnd", "data directory %s exists and is not a directory", data_dir);
        return -ENOTDIR;
    }
    cn_err_t e = existed ? CN_OK : cn_mkdir_p(data_dir, 0700);
    if (e < 0) {
        cn_error("cairnd", "cannot create data directory %s: %s", data_dir, cn_strerror(e));
        return e;
    }
    if (!existed)
        cn_info("cairnd", "created data directory %s", data_dir);
    else if (st.st_mode & 077)
        cn_warn("cairnd", "data directory %s is accessible to other users (mode %03o)", data_dir,
                (unsigned)(st.st_mode & 0777));
    services_impl_t *si = calloc(1, sizeof *si);
    cn_services_t *svc = si ? &si->pub : NULL;
    if (!svc || !(svc->data_dir = strdup(data_dir))) {
        free(si);
        return -ENOMEM;
    }
    pthread_mutex_init(&si->mu, NULL);
    pthread_cond_init(&si->cv, NULL);
    svc->config = config;
    const char *what = "metadata";
    cn__spacer_release_if_full(data_dir);
    cn_meta_opts_t mo = { 0 };
    e = meta_config(config, &mo);
    if (e >= 0)
        e = cn_meta_open(meta ? meta : data_dir, &mo, &svc->meta);
    /* PostgreSQL: the node's watcher (cache topics, job leases). */
    if (e >= 0)
        e = cn_meta_watch_start(svc->meta);
    if (e >= 0) {
        what = "store";
        cn_store_opts_t so = { .meta = svc->meta,
                               .pack_max_bytes = CN_STORE_PACK_DEFAULT_MAX,
                               .pack_zero_ahead = CN_STORE_PACK_ZERO_AHEAD,
                               .min_free_bytes = CN_STORE_MIN_FREE_AUTO };
        uint64_t deadline = 0;
        if (tier)
            so.tier = *tier;
        /* CAIRN_BLOB_DEADLINE_MS: the blob tier's retry deadline (30 s);
         * CAIRN_RELAY_IDLE_MS: how long a relay waits for its reader (10 s). */
        uint64_t relay_idle = 0;
        e = env_u64("CAIRN_BLOB_DEADLINE_MS", &deadline);
        if (e >= 0)
            e = env_u64("CAIRN_RELAY_IDLE_MS", &relay_idle);
        so.tier.deadline_ms = (int64_t)(deadline < INT32_MAX ? deadline : INT32_MAX);
        so.tier.relay_idle_ms = (int64_t)(relay_idle < INT32_MAX ? relay_idle : INT32_MAX);
        if (e >= 0)
            e = store_config(config, &so);
        if (e >= 0)
            e = cn_store_open(data_dir, &so, &svc->store);
    }
    if (e >= 0) {
        what = "identity";
        const cn_identity_opts_t io = { .data_dir = data_dir,
                                        .key_file = identity_key,
                                        .prev_files = identity_prev };
        e = cn_identity_open_opts(svc->meta, &io, &svc->identity);
    }
    if (e >= 0)
        e = cn_identity_bootstrap(svc->identity, data_dir);
    if (e >= 0)
        e = env_rate(svc->identity);
    if (e >= 0) {
        what = "objects";
        cn_objects_opts_t oo = { 0 };
        uint64_t expiry_s = 0;
        e = env_u64("JAY_MAX_OBJECT_SIZE", &oo.max_object_bytes);
        if (e >= 0)
            e = env_u64("CAIRN_UPLOAD_EXPIRY_SECONDS", &expiry_s);
        if (e >= 0 && expiry_s > (uint64_t)INT64_MAX / 1000)
            e = CN_E_INVALID;
        oo.upload_expiry_ms = (int64_t)expiry_s * 1000;
        /* CAIRN_UPLOAD_SWEEP_SECONDS: the upload expiry's period (600).  On
         * PostgreSQL it is the maintenance thread's leased job instead of
         * the objects service's own thread. */
        uint64_t sweep_s = 600;
        if (e >= 0)
            e = env_u64("CAIRN_UPLOAD_SWEEP_SECONDS", &sweep_s);
        if (e >= 0 && sweep_s > 86400 * 365)
            e = CN_E_INVALID;
        si->upload_ms = (int64_t)sweep_s * 1000;
        bool fleet = !strcmp(cn_meta_engine(svc->meta), "postgres");
        oo.upload_sweep_ms = fleet ? -1 : si->upload_ms;
        oo.data_dir = data_dir;
        if (e >= 0)
            e = cn_objects_open(svc->meta, svc->store, &oo, &svc->objects);
    }
    if (e >= 0) {
        what = "blobs";
        /* Blob pin tokens expire this long after their put or last renewal:
         * on the fleet engines a pin is a row another node's sweeper reads,
         * 60 s by default (the blob document's ADR-008 default); embedded, a
         * token lasts the process's lifetime.  CAIRN_BLOB_PIN_TTL_MS sets
         * it on either. */
        cn_blobs_opts_t bo = { 0 };
        uint64_t ttl_ms = !strcmp(cn_meta_engine(svc->meta), "postgres") ? 60000 : 0;
        e = env_u64("CAIRN_BLOB_PIN_TTL_MS", &ttl_ms);
        if (e >= 0 && ttl_ms > (uint64_t)INT64_MAX / 2)
            e = CN_E_INVALID;
        bo.pin_ttl_ms = (int64_t)ttl_ms;
        if (e >= 0)
            e = cn_blobs_open(svc->meta, svc->store, svc->identity, &bo, &svc->blobs);
    }
    if (e >= 0) {
        what = "repos";
        e = cn_repos_open(svc->meta, svc->store, svc->identity, NULL, &svc->repos);
    }
    uint64_t interval_s = 600, grace_s = 3600;
    if (e >= 0) {
        what = "maintenance";
        e = env_u64("CAIRN_SWEEP_INTERVAL_SECONDS", &interval_s);
        if (e >= 0)
            e = env_u64("CAIRN_SWEEP_GRACE_SECONDS", &grace_s);
        if (e >= 0 && (interval_s > 86400 * 365 || grace_s > 86400 * 365))
            e = CN_E_INVALID;
        si->interval_ms = (int64_t)interval_s * 1000;
        si->grace_ms = (int64_t)grace_s * 1000;
        if (e >= 0) {
            e = -pthread_create(&si->thread, NULL, maintenance_main, si);
            si->running = e == 0;
        }
    }
    if (e < 0) {
        cn_error("cairnd", "cannot open the %s service: %s%s", what, cn_strerror(e),
                 e == CN_E_UNSUPPORTED ? " (the metadata schema is newer than this cairnd)" : "");
        cn_services_close(svc);
        return e;
    }
    cn__spacer_ensure(data_dir);
    *out = svc;
    return CN_OK;
}

void cn_services_close(cn_services_t *svc)
{
    if (!svc)
        return;
    services_impl_t *si = (services_impl_t *)svc;
    if (si->running) {
        pthread_mutex_lock(&si->mu);
        si->stop = true;
        pthread_cond_signal(&si->cv);
        pthread_mutex_unlock(&si->mu);
        pthread_join(si->thread, NULL);
    }
    cn_repos_close(svc->repos);
    cn_blobs_close(svc->blobs);
    cn_objects_close(svc->objects);
    cn_identity_close(svc->identity);
    cn_store_close(svc->store);
    cn_meta_close(svc->meta);
    free(svc->data_dir);
    pthread_cond_destroy(&si->cv);
    pthread_mutex_destroy(&si->mu);
    free(si);
}
