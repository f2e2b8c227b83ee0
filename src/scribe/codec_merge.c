/* Merge and selective-integration layouts: merge_submit (24), merge_read
 * (25) with FileStateAt and base-file origins, cherry_pick_info (32),
 * cherry_pick_submit (33), and the merge and cherry-pick fingerprints
 * (docs/protocol/scribe.md 7.9, 9.6).  Pure: no allocation, views into the
 * caller's buffer. */
#include "codec_int.h"

#include <string.h>

/* ---- the common head of 24 and 33 ------------------------------------------------
 * bytes32 ordinary submit (same codec) | u64 target head | [16] source |
 * u64 source revision (24: the source head, 33: the picked change). */
static void wr_integration(cn_scribe_wr_t *w, const cn_scribe_submit_req_t *s, uint64_t target_head,
                           const cn_scribe_id_t *source, uint64_t source_rev)
{
    CN__FAIL_IF(w, s->base != target_head);
    size_t at = w->b->len;
    cn_scribe_wr_u32(w, 0); /* the length, patched below */
    if (w->err)
        return;
    cn_err_t err = cn_scribe_enc_submit_req(w->b, w->codec, s);
    if (err < 0) {
        w->err = err;
        return;
    }
    uint32_t len = (uint32_t)(w->b->len - at - 4);
    for (int i = 0; i < 4; i++) {
        int sh = w->codec == CN_SCRIBE_CODEC_BE ? 8 * (3 - i) : 8 * i;
        w->b->data[at + (size_t)i] = (uint8_t)(len >> sh);
    }
    cn_scribe_wr_u64(w, target_head);
    cn_scribe_wr_raw(w, source->b, 16);
    cn_scribe_wr_u64(w, source_rev);
}

static void rd_integration(cn_scribe_rd_t *r, cn_scribe_submit_req_t *s, uint64_t *target_head,
                           cn_scribe_id_t *source, uint64_t *source_rev)
{
    uint32_t max = 0;
    cn_scribe_request_bound(CN_SCRIBE_OP_SUBMIT, false, &max);
    cn_scribe_str_t inner;
    cn_scribe_rd_bytes32(r, max, &inner);
    if (!r->r.err && cn_scribe_dec_submit_req(inner.p, inner.len, r->codec, s) < 0)
        cn__rd_fail(r);
    *target_head = cn_scribe_rd_u64(r);
    cn_scribe_rd_id(r, source);
    *source_rev = cn_scribe_rd_u64(r);
    if (!r->r.err && s->base != *target_head)
        cn__rd_fail(r);
}

/* ---- merge_submit (24) ------------------------------------------------------------ */
static bool merge_bad(const cn_scribe_merge_submit_req_t *q)
{
    return memcmp(q->source.b, q->submit.branch.b, 16) == 0 || q->base > q->source_head ||
           q->base > q->target_head;
}

cn_err_t cn_scribe_enc_merge_submit_req(cn_buf_t *out, cn_scribe_codec_t c,
                                        const cn_scribe_merge_submit_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, merge_bad(q));
    wr_integration(&w, &q->submit, q->target_head, &q->source, q->source_head);
    cn_scribe_wr_raw(&w, q->base_branch.b, 16);
    cn_scribe_wr_u64(&w, q->base);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_merge_submit_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                        cn_scribe_merge_submit_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    rd_integration(&r, &out->submit, &out->target_head, &out->source, &out->source_head);
    cn_scribe_rd_id(&r, &out->base_branch);
    out->base = cn_scribe_rd_u64(&r);
    if (!r.r.err && merge_bad(out))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

/* The common head of the merge and cherry-pick fingerprints: domain, the
 * nested submit's fingerprint, then the integration fields in the layout's
 * order, integers little-endian. */
static void b3_integration(cn_blake3_t *h, const char *domain, const cn_scribe_submit_req_t *s,
                           uint64_t target_head, const cn_scribe_id_t *source, uint64_t source_rev)
{
    cn_digest_t ordinary;
    cn_scribe_submit_fingerprint(s, &ordinary);
    cn__b3_domain(h, domain);
    cn_blake3_update(h, ordinary.b, CN_DIGEST_LEN);
    cn__b3_le(h, target_head, 8);
    cn_blake3_update(h, source->b, 16);
    cn__b3_le(h, source_rev, 8);
}

