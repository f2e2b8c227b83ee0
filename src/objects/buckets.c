/* Buckets: create, delete, head, list, and the access state stored with each
 * (ACL, policy, public access block, generic named settings). */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void obj_bucket_info(const cn__bkt_t *b, cn_bucket_info_t *out)
{
    memset(out, 0, sizeof *out);
    out->bucket_id = b->id;
    cn__strcpy(out->name, sizeof out->name, b->name, strlen(b->name));
    cn__strcpy(out->owner, sizeof out->owner, b->owner, strlen(b->owner));
    out->created_ms = b->created_ms;
    cn_authz_bucket_t v;
    cn__bkt_view(b, &v);
    out->visibility = cn_authz_visibility(&v);
}

/* A bucket to create: its row's values (acl->len 0 = private), and the id
 * the row got. */
typedef struct bucket_new {
    cn_objects_req_t *rq;
    const char *name, *owner;
    const cn_buf_t *acl;
    int64_t now;
    int64_t id;
    const cn_objects_kv_t *settings; /* named settings written with the row */
    size_t nsettings;
} bucket_new_t;

static cn_err_t bucket_create_body(cn_meta_txn_t *txn, void *ctx)
{
    bucket_new_t *bn = ctx;
    cn_objects_req_t *rq = bn->rq;
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_NAME_TAKEN], "s", bn->name);
    if (err == CN_META_ROW)
        err = cn__fail(rq, CN_E_EXISTS, CN_OBJ_WHAT_BUCKET, "bucket %s already exists", bn->name);
    if (err >= 0)
        err = cn__next_bucket_id(txn, &bn->id);
    if (err >= 0) {
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_INSERT], "issit", bn->id, bn->name,
                            bn->owner, bn->now, (const char *)(bn->acl->len ? bn->acl->data : NULL),
                            bn->acl->len);
        if (err == CN_E_EXISTS)
            cn__fail(rq, CN_E_EXISTS, CN_OBJ_WHAT_BUCKET, "bucket %s already exists", bn->name);
    }
    for (size_t i = 0; err >= 0 && i < bn->nsettings; i++)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR_UPSERT], "isb", bn->id,
                            bn->settings[i].key, (const void *)bn->settings[i].value,
                            strlen(bn->settings[i].value));
    return err < 0 ? err : CN_OK;
}

static bool obj_attr_name_ok(const char *name);

/* The settings of a create: valid names and values, at most 16, and the
 * token's bucket:configure.  CN_E_INVALID / CN_E_DENIED with rq set, or 0. */
static cn_err_t bucket_settings_check(cn_objects_req_t *rq, const cn_objects_kv_t *settings,
                                      size_t n)
{
    if (n > 16)
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "too many initial settings");
    for (size_t i = 0; i < n; i++)
        if (!obj_attr_name_ok(settings[i].key) || !settings[i].value ||
            strlen(settings[i].value) > (1u << 20))
            return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_SETTING_NAME_INVALID,
                              "bad initial setting");
    if (n && rq->principal && !cn_perms_allow(rq->principal->perms, CN_PERM_BUCKET_CONFIGURE))
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_BUCKET,
                        "token of %s lacks bucket:configure for a bucket's settings",
                        rq->principal->account);
    return 0;
}

cn_err_t cn_objects_bucket_create(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                                  const cn_authz_acl_t *acl, cn_bucket_info_t *out)
{
    return cn_objects_bucket_create_with(o, rq, name, acl, NULL, 0, out);
}

cn_err_t cn_objects_bucket_create_with(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                                       const cn_authz_acl_t *acl, const cn_objects_kv_t *settings,
                                       size_t n, cn_bucket_info_t *out)
{
    cn_err_t err = cn__authorize(rq, NULL, CN_ACT_CREATE_BUCKET, NULL, NULL, NULL);
    if (err >= 0)
        err = bucket_settings_check(rq, settings, n);
    if (err < 0)
        return err;
    const char *owner = cn__principal_name(rq);
    if (!owner)
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE, "anonymous callers own nothing");
    if (!cn_objects_bucket_name_ok(name))
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_NAME_INVALID,
                          "invalid bucket name");
    cn_buf_t acl_text = { 0 };
    if (acl) {
        err = cn__acl_for_put(acl, owner, &acl_text);
        if (err < 0)
            return err;
    }
    bucket_new_t bn = { rq, name, owner, &acl_text, cn_wall_ms(), 0, settings, n };
    size_t slot = cn__gen_slot(name); /* a settings run (gen.c, invariant 6) */
    cn__gen_senter(o->gen, slot);
    err = cn__write_run(o, name, CN_META_RUN_WRITE | CN_META_RETRY, bucket_create_body, &bn);
    cn__gen_sleave(o->gen, slot);
    if (err >= 0 && out) {
        cn__bkt_t *b = NULL;
        err = cn__bkt_build(bn.id, 0, name, owner, bn.now,
                            acl_text.len ? (const char *)acl_text.data : NULL, acl_text.len, NULL,
                            0, -1, &b);
        if (err >= 0)
            obj_bucket_info(b, out);
        cn__bkt_release(b);
    }
    cn_buf_free(&acl_text);
    return err;
}

