/* Multipart uploads: create, (parts stream through put.c), complete, abort,
 * list parts, list uploads, and the expiry sweep.
 *
 * Completion references the part blobs in order (no stitching, no copy): the
 * version's segments are the parts.  Its etag is S3's: the MD5 of the
 * concatenated binary part MD5s, hex, then "-N".  Its checksum is the SHA-256
 * of the whole object, which cannot be derived from the parts' SHA-256s, so
 * completion reads the parts once (outside any write transaction) to compute
 * it. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn__upload_check(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                          const char *upload_id, int64_t bucket_id, const char *key)
{
    if (!upload_id || !upload_id[0] || strlen(upload_id) > CN_UPLOAD_ID_MAX)
        return cn__fail(rq, CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD, "no such upload");
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn,
        "SELECT bucket_id, okey, created_ms FROM obj_upload WHERE upload_id = ?", &st);
    if (err < 0)
        return err;
    cn_meta_bind_str(st, 1, upload_id);
    err = cn_meta_step(st);
    bool live = false;
    if (err == CN_META_ROW) {
        size_t kl = 0;
        const void *k = cn_meta_column_blob(st, 1, &kl);
        int64_t created = cn_meta_column_int64(st, 2);
        live = cn_meta_column_int64(st, 0) == bucket_id && k && kl == strlen(key) &&
               !memcmp(k, key, kl) && created + o->opts.upload_expiry_ms > cn__now_ms();
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
                           cn_authz_action_t act)
{
    cn_err_t err = cn__key_check(rq, key);
    if (err >= 0)
        err = cn__authorize(rq, b, act, key, NULL, NULL);
    if (err >= 0)
        err = cn__upload_check(o, txn, rq, upload_id, b->id, key);
    return err;
}

cn_err_t cn_objects_mpu_create(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               const char *key, const cn_objects_put_args_t *args,
                               char upload_id[CN_UPLOAD_ID_MAX + 1])
{
    upload_id[0] = 0;
    cn_err_t err = cn__put_args_check(rq, args);
    if (err < 0)
        return err;
    cn_meta_txn_t *txn = NULL;
    err = cn_meta_begin(o->meta, CN_META_WRITE, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    cn_buf_t umeta = {0}, acl = {0};
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err < 0)
        goto out_nob;
    err = cn__key_check(rq, key);
    if (err >= 0)
        err = cn__put_authorize(rq, &b, key, args);
    const char *owner = cn__principal_name(rq);
    if (!owner)
        owner = b.owner;
    if (err >= 0 && args)
        err = cn__umeta_encode(args->meta, args->nmeta, &umeta);
    if (err >= 0 && args)
        err = cn__acl_for_put(args->acl, owner, &acl);
    uint8_t rnd[16];
    char id[CN_UPLOAD_ID_MAX + 1];
    if (err >= 0)
        err = cn_random_bytes(rnd, sizeof rnd);
    cn_hex_encode(rnd, sizeof rnd, id);
    cn_meta_stmt_t *st = NULL;
    if (err >= 0)
        err = cn_meta_prepare(txn,
            "INSERT INTO obj_upload (upload_id, bucket_id, okey, content_type, umeta, owner, acl, "
            "created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", &st);
    if (err >= 0) {
        const char *ct = args && args->content_type ? args->content_type
                                                    : "application/octet-stream";
        cn_meta_bind_str(st, 1, id);
        cn_meta_bind_int64(st, 2, b.id);
        cn_meta_bind_blob(st, 3, key, strlen(key));
        cn_meta_bind_str(st, 4, ct);
        if (umeta.len)
            cn_meta_bind_blob(st, 5, umeta.data, umeta.len);
        else
            cn_meta_bind_null(st, 5);
        cn_meta_bind_str(st, 6, owner);
        if (acl.len)
            cn_meta_bind_text(st, 7, (const char *)acl.data, acl.len);
        else
            cn_meta_bind_null(st, 7);
        cn_meta_bind_int64(st, 8, cn__now_ms());
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    cn__bkt_free(&b);
out_nob:
    cn_buf_free(&umeta);
    cn_buf_free(&acl);
    if (err < 0) {
        cn_meta_rollback(txn);
        return err;
    }
    err = cn_meta_commit(txn);
    if (err >= 0)
        snprintf(upload_id, CN_UPLOAD_ID_MAX + 1, "%s", id);
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
} cn_obj_part_row_t;

/* Loads every part of upload_id in ascending number order (at most 10000). */
static cn_err_t cn_obj_parts_load(cn_meta_txn_t *txn, const char *upload_id,
                                  cn_obj_part_row_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn,
        "SELECT part_number, digest, size, etag, md5, sha256 FROM obj_part WHERE upload_id = ? "
        "ORDER BY part_number", &st);
    if (err < 0)
        return err;
    cn_meta_bind_str(st, 1, upload_id);
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

