/* Tree node parsing, the verifier of a full-tree proof, and the visitation
 * rule of fragmented proofs (enters / selects, shared by producer and
 * verifier).  The verifier
 * trusts nothing but the revision root it is given: it re-derives every
 * hash, summary, key bound and the content root from the node bytes. */
#include "model_tree_codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn_repos_node_parse(const uint8_t *p, size_t n, cn_repos_node_t *out)
{
    memset(out, 0, sizeof *out);
    cn_rd_t r = cn_rd_init(p, n);
    if (cn_rd_u8(&r) != 1)
        return CN_E_INVALID;
    out->prefix_len = cn_rd_u16le(&r);
    out->prefix = cn_rd_bytes(&r, out->prefix_len);
    out->entry_state = cn_rd_u8(&r);
    if (r.err || out->entry_state > CN_REPOS_TOMBSTONE || out->prefix_len > CN_REPOS_MAX_PATH)
        return CN_E_INVALID;
    out->entry.state = out->entry_state;
    if (out->entry_state != CN_REPOS_NONE)
        out->entry.change = cn_rd_u64le(&r);
    if (out->entry_state == CN_REPOS_LIVE) {
        const uint8_t *m = cn_rd_bytes(&r, CN_DIGEST_LEN);
        if (m)
            memcpy(out->entry.manifest.b, m, CN_DIGEST_LEN);
        out->entry.size = cn_rd_u64le(&r);
        out->entry.mode = cn_rd_u8(&r);
        if (!r.err && out->entry.mode > CN_REPOS_MODE_SYMLINK)
            return CN_E_INVALID;
    }
    out->entries = cn_rd_u64le(&r);
    out->live = cn_rd_u64le(&r);
    out->highest = cn_rd_u64le(&r);
    out->lo_len = cn_rd_u16le(&r);
    out->lo = cn_rd_bytes(&r, out->lo_len);
    out->hi_len = cn_rd_u16le(&r);
    out->hi = cn_rd_bytes(&r, out->hi_len);
    out->child_count = cn_rd_u16le(&r);
    if (r.err || out->child_count > 256 ||
        cn_rd_left(&r) != (size_t)out->child_count * CN_REPOS_NODE_CHILD_LEN)
        return CN_E_INVALID;
    out->children = p + r.off;
    /* Summaries: own entry plus the children's, children strictly ascending,
     * none of them empty. */
    uint64_t entries = out->entry_state != CN_REPOS_NONE, live = out->entry_state == CN_REPOS_LIVE;
    uint64_t highest = out->entry_state != CN_REPOS_NONE ? out->entry.change : 0;
    for (uint16_t i = 0; i < out->child_count; i++) {
        cn_repos_node_child_t c;
        cn_repos_node_child(out, i, &c);
        if (i > 0 && c.byte <= out->children[(size_t)(i - 1) * CN_REPOS_NODE_CHILD_LEN])
            return CN_E_INVALID;
        if (c.entries == 0 || c.live > c.entries || c.entries > UINT64_MAX - entries)
            return CN_E_INVALID;
        entries += c.entries;
        live += c.live;
        if (c.highest > highest)
            highest = c.highest;
    }
    if (entries != out->entries || live != out->live || highest != out->highest)
        return CN_E_INVALID;
    return CN_OK;
}

static uint64_t ld64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void cn_repos_node_child(const cn_repos_node_t *nd, uint16_t i, cn_repos_node_child_t *out)
{
    const uint8_t *q = nd->children + (size_t)i * CN_REPOS_NODE_CHILD_LEN;
    out->byte = q[0];
    memcpy(out->hash.b, q + 1, CN_DIGEST_LEN);
    out->entries = ld64(q + 33);
    out->live = ld64(q + 41);
    out->highest = ld64(q + 49);
}

/* ---- full-tree proof verification ---------------------------------------------- */
typedef struct {
    cn_repos_node_t nd;
    uint16_t next;      /* next child to visit */
    size_t key_len;     /* full key length at this node */
    size_t mark;        /* arena length when the node was entered */
    uint16_t live_kids; /* children whose content hash is on the arena */
} frame_t;

typedef struct {
    const uint8_t *p;
    size_t n, off;
    frame_t *st;
    size_t depth, cap;
    uint8_t key[CN_REPOS_MAX_PATH];
    cn_buf_t arena; /* content hashes of finished children */
} verifier_t;

static cn_err_t next_node(verifier_t *v, const uint8_t **enc, size_t *len)
{
    if (v->n - v->off < 4)
        return CN_E_INVALID;
    const uint8_t *q = v->p + v->off;
    uint32_t l = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    if (l > v->n - v->off - 4)
        return CN_E_INVALID;
    *enc = q + 4;
    *len = l;
    v->off += 4u + l;
    return CN_OK;
}

