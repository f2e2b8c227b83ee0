/* Multipart uploads: create, (parts stream through put.c), complete, abort,
 * list parts, list uploads, and the expiry sweep.
 *
 * Completion references the part blobs in order (no stitching, no copy): the
 * version's segments are the parts.  Its etag is S3's: the MD5 of the
 * concatenated binary part MD5s, hex, then "-N".  Its checksum is the SHA-256
 * of the whole object, which cannot be derived from the parts' SHA-256s: the
 * parts are hashed in order as they commit (mpu_chain.c, a cache in memory),
 * and completion reads once (outside any write transaction) only the parts
 * that chain did not cover -- after a restart, every part committed before
 * it (the chain is not saved: mpu_chain.c).  An additional
 * checksum (S3's x-amz-checksum-algorithm) is opaque here: the upload keeps
 * its algorithm, each part the value its adapter computed, and the adapter's
 * complete_check combines them.
 *
 * A completed upload's row stays (done_ms set, with the listed parts' rows)
 * for opts.completed_keep_ms, so a retried completion can be answered; the
 * sweep removes it then.  Every other operation treats it as gone. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn__upload_check(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                          const char *upload_id, int64_t bucket_id, const char *key,
                          char cksum_alg[CN_OBJECTS_CKSUM_ALG_MAX])
{
    if (cksum_alg)
        cksum_alg[0] = 0;
    if (!upload_id || !upload_id[0] || strlen(upload_id) > CN_UPLOAD_ID_MAX)
        return cn__fail(rq, CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD, "no such upload");
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_UPLOAD_OPEN], "s", upload_id);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    bool live = false;
    if (err == CN_META_ROW) {
        size_t kl = 0;
        const void *k = cn_meta_column_blob(st, 1, &kl);
        int64_t created = cn_meta_column_int64(st, 2);
        live = cn_meta_column_int64(st, 0) == bucket_id && k && kl == strlen(key) &&
               !memcmp(k, key, kl) && created + o->opts.upload_expiry_ms > cn_wall_ms();
        const char *a = cn_meta_column_text(st, 3, NULL);
        if (cksum_alg && a)
            snprintf(cksum_alg, CN_OBJECTS_CKSUM_ALG_MAX, "%s", a);
        err = 0;
    }
    cn_meta_finish(st);
    if (err < 0)
        return err;
    if (!live)
        return cn__fail(rq, CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD, "no such upload");
    return 0;
}

cn_err_t cn__upload_access(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                           const cn__bkt_t *b, const char *key, const char *upload_id,
                           cn_authz_action_t act, char cksum_alg[CN_OBJECTS_CKSUM_ALG_MAX])
{
    cn_err_t err = cn__key_check(rq, key);
    if (err >= 0)
        err = cn__authorize(rq, b, act, key, NULL, NULL);
    if (err >= 0)
        err = cn__upload_check(o, txn, rq, upload_id, b->id, key, cksum_alg);
    return err;
}

/* An upload to create on key under the id drawn for it before its first
 * run: the id is the create's operation key (cn_meta_keyed). */
typedef struct mpu_new {
    cn_objects_t *o;
    cn_objects_req_t *rq;
    const char *bucket, *key;
    const cn_objects_put_args_t *args;
    char id[CN_UPLOAD_ID_MAX + 1];
} mpu_new_t;

static cn_err_t mpu_create_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                void *ctx)
{
    mpu_new_t *mn = ctx;
    const cn_objects_put_args_t *args = mn->args;
    cn_buf_t umeta = { 0 }, acl = { 0 };
    cn_err_t err = cn__key_check(rq, mn->key);
    if (err >= 0)
        err = cn__put_authorize(rq, b, mn->key, args);
    if (err >= 0)
        err = cn__lock_put_check(txn, rq, b, args);
    const char *owner = cn__principal_name(rq);
    if (!owner)
        owner = b->owner;
    if (err >= 0 && args)
        err = cn__umeta_encode(args->meta, args->nmeta, &umeta);
    if (err >= 0 && args)
        err = cn__acl_for_put(args->acl, owner, &acl);
    if (err >= 0) {
        const char *ct =
            args && args->content_type ? args->content_type : "application/octet-stream";
        const char *alg =
            args && args->checksum_alg && args->checksum_alg[0] ? args->checksum_alg : NULL;
        /* umeta last: SQL NULL when empty ('n' takes no argument, so the
         * pointer and length after it go unread). */
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_UPLOAD_INSERT],
                            umeta.len ? "sibsstisb" : "sibsstisn", mn->id, b->id,
                            (const void *)mn->key, strlen(mn->key), ct, owner,
                            (const char *)(acl.len ? acl.data : NULL), acl.len, cn_wall_ms(), alg,
                            (const void *)umeta.data, umeta.len);
    }
    if (err >= 0)
        err = cn__upload_attrs_set(txn, mn->id, args);
    cn_buf_free(&umeta);
    cn_buf_free(&acl);
    return err < 0 ? err : CN_OK;
}

