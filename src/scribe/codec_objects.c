/* Object transfer layouts: put_objects (6), get_objects (7), presence (8),
 * pin_objects (42), get_objects stream item headers and LZ4 block headers. */
#include "codec_int.h"

#include <string.h>

#define PUT_ITEM_LEN 41u
#define REF_LEN 33u

/* Smallest and largest encoding of each kind (repos_model.h). */
static bool kind_len_ok(uint8_t kind, uint64_t len)
{
    switch (kind) {
    case CN_REPOS_CHUNK: return len >= 1 && len <= CN_REPOS_MAX_CHUNK;
    case CN_REPOS_MANIFEST: return len >= CN_REPOS_MANIFEST_HDR && len <= CN_REPOS_MAX_MANIFEST_LEN;
    case CN_REPOS_CHANGESET: return len >= 9 && len <= CN_REPOS_MAX_CHANGESET_LEN;
    case CN_REPOS_COMMIT: return len >= 1 && len <= CN_REPOS_MAX_COMMIT_LEN;
    default: return false;
    }
}

static uint64_t ld64(const uint8_t *p, cn_scribe_codec_t c)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = c == CN_SCRIBE_CODEC_BE ? v << 8 | p[i] : v | (uint64_t)p[i] << (8 * i);
    return v;
}

cn_err_t cn_scribe_enc_put_req(cn_buf_t *out, cn_scribe_codec_t c, const cn_scribe_id_t *repo,
                               const cn_scribe_put_item_t *items, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_BATCH);
    cn_scribe_wr_raw(&w, repo->b, 16);
    cn_scribe_wr_u32(&w, count);
    uint64_t total = 0;
    for (uint32_t i = 0; i < count && !w.err; i++) {
        CN__FAIL_IF(&w, items[i].kind == CN_REPOS_COMMIT ||
                            !kind_len_ok(items[i].kind, items[i].length));
        total += items[i].length;
        cn_scribe_wr_u8(&w, items[i].kind);
        cn_scribe_wr_raw(&w, items[i].id.b, CN_DIGEST_LEN);
        cn_scribe_wr_u64(&w, items[i].length);
    }
    CN__FAIL_IF(&w, total > CN_SCRIBE_MAX_BATCH_BYTES);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_put_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                               cn_scribe_put_req_t *out)
{
    memset(out, 0, sizeof *out);
    out->codec = c;
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && (out->count < 1 || out->count > CN_SCRIBE_MAX_BATCH))
        cn__rd_fail(&r);
    if (!cn_scribe_rd_fits(&r, out->count, PUT_ITEM_LEN))
        return CN_E_PROTOCOL;
    out->items = cn_rd_bytes(&r.r, (size_t)out->count * PUT_ITEM_LEN);
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        const uint8_t *it = out->items + (size_t)i * PUT_ITEM_LEN;
        uint64_t len = ld64(it + 33, c);
        if (it[0] == CN_REPOS_COMMIT || !kind_len_ok(it[0], len))
            cn__rd_fail(&r);
        out->total += len;
    }
    if (!r.r.err && out->total > CN_SCRIBE_MAX_BATCH_BYTES)
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

void cn_scribe_put_item(const cn_scribe_put_req_t *q, uint32_t i, cn_scribe_put_item_t *out)
{
    const uint8_t *it = q->items + (size_t)i * PUT_ITEM_LEN;
    out->kind = it[0];
    memcpy(out->id.b, it + 1, CN_DIGEST_LEN);
    out->length = ld64(it + 33, q->codec);
}

cn_err_t cn_scribe_enc_put_resp(cn_buf_t *out, cn_scribe_codec_t c, const uint8_t *stored,
                                uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_BATCH);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        CN__FAIL_IF(&w, stored[i] > 1);
        cn_scribe_wr_u8(&w, stored[i]);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_put_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c, uint32_t *count,
                                const uint8_t **stored)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *count = cn_scribe_rd_u32(&r);
    *stored = NULL;
    if (!r.r.err && (*count < 1 || *count > CN_SCRIBE_MAX_BATCH))
        cn__rd_fail(&r);
    if (!cn_scribe_rd_fits(&r, *count, 1))
        return CN_E_PROTOCOL;
    *stored = cn_rd_bytes(&r.r, *count);
    for (uint32_t i = 0; i < *count && !r.r.err; i++)
        if ((*stored)[i] > 1)
            cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

/* ---- get_objects / presence / pin_objects requests --------------------------- */
static bool ref_kind_ok(uint16_t opcode, uint8_t kind)
{
    if (opcode == CN_SCRIBE_OP_PIN_OBJECTS)
        return kind >= CN_REPOS_CHUNK && kind <= CN_REPOS_CHANGESET;
    return kind >= CN_REPOS_CHUNK && kind <= CN_REPOS_COMMIT;
}

