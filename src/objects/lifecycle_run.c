/* The lifecycle worker: applies the buckets' enabled lifecycle rules
 * (lifecycle.c's compact form) to the objects and uploads already stored,
 * in the background, one runner per fleet.
 *
 * A pass over a bucket walks its keys in byte order, in batches of at most
 * BATCH_MAX keys read in one short read transaction; the decisions of a
 * batch are then acted on one by one through the calls a client uses
 * (cn_objects_delete_version, cn_objects_mpu_abort: each re-reads its version
 * in its own write transaction, so versioning, object lock, the head cache's
 * generations, metrics and blob liveness apply unchanged), and the cursor
 * (the batch's last key) is written to obj_lifecycle after the batch: a
 * restart resumes the pass there.  The actions of every bucket together are
 * capped at opts.max_ops per second.  One runner per fleet: on an engine
 * with one writer (SQLite) the state row of bucket_id 0 is the lease (renewed
 * while it works; a dead holder's lease runs out after three ticks, 10 s at
 * least; a restarted holder, named the same, takes it back at once); on
 * PostgreSQL the job lease "lifecycle" (cn_meta_lease, an advisory lock of
 * the node's session, which another node takes within a second or two of the
 * holder's death) decides, asked every second while another node holds it,
 * and the row only names the holder for `cairn admin fleet status`.
 *
 * Never: deletes or aborts anything but through those calls; acts as anyone
 * but the bucket's owner (as the server's own principal, which a bucket
 * policy's Deny does not bind, as with AWS); removes a locked version (the delete call refuses
 * it, and the worker counts a skip and tries again next pass); keeps a write
 * transaction open across actions. */
#include "objects_int.h"
#include "cairn/metrics.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LC_DAY_MS (86400 * (int64_t)1000)
#define LC_ACTS_MAX 10000           /* decisions held per batch */
#define LC_BATCH_MAX 1000           /* keys per read transaction */
#define LC_TICK_MAX_MS (60 * 1000)  /* the worker wakes at least this often */
#define LC_LEASE_MIN_MS (10 * 1000) /* a lease lasts three ticks, at least this */
#define LC_DEFAULT_INTERVAL_MS (3600 * (int64_t)1000)
#define LC_DEFAULT_MAX_OPS 1000

typedef enum {
    LC_EXPIRE,
    LC_MARKER,
    LC_NONCURRENT,
    LC_ABORT,
    LC_KINDS
} lc_kind_t;
static const char *const kind_label[LC_KINDS] = { "kind=\"expiration\"", "kind=\"expired_marker\"",
                                                  "kind=\"noncurrent\"", "kind=\"abort_upload\"" };

static const cn_metric_family_t lc_actions = {
    "cairn_objects_lifecycle_actions_total",
    "Deletes, marker removals and upload aborts done by the lifecycle worker", CN_METRIC_COUNTER,
    NULL, 0
};
static const cn_metric_family_t lc_skips = {
    "cairn_objects_lifecycle_locked_skips_total",
    "Lifecycle removals skipped because the version is under retention or legal hold",
    CN_METRIC_COUNTER, NULL, 0
};

struct cn__lc {
    cn_objects_t *o;
    cn_objects_lc_opts_t opts;
    int64_t tick_ms, lease_ms;
    char holder[80];
    pthread_t thread;
    pthread_mutex_t mu; /* guards stop */
    pthread_cond_t cv;
    bool stop;
    int64_t next_ns;    /* the rate cap: when the next action may go (monotonic) */
    int64_t renewed_ms; /* when the lease was last taken or renewed */
    struct cn_metric *acts[LC_KINDS], *skips;
};

/* One decision of a batch: key (owned) and what to do to it. */
typedef struct lc_act {
    lc_kind_t kind;
    char *key;
    int64_t version_id; /* LC_EXPIRE on an unversioned bucket, LC_MARKER, LC_NONCURRENT */
    char upload_id[CN_UPLOAD_ID_MAX + 1];
} lc_act_t;

/* One bucket's pass. */
typedef struct lc_bucket {
    int64_t id;
    char name[CN_BUCKET_NAME_MAX + 1];
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    cn_objects_lc_t lc;
    bool has_abort, nc_tags, exp_tags;
} lc_bucket_t;

