/* The SAU2 wire codec: frames, requests, replies and the intent digest
 * (docs/protocol/sau2.md, sections 2-4).  Pure: no sockets, no clocks; the
 * decoders never allocate and check every count against its limit and the
 * bytes that remain before using it.  It must never see what a verb means
 * beyond which verbs carry a secret. */
#include "cairn/sau2.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const uint8_t magic[4] = { 'S', 'A', 'U', '2' };

void cn_sau2_frame_head(uint8_t out[CN_SAU2_HDR_LEN], uint32_t len)
{
    memcpy(out, magic, 4);
    out[4] = (uint8_t)len;
    out[5] = (uint8_t)(len >> 8);
    out[6] = (uint8_t)(len >> 16);
    out[7] = (uint8_t)(len >> 24);
}

cn_err_t cn_sau2_frame_parse(const uint8_t in[CN_SAU2_HDR_LEN], uint32_t *len)
{
    if (memcmp(in, magic, 4) != 0)
        return CN_E_PROTOCOL;
    uint32_t v =
        (uint32_t)in[4] | (uint32_t)in[5] << 8 | (uint32_t)in[6] << 16 | (uint32_t)in[7] << 24;
    if (v > CN_SAU2_MAX_PAYLOAD)
        return CN_E_PROTOCOL;
    *len = v;
    return 0;
}

/* The five verbs that carry a secret, and its length range. */
static const struct {
    const char *verb;
    size_t min, max;
} secret_verbs[] = {
    { "login", 1, CN_SAU2_PASSWORD_MAX },
    { "login-outcome", 1, CN_SAU2_PASSWORD_MAX },
    { "admin-login", 1, CN_SAU2_PASSWORD_MAX },
    { "admin-login-outcome", 1, CN_SAU2_PASSWORD_MAX },
    { "users-password", CN_SAU2_NEW_PASSWORD_MIN, CN_SAU2_PASSWORD_MAX },
};

int cn_sau2_secret_rule(const uint8_t *verb, size_t len, size_t *min, size_t *max)
{
    for (size_t i = 0; i < sizeof secret_verbs / sizeof secret_verbs[0]; i++) {
        if (strlen(secret_verbs[i].verb) == len && memcmp(secret_verbs[i].verb, verb, len) == 0) {
            *min = secret_verbs[i].min;
            *max = secret_verbs[i].max;
            return 1;
        }
    }
    return 0;
}

/* Reads one str16 of at most max bytes into *s. */
static void rd_str(cn_rd_t *r, size_t max, cn_sau2_str_t *s)
{
    uint16_t len = cn_rd_u16le(r);
    if (r->err == 0 && len > max)
        r->err = CN_E_PROTOCOL;
    s->p = cn_rd_bytes(r, len);
    s->len = r->err ? 0 : len;
}

/* Reads u16 n and n strings (n <= 130, each <= 4,096 bytes), into out when
 * it is not NULL.  The count is checked against the bytes left (two per
 * string at least) before any string is read. */
static void rd_vector(cn_rd_t *r, uint16_t *n, cn_sau2_str_t *out)
{
    uint16_t count = cn_rd_u16le(r);
    if (r->err == 0 && (count > CN_SAU2_MAX_STRINGS || (size_t)count * 2 > cn_rd_left(r)))
        r->err = CN_E_PROTOCOL;
    for (uint16_t i = 0; i < count && r->err == 0; i++) {
        cn_sau2_str_t s;
        rd_str(r, CN_SAU2_MAX_STRING, &s);
        if (out)
            out[i] = s;
    }
    *n = r->err ? 0 : count;
}

