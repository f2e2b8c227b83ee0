/* The bounded set-associative cache (include/cairn/cache.h).
 *
 * A key's set is CN_CACHE_WAYS consecutive slots picked by its hash; finds
 * look in that set only.  An offer replaces the slot holding its key (when
 * newer), else takes an empty slot of the set or its least recently used
 * one, then, while the cost is over the budget, evicts the least recently
 * used entries of the whole cache.  Entries leave the cache under the writer
 * lock and are released after it is dropped, so a destructor never runs
 * with the lock held. */
#include "cairn/cache.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Entries one offer evicts at most: the array of them lives on the offering
 * thread's stack, whatever the cache's slot count. */
#define DROP_MAX 64

uint64_t cn_cache_hash(const char *key, size_t klen)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < klen; i++) {
        h ^= (uint8_t)key[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

cn_err_t cn_cache_init(cn_cache_t *c, size_t nslots, size_t budget)
{
    memset(c, 0, sizeof *c);
    /* Writers first: a steady stream of finds must not starve an offer. */
    pthread_rwlockattr_t at;
    pthread_rwlockattr_init(&at);
    pthread_rwlockattr_setkind_np(&at, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->mu, &at);
    pthread_rwlockattr_destroy(&at);
    atomic_init(&c->tick, 0);
    c->budget = budget;
    assert(nslots % CN_CACHE_WAYS == 0);
    if (!nslots)
        return 0;
    c->ent = calloc(nslots, sizeof *c->ent);
    c->used = calloc(nslots, sizeof *c->used);
    if (!c->ent || !c->used) {
        free(c->ent);
        free(c->used);
        c->ent = NULL;
        c->used = NULL;
        return -ENOMEM;
    }
    c->nslots = nslots;
    return 0;
}

void cn_cache_destroy(cn_cache_t *c)
{
    for (size_t i = 0; i < c->nslots; i++)
        cn_cent_release(c->ent[i]);
    free(c->ent);
    free(c->used);
    c->ent = NULL;
    c->used = NULL;
    c->nslots = 0;
    pthread_rwlock_destroy(&c->mu);
}

void cn_cent_release(cn_cent_t *e)
{
    if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
        e->destroy(e);
}

static size_t cache_set(const cn_cache_t *c, uint64_t hash)
{
    return (size_t)(hash % (c->nslots / CN_CACHE_WAYS)) * CN_CACHE_WAYS;
}

static bool same_key(const cn_cent_t *e, uint64_t hash, const char *key, size_t klen)
{
    return e && e->hash == hash && e->klen == klen && !memcmp(e->key, key, klen);
}

cn_cent_t *cn_cache_find(cn_cache_t *c, const char *key, size_t klen, int64_t v1, int64_t v2)
{
    if (!c->nslots)
        return NULL;
    uint64_t h = cn_cache_hash(key, klen);
    size_t base = cache_set(c, h);
    cn_cent_t *found = NULL;
    pthread_rwlock_rdlock(&c->mu);
    for (size_t i = base; i < base + CN_CACHE_WAYS; i++) {
        cn_cent_t *e = c->ent[i];
        if (same_key(e, h, key, klen) && e->v1 == v1 && e->v2 == v2) {
            atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
            /* Store only when it moves: a hot entry's line stays shared. */
            uint64_t t = atomic_load_explicit(&c->tick, memory_order_relaxed);
            if (atomic_load_explicit(&c->used[i], memory_order_relaxed) != t)
                atomic_store_explicit(&c->used[i], t, memory_order_relaxed);
            found = e;
            break;
        }
    }
    pthread_rwlock_unlock(&c->mu);
    return found;
}

bool cn_cache_has(cn_cache_t *c, const char *key, size_t klen)
{
    if (!c->nslots)
        return false;
    uint64_t h = cn_cache_hash(key, klen);
    size_t base = cache_set(c, h);
    bool found = false;
    pthread_rwlock_rdlock(&c->mu);
    for (size_t i = base; i < base + CN_CACHE_WAYS && !found; i++)
        found = same_key(c->ent[i], h, key, klen);
    pthread_rwlock_unlock(&c->mu);
    return found;
}

static uint64_t used_at(const cn_cache_t *c, size_t i)
{
    return atomic_load_explicit(&c->used[i], memory_order_relaxed);
}

/* The slot e goes to in its set: the one holding its key (NULL *keep when
 * that one is newer or as new: e is not kept), else an empty one, else the
 * least recently used.  Under c->mu held exclusively. */
static size_t offer_slot_locked(cn_cache_t *c, const cn_cent_t *e, size_t base, bool *keep)
{
    *keep = true;
    size_t victim = base;
    for (size_t i = base; i < base + CN_CACHE_WAYS; i++) {
        const cn_cent_t *o = c->ent[i];
        if (same_key(o, e->hash, e->key, e->klen)) {
            *keep = o->v1 < e->v1 || (o->v1 == e->v1 && o->v2 < e->v2);
            return i;
        }
        if (c->ent[victim] && (!o || used_at(c, i) < used_at(c, victim)))
            victim = i;
    }
    return victim;
}

/* Evicts the least recently used entries other than slot's into drop (room
 * for DROP_MAX, ndrop already used) while the cost is over the budget: the
 * new ndrop.  Under c->mu held exclusively. */
static size_t trim_locked(cn_cache_t *c, size_t slot, cn_cent_t **drop, size_t ndrop)
{
    while (c->cost > c->budget && ndrop < DROP_MAX) {
        size_t lru = slot;
        for (size_t i = 0; i < c->nslots; i++)
            if (i != slot && c->ent[i] && (lru == slot || used_at(c, i) < used_at(c, lru)))
                lru = i;
        if (lru == slot)
            break;
        c->cost -= c->ent[lru]->cost;
        drop[ndrop++] = c->ent[lru];
        c->ent[lru] = NULL;
    }
    return ndrop;
}

void cn_cache_offer(cn_cache_t *c, cn_cent_t *e)
{
    if (e->cost > c->budget || !c->nslots)
        return;
    cn_cent_t *drop[DROP_MAX];
    size_t ndrop = 0;
    pthread_rwlock_wrlock(&c->mu);
    bool keep;
    size_t slot = offer_slot_locked(c, e, cache_set(c, e->hash), &keep);
    if (keep) {
        if (c->ent[slot]) {
            c->cost -= c->ent[slot]->cost;
            drop[ndrop++] = c->ent[slot];
        }
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
        c->ent[slot] = e;
        uint64_t t = atomic_load_explicit(&c->tick, memory_order_relaxed) + 1;
        atomic_store_explicit(&c->tick, t, memory_order_relaxed);
        atomic_store_explicit(&c->used[slot], t, memory_order_relaxed);
        c->cost += e->cost;
        ndrop = trim_locked(c, slot, drop, ndrop);
    }
    pthread_rwlock_unlock(&c->mu);
    for (size_t i = 0; i < ndrop; i++)
        cn_cent_release(drop[i]);
}
