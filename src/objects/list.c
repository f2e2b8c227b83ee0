/* ListObjects with S3 semantics: byte-ordered keys after start_after under a
 * prefix, rolled up into common prefixes at the delimiter, at most max_keys
 * keys and prefixes together per page, over current versions only (a key
 * whose latest version is a delete marker is not in obj_version: never
 * scanned).  ListObjectVersions, authorized as s3:ListBucketVersions, walks
 * both tables (versions_list.c).
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
    free(l->next_version_id_marker);
    memset(l, 0, sizeof *l);
}

/* The smallest byte string greater than every string that starts with p:
 * p with its last byte incremented, after dropping trailing 0xFF bytes.
 * Returns false when there is none (p is all 0xFF or empty). */
bool cn__list_successor(char *p, size_t *len)
{
    while (*len && (uint8_t)p[*len - 1] == 0xFF)
        (*len)--;
    if (!*len)
        return false;
    p[*len - 1] = (char)((uint8_t)p[*len - 1] + 1);
    return true;
}

int cn__list_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al < bl ? -1 : al > bl);
}

cn_err_t cn__list_add_prefix(cn__list_acc_t *a, const char *p, size_t n)
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

cn_err_t cn__list_add_entry(cn__list_acc_t *a, cn_meta_stmt_t *st, const char *key, size_t kl)
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

bool cn__list_start(char *bound, size_t *bl, bool *incl, const char *after, size_t al,
                    const char *prefix, size_t pl)
{
    bool at_marker = al && cn__list_cmp(after, al, prefix, pl) >= 0;
    memcpy(bound, at_marker ? after : prefix, at_marker ? al : pl);
    *bl = at_marker ? al : pl;
    *incl = !at_marker;
    return at_marker;
}

static cn_err_t obj_set_next(cn_objects_list_t *l, const char *p, size_t n)
{
    free(l->next_start_after);
    l->next_start_after = cn__strndup(p, n);
    return l->next_start_after ? 0 : -ENOMEM;
}

/* One ListObjects walk: what it asks for, where the scan is, and the page
 * it fills (out). */
typedef struct list_walk {
    const cn_objects_list_args_t *args;
    const char *prefix, *delim, *after;
    size_t pl, dl, al, max;
    cn_objects_list_t *out;
    /* The scan bound: (bound, inclusive?). */
    char bound[CN_OBJECT_KEY_MAX + 1];
    size_t bl;
    bool incl;
    cn__list_acc_t acc;
    size_t count;
    bool done;
} list_walk_t;

/* Takes key[0..n) into the page as a common prefix or an entry (st's row),
 * unless the page is full: then it marks the walk truncated and done. */
static cn_err_t list_take(list_walk_t *w, cn_meta_stmt_t *st, const char *key, size_t n,
                          bool prefix)
{
    if (w->count == w->max) {
        w->out->is_truncated = true;
        w->done = true;
        return 0;
    }
    cn_err_t err =
        prefix ? cn__list_add_prefix(&w->acc, key, n) : cn__list_add_entry(&w->acc, st, key, n);
    if (err < 0)
        return err;
    w->count++;
    return obj_set_next(w->out, key, n);
}

/* One row of a scan batch: sets *jumped when the scan must restart past a
 * common prefix, w->done when the walk is over. */
static cn_err_t list_row(list_walk_t *w, cn_meta_stmt_t *st, bool *jumped)
{
    size_t kl = 0;
    const char *key = cn_meta_column_blob(st, 0, &kl);
    if (!key)
        return 0;
    /* Remember where this batch got to, for the next one. */
    memcpy(w->bound, key, kl);
    w->bl = kl;
    w->incl = false;
    if (kl < w->pl || memcmp(key, w->prefix, w->pl)) {
        w->done = true; /* sorted: nothing later starts with the prefix */
        return 0;
    }
    const char *cut = NULL;
    if (w->dl) {
        const char *rest = key + w->pl;
        size_t rl = kl - w->pl;
        for (size_t i = 0; i + w->dl <= rl; i++)
            if (!memcmp(rest + i, w->delim, w->dl)) {
                cut = rest + i + w->dl;
                break;
            }
    }
    if (!cut)
        return list_take(w, st, key, kl, false);
    size_t cpl = (size_t)(cut - key);
    bool repeat = w->al == cpl && !memcmp(w->after, key, cpl);
    if (!repeat) {
        cn_err_t err = list_take(w, st, key, cpl, true);
        if (err < 0 || w->done)
            return err;
    }
    /* Jump past every key under this prefix. */
    memcpy(w->bound, key, cpl);
    w->bl = cpl;
    if (!cn__list_successor(w->bound, &w->bl))
        w->done = true;
    w->incl = true;
    *jumped = true;
    return 0;
}

