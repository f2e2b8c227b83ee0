/* Tree proof fragments (docs/protocol/scribe.md 17.3): the query's
 * depth-first visitation of one snapshot, from its root or resumed at an
 * edge prefix, handing out each visited node's stored encoding.  Stateless:
 * a continuation seeks its node again from the historical root and rebuilds
 * the ancestors' child iterators.  It never decides what a page holds
 * beyond the shared rule (cn_repos_proof_enters / _selects) and never
 * writes.  Every node read must hash to its parent's commitment. */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *enc; /* the node's encoding, owned */
    cn_repos_node_t nd;
    size_t klen;   /* full key length */
    uint16_t next; /* next child to consider */
} pframe_t;

/* A node read ahead: its hash and encoding (owned). */
typedef struct ahead {
    cn_digest_t hash;
    uint8_t *enc;
    size_t len;
} ahead_t;

typedef struct {
    cn_meta_txn_t *txn;
    const uint8_t *repo;
    /* Where a statement is a round trip (cn_meta_round_trips): the children
     * of each pushed frame that the visitation enters, read in one batch
     * statement and taken by load() as it reaches them (issue 24). */
    ahead_t *ahead;
    size_t nahead, ahead_cap, ahead_bytes;
    const cn_repos_proof_req_t *q;
    cn_repos_node_fn fn;
    void *ctx;
    pframe_t *st;
    size_t depth, cap;
    uint8_t key[CN_REPOS_MAX_PATH];
    uint32_t remaining, nodes, max_nodes;
    size_t bytes, max_bytes;
} prover_t;