cn_err_t cn_sau2_dec_request(const uint8_t *p, size_t n, cn_sau2_req_t *req)
{
    cn_rd_t r = cn_rd_init(p, n);
    memset(req, 0, sizeof *req);
    const uint8_t *op = cn_rd_bytes(&r, CN_SAU2_ID_LEN);
    if (op)
        memcpy(req->op, op, CN_SAU2_ID_LEN);
    rd_vector(&r, &req->argc, req->argv);
    uint8_t has = cn_rd_u8(&r);
    if (r.err == 0 && (has > 1 || req->argc == 0))
        return CN_E_PROTOCOL;
    if (has)
        rd_str(&r, CN_SAU2_PASSWORD_MAX, &req->secret);
    if (r.err || cn_rd_left(&r) != 0)
        return CN_E_PROTOCOL;
    size_t min, max;
    int rule = cn_sau2_secret_rule(req->argv[0].p, req->argv[0].len, &min, &max);
    if (rule != has || (has && (req->secret.len < min || req->secret.len > max)))
        return CN_E_PROTOCOL;
    req->has_secret = has != 0;
    return 0;
}

static cn_err_t put_str(cn_buf_t *b, const uint8_t *p, size_t len)
{
    CN_TRY(cn_buf_put_u16le(b, (uint16_t)len));
    return len ? cn_buf_append(b, p, len) : 0;
}

/* Appends a request payload: op, the strings argv[first..argc), and the
 * secret when has_secret.  Checks the limits the decoder enforces. */
static cn_err_t put_request(cn_buf_t *b, const uint8_t op[CN_SAU2_ID_LEN], const cn_sau2_req_t *req,
                            uint16_t first, bool with_secret)
{
    uint16_t count = (uint16_t)(req->argc - first);
    if (req->argc > CN_SAU2_MAX_STRINGS || first >= req->argc)
        return CN_E_INVALID;
    CN_TRY(cn_buf_append(b, op, CN_SAU2_ID_LEN));
    CN_TRY(cn_buf_put_u16le(b, count));
    for (uint16_t i = first; i < req->argc; i++) {
        if (req->argv[i].len > CN_SAU2_MAX_STRING)
            return CN_E_INVALID;
        CN_TRY(put_str(b, req->argv[i].p, req->argv[i].len));
    }
    CN_TRY(cn_buf_put_u8(b, with_secret ? 1 : 0));
    return with_secret ? put_str(b, req->secret.p, req->secret.len) : 0;
}

/* A frame is begun with a zero head (frame_begin) and finished by
 * frame_end, which writes the head's length, or on failure (e, or a payload
 * over 1 MiB) takes back everything appended since start. */
static cn_err_t frame_begin(cn_buf_t *out)
{
    static const uint8_t head[CN_SAU2_HDR_LEN];
    return cn_buf_append(out, head, sizeof head);
}

static cn_err_t frame_end(cn_buf_t *out, size_t start, cn_err_t e)
{
    size_t len = out->len - start - CN_SAU2_HDR_LEN;
    if (e == 0 && len > CN_SAU2_MAX_PAYLOAD)
        e = CN_E_INVALID;
    if (e < 0) {
        out->len = start;
        return e;
    }
    cn_sau2_frame_head(out->data + start, (uint32_t)len);
    return 0;
}

cn_err_t cn_sau2_enc_request(cn_buf_t *out, const cn_sau2_req_t *req)
{
    size_t min = 0, max = 0;
    if (req->argc == 0 || req->argc > CN_SAU2_MAX_STRINGS)
        return CN_E_INVALID;
    int rule = cn_sau2_secret_rule(req->argv[0].p, req->argv[0].len, &min, &max);
    if (rule != (req->has_secret ? 1 : 0) ||
        (req->has_secret && (req->secret.len < min || req->secret.len > max)))
        return CN_E_INVALID;
    size_t start = out->len;
    cn_err_t e = frame_begin(out);
    if (e == 0)
        e = put_request(out, req->op, req, 0, req->has_secret);
    return frame_end(out, start, e);
}

cn_err_t cn_sau2_intent(const cn_sau2_req_t *req, uint16_t first, cn_digest_t *out)
{
    static const uint8_t zero[CN_SAU2_ID_LEN];
    cn_buf_t b = { 0 };
    cn_err_t e = put_request(&b, zero, req, first, false);
    if (e == 0)
        cn_blake3(b.data, b.len, out);
    cn_buf_free(&b);
    return e;
}

/* ---- replies ------------------------------------------------------------------ */

