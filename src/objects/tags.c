/* Object tagging: a version's tag set (obj_version_tag), read, replaced and
 * removed by Get / Put / DeleteObjectTagging on the current version or one
 * named by its wire id, counted for x-amz-tagging-count, and copied to a
 * copy's new version.  The limits are S3's (cn_objects_tags_check), checked
 * here whatever a face checked before.
 *
 * Never: tags a delete marker (S3 answers 405 for a marker's id, 404 for a
 * key whose latest version is one), or lets a tag change move the version's
 * place in its key's history; a tag write is one transaction. */
#include "objects_int.h"

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- limits ---------------------------------------------------------------------- */

/* Characters (UTF-8 code points) of the n bytes at s, or -1 when they are
 * not valid UTF-8 or hold a control character (NUL included: none can be
 * answered in an XML 1.0 document). */
static long utf8_chars(const char *s, size_t n)
{
    long chars = 0;
    for (size_t i = 0; i < n; chars++) {
        size_t l = cn_utf8_seq(s + i, n - i);
        if (l == 0 || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return -1;
        i += l;
    }
    return chars;
}

cn_err_t cn_objects_tags_check(const cn_objects_kv_t *tags, size_t n, size_t max, char *why,
                               size_t why_len)
{
    char dummy[1];
    if (!why || !why_len) {
        why = dummy;
        why_len = sizeof dummy;
    }
    why[0] = 0;
    if (n > max) {
        snprintf(why, why_len, "at most %zu tags are allowed", max);
        return CN_E_INVALID;
    }
    for (size_t i = 0; i < n; i++) {
        const char *k = tags[i].key ? tags[i].key : "";
        const char *v = tags[i].value ? tags[i].value : "";
        long kc = utf8_chars(k, strlen(k)), vc = utf8_chars(v, strlen(v));
        if (kc < 1 || kc > CN_OBJECTS_TAG_KEY_MAX) {
            snprintf(why, why_len,
                     "a tag key must be 1 to 128 characters of UTF-8, no control character");
            return CN_E_INVALID;
        }
        if (vc < 0 || vc > CN_OBJECTS_TAG_VALUE_MAX) {
            snprintf(why, why_len,
                     "a tag value must be at most 256 characters of UTF-8, no control character");
            return CN_E_INVALID;
        }
        if (strncmp(k, "aws:", 4) == 0) {
            snprintf(why, why_len, "tag keys beginning with aws: are reserved");
            return CN_E_INVALID;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(tags[j].key ? tags[j].key : "", k) == 0) {
                snprintf(why, why_len, "cannot provide multiple tags with the same key");
                return CN_E_INVALID;
            }
    }
    return 0;
}

void cn_objects_tagset_free(cn_objects_tagset_t *t)
{
    if (!t)
        return;
    free(t->tags);
    cn_buf_free(&t->priv_);
    memset(t, 0, sizeof *t);
}

/* ---- rows ------------------------------------------------------------------------ */

cn_err_t cn__obj_tags_count(cn_meta_txn_t *txn, int64_t version_id, uint32_t *n)
{
    *n = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_TAG_COUNT], "i", version_id);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        int64_t c = cn_meta_column_int64(st, 0);
        *n = c < 0 ? 0 : (uint32_t)c;
        err = 0;
    }
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

cn_err_t cn__obj_tags_copy(cn_meta_txn_t *txn, int64_t from, int64_t to)
{
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_TAG_COPY], "ii", to, from);
    return err < 0 ? err : 0;
}

cn_err_t cn__obj_tags_write(cn_meta_txn_t *txn, int64_t version_id, const cn_objects_kv_t *tags,
                            size_t n)
{
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_TAG_DELETE], "i", version_id);
    for (size_t i = 0; err >= 0 && i < n; i++) {
        const char *v = tags[i].value ? tags[i].value : "";
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_TAG_INSERT], "ibb", version_id,
                            (const void *)tags[i].key, strlen(tags[i].key), (const void *)v,
                            strlen(v));
    }
    return err < 0 ? err : 0;
}

