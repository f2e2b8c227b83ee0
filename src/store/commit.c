/* The group committer: small blobs share one flush.
 *
 * A writer whose blob fits in its write buffer writes the staged file
 * without syncing it (or, packed, nothing), hands the request (with a
 * pointer to the bytes) here and waits.  The committer takes every request
 * queued so far as one batch, in two stages on two threads (pack.c, P11):
 *
 *   stage 1, the committer:
 *   1. append the packed requests' records to the open pack and fdatasync
 *      it (P1); append one journal record per other blob and fdatasync the
 *      journal — the batch's bytes are durable (W2, journal.c);
 *   2. rename each staged file into place under its digest lock (W3), or
 *      refresh an existing blob;
 *   stage 2, the indexer:
 *   3. index the packed records in meta, then in memory (P2);
 *   4. wake the batch's writers: their blobs are durable and visible (W4);
 *   and, back on the committer after the hand-over:
 *   5. every 64 MiB of journal, checkpoint: one backend sync makes the files
 *      and names durable and the journal is emptied.
 *
 * So while one batch's index transaction runs, the next batch's records
 * are being synced: the two waits overlap instead of adding up.  At most
 * one batch is between the stages.  Compaction (sweep.c) queues its moves
 * here too, so they share the batch's sync and never race the open pack's
 * tail.
 *
 * Each waiting writer is woken by a post to its own semaphore (req->wake),
 * never by a broadcast: only the writers of the finished batch run again.
 *
 * So a batch of N blobs costs one fdatasync instead of 2N fsyncs.  While one
 * batch is being flushed the next one queues, so the batch size grows with
 * the load by itself and a lone writer is not delayed.  A failed step fails
 * every request of the batch that it covers; a staged file that was not
 * renamed is removed by its writer.
 */
#include "store/store_int.h"

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cairn/util.h"

/* Stage 1, on the committer: packed records appended and synced (P1),
 * journalled blobs journalled and renamed (W1-W3); *st for stage 2. */
static void run_first(cn_store_t *s, cn__commit_req_t *batch, cn__commit_stage_t *st)
{
    bool journalled = false;
    for (cn__commit_req_t *r = batch; r; r = r->next)
        journalled |= !r->packed;
    /* Packed requests: their pack record is their journal (pack.c). */
    cn__pack_append(s, batch, &st->pack);
    cn_err_t rc = journalled ? cn__journal_commit(s, batch) : CN_OK;
    if (rc < 0)
        cn_error("store", "group commit: journal write failed: %s", cn_strerror(rc));
    st->new_files = st->new_bytes = 0;
    st->fail = CN_OK;
    for (cn__commit_req_t *r = batch; r; r = r->next) {
        if (r->packed)
            continue;
        if (rc < 0) {
            r->rc = rc;
            continue;
        }
        /* W1, W2: a staged file, renamed only after the synced journal. */
        assert(cn__store_is_staged_name(r->staged_name));
        cn__dheld_t dl;
        cn__dlock(s, &r->d, &dl);
        r->rc =
            s->be->ops->put(s->be, s->staging_fd, r->staged_name, &r->d, r->form, 0, &r->existed);
        bool counts = r->rc == CN_OK && !r->existed && cn__store_usage_file_new(s, &r->d);
        cn__dunlock(s, &dl);
        if (counts) {
            st->new_files++;
            st->new_bytes += (int64_t)r->payload_len;
        }
    }
}

/* Stage 2, on the indexer (or the committer, without one): packed rows
 * indexed (P2), the usage notes, then every writer of the batch woken. */
