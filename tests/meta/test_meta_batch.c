/* meta batch lookups (src/meta/batch.c) through the blobs service's batch
 * statements, exactly as the service runs them: every position answered
 * right for present and absent keys, keys repeated in the list, an empty
 * list, the order of the list kept, one statement's limit (CN_META_BATCH_MAX)
 * refused past it and split past it by cn_meta_batch_found — on SQLite, or
 * on PostgreSQL when CAIRN_TEST_META names a server (meta_batch_pg). */
#include "cn_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "meta/sql/blobs.h"
#include "meta/test_target.h"

#define NS "team/a"

static char dir[64];

static cn_meta_t *open_blobs(void)
{
    snprintf(dir, sizeof dir, "/tmp/cn_test_batch_XXXXXX");
    CN_CHECK(mkdtemp(dir) != NULL);
    char target[512];
    CN_CHECK(cn_test_meta_target(dir, target, sizeof target));
    cn_meta_opts_t o = { .no_sync = true };
    cn_meta_t *m = NULL;
    CN_CHECK_EQ(cn_meta_open(target, &o, &m), 0);
    CN_CHECK_EQ(cn__sql_migrate(m, &cn__sql_blobs_set), 0);
    return m;
}

static void close_blobs(cn_meta_t *m)
{
    cn_meta_close(m);
    cn_test_rmtree(dir);
}

/* Digest number i: distinct for every i, and not in sorted order. */
static void digest(uint32_t i, uint8_t out[32])
{
    memset(out, 0, 32);
    uint32_t h = i * 2654435761u;
    memcpy(out, &h, 4);
    memcpy(out + 28, &i, 4);
}

typedef struct rows {
    const char *ns;
    uint32_t from, to; /* digests from..to-1 */
} rows_t;

static cn_err_t insert_body(cn_meta_txn_t *txn, void *ctx)
{
    const rows_t *r = ctx;
    cn_err_t e = CN_OK;
    for (uint32_t i = r->from; i < r->to && e >= 0; i++) {
        uint8_t d[32];
        digest(i, d);
        e = cn_meta_execf(txn, cn__sql_blobs[CN_SQL_BLOBS_MEMBER_INSERT], "sbii", r->ns, d,
                          (size_t)32, (int64_t)1, (int64_t)1);
    }
    return e < 0 ? e : CN_OK;
}

static void insert(cn_meta_t *m, const char *ns, uint32_t from, uint32_t to)
{
    rows_t r = { ns, from, to };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, insert_body, &r), 0);
}

typedef struct ask {
    const char *ns; /* NULL: any namespace */
    const uint8_t *keys;
    size_t n;
    bool *found;
    size_t nfound;
} ask_t;

static cn_err_t ask_body(cn_meta_txn_t *txn, void *ctx)
{
    ask_t *a = ctx;
    if (a->ns)
        return cn_meta_batch_found(txn, &cn__sql_blobs_batch[CN_SQL_BLOBS_BATCH_IN_NS], a->keys, 32,
                                   a->n, a->found, &a->nfound, "s", a->ns);
    return cn_meta_batch_found(txn, &cn__sql_blobs_batch[CN_SQL_BLOBS_BATCH_ANY_NS], a->keys, 32,
                               a->n, a->found, &a->nfound, "");
}

static cn_err_t ask(cn_meta_t *m, ask_t *a)
{
    return cn_meta_run(m, CN_META_RUN_READ, ask_body, a);
}

/* Present, absent, repeated keys and the list's order, in and across
 * namespaces. */
