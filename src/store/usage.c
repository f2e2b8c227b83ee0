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
 * A digest counts once: a file whose digest is also packed (a migration's
 * file between its record's index and its removal, a large publish beside
 * a packed record) is not counted, its row is.  So a file put is noted only
 * when d is not packed, a migration's index transaction uncounts the files
 * it adopts (pack.c), and the removal of such a file notes nothing.
 *
 * A crash may lose the notes of its last moments (a file published, its
 * note not yet written or not yet durable).  A store of one data directory
 * (SQLite meta) therefore marks the totals open (walked 2) durably before
 * it writes anything and closed (1) at a clean close, whose durable commit
 * covers every note before it (commits are durable in order); a start that
 * finds them open recounts, as `cairn admin store recount` does.  A
 * fleet's (PostgreSQL: shared by the nodes) are never marked: one node
 * cannot recount the shared tier while the others write it.
 *
 * Also the gauges cairn_store_blobs and cairn_store_bytes of the process
 * registry, set from the totals after every change this process makes (on
 * PostgreSQL moved by the change, note_body) and on every read
 * (cn_store_usage).
 *
 * Must never: count a put the backend found existing (dedup: a digest is
 * stored once), walk the blob tree except at that first open, or fail a
 * put or a removal because its note failed (it is logged). */
#include "store/store_int.h"

#include "meta/sql/store.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

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
    bool read;                /* whether they were read */
} usage_io_t;

static cn_err_t read_totals(cn_meta_txn_t *txn, usage_io_t *u)
{
    u->read = true;
    cn_meta_stmt_t *st = NULL;
    cn_err_t rc = cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_USAGE], "");
    if (rc >= 0 && (rc = cn_meta_step(st)) == CN_META_ROW) {
        u->blobs = cn_meta_column_int64(st, 0);
        u->bytes = cn_meta_column_int64(st, 1);
    }
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

/* The note, then the totals -- except in a note on PostgreSQL, whose
 * writers run side by side: a SERIALIZABLE write that read every delta
 * conflicted with each note written meanwhile, and one of every few failed
 * 40001 (130 repeats for 400 PUTs of new keys through one fleet node,
 * tests/fleet/test_fleet_puts.py).  There the note is its insert alone and
 * the gauges move by it; the periodic refresh (cn_store_usage, a read)
 * brings the other nodes' notes. */
static cn_err_t note_body(cn_meta_txn_t *txn, void *ctx)
{
    usage_io_t *u = ctx;
    u->read = false;
    bool note = u->d_blobs || u->d_bytes;
    if (note)
        CN_TRY(cn_meta_execf(
            txn, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_USAGE_NOTE]), "ii",
            u->d_blobs, u->d_bytes));
    return note && cn_meta_round_trips(txn) ? CN_OK : read_totals(txn, u);
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
    /* Test hook (CAIRN_TEST_STORE_USAGE_CRASH=N): killed before the Nth
     * note of a file put after the open, as a crash after its publish. */
    if (blobs > 0 && s->usage_crash_n > 0 &&
        atomic_fetch_add(&s->usage_crash_seen, 1) + 1 == s->usage_crash_n)
        raise(SIGKILL);
    usage_io_t u = { .d_blobs = blobs, .d_bytes = bytes };
    /* The note need not wait for meta's sync: the blob's own durability
     * does not depend on it, and a crash that loses the notes of its last
     * moments leaves the totals marked open, which the next start recounts
     * (one data directory; docs/store.md, "Usage totals"). */
    cn_err_t rc =
        cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY | CN_META_RUN_NOWAIT, note_body, &u);
    if (rc < 0)
        cn_warn("store", "usage totals: a note of %lld blob(s), %lld byte(s) failed: %s",
                (long long)blobs, (long long)bytes, cn_strerror(rc));
    else if (u.read)
        gauges_set(u.blobs, u.bytes);
    else
        cn__store_usage_gauges_add(s, blobs, bytes);
}

bool cn__store_usage_file_new(cn_store_t *s, const cn_digest_t *d)
{
    cn__pack_loc_t loc;
    if (cn__pack_find(s, d, &loc))
        return false;
    atomic_fetch_add(&s->usage_file_puts, 1);
    return true;
}

void cn__store_usage_gauges_add(cn_store_t *s, int64_t blobs, int64_t bytes)
{
    if (!s->meta || s->usage_off || !s->usage_ready)
        return;
    cn_metric_add(cn_metric_cached(&blobs_gauge, &blobs_family, "%s", ""), blobs);
    cn_metric_add(cn_metric_cached(&bytes_gauge, &bytes_family, "%s", ""), bytes);
}

