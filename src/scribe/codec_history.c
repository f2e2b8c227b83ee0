/* History layouts: tree_page (11), changed_paths (13), log (15). */
#include "codec_int.h"

#include <string.h>

/* ---- tree_page ----------------------------------------------------------------- */
cn_err_t cn_scribe_enc_tree_page_req(cn_buf_t *out, cn_scribe_codec_t c,
                                     const cn_scribe_tree_page_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->branch.b, 16);
    cn_scribe_wr_u64(&w, q->change);
    cn__wr_path(&w, q->prefix, true);
    cn_scribe_wr_u32(&w, q->limit);
    cn_scribe_wr_bool(&w, q->has_after);
    if (q->has_after)
        cn__wr_path(&w, q->after, false);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_tree_page_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                     cn_scribe_tree_page_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->branch);
    out->change = cn_scribe_rd_u64(&r);
    cn__rd_path(&r, true, &out->prefix);
    out->limit = cn_scribe_rd_u32(&r);
    out->has_after = cn_scribe_rd_bool(&r);
    if (out->has_after)
        cn__rd_path(&r, false, &out->after);
    return cn_scribe_rd_end(&r);
}

static void wr_tree_entry(cn_scribe_wr_t *w, const cn_scribe_tree_entry_t *e)
{
    CN__FAIL_IF(w, e->mode > CN_REPOS_MODE_SYMLINK);
    cn__wr_path(w, e->path, false);
    cn_scribe_wr_raw(w, e->manifest.b, CN_DIGEST_LEN);
    cn_scribe_wr_u64(w, e->size);
    cn_scribe_wr_u8(w, e->mode);
    cn_scribe_wr_u64(w, e->last_change);
}

static void rd_tree_entry(cn_scribe_rd_t *r, cn_scribe_tree_entry_t *e)
{
    cn__rd_path(r, false, &e->path);
    cn_scribe_rd_digest(r, &e->manifest);
    e->size = cn_scribe_rd_u64(r);
    e->mode = cn_scribe_rd_u8(r);
    e->last_change = cn_scribe_rd_u64(r);
    if (!r->r.err && e->mode > CN_REPOS_MODE_SYMLINK)
        cn__rd_fail(r);
}
#define TREE_ENTRY_MIN (3 + 32 + 8 + 1 + 8)

cn_err_t cn_scribe_enc_tree_page_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_tree_entry_t *rows, uint32_t count, bool more,
                                      const cn_digest_t *content_root,
                                      const cn_digest_t *revision_root)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_PAGE);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++)
        wr_tree_entry(&w, &rows[i]);
    cn_scribe_wr_bool(&w, more);
    cn_scribe_wr_raw(&w, content_root->b, CN_DIGEST_LEN);
    cn_scribe_wr_raw(&w, revision_root->b, CN_DIGEST_LEN);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_tree_page_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_tree_page_resp_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && out->count > CN_SCRIBE_MAX_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, out->count, TREE_ENTRY_MIN);
    out->rows.rd = r;
    out->rows.left = out->count;
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_tree_entry_t e;
        rd_tree_entry(&r, &e);
    }
    out->more = cn_scribe_rd_bool(&r);
    cn_scribe_rd_digest(&r, &out->content_root);
    cn_scribe_rd_digest(&r, &out->revision_root);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_tree_entry(cn_scribe_rows_t *it, cn_scribe_tree_entry_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_tree_entry(&it->rd, out);
    return !it->rd.r.err;
}

/* ---- changed_paths ---------------------------------------------------------------- */
cn_err_t cn_scribe_enc_changed_req(cn_buf_t *out, cn_scribe_codec_t c,
                                   const cn_scribe_changed_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->branch.b, 16);
    cn_scribe_wr_u64(&w, q->from);
    cn_scribe_wr_u64(&w, q->to);
    cn__wr_path(&w, q->prefix, true);
    cn_scribe_wr_u32(&w, q->limit);
    cn_scribe_wr_bool(&w, q->has_token);
    if (q->has_token)
        cn_scribe_wr_bytes16(&w, q->token, CN_SCRIBE_MAX_TOKEN);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_changed_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_changed_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->branch);
    out->from = cn_scribe_rd_u64(&r);
    out->to = cn_scribe_rd_u64(&r);
    cn__rd_path(&r, true, &out->prefix);
    out->limit = cn_scribe_rd_u32(&r);
    out->has_token = cn_scribe_rd_bool(&r);
    if (out->has_token)
        cn_scribe_rd_bytes16(&r, CN_SCRIBE_MAX_TOKEN, &out->token);
    return cn_scribe_rd_end(&r);
}

