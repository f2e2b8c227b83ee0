/* The Scribe client's verified reads (include/cairn/scribe_client.h,
 * "verified reads"): tree pages proved through tree_proof (43) by the
 * verifier of cairn/tree_verify.h over the client's own connection, and
 * commit objects checked against their ids.
 *
 * It never hands out an entry of a page whose proof (page and lookahead)
 * did not complete, never falls back to tree_page, and never retries a
 * proof that failed verification: only a transport failure restarts the
 * page's proof, once, from its first fragment. */
#include "cairn/scribe_client.h"
#include "cairn/scribe.h"
#include "cairn/tree_verify.h"
#include "cairn/repos_model.h"
#include "scribe_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cn__scribe_tree_page_fill(cn_scribe_tree_page_req_t *q, const uint8_t repo[16],
                               const uint8_t branch[16], uint64_t change, const char *prefix,
                               bool has_after, const char *after)
{
    memset(q, 0, sizeof *q);
    memcpy(q->repo.b, repo, 16);
    memcpy(q->branch.b, branch, 16);
    q->change = change;
    q->prefix = cn_scribe_cstr(prefix ? prefix : "");
    q->limit = CN_SCRIBE_MAX_PAGE;
    q->has_after = has_after;
    q->after = cn_scribe_cstr(has_after ? after : "");
}

/* ---- one page --------------------------------------------------------------------------- */
typedef struct proof_ctx {
    cn_scribe_client_t *cl;
    cn_scribe_cerr_t *err;
} proof_ctx_t;

static cn_err_t proof_call(void *ctx, const uint8_t *req, size_t len, cn_buf_t *reply)
{
    proof_ctx_t *p = ctx;
    return cn_scribe_client_tree_proof(p->cl, req, len, reply, p->err);
}

static bool transport_failure(cn_err_t e)
{
    return e == CN_E_CLOSED || e == CN_E_TIMEOUT || (e < 0 && e > -4096);
}

/* The verified page of q: a new verifier each attempt (a failed one holds
 * nothing), at most two attempts when the first dies in transport. */
static cn_err_t verify_page(cn_scribe_client_t *cl, const cn_scribe_tree_page_req_t *q,
                            const cn_digest_t *content, const cn_digest_t *revision,
                            cn_tree_verify_t **out, cn_scribe_cerr_t *err)
{
    cn_scribe_codec_t codec = (cn_scribe_codec_t)cn_scribe_client_codec(cl);
    cn_buf_t page = { 0 };
    cn_err_t e = cn_scribe_enc_tree_page_req(&page, codec, q);
    *out = NULL;
    for (int attempt = 0; attempt < 2 && (attempt == 0 ? e >= 0 : transport_failure(e));
         attempt++) {
        cn_tree_verify_cfg_t cfg = { codec, page.data, page.len, CN_REPOS_PROOF_LIVE, 0, NULL,
                                     0,     *content,  *revision };
        cn_tree_verify_t *v = NULL;
        if ((e = cn_tree_verify_new(&cfg, &v)) < 0)
            break;
        proof_ctx_t pc = { cl, err };
        e = cn_tree_verify_page(v, proof_call, &pc);
        if (e >= 0) {
            *out = v;
            break;
        }
        cn_tree_verify_free(v);
    }
    cn_buf_free(&page);
    return e;
}

/* Hands page v's values to fn; *last gets the last path (for the cursor). */
static cn_err_t hand_out(const cn_tree_verify_t *v, uint32_t count, cn_scribe_client_entry_fn fn,
                         void *ctx, char *last)
{
    for (uint32_t i = 0; i < count; i++) {
        const cn_tree_value_t *x = cn_tree_verify_value(v, i);
        if (!x || x->entry.state != CN_REPOS_LIVE || x->path_len > CN_SCRIBE_MAX_PATH)
            return CN_E_PROTOCOL; /* a live range selects live entries only */
        memcpy(last, x->path, x->path_len);
        last[x->path_len] = 0;
        cn_scribe_client_entry_t ce = { last,          x->path_len,   x->entry.manifest,
                                        x->entry.size, x->entry.mode, x->entry.change };
        int rc = fn ? fn(ctx, &ce) : 0;
        if (rc)
            return rc;
    }
    return CN_OK;
}

cn_err_t cn_scribe_client_tree_verified(cn_scribe_client_t *cl, const uint8_t repo[16],
                                        const uint8_t branch[16], uint64_t change,
                                        const char *prefix, const cn_digest_t *content_root,
                                        const cn_digest_t *revision_root,
                                        cn_scribe_client_entry_fn fn, void *ctx,
                                        uint32_t *fragments, cn_scribe_cerr_t *err)
{
    char *after = malloc(CN_SCRIBE_MAX_PATH + 1);
    cn_err_t e = after ? CN_OK : -ENOMEM;
    bool has_after = false, more = true;
    while (e >= 0 && more) {
        cn_scribe_tree_page_req_t q;
        cn__scribe_tree_page_fill(&q, repo, branch, change, prefix, has_after, after);
        cn_tree_verify_t *v = NULL;
        uint32_t count = 0;
        if ((e = verify_page(cl, &q, content_root, revision_root, &v, err)) >= 0 &&
            (e = cn_tree_verify_result(v, &count, &more)) >= 0) {
            if (fragments)
                *fragments += cn_tree_verify_fragments(v);
            /* the cursor is copied out of the request before it is rewritten */
            e = hand_out(v, count, fn, ctx, after);
            has_after = count > 0;
            more = more && count > 0;
        }
        cn_tree_verify_free(v);
    }
    free(after);
    return e;
}

/* ---- commits -------------------------------------------------------------------------------- */
static cn_err_t commit_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)i;
    (void)last;
    if (!present)
        return CN_E_NOT_FOUND;
    return cn_buf_append(ctx, p, n);
}

cn_err_t cn_scribe_client_commit(cn_scribe_client_t *cl, const uint8_t repo[16],
                                 const cn_digest_t *id, cn_buf_t *enc, cn_scribe_cerr_t *err)
{
    size_t start = enc->len;
    cn_scribe_client_ref_t ref = { CN_REPOS_COMMIT, *id };
    CN_TRY(cn_scribe_client_get(cl, repo, &ref, 1, commit_sink, enc, err));
    cn_digest_t got;
    cn_repos_object_id(CN_REPOS_COMMIT, enc->data + start, enc->len - start, &got);
    return cn_ct_equal(got.b, id->b, CN_DIGEST_LEN) ? CN_OK : CN_E_DIGEST_MISMATCH;
}