static bool cn_obj_etag_same(const char *want, const char *have)
{
    size_t wl = strlen(want);
    if (wl >= 2 && want[0] == '"' && want[wl - 1] == '"') {
        want++;
        wl -= 2;
    }
    return strlen(have) == wl && !strncasecmp(want, have, wl);
}

static cn_err_t cn_obj_sha_sink(void *ctx, const void *p, size_t n)
{
    cn_sha256_update(ctx, p, n);
    return 0;
}

/* Reads the upload's row (content type, metadata, owner, acl) for the version. */
typedef struct {
    char *content_type;
    cn_buf_t umeta;
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    cn_buf_t acl;
} cn_obj_upload_row_t;

static void cn_obj_upload_row_free(cn_obj_upload_row_t *u)
{
    free(u->content_type);
    cn_buf_free(&u->umeta);
    cn_buf_free(&u->acl);
}

static cn_err_t cn_obj_upload_row(cn_meta_txn_t *txn, const char *upload_id,
                                  cn_obj_upload_row_t *u)
{
    memset(u, 0, sizeof *u);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn,
        "SELECT content_type, umeta, owner, acl FROM obj_upload WHERE upload_id = ?", &st);
    if (err < 0)
        return err;
    cn_meta_bind_str(st, 1, upload_id);
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t n = 0;
        const char *t = cn_meta_column_text(st, 0, &n);
        u->content_type = cn__strndup(t ? t : "", t ? n : 0);
        err = u->content_type ? 0 : -ENOMEM;
        const void *m = cn_meta_column_blob(st, 1, &n);
        if (err >= 0 && m)
            err = cn_buf_append(&u->umeta, m, n);
        t = cn_meta_column_text(st, 2, NULL);
        snprintf(u->owner, sizeof u->owner, "%s", t ? t : "");
        t = cn_meta_column_text(st, 3, &n);
        if (err >= 0 && t)
            err = cn_buf_append(&u->acl, t, n);
    } else if (err == CN_META_DONE) {
        err = CN_E_NO_UPLOAD;
    }
    cn_meta_finish(st);
    return err;
}

