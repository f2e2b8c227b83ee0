/* Digest locks: what serialises, in one process, everything that decides a
 * digest's existence (put, touch, delete, the sweeper's final check, guard
 * acquisition, pin insertion) for that digest alone.
 *
 * A digest lock is held across I/O that may be slow (a backend put of a
 * large blob, a network upload on the S3 tier, a pin's commit), so it must
 * never make a holder of another digest wait: a slot's mutex guards only
 * its list of held digests and is never held across anything but the
 * list's walk.  Invariants:
 *  D1. At most one holder of a digest at a time; a holder of d never waits
 *      for a holder of a different digest, whatever slot they share.
 *  D2. A slot's mutex is taken with no other store lock held and released
 *      before return: the lock order of the store (a digest lock, then
 *      guard_mu, then pack_mu or a descriptor-cache stripe) is about digest
 *      locks, not about these mutexes.
 *  D3. A release wakes the slot's waiters only when there are some. */
#include "store/store_int.h"

#include <assert.h>
#include <string.h>

static cn__dslot_t *slot_of(cn_store_t *s, const cn_digest_t *d)
{
    return &s->dslots[d->b[0] % CN__STORE_DSLOTS];
}

static bool held_locked(const cn__dslot_t *sl, const cn_digest_t *d)
{
    for (const cn__dheld_t *h = sl->held; h; h = h->next)
        if (!memcmp(h->d.b, d->b, CN_DIGEST_LEN))
            return true;
    return false;
}

void cn__dlock_init(cn_store_t *s)
{
    for (size_t i = 0; i < CN__STORE_DSLOTS; i++) {
        pthread_mutex_init(&s->dslots[i].mu, NULL);
        pthread_cond_init(&s->dslots[i].cv, NULL);
        s->dslots[i].held = NULL;
        s->dslots[i].waiting = 0;
    }
}

void cn__dlock_destroy(cn_store_t *s)
{
    for (size_t i = 0; i < CN__STORE_DSLOTS; i++) {
        assert(s->dslots[i].held == NULL);
        pthread_cond_destroy(&s->dslots[i].cv);
        pthread_mutex_destroy(&s->dslots[i].mu);
    }
}

void cn__dlock(cn_store_t *s, const cn_digest_t *d, cn__dheld_t *h)
{
    cn__dslot_t *sl = slot_of(s, d);
    h->d = *d;
    pthread_mutex_lock(&sl->mu);
    while (held_locked(sl, d)) { /* D1: only d's holder is waited for */
        sl->waiting++;
        pthread_cond_wait(&sl->cv, &sl->mu);
        sl->waiting--;
    }
    h->next = sl->held;
    sl->held = h;
    pthread_mutex_unlock(&sl->mu);
}

void cn__dunlock(cn_store_t *s, cn__dheld_t *h)
{
    cn__dslot_t *sl = slot_of(s, &h->d);
    pthread_mutex_lock(&sl->mu);
    cn__dheld_t **pp = &sl->held;
    while (*pp != h)
        pp = &(*pp)->next;
    *pp = h->next;
    if (sl->waiting) /* D3 */
        pthread_cond_broadcast(&sl->cv);
    pthread_mutex_unlock(&sl->mu);
}
