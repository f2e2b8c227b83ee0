/* Streaming puts: PutObject and UploadPart share one session type.  Bytes go
 * straight into a store writer (which hashes BLAKE3) while SHA-256 and MD5 are
 * computed here; commit publishes the blob, then commits the rows that make it
 * visible.  Nothing is visible before that commit (objects.c, invariants). */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CN_OBJ_PUT_OBJECT = 1, CN_OBJ_PUT_PART = 2 } cn_obj_put_kind_t;

struct cn_objects_put {
    cn_objects_t *o;
    cn_objects_req_t *rq;            /* borrowed: the session lives within one request */
    cn_obj_put_kind_t kind;
    int64_t bucket_id;
    char bucket[CN_BUCKET_NAME_MAX + 1];
    char *key;
    /* object puts */
    char *content_type;
    cn_buf_t umeta;
    cn_buf_t acl;
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    bool skip_etag;
    bool if_none_match;
    char *if_match;
    /* parts */
    char upload_id[CN_UPLOAD_ID_MAX + 1];
    int32_t part_number;
    char cksum_alg[CN_OBJECTS_CKSUM_ALG_MAX];   /* the upload's; "" none */
    char cksum[CN_OBJECTS_CKSUM_MAX];           /* the part's, set by the adapter */
    /* integrity */
    bool has_md5, has_sha;
    uint8_t want_md5[CN_MD5_LEN];
    uint8_t want_sha[CN_DIGEST_LEN];
    /* the stream */
    int64_t declared;
    uint64_t limit;
    uint64_t n;
    cn_store_writer_t *w;
    cn_sha256_t *sha;
    cn_md5_t *md5;
    cn_err_t err;                    /* sticky */
};

static void cn_obj_put_free(cn_objects_put_t *p)
{
    if (!p)
        return;
    cn_store_writer_abort(p->w);
    cn_sha256_free(p->sha);
    cn_md5_free(p->md5);
    free(p->key);
    free(p->content_type);
    free(p->if_match);
    cn_buf_free(&p->umeta);
    cn_buf_free(&p->acl);
    free(p);
}

void cn_objects_put_abort(cn_objects_put_t *p) { cn_obj_put_free(p); }

static cn_err_t cn_obj_put_new(cn_objects_t *o, cn_objects_req_t *rq, cn_obj_put_kind_t kind,
                               const char *key, const cn_objects_put_args_t *args, int64_t size,
                               cn_objects_put_t **out)
{
    *out = NULL;
    if (size >= 0 && (uint64_t)size > o->opts.max_object_bytes)
        return cn__fail(rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG,
                        "body of %lld bytes exceeds the limit of %llu", (long long)size,
                        (unsigned long long)o->opts.max_object_bytes);
    cn_objects_put_t *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->o = o;
    p->rq = rq;
    p->kind = kind;
    p->declared = size;
    p->limit = o->opts.max_object_bytes;
    p->key = cn__strndup(key, strlen(key));
    cn_err_t err = p->key ? 0 : -ENOMEM;
    if (err >= 0 && args) {
        if (args->expect_md5) {
            p->has_md5 = true;
            memcpy(p->want_md5, args->expect_md5, CN_MD5_LEN);
        }
        if (args->expect_sha256) {
            p->has_sha = true;
            memcpy(p->want_sha, args->expect_sha256, CN_DIGEST_LEN);
        }
    }
    if (err >= 0)
        err = cn_sha256_new(&p->sha);
    if (err >= 0)
        err = cn_md5_new(&p->md5);
    if (err >= 0)
        err = cn_store_writer_open(o->store, NULL, size, &p->w);
    /* Raw files, so that a GET can go out by sendfile(2). */
    if (err >= 0)
        err = cn_store_writer_set_form(p->w, CN_STORE_RAW);
    if (err == CN_E_TOO_LARGE)
        err = cn__fail(rq, err, CN_OBJ_WHAT_ARG, "body exceeds the store's limit");
    if (err < 0) {
        cn_obj_put_free(p);
        return err;
    }
    *out = p;
    return 0;
}

