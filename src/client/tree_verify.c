/* The client's tree proof verifier (docs/protocol/scribe.md 17.3, 17.4).
 * The frontier is a stack of ancestors, each a copy of its node (its child
 * commitments are the lazy iterator) and its key length; one key buffer
 * holds the current path.  `pend` is the one node the next byte may be:
 * the root first, then the child the shared visitation rule enters next.
 * Anything else (a replayed, omitted, reordered or altered node) fails the
 * hash or shape checks, and a failure is final.
 *
 * A fragment is taken in two passes (scribe_int.h): the shape pass walks
 * the nodes, checks everything but their hashes and records each node's
 * expected hash; the check pass hashes them.  A pipelined reader sends
 * the next request between the two; nothing is handed out, and no next
 * fragment is taken, before the check pass succeeded. */
#include "cairn/tree_verify.h"
#include "scribe_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *enc; /* owned copy of the node */
    cn_repos_node_t nd;
    size_t klen;
    uint16_t next;
} vframe_t;

typedef struct {
    const uint8_t *p; /* in the caller's reply, alive until the check pass */
    size_t n;
    cn_digest_t want; /* the commitment the node's parent (or the root) made */
} vcheck_t;

typedef struct {
    size_t off, len; /* path bytes in the arena */
    cn_repos_entry_t entry;
} vval_t;

struct cn_tree_verify {
    cn_scribe_codec_t codec;
    uint8_t *page;
    size_t page_len;
    uint8_t selector;
    uint64_t lower;
    cn_scribe_str_t *paths;
    uint8_t *path_bytes;
    cn_repos_pathref_t *refs;
    uint32_t npaths;
    cn_repos_proof_query_t q;
    cn_digest_t content_root, revision_root;
    uint32_t remaining, fragments;
    vframe_t *st;
    size_t depth, cap;
    uint8_t key[CN_REPOS_MAX_PATH];
    bool have_pend, pend_root, started, done, failed;
    bool unchecked; /* a fragment's shape pass ran, its check pass not yet */
    vcheck_t *checks;
    uint32_t nchecks, ccap;
    cn_repos_node_child_t pend;
    uint16_t pend_index; /* in the top frame */
    vval_t *vals;
    uint32_t nvals, vcap;
    cn_buf_t arena;
    cn_tree_value_t view;
};

static void frames_clear(cn_tree_verify_t *v)
{
    while (v->depth)
        free(v->st[--v->depth].enc);
}

/* A failure is final: nothing verified so far is kept. */
static cn_err_t fail(cn_tree_verify_t *v, cn_err_t err)
{
    v->failed = true;
    v->have_pend = false;
    v->unchecked = false;
    v->nchecks = 0;
    frames_clear(v);
    v->nvals = 0;
    cn_buf_free(&v->arena);
    return err;
}

/* ---- configuration ------------------------------------------------------------------- */
static cn_err_t copy_paths(cn_tree_verify_t *v, const cn_tree_verify_cfg_t *cfg)
{
    size_t total = 0;
    for (uint32_t i = 0; i < cfg->npaths; i++)
        total += cfg->paths[i].len;
    uint8_t *bytes = malloc(total ? total : 1);
    v->paths = calloc(cfg->npaths ? cfg->npaths : 1, sizeof *v->paths);
    v->refs = calloc(cfg->npaths ? cfg->npaths : 1, sizeof *v->refs);
    v->path_bytes = bytes;
    if (!bytes || !v->paths || !v->refs)
        return -ENOMEM;
    size_t at = 0;
    for (uint32_t i = 0; i < cfg->npaths; i++) {
        memcpy(bytes + at, cfg->paths[i].p, cfg->paths[i].len);
        v->paths[i] = (cn_scribe_str_t){ bytes + at, cfg->paths[i].len };
        v->refs[i] = (cn_repos_pathref_t){ bytes + at, (uint16_t)cfg->paths[i].len };
        at += cfg->paths[i].len;
    }
    v->npaths = cfg->npaths;
    return CN_OK;
}