/* Appends one NUL-terminated copy of p (n bytes) to b; its offset in *off. */
static cn_err_t buf_str(cn_buf_t *b, const void *p, size_t n, size_t *off)
{
    *off = b->len;
    cn_err_t err = n ? cn_buf_append(b, p, n) : 0;
    return err < 0 ? err : cn_buf_put_u8(b, 0);
}

cn_err_t cn__obj_tags_read(cn_meta_txn_t *txn, int64_t version_id, cn_objects_tagset_t *out)
{
    cn_meta_stmt_t *st = NULL;
    size_t offs[2 * CN_OBJECTS_TAGS_MAX];
    size_t n = 0;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_TAG_LIST], "i", version_id);
    if (err < 0)
        return err;
    cn_buf_reset(&out->priv_);
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        if (n >= CN_OBJECTS_TAGS_MAX) {
            err = CN_E_CORRUPT; /* every writer checks the limit */
            break;
        }
        size_t kl = 0, vl = 0;
        const void *k = cn_meta_column_blob(st, 0, &kl);
        const void *v = cn_meta_column_blob(st, 1, &vl);
        err = buf_str(&out->priv_, k, k ? kl : 0, &offs[2 * n]);
        if (err >= 0)
            err = buf_str(&out->priv_, v, v ? vl : 0, &offs[2 * n + 1]);
        if (err < 0)
            break;
        n++;
    }
    cn_meta_finish(st);
    if (err < 0)
        return err;
    free(out->tags);
    out->tags = n ? calloc(n, sizeof *out->tags) : NULL;
    if (n && !out->tags)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        out->tags[i].key = (const char *)out->priv_.data + offs[2 * i];
        out->tags[i].value = (const char *)out->priv_.data + offs[2 * i + 1];
    }
    out->ntags = n;
    return 0;
}

/* ---- the operations ---------------------------------------------------------------- */

typedef struct tag_op {
    cn_objects_t *o;
    const char *key;
    const char *version;
    cn_authz_action_t act;
    const cn_objects_kv_t *tags; /* set: the new tags */
    size_t n;
    bool write;
    cn_objects_tagset_t *out; /* the tags read (get) or version facts (set) */
} tag_op_t;

/* A resolved version the operation may act on: never a delete marker. */
static cn_err_t tag_not_marker(cn_objects_req_t *rq, const tag_op_t *op, const cn__vref_t *ref)
{
    if (ref->marker && !op->version)
        return cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY,
                        "the key's latest version is a delete marker");
    if (ref->marker)
        return cn__fail_d(rq, CN_E_UNSUPPORTED, CN_OBJ_WHAT_KEY, CN_OBJ_VERSION_IS_MARKER,
                          "a delete marker has no tags");
    return 0;
}

/* The access facts (owner, ACL) of the version ref names. */
static cn_err_t tag_objacl(cn_objects_t *o, cn_meta_txn_t *txn, const cn__vref_t *ref,
                           cn__objacl_t *acl)
{
    cn_meta_stmt_t *st = NULL;
    int q = ref->table == CN__VT_CURRENT ? CN_SQL_OBJ_TAG_OWNER_CUR : CN_SQL_OBJ_TAG_OWNER_HIST;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[q], "i", ref->version_id);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t ol = 0, al = 0;
        const char *owner = cn_meta_column_text(st, 0, &ol);
        const char *a = cn_meta_column_text(st, 1, &al);
        err = cn__objacl_set(o, acl, owner, ol, a, al);
    } else if (err == CN_META_DONE) {
        err = CN_E_CORRUPT; /* resolved in this transaction */
    }
    cn_meta_finish(st);
    return err;
}

/* The authz view of a tag set (same layout, distinct types). */
static void tag_view(const cn_objects_kv_t *kv, size_t n, cn_authz_tag_t *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].key = kv[i].key;
        out[i].value = kv[i].value;
    }
}