cn_err_t cn_objects_put_begin(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                              const char *key, const cn_objects_put_args_t *args, int64_t size,
                              cn_objects_put_t **out)
{
    *out = NULL;
    cn_err_t err = cn__put_args_check(rq, args);
    if (err < 0)
        return err;
    cn_meta_txn_t *txn = NULL;
    err = cn_meta_begin(o->meta, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, bucket, &b);
    cn_meta_rollback(txn);
    if (err < 0)
        return err;
    err = cn__key_check(rq, key);
    if (err >= 0)
        err = cn__put_authorize(rq, &b, key, args);
    if (err < 0)
        goto out;
    cn_objects_put_t *p = NULL;
    err = cn_obj_put_new(o, rq, CN_OBJ_PUT_OBJECT, key, args, size, &p);
    if (err < 0)
        goto out;
    p->bucket_id = b.id;
    snprintf(p->bucket, sizeof p->bucket, "%s", b.name);
    const char *owner = cn__principal_name(rq);
    snprintf(p->owner, sizeof p->owner, "%s", owner ? owner : b.owner);
    const char *ct = args && args->content_type ? args->content_type : "application/octet-stream";
    p->content_type = cn__strndup(ct, strlen(ct));
    if (!p->content_type)
        err = -ENOMEM;
    if (err >= 0 && args) {
        p->skip_etag = args->skip_etag;
        p->if_none_match = args->if_none_match;
        if (args->if_match && !(p->if_match = cn__strndup(args->if_match, strlen(args->if_match))))
            err = -ENOMEM;
        if (err >= 0)
            err = cn__umeta_encode(args->meta, args->nmeta, &p->umeta);
        if (err >= 0)
            err = cn__acl_for_put(args->acl, p->owner, &p->acl);
    }
    if (err < 0)
        cn_obj_put_free(p);
    else
        *out = p;
out:
    cn__bkt_free(&b);
    return err;
}

cn_err_t cn_objects_part_begin(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               const char *key, const char *upload_id, int32_t part_number,
                               const cn_objects_put_args_t *args, int64_t size,
                               cn_objects_put_t **out)
{
    *out = NULL;
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(o->meta, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    char alg[CN_OBJECTS_CKSUM_ALG_MAX] = "";
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err >= 0)
        err = cn__upload_access(o, txn, rq, &b, key, upload_id, CN_ACT_PUT_OBJECT, alg);
    if (err >= 0 && (part_number < 1 || part_number > CN_PART_NUMBER_MAX))
        err = cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, "part number must be 1..%d",
                       CN_PART_NUMBER_MAX);
    cn_meta_rollback(txn);
    cn_objects_put_t *p = NULL;
    if (err >= 0)
        err = cn_obj_put_new(o, rq, CN_OBJ_PUT_PART, key, args, size, &p);
    if (err >= 0) {
        p->bucket_id = b.id;
        snprintf(p->bucket, sizeof p->bucket, "%s", b.name);
        snprintf(p->upload_id, sizeof p->upload_id, "%s", upload_id);
        p->part_number = part_number;
        memcpy(p->cksum_alg, alg, sizeof p->cksum_alg);
        *out = p;
    }
    cn__bkt_free(&b);
    return err;
}

cn_err_t cn_objects_put_write(cn_objects_put_t *p, const void *buf, size_t n)
{
    if (p->err)
        return p->err;
    if (n > p->limit - p->n) {
        p->err = cn__fail(p->rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG, "body exceeds the limit of %llu",
                          (unsigned long long)p->limit);
        return p->err;
    }
    if (p->declared >= 0 && n > (uint64_t)p->declared - p->n) {
        p->err = CN_E_LENGTH_MISMATCH;
        return p->err;
    }
    cn_err_t err = cn_store_writer_write(p->w, buf, n);
    if (err < 0) {
        p->err = err;
        return err;
    }
    cn_sha256_update(p->sha, buf, n);
    cn_md5_update(p->md5, buf, n);
    p->n += n;
    return 0;
}

uint64_t cn_objects_put_len(const cn_objects_put_t *p) { return p->n; }

const char *cn_objects_put_checksum_alg(const cn_objects_put_t *p)
{
    return p->kind == CN_OBJ_PUT_PART && p->cksum_alg[0] ? p->cksum_alg : NULL;
}

cn_err_t cn_objects_put_set_checksum(cn_objects_put_t *p, const char *b64)
{
    if (!cn_objects_put_checksum_alg(p) || !b64 || strlen(b64) >= sizeof p->cksum)
        return CN_E_INVALID;
    snprintf(p->cksum, sizeof p->cksum, "%s", b64);
    return 0;
}

