/* Per-token rate limiting: one token bucket per token id, shared by every
 * connection of that token, in shards so tokens rarely contend.  Amounts are
 * kept in thousandths of a request.  A full shard replaces its least
 * recently used bucket (which, being idle, has refilled anyway).  On a
 * fleet, ratesync.c takes the other nodes' use out of the same buckets. */
#include "identity_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cairn/util.h"

void cn__id_rate_init(cn_identity_t *id)
{
    atomic_init(&id->rate_milli, 0);
    atomic_init(&id->burst_milli, 0);
    for (size_t i = 0; i < CN__ID_RATE_SHARDS; i++)
        pthread_mutex_init(&id->rate[i].mu, NULL);
    pthread_mutex_init(&id->sync_mu, NULL);
    cn_cond_init_mono(&id->sync_cv);
}

void cn__id_rate_destroy(cn_identity_t *id)
{
    cn__id_rate_sync_stop(id);
    pthread_cond_destroy(&id->sync_cv);
    pthread_mutex_destroy(&id->sync_mu);
    for (size_t i = 0; i < CN__ID_RATE_SHARDS; i++)
        pthread_mutex_destroy(&id->rate[i].mu);
}

void cn_identity_set_rate(cn_identity_t *id, double rate, double burst)
{
    if (!(rate > 0))
        rate = 0;
    if (rate > 1e9)
        rate = 1e9;
    if (!(burst >= 1))
        burst = rate >= 1 ? rate : 1;
    if (burst > 1e9)
        burst = 1e9;
    atomic_store(&id->burst_milli, (long long)(burst * 1000));
    atomic_store(&id->rate_milli, (long long)(rate * 1000));
    if (rate > 0)
        cn__id_rate_sync_start(id);
}

cn__rate_entry_t *cn__id_rate_find(cn__rate_shard_t *s, uint64_t hash, const char *token_id)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].hash == hash && strcmp(s->e[i].token_id, token_id) == 0)
            return &s->e[i];
    return NULL;
}

cn_err_t cn_identity_rate_take(cn_identity_t *id, const char *token_id)
{
    long long rate = atomic_load(&id->rate_milli);
    if (rate == 0)
        return 0;
    long long burst = atomic_load(&id->burst_milli);
    if (!token_id || strlen(token_id) > CN_TOKEN_ID_MAX)
        return CN_E_INVALID;
    uint64_t h = cn__id_hash(token_id);
    cn__rate_shard_t *s = &id->rate[h % CN__ID_RATE_SHARDS];
    int64_t now = cn_mono_ms();
    cn_err_t rc = 0;

    pthread_mutex_lock(&s->mu);
    cn__rate_entry_t *e = cn__id_rate_find(s, h, token_id);
    if (!e) {
        if (s->n < CN__ID_RATE_PER_SHARD) {
            e = &s->e[s->n++];
        } else {
            e = &s->e[0];
            for (size_t i = 1; i < s->n; i++)
                if (s->e[i].last_ms < e->last_ms)
                    e = &s->e[i];
        }
        e->hash = h;
        snprintf(e->token_id, sizeof e->token_id, "%s", token_id);
        e->milli = burst;
        e->last_ms = now;
        e->unsynced = 0;
        e->others_seen = -1;
    }
    int64_t elapsed = now - e->last_ms;
    if (elapsed > 0) {
        /* elapsed * rate can overflow only after ~290 years at 1e9/s; cap. */
        int64_t add = elapsed > 1000000 ? burst : elapsed * rate / 1000;
        e->milli = e->milli + add > burst ? burst : e->milli + add;
        e->last_ms = now;
    }
    if (e->milli > burst)
        e->milli = burst;
    if (e->milli >= 1000) {
        e->milli -= 1000;
        e->unsynced++;
    } else
        rc = CN_E_RATE_LIMITED;
    pthread_mutex_unlock(&s->mu);
    return rc;
}
