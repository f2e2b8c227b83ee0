/* submit (9), operation_outcome (10) and branch_outcome (23): the request,
 * the submit outcome encoding shared with merge and cherry-pick submits, the
 * semantic fingerprint, and the outcome lookups. */
#include "codec_int.h"

#include <string.h>

cn_err_t cn_scribe_enc_submit_req(cn_buf_t *out, cn_scribe_codec_t c,
                                  const cn_scribe_submit_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->incarnation.b, 16);
    cn_scribe_wr_raw(&w, q->operation.b, 16);
    cn_scribe_wr_raw(&w, q->branch.b, 16);
    cn_scribe_wr_raw(&w, q->workspace.b, 16);
    cn_scribe_wr_u64(&w, q->base);
    cn_scribe_wr_raw(&w, q->changeset.b, CN_DIGEST_LEN);
    cn_scribe_wr_bool(&w, q->keep_locks);
    cn_scribe_wr_str16(&w, q->author, CN_SCRIBE_MAX_AUTHOR);
    cn_scribe_wr_str32(&w, q->message, CN_SCRIBE_MAX_MESSAGE);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_submit_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                  cn_scribe_submit_req_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->incarnation);
    cn_scribe_rd_id(&r, &out->operation);
    cn_scribe_rd_id(&r, &out->branch);
    cn_scribe_rd_id(&r, &out->workspace);
    out->base = cn_scribe_rd_u64(&r);
    cn_scribe_rd_digest(&r, &out->changeset);
    out->keep_locks = cn_scribe_rd_bool(&r);
    cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_AUTHOR, &out->author);
    cn_scribe_rd_str32(&r, CN_SCRIBE_MAX_MESSAGE, &out->message);
    /* A mutation needs a nonzero operation id. */
    if (!r.r.err && cn__all_zero(out->operation.b, 16))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

/* The same bytes as cn_repos_submit_fingerprint (docs/protocol/scribe.md,
 * "Operation fingerprints"); written out here so the codec links against
 * nothing above crypto.  A unit test holds the two equal. */
void cn_scribe_submit_fingerprint(const cn_scribe_submit_req_t *q, cn_digest_t *out)
{
    cn_blake3_t h;
    cn__b3_domain(&h, "cairn:submit-operation:v1");
    cn_blake3_update(&h, q->repo.b, 16);
    cn_blake3_update(&h, q->incarnation.b, 16);
    cn_blake3_update(&h, q->branch.b, 16);
    cn_blake3_update(&h, q->workspace.b, 16);
    cn__b3_le(&h, q->base, 8);
    cn_blake3_update(&h, q->changeset.b, CN_DIGEST_LEN);
    cn__b3_le(&h, q->keep_locks ? 1 : 0, 1);
    cn__b3_le(&h, q->message.len, 4);
    if (q->message.len)
        cn_blake3_update(&h, q->message.p, q->message.len);
    cn_blake3_final(&h, out);
}

/* ---- submit outcome ---------------------------------------------------------------- */
void cn_scribe_wr_submit_outcome(cn_scribe_wr_t *w, const cn_scribe_submit_outcome_t *o,
                                 const cn_scribe_str_t *paths)
{
    cn_scribe_wr_raw(w, o->operation.b, 16);
    cn_scribe_wr_u8(w, o->outcome);
    if (o->outcome == CN_SCRIBE_OUTCOME_ACCEPTED) {
        cn_scribe_wr_u64(w, o->change);
        cn_scribe_wr_raw(w, o->commit.b, CN_DIGEST_LEN);
        return;
    }
    CN__FAIL_IF(w, o->outcome != CN_SCRIBE_OUTCOME_REJECTED || o->code == 0 ||
                       o->path_count > CN_SCRIBE_MAX_CONFLICT_PATHS);
    cn_scribe_wr_u16(w, o->code);
    cn_scribe_wr_u64(w, o->head);
    cn_scribe_wr_str16(w, o->detail, CN_SCRIBE_MAX_ERROR_MESSAGE);
    cn_scribe_wr_u32(w, o->path_count);
    for (uint32_t i = 0; i < o->path_count && !w->err; i++) {
        CN__FAIL_IF(w, paths[i].len == 0);
        cn_scribe_wr_str16(w, paths[i], CN_SCRIBE_MAX_PATH);
    }
}

