/* The write-generation table as database rows (src/objects/gen.c, rows
 * mode; docs/fleet.md "The object-head cache on PostgreSQL"): two handles on
 * one database stand for two nodes.  A write run's bump moves the word
 * every node loads, atomically with its commit (a rolled-back run moves
 * nothing); slots are independent; enter and leave do nothing; concurrent
 * bumps from both handles are all counted (on PostgreSQL the second of two
 * conflicting writers fails to serialize and is run again); the file mode's
 * bump is a no-op.  On PostgreSQL too (objgen_pg, tests/fleet/pg.sh). */
#include "cn_test.h"
#include "cairn/meta.h"
#include "meta/test_target.h"
#include "objects/objects_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUMPS 40

typedef struct bump {
    const cn__gen_t *g;
    size_t slot;
    cn_err_t fail; /* returned after the bump: the run rolls back */
} bump_t;

static cn_err_t bump_body(cn_meta_txn_t *txn, void *ctx)
{
    const bump_t *b = ctx;
    cn_err_t err = cn__gen_bump(b->g, txn, b->slot);
    return err < 0 ? err : b->fail;
}

static cn_err_t write_run(cn_meta_t *m, const cn__gen_t *g, size_t slot, cn_err_t fail)
{
    bump_t b = { g, slot, fail };
    return cn_meta_run(m, CN_META_RUN_WRITE | CN_META_RETRY, bump_body, &b);
}

typedef struct worker {
    cn_meta_t *m;
    const cn__gen_t *g;
    size_t slot;
    int failed;
} worker_t;

static void *bumper(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < BUMPS; i++)
        if (write_run(w->m, w->g, w->slot, 0) < 0)
            w->failed++;
    return NULL;
}

/* Both workers' bumps at once, to the end. */
static void run_both(worker_t w[2])
{
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, bumper, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
}

/* Two handles on one database: two nodes. */
typedef struct nodes {
    char *dir;
    cn_meta_t *m[2];
    cn__gen_t *g[2];
} nodes_t;

static void nodes_open(nodes_t *n, const char *name)
{
    memset(n, 0, sizeof *n);
    n->dir = cn_test_tmpdir(name);
    for (int i = 0; i < 2; i++) {
        CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(n->dir), NULL, &n->m[i]), 0);
        CN_CHECK_EQ(cn__gen_open_rows(n->m[i], &n->g[i]), 0);
    }
}

static void nodes_close(nodes_t *n)
{
    for (int i = 0; i < 2; i++) {
        cn__gen_close(n->g[i]);
        cn_meta_close(n->m[i]);
    }
    cn_test_rmtree(n->dir);
    free(n->dir);
}

static void test_rows(void)
{
    nodes_t n;
    nodes_open(&n, "test-objgen");
    cn_meta_t *m1 = n.m[0], *m2 = n.m[1];
    cn__gen_t *g1 = n.g[0], *g2 = n.g[1];
    const char *dir = n.dir;
    size_t slot = cn__gen_slot("fleet"), other = (slot + 1) % CN__GEN_SLOTS;

    /* Never written: 0, quiet, the same on both nodes. */
    uint64_t stamp = cn__gen_load(g2, slot);
    CN_CHECK_EQ(stamp, 0);
    CN_CHECK(cn__gen_quiet(stamp));

    /* A write on node 1 moves the word node 2 loads, at once. */
    CN_CHECK_EQ(write_run(m1, g1, slot, 0), 0);
    CN_CHECK_EQ(cn__gen_load(g2, slot), UINT64_C(1) << 32);
    CN_CHECK_EQ(cn__gen_load(g1, slot), UINT64_C(1) << 32);
    CN_CHECK(cn__gen_load(g2, slot) != stamp); /* a head filed under stamp: no longer served */
    CN_CHECK_EQ(cn__gen_load(g2, other), 0);

    /* A run that fails after its bump rolls it back. */
    CN_CHECK_EQ(write_run(m2, g2, slot, CN_E_INVALID), CN_E_INVALID);
    CN_CHECK_EQ(cn__gen_load(g1, slot), UINT64_C(1) << 32);

    /* enter and leave do nothing here: the word stays quiet. */
    cn__gen_enter(g2, slot);
    CN_CHECK(cn__gen_quiet(cn__gen_load(g1, slot)));
    cn__gen_leave(g2, slot);
    CN_CHECK_EQ(cn__gen_load(g1, slot), UINT64_C(1) << 32);

    /* Both nodes writing the slot at once: every bump counted. */
    worker_t w[2] = { { m1, g1, slot, 0 }, { m2, g2, slot, 0 } };
    run_both(w);
    CN_CHECK_EQ(w[0].failed + w[1].failed, 0);
    CN_CHECK_EQ(cn__gen_load(g2, slot), (uint64_t)(1 + 2 * BUMPS) << 32);

    /* The file mode's bump writes nothing. */
    cn__gen_t *gf = NULL;
    CN_CHECK_EQ(cn__gen_open(dir, &gf), 0);
    CN_CHECK_EQ(write_run(m1, gf, other, 0), 0);
    CN_CHECK_EQ(cn__gen_load(g1, other), 0);
    cn__gen_close(gf);

    nodes_close(&n);
}