static cn_err_t run_second(cn_store_t *s, cn__commit_req_t *batch, const cn__commit_stage_t *st)
{
    cn_err_t rc = CN_OK;
    if (st->fail < 0)
        cn__pack_fail(batch, st->fail);
    else
        rc = cn__pack_index(s, batch, &st->pack);
    /* Files are noted (unless d is packed: its row counts it); packed blobs
     * were counted by their index rows' triggers, and only move the gauges
     * here (a compaction move is none, a migration's adopted file was
     * uncounted in the same transaction: pack.c).  One thread notes, so the
     * gauges never count a batch twice. */
    int64_t new_packed = 0, packed_bytes = 0;
    for (cn__commit_req_t *r = batch; r; r = r->next) {
        bool added = r->packed && r->rc == CN_OK && !r->existed && !r->move_pack && !r->adopt;
        new_packed += added;
        packed_bytes += added ? (int64_t)r->payload_len : 0;
    }
    if (st->new_files)
        cn__store_usage_note(s, st->new_files, st->new_bytes); /* sets the gauges from the totals */
    else if (new_packed)
        cn__store_usage_gauges_add(s, new_packed, packed_bytes);

    uint64_t n = 0;
    /* Each waiter is woken alone, on its own semaphore: a broadcast woke
     * every writer, also those queued for the next batch, and each then
     * slept again on q_mu (two switches per writer per batch).  A request
     * lives on its writer's stack: next and wake are read before the post,
     * after which r may be gone. */
    for (cn__commit_req_t *r = batch, *next; r; r = next) {
        next = r->next;
        sem_t *wake = r->wake;
        r->done = true;
        n++;
        if (wake)
            sem_post(wake);
    }
    pthread_mutex_lock(&s->q_mu);
    s->batches++;
    s->batched_blobs += n;
    pthread_mutex_unlock(&s->q_mu);
    cn_metric_observe(cn__store_metrics()->batch_blobs, (double)n);
    return rc;
}

/* The indexer: stage 2 of each handed-over batch, in order (P11).  The
 * batch stays in ix_batch until its writers are woken, so the committer
 * sees it in flight for as long as its records lack their index. */
static void *indexer_main(void *arg)
{
    cn_store_t *s = arg;
    pthread_mutex_lock(&s->ix_mu);
    for (;;) {
        while (!s->ix_batch && !s->ix_stop)
            pthread_cond_wait(&s->ix_cv, &s->ix_mu);
        if (!s->ix_batch)
            break; /* stopping, and nothing left */
        cn__commit_req_t *batch = s->ix_batch;
        cn__commit_stage_t st = s->ix_stage;
        pthread_mutex_unlock(&s->ix_mu);
        cn_err_t rc = run_second(s, batch, &st);
        pthread_mutex_lock(&s->ix_mu);
        s->ix_lock_err = rc == CN_E_DB_LOCKED || rc == CN_E_BUSY ? rc : CN_OK;
        s->ix_batch = NULL;
        pthread_cond_broadcast(&s->ix_cv);
    }
    pthread_mutex_unlock(&s->ix_mu);
    return NULL;
}

static void stop_indexer(cn_store_t *s)
{
    pthread_mutex_lock(&s->ix_mu);
    s->ix_stop = true;
    pthread_cond_broadcast(&s->ix_cv);
    pthread_mutex_unlock(&s->ix_mu);
    pthread_join(s->indexer, NULL);
    s->indexer_running = false;
}

void cn__committer_drain(cn_store_t *s)
{
    pthread_mutex_lock(&s->ix_mu);
    while (s->ix_batch)
        pthread_cond_wait(&s->ix_cv, &s->ix_mu);
    pthread_mutex_unlock(&s->ix_mu);
}

/* Hands batch to the indexer once the one before it is done (one batch in
 * flight at most), or runs stage 2 here when there is no indexer.  When the
 * one it waited for failed on a lock timeout (meta locked or busy past its
 * deadline), batch fails with it (P11): its writers have waited for the
 * same lock, and one more full deadline on top would break R3's bound
 * (src/meta/run.c) — a request waits at most two, as before the indexer. */
static void hand_over(cn_store_t *s, cn__commit_req_t *batch, cn__commit_stage_t *st)
{
    if (!s->indexer_running) {
        (void)run_second(s, batch, st);
        return;
    }
    bool waited = false;
    pthread_mutex_lock(&s->ix_mu);
    while (s->ix_batch) {
        waited = true;
        pthread_cond_wait(&s->ix_cv, &s->ix_mu);
    }
    if (waited && s->ix_lock_err < 0 && st->pack.any)
        st->fail = s->ix_lock_err;
    s->ix_batch = batch;
    s->ix_stage = *st;
    pthread_cond_broadcast(&s->ix_cv);
    pthread_mutex_unlock(&s->ix_mu);
}

/* The digests of a batch's packed requests into *into (the committer's
 * copy: the requests themselves may be gone once the indexer wakes their
 * writers); false when memory ran out, *into then incomplete. */