void cn_scribe_merge_fingerprint(const cn_scribe_merge_submit_req_t *q, cn_digest_t *out)
{
    cn_blake3_t h;
    b3_integration(&h, "scribe:merge-operation:v1", &q->submit, q->target_head, &q->source,
                   q->source_head);
    cn_blake3_update(&h, q->base_branch.b, 16);
    cn__b3_le(&h, q->base, 8);
    cn_blake3_final(&h, out);
}

/* ---- cherry_pick_info (32) and cherry_pick_submit (33) ------------------------------ */
cn_err_t cn_scribe_enc_pick_info_req(cn_buf_t *out, cn_scribe_codec_t c,
                                     const cn_scribe_pick_info_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->target.b, 16);
    cn_scribe_wr_raw(&w, q->source.b, 16);
    cn_scribe_wr_u64(&w, q->change);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_pick_info_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                     cn_scribe_pick_info_req_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->target);
    cn_scribe_rd_id(&r, &out->source);
    out->change = cn_scribe_rd_u64(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_pick_info_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_pick_info_t *v)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, v->parent >= v->source.head);
    cn_scribe_wr_branch_info(&w, &v->target);
    cn_scribe_wr_branch_info(&w, &v->source);
    cn_scribe_wr_raw(&w, v->parent_branch.b, 16);
    cn_scribe_wr_u64(&w, v->parent);
    cn_scribe_wr_bool(&w, v->already_applied);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_pick_info_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_pick_info_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_branch_info(&r, &out->target);
    cn_scribe_rd_branch_info(&r, &out->source);
    cn_scribe_rd_id(&r, &out->parent_branch);
    out->parent = cn_scribe_rd_u64(&r);
    out->already_applied = cn_scribe_rd_bool(&r);
    if (!r.r.err && out->parent >= out->source.head)
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_pick_submit_req(cn_buf_t *out, cn_scribe_codec_t c,
                                       const cn_scribe_pick_submit_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    wr_integration(&w, &q->submit, q->target_head, &q->source, q->source_change);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_pick_submit_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_pick_submit_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    rd_integration(&r, &out->submit, &out->target_head, &out->source, &out->source_change);
    return cn_scribe_rd_end(&r);
}

void cn_scribe_pick_fingerprint(const cn_scribe_pick_submit_req_t *q, cn_digest_t *out)
{
    cn_blake3_t h;
    b3_integration(&h, "scribe:cherry-pick-operation:v1", &q->submit, q->target_head, &q->source,
                   q->source_change);
    cn_blake3_final(&h, out);
}

/* ---- path lists (codec_int.h) ----------------------------------------------------------- */
void cn__wr_paths(cn_scribe_wr_t *w, const cn_scribe_str_t *paths, uint32_t count, uint32_t max)
{
    CN__FAIL_IF(w, count > max);
    cn_scribe_wr_u32(w, count);
    for (uint32_t i = 0; i < count && !w->err; i++)
        cn__wr_path(w, paths[i], false);
}

void cn__rd_paths(cn_scribe_rd_t *r, uint32_t max, uint32_t *count, cn_scribe_rows_t *rows)
{
    *count = cn_scribe_rd_u32(r);
    if (!r->r.err && *count > max)
        cn__rd_fail(r);
    cn_scribe_rd_fits(r, *count, 3);
    rows->rd = *r;
    rows->left = *count;
    for (uint32_t i = 0; i < *count && !r->r.err; i++) {
        cn_scribe_str_t s;
        cn__rd_path(r, false, &s);
    }
}

bool cn_scribe_next_path(cn_scribe_rows_t *it, cn_scribe_str_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    cn__rd_path(&it->rd, false, out);
    return !it->rd.r.err;
}

static void wr_opt_path(cn_scribe_wr_t *w, bool has, cn_scribe_str_t s)
{
    cn_scribe_wr_bool(w, has);
    if (has)
        cn__wr_path(w, s, false);
}

static void rd_opt_path(cn_scribe_rd_t *r, bool *has, cn_scribe_str_t *s)
{
    *has = cn_scribe_rd_bool(r);
    if (*has)
        cn__rd_path(r, false, s);
}

