/* Per-token rate limits across a fleet (docs/identity.md, "Rate limiting";
 * issue 24).  Each node keeps its own token buckets (ratelimit.c), so a
 * request costs no round trip; every SYNC_MS a thread of the node adds the
 * requests it admitted per token to its row of cn_rate_use and reads the
 * other nodes' rows back, and what the others admitted since its last read
 * is taken out of its own bucket.  So every node's bucket is charged with
 * the whole fleet's use, and the fleet admits the limit, plus what nodes
 * admit before they hear of each other (the overshoot docs/identity.md
 * bounds).  Never runs on an engine with a single writer (SQLite: one node).
 *
 * Invariants:
 *  RS1. A row only grows: a sync adds the requests counted since the last
 *       one that committed (a bucket evicted and made again starts counting
 *       from 0 without lowering its row), and a failed add gives them back
 *       to the entry, to be added by the next sync.
 *  RS2. Other nodes' use is charged once: an entry keeps the sum it last
 *       read, and only a rise is charged; a fall (idle rows deleted) only
 *       moves the mark.  A new entry charges nothing at its first read.
 *  RS3. A bucket's debt is bounded (DEBT_SECONDS of its rate plus a burst):
 *       a node that was told of a burst elsewhere refuses for a while, not
 *       for ever.
 *  RS4. No shard lock is held across a statement: entries are copied out,
 *       the statements run, and the results go back by token id (an entry
 *       evicted meanwhile loses them, as it loses its bucket).
 *
 * It must never block a request: requests touch only the buckets. */
#include "identity_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define SYNC_MS 200
#define SYNC_MAX 128       /* tokens per sync: the most a node is busy with */
#define ACTIVE_MS 5000     /* a token used this recently keeps being read */
#define EXPIRE_EVERY 300   /* syncs between deletions of idle rows (a minute) */
#define IDLE_ROW_MS 600000 /* a row untouched this long belongs to no live process */
#define DEBT_SECONDS 1

typedef struct sync_row {
    uint64_t hash;
    char token_id[CN_TOKEN_ID_MAX + 1];
    int64_t add;    /* admitted here since the last sync */
    int64_t others; /* the other nodes' use, read back */
} sync_row_t;

typedef struct sync_batch {
    cn_identity_t *id;
    sync_row_t rows[SYNC_MAX];
    size_t n;
    bool expire;
} sync_batch_t;

/* Copies the entries worth a sync out of the buckets, taking their counts
 * (RS1, RS4). */
static void collect(cn_identity_t *id, sync_batch_t *b)
{
    int64_t now = cn_mono_ms();
    b->n = 0;
    for (size_t i = 0; i < CN__ID_RATE_SHARDS && b->n < SYNC_MAX; i++) {
        cn__rate_shard_t *s = &id->rate[i];
        pthread_mutex_lock(&s->mu);
        for (size_t j = 0; j < s->n && b->n < SYNC_MAX; j++) {
            cn__rate_entry_t *e = &s->e[j];
            if (e->unsynced == 0 && now - e->last_ms >= ACTIVE_MS)
                continue;
            sync_row_t *r = &b->rows[b->n++];
            r->hash = e->hash;
            memcpy(r->token_id, e->token_id, sizeof r->token_id);
            r->add = e->unsynced;
            r->others = -1;
            e->unsynced = 0;
        }
        pthread_mutex_unlock(&s->mu);
    }
}

static cn_err_t add_body(cn_meta_txn_t *txn, void *ctx)
{
    const sync_batch_t *b = ctx;
    const char *add = cn_meta_batch_text(txn, &cn__sql_id_engine[CN_SQL_ID_E_RATE_ADD]);
    cn_err_t e = CN_OK;
    for (size_t i = 0; i < b->n && e >= 0; i++)
        if (b->rows[i].add > 0)
            e = cn_meta_pushf(txn, add, "ssi", b->rows[i].token_id, b->id->node_key,
                              b->rows[i].add);
    if (e >= 0 && b->expire)
        e = cn_meta_pushf(txn, cn_meta_batch_text(txn, &cn__sql_id_engine[CN_SQL_ID_E_RATE_EXPIRE]),
                          "i", (int64_t)IDLE_ROW_MS);
    return e < 0 ? e : CN_OK;
}

