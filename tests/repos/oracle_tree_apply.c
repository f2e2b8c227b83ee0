/* Applying a change set to a snapshot tree: every rule is checked against
 * the tree and the change set before the first entry changes, so a rejected
 * change set leaves the tree as it was.  The checks cost O(k * (depth +
 * log k)) for k entries, never a walk of the tree. */
#include "oracle_tree_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t n;
    const uint8_t *fold;
    size_t fn;
} removed_t;

static int by_path(const void *a, const void *b)
{
    const removed_t *x = *(removed_t *const *)a, *y = *(removed_t *const *)b;
    return cn__bytes_cmp(x->p, x->n, y->p, y->n);
}

static int by_fold(const void *a, const void *b)
{
    const removed_t *x = *(removed_t *const *)a, *y = *(removed_t *const *)b;
    return cn__bytes_cmp(x->fold, x->fn, y->fold, y->fn);
}

static bool is_live(const oracle_tree_t *t, const uint8_t *p, size_t n)
{
    const oracle_tnode_t *nd = oracle_tree_find(t, p, n);
    return nd && nd->state == CN_REPOS_LIVE;
}

/* Index range [lo, hi) of sorted items whose key (path or fold) starts with
 * (or, exact, equals) the given bytes. */
static size_t count_matching(removed_t **v, size_t m, const uint8_t *k, size_t kn, bool fold,
                             bool exact)
{
    size_t c = 0;
    size_t lo = 0, hi = m;
    while (lo < hi) { /* first item >= k */
        size_t mid = (lo + hi) / 2;
        const uint8_t *p = fold ? v[mid]->fold : v[mid]->p;
        size_t pn = fold ? v[mid]->fn : v[mid]->n;
        if (cn__bytes_cmp(p, pn, k, kn) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < m; i++) {
        const uint8_t *p = fold ? v[i]->fold : v[i]->p;
        size_t pn = fold ? v[i]->fn : v[i]->n;
        if (exact ? cn__bytes_cmp(p, pn, k, kn) != 0 : (pn < kn || memcmp(p, k, kn) != 0))
            break;
        c++;
    }
    return c;
}

cn_err_t oracle_tree_apply(oracle_tree_t *t, const cn_repos_changeset_t *cs, uint64_t change,
                           oracle_size_fn size_fn, void *ctx)
{
    CN_TRY(oracle_tree_roots(t, NULL, NULL)); /* summaries current */
    cn_err_t err = CN_OK;
    removed_t *rm = calloc(cs->count, sizeof *rm);
    removed_t **by_p = calloc(cs->count, sizeof *by_p), **by_f = calloc(cs->count, sizeof *by_f);
    uint64_t *sizes = calloc(cs->count, sizeof *sizes);
    uint8_t *key = malloc(CN_REPOS_MAX_PATH + 1);
    /* Folds never grow, so the encoding's size bounds all removed folds. */
    uint8_t *arena = malloc(cs->entries_len ? cs->entries_len : 1);
    size_t m = 0, used = 0;
    if (!rm || !by_p || !by_f || !sizes || !key || !arena) {
        err = -ENOMEM;
        goto out;
    }
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    /* 1. Preconditions of each entry against the tree as it is. */
    cn_repos_changeset_iter(cs, &it);
    for (uint32_t i = 0; cn_repos_changeset_next(&it, &e); i++) {
        bool live = is_live(t, e.path, e.path_len);
        bool ok;
        switch (e.kind) {
        case CN_REPOS_ADD: ok = !live; break;
        case CN_REPOS_MODIFY:
        case CN_REPOS_DELETE: ok = live; break;
        case CN_REPOS_MOVE: ok = !live && is_live(t, e.from, e.from_len); break;
        default:
            ok = oracle_tree_find(t, e.path, e.path_len) &&
                 oracle_tree_find(t, e.path, e.path_len)->state != CN_REPOS_NONE;
            break;
        }
        if (!ok) {
            err = CN_E_CONFLICT;
            goto out;
        }
        if (e.kind == CN_REPOS_DELETE || e.kind == CN_REPOS_MOVE) {
            removed_t *r = &rm[m];
            r->p = e.kind == CN_REPOS_DELETE ? e.path : e.from;
            r->n = e.kind == CN_REPOS_DELETE ? e.path_len : e.from_len;
            long fn = cn_repos_path_fold(r->p, r->n, arena + used, cs->entries_len - used);
            if (fn < 0) {
                err = CN_E_INVALID;
                goto out;
            }
            r->fold = arena + used;
            r->fn = (size_t)fn;
            used += (size_t)fn;
            by_p[m] = by_f[m] = r;
            m++;
        }
        if (e.kind == CN_REPOS_ADD || e.kind == CN_REPOS_MODIFY || e.kind == CN_REPOS_MOVE) {
            if ((err = size_fn(ctx, &e.manifest, &sizes[i])))
                goto out;
        }
    }
    qsort(by_p, m, sizeof *by_p, by_path);
    qsort(by_f, m, sizeof *by_f, by_fold);
    /* 2. Every path that becomes live: no live ancestor file, no live
     * descendant, no other live path with the same fold afterwards. */
    cn_repos_changeset_iter(cs, &it);
    while (cn_repos_changeset_next(&it, &e)) {
        if (e.kind != CN_REPOS_ADD && e.kind != CN_REPOS_MOVE)
            continue;
        for (size_t k = 0; k < e.path_len; k++)
            if (e.path[k] == '/' && is_live(t, e.path, k) &&
                count_matching(by_p, m, e.path, k, false, true) == 0) {
                err = CN_E_CONFLICT;
                goto out;
            }
        memcpy(key, e.path, e.path_len);
        key[e.path_len] = '/';
        if (oracle_tree_live_under(t, key, e.path_len + 1u) >
            count_matching(by_p, m, key, e.path_len + 1u, false, false)) {
            err = CN_E_CONFLICT;
            goto out;
        }
        uint8_t fold[CN_REPOS_MAX_PATH];
        long fn = cn_repos_path_fold(e.path, e.path_len, fold, sizeof fold);
        if (fn < 0) {
            err = CN_E_INVALID;
            goto out;
        }
        uint64_t before = oracle_fold_index_count(&t->folds, e.path, e.path_len);
        uint64_t gone = count_matching(by_f, m, fold, (size_t)fn, true, true);
        if (before - (gone < before ? gone : before) + 1 > 1) {
            err = CN_E_CONFLICT;
            goto out;
        }
    }
    /* 3. Apply.  Only -ENOMEM can fail from here on. */
    cn_repos_changeset_iter(cs, &it);
    for (uint32_t i = 0; cn_repos_changeset_next(&it, &e) && !err; i++) {
        cn_repos_entry_t ne = { 0 };
        ne.change = change;
        switch (e.kind) {
        case CN_REPOS_KEEP: continue;
        case CN_REPOS_DELETE:
            ne.state = CN_REPOS_TOMBSTONE;
            err = oracle_tree_put(t, e.path, e.path_len, &ne);
            continue;
        case CN_REPOS_MOVE:
            ne.state = CN_REPOS_TOMBSTONE;
            if ((err = oracle_tree_put(t, e.from, e.from_len, &ne)))
                continue;
            break;
        default: break;
        }
        ne.state = CN_REPOS_LIVE;
        ne.mode = e.mode;
        ne.size = sizes[i];
        ne.manifest = e.manifest;
        err = oracle_tree_put(t, e.path, e.path_len, &ne);
    }
out:
    free(arena);
    free(key);
    free(sizes);
    free(by_f);
    free(by_p);
    free(rm);
    return err;
}
