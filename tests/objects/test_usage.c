/* Usage totals (src/objects/usage.c, src/blobs/usage.c; schema steps
 * objects v5 and blobs v2): a bucket's objects, versions and bytes and a
 * namespace's members and bytes stay exact through every kind of change —
 * put, overwrite, versioned overwrite, delete marker, delete of a version,
 * the removal of a marker, multipart completion, copy — each checked
 * against the figures and against a count of the rows themselves; a bucket
 * with nothing is 0; an upgraded database is backfilled from its rows; two
 * handles ("two nodes") writing one bucket at once end exact, before and
 * after a fold.  On SQLite and, under tests/fleet/pg.sh, on PostgreSQL with
 * the blobs on the S3 tier (objects_usage_pg). */
#include "cn_test.h"
#include "cairn/meta.h"
#include "cairn/objects.h"
#include "cairn/store.h"
#include "meta/test_target.h"
#include "store/test_blob_target.h"
#include "meta/sql/blobs.h"
#include "meta/sql/objects.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct node {
    char *dir;
    cn_meta_t *meta;
    cn_store_t *store;
    cn_objects_t *o;
} node_t;

static cn_principal_t g_alice = {
    .account = "alice", .token_id = "tok-alice", .account_id = 1, .perms = CN_PERM_DEFAULT
};

/* A node on the database of data dir db (its own store in its own dir). */
static void node_open(node_t *n, const char *db)
{
    memset(n, 0, sizeof *n);
    n->dir = cn_test_tmpdir("usage-node");
    CN_CHECK(n->dir != NULL);
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(db), &mo, &n->meta), 0);
    cn_store_opts_t so = { .meta = n->meta };
    cn_test_blob_target(db, &so); /* nodes on one database share the tier's blobs */
    CN_CHECK_EQ(cn_store_open(n->dir, &so, &n->store), 0);
    cn_objects_opts_t oo = { .upload_sweep_ms = -1 };
    CN_CHECK_EQ(cn_objects_open(n->meta, n->store, &oo, &n->o), 0);
}

static void node_close(node_t *n)
{
    cn_objects_close(n->o);
    cn_store_close(n->store);
    cn_meta_close(n->meta);
    cn_test_rmtree(n->dir);
    free(n->dir);
}

static cn_objects_req_t req(void)
{
    cn_objects_req_t r;
    memset(&r, 0, sizeof r);
    r.principal = &g_alice;
    cn_authz_ip_parse("127.0.0.1", &r.source_ip);
    return r;
}

static cn_err_t put_n(node_t *n, const char *b, const char *k, size_t len,
                      cn_objects_put_result_t *res)
{
    static char body[4096];
    memset(body, 'x', sizeof body);
    cn_objects_req_t rq = req();
    cn_objects_put_t *s = NULL;
    cn_err_t err = cn_objects_put_begin(n->o, &rq, b, k, NULL, (int64_t)len, &s);
    if (err < 0)
        return err;
    if ((err = cn_objects_put_write(s, body, len)) < 0) {
        cn_objects_put_abort(s);
        return err;
    }
    return cn_objects_put_commit(s, res);
}

/* The figures counted from the rows themselves: the oracle. */
typedef struct rows {
    int64_t bucket_id;
    cn_objects_usage_t u;
} rows_t;