/* Checks a node's canonical shape and pushes it. */
static cn_err_t push(verifier_t *v, const uint8_t *enc, size_t len, bool root)
{
    frame_t f = { { 0 }, 0, 0, v->arena.len, 0 };
    CN_TRY(cn_repos_node_parse(enc, len, &f.nd));
    size_t base = root ? 0 : v->st[v->depth - 1].key_len;
    if (root ? f.nd.prefix_len != 0 : f.nd.prefix_len == 0)
        return CN_E_INVALID;
    if (f.nd.prefix_len > CN_REPOS_MAX_PATH - base)
        return CN_E_INVALID;
    memcpy(v->key + base, f.nd.prefix, f.nd.prefix_len);
    f.key_len = base + f.nd.prefix_len;
    if (root && f.nd.entry_state != CN_REPOS_NONE)
        return CN_E_INVALID;
    if (f.nd.entry_state != CN_REPOS_NONE && cn_repos_path_check(v->key, f.key_len))
        return CN_E_INVALID;
    /* A keyless inner node exists only where two keys diverge. */
    if (!root && f.nd.entry_state == CN_REPOS_NONE && f.nd.child_count < 2)
        return CN_E_INVALID;
    /* Bounds: the node's own key is its lowest; a leaf's highest. */
    if ((f.nd.entry_state != CN_REPOS_NONE || f.nd.child_count == 0) && f.nd.lo_len != 0)
        return CN_E_INVALID;
    if (f.nd.child_count == 0 && f.nd.hi_len != 0)
        return CN_E_INVALID;
    if (f.nd.lo_len > CN_REPOS_MAX_PATH - f.key_len || f.nd.hi_len > CN_REPOS_MAX_PATH - f.key_len)
        return CN_E_INVALID;
    if (v->depth == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        frame_t *st = realloc(v->st, cap * sizeof *st);
        if (!st)
            return -ENOMEM;
        v->st = st;
        v->cap = cap;
    }
    v->st[v->depth++] = f;
    return CN_OK;
}

/* bound (lo or hi of the parent) == child prefix || child's own bound */
static bool bound_ok(const uint8_t *b, uint16_t bl, const cn_repos_node_t *c, bool lo)
{
    const uint8_t *cb = lo ? c->lo : c->hi;
    uint16_t cbl = lo ? c->lo_len : c->hi_len;
    return bl == (size_t)c->prefix_len + cbl && memcmp(b, c->prefix, c->prefix_len) == 0 &&
           (cbl == 0 || memcmp(b + c->prefix_len, cb, cbl) == 0);
}

static __attribute__((noinline)) cn_err_t finish(verifier_t *v, const frame_t *f, cn_digest_t *out,
                                                 bool *has)
{
    bool live = f->nd.entry_state == CN_REPOS_LIVE;
    cn_digest_t entry;
    if (live)
        cn__tree_content_entry(v->key, f->key_len, &f->nd.entry, &entry);
    cn__tree_content_t c;
    cn__tree_content_begin(&c, live ? &entry : NULL, f->live_kids);
    if (f->live_kids)
        cn__tree_content_add(&c, v->arena.data + f->mark, f->live_kids);
    *has = cn__tree_content_end(&c, out);
    return CN_OK;
}

cn_err_t cn_repos_tree_proof_verify(const uint8_t *p, size_t n, const cn_digest_t *revision_root,
                                    cn_digest_t *content_root, uint64_t *live)
{
    verifier_t *v = calloc(1, sizeof *v);
    if (!v)
        return -ENOMEM;
    v->p = p;
    v->n = n;
    cn_err_t err;
    const uint8_t *enc;
    size_t len;
    cn_digest_t d;
    uint64_t root_live = 0;
    if ((err = next_node(v, &enc, &len)))
        goto out;
    cn_repos_node_hash(enc, len, &d);
    if (!cn_ct_equal(d.b, revision_root->b, CN_DIGEST_LEN)) {
        err = CN_E_DIGEST_MISMATCH;
        goto out;
    }
    if ((err = push(v, enc, len, true)))
        goto out;
    root_live = v->st[0].nd.live;
    while (v->depth > 0) {
        frame_t *f = &v->st[v->depth - 1];
        if (f->next < f->nd.child_count) {
            cn_repos_node_child_t c;
            cn_repos_node_child(&f->nd, f->next, &c);
            bool first = f->next == 0, last = f->next + 1 == f->nd.child_count;
            f->next++;
            if ((err = next_node(v, &enc, &len)))
                goto out;
            cn_repos_node_hash(enc, len, &d);
            if (!cn_ct_equal(d.b, c.hash.b, CN_DIGEST_LEN)) {
                err = CN_E_DIGEST_MISMATCH;
                goto out;
            }
            if ((err = push(v, enc, len, false)))
                goto out;
            f = &v->st[v->depth - 2]; /* push may have moved the stack */
            const cn_repos_node_t *cn = &v->st[v->depth - 1].nd;
            if (cn->prefix[0] != c.byte || cn->entries != c.entries || cn->live != c.live ||
                cn->highest != c.highest ||
                (first && f->nd.entry_state == CN_REPOS_NONE &&
                 !bound_ok(f->nd.lo, f->nd.lo_len, cn, true)) ||
                (last && !bound_ok(f->nd.hi, f->nd.hi_len, cn, false))) {
                err = CN_E_INVALID;
                goto out;
            }
            continue;
        }
        bool has;
        cn_digest_t content;
        if ((err = finish(v, f, &content, &has)))
            goto out;
        v->arena.len = f->mark;
        v->depth--;
        if (v->depth == 0) {
            if (has)
                *content_root = content;
            else
                cn__tree_content_empty(content_root);
        } else if (has) {
            if ((err = cn_buf_append(&v->arena, content.b, CN_DIGEST_LEN)))
                goto out;
            v->st[v->depth - 1].live_kids++;
        }
    }
    err = v->off == v->n ? CN_OK : CN_E_INVALID; /* no surplus nodes */
    if (!err && live)
        *live = root_live;
out:
    cn_buf_free(&v->arena);
    free(v->st);
    free(v);
    return err;
}

