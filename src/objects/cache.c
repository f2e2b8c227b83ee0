/* What the read path keeps between requests, as entries of caches of
 * cairn/cache.h: bucket settings compiled once per change, and object ACLs
 * parsed once per distinct stored text.
 *
 * Buckets.  A cn__bkt_t holds a bucket's ACL parsed, its policy compiled,
 * its public access block decoded and (when small) its named settings, and
 * is valid for exactly one (bucket_id, gen).  obj_bucket.gen is bumped by the
 * same write transaction that changes any of those settings (the statements
 * in src/meta/sql/objects.c), so a reader that reads (bucket_id, gen) by name
 * in its own transaction and finds an entry of that version holds what that
 * transaction would have compiled from the row, whichever process made the
 * change.  bucket_id is never reused, so a bucket deleted and created again
 * never matches the old entry.
 *
 * Object ACLs.  Keyed by the stored text itself, so an entry can never be
 * stale: the same text always parses to the same ACL.
 *
 * This file must never decide access, and never keep an entry that was not
 * read in a transaction of the version it is filed under. */
#include "objects_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- buckets --------------------------------------------------------------------- */
static void bkt_destroy(cn_cent_t *e)
{
    cn__bkt_t *b = (cn__bkt_t *)e;
    free(b->acl);
    cn_authz_policy_free(b->policy);
    cn_buf_free(&b->attrs);
    free(b);
}

void cn__bkt_release(const cn__bkt_t *b)
{
    if (b)
        cn_cent_release((cn_cent_t *)&b->ent);
}

cn_err_t cn__bkt_build(int64_t id, int64_t gen, const char *name, const char *owner,
                       int64_t created_ms, const char *acl, size_t acl_len, const char *policy,
                       size_t policy_len, int64_t pab, cn__bkt_t **out)
{
    *out = NULL;
    cn__bkt_t *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    atomic_init(&b->ent.refs, 1);
    b->ent.destroy = bkt_destroy;
    b->id = id;
    b->gen = gen;
    cn__strcpy(b->name, sizeof b->name, name, strlen(name));
    cn__strcpy(b->owner, sizeof b->owner, owner, owner ? strlen(owner) : 0);
    b->created_ms = created_ms;
    b->ent.key = b->name;
    b->ent.klen = strlen(b->name);
    b->ent.hash = cn_cache_hash(b->ent.key, b->ent.klen);
    b->ent.v1 = id;
    b->ent.v2 = gen;
    /* A compiled policy holds its parsed JSON: about 8 bytes per byte of text. */
    b->ent.cost = sizeof *b + (acl ? sizeof *b->acl : 0) + policy_len * 8;
    cn_err_t err = 0;
    if (acl) {
        err = cn__acl_load(acl, acl_len, &b->acl);
        b->has_acl = err >= 0;
    }
    if (err >= 0 && policy) {
        err = cn_authz_policy_parse(policy, policy_len, b->name, &b->policy, NULL);
        if (err < 0 && err != -ENOMEM)
            err = CN_E_CORRUPT;
    }
    if (pab >= 0) {
        b->has_pab = true;
        b->pab.block_public_acls = pab & 1;
        b->pab.ignore_public_acls = pab & 2;
        b->pab.block_public_policy = pab & 4;
        b->pab.restrict_public_buckets = pab & 8;
    }
    if (err < 0) {
        bkt_destroy(&b->ent);
        return err;
    }
    *out = b;
    return 0;
}

/* Reads b's named settings in txn into b->attrs, unless they exceed
 * CN__BKT_ATTRS_MAX (then attrs_cached stays false). */
static cn_err_t bkt_attrs_load(cn_meta_txn_t *txn, cn__bkt_t *b)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTRS], "i", b->id);
    if (err < 0)
        return err;
    bool fits = true;
    while ((err = cn_meta_step(st)) == CN_META_ROW && fits) {
        size_t nl = 0, vl = 0;
        const char *n = cn_meta_column_text(st, 0, &nl);
        const void *v = cn_meta_column_blob(st, 1, &vl);
        fits = b->attrs.len + 8 + nl + vl <= CN__BKT_ATTRS_MAX;
        if (fits && ((err = cn_buf_put_u32be(&b->attrs, (uint32_t)nl)) < 0 ||
                     (err = cn_buf_append(&b->attrs, n, nl)) < 0 ||
                     (err = cn_buf_put_u32be(&b->attrs, (uint32_t)vl)) < 0 ||
                     (err = cn_buf_append(&b->attrs, v, vl)) < 0))
            break;
    }
    cn_meta_finish(st);
    if (err < 0)
        return err;
    if (!fits)
        cn_buf_free(&b->attrs);
    b->attrs_cached = fits;
    b->ent.cost += b->attrs.cap;
    return 0;
}

int cn__bkt_attr(const cn__bkt_t *b, const char *name, const void **value, size_t *len)
{
    size_t want = strlen(name);
    cn_rd_t r = cn_rd_init(b->attrs.data, b->attrs.len);
    while (!r.err && cn_rd_left(&r)) {
        uint32_t nl = cn_rd_u32be(&r);
        const uint8_t *n = cn_rd_bytes(&r, nl);
        uint32_t vl = cn_rd_u32be(&r);
        const uint8_t *v = cn_rd_bytes(&r, vl);
        if (!r.err && nl == want && !memcmp(n, name, nl)) {
            *value = v;
            *len = vl;
            return 1;
        }
    }
    return 0;
}

