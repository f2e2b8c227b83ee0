/* Buckets: create, delete, head, list, and the access state stored with each
 * (ACL, policy, public access block, generic named settings). */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cn_err_t cn_obj_begin(cn_objects_t *o, cn_meta_mode_t mode, cn_meta_txn_t **txn)
{
    return cn_meta_begin(o->meta, mode, txn);
}

static cn_err_t cn_obj_finish(cn_meta_txn_t *txn, cn_meta_mode_t mode, cn_err_t err)
{
    if (err < 0 || mode == CN_META_READ) {
        cn_meta_rollback(txn);
        return err;
    }
    return cn_meta_commit(txn);
}

static void cn_obj_bucket_info(const cn__bkt_t *b, cn_bucket_info_t *out)
{
    memset(out, 0, sizeof *out);
    out->bucket_id = b->id;
    snprintf(out->name, sizeof out->name, "%s", b->name);
    snprintf(out->owner, sizeof out->owner, "%s", b->owner);
    out->created_ms = b->created_ms;
    cn_authz_bucket_t v;
    cn__bkt_view(b, &v);
    out->visibility = cn_authz_visibility(&v);
}

cn_err_t cn_objects_bucket_create(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                                  const cn_authz_acl_t *acl, cn_bucket_info_t *out)
{
    cn_err_t err = cn__authorize(rq, NULL, CN_ACT_CREATE_BUCKET, NULL, NULL, NULL);
    if (err < 0)
        return err;
    const char *owner = cn__principal_name(rq);
    if (!owner)
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE, "anonymous callers own nothing");
    if (!cn_objects_bucket_name_ok(name))
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_BUCKET, "invalid bucket name");
    cn_buf_t acl_text = {0};
    if (acl) {
        err = cn__acl_for_put(acl, owner, &acl_text);
        if (err < 0)
            return err;
    }
    cn_meta_txn_t *txn = NULL;
    err = cn_obj_begin(o, CN_META_WRITE, &txn);
    if (err < 0)
        goto out;
    cn_meta_stmt_t *st = NULL;
    err = cn_meta_prepare(txn, "SELECT 1 FROM obj_bucket WHERE name = ?", &st);
    if (err >= 0) {
        cn_meta_bind_str(st, 1, name);
        err = cn_meta_step(st);
        cn_meta_finish(st);
        if (err == CN_META_ROW)
            err = cn__fail(rq, CN_E_EXISTS, CN_OBJ_WHAT_BUCKET, "bucket %s already exists", name);
    }
    int64_t id = 0, now = cn__now_ms();
    if (err >= 0)
        err = cn__next_id(txn, "bucket", &id);
    if (err >= 0)
        err = cn_meta_prepare(txn,
            "INSERT INTO obj_bucket (bucket_id, name, owner, created_ms, acl, policy, pab) "
            "VALUES (?, ?, ?, ?, ?, NULL, NULL)", &st);
    if (err >= 0) {
        cn_meta_bind_int64(st, 1, id);
        cn_meta_bind_str(st, 2, name);
        cn_meta_bind_str(st, 3, owner);
        cn_meta_bind_int64(st, 4, now);
        if (acl_text.len)
            cn_meta_bind_text(st, 5, (const char *)acl_text.data, acl_text.len);
        else
            cn_meta_bind_null(st, 5);
        err = cn_meta_step(st);
        cn_meta_finish(st);
        if (err == CN_E_EXISTS)
            cn__fail(rq, CN_E_EXISTS, CN_OBJ_WHAT_BUCKET, "bucket %s already exists", name);
    }
    err = cn_obj_finish(txn, CN_META_WRITE, err < 0 ? err : 0);
    if (err >= 0 && out) {
        cn__bkt_t b;
        memset(&b, 0, sizeof b);
        b.id = id;
        snprintf(b.name, sizeof b.name, "%s", name);
        snprintf(b.owner, sizeof b.owner, "%s", owner);
        b.created_ms = now;
        if (acl_text.len && cn__acl_load((const char *)acl_text.data, acl_text.len, &b.acl) >= 0)
            b.has_acl = true;
        cn_obj_bucket_info(&b, out);
        cn__bkt_free(&b);
    }
out:
    cn_buf_free(&acl_text);
    return err;
}