/* A write run that may change a bucket's existence, owner or a named
 * setting: cn__bkt_run between the enter and the leave of the bucket's
 * settings word, which wrap the write word's (gen.c, invariant 6). */
static cn_err_t settings_run(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                             cn_authz_action_t act, cn__bkt_body_fn body, void *ctx)
{
    size_t slot = cn__gen_slot(bucket);
    cn__gen_senter(o->gen, slot);
    cn_err_t err = cn__bkt_run(o, rq, bucket, act, CN_META_RUN_WRITE | CN_META_RETRY, body, ctx);
    cn__gen_sleave(o->gen, slot);
    return err;
}

static cn_err_t bucket_delete_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                   void *ctx)
{
    (void)ctx;
    cn_err_t err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_HAS_VERSION], "i", b->id);
    /* Noncurrent versions and delete markers keep it non-empty too. */
    if (err == CN_META_DONE)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_V_BUCKET_HAS_HISTORY], "i", b->id);
    if (err == CN_META_ROW)
        err = cn__fail(rq, CN_E_NOT_EMPTY, CN_OBJ_WHAT_BUCKET, "bucket %s is not empty", b->name);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_PARTS_DELETE], "i", b->id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_UPLOADS_DELETE], "i", b->id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTRS_DELETE], "i", b->id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_LC_STATE_DELETE], "i", b->id);
    /* Its usage totals (all zero: it is empty) go with it. */
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_USAGE_DELETE], "i", b->id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_USAGE_DELTA_DELETE], "i", b->id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_DELETE], "i", b->id);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_bucket_delete(cn_objects_t *o, cn_objects_req_t *rq, const char *name)
{
    return settings_run(o, rq, name, CN_ACT_DELETE_BUCKET, bucket_delete_body, NULL);
}

static cn_err_t bucket_head_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                 void *ctx)
{
    (void)txn;
    (void)rq;
    if (ctx)
        obj_bucket_info(b, ctx);
    return CN_OK;
}

cn_err_t cn_objects_bucket_head(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                                cn_bucket_info_t *out)
{
    return cn__bkt_run(o, rq, name, CN_ACT_LIST_BUCKET, CN_META_RUN_READ | CN_META_RETRY,
                       bucket_head_body, out);
}

/* A listing of owner's buckets, read into rows (each a cn_bucket_info_t)
 * and handed to the caller's fn after the run, so that a repeated run
 * (CN_META_RETRY) hands each bucket once. */
typedef struct bucket_walk {
    cn_objects_t *o;
    const char *owner;
    cn_buf_t rows;
} bucket_walk_t;

static cn_err_t bucket_list_body(cn_meta_txn_t *txn, void *ctx)
{
    bucket_walk_t *bw = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&bw->rows); /* an earlier attempt's rows */
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_BUCKETS_OF_OWNER], "s", bw->owner);
    if (err < 0)
        return err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        /* The cached compiled bucket when current, else compiled here (a
         * listing is no reason to fill the cache). */
        size_t nl = 0, al = 0, pl = 0;
        const char *n = cn_meta_column_text(st, 1, &nl);
        char name[CN_BUCKET_NAME_MAX + 1];
        cn__strcpy(name, sizeof name, n, nl);
        int64_t id = cn_meta_column_int64(st, 0), gen = cn_meta_column_int64(st, 3);
        cn_cent_t *e = cn_cache_find(&bw->o->buckets, name, strlen(name), id, gen);
        cn__bkt_t *b = (cn__bkt_t *)e;
        if (!e) {
            const char *acl = cn_meta_column_text(st, 4, &al);
            const char *pol = cn_meta_column_text(st, 5, &pl);
            int64_t pab = cn_meta_column_is_null(st, 6) ? -1 : cn_meta_column_int64(st, 6);
            err = cn__bkt_build(id, gen, name, bw->owner, cn_meta_column_int64(st, 2), acl, al, pol,
                                pl, pab, &b);
            if (err < 0)
                break;
        }
        cn_bucket_info_t info;
        obj_bucket_info(b, &info);
        cn__bkt_release(b);
        err = cn_buf_append(&bw->rows, &info, sizeof info);
        if (err != 0)
            break;
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_objects_bucket_list(cn_objects_t *o, cn_objects_req_t *rq, cn_objects_bucket_fn fn,
                                void *arg)
{
    cn_err_t err = cn__authorize(rq, NULL, CN_ACT_LIST_ALL_MY_BUCKETS, NULL, NULL, NULL);
    if (err < 0)
        return err;
    const char *owner = cn__principal_name(rq);
    if (!owner)
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE, "anonymous callers own no bucket");
    bucket_walk_t bw = { o, owner, { 0 } };
    err = cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RETRY, bucket_list_body, &bw);
    for (size_t off = 0; err == 0 && off < bw.rows.len; off += sizeof(cn_bucket_info_t)) {
        cn_bucket_info_t info;
        memcpy(&info, bw.rows.data + off, sizeof info);
        err = fn(arg, &info);
    }
    cn_buf_free(&bw.rows);
    return err;
}

