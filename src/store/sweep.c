/* Liveness sources and the sweeper.
 *
 * Sweeper invariants (docs/store.md, "Sweeper"):
 *  S1. A blob is removed only if its mtime is older than now − grace when
 *      checked under its stripe lock immediately before the unlink.  Publish
 *      (also an idempotent one) and cn_store_touch refresh the mtime under
 *      the same lock, so a blob being (re)published is never removed, and a
 *      publish that comes after the removal stores the blob anew.
 *  S2. No guard is held on it, and none was taken or released since its
 *      batch's liveness question began, checked under the stripe lock;
 *      guards are acquired under that lock, so one taken later protects only
 *      a future publish, and one taken earlier is always seen.  The second
 *      half matters for a grace shorter than a put: a writer guards its blob
 *      from publish to commit, and a commit after the liveness answer but
 *      before this check would otherwise go unseen once the guard is gone.
 *  S3. No unexpired durable pin names it, read in a transaction begun under
 *      the stripe lock; cn_store_pin holds that lock through its commit.
 *  S4. Every registered liveness source answered "not live" during this
 *      sweep (asked without store locks, since a source may query meta).  A
 *      reference recorded after that answer is safe because its writer
 *      published or touched the blob within the grace window (S1): the
 *      contract of cn_store_touch.  The grace window must exceed the longest
 *      time a service takes from publish to committing its reference.
 *  S5. Any error from a source or from meta stops the sweep: when in doubt,
 *      keep.
 *
 * Packed blobs (pack.c) are walked after the file tree, from a snapshot of
 * the memory index, and decided by the same S1-S5.  Removing one drops its
 * index row (P6); its bytes stay in the pack until compaction, which is not
 * built yet — so packing stays off by default.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/util.h"

static cn_err_t register_source(cn_store_t *s, const char *name, cn_store_is_live_fn one,
                                cn_store_are_live_fn many, void *ctx)
{
    if (!name || !*name || strlen(name) >= sizeof s->sources[0].name || (!one && !many))
        return CN_E_INVALID;
    cn_err_t rc = CN_OK;
    pthread_mutex_lock(&s->live_mu);
    for (size_t i = 0; i < s->n_sources; i++)
        if (strcmp(s->sources[i].name, name) == 0)
            rc = CN_E_EXISTS;
    if (rc == CN_OK && s->n_sources == CN__STORE_MAX_SOURCES)
        rc = CN_E_LIMIT;
    if (rc == CN_OK) {
        cn__liveness_t *src = &s->sources[s->n_sources++];
        memset(src, 0, sizeof *src);
        strcpy(src->name, name);
        src->is_live = one;
        src->are_live = many;
        src->ctx = ctx;
    }
    pthread_mutex_unlock(&s->live_mu);
    return rc;
}

cn_err_t cn_store_register_liveness(cn_store_t *s, const char *name, cn_store_is_live_fn is_live,
                                    void *ctx)
{
    return register_source(s, name, is_live, NULL, ctx);
}

cn_err_t cn_store_register_liveness_batch(cn_store_t *s, const char *name,
                                          cn_store_are_live_fn are_live, void *ctx)
{
    return register_source(s, name, NULL, are_live, ctx);
}

typedef struct sweep {
    cn_store_t *s;
    cn__liveness_t sources[CN__STORE_MAX_SOURCES];
    size_t n_sources;
    int64_t cutoff_ms;
    cn_store_sweep_stats_t st;
    cn_digest_t cand[CN__STORE_SWEEP_BATCH];
    size_t n;
} sweep_t;

/* S4: drop from the batch whatever any source holds. */
static cn_err_t filter_live(sweep_t *sw)
{
    bool live[CN__STORE_SWEEP_BATCH];
    for (size_t k = 0; k < sw->n_sources && sw->n; k++) {
        cn__liveness_t *src = &sw->sources[k];
        memset(live, 0, sizeof live);
        if (src->are_live) {
            CN_TRY(src->are_live(src->ctx, sw->cand, sw->n, live));
        } else {
            for (size_t i = 0; i < sw->n; i++)
                CN_TRY(src->is_live(src->ctx, &sw->cand[i], &live[i]));
        }
        size_t keep = 0;
        for (size_t i = 0; i < sw->n; i++) {
            if (live[i])
                sw->st.live++;
            else
                sw->cand[keep++] = sw->cand[i];
        }
        sw->n = keep;
    }
    return CN_OK;
}

