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

static void test_rows(void)
{
    char *dir = cn_test_tmpdir("test-objgen");
    const char *target = cn_test_meta_for(dir);
    cn_meta_t *m1 = NULL, *m2 = NULL;
    cn__gen_t *g1 = NULL, *g2 = NULL;
    CN_CHECK_EQ(cn_meta_open(target, NULL, &m1), 0);
    CN_CHECK_EQ(cn_meta_open(target, NULL, &m2), 0);
    CN_CHECK_EQ(cn__gen_open_rows(m1, &g1), 0);
    CN_CHECK_EQ(cn__gen_open_rows(m2, &g2), 0);
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
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, bumper, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CN_CHECK_EQ(w[0].failed + w[1].failed, 0);
    CN_CHECK_EQ(cn__gen_load(g2, slot), (uint64_t)(1 + 2 * BUMPS) << 32);

    /* The file mode's bump writes nothing. */
    cn__gen_t *gf = NULL;
    CN_CHECK_EQ(cn__gen_open(dir, &gf), 0);
    CN_CHECK_EQ(write_run(m1, gf, other, 0), 0);
    CN_CHECK_EQ(cn__gen_load(g1, other), 0);
    cn__gen_close(gf);

    cn__gen_close(g1);
    cn__gen_close(g2);
    cn_meta_close(m1);
    cn_meta_close(m2);
    cn_test_rmtree(dir);
    free(dir);
}

CN_TEST_MAIN(CN_TEST(test_rows), )