/* A batch being read: the keys after cursor, then the decisions. */
typedef struct lc_batch {
    const lc_bucket_t *b;
    const char *after; /* exclusive, after_len bytes */
    size_t after_len, limit;
    int64_t now, day_ms;
    size_t nkeys;
    char **keys;
    lc_act_t *acts;
    size_t nacts, cap;
    bool versioning_off;
    bool truncated; /* stopped at LC_ACTS_MAX before its last key */
} lc_batch_t;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Waits until the monotonic time deadline_ns or a stop; false on a stop. */
static bool lc_sleep_until(struct cn__lc *lc, int64_t deadline_ns)
{
    struct timespec ts = { (time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000) };
    pthread_mutex_lock(&lc->mu);
    while (!lc->stop && pthread_cond_timedwait(&lc->cv, &lc->mu, &ts) != ETIMEDOUT)
        ;
    bool stop = lc->stop;
    pthread_mutex_unlock(&lc->mu);
    return !stop;
}

static bool lc_stopping(struct cn__lc *lc)
{
    pthread_mutex_lock(&lc->mu);
    bool stop = lc->stop;
    pthread_mutex_unlock(&lc->mu);
    return stop;
}

/* The rate cap: one token per 1/max_ops second, no burst saved up. */
static bool lc_rate_wait(struct cn__lc *lc)
{
    int64_t now = mono_ns();
    if (lc->next_ns < now)
        lc->next_ns = now;
    bool ok = lc->next_ns <= now || lc_sleep_until(lc, lc->next_ns);
    lc->next_ns += 1000000000 / lc->opts.max_ops;
    return ok && !lc_stopping(lc);
}

/* t plus days lifecycle days: a test's days unrounded, else real days
 * rounded up to the next midnight UTC (S3). */
static int64_t lc_after(int64_t t, int32_t days, int64_t day_ms)
{
    if (day_ms > 0)
        return t + (int64_t)days * day_ms;
    int64_t e = t + (int64_t)days * LC_DAY_MS;
    int64_t rem = ((e % LC_DAY_MS) + LC_DAY_MS) % LC_DAY_MS;
    return rem ? e - rem + LC_DAY_MS : e;
}

/* ---- the lease ------------------------------------------------------------------------ */

typedef struct lease_run {
    const struct cn__lc *lc;
    int64_t now;
    bool take; /* the job lease is held: the row only records it */
    bool held;
} lease_run_t;

/* The lease's times are the database's clock (CN_SQL_OBJ_E_NOW_MS): nodes
 * whose clocks disagree by more than a lease still never both hold it. */
static cn_err_t lease_body(cn_meta_txn_t *txn, void *ctx)
{
    lease_run_t *lr = ctx;
    const char *h = lr->lc->holder;
    size_t hl = strlen(h);
    lr->held = false;
    cn_meta_stmt_t *st = NULL;
    int64_t now = 0;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_obj_engine[CN_SQL_OBJ_E_NOW_MS]), "");
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        now = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    st = NULL;
    if (err >= 0 && now <= 0)
        err = CN_E_DB;
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_LC_LEASE_SEED], "");
    if (err >= 0)
        err =
            cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_LC_LEASE], "biib", (const void *)h, hl,
                          now + lr->lc->lease_ms, lr->take ? INT64_MAX : now, (const void *)h, hl);
    if (err >= 0)
        err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LC_STATE], "i", (int64_t)0);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const void *v = cn_meta_column_blob(st, 1, &n);
        lr->held = v && n == hl && !memcmp(v, h, hl);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* Whether the engine's job lease decides who runs (more than one writer). */
static bool lc_job_lease(const struct cn__lc *lc)
{
    return !cn_meta_single_writer(lc->o->meta);
}

/* Takes or renews the fleet's lease: true while this process holds it. */
static bool lc_lease(struct cn__lc *lc)
{
    bool job = lc_job_lease(lc);
    if (job && !cn_meta_lease(lc->o->meta, "lifecycle"))
        return false;
    lease_run_t lr = { lc, cn_wall_ms(), job, false };
    cn_err_t err = cn_meta_run(lc->o->meta, CN_META_RUN_WRITE | CN_META_RETRY, lease_body, &lr);
    if (err < 0)
        cn_warn("objects", "lifecycle lease: %s", cn_strerror(err));
    if (err >= 0 && lr.held)
        lc->renewed_ms = lr.now;
    return err >= 0 && lr.held;
}

/* Renews the lease when a third of it has gone: false when it was lost. */
static bool lc_lease_keep(struct cn__lc *lc)
{
    if (lc_job_lease(lc) && !cn_meta_lease(lc->o->meta, "lifecycle"))
        return false;
    return cn_wall_ms() - lc->renewed_ms < lc->lease_ms / 3 || lc_lease(lc);
}

