/* libFuzzer harness: the lock decoders (opcodes 14, 16, 17, 29), both
 * sides.  Input: opcode byte, codec byte (1 or 2), side byte (0 request, 1
 * response), then the payload.  Invariants: no read outside the payload;
 * every slice inside it; row iterators yield exactly their count; an
 * accepted payload re-encodes to exactly the input (every layout is
 * canonical); an accepted request is never longer than its opcode's bound. */
#include "fuzz_scribe_common.h"

static cn_scribe_str_t paths[CN_SCRIBE_MAX_LOCK_PATHS];
static cn_scribe_lock_row_t rows[CN_SCRIBE_MAX_PAGE];

static cn_err_t request(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    const uint8_t *end = p + n;
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    if (op == CN_SCRIBE_OP_LOCK_ACQUIRE || op == CN_SCRIBE_OP_LOCK_RELEASE) {
        cn_scribe_lock_req_t q;
        if (!(e = cn_scribe_dec_lock_req(p, n, c, op, &q))) {
            uint32_t k = 0;
            while (k < CN_SCRIBE_MAX_LOCK_PATHS && cn_scribe_next_path(&q.paths, &paths[k]))
                fz_in(paths[k++], p, end);
            if (k != q.count)
                fz_fail();
            w = cn_scribe_enc_lock_req(b, c, op, &q, paths);
        }
    } else if (op == CN_SCRIBE_OP_LOCK_LIST) {
        cn_scribe_lock_list_req_t q;
        if (!(e = cn_scribe_dec_lock_list_req(p, n, c, &q))) {
            fz_in(q.prefix, p, end);
            fz_in(q.after, p, end);
            w = cn_scribe_enc_lock_list_req(b, c, &q);
        }
    } else if (op == CN_SCRIBE_OP_LOCK_POLICY) {
        cn_scribe_id_t repo;
        if (!(e = cn_scribe_dec_repo_id_req(p, n, c, &repo)))
            w = cn_scribe_enc_repo_id_req(b, c, &repo);
    }
    return fz_request_done(op, e, w, n);
}

static cn_err_t response(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    const uint8_t *end = p + n;
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    if (op == CN_SCRIBE_OP_LOCK_ACQUIRE || op == CN_SCRIBE_OP_LOCK_RELEASE) {
        uint32_t v;
        if (!(e = cn_scribe_dec_u32_resp(p, n, c, &v)))
            w = cn_scribe_enc_u32_resp(b, c, v);
    } else if (op == CN_SCRIBE_OP_LOCK_LIST) {
        cn_scribe_rows_t it;
        uint32_t count = 0, k = 0;
        bool more = false;
        if (!(e = cn_scribe_dec_lock_list_resp(p, n, c, &it, &count, &more))) {
            while (k < CN_SCRIBE_MAX_PAGE && cn_scribe_next_lock_row(&it, &rows[k])) {
                fz_in(rows[k].path, p, end);
                fz_in(rows[k++].principal, p, end);
            }
            if (k != count)
                fz_fail();
            w = cn_scribe_enc_lock_list_resp(b, c, rows, count, more);
        }
    } else if (op == CN_SCRIBE_OP_LOCK_POLICY) {
        uint64_t change;
        cn_scribe_str_t text;
        if (!(e = cn_scribe_dec_lock_policy_resp(p, n, c, &change, &text))) {
            fz_in(text, p, end);
            w = cn_scribe_enc_lock_policy_resp(b, c, change, text);
        }
    }
    return fz_response_done(e, w);
}

FZ_SIDED_HARNESS(request, response)