static cn_err_t cn_obj_exec_id(cn_meta_txn_t *txn, const char *sql, int64_t id)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, sql, &st);
    if (err < 0)
        return err;
    cn_meta_bind_int64(st, 1, id);
    err = cn_meta_step(st);
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_objects_bucket_delete(cn_objects_t *o, cn_objects_req_t *rq, const char *name)
{
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_obj_begin(o, CN_META_WRITE, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, name, &b);
    if (err < 0)
        goto out;
    err = cn__authorize(rq, &b, CN_ACT_DELETE_BUCKET, NULL, NULL, NULL);
    if (err >= 0) {
        err = cn_obj_exec_id(txn, "SELECT 1 FROM obj_version WHERE bucket_id = ? LIMIT 1", b.id);
        if (err == CN_META_ROW)
            err = cn__fail(rq, CN_E_NOT_EMPTY, CN_OBJ_WHAT_BUCKET, "bucket %s is not empty", name);
    }
    if (err >= 0)
        err = cn_obj_exec_id(txn, "DELETE FROM obj_part WHERE upload_id IN "
                                  "(SELECT upload_id FROM obj_upload WHERE bucket_id = ?)", b.id);
    if (err >= 0)
        err = cn_obj_exec_id(txn, "DELETE FROM obj_upload WHERE bucket_id = ?", b.id);
    if (err >= 0)
        err = cn_obj_exec_id(txn, "DELETE FROM obj_bucket_attr WHERE bucket_id = ?", b.id);
    if (err >= 0)
        err = cn_obj_exec_id(txn, "DELETE FROM obj_bucket WHERE bucket_id = ?", b.id);
    cn__bkt_free(&b);
out:
    return cn_obj_finish(txn, CN_META_WRITE, err < 0 ? err : 0);
}

cn_err_t cn_objects_bucket_head(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                                cn_bucket_info_t *out)
{
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_obj_begin(o, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, name, &b);
    if (err >= 0) {
        err = cn__authorize(rq, &b, CN_ACT_LIST_BUCKET, NULL, NULL, NULL);
        if (err >= 0 && out)
            cn_obj_bucket_info(&b, out);
        cn__bkt_free(&b);
    }
    return cn_obj_finish(txn, CN_META_READ, err);
}

cn_err_t cn_objects_bucket_list(cn_objects_t *o, cn_objects_req_t *rq,
                                cn_objects_bucket_fn fn, void *arg)
{
    cn_err_t err = cn__authorize(rq, NULL, CN_ACT_LIST_ALL_MY_BUCKETS, NULL, NULL, NULL);
    if (err < 0)
        return err;
    const char *owner = cn__principal_name(rq);
    if (!owner)
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE, "anonymous callers own no bucket");
    cn_meta_txn_t *txn = NULL;
    err = cn_obj_begin(o, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn_meta_stmt_t *st = NULL;
    err = cn_meta_prepare(txn,
        "SELECT bucket_id, name, created_ms, acl, policy, pab FROM obj_bucket "
        "WHERE owner = ? ORDER BY name", &st);
    if (err < 0)
        goto out;
    cn_meta_bind_str(st, 1, owner);
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        cn__bkt_t b;
        memset(&b, 0, sizeof b);
        b.id = cn_meta_column_int64(st, 0);
        const char *n = cn_meta_column_text(st, 1, NULL);
        snprintf(b.name, sizeof b.name, "%s", n ? n : "");
        snprintf(b.owner, sizeof b.owner, "%s", owner);
        b.created_ms = cn_meta_column_int64(st, 2);
        size_t len = 0;
        const char *acl = cn_meta_column_text(st, 3, &len);
        if (acl && cn__acl_load(acl, len, &b.acl) >= 0)
            b.has_acl = true;
        const char *pol = cn_meta_column_text(st, 4, &len);
        if (pol)
            cn_authz_policy_parse(pol, len, b.name, &b.policy, NULL);
        cn_bucket_info_t info;
        cn_obj_bucket_info(&b, &info);
        cn__bkt_free(&b);
        err = fn(arg, &info);
        if (err != 0)
            break;
    }
    cn_meta_finish(st);
out:
    return cn_obj_finish(txn, CN_META_READ, err);
}