/* ---- the per-bucket state ------------------------------------------------------------- */

typedef struct state_run {
    int64_t bucket_id;
    bool found, has_cursor;
    int64_t pass_ms;
    cn_buf_t cursor;
} state_run_t;

static cn_err_t state_get_body(cn_meta_txn_t *txn, void *ctx)
{
    state_run_t *sr = ctx;
    cn_meta_stmt_t *st = NULL;
    sr->found = sr->has_cursor = false;
    sr->cursor.len = 0;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LC_STATE], "i", sr->bucket_id);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const void *v = cn_meta_column_blob(st, 1, &n);
        sr->found = true;
        sr->pass_ms = cn_meta_column_int64(st, 0);
        sr->has_cursor = !cn_meta_column_is_null(st, 1);
        if (sr->has_cursor && n)
            err = cn_buf_append(&sr->cursor, v, n);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static cn_err_t state_put_body(cn_meta_txn_t *txn, void *ctx)
{
    const state_run_t *sr = ctx;
    const char *sql = cn__sql_obj[CN_SQL_OBJ_LC_STATE_PUT];
    cn_err_t err = sr->has_cursor ? cn_meta_execf(txn, sql, "iib", sr->bucket_id, sr->pass_ms,
                                                  sr->cursor.len ? (const void *)sr->cursor.data
                                                                 : (const void *)"",
                                                  sr->cursor.len)
                                  : cn_meta_execf(txn, sql, "iin", sr->bucket_id, sr->pass_ms);
    return err < 0 ? err : CN_OK;
}

static cn_err_t state_put(cn_objects_t *o, state_run_t *sr)
{
    return cn_meta_run(o->meta, CN_META_RUN_WRITE | CN_META_RETRY, state_put_body, sr);
}

/* ---- reading a batch ------------------------------------------------------------------ */

static cn_err_t batch_add(lc_batch_t *bt, lc_kind_t kind, const char *key, int64_t vid,
                          const char *upload_id)
{
    if (bt->nacts == bt->cap) {
        size_t cap = bt->cap ? 2 * bt->cap : 64;
        lc_act_t *a = realloc(bt->acts, cap * sizeof *a);
        if (!a)
            return -ENOMEM;
        bt->acts = a;
        bt->cap = cap;
    }
    lc_act_t *a = &bt->acts[bt->nacts];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->version_id = vid;
    a->key = cn__strndup(key, strlen(key));
    if (upload_id)
        cn__strcpy(a->upload_id, sizeof a->upload_id, upload_id, strlen(upload_id));
    if (!a->key)
        return -ENOMEM;
    bt->nacts++;
    return 0;
}

static void batch_free(lc_batch_t *bt)
{
    for (size_t i = 0; i < bt->nacts; i++)
        free(bt->acts[i].key);
    for (size_t i = 0; i < bt->nkeys; i++)
        free(bt->keys[i]);
    free(bt->acts);
    free(bt->keys);
    bt->acts = NULL;
    bt->keys = NULL;
    bt->nacts = bt->cap = bt->nkeys = 0;
}

