/* The persistent snapshot tree: the radix tree of docs/protocol/scribe.md
 * section 10 stored as one metadata row per node, keyed by (repository,
 * node hash), so snapshots share every unchanged subtree.
 *
 * A row holds the node's canonical encoding and an aux column: the node's
 * content hash (when it has live entries) followed by the content hashes of
 * its children that have live entries.  With it a changed node is
 * re-encoded from its own row and its changed children alone: the child
 * summaries (hash, counts, highest change) are in the encoding, the child
 * content hashes in aux, and the key bounds follow from the old bounds
 * (entries are never removed, so a node with an entry keeps it, and a
 * bound only changes when its first or last child changes, which is then in
 * memory).  A put touches the nodes on one path; finish re-encodes them;
 * nothing costs in proportion to the repository.
 *
 * Invariant checked on every read: a row's encoding hashes to the hash its
 * parent names (CN_E_CORRUPT otherwise). */
#include "service_int.h"
#include "model_tree_codec.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct cn__wnode cn__wnode_t;

typedef struct cn__wkid {
    uint8_t byte;
    cn__tree_sum_t sum;
    cn__wnode_t *mem; /* read or new; NULL = only the summary is known */
} cn__wkid_t;

struct cn__wnode {
    uint8_t *prefix;
    uint16_t plen;
    uint8_t state;
    cn_repos_entry_t e;
    uint8_t *lo, *hi;
    uint16_t lo_len, hi_len;
    cn__wkid_t *kids;
    uint16_t nkids, kcap;
    cn__tree_sum_t sum; /* current unless dirty */
    bool dirty;
    cn__wnode_t *all_next; /* every node of the view, for freeing */
};

typedef struct cn__newrow {
    cn_digest_t hash;
    cn_buf_t enc;
    cn_buf_t aux;
} cn__newrow_t;

struct cn__ptree {
    cn_meta_txn_t *txn;
    uint8_t repo[16];
    cn__wnode_t *root;
    cn__wnode_t *all;
    cn__newrow_t *rows;
    size_t nrows, rcap;
    uint64_t nodes_read, nodes_written;
    cn_buf_t key; /* scratch */
    /* scratch of read_run: a node's kids and their hashes (256 each) */
    cn__wkid_t **run;
    cn_digest_t *run_hashes;
};

/* ---- nodes -------------------------------------------------------------------------- */
static cn__wnode_t *wnode_new(cn__ptree_t *t)
{
    cn__wnode_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->all_next = t->all;
    t->all = n;
    return n;
}

static cn_err_t set_bytes(uint8_t **dst, uint16_t *dlen, const uint8_t *a, size_t an,
                          const uint8_t *b, size_t bn)
{
    if (an + bn > UINT16_MAX)
        return CN_E_CORRUPT;
    uint8_t *p = NULL;
    if (an + bn) {
        p = malloc(an + bn);
        if (!p)
            return -ENOMEM;
        if (an)
            memcpy(p, a, an);
        if (bn)
            memcpy(p + an, b, bn);
    }
    free(*dst);
    *dst = p;
    *dlen = (uint16_t)(an + bn);
    return CN_OK;
}

static cn_err_t kids_reserve(cn__wnode_t *n, uint16_t want)
{
    assert(want <= 256); /* one child per next byte; more would never end the loop */
    if (want <= n->kcap)
        return CN_OK;
    uint16_t cap = n->kcap ? n->kcap : 2;
    while (cap < want)
        cap = (uint16_t)(cap * 2 > 256 ? 256 : cap * 2);
    cn__wkid_t *k = realloc(n->kids, cap * sizeof *k);
    if (!k)
        return -ENOMEM;
    n->kids = k;
    n->kcap = cap;
    return CN_OK;
}