/* ---- access state ------------------------------------------------------------------ */

/* Runs fn(txn, bucket) after loading the bucket and authorizing act, in a
 * transaction of the given mode. */
typedef cn_err_t (*cn_obj_bucket_op_fn)(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                        void *arg);

static cn_err_t cn_obj_bucket_op(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                 cn_authz_action_t act, cn_meta_mode_t mode,
                                 cn_obj_bucket_op_fn fn, void *arg)
{
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_obj_begin(o, mode, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err >= 0) {
        err = cn__authorize(rq, &b, act, NULL, NULL, NULL);
        if (err >= 0)
            err = fn(txn, rq, &b, arg);
        cn__bkt_free(&b);
    }
    return cn_obj_finish(txn, mode, err < 0 ? err : 0);
}

static cn_err_t cn_obj_set_column(cn_meta_txn_t *txn, const char *sql, int64_t id,
                                  const void *text, size_t len)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, sql, &st);
    if (err < 0)
        return err;
    if (text)
        cn_meta_bind_text(st, 1, text, len);
    else
        cn_meta_bind_null(st, 1);
    cn_meta_bind_int64(st, 2, id);
    err = cn_meta_step(st);
    cn_meta_finish(st);
    return err;
}

static cn_err_t cn_obj_acl_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
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
    return cn_obj_bucket_op(o, rq, bucket, CN_ACT_GET_BUCKET_ACL, CN_META_READ,
                            cn_obj_acl_get_fn, out);
}

static cn_err_t cn_obj_acl_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                  void *arg)
{
    const cn_authz_acl_t *acl = arg;
    cn_buf_t text = {0};
    cn_err_t err = cn__pab_put_acl(rq, b, acl);
    if (err >= 0)
        err = cn__acl_for_put(acl, b->owner, &text);
    if (err >= 0)
        err = cn_obj_set_column(txn, "UPDATE obj_bucket SET acl = ? WHERE bucket_id = ?", b->id,
                                text.data, text.len);
    cn_buf_free(&text);
    return err;
}

cn_err_t cn_objects_bucket_acl_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const cn_authz_acl_t *acl)
{
    if (!acl)
        return CN_E_INVALID;
    return cn_obj_bucket_op(o, rq, bucket, CN_ACT_PUT_BUCKET_ACL, CN_META_WRITE,
                            cn_obj_acl_set_fn, (void *)acl);
}

typedef struct {
    cn_authz_visibility_t vis;
} cn_obj_vis_arg_t;

static cn_err_t cn_obj_vis_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b, void *arg)
{
    cn_obj_vis_arg_t *a = arg;
    cn_authz_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return -ENOMEM;
    cn_err_t err = cn_authz_visibility_acl(a->vis, b->owner, acl);
    if (err >= 0)
        err = cn_obj_acl_set_fn(txn, rq, b, acl);
    free(acl);
    return err;
}

cn_err_t cn_objects_bucket_set_visibility(cn_objects_t *o, cn_objects_req_t *rq,
                                          const char *bucket, cn_authz_visibility_t vis)
{
    cn_obj_vis_arg_t a = {vis};
    return cn_obj_bucket_op(o, rq, bucket, CN_ACT_PUT_BUCKET_ACL, CN_META_WRITE, cn_obj_vis_fn,
                            &a);
}

static cn_err_t cn_obj_policy_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                     void *arg)
{
    cn_buf_t *out = arg;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, "SELECT policy FROM obj_bucket WHERE bucket_id = ?", &st);
    if (err < 0)
        return err;
    cn_meta_bind_int64(st, 1, b->id);
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t len = 0;
        const char *p = cn_meta_column_text(st, 0, &len);
        if (!p)
            err = cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_ARG, "the bucket has no policy");
        else
            err = cn_buf_append(out, p, len);
    } else if (err == CN_META_DONE) {
        err = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_objects_bucket_policy_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                      cn_buf_t *json)
{
    return cn_obj_bucket_op(o, rq, bucket, CN_ACT_GET_BUCKET_POLICY, CN_META_READ,
                            cn_obj_policy_get_fn, json);
}

typedef struct {
    const char *json;
    size_t len;
} cn_obj_text_arg_t;

