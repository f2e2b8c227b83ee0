/* Object ids and the manifest encoding (docs/protocol/scribe.md, "Object model"). */
#include "cairn/repos_model.h"

#include <string.h>

uint64_t cn_repos_kind_max_len(uint8_t kind)
{
    switch (kind) {
    case CN_REPOS_CHUNK: return CN_REPOS_MAX_CHUNK;
    case CN_REPOS_MANIFEST: return CN_REPOS_MAX_MANIFEST_LEN;
    case CN_REPOS_CHANGESET: return CN_REPOS_MAX_CHANGESET_LEN;
    case CN_REPOS_COMMIT: return CN_REPOS_MAX_COMMIT_LEN;
    default: return 0;
    }
}

/* Domain-separation prefixes; sizeof includes the terminating NUL, which is
 * part of the prefix. */
static const char dom_manifest[] = "cairn:manifest:v1";
static const char dom_changeset[] = "cairn:changeset:v1";
static const char dom_commit[] = "cairn:commit:v1";

cn_err_t cn_repos_id_init(cn_blake3_t *h, uint8_t kind)
{
    switch (kind) {
    case CN_REPOS_CHUNK: cn_blake3_init(h); return CN_OK;
    case CN_REPOS_MANIFEST:
        cn_blake3_init(h);
        cn_blake3_update(h, dom_manifest, sizeof dom_manifest);
        return CN_OK;
    case CN_REPOS_CHANGESET:
        cn_blake3_init(h);
        cn_blake3_update(h, dom_changeset, sizeof dom_changeset);
        return CN_OK;
    case CN_REPOS_COMMIT:
        cn_blake3_init(h);
        cn_blake3_update(h, dom_commit, sizeof dom_commit);
        return CN_OK;
    default: return CN_E_INVALID;
    }
}

cn_err_t cn_repos_object_id(uint8_t kind, const void *p, size_t n, cn_digest_t *out)
{
    cn_blake3_t h;
    CN_TRY(cn_repos_id_init(&h, kind));
    cn_blake3_update(&h, p, n);
    cn_blake3_final(&h, out);
    return CN_OK;
}

/* ---- manifest: u8 1, u64le size, u32le count, count x ([32] id, u32le len) ---- */
cn_err_t cn_repos_manifest_encode(cn_buf_t *out, const cn_repos_chunk_ref_t *chunks, uint32_t count)
{
    if (count > CN_REPOS_MAX_MANIFEST_CHUNKS)
        return CN_E_INVALID;
    uint64_t size = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (chunks[i].len == 0 || chunks[i].len > CN_REPOS_MAX_CHUNK)
            return CN_E_INVALID;
        size += chunks[i].len;
    }
    size_t start = out->len;
    cn_err_t e =
        cn_buf_reserve(out, CN_REPOS_MANIFEST_HDR + (size_t)count * CN_REPOS_CHUNK_REF_LEN);
    if (!e)
        e = cn_buf_put_u8(out, CN_REPOS_OBJECT_VERSION);
    if (!e)
        e = cn_buf_put_u64le(out, size);
    if (!e)
        e = cn_buf_put_u32le(out, count);
    for (uint32_t i = 0; i < count && !e; i++) {
        e = cn_buf_append(out, chunks[i].id.b, CN_DIGEST_LEN);
        if (!e)
            e = cn_buf_put_u32le(out, chunks[i].len);
    }
    if (e)
        out->len = start;
    return e;
}

cn_err_t cn_repos_manifest_parse(const uint8_t *p, size_t n, cn_repos_manifest_t *out)
{
    cn_rd_t r = cn_rd_init(p, n);
    uint8_t version = cn_rd_u8(&r);
    out->size = cn_rd_u64le(&r);
    out->count = cn_rd_u32le(&r);
    if (r.err || version != CN_REPOS_OBJECT_VERSION || out->count > CN_REPOS_MAX_MANIFEST_CHUNKS ||
        cn_rd_left(&r) != (size_t)out->count * CN_REPOS_CHUNK_REF_LEN)
        return CN_E_INVALID;
    out->refs = p + r.off;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < out->count; i++) {
        const uint8_t *q = out->refs + (size_t)i * CN_REPOS_CHUNK_REF_LEN + CN_DIGEST_LEN;
        uint32_t len =
            (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        if (len == 0 || len > CN_REPOS_MAX_CHUNK)
            return CN_E_INVALID;
        sum += len;
    }
    return sum == out->size ? CN_OK : CN_E_INVALID;
}

void cn_repos_manifest_chunk(const cn_repos_manifest_t *m, uint32_t i, cn_repos_chunk_ref_t *out)
{
    const uint8_t *q = m->refs + (size_t)i * CN_REPOS_CHUNK_REF_LEN;
    memcpy(out->id.b, q, CN_DIGEST_LEN);
    q += CN_DIGEST_LEN;
    out->len = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}
