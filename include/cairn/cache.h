/* cairn cache: a bounded, set-associative cache of shared, refcounted,
 * versioned entries, for whatever a module wants to compute once and read
 * from many threads (compiled bucket settings, parsed ACLs, object heads,
 * LZ4 envelope indexes).
 *
 * This module must never grow past the bounds it was given (a slot count
 * and a budget of bytes), never hand out an entry whose key and version do
 * not match exactly, never let an older version displace a newer one, and
 * never run an entry's destructor while holding its lock.  It knows nothing
 * of what an entry holds.
 */
#ifndef CAIRN_CACHE_H
#define CAIRN_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An entry is immutable once offered to a cache, and freed (destroy) by
 * whoever drops its last reference.  key (klen bytes, inside the entry)
 * names it; (v1, v2) is its version, compared in that order: an entry is
 * found only by its exact key and version, and an offered entry replaces
 * one of the same key only when its version is newer, so a reader of an
 * older snapshot can never put older contents back in place of newer ones.
 * A module embeds one as the first member of its own entry type. */
typedef struct cn_cent {
    atomic_uint refs;
    uint64_t hash; /* of key: cn_cache_hash(key, klen) */
    const char *key;
    size_t klen;
    int64_t v1, v2;
    size_t cost; /* bytes it holds, roughly, for the cache's budget */
    void (*destroy)(struct cn_cent *e);
} cn_cent_t;

#define CN_CACHE_WAYS 4 /* slots one key may sit in */

/* At most nslots entries (a multiple of CN_CACHE_WAYS), and at most budget
 * bytes of their cost.  Thread-safe: finds share a reader lock (so threads
 * finding at once never wait for each other: no futex on a hit), offers take
 * it exclusively, held only to swap pointers; entries are destroyed outside
 * it.  Recency is counted in offers (tick moves only under the writer lock):
 * enough for the only decision it serves, which entry an offer evicts. */
typedef struct cn_cache {
    pthread_rwlock_t mu;
    size_t budget, cost; /* under mu held exclusively */
    _Atomic uint64_t tick;
    size_t nslots;
    cn_cent_t **ent;        /* nslots; written under mu exclusively */
    _Atomic uint64_t *used; /* nslots; the tick of the last find or offer */
} cn_cache_t;

/* -ENOMEM, or 0.  nslots 0 is a disabled cache: offers are dropped and finds
 * find nothing.  A cache that failed to initialize is a disabled one, and
 * may still be used and destroyed. */
CN_API cn_err_t cn_cache_init(cn_cache_t *c, size_t nslots, size_t budget);
/* Drops every entry the cache holds (those still held elsewhere live on). */
CN_API void cn_cache_destroy(cn_cache_t *c);
/* The entry of key at version (v1, v2), with a reference the caller
 * releases (cn_cent_release), or NULL. */
CN_API cn_cent_t *cn_cache_find(cn_cache_t *c, const char *key, size_t klen, int64_t v1,
                                int64_t v2);
/* Whether an entry of key is cached at some version: a hint, which an offer
 * may make wrong at once (for a caller that skips work to find nothing). */
CN_API bool cn_cache_has(cn_cache_t *c, const char *key, size_t klen);
/* Offers e (the caller keeps its own reference): the cache takes a reference
 * unless it holds the same key at a newer or equal version, or e alone is
 * over the budget.  Entries it displaces to stay within the budget, least
 * recently used first, are at most 64 per offer: past that the cost stays
 * over the budget until the next offer.  e->hash must be
 * cn_cache_hash(e->key, e->klen). */
CN_API void cn_cache_offer(cn_cache_t *c, cn_cent_t *e);
CN_API uint64_t cn_cache_hash(const char *key, size_t klen); /* FNV-1a */
CN_API void cn_cent_release(cn_cent_t *e);                   /* NULL is a no-op */

#ifdef __cplusplus
}
#endif

#endif