/* ---- merge_read (25) requests ----------------------------------------------------- */
cn_err_t cn_scribe_enc_merge_read_req(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_merge_read_req_t *q,
                                      const cn_scribe_str_t *paths)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_u8(&w, q->tag);
    switch (q->tag) {
    case CN_SCRIBE_MR_CHAINS:
        cn_scribe_wr_u64(&w, q->left);
        cn_scribe_wr_u64(&w, q->right);
        wr_opt_path(&w, q->has_cursor, q->cursor);
        break;
    case CN_SCRIBE_MR_DESCENDANTS:
        cn_scribe_wr_raw(&w, q->branch.b, 16);
        cn_scribe_wr_u64(&w, q->revision);
        cn__wr_path(&w, q->path, false);
        wr_opt_path(&w, q->has_cursor, q->cursor);
        break;
    case CN_SCRIBE_MR_STATES:
    case CN_SCRIBE_MR_ORIGINS:
    case CN_SCRIBE_MR_UNCHANGED:
        cn_scribe_wr_raw(&w, q->branch.b, 16);
        cn_scribe_wr_u64(&w, q->tag == CN_SCRIBE_MR_UNCHANGED ? q->from : q->revision);
        if (q->tag == CN_SCRIBE_MR_UNCHANGED) {
            cn_scribe_wr_u64(&w, q->to);
        } else if (q->tag == CN_SCRIBE_MR_ORIGINS) {
            cn_scribe_wr_raw(&w, q->other.b, 16);
            cn_scribe_wr_u64(&w, q->other_revision);
        }
        cn__wr_paths(&w, paths, q->count, CN_SCRIBE_MAX_MERGE_PATHS);
        break;
    case CN_SCRIBE_MR_BASE:
        cn_scribe_wr_raw(&w, q->branch.b, 16);
        cn_scribe_wr_u64(&w, q->revision);
        cn_scribe_wr_raw(&w, q->other.b, 16);
        cn_scribe_wr_u64(&w, q->other_revision);
        break;
    default: CN__FAIL_IF(&w, true);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_merge_read_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_merge_read_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->tag = cn_scribe_rd_u8(&r);
    if (r.r.err)
        return CN_E_PROTOCOL;
    switch (out->tag) {
    case CN_SCRIBE_MR_CHAINS:
        out->left = cn_scribe_rd_u64(&r);
        out->right = cn_scribe_rd_u64(&r);
        rd_opt_path(&r, &out->has_cursor, &out->cursor);
        break;
    case CN_SCRIBE_MR_DESCENDANTS:
        cn_scribe_rd_id(&r, &out->branch);
        out->revision = cn_scribe_rd_u64(&r);
        cn__rd_path(&r, false, &out->path);
        rd_opt_path(&r, &out->has_cursor, &out->cursor);
        break;
    case CN_SCRIBE_MR_STATES:
    case CN_SCRIBE_MR_ORIGINS:
    case CN_SCRIBE_MR_UNCHANGED:
        cn_scribe_rd_id(&r, &out->branch);
        if (out->tag == CN_SCRIBE_MR_UNCHANGED) {
            out->from = cn_scribe_rd_u64(&r);
            out->to = cn_scribe_rd_u64(&r);
        } else {
            out->revision = cn_scribe_rd_u64(&r);
        }
        if (out->tag == CN_SCRIBE_MR_ORIGINS) {
            cn_scribe_rd_id(&r, &out->other);
            out->other_revision = cn_scribe_rd_u64(&r);
        }
        cn__rd_paths(&r, CN_SCRIBE_MAX_MERGE_PATHS, &out->count, &out->paths);
        break;
    case CN_SCRIBE_MR_BASE:
        cn_scribe_rd_id(&r, &out->branch);
        out->revision = cn_scribe_rd_u64(&r);
        cn_scribe_rd_id(&r, &out->other);
        out->other_revision = cn_scribe_rd_u64(&r);
        break;
    default: cn__rd_fail(&r);
    }
    return cn_scribe_rd_end(&r);
}

