/* libFuzzer harness: tree_proof (opcode 43) and the client's verifier
 * (src/scribe/codec_proof.c, src/client/tree_verify.c).  Input: a mode byte,
 * then
 *   43: codec byte (1 or 2), side byte (0 request, 1 reply), the payload
 *      (fz_sided) — an accepted one re-encodes to exactly itself, a request
 *      within the 1 MiB bound, every slice inside the input;
 *   0: selector byte, limit byte, then replies, each u32le length + payload
 *      (codec 1): the verifier, trusting the hash of the first reply's first
 *      node and its content root, is fed every reply; it never reads
 *      outside them, never reports done after a failure, and a done proof
 *      holds at most limit values, each a canonical path.
 * Anything else is ignored. */
#include "fuzz_scribe_common.h"
#include "cairn/tree_verify.h"

static cn_scribe_str_t paths[CN_SCRIBE_MAX_PROOF_PATHS];

static cn_err_t request(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    cn_scribe_tree_proof_req_t q;
    cn_err_t e = cn_scribe_dec_tree_proof_req(p, n, c, &q), w = CN_OK;
    if (!e) {
        fz_in(q.page, p, p + n);
        fz_in(q.edge, p, p + n);
        uint32_t k = 0;
        while (k < CN_SCRIBE_MAX_PROOF_PATHS && cn_scribe_next_path(&q.paths, &paths[k]))
            fz_in(paths[k++], p, p + n);
        if (k != q.path_count)
            fz_fail();
        q.path_list = paths;
        w = cn_scribe_enc_tree_proof_req(b, c, &q);
    }
    (void)op;
    return fz_request_done(CN_SCRIBE_OP_TREE_PROOF, e, w, n);
}

static cn_err_t response(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    cn_scribe_tree_proof_resp_t r;
    cn_err_t e = cn_scribe_dec_tree_proof_resp(p, n, c, &r), w = CN_OK;
    if (!e) {
        cn_buf_t items = { 0 };
        cn_scribe_str_t s;
        uint32_t k = 0;
        while (!w && cn_scribe_next_proof_node(&r.nodes, &s)) {
            fz_in(s, p, p + n);
            w = cn_scribe_enc_tree_proof_node(&items, c, s.p, s.len);
            k++;
        }
        if (k != r.count)
            fz_fail();
        if (!w)
            w = cn_scribe_enc_tree_proof_resp(b, c, &r.content_root, &r.revision_root, r.count,
                                              items.data, items.len);
        cn_buf_free(&items);
    }
    (void)op;
    return fz_response_done(e, w);
}

/* The page request of the verifier's query (repository and branch zero). */
static void page_of(uint8_t sel, uint32_t limit, cn_buf_t *out)
{
    cn_scribe_tree_page_req_t q;
    memset(&q, 0, sizeof q);
    q.change = 1;
    q.prefix = cn_scribe_cstr(sel == CN_REPOS_PROOF_EXACT ? "a" : "");
    q.limit = sel == CN_REPOS_PROOF_EXACT ? 1 : sel == CN_REPOS_PROOF_PATHS ? 2 : limit;
    cn_scribe_enc_tree_page_req(out, CN_SCRIBE_CODEC_LE, &q);
}

static void verifier(const uint8_t *p, size_t n)
{
    if (n < 2 || p[0] > 3)
        return;
    uint8_t sel = p[0];
    uint32_t limit = (uint32_t)p[1] % 8 + 1;
    p += 2;
    n -= 2;
    cn_scribe_str_t two[2] = { cn_scribe_cstr("a"), cn_scribe_cstr("b") };
    cn_buf_t page = { 0 };
    page_of(sel, limit, &page);
    cn_tree_verify_cfg_t cfg = {
        CN_SCRIBE_CODEC_LE, page.data, page.len, sel, 0, two, sel == CN_REPOS_PROOF_PATHS ? 2 : 0,
        { { 0 } },          { { 0 } }
    };
    /* trust the first node of the first reply */
    if (n >= 4) {
        size_t l = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
        cn_scribe_tree_proof_resp_t r;
        cn_scribe_str_t s;
        if (l <= n - 4 && cn_scribe_dec_tree_proof_resp(p + 4, l, CN_SCRIBE_CODEC_LE, &r) == 0) {
            cfg.content_root = r.content_root;
            if (cn_scribe_next_proof_node(&r.nodes, &s))
                cn_repos_node_hash(s.p, s.len, &cfg.revision_root);
        }
    }
    cn_tree_verify_t *v = NULL;
    if (cn_tree_verify_new(&cfg, &v) != CN_OK)
        fz_fail(); /* the query is always a valid one */
    bool failed = false;
    while (n >= 4) {
        size_t l = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
        if (l > n - 4)
            break;
        uint8_t *copy = malloc(l ? l : 1); /* exact size: ASan sees an overread */
        memcpy(copy, p + 4, l);
        cn_buf_t req = { 0 };
        if (!failed && !cn_tree_verify_done(v) && cn_tree_verify_request(v, &req) != CN_OK)
            fz_fail();
        cn_buf_free(&req);
        if (cn_tree_verify_feed(v, copy, l) < 0)
            failed = true;
        free(copy);
        if (failed && cn_tree_verify_done(v))
            fz_fail();
        p += 4 + l;
        n -= 4 + l;
    }
    uint32_t count;
    bool more;
    if (cn_tree_verify_result(v, &count, &more) == CN_OK) {
        if (failed || count > limit + 1)
            fz_fail();
        for (uint32_t i = 0; i < count; i++) {
            const cn_tree_value_t *x = cn_tree_verify_value(v, i);
            if (!x || cn_repos_path_check(x->path, x->path_len) < 0)
                fz_fail();
        }
    } else if (cn_tree_verify_value(v, 0) != NULL) {
        fz_fail();
    }
    cn_tree_verify_free(v);
    cn_buf_free(&page);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 1 && data[0] == 0)
        verifier(data + 1, size - 1);
    else if (size >= 1 && data[0] == CN_SCRIBE_OP_TREE_PROOF)
        fz_sided(data, size, request, response);
    return 0;
}