cn_err_t cn_sau2_reply_row(cn_sau2_reply_t *r, size_t n, const char *const *strs)
{
    if (r->err)
        return r->err;
    if (n > CN_SAU2_MAX_STRINGS || r->nrows >= CN_SAU2_MAX_ROWS)
        return r->err = CN_E_LIMIT;
    size_t start = r->rows.len;
    cn_err_t e = cn_buf_put_u16le(&r->rows, (uint16_t)n);
    for (size_t i = 0; i < n && e == 0; i++) {
        size_t len = strlen(strs[i]);
        e = len > CN_SAU2_MAX_STRING ? CN_E_LIMIT
                                     : put_str(&r->rows, (const uint8_t *)strs[i], len);
    }
    if (e < 0) {
        r->rows.len = start;
        return r->err = e;
    }
    r->nrows++;
    return 0;
}

cn_err_t cn_sau2_reply_error(cn_sau2_reply_t *r, uint16_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    r->code = code;
    r->nrows = 0;
    r->err = 0;
    cn_buf_reset(&r->rows);
    return 0;
}

void cn_sau2_reply_free(cn_sau2_reply_t *r)
{
    if (r)
        cn_buf_free(&r->rows);
}

cn_err_t cn_sau2_enc_reply(cn_buf_t *out, const cn_sau2_reply_t *r)
{
    if (r->err)
        return CN_E_INVALID;
    size_t start = out->len;
    cn_err_t e = frame_begin(out);
    if (e == 0)
        e = cn_buf_put_u16le(out, r->code);
    if (e == 0 && r->code != 0) {
        size_t len = strlen(r->message);
        e = len > CN_SAU2_MAX_MESSAGE ? CN_E_INVALID
                                      : put_str(out, (const uint8_t *)r->message, len);
    } else if (e == 0) {
        e = cn_buf_append(out, r->incarnation, CN_SAU2_ID_LEN);
        if (e == 0)
            e = cn_buf_put_u64le(out, r->revision);
        if (e == 0)
            e = cn_buf_put_u16le(out, r->nrows);
        if (e == 0 && r->rows.len)
            e = cn_buf_append(out, r->rows.data, r->rows.len);
    }
    return frame_end(out, start, e);
}

cn_err_t cn_sau2_dec_reply(const uint8_t *p, size_t n, cn_sau2_reply_view_t *v)
{
    cn_rd_t r = cn_rd_init(p, n);
    memset(v, 0, sizeof *v);
    v->code = cn_rd_u16le(&r);
    if (r.err == 0 && v->code != 0) {
        rd_str(&r, CN_SAU2_MAX_MESSAGE, &v->message);
        return r.err || cn_rd_left(&r) ? CN_E_PROTOCOL : 0;
    }
    const uint8_t *inc = cn_rd_bytes(&r, CN_SAU2_ID_LEN);
    if (inc)
        memcpy(v->incarnation, inc, CN_SAU2_ID_LEN);
    v->revision = cn_rd_u64le(&r);
    uint16_t rows = cn_rd_u16le(&r);
    /* Each row takes two bytes at least: checked before walking them. */
    if (r.err || rows > CN_SAU2_MAX_ROWS || (size_t)rows * 2 > cn_rd_left(&r))
        return CN_E_PROTOCOL;
    size_t at = r.off;
    for (uint16_t i = 0; i < rows && r.err == 0; i++) {
        uint16_t count;
        rd_vector(&r, &count, NULL);
    }
    if (r.err || cn_rd_left(&r) != 0)
        return CN_E_PROTOCOL;
    v->nrows = rows;
    v->rows = p + at;
    v->rows_len = n - at;
    return 0;
}

int cn_sau2_row_next(const cn_sau2_reply_view_t *v, size_t *off, cn_sau2_row_t *row)
{
    if (*off >= v->rows_len)
        return 0;
    cn_rd_t r = cn_rd_init(v->rows, v->rows_len);
    r.off = *off;
    rd_vector(&r, &row->n, row->s);
    if (r.err)
        return 0;
    *off = r.off;
    return 1;
}
