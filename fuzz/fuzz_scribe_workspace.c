/* libFuzzer harness: the workspace decoders (opcodes 12, 34, 35, 36), both
 * sides.  Input: opcode byte, codec byte (1 or 2), side byte (0 request, 1
 * response), then the payload.  Invariants: no read outside the payload;
 * every slice inside it; row iterators yield exactly their count; an
 * accepted payload re-encodes to exactly the input (every layout is
 * canonical); an accepted request is never longer than its opcode's bound. */
#include "fuzz_scribe_common.h"

static cn_scribe_ws_row_t rows[CN_SCRIBE_MAX_WS_PAGE];

static void row_in(const cn_scribe_ws_row_t *r, const uint8_t *p, const uint8_t *end)
{
    fz_in(r->label, p, end);
    for (uint16_t i = 0; i < r->tag_count; i++)
        fz_in(r->tags[i], p, end);
}

static cn_err_t request(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    const uint8_t *end = p + n;
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    if (op == CN_SCRIBE_OP_WORKSPACE_REGISTER) {
        cn_scribe_ws_register_req_t q;
        if (!(e = cn_scribe_dec_ws_register_req(p, n, c, &q))) {
            fz_in(q.label, p, end);
            for (uint16_t i = 0; i < q.tag_count; i++)
                fz_in(q.tags[i], p, end);
            w = cn_scribe_enc_ws_register_req(b, c, &q);
        }
    } else if (op == CN_SCRIBE_OP_WORKSPACE_LIST) {
        cn_scribe_ws_list_req_t q;
        if (!(e = cn_scribe_dec_ws_list_req(p, n, c, &q)))
            w = cn_scribe_enc_ws_list_req(b, c, &q);
    } else if (op == CN_SCRIBE_OP_WORKSPACE_REMOVE) {
        cn_scribe_ws_remove_req_t q;
        if (!(e = cn_scribe_dec_ws_remove_req(p, n, c, &q)))
            w = cn_scribe_enc_ws_remove_req(b, c, &q);
    } else if (op == CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME) {
        cn_scribe_outcome_req_t q;
        if (!(e = cn_scribe_dec_outcome_req(p, n, c, &q)))
            w = cn_scribe_enc_outcome_req(b, c, &q);
    }
    return fz_request_done(op, e, w, n);
}

static cn_err_t response(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    const uint8_t *end = p + n;
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    if (op == CN_SCRIBE_OP_WORKSPACE_REGISTER) {
        if (!(e = cn_scribe_dec_ws_row_resp(p, n, c, &rows[0]))) {
            row_in(&rows[0], p, end);
            w = cn_scribe_enc_ws_row_resp(b, c, &rows[0]);
        }
    } else if (op == CN_SCRIBE_OP_WORKSPACE_LIST) {
        cn_scribe_rows_t it;
        uint32_t count = 0, k = 0;
        bool more = false;
        if (!(e = cn_scribe_dec_ws_list_resp(p, n, c, &it, &count, &more))) {
            while (k < CN_SCRIBE_MAX_WS_PAGE && cn_scribe_next_ws_row(&it, &rows[k]))
                row_in(&rows[k++], p, end);
            if (k != count)
                fz_fail();
            w = cn_scribe_enc_ws_list_resp(b, c, rows, count, more);
        }
    } else if (op == CN_SCRIBE_OP_WORKSPACE_REMOVE || op == CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME) {
        cn_scribe_ws_removal_t o;
        if (!(e = cn_scribe_dec_ws_removal(p, n, c, &o))) {
            fz_in(o.detail, p, end);
            w = cn_scribe_enc_ws_removal(b, c, &o);
        }
    }
    return fz_response_done(e, w);
}

FZ_SIDED_HARNESS(request, response)
