/* Workspaces: workspace_register (12) and its registration row,
 * workspace_list (34), workspace_remove (35), workspace_remove_outcome (36)
 * and the removal outcome (docs/protocol/scribe.md 7.11).  Pure codec:
 * every count is checked against its bound and the bytes that remain before
 * anything is read, every tag against the grammar, and nothing is
 * allocated. */
#include "codec_int.h"

#include <string.h>

/* The smallest row: ids, has-owner, empty label, no tag, created, has-locks. */
#define WS_ROW_MIN (16 + 16 + 1 + 2 + 2 + 8 + 1)

static bool name_char(uint8_t ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
           ch == '.';
}

/* The length of a tag's name: the bytes before '=' (or all of it). */
static uint32_t tag_name_len(cn_scribe_str_t s)
{
    const uint8_t *eq = s.len ? memchr(s.p, '=', s.len) : NULL;
    return eq ? (uint32_t)(eq - s.p) : s.len;
}

bool cn_scribe_ws_tag_ok(cn_scribe_str_t s)
{
    if (s.len == 0 || s.len > CN_SCRIBE_MAX_WS_TAG)
        return false;
    uint32_t nl = tag_name_len(s);
    if (nl == 0 || s.p[0] == '-' || s.p[0] == '_' || s.p[0] == '.')
        return false;
    for (uint32_t i = 0; i < nl; i++)
        if (!name_char(s.p[i]))
            return false;
    for (uint32_t i = nl + 1; i < s.len; i++)
        if (s.p[i] < 0x21 || s.p[i] > 0x7e)
            return false;
    return true;
}

/* Every tag of the grammar and no name twice (at most 16: n*n is small). */
static bool tags_ok(const cn_scribe_str_t *tags, uint32_t n)
{
    if (n > CN_SCRIBE_MAX_WS_TAGS)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        if (!cn_scribe_ws_tag_ok(tags[i]))
            return false;
        uint32_t a = tag_name_len(tags[i]);
        for (uint32_t j = 0; j < i; j++)
            if (tag_name_len(tags[j]) == a && memcmp(tags[j].p, tags[i].p, a) == 0)
                return false;
    }
    return true;
}

/* Byte order of two strings (shorter first on a common prefix). */
static int str_cmp(cn_scribe_str_t a, cn_scribe_str_t b)
{
    int d = a.len && b.len ? memcmp(a.p, b.p, a.len < b.len ? a.len : b.len) : 0;
    return d ? d : (a.len > b.len) - (a.len < b.len);
}

static void wr_tags(cn_scribe_wr_t *w, const cn_scribe_str_t *tags, uint16_t n)
{
    CN__FAIL_IF(w, !tags_ok(tags, n));
    cn_scribe_wr_u16(w, n);
    for (uint16_t i = 0; i < n && !w->err; i++)
        cn_scribe_wr_str16(w, tags[i], CN_SCRIBE_MAX_WS_TAG);
}

/* Reads u16 count | str16 tag x count into tags[]; sorted: strictly ascending. */
static void rd_tags(cn_scribe_rd_t *r, cn_scribe_str_t *tags, uint16_t *n, bool sorted)
{
    *n = cn_scribe_rd_u16(r);
    if (!r->r.err && *n > CN_SCRIBE_MAX_WS_TAGS)
        cn__rd_fail(r);
    cn_scribe_rd_fits(r, *n, 2);
    for (uint16_t i = 0; i < *n && !r->r.err; i++) {
        cn_scribe_rd_str16(r, CN_SCRIBE_MAX_WS_TAG, &tags[i]);
        if (!r->r.err && sorted && i > 0 && str_cmp(tags[i - 1], tags[i]) >= 0)
            cn__rd_fail(r);
    }
    if (!r->r.err && !tags_ok(tags, *n))
        cn__rd_fail(r);
}

cn_err_t cn_scribe_enc_ws_register_req(cn_buf_t *out, cn_scribe_codec_t c,
                                       const cn_scribe_ws_register_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, cn__all_zero(q->workspace.b, 16));
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->workspace.b, 16);
    cn_scribe_wr_raw(&w, q->branch.b, 16);
    cn_scribe_wr_str16(&w, q->label, CN_SCRIBE_MAX_WS_LABEL);
    wr_tags(&w, q->tags, q->tag_count);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_ws_register_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_ws_register_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->workspace);
    cn_scribe_rd_id(&r, &out->branch);
    cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_WS_LABEL, &out->label);
    rd_tags(&r, out->tags, &out->tag_count, false);
    if (!r.r.err && cn__all_zero(out->workspace.b, 16))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

/* Tags of a row are strictly ascending (the server sorts them). */
static bool tags_sorted(const cn_scribe_str_t *tags, uint16_t n)
{
    for (uint16_t i = 1; i < n && i < CN_SCRIBE_MAX_WS_TAGS; i++)
        if (str_cmp(tags[i - 1], tags[i]) >= 0)
            return false;
    return true;
}

