/* The objects service handle: schema (its steps and every statement of the
 * service are in src/meta/sql/objects.c), liveness for the store's sweeper, the
 * upload-expiry thread, name rules and the shared helpers (the bucket run,
 * the authorization call, id counters); bucket loading and the read path's
 * caches are in cache.c.
 *
 * Durability invariants (every mutation in this module):
 *   1. Blob bytes are published by the store (fsynced, renamed, directory
 *      fsynced) before the metadata transaction that references them begins
 *      to commit.
 *   2. The call returns success only after its write run (cn_meta_run)
 *      committed, which is durable (group commit).
 *   3. A blob is referenced only by rows (obj_segment, obj_part); the
 *      liveness source answers from those rows, so a blob published but never
 *      committed (a crash between 1 and 2) is left to the sweeper's grace.
 */
#include "objects_int.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CN_OBJ_DEFAULT_MAX_OBJECT (5ull << 40)
#define CN_OBJ_DEFAULT_EXPIRY_MS (7ll * 24 * 3600 * 1000)
#define CN_OBJ_DEFAULT_SWEEP_MS (10ll * 60 * 1000)
#define CN_OBJ_DEFAULT_DONE_KEEP_MS (60ll * 60 * 1000)
/* The read path's caches (cache.c): at most CN__CACHE_SLOTS entries each,
 * and at most these many bytes. */
#define CN_OBJ_BUCKET_CACHE_BYTES (8u << 20)
#define CN_OBJ_ACL_CACHE_BYTES (1u << 20)

/* ---- small helpers ------------------------------------------------------------ */

char *cn__strndup(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    if (n)
        memcpy(s, p, n);
    s[n] = 0;
    return s;
}

void cn__strcpy(char *dst, size_t cap, const char *s, size_t n)
{
    if (!s)
        n = 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, s, n);
    dst[n] = 0;
}

cn_err_t cn__fail(cn_objects_req_t *rq, cn_err_t err, cn_objects_what_t what, const char *fmt, ...)
{
    if (rq) {
        rq->what = what;
        va_list ap;
        va_start(ap, fmt);
        cn_fail_vset(&rq->fail, err, CN_OBJ_DETAIL_NONE, fmt, ap);
        va_end(ap);
    }
    return err;
}

cn_err_t cn__fail_d(cn_objects_req_t *rq, cn_err_t err, cn_objects_what_t what,
                    cn_obj_detail_t detail, const char *fmt, ...)
{
    if (rq) {
        rq->what = what;
        va_list ap;
        va_start(ap, fmt);
        cn_fail_vset(&rq->fail, err, (uint16_t)detail, fmt, ap);
        va_end(ap);
    }
    return err;
}

int cn_objects_err_lookup(const cn_obj_err_row_t *rows, size_t n, const cn_objects_req_t *rq,
                          cn_err_t err, int fallback)
{
    uint16_t detail = rq && rq->fail.cls == err ? rq->fail.detail : 0;
    int what = rq ? (int)rq->what : CN_OBJ_WHAT_NONE;
    int code = fallback;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].cls == err && rows[i].detail == detail &&
            (rows[i].what == CN_OBJ_WHAT_ANY || rows[i].what == what)) {
            code = rows[i].code;
            break;
        }
    }
    return code;
}

cn_obj_detail_t cn__key_detail(const char *key)
{
    return key && strlen(key) > CN_OBJECT_KEY_MAX ? CN_OBJ_KEY_TOO_LONG : CN_OBJ_KEY_INVALID;
}

const char *cn_obj_detail_name(cn_obj_detail_t d)
{
    static const char *const names[CN_OBJ_DETAIL_COUNT] = { [CN_OBJ_DETAIL_NONE] = "NONE",
#define CN__OBJ_DETAIL_NAME(name, cls) [CN_OBJ_##name] = #name,
                                                            CN_OBJ_DETAILS(CN__OBJ_DETAIL_NAME)
#undef CN__OBJ_DETAIL_NAME
    };
    return (unsigned)d < CN_OBJ_DETAIL_COUNT ? names[d] : NULL;
}

