/* util: the bounded set-associative cache (cairn/cache.h): an entry is
 * found by its exact key and version, a newer version replaces an older one
 * and never the reverse, the budget evicts the least recently used others,
 * and an entry evicted or dropped while held lives until its last release. */
#include "cn_test.h"
#include "cairn/cache.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ent {
    cn_cent_t ent;
    char kbuf[24];
} ent_t;

static int destroyed; /* entries whose last reference went */

static void ent_destroy(cn_cent_t *e)
{
    destroyed++;
    free(e);
}

/* A new entry of key name at version (v1, 0) and cost, held once by the
 * caller. */
static ent_t *ent_new(const char *name, int64_t v1, size_t cost)
{
    ent_t *e = calloc(1, sizeof *e);
    atomic_init(&e->ent.refs, 1);
    e->ent.destroy = ent_destroy;
    snprintf(e->kbuf, sizeof e->kbuf, "%s", name);
    e->ent.key = e->kbuf;
    e->ent.klen = strlen(e->kbuf);
    e->ent.hash = cn_cache_hash(e->ent.key, e->ent.klen);
    e->ent.v1 = v1;
    e->ent.cost = cost;
    return e;
}

/* Offers a new entry and drops the caller's reference: the cache's is all
 * that keeps it. */
static void put(cn_cache_t *c, const char *name, int64_t v1, size_t cost)
{
    ent_t *e = ent_new(name, v1, cost);
    cn_cache_offer(c, &e->ent);
    cn_cent_release(&e->ent);
}

/* c initialized, and the destroy count from zero. */
static void start(cn_cache_t *c, size_t nslots, size_t budget)
{
    CN_CHECK_EQ(cn_cache_init(c, nslots, budget), 0);
    destroyed = 0;
}

static cn_cent_t *find(cn_cache_t *c, const char *name, int64_t v1)
{
    return cn_cache_find(c, name, strlen(name), v1, 0);
}

/* Whether name at v1 is held by c (the reference find took is dropped). */
static bool has(cn_cache_t *c, const char *name, int64_t v1)
{
    cn_cent_t *e = find(c, name, v1);
    cn_cent_release(e);
    return e != NULL;
}

static void test_find_offer(void)
{
    cn_cache_t c;
    start(&c, 64, 1000);
    ent_t *a = ent_new("alpha", 7, 10);
    CN_CHECK(!has(&c, "alpha", 7));
    CN_CHECK(!cn_cache_has(&c, "alpha", 5));
    cn_cache_offer(&c, &a->ent);
    CN_CHECK(cn_cache_has(&c, "alpha", 5)); /* at any version */
    CN_CHECK(!cn_cache_has(&c, "alph", 4));
    CN_CHECK_EQ(atomic_load(&a->ent.refs), 2); /* the caller's and the cache's */
    cn_cent_t *f = find(&c, "alpha", 7);
    CN_CHECK(f == &a->ent);
    CN_CHECK_EQ(atomic_load(&a->ent.refs), 3);
    cn_cent_release(f);
    CN_CHECK(!has(&c, "alpha", 8));  /* another version */
    CN_CHECK(!has(&c, "alph", 7));   /* another key */
    CN_CHECK(!has(&c, "alpha!", 7)); /* another key */
    CN_CHECK_EQ(cn_cache_find(&c, "alpha", 5, 7, 1) == NULL, 1);
    cn_cent_release(&a->ent);
    CN_CHECK_EQ(destroyed, 0); /* still the cache's */
    CN_CHECK(has(&c, "alpha", 7));
    cn_cache_destroy(&c);
    CN_CHECK_EQ(destroyed, 1);
}

static void test_version_replace(void)
{
    cn_cache_t c;
    start(&c, 64, 1000);
    put(&c, "k", 2, 10);
    cn_cent_t *v2 = find(&c, "k", 2);
    /* Older than what the cache holds: not kept, the newer one stays. */
    ent_t *v1 = ent_new("k", 1, 10);
    cn_cache_offer(&c, &v1->ent);
    CN_CHECK_EQ(atomic_load(&v1->ent.refs), 1);
    CN_CHECK(!has(&c, "k", 1));
    CN_CHECK(has(&c, "k", 2));
    cn_cent_release(&v1->ent);
    CN_CHECK_EQ(destroyed, 1);
    /* As new: not kept either. */
    ent_t *same = ent_new("k", 2, 10);
    cn_cache_offer(&c, &same->ent);
    cn_cent_t *f = find(&c, "k", 2);
    CN_CHECK(f == v2);
    cn_cent_release(f);
    cn_cent_release(&same->ent);
    cn_cent_release(v2);
    CN_CHECK_EQ(destroyed, 2);
    /* Newer: replaces it, and the replaced one goes with its last holder. */
    ent_t *v3 = ent_new("k", 3, 10);
    cn_cache_offer(&c, &v3->ent);
    CN_CHECK_EQ(destroyed, 3);
    CN_CHECK(!has(&c, "k", 2));
    CN_CHECK(has(&c, "k", 3));
    CN_CHECK_EQ(c.cost, 10);
    cn_cent_release(&v3->ent);
    cn_cache_destroy(&c);
    CN_CHECK_EQ(destroyed, 4);
}