/* Inserts the version row of a put and its one segment. */
static cn_err_t cn_obj_put_rows(cn_meta_txn_t *txn, cn_objects_put_t *p, int64_t vid,
                                const cn_digest_t *d, const cn_objects_put_result_t *r)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn,
        "INSERT INTO obj_segment (version_id, seq, digest, size, part_number, etag, sha256) "
        "VALUES (?, 0, ?, ?, 1, ?, ?)", &st);
    if (err < 0)
        return err;
    cn_meta_bind_int64(st, 1, vid);
    cn_meta_bind_blob(st, 2, d->b, sizeof d->b);
    cn_meta_bind_int64(st, 3, (int64_t)r->size);
    cn_meta_bind_str(st, 4, r->etag);
    cn_meta_bind_str(st, 5, r->sha256);
    err = cn_meta_step(st);
    cn_meta_finish(st);
    if (err < 0)
        return err;
    err = cn_meta_prepare(txn,
        "INSERT INTO obj_version (version_id, bucket_id, okey, size, etag, sha256, content_type, "
        "umeta, mtime_ms, owner, acl, nparts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)", &st);
    if (err < 0)
        return err;
    cn_meta_bind_int64(st, 1, vid);
    cn_meta_bind_int64(st, 2, p->bucket_id);
    cn_meta_bind_blob(st, 3, p->key, strlen(p->key));
    cn_meta_bind_int64(st, 4, (int64_t)r->size);
    cn_meta_bind_str(st, 5, r->etag);
    cn_meta_bind_str(st, 6, r->sha256);
    cn_meta_bind_str(st, 7, p->content_type);
    if (p->umeta.len)
        cn_meta_bind_blob(st, 8, p->umeta.data, p->umeta.len);
    else
        cn_meta_bind_null(st, 8);
    cn_meta_bind_int64(st, 9, r->last_modified_ms);
    cn_meta_bind_str(st, 10, p->owner);
    if (p->acl.len)
        cn_meta_bind_text(st, 11, (const char *)p->acl.data, p->acl.len);
    else
        cn_meta_bind_null(st, 11);
    err = cn_meta_step(st);
    cn_meta_finish(st);
    return err;
}

static cn_err_t cn_obj_commit_object(cn_objects_put_t *p, const cn_digest_t *d,
                                     cn_objects_put_result_t *r)
{
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(p->o->meta, CN_META_WRITE, &txn);
    if (err < 0)
        return err;
    /* The bucket may have been deleted since begin. */
    cn_meta_stmt_t *st = NULL;
    err = cn_meta_prepare(txn, "SELECT 1 FROM obj_bucket WHERE bucket_id = ?", &st);
    if (err >= 0) {
        cn_meta_bind_int64(st, 1, p->bucket_id);
        err = cn_meta_step(st);
        cn_meta_finish(st);
        if (err == CN_META_DONE)
            err = cn__fail(p->rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, "bucket %s does not exist",
                           p->bucket);
    }
    int64_t cur = 0, vid = 0;
    char cur_etag[CN_ETAG_MAX];
    if (err >= 0)
        err = cn__version_find(txn, p->bucket_id, p->key, &cur, cur_etag, NULL);
    if (err >= 0) {
        cn_objects_put_args_t cond = {.if_none_match = p->if_none_match, .if_match = p->if_match};
        err = cn__put_conditions(p->rq, &cond, cur, cur_etag);
    }
    if (err >= 0 && cur)
        err = cn__version_delete(txn, cur);
    if (err >= 0)
        err = cn__next_id(txn, "version", &vid);
    if (err >= 0) {
        r->version_id = vid;
        err = cn_obj_put_rows(txn, p, vid, d, r);
    }
    if (err < 0) {
        cn_meta_rollback(txn);
        return err;
    }
    return cn_meta_commit(txn);
}

