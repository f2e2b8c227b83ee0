/* ListObjects with S3 semantics: byte-ordered keys after start_after under a
 * prefix, rolled up into common prefixes at the delimiter, at most max_keys
 * keys and prefixes together per page.  ListObjectVersions is the same walk
 * (while buckets are unversioned, every key is its one "null" version),
 * authorized as s3:ListBucketVersions.
 *
 * The walk is a sequence of bounded index range scans: after a common prefix
 * it jumps straight past every key that shares it, so a directory of a
 * million keys costs one row, not a million. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CN_OBJ_SCAN_BATCH 256

void cn_objects_list_free(cn_objects_list_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nentries; i++) {
        free(l->entries[i].key);
        free(l->entries[i].content_type);
    }
    free(l->entries);
    for (size_t i = 0; i < l->nprefixes; i++)
        free(l->prefixes[i]);
    free(l->prefixes);
    free(l->next_start_after);
    memset(l, 0, sizeof *l);
}

/* The smallest byte string greater than every string that starts with p:
 * p with its last byte incremented, after dropping trailing 0xFF bytes.
 * Returns false when there is none (p is all 0xFF or empty). */
static bool cn_obj_successor(char *p, size_t *len)
{
    while (*len && (uint8_t)p[*len - 1] == 0xFF)
        (*len)--;
    if (!*len)
        return false;
    p[*len - 1] = (char)((uint8_t)p[*len - 1] + 1);
    return true;
}

static int cn_obj_bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al < bl ? -1 : al > bl);
}

typedef struct {
    cn_objects_list_t *out;
    size_t cap_e, cap_p;
} cn_obj_acc_t;

static cn_err_t cn_obj_add_prefix(cn_obj_acc_t *a, const char *p, size_t n)
{
    cn_objects_list_t *l = a->out;
    if (l->nprefixes == a->cap_p) {
        size_t nc = a->cap_p ? a->cap_p * 2 : 16;
        char **v = realloc(l->prefixes, nc * sizeof *v);
        if (!v)
            return -ENOMEM;
        l->prefixes = v;
        a->cap_p = nc;
    }
    char *s = cn__strndup(p, n);
    if (!s)
        return -ENOMEM;
    l->prefixes[l->nprefixes++] = s;
    return 0;
}

static cn_err_t cn_obj_add_entry(cn_obj_acc_t *a, cn_meta_stmt_t *st, const char *key, size_t kl)
{
    cn_objects_list_t *l = a->out;
    if (l->nentries == a->cap_e) {
        size_t nc = a->cap_e ? a->cap_e * 2 : 32;
        cn_objects_entry_t *v = realloc(l->entries, nc * sizeof *v);
        if (!v)
            return -ENOMEM;
        l->entries = v;
        a->cap_e = nc;
    }
    cn_objects_entry_t *e = &l->entries[l->nentries];
    memset(e, 0, sizeof *e);
    e->key = cn__strndup(key, kl);
    size_t ctl = 0;
    const char *ct = cn_meta_column_text(st, 5, &ctl);
    e->content_type = cn__strndup(ct ? ct : "", ct ? ctl : 0);
    if (!e->key || !e->content_type) {
        free(e->key);
        free(e->content_type);
        return -ENOMEM;
    }
    e->size = (uint64_t)cn_meta_column_int64(st, 1);
    const char *s = cn_meta_column_text(st, 2, NULL);
    snprintf(e->etag, sizeof e->etag, "%s", s ? s : "");
    s = cn_meta_column_text(st, 3, NULL);
    snprintf(e->sha256, sizeof e->sha256, "%s", s ? s : "");
    e->last_modified_ms = cn_meta_column_int64(st, 4);
    s = cn_meta_column_text(st, 6, NULL);
    snprintf(e->owner, sizeof e->owner, "%s", s ? s : "");
    e->nparts = (uint32_t)cn_meta_column_int64(st, 7);
    l->nentries++;
    return 0;
}

static cn_err_t cn_obj_set_next(cn_objects_list_t *l, const char *p, size_t n)
{
    free(l->next_start_after);
    l->next_start_after = cn__strndup(p, n);
    return l->next_start_after ? 0 : -ENOMEM;
}