static cn_err_t cn_obj_policy_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                     void *arg)
{
    cn_obj_text_arg_t *a = arg;
    if (!a->json)
        return cn_obj_set_column(txn, "UPDATE obj_bucket SET policy = ? WHERE bucket_id = ?",
                                 b->id, NULL, 0);
    if (a->len > CN_AUTHZ_POLICY_MAX)
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "policy larger than %d bytes",
                        CN_AUTHZ_POLICY_MAX);
    char why[CN_AUTHZ_ERR_MAX] = "";
    cn_authz_policy_t *p = NULL;
    cn_err_t err = cn_authz_policy_parse(a->json, a->len, b->name, &p, why);
    if (err < 0)
        return err == -ENOMEM ? err : cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "%s", why);
    err = cn_authz_pab_check_policy(b->has_pab ? &b->pab : NULL, p);
    cn_authz_policy_free(p);
    if (err < 0)
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_NONE,
                        "the public access block refuses a public policy");
    return cn_obj_set_column(txn, "UPDATE obj_bucket SET policy = ? WHERE bucket_id = ?", b->id,
                             a->json, a->len);
}

cn_err_t cn_objects_bucket_policy_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                      const char *json, size_t len)
{
    cn_obj_text_arg_t a = {json, len};
    return cn_obj_bucket_op(o, rq, bucket,
                            json ? CN_ACT_PUT_BUCKET_POLICY : CN_ACT_DELETE_BUCKET_POLICY,
                            CN_META_WRITE, cn_obj_policy_set_fn, &a);
}

static cn_err_t cn_obj_pab_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                  void *arg)
{
    (void)txn;
    if (!b->has_pab)
        return cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_ARG, "no public access block is set");
    *(cn_authz_pab_t *)arg = b->pab;
    return 0;
}

cn_err_t cn_objects_bucket_pab_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   cn_authz_pab_t *out)
{
    return cn_obj_bucket_op(o, rq, bucket, CN_ACT_GET_BUCKET_PUBLIC_ACCESS_BLOCK, CN_META_READ,
                            cn_obj_pab_get_fn, out);
}

static cn_err_t cn_obj_pab_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                  void *arg)
{
    (void)rq;
    const cn_authz_pab_t *p = arg;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, "UPDATE obj_bucket SET pab = ? WHERE bucket_id = ?", &st);
    if (err < 0)
        return err;
    if (p)
        cn_meta_bind_int64(st, 1, (p->block_public_acls ? 1 : 0) | (p->ignore_public_acls ? 2 : 0) |
                                  (p->block_public_policy ? 4 : 0) |
                                  (p->restrict_public_buckets ? 8 : 0));
    else
        cn_meta_bind_null(st, 1);
    cn_meta_bind_int64(st, 2, b->id);
    err = cn_meta_step(st);
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_objects_bucket_pab_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const cn_authz_pab_t *pab)
{
    return cn_obj_bucket_op(o, rq, bucket, CN_ACT_PUT_BUCKET_PUBLIC_ACCESS_BLOCK, CN_META_WRITE,
                            cn_obj_pab_set_fn, (void *)pab);
}

typedef struct {
    const char *name;
    const void *value;
    size_t len;
    cn_buf_t *out;
} cn_obj_attr_arg_t;

static cn_err_t cn_obj_attr_get_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                   void *arg)
{
    cn_obj_attr_arg_t *a = arg;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn,
        "SELECT value FROM obj_bucket_attr WHERE bucket_id = ? AND name = ?", &st);
    if (err < 0)
        return err;
    cn_meta_bind_int64(st, 1, b->id);
    cn_meta_bind_str(st, 2, a->name);
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t len = 0;
        const void *p = cn_meta_column_blob(st, 0, &len);
        err = p ? cn_buf_append(a->out, p, len) : 0;
    } else if (err == CN_META_DONE) {
        err = cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_ARG, "%s is not set", a->name);
    }
    cn_meta_finish(st);
    return err;
}

