/* Unit tests of object versions (src/objects/versions.c): the wire form of a
 * version id, and the promise that a current-version read stays one indexed
 * lookup however many versions its key has (the query plans of the read's
 * statements, with 10,000 noncurrent versions of the key in the table). */
#include "objects_env.h"
#include "meta/sql/objects.h" /* the statements whose plans are checked */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_version_codec(void)
{
    static const int64_t ids[] = { 1, 31, 32, 1000, 123456789, INT64_MAX };
    char prev[CN_OBJECTS_VERSION_ID_MAX] = "";
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char s[CN_OBJECTS_VERSION_ID_MAX];
        cn_objects_version_str(ids[i], false, s);
        CN_CHECK_EQ(strlen(s), 13);
        /* Fixed width: string order is sequence order. */
        CN_CHECK(strcmp(prev, s) < 0);
        memcpy(prev, s, sizeof s);
        int64_t back = 0;
        bool is_null = true;
        CN_CHECK_EQ(cn_objects_version_parse(s, &back, &is_null), 0);
        CN_CHECK_EQ(back, ids[i]);
        CN_CHECK(!is_null);
    }
    char s[CN_OBJECTS_VERSION_ID_MAX];
    cn_objects_version_str(77, true, s);
    CN_CHECK_STR(s, "null");
    int64_t v = 5;
    bool is_null = false;
    CN_CHECK_EQ(cn_objects_version_parse("null", &v, &is_null), 0);
    CN_CHECK(is_null && v == 0);
    static const char *const bad[] = { "",
                                       "NULL",
                                       "000000000000",
                                       "00000000000001",
                                       "0000000000000",
                                       "g000000000000",
                                       "000000000000w",
                                       "00000000000-1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CN_CHECK_EQ(cn_objects_version_parse(bad[i], &v, &is_null), CN_E_INVALID);
    CN_CHECK_EQ(cn_objects_version_parse(NULL, &v, &is_null), CN_E_INVALID);
}

/* ---- one key with 10,000 noncurrent versions ----------------------------------- */

static cn_err_t put_str(env_t *e, const char *b, const char *k, const char *body,
                        cn_objects_put_result_t *res)
{
    cn_objects_req_t rq = req_for(&e->alice);
    cn_objects_put_t *s = NULL;
    size_t n = strlen(body);
    cn_err_t err = cn_objects_put_begin(e->o, &rq, b, k, NULL, (int64_t)n, &s);
    if (err < 0)
        return err;
    if ((err = cn_objects_put_write(s, body, n)) < 0) {
        cn_objects_put_abort(s);
        return err;
    }
    return cn_objects_put_commit(s, res);
}

#define NOLD 10000
#define OLD_BASE 1000000

/* Fills obj_history with NOLD noncurrent versions of key k in bucket_id,
 * with ids below every id the service hands out next. */
typedef struct {
    int64_t bucket_id;
} fill_t;

static cn_err_t fill_body(cn_meta_txn_t *txn, void *ctx)
{
    const fill_t *f = ctx;
    cn_err_t err = cn_meta_execf(txn, "UPDATE obj_seq SET value = ? WHERE name = 'version'", "i",
                                 (int64_t)(OLD_BASE + NOLD));
    for (int64_t i = 0; i < NOLD && err >= 0; i++)
        err = cn_meta_execf(
            txn,
            "INSERT INTO obj_history (version_id, bucket_id, okey, marker, vnull, size, etag, "
            "sha256, content_type, umeta, mtime_ms, owner, acl, nparts, cksum_alg, cksum, "
            "noncurrent_ms) VALUES (?, ?, ?, ?, 0, 0, '', '', 'x', NULL, 1, 'alice', NULL, 0, "
            "NULL, NULL, 1)",
            "iibi", OLD_BASE + i, f->bucket_id, (const void *)"k", (size_t)1,
            (int64_t)(i % 7 == 0));
    if (err >= 0) /* PostgreSQL's version ids: past the counter set above */
        err = cn_meta_execf(
            txn, cn_meta_batch_text(txn, &cn__sql_obj_engine[CN_SQL_OBJ_E_VERSION_SYNC]), "");
    return err < 0 ? err : CN_OK;
}