/* Builds a view node from a row's encoding and aux. */
static cn_err_t wnode_from_row(cn__ptree_t *t, const uint8_t *enc, size_t elen, const uint8_t *aux,
                               size_t alen, const cn_digest_t *hash, cn__wnode_t **out)
{
    cn_repos_node_t nd;
    if (cn_repos_node_parse(enc, elen, &nd) < 0)
        return CN_E_CORRUPT;
    cn__wnode_t *n = wnode_new(t);
    if (!n)
        return -ENOMEM;
    CN_TRY(set_bytes(&n->prefix, &n->plen, nd.prefix, nd.prefix_len, NULL, 0));
    CN_TRY(set_bytes(&n->lo, &n->lo_len, nd.lo, nd.lo_len, NULL, 0));
    CN_TRY(set_bytes(&n->hi, &n->hi_len, nd.hi, nd.hi_len, NULL, 0));
    n->state = nd.entry_state;
    n->e = nd.entry;
    n->sum.entries = nd.entries;
    n->sum.live = nd.live;
    n->sum.highest = nd.highest;
    n->sum.rev = *hash;
    CN_TRY(kids_reserve(n, nd.child_count));
    size_t at = 0;
    if (n->sum.live) {
        if (alen < CN_DIGEST_LEN)
            return CN_E_CORRUPT;
        memcpy(n->sum.content.b, aux, CN_DIGEST_LEN);
        at = CN_DIGEST_LEN;
    }
    for (uint16_t i = 0; i < nd.child_count; i++) {
        cn_repos_node_child_t c;
        cn_repos_node_child(&nd, i, &c);
        cn__wkid_t *k = &n->kids[i];
        memset(k, 0, sizeof *k);
        k->byte = c.byte;
        k->sum.rev = c.hash;
        k->sum.entries = c.entries;
        k->sum.live = c.live;
        k->sum.highest = c.highest;
        if (c.live) {
            if (alen - at < CN_DIGEST_LEN)
                return CN_E_CORRUPT;
            memcpy(k->sum.content.b, aux + at, CN_DIGEST_LEN);
            at += CN_DIGEST_LEN;
        }
    }
    if (at != alen)
        return CN_E_CORRUPT;
    n->nkids = nd.child_count;
    *out = n;
    return CN_OK;
}