/* ---- access state ------------------------------------------------------------------ */

/* A caller's buffer that a body appends to: emptied back to start when a
 * repeated run begins. */
typedef struct text_out {
    cn_buf_t *buf; /* NULL = none */
    size_t start;
} text_out_t;

static text_out_t text_out(cn_buf_t *buf)
{
    return (text_out_t){ buf, buf ? buf->len : 0 };
}

static void text_out_reset(const text_out_t *t)
{
    if (t->buf)
        t->buf->len = t->start;
}

static cn_err_t obj_acl_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                               void *arg)
{
    (void)txn;
    (void)rq;
    cn_authz_acl_t *out = arg;
    if (b->has_acl)
        *out = *b->acl;
    else
        return cn_authz_acl_canned(out, "private", 7, b->owner, NULL, true);
    return 0;
}

cn_err_t cn_objects_bucket_acl_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   cn_authz_acl_t *out)
{
    return cn__bkt_run(o, rq, bucket, CN_ACT_GET_BUCKET_ACL, CN_META_RUN_READ | CN_META_RETRY,
                       obj_acl_get_fn, out);
}

static cn_err_t obj_acl_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                               void *arg)
{
    const cn_authz_acl_t *acl = arg;
    cn_buf_t text = { 0 };
    cn_err_t err = cn__pab_put_acl(rq, b, acl);
    if (err >= 0)
        err = cn__acl_for_put(acl, b->owner, &text);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_SET_ACL], "ti",
                            (const char *)text.data, text.len, b->id);
    cn_buf_free(&text);
    return err;
}

cn_err_t cn_objects_bucket_acl_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const cn_authz_acl_t *acl)
{
    if (!acl)
        return CN_E_INVALID;
    return cn__bkt_run(o, rq, bucket, CN_ACT_PUT_BUCKET_ACL, CN_META_RUN_WRITE | CN_META_RETRY,
                       obj_acl_set_fn, (void *)acl);
}

typedef struct {
    cn_authz_visibility_t vis;
} cn_obj_vis_arg_t;

static cn_err_t obj_vis_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *arg)
{
    cn_obj_vis_arg_t *a = arg;
    cn_authz_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return -ENOMEM;
    cn_err_t err = cn_authz_visibility_acl(a->vis, b->owner, acl);
    if (err >= 0)
        err = obj_acl_set_fn(txn, rq, b, acl);
    free(acl);
    return err;
}

cn_err_t cn_objects_bucket_set_visibility(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          cn_authz_visibility_t vis)
{
    cn_obj_vis_arg_t a = { vis };
    return cn__bkt_run(o, rq, bucket, CN_ACT_PUT_BUCKET_ACL, CN_META_RUN_WRITE | CN_META_RETRY,
                       obj_vis_fn, &a);
}

static cn_err_t obj_policy_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                  void *arg)
{
    const text_out_t *out = arg;
    text_out_reset(out);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_BUCKET_POLICY], "i", b->id);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t len = 0;
        const char *p = cn_meta_column_text(st, 0, &len);
        if (!p)
            err = cn__fail_d(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_ARG, CN_OBJ_SETTING_UNSET,
                             "the bucket has no policy");
        else
            err = cn_buf_append(out->buf, p, len);
    } else if (err == CN_META_DONE) {
        err = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_objects_bucket_policy_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                      cn_buf_t *json)
{
    text_out_t out = text_out(json);
    return cn__bkt_run(o, rq, bucket, CN_ACT_GET_BUCKET_POLICY, CN_META_RUN_READ | CN_META_RETRY,
                       obj_policy_get_fn, &out);
}