static cn_err_t cn_obj_exec_str(cn_meta_txn_t *txn, const char *sql, const char *s)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, sql, &st);
    if (err < 0)
        return err;
    cn_meta_bind_str(st, 1, s);
    err = cn_meta_step(st);
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_objects_mpu_complete(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                 const char *key, const char *upload_id, const int32_t *parts,
                                 const char *const *etags, size_t n,
                                 const cn_objects_put_args_t *args, cn_objects_put_result_t *res)
{
    if (n == 0)
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, "no part is listed");
    if (n > CN_PART_NUMBER_MAX)
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, "more than %d parts",
                        CN_PART_NUMBER_MAX);
    cn_obj_part_row_t *rows = NULL, *chosen = NULL;
    size_t nrows = 0;
    cn_sha256_t *sha = NULL;
    cn_md5_t *md5 = NULL;
    cn_obj_upload_row_t up;
    memset(&up, 0, sizeof up);
    cn__bkt_t b;
    memset(&b, 0, sizeof b);
    cn_objects_put_result_t r;
    memset(&r, 0, sizeof r);

    /* 1. Read and check, in a read snapshot. */
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(o->meta, CN_META_READ, &txn);
    if (err < 0)
        return err;
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err >= 0)
        err = cn__upload_access(o, txn, rq, &b, key, upload_id, CN_ACT_PUT_OBJECT);
    if (err >= 0)
        err = cn_obj_parts_load(txn, upload_id, &rows, &nrows);
    cn_meta_rollback(txn);
    txn = NULL;
    if (err < 0)
        goto out;
    chosen = calloc(n, sizeof *chosen);
    if (!chosen) {
        err = -ENOMEM;
        goto out;
    }
    size_t j = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && parts[i] <= parts[i - 1]) {
            err = cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_PART,
                           "part numbers must ascend (part %d after %d)", parts[i], parts[i - 1]);
            goto out;
        }
        while (j < nrows && rows[j].number < parts[i])
            j++;
        if (j == nrows || rows[j].number != parts[i]) {
            err = cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, "part %d was not uploaded",
                           parts[i]);
            goto out;
        }
        if (etags && etags[i] && !cn_obj_etag_same(etags[i], rows[j].etag)) {
            err = cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, "part %d has another etag",
                           parts[i]);
            goto out;
        }
        chosen[i] = rows[j];
        total += rows[j].size;
        if (total > o->opts.max_object_bytes) {
            err = cn__fail(rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG,
                           "the object would exceed the limit of %llu",
                           (unsigned long long)o->opts.max_object_bytes);
            goto out;
        }
    }

    /* 2. The whole object's SHA-256 and the multipart etag. */
    err = cn_sha256_new(&sha);
    if (err >= 0)
        err = cn_md5_new(&md5);
    for (size_t i = 0; i < n && err >= 0; i++) {
        uint64_t served = 0;
        if (chosen[i].size)
            err = cn_store_read_range(o->store, &chosen[i].digest, 0, chosen[i].size,
                                      cn_obj_sha_sink, sha, NULL, &served);
        if (err >= 0 && served != chosen[i].size)
            err = CN_E_CORRUPT;
        if (err >= 0)
            cn_md5_update(md5, chosen[i].md5, CN_MD5_LEN);
    }
    if (err < 0)
        goto out;
    uint8_t d[CN_DIGEST_LEN], m[CN_MD5_LEN];
    cn_sha256_final(sha, d);
    sha = NULL;
    cn_md5_final(md5, m);
    md5 = NULL;
    cn_hex_encode(d, sizeof d, r.sha256);
    char mh[2 * CN_MD5_LEN + 1];
    cn_hex_encode(m, sizeof m, mh);
    snprintf(r.etag, sizeof r.etag, "%s-%zu", mh, n);
    r.size = total;
    r.last_modified_ms = cn__now_ms();

    /* 3. Commit: re-check the upload and the parts, then swap the rows. */
    err = cn_meta_begin(o->meta, CN_META_WRITE, &txn);
    if (err < 0)
        goto out;
    err = cn__upload_check(o, txn, rq, upload_id, b.id, key);
    if (err >= 0)
        err = cn_obj_upload_row(txn, upload_id, &up);
    for (size_t i = 0; i < n && err >= 0; i++) {
        cn_meta_stmt_t *st = NULL;
        err = cn_meta_prepare(txn,
            "SELECT digest FROM obj_part WHERE upload_id = ? AND part_number = ?", &st);
        if (err < 0)
            break;
        cn_meta_bind_str(st, 1, upload_id);
        cn_meta_bind_int64(st, 2, chosen[i].number);
        err = cn_meta_step(st);
        size_t dl = 0;
        const void *dg = err == CN_META_ROW ? cn_meta_column_blob(st, 0, &dl) : NULL;
        if (err >= 0 && (!dg || dl != CN_DIGEST_LEN || memcmp(dg, chosen[i].digest.b, dl)))
            err = cn__fail(rq, CN_E_CONFLICT, CN_OBJ_WHAT_PART,
                           "part %d changed while the upload completed", chosen[i].number);
        cn_meta_finish(st);
    }
    int64_t cur = 0, vid = 0;
    char cur_etag[CN_ETAG_MAX];
    if (err >= 0)
        err = cn__version_find(txn, b.id, key, &cur, cur_etag, NULL);
    if (err >= 0)
        err = cn__put_conditions(rq, args, cur, cur_etag);
    if (err >= 0 && cur)
        err = cn__version_delete(txn, cur);
    if (err >= 0)
        err = cn__next_id(txn, "version", &vid);
    for (size_t i = 0; i < n && err >= 0; i++) {
        cn_meta_stmt_t *st = NULL;
        err = cn_meta_prepare(txn,
            "INSERT INTO obj_segment (version_id, seq, digest, size, part_number, etag, sha256) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", &st);
        if (err < 0)
            break;
        cn_meta_bind_int64(st, 1, vid);
        cn_meta_bind_int64(st, 2, (int64_t)i);
        cn_meta_bind_blob(st, 3, chosen[i].digest.b, CN_DIGEST_LEN);
        cn_meta_bind_int64(st, 4, (int64_t)chosen[i].size);
        cn_meta_bind_int64(st, 5, chosen[i].number);
        cn_meta_bind_str(st, 6, chosen[i].etag);
        cn_meta_bind_str(st, 7, chosen[i].sha256);
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    cn_meta_stmt_t *st = NULL;
    if (err >= 0)
        err = cn_meta_prepare(txn,
            "INSERT INTO obj_version (version_id, bucket_id, okey, size, etag, sha256, content_type, "
            "umeta, mtime_ms, owner, acl, nparts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", &st);
    if (err >= 0) {
        cn_meta_bind_int64(st, 1, vid);
        cn_meta_bind_int64(st, 2, b.id);
        cn_meta_bind_blob(st, 3, key, strlen(key));
        cn_meta_bind_int64(st, 4, (int64_t)total);
        cn_meta_bind_str(st, 5, r.etag);
        cn_meta_bind_str(st, 6, r.sha256);
        cn_meta_bind_str(st, 7, up.content_type);
        if (up.umeta.len)
            cn_meta_bind_blob(st, 8, up.umeta.data, up.umeta.len);
        else
            cn_meta_bind_null(st, 8);
        cn_meta_bind_int64(st, 9, r.last_modified_ms);
        cn_meta_bind_str(st, 10, up.owner);
        if (up.acl.len)
            cn_meta_bind_text(st, 11, (const char *)up.acl.data, up.acl.len);
        else
            cn_meta_bind_null(st, 11);
        cn_meta_bind_int64(st, 12, (int64_t)n);
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    /* Unlisted parts' blobs become unreferenced here and go to the sweeper. */
    if (err >= 0)
        err = cn_obj_exec_str(txn, "DELETE FROM obj_part WHERE upload_id = ?", upload_id);
    if (err >= 0)
        err = cn_obj_exec_str(txn, "DELETE FROM obj_upload WHERE upload_id = ?", upload_id);
    if (err < 0) {
        cn_meta_rollback(txn);
        goto out;
    }
    err = cn_meta_commit(txn);
    if (err >= 0) {
        r.version_id = vid;
        if (res)
            *res = r;
    }
out:
    cn_sha256_free(sha);
    cn_md5_free(md5);
    free(rows);
    free(chosen);
    cn_obj_upload_row_free(&up);
    cn__bkt_free(&b);
    return err;
}

cn_err_t cn_objects_mpu_abort(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                              const char *key, const char *upload_id)
{
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(o->meta, CN_META_WRITE, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err < 0)
        goto out;
    err = cn__upload_access(o, txn, rq, &b, key, upload_id, CN_ACT_ABORT_MULTIPART_UPLOAD);
    if (err >= 0)
        err = cn_obj_exec_str(txn, "DELETE FROM obj_part WHERE upload_id = ?", upload_id);
    if (err >= 0)
        err = cn_obj_exec_str(txn, "DELETE FROM obj_upload WHERE upload_id = ?", upload_id);
    cn__bkt_free(&b);
out:
    if (err < 0) {
        cn_meta_rollback(txn);
        return err;
    }
    return cn_meta_commit(txn);
}

cn_err_t cn_objects_mpu_list_parts(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const char *key, const char *upload_id, int32_t marker,
                                   uint32_t max, cn_objects_part_fn fn, void *arg,
                                   bool *truncated)
{
    if (truncated)
        *truncated = false;
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(o->meta, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err < 0)
        goto out;
    err = cn__upload_access(o, txn, rq, &b, key, upload_id, CN_ACT_LIST_MULTIPART_UPLOAD_PARTS);
    cn__bkt_free(&b);
    cn_meta_stmt_t *st = NULL;
    if (err >= 0)
        err = cn_meta_prepare(txn,
            "SELECT part_number, size, etag, sha256, mtime_ms FROM obj_part "
            "WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?", &st);
    if (err < 0)
        goto out;
    cn_meta_bind_str(st, 1, upload_id);
    cn_meta_bind_int64(st, 2, marker);
    cn_meta_bind_int64(st, 3, max ? (int64_t)max + 1 : CN_PART_NUMBER_MAX + 1);
    uint32_t count = 0;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        if (max && count == max) {
            if (truncated)
                *truncated = true;
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
        count++;
        err = fn(arg, &p);
        if (err)
            break;
    }
    cn_meta_finish(st);
out:
    cn_meta_rollback(txn);
    return err;
}

cn_err_t cn_objects_mpu_list(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                             const char *prefix, const char *key_marker,
                             const char *upload_id_marker, uint32_t max,
                             cn_objects_upload_fn fn, void *arg, bool *truncated)
{
    if (truncated)
        *truncated = false;
    if (!max || max > CN_OBJECTS_LIST_MAX)
        max = CN_OBJECTS_LIST_MAX;
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(o->meta, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err < 0)
        goto out;
    cn__cond_t cond = {.prefix = prefix ? prefix : ""};
    err = cn__authorize(rq, &b, CN_ACT_LIST_BUCKET_MULTIPART_UPLOADS, NULL, NULL, &cond);
    int64_t bid = b.id;
    cn__bkt_free(&b);
    cn_meta_stmt_t *st = NULL;
    if (err >= 0)
        err = cn_meta_prepare(txn,
            "SELECT okey, upload_id, owner, created_ms FROM obj_upload WHERE bucket_id = ? "
            "AND created_ms > ? ORDER BY okey, created_ms, upload_id", &st);
    if (err < 0)
        goto out;
    cn_meta_bind_int64(st, 1, bid);
    cn_meta_bind_int64(st, 2, cn__now_ms() - o->opts.upload_expiry_ms);
    size_t pl = prefix ? strlen(prefix) : 0;
    size_t kml = key_marker ? strlen(key_marker) : 0;
    bool past_marker = !key_marker || !kml;
    uint32_t count = 0;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        size_t kl = 0;
        const char *k = cn_meta_column_blob(st, 0, &kl);
        const char *id = cn_meta_column_text(st, 1, NULL);
        if (!k || !id)
            continue;
        if (pl && (kl < pl || memcmp(k, prefix, pl)))
            continue;
        if (!past_marker) {
            int c = memcmp(k, key_marker, kl < kml ? kl : kml);
            if (!c)
                c = kl < kml ? -1 : kl > kml;
            if (c < 0)
                continue;
            if (c == 0) {
                /* Same key: resume after upload_id_marker, or skip the key. */
                if (!upload_id_marker || !upload_id_marker[0])
                    continue;
                if (!strcmp(id, upload_id_marker))
                    past_marker = true;
                continue;
            }
            past_marker = true;
        }
        if (count == max) {
            if (truncated)
                *truncated = true;
            break;
        }
        char *key = cn__strndup(k, kl);
        if (!key) {
            err = -ENOMEM;
            break;
        }
        cn_objects_upload_t u = {key, id, cn_meta_column_text(st, 2, NULL),
                                 cn_meta_column_int64(st, 3)};
        count++;
        err = fn(arg, &u);
        free(key);
        if (err)
            break;
    }
    cn_meta_finish(st);
    if (err == CN_META_ROW || err == CN_META_DONE)
        err = 0;
out:
    cn_meta_rollback(txn);
    return err;
}