/* The keys of the batch, after the cursor. */
static cn_err_t batch_keys(cn_meta_txn_t *txn, lc_batch_t *bt)
{
    cn_meta_stmt_t *st = NULL;
    const void *after = bt->after_len ? bt->after : "";
    bt->keys = calloc(bt->limit, sizeof *bt->keys);
    if (!bt->keys)
        return -ENOMEM;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LC_KEYS], "ibibi", bt->b->id, after,
                       bt->after_len, bt->b->id, after, bt->after_len, (int64_t)bt->limit);
    while (err >= 0 && bt->nkeys < bt->limit && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const char *k = cn_meta_column_blob(st, 0, &n);
        if (!k || !n || memchr(k, 0, n)) {
            err = CN_E_CORRUPT;
            break;
        }
        if (!(bt->keys[bt->nkeys] = cn__strndup(k, n)))
            err = -ENOMEM;
        else
            bt->nkeys++;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* A history row of a key. */
typedef struct lc_hist {
    int64_t version_id, noncurrent_ms;
    uint64_t size;
    bool marker;
} lc_hist_t;

#define LC_HIST_PAGE 1024 /* history rows read per query */

/* The next page of key's history rows, newest first, below version_id
 * below, into rows[0..*n). */
static cn_err_t hist_page(cn_meta_txn_t *txn, const lc_batch_t *bt, const char *key, int64_t below,
                          lc_hist_t *rows, size_t *n)
{
    cn_meta_stmt_t *st = NULL;
    *n = 0;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LC_HIST], "ibii", bt->b->id,
                                  (const void *)key, strlen(key), below, (int64_t)LC_HIST_PAGE);
    while (err >= 0 && *n < LC_HIST_PAGE && (err = cn_meta_step(st)) == CN_META_ROW) {
        lc_hist_t *h = &rows[(*n)++];
        h->version_id = cn_meta_column_int64(st, 0);
        h->marker = cn_meta_column_int64(st, 1) != 0;
        h->noncurrent_ms = cn_meta_column_int64(st, 2);
        h->size = (uint64_t)cn_meta_column_int64(st, 3);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* Whether rule r's filter takes key at size with tags ts. */
static bool lc_filter(const cn_objects_lc_rule_t *r, const char *key, uint64_t size,
                      const cn_objects_tagset_t *ts)
{
    size_t pl = strlen(r->prefix);
    if (pl && strncmp(key, r->prefix, pl) != 0)
        return false;
    if ((r->size_gt >= 0 && !(size > (uint64_t)r->size_gt)) ||
        (r->size_lt >= 0 && !(size < (uint64_t)r->size_lt)))
        return false;
    for (size_t i = 0; i < r->ntags; i++) {
        bool found = false;
        for (size_t j = 0; !found && ts && j < ts->ntags; j++)
            found = !strcmp(ts->tags[j].key, r->tags[i].key) &&
                    !strcmp(ts->tags[j].value, r->tags[i].value);
        if (!found)
            return false;
    }
    return true;
}

/* Noncurrent version h, the j-th newest noncurrent one of key: whether a
 * rule removes it now. */
static cn_err_t nc_decide(cn_meta_txn_t *txn, lc_batch_t *bt, const char *key, const lc_hist_t *h,
                          size_t j)
{
    const cn_objects_lc_t *lc = &bt->b->lc;
    cn_objects_tagset_t ts = { 0 };
    cn_err_t err = bt->b->nc_tags && !h->marker ? cn__obj_tags_read(txn, h->version_id, &ts) : 0;
    bool go = false;
    for (size_t i = 0; err >= 0 && !go && i < lc->nrules; i++) {
        const cn_objects_lc_rule_t *r = &lc->rules[i];
        go = r->enabled && r->nc_days > 0 && j >= (size_t)r->nc_newer &&
             lc_after(h->noncurrent_ms, r->nc_days, bt->day_ms) <= bt->now &&
             lc_filter(r, key, h->size, &ts);
    }
    cn_objects_tagset_free(&ts);
    if (err >= 0 && go)
        err = batch_add(bt, LC_NONCURRENT, key, h->version_id, NULL);
    return err;
}

/* A marker that is key's only version: whether a rule removes it. */
static cn_err_t marker_decide(lc_batch_t *bt, const char *key, const lc_hist_t *h)
{
    const cn_objects_lc_t *lc = &bt->b->lc;
    for (size_t i = 0; i < lc->nrules; i++) {
        const cn_objects_lc_rule_t *r = &lc->rules[i];
        if (r->enabled && r->exp_marker && lc_filter(r, key, 0, NULL))
            return batch_add(bt, LC_MARKER, key, h->version_id, NULL);
    }
    return 0;
}

/* The current version of key (if any): whether an Expiration takes it. */
static cn_err_t cur_decide(cn_meta_txn_t *txn, lc_batch_t *bt, const char *key, bool *has_cur)
{
    cn_meta_stmt_t *st = NULL;
    int64_t vid = 0, mtime = 0;
    uint64_t size = 0;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LC_CUR], "ib", bt->b->id,
                                  (const void *)key, strlen(key));
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        vid = cn_meta_column_int64(st, 0);
        size = (uint64_t)cn_meta_column_int64(st, 1);
        mtime = cn_meta_column_int64(st, 2);
    }
    cn_meta_finish(st);
    *has_cur = vid != 0;
    if (err < 0 || !vid)
        return err < 0 ? err : 0;
    cn_objects_tagset_t ts = { 0 };
    if (bt->b->exp_tags)
        err = cn__obj_tags_read(txn, vid, &ts);
    int64_t expiry = 0;
    char rid[CN_OBJECTS_LC_ID_MAX + 1];
    if (err >= 0 &&
        cn_objects_lc_expiry(&bt->b->lc, key, size, ts.tags, ts.ntags, mtime, bt->day_ms, &expiry,
                             rid) == 1 &&
        expiry <= bt->now)
        err = batch_add(bt, LC_EXPIRE, key, vid, NULL);
    cn_objects_tagset_free(&ts);
    return err;
}