/* The stored encoding named hash, checked against it (a copy in *out). */
static cn_err_t read_raw(prover_t *pr, const cn_digest_t *hash, uint8_t **out, size_t *len)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(pr->txn, cn__sql_repos[CN_SQL_REPOS_TREE_NODE_GET], &st);
    if (err < 0)
        return err;
    cn__bind_id(st, 1, pr->repo);
    cn__bind_digest(st, 2, hash);
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t n = 0;
        const uint8_t *enc = cn_meta_column_blob(st, 0, &n);
        cn_digest_t h;
        cn_repos_node_hash(enc ? enc : (const uint8_t *)"", enc ? n : 0, &h);
        if (!enc || !n || memcmp(h.b, hash->b, CN_DIGEST_LEN) != 0) {
            err = CN_E_CORRUPT;
        } else if (!(*out = malloc(n))) {
            err = -ENOMEM;
        } else {
            memcpy(*out, enc, n);
            *len = n;
            err = CN_OK;
        }
    } else if (err == CN_META_DONE) {
        err = CN_E_CORRUPT; /* a parent names a node that is not stored */
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* Takes the encoding of hash from the nodes read ahead: true when there. */
static bool take_ahead(prover_t *pr, const cn_digest_t *hash, uint8_t **out, size_t *len)
{
    for (size_t i = pr->nahead; i-- > 0;) /* the deepest frame's children are last */
        if (!memcmp(pr->ahead[i].hash.b, hash->b, CN_DIGEST_LEN)) {
            *out = pr->ahead[i].enc;
            *len = pr->ahead[i].len;
            pr->ahead_bytes -= *len;
            memmove(&pr->ahead[i], &pr->ahead[i + 1], (pr->nahead - i - 1) * sizeof *pr->ahead);
            pr->nahead--;
            return true;
        }
    return false;
}

/* Reads the node named hash below the top frame (none: the root) into *f,
 * its prefix appended to the key. */
static cn_err_t load(prover_t *pr, const cn_digest_t *hash, pframe_t *f, size_t *len)
{
    size_t base = pr->depth ? pr->st[pr->depth - 1].klen : 0;
    memset(f, 0, sizeof *f);
    if (!take_ahead(pr, hash, &f->enc, len))
        CN_TRY(read_raw(pr, hash, &f->enc, len));
    if (cn_repos_node_parse(f->enc, *len, &f->nd) < 0 ||
        f->nd.prefix_len > CN_REPOS_MAX_PATH - base ||
        (pr->depth == 0) != (f->nd.prefix_len == 0)) {
        free(f->enc);
        f->enc = NULL;
        return CN_E_CORRUPT;
    }
    memcpy(pr->key + base, f->nd.prefix, f->nd.prefix_len);
    f->klen = base + f->nd.prefix_len;
    return CN_OK;
}

static cn_err_t push(prover_t *pr, const pframe_t *f)
{
    if (pr->depth == pr->cap) {
        size_t cap = pr->cap ? pr->cap * 2 : 32;
        pframe_t *st = realloc(pr->st, cap * sizeof *st);
        if (!st)
            return -ENOMEM;
        pr->st = st;
        pr->cap = cap;
    }
    pr->st[pr->depth++] = *f;
    return CN_OK;
}

static void pop(prover_t *pr)
{
    free(pr->st[--pr->depth].enc);
}

/* The next child the visitation enters, popping finished frames; false at
 * the end of the traversal. */
static bool next_child(prover_t *pr, cn_repos_node_child_t *c)
{
    while (pr->depth > 0) {
        pframe_t *f = &pr->st[pr->depth - 1];
        while (f->next < f->nd.child_count) {
            cn_repos_node_child(&f->nd, f->next++, c);
            if (cn_repos_proof_enters(&pr->q->query, pr->key, f->klen, c))
                return true;
        }
        pop(pr);
    }
    return false;
}

/* The child of f with first edge byte b (false: none); f->next moves past it. */
static bool child_at(pframe_t *f, uint8_t b, cn_repos_node_child_t *c)
{
    for (uint16_t i = 0; i < f->nd.child_count; i++) {
        cn_repos_node_child(&f->nd, i, c);
        if (c->byte == b) {
            f->next = (uint16_t)(i + 1);
            return true;
        }
    }
    return false;
}

/* Continuation: walks from the root to the parent of the edge's node,
 * pushing each ancestor with its iterator past the child on the path; *c
 * is the edge's node. */
static cn_err_t seek(prover_t *pr, const cn_digest_t *root, cn_repos_node_child_t *c)
{
    const uint8_t *e = pr->q->edge;
    size_t m = pr->q->edge_len - 1; /* the parent's key length */
    cn_digest_t at = *root;
    for (;;) {
        pframe_t f;
        size_t len;
        CN_TRY(load(pr, &at, &f, &len));
        if (f.klen > m || memcmp(pr->key, e, f.klen) != 0 ||
            !child_at(&f, e[f.klen == m ? m : f.klen], c)) {
            free(f.enc);
            return CN_E_INVALID;
        }
        cn_err_t err = push(pr, &f);
        if (err < 0) {
            free(f.enc);
            return err;
        }
        if (f.klen == m)
            return CN_OK;
        at = c->hash;
    }
}

static cn_err_t ahead_row(prover_t *pr, cn_meta_stmt_t *st, const cn_digest_t *want)
{
    size_t n = 0;
    const uint8_t *enc = cn_meta_column_blob(st, 1, &n);
    cn_digest_t h;
    if (!enc || !n)
        return CN_E_CORRUPT;
    cn_repos_node_hash(enc, n, &h);
    if (memcmp(h.b, want->b, CN_DIGEST_LEN) != 0)
        return CN_E_CORRUPT;
    ahead_t *a = &pr->ahead[pr->nahead];
    if (!(a->enc = malloc(n)))
        return -ENOMEM;
    memcpy(a->enc, enc, n);
    a->hash = h;
    a->len = n;
    pr->nahead++;
    pr->ahead_bytes += n;
    return CN_OK;
}

/* Reads ahead the children of the top frame that the visitation enters,
 * while the nodes and bytes read ahead stay within what the fragment may
 * still send; a child missing from the rows is read again by load (and
 * found corrupt there). */
static cn_err_t read_ahead(prover_t *pr)
{
    pframe_t *f = &pr->st[pr->depth - 1];
    size_t room = pr->max_nodes - pr->nodes, n = 0;
    if (pr->nahead >= room || pr->ahead_bytes >= pr->max_bytes - pr->bytes)
        return CN_OK;
    room -= pr->nahead;
    if (pr->ahead_cap < pr->nahead + f->nd.child_count) {
        size_t cap = pr->nahead + f->nd.child_count + 64;
        ahead_t *a = realloc(pr->ahead, cap * sizeof *a);
        if (!a)
            return -ENOMEM;
        pr->ahead = a;
        pr->ahead_cap = cap;
    }
    cn_digest_t hashes[256];
    for (uint16_t i = f->next; i < f->nd.child_count && n < room && n < 256; i++) {
        cn_repos_node_child_t c;
        cn_repos_node_child(&f->nd, i, &c);
        if (cn_repos_proof_enters(&pr->q->query, pr->key, f->klen, &c))
            hashes[n++] = c.hash;
    }
    if (n < 2)
        return CN_OK; /* one child: its own read is as cheap */
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_batch_query(pr->txn, &st, &cn__sql_repos_batch[CN_SQL_REPOS_BATCH_TREE_NODE_GET],
                            hashes, sizeof *hashes, n, "b", CN__ARG_ID(pr->repo));
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        int64_t j = cn_meta_column_int64(st, 0);
        err = j < 0 || (size_t)j >= n ? CN_E_CORRUPT : ahead_row(pr, st, &hashes[j]);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* Visits from the node c names until the budget, the end or `remaining`. */
static cn_err_t visit(prover_t *pr, cn_repos_node_child_t *c, bool have)
{
    while (have) {
        pframe_t f;
        size_t len;
        CN_TRY(load(pr, &c->hash, &f, &len));
        if (pr->nodes == pr->max_nodes || len > pr->max_bytes - pr->bytes) {
            free(f.enc); /* the node that would overflow: visited, not sent */
            return CN_OK;
        }
        cn_err_t err = pr->fn(pr->ctx, f.enc, len);
        pr->nodes++;
        pr->bytes += len;
        if (err >= 0 && cn_repos_proof_selects(&pr->q->query, pr->key, f.klen, &f.nd.entry) &&
            --pr->remaining == 0) {
            free(f.enc);
            return CN_OK;
        }
        if (err >= 0)
            err = push(pr, &f);
        if (err < 0) {
            free(f.enc);
            return err;
        }
        if (cn_meta_round_trips(pr->txn))
            CN_TRY(read_ahead(pr));
        have = next_child(pr, c);
    }
    return CN_OK;
}

/* A proof read: the visited nodes are collected into rows
 * (cn__rows_bytes_add, within the prover's node and byte budget) and handed
 * to the caller's fn after the run, so that a repeated run (CN_META_RETRY)
 * hands each once. */
typedef struct {
    cn_repos_req_t *rq;
    const cn_repos_proof_req_t *q;
    cn__rows_t rows;
    cn_digest_t content, revision;
} proof_t;

static cn_err_t proof_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    proof_t *p = ctx;
    const cn_repos_proof_req_t *q = p->q;
    cn_repos_branch_t b;
    (void)repo;
    /* an earlier attempt's nodes */
    cn__rows_start(&p->rows, q->max_nodes ? q->max_nodes : CN_REPOS_PROOF_MAX_NODES);
    CN_TRY(cn__branch_load(txn, p->rq, q->repo, q->branch, &b));
    CN_TRY(cn__branch_within(p->rq, &b, q->change));
    CN_TRY(cn__snapshot_root(txn, q->repo, q->branch, q->change, &p->revision, &p->content));
    prover_t *pr = calloc(1, sizeof *pr);
    if (!pr)
        return -ENOMEM;
    *pr = (prover_t){ .txn = txn,
                      .repo = q->repo,
                      .q = q,
                      .fn = cn__rows_bytes_add,
                      .ctx = &p->rows,
                      .remaining = q->remaining,
                      .max_nodes = p->rows.max,
                      .max_bytes = q->max_bytes ? q->max_bytes : CN_REPOS_PROOF_MAX_BYTES };
    cn_repos_node_child_t c = { 0 };
    c.hash = p->revision;
    cn_err_t err = CN_OK;
    if (q->edge) {
        err = seek(pr, &p->revision, &c);
        if (err == CN_E_INVALID)
            err = cn__rfail(p->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                            "the edge prefix names no node of the snapshot");
    }
    if (err >= 0)
        err = visit(pr, &c, true);
    while (pr->depth)
        pop(pr);
    for (size_t i = 0; i < pr->nahead; i++)
        free(pr->ahead[i].enc);
    free(pr->ahead);
    free(pr->st);
    free(pr);
    return err;
}

static bool query_ok(const cn_repos_proof_req_t *q)
{
    const cn_repos_proof_query_t *y = &q->query;
    if (y->selector > CN_REPOS_PROOF_PATHS || q->remaining == 0 || q->remaining - 1 > y->limit ||
        (q->edge && (q->edge_len < 1 || q->edge_len > CN_REPOS_MAX_PATH)))
        return false;
    if ((y->prefix_len && cn_repos_path_check(y->prefix, y->prefix_len) < 0) ||
        (y->after && cn_repos_path_check(y->after, y->after_len) < 0))
        return false;
    if (y->selector == CN_REPOS_PROOF_EXACT && y->prefix_len == 0)
        return false;
    for (uint32_t i = 0; i < y->npaths; i++)
        if (cn_repos_path_check(y->paths[i].p, y->paths[i].len) < 0)
            return false;
    return true;
}

cn_err_t cn_repos_tree_proof(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_proof_req_t *q,
                             cn_repos_node_fn fn, void *ctx, cn_digest_t *content_root,
                             cn_digest_t *revision_root)
{
    if (!query_ok(q))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the proof query breaks the rules of tree_proof");
    proof_t p = { .rq = rq, .q = q };
    cn_err_t err =
        cn__repo_run(r, rq, q->repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, proof_body, &p);
    if (err >= 0) {
        *content_root = p.content;
        *revision_root = p.revision;
    }
    return cn__rows_bytes_hand(&p.rows, err, fn, ctx);
}