/* ---- fragmented proofs: the query's visitation (docs/protocol/scribe.md 17.3) ------- */
/* X = key || b below: the smallest key any node of a child can have. */

/* <0, 0, >0 as X compares with s (a proper prefix first). */
static int cmp_x(const uint8_t *key, size_t klen, uint8_t b, const uint8_t *s, size_t slen)
{
    size_t m = klen < slen ? klen : slen;
    int c = m ? memcmp(key, s, m) : 0;
    if (c)
        return c;
    if (slen <= klen)
        return 1;
    if (b != s[klen])
        return b < s[klen] ? -1 : 1;
    return slen == klen + 1 ? 0 : -1;
}

static bool prefix_x(const uint8_t *key, size_t klen, uint8_t b, const uint8_t *s, size_t slen)
{
    return slen > klen && (klen == 0 || memcmp(key, s, klen) == 0) && s[klen] == b;
}

/* X is a prefix of P, or P itself or under "P/". */
static bool scope_x(const cn_repos_proof_query_t *q, const uint8_t *key, size_t klen, uint8_t b)
{
    size_t pl = q->prefix_len;
    if (pl == 0)
        return true;
    size_t m = klen < pl ? klen : pl;
    if (m && memcmp(key, q->prefix, m) != 0)
        return false;
    if (pl > klen && q->prefix[klen] != b)
        return false;
    if (klen + 1 <= pl)
        return true;
    return (pl < klen ? key[pl] : b) == '/';
}

/* Index of the first listed path >= X (npaths: none). */
static uint32_t paths_lower(const cn_repos_proof_query_t *q, const uint8_t *key, size_t klen,
                            uint8_t b)
{
    uint32_t lo = 0, hi = q->npaths;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_x(key, klen, b, q->paths[mid].p, q->paths[mid].len) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool cn_repos_proof_enters(const cn_repos_proof_query_t *q, const uint8_t *key, size_t klen,
                           const cn_repos_node_child_t *c)
{
    uint8_t b = c->byte;
    switch (q->selector) {
    case CN_REPOS_PROOF_LIVE:
    case CN_REPOS_PROOF_CHANGED:
        if (q->selector == CN_REPOS_PROOF_LIVE ? c->live == 0 : c->highest <= q->lower)
            return false;
        if (!scope_x(q, key, klen, b))
            return false;
        return !q->after || prefix_x(key, klen, b, q->after, q->after_len) ||
               cmp_x(key, klen, b, q->after, q->after_len) > 0;
    case CN_REPOS_PROOF_EXACT:
        return c->entries > 0 && prefix_x(key, klen, b, q->prefix, q->prefix_len);
    case CN_REPOS_PROOF_PATHS: {
        uint32_t i = paths_lower(q, key, klen, b);
        return c->entries > 0 && i < q->npaths &&
               prefix_x(key, klen, b, q->paths[i].p, q->paths[i].len);
    }
    default: return false;
    }
}

/* K is P itself or under "P/" (any K for an empty P). */
static bool path_scope(const cn_repos_proof_query_t *q, const uint8_t *key, size_t klen)
{
    size_t pl = q->prefix_len;
    if (pl == 0)
        return true;
    if (klen < pl || memcmp(key, q->prefix, pl) != 0)
        return false;
    return klen == pl || key[pl] == '/';
}

bool cn_repos_proof_selects(const cn_repos_proof_query_t *q, const uint8_t *key, size_t klen,
                            const cn_repos_entry_t *e)
{
    if (e->state != CN_REPOS_LIVE && e->state != CN_REPOS_TOMBSTONE)
        return false;
    switch (q->selector) {
    case CN_REPOS_PROOF_LIVE:
    case CN_REPOS_PROOF_CHANGED:
        if (q->selector == CN_REPOS_PROOF_LIVE ? e->state != CN_REPOS_LIVE : e->change <= q->lower)
            return false;
        return path_scope(q, key, klen) &&
               (!q->after || cn__bytes_cmp(key, klen, q->after, q->after_len) > 0);
    case CN_REPOS_PROOF_EXACT: return cn__bytes_cmp(key, klen, q->prefix, q->prefix_len) == 0;
    case CN_REPOS_PROOF_PATHS: {
        if (klen == 0)
            return false;
        uint32_t i = paths_lower(q, key, klen - 1, key[klen - 1]);
        return i < q->npaths && cn__bytes_cmp(key, klen, q->paths[i].p, q->paths[i].len) == 0;
    }
    default: return false;
    }
}