static cn_err_t key_decide(cn_meta_txn_t *txn, lc_batch_t *bt, const char *key)
{
    bool has_cur = false;
    size_t n = 0, j = 0;
    int64_t below = INT64_MAX;
    lc_hist_t *rows = malloc(LC_HIST_PAGE * sizeof *rows);
    cn_err_t err = rows ? cur_decide(txn, bt, key, &has_cur) : -ENOMEM;
    for (bool first = true; err >= 0; first = false) {
        err = hist_page(txn, bt, key, below, rows, &n);
        if (err >= 0 && first && !has_cur && n == 1 && rows[0].marker)
            err = marker_decide(bt, key, &rows[0]);
        /* A history row with noncurrent_ms 0 is a latest marker. */
        for (size_t i = 0; err >= 0 && i < n && bt->nacts < LC_ACTS_MAX; i++)
            if (rows[i].noncurrent_ms > 0)
                err = nc_decide(txn, bt, key, &rows[i], j++);
        if (n < LC_HIST_PAGE || bt->nacts >= LC_ACTS_MAX)
            break;
        below = rows[n - 1].version_id;
    }
    free(rows);
    return err;
}

/* A batch stops deciding at LC_ACTS_MAX actions, after the key it is at
 * (the rest of that key's actions wait for the next pass). */
static cn_err_t batch_body(cn_meta_txn_t *txn, void *ctx)
{
    lc_batch_t *bt = ctx;
    batch_free(bt);
    bt->truncated = false;
    cn__vstate_t vs;
    cn_err_t err = cn__obj_vstate(txn, bt->b->id, &vs);
    bt->versioning_off = vs.versioning == CN_OBJ_VERSIONING_OFF;
    if (err >= 0)
        err = batch_keys(txn, bt);
    for (size_t i = 0; err >= 0 && i < bt->nkeys; i++) {
        err = key_decide(txn, bt, bt->keys[i]);
        if (err >= 0 && bt->nacts >= LC_ACTS_MAX && i + 1 < bt->nkeys) {
            bt->truncated = true;
            for (size_t k = i + 1; k < bt->nkeys; k++)
                free(bt->keys[k]);
            bt->nkeys = i + 1;
        }
    }
    return err < 0 ? err : CN_OK;
}

/* ---- uploads -------------------------------------------------------------------------- */

typedef struct upl_run {
    lc_batch_t *bt;
    char after[CN_UPLOAD_ID_MAX + 1];
    size_t seen;
} upl_run_t;

static cn_err_t upl_body(cn_meta_txn_t *txn, void *ctx)
{
    upl_run_t *ur = ctx;
    lc_batch_t *bt = ur->bt;
    const cn_objects_lc_t *lc = &bt->b->lc;
    batch_free(bt);
    ur->seen = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LC_UPLOADS], "isi", bt->b->id,
                                  ur->after, (int64_t)bt->limit);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t kl = 0;
        const char *k = cn_meta_column_blob(st, 0, &kl);
        const char *uid = cn_meta_column_text(st, 1, NULL);
        int64_t created = cn_meta_column_int64(st, 2);
        char key[CN_OBJECT_KEY_MAX + 1];
        cn__strcpy(key, sizeof key, k, k ? kl : 0);
        cn__strcpy(ur->after, sizeof ur->after, uid, uid ? strlen(uid) : 0);
        ur->seen++;
        bool go = false;
        for (size_t i = 0; !go && i < lc->nrules; i++) {
            const cn_objects_lc_rule_t *r = &lc->rules[i];
            go = r->enabled && r->abort_days > 0 && lc_filter(r, key, 0, NULL) &&
                 lc_after(created, r->abort_days, bt->day_ms) <= bt->now;
        }
        if (go && uid)
            err = batch_add(bt, LC_ABORT, key, 0, uid);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* ---- acting --------------------------------------------------------------------------- */

/* A failure worth trying again: the pass stops at its saved cursor, so the
 * key is decided again by the next run instead of being passed over.
 *
 * Wider than cn_meta_run's repeat rule (meta/run.c retryable: the lock
 * errors only) and unlike the S3 tier's (store/s3_http.c retryable: HTTP
 * statuses, whose exhausted retries arrive here as CN_E_UNAVAILABLE) on
 * purpose: those repeat at once, inside one call, what a moment's wait
 * mends; this one postpones a key to a pass minutes later, so a failing
 * disk (-EIO), a full one, an unreachable tier or a shutdown count too.
 * One shared list would change what one of the three does. */