/* The first request, decoded with the codec's rules, gives the query. */
static cn_err_t set_query(cn_tree_verify_t *v)
{
    cn_buf_t b = { 0 };
    cn_tree_verify_t tmp = *v;
    tmp.started = false;
    tmp.have_pend = true;
    cn_err_t err = cn_tree_verify_request(&tmp, &b);
    cn_scribe_tree_proof_req_t d;
    if (err >= 0 && cn_scribe_dec_tree_proof_req(b.data, b.len, v->codec, &d) < 0)
        err = CN_E_INVALID;
    cn_buf_free(&b);
    if (err < 0)
        return CN_E_INVALID;
    cn_scribe_tree_page_req_t pq;
    if (cn_scribe_dec_tree_page_req(v->page, v->page_len, v->codec, &pq) < 0)
        return CN_E_INVALID;
    v->q.selector = v->selector;
    v->q.lower = v->lower;
    v->q.prefix = pq.prefix.len ? pq.prefix.p : (const uint8_t *)"";
    v->q.prefix_len = pq.prefix.len;
    if (pq.has_after) {
        v->q.after = pq.after.p;
        v->q.after_len = pq.after.len;
    }
    v->q.limit = cn_scribe_tree_proof_limit(v->selector, pq.limit);
    v->q.paths = v->refs;
    v->q.npaths = v->npaths;
    v->remaining = v->q.limit + 1;
    return CN_OK;
}

cn_err_t cn_tree_verify_new(const cn_tree_verify_cfg_t *cfg, cn_tree_verify_t **out)
{
    *out = NULL;
    if (cfg->npaths > CN_SCRIBE_MAX_PROOF_PATHS || cfg->page_len == 0)
        return CN_E_INVALID;
    cn_tree_verify_t *v = calloc(1, sizeof *v);
    if (!v)
        return -ENOMEM;
    v->codec = cfg->codec;
    v->selector = cfg->selector;
    v->lower = cfg->lower;
    v->content_root = cfg->content_root;
    v->revision_root = cfg->revision_root;
    v->page_len = cfg->page_len;
    cn_err_t err = (v->page = malloc(cfg->page_len)) ? CN_OK : -ENOMEM;
    if (err >= 0) {
        memcpy(v->page, cfg->page, cfg->page_len);
        err = copy_paths(v, cfg);
    }
    if (err >= 0)
        err = set_query(v);
    if (err < 0) {
        cn_tree_verify_free(v);
        return err;
    }
    v->have_pend = v->pend_root = true;
    v->pend.hash = v->revision_root;
    *out = v;
    return CN_OK;
}

void cn_tree_verify_free(cn_tree_verify_t *v)
{
    if (!v)
        return;
    frames_clear(v);
    free(v->st);
    free(v->checks);
    free(v->vals);
    cn_buf_free(&v->arena);
    free(v->path_bytes);
    free(v->paths);
    free(v->refs);
    free(v->page);
    free(v);
}

/* ---- requests -------------------------------------------------------------------------- */
cn_err_t cn_tree_verify_request(cn_tree_verify_t *v, cn_buf_t *out)
{
    if (v->failed || v->done || !v->have_pend)
        return CN_E_INVALID;
    cn_scribe_tree_proof_req_t q;
    memset(&q, 0, sizeof q);
    q.page = (cn_scribe_str_t){ v->page, (uint32_t)v->page_len };
    q.selector = v->selector;
    q.lower = v->lower;
    q.path_count = v->npaths;
    q.path_list = v->paths;
    q.continuation = v->started;
    if (v->started) {
        /* the edge: the top frame's key and the pending child's first byte */
        size_t kl = v->st[v->depth - 1].klen;
        if (kl >= CN_REPOS_MAX_PATH)
            return CN_E_INVALID;
        v->key[kl] = v->pend.byte; /* scratch past the key: rewritten on entry */
        q.edge = (cn_scribe_str_t){ v->key, (uint32_t)(kl + 1) };
        q.remaining = v->remaining;
    }
    return cn_scribe_enc_tree_proof_req(out, v->codec, &q);
}

