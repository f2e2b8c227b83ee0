/* The in-memory snapshot tree (a test oracle, see oracle_tree.h): a
 * path-compressed 256-ary radix tree over canonical path bytes with per-node
 * summaries and two commitments.  Entries are never
 * removed (a delete leaves a tombstone), so nodes only ever split, and an
 * update dirties exactly the nodes on its path; oracle_tree_roots re-hashes
 * only dirty nodes.  Recursion depth is bounded by the path limit (every
 * non-root edge is at least one byte). */
#include "oracle_tree_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static oracle_tnode_t *node_new(const uint8_t *prefix, size_t plen)
{
    oracle_tnode_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    if (plen) {
        n->prefix = malloc(plen);
        if (!n->prefix) {
            free(n);
            return NULL;
        }
        memcpy(n->prefix, prefix, plen);
    }
    n->plen = (uint16_t)plen;
    n->dirty = true;
    return n;
}

static void node_free(oracle_tnode_t *n)
{
    if (!n)
        return;
    for (uint16_t i = 0; i < n->nkids; i++)
        node_free(n->kids[i]);
    free(n->kids);
    free(n->prefix);
    free(n);
}

cn_err_t oracle_tree_new(oracle_tree_t **out)
{
    oracle_tree_t *t = calloc(1, sizeof *t);
    if (!t || !(t->root = node_new(NULL, 0))) {
        free(t);
        return -ENOMEM;
    }
    *out = t;
    return CN_OK;
}

void oracle_tree_free(oracle_tree_t *t)
{
    if (!t)
        return;
    node_free(t->root);
    oracle_fold_index_free(&t->folds);
    free(t);
}

