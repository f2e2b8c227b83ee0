/* A request head and body framing through llhttp (cn__head_t, http_int.h).
 *
 * llhttp does every part of HTTP/1.1's message syntax: the request line,
 * header fields, Content-Length (a second one, a negative or an overflowing
 * one is refused), Transfer-Encoding: chunked with extensions and trailers,
 * and the refusal of both framings at once (request smuggling).  This file
 * only copies what its callbacks hand out into one arena and enforces the
 * limits S3 answers for: the head as a whole, the number of fields, the
 * length of the target.  It never allocates past those limits and never
 * does I/O; the parser stops (pauses) after the head and after the message,
 * so the bytes of the next pipelined request are left to the caller. */
#include "http_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static cn__head_t *head_of(llhttp_t *p)
{
    return p->data;
}

static int refuse(cn__head_t *h, cn_s3_err_t e, const char *msg)
{
    if (!h->err) {
        h->err = e;
        h->err_msg = msg;
    }
    return HPE_USER;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    cn__head_t *h = head_of(p);
    if (n > CN__URI_MAX - h->url_len)
        return refuse(h, CN_S3E_INVALID_URI, "the request target is longer than 16 KiB");
    if (cn_buf_append(&h->arena, at, n))
        return refuse(h, CN_S3E_INTERNAL_ERROR, NULL);
    h->url_len += (uint32_t)n;
    return 0;
}

static int on_url_complete(llhttp_t *p)
{
    cn__head_t *h = head_of(p);
    return cn_buf_put_u8(&h->arena, 0) ? refuse(h, CN_S3E_INTERNAL_ERROR, NULL) : 0;
}

/* Trailer fields (after a chunked body) are parsed by llhttp and dropped:
 * aws-chunked trailers live inside the payload, a layer above.  They still
 * count against the head's limit, so they cannot run on forever. */
static int trailer_bytes(cn__head_t *h, size_t n)
{
    h->head_bytes += n;
    if (h->head_bytes > 2u * CN__HEAD_MAX)
        return refuse(h, CN_S3E_HEADER_TOO_LARGE, "the trailer section is too large");
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    cn__head_t *h = head_of(p);
    if (h->in_trailers)
        return trailer_bytes(h, n);
    if (h->part != 1) {
        if (h->n == CN__HEADERS_MAX)
            return refuse(h, CN_S3E_HEADER_TOO_LARGE, "too many header fields");
        if (h->n == h->cap) {
            size_t cap = h->cap ? h->cap * 2 : 16;
            cn__hdr_ent_t *e = realloc(h->ents, cap * sizeof *e);
            if (!e)
                return refuse(h, CN_S3E_INTERNAL_ERROR, NULL);
            h->ents = e;
            h->cap = cap;
        }
        h->ents[h->n++] = (cn__hdr_ent_t){ .name_off = (uint32_t)h->arena.len };
        h->part = 1;
    }
    if (cn_buf_append(&h->arena, at, n))
        return refuse(h, CN_S3E_INTERNAL_ERROR, NULL);
    h->ents[h->n - 1].name_len += (uint32_t)n;
    return 0;
}

static int on_header_field_complete(llhttp_t *p)
{
    cn__head_t *h = head_of(p);
    if (h->in_trailers)
        return 0;
    return cn_buf_put_u8(&h->arena, 0) ? refuse(h, CN_S3E_INTERNAL_ERROR, NULL) : 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    cn__head_t *h = head_of(p);
    if (h->in_trailers)
        return trailer_bytes(h, n);
    if (h->part != 2) {
        h->ents[h->n - 1].val_off = (uint32_t)h->arena.len;
        h->part = 2;
    }
    if (cn_buf_append(&h->arena, at, n))
        return refuse(h, CN_S3E_INTERNAL_ERROR, NULL);
    h->ents[h->n - 1].val_len += (uint32_t)n;
    return 0;
}

/* llhttp leaves out the whitespace before a value, not after it: a field's
 * value is what lies between (RFC 9110 5.5). */
static int on_header_value_complete(llhttp_t *p)
{
    cn__head_t *h = head_of(p);
    if (h->in_trailers)
        return 0;
    cn__hdr_ent_t *e = &h->ents[h->n - 1];
    if (h->part != 2) { /* an empty value: no span came */
        e->val_off = (uint32_t)h->arena.len;
        e->val_len = 0;
    }
    while (e->val_len && (h->arena.data[e->val_off + e->val_len - 1] == ' ' ||
                          h->arena.data[e->val_off + e->val_len - 1] == '\t'))
        e->val_len--;
    h->arena.len = e->val_off + e->val_len;
    h->part = 0;
    return cn_buf_put_u8(&h->arena, 0) ? refuse(h, CN_S3E_INTERNAL_ERROR, NULL) : 0;
}

/* The head is complete: index the fields, check what llhttp leaves to its
 * user (the version; a transfer coding other than chunked), and pause so
 * that the caller decides about the body before a byte of it is parsed. */