static bool note_digests(cn_buf_t *into, const cn__commit_req_t *batch)
{
    cn_buf_reset(into);
    for (const cn__commit_req_t *r = batch; r; r = r->next)
        if (r->packed && r->rc == CN_OK && cn_buf_append(into, r->d.b, CN_DIGEST_LEN) < 0)
            return false;
    return true;
}

/* P11: whether batch packs a digest the batch in flight (digests in prev)
 * appends; then its decision (P4) must wait for that one's index.  A
 * failed note (prev_ok false) answers true. */
static bool overlaps(const cn__commit_req_t *batch, const cn_buf_t *prev, bool prev_ok)
{
    if (!prev_ok)
        return true;
    for (const cn__commit_req_t *r = batch; r; r = r->next)
        for (size_t i = 0; r->packed && i < prev->len; i += CN_DIGEST_LEN)
            if (memcmp(prev->data + i, r->d.b, CN_DIGEST_LEN) == 0)
                return true;
    return false;
}

static void *committer_main(void *arg)
{
    cn_store_t *s = arg;
    cn_buf_t prev = { 0 }; /* digests of the batch last handed over */
    bool prev_ok = true;
    pthread_mutex_lock(&s->q_mu);
    for (;;) {
        while (!s->q_head && !s->q_stop)
            pthread_cond_wait(&s->q_cv, &s->q_mu);
        if (!s->q_head)
            break; /* stopping, and nothing left */
        cn__commit_req_t *batch = s->q_head;
        s->q_head = s->q_tail = NULL;
        pthread_mutex_unlock(&s->q_mu);

        if (overlaps(batch, &prev, prev_ok))
            cn__committer_drain(s);
        cn__commit_stage_t st;
        run_first(s, batch, &st);
        prev_ok = note_digests(&prev, batch);
        hand_over(s, batch, &st); /* batch may be gone after this */

        /* After the hand-over: the writers need not wait for a checkpoint. */
        cn_err_t crc = cn__journal_maybe_checkpoint(s);
        if (crc < 0)
            cn_error("store", "journal checkpoint failed (retried): %s", cn_strerror(crc));
        pthread_mutex_lock(&s->q_mu);
    }
    pthread_mutex_unlock(&s->q_mu);
    cn_buf_free(&prev);
    return NULL;
}

cn_err_t cn__committer_start(cn_store_t *s)
{
    (void)cn__store_metrics(); /* the families show (at 0) from the first scrape */
    s->ix_stop = false;
    int e = pthread_create(&s->indexer, NULL, indexer_main, s);
    if (e)
        return -e;
    s->indexer_running = true;
    pthread_setname_np(s->indexer, "cn-index");
    e = pthread_create(&s->committer, NULL, committer_main, s);
    if (e) {
        stop_indexer(s);
        return -e;
    }
    pthread_setname_np(s->committer, "cn-commit");
    s->committer_running = true;
    return CN_OK;
}

void cn__committer_stop(cn_store_t *s)
{
    if (!s->committer_running)
        return;
    pthread_mutex_lock(&s->q_mu);
    s->q_stop = true;
    pthread_cond_signal(&s->q_cv);
    pthread_mutex_unlock(&s->q_mu);
    pthread_join(s->committer, NULL);
    s->committer_running = false;
    stop_indexer(s); /* after the committer: it finishes the last batch */
}

/* Queues the chain first..last (linked, done false, wake NULL) and waits
 * until last is done: a chain is taken whole into one batch and its
 * requests are marked done in order, so last's wake-up comes after every
 * other request of the chain is done.  CN_E_SHUTDOWN if the committer is
 * stopping (nothing queued then). */
static cn_err_t enqueue_wait(cn_store_t *s, cn__commit_req_t *first, cn__commit_req_t *last)
{
    sem_t sem;
    if (sem_init(&sem, 0, 0) != 0)
        return -errno;
    last->wake = &sem;
    pthread_mutex_lock(&s->q_mu);
    if (s->q_stop) {
        pthread_mutex_unlock(&s->q_mu);
        sem_destroy(&sem);
        return CN_E_SHUTDOWN;
    }
    if (s->q_tail)
        s->q_tail->next = first;
    else
        s->q_head = first;
    s->q_tail = last;
    pthread_cond_signal(&s->q_cv);
    pthread_mutex_unlock(&s->q_mu);
    /* The committer drains the queue before it stops, so a queued chain is
     * always posted. */
    while (sem_wait(&sem) != 0)
        ; /* EINTR */
    assert(last->done);
    sem_destroy(&sem);
    return CN_OK;
}