static cn_err_t read_node(cn__ptree_t *t, const cn_digest_t *hash, cn__wnode_t **out)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(t->txn, cn__sql_repos[CN_SQL_REPOS_TREE_NODE_GET], &st);
    if (err < 0)
        return err;
    cn__bind_id(st, 1, t->repo);
    cn__bind_digest(st, 2, hash);
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t elen = 0, alen = 0;
        const uint8_t *enc = cn_meta_column_blob(st, 0, &elen);
        const uint8_t *aux = cn_meta_column_blob(st, 1, &alen);
        cn_digest_t h;
        cn_repos_node_hash(enc ? enc : (const uint8_t *)"", enc ? elen : 0, &h);
        if (!enc || memcmp(h.b, hash->b, CN_DIGEST_LEN) != 0)
            err = CN_E_CORRUPT;
        else
            err = wnode_from_row(t, enc, elen, aux, aux ? alen : 0, hash, out);
        t->nodes_read++;
    } else if (err == CN_META_DONE) {
        err = CN_E_CORRUPT; /* a parent names a node that is not stored */
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static cn_err_t kid_mem(cn__ptree_t *t, cn__wkid_t *k, cn__wnode_t **out)
{
    if (!k->mem)
        CN_TRY(read_node(t, &k->sum.rev, &k->mem));
    *out = k->mem;
    return CN_OK;
}

static int kid_index(const cn__wnode_t *n, uint8_t b, bool *found)
{
    int lo = 0, hi = n->nkids;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        uint8_t k = n->kids[mid].byte;
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

cn_err_t cn__ptree_open(cn_meta_txn_t *txn, const uint8_t repo[16], const cn_digest_t *root,
                        cn__ptree_t **out)
{
    *out = NULL;
    cn__ptree_t *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->txn = txn;
    memcpy(t->repo, repo, 16);
    cn_err_t err = read_node(t, root, &t->root);
    if (err < 0) {
        cn__ptree_free(t);
        return err;
    }
    *out = t;
    return CN_OK;
}

void cn__ptree_set_txn(cn__ptree_t *t, cn_meta_txn_t *txn)
{
    t->txn = txn;
}

void cn__ptree_free(cn__ptree_t *t)
{
    if (!t)
        return;
    for (cn__wnode_t *n = t->all, *next; n; n = next) {
        next = n->all_next;
        free(n->prefix);
        free(n->lo);
        free(n->hi);
        free(n->kids);
        free(n);
    }
    for (size_t i = 0; i < t->nrows; i++) {
        cn_buf_free(&t->rows[i].enc);
        cn_buf_free(&t->rows[i].aux);
    }
    free(t->rows);
    cn_buf_free(&t->key);
    free(t->run);
    free(t->run_hashes);
    free(t);
}

void cn__ptree_stats(const cn__ptree_t *t, cn__ptree_stats_t *out)
{
    out->nodes_read = t->nodes_read;
    out->nodes_written = t->nodes_written;
}

/* ---- prefetch ----------------------------------------------------------------------- */
/* A descent of one key through the nodes in memory. */
typedef struct walk {
    cn__wnode_t *n;
    size_t i; /* key bytes matched down to n */
} walk_t;

/* Advances w along key while the nodes are in memory: true with *k the kid
 * a lookup of key would read next; false once the descent has ended. */
static bool walk_to_missing(walk_t *w, const uint8_t *key, size_t len, cn__wkid_t **k)
{
    while (w->i < len) {
        bool f;
        int at = kid_index(w->n, key[w->i], &f);
        if (!f)
            return false;
        if (!w->n->kids[at].mem) {
            *k = &w->n->kids[at];
            return true;
        }
        cn__wnode_t *c = w->n->kids[at].mem;
        size_t rest = len - w->i, m = c->plen < rest ? c->plen : rest;
        if (c->plen >= rest || memcmp(c->prefix, key + w->i, m) != 0)
            return false;
        w->i += c->plen;
        w->n = c;
    }
    return false;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (cn__wkid_t *const *)a, y = (uintptr_t) * (cn__wkid_t *const *)b;
    return x < y ? -1 : x > y;
}

/* Reads the nodes of the n kids (distinct) in one batch statement per
 * CN_META_BATCH_MAX, each checked against its hash as read_node does. */
static cn_err_t read_kids(cn__ptree_t *t, cn__wkid_t **kids, size_t n, cn_digest_t *hashes)
{
    cn_err_t err = CN_OK;
    for (size_t i = 0; i < n; i++)
        hashes[i] = kids[i]->sum.rev;
    for (size_t from = 0; err >= 0 && from < n; from += CN_META_BATCH_MAX) {
        size_t c = n - from < CN_META_BATCH_MAX ? n - from : CN_META_BATCH_MAX;
        cn_meta_stmt_t *st = NULL;
        err =
            cn_meta_batch_query(t->txn, &st, &cn__sql_repos_batch[CN_SQL_REPOS_BATCH_TREE_NODE_GET],
                                hashes + from, sizeof *hashes, c, "b", CN__ARG_ID(t->repo));
        while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
            int64_t j = cn_meta_column_int64(st, 0);
            size_t elen = 0, alen = 0;
            const uint8_t *enc = cn_meta_column_blob(st, 1, &elen);
            const uint8_t *aux = cn_meta_column_blob(st, 2, &alen);
            cn_digest_t h;
            if (j < 0 || (size_t)j >= c || !enc || kids[from + (size_t)j]->mem) {
                err = CN_E_CORRUPT;
                break;
            }
            cn_repos_node_hash(enc, elen, &h);
            if (memcmp(h.b, hashes[from + (size_t)j].b, CN_DIGEST_LEN) != 0)
                err = CN_E_CORRUPT;
            else
                err = wnode_from_row(t, enc, elen, aux, aux ? alen : 0, &h,
                                     &kids[from + (size_t)j]->mem);
            t->nodes_read++;
        }
        cn_meta_finish(st);
    }
    for (size_t i = 0; err >= 0 && i < n; i++)
        if (!kids[i]->mem)
            err = CN_E_CORRUPT; /* a parent names a node that is not stored */
    return err < 0 ? err : CN_OK;
}

/* Reads, in one statement, the kids of n from i on that a page walk still
 * wanting `want` entries reads next: those holding entries (all: entries,
 * tombstones included; else live ones) and not yet in memory, while the
 * entries of the kids taken before stay under want (one at least).  A walk
 * with a cursor may skip some of them unread otherwise; they cost a row
 * each, not a round trip each.  Called where a statement is a round trip
 * (on SQLite the walk's lookups one at a time cost less). */
static cn_err_t read_run(cn__ptree_t *t, cn__wnode_t *n, uint16_t i, uint64_t want, bool all)
{
    if (!t->run && !(t->run = calloc(256, sizeof *t->run)))
        return -ENOMEM;
    if (!t->run_hashes && !(t->run_hashes = calloc(256, sizeof *t->run_hashes)))
        return -ENOMEM;
    size_t m = 0;
    uint64_t seen = 0;
    for (; i < n->nkids && m < 256 && (!m || seen < want); i++) {
        cn__wkid_t *k = &n->kids[i];
        uint64_t e = all ? k->sum.entries : k->sum.live;
        if (!e || k->mem)
            continue;
        t->run[m++] = k;
        seen += e;
    }
    return m ? read_kids(t, t->run, m, t->run_hashes) : CN_OK;
}

cn_err_t cn__ptree_prefetch(cn__ptree_t *t, const uint8_t *const *keys, const size_t *lens,
                            size_t n)
{
    walk_t *w = calloc(n ? n : 1, sizeof *w);
    cn__wkid_t **miss = calloc(n ? n : 1, sizeof *miss);
    cn_digest_t *hashes = calloc(n ? n : 1, sizeof *hashes);
    cn_err_t err = w && miss && hashes ? CN_OK : -ENOMEM;
    for (size_t i = 0; i < n && w; i++)
        w[i].n = t->root;
    size_t m = 1;
    while (err >= 0 && m) {
        m = 0;
        for (size_t i = 0; i < n; i++) {
            if (w[i].n && walk_to_missing(&w[i], keys[i], lens[i], &miss[m]))
                m++;
            else
                w[i].n = NULL; /* its descent has ended */
        }
        qsort(miss, m, sizeof *miss, by_address);
        size_t kept = 0;
        for (size_t i = 0; i < m; i++)
            if (!kept || miss[kept - 1] != miss[i])
                miss[kept++] = miss[i];
        if (kept)
            err = read_kids(t, miss, kept, hashes);
    }
    free(w);
    free(miss);
    free(hashes);
    return err;
}

/* ---- lookups ------------------------------------------------------------------------ */
cn_err_t cn__ptree_get(cn__ptree_t *t, const uint8_t *path, size_t len, bool *found,
                       cn_repos_entry_t *e)
{
    *found = false;
    cn__wnode_t *n = t->root;
    size_t i = 0;
    while (i < len) {
        bool f;
        int at = kid_index(n, path[i], &f);
        if (!f)
            return CN_OK;
        cn__wnode_t *c;
        CN_TRY(kid_mem(t, &n->kids[at], &c));
        if (c->plen > len - i || memcmp(c->prefix, path + i, c->plen) != 0)
            return CN_OK;
        i += c->plen;
        n = c;
    }
    if (len && n->state != CN_REPOS_NONE) {
        *found = true;
        if (e)
            *e = n->e;
    }
    return CN_OK;
}

cn_err_t cn__ptree_live_under(cn__ptree_t *t, const uint8_t *prefix, size_t len, uint64_t *live)
{
    *live = 0;
    cn__wnode_t *n = t->root;
    size_t i = 0;
    if (!len) {
        *live = n->sum.live;
        return CN_OK;
    }
    while (i < len) {
        bool f;
        int at = kid_index(n, prefix[i], &f);
        if (!f)
            return CN_OK;
        cn__wkid_t *k = &n->kids[at];
        cn__wnode_t *c;
        CN_TRY(kid_mem(t, k, &c));
        size_t rest = len - i, m = c->plen < rest ? c->plen : rest;
        if (memcmp(c->prefix, prefix + i, m) != 0)
            return CN_OK;
        if (c->plen >= rest) {
            *live = c->sum.live;
            return CN_OK;
        }
        i += c->plen;
        n = c;
    }
    *live = n->sum.live;
    return CN_OK;
}

/* ---- updates ----------------------------------------------------------------------- */
static void set_entry(cn__wnode_t *n, const cn_repos_entry_t *e)
{
    n->state = e->state;
    cn__tree_entry_set(&n->e, e);
}

static cn_err_t kids_insert(cn__wnode_t *n, int at, cn__wnode_t *mem)
{
    /* Children stay sorted by their first byte, each byte at most once. */
    assert(mem->plen > 0 && at >= 0 && at <= n->nkids && n->nkids < 256);
    assert(at == 0 || n->kids[at - 1].byte < mem->prefix[0]);
    assert(at == n->nkids || n->kids[at].byte > mem->prefix[0]);
    CN_TRY(kids_reserve(n, (uint16_t)(n->nkids + 1)));
    memmove(n->kids + at + 1, n->kids + at, (size_t)(n->nkids - at) * sizeof *n->kids);
    memset(&n->kids[at], 0, sizeof n->kids[at]);
    n->kids[at].byte = mem->prefix[0];
    n->kids[at].mem = mem;
    n->nkids++;
    return CN_OK;
}

cn_err_t cn__ptree_put(cn__ptree_t *t, const uint8_t *path, size_t len, const cn_repos_entry_t *e)
{
    if (!len || len > CN_REPOS_MAX_PATH)
        return CN_E_INVALID;
    cn__wnode_t *n = t->root;
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
            cn__wnode_t *leaf = wnode_new(t);
            if (!leaf)
                return -ENOMEM;
            CN_TRY(set_bytes(&leaf->prefix, &leaf->plen, path + i, len - i, NULL, 0));
            set_entry(leaf, e);
            leaf->dirty = true;
            return kids_insert(n, at, leaf);
        }
        cn__wnode_t *c;
        CN_TRY(kid_mem(t, &n->kids[at], &c));
        size_t common = 0;
        while (common < c->plen && i + common < len && c->prefix[common] == path[i + common])
            common++;
        if (common == c->plen) {
            n = c;
            i += common;
            continue;
        }
        /* Split c's edge: mid takes the shared bytes, c keeps the rest (its
         * encoding changes with its prefix, so it is re-encoded too). */
        assert(common < c->plen && i + common <= len);
        cn__wnode_t *mid = wnode_new(t);
        if (!mid)
            return -ENOMEM;
        CN_TRY(set_bytes(&mid->prefix, &mid->plen, c->prefix, common, NULL, 0));
        uint8_t *rest = NULL;
        uint16_t rlen = 0;
        CN_TRY(set_bytes(&rest, &rlen, c->prefix + common, c->plen - common, NULL, 0));
        free(c->prefix);
        c->prefix = rest;
        c->plen = rlen;
        c->dirty = true;
        mid->dirty = true;
        CN_TRY(kids_insert(mid, 0, c));
        n->kids[at].mem = mid;
        if (i + common == len) {
            set_entry(mid, e);
            return CN_OK;
        }
        cn__wnode_t *leaf = wnode_new(t);
        if (!leaf)
            return -ENOMEM;
        CN_TRY(set_bytes(&leaf->prefix, &leaf->plen, path + i + common, len - i - common, NULL, 0));
        set_entry(leaf, e);
        leaf->dirty = true;
        return kids_insert(mid, leaf->prefix[0] < c->prefix[0] ? 0 : 1, leaf);
    }
}

