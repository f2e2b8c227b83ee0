/* Change descriptions: describe_change (39), change_notes (40),
 * change_note_history (41), and the Change note layout. */
#include "codec_int.h"

#include <string.h>

void cn_scribe_wr_note(cn_scribe_wr_t *w, const cn_scribe_note_t *nt)
{
    CN__FAIL_IF(w, nt->revision == 0 || nt->revision > CN_SCRIBE_MAX_NOTE_REVISIONS);
    cn_scribe_wr_u64(w, nt->change);
    cn_scribe_wr_u32(w, nt->revision);
    cn_scribe_wr_str16(w, nt->author, CN_SCRIBE_MAX_AUTHOR);
    cn_scribe_wr_u64(w, nt->edited_ms);
    cn_scribe_wr_str32(w, nt->text, CN_SCRIBE_MAX_NOTE_TEXT);
}

void cn_scribe_rd_note(cn_scribe_rd_t *r, cn_scribe_note_t *out)
{
    out->change = cn_scribe_rd_u64(r);
    out->revision = cn_scribe_rd_u32(r);
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_AUTHOR, &out->author);
    out->edited_ms = cn_scribe_rd_u64(r);
    cn_scribe_rd_str32(r, CN_SCRIBE_MAX_NOTE_TEXT, &out->text);
    if (!r->r.err && (out->revision == 0 || out->revision > CN_SCRIBE_MAX_NOTE_REVISIONS))
        cn__rd_fail(r);
}
#define NOTE_MIN (8 + 4 + 2 + 8 + 4)

static bool blank(cn_scribe_str_t s)
{
    for (uint32_t i = 0; i < s.len; i++) {
        uint8_t ch = s.p[i];
        if (!(ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'))
            return false;
    }
    return true;
}

cn_err_t cn_scribe_enc_describe_req(cn_buf_t *out, cn_scribe_codec_t c,
                                    const cn_scribe_describe_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, blank(q->text));
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_u64(&w, q->change);
    cn_scribe_wr_u32(&w, q->expected_revision);
    cn_scribe_wr_str16(&w, q->author, CN_SCRIBE_MAX_AUTHOR);
    cn_scribe_wr_str32(&w, q->text, CN_SCRIBE_MAX_NOTE_TEXT);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_describe_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                    cn_scribe_describe_req_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->change = cn_scribe_rd_u64(&r);
    out->expected_revision = cn_scribe_rd_u32(&r);
    cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_AUTHOR, &out->author);
    cn_scribe_rd_str32(&r, CN_SCRIBE_MAX_NOTE_TEXT, &out->text);
    if (!r.r.err && blank(out->text)) /* also catches the empty text */
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_note_resp(cn_buf_t *out, cn_scribe_codec_t c, const cn_scribe_note_t *nt)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_note(&w, nt);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_note_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                 cn_scribe_note_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_note(&r, out);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_notes_req(cn_buf_t *out, cn_scribe_codec_t c, const cn_scribe_id_t *repo,
                                 const uint64_t *changes, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_PAGE);
    cn_scribe_wr_raw(&w, repo->b, 16);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++)
        cn_scribe_wr_u64(&w, changes[i]);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_notes_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                 cn_scribe_notes_req_t *out)
{
    memset(out, 0, sizeof *out);
    out->codec = c;
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && (out->count < 1 || out->count > CN_SCRIBE_MAX_PAGE))
        cn__rd_fail(&r);
    if (cn_scribe_rd_fits(&r, out->count, 8))
        out->changes = cn_rd_bytes(&r.r, (size_t)out->count * 8);
    return cn_scribe_rd_end(&r);
}

uint64_t cn_scribe_notes_change(const cn_scribe_notes_req_t *q, uint32_t i)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(q->changes + (size_t)i * 8, 8, q->codec);
    return cn_scribe_rd_u64(&r);
}

cn_err_t cn_scribe_enc_notes_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                  const cn_scribe_note_t *const *notes, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_PAGE);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        cn_scribe_wr_bool(&w, notes[i] != NULL);
        if (notes[i])
            cn_scribe_wr_note(&w, notes[i]);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_notes_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                  cn_scribe_rows_t *rows, uint32_t *count)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *count = cn_scribe_rd_u32(&r);
    if (!r.r.err && (*count < 1 || *count > CN_SCRIBE_MAX_PAGE))
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, *count, 1);
    rows->rd = r;
    rows->left = *count;
    for (uint32_t i = 0; i < *count && !r.r.err; i++) {
        if (cn_scribe_rd_bool(&r)) {
            cn_scribe_note_t nt;
            cn_scribe_rd_note(&r, &nt);
        }
    }
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_note_opt(cn_scribe_rows_t *it, bool *present, cn_scribe_note_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    *present = cn_scribe_rd_bool(&it->rd);
    if (*present)
        cn_scribe_rd_note(&it->rd, out);
    else
        memset(out, 0, sizeof *out);
    return !it->rd.r.err;
}

cn_err_t cn_scribe_enc_history_req(cn_buf_t *out, cn_scribe_codec_t c,
                                   const cn_scribe_history_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_u64(&w, q->change);
    cn_scribe_wr_u32(&w, q->after_revision);
    cn_scribe_wr_u32(&w, q->limit);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_history_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_history_req_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->change = cn_scribe_rd_u64(&r);
    out->after_revision = cn_scribe_rd_u32(&r);
    out->limit = cn_scribe_rd_u32(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_history_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                    const cn_scribe_note_t *notes, uint32_t count, bool more)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_NOTE_REVISIONS);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        /* Oldest first: revisions strictly ascending. */
        CN__FAIL_IF(&w, i > 0 && notes[i].revision <= notes[i - 1].revision);
        cn_scribe_wr_note(&w, &notes[i]);
    }
    cn_scribe_wr_bool(&w, more);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_history_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                    cn_scribe_rows_t *rows, uint32_t *count, bool *more)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *count = cn_scribe_rd_u32(&r);
    if (!r.r.err && *count > CN_SCRIBE_MAX_NOTE_REVISIONS)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, *count, NOTE_MIN);
    rows->rd = r;
    rows->left = *count;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < *count && !r.r.err; i++) {
        cn_scribe_note_t nt;
        cn_scribe_rd_note(&r, &nt);
        if (!r.r.err && nt.revision <= prev)
            cn__rd_fail(&r);
        prev = nt.revision;
    }
    *more = cn_scribe_rd_bool(&r);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_note(cn_scribe_rows_t *it, cn_scribe_note_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    cn_scribe_rd_note(&it->rd, out);
    return !it->rd.r.err;
}
