/* ListObjectVersions: obj_version (current versions) and obj_history
 * (noncurrent versions, delete markers) merged in key byte order, each
 * key's versions newest first (a key's current version is always its
 * newest), rolled up into common prefixes at the delimiter, at most max
 * entries and prefixes together.
 *
 * The walk goes key by key: the next key is the smaller of the two tables'
 * next keys (one indexed look each), then that key's versions (one look at
 * obj_version, one bounded range of obj_history), and after a common prefix
 * it jumps past every key under it.  A page resumes after (key-marker,
 * version-id-marker): within that key, versions older than the marker.
 * Must never list a key's versions out of order or skip one between pages. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One versions walk: what it asks, where it is, the page. */
typedef struct vwalk {
    const char *prefix, *delim, *km;
    size_t pl, dl, kml;
    int64_t below; /* within the key marker: versions older than this */
    size_t max, count;
    cn__list_acc_t acc;
    char bound[CN_OBJECT_KEY_MAX + 1];
    size_t bl;
    bool incl;
    bool done;
} vwalk_t;

/* The page is full: the walk ends, truncated, since one more item exists. */
static bool vw_full(vwalk_t *w)
{
    if (w->count < w->max)
        return false;
    w->acc.out->is_truncated = true;
    w->done = true;
    return true;
}

/* Where the next page starts: after key (and version, when not a prefix). */
static cn_err_t vw_next(vwalk_t *w, const char *key, size_t kl, const cn_objects_entry_t *e)
{
    cn_objects_list_t *l = w->acc.out;
    free(l->next_start_after);
    free(l->next_version_id_marker);
    l->next_version_id_marker = NULL;
    l->next_start_after = cn__strndup(key, kl);
    if (e) {
        char v[CN_OBJECTS_VERSION_ID_MAX];
        cn_objects_version_str(e->version_id, e->vnull, v);
        l->next_version_id_marker = cn__strndup(v, strlen(v));
    }
    return l->next_start_after && (!e || l->next_version_id_marker) ? 0 : -ENOMEM;
}

/* The next key at or after the bound in one table: *kl 0 when none. */
static cn_err_t vw_next_key(cn_meta_txn_t *txn, const vwalk_t *w, int64_t bucket_id, int q,
                            char *key, size_t *kl)
{
    cn_meta_stmt_t *st = NULL;
    *kl = 0;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_obj[q], "ib", bucket_id, (const void *)w->bound, w->bl);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const char *k = cn_meta_column_blob(st, 0, &n);
        if (k && n <= CN_OBJECT_KEY_MAX) {
            memcpy(key, k, n);
            *kl = n;
        }
    }
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

/* The version columns after the listing ones (V_LIST_*: 8 version_id,
 * 9 vnull, 10 marker) into the entry just added. */
static void vw_entry_version(vwalk_t *w, cn_meta_stmt_t *st, bool latest)
{
    cn_objects_list_t *l = w->acc.out;
    cn_objects_entry_t *e = &l->entries[l->nentries - 1];
    e->version_id = cn_meta_column_int64(st, 8);
    e->vnull = cn_meta_column_int64(st, 9) != 0;
    e->delete_marker = cn_meta_column_int64(st, 10) != 0;
    e->is_latest = latest;
    if (e->delete_marker)
        e->etag[0] = 0;
}

/* Takes st's row as an entry of key (unless the page is full). */
static cn_err_t vw_take(vwalk_t *w, cn_meta_stmt_t *st, const char *key, size_t kl, bool latest)
{
    if (vw_full(w))
        return 0;
    cn_err_t err = cn__list_add_entry(&w->acc, st, key, kl);
    if (err < 0)
        return err;
    vw_entry_version(w, st, latest);
    w->count++;
    cn_objects_list_t *l = w->acc.out;
    return vw_next(w, key, kl, &l->entries[l->nentries - 1]);
}

/* The current row of key, taken when it is older than below: *cur its id
 * (0 when the key has no current version). */
static cn_err_t vw_current(cn_meta_txn_t *txn, vwalk_t *w, int64_t bucket_id, const char *key,
                           size_t kl, int64_t below, int64_t *cur)
{
    cn_meta_stmt_t *st = NULL;
    *cur = 0;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_LIST_CUR_KEY], "ib", bucket_id,
                                  (const void *)key, kl);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        *cur = cn_meta_column_int64(st, 8);
        err = *cur < below ? vw_take(w, st, key, kl, true) : 0;
    }
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

/* The newest history version of key (0 when none): the latest of a key
 * without a current version, when the page resumes inside it. */
static cn_err_t vw_newest(cn_meta_txn_t *txn, int64_t bucket_id, const char *key, size_t kl,
                          int64_t *id)
{
    cn_meta_stmt_t *st = NULL;
    *id = 0;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_HIST_NEWEST], "ib", bucket_id,
                                  (const void *)key, kl);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        *id = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

