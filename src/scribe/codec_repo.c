/* Repository layouts: repo_create (3), repo_info (4), repo_list (5),
 * instance_status (26), repo_usage (38). */
#include "codec_int.h"

#include <string.h>

void cn_scribe_wr_repo_info(cn_scribe_wr_t *w, const cn_scribe_repo_info_t *ri)
{
    CN__FAIL_IF(w, ri->name.len == 0 || ri->compression > 1);
    cn_scribe_wr_raw(w, ri->id.b, 16);
    cn_scribe_wr_str16(w, ri->name, CN_SCRIBE_MAX_REPO_NAME);
    cn_scribe_wr_raw(w, ri->main_branch.b, 16);
    cn_scribe_wr_u64(w, ri->head);
    cn_scribe_wr_raw(w, ri->incarnation.b, 16);
    cn_scribe_wr_u64(w, ri->created_ms);
    cn_scribe_wr_u8(w, ri->compression);
}

void cn_scribe_rd_repo_info(cn_scribe_rd_t *r, cn_scribe_repo_info_t *out)
{
    cn_scribe_rd_id(r, &out->id);
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_REPO_NAME, &out->name);
    cn_scribe_rd_id(r, &out->main_branch);
    out->head = cn_scribe_rd_u64(r);
    cn_scribe_rd_id(r, &out->incarnation);
    out->created_ms = cn_scribe_rd_u64(r);
    out->compression = cn_scribe_rd_u8(r);
    if (!r->r.err && (out->name.len == 0 || out->compression > 1))
        cn__rd_fail(r);
}

cn_err_t cn_scribe_enc_repo_create_req(cn_buf_t *out, cn_scribe_codec_t c,
                                       const cn_scribe_repo_create_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, q->name.len == 0 || q->compression > 1);
    cn_scribe_wr_str16(&w, q->name, CN_SCRIBE_MAX_REPO_NAME);
    cn_scribe_wr_u8(&w, q->compression);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_repo_create_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_repo_create_req_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_REPO_NAME, &out->name);
    out->compression = cn_scribe_rd_u8(&r);
    if (!r.r.err && (out->name.len == 0 || out->compression > 1))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_repo_info_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_repo_info_t *ri)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_repo_info(&w, ri);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_repo_info_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_repo_info_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_repo_info(&r, out);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_repo_info_req(cn_buf_t *out, cn_scribe_codec_t c,
                                     const cn_scribe_repo_info_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_u8(&w, q->by);
    if (q->by == CN_SCRIBE_REPO_BY_ID) {
        cn_scribe_wr_raw(&w, q->id.b, 16);
    } else {
        CN__FAIL_IF(&w, q->by != CN_SCRIBE_REPO_BY_NAME || q->name.len == 0);
        cn_scribe_wr_str16(&w, q->name, CN_SCRIBE_MAX_REPO_NAME);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_repo_info_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                     cn_scribe_repo_info_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->by = cn_scribe_rd_u8(&r);
    if (out->by == CN_SCRIBE_REPO_BY_ID) {
        cn_scribe_rd_id(&r, &out->id);
    } else if (out->by == CN_SCRIBE_REPO_BY_NAME) {
        cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_REPO_NAME, &out->name);
        if (!r.r.err && out->name.len == 0)
            cn__rd_fail(&r);
    } else {
        cn__rd_fail(&r);
    }
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_repo_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                     const cn_scribe_repo_list_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_u32(&w, q->limit);
    cn_scribe_wr_bool(&w, q->has_token);
    if (q->has_token)
        cn_scribe_wr_bytes16(&w, q->token, CN_SCRIBE_MAX_TOKEN);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_repo_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                     cn_scribe_repo_list_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->limit = cn_scribe_rd_u32(&r);
    out->has_token = cn_scribe_rd_bool(&r);
    if (out->has_token)
        cn_scribe_rd_bytes16(&r, CN_SCRIBE_MAX_TOKEN, &out->token);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_repo_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_repo_info_t *rows, uint32_t count,
                                      bool has_token, cn_scribe_str_t token)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_PAGE);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++)
        cn_scribe_wr_repo_info(&w, &rows[i]);
    cn_scribe_wr_bool(&w, has_token);
    if (has_token)
        cn_scribe_wr_bytes16(&w, token, CN_SCRIBE_MAX_TOKEN);
    CN__ENC_END(out);
}

/* The smallest Repo info: ids, a 1-byte name, integers. */
#define REPO_INFO_MIN (16 + 3 + 16 + 8 + 16 + 8 + 1)

