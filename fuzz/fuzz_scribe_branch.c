/* libFuzzer harness: the branch, merge and cherry-pick decoders (opcodes
 * 20-25, 32, 33, and operation_outcome's branch kind), both sides.
 * Input: opcode byte, codec byte (1 or 2), side byte (0 request, 1
 * response), then the payload.  Invariants: no read outside the payload;
 * every slice inside it; row iterators yield exactly their count; an
 * accepted payload re-encodes to exactly the input (every layout is
 * canonical); an accepted request is never longer than its opcode's bound. */
#include "fuzz_scribe_common.h"

static cn_scribe_str_t paths[CN_SCRIBE_MAX_MERGE_PATHS];
static cn_scribe_branch_info_t infos[CN_SCRIBE_MAX_PAGE];
static cn_scribe_file_state_t states[CN_SCRIBE_MAX_MERGE_PATHS];
static const cn_scribe_file_state_t *state_ptrs[CN_SCRIBE_MAX_MERGE_PATHS];
static cn_scribe_path_state_t path_states[CN_SCRIBE_MAX_MERGE_ENTRIES];
static cn_scribe_origin_t origins[CN_SCRIBE_MAX_MERGE_PATHS];

static void walk_fail(void)
{
    abort();
}

/* Collects a decoded path list into paths[] (each inside the input). */
static uint32_t take_paths(cn_scribe_rows_t *rows, uint32_t count, const uint8_t *lo,
                           const uint8_t *hi)
{
    uint32_t k = 0;
    while (k < CN_SCRIBE_MAX_MERGE_PATHS && cn_scribe_next_path(rows, &paths[k]))
        fz_in(paths[k++], lo, hi);
    if (k != count || cn_scribe_next_path(rows, &paths[0]))
        walk_fail();
    return k;
}

static void submit_in(const cn_scribe_submit_req_t *s, const uint8_t *lo, const uint8_t *hi)
{
    fz_in(s->author, lo, hi);
    fz_in(s->message, lo, hi);
}