/* Every version of key older than below, newest first. */
static cn_err_t vw_key(cn_meta_txn_t *txn, vwalk_t *w, int64_t bucket_id, const char *key,
                       size_t kl, int64_t below)
{
    int64_t cur = 0, latest = 0;
    cn_err_t err = vw_current(txn, w, bucket_id, key, kl, below, &cur);
    if (err >= 0 && !cur && below != INT64_MAX)
        err = vw_newest(txn, bucket_id, key, kl, &latest);
    if (err < 0 || w->done)
        return err;
    cn_meta_stmt_t *st = NULL;
    /* One row past what the page can take tells whether it is truncated. */
    err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_LIST_HIST_KEY], "ibii", bucket_id,
                         (const void *)key, kl, below, (int64_t)(w->max - w->count + 1));
    bool first = true;
    while (err >= 0 && !w->done && (err = cn_meta_step(st)) == CN_META_ROW) {
        int64_t id = cn_meta_column_int64(st, 8);
        bool is_latest = !cur && (below == INT64_MAX ? first : id == latest);
        err = vw_take(w, st, key, kl, is_latest);
        first = false;
    }
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

/* One key of the walk: a common prefix (then the bound jumps past it) or
 * its versions. */
static cn_err_t vw_step(cn_meta_txn_t *txn, vwalk_t *w, int64_t bucket_id, const char *key,
                        size_t kl)
{
    const char *cut = NULL;
    for (size_t i = 0; w->dl && i + w->dl <= kl - w->pl; i++)
        if (!memcmp(key + w->pl + i, w->delim, w->dl)) {
            cut = key + w->pl + i + w->dl;
            break;
        }
    if (!cut) {
        bool within = w->below != INT64_MAX && kl == w->kml && !memcmp(key, w->km, kl);
        cn_err_t err = vw_key(txn, w, bucket_id, key, kl, within ? w->below : INT64_MAX);
        memcpy(w->bound, key, kl);
        w->bl = kl;
        w->incl = false;
        return err;
    }
    size_t cpl = (size_t)(cut - key);
    /* A prefix equal to the key marker was the last page's last item. */
    if (!(w->kml == cpl && !memcmp(w->km, key, cpl)) && !vw_full(w)) {
        cn_err_t err = cn__list_add_prefix(&w->acc, key, cpl);
        if (err >= 0)
            err = vw_next(w, key, cpl, NULL);
        if (err < 0)
            return err;
        w->count++;
    }
    memcpy(w->bound, key, cpl);
    w->bl = cpl;
    if (!cn__list_successor(w->bound, &w->bl))
        w->done = true;
    w->incl = true;
    return 0;
}

/* Where the walk starts: the key marker (within it, after the version
 * marker), or the prefix if that is further on. */
static cn_err_t vw_start(cn_meta_txn_t *txn, cn_objects_req_t *rq, vwalk_t *w, int64_t bucket_id,
                         const char *vmarker)
{
    w->below = INT64_MAX;
    if (!cn__list_start(w->bound, &w->bl, &w->incl, w->km, w->kml, w->prefix, w->pl) || !vmarker ||
        !vmarker[0])
        return 0;
    cn__vref_t v;
    cn_err_t err = cn__obj_version_resolve(txn, rq, bucket_id, w->km, vmarker, &v);
    /* A marker version gone since: resume after the whole key (S3 lists no
     * error for a stale marker of a well-formed id). */
    if (err == CN_E_NOT_FOUND)
        return 0;
    if (err < 0)
        return err;
    w->below = v.version_id;
    w->incl = true;
    return 0;
}

cn_err_t cn__list_versions(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                           const cn_objects_list_args_t *args, size_t max, cn_objects_list_t *out)
{
    vwalk_t w = { .prefix = args->prefix ? args->prefix : "",
                  .delim = args->delimiter ? args->delimiter : "",
                  .km = args->start_after ? args->start_after : "",
                  .max = max,
                  .acc = { out, 0, 0 } };
    w.pl = strlen(w.prefix);
    w.dl = strlen(w.delim);
    w.kml = strlen(w.km);
    cn_err_t err = vw_start(txn, rq, &w, b->id, args->version_id_marker);
    char key[CN_OBJECT_KEY_MAX + 1], hk[CN_OBJECT_KEY_MAX + 1];
    while (err >= 0 && !w.done) {
        size_t kl = 0, hl = 0;
        err = vw_next_key(txn, &w, b->id,
                          w.incl ? CN_SQL_OBJ_V_NEXT_CUR_FROM : CN_SQL_OBJ_V_NEXT_CUR_AFTER, key,
                          &kl);
        if (err >= 0)
            err = vw_next_key(txn, &w, b->id,
                              w.incl ? CN_SQL_OBJ_V_NEXT_HIST_FROM : CN_SQL_OBJ_V_NEXT_HIST_AFTER,
                              hk, &hl);
        if (err < 0)
            break;
        if (hl && (!kl || cn__list_cmp(hk, hl, key, kl) < 0)) {
            memcpy(key, hk, hl);
            kl = hl;
        }
        /* Sorted: past the prefix (or the end), nothing later matches. */
        if (!kl || kl < w.pl || memcmp(key, w.prefix, w.pl)) {
            w.done = true;
            break;
        }
        err = vw_step(txn, &w, b->id, key, kl);
    }
    return err;
}