static cn_err_t mpu_create_run(void *ctx)
{
    mpu_new_t *mn = ctx;
    return cn__bkt_run(mn->o, mn->rq, mn->bucket, CN_ACT_INVALID, CN_META_RUN_WRITE | CN_META_RETRY,
                       mpu_create_body, mn);
}

static cn_err_t mpu_created(cn_meta_txn_t *txn, void *ctx, bool *found)
{
    const mpu_new_t *mn = ctx;
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_UPLOAD_OPEN], "s", mn->id);
    *found = err == CN_META_ROW;
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_mpu_create(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               const char *key, const cn_objects_put_args_t *args,
                               char upload_id[CN_UPLOAD_ID_MAX + 1])
{
    upload_id[0] = 0;
    cn_err_t err = cn__put_args_check(rq, args);
    if (err >= 0 && args && args->checksum_alg &&
        strlen(args->checksum_alg) >= CN_OBJECTS_CKSUM_ALG_MAX)
        err = cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_CHECKSUM_ALG_INVALID,
                         "checksum algorithm name too long");
    if (err < 0)
        return err;
    mpu_new_t mn = { o, rq, bucket, key, args, "" };
    uint8_t rnd[16];
    err = cn_random_bytes(rnd, sizeof rnd);
    if (err >= 0) {
        cn_hex_encode(rnd, sizeof rnd, mn.id);
        err = cn_meta_keyed(o->meta, mpu_create_run, mpu_created, &mn);
    }
    if (err >= 0)
        snprintf(upload_id, CN_UPLOAD_ID_MAX + 1, "%s", mn.id);
    return err;
}

/* One stored part. */
typedef struct {
    int32_t number;
    cn_digest_t digest;
    uint64_t size;
    char etag[CN_ETAG_MAX];
    uint8_t md5[CN_MD5_LEN];
    char sha256[CN_DIGEST_HEX_LEN + 1];
    char cksum[CN_OBJECTS_CKSUM_MAX];
} cn_obj_part_row_t;

/* Loads every part of upload_id in ascending number order (at most 10000). */
static cn_err_t obj_parts_load(cn_meta_txn_t *txn, const char *upload_id, cn_obj_part_row_t **out,
                               size_t *n)
{
    *out = NULL;
    *n = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_PARTS_OF_UPLOAD], "s", upload_id);
    if (err < 0)
        return err;
    size_t cap = 0;
    cn_obj_part_row_t *v = NULL;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            if (nc > CN_PART_NUMBER_MAX)
                nc = CN_PART_NUMBER_MAX;
            if (nc <= cap) {
                err = CN_E_CORRUPT;
                break;
            }
            cn_obj_part_row_t *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                err = -ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        cn_obj_part_row_t *p = &v[*n];
        memset(p, 0, sizeof *p);
        p->number = (int32_t)cn_meta_column_int64(st, 0);
        size_t dl = 0, ml = 0;
        const void *d = cn_meta_column_blob(st, 1, &dl);
        const void *m = cn_meta_column_blob(st, 4, &ml);
        if (!d || dl != CN_DIGEST_LEN || !m || ml != CN_MD5_LEN) {
            err = CN_E_CORRUPT;
            break;
        }
        memcpy(p->digest.b, d, CN_DIGEST_LEN);
        memcpy(p->md5, m, CN_MD5_LEN);
        p->size = (uint64_t)cn_meta_column_int64(st, 2);
        const char *s = cn_meta_column_text(st, 3, NULL);
        snprintf(p->etag, sizeof p->etag, "%s", s ? s : "");
        s = cn_meta_column_text(st, 5, NULL);
        snprintf(p->sha256, sizeof p->sha256, "%s", s ? s : "");
        s = cn_meta_column_text(st, 6, NULL);
        snprintf(p->cksum, sizeof p->cksum, "%s", s ? s : "");
        (*n)++;
    }
    cn_meta_finish(st);
    if (err < 0) {
        free(v);
        *n = 0;
        return err;
    }
    *out = v;
    return 0;
}

static bool obj_etag_same(const char *want, const char *have)
{
    size_t wl = strlen(want);
    if (wl >= 2 && want[0] == '"' && want[wl - 1] == '"') {
        want++;
        wl -= 2;
    }
    return strlen(have) == wl && !strncasecmp(want, have, wl);
}

static cn_err_t obj_sha_sink(void *ctx, const void *p, size_t n)
{
    cn_sha256_update(ctx, p, n);
    return 0;
}

/* The upload's row: what the version takes from it and, once completed, the
 * completion's result. */
typedef struct {
    char *content_type;
    cn_buf_t umeta;
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    cn_buf_t acl;
    char cksum_alg[CN_OBJECTS_CKSUM_ALG_MAX];
    bool done;
    int64_t done_ms;
    char done_etag[CN_ETAG_MAX];
    char done_cksum[CN_OBJECTS_CKSUM_MAX];
    char done_sha256[CN_DIGEST_HEX_LEN + 1];
    int64_t done_version;
} cn_obj_upload_row_t;