const char *cn__principal_name(const cn_objects_req_t *rq)
{
    if (!rq->principal || (rq->principal->flags & CN_PRINCIPAL_ANONYMOUS) ||
        !rq->principal->account[0])
        return NULL;
    return rq->principal->account;
}

/* The first column of the one row of st, queried with result err, into
 * *out (CN_E_CORRUPT when there is none); finishes st. */
static cn_err_t one_id(cn_meta_stmt_t *st, cn_err_t err, int64_t *out)
{
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        *out = cn_meta_column_int64(st, 0);
        err = 0;
    } else if (err == CN_META_DONE) {
        err = CN_E_CORRUPT;
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn__next_version(cn_meta_txn_t *txn, int64_t *out)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_obj_engine[CN_SQL_OBJ_E_VERSION_NEXT]), "");
    return one_id(st, err, out);
}

cn_err_t cn__next_bucket_id(cn_meta_txn_t *txn, int64_t *out)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_SEQ_BUMP], "s", "bucket");
    if (err < 0)
        return err;
    err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_SEQ_VALUE], "s", "bucket");
    return one_id(st, err, out);
}

/* ---- names -------------------------------------------------------------------- */
static bool obj_is_ipv4_shape(const char *s)
{
    int dots = 0, digits = 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (!digits)
                return false;
            dots++;
            digits = 0;
        } else if (*s >= '0' && *s <= '9') {
            if (++digits > 3)
                return false;
        } else {
            return false;
        }
    }
    return dots == 3 && digits;
}

bool cn_objects_bucket_name_ok(const char *name)
{
    if (!name)
        return false;
    size_t n = strlen(name);
    if (n < 3 || n > CN_BUCKET_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '.' && c != '-')
            return false;
        if ((i == 0 || i == n - 1) && !alnum)
            return false;
        if (c == '.' && name[i + 1] == '.')
            return false;
    }
    if (obj_is_ipv4_shape(name))
        return false;
    if (!strncmp(name, "xn--", 4) || !strncmp(name, "sthree-", 7))
        return false;
    if ((n >= 8 && !strcmp(name + n - 8, "-s3alias")) ||
        (n >= 7 && !strcmp(name + n - 7, "--ol-s3")))
        return false;
    return true;
}

bool cn_objects_key_ok(const char *key, size_t len)
{
    if (!key || len == 0 || len > CN_OBJECT_KEY_MAX)
        return false;
    return !memchr(key, 0, len) && cn_utf8_valid(key, len);
}

/* ---- access state ---------------------------------------------------------------- */
cn_err_t cn__acl_load(const char *text, size_t len, cn_authz_acl_t **out)
{
    *out = NULL;
    if (!text)
        return 0;
    cn_authz_acl_t *acl = calloc(1, sizeof *acl);
    if (!acl)
        return -ENOMEM;
    cn_err_t err = cn_authz_acl_parse(text, len, acl);
    if (err < 0) {
        free(acl);
        return CN_E_CORRUPT;
    }
    *out = acl;
    return 0;
}

void cn__bkt_view(const cn__bkt_t *b, cn_authz_bucket_t *out)
{
    memset(out, 0, sizeof *out);
    out->name = b->name;
    out->owner = b->owner;
    out->acl = b->acl;
    out->policy = b->policy;
    if (b->has_pab)
        out->pab = b->pab;
}

/* One bucket body of cn__bkt_run: what to load and check, and what runs next. */
typedef struct bkt_run {
    cn_objects_t *o;
    cn_objects_req_t *rq;
    const char *bucket;
    cn_authz_action_t act;
    cn__bkt_body_fn body;
    void *ctx;
    cn__bkt_peek_t *pk; /* NULL: not asked for */
} bkt_run_t;

