/* CopyObject: the new version references the source version's blobs, so no
 * byte is read or written; only rows are.  Every failure says which side it
 * is about (rq->side). */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cn_err_t obj_side(cn_objects_req_t *rq, cn_err_t err, cn_objects_side_t side)
{
    if (err < 0 && rq->side == CN_OBJ_SIDE_NONE)
        rq->side = side;
    return err;
}

static bool obj_etag_match(const char *want, const char *have)
{
    size_t wl = strlen(want);
    if (wl == 1 && want[0] == '*')
        return true;
    if (wl >= 2 && want[0] == '"' && want[wl - 1] == '"') {
        want++;
        wl -= 2;
    }
    return strlen(have) == wl && !memcmp(want, have, wl);
}

/* The source version as the copy needs it. */
typedef struct {
    int64_t vid;
    uint64_t size;
    char etag[CN_ETAG_MAX];
    char sha256[CN_DIGEST_HEX_LEN + 1];
    char *content_type;
    cn_buf_t umeta;
    int64_t mtime_ms;
    int64_t nparts;
    bool vnull;
    cn__objacl_t acl;
} cn_obj_src_t;

static void obj_src_free(cn_obj_src_t *s)
{
    free(s->content_type);
    cn_buf_free(&s->umeta);
    cn__objacl_free(&s->acl);
}

/* Steps st onto the row of the source: the current version (version
 * NULL), else the one named; a marker is NOT_FOUND (VERSION_IS_MARKER for a
 * named one, as S3 answers a copy of a marker's id). */
static cn_err_t obj_src_row(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t bucket_id,
                            const char *key, const char *version, cn_obj_src_t *s,
                            cn_meta_stmt_t **st)
{
    if (!version)
        return cn__version_row(txn, rq, bucket_id, key, st);
    cn__vref_t v;
    cn_err_t err = cn__obj_version_resolve(txn, rq, bucket_id, key, version, &v);
    if (err >= 0 && v.marker)
        err = cn__fail_d(rq, CN_E_UNSUPPORTED, CN_OBJ_WHAT_KEY, CN_OBJ_VERSION_IS_MARKER,
                         "the source version is a delete marker");
    if (err < 0)
        return err;
    s->vnull = v.vnull;
    err = cn_meta_queryf(
        txn, st,
        cn__sql_obj[v.table == CN__VT_CURRENT ? CN_SQL_OBJ_V_CUR_ROW : CN_SQL_OBJ_V_HIST_ROW], "i",
        v.version_id);
    if (err >= 0)
        err = cn_meta_step(*st);
    if (err == CN_META_ROW)
        return 0;
    cn_meta_finish(*st);
    *st = NULL;
    return err < 0 ? err : CN_E_CORRUPT;
}

static cn_err_t obj_src_load(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                             int64_t bucket_id, const char *key, const char *version,
                             cn_obj_src_t *s)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = obj_src_row(txn, rq, bucket_id, key, version, s, &st);
    if (err < 0)
        return err;
    s->vid = cn_meta_column_int64(st, CN__VCOL_ID);
    s->size = (uint64_t)cn_meta_column_int64(st, CN__VCOL_SIZE);
    const char *t = cn_meta_column_text(st, CN__VCOL_ETAG, NULL);
    snprintf(s->etag, sizeof s->etag, "%s", t ? t : "");
    t = cn_meta_column_text(st, CN__VCOL_SHA256, NULL);
    snprintf(s->sha256, sizeof s->sha256, "%s", t ? t : "");
    size_t n = 0;
    t = cn_meta_column_text(st, CN__VCOL_CTYPE, &n);
    s->content_type = cn__strndup(t ? t : "", t ? n : 0);
    err = s->content_type ? 0 : -ENOMEM;
    const void *um = cn_meta_column_blob(st, CN__VCOL_UMETA, &n);
    if (err >= 0 && um)
        err = cn_buf_append(&s->umeta, um, n);
    s->mtime_ms = cn_meta_column_int64(st, CN__VCOL_MTIME);
    size_t an = 0;
    t = cn_meta_column_text(st, CN__VCOL_OWNER, &n);
    const char *acl = cn_meta_column_text(st, CN__VCOL_ACL, &an);
    if (err >= 0)
        err = cn__objacl_set(o, &s->acl, t, n, acl, an);
    s->nparts = cn_meta_column_int64(st, CN__VCOL_NPARTS);
    cn_meta_finish(st);
    return err;
}