static bool act_transient(cn_err_t err)
{
    return err == CN_E_DB_LOCKED || err == CN_E_DB || err == CN_E_BUSY || err == CN_E_TIMEOUT ||
           err == CN_E_UNAVAILABLE || err == CN_E_RATE_LIMITED || err == CN_E_SHUTDOWN ||
           err == -EIO || err == -ENOSPC;
}

/* Acts on a: false only when it failed transiently (act_transient). */
static bool act_one(struct cn__lc *lc, const lc_bucket_t *b, const lc_batch_t *bt,
                    const lc_act_t *a)
{
    cn_principal_t p;
    memset(&p, 0, sizeof p);
    cn__strcpy(p.account, sizeof p.account, b->owner, strlen(b->owner));
    p.perms = CN_PERM_DEFAULT;
    p.flags = CN_PRINCIPAL_SERVICE; /* no bucket policy binds lifecycle */
    cn_objects_req_t rq;
    memset(&rq, 0, sizeof rq);
    rq.principal = &p;
    char vid[CN_OBJECTS_VERSION_ID_MAX];
    cn_objects_version_str(a->version_id, false, vid);
    cn_err_t err;
    if (a->kind == LC_ABORT)
        err = cn_objects_mpu_abort(lc->o, &rq, b->name, a->key, a->upload_id);
    else if (a->kind == LC_EXPIRE && !bt->versioning_off)
        /* A versioned bucket: the plain delete, which writes a marker. */
        err = cn_objects_delete_version(lc->o, &rq, b->name, a->key, NULL, false, NULL);
    else
        /* By id: exactly the version decided on, or nothing when it moved. */
        err = cn_objects_delete_version(lc->o, &rq, b->name, a->key, vid, false, NULL);
    if (err >= 0)
        cn_metric_add(lc->acts[a->kind], 1);
    else if (err == CN_E_DENIED && rq.fail.detail == CN_OBJ_VERSION_LOCKED)
        cn_metric_add(lc->skips, 1);
    else if (err != CN_E_NOT_FOUND && err != CN_E_NO_UPLOAD)
        cn_warn("objects", "lifecycle of %s/%s: %s%s", b->name, a->key, cn_strerror(err),
                act_transient(err) ? " (the pass resumes here next time)" : "");
    return !act_transient(err);
}

/* The batch's actions at the capped rate: false when stopped, the lease
 * was lost midway or an action failed transiently (the cursor then stays
 * before the batch). */
static bool batch_act(struct cn__lc *lc, const lc_bucket_t *b, const lc_batch_t *bt)
{
    for (size_t i = 0; i < bt->nacts; i++) {
        if (!lc_rate_wait(lc) || !lc_lease_keep(lc) || !act_one(lc, b, bt, &bt->acts[i]))
            return false;
    }
    return true;
}

/* Aborts the bucket's uploads a rule expires: false when stopped. */
static bool pass_uploads(struct cn__lc *lc, lc_bucket_t *b, lc_batch_t *bt)
{
    upl_run_t ur = { bt, "", 0 };
    do {
        cn_err_t err = cn_meta_run(lc->o->meta, CN_META_RUN_READ | CN_META_RETRY, upl_body, &ur);
        if (err < 0) {
            cn_warn("objects", "lifecycle of %s: uploads: %s", b->name, cn_strerror(err));
            return true;
        }
        if (!batch_act(lc, b, bt))
            return false;
    } while (ur.seen == bt->limit);
    return true;
}

/* The rest of b's pass from sr's cursor on.  The cursor is written after
 * each batch, and cleared (the pass done) at the end. */
static void pass_run(struct cn__lc *lc, lc_bucket_t *b, state_run_t *sr)
{
    lc_batch_t bt = { .b = b, .day_ms = lc->opts.day_ms };
    /* A batch's actions take about a second at the cap: the cursor moves at
     * least that often, so a restart loses little. */
    bt.limit = (size_t)(lc->opts.max_ops < LC_BATCH_MAX ? lc->opts.max_ops : LC_BATCH_MAX);
    for (;;) {
        bt.now = cn_wall_ms();
        bt.after = (const char *)sr->cursor.data;
        bt.after_len = sr->cursor.len;
        cn_err_t err = cn_meta_run(lc->o->meta, CN_META_RUN_READ | CN_META_RETRY, batch_body, &bt);
        bool more = err >= 0 && (bt.nkeys == bt.limit || bt.truncated);
        if (err < 0)
            cn_warn("objects", "lifecycle of %s: %s", b->name, cn_strerror(err));
        if (err < 0 || !batch_act(lc, b, &bt))
            break;
        if (bt.nkeys) {
            sr->cursor.len = 0;
            err = cn_buf_append(&sr->cursor, bt.keys[bt.nkeys - 1], strlen(bt.keys[bt.nkeys - 1]));
        }
        if (err >= 0 && !more && b->has_abort && !pass_uploads(lc, b, &bt))
            break;
        sr->has_cursor = more;
        if (err >= 0)
            err = state_put(lc->o, sr);
        if (err < 0 || !more)
            break;
    }
    batch_free(&bt);
}