static void wr_changed_row(cn_scribe_wr_t *w, const cn_scribe_changed_row_t *e)
{
    cn__wr_path(w, e->path, false);
    cn_scribe_wr_u64(w, e->change);
    cn_scribe_wr_bool(w, e->present);
    if (e->present) {
        CN__FAIL_IF(w, e->mode > CN_REPOS_MODE_SYMLINK);
        cn_scribe_wr_raw(w, e->manifest.b, CN_DIGEST_LEN);
        cn_scribe_wr_u64(w, e->size);
        cn_scribe_wr_u8(w, e->mode);
    }
}

static void rd_changed_row(cn_scribe_rd_t *r, cn_scribe_changed_row_t *e)
{
    memset(e, 0, sizeof *e);
    cn__rd_path(r, false, &e->path);
    e->change = cn_scribe_rd_u64(r);
    e->present = cn_scribe_rd_bool(r);
    if (e->present) {
        cn_scribe_rd_digest(r, &e->manifest);
        e->size = cn_scribe_rd_u64(r);
        e->mode = cn_scribe_rd_u8(r);
        if (!r->r.err && e->mode > CN_REPOS_MODE_SYMLINK)
            cn__rd_fail(r);
    }
}
#define CHANGED_ROW_MIN (3 + 8 + 1)

cn_err_t cn_scribe_enc_changed_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                    const cn_scribe_changed_row_t *rows, uint32_t count,
                                    bool has_token, cn_scribe_str_t token)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_PAGE);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++)
        wr_changed_row(&w, &rows[i]);
    cn_scribe_wr_bool(&w, has_token);
    if (has_token)
        cn_scribe_wr_bytes16(&w, token, CN_SCRIBE_MAX_TOKEN);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_changed_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                    cn_scribe_changed_resp_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && out->count > CN_SCRIBE_MAX_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, out->count, CHANGED_ROW_MIN);
    out->rows.rd = r;
    out->rows.left = out->count;
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_changed_row_t e;
        rd_changed_row(&r, &e);
    }
    out->has_token = cn_scribe_rd_bool(&r);
    if (out->has_token)
        cn_scribe_rd_bytes16(&r, CN_SCRIBE_MAX_TOKEN, &out->token);
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_changed_row(cn_scribe_rows_t *it, cn_scribe_changed_row_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_changed_row(&it->rd, out);
    return !it->rd.r.err;
}

/* ---- log -------------------------------------------------------------------------- */
cn_err_t cn_scribe_enc_log_req(cn_buf_t *out, cn_scribe_codec_t c, const cn_scribe_log_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->branch.b, 16);
    cn_scribe_wr_bool(&w, q->has_path);
    if (q->has_path)
        cn__wr_path(&w, q->path, false);
    cn_scribe_wr_bool(&w, q->follow_merges);
    cn_scribe_wr_bool(&w, q->all_branches);
    cn_scribe_wr_bool(&w, q->has_ceiling);
    if (q->has_ceiling)
        cn_scribe_wr_u64(&w, q->ceiling);
    cn_scribe_wr_bool(&w, q->has_before);
    if (q->has_before)
        cn_scribe_wr_u64(&w, q->before);
    cn_scribe_wr_bool(&w, q->has_after_path);
    if (q->has_after_path)
        cn__wr_path(&w, q->after_path, false);
    cn_scribe_wr_u32(&w, q->limit);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_log_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                               cn_scribe_log_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->branch);
    out->has_path = cn_scribe_rd_bool(&r);
    if (out->has_path)
        cn__rd_path(&r, false, &out->path);
    out->follow_merges = cn_scribe_rd_bool(&r);
    out->all_branches = cn_scribe_rd_bool(&r);
    out->has_ceiling = cn_scribe_rd_bool(&r);
    if (out->has_ceiling)
        out->ceiling = cn_scribe_rd_u64(&r);
    out->has_before = cn_scribe_rd_bool(&r);
    if (out->has_before)
        out->before = cn_scribe_rd_u64(&r);
    out->has_after_path = cn_scribe_rd_bool(&r);
    if (out->has_after_path)
        cn__rd_path(&r, false, &out->after_path);
    out->limit = cn_scribe_rd_u32(&r);
    if (!r.r.err && ((out->follow_merges && !out->has_path) ||
                     (out->all_branches && (!out->has_path || !out->follow_merges)) ||
                     (out->has_ceiling && !out->all_branches) ||
                     (out->has_after_path && (!out->has_path || !out->has_before))))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