static cn_err_t obj_copy_conditions(cn_objects_req_t *rq, const cn_objects_copy_args_t *a,
                                    const cn_obj_src_t *s)
{
    if (!a)
        return 0;
    bool ok = true;
    if (a->src_if_match && !obj_etag_match(a->src_if_match, s->etag))
        ok = false;
    if (a->src_if_none_match && obj_etag_match(a->src_if_none_match, s->etag))
        ok = false;
    /* S3: If-Match true with If-Unmodified-Since false still copies, and
     * If-None-Match false with If-Modified-Since true does not. */
    if (a->src_if_unmodified_since_ms && !a->src_if_match &&
        s->mtime_ms / 1000 > a->src_if_unmodified_since_ms / 1000)
        ok = false;
    if (a->src_if_modified_since_ms && !a->src_if_none_match &&
        s->mtime_ms / 1000 <= a->src_if_modified_since_ms / 1000)
        ok = false;
    return ok ? 0
              : cn__fail(rq, CN_E_PRECONDITION, CN_OBJ_WHAT_KEY,
                         "a copy-source condition does not hold");
}

/* One copy: what it asks, and what it made. */
typedef struct copy_run {
    cn_objects_t *o;
    cn_objects_req_t *rq;
    cn_objects_side_t side0; /* rq->side on entry, for a repeated run */
    const char *src_bucket, *src_key, *dst_bucket, *dst_key;
    const cn_objects_copy_args_t *args;
    const cn_objects_put_args_t *put;
    bool replace;
    int64_t now;
    int64_t vid;
    bool vnull, versioned;
    int64_t src_vid;
    bool src_vnull;
    uint64_t size;
    char etag[CN_ETAG_MAX];
    char sha256[CN_DIGEST_HEX_LEN + 1];
} copy_run_t;

/* The source side in txn: its key, its version (src), its access and the
 * copy-source conditions. */
static cn_err_t copy_source(cn_meta_txn_t *txn, const copy_run_t *cr, const cn__bkt_t *sb,
                            cn_obj_src_t *src)
{
    cn_objects_req_t *rq = cr->rq;
    cn_err_t err = 0;
    if (!cn_objects_key_ok(cr->src_key, cr->src_key ? strlen(cr->src_key) : 0))
        err = obj_side(rq,
                       cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_KEY, cn__key_detail(cr->src_key),
                                  "invalid source key"),
                       CN_OBJ_SIDE_SOURCE);
    if (err >= 0) {
        err = obj_src_load(cr->o, txn, rq, sb->id, cr->src_key,
                           cr->args ? cr->args->src_version : NULL, src);
        err = cn__authorize_version(rq, sb, CN_ACT_GET_OBJECT, cr->src_key, err, &src->acl);
        obj_side(rq, err, CN_OBJ_SIDE_SOURCE);
    }
    if (err >= 0)
        err = obj_side(rq, obj_copy_conditions(rq, cr->args, src), CN_OBJ_SIDE_SOURCE);
    return err;
}

/* The destination's rows in txn (cn__obj_version_make's callbacks): the new
 * version on src's segments, copied before the current version may go, so
 * that a copy onto its own key keeps its blobs referenced throughout. */
typedef struct copy_rows {
    const copy_run_t *cr;
    const cn__bkt_t *db;
    const cn_obj_src_t *src;
    const char *owner;
    cn_buf_t umeta, acl;
    bool claimed; /* the version row is in: copy_claim made it */
} copy_rows_t;

