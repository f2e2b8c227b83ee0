/* Liveness sources and the sweeper.
 *
 * Sweeper invariants (docs/store.md, "Sweeper"):
 *  S1. A blob is removed only if its mtime is older than now − grace when
 *      checked under its digest lock immediately before the unlink.  Publish
 *      (also an idempotent one) and cn_store_touch refresh the mtime under
 *      the same lock, so a blob being (re)published is never removed, and a
 *      publish that comes after the removal stores the blob anew.
 *  S2. No guard is held on it, and none was taken or released since its
 *      batch's liveness question began, checked under the digest lock;
 *      guards are acquired under that lock, so one taken later protects only
 *      a future publish, and one taken earlier is always seen.  The second
 *      half matters for a grace shorter than a put: a writer guards its blob
 *      from publish to commit, and a commit after the liveness answer but
 *      before this check would otherwise go unseen once the guard is gone.
 *  S3. No unexpired durable pin names it, read in a transaction begun under
 *      the digest lock; cn_store_pin holds that lock through its commit.
 *  S4. Every registered liveness source answered "not live" during this
 *      sweep (asked without store locks, since a source may query meta).  A
 *      reference recorded after that answer is safe because its writer
 *      published or touched the blob within the grace window (S1): the
 *      contract of cn_store_touch.  The grace window must exceed the longest
 *      time a service takes from publish to committing its reference.
 *  S5. Any error from a source or from meta stops the sweep: when in doubt,
 *      keep.
 *
 * A tier shared by a fleet (s->blob_rows: the S3 tier on an engine that is
 * not single-writer, PostgreSQL) is also written by other nodes, whose puts
 * take none of this node's digest locks.  The digest's store_blob row and
 * its row lock stand in for the digest lock across nodes (docs/fleet.md,
 * "Sweeper"):
 *  S6. A backend object is removed only inside one metadata write
 *      transaction that holds its digest's row locked (SELECT … FOR UPDATE;
 *      the row is inserted first, with the backend's mtime, for a blob put
 *      before rows existed) and that found, in that same transaction, the
 *      row's touched_ms no later than now − grace and no unexpired pin (S1
 *      and S3 checked again under the row lock), both on the database's
 *      clock: every node writes touched_ms and pin expiries on it (S7), so
 *      a node whose own clock runs behind cannot make a fresh touch or a
 *      live pin look old to the sweeper of another.  The object is deleted
 *      while the lock is held, then the row, then the transaction commits.
 *      A failed DELETE rolls it back (kept, S5).
 *  S7. Every publish, cn_store_touch and cn_store_pin of a digest on such a
 *      tier first upserts its row (touched_ms = the database's now; a pin in its own
 *      transaction) and commits, which takes the row's lock and so waits
 *      for a sweeper holding it; only then does it ask the backend.  So
 *      either the upsert committed before the sweeper locked the row, and
 *      the sweeper sees a fresh touched_ms or the pin and keeps the blob (a
 *      sweeper whose snapshot is older than the upsert fails to lock the
 *      row with a serialization failure and decides again), or the sweeper
 *      held the lock first and its DELETE was answered before the upsert
 *      returned: the put then finds the object absent and uploads it anew,
 *      a touch answers CN_E_NOT_FOUND, and a pin protects what is put next.
 *      Whether the sweeper's transaction then commits or fails does not
 *      matter: the object is gone either way, and a row left behind is
 *      only reused by the next put.
 *  S8. Waits are bounded: a sweeper holds a row for one backend DELETE (its
 *      request deadline); an upsert waits for it at most lock_timeout (the
 *      busy timeout) per attempt, repeated on contention until twice the
 *      busy timeout, then fails and nothing is acknowledged.
 * On a single-writer engine (SQLite) one process owns the metadata and its
 * digest locks order every put, touch and pin against its sweeper (S1-S3):
 * no row is kept there (the sweeper would otherwise hold the only writer,
 * and with it every write of the node, across an HTTP DELETE).
 *
 * Packed blobs (pack.c) are walked after the file tree, from a snapshot of
 * the memory index, and decided by the same S1-S5.  Removing one drops its
 * index row (P6); its bytes stay in the pack until compaction below.
 *
 * Compaction invariants (a pass runs at the end of every sweep, or alone
 * through cn_store_compact; sweep_mu makes it the only one):
 *  C1. Compaction never decides liveness: it moves what the index holds and
 *      drops nothing.  A blob the sweeper removed has no entry and is not
 *      copied; a blob with an entry is copied whatever its age, so S1-S5
 *      stay the only way a blob goes.  It never touches mtimes (a move is
 *      not a publish: grace keeps counting from the last put or touch).
 *  C2. A record is copied only after its bytes are read back and checked
 *      (CRC and digest): a corrupt record is never copied, and its pack is
 *      kept (reported) so the bad bytes stay where a scrub can find them.
 *  C3. A copy rides a committer batch (P7): appended to the open pack and
 *      fdatasynced (P1) before its index row moves, in that batch's meta
 *      transaction, with an UPDATE conditional on the old location; only
 *      then does its memory entry move, under the digest lock and only if
 *      still at the old location.  So the guard and grace rules need nothing
 *      new: a delete, touch or re-put of the digest takes the same digest
 *      lock, wins over a move it races, and a move never resurrects a blob
 *      (it changes a row only where one still exists).
 *  C4. A pack is retired only when no memory entry and no meta row names it
 *      (checked in the transaction that marks it, indexed_end = -1, which
 *      commits durably); then its file is unlinked and the directory
 *      fsynced, then its row is dropped.  A crash before the mark leaves the
 *      old pack whole (rows still point at it, or at synced copies); after
 *      the mark, the next open finishes the unlink (P8).
 *  C5. Readers look a location up under pack_mu and pread without it, so a
 *      retired pack's descriptor is not closed by its pass but by the next
 *      one (or at close): a reader holding an old (pack, offset) reads the
 *      old, unchanged bytes of the unlinked file.  A pack id is never
 *      reused (new packs take the largest id + 1, and the open pack, the
 *      largest, is never compacted), and every read checks the record's
 *      digest, so an old location can never serve other bytes.  Descriptors
 *      lent by cn_store_fd_get_at are counted borrows, closed only after
 *      their cn_store_fd_put, and those of cn_store_open_fd_at duplicates:
 *      both keep the unlinked file readable on their own (pack.c, P9).
 *  C6. Any error stops the pass (when in doubt, keep): copies already moved
 *      stay valid, copies not yet indexed are dead space in the open pack
 *      that a later pass reclaims, and the source pack is kept.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cairn/util.h"
#include "meta/sql/store.h"

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
    int64_t cutoff_ms; /* on this node's clock */
    int64_t grace_ms;
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