static void wr_log_row(cn_scribe_wr_t *w, bool all, const cn_scribe_log_row_t *e)
{
    CN__FAIL_IF(w, e->event > CN_REPOS_KEEP || (e->event == 0) != (e->path.len == 0));
    cn_scribe_wr_u64(w, e->change);
    cn_scribe_wr_raw(w, e->commit.b, CN_DIGEST_LEN);
    cn_scribe_wr_raw(w, e->branch.b, 16);
    cn_scribe_wr_str16(w, e->branch_name, CN_SCRIBE_MAX_BRANCH_NAME);
    cn_scribe_wr_u64(w, e->parent);
    cn__wr_path(w, e->path, true);
    cn_scribe_wr_u8(w, e->event);
    if (e->event == CN_REPOS_MOVE)
        cn__wr_path(w, e->from_path, false);
    cn_scribe_wr_str16(w, e->author, CN_SCRIBE_MAX_AUTHOR);
    cn_scribe_wr_str32(w, e->message, CN_SCRIBE_MAX_MESSAGE);
    cn_scribe_wr_u64(w, e->time_ms);
    cn_scribe_wr_bool(w, e->has_merge);
    if (e->has_merge) {
        cn_scribe_wr_raw(w, e->merge_branch.b, 16);
        cn_scribe_wr_u64(w, e->merge_change);
    }
    cn_scribe_wr_bool(w, e->has_pick);
    if (e->has_pick) {
        cn_scribe_wr_raw(w, e->pick_branch.b, 16);
        cn_scribe_wr_u64(w, e->pick_change);
    }
    if (all) {
        cn_scribe_wr_u64(w, e->ceiling);
        cn_scribe_wr_bool(w, e->member);
    }
}

static void rd_log_row(cn_scribe_rd_t *r, bool all, cn_scribe_log_row_t *e)
{
    memset(e, 0, sizeof *e);
    e->change = cn_scribe_rd_u64(r);
    cn_scribe_rd_digest(r, &e->commit);
    cn_scribe_rd_id(r, &e->branch);
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_BRANCH_NAME, &e->branch_name);
    e->parent = cn_scribe_rd_u64(r);
    cn__rd_path(r, true, &e->path);
    e->event = cn_scribe_rd_u8(r);
    if (!r->r.err && (e->event > CN_REPOS_KEEP || (e->event == 0) != (e->path.len == 0)))
        cn__rd_fail(r);
    if (e->event == CN_REPOS_MOVE)
        cn__rd_path(r, false, &e->from_path);
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_AUTHOR, &e->author);
    cn_scribe_rd_str32(r, CN_SCRIBE_MAX_MESSAGE, &e->message);
    e->time_ms = cn_scribe_rd_u64(r);
    e->has_merge = cn_scribe_rd_bool(r);
    if (e->has_merge) {
        cn_scribe_rd_id(r, &e->merge_branch);
        e->merge_change = cn_scribe_rd_u64(r);
    }
    e->has_pick = cn_scribe_rd_bool(r);
    if (e->has_pick) {
        cn_scribe_rd_id(r, &e->pick_branch);
        e->pick_change = cn_scribe_rd_u64(r);
    }
    if (all) {
        e->ceiling = cn_scribe_rd_u64(r);
        e->member = cn_scribe_rd_bool(r);
        if (!r->r.err && e->change > e->ceiling)
            cn__rd_fail(r); /* nodes past the snapshot are never rows */
    }
}
#define LOG_ROW_MIN (8 + 32 + 16 + 2 + 8 + 2 + 1 + 2 + 4 + 8 + 1 + 1)

cn_err_t cn_scribe_enc_log_resp(cn_buf_t *out, cn_scribe_codec_t c, bool all_branches,
                                const cn_scribe_log_row_t *rows, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_PAGE);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        /* all-branch rows: one ceiling per page, no row past it */
        CN__FAIL_IF(&w, all_branches && (rows[i].change > rows[i].ceiling ||
                                         rows[i].ceiling != rows[0].ceiling));
        wr_log_row(&w, all_branches, &rows[i]);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_log_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c, bool all_branches,
                                cn_scribe_log_resp_t *out)
{
    memset(out, 0, sizeof *out);
    out->all_branches = all_branches;
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && out->count > CN_SCRIBE_MAX_PAGE)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, out->count, LOG_ROW_MIN + (all_branches ? 9 : 0));
    out->rows.rd = r;
    out->rows.left = out->count;
    uint64_t ceiling = 0;
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_log_row_t e;
        rd_log_row(&r, all_branches, &e);
        if (i == 0)
            ceiling = e.ceiling;
        else if (!r.r.err && e.ceiling != ceiling)
            cn__rd_fail(&r);
    }
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_log_row(cn_scribe_rows_t *it, bool all_branches, cn_scribe_log_row_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_log_row(&it->rd, all_branches, out);
    return !it->rd.r.err;
}