/* b's pass when one is due or under way. */
static void bucket_run(struct cn__lc *lc, lc_bucket_t *b)
{
    state_run_t sr = { .bucket_id = b->id };
    cn_err_t err = cn_meta_run(lc->o->meta, CN_META_RUN_READ | CN_META_RETRY, state_get_body, &sr);
    int64_t now = cn_wall_ms();
    if (err >= 0 && !sr.has_cursor) {
        if (sr.found && now - sr.pass_ms < lc->opts.interval_ms) {
            cn_buf_free(&sr.cursor);
            return;
        }
        /* A new pass: its start time and an empty cursor, before any work. */
        sr.pass_ms = now;
        sr.has_cursor = true;
        sr.cursor.len = 0;
        err = state_put(lc->o, &sr);
    } else if (err >= 0) {
        cn_info("objects", "lifecycle of %s: resuming the pass after key %.*s", b->name,
                (int)sr.cursor.len, sr.cursor.len ? (const char *)sr.cursor.data : "");
    }
    if (err >= 0)
        pass_run(lc, b, &sr);
    else
        cn_warn("objects", "lifecycle of %s: %s", b->name, cn_strerror(err));
    cn_buf_free(&sr.cursor);
}

/* ---- the buckets ---------------------------------------------------------------------- */

typedef struct lc_buckets {
    lc_bucket_t *v;
    size_t n, cap;
} lc_buckets_t;

static void buckets_free(lc_buckets_t *bs)
{
    for (size_t i = 0; i < bs->n; i++)
        cn_objects_lc_free(&bs->v[i].lc);
    free(bs->v);
    memset(bs, 0, sizeof *bs);
}

/* Fills b's flags from its rules: false when none is enabled. */
static bool bucket_flags(lc_bucket_t *b)
{
    bool any = false;
    for (size_t i = 0; i < b->lc.nrules; i++) {
        const cn_objects_lc_rule_t *r = &b->lc.rules[i];
        if (!r->enabled)
            continue;
        any = true;
        b->has_abort |= r->abort_days > 0;
        b->nc_tags |= r->ntags && r->nc_days > 0;
        b->exp_tags |= r->ntags && (r->exp_days > 0 || r->exp_date_ms > 0);
    }
    return any;
}

static cn_err_t buckets_row(lc_buckets_t *bs, cn_meta_stmt_t *st)
{
    if (bs->n == bs->cap) {
        size_t cap = bs->cap ? 2 * bs->cap : 8;
        lc_bucket_t *v = realloc(bs->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        bs->v = v;
        bs->cap = cap;
    }
    lc_bucket_t *b = &bs->v[bs->n];
    memset(b, 0, sizeof *b);
    b->id = cn_meta_column_int64(st, 0);
    const char *name = cn_meta_column_text(st, 1, NULL);
    const char *owner = cn_meta_column_text(st, 2, NULL);
    size_t n = 0;
    const void *v = cn_meta_column_blob(st, 3, &n);
    cn__strcpy(b->name, sizeof b->name, name, name ? strlen(name) : 0);
    cn__strcpy(b->owner, sizeof b->owner, owner, owner ? strlen(owner) : 0);
    /* An undecodable setting is skipped (and said), never acted on. */
    if (!v || cn_objects_lc_decode(v, n, &b->lc) < 0) {
        cn_warn("objects", "lifecycle of %s: the stored rules do not decode", b->name);
        return 0;
    }
    if (bucket_flags(b))
        bs->n++;
    else
        cn_objects_lc_free(&b->lc);
    return 0;
}

static cn_err_t buckets_body(cn_meta_txn_t *txn, void *ctx)
{
    lc_buckets_t *bs = ctx;
    buckets_free(bs);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LC_BUCKETS], "");
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        err = buckets_row(bs, st);
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* One wake-up: under the lease, every bucket's due or unfinished pass.
 * false when another node holds the job lease. */
