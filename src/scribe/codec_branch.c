/* Branch layouts: the branch-info record, branch_list (20), branch_mutate
 * (21) with its outcome and fingerprint, branch_info (22), and the branch
 * name rule (docs/protocol/scribe.md 7.8).  Pure: no allocation, views into
 * the caller's buffer. */
#include "codec_int.h"

#include "cairn/repos_model.h"

#include <string.h>

bool cn_scribe_branch_name_valid(cn_scribe_str_t s)
{
    return s.p && cn_repos_branch_name_ok((const char *)s.p, s.len);
}

static void rd_name(cn_scribe_rd_t *r, cn_scribe_str_t *out)
{
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_BRANCH_NAME, out);
    if (!r->r.err && !cn_scribe_branch_name_valid(*out))
        cn__rd_fail(r);
}

static void wr_name(cn_scribe_wr_t *w, cn_scribe_str_t s)
{
    CN__FAIL_IF(w, !cn_scribe_branch_name_valid(s));
    cn_scribe_wr_str16(w, s, CN_SCRIBE_MAX_BRANCH_NAME);
}

/* ---- the branch-info record ------------------------------------------------------- */
static bool origin_bad(const cn_scribe_branch_info_t *bi)
{
    return bi->has_origin &&
           (bi->origin_change > bi->head || memcmp(bi->origin_branch.b, bi->id.b, 16) == 0);
}

void cn_scribe_wr_branch_info(cn_scribe_wr_t *w, const cn_scribe_branch_info_t *bi)
{
    CN__FAIL_IF(w, origin_bad(bi));
    cn_scribe_wr_raw(w, bi->id.b, 16);
    wr_name(w, bi->name);
    cn_scribe_wr_u64(w, bi->head);
    cn_scribe_wr_bool(w, bi->has_origin);
    if (bi->has_origin) {
        cn_scribe_wr_raw(w, bi->origin_branch.b, 16);
        cn_scribe_wr_u64(w, bi->origin_change);
    }
    cn_scribe_wr_u64(w, bi->created_ms);
}

void cn_scribe_rd_branch_info(cn_scribe_rd_t *r, cn_scribe_branch_info_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_id(r, &out->id);
    rd_name(r, &out->name);
    out->head = cn_scribe_rd_u64(r);
    out->has_origin = cn_scribe_rd_bool(r);
    if (out->has_origin) {
        cn_scribe_rd_id(r, &out->origin_branch);
        out->origin_change = cn_scribe_rd_u64(r);
    }
    out->created_ms = cn_scribe_rd_u64(r);
    if (!r->r.err && origin_bad(out))
        cn__rd_fail(r);
}
#define BRANCH_INFO_MIN (16 + 3 + 8 + 1 + 8)

cn_err_t cn_scribe_enc_branch_info_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                        const cn_scribe_branch_info_t *bi)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_branch_info(&w, bi);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_branch_info_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                        cn_scribe_branch_info_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_branch_info(&r, out);
    return cn_scribe_rd_end(&r);
}

/* ---- branch_list (20) ------------------------------------------------------------- */
cn_err_t cn_scribe_enc_branch_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                       const cn_scribe_branch_list_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_u32(&w, q->limit);
    cn_scribe_wr_bool(&w, q->has_after);
    if (q->has_after)
        wr_name(&w, q->after);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_branch_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_branch_list_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->limit = cn_scribe_rd_u32(&r);
    out->has_after = cn_scribe_rd_bool(&r);
    if (out->has_after)
        rd_name(&r, &out->after);
    return cn_scribe_rd_end(&r);
}

/* Names of one page strictly ascend in byte order. */
static bool name_before(cn_scribe_str_t a, cn_scribe_str_t b)
{
    uint32_t m = a.len < b.len ? a.len : b.len;
    int d = memcmp(a.p, b.p, m);
    return d < 0 || (d == 0 && a.len < b.len);
}

cn_err_t cn_scribe_enc_branch_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                        const cn_scribe_branch_info_t *rows, uint32_t count,
                                        bool more)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_PAGE || (more && count == 0));
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        CN__FAIL_IF(&w, i > 0 && !name_before(rows[i - 1].name, rows[i].name));
        cn_scribe_wr_branch_info(&w, &rows[i]);
    }
    cn_scribe_wr_bool(&w, more);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_branch_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                        cn_scribe_branch_list_resp_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && out->count > CN_SCRIBE_MAX_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, out->count, BRANCH_INFO_MIN);
    out->rows.rd = r;
    out->rows.left = out->count;
    cn_scribe_str_t prev = { NULL, 0 };
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_branch_info_t bi;
        cn_scribe_rd_branch_info(&r, &bi);
        if (!r.r.err && i > 0 && !name_before(prev, bi.name))
            cn__rd_fail(&r);
        prev = bi.name;
    }
    out->more = cn_scribe_rd_bool(&r);
    if (!r.r.err && out->more && out->count == 0)
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_branch_info(cn_scribe_rows_t *it, cn_scribe_branch_info_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    cn_scribe_rd_branch_info(&it->rd, out);
    return !it->rd.r.err;
}