/* ---- nodes ------------------------------------------------------------------------------- */
/* bound (a parent's lo or hi) == child prefix || the child's own bound */
static bool bound_ok(const uint8_t *b, uint16_t bl, const cn_repos_node_t *c, bool lo)
{
    const uint8_t *cb = lo ? c->lo : c->hi;
    uint16_t cbl = lo ? c->lo_len : c->hi_len;
    return bl == (size_t)c->prefix_len + cbl && memcmp(b, c->prefix, c->prefix_len) == 0 &&
           (cbl == 0 || memcmp(b + c->prefix_len, cb, cbl) == 0);
}

/* The canonical shape of a node at key length klen (section 11). */
static bool shape_ok(const cn_tree_verify_t *v, const cn_repos_node_t *nd, size_t klen, bool root)
{
    if (root ? (nd->prefix_len != 0 || nd->entry_state != CN_REPOS_NONE) : nd->prefix_len == 0)
        return false;
    if (nd->entry_state != CN_REPOS_NONE && cn_repos_path_check(v->key, klen) < 0)
        return false;
    if (!root && nd->entry_state == CN_REPOS_NONE && nd->child_count < 2)
        return false;
    if ((nd->entry_state != CN_REPOS_NONE || nd->child_count == 0) && nd->lo_len != 0)
        return false;
    if (nd->child_count == 0 && nd->hi_len != 0)
        return false;
    return nd->lo_len <= CN_REPOS_MAX_PATH - klen && nd->hi_len <= CN_REPOS_MAX_PATH - klen;
}

/* The node matches what its parent committed to: first byte, summaries,
 * and the parent's lo / hi when it is the first / last child. */
static bool parent_ok(const cn_tree_verify_t *v, const cn_repos_node_t *nd)
{
    const cn_repos_node_child_t *c = &v->pend;
    const vframe_t *p = &v->st[v->depth - 1];
    if (nd->prefix[0] != c->byte || nd->entries != c->entries || nd->live != c->live ||
        nd->highest != c->highest)
        return false;
    if (v->pend_index == 0 && p->nd.entry_state == CN_REPOS_NONE &&
        !bound_ok(p->nd.lo, p->nd.lo_len, nd, true))
        return false;
    if (v->pend_index + 1 == p->nd.child_count && !bound_ok(p->nd.hi, p->nd.hi_len, nd, false))
        return false;
    return true;
}