static int kid_index(const oracle_tnode_t *n, uint8_t b, bool *found)
{
    int lo = 0, hi = n->nkids;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        uint8_t k = n->kids[mid]->prefix[0];
        if (k == b) {
            *found = true;
            return mid;
        }
        if (k < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static cn_err_t kids_reserve(oracle_tnode_t *n)
{
    if (n->nkids < n->kcap)
        return CN_OK;
    uint16_t cap = n->kcap ? (uint16_t)(n->kcap * 2) : 2;
    if (cap > 256)
        cap = 256;
    oracle_tnode_t **k = realloc(n->kids, cap * sizeof *k);
    if (!k)
        return -ENOMEM;
    n->kids = k;
    n->kcap = cap;
    return CN_OK;
}

static void kids_insert(oracle_tnode_t *n, int at, oracle_tnode_t *kid)
{
    memmove(n->kids + at + 1, n->kids + at, (size_t)(n->nkids - at) * sizeof *n->kids);
    n->kids[at] = kid;
    n->nkids++;
}

static bool entry_ok(const cn_repos_entry_t *e)
{
    if (e->state == CN_REPOS_LIVE)
        return e->mode <= CN_REPOS_MODE_SYMLINK;
    return e->state == CN_REPOS_TOMBSTONE;
}

static void set_entry(oracle_tnode_t *n, const cn_repos_entry_t *e)
{
    n->state = e->state;
    cn__tree_entry_set(&n->e, e);
}

static cn_err_t put_node(oracle_tree_t *t, const uint8_t *path, size_t len,
                         const cn_repos_entry_t *e)
{
    oracle_tnode_t *n = t->root;
    size_t i = 0;
    for (;;) {
        n->dirty = true;
        if (i == len) {
            set_entry(n, e);
            return CN_OK;
        }
        bool found;
        int at = kid_index(n, path[i], &found);
        if (!found) {
            CN_TRY(kids_reserve(n));
            oracle_tnode_t *leaf = node_new(path + i, len - i);
            if (!leaf)
                return -ENOMEM;
            set_entry(leaf, e);
            kids_insert(n, at, leaf);
            return CN_OK;
        }
        oracle_tnode_t *c = n->kids[at];
        size_t common = 0;
        while (common < c->plen && i + common < len && c->prefix[common] == path[i + common])
            common++;
        if (common == c->plen) {
            n = c;
            i += common;
            continue;
        }
        /* Split c's edge at `common`: mid takes the shared bytes.  Allocate
         * everything first so a failure leaves the tree as it was. */
        oracle_tnode_t *mid = node_new(c->prefix, common);
        oracle_tnode_t *leaf = NULL;
        if (!mid)
            return -ENOMEM;
        mid->kids = malloc(2 * sizeof *mid->kids);
        if (!mid->kids) {
            node_free(mid);
            return -ENOMEM;
        }
        mid->kcap = 2;
        if (i + common < len && !(leaf = node_new(path + i + common, len - i - common))) {
            node_free(mid);
            return -ENOMEM;
        }
        memmove(c->prefix, c->prefix + common, c->plen - common);
        c->plen = (uint16_t)(c->plen - common);
        c->dirty = true; /* its prefix is part of its encoding: re-hash it */
        mid->kids[0] = c;
        mid->nkids = 1;
        n->kids[at] = mid;
        if (leaf) {
            set_entry(leaf, e);
            kids_insert(mid, leaf->prefix[0] < c->prefix[0] ? 0 : 1, leaf);
        } else {
            set_entry(mid, e);
        }
        return CN_OK;
    }
}

const oracle_tnode_t *oracle_tree_find(const oracle_tree_t *t, const uint8_t *path, size_t len)
{
    const oracle_tnode_t *n = t->root;
    size_t i = 0;
    while (i < len) {
        bool found;
        int at = kid_index(n, path[i], &found);
        if (!found)
            return NULL;
        const oracle_tnode_t *c = n->kids[at];
        if (c->plen > len - i || memcmp(c->prefix, path + i, c->plen) != 0)
            return NULL;
        i += c->plen;
        n = c;
    }
    return n;
}

cn_err_t oracle_tree_put(oracle_tree_t *t, const uint8_t *path, size_t len,
                         const cn_repos_entry_t *e)
{
    if (cn_repos_path_check(path, len) || !entry_ok(e))
        return CN_E_INVALID;
    const oracle_tnode_t *old = oracle_tree_find(t, path, len);
    bool was = old && old->state == CN_REPOS_LIVE, will = e->state == CN_REPOS_LIVE;
    if (!was && will)
        CN_TRY(oracle_fold_index_add(&t->folds, path, len, +1));
    cn_err_t err = put_node(t, path, len, e);
    if (err) {
        if (!was && will)
            oracle_fold_index_add(&t->folds, path, len, -1); /* an existing key: cannot fail */
        return err;
    }
    if (was && !will)
        oracle_fold_index_add(&t->folds, path, len, -1);
    return CN_OK;
}

uint64_t oracle_tree_live_under(const oracle_tree_t *t, const uint8_t *prefix, size_t len)
{
    const oracle_tnode_t *n = t->root;
    size_t i = 0;
    while (i < len) {
        bool found;
        int at = kid_index(n, prefix[i], &found);
        if (!found)
            return 0;
        const oracle_tnode_t *c = n->kids[at];
        size_t rest = len - i, m = c->plen < rest ? c->plen : rest;
        if (memcmp(c->prefix, prefix + i, m) != 0)
            return 0;
        if (c->plen >= rest)
            return c->sum.live; /* the prefix ends inside or at the end of c's edge */
        i += c->plen;
        n = c;
    }
    return n->sum.live;
}

bool oracle_tree_get(const oracle_tree_t *t, const uint8_t *path, size_t len, cn_repos_entry_t *out)
{
    const oracle_tnode_t *n = len ? oracle_tree_find(t, path, len) : NULL;
    if (!n || n->state == CN_REPOS_NONE)
        return false;
    if (out)
        *out = n->e;
    return true;
}

/* ---- hashing ------------------------------------------------------------------ */
typedef struct {
    cn_buf_t lo, hi;
} bounds_t;

/* The bytes under n along its first (lo) or last (hi) descendants: lo stops
 * at the first node with an entry, hi at a leaf. */
static cn_err_t put_bound(cn_buf_t *b, const oracle_tnode_t *n, bool lo)
{
    cn_buf_reset(b);
    while (n->nkids > 0 && !(lo && n->state != CN_REPOS_NONE)) {
        n = lo ? n->kids[0] : n->kids[n->nkids - 1];
        CN_TRY(cn_buf_append(b, n->prefix, n->plen));
    }
    return CN_OK;
}

static const cn__tree_sum_t *kid_sum(const void *kids, uint16_t i, uint8_t *byte)
{
    const oracle_tnode_t *k = ((oracle_tnode_t *const *)kids)[i];
    *byte = k->prefix[0];
    return &k->sum;
}

/* Describes n for the codec; the bounds are computed into bd, which d
 * borrows until bd is next used. */
static cn_err_t describe(bounds_t *bd, const oracle_tnode_t *n, cn__tree_node_t *d)
{
    CN_TRY(put_bound(&bd->lo, n, true));
    CN_TRY(put_bound(&bd->hi, n, false));
    *d = (cn__tree_node_t){ n->prefix,
                            n->plen,
                            n->state,
                            &n->e,
                            bd->lo.data,
                            bd->hi.data,
                            (uint16_t)bd->lo.len,
                            (uint16_t)bd->hi.len,
                            n->nkids,
                            kid_sum,
                            n->kids };
    return CN_OK;
}

typedef struct {
    cn_buf_t enc, key;
    bounds_t bd;
    uint64_t count;
    oracle_node_fn emit;
    void *ctx;
} hash_ctx_t;

/* Summaries, content hash and revision hash of a node whose children are
 * current.  Kept out of line so the recursion's frames stay small. */
static __attribute__((noinline)) cn_err_t finish_node(hash_ctx_t *h, oracle_tnode_t *n)
{
    cn__tree_node_t d;
    CN_TRY(describe(&h->bd, n, &d));
    cn_buf_reset(&h->enc);
    CN_TRY(cn__tree_node_finish(&d, h->key.data, h->key.len, &h->enc, &n->sum));
    if (h->emit)
        CN_TRY(h->emit(h->ctx, &n->sum.rev, h->enc.data, h->enc.len));
    n->dirty = false;
    h->count++;
    return CN_OK;
}

static cn_err_t rehash(hash_ctx_t *h, oracle_tnode_t *n)
{
    size_t key_at = h->key.len;
    CN_TRY(cn_buf_append(&h->key, n->prefix, n->plen));
    if (n->dirty) {
        for (uint16_t i = 0; i < n->nkids; i++)
            CN_TRY(rehash(h, n->kids[i]));
        CN_TRY(finish_node(h, n));
    }
    h->key.len = key_at;
    return CN_OK;
}

cn_err_t oracle_tree_roots(oracle_tree_t *t, cn_digest_t *content, cn_digest_t *revision)
{
    return oracle_tree_roots_emit(t, content, revision, NULL, NULL);
}

cn_err_t oracle_tree_roots_emit(oracle_tree_t *t, cn_digest_t *content, cn_digest_t *revision,
                                oracle_node_fn emit, void *ctx)
{
    hash_ctx_t h = { { 0 }, { 0 }, { { 0 }, { 0 } }, 0, emit, ctx };
    cn_err_t e = rehash(&h, t->root);
    cn_buf_free(&h.enc);
    cn_buf_free(&h.key);
    cn_buf_free(&h.bd.lo);
    cn_buf_free(&h.bd.hi);
    t->rehashed = h.count;
    if (e)
        return e;
    if (content) {
        if (t->root->sum.live)
            *content = t->root->sum.content;
        else
            cn__tree_content_empty(content);
    }
    if (revision)
        *revision = t->root->sum.rev;
    return CN_OK;
}

uint64_t oracle_tree_rehashed(const oracle_tree_t *t)
{
    return t->rehashed;
}

static void count(const oracle_tnode_t *n, uint64_t *entries, uint64_t *live)
{
    *entries += n->state != CN_REPOS_NONE;
    *live += n->state == CN_REPOS_LIVE;
    for (uint16_t i = 0; i < n->nkids; i++)
        count(n->kids[i], entries, live);
}

uint64_t oracle_tree_entries(const oracle_tree_t *t)
{
    uint64_t e = 0, l = 0;
    count(t->root, &e, &l);
    return e;
}

uint64_t oracle_tree_live(const oracle_tree_t *t)
{
    uint64_t e = 0, l = 0;
    count(t->root, &e, &l);
    return l;
}

/* ---- walking and proofs ------------------------------------------------------ */
static int walk(const oracle_tnode_t *n, cn_buf_t *key, oracle_walk_fn fn, void *ctx)
{
    size_t at = key->len;
    int rc = cn_buf_append(key, n->prefix, n->plen);
    if (rc)
        return rc;
    if (n->state != CN_REPOS_NONE && (rc = fn(ctx, key->data, key->len, &n->e)))
        return rc;
    for (uint16_t i = 0; i < n->nkids; i++)
        if ((rc = walk(n->kids[i], key, fn, ctx)))
            return rc;
    key->len = at;
    return 0;
}

int oracle_tree_walk(const oracle_tree_t *t, oracle_walk_fn fn, void *ctx)
{
    cn_buf_t key = { 0 };
    int rc = walk(t->root, &key, fn, ctx);
    cn_buf_free(&key);
    return rc;
}

typedef struct {
    cn_buf_t tmp;
    bounds_t bd;
} emit_ctx_t;

/* Kept out of line so the recursion's frames stay small. */
static __attribute__((noinline)) cn_err_t emit_node(cn_buf_t *out, emit_ctx_t *x,
                                                    const oracle_tnode_t *n)
{
    cn__tree_node_t d;
    CN_TRY(describe(&x->bd, n, &d));
    cn_buf_reset(&x->tmp);
    CN_TRY(cn__tree_node_encode(&x->tmp, &d, &n->sum));
    CN_TRY(cn_buf_put_u32le(out, (uint32_t)x->tmp.len));
    return cn_buf_append(out, x->tmp.data, x->tmp.len);
}

static cn_err_t emit(cn_buf_t *out, emit_ctx_t *x, const oracle_tnode_t *n)
{
    CN_TRY(emit_node(out, x, n));
    for (uint16_t i = 0; i < n->nkids; i++)
        CN_TRY(emit(out, x, n->kids[i]));
    return CN_OK;
}

cn_err_t oracle_tree_proof_full(oracle_tree_t *t, cn_buf_t *out)
{
    CN_TRY(oracle_tree_roots(t, NULL, NULL));
    emit_ctx_t x = { { 0 }, { { 0 }, { 0 } } };
    size_t start = out->len;
    cn_err_t e = emit(out, &x, t->root);
    cn_buf_free(&x.tmp);
    cn_buf_free(&x.bd.lo);
    cn_buf_free(&x.bd.hi);
    if (e)
        out->len = start;
    return e;
}
