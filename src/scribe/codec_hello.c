/* The handshake (opcode 1, always little-endian) and discover (opcode 2). */
#include "codec_int.h"

#include <string.h>

cn_err_t cn_scribe_dec_hello(const uint8_t *p, size_t n, uint16_t version, bool allow_test_codec,
                             cn_scribe_hello_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, CN_SCRIBE_CODEC_LE);
    out->version = cn_scribe_rd_u16(&r);
    out->codec = cn_scribe_rd_u8(&r);
    if (r.r.err)
        return CN_E_PROTOCOL;
    /* Version and codec are judged before the rest: an older client's hello
     * may have another layout, and it must hear unsupported_version. */
    if (out->version != version)
        return CN_E_UNSUPPORTED;
    if (out->codec != CN_SCRIBE_CODEC_LE && !(allow_test_codec && out->codec == CN_SCRIBE_CODEC_BE))
        return CN_E_UNSUPPORTED;
    out->caps = cn_scribe_rd_u32(&r);
    out->bind_session = cn_scribe_rd_u64(&r);
    cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_CLIENT_STRING, &out->client);
    if (!r.r.err && (out->caps & ~(uint32_t)CN_SCRIBE_CAP_LZ4))
        cn__rd_fail(&r);
    if (version == 4 && !r.r.err) {
        out->caller = cn_scribe_rd_u8(&r);
        if (out->caller == CN_SCRIBE_CALLER_DELEGATED) {
            cn_scribe_rd_bytes16(&r, CN_SCRIBE_MAX_CERTIFICATE, &out->delegated_cert);
            if (!r.r.err && out->delegated_cert.len == 0)
                cn__rd_fail(&r);
        } else if (out->caller != CN_SCRIBE_CALLER_DIRECT &&
                   out->caller != CN_SCRIBE_CALLER_ANONYMOUS) {
            cn__rd_fail(&r);
        }
        const uint8_t *b = cn_rd_bytes(&r.r, 32);
        if (b)
            memcpy(out->binding, b, 32);
    }
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_enc_hello(cn_buf_t *out, const cn_scribe_hello_t *h)
{
    CN__ENC_BEGIN(out, CN_SCRIBE_CODEC_LE);
    CN__FAIL_IF(&w, h->version != 2 && h->version != 4);
    CN__FAIL_IF(&w, h->caps & ~(uint32_t)CN_SCRIBE_CAP_LZ4);
    cn_scribe_wr_u16(&w, h->version);
    cn_scribe_wr_u8(&w, h->codec);
    cn_scribe_wr_u32(&w, h->caps);
    cn_scribe_wr_u64(&w, h->bind_session);
    cn_scribe_wr_str16(&w, h->client, CN_SCRIBE_MAX_CLIENT_STRING);
    if (h->version == 4) {
        CN__FAIL_IF(&w, h->caller > CN_SCRIBE_CALLER_DELEGATED);
        cn_scribe_wr_u8(&w, h->caller);
        if (h->caller == CN_SCRIBE_CALLER_DELEGATED) {
            CN__FAIL_IF(&w, h->delegated_cert.len == 0);
            cn_scribe_wr_bytes16(&w, h->delegated_cert, CN_SCRIBE_MAX_CERTIFICATE);
        }
        cn_scribe_wr_raw(&w, h->binding, 32);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_enc_hello_ok(cn_buf_t *out, const cn_scribe_hello_ok_t *h)
{
    CN__ENC_BEGIN(out, CN_SCRIBE_CODEC_LE);
    CN__FAIL_IF(&w, h->timeout_s == 0 || h->compression > 1);
    cn_scribe_wr_u16(&w, h->version);
    cn_scribe_wr_u8(&w, h->codec);
    cn_scribe_wr_u64(&w, h->session);
    cn_scribe_wr_u32(&w, h->timeout_s);
    cn_scribe_wr_u8(&w, h->compression);
    if (h->has_binding)
        cn_scribe_wr_raw(&w, h->binding, 32);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_hello_ok(const uint8_t *p, size_t n, bool expect_binding,
                                cn_scribe_hello_ok_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, CN_SCRIBE_CODEC_LE);
    out->version = cn_scribe_rd_u16(&r);
    out->codec = cn_scribe_rd_u8(&r);
    out->session = cn_scribe_rd_u64(&r);
    out->timeout_s = cn_scribe_rd_u32(&r);
    out->compression = cn_scribe_rd_u8(&r);
    if (expect_binding) {
        const uint8_t *b = cn_rd_bytes(&r.r, 32);
        if (b)
            memcpy(out->binding, b, 32);
        out->has_binding = true;
    }
    if (!r.r.err &&
        (out->timeout_s == 0 || out->compression > 1 || (out->codec != 1 && out->codec != 2)))
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

/* ---- discover ---------------------------------------------------------------------- */
/* Plaintext endpoints report empty labels; authenticated ones a namespace each. */
static bool label_ok(cn_scribe_str_t s, bool authentication)
{
    return authentication ? cn_scribe_namespace_ok(s) : s.len == 0;
}

cn_err_t cn_scribe_enc_discover(cn_buf_t *out, cn_scribe_codec_t c, uint8_t role,
                                bool authentication, const cn_scribe_str_t *labels, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, role != CN_SCRIBE_ROLE_STORAGE && role != CN_SCRIBE_ROLE_GATEWAY);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_STORAGE_SERVERS);
    CN__FAIL_IF(&w, role == CN_SCRIBE_ROLE_STORAGE && count != 1);
    cn_scribe_wr_u8(&w, role);
    cn_scribe_wr_bool(&w, authentication);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        CN__FAIL_IF(&w, !label_ok(labels[i], authentication));
        cn_scribe_wr_str16(&w, labels[i], CN_SCRIBE_MAX_NAMESPACE);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_discover(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                cn_scribe_discover_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->role = cn_scribe_rd_u8(&r);
    out->authentication = cn_scribe_rd_bool(&r);
    out->count = cn_scribe_rd_u32(&r);
    if (r.r.err)
        return CN_E_PROTOCOL;
    if ((out->role != CN_SCRIBE_ROLE_STORAGE && out->role != CN_SCRIBE_ROLE_GATEWAY) ||
        out->count < 1 || out->count > CN_SCRIBE_MAX_STORAGE_SERVERS ||
        (out->role == CN_SCRIBE_ROLE_STORAGE && out->count != 1) ||
        !cn_scribe_rd_fits(&r, out->count, 2))
        return CN_E_PROTOCOL;
    out->labels = p + r.r.off;
    for (uint32_t i = 0; i < out->count && !r.r.err; i++) {
        cn_scribe_str_t s;
        cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_NAMESPACE, &s);
        if (!r.r.err && !label_ok(s, out->authentication))
            cn__rd_fail(&r);
    }
    out->labels_len = (size_t)(p + r.r.off - out->labels);
    return cn_scribe_rd_end(&r);
}

cn_scribe_str_t cn_scribe_discover_label(const cn_scribe_discover_t *d, cn_scribe_codec_t c,
                                         uint32_t i)
{
    const uint8_t *q = d->labels;
    size_t adv = 0;
    cn_scribe_str_t s = { NULL, 0 };
    for (uint32_t k = 0; k <= i && k < d->count; k++) {
        s = cn__rd_str16_at(q, c, &adv);
        q += adv;
    }
    return s;
}