static cn_err_t rows_body(cn_meta_txn_t *txn, void *ctx)
{
    rows_t *r = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(
        txn, &st,
        "SELECT (SELECT COUNT(*) FROM obj_version WHERE bucket_id = ?1), "
        "(SELECT COUNT(*) FROM obj_history WHERE bucket_id = ?1 AND marker = 0), "
        "(SELECT COALESCE(SUM(size), 0) FROM obj_version WHERE bucket_id = ?1) + "
        "(SELECT COALESCE(SUM(size), 0) FROM obj_history WHERE bucket_id = ?1 AND marker = 0)",
        "i", r->bucket_id);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        r->u.objects = cn_meta_column_int64(st, 0);
        r->u.versions = r->u.objects + cn_meta_column_int64(st, 1);
        r->u.bytes = cn_meta_column_int64(st, 2);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* bucket's usage is objects/versions/bytes, and so are its rows. */
static void expect(node_t *n, const char *b, int64_t objects, int64_t versions, int64_t bytes)
{
    cn_objects_req_t rq = req();
    cn_objects_usage_t u;
    cn_bucket_info_t bi;
    CN_CHECK_EQ(cn_objects_bucket_usage(n->o, &rq, b, &u), 0);
    CN_CHECK_EQ(cn_objects_bucket_head(n->o, &rq, b, &bi), 0);
    rows_t r = { bi.bucket_id, { 0 } };
    CN_CHECK_EQ(cn_meta_run(n->meta, CN_META_RUN_READ, rows_body, &r), 0);
    if (u.objects != objects || u.versions != versions || u.bytes != bytes)
        fprintf(stderr, "# %s: usage %lld/%lld/%lld, want %lld/%lld/%lld\n", b,
                (long long)u.objects, (long long)u.versions, (long long)u.bytes, (long long)objects,
                (long long)versions, (long long)bytes);
    CN_CHECK_EQ(u.objects, objects);
    CN_CHECK_EQ(u.versions, versions);
    CN_CHECK_EQ(u.bytes, bytes);
    CN_CHECK_EQ(r.u.objects, objects);
    CN_CHECK_EQ(r.u.versions, versions);
    CN_CHECK_EQ(r.u.bytes, bytes);
}

static void test_every_change(void)
{
    char *db = cn_test_tmpdir("usage-db");
    node_t n;
    node_open(&n, db);
    cn_objects_req_t rq = req();
    CN_CHECK_EQ(cn_objects_bucket_create(n.o, &rq, "plain", NULL, NULL), 0);
    CN_CHECK_EQ(cn_objects_bucket_create(n.o, &rq, "empty", NULL, NULL), 0);
    expect(&n, "empty", 0, 0, 0);
    expect(&n, "plain", 0, 0, 0);

    /* put, overwrite (the old version goes), delete */
    CN_CHECK_EQ(put_n(&n, "plain", "a", 10, NULL), 0);
    CN_CHECK_EQ(put_n(&n, "plain", "b", 20, NULL), 0);
    expect(&n, "plain", 2, 2, 30);
    CN_CHECK_EQ(put_n(&n, "plain", "a", 15, NULL), 0);
    expect(&n, "plain", 2, 2, 35);
    rq = req();
    CN_CHECK_EQ(cn_objects_delete(n.o, &rq, "plain", "b"), 0);
    expect(&n, "plain", 1, 1, 15);

    /* copy: a new version of its own, counted as such */
    rq = req();
    CN_CHECK_EQ(cn_objects_copy(n.o, &rq, "plain", "a", "plain", "c", NULL, NULL), 0);
    expect(&n, "plain", 2, 2, 30);

    /* multipart completion */
    char id[CN_UPLOAD_ID_MAX + 1];
    rq = req();
    CN_CHECK_EQ(cn_objects_mpu_create(n.o, &rq, "plain", "mp", NULL, id), 0);
    for (int32_t p = 1; p <= 2; p++) {
        cn_objects_put_t *s = NULL;
        rq = req();
        CN_CHECK_EQ(cn_objects_part_begin(n.o, &rq, "plain", "mp", id, p, NULL, 7, &s), 0);
        CN_CHECK_EQ(cn_objects_put_write(s, "1234567", 7), 0);
        CN_CHECK_EQ(cn_objects_put_commit(s, NULL), 0);
    }
    expect(&n, "plain", 2, 2, 30); /* parts are no version */
    int32_t parts[] = { 1, 2 };
    rq = req();
    CN_CHECK_EQ(cn_objects_mpu_complete(n.o, &rq, "plain", "mp", id, parts, NULL, 2, NULL, NULL),
                0);
    expect(&n, "plain", 3, 3, 44);

    /* versioning: an overwrite keeps the old version, a delete writes a
     * marker (no object, no bytes), removing the marker brings it back,
     * removing a version frees its bytes */
    CN_CHECK_EQ(cn_objects_bucket_create(n.o, &rq, "vers", NULL, NULL), 0);
    CN_CHECK_EQ(cn_objects_versioning_set(n.o, &rq, "vers", CN_OBJ_VERSIONING_ENABLED), 0);
    cn_objects_put_result_t r1, r2;
    CN_CHECK_EQ(put_n(&n, "vers", "k", 100, &r1), 0);
    CN_CHECK_EQ(put_n(&n, "vers", "k", 50, &r2), 0);
    expect(&n, "vers", 1, 2, 150);
    cn_objects_delete_result_t dr;
    rq = req();
    CN_CHECK_EQ(cn_objects_delete_version(n.o, &rq, "vers", "k", NULL, false, &dr), 0);
    CN_CHECK(dr.delete_marker);
    expect(&n, "vers", 0, 2, 150);
    char v[CN_OBJECTS_VERSION_ID_MAX];
    cn_objects_version_str(dr.version_id, false, v);
    rq = req();
    CN_CHECK_EQ(cn_objects_delete_version(n.o, &rq, "vers", "k", v, false, NULL), 0);
    expect(&n, "vers", 1, 2, 150);
    cn_objects_version_str(r1.version_id, false, v);
    rq = req();
    CN_CHECK_EQ(cn_objects_delete_version(n.o, &rq, "vers", "k", v, false, NULL), 0);
    expect(&n, "vers", 1, 1, 50);
    cn_objects_version_str(r2.version_id, false, v);
    rq = req();
    CN_CHECK_EQ(cn_objects_delete_version(n.o, &rq, "vers", "k", v, false, NULL), 0);
    expect(&n, "vers", 0, 0, 0);

    /* Suspended: a null version replaces the null one */
    CN_CHECK_EQ(put_n(&n, "vers", "s", 9, NULL), 0);
    rq = req();
    CN_CHECK_EQ(cn_objects_versioning_set(n.o, &rq, "vers", CN_OBJ_VERSIONING_SUSPENDED), 0);
    CN_CHECK_EQ(put_n(&n, "vers", "s", 4, NULL), 0);
    CN_CHECK_EQ(put_n(&n, "vers", "s", 3, NULL), 0);
    expect(&n, "vers", 1, 2, 12);

    /* A fold changes no figure (and is a no-op on SQLite). */
    CN_CHECK_EQ(cn_objects_usage_fold(n.o), 0);
    expect(&n, "plain", 3, 3, 44);
    expect(&n, "vers", 1, 2, 12);

    /* A deleted bucket's rows go; the same name again starts at 0. */
    CN_CHECK_EQ(cn_objects_bucket_delete(n.o, &rq, "empty"), 0);
    CN_CHECK_EQ(cn_objects_bucket_create(n.o, &rq, "empty", NULL, NULL), 0);
    expect(&n, "empty", 0, 0, 0);
    node_close(&n);
    cn_test_rmtree(db);
    free(db);
}

/* ---- an upgraded database: the step backfills from the rows ------------------- */

static cn_err_t old_rows_body(cn_meta_txn_t *txn, void *ctx)
{
    (void)ctx;
    static const char *const sql[] = {
        "INSERT INTO obj_bucket (bucket_id, name, owner, created_ms) VALUES "
        "(7, 'old', 'alice', 1), (8, 'bare', 'alice', 1)",
        "INSERT INTO obj_version (version_id, bucket_id, okey, size, etag, sha256, content_type, "
        "mtime_ms, owner, nparts) VALUES (1, 7, ?, 11, '', '', 'x', 1, 'alice', 0), "
        "(2, 7, ?, 22, '', '', 'x', 1, 'alice', 0)",
        "INSERT INTO obj_history (version_id, bucket_id, okey, marker, vnull, size, etag, sha256, "
        "content_type, mtime_ms, owner, nparts, noncurrent_ms) VALUES "
        "(3, 7, ?, 0, 0, 5, '', '', 'x', 1, 'alice', 0, 1), "
        "(4, 7, ?, 1, 0, 0, '', '', '', 1, 'alice', 0, 1)",
        "UPDATE obj_seq SET value = 10",
    };
    static const char *const types[] = { "", "bb", "bb", "" };
    cn_err_t err = 0;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0] && err >= 0; i++)
        err = cn_meta_execf(txn, sql[i], types[i], (const void *)"a", (size_t)1,
                            (const void *)(i == 1 ? "b" : "c"), (size_t)1);
    return err < 0 ? err : CN_OK;
}

