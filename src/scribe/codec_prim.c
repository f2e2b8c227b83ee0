/* Scribe metadata primitives: integers in the negotiated codec (1 little-
 * endian, 2 big-endian), booleans, fixed ids, and length-prefixed strings.
 * Readers never allocate; writers append to a caller-owned buffer. */
#include "codec_int.h"

#include <string.h>

cn_scribe_rd_t cn_scribe_rd_init(const void *p, size_t n, cn_scribe_codec_t codec)
{
    cn_scribe_rd_t r = { cn_rd_init(p, n), codec };
    return r;
}

uint8_t cn_scribe_rd_u8(cn_scribe_rd_t *r)
{
    return cn_rd_u8(&r->r);
}
uint16_t cn_scribe_rd_u16(cn_scribe_rd_t *r)
{
    return r->codec == CN_SCRIBE_CODEC_BE ? cn_rd_u16be(&r->r) : cn_rd_u16le(&r->r);
}
uint32_t cn_scribe_rd_u32(cn_scribe_rd_t *r)
{
    return r->codec == CN_SCRIBE_CODEC_BE ? cn_rd_u32be(&r->r) : cn_rd_u32le(&r->r);
}
uint64_t cn_scribe_rd_u64(cn_scribe_rd_t *r)
{
    return r->codec == CN_SCRIBE_CODEC_BE ? cn_rd_u64be(&r->r) : cn_rd_u64le(&r->r);
}

bool cn_scribe_rd_bool(cn_scribe_rd_t *r)
{
    uint8_t v = cn_rd_u8(&r->r);
    if (v > 1)
        cn__rd_fail(r);
    return v == 1;
}

void cn_scribe_rd_id(cn_scribe_rd_t *r, cn_scribe_id_t *out)
{
    const uint8_t *p = cn_rd_bytes(&r->r, 16);
    if (p)
        memcpy(out->b, p, 16);
    else
        memset(out->b, 0, 16);
}

void cn_scribe_rd_digest(cn_scribe_rd_t *r, cn_digest_t *out)
{
    const uint8_t *p = cn_rd_bytes(&r->r, CN_DIGEST_LEN);
    if (p)
        memcpy(out->b, p, CN_DIGEST_LEN);
    else
        memset(out->b, 0, CN_DIGEST_LEN);
}

static void rd_lenpref(cn_scribe_rd_t *r, int width, uint32_t max, bool utf8, cn_scribe_str_t *out)
{
    uint32_t len = width == 2 ? cn_scribe_rd_u16(r) : cn_scribe_rd_u32(r);
    out->p = NULL;
    out->len = 0;
    if (r->r.err)
        return;
    if (len > max) {
        cn__rd_fail(r);
        return;
    }
    const uint8_t *p = cn_rd_bytes(&r->r, len);
    if (!p)
        return;
    if (utf8 && !cn_utf8_valid(p, len)) {
        cn__rd_fail(r);
        return;
    }
    out->p = p;
    out->len = len;
}

void cn_scribe_rd_str16(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out)
{
    rd_lenpref(r, 2, max, true, out);
}
void cn_scribe_rd_str32(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out)
{
    rd_lenpref(r, 4, max, true, out);
}
void cn_scribe_rd_bytes16(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out)
{
    rd_lenpref(r, 2, max, false, out);
}
void cn_scribe_rd_bytes32(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out)
{
    rd_lenpref(r, 4, max, false, out);
}

bool cn_scribe_rd_fits(cn_scribe_rd_t *r, uint64_t count, uint64_t need)
{
    if (r->r.err)
        return false;
    if (need && count > cn_rd_left(&r->r) / need) {
        cn__rd_fail(r);
        return false;
    }
    return true;
}

cn_err_t cn_scribe_rd_end(const cn_scribe_rd_t *r)
{
    if (r->r.err || r->r.off != r->r.len)
        return CN_E_PROTOCOL;
    return CN_OK;
}

void cn__rd_path(cn_scribe_rd_t *r, bool may_be_empty, cn_scribe_str_t *out)
{
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_PATH, out);
    if (!r->r.err && !may_be_empty && out->len == 0)
        cn__rd_fail(r);
}

void cn__wr_path(cn_scribe_wr_t *w, cn_scribe_str_t s, bool may_be_empty)
{
    CN__FAIL_IF(w, !may_be_empty && s.len == 0);
    cn_scribe_wr_str16(w, s, CN_SCRIBE_MAX_PATH);
}

cn_scribe_str_t cn__rd_str16_at(const uint8_t *p, cn_scribe_codec_t c, size_t *adv)
{
    uint16_t len = c == CN_SCRIBE_CODEC_BE ? cn_load_u16be(p) : (uint16_t)(p[0] | p[1] << 8);
    cn_scribe_str_t s = { p + 2, len };
    *adv = 2u + len;
    return s;
}

/* ---- writer ---------------------------------------------------------------- */
cn_scribe_wr_t cn_scribe_wr_init(cn_buf_t *b, cn_scribe_codec_t codec)
{
    cn_scribe_wr_t w = { b, codec, CN_OK };
    return w;
}

void cn_scribe_wr_raw(cn_scribe_wr_t *w, const void *p, size_t n)
{
    if (!w->err)
        w->err = cn_buf_append(w->b, p, n);
}

void cn_scribe_wr_u8(cn_scribe_wr_t *w, uint8_t v)
{
    cn_scribe_wr_raw(w, &v, 1);
}

static void wr_int(cn_scribe_wr_t *w, uint64_t v, int n)
{
    uint8_t t[8];
    for (int i = 0; i < n; i++) {
        int sh = w->codec == CN_SCRIBE_CODEC_BE ? 8 * (n - 1 - i) : 8 * i;
        t[i] = (uint8_t)(v >> sh);
    }
    cn_scribe_wr_raw(w, t, (size_t)n);
}
void cn_scribe_wr_u16(cn_scribe_wr_t *w, uint16_t v)
{
    wr_int(w, v, 2);
}
void cn_scribe_wr_u32(cn_scribe_wr_t *w, uint32_t v)
{
    wr_int(w, v, 4);
}
void cn_scribe_wr_u64(cn_scribe_wr_t *w, uint64_t v)
{
    wr_int(w, v, 8);
}
void cn_scribe_wr_bool(cn_scribe_wr_t *w, bool v)
{
    cn_scribe_wr_u8(w, v ? 1 : 0);
}

static void wr_lenpref(cn_scribe_wr_t *w, int width, cn_scribe_str_t s, uint32_t max, bool utf8)
{
    if (w->err)
        return;
    if (s.len > max || (s.len && !s.p) || (utf8 && !cn_utf8_valid(s.p, s.len))) {
        w->err = CN_E_INVALID;
        return;
    }
    if (width == 2)
        cn_scribe_wr_u16(w, (uint16_t)s.len);
    else
        cn_scribe_wr_u32(w, s.len);
    cn_scribe_wr_raw(w, s.p, s.len);
}
void cn_scribe_wr_str16(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max)
{
    wr_lenpref(w, 2, s, max > 65535 ? 65535 : max, true);
}
void cn_scribe_wr_str32(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max)
{
    wr_lenpref(w, 4, s, max, true);
}
void cn_scribe_wr_bytes16(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max)
{
    wr_lenpref(w, 2, s, max > 65535 ? 65535 : max, false);
}
void cn_scribe_wr_bytes32(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max)
{
    wr_lenpref(w, 4, s, max, false);
}

cn_scribe_str_t cn_scribe_cstr(const char *s)
{
    cn_scribe_str_t v = { (const uint8_t *)s, s ? (uint32_t)strlen(s) : 0 };
    return v;
}