cn_err_t cn__bkt_setting(cn_meta_txn_t *txn, const cn__bkt_t *b, int64_t bucket_id,
                         const char *name, cn_buf_t *out)
{
    if (b && b->attrs_cached) {
        const void *v = NULL;
        size_t len = 0;
        if (!cn__bkt_attr(b, name, &v, &len))
            return 0;
        cn_err_t err = out && len ? cn_buf_append(out, v, len) : 0;
        return err < 0 ? err : 1;
    }
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR], "is", bucket_id, name);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t len = 0;
        const void *p = cn_meta_column_blob(st, 0, &len);
        err = out && p && len ? cn_buf_append(out, p, len) : 0;
        if (err >= 0)
            err = 1;
    } else if (err == CN_META_DONE) {
        err = 0;
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn__bkt_get(cn_objects_t *o, cn_meta_txn_t *txn, const char *name, int64_t id, int64_t gen,
                     const cn__bkt_t **out)
{
    cn_cent_t *e = cn_cache_find(&o->buckets, name, strlen(name), id, gen);
    if (e) {
        *out = (const cn__bkt_t *)e;
        return 0;
    }
    *out = NULL;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_BUCKET_SETTINGS], "i", id);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    cn__bkt_t *b = NULL;
    if (err == CN_META_ROW) {
        size_t al = 0, pl = 0;
        const char *acl = cn_meta_column_text(st, 2, &al);
        const char *pol = cn_meta_column_text(st, 3, &pl);
        int64_t pab = cn_meta_column_is_null(st, 4) ? -1 : cn_meta_column_int64(st, 4);
        err = cn__bkt_build(id, gen, name, cn_meta_column_text(st, 0, NULL),
                            cn_meta_column_int64(st, 1), acl, al, pol, pl, pab, &b);
    } else if (err == CN_META_DONE) {
        err = CN_E_CORRUPT; /* seen by name in this very snapshot */
    }
    cn_meta_finish(st);
    if (err >= 0)
        err = bkt_attrs_load(txn, b);
    if (err < 0) {
        cn__bkt_release(b);
        return err;
    }
    cn_cache_offer(&o->buckets, &b->ent);
    *out = b;
    return 0;
}

/* cn__bkt_load, and cn__bkt_load_peek when pk is not NULL. */
static cn_err_t bkt_load(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                         const char *name, const cn__bkt_t **out, cn__bkt_peek_t *pk)
{
    *out = NULL;
    if (!cn_objects_bucket_name_ok(name))
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_NAME_INVALID,
                          "invalid bucket name");
    bool rows = pk && o->gen && !cn__gen_local(o->gen);
    const char *key = pk && pk->key ? pk->key : "";
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = rows
                       ? cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_BUCKET_PEEK], "sib", name,
                                        (int64_t)cn__gen_slot(name), (const void *)key, strlen(key))
                       : cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_BUCKET_GEN], "s", name);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    int64_t id = 0, gen = 0;
    if (err == CN_META_ROW) {
        id = cn_meta_column_int64(st, 0);
        gen = cn_meta_column_int64(st, 1);
        if (rows) {
            int64_t sgen = cn_meta_column_int64(st, 2);
            pk->word = cn__gen_hstamp_rows(sgen, sgen).b;
            pk->key_seen = cn_meta_column_int64(st, 3) > 0;
        }
    }
    cn_meta_finish(st);
    if (err == CN_META_DONE)
        return cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, "bucket %s does not exist", name);
    if (err < 0)
        return err;
    return cn__bkt_get(o, txn, name, id, gen, out);
}

cn_err_t cn__bkt_load(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq, const char *name,
                      const cn__bkt_t **out)
{
    return bkt_load(o, txn, rq, name, out, NULL);
}

cn_err_t cn__bkt_load_peek(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                           const char *name, const cn__bkt_t **out, cn__bkt_peek_t *pk)
{
    pk->word = 0;
    pk->key_seen = false;
    return bkt_load(o, txn, rq, name, out, pk);
}

/* ---- object ACLs ----------------------------------------------------------------- */
static void acl_destroy(cn_cent_t *e)
{
    free(e);
}

cn_err_t cn__objacl_set(cn_objects_t *o, cn__objacl_t *a, const char *owner, size_t owner_len,
                        const char *acl, size_t acl_len)
{
    cn__strcpy(a->owner, sizeof a->owner, owner, owner_len);
    a->acl = NULL;
    a->ref = NULL;
    if (!acl)
        return 0;
    cn_cent_t *e = o ? cn_cache_find(&o->acls, acl, acl_len, 0, 0) : NULL;
    if (!e) {
        cn__acl_ent_t *n = malloc(sizeof *n + acl_len + 1);
        if (!n)
            return -ENOMEM;
        memcpy(n->text, acl, acl_len);
        n->text[acl_len] = 0;
        if (cn_authz_acl_parse(n->text, acl_len, &n->acl) < 0) {
            free(n);
            return CN_E_CORRUPT;
        }
        e = &n->ent;
        atomic_init(&e->refs, 1);
        e->key = n->text;
        e->klen = acl_len;
        e->hash = cn_cache_hash(n->text, acl_len);
        e->v1 = e->v2 = 0;
        e->cost = sizeof *n + acl_len;
        e->destroy = acl_destroy;
        if (o)
            cn_cache_offer(&o->acls, e);
    }
    a->acl = &((const cn__acl_ent_t *)e)->acl;
    a->ref = e;
    return 0;
}

void cn__objacl_free(cn__objacl_t *a)
{
    if (a) {
        cn_cent_release(a->ref);
        a->ref = NULL;
        a->acl = NULL;
    }
}