typedef struct {
    const char *json;
    size_t len;
} cn_obj_text_arg_t;

static cn_err_t obj_policy_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                  void *arg)
{
    const char *sql = cn__sql_obj[CN_SQL_OBJ_BUCKET_SET_POLICY];
    cn_obj_text_arg_t *a = arg;
    if (!a->json)
        return cn_meta_execf(txn, sql, "ni", b->id);
    if (a->len > CN_AUTHZ_POLICY_MAX)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_POLICY_INVALID,
                          "policy larger than %d bytes", CN_AUTHZ_POLICY_MAX);
    char why[CN_AUTHZ_ERR_MAX] = "";
    cn_authz_policy_t *p = NULL;
    cn_err_t err = cn_authz_policy_parse(a->json, a->len, b->name, &p, why);
    if (err < 0)
        return err == -ENOMEM ? err
                              : cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_POLICY_INVALID,
                                           "%s", why);
    err = cn_authz_pab_check_policy(b->has_pab ? &b->pab : NULL, p);
    cn_authz_policy_free(p);
    if (err < 0)
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE,
                        "the public access block refuses a public policy");
    return cn_meta_execf(txn, sql, "ti", a->json, a->len, b->id);
}

cn_err_t cn_objects_bucket_policy_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                      const char *json, size_t len)
{
    cn_obj_text_arg_t a = { json, len };
    return cn__bkt_run(o, rq, bucket, json ? CN_ACT_PUT_BUCKET_POLICY : CN_ACT_DELETE_BUCKET_POLICY,
                       CN_META_RUN_WRITE | CN_META_RETRY, obj_policy_set_fn, &a);
}

static cn_err_t obj_pab_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                               void *arg)
{
    (void)txn;
    if (!b->has_pab)
        return cn__fail_d(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_ARG, CN_OBJ_SETTING_UNSET,
                          "no public access block is set");
    *(cn_authz_pab_t *)arg = b->pab;
    return 0;
}

cn_err_t cn_objects_bucket_pab_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   cn_authz_pab_t *out)
{
    return cn__bkt_run(o, rq, bucket, CN_ACT_GET_BUCKET_PUBLIC_ACCESS_BLOCK,
                       CN_META_RUN_READ | CN_META_RETRY, obj_pab_get_fn, out);
}

static cn_err_t obj_pab_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                               void *arg)
{
    (void)rq;
    const char *sql = cn__sql_obj[CN_SQL_OBJ_BUCKET_SET_PAB];
    const cn_authz_pab_t *p = arg;
    if (!p)
        return cn_meta_execf(txn, sql, "ni", b->id);
    int64_t bits = (p->block_public_acls ? 1 : 0) | (p->ignore_public_acls ? 2 : 0) |
                   (p->block_public_policy ? 4 : 0) | (p->restrict_public_buckets ? 8 : 0);
    return cn_meta_execf(txn, sql, "ii", bits, b->id);
}

cn_err_t cn_objects_bucket_pab_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const cn_authz_pab_t *pab)
{
    return cn__bkt_run(o, rq, bucket, CN_ACT_PUT_BUCKET_PUBLIC_ACCESS_BLOCK,
                       CN_META_RUN_WRITE | CN_META_RETRY, obj_pab_set_fn, (void *)pab);
}

typedef struct {
    const char *name;
    const void *value;
    size_t len;
    text_out_t out;
} cn_obj_attr_arg_t;

static cn_err_t obj_attr_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                void *arg)
{
    cn_obj_attr_arg_t *a = arg;
    text_out_reset(&a->out);
    cn_err_t err = cn__bkt_setting(txn, b, b->id, a->name, a->out.buf);
    if (err == 0)
        err = cn__fail_d(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_ARG, CN_OBJ_SETTING_UNSET, "%s is not set",
                         a->name);
    return err < 0 ? err : 0;
}

static cn_err_t obj_attr_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                void *arg)
{
    (void)rq;
    cn_obj_attr_arg_t *a = arg;
    cn_err_t err = a->value ? cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR_UPSERT], "isb",
                                            b->id, a->name, a->value, a->len)
                            : cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR_DELETE], "is",
                                            b->id, a->name);
    /* The generation moves with the setting, in this transaction (cache.c). */
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_GEN_BUMP], "i", b->id);
    return err < 0 ? err : CN_OK;
}

