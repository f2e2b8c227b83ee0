/* Locks: lock_acquire (14), lock_release (16), lock_list (17) and the
 * lock_policy (29) response (docs/protocol/scribe.md 7.10).  Pure codec:
 * every count is checked against its bound and the bytes that remain before
 * anything is read, and nothing is allocated. */
#include "codec_int.h"

#include <string.h>

#define LOCK_ROW_MIN (2 + 1 + 16 + 2 + 16 + 8)

cn_err_t cn_scribe_enc_lock_req(cn_buf_t *out, cn_scribe_codec_t c, uint16_t opcode,
                                const cn_scribe_lock_req_t *q, const cn_scribe_str_t *paths)
{
    CN__ENC_BEGIN(out, c);
    bool acquire = opcode == CN_SCRIBE_OP_LOCK_ACQUIRE;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < q->count && i < CN_SCRIBE_MAX_LOCK_PATHS; i++)
        bytes += paths[i].len;
    CN__FAIL_IF(&w, (!acquire && opcode != CN_SCRIBE_OP_LOCK_RELEASE) || q->count < 1 ||
                        bytes > CN_SCRIBE_MAX_LOCK_BYTES);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->workspace.b, 16);
    if (acquire)
        cn_scribe_wr_raw(&w, q->branch.b, 16);
    else
        cn_scribe_wr_bool(&w, q->force);
    cn__wr_paths(&w, paths, q->count, CN_SCRIBE_MAX_LOCK_PATHS);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_lock_req(const uint8_t *p, size_t n, cn_scribe_codec_t c, uint16_t opcode,
                                cn_scribe_lock_req_t *out)
{
    memset(out, 0, sizeof *out);
    bool acquire = opcode == CN_SCRIBE_OP_LOCK_ACQUIRE;
    if (!acquire && opcode != CN_SCRIBE_OP_LOCK_RELEASE)
        return CN_E_PROTOCOL;
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->workspace);
    if (acquire)
        cn_scribe_rd_id(&r, &out->branch);
    else
        out->force = cn_scribe_rd_bool(&r);
    size_t start = r.r.off + 4;
    cn__rd_paths(&r, CN_SCRIBE_MAX_LOCK_PATHS, &out->count, &out->paths);
    /* The path bytes: what the list took, less its length prefixes. */
    if (!r.r.err &&
        (out->count < 1 || r.r.off - start - 2u * out->count > CN_SCRIBE_MAX_LOCK_BYTES))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_u32_resp(cn_buf_t *out, cn_scribe_codec_t c, uint32_t v)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_u32(&w, v);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_u32_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c, uint32_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *out = cn_scribe_rd_u32(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_lock_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                     const cn_scribe_lock_list_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn__wr_path(&w, q->prefix, true);
    cn_scribe_wr_bool(&w, q->has_owner);
    if (q->has_owner)
        cn_scribe_wr_raw(&w, q->owner.b, 16);
    cn_scribe_wr_bool(&w, q->has_after);
    if (q->has_after)
        cn__wr_path(&w, q->after, false);
    cn_scribe_wr_u32(&w, q->limit);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_lock_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                     cn_scribe_lock_list_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn__rd_path(&r, true, &out->prefix);
    out->has_owner = cn_scribe_rd_bool(&r);
    if (out->has_owner)
        cn_scribe_rd_id(&r, &out->owner);
    out->has_after = cn_scribe_rd_bool(&r);
    if (out->has_after)
        cn__rd_path(&r, false, &out->after);
    out->limit = cn_scribe_rd_u32(&r);
    return cn_scribe_rd_end(&r);
}

static void wr_lock_row(cn_scribe_wr_t *w, const cn_scribe_lock_row_t *l)
{
    cn__wr_path(w, l->path, false);
    cn_scribe_wr_raw(w, l->workspace.b, 16);
    cn_scribe_wr_str16(w, l->principal, CN_SCRIBE_MAX_PRINCIPAL);
    cn_scribe_wr_raw(w, l->branch.b, 16);
    cn_scribe_wr_u64(w, l->since_ms);
}

static void rd_lock_row(cn_scribe_rd_t *r, cn_scribe_lock_row_t *out)
{
    cn__rd_path(r, false, &out->path);
    cn_scribe_rd_id(r, &out->workspace);
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_PRINCIPAL, &out->principal);
    cn_scribe_rd_id(r, &out->branch);
    out->since_ms = cn_scribe_rd_u64(r);
}

/* Byte order of two paths (shorter first on a common prefix). */
static int path_cmp(cn_scribe_str_t a, cn_scribe_str_t b)
{
    int d = memcmp(a.p, b.p, a.len < b.len ? a.len : b.len);
    return d ? d : (a.len > b.len) - (a.len < b.len);
}

cn_err_t cn_scribe_enc_lock_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_lock_row_t *rows, uint32_t count, bool more)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_PAGE || (more && count == 0));
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        CN__FAIL_IF(&w, i > 0 && path_cmp(rows[i - 1].path, rows[i].path) >= 0);
        wr_lock_row(&w, &rows[i]);
    }
    cn_scribe_wr_bool(&w, more);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_lock_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_rows_t *rows, uint32_t *count, bool *more)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *count = cn_scribe_rd_u32(&r);
    if (!r.r.err && *count > CN_SCRIBE_MAX_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, *count, LOCK_ROW_MIN);
    rows->rd = r;
    rows->left = *count;
    cn_scribe_lock_row_t prev = { 0 };
    for (uint32_t i = 0; i < *count && !r.r.err; i++) {
        cn_scribe_lock_row_t l;
        rd_lock_row(&r, &l);
        if (!r.r.err && i > 0 && path_cmp(prev.path, l.path) >= 0)
            cn__rd_fail(&r);
        prev = l;
    }
    *more = cn_scribe_rd_bool(&r);
    if (!r.r.err && *more && *count == 0)
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_lock_row(cn_scribe_rows_t *it, cn_scribe_lock_row_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_lock_row(&it->rd, out);
    return !it->rd.r.err;
}

cn_err_t cn_scribe_enc_lock_policy_resp(cn_buf_t *out, cn_scribe_codec_t c, uint64_t change,
                                        cn_scribe_str_t text)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_u64(&w, change);
    cn_scribe_wr_str32(&w, text, CN_SCRIBE_MAX_CONFIG);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_lock_policy_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                        uint64_t *change, cn_scribe_str_t *text)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *change = cn_scribe_rd_u64(&r);
    cn_scribe_rd_str32(&r, CN_SCRIBE_MAX_CONFIG, text);
    return cn_scribe_rd_end(&r);
}
