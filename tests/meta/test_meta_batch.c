/* meta batch lookups (src/meta/batch.c) through the blobs service's batch
 * statements, exactly as the service runs them: every position answered
 * right for present and absent keys, keys repeated in the list, an empty
 * list, the order of the list kept, one statement's limit (CN_META_BATCH_MAX)
 * refused past it and split past it by cn_meta_batch_found; and the
 * repositories' lookup by (kind, id) keys (CN_SQL_REPOS_BATCH_OBJECT_GET)
 * and their multi-row membership INSERT (cn__sql_repos_object_insert_rows);
 * and the store's multi-row pack index INSERT
 * (cn__sql_store_packed_insert_rows) — on SQLite, or on PostgreSQL when CAIRN_TEST_META names a server
 * (meta_batch_pg). */
#include "cn_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "meta/sql/blobs.h"
#include "meta/sql/repos.h"
#include "meta/sql/store.h"
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

/* ---- repos: objects by (kind, id) keys ------------------------------------------- */
static const uint8_t REPO_A[16] = { 0xa }, REPO_B[16] = { 0xb };

typedef struct robj {
    const uint8_t *repo;
    uint8_t kind;
    uint32_t id;
} robj_t;

static cn_err_t robj_body(cn_meta_txn_t *txn, void *ctx)
{
    const robj_t *o = ctx;
    cn_err_t e = CN_OK;
    for (; o->repo && e >= 0; o++) {
        uint8_t id[32], blob[32];
        digest(o->id, id);
        digest(o->id + 1000000u * o->kind, blob);
        e = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_OBJECT_INSERT], "bibbii", o->repo,
                          (size_t)16, (int64_t)o->kind, id, (size_t)32, blob, (size_t)32,
                          (int64_t)(o->id * 10 + o->kind), (int64_t)0);
    }
    return e < 0 ? e : CN_OK;
}

typedef struct rget {
    const uint8_t *keys;
    size_t n;
    int64_t pos[16];
    int64_t len[16];
    uint8_t blob[16][32];
    size_t rows;
} rget_t;

static cn_err_t rget_body(cn_meta_txn_t *txn, void *ctx)
{
    rget_t *g = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_batch_query(txn, &st, &cn__sql_repos_batch[CN_SQL_REPOS_BATCH_OBJECT_GET],
                                     g->keys, 33, g->n, "b", REPO_A, (size_t)16);
    g->rows = 0;
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW && g->rows < 16) {
        size_t bl = 0;
        const void *b = cn_meta_column_blob(st, 1, &bl);
        CN_CHECK(b && bl == 32);
        g->pos[g->rows] = cn_meta_column_int64(st, 0);
        g->len[g->rows] = cn_meta_column_int64(st, 2);
        memcpy(g->blob[g->rows++], b, 32);
    }
    cn_meta_finish(st);
    return e < 0 ? e : CN_OK;
}

/* Every kind of a key counts (the same id under two kinds, one held), the
 * repository counts, repeats get a row each, absent keys none; each row
 * carries its own key's blob and length. */
static void test_repos_object_get(void)
{
    cn_meta_t *m = open_blobs();
    CN_CHECK_EQ(cn__sql_migrate(m, &cn__sql_repos_set), 0);
    const robj_t rows[] = { { REPO_A, 1, 7 }, { REPO_A, 2, 7 }, { REPO_A, 3, 9 },
                            { REPO_B, 1, 8 }, { REPO_A, 1, 5 }, { NULL, 0, 0 } };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, robj_body, (void *)rows), 0);
    /* (kind, id): held, held, held, other repo, wrong kind, absent, repeat, held */
    const robj_t ask[] = { { NULL, 3, 9 }, { NULL, 2, 7 },  { NULL, 1, 7 }, { NULL, 1, 8 },
                           { NULL, 3, 5 }, { NULL, 1, 99 }, { NULL, 3, 9 }, { NULL, 1, 5 } };
    enum {
        N = sizeof ask / sizeof ask[0]
    };
    uint8_t keys[N * 33];
    for (size_t i = 0; i < N; i++) {
        keys[i * 33] = ask[i].kind;
        digest(ask[i].id, keys + i * 33 + 1);
    }
    rget_t g = { keys, N, { 0 }, { 0 }, { { 0 } }, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, rget_body, &g), 0);
    CN_CHECK_EQ(g.rows, 5);
    bool seen[N] = { false };
    for (size_t r = 0; r < g.rows; r++) {
        int64_t i = g.pos[r];
        CN_CHECK(i >= 0 && i < N && !seen[i]);
        seen[i] = true;
        uint8_t blob[32];
        digest(ask[i].id + 1000000u * ask[i].kind, blob);
        CN_CHECK_EQ(memcmp(g.blob[r], blob, 32), 0);
        CN_CHECK_EQ(g.len[r], (int64_t)(ask[i].id * 10 + ask[i].kind));
    }
    const bool held[N] = { true, true, true, false, false, false, true, true };
    for (size_t i = 0; i < N; i++)
        CN_CHECK_EQ(seen[i], held[i]);
    close_blobs(m);
}