static cn_err_t cn_obj_attr_set_fn(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__bkt_t *b,
                                   void *arg)
{
    (void)rq;
    cn_obj_attr_arg_t *a = arg;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err;
    if (!a->value) {
        err = cn_meta_prepare(txn, "DELETE FROM obj_bucket_attr WHERE bucket_id = ? AND name = ?",
                              &st);
        if (err < 0)
            return err;
        cn_meta_bind_int64(st, 1, b->id);
        cn_meta_bind_str(st, 2, a->name);
    } else {
        err = cn_meta_prepare(txn,
            "INSERT INTO obj_bucket_attr (bucket_id, name, value) VALUES (?, ?, ?) "
            "ON CONFLICT (bucket_id, name) DO UPDATE SET value = excluded.value", &st);
        if (err < 0)
            return err;
        cn_meta_bind_int64(st, 1, b->id);
        cn_meta_bind_str(st, 2, a->name);
        cn_meta_bind_blob(st, 3, a->value, a->len);
    }
    err = cn_meta_step(st);
    cn_meta_finish(st);
    return err;
}

static bool cn_obj_attr_name_ok(const char *name)
{
    return name && name[0] && strlen(name) <= 64;
}

cn_err_t cn_objects_bucket_attr_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *name, cn_authz_action_t action, cn_buf_t *value)
{
    if (!cn_obj_attr_name_ok(name))
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "bad setting name");
    cn_obj_attr_arg_t a = {name, NULL, 0, value};
    return cn_obj_bucket_op(o, rq, bucket, action, CN_META_READ, cn_obj_attr_get_fn, &a);
}

cn_err_t cn_objects_bucket_attr_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *name, cn_authz_action_t action, const void *value,
                                    size_t len)
{
    if (!cn_obj_attr_name_ok(name))
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "bad setting name");
    if (value && len > (1u << 20))
        return cn__fail(rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG, "setting larger than 1 MiB");
    cn_obj_attr_arg_t a = {name, value ? value : NULL, len, NULL};
    /* A zero-length value is still a value: bind it as an empty blob. */
    static const uint8_t empty[1];
    if (value && !len)
        a.value = empty;
    return cn_obj_bucket_op(o, rq, bucket, action, CN_META_WRITE, cn_obj_attr_set_fn, &a);
}

/* ---- unauthorized facts for a face ----------------------------------------------- */

cn_err_t cn_objects_bucket_peek(cn_objects_t *o, const char *bucket,
                                char owner[CN_ACCOUNT_NAME_MAX + 1], const char *attr,
                                cn_buf_t *value, bool *has_attr)
{
    if (has_attr)
        *has_attr = false;
    if (owner)
        owner[0] = 0;
    if (attr && (!cn_obj_attr_name_ok(attr) || !value || !has_attr))
        return CN_E_INVALID;
    cn_objects_req_t rq;
    memset(&rq, 0, sizeof rq);
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_obj_begin(o, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, &rq, bucket, &b);
    if (err >= 0) {
        if (owner)
            snprintf(owner, CN_ACCOUNT_NAME_MAX + 1, "%s", b.owner);
        if (attr) {
            cn_obj_attr_arg_t a = {attr, NULL, 0, value};
            err = cn_obj_attr_get_fn(txn, &rq, &b, &a);
            if (err >= 0)
                *has_attr = true;
            else if (err == CN_E_NOT_FOUND)
                err = 0;
        }
        cn__bkt_free(&b);
    }
    return cn_obj_finish(txn, CN_META_READ, err < 0 ? err : 0);
}

cn_err_t cn_objects_object_peek_owner(cn_objects_t *o, const char *bucket, const char *key,
                                      char owner[CN_ACCOUNT_NAME_MAX + 1])
{
    owner[0] = 0;
    if (!cn_objects_key_ok(key, key ? strlen(key) : 0))
        return CN_E_INVALID;
    cn_objects_req_t rq;
    memset(&rq, 0, sizeof rq);
    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_obj_begin(o, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    cn__objacl_t acl = {0};
    err = cn__bkt_load(txn, &rq, bucket, &b);
    if (err >= 0) {
        int64_t vid = 0;
        err = cn__version_find(txn, b.id, key, &vid, NULL, &acl);
        if (err >= 0 && !vid)
            err = CN_E_NOT_FOUND;
        if (err >= 0)
            snprintf(owner, CN_ACCOUNT_NAME_MAX + 1, "%s", acl.owner);
        cn__bkt_free(&b);
    }
    cn__objacl_free(&acl);
    return cn_obj_finish(txn, CN_META_READ, err < 0 ? err : 0);
}