static cn_err_t bkt_run_body(cn_meta_txn_t *txn, void *ctx)
{
    const bkt_run_t *br = ctx;
    const cn__bkt_t *b = NULL;
    cn_err_t err = br->pk ? cn__bkt_load_peek(br->o, txn, br->rq, br->bucket, &b, br->pk)
                          : cn__bkt_load(br->o, txn, br->rq, br->bucket, &b);
    if (err < 0)
        return err;
    if (br->act != CN_ACT_INVALID)
        err = cn__authorize(br->rq, b, br->act, NULL, NULL, NULL);
    if (err >= 0)
        err = br->body(txn, br->rq, b, br->ctx);
    cn__bkt_release(b);
    return err;
}

cn_err_t cn__bkt_run(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                     cn_authz_action_t act, unsigned flags, cn__bkt_body_fn body, void *ctx)
{
    bkt_run_t br = { o, rq, bucket, act, body, ctx, NULL };
    if (flags & CN_META_RUN_WRITE)
        return cn__write_run(o, bucket, flags, bkt_run_body, &br);
    return cn_meta_run(o->meta, flags, bkt_run_body, &br);
}

cn_err_t cn__bkt_run_peek(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                          cn_authz_action_t act, unsigned flags, cn__bkt_body_fn body, void *ctx,
                          cn__bkt_peek_t *pk)
{
    assert(!(flags & CN_META_RUN_WRITE));
    bkt_run_t br = { o, rq, bucket, act, body, ctx, pk };
    return cn_meta_run(o->meta, flags, bkt_run_body, &br);
}

/* A write run's body, then (rows mode) its slot's bump as the last statement
 * of the same transaction (gen.c). */
typedef struct gen_run {
    const cn__gen_t *gen;
    size_t slot;
    cn_meta_body_fn body;
    void *ctx;
} gen_run_t;

static cn_err_t gen_run_body(cn_meta_txn_t *txn, void *ctx)
{
    const gen_run_t *gr = ctx;
    cn_err_t err = gr->body(txn, gr->ctx);
    if (err >= 0) {
        cn_err_t bump = cn__gen_bump(gr->gen, txn, gr->slot);
        if (bump < 0)
            err = bump;
    }
    return err;
}

/* A write run between enter and leave of the bucket's slot (the file),
 * bumping bump (rows mode). */
static cn_err_t write_run_at(cn_objects_t *o, size_t slot, size_t bump, unsigned flags,
                             cn_meta_body_fn body, void *ctx)
{
    gen_run_t gr = { o->gen, bump, body, ctx };
    cn__gen_enter(o->gen, slot);
    cn_err_t err = cn_meta_run(o->meta, flags, gen_run_body, &gr);
    cn__gen_leave(o->gen, slot);
    return err;
}

cn_err_t cn__write_run(cn_objects_t *o, const char *bucket, unsigned flags, cn_meta_body_fn body,
                       void *ctx)
{
    size_t slot = cn__gen_slot(bucket);
    return write_run_at(o, slot, slot, flags, body, ctx);
}

cn_err_t cn__write_run_key(cn_objects_t *o, const char *bucket, const char *key, unsigned flags,
                           cn_meta_body_fn body, void *ctx)
{
    return write_run_at(o, cn__gen_slot(bucket), cn__gen_kslot(o->gen, bucket, key), flags, body,
                        ctx);
}