/* ---- repos: membership rows many at a time --------------------------------------- */
typedef struct rins {
    uint32_t rows; /* ids 0..rows-1 of kind 1 in REPO_A; blob from id + salt */
    uint32_t salt;
    bool ret[CN_SQL_REPOS_OBJECT_ROWS_MAX]; /* id i came back as new */
    size_t nret;
} rins_t;

static cn_err_t rins_body(cn_meta_txn_t *txn, void *ctx)
{
    rins_t *q = ctx;
    char *sql = cn__sql_repos_object_insert_rows(q->rows);
    CN_CHECK(sql != NULL);
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_prepare(txn, sql, &st);
    free(sql);
    for (uint32_t r = 0; r < q->rows && e >= 0; r++) {
        uint8_t id[32], blob[32];
        digest(r, id);
        digest(r + q->salt, blob);
        int b = (int)r * 6;
        CN_CHECK_EQ(cn_meta_bind_blob(st, b + 1, REPO_A, 16), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 2, 1), 0);
        CN_CHECK_EQ(cn_meta_bind_blob(st, b + 3, id, 32), 0);
        CN_CHECK_EQ(cn_meta_bind_blob(st, b + 4, blob, 32), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 5, (int64_t)r + q->salt), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 6, 0), 0);
    }
    memset(q->ret, 0, sizeof q->ret);
    q->nret = 0;
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        size_t il = 0;
        const uint8_t *id = cn_meta_column_blob(st, 1, &il);
        CN_CHECK_EQ(cn_meta_column_int64(st, 0), 1);
        CN_CHECK(id && il == 32);
        uint32_t r = 0;
        uint8_t want[32];
        for (digest(r, want); r < q->rows && memcmp(id, want, 32); digest(++r, want))
            ;
        CN_CHECK(r < q->rows && !q->ret[r]);
        q->ret[r] = true;
        q->nret++;
    }
    cn_meta_finish(st);
    return e < 0 ? e : CN_OK;
}

/* The multi-row membership INSERT: one row returned per new row and none for
 * a row already held, which keeps its columns; the limits of its size. */
static void test_repos_object_insert_rows(void)
{
    CN_CHECK(cn__sql_repos_object_insert_rows(0) == NULL);
    CN_CHECK(cn__sql_repos_object_insert_rows(CN_SQL_REPOS_OBJECT_ROWS_MAX + 1) == NULL);
    cn_meta_t *m = open_blobs();
    CN_CHECK_EQ(cn__sql_migrate(m, &cn__sql_repos_set), 0);
    rins_t q = { .rows = 1, .salt = 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, rins_body, &q), 0);
    CN_CHECK_EQ(q.nret, 1);
    q = (rins_t){ .rows = 64, .salt = 500 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, rins_body, &q), 0);
    CN_CHECK_EQ(q.nret, 63);
    CN_CHECK(!q.ret[0] && q.ret[1] && q.ret[63]);
    q = (rins_t){ .rows = CN_SQL_REPOS_OBJECT_ROWS_MAX, .salt = 900 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, rins_body, &q), 0);
    CN_CHECK_EQ(q.nret, CN_SQL_REPOS_OBJECT_ROWS_MAX - 64);
    CN_CHECK(!q.ret[63] && q.ret[64] && q.ret[CN_SQL_REPOS_OBJECT_ROWS_MAX - 1]);
    /* Held rows keep what the first insert wrote: id 0 salt 0, id 1 salt 500,
     * id 64 salt 900. */
    uint8_t keys[3 * 33];
    const uint32_t ids[3] = { 0, 1, 64 }, salt[3] = { 0, 500, 900 };
    for (size_t i = 0; i < 3; i++) {
        keys[i * 33] = 1;
        digest(ids[i], keys + i * 33 + 1);
    }
    rget_t g = { keys, 3, { 0 }, { 0 }, { { 0 } }, 0 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, rget_body, &g), 0);
    CN_CHECK_EQ(g.rows, 3);
    for (size_t r = 0; r < g.rows; r++) {
        int64_t i = g.pos[r];
        CN_CHECK(i >= 0 && i < 3);
        uint8_t blob[32];
        digest(ids[i] + salt[i], blob);
        CN_CHECK_EQ(memcmp(g.blob[r], blob, 32), 0);
        CN_CHECK_EQ(g.len[r], (int64_t)(ids[i] + salt[i]));
    }
    close_blobs(m);
}