static void test_answers_exactly(void)
{
    cn_meta_t *m = open_blobs();
    insert(m, NS, 0, 100);        /* 0..99 in team/a */
    insert(m, "team/b", 90, 200); /* 90..199 in team/b */
    /* The list: 150 (b only), 5 (a), 500 (nowhere), 5 again, 95 (both),
     * 99 (a), 300 (nowhere), 150 again. */
    const uint32_t ids[] = { 150, 5, 500, 5, 95, 99, 300, 150 };
    enum {
        N = sizeof ids / sizeof ids[0]
    };
    uint8_t keys[N * 32];
    for (size_t i = 0; i < N; i++)
        digest(ids[i], keys + 32 * i);
    bool found[N];
    memset(found, 0xaa, sizeof found); /* every answer must be written */
    ask_t a = { NS, keys, N, found, 99 };
    CN_CHECK_EQ(ask(m, &a), 0);
    const bool in_a[N] = { false, true, false, true, true, true, false, false };
    for (size_t i = 0; i < N; i++)
        CN_CHECK_EQ(found[i], in_a[i]);
    CN_CHECK_EQ(a.nfound, 4);

    a = (ask_t){ NULL, keys, N, found, 0 };
    CN_CHECK_EQ(ask(m, &a), 0);
    const bool anywhere[N] = { true, true, false, true, true, true, false, true };
    for (size_t i = 0; i < N; i++)
        CN_CHECK_EQ(found[i], anywhere[i]);
    CN_CHECK_EQ(a.nfound, 6);

    a = (ask_t){ "team/none", keys, N, found, 7 };
    CN_CHECK_EQ(ask(m, &a), 0);
    for (size_t i = 0; i < N; i++)
        CN_CHECK(!found[i]);
    CN_CHECK_EQ(a.nfound, 0);
    close_blobs(m);
}

/* An empty list runs nothing and finds nothing; a one-key list works. */
static void test_empty_and_one(void)
{
    cn_meta_t *m = open_blobs();
    insert(m, NS, 0, 3);
    bool found[1] = { true };
    ask_t a = { NS, (const uint8_t *)"", 0, found, 5 };
    CN_CHECK_EQ(ask(m, &a), 0);
    CN_CHECK_EQ(a.nfound, 0);
    CN_CHECK(found[0]); /* n = 0: nothing written */
    uint8_t k[32];
    digest(2, k);
    a = (ask_t){ NS, k, 1, found, 0 };
    CN_CHECK_EQ(ask(m, &a), 0);
    CN_CHECK(found[0]);
    CN_CHECK_EQ(a.nfound, 1);
    close_blobs(m);
}

typedef struct limit {
    const uint8_t *keys;
    size_t n;
    cn_err_t got;
    size_t rows;
} limit_t;

static cn_err_t query_body(cn_meta_txn_t *txn, void *ctx)
{
    limit_t *l = ctx;
    cn_meta_stmt_t *st = NULL;
    l->got = cn_meta_batch_query(txn, &st, &cn__sql_blobs_batch[CN_SQL_BLOBS_BATCH_IN_NS], l->keys,
                                 32, l->n, "s", NS);
    l->rows = 0;
    cn_err_t e = CN_OK;
    while (l->got >= 0 && (e = cn_meta_step(st)) == CN_META_ROW)
        l->rows++;
    cn_meta_finish(st);
    return e < 0 ? e : CN_OK;
}

/* One statement takes CN_META_BATCH_MAX keys and refuses one more with
 * CN_E_LIMIT (before touching the database); cn_meta_batch_found splits a
 * longer list and answers every position across the split. */
static void test_limit(void)
{
    cn_meta_t *m = open_blobs();
    size_t n = CN_META_BATCH_MAX + 3;
    insert(m, NS, 0, (uint32_t)n);
    uint8_t *keys = malloc(n * 32);
    bool *found = malloc(n);
    CN_CHECK(keys && found);
    /* every third key absent (from past the inserted range) */
    for (size_t i = 0; i < n; i++)
        digest(i % 3 == 2 ? (uint32_t)(n + i) : (uint32_t)i, keys + 32 * i);

    limit_t l = { keys, CN_META_BATCH_MAX, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, query_body, &l), 0);
    CN_CHECK_EQ(l.got, 0);
    CN_CHECK_EQ(l.rows, CN_META_BATCH_MAX - CN_META_BATCH_MAX / 3);
    l = (limit_t){ keys, CN_META_BATCH_MAX + 1, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, query_body, &l), 0);
    CN_CHECK_EQ(l.got, CN_E_LIMIT);
    l = (limit_t){ keys, 0, 0, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, query_body, &l), 0);
    CN_CHECK_EQ(l.got, CN_E_INVALID);

    ask_t a = { NS, keys, n, found, 0 };
    CN_CHECK_EQ(ask(m, &a), 0);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += found[i] != (i % 3 != 2);
    CN_CHECK_EQ(bad, 0);
    CN_CHECK_EQ(a.nfound, n - n / 3);
    free(keys);
    free(found);
    close_blobs(m);
}

CN_TEST_MAIN(CN_TEST(test_answers_exactly), CN_TEST(test_empty_and_one), CN_TEST(test_limit), )