/* Key slots (gen.c 7): a write of one key moves that key's stamp on every
 * node, not another key's, and not the bucket's own word (the settings
 * word); a bucket-wide write moves every key's stamp.  The file mode keeps
 * one word per bucket. */
static void test_key_slots(void)
{
    nodes_t n;
    nodes_open(&n, "test-objgen-keys");
    cn_meta_t *m1 = n.m[0], *m2 = n.m[1];
    cn__gen_t *g1 = n.g[0], *g2 = n.g[1];
    const char *dir = n.dir;
    size_t slot = cn__gen_slot("fleet");
    size_t ka = cn__gen_kslot(g1, "fleet", "a"), kb = cn__gen_kslot(g1, "fleet", "b");
    CN_CHECK(ka >= CN__GEN_SLOTS && kb >= CN__GEN_SLOTS && ka != kb);
    CN_CHECK_EQ(cn__gen_kslot(g2, "fleet", "a"), ka); /* every node names the same row */
    CN_CHECK(cn__gen_kslot(g1, "other", "a") != ka);

    cn__hstamp_t a0 = cn__gen_hload(g2, slot, ka), b0 = cn__gen_hload(g2, slot, kb);
    CN_CHECK(cn__gen_quiet(a0.w) && cn__gen_quiet(a0.b));
    CN_CHECK_EQ(write_run(m1, g1, ka, 0), 0); /* a put of "a" on node 1 */
    cn__hstamp_t a1 = cn__gen_hload(g2, slot, ka), b1 = cn__gen_hload(g2, slot, kb);
    CN_CHECK(a1.w != a0.w && cn__gen_quiet(a1.w));
    CN_CHECK_EQ(a1.b, a0.b);
    CN_CHECK_EQ(b1.w, b0.w);
    CN_CHECK_EQ(cn__gen_sload(g2, slot), a0.b);

    CN_CHECK_EQ(write_run(m2, g2, slot, 0), 0); /* a bucket-wide write on node 2 */
    cn__hstamp_t a2 = cn__gen_hload(g1, slot, ka), b2 = cn__gen_hload(g1, slot, kb);
    CN_CHECK(a2.w != a1.w && b2.w != b1.w && a2.b != a1.b);
    CN_CHECK_EQ(a2.b, b2.b);

    /* Writers of different keys on both nodes at once: all counted. */
    worker_t w[2] = { { m1, g1, ka, 0 }, { m2, g2, kb, 0 } };
    run_both(w);
    CN_CHECK_EQ(w[0].failed + w[1].failed, 0);
    CN_CHECK_EQ(cn__gen_hload(g1, slot, ka).w, a2.w + ((uint64_t)BUMPS << 32));
    CN_CHECK_EQ(cn__gen_hload(g1, slot, kb).w, b2.w + ((uint64_t)BUMPS << 32));

    cn__gen_t *gf = NULL;
    CN_CHECK_EQ(cn__gen_open(dir, &gf), 0);
    CN_CHECK_EQ(cn__gen_kslot(gf, "fleet", "a"), slot);
    cn__gen_close(gf);

    nodes_close(&n);
}

CN_TEST_MAIN(CN_TEST(test_rows), CN_TEST(test_key_slots), )