/* ---- the blob row of a shared tier (S6-S8) ------------------------------------ */

/* Test hook (CAIRN_TEST_SWEEP_HOLD=FILE, read at open; docs/fleet.md): while
 * FILE exists and is empty or holds d's hex, the sweeper, with d's row locked
 * and its decision made, writes FILE.held (this process's id) and waits for
 * FILE to go (60 s at most) before the DELETE; FILE.held goes after. */
static void sweep_hold(const cn_store_t *s, const cn_digest_t *d)
{
    char want[CN_DIGEST_HEX_LEN + 2] = "", hex[CN_DIGEST_HEX_LEN + 1], held[4200];
    FILE *f = s->sweep_hold ? fopen(s->sweep_hold, "r") : NULL;
    if (!f)
        return;
    bool any = fscanf(f, "%65s", want) != 1;
    fclose(f);
    cn_digest_hex(d, hex);
    if ((!any && strcmp(want, hex) != 0) ||
        snprintf(held, sizeof held, "%s.held", s->sweep_hold) >= (int)sizeof held)
        return;
    if ((f = fopen(held, "w")) != NULL) {
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
    }
    for (int i = 0; i < 3000 && access(s->sweep_hold, F_OK) == 0; i++)
        cn_sleep_ms(20);
    (void)unlink(held);
}

typedef enum {
    ROW_YOUNG,
    ROW_PINNED,
    ROW_REMOVED
} row_fate_t;