static cn_err_t copy_segments(cn_meta_txn_t *txn, void *ctx, int64_t vid)
{
    const copy_rows_t *c = ctx;
    return cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_SEGMENTS_COPY], "ii", vid, c->src->vid);
}

/* The copy's content type and user metadata: the source's, or the
 * request's under REPLACE. */
static const char *copy_attrs(const copy_rows_t *c, const cn_buf_t **um)
{
    const copy_run_t *cr = c->cr;
    const cn_objects_put_args_t *put = cr->put;
    *um = &c->src->umeta;
    if (!cr->replace)
        return c->src->content_type;
    *um = &c->umeta;
    return put && put->content_type ? put->content_type : "application/octet-stream";
}

static cn_err_t copy_version_row(cn_meta_txn_t *txn, void *ctx, int64_t vid)
{
    const copy_rows_t *c = ctx;
    const copy_run_t *cr = c->cr;
    const cn_buf_t *um = NULL;
    const char *ct = copy_attrs(c, &um);
    if (c->claimed)
        return 0; /* the claim inserted it; pre copied the segments */
    /* umeta last: SQL NULL when empty ('n' takes no argument, so the
     * pointer and length after it go unread). */
    return cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_VERSION_INSERT_COPY],
                         um->len ? "iibisssistib" : "iibisssistin", vid, c->db->id,
                         (const void *)cr->dst_key, strlen(cr->dst_key), (int64_t)c->src->size,
                         c->src->etag, c->src->sha256, ct, cr->now, c->owner,
                         (const char *)(c->acl.len ? c->acl.data : NULL), c->acl.len,
                         c->src->nparts, (const void *)um->data, um->len);
}

/* The version row of a new destination key (cn__obj_version_make's claim
 * callback): the columns copy_version_row writes, no checksum. */
static int copy_claim(cn_meta_txn_t *txn, void *ctx, int64_t *vid)
{
    copy_rows_t *c = ctx;
    const copy_run_t *cr = c->cr;
    const cn_buf_t *um = NULL;
    const char *ct = copy_attrs(c, &um);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_obj_engine[CN_SQL_OBJ_E_VERSION_CLAIM]),
        um->len ? "ibisssistinnb" : "ibisssistinnn", c->db->id, (const void *)cr->dst_key,
        strlen(cr->dst_key), (int64_t)c->src->size, c->src->etag, c->src->sha256, ct, cr->now,
        c->owner, (const char *)(c->acl.len ? c->acl.data : NULL), c->acl.len, c->src->nparts,
        (const void *)um->data, um->len);
    int got = cn__vclaim_step(st, err, vid);
    c->claimed = got > 0;
    return got;
}

/* The destination's new version (cr->vid) made current in txn. */
static cn_err_t copy_rows(cn_meta_txn_t *txn, copy_run_t *cr, const cn__bkt_t *db,
                          const cn_obj_src_t *src)
{
    cn_objects_req_t *rq = cr->rq;
    const cn_objects_put_args_t *put = cr->put;
    copy_rows_t c = { .cr = cr, .db = db, .src = src, .owner = cn__principal_name(rq) };
    if (!c.owner)
        c.owner = db->owner;
    cn_err_t err = 0;
    if (cr->replace)
        err = cn__umeta_encode(put ? put->meta : NULL, put ? put->nmeta : 0, &c.umeta);
    if (err >= 0)
        err = cn__acl_for_put(put ? put->acl : NULL, c.owner, &c.acl);
    bool copy_tags = cr->args && cr->args->copy_tags;
    cn__vmake_t mk = { .bucket_id = db->id,
                       .key = cr->dst_key,
                       .cond = put,
                       .tags = put && !copy_tags ? put->tags : NULL,
                       .ntags = put && !copy_tags ? put->ntags : 0,
                       .retention = put ? put->retention : NULL,
                       .now_ms = cr->now,
                       .pre = copy_segments,
                       .rows = copy_version_row,
                       .claim = copy_claim,
                       .ctx = &c };
    if (err >= 0)
        err = obj_side(rq, cn__obj_version_make(txn, rq, &mk), CN_OBJ_SIDE_DEST);
    if (err >= 0 && copy_tags)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_TAGS_COPY], "ii", mk.vid, src->vid);
    cr->vid = mk.vid;
    cr->vnull = mk.vnull;
    cr->versioned = mk.versioned;
    cn_buf_free(&c.umeta);
    cn_buf_free(&c.acl);
    return err;
}