static void test_budget_eviction(void)
{
    cn_cache_t c;
    start(&c, 64, 100);
    const char *names[] = { "a", "b", "c", "d" };
    ent_t *e[4];
    for (int i = 0; i < 3; i++) {
        e[i] = ent_new(names[i], 1, 30);
        cn_cache_offer(&c, &e[i]->ent);
    }
    CN_CHECK_EQ(c.cost, 90);
    CN_CHECK(has(&c, "a", 1)); /* a is now as recent as c; b is the oldest */
    e[3] = ent_new("d", 1, 30);
    cn_cache_offer(&c, &e[3]->ent);
    CN_CHECK_EQ(c.cost, 90);
    CN_CHECK(has(&c, "a", 1));
    CN_CHECK(!has(&c, "b", 1));
    CN_CHECK(has(&c, "c", 1));
    CN_CHECK(has(&c, "d", 1));
    /* b left the cache while the caller held it: it lives on until then. */
    CN_CHECK_EQ(destroyed, 0);
    CN_CHECK_EQ(atomic_load(&e[1]->ent.refs), 1);
    CN_CHECK_EQ(memcmp(e[1]->kbuf, "b", 2), 0);
    cn_cent_release(&e[1]->ent);
    CN_CHECK_EQ(destroyed, 1);
    /* Alone over the budget: never kept, nothing evicted for it. */
    ent_t *big = ent_new("big", 1, 101);
    cn_cache_offer(&c, &big->ent);
    CN_CHECK(!has(&c, "big", 1));
    CN_CHECK_EQ(c.cost, 90);
    cn_cent_release(&big->ent);
    CN_CHECK_EQ(destroyed, 2);
    for (int i = 0; i < 4; i++)
        if (i != 1)
            cn_cent_release(&e[i]->ent);
    CN_CHECK_EQ(destroyed, 2);
    cn_cache_destroy(&c);
    CN_CHECK_EQ(destroyed, 5);
}

/* A reference from find outlives the entry's eviction and the cache. */
static void test_release_after_eviction(void)
{
    cn_cache_t c;
    start(&c, 64, 50);
    put(&c, "a", 1, 40);
    cn_cent_t *held = find(&c, "a", 1);
    CN_CHECK(held != NULL);
    put(&c, "b", 1, 40); /* over the budget: a goes */
    CN_CHECK(!has(&c, "a", 1));
    CN_CHECK_EQ(destroyed, 0);
    cn_cache_destroy(&c);
    CN_CHECK_EQ(destroyed, 1); /* b */
    CN_CHECK_EQ(memcmp(((ent_t *)held)->kbuf, "a", 2), 0);
    cn_cent_release(held);
    CN_CHECK_EQ(destroyed, 2);
}

/* One offer evicts at most 64 entries, whatever the slot count: the rest go
 * with later offers. */
static void test_many_slots(void)
{
    cn_cache_t c;
    enum {
        N = 200
    };
    start(&c, 1024, N);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "k%d", i);
        put(&c, name, 1, 1);
    }
    int held = N - destroyed; /* a full set may have displaced a few */
    CN_CHECK(held > N - 10);
    CN_CHECK_EQ(c.cost, (size_t)held);
    put(&c, "big", 1, N);
    CN_CHECK(has(&c, "big", 1));
    CN_CHECK(destroyed <= N - held + 65); /* 64, and the one its set displaced */
    CN_CHECK(c.cost > c.budget);
    for (int i = 0; i < 4 && c.cost > c.budget; i++) {
        char name[16];
        snprintf(name, sizeof name, "again%d", i);
        put(&c, name, 1, 0);
    }
    CN_CHECK(c.cost <= c.budget);
    cn_cache_destroy(&c);
}

static void test_disabled(void)
{
    cn_cache_t c;
    start(&c, 0, 100);
    ent_t *a = ent_new("a", 1, 1);
    cn_cache_offer(&c, &a->ent);
    CN_CHECK_EQ(atomic_load(&a->ent.refs), 1);
    CN_CHECK(!has(&c, "a", 1));
    cn_cent_release(&a->ent);
    CN_CHECK_EQ(destroyed, 1);
    cn_cent_release(NULL);
    cn_cache_destroy(&c);
}

CN_TEST_MAIN(CN_TEST(test_find_offer), CN_TEST(test_version_replace), CN_TEST(test_budget_eviction),
             CN_TEST(test_release_after_eviction), CN_TEST(test_many_slots), CN_TEST(test_disabled))