/* One candidate's locked decision (S6).  fate is an attempt's; deleted and
 * freed record the DELETE, which no rollback undoes (a repeated attempt
 * finds the object gone). */
typedef struct row_sweep {
    sweep_t *sw;
    const cn_digest_t *d;
    int64_t mtime_ms; /* the backend's: the row of a blob put before rows */
    row_fate_t fate;
    bool deleted;
    uint64_t freed;
} row_sweep_t;

/* d's row, inserted if missing and locked: *touched (INT64_MAX: none) and
 * the database's clock, *now. */
static cn_err_t row_lock(cn_meta_txn_t *txn, const row_sweep_t *r, int64_t *touched, int64_t *now)
{
    *touched = INT64_MAX;
    CN_TRY(cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_BLOB_ADD], "bi", r->d->b,
                         (size_t)CN_DIGEST_LEN, r->mtime_ms));
    cn_meta_stmt_t *st = NULL;
    cn_err_t rc = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_BLOB_LOCK]), "b",
        r->d->b, (size_t)CN_DIGEST_LEN);
    if (rc >= 0 && (rc = cn_meta_step(st)) == CN_META_ROW) {
        *touched = cn_meta_column_int64(st, 0);
        *now = cn_meta_column_int64(st, 1);
    }
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

static cn_err_t row_sweep_body(cn_meta_txn_t *txn, void *ctx)
{
    row_sweep_t *r = ctx;
    cn_store_t *s = r->sw->s;
    int64_t touched, now = 0;
    uint64_t freed = 0;
    r->fate = ROW_YOUNG;
    CN_TRY(row_lock(txn, r, &touched, &now));
    cn_err_t rc = CN_OK;
    if (touched > now - r->sw->grace_ms)
        goto keep; /* S1 under the row lock: a put or touch since the listing */
    rc = cn__store_pin_find_live(txn, r->d);
    if (rc < 0)
        return rc;
    if (rc == CN_META_ROW) {
        r->fate = ROW_PINNED; /* S3 under the row lock */
        goto keep;
    }
    sweep_hold(s, r->d);
    /* The backend itself, not cn__store_remove_locked: its usage note is a
     * write run, which this thread may not begin inside this one. */
    rc = s->be->ops->remove(s->be, r->d, &freed); /* the row still locked */
    if (rc < 0 && rc != CN_E_NOT_FOUND)
        return rc; /* rolled back: kept */
    if (rc == CN_OK) {
        r->deleted = true;
        r->freed = freed;
    }
    r->fate = ROW_REMOVED;
    rc = cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_BLOB_DELETE], "b", r->d->b,
                       (size_t)CN_DIGEST_LEN);
    return rc < 0 ? rc : CN_OK;
keep:
    cn_meta_discard(txn); /* nothing to write; a row inserted here can wait */
    return CN_OK;
}

/* S6 for one candidate that passed S1, S2 and S4 (under its digest lock). */
static cn_err_t remove_by_row(sweep_t *sw, const cn_digest_t *d, int64_t mtime_ms)
{
    cn_store_t *s = sw->s;
    row_sweep_t r = { .sw = sw, .d = d, .mtime_ms = mtime_ms };
    cn_err_t rc = cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, row_sweep_body, &r);
    if (r.deleted) { /* whatever the transaction's fate (S7) */
        cn__fdc_forget(s, d);
        cn__store_usage_note(s, -1, -(int64_t)r.freed);
        sw->st.deleted++;
        sw->st.bytes_deleted += r.freed;
    } else if (rc >= 0 && r.fate == ROW_YOUNG) {
        sw->st.young++;
    } else if (rc >= 0 && r.fate == ROW_PINNED) {
        sw->st.pinned++;
    }
    return rc < 0 ? rc : CN_OK;
}