static void test_backfill(void)
{
    char *db = cn_test_tmpdir("usage-old");
    cn_meta_t *m = NULL;
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(db), &mo, &m), 0);
    /* The schema as it was before the usage step. */
    CN_CHECK_EQ(cn_meta_migrate(m, "objects", cn__sql_obj_set.schema, 4), 0);
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, old_rows_body, NULL), 0);
    cn_meta_close(m);
    node_t n;
    node_open(&n, db); /* migrates to the current step */
    expect(&n, "old", 2, 3, 38);
    expect(&n, "bare", 0, 0, 0);
    CN_CHECK_EQ(put_n(&n, "old", "c", 1, NULL), 0);
    expect(&n, "old", 3, 4, 39);
    node_close(&n);
    cn_test_rmtree(db);
    free(db);
}

/* ---- two nodes writing one bucket at once ------------------------------------ */

#define PER_WRITER 60

typedef struct writer {
    node_t *n;
    int who;
    int failed;
} writer_t;

/* Puts keys w<who>-<i> (size i % 50 + 1), overwrites every third with 1
 * byte more and deletes every fifth: all on keys of its own, the bucket
 * shared. */
static void *writer_main(void *arg)
{
    writer_t *w = arg;
    char k[32];
    for (int i = 0; i < PER_WRITER; i++) {
        snprintf(k, sizeof k, "w%d-%d", w->who, i);
        size_t len = (size_t)(i % 50 + 1);
        if (put_n(w->n, "shared", k, len, NULL) < 0)
            w->failed++;
        if (i % 3 == 0 && put_n(w->n, "shared", k, len + 1, NULL) < 0)
            w->failed++;
        cn_objects_req_t rq = req();
        if (i % 5 == 0 && cn_objects_delete(w->n->o, &rq, "shared", k) < 0)
            w->failed++;
        if (w->who == 0 && i % 20 == 19 && cn_objects_usage_fold(w->n->o) < 0)
            w->failed++;
    }
    return NULL;
}