static cn_err_t copy_body(cn_meta_txn_t *txn, void *ctx)
{
    copy_run_t *cr = ctx;
    cn_objects_req_t *rq = cr->rq;
    rq->side = cr->side0;
    const cn__bkt_t *sb = NULL, *db = NULL;
    cn_obj_src_t src;
    memset(&src, 0, sizeof src);
    cn_err_t err =
        obj_side(rq, cn__bkt_load(cr->o, txn, rq, cr->src_bucket, &sb), CN_OBJ_SIDE_SOURCE);
    if (err < 0)
        return err;
    err = copy_source(txn, cr, sb, &src);
    if (err >= 0)
        err = obj_side(rq, cn__bkt_load(cr->o, txn, rq, cr->dst_bucket, &db), CN_OBJ_SIDE_DEST);
    if (err >= 0 && !cn_objects_key_ok(cr->dst_key, cr->dst_key ? strlen(cr->dst_key) : 0))
        err = obj_side(rq,
                       cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_KEY, cn__key_detail(cr->dst_key),
                                  "invalid destination key"),
                       CN_OBJ_SIDE_DEST);
    if (err >= 0)
        err = obj_side(rq, cn__put_authorize(rq, db, cr->dst_key, cr->put), CN_OBJ_SIDE_DEST);
    if (err >= 0)
        err = obj_side(rq, cn__lock_put_check(txn, rq, db, cr->put), CN_OBJ_SIDE_DEST);
    if (err >= 0)
        err = copy_rows(txn, cr, db, &src);
    if (err >= 0) {
        cr->src_vid = src.vid;
        cr->src_vnull = src.vnull;
        cr->size = src.size;
        snprintf(cr->etag, sizeof cr->etag, "%s", src.etag);
        snprintf(cr->sha256, sizeof cr->sha256, "%s", src.sha256);
    }
    cn__bkt_release(db);
    cn__bkt_release(sb);
    obj_src_free(&src);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_copy(cn_objects_t *o, cn_objects_req_t *rq, const char *src_bucket,
                         const char *src_key, const char *dst_bucket, const char *dst_key,
                         const cn_objects_copy_args_t *args, cn_objects_put_result_t *res)
{
    const cn_objects_put_args_t *put = args ? args->put : NULL;
    bool replace = args && args->replace;
    cn_err_t err = replace ? cn__put_args_check(rq, put) : 0;
    if (err < 0)
        return obj_side(rq, err, CN_OBJ_SIDE_DEST);
    copy_run_t cr = { .o = o,
                      .rq = rq,
                      .side0 = rq->side,
                      .src_bucket = src_bucket,
                      .src_key = src_key,
                      .dst_bucket = dst_bucket,
                      .dst_key = dst_key,
                      .args = args,
                      .put = put,
                      .replace = replace,
                      .now = cn_wall_ms() };
    err = cn__write_run_key(o, dst_bucket, dst_key, CN_META_RUN_WRITE | CN_META_RETRY, copy_body,
                            &cr);
    if (err >= 0 && res) {
        memset(res, 0, sizeof *res);
        snprintf(res->etag, sizeof res->etag, "%s", cr.etag);
        snprintf(res->sha256, sizeof res->sha256, "%s", cr.sha256);
        res->size = cr.size;
        res->last_modified_ms = cr.now;
        res->version_id = cr.vid;
        res->vnull = cr.vnull;
        res->bucket_versioned = cr.versioned;
        res->src_version_id = cr.src_vid;
        res->src_vnull = cr.src_vnull;
    }
    return err;
}