/* ---- store: pack index rows many at a time ---------------------------------------- */
typedef struct pins {
    uint32_t rows;   /* digests first.. of this statement, each at off = i */
    uint32_t first;  /* digest number of row 0 */
    uint32_t repeat; /* rows >= repeat repeat digest first (0: none) */
    int64_t pack_id; /* the statement's pack */
} pins_t;

static cn_err_t pins_body(cn_meta_txn_t *txn, void *ctx)
{
    const pins_t *q = ctx;
    char *sql = cn__sql_store_packed_insert_rows(q->rows);
    CN_CHECK(sql != NULL);
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_prepare(txn, sql, &st);
    free(sql);
    for (uint32_t r = 0; r < q->rows && e >= 0; r++) {
        uint8_t d[32];
        digest(q->repeat && r >= q->repeat ? q->first : q->first + r, d);
        int b = (int)r * 6;
        CN_CHECK_EQ(cn_meta_bind_blob(st, b + 1, d, 32), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 2, q->pack_id), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 3, (int64_t)r), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 4, 4096), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 5, 0), 0);
        CN_CHECK_EQ(cn_meta_bind_int64(st, b + 6, 1), 0);
    }
    if (e >= 0)
        e = cn_meta_step(st);
    cn_meta_finish(st);
    return e < 0 ? e : CN_OK;
}

typedef struct pcount {
    int64_t pack_id, rows, off_sum;
} pcount_t;

static cn_err_t pcount_body(cn_meta_txn_t *txn, void *ctx)
{
    pcount_t *c = ctx;
    cn_meta_stmt_t *st = NULL;
    c->rows = c->off_sum = 0;
    CN_CHECK_EQ(cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_PACKED_LIST], ""), 0);
    cn_err_t e;
    while ((e = cn_meta_step(st)) == CN_META_ROW)
        if (cn_meta_column_int64(st, 1) == c->pack_id) {
            c->rows++;
            c->off_sum += cn_meta_column_int64(st, 2);
        }
    cn_meta_finish(st);
    return e;
}

/* The multi-row pack index INSERT: every row of one and of the largest
 * statement lands; a digest held already keeps its row, and one repeated
 * within a statement lands once, at its first row; the limits of its size. */
static void test_store_packed_insert_rows(void)
{
    CN_CHECK(cn__sql_store_packed_insert_rows(0) == NULL);
    CN_CHECK(cn__sql_store_packed_insert_rows(CN_SQL_STORE_PACKED_ROWS_MAX + 1) == NULL);
    cn_meta_t *m = open_blobs();
    CN_CHECK_EQ(cn__sql_migrate(m, &cn__sql_store_set), 0);
    pins_t q = { .rows = 1, .first = 0, .pack_id = 1 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, pins_body, &q), 0);
    q = (pins_t){ .rows = CN_SQL_STORE_PACKED_ROWS_MAX, .first = 1000, .pack_id = 2 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, pins_body, &q), 0);
    /* Rows 0..7 of pack 3: digest 1000 (held, in pack 2), 1001..1003 (held),
     * then 1000 repeated: nothing new but the statement succeeds. */
    q = (pins_t){ .rows = 8, .first = 1000, .repeat = 4, .pack_id = 3 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, pins_body, &q), 0);
    /* Digests 5000..5003 new, rows 4..15 repeat 5000: four rows, offs 0..3. */
    q = (pins_t){ .rows = 16, .first = 5000, .repeat = 4, .pack_id = 4 };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, pins_body, &q), 0);
    const int64_t want[4][3] = { { 1, 1, 0 },
                                 { 2, CN_SQL_STORE_PACKED_ROWS_MAX,
                                   (int64_t)CN_SQL_STORE_PACKED_ROWS_MAX *
                                       (CN_SQL_STORE_PACKED_ROWS_MAX - 1) / 2 },
                                 { 3, 0, 0 },
                                 { 4, 4, 6 } };
    for (size_t i = 0; i < 4; i++) {
        pcount_t c = { .pack_id = want[i][0] };
        CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, pcount_body, &c), 0);
        CN_CHECK_EQ(c.rows, want[i][1]);
        CN_CHECK_EQ(c.off_sum, want[i][2]);
    }
    close_blobs(m);
}

CN_TEST_MAIN(CN_TEST(test_answers_exactly), CN_TEST(test_empty_and_one), CN_TEST(test_limit),
             CN_TEST(test_repos_object_get), CN_TEST(test_repos_object_insert_rows),
             CN_TEST(test_store_packed_insert_rows), )