/* ---- FileStateAt and origins -------------------------------------------------------- */
static void wr_file_state(cn_scribe_wr_t *w, const cn_scribe_file_state_t *s)
{
    bool live = s->kind == CN_SCRIBE_FILE_LIVE;
    CN__FAIL_IF(w, (!live && s->kind != CN_SCRIBE_FILE_TOMBSTONE) || s->change == 0 ||
                       (live && s->mode > CN_REPOS_MODE_SYMLINK));
    cn_scribe_wr_u8(w, s->kind);
    cn_scribe_wr_u64(w, s->change);
    if (live) {
        cn_scribe_wr_raw(w, s->manifest.b, CN_DIGEST_LEN);
        cn_scribe_wr_u64(w, s->size);
        cn_scribe_wr_u8(w, s->mode);
    }
}

static void rd_file_state(cn_scribe_rd_t *r, cn_scribe_file_state_t *s)
{
    memset(s, 0, sizeof *s);
    s->kind = cn_scribe_rd_u8(r);
    s->change = cn_scribe_rd_u64(r);
    if (s->kind == CN_SCRIBE_FILE_LIVE) {
        cn_scribe_rd_digest(r, &s->manifest);
        s->size = cn_scribe_rd_u64(r);
        s->mode = cn_scribe_rd_u8(r);
    }
    if (!r->r.err && ((s->kind != CN_SCRIBE_FILE_LIVE && s->kind != CN_SCRIBE_FILE_TOMBSTONE) ||
                      s->change == 0 || s->mode > CN_REPOS_MODE_SYMLINK))
        cn__rd_fail(r);
}
#define FILE_STATE_MIN 9

static void wr_origin(cn_scribe_wr_t *w, const cn_scribe_origin_t *o)
{
    CN__FAIL_IF(w, o->kind > CN_SCRIBE_ORIGIN_SEVERAL);
    cn_scribe_wr_u8(w, o->kind);
    if (o->kind == CN_SCRIBE_ORIGIN_UNIQUE)
        cn__wr_path(w, o->base_path, false);
}

static void rd_origin(cn_scribe_rd_t *r, cn_scribe_origin_t *o)
{
    memset(o, 0, sizeof *o);
    o->kind = cn_scribe_rd_u8(r);
    if (o->kind == CN_SCRIBE_ORIGIN_UNIQUE)
        cn__rd_path(r, false, &o->base_path);
    else if (!r->r.err && o->kind > CN_SCRIBE_ORIGIN_SEVERAL)
        cn__rd_fail(r);
}

/* ---- merge_read (25) responses ------------------------------------------------------ */
cn_err_t cn_scribe_enc_merge_chains_resp(cn_buf_t *out, cn_scribe_codec_t c, uint64_t left,
                                         uint64_t right, bool has_cursor, cn_scribe_str_t cursor,
                                         const cn_scribe_str_t *paths, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, left == right && has_cursor);
    cn_scribe_wr_u8(&w, CN_SCRIBE_MR_CHAINS);
    cn_scribe_wr_u64(&w, left);
    cn_scribe_wr_u64(&w, right);
    wr_opt_path(&w, has_cursor, cursor);
    cn__wr_paths(&w, paths, count, CN_SCRIBE_MAX_MERGE_PATHS);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_enc_merge_states_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                         const cn_scribe_file_state_t *const *states,
                                         uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_MERGE_PATHS);
    cn_scribe_wr_u8(&w, CN_SCRIBE_MR_STATES);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        cn_scribe_wr_bool(&w, states[i] != NULL);
        if (states[i])
            wr_file_state(&w, states[i]);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_enc_merge_descendants_resp(cn_buf_t *out, cn_scribe_codec_t c, bool has_cursor,
                                              cn_scribe_str_t cursor,
                                              const cn_scribe_path_state_t *rows, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_MERGE_ENTRIES);
    cn_scribe_wr_u8(&w, CN_SCRIBE_MR_DESCENDANTS);
    wr_opt_path(&w, has_cursor, cursor);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        cn__wr_path(&w, rows[i].path, false);
        wr_file_state(&w, &rows[i].state);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_enc_merge_origins_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_origin_t *origins, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_MERGE_PATHS);
    cn_scribe_wr_u8(&w, CN_SCRIBE_MR_ORIGINS);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++)
        wr_origin(&w, &origins[i]);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_enc_merge_unchanged_resp(cn_buf_t *out, cn_scribe_codec_t c, bool unchanged)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_u8(&w, CN_SCRIBE_MR_UNCHANGED);
    cn_scribe_wr_bool(&w, unchanged);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_enc_merge_base_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                       const cn_scribe_id_t *base_branch, uint64_t base)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_u8(&w, CN_SCRIBE_MR_BASE);
    cn_scribe_wr_raw(&w, base_branch->b, 16);
    cn_scribe_wr_u64(&w, base);
    CN__ENC_END(out);
}

