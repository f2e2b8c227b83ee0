/* The store's running totals: how many blobs it holds and their stored
 * bytes (docs/store.md, "Usage totals"), read at O(1) cost instead of by
 * walking the blob tree.  Kept in meta the way the objects and blobs
 * services keep theirs (a base row plus deltas that PostgreSQL's writers
 * append and the leased usage-fold job folds): a packed blob is counted by
 * the triggers on its index row (src/meta/sql/store.c, step v3), in the
 * transaction that indexes or drops it; a blob file has no row, so the
 * store notes each file it put (the backend said "new") or removed here.
 * The first open of a store counts the files already there, once.
 *
 * Also the gauges cairn_store_blobs and cairn_store_bytes of the process
 * registry, set from the totals after every change this process makes and
 * on every read (cn_store_usage).
 *
 * Must never: count a put the backend found existing (dedup: a digest is
 * stored once), walk the blob tree except at that first open, or fail a
 * put or a removal because its note failed (it is logged). */
#include "store/store_int.h"

#include "meta/sql/store.h"

#include <stdlib.h>

static const cn_metric_family_t blobs_family = {
    .name = "cairn_store_blobs",
    .help = "Blobs the store holds (a digest counts once; every node of a fleet reads the same "
            "total)",
    .kind = CN_METRIC_GAUGE,
};
static const cn_metric_family_t bytes_family = {
    .name = "cairn_store_bytes",
    .help = "Stored bytes of the blobs the store holds (compressed size for LZ4 blobs)",
    .kind = CN_METRIC_GAUGE,
};

static _Atomic(cn_metric_t *) blobs_gauge, bytes_gauge;

static void gauges_set(int64_t blobs, int64_t bytes)
{
    cn_metric_set(cn_metric_cached(&blobs_gauge, &blobs_family, "%s", ""), blobs);
    cn_metric_set(cn_metric_cached(&bytes_gauge, &bytes_family, "%s", ""), bytes);
}

typedef struct usage_io {
    int64_t d_blobs, d_bytes; /* note: added first, when not both 0 */
    int64_t blobs, bytes;     /* the totals read after */
} usage_io_t;

static cn_err_t read_totals(cn_meta_txn_t *txn, usage_io_t *u)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t rc = cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_USAGE], "");
    if (rc >= 0 && (rc = cn_meta_step(st)) == CN_META_ROW) {
        u->blobs = cn_meta_column_int64(st, 0);
        u->bytes = cn_meta_column_int64(st, 1);
    }
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

static cn_err_t note_body(cn_meta_txn_t *txn, void *ctx)
{
    usage_io_t *u = ctx;
    if (u->d_blobs || u->d_bytes)
        CN_TRY(cn_meta_execf(
            txn, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_USAGE_NOTE]), "ii",
            u->d_blobs, u->d_bytes));
    return read_totals(txn, u);
}

void cn__store_usage_note(cn_store_t *s, int64_t blobs, int64_t bytes)
{
    if (!s->meta || s->usage_off)
        return;
    if (!s->usage_ready) { /* open: the first count or the replay's note follows */
        s->usage_open_blobs += blobs;
        s->usage_open_bytes += bytes;
        return;
    }
    usage_io_t u = { .d_blobs = blobs, .d_bytes = bytes };
    /* The note need not wait for meta's sync: the blob's own durability
     * does not depend on it (a crash loses at most the notes of the last
     * moments: docs/store.md, "Usage totals"). */
    cn_err_t rc =
        cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY | CN_META_RUN_NOWAIT, note_body, &u);
    if (rc < 0)
        cn_warn("store", "usage totals: a note of %lld blob(s), %lld byte(s) failed: %s",
                (long long)blobs, (long long)bytes, cn_strerror(rc));
    else
        gauges_set(u.blobs, u.bytes);
}

void cn__store_usage_gauges_add(cn_store_t *s, int64_t blobs, int64_t bytes)
{
    if (!s->meta || s->usage_off || !s->usage_ready)
        return;
    cn_metric_add(cn_metric_cached(&blobs_gauge, &blobs_family, "%s", ""), blobs);
    cn_metric_add(cn_metric_cached(&bytes_gauge, &bytes_family, "%s", ""), bytes);
}

typedef struct walk_count {
    int64_t blobs, bytes;
} walk_count_t;

static cn_err_t walk_one(void *ctx, const cn_digest_t *d, const cn__be_stat_t *st)
{
    (void)d;
    walk_count_t *w = ctx;
    w->blobs++;
    w->bytes += (int64_t)st->size;
    return CN_OK;
}

