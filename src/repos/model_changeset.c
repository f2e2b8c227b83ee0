/* The change set encoding: u8 1, u32le count, entries strictly ascending by
 * destination path.  Entry: u8 kind, u16le path length, path, then
 *   add/modify: [32] manifest, u8 mode;  delete, keep: nothing;
 *   move: u16le source length, source, [32] manifest, u8 mode. */
#include "cairn/repos_model.h"
#include "model_tree_codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool has_content(uint8_t kind)
{
    return kind == CN_REPOS_ADD || kind == CN_REPOS_MODIFY || kind == CN_REPOS_MOVE;
}

/* Reads one entry; CN_E_INVALID on any structural fault. */
static cn_err_t read_entry(cn_rd_t *r, cn_repos_change_t *e)
{
    memset(e, 0, sizeof *e);
    e->kind = cn_rd_u8(r);
    e->path_len = cn_rd_u16le(r);
    e->path = cn_rd_bytes(r, e->path_len);
    if (r->err || e->kind < CN_REPOS_ADD || e->kind > CN_REPOS_KEEP ||
        cn_repos_path_check(e->path, e->path_len))
        return CN_E_INVALID;
    if (e->kind == CN_REPOS_MOVE) {
        e->from_len = cn_rd_u16le(r);
        e->from = cn_rd_bytes(r, e->from_len);
        if (r->err || cn_repos_path_check(e->from, e->from_len) ||
            cn__bytes_cmp(e->from, e->from_len, e->path, e->path_len) == 0)
            return CN_E_INVALID;
    }
    if (has_content(e->kind)) {
        const uint8_t *m = cn_rd_bytes(r, CN_DIGEST_LEN);
        e->mode = cn_rd_u8(r);
        if (r->err || e->mode > CN_REPOS_MODE_SYMLINK)
            return CN_E_INVALID;
        memcpy(e->manifest.b, m, CN_DIGEST_LEN);
    }
    return CN_OK;
}

cn_err_t cn_repos_changeset_parse(const uint8_t *p, size_t n, cn_repos_changeset_t *out)
{
    if (n > CN_REPOS_MAX_CHANGESET_LEN)
        return CN_E_INVALID;
    cn_rd_t r = cn_rd_init(p, n);
    uint8_t version = cn_rd_u8(&r);
    out->count = cn_rd_u32le(&r);
    /* The smallest entry is 4 bytes (kind, length, one path byte). */
    if (r.err || version != CN_REPOS_OBJECT_VERSION || out->count < 1 ||
        out->count > CN_REPOS_MAX_CHANGESET_ENTRIES || out->count > cn_rd_left(&r) / 4)
        return CN_E_INVALID;
    out->entries = p + r.off;
    out->entries_len = n - r.off;
    cn_repos_change_t prev = { 0 }, e;
    for (uint32_t i = 0; i < out->count; i++) {
        CN_TRY(read_entry(&r, &e));
        if (i > 0 && cn__bytes_cmp(prev.path, prev.path_len, e.path, e.path_len) >= 0)
            return CN_E_INVALID;
        prev = e;
    }
    return cn_rd_left(&r) == 0 ? CN_OK : CN_E_INVALID;
}

void cn_repos_changeset_iter(const cn_repos_changeset_t *cs, cn_repos_changeset_iter_t *it)
{
    it->rd = cn_rd_init(cs->entries, cs->entries_len);
    it->left = cs->count;
}

bool cn_repos_changeset_next(cn_repos_changeset_iter_t *it, cn_repos_change_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    return read_entry(&it->rd, out) == CN_OK;
}

/* ---- cross-entry rules ----------------------------------------------------------- */
typedef struct {
    const uint8_t *p;
    size_t n;
    uint8_t *fold;
    size_t fn;
    bool dest;
} named_t;

static int by_path(const void *a, const void *b)
{
    const named_t *x = a, *y = b;
    return cn__bytes_cmp(x->p, x->n, y->p, y->n);
}

