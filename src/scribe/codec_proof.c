/* The tree_proof layouts (opcode 43, docs/protocol/scribe.md 17.2): the
 * request, which carries a whole tree_page request and the proof's
 * selector, paths and continuation, and the reply of roots and nodes.
 * Every rule of 17.2 is checked here, so the server and the client refuse
 * the same bytes. */
#include "codec_int.h"

#include <string.h>

#define MAX_PAGE_REQ 16433u /* tree_page's exact bound (section 8) */

uint32_t cn_scribe_tree_proof_limit(uint8_t selector, uint32_t limit)
{
    if (selector > 1)
        return limit;
    return limit == 0 ? 1 : limit > CN_SCRIBE_MAX_PAGE ? CN_SCRIBE_MAX_PAGE : limit;
}

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    return c ? c : (an < bn ? -1 : an > bn ? 1 : 0);
}

/* Paths strictly ascending, canonical (selector 3). */
static bool paths_ok(cn_scribe_rows_t it)
{
    cn_scribe_str_t prev = { NULL, 0 }, s;
    bool first = true;
    while (cn_scribe_next_path(&it, &s)) {
        if (cn_repos_path_check(s.p, s.len) < 0)
            return false;
        if (!first && bytes_cmp(prev.p, prev.len, s.p, s.len) >= 0)
            return false;
        prev = s;
        first = false;
    }
    return it.rd.r.err == CN_OK;
}

/* The rules of 17.2 that tie the fields together. */
static bool rules_ok(const cn_scribe_tree_proof_req_t *q)
{
    const cn_scribe_tree_page_req_t *pq = &q->pq;
    if (q->selector > 3)
        return false;
    if (q->selector != 3 && q->path_count != 0)
        return false;
    if (q->selector == 2 && (pq->prefix.len == 0 || pq->limit != 1 || pq->has_after))
        return false;
    if (q->selector == 3 && (q->path_count == 0 || pq->prefix.len != 0 || pq->has_after ||
                             pq->limit != q->path_count || !paths_ok(q->paths)))
        return false;
    if (q->continuation) {
        uint64_t top = (uint64_t)cn_scribe_tree_proof_limit(q->selector, pq->limit) + 1;
        if (q->edge.len < 1 || q->edge.len > CN_SCRIBE_MAX_PATH || q->remaining < 1 ||
            q->remaining > top)
            return false;
    }
    return true;
}

/* The encoders refuse what the decoders would: what was written since
 * start must decode (a request: req). */
static cn_err_t reread(const cn_buf_t *out, size_t start, cn_scribe_codec_t c, bool req)
{
    cn_scribe_tree_proof_req_t q;
    cn_scribe_tree_proof_resp_t r;
    const uint8_t *p = out->data + start;
    size_t n = out->len - start;
    cn_err_t err = req ? cn_scribe_dec_tree_proof_req(p, n, c, &q)
                       : cn_scribe_dec_tree_proof_resp(p, n, c, &r);
    return err < 0 ? CN_E_INVALID : CN_OK;
}

cn_err_t cn_scribe_enc_tree_proof_req(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_tree_proof_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, q->selector > 3 || q->path_count > CN_SCRIBE_MAX_PROOF_PATHS);
    cn_scribe_wr_bytes32(&w, q->page, MAX_PAGE_REQ);
    cn_scribe_wr_u8(&w, q->selector);
    if (q->selector == 1)
        cn_scribe_wr_u64(&w, q->lower);
    cn__wr_paths(&w, q->path_list, w.err ? 0 : q->path_count, CN_SCRIBE_MAX_PROOF_PATHS);
    cn_scribe_wr_bool(&w, q->continuation);
    if (q->continuation) {
        CN__FAIL_IF(&w, q->edge.len < 1);
        cn_scribe_wr_bytes32(&w, q->edge, CN_SCRIBE_MAX_PATH);
        cn_scribe_wr_u32(&w, q->remaining);
    }
    CN__FAIL_IF(&w, out->len - cn__start > CN_SCRIBE_MAX_PROOF_REQ);
    if (!w.err)
        w.err = reread(out, cn__start, c, true);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_tree_proof_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_tree_proof_req_t *out)
{
    memset(out, 0, sizeof *out);
    if (n > CN_SCRIBE_MAX_PROOF_REQ)
        return CN_E_PROTOCOL;
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_bytes32(&r, MAX_PAGE_REQ, &out->page);
    if (!r.r.err && cn_scribe_dec_tree_page_req(out->page.p, out->page.len, c, &out->pq) < 0)
        cn__rd_fail(&r);
    out->selector = cn_scribe_rd_u8(&r);
    if (!r.r.err && out->selector > 3)
        cn__rd_fail(&r);
    if (out->selector == 1)
        out->lower = cn_scribe_rd_u64(&r);
    cn__rd_paths(&r, CN_SCRIBE_MAX_PROOF_PATHS, &out->path_count, &out->paths);
    out->continuation = cn_scribe_rd_bool(&r);
    if (out->continuation) {
        cn_scribe_rd_bytes32(&r, CN_SCRIBE_MAX_PATH, &out->edge);
        out->remaining = cn_scribe_rd_u32(&r);
    }
    cn_err_t err = cn_scribe_rd_end(&r);
    if (err < 0)
        return err;
    return rules_ok(out) ? CN_OK : CN_E_PROTOCOL;
}

cn_err_t cn_scribe_enc_tree_proof_node(cn_buf_t *items, cn_scribe_codec_t c, const uint8_t *node,
                                       size_t len)
{
    CN__ENC_BEGIN(items, c);
    cn_scribe_str_t s = { node, (uint32_t)len };
    CN__FAIL_IF(&w, len == 0 || len > CN_SCRIBE_MAX_PROOF_BYTES);
    cn_scribe_wr_bytes32(&w, s, CN_SCRIBE_MAX_PROOF_BYTES);
    CN__ENC_END(items);
}

cn_err_t cn_scribe_enc_tree_proof_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                       const cn_digest_t *content_root,
                                       const cn_digest_t *revision_root, uint32_t count,
                                       const uint8_t *items, size_t items_len)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_PROOF_NODES ||
                        items_len > CN_SCRIBE_MAX_PROOF_BYTES + 4ull * count);
    cn_scribe_wr_raw(&w, content_root->b, CN_DIGEST_LEN);
    cn_scribe_wr_raw(&w, revision_root->b, CN_DIGEST_LEN);
    cn_scribe_wr_u32(&w, count);
    if (items_len)
        cn_scribe_wr_raw(&w, items, items_len);
    if (!w.err)
        w.err = reread(out, cn__start, c, false);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_tree_proof_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_tree_proof_resp_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_digest(&r, &out->content_root);
    cn_scribe_rd_digest(&r, &out->revision_root);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && out->count > CN_SCRIBE_MAX_PROOF_NODES)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, out->count, 5);
    out->nodes.rd = r;
    out->nodes.left = out->count;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_str_t s;
        cn_scribe_rd_bytes32(&r, CN_SCRIBE_MAX_PROOF_BYTES, &s);
        bytes += s.len;
        if (!r.r.err && (s.len == 0 || bytes > CN_SCRIBE_MAX_PROOF_BYTES))
            cn__rd_fail(&r);
    }
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_proof_node(cn_scribe_rows_t *it, cn_scribe_str_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    cn_scribe_rd_bytes32(&it->rd, CN_SCRIBE_MAX_PROOF_BYTES, out);
    return !it->rd.r.err;
}