/* One bounded index range scan from the walk's bound. */
static cn_err_t list_batch(list_walk_t *w, cn_meta_txn_t *txn, int64_t bucket_id)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err;
    if (w->incl && w->bl == 0)
        err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_LIST_FIRST], "ii", bucket_id,
                             (int64_t)CN_OBJ_SCAN_BATCH);
    else
        err = cn_meta_queryf(
            txn, &st, cn__sql_obj[w->incl ? CN_SQL_OBJ_LIST_FROM : CN_SQL_OBJ_LIST_AFTER], "ibi",
            bucket_id, (const void *)w->bound, w->bl, (int64_t)CN_OBJ_SCAN_BATCH);
    if (err < 0)
        return err;
    size_t rows = 0;
    bool jumped = false;
    while (!w->done && !jumped && (err = cn_meta_step(st)) == CN_META_ROW) {
        rows++;
        err = list_row(w, st, &jumped);
        if (err < 0)
            break;
    }
    cn_meta_finish(st);
    if (err < 0)
        return err;
    if (!jumped && rows < CN_OBJ_SCAN_BATCH)
        w->done = true;
    return 0;
}

/* The walk in one read snapshot: the access check, then the scan.  A run
 * starts from an empty page and leaves one when it fails. */
static cn_err_t list_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *ctx)
{
    list_walk_t *w = ctx;
    cn_objects_list_free(w->out);
    w->acc = (cn__list_acc_t){ w->out, 0, 0 };
    w->count = 0;
    w->done = false;
    cn__cond_t cond = { .prefix = w->prefix,
                        .delimiter = w->args->delimiter,
                        .max_keys = w->args->max_keys_raw };
    cn_err_t err =
        cn__authorize(rq, b, w->args->versions ? CN_ACT_LIST_BUCKET_VERSIONS : CN_ACT_LIST_BUCKET,
                      NULL, NULL, &cond);
    if (err < 0)
        return err;
    /* Versions merge both tables (versions_list.c); keys read current rows. */
    if (w->args->versions) {
        err = cn__list_versions(txn, rq, b, w->args, w->max, w->out);
        if (err < 0)
            cn_objects_list_free(w->out);
        return err;
    }
    cn__list_start(w->bound, &w->bl, &w->incl, w->after, w->al, w->prefix, w->pl);
    while (!w->done && err >= 0)
        err = list_batch(w, txn, b->id);
    if (err < 0)
        cn_objects_list_free(w->out);
    return err;
}

cn_err_t cn_objects_list(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                         const cn_objects_list_args_t *args, cn_objects_list_t *out)
{
    memset(out, 0, sizeof *out);
    cn_objects_list_args_t none = { 0 };
    if (!args)
        args = &none;
    list_walk_t w = { .args = args, .out = out };
    w.prefix = args->prefix ? args->prefix : "";
    w.delim = args->delimiter ? args->delimiter : "";
    w.after = args->start_after ? args->start_after : "";
    w.pl = strlen(w.prefix);
    w.dl = strlen(w.delim);
    w.al = strlen(w.after);
    if (args->max_keys < 0)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_LIST_ARG_INVALID,
                          "max_keys must not be negative");
    w.max = args->max_keys == 0 || args->max_keys > CN_OBJECTS_LIST_MAX ? CN_OBJECTS_LIST_MAX
                                                                        : (size_t)args->max_keys;
    if (w.pl > CN_OBJECT_KEY_MAX || w.al > CN_OBJECT_KEY_MAX || w.dl > CN_OBJECT_KEY_MAX)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_LIST_ARG_INVALID,
                          "prefix, delimiter or marker too long");
    cn_err_t err =
        cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY, list_body, &w);
    if (err < 0) {
        cn_objects_list_free(out);
        return err;
    }
    if (!out->is_truncated) {
        free(out->next_start_after);
        out->next_start_after = NULL;
        free(out->next_version_id_marker);
        out->next_version_id_marker = NULL;
    }
    return 0;
}