cn_err_t cn__authorize(cn_objects_req_t *rq, const cn__bkt_t *bucket, cn_authz_action_t act,
                       const char *key, const cn__objacl_t *obj, const cn__cond_t *cond)
{
    cn_authz_req_t ar;
    memset(&ar, 0, sizeof ar);
    ar.principal = cn__principal_name(rq);
    ar.perms = rq->principal ? rq->principal->perms : 0;
    ar.service = rq->principal && (rq->principal->flags & CN_PRINCIPAL_SERVICE);
    ar.action = act;
    ar.key = key;
    ar.source_ip = rq->source_ip;
    ar.secure_transport = rq->secure_transport;
    ar.referer = rq->referer;
    ar.user_agent = rq->user_agent;
    ar.grants = rq->grants;
    if (cond) {
        ar.prefix = cond->prefix;
        ar.delimiter = cond->delimiter;
        ar.max_keys = cond->max_keys;
        ar.x_amz_acl = cond->x_amz_acl;
        ar.req_tags = cond->req_tags;
        ar.nreq_tags = cond->nreq_tags;
        ar.req_tags_given = cond->req_tags_given;
    }
    cn_authz_bucket_t bv;
    cn_authz_object_t ov;
    if (bucket)
        cn__bkt_view(bucket, &bv);
    if (obj) {
        memset(&ov, 0, sizeof ov);
        ov.owner = obj->owner;
        ov.acl = obj->acl;
        if (cond) {
            ov.tags = cond->obj_tags;
            ov.ntags = cond->nobj_tags;
        }
    }
    /* Pure, so the reason (a formatted line) is asked for only by a
     * refusal, which decides again: an allowed GET formats nothing. */
    cn_err_t err = cn_authz_decide(&ar, bucket ? &bv : NULL, obj ? &ov : NULL, NULL);
    if (err == CN_E_DENIED) {
        cn_authz_decision_t d;
        (void)cn_authz_decide(&ar, bucket ? &bv : NULL, obj ? &ov : NULL, &d);
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE, "access denied: %s", d.reason);
    }
    if (err < 0)
        return cn__fail(rq, err, CN_OBJ_WHAT_NONE, "authorization failed: %s", cn_strerror(err));
    return 0;
}

cn_err_t cn__authorize_found(cn_objects_req_t *rq, const cn__bkt_t *b, cn_authz_action_t act,
                             const char *key, cn_err_t found, const cn__objacl_t *obj)
{
    if (found == CN_E_NOT_FOUND) {
        cn_err_t az = cn__authorize(rq, b, act, key, NULL, NULL);
        /* S3: a reader refused the missing key learns it is missing only if
         * it may list the bucket (404 NoSuchKey); otherwise 403, so keys
         * cannot be probed. */
        if (az == CN_E_DENIED && act == CN_ACT_GET_OBJECT &&
            cn__authorize(rq, b, CN_ACT_LIST_BUCKET, NULL, NULL, NULL) == 0)
            az = 0;
        return az < 0 ? az : cn__fail(rq, found, CN_OBJ_WHAT_KEY, "key does not exist");
    }
    if (found < 0)
        return found;
    return cn__authorize(rq, b, act, key, obj, NULL);
}

cn_err_t cn__pab_put_acl(cn_objects_req_t *rq, const cn__bkt_t *b, const cn_authz_acl_t *acl)
{
    if (acl && cn_authz_pab_check_acl(b->has_pab ? &b->pab : NULL, acl) < 0)
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE,
                        "the public access block refuses a public ACL");
    return 0;
}

cn_err_t cn__put_authorize(cn_objects_req_t *rq, const cn__bkt_t *b, const char *key,
                           const cn_objects_put_args_t *args)
{
    cn__cond_t cond = { .x_amz_acl = args ? args->canned_acl : NULL };
    /* The new version's tags (x-amz-tagging), for s3:RequestObjectTag/<k>
     * and s3:RequestObjectTagKeys; tags NULL = the request sets none. */
    cn_authz_tag_t rt[CN_OBJECTS_TAGS_MAX];
    if (args && args->tags) {
        size_t n = args->ntags < CN_OBJECTS_TAGS_MAX ? args->ntags : CN_OBJECTS_TAGS_MAX;
        for (size_t i = 0; i < n; i++) {
            rt[i].key = args->tags[i].key;
            rt[i].value = args->tags[i].value;
        }
        cond.req_tags = rt;
        cond.nreq_tags = n;
        cond.req_tags_given = true;
    }
    cn_err_t err = cn__authorize(rq, b, CN_ACT_PUT_OBJECT, key, NULL, &cond);
    if (err >= 0)
        err = cn__pab_put_acl(rq, b, args ? args->acl : NULL);
    return err;
}