static void obj_upload_row_free(cn_obj_upload_row_t *u)
{
    free(u->content_type);
    cn_buf_free(&u->umeta);
    cn_buf_free(&u->acl);
}

static void copy_text(cn_meta_stmt_t *st, int col, char *out, size_t cap)
{
    const char *t = cn_meta_column_text(st, col, NULL);
    snprintf(out, cap, "%s", t ? t : "");
}

/* Reads upload_id's row into u: CN_E_NO_UPLOAD (details in rq) unless it is
 * an upload of bucket_id/key that is live (not expired) or was completed no
 * longer than opts.completed_keep_ms ago (u->done). */
static cn_err_t upload_load(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                            const char *upload_id, int64_t bucket_id, const char *key,
                            cn_obj_upload_row_t *u)
{
    memset(u, 0, sizeof *u);
    if (!upload_id || !upload_id[0] || strlen(upload_id) > CN_UPLOAD_ID_MAX)
        return cn__fail(rq, CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD, "no such upload");
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_UPLOAD_ROW], "s", upload_id);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    bool found = false;
    if (err == CN_META_ROW) {
        size_t n = 0, kl = 0;
        const void *k = cn_meta_column_blob(st, 6, &kl);
        int64_t now = cn_wall_ms();
        u->done = !cn_meta_column_is_null(st, 8);
        u->done_ms = cn_meta_column_int64(st, 8);
        found = cn_meta_column_int64(st, 5) == bucket_id && k && kl == strlen(key) &&
                !memcmp(k, key, kl) &&
                (u->done ? u->done_ms + o->opts.completed_keep_ms > now
                         : cn_meta_column_int64(st, 7) + o->opts.upload_expiry_ms > now);
        const char *t = cn_meta_column_text(st, 0, &n);
        u->content_type = cn__strndup(t ? t : "", t ? n : 0);
        err = u->content_type ? 0 : -ENOMEM;
        const void *m = cn_meta_column_blob(st, 1, &n);
        if (err >= 0 && m)
            err = cn_buf_append(&u->umeta, m, n);
        copy_text(st, 2, u->owner, sizeof u->owner);
        t = cn_meta_column_text(st, 3, &n);
        if (err >= 0 && t)
            err = cn_buf_append(&u->acl, t, n);
        copy_text(st, 4, u->cksum_alg, sizeof u->cksum_alg);
        copy_text(st, 9, u->done_etag, sizeof u->done_etag);
        copy_text(st, 10, u->done_cksum, sizeof u->done_cksum);
        u->done_version = cn_meta_column_int64(st, 11);
        copy_text(st, 12, u->done_sha256, sizeof u->done_sha256);
    } else if (err == CN_META_DONE) {
        err = 0;
    }
    cn_meta_finish(st);
    if (err >= 0 && !found)
        err = cn__fail(rq, CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD, "no such upload");
    return err;
}

/* One completion in progress: the request, what it read, what it makes. */
typedef struct {
    cn_objects_t *o;
    cn_objects_req_t *rq;
    const char *bucket, *key, *upload_id;
    const int32_t *parts;
    const char *const *etags;
    size_t n;
    const cn_objects_put_args_t *args;
    int64_t bucket_id;
    cn_obj_upload_row_t up;
    cn_obj_part_row_t *rows, *chosen;
    size_t nrows;
    uint64_t total;
    cn_objects_put_result_t r;
    bool claimed; /* the version row is in: complete_claim made it */
} cn_obj_complete_t;

static cn_err_t complete_read_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                   void *ctx)
{
    cn_obj_complete_t *c = ctx;
    /* A repeated run starts from nothing read. */
    obj_upload_row_free(&c->up);
    memset(&c->up, 0, sizeof c->up);
    free(c->rows);
    c->rows = NULL;
    c->nrows = 0;
    c->bucket_id = b->id;
    cn_err_t err = cn__key_check(rq, c->key);
    if (err >= 0)
        err = cn__authorize(rq, b, CN_ACT_PUT_OBJECT, c->key, NULL, NULL);
    if (err >= 0)
        err = upload_load(c->o, txn, rq, c->upload_id, b->id, c->key, &c->up);
    if (err >= 0)
        err = obj_parts_load(txn, c->upload_id, &c->rows, &c->nrows);
    return err;
}

/* Step 1, in a read snapshot: the bucket, the access, the upload (live or
 * recently completed) and its parts. */
static cn_err_t complete_read(cn_obj_complete_t *c, const char *bucket)
{
    c->bucket = bucket;
    return cn__bkt_run(c->o, c->rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                       complete_read_body, c);
}