/* S1–S3 for one candidate, under its digest lock. */
static cn_err_t remove_if_dead(sweep_t *sw, const cn_digest_t *d)
{
    cn_store_t *s = sw->s;
    cn__dheld_t dl;
    cn__be_stat_t bst;
    bool pinned = false;
    uint64_t freed = 0;
    cn__dlock(s, d, &dl);
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
    if (s->blob_rows) {
        rc = remove_by_row(sw, d, bst.mtime_ms);
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
    cn__dunlock(s, &dl);
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

/* ---- compaction ------------------------------------------------------------ */

#define COMPACT_CHUNK (4u << 20) /* bytes of records per committer round */

/* How many records from v[first] on make the next chunk (at least one, at
 * most COMPACT_CHUNK bytes with hdr bytes added to each); *bytes their sum. */
static size_t take_chunk(const cn__pack_live_t *v, size_t n, size_t first, uint64_t hdr,
                         uint64_t *bytes)
{
    size_t k = 0;
    *bytes = 0;
    while (first + k < n && (k == 0 || *bytes + hdr + v[first + k].len <= COMPACT_CHUNK))
        *bytes += hdr + v[first + k++].len;
    return k;
}

/* C2, C3: copies one chunk of pack id's live records, from ents[*next] on. */
static cn_err_t move_chunk(cn_store_t *s, uint32_t id, const cn__pack_live_t *ents, size_t n,
                           size_t *next, cn_store_compact_stats_t *st, bool *corrupt)
{
    uint64_t bytes = 0;
    size_t first = *next, k = take_chunk(ents, n, first, CN__PACK_REC_HDR, &bytes);
    *next = first + k;
    uint8_t *buf = malloc(bytes);
    cn__commit_req_t *reqs = calloc(k, sizeof *reqs);
    cn_err_t rc = buf && reqs ? CN_OK : -ENOMEM;
    size_t m = 0;
    uint64_t at = 0;
    for (size_t i = 0; rc == CN_OK && i < k; i++) {
        const cn__pack_live_t *e = &ents[first + i];
        rc = cn__pack_read_record(s, id, e, buf + at);
        if (rc == CN_E_CORRUPT || rc == CN_E_NOT_FOUND) {
            *corrupt |= rc == CN_E_CORRUPT; /* C2: never copied, the pack stays */
            rc = CN_OK;
            continue;
        }
        reqs[m] = (cn__commit_req_t){ .payload = buf + at + CN__PACK_REC_HDR,
                                      .payload_len = e->len,
                                      .d = e->d,
                                      .form = CN_STORE_RAW,
                                      .move_pack = id,
                                      .move_off = e->off };
        m++;
        at += CN__PACK_REC_HDR + e->len;
    }
    if (rc == CN_OK)
        cn__committer_submit_packed(s, reqs, m);
    for (size_t i = 0; rc == CN_OK && i < m; i++) {
        if (reqs[i].rc < 0) {
            rc = reqs[i].rc;
        } else {
            st->records_moved++;
            st->bytes_moved += CN__PACK_REC_HDR + reqs[i].payload_len;
        }
    }
    free(reqs);
    free(buf);
    return rc;
}

/* One pack: move its live records, then retire it (C3, C4). */
static cn_err_t compact_pack(cn_store_t *s, uint32_t id, cn_store_compact_stats_t *st)
{
    cn__pack_live_t *ents = NULL;
    size_t n = 0, next = 0;
    bool corrupt = false;
    CN_TRY(cn__pack_live_list(s, id, &ents, &n));
    cn_err_t rc = CN_OK;
    while (rc == CN_OK && next < n)
        rc = move_chunk(s, id, ents, n, &next, st, &corrupt);
    free(ents);
    if (rc < 0)
        return rc;
    cn__pack_compact_crash(s, 3);
    uint64_t freed = 0;
    rc = corrupt ? CN_E_BUSY : cn__pack_retire(s, id, &freed);
    if (rc == CN_E_BUSY) {
        st->packs_kept++; /* something still lives there: next pass */
        return CN_OK;
    }
    if (rc == CN_OK) {
        st->packs_retired++;
        st->bytes_freed += freed;
    }
    return rc;
}

static cn_err_t compact_locked(cn_store_t *s, unsigned pct, cn_store_compact_stats_t *st)
{
    memset(st, 0, sizeof *st);
    if (!pct)
        pct = s->opts.pack_compact_pct ? s->opts.pack_compact_pct : 50;
    if (pct > 100)
        return CN_E_INVALID;
    cn__pack_reap(s); /* C5: the previous pass's retired descriptors */
    cn__pack_usage_t *u = NULL;
    size_t n = 0;
    CN_TRY(cn__pack_usage(s, &u, &n));
    cn_err_t rc = CN_OK;
    for (size_t i = 0; i < n && rc == CN_OK; i++) {
        st->packs++;
        if (u[i].live * 100 < u[i].size * pct)
            rc = compact_pack(s, u[i].id, st);
    }
    free(u);
    if (rc < 0)
        cn_warn("store", "compaction stopped: %s", cn_strerror(rc));
    cn_log(st->packs_retired || st->packs_kept ? CN_LOG_INFO : CN_LOG_DEBUG, "store",
           "compaction: %llu pack(s), %llu retired (%llu bytes freed), %llu record(s) moved"
           " (%llu bytes), %llu kept",
           (unsigned long long)st->packs, (unsigned long long)st->packs_retired,
           (unsigned long long)st->bytes_freed, (unsigned long long)st->records_moved,
           (unsigned long long)st->bytes_moved, (unsigned long long)st->packs_kept);
    return rc;
}

cn_err_t cn_store_compact(cn_store_t *s, unsigned live_pct, cn_store_compact_stats_t *out)
{
    cn_store_compact_stats_t st;
    pthread_mutex_lock(&s->sweep_mu);
    cn_err_t rc = compact_locked(s, live_pct, &st);
    pthread_mutex_unlock(&s->sweep_mu);
    if (out)
        *out = st;
    return rc;
}

/* ---- the sweep -------------------------------------------------------------- */

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
    sw->grace_ms = grace_ms;
    cn_err_t rc = cn__store_pins_expire(s, &sw->st.pins_expired);
    if (rc == CN_OK)
        rc = s->be->ops->list(s->be, on_blob, sw);
    if (rc == CN_OK)
        rc = cn__pack_list(s, on_blob, sw);
    if (rc == CN_OK && sw->n)
        rc = flush_batch(sw);
    cn__store_guard_watch(s, false);
    if (rc == CN_OK && s->pack_on) {
        cn_store_compact_stats_t cst;
        (void)compact_locked(s, 0, &cst); /* logged; the sweep itself succeeded */
    }
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

/* ---- migration: small files into packs (P10 in pack.c) ----------------------- */

typedef struct adopt_list {
    uint64_t max;
    cn_buf_t cand; /* cn__pack_live_t: digest and size (off unused) */
    cn_store_pack_stats_t *st;
} adopt_list_t;

static cn_err_t on_file(void *ctx, const cn_digest_t *d, const cn__be_stat_t *bst)
{
    adopt_list_t *al = ctx;
    al->st->files++;
    if (bst->form != CN_STORE_RAW || bst->size > al->max)
        return CN_OK;
    cn__pack_live_t c = { *d, 0, (uint32_t)bst->size };
    return cn_buf_append(&al->cand, &c, sizeof c);
}

/* The whole file of c, checked against its digest, into buf: CN_E_CORRUPT
 * (never packed: the file stays for a scrub), CN_E_NOT_FOUND (gone). */
static cn_err_t read_file_checked(cn_store_t *s, const cn__pack_live_t *c, uint8_t *buf)
{
    int fd = -1;
    cn__be_stat_t st;
    CN_TRY(s->be->ops->open(s->be, &c->d, &fd, &st));
    cn_err_t rc = st.size == c->len && st.form == CN_STORE_RAW ? CN_OK : CN_E_CORRUPT;
    size_t got = 0;
    while (rc == CN_OK && got < c->len) {
        ssize_t r = pread(fd, buf + got, c->len - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        rc = r < 0 ? -errno : r == 0 ? CN_E_CORRUPT : CN_OK;
        got += r > 0 ? (size_t)r : 0;
    }
    close(fd);
    cn_digest_t h;
    if (rc == CN_OK && (cn_blake3(buf, c->len, &h), memcmp(h.b, c->d.b, CN_DIGEST_LEN) != 0))
        rc = CN_E_CORRUPT;
    if (rc == CN_E_CORRUPT) {
        char hex[CN_DIGEST_HEX_LEN + 1];
        cn_digest_hex(&c->d, hex);
        cn_error("store", "pack migration: blob file %s fails its digest (kept)", hex);
    }
    return rc;
}

/* P10, after the batch: the file goes only where the pack now holds d. */
static void drop_adopted_file(cn_store_t *s, const cn__commit_req_t *r, cn_store_pack_stats_t *st)
{
    cn__pack_loc_t loc;
    cn__dheld_t dl;
    cn__dlock(s, &r->d, &dl);
    bool packed = cn__pack_find(s, &r->d, &loc);
    cn_err_t rc = packed ? s->be->ops->remove(s->be, &r->d, NULL) : CN_E_NOT_FOUND;
    if (rc == CN_OK) /* uncounted by the index transaction (pack.c): its row counts it */
        cn__fdc_forget(s, &r->d);
    cn__dunlock(s, &dl);
    if (rc == CN_OK) {
        st->moved++;
        st->bytes_moved += r->payload_len;
    } else {
        st->kept++;
    }
}

/* One chunk of candidates, from cand[*next] on: read, checked, appended as
 * one batch, then their files removed. */
static cn_err_t adopt_chunk(cn_store_t *s, const cn__pack_live_t *cand, size_t n, size_t *next,
                            cn_store_pack_stats_t *st)
{
    uint64_t bytes = 0;
    size_t first = *next, k = take_chunk(cand, n, first, 0, &bytes);
    *next = first + k;
    uint8_t *buf = malloc(bytes ? bytes : 1);
    cn__commit_req_t *reqs = calloc(k, sizeof *reqs);
    cn_err_t rc = buf && reqs ? CN_OK : -ENOMEM;
    size_t m = 0;
    uint64_t at = 0;
    for (size_t i = 0; rc == CN_OK && i < k; i++) {
        const cn__pack_live_t *c = &cand[first + i];
        rc = read_file_checked(s, c, buf + at);
        if (rc == CN_E_CORRUPT || rc == CN_E_NOT_FOUND) {
            st->kept++;
            rc = CN_OK;
            continue;
        }
        reqs[m++] = (cn__commit_req_t){ .payload = buf + at,
                                        .payload_len = c->len,
                                        .d = c->d,
                                        .form = CN_STORE_RAW,
                                        .adopt = true };
        at += c->len;
    }
    if (rc == CN_OK)
        cn__committer_submit_packed(s, reqs, m);
    for (size_t i = 0; rc == CN_OK && i < m; i++) {
        if (reqs[i].rc < 0)
            rc = reqs[i].rc; /* nothing of it removed: the file stays (C6) */
        else
            drop_adopted_file(s, &reqs[i], st);
    }
    free(reqs);
    free(buf);
    return rc;
}

cn_err_t cn_store_pack_files(cn_store_t *s, uint64_t max_bytes, cn_store_pack_stats_t *out)
{
    cn_store_pack_stats_t st = { 0 };
    adopt_list_t al = { .max = max_bytes ? max_bytes : CN_STORE_PACK_DEFAULT_MAX, .st = &st };
    if (al.max > CN__STORE_IO_CHUNK)
        return CN_E_INVALID;
    if (!s->pack_on)
        return CN_E_UNSUPPORTED;
    pthread_mutex_lock(&s->sweep_mu);
    cn_err_t rc = s->be->ops->list(s->be, on_file, &al);
    const cn__pack_live_t *cand = (const cn__pack_live_t *)al.cand.data;
    size_t n = al.cand.len / sizeof *cand, next = 0;
    st.candidates = n;
    while (rc == CN_OK && next < n)
        rc = adopt_chunk(s, cand, n, &next, &st);
    pthread_mutex_unlock(&s->sweep_mu);
    cn_buf_free(&al.cand);
    if (rc < 0)
        cn_warn("store", "pack migration stopped: %s (nothing lost; run it again)",
                cn_strerror(rc));
    if (out)
        *out = st;
    return rc;
}