cn_err_t cn__key_check(cn_objects_req_t *rq, const char *key)
{
    if (!cn_objects_key_ok(key, key ? strlen(key) : 0))
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_KEY, cn__key_detail(key), "invalid key");
    return 0;
}

cn_err_t cn__version_row(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t bucket_id,
                         const char *key, cn_meta_stmt_t **st)
{
    cn_err_t err = cn_meta_queryf(txn, st, cn__sql_obj[CN_SQL_OBJ_VERSION_ROW], "ib", bucket_id,
                                  (const void *)key, strlen(key));
    if (err < 0)
        return err;
    err = cn_meta_step(*st);
    if (err == CN_META_ROW)
        return 0;
    cn_meta_finish(*st);
    *st = NULL;
    if (err == CN_META_DONE)
        return cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, "key does not exist");
    return err;
}

/* VERSION_FIND's columns of st's row into cn__version_find's outputs. */
static cn_err_t find_cols(cn_meta_stmt_t *st, int64_t *version_id, char etag[CN_ETAG_MAX],
                          cn__objacl_t *obj)
{
    *version_id = cn_meta_column_int64(st, 0);
    size_t len = 0;
    if (etag) {
        const char *e = cn_meta_column_text(st, 1, &len);
        cn__strcpy(etag, CN_ETAG_MAX, e, len);
    }
    if (!obj || !*version_id)
        return 0;
    size_t alen = 0;
    const char *owner = cn_meta_column_text(st, 2, &len);
    const char *acl = cn_meta_column_text(st, 3, &alen);
    return cn__objacl_set(NULL, obj, owner, len, acl, alen);
}

cn_err_t cn__version_find(cn_meta_txn_t *txn, int64_t bucket_id, const char *key,
                          int64_t *version_id, char etag[CN_ETAG_MAX], cn__objacl_t *obj)
{
    *version_id = 0;
    if (etag)
        etag[0] = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_VERSION_FIND], "ib", bucket_id,
                                  (const void *)key, strlen(key));
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    if (err == CN_META_ROW)
        err = find_cols(st, version_id, etag, obj);
    else if (err == CN_META_DONE)
        err = 0;
    cn_meta_finish(st);
    return err;
}

cn_err_t cn__version_find_next(cn_meta_txn_t *txn, int64_t bucket_id, const char *key,
                               int64_t *version_id, char etag[CN_ETAG_MAX], int64_t *next)
{
    *version_id = *next = 0;
    if (etag)
        etag[0] = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_obj_engine[CN_SQL_OBJ_E_VERSION_FIND_NEXT]),
        "ib", bucket_id, (const void *)key, strlen(key));
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        err = find_cols(st, version_id, etag, NULL);
        *next = cn_meta_column_int64(st, 4);
    } else if (err == CN_META_DONE) {
        err = CN_E_CORRUPT; /* the statement always answers one row */
    }
    cn_meta_finish(st);
    if (err >= 0 && !*next)
        err = cn__next_version(txn, next);
    return err < 0 ? err : 0;
}

cn_err_t cn__version_delete(cn_meta_txn_t *txn, int64_t version_id)
{
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_SEGMENTS_DELETE], "i", version_id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_VERSION_DELETE], "i", version_id);
    return err < 0 ? err : 0;
}

static bool obj_etag_eq(const char *want, const char *have)
{
    /* S3 clients send etags quoted; compare the bare value.  "*" matches any. */
    size_t wl = strlen(want);
    if (wl >= 2 && want[0] == '"' && want[wl - 1] == '"') {
        want++;
        wl -= 2;
    }
    if (wl == 1 && want[0] == '*')
        return true;
    return strlen(have) == wl && !memcmp(want, have, wl);
}