typedef struct walk_count {
    cn_store_t *s;
    int64_t blobs, bytes;
} walk_count_t;

/* A file counts unless its digest is packed (its row counts it). */
static cn_err_t walk_one(void *ctx, const cn_digest_t *d, const cn__be_stat_t *st)
{
    walk_count_t *w = ctx;
    cn__pack_loc_t loc;
    if (cn__pack_find(w->s, d, &loc))
        return CN_OK;
    w->blobs++;
    w->bytes += (int64_t)st->size;
    return CN_OK;
}

static cn_err_t walked_body(cn_meta_txn_t *txn, void *ctx)
{
    int64_t *walked = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t rc = cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_USAGE_WALKED], "");
    *walked = 0;
    if (rc >= 0 && (rc = cn_meta_step(st)) == CN_META_ROW)
        *walked = cn_meta_column_int64(st, 0);
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

/* walked := *ctx (USAGE_MARK), committed durably. */
static cn_err_t mark_body(cn_meta_txn_t *txn, void *ctx)
{
    CN_TRY(cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_USAGE_MARK], "i", *(const int64_t *)ctx));
    return CN_OK;
}

/* Counts the files (one walk; nothing writes this store yet) and sets the
 * totals to them plus the pack index rows: at the first open (first), or
 * after a stop that left the totals marked open (a crash).  The notes of
 * the open so far (the journal's replay) are in the walk. */
static cn_err_t usage_count(cn_store_t *s, bool first)
{
    recount_io_t r = { .files = { .s = s } };
    CN_TRY(s->be->ops->list(s->be, walk_one, &r.files));
    if (first)
        CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, set_walked_body, &r.files));
    else
        CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, recount_body, &r));
    s->usage_open_blobs = s->usage_open_bytes = 0;
    if (first)
        cn_info("store", "usage totals: counted %lld blob file(s), %lld byte(s)",
                (long long)r.files.blobs, (long long)r.files.bytes);
    else
        cn_info("store",
                "usage totals: the last stop did not close them (a crash): recounted %lld "
                "blob(s), %lld byte(s) (were %lld, %lld)",
                (long long)r.after.blobs, (long long)r.after.bytes, (long long)r.before.blobs,
                (long long)r.before.bytes);
    return CN_OK;
}

cn_err_t cn__store_usage_open(cn_store_t *s)
{
    if (!s->meta)
        return CN_OK;
    const char *off = getenv("CAIRN_TEST_STORE_USAGE_OFF"); /* measurements only */
    s->usage_off = off && *off == '1';
    const char *crash = getenv("CAIRN_TEST_STORE_USAGE_CRASH");
    s->usage_crash_n = crash ? atol(crash) : 0;
    int64_t walked = 0;
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, walked_body, &walked));
    s->usage_ready = true;
    bool mark = strcmp(cn_meta_engine(s->meta), "sqlite") == 0;
    if (walked == 0 || (walked == 2 && mark)) {
        CN_TRY(usage_count(s, walked == 0));
    } else { /* what the journal's replay re-made */
        int64_t b = s->usage_open_blobs, y = s->usage_open_bytes;
        s->usage_open_blobs = s->usage_open_bytes = 0;
        cn__store_usage_note(s, b, y);
    }
    if (mark) { /* durable before anything is written: a crash from now on recounts */
        int64_t open = 2;
        CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, mark_body, &open));
        s->usage_marked = true;
    }
    uint64_t nb, ny;
    return cn_store_usage(s, &nb, &ny);
}

void cn__store_usage_close(cn_store_t *s)
{
    /* Measurements that skipped the notes leave the mark: the next start
     * recounts. */
    if (!s->usage_marked || s->usage_off)
        return;
    int64_t closed = 1;
    cn_err_t rc = cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, mark_body, &closed);
    if (rc < 0)
        cn_warn("store", "usage totals: marking them closed failed (the next start recounts): %s",
                cn_strerror(rc));
    s->usage_marked = false;
}

cn_err_t cn_store_usage_recount(cn_store_t *s, cn_store_recount_t *out)
{
    *out = (cn_store_recount_t){ 0 };
    if (!s->meta)
        return CN_E_UNSUPPORTED;
    recount_io_t r = { .files = { .s = s } };
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