/* ---- branch_mutate (21) ---------------------------------------------------------- */
cn_err_t cn_scribe_enc_branch_mutate_req(cn_buf_t *out, cn_scribe_codec_t c,
                                         const cn_scribe_branch_mutate_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, cn__all_zero(q->operation.b, 16) || cn__all_zero(q->branch.b, 16));
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->incarnation.b, 16);
    cn_scribe_wr_raw(&w, q->operation.b, 16);
    cn_scribe_wr_raw(&w, q->branch.b, 16);
    wr_name(&w, q->name);
    cn_scribe_wr_u8(&w, q->action);
    if (q->action == CN_SCRIBE_BRANCH_CREATE) {
        cn_scribe_wr_raw(&w, q->source.b, 16);
        cn_scribe_wr_u64(&w, q->source_change);
    } else {
        CN__FAIL_IF(&w, q->action != CN_SCRIBE_BRANCH_RENAME);
        wr_name(&w, q->expected);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_branch_mutate_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                         cn_scribe_branch_mutate_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->incarnation);
    cn_scribe_rd_id(&r, &out->operation);
    cn_scribe_rd_id(&r, &out->branch);
    rd_name(&r, &out->name);
    out->action = cn_scribe_rd_u8(&r);
    if (r.r.err)
        return CN_E_PROTOCOL;
    if (cn__all_zero(out->operation.b, 16) || cn__all_zero(out->branch.b, 16))
        cn__rd_fail(&r);
    if (out->action == CN_SCRIBE_BRANCH_CREATE) {
        cn_scribe_rd_id(&r, &out->source);
        out->source_change = cn_scribe_rd_u64(&r);
    } else if (out->action == CN_SCRIBE_BRANCH_RENAME) {
        rd_name(&r, &out->expected);
    } else {
        cn__rd_fail(&r); /* 3 (archive) included: cairn has no archive action */
    }
    return cn_scribe_rd_end(&r);
}

void cn_scribe_branch_fingerprint(const cn_scribe_branch_mutate_req_t *q, cn_digest_t *out)
{
    cn_blake3_t h;
    cn__b3_domain(&h, "cairn:branch-operation:v1");
    cn_blake3_update(&h, q->repo.b, 16);
    cn_blake3_update(&h, q->incarnation.b, 16);
    cn_blake3_update(&h, q->branch.b, 16);
    cn__b3_le(&h, q->action, 1);
    cn__b3_le(&h, q->name.len, 2);
    if (q->name.len)
        cn_blake3_update(&h, q->name.p, q->name.len);
    if (q->action == CN_SCRIBE_BRANCH_CREATE) {
        cn_blake3_update(&h, q->source.b, 16);
        cn__b3_le(&h, q->source_change, 8);
    } else {
        cn__b3_le(&h, q->expected.len, 2);
        if (q->expected.len)
            cn_blake3_update(&h, q->expected.p, q->expected.len);
    }
    cn_blake3_final(&h, out);
}

/* ---- the branch outcome ------------------------------------------------------------ */
void cn_scribe_wr_branch_outcome(cn_scribe_wr_t *w, const cn_scribe_branch_outcome_t *o)
{
    cn_scribe_wr_raw(w, o->operation.b, 16);
    cn_scribe_wr_u8(w, o->outcome);
    if (o->outcome == CN_SCRIBE_OUTCOME_ACCEPTED) {
        cn_scribe_wr_branch_info(w, &o->branch);
        return;
    }
    CN__FAIL_IF(w, o->outcome != CN_SCRIBE_OUTCOME_REJECTED || o->code == 0);
    cn_scribe_wr_u16(w, o->code);
    cn_scribe_wr_str16(w, o->detail, CN_SCRIBE_MAX_ERROR_MESSAGE);
}

void cn_scribe_rd_branch_outcome(cn_scribe_rd_t *r, cn_scribe_branch_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_id(r, &out->operation);
    out->outcome = cn_scribe_rd_u8(r);
    if (r->r.err)
        return;
    if (out->outcome == CN_SCRIBE_OUTCOME_ACCEPTED) {
        cn_scribe_rd_branch_info(r, &out->branch);
    } else if (out->outcome == CN_SCRIBE_OUTCOME_REJECTED) {
        out->code = cn_scribe_rd_u16(r);
        cn_scribe_rd_str16(r, CN_SCRIBE_MAX_ERROR_MESSAGE, &out->detail);
        if (!r->r.err && out->code == 0)
            cn__rd_fail(r);
    } else {
        cn__rd_fail(r);
    }
}

cn_err_t cn_scribe_enc_branch_mutate_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_branch_outcome_t *o)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_branch_outcome(&w, o);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_branch_mutate_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_branch_outcome_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_branch_outcome(&r, out);
    return cn_scribe_rd_end(&r);
}

/* ---- branch_info (22) ------------------------------------------------------------- */
cn_err_t cn_scribe_enc_branch_info_req(cn_buf_t *out, cn_scribe_codec_t c,
                                       const cn_scribe_branch_info_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_u8(&w, q->by);
    if (q->by == CN_SCRIBE_BRANCH_BY_ID) {
        cn_scribe_wr_raw(&w, q->id.b, 16);
    } else {
        CN__FAIL_IF(&w, q->by != CN_SCRIBE_BRANCH_BY_NAME);
        wr_name(&w, q->name);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_branch_info_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_branch_info_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->by = cn_scribe_rd_u8(&r);
    if (out->by == CN_SCRIBE_BRANCH_BY_ID)
        cn_scribe_rd_id(&r, &out->id);
    else if (out->by == CN_SCRIBE_BRANCH_BY_NAME)
        rd_name(&r, &out->name);
    else
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}