/* The listed parts against the stored ones, into c->chosen. */
static cn_err_t choose_parts(cn_obj_complete_t *c)
{
    cn_objects_req_t *rq = c->rq;
    if (c->up.done && c->n != c->nrows)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_LIST_INVALID,
                          "the upload was completed with other parts");
    c->chosen = calloc(c->n, sizeof *c->chosen);
    if (!c->chosen)
        return -ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < c->n; i++) {
        int32_t pn = c->parts[i];
        if (i && pn <= c->parts[i - 1])
            return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_ORDER,
                              "part numbers must ascend (part %d after %d)", pn, c->parts[i - 1]);
        while (j < c->nrows && c->rows[j].number < pn)
            j++;
        if (j == c->nrows || c->rows[j].number != pn)
            return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_MISSING,
                              "part %d was not uploaded", pn);
        if (c->etags && c->etags[i] && !obj_etag_same(c->etags[i], c->rows[j].etag))
            return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_ETAG_MISMATCH,
                              "part %d has another etag", pn);
        c->chosen[i] = c->rows[j];
        c->total += c->rows[j].size;
        if (c->total > c->o->opts.max_object_bytes)
            return cn__fail(rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG,
                            "the object would exceed the limit of %llu",
                            (unsigned long long)c->o->opts.max_object_bytes);
    }
    return 0;
}

/* Step 2: the listed parts against the stored ones, into c->chosen.  A
 * completed upload must be listed with exactly the parts it completed with:
 * any other list is not a retry of that completion, and the upload it would
 * complete no longer exists (CN_E_NO_UPLOAD, as Jay's contract and S3 say of
 * a completed upload). */
static cn_err_t complete_choose(cn_obj_complete_t *c)
{
    cn_objects_req_t *rq = c->rq;
    cn_err_t err = choose_parts(c);
    if (err == CN_E_INVALID && c->up.done)
        return cn__fail(rq, CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD,
                        "the upload was completed with another list of parts");
    return err;
}

/* Step 3: the minimum size of every chosen part but the last (the caller's
 * min_part_size), then the caller's check of the chosen parts, which also
 * makes the object's additional checksum. */
static cn_err_t complete_check(cn_obj_complete_t *c)
{
    const cn_objects_put_args_t *a = c->args;
    for (size_t i = 0; a && i + 1 < c->n; i++)
        if (c->chosen[i].size < a->min_part_size)
            return cn__fail_d(c->rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_TOO_SMALL,
                              "Your proposed upload is smaller than the minimum allowed size: "
                              "part %d has %llu bytes, every part but the last needs %llu",
                              (int)c->chosen[i].number, (unsigned long long)c->chosen[i].size,
                              (unsigned long long)a->min_part_size);
    if (!a || !a->complete_check)
        return 0;
    cn_objects_part_t *v = calloc(c->n, sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < c->n; i++) {
        const cn_obj_part_row_t *p = &c->chosen[i];
        v[i].part_number = p->number;
        v[i].size = p->size;
        memcpy(v[i].etag, p->etag, sizeof v[i].etag);
        memcpy(v[i].sha256, p->sha256, sizeof v[i].sha256);
        memcpy(v[i].checksum, p->cksum, sizeof v[i].checksum);
    }
    char ck[CN_OBJECTS_CKSUM_MAX] = "";
    cn_err_t err = a->complete_check(a->complete_ctx, c->rq, c->up.cksum_alg, v, c->n, ck);
    free(v);
    if (err >= 0 && ck[0]) {
        snprintf(c->r.checksum_alg, sizeof c->r.checksum_alg, "%s", c->up.cksum_alg);
        snprintf(c->r.checksum, sizeof c->r.checksum, "%s", ck);
    }
    return err < 0 ? err : 0;
}

/* The upload's running SHA-256 over the first *covered chosen parts
 * (mpu_chain.c), or a new context and *covered 0; NULL when memory is short. */
static cn_sha256_t *complete_chain(cn_obj_complete_t *c, size_t *covered)
{
    *covered = 0;
    cn__chain_part_t *v = calloc(c->n, sizeof *v);
    cn_sha256_t *sha = NULL;
    if (v) {
        for (size_t i = 0; i < c->n; i++)
            v[i] =
                (cn__chain_part_t){ c->chosen[i].number, c->chosen[i].digest, c->chosen[i].size };
        sha = cn__chain_take(c->o, c->upload_id, v, c->n, covered);
        free(v);
    }
    if (!sha && cn_sha256_new(&sha) < 0)
        sha = NULL;
    return sha;
}

/* Step 4: the whole object's SHA-256 (from the upload's running SHA-256 when
 * it covers the first parts, reading the rest once, outside any write
 * transaction) and the multipart etag. */
