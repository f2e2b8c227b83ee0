/* The commit encoding and the submit operation fingerprint. */
#include "cairn/repos_model.h"

#include <string.h>

cn_err_t cn_repos_commit_encode(cn_buf_t *out, const cn_repos_commit_t *c)
{
    if (c->parent_count > 2 || c->change == 0 || c->author_len > CN_REPOS_MAX_AUTHOR ||
        c->message_len > CN_REPOS_MAX_MESSAGE || cn_repos_utf8_check(c->author, c->author_len) ||
        cn_repos_utf8_check(c->message, c->message_len))
        return CN_E_INVALID;
    size_t start = out->len;
    cn_err_t e = cn_buf_put_u8(out, CN_REPOS_OBJECT_VERSION);
    if (!e)
        e = cn_buf_append(out, c->repository, 16);
    if (!e)
        e = cn_buf_append(out, c->branch, 16);
    if (!e)
        e = cn_buf_put_u64le(out, c->change);
    if (!e)
        e = cn_buf_put_u8(out, c->parent_count);
    for (uint8_t i = 0; i < c->parent_count && !e; i++)
        e = cn_buf_append(out, c->parents[i].b, CN_DIGEST_LEN);
    if (!e)
        e = cn_buf_append(out, c->changeset.b, CN_DIGEST_LEN);
    if (!e)
        e = cn_buf_put_u16le(out, c->author_len);
    if (!e)
        e = cn_buf_append(out, c->author, c->author_len);
    if (!e)
        e = cn_buf_put_u32le(out, c->message_len);
    if (!e)
        e = cn_buf_append(out, c->message, c->message_len);
    if (!e)
        e = cn_buf_put_u64le(out, c->time_ms);
    if (!e)
        e = cn_buf_append(out, c->content_root.b, CN_DIGEST_LEN);
    if (!e)
        e = cn_buf_append(out, c->revision_root.b, CN_DIGEST_LEN);
    if (!e)
        e = cn_buf_put_u8(out, c->has_pick ? 1 : 0);
    if (!e && c->has_pick) {
        e = cn_buf_append(out, c->pick_branch, 16);
        if (!e)
            e = cn_buf_put_u64le(out, c->pick_change);
    }
    if (e)
        out->len = start;
    return e;
}

static void rd_copy(cn_rd_t *r, void *dst, size_t n)
{
    const uint8_t *p = cn_rd_bytes(r, n);
    if (p)
        memcpy(dst, p, n);
}

cn_err_t cn_repos_commit_parse(const uint8_t *p, size_t n, cn_repos_commit_t *out)
{
    memset(out, 0, sizeof *out);
    cn_rd_t r = cn_rd_init(p, n);
    if (cn_rd_u8(&r) != CN_REPOS_OBJECT_VERSION)
        return CN_E_INVALID;
    rd_copy(&r, out->repository, 16);
    rd_copy(&r, out->branch, 16);
    out->change = cn_rd_u64le(&r);
    out->parent_count = cn_rd_u8(&r);
    if (r.err || out->parent_count > 2 || out->change == 0)
        return CN_E_INVALID;
    for (uint8_t i = 0; i < out->parent_count; i++)
        rd_copy(&r, out->parents[i].b, CN_DIGEST_LEN);
    rd_copy(&r, out->changeset.b, CN_DIGEST_LEN);
    out->author_len = cn_rd_u16le(&r);
    out->author = cn_rd_bytes(&r, out->author_len);
    out->message_len = cn_rd_u32le(&r);
    if (r.err || out->author_len > CN_REPOS_MAX_AUTHOR || out->message_len > CN_REPOS_MAX_MESSAGE)
        return CN_E_INVALID;
    out->message = cn_rd_bytes(&r, out->message_len);
    out->time_ms = cn_rd_u64le(&r);
    rd_copy(&r, out->content_root.b, CN_DIGEST_LEN);
    rd_copy(&r, out->revision_root.b, CN_DIGEST_LEN);
    uint8_t pick = cn_rd_u8(&r);
    if (r.err || pick > 1)
        return CN_E_INVALID;
    out->has_pick = pick == 1;
    if (out->has_pick) {
        rd_copy(&r, out->pick_branch, 16);
        out->pick_change = cn_rd_u64le(&r);
    }
    if (r.err || cn_rd_left(&r) != 0 || cn_repos_utf8_check(out->author, out->author_len) ||
        cn_repos_utf8_check(out->message, out->message_len))
        return CN_E_INVALID;
    return CN_OK;
}

void cn_repos_submit_fingerprint(const cn_repos_submit_intent_t *s, cn_digest_t *out)
{
    static const char domain[] = "cairn:submit-operation:v1";
    uint8_t le[8];
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, domain, sizeof domain); /* includes the NUL */
    cn_blake3_update(&h, s->repository, 16);
    cn_blake3_update(&h, s->incarnation, 16);
    cn_blake3_update(&h, s->branch, 16);
    cn_blake3_update(&h, s->workspace, 16);
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(s->base >> (8 * i));
    cn_blake3_update(&h, le, 8);
    cn_blake3_update(&h, s->changeset.b, CN_DIGEST_LEN);
    le[0] = s->keep_locks ? 1 : 0;
    cn_blake3_update(&h, le, 1);
    for (int i = 0; i < 4; i++)
        le[i] = (uint8_t)(s->message_len >> (8 * i));
    cn_blake3_update(&h, le, 4);
    if (s->message_len)
        cn_blake3_update(&h, s->message, s->message_len);
    cn_blake3_final(&h, out);
}