cn_err_t cn__committer_submit(cn_store_t *s, cn__commit_req_t *req)
{
    req->next = NULL;
    req->done = false;
    req->wake = NULL;
    CN_TRY(enqueue_wait(s, req, req));
    /* W4: done is set only after the batch's journal sync and rename. */
    return req->rc;
}

void cn__committer_submit_packed(cn_store_t *s, cn__commit_req_t *reqs, size_t n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n; i++) {
        reqs[i].packed = true;
        reqs[i].done = false;
        reqs[i].rc = CN_OK;
        reqs[i].wake = NULL;
        reqs[i].next = i + 1 < n ? &reqs[i + 1] : NULL;
    }
    if (!s->committer_running) {
        /* batch_disable: no committer appends, so this thread may. */
        cn__pack_commit(s, reqs);
        return;
    }
    if (enqueue_wait(s, &reqs[0], &reqs[n - 1]) < 0)
        for (size_t i = 0; i < n; i++)
            reqs[i].rc = CN_E_SHUTDOWN;
}

static cn__store_metrics_t metrics;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void metrics_init(void)
{
    static const cn_metric_family_t blobs = {
        .name = "cairn_store_blobs_written_total",
        .help = "Blobs newly stored (not already present), by form.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t bytes = {
        .name = "cairn_store_written_bytes_total",
        .help = "Stored bytes of newly stored blobs, by form.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t fsync = {
        "cairn_store_fsync_duration_seconds",
        "Time of the store's data syncs: the group-commit journal, or a large blob.",
        CN_METRIC_HISTOGRAM,
        cn_metric_bounds_seconds,
        14,
    };
    static const cn_metric_family_t batch = {
        "cairn_store_commit_batch_blobs",
        "Blobs made durable by one group-commit journal sync.",
        CN_METRIC_HISTOGRAM,
        cn_metric_bounds_count,
        7,
    };
    static const cn_metric_family_t sweeps = {
        .name = "cairn_store_sweeps_total",
        .help = "Sweeper runs.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t freed = {
        .name = "cairn_store_sweep_freed_bytes_total",
        .help = "Bytes freed by the sweeper.",
        .kind = CN_METRIC_COUNTER,
    };
    metrics.blobs[CN_STORE_RAW] = cn_metric_series(NULL, &blobs, "form=\"raw\"");
    metrics.blobs[CN_STORE_LZ4] = cn_metric_series(NULL, &blobs, "form=\"lz4\"");
    metrics.bytes[CN_STORE_RAW] = cn_metric_series(NULL, &bytes, "form=\"raw\"");
    metrics.bytes[CN_STORE_LZ4] = cn_metric_series(NULL, &bytes, "form=\"lz4\"");
    metrics.fsync_journal = cn_metric_series(NULL, &fsync, "target=\"journal\"");
    metrics.fsync_blob = cn_metric_series(NULL, &fsync, "target=\"blob\"");
    metrics.batch_blobs = cn_metric_series(NULL, &batch, NULL);
    static const cn_metric_family_t hot_hits = {
        .name = "cairn_store_hot_hits_total",
        .help = "Small blobs' bytes served from the store's memory (no descriptor, no read).",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t hot_fills = {
        .name = "cairn_store_hot_fills_total",
        .help = "Small blobs read into the store's memory on their second look.",
        .kind = CN_METRIC_COUNTER,
    };
    metrics.hot_hits = cn_metric_series(NULL, &hot_hits, NULL);
    metrics.hot_fills = cn_metric_series(NULL, &hot_fills, NULL);
    metrics.sweeps = cn_metric_series(NULL, &sweeps, NULL);
    metrics.sweep_freed = cn_metric_series(NULL, &freed, NULL);
}

const cn__store_metrics_t *cn__store_metrics(void)
{
    pthread_once(&metrics_once, metrics_init);
    return &metrics;
}

void cn_store_counters(cn_store_t *s, cn_store_counters_t *out)
{
    pthread_mutex_lock(&s->q_mu);
    out->commit_batches = s->batches;
    out->commit_blobs = s->batched_blobs;
    out->checkpoints = s->checkpoints;
    pthread_mutex_unlock(&s->q_mu);
}