static cn_err_t cn_obj_commit_part(cn_objects_put_t *p, const cn_digest_t *d,
                                   cn_objects_put_result_t *r)
{
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(p->o->meta, CN_META_WRITE, &txn);
    if (err < 0)
        return err;
    /* Completed, aborted or expired while the part streamed in: refuse. */
    err = cn__upload_check(p->o, txn, p->rq, p->upload_id, p->bucket_id, p->key, NULL);
    cn_meta_stmt_t *st = NULL;
    if (err >= 0)
        err = cn_meta_prepare(txn,
            "INSERT INTO obj_part (upload_id, part_number, digest, size, etag, md5, sha256, mtime_ms, "
            "cksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (upload_id, part_number) DO UPDATE "
            "SET digest = excluded.digest, size = excluded.size, etag = excluded.etag, "
            "md5 = excluded.md5, sha256 = excluded.sha256, mtime_ms = excluded.mtime_ms, "
            "cksum = excluded.cksum", &st);
    if (err >= 0) {
        cn_meta_bind_str(st, 1, p->upload_id);
        cn_meta_bind_int64(st, 2, p->part_number);
        cn_meta_bind_blob(st, 3, d->b, sizeof d->b);
        cn_meta_bind_int64(st, 4, (int64_t)r->size);
        cn_meta_bind_str(st, 5, r->etag);
        cn_meta_bind_blob(st, 6, r->md5, CN_MD5_LEN);
        cn_meta_bind_str(st, 7, r->sha256);
        cn_meta_bind_int64(st, 8, r->last_modified_ms);
        if (p->cksum[0])
            cn_meta_bind_str(st, 9, p->cksum);
        else
            cn_meta_bind_null(st, 9);
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    if (err < 0) {
        cn_meta_rollback(txn);
        return err;
    }
    return cn_meta_commit(txn);
}

cn_err_t cn_objects_put_commit(cn_objects_put_t *p, cn_objects_put_result_t *res)
{
    cn_objects_put_result_t r;
    memset(&r, 0, sizeof r);
    cn_err_t err = p->err;
    if (err >= 0 && p->declared >= 0 && p->n != (uint64_t)p->declared)
        err = cn__fail(p->rq, CN_E_LENGTH_MISMATCH, CN_OBJ_WHAT_ARG,
                       "received %llu of %lld declared bytes", (unsigned long long)p->n,
                       (long long)p->declared);
    if (err < 0)
        goto out;
    uint8_t sha[CN_DIGEST_LEN];
    cn_sha256_final(p->sha, sha);
    p->sha = NULL;
    cn_md5_final(p->md5, r.md5);
    p->md5 = NULL;
    if ((p->has_md5 && memcmp(r.md5, p->want_md5, CN_MD5_LEN)) ||
        (p->has_sha && memcmp(sha, p->want_sha, CN_DIGEST_LEN))) {
        err = cn__fail(p->rq, CN_E_DIGEST_MISMATCH, CN_OBJ_WHAT_ARG,
                       "the body does not match the digest sent with it");
        goto out;
    }
    cn_hex_encode(sha, sizeof sha, r.sha256);
    if (p->kind == CN_OBJ_PUT_PART || !p->skip_etag)
        cn_hex_encode(r.md5, CN_MD5_LEN, r.etag);
    r.size = p->n;
    r.last_modified_ms = cn__now_ms();
    /* Invariant 1: the blob is durable before any row names it. */
    cn_digest_t d;
    err = cn_store_writer_publish(p->w, &d, NULL);
    p->w = NULL;
    if (err < 0)
        goto out;
    /* From publish to commit the blob is referenced by nothing; the
     * sweeper's grace window covers that gap, and a guard closes it even for
     * a grace shorter than the commit takes.  Between publish and guard a
     * sweep with no grace could still remove it: detect that, never commit
     * a row naming a missing blob. */
    cn_store_guard_t *g = NULL;
    err = cn_store_guard_acquire(p->o->store, &d, &g);
    bool present = false;
    if (err >= 0)
        err = cn_store_have(p->o->store, &d, 1, &present);
    if (err >= 0 && !present)
        err = cn__fail(p->rq, CN_E_CONFLICT, CN_OBJ_WHAT_NONE,
                       "the new blob was swept before it was committed; retry");
    if (err >= 0)
        err = p->kind == CN_OBJ_PUT_PART ? cn_obj_commit_part(p, &d, &r)
                                         : cn_obj_commit_object(p, &d, &r);
    cn_store_guard_release(g);
out:
    if (err >= 0 && res)
        *res = r;
    cn_obj_put_free(p);
    return err;
}