static cn_err_t complete_digest(cn_obj_complete_t *c)
{
    size_t covered = 0;
    cn_sha256_t *sha = complete_chain(c, &covered);
    cn_md5_t *md5 = NULL;
    cn_err_t err = sha ? 0 : -ENOMEM;
    if (err >= 0)
        err = cn_md5_new(&md5);
    for (size_t i = 0; i < c->n && err >= 0; i++) {
        const cn_obj_part_row_t *p = &c->chosen[i];
        uint64_t served = i < covered ? p->size : 0;
        if (p->size && i >= covered) {
            cn__chain_count_reads(true, 1);
            err = cn_store_read_range(c->o->store, &p->digest, 0, p->size, obj_sha_sink, sha, NULL,
                                      &served);
        }
        if (err >= 0 && served != p->size)
            err = CN_E_CORRUPT;
        if (err >= 0)
            cn_md5_update(md5, p->md5, CN_MD5_LEN);
    }
    if (err < 0) {
        cn_sha256_free(sha);
        cn_md5_free(md5);
        return err;
    }
    uint8_t d[CN_DIGEST_LEN], m[CN_MD5_LEN];
    cn_sha256_final(sha, d);
    cn_md5_final(md5, m);
    cn_hex_encode(d, sizeof d, c->r.sha256);
    char mh[2 * CN_MD5_LEN + 1];
    cn_hex_encode(m, sizeof m, mh);
    snprintf(c->r.etag, sizeof c->r.etag, "%s-%zu", mh, c->n);
    c->r.size = c->total;
    c->r.last_modified_ms = cn_wall_ms();
    return 0;
}

/* In the commit transaction: the upload is still live and every chosen part
 * is still the blob that was read. */
static cn_err_t complete_recheck(cn_obj_complete_t *c, cn_meta_txn_t *txn)
{
    cn_err_t err = cn__upload_check(c->o, txn, c->rq, c->upload_id, c->bucket_id, c->key, NULL);
    for (size_t i = 0; i < c->n && err >= 0; i++) {
        cn_meta_stmt_t *st = NULL;
        err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_PART_DIGEST], "si", c->upload_id,
                             (int64_t)c->chosen[i].number);
        if (err < 0)
            break;
        err = cn_meta_step(st);
        size_t dl = 0;
        const void *dg = err == CN_META_ROW ? cn_meta_column_blob(st, 0, &dl) : NULL;
        if (err >= 0 && (!dg || dl != CN_DIGEST_LEN || memcmp(dg, c->chosen[i].digest.b, dl)))
            err = cn__fail(c->rq, CN_E_CONFLICT, CN_OBJ_WHAT_PART,
                           "part %d changed while the upload completed", c->chosen[i].number);
        cn_meta_finish(st);
    }
    return err < 0 ? err : 0;
}

/* s, or NULL (SQL NULL) when s is empty. */
static const char *str_or_null(const char *s)
{
    return s[0] ? s : NULL;
}

/* In the commit transaction: the version's segments and row, pushed (a part
 * each: one round trip for them all on PostgreSQL; nothing after them in
 * the body tells one error from another). */
static cn_err_t complete_rows(cn_obj_complete_t *c, cn_meta_txn_t *txn, int64_t vid)
{
    cn_err_t err = 0;
    for (size_t i = 0; i < c->n && err >= 0; i++) {
        const cn_obj_part_row_t *p = &c->chosen[i];
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_SEGMENT_INSERT_PART], "iibiisss", vid,
                            (int64_t)i, (const void *)p->digest.b, (size_t)CN_DIGEST_LEN,
                            (int64_t)p->size, (int64_t)p->number, p->etag, p->sha256,
                            str_or_null(p->cksum));
    }
    if (err < 0 || c->claimed)
        return err < 0 ? err : 0;
    const cn_obj_upload_row_t *up = &c->up;
    /* umeta last: SQL NULL when empty ('n' takes no argument, so the
     * pointer and length after it go unread). */
    err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_VERSION_INSERT_MPU],
                        up->umeta.len ? "iibisssistissb" : "iibisssistissn", vid, c->bucket_id,
                        (const void *)c->key, strlen(c->key), (int64_t)c->total, c->r.etag,
                        c->r.sha256, up->content_type, c->r.last_modified_ms, up->owner,
                        (const char *)(up->acl.len ? up->acl.data : NULL), up->acl.len,
                        (int64_t)c->n, str_or_null(c->r.checksum_alg), str_or_null(c->r.checksum),
                        (const void *)up->umeta.data, up->umeta.len);
    return err < 0 ? err : 0;
}

/* In the commit transaction: the unlisted parts are dropped (their blobs
 * go to the sweeper) and the upload is marked completed with its result
 * (pushed, as complete_rows). */
static cn_err_t complete_mark_done(cn_obj_complete_t *c, cn_meta_txn_t *txn, int64_t vid)
{
    cn_err_t err =
        cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_PARTS_UNLISTED_DELETE], "si", c->upload_id, vid);
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_UPLOAD_MARK_DONE], "ississ",
                            c->r.last_modified_ms, c->r.etag, str_or_null(c->r.checksum), vid,
                            c->r.sha256, c->upload_id);
    return err < 0 ? err : 0;
}

static cn_err_t complete_rows_fn(cn_meta_txn_t *txn, void *ctx, int64_t vid)
{
    return complete_rows(ctx, txn, vid);
}

