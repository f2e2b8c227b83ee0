/* The store's digest locks (src/store/dlock.c): a holder of one digest
 * never waits for a holder of another, even in the same slot (D1); a second
 * holder of the same digest waits until the first releases it; and under
 * many threads each digest's critical sections never overlap. */
#include "cn_test.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    cn_store_t *s;
    cn_digest_t d;
    atomic_bool got, release;
} holder_t;

/* Takes h->d's lock, says so, holds it until told to release. */
static void *hold(void *arg)
{
    holder_t *h = arg;
    cn__dheld_t dl;
    cn__dlock(h->s, &h->d, &dl);
    atomic_store(&h->got, true);
    while (!atomic_load(&h->release))
        sched_yield();
    cn__dunlock(h->s, &dl);
    return NULL;
}

/* Whether *flag is set within ms (a deadlock detector, not a timing check). */
static bool set_within(atomic_bool *flag, int ms)
{
    struct timespec t = { 0, 1000000 };
    for (int i = 0; i < ms && !atomic_load(flag); i++)
        nanosleep(&t, NULL);
    return atomic_load(flag);
}

static cn_store_t *bare_store(void)
{
    cn_store_t *s = calloc(1, sizeof *s);
    if (s)
        cn__dlock_init(s);
    return s;
}

static void digest(cn_digest_t *d, uint8_t first, uint8_t last)
{
    memset(d->b, 0, CN_DIGEST_LEN);
    d->b[0] = first; /* the slot */
    d->b[CN_DIGEST_LEN - 1] = last;
}

static void test_other_digest_of_the_slot_never_waits(void)
{
    cn_store_t *s = bare_store();
    CN_CHECK(s != NULL);
    cn_digest_t a, b;
    digest(&a, 7, 1);
    digest(&b, 7 + CN__STORE_DSLOTS, 2); /* the same slot, another digest */
    cn__dheld_t dl;
    cn__dlock(s, &a, &dl);
    holder_t other = { .s = s, .d = b };
    holder_t same = { .s = s, .d = a };
    pthread_t t1, t2;
    pthread_create(&t1, NULL, hold, &other);
    pthread_create(&t2, NULL, hold, &same);
    CN_CHECK(set_within(&other.got, 5000)); /* b's lock while a's is held */
    CN_CHECK(!set_within(&same.got, 200));  /* a's second holder waits */
    atomic_store(&other.release, true);
    pthread_join(t1, NULL);
    CN_CHECK(!atomic_load(&same.got)); /* b's release does not hand over a */
    cn__dunlock(s, &dl);
    CN_CHECK(set_within(&same.got, 5000));
    atomic_store(&same.release, true);
    pthread_join(t2, NULL);
    cn__dlock_destroy(s);
    free(s);
}

enum {
    THREADS = 8,
    ROUNDS = 20000,
    DIGESTS = 5
};

typedef struct {
    cn_store_t *s;
    cn_digest_t d[DIGESTS];
    long count[DIGESTS]; /* written only under its digest's lock */
    atomic_int inside[DIGESTS];
    atomic_int overlaps;
} crowd_t;

static void *churn(void *arg)
{
    crowd_t *c = arg;
    uint32_t x = (uint32_t)(uintptr_t)&x | 1u;
    for (int i = 0; i < ROUNDS; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        int k = (int)(x % DIGESTS);
        cn__dheld_t dl;
        cn__dlock(c->s, &c->d[k], &dl);
        if (atomic_fetch_add(&c->inside[k], 1) != 0)
            atomic_fetch_add(&c->overlaps, 1);
        c->count[k]++;
        atomic_fetch_sub(&c->inside[k], 1);
        cn__dunlock(c->s, &dl);
    }
    return NULL;
}

static void test_each_digest_is_held_by_one_at_a_time(void)
{
    crowd_t *c = calloc(1, sizeof *c);
    CN_CHECK(c != NULL);
    c->s = bare_store();
    CN_CHECK(c->s != NULL);
    for (int k = 0; k < DIGESTS; k++)
        digest(&c->d[k], 3, (uint8_t)k); /* all in one slot: the worst case */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, c);
    long total = 0;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int k = 0; k < DIGESTS; k++)
        total += c->count[k];
    CN_CHECK_EQ(atomic_load(&c->overlaps), 0);
    CN_CHECK_EQ(total, (long)THREADS * ROUNDS);
    cn__dlock_destroy(c->s);
    free(c->s);
    free(c);
}

CN_TEST_MAIN(CN_TEST(test_other_digest_of_the_slot_never_waits),
             CN_TEST(test_each_digest_is_held_by_one_at_a_time))