/* S1–S3 for one candidate, under its stripe lock. */
static cn_err_t remove_if_dead(sweep_t *sw, const cn_digest_t *d)
{
    cn_store_t *s = sw->s;
    pthread_mutex_t *mu = cn__stripe(s, d);
    cn__be_stat_t bst;
    bool pinned = false;
    uint64_t freed = 0;
    pthread_mutex_lock(mu);
    cn_err_t rc = cn__store_stat_any(s, d, &bst);
    if (rc == CN_E_NOT_FOUND) {
        rc = CN_OK; /* deleted meanwhile */
        goto out;
    }
    if (rc < 0)
        goto out;
    if (bst.mtime_ms > sw->cutoff_ms) {
        sw->st.young++;
        goto out;
    }
    if (cn__store_guarded_since_watch(s, d)) {
        sw->st.pinned++;
        goto out;
    }
    if ((rc = cn__store_pinned_durable(s, d, &pinned)) < 0)
        goto out;
    if (pinned) {
        sw->st.pinned++;
        goto out;
    }
    /* A packed blob's row goes; its bytes wait for compaction (pack.c, P6). */
    rc = cn__store_remove_locked(s, d, &freed);
    if (rc == CN_E_NOT_FOUND) {
        rc = CN_OK;
        goto out;
    }
    if (rc == CN_OK) {
        sw->st.deleted++;
        sw->st.bytes_deleted += freed;
    }
out:
    pthread_mutex_unlock(mu);
    return rc;
}

static cn_err_t flush_batch(sweep_t *sw)
{
    cn__store_guard_watch(sw->s, true);
    cn_err_t rc = filter_live(sw);
    for (size_t i = 0; rc == CN_OK && i < sw->n; i++)
        rc = remove_if_dead(sw, &sw->cand[i]);
    sw->n = 0;
    return rc;
}

static cn_err_t on_blob(void *ctx, const cn_digest_t *d, const cn__be_stat_t *bst)
{
    sweep_t *sw = ctx;
    sw->st.scanned++;
    if (bst->mtime_ms > sw->cutoff_ms) {
        sw->st.young++;
        return CN_OK;
    }
    sw->cand[sw->n++] = *d;
    return sw->n == CN__STORE_SWEEP_BATCH ? flush_batch(sw) : CN_OK;
}

cn_err_t cn_store_sweep(cn_store_t *s, int64_t grace_ms, cn_store_sweep_stats_t *out)
{
    if (grace_ms < 0)
        return CN_E_INVALID;
    sweep_t *sw = calloc(1, sizeof *sw);
    if (!sw)
        return -ENOMEM;
    pthread_mutex_lock(&s->sweep_mu);
    sw->s = s;
    pthread_mutex_lock(&s->live_mu);
    sw->n_sources = s->n_sources;
    memcpy(sw->sources, s->sources, sizeof s->sources[0] * s->n_sources);
    pthread_mutex_unlock(&s->live_mu);

    int64_t now = cn_wall_ms();
    sw->cutoff_ms = now - grace_ms;
    cn_err_t rc = cn__store_pins_expire(s, now, &sw->st.pins_expired);
    if (rc == CN_OK)
        rc = s->be->ops->list(s->be, on_blob, sw);
    if (rc == CN_OK)
        rc = cn__pack_list(s, on_blob, sw);
    if (rc == CN_OK && sw->n)
        rc = flush_batch(sw);
    cn__store_guard_watch(s, false);
    pthread_mutex_unlock(&s->sweep_mu);
    cn_metric_add(cn__store_metrics()->sweeps, 1);
    cn_metric_add(cn__store_metrics()->sweep_freed, (int64_t)sw->st.bytes_deleted);
    if (rc < 0)
        cn_warn("store", "sweep stopped: %s", cn_strerror(rc));
    cn_log(sw->st.deleted || sw->st.pins_expired ? CN_LOG_INFO : CN_LOG_DEBUG, "store",
           "sweep: scanned %llu, young %llu, live %llu, pinned %llu, deleted %llu"
           " (%llu bytes), expired pins %llu",
           (unsigned long long)sw->st.scanned, (unsigned long long)sw->st.young,
           (unsigned long long)sw->st.live, (unsigned long long)sw->st.pinned,
           (unsigned long long)sw->st.deleted, (unsigned long long)sw->st.bytes_deleted,
           (unsigned long long)sw->st.pins_expired);
    if (out)
        *out = sw->st;
    free(sw);
    return rc;
}