/* The version row of a new key (cn__obj_version_make's claim callback). */
static int complete_claim(cn_meta_txn_t *txn, void *ctx, int64_t *vid)
{
    cn_obj_complete_t *c = ctx;
    const cn_obj_upload_row_t *up = &c->up;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_obj_engine[CN_SQL_OBJ_E_VERSION_CLAIM]),
        up->umeta.len ? "ibisssistissb" : "ibisssistissn", c->bucket_id, (const void *)c->key,
        strlen(c->key), (int64_t)c->total, c->r.etag, c->r.sha256, up->content_type,
        c->r.last_modified_ms, up->owner, (const char *)(up->acl.len ? up->acl.data : NULL),
        up->acl.len, (int64_t)c->n, str_or_null(c->r.checksum_alg), str_or_null(c->r.checksum),
        (const void *)up->umeta.data, up->umeta.len);
    int got = cn__vclaim_step(st, err, vid);
    c->claimed = got > 0;
    return got;
}

/* The commit's body: re-check the upload and the parts, then make the new
 * version current (its id in c->r.version_id) with the tags and retention
 * the upload was created with. */
static cn_err_t complete_commit_body(cn_meta_txn_t *txn, void *ctx)
{
    cn_obj_complete_t *c = ctx;
    c->claimed = false; /* a repeated run claims afresh */
    cn__vattrs_t va = { 0 };
    cn_err_t err = complete_recheck(c, txn);
    if (err >= 0)
        err = cn__upload_attrs_get(txn, c->upload_id, &va);
    cn__vmake_t mk = { .bucket_id = c->bucket_id,
                       .key = c->key,
                       .cond = c->args,
                       .tags = va.tags,
                       .ntags = va.ntags,
                       .retention = va.has_retention ? &va.retention : NULL,
                       .now_ms = c->r.last_modified_ms,
                       .rows = complete_rows_fn,
                       .claim = complete_claim,
                       .ctx = c };
    if (err >= 0)
        err = cn__obj_version_make(txn, c->rq, &mk);
    if (err >= 0)
        err = complete_mark_done(c, txn, mk.vid);
    c->r.version_id = err >= 0 ? mk.vid : 0;
    c->r.vnull = mk.vnull;
    c->r.bucket_versioned = mk.versioned;
    free(va.tags);
    return err < 0 ? err : CN_OK;
}

/* Step 5: re-check the upload and the parts, then swap the rows. */
static cn_err_t complete_commit(cn_obj_complete_t *c)
{
    return cn__write_run_key(c->o, c->bucket, c->key, CN_META_RUN_WRITE | CN_META_RETRY,
                             complete_commit_body, c);
}

/* A repeated completion: the first one's result.  The additional checksum
 * is the one stored (complete_check has judged the request against it). */
static void complete_repeat(cn_obj_complete_t *c)
{
    snprintf(c->r.etag, sizeof c->r.etag, "%s", c->up.done_etag);
    snprintf(c->r.sha256, sizeof c->r.sha256, "%s", c->up.done_sha256);
    c->r.size = c->total;
    c->r.last_modified_ms = c->up.done_ms;
    c->r.version_id = c->up.done_version;
    c->r.checksum[0] = c->r.checksum_alg[0] = 0;
    if (c->up.done_cksum[0]) {
        snprintf(c->r.checksum_alg, sizeof c->r.checksum_alg, "%s", c->up.cksum_alg);
        snprintf(c->r.checksum, sizeof c->r.checksum, "%s", c->up.done_cksum);
    }
    c->r.repeated = true;
}

cn_err_t cn_objects_mpu_complete(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                 const char *key, const char *upload_id, const int32_t *parts,
                                 const char *const *etags, size_t n,
                                 const cn_objects_put_args_t *args, cn_objects_put_result_t *res)
{
    if (n == 0)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_LIST_INVALID,
                          "no part is listed");
    if (n > CN_PART_NUMBER_MAX)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_LIST_INVALID,
                          "more than %d parts", CN_PART_NUMBER_MAX);
    cn_obj_complete_t c = { .o = o,
                            .rq = rq,
                            .key = key,
                            .upload_id = upload_id,
                            .parts = parts,
                            .etags = etags,
                            .n = n,
                            .args = args };
    cn_err_t err = complete_read(&c, bucket);
    if (err >= 0 && c.up.done && !(args && args->answer_repeat))
        err = cn__fail(rq, CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD, "the upload was completed");
    if (err >= 0)
        err = complete_choose(&c);
    if (err >= 0)
        err = complete_check(&c);
    if (err >= 0 && c.up.done) {
        complete_repeat(&c);
    } else if (err >= 0) {
        err = complete_digest(&c);
        if (err >= 0)
            err = complete_commit(&c);
    }
    if (err >= 0 && res)
        *res = c.r;
    free(c.rows);
    free(c.chosen);
    obj_upload_row_free(&c.up);
    return err;
}

/* An operation on one upload of key: abort, or a walk of its parts. */
typedef struct upload_op {
    cn_objects_t *o;
    const char *key, *upload_id;
    int32_t marker;
    uint32_t max;
    bool *truncated;
    cn_buf_t rows; /* list_parts_body's parts, handed out after the run */
} upload_op_t;