cn_err_t cn_scribe_enc_objs_req(cn_buf_t *out, cn_scribe_codec_t c, uint16_t opcode,
                                const cn_scribe_objs_req_t *q, const cn_scribe_objref_t *refs)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, opcode != CN_SCRIBE_OP_GET_OBJECTS && opcode != CN_SCRIBE_OP_PRESENCE &&
                        opcode != CN_SCRIBE_OP_PIN_OBJECTS);
    CN__FAIL_IF(&w, q->count < 1 || q->count > CN_SCRIBE_MAX_BATCH);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    if (opcode == CN_SCRIBE_OP_PIN_OBJECTS) {
        cn_scribe_wr_raw(&w, q->workspace.b, 16);
        cn_scribe_wr_raw(&w, q->intent.b, 16);
    }
    cn_scribe_wr_u32(&w, q->count);
    for (uint32_t i = 0; i < q->count && !w.err; i++) {
        CN__FAIL_IF(&w, !ref_kind_ok(opcode, refs[i].kind));
        cn_scribe_wr_u8(&w, refs[i].kind);
        cn_scribe_wr_raw(&w, refs[i].id.b, CN_DIGEST_LEN);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_objs_req(const uint8_t *p, size_t n, cn_scribe_codec_t c, uint16_t opcode,
                                cn_scribe_objs_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    if (opcode == CN_SCRIBE_OP_PIN_OBJECTS) {
        cn_scribe_rd_id(&r, &out->workspace);
        cn_scribe_rd_id(&r, &out->intent);
        /* The intent is a submit's operation id: never zero. */
        uint8_t acc = 0;
        for (int i = 0; i < 16; i++)
            acc |= out->intent.b[i];
        if (!r.r.err && acc == 0)
            cn__rd_fail(&r);
    } else if (opcode != CN_SCRIBE_OP_GET_OBJECTS && opcode != CN_SCRIBE_OP_PRESENCE) {
        return CN_E_PROTOCOL;
    }
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && (out->count < 1 || out->count > CN_SCRIBE_MAX_BATCH))
        cn__rd_fail(&r);
    if (!cn_scribe_rd_fits(&r, out->count, REF_LEN))
        return CN_E_PROTOCOL;
    out->items = cn_rd_bytes(&r.r, (size_t)out->count * REF_LEN);
    for (uint32_t i = 0; i < out->count && !r.r.err; i++)
        if (!ref_kind_ok(opcode, out->items[(size_t)i * REF_LEN]))
            cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

void cn_scribe_objref(const cn_scribe_objs_req_t *q, uint32_t i, cn_scribe_objref_t *out)
{
    const uint8_t *it = q->items + (size_t)i * REF_LEN;
    out->kind = it[0];
    memcpy(out->id.b, it + 1, CN_DIGEST_LEN);
}

cn_err_t cn_scribe_enc_bits_resp(cn_buf_t *out, cn_scribe_codec_t c, const bool *present,
                                 uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_BATCH);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i += 8) {
        uint8_t byte = 0;
        for (uint32_t k = 0; k < 8 && i + k < count; k++)
            byte |= (uint8_t)((present[i + k] ? 1u : 0u) << k);
        cn_scribe_wr_u8(&w, byte);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_bits_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                 uint32_t expect_count, const uint8_t **bits)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    uint32_t count = cn_scribe_rd_u32(&r);
    *bits = NULL;
    /* Exactly one bit per requested identity. */
    if (r.r.err || count != expect_count || count < 1 || count > CN_SCRIBE_MAX_BATCH)
        return CN_E_PROTOCOL;
    size_t nbytes = (count + 7u) / 8u;
    *bits = cn_rd_bytes(&r.r, nbytes);
    if (*bits && count % 8 && ((*bits)[nbytes - 1] >> (count % 8)))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_count_resp(cn_buf_t *out, cn_scribe_codec_t c, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_BATCH);
    cn_scribe_wr_u32(&w, count);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_count_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c, uint32_t *count)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *count = cn_scribe_rd_u32(&r);
    if (!r.r.err && (*count < 1 || *count > CN_SCRIBE_MAX_BATCH))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

size_t cn_scribe_enc_get_item(uint8_t out[CN_SCRIBE_GET_ITEM_HDR_MAX], cn_scribe_codec_t c,
                              const cn_scribe_get_item_t *it)
{
    out[0] = it->kind;
    memcpy(out + 1, it->id.b, CN_DIGEST_LEN);
    out[33] = it->present ? 1 : 0;
    if (!it->present)
        return 34;
    for (int i = 0; i < 8; i++)
        out[34 + i] = (uint8_t)(it->length >> (c == CN_SCRIBE_CODEC_BE ? 8 * (7 - i) : 8 * i));
    return 42;
}

long cn_scribe_dec_get_item(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                            cn_scribe_get_item_t *out)
{
    if (n < 34)
        return CN_E_AGAIN;
    out->kind = p[0];
    memcpy(out->id.b, p + 1, CN_DIGEST_LEN);
    if (p[0] < CN_REPOS_CHUNK || p[0] > CN_REPOS_COMMIT || p[33] > 1)
        return CN_E_PROTOCOL;
    out->present = p[33] == 1;
    out->length = 0;
    if (!out->present)
        return 34;
    if (n < 42)
        return CN_E_AGAIN;
    out->length = ld64(p + 34, c);
    if (!kind_len_ok(out->kind, out->length))
        return CN_E_PROTOCOL;
    return 42;
}

void cn_scribe_enc_block(uint8_t out[CN_SCRIBE_BLOCK_HDR_LEN], const cn_scribe_block_t *b)
{
    uint32_t word = b->raw ? (CN_SCRIBE_BLOCK_RAW | b->original) : b->stored;
    for (int i = 0; i < 4; i++) {
        out[i] = (uint8_t)(b->original >> (8 * i));
        out[4 + i] = (uint8_t)(word >> (8 * i));
    }
}

cn_err_t cn_scribe_dec_block(const uint8_t p[CN_SCRIBE_BLOCK_HDR_LEN], uint64_t remaining,
                             cn_scribe_block_t *out)
{
    uint32_t word;
    out->original =
        (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    word = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    out->raw = (word & CN_SCRIBE_BLOCK_RAW) != 0;
    out->stored = word & ~CN_SCRIBE_BLOCK_RAW;
    if (out->original < 1 || out->original > CN_SCRIBE_BLOCK_MAX || out->original > remaining)
        return CN_E_PROTOCOL;
    if (out->raw ? out->stored != out->original
                 : (out->stored < 1 || out->stored > out->original + out->original / 255 + 16))
        return CN_E_PROTOCOL;
    return CN_OK;
}