cn_err_t cn_objects_list(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                         const cn_objects_list_args_t *args, cn_objects_list_t *out)
{
    memset(out, 0, sizeof *out);
    cn_objects_list_args_t none = {0};
    if (!args)
        args = &none;
    const char *prefix = args->prefix ? args->prefix : "";
    const char *delim = args->delimiter ? args->delimiter : "";
    const char *after = args->start_after ? args->start_after : "";
    size_t pl = strlen(prefix), dl = strlen(delim), al = strlen(after);
    if (args->max_keys < 0)
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "max_keys must not be negative");
    size_t max = args->max_keys == 0 || args->max_keys > CN_OBJECTS_LIST_MAX
                     ? CN_OBJECTS_LIST_MAX : (size_t)args->max_keys;
    if (pl > CN_OBJECT_KEY_MAX || al > CN_OBJECT_KEY_MAX || dl > CN_OBJECT_KEY_MAX)
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "prefix, delimiter or marker too long");

    cn_meta_txn_t *txn = NULL;
    cn_err_t err = cn_meta_begin(o->meta, CN_META_READ, &txn);
    if (err < 0)
        return err;
    cn__bkt_t b;
    err = cn__bkt_load(txn, rq, bucket, &b);
    if (err < 0) {
        cn_meta_rollback(txn);
        return err;
    }
    cn__cond_t cond = {.prefix = prefix, .delimiter = args->delimiter,
                       .max_keys = args->max_keys_raw};
    err = cn__authorize(rq, &b, args->versions ? CN_ACT_LIST_BUCKET_VERSIONS : CN_ACT_LIST_BUCKET,
                        NULL, NULL, &cond);
    int64_t bucket_id = b.id;
    cn__bkt_free(&b);
    if (err < 0) {
        cn_meta_rollback(txn);
        return err;
    }

    /* The scan bound: (bound, inclusive?).  Start after start_after, or at the
     * prefix if that is further on. */
    char bound[CN_OBJECT_KEY_MAX + 1];
    size_t bl;
    bool incl;
    if (al && cn_obj_bytes_cmp(after, al, prefix, pl) >= 0) {
        memcpy(bound, after, al);
        bl = al;
        incl = false;
    } else {
        memcpy(bound, prefix, pl);
        bl = pl;
        incl = true;
    }
    cn_obj_acc_t acc = {out, 0, 0};
    size_t count = 0;
    bool done = false;
    static const char *const q_gt =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts FROM obj_version "
        "WHERE bucket_id = ? AND okey > ? ORDER BY okey LIMIT ?";
    static const char *const q_ge =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts FROM obj_version "
        "WHERE bucket_id = ? AND okey >= ? ORDER BY okey LIMIT ?";
    static const char *const q_all =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts FROM obj_version "
        "WHERE bucket_id = ? ORDER BY okey LIMIT ?";
    while (!done && err >= 0) {
        cn_meta_stmt_t *st = NULL;
        bool all = incl && bl == 0;
        err = cn_meta_prepare(txn, all ? q_all : incl ? q_ge : q_gt, &st);
        if (err < 0)
            break;
        cn_meta_bind_int64(st, 1, bucket_id);
        if (all) {
            cn_meta_bind_int64(st, 2, CN_OBJ_SCAN_BATCH);
        } else {
            cn_meta_bind_blob(st, 2, bound, bl);
            cn_meta_bind_int64(st, 3, CN_OBJ_SCAN_BATCH);
        }
        size_t rows = 0;
        bool jumped = false;
        while (!done && !jumped && (err = cn_meta_step(st)) == CN_META_ROW) {
            rows++;
            size_t kl = 0;
            const char *key = cn_meta_column_blob(st, 0, &kl);
            if (!key)
                continue;
            /* Remember where this batch got to, for the next one. */
            memcpy(bound, key, kl);
            bl = kl;
            incl = false;
            if (kl < pl || memcmp(key, prefix, pl)) {
                done = true;     /* sorted: nothing later starts with the prefix */
                break;
            }
            const char *cut = NULL;
            if (dl) {
                const char *rest = key + pl;
                size_t rl = kl - pl;
                for (size_t i = 0; i + dl <= rl; i++)
                    if (!memcmp(rest + i, delim, dl)) {
                        cut = rest + i + dl;
                        break;
                    }
            }
            if (cut) {
                size_t cpl = (size_t)(cut - key);
                bool repeat = al == cpl && !memcmp(after, key, cpl);
                if (!repeat) {
                    if (count == max) {
                        out->is_truncated = true;
                        done = true;
                        break;
                    }
                    err = cn_obj_add_prefix(&acc, key, cpl);
                    if (err < 0)
                        break;
                    count++;
                    err = cn_obj_set_next(out, key, cpl);
                    if (err < 0)
                        break;
                }
                /* Jump past every key under this prefix. */
                memcpy(bound, key, cpl);
                bl = cpl;
                if (!cn_obj_successor(bound, &bl))
                    done = true;
                incl = true;
                jumped = true;
                continue;
            }
            if (count == max) {
                out->is_truncated = true;
                done = true;
                break;
            }
            err = cn_obj_add_entry(&acc, st, key, kl);
            if (err < 0)
                break;
            count++;
            err = cn_obj_set_next(out, key, kl);
            if (err < 0)
                break;
        }
        cn_meta_finish(st);
        if (err < 0)
            break;
        err = 0;
        if (!jumped && rows < CN_OBJ_SCAN_BATCH)
            done = true;
    }
    cn_meta_rollback(txn);
    if (err < 0) {
        cn_objects_list_free(out);
        return err;
    }
    if (!out->is_truncated) {
        free(out->next_start_after);
        out->next_start_after = NULL;
    }
    return 0;
}