static cn_err_t walked_body(cn_meta_txn_t *txn, void *ctx)
{
    bool *walked = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t rc = cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_USAGE_WALKED], "");
    *walked = false;
    if (rc >= 0 && (rc = cn_meta_step(st)) == CN_META_ROW)
        *walked = cn_meta_column_int64(st, 0) != 0;
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

static cn_err_t set_walked_body(cn_meta_txn_t *txn, void *ctx)
{
    const walk_count_t *w = ctx;
    CN_TRY(
        cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_USAGE_SET_WALKED], "ii", w->blobs, w->bytes));
    if (cn_meta_changes(txn) == 1) /* this open counted: the deltas before it are in */
        CN_TRY(cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_USAGE_DELTA_CLEAR], ""));
    return CN_OK;
}

cn_err_t cn__store_usage_open(cn_store_t *s)
{
    if (!s->meta)
        return CN_OK;
    const char *off = getenv("CAIRN_TEST_STORE_USAGE_OFF"); /* measurements only */
    s->usage_off = off && *off == '1';
    bool walked = false;
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, walked_body, &walked));
    s->usage_ready = true;
    if (walked) { /* what the journal's replay re-made */
        int64_t b = s->usage_open_blobs, y = s->usage_open_bytes;
        s->usage_open_blobs = s->usage_open_bytes = 0;
        cn__store_usage_note(s, b, y);
        uint64_t nb, ny;
        return cn_store_usage(s, &nb, &ny);
    }
    /* The first open since step v3: count the files once (the packed blobs
     * are their rows); nothing writes this store yet. */
    walk_count_t w = { 0, 0 };
    CN_TRY(s->be->ops->list(s->be, walk_one, &w));
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, set_walked_body, &w));
    s->usage_open_blobs = s->usage_open_bytes = 0;
    cn_info("store", "usage totals: counted %lld blob file(s), %lld byte(s)", (long long)w.blobs,
            (long long)w.bytes);
    uint64_t nb, ny;
    return cn_store_usage(s, &nb, &ny);
}

typedef struct recount_io {
    walk_count_t files;
    usage_io_t before, after;
} recount_io_t;

static cn_err_t recount_body(cn_meta_txn_t *txn, void *ctx)
{
    recount_io_t *r = ctx;
    CN_TRY(read_totals(txn, &r->before));
    CN_TRY(cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_USAGE_RECOUNT], "ii", r->files.blobs,
                         r->files.bytes));
    CN_TRY(cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_USAGE_DELTA_CLEAR], ""));
    return read_totals(txn, &r->after);
}

cn_err_t cn_store_usage_recount(cn_store_t *s, cn_store_recount_t *out)
{
    *out = (cn_store_recount_t){ 0 };
    if (!s->meta)
        return CN_E_UNSUPPORTED;
    recount_io_t r = { 0 };
    cn_err_t rc = s->be->ops->list(s->be, walk_one, &r.files);
    if (rc >= 0)
        rc = cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, recount_body, &r);
    if (rc < 0) { /* the totals as they stand (unchanged), for the caller's message */
        usage_io_t u = { 0 };
        if (cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, note_body, &u) >= 0)
            *out = (cn_store_recount_t){ u.blobs, u.bytes, u.blobs, u.bytes };
        return rc;
    }
    gauges_set(r.after.blobs, r.after.bytes);
    *out = (cn_store_recount_t){ r.before.blobs, r.before.bytes, r.after.blobs, r.after.bytes };
    cn_info("store", "usage totals recounted: %lld blob file(s) and the pack index",
            (long long)r.files.blobs);
    return CN_OK;
}

cn_err_t cn_store_usage(cn_store_t *s, uint64_t *blobs, uint64_t *bytes)
{
    *blobs = *bytes = 0;
    if (!s->meta)
        return CN_E_UNSUPPORTED;
    usage_io_t u = { 0 };
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, note_body, &u));
    gauges_set(u.blobs, u.bytes);
    *blobs = u.blobs > 0 ? (uint64_t)u.blobs : 0;
    *bytes = u.bytes > 0 ? (uint64_t)u.bytes : 0;
    return CN_OK;
}

cn_err_t cn_store_usage_fold(cn_store_t *s)
{
    if (!s->meta)
        return CN_OK;
    return cn_meta_run_shared(s->meta, &cn__sql_store_engine[CN_SQL_STORE_E_USAGE_FOLD]);
}