static bool obj_attr_name_ok(const char *name)
{
    return name && name[0] && strlen(name) <= 64;
}

cn_err_t cn_objects_bucket_attr_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *name, cn_authz_action_t action, cn_buf_t *value)
{
    if (!obj_attr_name_ok(name))
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_SETTING_NAME_INVALID,
                          "bad setting name");
    cn_obj_attr_arg_t a = { name, NULL, 0, text_out(value) };
    return cn__bkt_run(o, rq, bucket, action, CN_META_RUN_READ | CN_META_RETRY, obj_attr_get_fn,
                       &a);
}

cn_err_t cn_objects_bucket_attr_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *name, cn_authz_action_t action, const void *value,
                                    size_t len)
{
    if (!obj_attr_name_ok(name))
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_SETTING_NAME_INVALID,
                          "bad setting name");
    if (value && len > (1u << 20))
        return cn__fail(rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG, "setting larger than 1 MiB");
    cn_obj_attr_arg_t a = { name, value ? value : NULL, len, { NULL, 0 } };
    /* A zero-length value is still a value: bind it as an empty blob. */
    static const uint8_t empty[1];
    if (value && !len)
        a.value = empty;
    return settings_run(o, rq, bucket, action, obj_attr_set_fn, &a);
}

/* ---- unauthorized facts for a face ----------------------------------------------- */

/* What a peek reports: the owner (when owner is not NULL) and, when attr is
 * not NULL, whether it is set (*has_attr) and its value. */
typedef struct bucket_peek {
    char *owner;
    const char *attr;
    bool *has_attr;
    text_out_t value;
} bucket_peek_t;

static cn_err_t bucket_peek_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                 void *ctx)
{
    (void)rq;
    const bucket_peek_t *pk = ctx;
    if (pk->owner)
        cn__strcpy(pk->owner, CN_ACCOUNT_NAME_MAX + 1, b->owner, strlen(b->owner));
    if (!pk->attr)
        return CN_OK;
    text_out_reset(&pk->value);
    cn_err_t err = cn__bkt_setting(txn, b, b->id, pk->attr, pk->value.buf);
    *pk->has_attr = err > 0;
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_bucket_peek(cn_objects_t *o, const char *bucket,
                                char owner[CN_ACCOUNT_NAME_MAX + 1], const char *attr,
                                cn_buf_t *value, bool *has_attr)
{
    if (owner && !attr)
        return cn__bkt_owner(o, bucket, owner); /* cached per settings generation */
    return cn__bkt_peek_sql(o, bucket, owner, attr, value, has_attr);
}

cn_err_t cn__bkt_peek_sql(cn_objects_t *o, const char *bucket, char owner[CN_ACCOUNT_NAME_MAX + 1],
                          const char *attr, cn_buf_t *value, bool *has_attr)
{
    if (has_attr)
        *has_attr = false;
    if (owner)
        owner[0] = 0;
    if (attr && (!obj_attr_name_ok(attr) || !value || !has_attr))
        return CN_E_INVALID;
    cn_objects_req_t rq;
    memset(&rq, 0, sizeof rq);
    bucket_peek_t pk = { owner, attr, has_attr, text_out(value) };
    return cn__bkt_run(o, &rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                       bucket_peek_body, &pk);
}

/* The key whose owner a peek asks for, and where the answer goes. */
typedef struct owner_peek {
    const char *key;
    char *owner;
} owner_peek_t;

static cn_err_t owner_peek_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                void *ctx)
{
    (void)rq;
    const owner_peek_t *op = ctx;
    cn__objacl_t acl = { 0 };
    int64_t vid = 0;
    cn_err_t err = cn__version_find(txn, b->id, op->key, &vid, NULL, &acl);
    if (err >= 0 && !vid)
        err = CN_E_NOT_FOUND;
    if (err >= 0)
        snprintf(op->owner, CN_ACCOUNT_NAME_MAX + 1, "%s", acl.owner);
    cn__objacl_free(&acl);
    return err;
}

cn_err_t cn_objects_object_peek_owner(cn_objects_t *o, const char *bucket, const char *key,
                                      char owner[CN_ACCOUNT_NAME_MAX + 1])
{
    owner[0] = 0;
    if (!cn_objects_key_ok(key, key ? strlen(key) : 0))
        return CN_E_INVALID;
    cn_objects_req_t rq;
    memset(&rq, 0, sizeof rq);
    owner_peek_t op = { key, owner };
    return cn__bkt_run(o, &rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                       owner_peek_body, &op);
}