cn_err_t cn__put_conditions(cn_objects_req_t *rq, const cn_objects_put_args_t *a,
                            int64_t cur_version, const char *cur_etag)
{
    if (!a)
        return 0;
    if (a->if_none_match && cur_version)
        return cn__fail(rq, CN_E_PRECONDITION, CN_OBJ_WHAT_KEY, "the key already exists");
    if (a->if_match && (!cur_version || !obj_etag_eq(a->if_match, cur_etag)))
        return cn__fail(rq, cur_version ? CN_E_PRECONDITION : CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY,
                        "the current etag does not match");
    return 0;
}

cn_err_t cn__acl_for_put(const cn_authz_acl_t *acl, const char *owner, cn_buf_t *out)
{
    out->len = 0;
    if (!acl)
        return 0;
    cn_authz_acl_t *copy = malloc(sizeof *copy);
    if (!copy)
        return -ENOMEM;
    *copy = *acl;
    snprintf(copy->owner, sizeof copy->owner, "%s", owner);
    cn_err_t err = cn_authz_acl_serialize(copy, out);
    free(copy);
    return err;
}

/* ---- user metadata ----------------------------------------------------------- */
cn_err_t cn__put_args_check(cn_objects_req_t *rq, const cn_objects_put_args_t *a)
{
    if (!a)
        return 0;
    if (a->ntags > CN_OBJECTS_TAGS_MAX || (a->ntags && !a->tags))
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "more than %d tags",
                        CN_OBJECTS_TAGS_MAX);
    if (a->content_type && strlen(a->content_type) > CN_OBJECTS_CONTENT_TYPE_MAX)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_CONTENT_TYPE_TOO_LONG,
                          "content type too long");
    size_t total = 0;
    for (size_t i = 0; i < a->nmeta; i++) {
        if (!a->meta[i].key || !a->meta[i].value || !a->meta[i].key[0])
            return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_METADATA_KEY_INVALID,
                              "empty metadata key");
        total += strlen(a->meta[i].key) + strlen(a->meta[i].value);
        if (total > CN_OBJECTS_USER_META_MAX)
            return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_METADATA_TOO_LARGE,
                              "user metadata too large");
    }
    return 0;
}

cn_err_t cn__umeta_encode(const cn_objects_kv_t *kv, size_t n, cn_buf_t *out)
{
    out->len = 0;
    if (!n)
        return 0;
    CN_TRY(cn_buf_put_u32be(out, (uint32_t)n));
    for (size_t i = 0; i < n; i++) {
        size_t kl = strlen(kv[i].key), vl = strlen(kv[i].value);
        CN_TRY(cn_buf_put_u32be(out, (uint32_t)kl));
        CN_TRY(cn_buf_append(out, kv[i].key, kl));
        CN_TRY(cn_buf_put_u32be(out, (uint32_t)vl));
        CN_TRY(cn_buf_append(out, kv[i].value, vl));
    }
    return 0;
}

void cn_objects_info_free(cn_object_info_t *info)
{
    if (!info)
        return;
    free(info->content_type);
    free(info->priv_);
    info->content_type = NULL;
    info->priv_ = NULL;
    info->meta = NULL;
    info->nmeta = 0;
}