static cn_err_t keep_value(cn_tree_verify_t *v, size_t klen, const cn_repos_entry_t *e)
{
    if (v->nvals == v->vcap) {
        uint32_t cap = v->vcap ? v->vcap * 2 : 64;
        vval_t *n = realloc(v->vals, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        v->vals = n;
        v->vcap = cap;
    }
    vval_t *x = &v->vals[v->nvals++];
    x->off = v->arena.len;
    x->len = klen;
    x->entry = *e;
    return cn_buf_append(&v->arena, v->key, klen);
}

/* Sets pend to the next child the visitation enters, popping finished
 * frames; done when there is none. */
static void advance(cn_tree_verify_t *v)
{
    while (v->depth > 0) {
        vframe_t *f = &v->st[v->depth - 1];
        while (f->next < f->nd.child_count) {
            uint16_t i = f->next++;
            cn_repos_node_child(&f->nd, i, &v->pend);
            if (cn_repos_proof_enters(&v->q, v->key, f->klen, &v->pend)) {
                v->pend_index = i;
                return;
            }
        }
        free(f->enc);
        v->depth--;
    }
    v->have_pend = false;
    v->done = true;
}

static cn_err_t push(cn_tree_verify_t *v, const uint8_t *p, size_t n, size_t klen)
{
    if (v->depth == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 32;
        vframe_t *st = realloc(v->st, cap * sizeof *st);
        if (!st)
            return -ENOMEM;
        v->st = st;
        v->cap = cap;
    }
    vframe_t *f = &v->st[v->depth];
    if (!(f->enc = malloc(n)))
        return -ENOMEM;
    memcpy(f->enc, p, n);
    if (cn_repos_node_parse(f->enc, n, &f->nd) < 0) {
        free(f->enc);
        return CN_E_INVALID;
    }
    f->klen = klen;
    f->next = 0;
    v->depth++;
    return CN_OK;
}

/* Records that node p must hash to the commitment pend holds (the check
 * pass compares). */
static cn_err_t defer_check(cn_tree_verify_t *v, const uint8_t *p, size_t n)
{
    if (v->nchecks == v->ccap) {
        uint32_t cap = v->ccap ? v->ccap * 2 : 256;
        vcheck_t *c = realloc(v->checks, cap * sizeof *c);
        if (!c)
            return -ENOMEM;
        v->checks = c;
        v->ccap = cap;
    }
    v->checks[v->nchecks++] = (vcheck_t){ p, n, v->pend.hash };
    return CN_OK;
}

/* One node: the one pend names, its hash check recorded, its shape
 * checked, its value recorded, then the frontier moves on. */
static cn_err_t take(cn_tree_verify_t *v, const uint8_t *p, size_t n)
{
    if (!v->have_pend)
        return CN_E_INVALID; /* a node past the end */
    CN_TRY(defer_check(v, p, n));
    cn_repos_node_t nd;
    if (cn_repos_node_parse(p, n, &nd) < 0)
        return CN_E_INVALID;
    bool root = v->pend_root;
    size_t base = root ? 0 : v->st[v->depth - 1].klen;
    if (nd.prefix_len > CN_REPOS_MAX_PATH - base)
        return CN_E_INVALID;
    memcpy(v->key + base, nd.prefix, nd.prefix_len);
    size_t klen = base + nd.prefix_len;
    if (!shape_ok(v, &nd, klen, root) || (!root && !parent_ok(v, &nd)))
        return CN_E_INVALID;
    v->pend_root = false;
    v->started = true;
    if (cn_repos_proof_selects(&v->q, v->key, klen, &nd.entry)) {
        CN_TRY(keep_value(v, klen, &nd.entry));
        if (--v->remaining == 0) {
            frames_clear(v);
            v->have_pend = false;
            v->done = true;
            return CN_OK;
        }
    }
    CN_TRY(push(v, p, n, klen));
    advance(v);
    return CN_OK;
}

cn_err_t cn__tree_verify_shape(cn_tree_verify_t *v, const uint8_t *p, size_t n)
{
    if (v->failed || v->done || v->unchecked)
        return fail(v, CN_E_INVALID); /* after the end, a failure, or an unchecked fragment */
    v->unchecked = true;
    v->nchecks = 0;
    cn_scribe_tree_proof_resp_t r;
    if (cn_scribe_dec_tree_proof_resp(p, n, v->codec, &r) < 0)
        return fail(v, CN_E_INVALID);
    if (!cn_ct_equal(r.content_root.b, v->content_root.b, CN_DIGEST_LEN) ||
        !cn_ct_equal(r.revision_root.b, v->revision_root.b, CN_DIGEST_LEN))
        return fail(v, CN_E_DIGEST_MISMATCH);
    if (r.count == 0)
        return fail(v, CN_E_INVALID); /* a valid node always fits: no progress is a lie */
    v->fragments++;
    cn_scribe_str_t s;
    while (cn_scribe_next_proof_node(&r.nodes, &s)) {
        cn_err_t err = take(v, s.p, s.len);
        if (err < 0)
            return fail(v, err);
    }
    return CN_OK;
}

cn_err_t cn__tree_verify_check(cn_tree_verify_t *v)
{
    if (v->failed || !v->unchecked)
        return fail(v, CN_E_INVALID);
    for (uint32_t i = 0; i < v->nchecks; i++) {
        cn_digest_t h;
        cn_repos_node_hash(v->checks[i].p, v->checks[i].n, &h);
        if (!cn_ct_equal(h.b, v->checks[i].want.b, CN_DIGEST_LEN))
            return fail(v, CN_E_DIGEST_MISMATCH);
    }
    v->nchecks = 0;
    v->unchecked = false;
    return CN_OK;
}

cn_err_t cn_tree_verify_feed(cn_tree_verify_t *v, const uint8_t *p, size_t n)
{
    CN_TRY(cn__tree_verify_shape(v, p, n));
    return cn__tree_verify_check(v);
}

/* ---- results ------------------------------------------------------------------------------- */
bool cn_tree_verify_done(const cn_tree_verify_t *v)
{
    return v->done && !v->failed && !v->unchecked;
}

bool cn__tree_verify_shaped(const cn_tree_verify_t *v)
{
    return v->done && !v->failed;
}

cn_err_t cn__tree_verify_cursor(const cn_tree_verify_t *v, bool *more, const uint8_t **path,
                                size_t *path_len)
{
    if (!cn__tree_verify_shaped(v))
        return CN_E_INVALID;
    bool range = v->selector <= CN_REPOS_PROOF_CHANGED;
    *more = range && v->nvals > v->q.limit;
    uint32_t count = *more ? v->q.limit : v->nvals;
    *path = count ? v->arena.data + v->vals[count - 1].off : NULL;
    *path_len = count ? v->vals[count - 1].len : 0;
    return CN_OK;
}

cn_err_t cn_tree_verify_result(const cn_tree_verify_t *v, uint32_t *count, bool *more)
{
    if (!cn_tree_verify_done(v))
        return CN_E_INVALID;
    bool range = v->selector <= CN_REPOS_PROOF_CHANGED;
    *more = range && v->nvals > v->q.limit;
    *count = *more ? v->q.limit : v->nvals;
    return CN_OK;
}

const cn_tree_value_t *cn_tree_verify_value(const cn_tree_verify_t *v, uint32_t i)
{
    uint32_t count;
    bool more;
    if (cn_tree_verify_result(v, &count, &more) < 0 || i >= count)
        return NULL;
    cn_tree_verify_t *w = (cn_tree_verify_t *)v; /* the view is scratch */
    w->view.path = v->arena.data + v->vals[i].off;
    w->view.path_len = v->vals[i].len;
    w->view.entry = v->vals[i].entry;
    return &w->view;
}

uint32_t cn_tree_verify_fragments(const cn_tree_verify_t *v)
{
    return v->fragments;
}

cn_err_t cn_tree_verify_page(cn_tree_verify_t *v, cn_tree_verify_call_fn call, void *ctx)
{
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_err_t err = CN_OK;
    while (err >= 0 && !cn_tree_verify_done(v)) {
        cn_buf_reset(&req);
        cn_buf_reset(&reply);
        err = cn_tree_verify_request(v, &req);
        if (err >= 0)
            err = call(ctx, req.data, req.len, &reply);
        if (err >= 0)
            err = cn_tree_verify_feed(v, reply.data, reply.len);
        else
            fail(v, err);
    }
    cn_buf_free(&req);
    cn_buf_free(&reply);
    return err;
}

uint32_t cn_tree_verify_paths_fit(size_t page_len, const cn_scribe_str_t *paths, uint32_t from,
                                  uint32_t n)
{
    /* bytes32 page, selector, path count, continuation: bool, bytes32 edge, u32 */
    size_t used = 4 + page_len + 1 + 4 + 1 + 4 + CN_SCRIBE_MAX_PATH + 4;
    uint32_t k = 0;
    while (from + k < n && k < CN_SCRIBE_MAX_PROOF_PATHS) {
        size_t cost = 2 + (size_t)paths[from + k].len;
        if (used + cost > CN_SCRIBE_MAX_PROOF_REQ)
            break;
        used += cost;
        k++;
    }
    return k;
}