static cn_err_t read_body(cn_meta_txn_t *txn, void *ctx)
{
    sync_batch_t *b = ctx;
    cn_err_t e = CN_OK;
    for (size_t i = 0; i < b->n && e >= 0; i++) {
        cn_meta_stmt_t *st = NULL;
        e = cn_meta_queryf(txn, &st, cn__sql_id[CN_SQL_ID_RATE_OTHERS], "ss", b->rows[i].token_id,
                           b->id->node_key);
        if (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
            b->rows[i].others = cn_meta_column_int64(st, 0);
            e = CN_OK;
        }
        cn_meta_finish(st);
    }
    return e;
}

/* One row's outcome into its entry: the counts of a failed add (RS1), the
 * others' rise as debt down to floor (RS2, RS3). */
static void charge(cn__rate_entry_t *e, const sync_row_t *r, bool added, int64_t floor)
{
    if (!added)
        e->unsynced += r->add;
    if (r->others < 0)
        return;
    if (e->others_seen >= 0 && r->others > e->others_seen) {
        e->milli -= (r->others - e->others_seen) * 1000;
        if (e->milli < floor)
            e->milli = floor;
    }
    e->others_seen = r->others;
}

/* Hands each row's outcome back to its entry (RS4: by token id). */
static void apply(cn_identity_t *id, const sync_batch_t *b, bool added)
{
    long long rate = atomic_load(&id->rate_milli), burst = atomic_load(&id->burst_milli);
    int64_t floor = -(int64_t)(rate * DEBT_SECONDS + burst);
    for (size_t i = 0; i < b->n; i++) {
        const sync_row_t *r = &b->rows[i];
        cn__rate_shard_t *s = &id->rate[r->hash % CN__ID_RATE_SHARDS];
        pthread_mutex_lock(&s->mu);
        cn__rate_entry_t *e = cn__id_rate_find(s, r->hash, r->token_id);
        if (e)
            charge(e, r, added, floor);
        pthread_mutex_unlock(&s->mu);
    }
}

/* One sync: the adds in one write transaction, the reads in one read. */
static void sync_once(sync_batch_t *b, unsigned round)
{
    cn_identity_t *id = b->id;
    collect(id, b);
    b->expire = round % EXPIRE_EVERY == 0;
    if (b->n == 0 && !b->expire)
        return;
    static cn_log_limit_t lim = { .period_ms = 60000, .burst = 1 };
    cn_err_t e = cn_meta_run(id->meta, CN_META_RUN_WRITE | CN_META_RETRY, add_body, b);
    if (e < 0)
        cn_warn_limited(&lim, "identity", "rate limits: adding this node's use failed: %s",
                        cn_strerror(e));
    if (e >= 0 && b->n)
        (void)cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, read_body, b);
    apply(id, b, e >= 0);
}

static void *sync_main(void *arg)
{
    cn_identity_t *id = arg;
    sync_batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->id = id;
    pthread_mutex_lock(&id->sync_mu);
    for (unsigned round = 1; !id->sync_stop; round++) {
        int64_t until = cn_mono_ns() + SYNC_MS * 1000000LL;
        struct timespec ts = { .tv_sec = until / 1000000000LL, .tv_nsec = until % 1000000000LL };
        while (!id->sync_stop && pthread_cond_timedwait(&id->sync_cv, &id->sync_mu, &ts) == 0) {
        }
        if (id->sync_stop)
            break;
        pthread_mutex_unlock(&id->sync_mu);
        sync_once(b, round);
        pthread_mutex_lock(&id->sync_mu);
    }
    pthread_mutex_unlock(&id->sync_mu);
    free(b);
    return NULL;
}

void cn__id_rate_sync_start(cn_identity_t *id)
{
    if (!id->meta || cn_meta_single_writer(id->meta))
        return;
    pthread_mutex_lock(&id->sync_mu);
    if (!id->sync_on) {
        uint8_t r[16];
        if (cn_random_bytes(r, sizeof r) < 0) {
            pthread_mutex_unlock(&id->sync_mu);
            cn_warn("identity", "rate limits: no random key; limits stay per node");
            return;
        }
        cn_hex_encode(r, sizeof r, id->node_key);
        id->sync_stop = false;
        id->sync_on = pthread_create(&id->sync_thread, NULL, sync_main, id) == 0;
        if (!id->sync_on)
            cn_warn("identity", "rate limits: no sync thread; limits stay per node");
    }
    pthread_mutex_unlock(&id->sync_mu);
}

void cn__id_rate_sync_stop(cn_identity_t *id)
{
    pthread_mutex_lock(&id->sync_mu);
    bool on = id->sync_on;
    id->sync_stop = true;
    id->sync_on = false;
    pthread_cond_broadcast(&id->sync_cv);
    pthread_mutex_unlock(&id->sync_mu);
    if (on)
        pthread_join(id->sync_thread, NULL);
}