/* The query plan of statement q (its parameters bound as types says):
 * every detail line, joined by "|" into out. */
typedef struct {
    int q;
    int64_t bucket_id;
    char *out;
    size_t cap;
} plan_t;

static cn_err_t plan_body(cn_meta_txn_t *txn, void *ctx)
{
    plan_t *p = ctx;
    char sql[2048];
    snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN %s", cn__sql_obj[p->q]);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err;
    if (p->q == CN_SQL_OBJ_V_KEY_READ)
        err = cn_meta_queryf(txn, &st, sql, "bs", (const void *)"k", (size_t)1, "vbk");
    else
        err = cn_meta_queryf(txn, &st, sql, "ib", p->bucket_id, (const void *)"k", (size_t)1);
    p->out[0] = 0;
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        const char *d = cn_meta_column_text(st, 3, NULL);
        size_t used = strlen(p->out);
        snprintf(p->out + used, p->cap - used, "%s|", d ? d : "");
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static void plan_of(env_t *e, int q, int64_t bucket_id, char *out, size_t cap)
{
    plan_t p = { q, bucket_id, out, cap };
    CN_CHECK_EQ(cn_meta_run(e->meta, CN_META_RUN_READ, plan_body, &p), 0);
    fprintf(stderr, "# plan %d: %s\n", q, out);
}

static void test_current_read_among_10000_versions(void)
{
    env_t e;
    env_open(&e, NULL);
    cn_objects_req_t rq = req_for(&e.alice);
    cn_bucket_info_t bi;
    CN_CHECK_EQ(cn_objects_bucket_create(e.o, &rq, "vbk", NULL, &bi), 0);
    CN_CHECK_EQ(cn_objects_versioning_set(e.o, &rq, "vbk", CN_OBJ_VERSIONING_ENABLED), 0);
    fill_t f = { bi.bucket_id };
    CN_CHECK_EQ(cn_meta_run(e.meta, CN_META_RUN_WRITE, fill_body, &f), 0);
    cn_objects_put_result_t r1, r2;
    CN_CHECK_EQ(put_str(&e, "vbk", "k", "first", &r1), 0);
    CN_CHECK_EQ(put_str(&e, "vbk", "k", "current", &r2), 0);
    CN_CHECK(r2.version_id > r1.version_id && r1.version_id > OLD_BASE + NOLD - 1);
    CN_CHECK(!r2.vnull && r2.bucket_versioned);

    /* The read of the current version: the bucket by name, the version by
     * (bucket_id, okey), its segments by version_id; never a scan, and
     * never a look at the noncurrent versions.  The plans are SQLite's
     * (EXPLAIN QUERY PLAN); on PostgreSQL (objects_versions_pg) only what
     * the service answers is checked. */
    char plan[4096];
    if (cn_test_meta_pg()) {
        fprintf(stderr, "# query plans not checked: EXPLAIN QUERY PLAN is SQLite's\n");
    } else {
        plan_of(&e, CN_SQL_OBJ_V_KEY_READ, bi.bucket_id, plan, sizeof plan);
        CN_CHECK(strstr(plan, "SCAN") == NULL);
        CN_CHECK(strstr(plan, "obj_history") == NULL);
        CN_CHECK(strstr(plan, "SEARCH v USING INDEX") != NULL);
        CN_CHECK(strstr(plan, "SEARCH s USING") != NULL);
        /* The one extra look of a miss (is the latest a delete marker?):
         * one indexed search that reads the newest row, no sort. */
        plan_of(&e, CN_SQL_OBJ_V_HIST_NEWEST, bi.bucket_id, plan, sizeof plan);
        CN_CHECK(strstr(plan, "SEARCH obj_history USING") != NULL);
        CN_CHECK(strstr(plan, "obj_history_key") != NULL);
        CN_CHECK(strstr(plan, "SCAN") == NULL && strstr(plan, "TEMP B-TREE") == NULL);
    }

    /* And the service answers from it: the current, then an old one. */
    cn_object_info_t info;
    cn_objects_reader_t *rd = NULL;
    rq = req_for(&e.alice);
    CN_CHECK_EQ(cn_objects_get(e.o, &rq, "vbk", "k", NULL, &info, &rd), 0);
    CN_CHECK_EQ(info.version_id, r2.version_id);
    CN_CHECK_EQ(info.size, 7);
    cn_objects_reader_free(rd);
    cn_objects_info_free(&info);
    char v[CN_OBJECTS_VERSION_ID_MAX];
    cn_objects_version_str(r1.version_id, false, v);
    CN_CHECK_EQ(cn_objects_head_version(e.o, &rq, "vbk", "k", v, &info), 0);
    CN_CHECK_EQ(info.size, 5);
    cn_objects_info_free(&info);
    /* A history row that is a marker: 405's error, with its id. */
    cn_objects_version_str(OLD_BASE + 7, false, v);
    CN_CHECK_EQ(cn_objects_head_version(e.o, &rq, "vbk", "k", v, &info), CN_E_UNSUPPORTED);
    CN_CHECK(info.delete_marker && info.version_id == OLD_BASE + 7);
    cn_objects_info_free(&info);
    env_close(&e);
}

/* Versioned deletes through the service: marker, removal by id, undelete,
 * and the Jay contract of cn_objects_delete (a missing key is NOT_FOUND). */
static void test_delete_paths(void)
{
    env_t e;
    env_open(&e, NULL);
    cn_objects_req_t rq = req_for(&e.alice);
    CN_CHECK_EQ(cn_objects_bucket_create(e.o, &rq, "vdk", NULL, NULL), 0);
    CN_CHECK_EQ(cn_objects_versioning_set(e.o, &rq, "vdk", CN_OBJ_VERSIONING_OFF), CN_E_INVALID);
    CN_CHECK_EQ(cn_objects_versioning_set(e.o, &rq, "vdk", CN_OBJ_VERSIONING_ENABLED), 0);
    cn_objects_versioning_t st = CN_OBJ_VERSIONING_OFF;
    CN_CHECK_EQ(cn_objects_versioning_get(e.o, &rq, "vdk", &st), 0);
    CN_CHECK_EQ(st, CN_OBJ_VERSIONING_ENABLED);
    cn_objects_put_result_t r1;
    CN_CHECK_EQ(put_str(&e, "vdk", "k", "one", &r1), 0);
    CN_CHECK_EQ(cn_objects_delete(e.o, &rq, "vdk", "k"), 0);
    /* Now a marker is latest: the Jay delete finds no current version. */
    rq = req_for(&e.alice);
    CN_CHECK_EQ(cn_objects_delete(e.o, &rq, "vdk", "k"), CN_E_NOT_FOUND);
    cn_object_info_t info;
    rq = req_for(&e.alice);
    CN_CHECK_EQ(cn_objects_head(e.o, &rq, "vdk", "k", &info), CN_E_NOT_FOUND);
    CN_CHECK(info.delete_marker);
    int64_t marker = info.version_id;
    cn_objects_info_free(&info);
    char v[CN_OBJECTS_VERSION_ID_MAX];
    cn_objects_version_str(marker, false, v);
    cn_objects_delete_result_t dr;
    rq = req_for(&e.alice);
    CN_CHECK_EQ(cn_objects_delete_version(e.o, &rq, "vdk", "k", v, false, &dr), 0);
    CN_CHECK(dr.has_version && dr.delete_marker && dr.version_id == marker);
    CN_CHECK_EQ(cn_objects_head(e.o, &rq, "vdk", "k", &info), 0);
    CN_CHECK_EQ(info.version_id, r1.version_id);
    cn_objects_info_free(&info);
    /* The bucket is not empty while a noncurrent version remains. */
    CN_CHECK_EQ(cn_objects_delete(e.o, &rq, "vdk", "k"), 0);
    rq = req_for(&e.alice);
    CN_CHECK_EQ(cn_objects_bucket_delete(e.o, &rq, "vdk"), CN_E_NOT_EMPTY);
    env_close(&e);
}

/* An explicit retention or legal hold on a write is the service's to judge,
 * whatever the face: the token's object:lock, then a bucket with object lock;
 * a write without one is untouched by either. */
static void test_lock_put_check(void)
{
    env_t e;
    env_open(&e, NULL);
    cn_objects_req_t rq = req_for(&e.alice);
    CN_CHECK_EQ(cn_objects_bucket_create(e.o, &rq, "plk", NULL, NULL), 0);
    cn_objects_kv_t lock[] = { { "versioning", "Enabled" }, { CN_OBJECTS_LOCK_ATTR, "x" } };
    CN_CHECK_EQ(cn_objects_bucket_create_with(e.o, &rq, "llk", NULL, lock, 2, NULL), 0);
    cn_objects_retention_t ret = { CN_OBJ_LOCK_GOVERNANCE, cn_wall_ms() + 86400000, -1 };
    cn_objects_retention_t hold = { CN_OBJ_LOCK_NONE, 0, 1 };
    const cn_objects_retention_t *given[] = { &ret, &hold };
    cn_principal_t nolock = e.alice;
    nolock.perms &= ~(cn_perms_t)CN_PERM_OBJECT_LOCK;
    char up[CN_UPLOAD_ID_MAX + 1];
    for (size_t i = 0; i < 2; i++) {
        cn_objects_put_args_t a = { .retention = given[i] };
        cn_objects_put_t *s = NULL;
        /* No object lock on the bucket: INVALID, LOCK_NOT_ENABLED. */
        rq = req_for(&e.alice);
        CN_CHECK_EQ(cn_objects_put_begin(e.o, &rq, "plk", "k", &a, 1, &s), CN_E_INVALID);
        CN_CHECK_EQ(rq.fail.detail, CN_OBJ_LOCK_NOT_ENABLED);
        rq = req_for(&e.alice);
        CN_CHECK_EQ(cn_objects_mpu_create(e.o, &rq, "plk", "k", &a, up), CN_E_INVALID);
        CN_CHECK_EQ(rq.fail.detail, CN_OBJ_LOCK_NOT_ENABLED);
        /* A token without object:lock, even on a lock bucket: DENIED. */
        rq = req_for(&nolock);
        CN_CHECK_EQ(cn_objects_put_begin(e.o, &rq, "llk", "k", &a, 1, &s), CN_E_DENIED);
        rq = req_for(&nolock);
        CN_CHECK_EQ(cn_objects_mpu_create(e.o, &rq, "llk", "k", &a, up), CN_E_DENIED);
        /* With both, the write begins. */
        rq = req_for(&e.alice);
        CN_CHECK_EQ(cn_objects_put_begin(e.o, &rq, "llk", "k", &a, 1, &s), 0);
        cn_objects_put_abort(s);
    }
    /* No retention given: neither check applies. */
    cn_objects_put_args_t none = { 0 };
    cn_objects_put_t *s = NULL;
    rq = req_for(&nolock);
    CN_CHECK_EQ(cn_objects_put_begin(e.o, &rq, "plk", "k", &none, 1, &s), 0);
    cn_objects_put_abort(s);
    env_close(&e);
}

CN_TEST_MAIN(CN_TEST(test_version_codec), CN_TEST(test_current_read_among_10000_versions),
             CN_TEST(test_delete_paths), CN_TEST(test_lock_put_check))
