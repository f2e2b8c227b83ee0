/* tree_proof (43) on the Scribe adapter: decode (every rule of
 * docs/protocol/scribe.md 17.2 is the codec's), call cn_repos_tree_proof for
 * one fragment, encode the roots and nodes.  Reader, as tree_page. */
#include "server_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cn_buf_t items;
    uint32_t count;
    cn_scribe_codec_t codec;
} nodes_t;

static cn_err_t add_node(void *ctx, const uint8_t *node, size_t len)
{
    nodes_t *a = ctx;
    a->count++;
    return cn_scribe_enc_tree_proof_node(&a->items, a->codec, node, len);
}

/* The service query of a decoded request; paths[] (selector 3) is filled
 * from the request's rows and owned by the caller. */
static cn_err_t proof_query(const cn_scribe_tree_proof_req_t *d, cn_repos_pathref_t **paths,
                            cn_repos_proof_req_t *q)
{
    const cn_scribe_tree_page_req_t *pq = &d->pq;
    memset(q, 0, sizeof *q);
    memcpy(q->repo, pq->repo.b, 16);
    memcpy(q->branch, pq->branch.b, 16);
    q->change = pq->change;
    q->query.selector = d->selector;
    q->query.lower = d->lower;
    q->query.prefix = pq->prefix.p ? pq->prefix.p : (const uint8_t *)"";
    q->query.prefix_len = pq->prefix.len;
    if (pq->has_after) {
        q->query.after = pq->after.p;
        q->query.after_len = pq->after.len;
    }
    q->query.limit = cn_scribe_tree_proof_limit(d->selector, pq->limit);
    q->remaining = d->continuation ? d->remaining : q->query.limit + 1;
    if (d->continuation) {
        q->edge = d->edge.p;
        q->edge_len = d->edge.len;
    }
    *paths = NULL;
    if (d->path_count) {
        if (!(*paths = calloc(d->path_count, sizeof **paths)))
            return -ENOMEM;
        cn_scribe_rows_t it = d->paths;
        cn_scribe_str_t s;
        for (uint32_t i = 0; i < d->path_count && cn_scribe_next_path(&it, &s); i++)
            (*paths)[i] = (cn_repos_pathref_t){ s.p, (uint16_t)s.len };
        q->query.paths = *paths;
        q->query.npaths = d->path_count;
    }
    return CN_OK;
}

cn_err_t cn__scribe_op_proof(cn__scribe_call_t *k)
{
    cn_scribe_tree_proof_req_t d;
    if (cn_scribe_dec_tree_proof_req(k->payload, k->len, k->sc->codec, &d) < 0)
        return cn__scribe_malformed(k);
    cn_repos_proof_req_t q;
    cn_repos_pathref_t *paths = NULL;
    nodes_t a = { { 0 }, 0, k->sc->codec };
    cn_digest_t cr, rr;
    cn_err_t err = proof_query(&d, &paths, &q);
    if (err >= 0)
        err = cn_repos_tree_proof(k->sc->srv->repos, &k->rq, &q, add_node, &a, &cr, &rr);
    if (err >= 0) {
        cn_buf_reset(&k->sc->out);
        err = cn_scribe_enc_tree_proof_resp(&k->sc->out, k->sc->codec, &cr, &rr, a.count,
                                            a.items.data, a.items.len);
        if (err >= 0)
            err = cn__scribe_reply(k, 0);
    } else {
        err = cn__scribe_fail(k, err);
    }
    cn_buf_free(&a.items);
    free(paths);
    return err;
}