/* ---- re-encoding --------------------------------------------------------------------- */
static const cn__tree_sum_t *kid_sum(const void *kids, uint16_t i, uint8_t *byte)
{
    const cn__wkid_t *k = (const cn__wkid_t *)kids + i;
    *byte = k->byte;
    return &k->sum;
}

static cn_err_t push_row(cn__ptree_t *t, cn__wnode_t *n)
{
    if (t->nrows == t->rcap) {
        size_t cap = t->rcap ? t->rcap * 2 : 16;
        cn__newrow_t *r = realloc(t->rows, cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        t->rows = r;
        t->rcap = cap;
    }
    cn__newrow_t *row = &t->rows[t->nrows];
    memset(row, 0, sizeof *row);
    t->nrows++;
    cn__tree_node_t d = { n->prefix, n->plen,   n->state, &n->e,   n->lo,  n->hi,
                          n->lo_len, n->hi_len, n->nkids, kid_sum, n->kids };
    CN_TRY(cn__tree_node_finish(&d, t->key.data, t->key.len, &row->enc, &n->sum));
    row->hash = n->sum.rev;
    if (n->sum.live)
        CN_TRY(cn_buf_append(&row->aux, n->sum.content.b, CN_DIGEST_LEN));
    for (uint16_t i = 0; i < n->nkids; i++)
        if (n->kids[i].sum.live)
            CN_TRY(cn_buf_append(&row->aux, n->kids[i].sum.content.b, CN_DIGEST_LEN));
    t->nodes_written++;
    return CN_OK;
}

/* Child summaries, bounds, then the row of a dirty node whose children are
 * current; key holds the node's full key. */
static __attribute__((noinline)) cn_err_t finish_node(cn__ptree_t *t, cn__wnode_t *n)
{
    for (uint16_t i = 0; i < n->nkids; i++) {
        cn__wkid_t *k = &n->kids[i];
        if (k->mem) {
            k->byte = k->mem->prefix[0];
            if (CN_NEVER(k->mem->dirty))
                return CN_E_INVALID; /* finish() finishes the children first */
            k->sum = k->mem->sum;
        }
    }
    /* Key bounds: unchanged unless the node gained its entry or its first /
     * last child is in memory (a changed bound always is). */
    if (n->state != CN_REPOS_NONE || n->nkids == 0) {
        CN_TRY(set_bytes(&n->lo, &n->lo_len, NULL, 0, NULL, 0));
    } else if (n->kids[0].mem) {
        const cn__wnode_t *f = n->kids[0].mem;
        CN_TRY(set_bytes(&n->lo, &n->lo_len, f->prefix, f->plen, f->lo, f->lo_len));
    }
    if (n->nkids == 0) {
        CN_TRY(set_bytes(&n->hi, &n->hi_len, NULL, 0, NULL, 0));
    } else if (n->kids[n->nkids - 1].mem) {
        const cn__wnode_t *l = n->kids[n->nkids - 1].mem;
        CN_TRY(set_bytes(&n->hi, &n->hi_len, l->prefix, l->plen, l->hi, l->hi_len));
    }
    /* A node without children has no bounds: its only key is its own. */
    assert(n->nkids > 0 || (n->lo_len == 0 && n->hi_len == 0));
    CN_TRY(push_row(t, n));
    n->dirty = false;
    return CN_OK;
}

static cn_err_t finish(cn__ptree_t *t, cn__wnode_t *n)
{
    size_t at = t->key.len;
    CN_TRY(cn_buf_append(&t->key, n->prefix, n->plen));
    for (uint16_t i = 0; i < n->nkids; i++)
        if (n->kids[i].mem && n->kids[i].mem->dirty)
            CN_TRY(finish(t, n->kids[i].mem));
    assert(t->key.len == at + n->plen); /* each child gave the key back */
    CN_TRY(finish_node(t, n));
    t->key.len = at;
    return CN_OK;
}

cn_err_t cn__ptree_finish(cn__ptree_t *t, cn_digest_t *content, cn_digest_t *revision)
{
    if (t->root->dirty) {
        cn_buf_reset(&t->key);
        CN_TRY(finish(t, t->root));
    }
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

static cn_err_t bind_node(void *ctx, cn_meta_stmt_t *st, int base, size_t i)
{
    const cn__ptree_t *t = ctx;
    const cn__newrow_t *r = &t->rows[i];
    return cn_meta_bindf(
        st, base, "bbbb", CN__ARG_ID(t->repo), CN__ARG_DIGEST(&r->hash), (const void *)r->enc.data,
        r->enc.len, (const void *)(r->aux.data ? r->aux.data : (const uint8_t *)""), r->aux.len);
}

cn_err_t cn__ptree_store(cn__ptree_t *t, cn_meta_txn_t *wtxn)
{
    /* pushed: its callers pass errors on */
    return cn__push_rows(wtxn, CN_SQL_REPOS_ROWS_TREE_NODE, t->nrows, bind_node, t);
}

cn_err_t cn__ptree_init_empty(cn_meta_txn_t *wtxn, const uint8_t repo[16], cn_digest_t *revision,
                              cn_digest_t *content)
{
    cn__tree_node_t root;
    cn__tree_sum_t sum;
    memset(&root, 0, sizeof root);
    cn_buf_t enc = { 0 };
    cn_err_t err = cn__tree_node_finish(&root, NULL, 0, &enc, &sum);
    if (err >= 0) {
        *revision = sum.rev;
        cn__tree_content_empty(content);
        err = cn_meta_pushf(wtxn, cn__sql_repos[CN_SQL_REPOS_TREE_NODE_INSERT], "bbbb",
                            CN__ARG_ID(repo), CN__ARG_DIGEST(revision), (const void *)enc.data,
                            enc.len, (const void *)"", (size_t)0);
    }
    cn_buf_free(&enc);
    return err;
}

/* ---- pages ----------------------------------------------------------------------------- */
typedef struct {
    cn__ptree_t *t;
    const uint8_t *prefix;
    size_t plen;
    const uint8_t *after;
    size_t alen;
    uint32_t limit, emitted;
    bool more;
    cn_repos_tree_fn fn;
    cn_repos_desc_fn efn; /* set: tombstones too, each with its entry */
    void *ctx;
} page_t;

/* Whether a key can lead to an entry in scope: it is a prefix of the page
 * prefix, or lies at or under it. */
static bool in_scope(const page_t *pg, const uint8_t *key, size_t kn)
{
    size_t m = kn < pg->plen ? kn : pg->plen;
    if (m && memcmp(key, pg->prefix, m) != 0)
        return false;
    if (kn <= pg->plen)
        return true;
    return pg->plen == 0 || key[pg->plen] == '/';
}

static bool path_in_scope(const page_t *pg, const uint8_t *key, size_t kn)
{
    if (!pg->plen)
        return true;
    if (kn < pg->plen || memcmp(key, pg->prefix, pg->plen) != 0)
        return false;
    return kn == pg->plen || key[pg->plen] == '/';
}

static cn_err_t page_walk(page_t *pg, cn__wnode_t *n)
{
    cn__ptree_t *t = pg->t;
    size_t at = t->key.len;
    CN_TRY(cn_buf_append(&t->key, n->prefix, n->plen));
    cn_err_t err = CN_OK;
    if (!in_scope(pg, t->key.data, t->key.len))
        goto out;
    bool held = n->state == CN_REPOS_LIVE || (pg->efn && n->state == CN_REPOS_TOMBSTONE);
    if (held && path_in_scope(pg, t->key.data, t->key.len) &&
        (!pg->after || cn__bytes_cmp(t->key.data, t->key.len, pg->after, pg->alen) > 0)) {
        if (pg->emitted == pg->limit) {
            pg->more = true;
            goto out;
        }
        cn_repos_tree_row_t row = { t->key.data, t->key.len, n->e.manifest,
                                    n->e.size,   n->e.mode,  n->e.change };
        if (pg->efn)
            err = pg->efn(pg->ctx, t->key.data, t->key.len, &n->e);
        else if (pg->fn)
            err = pg->fn(pg->ctx, &row);
        if (err != 0)
            goto out;
        pg->emitted++;
    }
    for (uint16_t i = 0; i < n->nkids && !pg->more; i++) {
        cn__wkid_t *k = &n->kids[i];
        if (!(pg->efn ? k->sum.entries : k->sum.live))
            continue;
        if (!k->mem && cn_meta_round_trips(t->txn) &&
            (err = read_run(t, n, i, pg->limit - pg->emitted + 1u, pg->efn != NULL)) < 0)
            goto out;
        cn__wnode_t *c;
        if ((err = kid_mem(t, k, &c)) < 0)
            goto out;
        /* Skip a subtree whose largest key (key + edge + hi) is not after
         * the cursor. */
        if (pg->after) {
            size_t base = t->key.len;
            if ((err = cn_buf_append(&t->key, c->prefix, c->plen)) < 0 ||
                (err = cn_buf_append(&t->key, c->hi, c->hi_len)) < 0)
                goto out;
            bool skip = cn__bytes_cmp(t->key.data, t->key.len, pg->after, pg->alen) <= 0;
            t->key.len = base;
            if (skip)
                continue;
        }
        if ((err = page_walk(pg, c)) != 0)
            goto out;
    }
out:
    t->key.len = at;
    return err;
}

/* A node of a page prefetch's level, and where its full key is. */
typedef struct front {
    cn__wnode_t *n;
    size_t koff, klen; /* in the level's key buffer */
} front_t;

/* One level of a page's range: every kid of the level's nodes a walk of
 * the page may enter (in scope, not wholly before the cursor), in key
 * order, while the live entries of the kids wholly inside the range stay
 * under what the page takes; their keys into keys. */
typedef struct level {
    front_t *f;
    size_t n, cap;
    cn_buf_t keys;
} level_t;

/* How key (kn bytes) of a subtree stands to the cursor: -1 every key under
 * it is before, 0 it straddles it, 1 every key is after (or no cursor). */
static int past_cursor(const page_t *pg, const uint8_t *key, size_t kn)
{
    if (!pg->after)
        return 1;
    size_t m = kn < pg->alen ? kn : pg->alen;
    int c = memcmp(key, pg->after, m);
    return c < 0 ? -1 : c > 0 || kn > pg->alen ? 1 : 0;
}

static cn_err_t level_add(level_t *lv, cn__wnode_t *n, const uint8_t *key, size_t kn)
{
    if (lv->n == lv->cap) {
        size_t cap = lv->cap ? lv->cap * 2 : 64;
        front_t *f = realloc(lv->f, cap * sizeof *f);
        if (!f)
            return -ENOMEM;
        lv->f = f;
        lv->cap = cap;
    }
    /* reserved first: an empty key (the root's) still leaves data set */
    CN_TRY(cn_buf_reserve(&lv->keys, kn + 1u));
    lv->f[lv->n++] = (front_t){ n, lv->keys.len, kn };
    return cn_buf_append(&lv->keys, key, kn);
}

/* The next level below cur: the kids to read (into kids, *m of them) and,
 * once read, their nodes with their keys (into nxt). */
static cn_err_t level_pick(const page_t *pg, const level_t *cur, cn__wkid_t ***kids, size_t *m,
                           size_t **from)
{
    uint64_t seen = 0, want = (uint64_t)pg->limit - pg->emitted + 1u;
    uint8_t key[CN_REPOS_MAX_PATH + 1];
    size_t cap = 0;
    *m = 0;
    for (size_t i = 0; i < cur->n && seen < want; i++) {
        const front_t *f = &cur->f[i];
        if (f->klen >= sizeof key)
            continue;
        memcpy(key, cur->keys.data + f->koff, f->klen);
        for (uint16_t j = 0; j < f->n->nkids && seen < want; j++) {
            cn__wkid_t *k = &f->n->kids[j];
            uint64_t e = pg->efn ? k->sum.entries : k->sum.live;
            key[f->klen] = k->byte;
            int at = past_cursor(pg, key, f->klen + 1u);
            if (!e || !in_scope(pg, key, f->klen + 1u) || at < 0)
                continue;
            if (*m == cap) {
                cap = cap ? cap * 2 : 64;
                cn__wkid_t **nk = realloc(*kids, cap * sizeof *nk);
                size_t *nf = realloc(*from, cap * sizeof *nf);
                if (nk)
                    *kids = nk;
                if (nf)
                    *from = nf;
                if (!nk || !nf)
                    return -ENOMEM;
            }
            (*kids)[*m] = k;
            (*from)[(*m)++] = i;
            if (at > 0 && f->klen + 1u > pg->plen)
                seen += e; /* wholly inside the range */
        }
    }
    return CN_OK;
}

/* Reads, where a statement is a round trip, the nodes a walk of the page
 * will read, a level of the tree per statement (instead of the walk's
 * read_run per node it enters).  Only a reading ahead: what it misses the
 * walk reads itself. */
static cn_err_t page_prefetch(page_t *pg)
{
    cn__ptree_t *t = pg->t;
    level_t lv[2] = { 0 };
    cn__wkid_t **kids = NULL, **miss = NULL;
    size_t *from = NULL, m = 0;
    cn_digest_t *hashes = NULL;
    cn_err_t err = level_add(&lv[0], t->root, t->root->prefix, t->root->plen);
    for (int c = 0; err >= 0 && lv[c].n; c ^= 1) {
        level_t *cur = &lv[c], *nxt = &lv[c ^ 1];
        nxt->n = 0;
        cn_buf_reset(&nxt->keys);
        if ((err = level_pick(pg, cur, &kids, &m, &from)) < 0 || !m)
            break;
        cn__wkid_t **nm = realloc(miss, m * sizeof *miss);
        cn_digest_t *nh = realloc(hashes, m * sizeof *hashes);
        miss = nm ? nm : miss;
        hashes = nh ? nh : hashes;
        size_t k = 0;
        for (size_t i = 0; nm && nh && i < m; i++)
            if (!kids[i]->mem)
                miss[k++] = kids[i];
        err = !nm || !nh ? -ENOMEM : k ? read_kids(t, miss, k, hashes) : CN_OK;
        for (size_t i = 0; err >= 0 && i < m; i++) {
            const front_t *f = &cur->f[from[i]];
            cn__wnode_t *n = kids[i]->mem;
            uint8_t key[CN_REPOS_MAX_PATH + 1];
            if (f->klen + n->plen > CN_REPOS_MAX_PATH)
                continue; /* no canonical path below: the walk decides */
            memcpy(key, cur->keys.data + f->koff, f->klen);
            memcpy(key + f->klen, n->prefix, n->plen);
            err = level_add(nxt, n, key, f->klen + n->plen);
        }
    }
    for (int c = 0; c < 2; c++) {
        free(lv[c].f);
        cn_buf_free(&lv[c].keys);
    }
    free(kids);
    free(from);
    free(miss);
    free(hashes);
    return err;
}

/* page_walk from the root, after page_prefetch where a statement is a
 * round trip. */
static cn_err_t page_run(page_t *pg, bool *more)
{
    cn_buf_reset(&pg->t->key);
    cn_err_t err = cn_meta_round_trips(pg->t->txn) ? page_prefetch(pg) : CN_OK;
    if (err >= 0)
        err = page_walk(pg, pg->t->root);
    *more = pg->more;
    return err;
}

cn_err_t cn__ptree_page(cn__ptree_t *t, const uint8_t *prefix, size_t plen, const uint8_t *after,
                        size_t alen, uint32_t limit, cn_repos_tree_fn fn, void *ctx, bool *more)
{
    page_t pg = { t, prefix, plen, after, alen, limit, 0, false, fn, NULL, ctx };
    return page_run(&pg, more);
}

cn_err_t cn__ptree_entries(cn__ptree_t *t, const uint8_t *prefix, size_t plen, const uint8_t *after,
                           size_t alen, uint32_t limit, cn_repos_desc_fn fn, void *ctx, bool *more)
{
    page_t pg = { t, prefix, plen, after, alen, limit, 0, false, NULL, fn, ctx };
    return page_run(&pg, more);
}