cn_err_t cn__info_fill(cn_object_info_t *info, const char *ctype, size_t ctype_len,
                       const void *umeta, size_t umeta_len)
{
    info->content_type = cn__strndup(ctype ? ctype : "", ctype ? ctype_len : 0);
    if (!info->content_type)
        return -ENOMEM;
    info->meta = NULL;
    info->nmeta = 0;
    if (!umeta || umeta_len < 4)
        return 0;
    cn_rd_t r = cn_rd_init(umeta, umeta_len);
    uint32_t n = cn_rd_u32be(&r);
    /* Each entry takes at least 8 bytes: a corrupt count cannot over-allocate. */
    if (n > (umeta_len - 4) / 8)
        return CN_E_CORRUPT;
    /* One block: the kv array, then NUL-terminated strings. */
    size_t need = n * sizeof(cn_objects_kv_t) + (umeta_len - 4);
    char *blk = malloc(need + 2 * (size_t)n + 1);
    if (!blk)
        return -ENOMEM;
    cn_objects_kv_t *kv = (cn_objects_kv_t *)blk;
    char *s = blk + n * sizeof(cn_objects_kv_t);
    for (uint32_t i = 0; i < n; i++) {
        for (int side = 0; side < 2; side++) {
            uint32_t l = cn_rd_u32be(&r);
            const uint8_t *p = cn_rd_bytes(&r, l);
            if (r.err) {
                free(blk);
                return CN_E_CORRUPT;
            }
            memcpy(s, p, l);
            s[l] = 0;
            if (side == 0)
                kv[i].key = s;
            else
                kv[i].value = s;
            s += l + 1;
        }
    }
    info->priv_ = blk;
    info->meta = kv;
    info->nmeta = n;
    return 0;
}

/* ---- liveness ---------------------------------------------------------------------
 * A blob is live while an object version's segment or an upload's part names
 * it.  Answered from one read snapshot per batch. */

/* One liveness batch: the digests asked about and the answers. */
typedef struct live_batch {
    const cn_digest_t *d;
    size_t n;
    bool *live;
} live_batch_t;

static cn_err_t are_live_body(cn_meta_txn_t *txn, void *ctx)
{
    const live_batch_t *lb = ctx;
    static const int q[2] = { CN_SQL_OBJ_SEGMENT_DIGEST_LIVE, CN_SQL_OBJ_PART_DIGEST_LIVE };
    cn_err_t err = CN_OK;
    for (size_t i = 0; i < lb->n && err >= 0; i++) {
        lb->live[i] = false;
        for (int k = 0; k < 2 && !lb->live[i] && err >= 0; k++) {
            err = cn_meta_execf(txn, cn__sql_obj[q[k]], "b", (const void *)lb->d[i].b,
                                sizeof lb->d[i].b);
            if (err == CN_META_ROW)
                lb->live[i] = true;
        }
    }
    return err < 0 ? err : CN_OK;
}

static cn_err_t obj_are_live(void *ctx, const cn_digest_t *d, size_t n, bool *live)
{
    cn_objects_t *o = ctx;
    live_batch_t lb = { d, n, live };
    return cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RETRY, are_live_body, &lb);
}