static bool lc_round(struct cn__lc *lc)
{
    if (!lc_lease(lc))
        return false;
    lc_buckets_t bs = { 0 };
    cn_err_t err = cn_meta_run(lc->o->meta, CN_META_RUN_READ | CN_META_RETRY, buckets_body, &bs);
    if (err < 0)
        cn_warn("objects", "lifecycle: cannot list the buckets: %s", cn_strerror(err));
    for (size_t i = 0; err >= 0 && i < bs.n && !lc_stopping(lc) && lc_lease_keep(lc); i++)
        bucket_run(lc, &bs.v[i]);
    buckets_free(&bs);
    return true;
}

/* Without the job lease a wake-up costs no statement, so it comes every
 * second: the lease moves within one of its holder's death. */
static void *lc_main(void *arg)
{
    struct cn__lc *lc = arg;
    int64_t ms;
    do
        ms = lc_round(lc) || !lc_job_lease(lc) || lc->tick_ms < 1000 ? lc->tick_ms : 1000;
    while (lc_sleep_until(lc, mono_ns() + ms * 1000000));
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------- */

static void lc_opts(struct cn__lc *lc, const cn_objects_lc_opts_t *opts)
{
    if (opts)
        lc->opts = *opts;
    if (lc->opts.max_ops <= 0)
        lc->opts.max_ops = LC_DEFAULT_MAX_OPS;
    if (lc->opts.max_ops > 1000000000)
        lc->opts.max_ops = 1000000000;
    if (lc->opts.day_ms > 0) {
        /* A test's days: conformance suites assume a check every tenth of one. */
        lc->tick_ms = lc->opts.day_ms / 10 > 1000 ? lc->opts.day_ms / 10 : 1000;
        lc->opts.interval_ms = lc->tick_ms;
    } else {
        if (lc->opts.interval_ms <= 0)
            lc->opts.interval_ms = LC_DEFAULT_INTERVAL_MS;
        lc->opts.day_ms = 0;
        lc->tick_ms = lc->opts.interval_ms < LC_TICK_MAX_MS ? lc->opts.interval_ms : LC_TICK_MAX_MS;
    }
    lc->lease_ms = 3 * lc->tick_ms > LC_LEASE_MIN_MS ? 3 * lc->tick_ms : LC_LEASE_MIN_MS;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    if (lc->opts.node_id)
        snprintf(lc->holder, sizeof lc->holder, "%s", lc->opts.node_id);
    else if (lc->opts.holder)
        snprintf(lc->holder, sizeof lc->holder, "%.40s:%016llx", host,
                 (unsigned long long)cn_cache_hash(lc->opts.holder, strlen(lc->opts.holder)));
    else
        snprintf(lc->holder, sizeof lc->holder, "%.40s:pid%ld", host, (long)getpid());
    lc->opts.holder = lc->opts.node_id = NULL; /* borrowed: not kept */
    for (int k = 0; k < LC_KINDS; k++)
        lc->acts[k] = cn_metric_series(NULL, &lc_actions, kind_label[k]);
    lc->skips = cn_metric_series(NULL, &lc_skips, NULL);
}

cn_err_t cn_objects_lifecycle_start(cn_objects_t *o, const cn_objects_lc_opts_t *opts)
{
    if (!o)
        return CN_E_INVALID;
    if (o->lc)
        return CN_E_EXISTS;
    struct cn__lc *lc = calloc(1, sizeof *lc);
    if (!lc)
        return -ENOMEM;
    lc->o = o;
    lc_opts(lc, opts);
    pthread_mutex_init(&lc->mu, NULL);
    cn_cond_init_mono(&lc->cv);
    atomic_store(&o->lc_day_ms, lc->opts.day_ms);
    /* No signals on this thread: they belong to cairnd's loop. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&lc->thread, NULL, lc_main, lc);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        pthread_cond_destroy(&lc->cv);
        pthread_mutex_destroy(&lc->mu);
        free(lc);
        return -rc;
    }
    o->lc = lc;
    return 0;
}

void cn__lc_stop(cn_objects_t *o)
{
    struct cn__lc *lc = o ? o->lc : NULL;
    if (!lc)
        return;
    pthread_mutex_lock(&lc->mu);
    lc->stop = true;
    pthread_cond_broadcast(&lc->cv);
    pthread_mutex_unlock(&lc->mu);
    pthread_join(lc->thread, NULL);
    pthread_cond_destroy(&lc->cv);
    pthread_mutex_destroy(&lc->mu);
    free(lc);
    o->lc = NULL;
}