static cn_err_t request(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    const uint8_t *end = p + n;
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    cn_digest_t fp;
    switch (op) {
    case CN_SCRIBE_OP_BRANCH_LIST: {
        cn_scribe_branch_list_req_t q;
        if (!(e = cn_scribe_dec_branch_list_req(p, n, c, &q))) {
            fz_in(q.after, p, end);
            w = cn_scribe_enc_branch_list_req(b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_BRANCH_MUTATE: {
        cn_scribe_branch_mutate_req_t q;
        if (!(e = cn_scribe_dec_branch_mutate_req(p, n, c, &q))) {
            fz_in(q.name, p, end);
            fz_in(q.expected, p, end);
            if (!cn_scribe_branch_name_valid(q.name))
                walk_fail();
            cn_scribe_branch_fingerprint(&q, &fp);
            w = cn_scribe_enc_branch_mutate_req(b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_BRANCH_INFO: {
        cn_scribe_branch_info_req_t q;
        if (!(e = cn_scribe_dec_branch_info_req(p, n, c, &q))) {
            fz_in(q.name, p, end);
            w = cn_scribe_enc_branch_info_req(b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_BRANCH_OUTCOME: {
        cn_scribe_outcome_req_t q;
        if (!(e = cn_scribe_dec_outcome_req(p, n, c, &q)))
            w = cn_scribe_enc_outcome_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_MERGE_SUBMIT: {
        cn_scribe_merge_submit_req_t q;
        if (!(e = cn_scribe_dec_merge_submit_req(p, n, c, &q))) {
            submit_in(&q.submit, p, end);
            cn_scribe_merge_fingerprint(&q, &fp);
            w = cn_scribe_enc_merge_submit_req(b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_MERGE_READ: {
        cn_scribe_merge_read_req_t q;
        if (!(e = cn_scribe_dec_merge_read_req(p, n, c, &q))) {
            fz_in(q.path, p, end);
            fz_in(q.cursor, p, end);
            take_paths(&q.paths, q.count, p, end);
            w = cn_scribe_enc_merge_read_req(b, c, &q, paths);
        }
        break;
    }
    case CN_SCRIBE_OP_CHERRY_PICK_INFO: {
        cn_scribe_pick_info_req_t q;
        if (!(e = cn_scribe_dec_pick_info_req(p, n, c, &q)))
            w = cn_scribe_enc_pick_info_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_CHERRY_PICK_SUBMIT: {
        cn_scribe_pick_submit_req_t q;
        if (!(e = cn_scribe_dec_pick_submit_req(p, n, c, &q))) {
            submit_in(&q.submit, p, end);
            cn_scribe_pick_fingerprint(&q, &fp);
            w = cn_scribe_enc_pick_submit_req(b, c, &q);
        }
        break;
    }
    default: return CN_E_PROTOCOL;
    }
    if (e == CN_OK) {
        uint32_t bound;
        if (w != CN_OK || !cn_scribe_request_bound(op, false, &bound) || n > bound)
            walk_fail();
    }
    return e;
}

/* Re-encodes a decoded merge_read reply from its rows. */
static cn_err_t merge_read_again(cn_scribe_merge_read_resp_t *r, cn_scribe_codec_t c,
                                 const uint8_t *lo, const uint8_t *hi, cn_buf_t *b)
{
    uint32_t k = 0;
    bool present;
    fz_in(r->cursor, lo, hi);
    switch (r->tag) {
    case CN_SCRIBE_MR_CHAINS:
        k = take_paths(&r->rows, r->count, lo, hi);
        return cn_scribe_enc_merge_chains_resp(b, c, r->left, r->right, r->has_cursor, r->cursor,
                                               paths, k);
    case CN_SCRIBE_MR_STATES:
        for (; cn_scribe_next_file_state(&r->rows, &present, &states[k]); k++)
            state_ptrs[k] = present ? &states[k] : NULL;
        return k == r->count ? cn_scribe_enc_merge_states_resp(b, c, state_ptrs, k) : CN_E_PROTOCOL;
    case CN_SCRIBE_MR_DESCENDANTS:
        for (; cn_scribe_next_path_state(&r->rows, &path_states[k]); k++)
            fz_in(path_states[k].path, lo, hi);
        return k == r->count ? cn_scribe_enc_merge_descendants_resp(b, c, r->has_cursor, r->cursor,
                                                                    path_states, k)
                             : CN_E_PROTOCOL;
    case CN_SCRIBE_MR_ORIGINS:
        for (; cn_scribe_next_origin(&r->rows, &origins[k]); k++)
            fz_in(origins[k].base_path, lo, hi);
        return k == r->count ? cn_scribe_enc_merge_origins_resp(b, c, origins, k) : CN_E_PROTOCOL;
    case CN_SCRIBE_MR_UNCHANGED: return cn_scribe_enc_merge_unchanged_resp(b, c, r->unchanged);
    case CN_SCRIBE_MR_BASE: return cn_scribe_enc_merge_base_resp(b, c, &r->base_branch, r->base);
    default: return CN_E_PROTOCOL;
    }
}

static cn_err_t response(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    const uint8_t *end = p + n;
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    switch (op) {
    case CN_SCRIBE_OP_BRANCH_LIST: {
        cn_scribe_branch_list_resp_t r;
        if (!(e = cn_scribe_dec_branch_list_resp(p, n, c, &r))) {
            uint32_t k = 0;
            for (; cn_scribe_next_branch_info(&r.rows, &infos[k]); k++)
                fz_in(infos[k].name, p, end);
            w = k == r.count ? cn_scribe_enc_branch_list_resp(b, c, infos, k, r.more)
                             : CN_E_PROTOCOL;
        }
        break;
    }
    case CN_SCRIBE_OP_BRANCH_MUTATE: {
        cn_scribe_branch_outcome_t o;
        if (!(e = cn_scribe_dec_branch_mutate_resp(p, n, c, &o))) {
            fz_in(o.branch.name, p, end);
            fz_in(o.detail, p, end);
            w = cn_scribe_enc_branch_mutate_resp(b, c, &o);
        }
        break;
    }
    case CN_SCRIBE_OP_BRANCH_INFO: {
        cn_scribe_branch_info_t bi;
        if (!(e = cn_scribe_dec_branch_info_resp(p, n, c, &bi))) {
            fz_in(bi.name, p, end);
            w = cn_scribe_enc_branch_info_resp(b, c, &bi);
        }
        break;
    }
    case CN_SCRIBE_OP_OPERATION_OUTCOME:
    case CN_SCRIBE_OP_BRANCH_OUTCOME: {
        cn_scribe_outcome_resp_t o;
        bool branch_only = op == CN_SCRIBE_OP_BRANCH_OUTCOME;
        e = branch_only ? cn_scribe_dec_branch_outcome_resp(p, n, c, &o)
                        : cn_scribe_dec_outcome_resp(p, n, c, &o);
        if (e == CN_OK && o.kind != CN_SCRIBE_OUTCOME_KIND_SUBMIT) {
            fz_in(o.branch.branch.name, p, end);
            fz_in(o.branch.detail, p, end);
            w = branch_only ? cn_scribe_enc_branch_outcome_resp(b, c, &o)
                            : cn_scribe_enc_outcome_resp(b, c, &o, NULL);
        } else if (e == CN_OK) {
            cn_buf_append(b, p, n); /* submit outcomes: fuzz_scribe_response's */
        }
        break;
    }
    case CN_SCRIBE_OP_MERGE_READ: {
        cn_scribe_merge_read_resp_t r;
        if (!(e = cn_scribe_dec_merge_read_resp(p, n, c, &r)))
            w = merge_read_again(&r, c, p, end, b);
        break;
    }
    case CN_SCRIBE_OP_CHERRY_PICK_INFO: {
        cn_scribe_pick_info_t v;
        if (!(e = cn_scribe_dec_pick_info_resp(p, n, c, &v))) {
            fz_in(v.target.name, p, end);
            fz_in(v.source.name, p, end);
            w = cn_scribe_enc_pick_info_resp(b, c, &v);
        }
        break;
    }
    default: return CN_E_PROTOCOL;
    }
    if (e == CN_OK && w != CN_OK)
        walk_fail();
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_sided(data, size, request, response);
}