void cn_scribe_rd_submit_outcome(cn_scribe_rd_t *r, cn_scribe_submit_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_id(r, &out->operation);
    out->outcome = cn_scribe_rd_u8(r);
    if (r->r.err)
        return;
    if (out->outcome == CN_SCRIBE_OUTCOME_ACCEPTED) {
        out->change = cn_scribe_rd_u64(r);
        cn_scribe_rd_digest(r, &out->commit);
        if (!r->r.err && out->change == 0)
            cn__rd_fail(r);
        return;
    }
    if (out->outcome != CN_SCRIBE_OUTCOME_REJECTED) {
        cn__rd_fail(r);
        return;
    }
    out->code = cn_scribe_rd_u16(r);
    out->head = cn_scribe_rd_u64(r);
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_ERROR_MESSAGE, &out->detail);
    out->path_count = cn_scribe_rd_u32(r);
    if (!r->r.err && (out->code == 0 || out->path_count > CN_SCRIBE_MAX_CONFLICT_PATHS))
        cn__rd_fail(r);
    cn_scribe_rd_fits(r, out->path_count, 3);
    out->paths = r->r.p + r->r.off;
    for (uint32_t i = 0; i < out->path_count && !r->r.err; i++) {
        cn_scribe_str_t s;
        cn_scribe_rd_str16(r, CN_SCRIBE_MAX_PATH, &s);
        if (!r->r.err && s.len == 0)
            cn__rd_fail(r);
    }
    out->paths_len = r->r.err ? 0 : (size_t)(r->r.p + r->r.off - out->paths);
}

cn_err_t cn_scribe_enc_submit_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                   const cn_scribe_submit_outcome_t *o,
                                   const cn_scribe_str_t *paths)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_submit_outcome(&w, o, paths);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_submit_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_submit_outcome_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_submit_outcome(&r, out);
    return cn_scribe_rd_end(&r);
}

cn_scribe_str_t cn_scribe_outcome_path(const cn_scribe_submit_outcome_t *o, cn_scribe_codec_t c,
                                       uint32_t i)
{
    const uint8_t *q = o->paths;
    size_t adv = 0;
    cn_scribe_str_t s = { NULL, 0 };
    for (uint32_t k = 0; k <= i && k < o->path_count; k++) {
        s = cn__rd_str16_at(q, c, &adv);
        q += adv;
    }
    return s;
}

/* ---- operation_outcome ---------------------------------------------------------- */
cn_err_t cn_scribe_enc_outcome_req(cn_buf_t *out, cn_scribe_codec_t c,
                                   const cn_scribe_outcome_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->operation.b, 16);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_outcome_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_outcome_req_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->operation);
    if (!r.r.err && cn__all_zero(out->operation.b, 16))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

/* The operation_outcome layout; branch_only restricts it to branch_outcome's
 * kinds (0 and 2). */
static cn_err_t enc_outcome(cn_buf_t *out, cn_scribe_codec_t c, const cn_scribe_outcome_resp_t *o,
                            const cn_scribe_str_t *paths, bool branch_only)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, o->kind > CN_SCRIBE_OUTCOME_KIND_BRANCH ||
                        (branch_only && o->kind == CN_SCRIBE_OUTCOME_KIND_SUBMIT));
    cn_scribe_wr_u8(&w, o->kind);
    if (o->kind == CN_SCRIBE_OUTCOME_KIND_SUBMIT)
        cn_scribe_wr_submit_outcome(&w, &o->submit, paths);
    else if (o->kind == CN_SCRIBE_OUTCOME_KIND_BRANCH)
        cn_scribe_wr_branch_outcome(&w, &o->branch);
    CN__ENC_END(out);
}

static cn_err_t dec_outcome(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                            cn_scribe_outcome_resp_t *out, bool branch_only)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->kind = cn_scribe_rd_u8(&r);
    if (out->kind == CN_SCRIBE_OUTCOME_KIND_SUBMIT && !branch_only)
        cn_scribe_rd_submit_outcome(&r, &out->submit);
    else if (out->kind == CN_SCRIBE_OUTCOME_KIND_BRANCH)
        cn_scribe_rd_branch_outcome(&r, &out->branch);
    else if (out->kind != CN_SCRIBE_OUTCOME_KIND_UNKNOWN)
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_outcome_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                    const cn_scribe_outcome_resp_t *o, const cn_scribe_str_t *paths)
{
    return enc_outcome(out, c, o, paths, false);
}

cn_err_t cn_scribe_dec_outcome_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                    cn_scribe_outcome_resp_t *out)
{
    return dec_outcome(p, n, c, out, false);
}

cn_err_t cn_scribe_enc_branch_outcome_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_outcome_resp_t *o)
{
    return enc_outcome(out, c, o, NULL, true);
}

cn_err_t cn_scribe_dec_branch_outcome_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_outcome_resp_t *out)
{
    return dec_outcome(p, n, c, out, true);
}