/* ---- upload expiry thread ----------------------------------------------------------- */
static void *obj_sweeper(void *arg)
{
    cn_objects_t *o = arg;
    pthread_mutex_lock(&o->mu);
    while (!o->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (o->opts.upload_sweep_ms % 1000) * 1000000;
        ts.tv_sec += o->opts.upload_sweep_ms / 1000 + ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        while (!o->stop && pthread_cond_timedwait(&o->cv, &o->mu, &ts) != ETIMEDOUT)
            ;
        if (o->stop)
            break;
        pthread_mutex_unlock(&o->mu);
        uint64_t removed = 0;
        cn_err_t err = cn_objects_sweep_uploads(o, 0, &removed);
        if (err < 0)
            cn_warn("objects", "upload sweep failed: %s", cn_strerror(err));
        else if (removed)
            cn_info("objects", "expired %llu unfinished multipart upload(s)",
                    (unsigned long long)removed);
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* The hashing pool's threads: cores - 1 (the put's own thread is the last
 * core), or CAIRN_TEST_HASH_THREADS (0 to 8), so that tests on a small
 * machine reach the path where MD5 and SHA-256 both hash beside the write. */
static size_t hash_threads_wanted(void)
{
    const char *t = getenv("CAIRN_TEST_HASH_THREADS");
    if (t && *t >= '0' && *t <= '9' && !t[1])
        return (size_t)(*t - '0');
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores <= 1 ? 0 : (size_t)cores - 1; /* cn_side_new caps it */
}

cn_err_t cn_objects_open(cn_meta_t *meta, cn_store_t *store, const cn_objects_opts_t *opts,
                         cn_objects_t **out)
{
    *out = NULL;
    if (!meta || !store)
        return CN_E_INVALID;
    cn_objects_t *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    o->meta = meta;
    o->store = store;
    if (opts)
        o->opts = *opts;
    if (!o->opts.max_object_bytes)
        o->opts.max_object_bytes = CN_OBJ_DEFAULT_MAX_OBJECT;
    if (o->opts.upload_expiry_ms <= 0)
        o->opts.upload_expiry_ms = CN_OBJ_DEFAULT_EXPIRY_MS;
    if (o->opts.upload_sweep_ms == 0)
        o->opts.upload_sweep_ms = CN_OBJ_DEFAULT_SWEEP_MS;
    if (o->opts.completed_keep_ms <= 0)
        o->opts.completed_keep_ms = CN_OBJ_DEFAULT_DONE_KEEP_MS;
    pthread_mutex_init(&o->mu, NULL);
    o->chains = cn__chains_new();
    o->hashpool = cn_side_new(hash_threads_wanted(), "cn-hash");
    cn_cond_init_mono(&o->cv);
    cn_err_t err = cn_cache_init(&o->buckets, CN__CACHE_SLOTS, CN_OBJ_BUCKET_CACHE_BYTES);
    cn_err_t e2 = cn_cache_init(&o->acls, CN__CACHE_SLOTS, CN_OBJ_ACL_CACHE_BYTES);
    cn_err_t e3 = cn__objhead_init(o, o->opts.data_dir);
    /* One small entry per bucket read lately, with or without rules: as many
     * as a busy server has hot buckets. */
    cn_err_t e4 = cn_cache_init(&o->lcs, 16 * CN__CACHE_SLOTS, CN_OBJ_ACL_CACHE_BYTES);
    err = err < 0 ? err : e2 < 0 ? e2 : e3 < 0 ? e3 : e4;
    if (err >= 0)
        err = cn__sql_migrate(meta, &cn__sql_obj_set);
    if (err < 0)
        goto fail;
    if (o->opts.upload_sweep_ms > 0) {
        /* The sweeper takes no signals: they belong to whoever handles them
         * (cairnd's loop uses signalfd with SIGTERM/SIGINT blocked). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&o->sweeper, NULL, obj_sweeper, o);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc) {
            err = -rc;
            goto fail;
        }
        o->sweeper_running = true;
    }
    /* Last: the store keeps ctx until it is closed, so nothing may fail after. */
    err = cn_store_register_liveness_batch(store, "objects", obj_are_live, o);
    if (err < 0) {
        cn_objects_close(o);
        return err;
    }
    *out = o;
    return 0;
fail:
    cn__objhead_destroy(o);
    cn_cache_destroy(&o->lcs);
    cn_cache_destroy(&o->acls);
    cn_cache_destroy(&o->buckets);
    cn__chains_free(o->chains);
    cn_side_free(o->hashpool);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o);
    return err;
}

void cn_objects_close(cn_objects_t *o)
{
    if (!o)
        return;
    cn__lc_stop(o); /* it deletes through o: first */
    if (o->sweeper_running) {
        pthread_mutex_lock(&o->mu);
        o->stop = true;
        pthread_cond_broadcast(&o->cv);
        pthread_mutex_unlock(&o->mu);
        pthread_join(o->sweeper, NULL);
    }
    cn__objhead_destroy(o);
    cn_cache_destroy(&o->lcs);
    cn_cache_destroy(&o->acls);
    cn_cache_destroy(&o->buckets);
    cn__chains_free(o->chains);
    cn_side_free(o->hashpool);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

uint64_t cn_objects_max_object_bytes(const cn_objects_t *o)
{
    return o->opts.max_object_bytes;
}