/* Deletes upload_id's parts and row. */
static cn_err_t upload_delete(cn_meta_txn_t *txn, const char *upload_id)
{
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_UPLOAD_PARTS_DELETE], "s", upload_id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_UPLOAD_DELETE], "s", upload_id);
    return err;
}

static cn_err_t abort_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *ctx)
{
    const upload_op_t *op = ctx;
    cn_err_t err = cn__upload_access(op->o, txn, rq, b, op->key, op->upload_id,
                                     CN_ACT_ABORT_MULTIPART_UPLOAD, NULL);
    if (err >= 0)
        err = upload_delete(txn, op->upload_id);
    if (err >= 0)
        cn__chain_drop(op->o, op->upload_id);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_mpu_abort(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                              const char *key, const char *upload_id)
{
    upload_op_t op = { .o = o, .key = key, .upload_id = upload_id };
    return cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_WRITE | CN_META_RETRY, abort_body,
                       &op);
}

static cn_err_t list_parts_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                void *ctx)
{
    upload_op_t *op = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&op->rows); /* an earlier attempt's parts */
    if (op->truncated)
        *op->truncated = false;
    cn_err_t err = cn__upload_access(op->o, txn, rq, b, op->key, op->upload_id,
                                     CN_ACT_LIST_MULTIPART_UPLOAD_PARTS, NULL);
    if (err >= 0)
        err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_PARTS_PAGE], "sii", op->upload_id,
                             (int64_t)op->marker,
                             op->max ? (int64_t)op->max + 1 : (int64_t)CN_PART_NUMBER_MAX + 1);
    if (err < 0)
        return err;
    uint32_t count = 0;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        if (op->max && count == op->max) {
            if (op->truncated)
                *op->truncated = true;
            err = 0;
            break;
        }
        cn_objects_part_t p;
        memset(&p, 0, sizeof p);
        p.part_number = (int32_t)cn_meta_column_int64(st, 0);
        p.size = (uint64_t)cn_meta_column_int64(st, 1);
        const char *s = cn_meta_column_text(st, 2, NULL);
        snprintf(p.etag, sizeof p.etag, "%s", s ? s : "");
        s = cn_meta_column_text(st, 3, NULL);
        snprintf(p.sha256, sizeof p.sha256, "%s", s ? s : "");
        p.last_modified_ms = cn_meta_column_int64(st, 4);
        copy_text(st, 5, p.checksum, sizeof p.checksum);
        count++;
        err = cn_buf_append(&op->rows, &p, sizeof p);
        if (err)
            break;
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_objects_mpu_list_parts(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const char *key, const char *upload_id, int32_t marker,
                                   uint32_t max, cn_objects_part_fn fn, void *arg, bool *truncated)
{
    if (truncated)
        *truncated = false;
    upload_op_t op = { o, key, upload_id, marker, max, truncated, { 0 } };
    cn_err_t err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                               list_parts_body, &op);
    return cn__parts_hand(err, &op.rows, fn, arg);
}

/* A walk of a bucket's unexpired uploads: at most max, read into rows (each
 * an upload_rec_t naming its strings in text) and handed to fn(arg, upload)
 * after the run, so that a repeated run (CN_META_RETRY) hands each once. */
typedef struct uploads_walk {
    cn_objects_t *o;
    const char *prefix, *key_marker, *upload_id_marker;
    uint32_t max;
    bool truncated;
    cn_buf_t rows, text;
} uploads_walk_t;

/* One collected upload: its key, id and owner as offsets of NUL-terminated
 * copies in the walk's text (which moves as it grows). */
typedef struct upload_rec {
    size_t key, id, owner;
    int64_t created_ms;
} upload_rec_t;

/* Copies p[0..n) and a NUL into text: *off is where. */
static cn_err_t uploads_keep(cn_buf_t *text, const char *p, size_t n, size_t *off)
{
    *off = text->len;
    cn_err_t err = n ? cn_buf_append(text, p, n) : CN_OK;
    return err ? err : cn_buf_put_u8(text, 0);
}

/* Collects the upload of st's row (key k[0..kl), id). */
static cn_err_t uploads_keep_row(uploads_walk_t *uw, cn_meta_stmt_t *st, const char *k, size_t kl,
                                 const char *id)
{
    const char *owner = cn_meta_column_text(st, 2, NULL);
    upload_rec_t rec = { .created_ms = cn_meta_column_int64(st, 3) };
    cn_err_t err = uploads_keep(&uw->text, k, kl, &rec.key);
    if (!err)
        err = uploads_keep(&uw->text, id, strlen(id), &rec.id);
    if (!err)
        err = uploads_keep(&uw->text, owner, owner ? strlen(owner) : 0, &rec.owner);
    return err ? err : cn_buf_append(&uw->rows, &rec, sizeof rec);
}

/* Whether the upload (k[0..kl), id) comes after the walk's markers; sets
 * *past once the walk has passed them. */