cn_err_t cn_scribe_dec_repo_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_repo_list_resp_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && out->count > CN_SCRIBE_MAX_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, out->count, REPO_INFO_MIN);
    out->rows.rd = r;
    out->rows.left = out->count;
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_repo_info_t ri;
        cn_scribe_rd_repo_info(&r, &ri);
    }
    out->has_token = cn_scribe_rd_bool(&r);
    if (out->has_token)
        cn_scribe_rd_bytes16(&r, CN_SCRIBE_MAX_TOKEN, &out->token);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_repo_info(cn_scribe_rows_t *it, cn_scribe_repo_info_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    cn_scribe_rd_repo_info(&it->rd, out);
    return !it->rd.r.err;
}

cn_err_t cn_scribe_enc_repo_id_req(cn_buf_t *out, cn_scribe_codec_t c, const cn_scribe_id_t *repo)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, repo->b, 16);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_repo_id_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_id_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, out);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_u64_resp(cn_buf_t *out, cn_scribe_codec_t c, uint64_t v)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_u64(&w, v);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_u64_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c, uint64_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *out = cn_scribe_rd_u64(&r);
    return cn_scribe_rd_end(&r);
}

/* ---- instance_status (26) ------------------------------------------------------ */
cn_err_t cn_scribe_enc_instance_req(cn_buf_t *out, cn_scribe_codec_t c,
                                    const cn_scribe_instance_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_bool(&w, q->has_after);
    if (q->has_after)
        cn_scribe_wr_raw(&w, q->after.b, 16);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_instance_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                    cn_scribe_instance_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->has_after = cn_scribe_rd_bool(&r);
    if (out->has_after)
        cn_scribe_rd_id(&r, &out->after);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_instance_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                     const cn_scribe_instance_resp_t *h,
                                     const cn_scribe_instance_row_t *rows)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, h->count > CN_SCRIBE_MAX_INSTANCE_PAGE);
    for (uint32_t i = 1; i < h->count && !w.err; i++)
        CN__FAIL_IF(&w, memcmp(rows[i - 1].info.id.b, rows[i].info.id.b, 16) >= 0);
    CN__FAIL_IF(&w, h->has_next &&
                        (h->count == 0 || memcmp(h->next.b, rows[h->count - 1].info.id.b, 16) < 0));
    cn_scribe_wr_raw(&w, h->incarnation.b, 16);
    cn_scribe_wr_u64(&w, h->total_repositories);
    cn_scribe_wr_u64(&w, h->used_bytes);
    cn_scribe_wr_bool(&w, h->has_available);
    if (h->has_available)
        cn_scribe_wr_u64(&w, h->available_bytes);
    cn_scribe_wr_u32(&w, h->count);
    for (uint32_t i = 0; i < h->count && !w.err; i++) {
        cn_scribe_wr_repo_info(&w, &rows[i].info);
        cn_scribe_wr_u64(&w, rows[i].bytes);
    }
    cn_scribe_wr_bool(&w, h->has_next);
    if (h->has_next)
        cn_scribe_wr_raw(&w, h->next.b, 16);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_instance_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                     cn_scribe_instance_resp_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->incarnation);
    out->total_repositories = cn_scribe_rd_u64(&r);
    out->used_bytes = cn_scribe_rd_u64(&r);
    out->has_available = cn_scribe_rd_bool(&r);
    if (out->has_available)
        out->available_bytes = cn_scribe_rd_u64(&r);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && out->count > CN_SCRIBE_MAX_INSTANCE_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, out->count, REPO_INFO_MIN + 8);
    out->rows.rd = r;
    out->rows.left = out->count;
    cn_scribe_repo_info_t ri, prev;
    memset(&prev, 0, sizeof prev);
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_rd_repo_info(&r, &ri);
        (void)cn_scribe_rd_u64(&r);
        if (!r.r.err && i && memcmp(prev.id.b, ri.id.b, 16) >= 0)
            cn__rd_fail(&r); /* strictly ascending by id */
        prev = ri;
    }
    out->has_next = cn_scribe_rd_bool(&r);
    if (out->has_next)
        cn_scribe_rd_id(&r, &out->next);
    /* A cursor follows a row and never points back before it. */
    if (!r.r.err && out->has_next && (out->count == 0 || memcmp(out->next.b, prev.id.b, 16) < 0))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_instance_row(cn_scribe_rows_t *it, cn_scribe_instance_row_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    cn_scribe_rd_repo_info(&it->rd, &out->info);
    out->bytes = cn_scribe_rd_u64(&it->rd);
    return !it->rd.r.err;
}