static void rd_opt_state(cn_scribe_rd_t *r, bool *present, cn_scribe_file_state_t *s)
{
    memset(s, 0, sizeof *s);
    *present = cn_scribe_rd_bool(r);
    if (*present)
        rd_file_state(r, s);
}

static void rd_path_state(cn_scribe_rd_t *r, cn_scribe_path_state_t *ps)
{
    cn__rd_path(r, false, &ps->path);
    rd_file_state(r, &ps->state);
}

/* Validates the count rows of a reply (tags 2..4) and leaves them as rows. */
static void rd_rows(cn_scribe_rd_t *r, uint8_t tag, cn_scribe_merge_read_resp_t *out)
{
    bool desc = tag == CN_SCRIBE_MR_DESCENDANTS;
    out->count = cn_scribe_rd_u32(r);
    if (!r->r.err && out->count > (desc ? CN_SCRIBE_MAX_MERGE_ENTRIES : CN_SCRIBE_MAX_MERGE_PATHS))
        cn__rd_fail(r);
    cn_scribe_rd_fits(r, out->count, desc ? 3 + FILE_STATE_MIN : 1);
    out->rows.rd = *r;
    out->rows.left = out->count;
    for (uint32_t i = 0; i < out->count && !r->r.err; i++) {
        bool present;
        cn_scribe_file_state_t s;
        cn_scribe_path_state_t ps;
        cn_scribe_origin_t o;
        if (tag == CN_SCRIBE_MR_STATES)
            rd_opt_state(r, &present, &s);
        else if (desc)
            rd_path_state(r, &ps);
        else
            rd_origin(r, &o);
    }
}

cn_err_t cn_scribe_dec_merge_read_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_merge_read_resp_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->tag = cn_scribe_rd_u8(&r);
    if (r.r.err)
        return CN_E_PROTOCOL;
    switch (out->tag) {
    case CN_SCRIBE_MR_CHAINS:
        out->left = cn_scribe_rd_u64(&r);
        out->right = cn_scribe_rd_u64(&r);
        rd_opt_path(&r, &out->has_cursor, &out->cursor);
        if (!r.r.err && out->left == out->right && out->has_cursor)
            cn__rd_fail(&r);
        cn__rd_paths(&r, CN_SCRIBE_MAX_MERGE_PATHS, &out->count, &out->rows);
        break;
    case CN_SCRIBE_MR_DESCENDANTS:
        rd_opt_path(&r, &out->has_cursor, &out->cursor);
        rd_rows(&r, out->tag, out);
        break;
    case CN_SCRIBE_MR_STATES:
    case CN_SCRIBE_MR_ORIGINS: rd_rows(&r, out->tag, out); break;
    case CN_SCRIBE_MR_UNCHANGED: out->unchanged = cn_scribe_rd_bool(&r); break;
    case CN_SCRIBE_MR_BASE:
        cn_scribe_rd_id(&r, &out->base_branch);
        out->base = cn_scribe_rd_u64(&r);
        break;
    default: cn__rd_fail(&r);
    }
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_file_state(cn_scribe_rows_t *it, bool *present, cn_scribe_file_state_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_opt_state(&it->rd, present, out);
    return !it->rd.r.err;
}

bool cn_scribe_next_path_state(cn_scribe_rows_t *it, cn_scribe_path_state_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_path_state(&it->rd, out);
    return !it->rd.r.err;
}

bool cn_scribe_next_origin(cn_scribe_rows_t *it, cn_scribe_origin_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_origin(&it->rd, out);
    return !it->rd.r.err;
}