static int on_headers_complete(llhttp_t *p)
{
    cn__head_t *h = head_of(p);
    if (p->http_major != 1 || h->arena.len == 0) {
        refuse(h, CN_S3E_BAD_REQUEST, "the request line must end in HTTP/1.0 or HTTP/1.1");
        return -1;
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > INT64_MAX) {
        refuse(h, CN_S3E_BAD_REQUEST, "Content-Length is too large");
        return -1;
    }
    if ((p->flags & F_TRANSFER_ENCODING) && !(p->flags & F_CHUNKED)) {
        refuse(h, CN_S3E_NOT_IMPLEMENTED, "only the chunked transfer coding is implemented");
        return -1;
    }
    h->kv = calloc(h->n ? h->n : 1, sizeof *h->kv);
    if (!h->kv) {
        refuse(h, CN_S3E_INTERNAL_ERROR, NULL);
        return -1;
    }
    for (size_t i = 0; i < h->n; i++) {
        const cn__hdr_ent_t *e = &h->ents[i];
        h->kv[i] = (cn_http_kv_t){ .name = (const char *)h->arena.data + e->name_off,
                                   .name_len = e->name_len,
                                   .value = (const char *)h->arena.data + e->val_off,
                                   .value_len = e->val_len };
    }
    h->content_length = (p->flags & F_CHUNKED) || !(p->flags & F_CONTENT_LENGTH)
                            ? -1
                            : (int64_t)p->content_length; /* at most INT64_MAX (above) */
    h->head_done = true;
    h->in_trailers = true; /* any field from here on is a trailer */
    return HPE_PAUSED;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    cn__head_t *h = head_of(p);
    if (h->on_body)
        h->on_body(h->body_ctx, (const uint8_t *)at, n);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    head_of(p)->msg_done = true;
    return HPE_PAUSED;
}

static const llhttp_settings_t cn__settings = {
    .on_url = on_url,
    .on_url_complete = on_url_complete,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void cn__head_init(cn__head_t *h, void (*body)(void *, const uint8_t *, size_t), void *ctx)
{
    memset(h, 0, sizeof *h);
    llhttp_init(&h->p, HTTP_REQUEST, &cn__settings);
    h->p.data = h;
    h->on_body = body;
    h->body_ctx = ctx;
}

void cn__head_free(cn__head_t *h)
{
    cn_buf_free(&h->arena);
    free(h->ents);
    free(h->kv);
    h->ents = NULL;
    h->kv = NULL;
    h->n = h->cap = 0;
}

/* What a refusal of llhttp's own answers: the target, an unimplemented
 * coding, or a malformed message (Content-Length twice, negative or past
 * 2^64, with Transfer-Encoding, a bad chunk...). */
static void llhttp_refusal(cn__head_t *h, llhttp_errno_t e)
{
    const char *why = llhttp_get_error_reason(&h->p);
    if (e == HPE_INVALID_URL)
        refuse(h, CN_S3E_INVALID_URI, NULL);
    else if (e == HPE_INVALID_TRANSFER_ENCODING)
        refuse(h, CN_S3E_NOT_IMPLEMENTED, "only the chunked transfer coding is implemented");
    else
        refuse(h, CN_S3E_BAD_REQUEST, why && *why ? why : NULL);
}

cn__feed_t cn__head_feed(cn__head_t *h, const uint8_t *p, size_t n, size_t *used)
{
    *used = 0;
    if (h->err)
        return CN__FEED_ERROR;
    if (h->msg_done)
        return CN__FEED_DONE;
    bool in_head = !h->head_done;
    size_t take = n;
    if (in_head && take > CN__HEAD_MAX - h->head_bytes)
        take = (size_t)(CN__HEAD_MAX - h->head_bytes);
    /* The arena in one allocation for a usual head (a presigned GET's is
     * 700 bytes): doubling from 64 took four reallocs.  1 KiB stays in
     * malloc's per-thread cache; a larger head grows it as before. */
    if (in_head && h->arena.cap == 0 && cn_buf_reserve(&h->arena, 1024) != CN_OK) {
        refuse(h, CN_S3E_INTERNAL_ERROR, NULL);
        return CN__FEED_ERROR;
    }
    llhttp_errno_t e = llhttp_execute(&h->p, (const char *)p, take);
    size_t u = take;
    if (e != HPE_OK) {
        const char *pos = llhttp_get_error_pos(&h->p);
        u = pos && pos >= (const char *)p && pos <= (const char *)p + take
                ? (size_t)(pos - (const char *)p)
                : 0;
    }
    *used = u;
    if (in_head)
        h->head_bytes += u;
    if (h->err)
        return CN__FEED_ERROR;
    if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
        if (e == HPE_PAUSED_UPGRADE)
            h->msg_done = true; /* CONNECT or Upgrade: no more messages on this stream */
        llhttp_resume(&h->p);
        return h->msg_done ? CN__FEED_DONE : CN__FEED_HEAD;
    }
    if (e != HPE_OK) {
        llhttp_refusal(h, e);
        return CN__FEED_ERROR;
    }
    if (in_head && !h->head_done && h->head_bytes >= CN__HEAD_MAX) {
        refuse(h, CN_S3E_HEADER_TOO_LARGE, NULL);
        return CN__FEED_ERROR;
    }
    return CN__FEED_MORE;
}

const char *cn__head_method(const cn__head_t *h)
{
    return llhttp_method_name((llhttp_method_t)h->p.method);
}

const char *cn__head_url(const cn__head_t *h)
{
    return h->arena.len ? (const char *)h->arena.data + h->url_off : "";
}

bool cn__head_chunked(const cn__head_t *h)
{
    return (h->p.flags & F_CHUNKED) != 0;
}

int64_t cn__head_content_length(const cn__head_t *h)
{
    return h->head_done ? h->content_length : -1;
}

const char *cn__head_header(const cn__head_t *h, const char *name)
{
    if (!h->kv)
        return NULL;
    /* The first byte first, case folded by its 0x20 bit: bytes that differ
     * there differ under strcasecmp too (for letters the bit is the case;
     * other bytes are compared as they are), and a request's handlers ask
     * for a dozen names, most of them absent. */
    unsigned char c0 = (unsigned char)name[0] | 0x20;
    for (size_t i = 0; i < h->n; i++)
        if (((unsigned char)h->kv[i].name[0] | 0x20) == c0 && strcasecmp(h->kv[i].name, name) == 0)
            return h->kv[i].value;
    return NULL;
}