static void wr_row(cn_scribe_wr_t *w, const cn_scribe_ws_row_t *row)
{
    CN__FAIL_IF(w, !tags_sorted(row->tags, row->tag_count));
    cn_scribe_wr_raw(w, row->workspace.b, 16);
    cn_scribe_wr_raw(w, row->branch.b, 16);
    cn_scribe_wr_bool(w, row->has_owner);
    if (row->has_owner)
        cn_scribe_wr_raw(w, row->owner.b, 16);
    cn_scribe_wr_str16(w, row->label, CN_SCRIBE_MAX_WS_LABEL);
    wr_tags(w, row->tags, row->tag_count);
    cn_scribe_wr_u64(w, row->created_ms);
    cn_scribe_wr_bool(w, row->has_locks);
}

static void rd_row(cn_scribe_rd_t *r, cn_scribe_ws_row_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_id(r, &out->workspace);
    cn_scribe_rd_id(r, &out->branch);
    out->has_owner = cn_scribe_rd_bool(r);
    if (out->has_owner)
        cn_scribe_rd_id(r, &out->owner);
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_WS_LABEL, &out->label);
    rd_tags(r, out->tags, &out->tag_count, true);
    out->created_ms = cn_scribe_rd_u64(r);
    out->has_locks = cn_scribe_rd_bool(r);
}

cn_err_t cn_scribe_enc_ws_row_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                   const cn_scribe_ws_row_t *row)
{
    CN__ENC_BEGIN(out, c);
    wr_row(&w, row);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_ws_row_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_ws_row_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    rd_row(&r, out);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_ws_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                   const cn_scribe_ws_list_req_t *q)
{
    static const uint8_t zero[16];
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, q->scope > 1);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_u8(&w, q->scope);
    cn_scribe_wr_bool(&w, q->has_cursor);
    cn_scribe_wr_raw(&w, q->has_cursor ? q->cursor.b : zero, 16);
    cn_scribe_wr_u32(&w, q->limit);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_ws_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_ws_list_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->scope = cn_scribe_rd_u8(&r);
    out->has_cursor = cn_scribe_rd_bool(&r);
    cn_scribe_rd_id(&r, &out->cursor);
    out->limit = cn_scribe_rd_u32(&r);
    /* a cursor that is not used is zeros, so one request has one encoding */
    if (!r.r.err && (out->scope > 1 || (!out->has_cursor && !cn__all_zero(out->cursor.b, 16))))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_ws_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                    const cn_scribe_ws_row_t *rows, uint32_t count, bool more)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_WS_PAGE || (more && count == 0));
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        CN__FAIL_IF(&w, i > 0 && memcmp(rows[i - 1].workspace.b, rows[i].workspace.b, 16) >= 0);
        wr_row(&w, &rows[i]);
    }
    cn_scribe_wr_bool(&w, more);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_ws_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                    cn_scribe_rows_t *rows, uint32_t *count, bool *more)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *count = cn_scribe_rd_u32(&r);
    if (!r.r.err && *count > CN_SCRIBE_MAX_WS_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, *count, WS_ROW_MIN);
    rows->rd = r;
    rows->left = *count;
    cn_scribe_id_t prev = { { 0 } };
    for (uint32_t i = 0; i < *count && !r.r.err; i++) {
        cn_scribe_ws_row_t row;
        rd_row(&r, &row);
        if (!r.r.err && i > 0 && memcmp(prev.b, row.workspace.b, 16) >= 0)
            cn__rd_fail(&r);
        prev = row.workspace;
    }
    *more = cn_scribe_rd_bool(&r);
    if (!r.r.err && *more && *count == 0)
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_ws_row(cn_scribe_rows_t *it, cn_scribe_ws_row_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_row(&it->rd, out);
    return !it->rd.r.err;
}

cn_err_t cn_scribe_enc_ws_remove_req(cn_buf_t *out, cn_scribe_codec_t c,
                                     const cn_scribe_ws_remove_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, cn__all_zero(q->operation.b, 16) || cn__all_zero(q->workspace.b, 16));
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->incarnation.b, 16);
    cn_scribe_wr_raw(&w, q->operation.b, 16);
    cn_scribe_wr_raw(&w, q->workspace.b, 16);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_ws_remove_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                     cn_scribe_ws_remove_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->incarnation);
    cn_scribe_rd_id(&r, &out->operation);
    cn_scribe_rd_id(&r, &out->workspace);
    if (!r.r.err && (cn__all_zero(out->operation.b, 16) || cn__all_zero(out->workspace.b, 16)))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_ws_removal(cn_buf_t *out, cn_scribe_codec_t c,
                                  const cn_scribe_ws_removal_t *o)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, o->operation.b, 16);
    cn_scribe_wr_u16(&w, o->code);
    if (o->code == 0)
        cn_scribe_wr_u64(&w, o->retired_ms);
    else
        cn_scribe_wr_str16(&w, o->detail, CN_SCRIBE_MAX_ERROR_MESSAGE);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_ws_removal(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                  cn_scribe_ws_removal_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->operation);
    out->code = cn_scribe_rd_u16(&r);
    if (out->code == 0)
        out->retired_ms = cn_scribe_rd_u64(&r);
    else
        cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_ERROR_MESSAGE, &out->detail);
    return cn_scribe_rd_end(&r);
}