static cn_err_t tag_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *ctx)
{
    const tag_op_t *op = ctx;
    cn__vref_t ref;
    cn__objacl_t acl = { 0 };
    cn__vstate_t vs;
    cn_objects_tagset_t *out = op->out;
    cn_err_t err = cn__obj_version_resolve(txn, rq, b->id, op->key, op->version, &ref);
    if (err >= 0)
        err = tag_not_marker(rq, op, &ref);
    if (err == CN_E_NOT_FOUND || err == CN_E_INVALID || err == CN_E_UNSUPPORTED) {
        /* Who may not act on the key learns nothing about it. */
        cn_objects_req_t probe = *rq;
        cn_err_t az = cn__authorize(&probe, b, op->act, op->key, NULL, NULL);
        if (az < 0)
            *rq = probe;
        return az < 0 ? az : err;
    }
    if (err >= 0)
        err = tag_objacl(op->o, txn, &ref, &acl);
    if (err >= 0)
        err = cn__obj_tags_read(txn, ref.version_id, out); /* s3:ExistingObjectTag/<k> */
    if (err < 0)
        goto done;
    cn_authz_tag_t have[CN_OBJECTS_TAGS_MAX], want[CN_OBJECTS_TAGS_MAX];
    tag_view(out->tags, out->ntags, have);
    tag_view(op->tags, op->n, want);
    cn__cond_t cond = { .obj_tags = have,
                        .nobj_tags = out->ntags,
                        .req_tags = want,
                        .nreq_tags = op->n,
                        .req_tags_given = op->act == CN_ACT_PUT_OBJECT_TAGGING };
    err = cn__authorize(rq, b, op->act, op->key, &acl, &cond);
    if (err >= 0 && op->write)
        err = cn__obj_tags_write(txn, ref.version_id, op->tags, op->n);
    if (err >= 0)
        err = cn__bkt_vstate(txn, b, &vs);
    if (err >= 0) {
        out->version_id = ref.version_id;
        out->vnull = ref.vnull;
        out->bucket_versioned = vs.versioning != CN_OBJ_VERSIONING_OFF;
    }
done:
    cn__objacl_free(&acl);
    return err;
}

static cn_err_t tag_run(tag_op_t *op, cn_objects_req_t *rq, const char *bucket)
{
    cn_err_t err = cn__key_check(rq, op->key);
    if (err < 0)
        return err;
    unsigned flags =
        op->write ? CN_META_RUN_WRITE | CN_META_RETRY : CN_META_RUN_READ | CN_META_RETRY;
    return cn__bkt_run(op->o, rq, bucket, CN_ACT_INVALID, flags, tag_body, op);
}

cn_err_t cn_objects_tags_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                             const char *key, const char *version, cn_objects_tagset_t *out)
{
    memset(out, 0, sizeof *out);
    tag_op_t op = { o, key, version, CN_ACT_GET_OBJECT_TAGGING, NULL, 0, false, out };
    cn_err_t err = tag_run(&op, rq, bucket);
    if (err < 0)
        cn_objects_tagset_free(out);
    return err;
}

cn_err_t cn_objects_tags_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                             const char *key, const char *version, const cn_objects_kv_t *tags,
                             size_t n, cn_objects_tagset_t *res)
{
    char why[96];
    if (cn_objects_tags_check(tags, n, CN_OBJECTS_TAGS_MAX, why, sizeof why) < 0)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_TAGS_INVALID, "%s", why);
    cn_objects_tagset_t scratch;
    memset(&scratch, 0, sizeof scratch);
    cn_authz_action_t act = tags ? CN_ACT_PUT_OBJECT_TAGGING : CN_ACT_DELETE_OBJECT_TAGGING;
    tag_op_t op = { o, key, version, act, tags, n, true, &scratch };
    cn_err_t err = tag_run(&op, rq, bucket);
    if (err >= 0 && res) {
        memset(res, 0, sizeof *res);
        res->version_id = scratch.version_id;
        res->vnull = scratch.vnull;
        res->bucket_versioned = scratch.bucket_versioned;
    }
    cn_objects_tagset_free(&scratch);
    return err;
}

typedef struct count_op {
    int64_t version_id;
    uint32_t n;
} count_op_t;

static cn_err_t count_body(cn_meta_txn_t *txn, void *ctx)
{
    count_op_t *c = ctx;
    return cn__obj_tags_count(txn, c->version_id, &c->n);
}

cn_err_t cn_objects_tags_count(cn_objects_t *o, int64_t version_id, uint32_t *n)
{
    count_op_t c = { version_id, 0 };
    cn_err_t err = cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RETRY, count_body, &c);
    *n = err < 0 ? 0 : c.n;
    return err;
}