static bool uploads_past_marker(const uploads_walk_t *uw, const char *k, size_t kl, const char *id,
                                bool *past)
{
    if (*past)
        return true;
    size_t kml = strlen(uw->key_marker);
    int c = memcmp(k, uw->key_marker, kl < kml ? kl : kml);
    if (!c)
        c = kl < kml ? -1 : kl > kml;
    if (c < 0)
        return false;
    if (c == 0) {
        /* Same key: resume after upload_id_marker, or skip the key. */
        if (uw->upload_id_marker && uw->upload_id_marker[0] && !strcmp(id, uw->upload_id_marker))
            *past = true;
        return false;
    }
    *past = true;
    return true;
}

static cn_err_t uploads_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                             void *ctx)
{
    uploads_walk_t *uw = ctx;
    cn__cond_t cond = { .prefix = uw->prefix ? uw->prefix : "" };
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&uw->rows); /* an earlier attempt's uploads */
    cn_buf_reset(&uw->text);
    uw->truncated = false;
    cn_err_t err = cn__authorize(rq, b, CN_ACT_LIST_BUCKET_MULTIPART_UPLOADS, NULL, NULL, &cond);
    if (err >= 0)
        err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_UPLOADS_OF_BUCKET], "ii", b->id,
                             (int64_t)(cn_wall_ms() - uw->o->opts.upload_expiry_ms));
    if (err < 0)
        return err;
    size_t pl = uw->prefix ? strlen(uw->prefix) : 0;
    bool past_marker = !uw->key_marker || !uw->key_marker[0];
    uint32_t count = 0;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        size_t kl = 0;
        const char *k = cn_meta_column_blob(st, 0, &kl);
        const char *id = cn_meta_column_text(st, 1, NULL);
        if (!k || !id)
            continue;
        if (pl && (kl < pl || memcmp(k, uw->prefix, pl)))
            continue;
        if (!uploads_past_marker(uw, k, kl, id, &past_marker))
            continue;
        if (count == uw->max) {
            uw->truncated = true;
            break;
        }
        count++;
        if ((err = uploads_keep_row(uw, st, k, kl, id)) != 0)
            break;
    }
    cn_meta_finish(st);
    if (err == CN_META_ROW || err == CN_META_DONE)
        err = 0;
    return err;
}

cn_err_t cn_objects_mpu_list(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                             const char *prefix, const char *key_marker,
                             const char *upload_id_marker, uint32_t max, cn_objects_upload_fn fn,
                             void *arg, bool *truncated)
{
    if (truncated)
        *truncated = false;
    if (!max || max > CN_OBJECTS_LIST_MAX)
        max = CN_OBJECTS_LIST_MAX;
    uploads_walk_t uw = { o, prefix, key_marker, upload_id_marker, max, false, { 0 }, { 0 } };
    cn_err_t err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                               uploads_body, &uw);
    if (err == 0 && truncated)
        *truncated = uw.truncated;
    for (size_t off = 0; err == 0 && off < uw.rows.len; off += sizeof(upload_rec_t)) {
        upload_rec_t rec;
        memcpy(&rec, uw.rows.data + off, sizeof rec);
        const char *t = (const char *)uw.text.data;
        cn_objects_upload_t u = { t + rec.key, t + rec.id, t + rec.owner, rec.created_ms };
        err = fn(arg, &u);
    }
    cn_buf_free(&uw.rows);
    cn_buf_free(&uw.text);
    return err;
}

/* One sweep batch: the cutoffs, and the ids of the uploads it removed. */
typedef struct sweep_batch {
    int64_t cutoff, done_cutoff;
    char ids[64][CN_UPLOAD_ID_MAX + 1];
    size_t n;
} sweep_batch_t;

static cn_err_t sweep_body(cn_meta_txn_t *txn, void *ctx)
{
    sweep_batch_t *sb = ctx;
    sb->n = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_UPLOADS_TO_SWEEP], "ii",
                                  sb->cutoff, sb->done_cutoff);
    if (err >= 0) {
        while ((err = cn_meta_step(st)) == CN_META_ROW) {
            const char *id = cn_meta_column_text(st, 0, NULL);
            if (id)
                snprintf(sb->ids[sb->n++], sizeof sb->ids[0], "%s", id);
        }
        cn_meta_finish(st);
    }
    for (size_t i = 0; i < sb->n && err >= 0; i++)
        err = upload_delete(txn, sb->ids[i]);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_sweep_uploads(cn_objects_t *o, int64_t now_ms, uint64_t *removed)
{
    if (removed)
        *removed = 0;
    if (!now_ms)
        now_ms = cn_wall_ms();
    sweep_batch_t sb = { .cutoff = now_ms - o->opts.upload_expiry_ms,
                         .done_cutoff = now_ms - o->opts.completed_keep_ms };
    /* A bounded batch per transaction, so the writer is never held long. */
    for (;;) {
        cn_err_t err = cn_meta_run(o->meta, CN_META_RUN_WRITE | CN_META_RETRY, sweep_body, &sb);
        if (err < 0)
            return err;
        if (removed)
            *removed += sb.n;
        if (sb.n < 64)
            return 0;
    }
}
