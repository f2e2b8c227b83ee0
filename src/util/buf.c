/* Growable byte buffers and the bounds-checked reader (include/cairn/util.h). */
#include "cairn/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn_buf_reserve(cn_buf_t *b, size_t extra)
{
    if (extra <= b->cap - b->len)
        return CN_OK;
    if (extra > SIZE_MAX / 2 - b->len)
        return -ENOMEM;
    size_t need = b->len + extra;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return CN_OK;
}

cn_err_t cn_buf_append(cn_buf_t *b, const void *p, size_t n)
{
    if (n == 0)
        return CN_OK;
    CN_TRY(cn_buf_reserve(b, n));
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return CN_OK;
}

cn_err_t cn_buf_append_str(cn_buf_t *b, const char *s)
{
    return cn_buf_append(b, s, strlen(s));
}

cn_err_t cn_buf_printf(cn_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    CN_TRY(cn_buf_reserve(b, (size_t)n + 1));
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return CN_OK;
}

cn_err_t cn_buf_put_u8(cn_buf_t *b, uint8_t v)
{
    return cn_buf_append(b, &v, 1);
}

cn_err_t cn_buf_put_u16be(cn_buf_t *b, uint16_t v)
{
    uint8_t t[2];
    cn_store_u16be(t, v);
    return cn_buf_append(b, t, 2);
}
cn_err_t cn_buf_put_u32be(cn_buf_t *b, uint32_t v)
{
    uint8_t t[4];
    cn_store_u32be(t, v);
    return cn_buf_append(b, t, 4);
}
cn_err_t cn_buf_put_u64be(cn_buf_t *b, uint64_t v)
{
    uint8_t t[8];
    cn_store_u64be(t, v);
    return cn_buf_append(b, t, 8);
}

static cn_err_t put_le(cn_buf_t *b, uint64_t v, int n)
{
    uint8_t t[8];
    for (int i = 0; i < n; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    return cn_buf_append(b, t, (size_t)n);
}
cn_err_t cn_buf_put_u16le(cn_buf_t *b, uint16_t v)
{
    return put_le(b, v, 2);
}
cn_err_t cn_buf_put_u32le(cn_buf_t *b, uint32_t v)
{
    return put_le(b, v, 4);
}
cn_err_t cn_buf_put_u64le(cn_buf_t *b, uint64_t v)
{
    return put_le(b, v, 8);
}

void cn_buf_reset(cn_buf_t *b)
{
    b->len = 0;
}

void cn_buf_free(cn_buf_t *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

const uint8_t *cn_rd_bytes(cn_rd_t *r, size_t n)
{
    if (r->err || n > r->len - r->off) {
        r->err = CN_E_PROTOCOL;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

static uint64_t rd_be(cn_rd_t *r, size_t n)
{
    const uint8_t *p = cn_rd_bytes(r, n);
    uint64_t v = 0;
    if (!p)
        return 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static uint64_t rd_le(cn_rd_t *r, size_t n)
{
    const uint8_t *p = cn_rd_bytes(r, n);
    uint64_t v = 0;
    if (!p)
        return 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

uint8_t cn_rd_u8(cn_rd_t *r)
{
    return (uint8_t)rd_be(r, 1);
}
uint16_t cn_rd_u16be(cn_rd_t *r)
{
    return (uint16_t)rd_be(r, 2);
}
uint32_t cn_rd_u32be(cn_rd_t *r)
{
    return (uint32_t)rd_be(r, 4);
}
uint64_t cn_rd_u64be(cn_rd_t *r)
{
    return rd_be(r, 8);
}
uint16_t cn_rd_u16le(cn_rd_t *r)
{
    return (uint16_t)rd_le(r, 2);
}
uint32_t cn_rd_u32le(cn_rd_t *r)
{
    return (uint32_t)rd_le(r, 4);
}
uint64_t cn_rd_u64le(cn_rd_t *r)
{
    return rd_le(r, 8);
}