cn_err_t cn_objects_sweep_uploads(cn_objects_t *o, int64_t now_ms, uint64_t *removed)
{
    if (removed)
        *removed = 0;
    if (!now_ms)
        now_ms = cn__now_ms();
    int64_t cutoff = now_ms - o->opts.upload_expiry_ms;
    for (;;) {
        cn_meta_txn_t *txn = NULL;
        cn_err_t err = cn_meta_begin(o->meta, CN_META_WRITE, &txn);
        if (err < 0)
            return err;
        /* A bounded batch per transaction, so the writer is never held long. */
        char ids[64][CN_UPLOAD_ID_MAX + 1];
        size_t n = 0;
        cn_meta_stmt_t *st = NULL;
        err = cn_meta_prepare(txn,
            "SELECT upload_id FROM obj_upload WHERE created_ms <= ? ORDER BY created_ms LIMIT 64",
            &st);
        if (err >= 0) {
            cn_meta_bind_int64(st, 1, cutoff);
            while ((err = cn_meta_step(st)) == CN_META_ROW) {
                const char *id = cn_meta_column_text(st, 0, NULL);
                if (id)
                    snprintf(ids[n++], sizeof ids[0], "%s", id);
            }
            cn_meta_finish(st);
        }
        for (size_t i = 0; i < n && err >= 0; i++) {
            err = cn_obj_exec_str(txn, "DELETE FROM obj_part WHERE upload_id = ?", ids[i]);
            if (err >= 0)
                err = cn_obj_exec_str(txn, "DELETE FROM obj_upload WHERE upload_id = ?", ids[i]);
        }
        if (err < 0) {
            cn_meta_rollback(txn);
            return err;
        }
        err = cn_meta_commit(txn);
        if (err < 0)
            return err;
        if (removed)
            *removed += n;
        if (n < 64)
            return 0;
    }
}