static void test_two_nodes(void)
{
    char *db = cn_test_tmpdir("usage-two");
    node_t a, b;
    node_open(&a, db);
    node_open(&b, db);
    cn_objects_req_t rq = req();
    CN_CHECK_EQ(cn_objects_bucket_create(a.o, &rq, "shared", NULL, NULL), 0);
    writer_t w[2] = { { &a, 0, 0 }, { &b, 1, 0 } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, writer_main, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CN_CHECK_EQ(w[0].failed + w[1].failed, 0);
    int64_t objects = 0, bytes = 0;
    for (int i = 0; i < PER_WRITER; i++) {
        if (i % 5 == 0)
            continue;
        objects++;
        bytes += i % 50 + 1 + (i % 3 == 0);
    }
    expect(&a, "shared", 2 * objects, 2 * objects, 2 * bytes);
    expect(&b, "shared", 2 * objects, 2 * objects, 2 * bytes);
    CN_CHECK_EQ(cn_objects_usage_fold(b.o), 0);
    expect(&a, "shared", 2 * objects, 2 * objects, 2 * bytes);
    node_close(&a);
    node_close(&b);
    cn_test_rmtree(db);
    free(db);
}

/* ---- namespaces: the blobs schema's totals ------------------------------------ */

typedef struct ns_fig {
    int n;
    char ns[4][16];
    int64_t members[4], bytes[4];
} ns_fig_t;

static cn_err_t ns_body(cn_meta_txn_t *txn, void *ctx)
{
    ns_fig_t *f = ctx;
    f->n = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_blobs[CN_SQL_BLOBS_USAGE], "");
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW && f->n < 4) {
        snprintf(f->ns[f->n], sizeof f->ns[0], "%s", cn_meta_column_text(st, 0, NULL));
        f->members[f->n] = cn_meta_column_int64(st, 1);
        f->bytes[f->n++] = cn_meta_column_int64(st, 2);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

typedef struct member_op {
    const char *ns;
    uint8_t d;
    int64_t len;
    bool del;
} member_op_t;

static cn_err_t member_body(cn_meta_txn_t *txn, void *ctx)
{
    const member_op_t *op = ctx;
    uint8_t d[32] = { op->d };
    cn_err_t err = op->del ? cn_meta_execf(txn, cn__sql_blobs[CN_SQL_BLOBS_MEMBER_DELETE], "sb",
                                           op->ns, (const void *)d, sizeof d)
                           : cn_meta_execf(txn, cn__sql_blobs[CN_SQL_BLOBS_MEMBER_INSERT], "sbii",
                                           op->ns, (const void *)d, sizeof d, op->len, (int64_t)1);
    return err < 0 ? err : CN_OK;
}

static void member(cn_meta_t *m, const char *ns, uint8_t d, int64_t len, bool del)
{
    member_op_t op = { ns, d, len, del };
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, member_body, &op), 0);
}

static void test_namespaces(void)
{
    char *db = cn_test_tmpdir("usage-ns");
    cn_meta_t *m = NULL;
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(db), &mo, &m), 0);
    CN_CHECK_EQ(cn__sql_migrate(m, &cn__sql_blobs_set), 0);
    member(m, "ns1", 1, 100, false);
    member(m, "ns1", 2, 50, false);
    member(m, "ns1", 2, 50, false); /* already a member: nothing changes */
    member(m, "ns2", 1, 100, false);
    member(m, "ns2", 1, 0, true);
    member(m, "ns1", 9, 0, true); /* not a member: nothing changes */
    ns_fig_t f;
    CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_READ, ns_body, &f), 0);
    CN_CHECK_EQ(f.n, 1); /* ns2 has no member left: not listed */
    CN_CHECK_STR(f.ns[0], "ns1");
    CN_CHECK_EQ(f.members[0], 2);
    CN_CHECK_EQ(f.bytes[0], 150);
    cn_meta_close(m);
    cn_test_rmtree(db);
    free(db);
}

CN_TEST_MAIN(CN_TEST(test_every_change), CN_TEST(test_backfill), CN_TEST(test_two_nodes),
             CN_TEST(test_namespaces), )