static int by_fold(const void *a, const void *b)
{
    const named_t *x = a, *y = b;
    return cn__bytes_cmp(x->fold, x->fn, y->fold, y->fn);
}

cn_err_t cn_repos_changeset_validate(const cn_repos_changeset_t *cs)
{
    cn_err_t err = CN_OK;
    size_t cap = (size_t)cs->count * 2, n = 0, fold_bytes = 0;
    named_t *v = calloc(cap, sizeof *v);
    uint8_t *folds = NULL;
    if (!v)
        return -ENOMEM;
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    cn_repos_changeset_iter(cs, &it);
    while (cn_repos_changeset_next(&it, &e)) {
        v[n++] = (named_t){ e.path, e.path_len, NULL, 0, has_content(e.kind) };
        fold_bytes += e.path_len;
        if (e.kind == CN_REPOS_MOVE)
            v[n++] = (named_t){ e.from, e.from_len, NULL, 0, false };
    }
    /* Every path named once, in whatever role. */
    qsort(v, n, sizeof *v, by_path);
    for (size_t i = 1; i < n; i++)
        if (by_path(&v[i - 1], &v[i]) == 0) {
            err = CN_E_INVALID;
            goto out;
        }
    /* Destinations: no directory prefix of another (sorted order puts
     * "a/..." after "a" but possibly after "a-b" too, so check by search). */
    for (size_t i = 0; i < n; i++) {
        if (!v[i].dest)
            continue;
        for (size_t k = 0; k < v[i].n; k++) {
            if (v[i].p[k] != '/')
                continue;
            named_t key = { v[i].p, k, NULL, 0, false };
            named_t *hit = bsearch(&key, v, n, sizeof *v, by_path);
            if (hit && hit->dest) {
                err = CN_E_INVALID;
                goto out;
            }
        }
    }
    /* Destinations: no two fold to the same bytes. */
    folds = malloc(fold_bytes ? fold_bytes : 1);
    if (!folds) {
        err = -ENOMEM;
        goto out;
    }
    size_t off = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].dest)
            continue;
        long k = cn_repos_path_fold(v[i].p, v[i].n, folds + off, fold_bytes - off);
        if (k < 0) {
            err = CN_E_INVALID;
            goto out;
        }
        v[m] = v[i];
        v[m].fold = folds + off;
        v[m].fn = (size_t)k;
        off += (size_t)k;
        m++;
    }
    qsort(v, m, sizeof *v, by_fold);
    for (size_t i = 1; i < m; i++)
        if (by_fold(&v[i - 1], &v[i]) == 0) {
            err = CN_E_INVALID;
            goto out;
        }
out:
    free(folds);
    free(v);
    return err;
}

cn_err_t cn_repos_changeset_encode(cn_buf_t *out, const cn_repos_change_t *e, uint32_t count)
{
    size_t start = out->len;
    cn_err_t err = cn_buf_put_u8(out, CN_REPOS_OBJECT_VERSION);
    if (!err)
        err = cn_buf_put_u32le(out, count);
    for (uint32_t i = 0; i < count && !err; i++) {
        err = cn_buf_put_u8(out, e[i].kind);
        if (!err)
            err = cn_buf_put_u16le(out, e[i].path_len);
        if (!err)
            err = cn_buf_append(out, e[i].path, e[i].path_len);
        if (!err && e[i].kind == CN_REPOS_MOVE) {
            err = cn_buf_put_u16le(out, e[i].from_len);
            if (!err)
                err = cn_buf_append(out, e[i].from, e[i].from_len);
        }
        if (!err && has_content(e[i].kind)) {
            err = cn_buf_append(out, e[i].manifest.b, CN_DIGEST_LEN);
            if (!err)
                err = cn_buf_put_u8(out, e[i].mode);
        }
    }
    if (!err) {
        /* Encode, then hold the bytes to the same rules a receiver applies. */
        cn_repos_changeset_t cs;
        err = cn_repos_changeset_parse(out->data + start, out->len - start, &cs);
        if (!err)
            err = cn_repos_changeset_validate(&cs);
    }
    if (err)
        out->len = start;
    return err;
}
