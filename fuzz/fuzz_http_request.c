/* libFuzzer harness: the HTTP/1.1 request path below the handlers — llhttp
 * driven through src/http/parse.c's callbacks (head arena, header index,
 * limits, body framing), then the request target (cn__req_parse_target)
 * and the accessors handlers use (src/http/request.c).
 *
 * Input: a slice byte, then a byte stream of pipelined requests.  The stream
 * is parsed twice: in one feed, and in feeds of (slice byte) bytes (1 when
 * 0), the way the network may cut it.  Up to 8 messages are parsed in a row,
 * each from the bytes the previous one left.  Invariants: every header name
 * and value lies in the arena, NUL-terminated at its length, the value with
 * no whitespace at either end; the head stays within its limits; every body
 * piece lies inside the bytes just fed; a message with a Content-Length
 * delivers exactly that many bytes; a refusal names an S3 error; and both
 * slicings agree on every message's outcome, head and body — the framing is
 * a property of the bytes, not of how they arrived. */
#include "cairn/http.h"
#include "../src/http/http_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MSGS 8

typedef struct {
    const uint8_t *lo, *hi; /* the piece being fed */
    uint64_t n, h;          /* body bytes and their FNV-1a */
} sink_t;

typedef struct {
    int outcome; /* cn__feed_t of the message's end, or -1 when the input ran out */
    cn_s3_err_t err;
    size_t nhdr;
    uint64_t head_h; /* FNV-1a over method, target, fields */
    uint64_t body_n, body_h;
    size_t consumed;
} msg_t;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void on_body(void *ctx, const uint8_t *p, size_t n)
{
    sink_t *s = ctx;
    if (n == 0 || p < s->lo || p + n > s->hi)
        abort();
    s->h = fnv(s->h, p, n);
    s->n += n;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* The head is complete: check the index, then build what a handler sees. */
static void check_head(const cn__head_t *h, msg_t *m)
{
    const char *lo = (const char *)h->arena.data, *hi = lo + h->arena.len;
    if (h->head_bytes > CN__HEAD_MAX || h->n > CN__HEADERS_MAX || !h->kv)
        abort();
    m->head_h = fnv(14695981039346656037ull, cn__head_method(h), strlen(cn__head_method(h)));
    const char *url = cn__head_url(h);
    if (strlen(url) > CN__URI_MAX)
        abort();
    m->head_h = fnv(m->head_h, url, strlen(url));
    for (size_t i = 0; i < h->n; i++) {
        const cn_http_kv_t *kv = &h->kv[i];
        if (kv->name < lo || kv->name + kv->name_len >= hi || kv->value < lo ||
            kv->value + kv->value_len >= hi || strlen(kv->name) != kv->name_len ||
            strlen(kv->value) != kv->value_len ||
            (kv->value_len && (is_ws(kv->value[0]) || is_ws(kv->value[kv->value_len - 1]))))
            abort();
        if (cn__head_header(h, kv->name) == NULL)
            abort();
        m->head_h = fnv(m->head_h, kv->name, kv->name_len + 1);
        m->head_h = fnv(m->head_h, kv->value, kv->value_len + 1);
    }
    m->nhdr = h->n;

    cn_http_req_t *r = calloc(1, sizeof *r);
    if (!r)
        return;
    r->route = -1;
    r->uri = strdup(url);
    r->head = *h; /* borrowed for the accessors: freed by the caller */
    if (r->uri && cn__req_parse_target(r) == CN_OK) {
        size_t len;
        const char *path = cn_http_req_path(r, &len);
        if (path[0] != '/' || strlen(path) != len)
            abort();
        for (size_t i = 0; i < cn_http_req_query_count(r); i++) {
            const char *n, *v;
            cn_http_req_query_at(r, i, &n, &v);
            if (!n || !v || !cn_http_req_has_query(r, n))
                abort();
        }
    }
    (void)cn_http_req_content_encoding(r);
    if (cn_http_req_header(r, "Content-Length") && !cn__head_chunked(h) &&
        cn__head_content_length(h) < 0)
        abort();
    memset(&r->head, 0, sizeof r->head);
    cn__req_free(r);
}

/* Parses up to MAX_MSGS messages of p in slices; m[i] describes each. */
static size_t parse(const uint8_t *p, size_t n, size_t slice, msg_t *m)
{
    size_t off = 0, k = 0;
    while (k < MAX_MSGS && off < n) {
        sink_t s = { .h = 14695981039346656037ull };
        cn__head_t h;
        cn__head_init(&h, on_body, &s);
        msg_t *cur = &m[k++];
        memset(cur, 0, sizeof *cur);
        cur->outcome = -1;
        size_t start = off;
        bool head = false;
        for (;;) {
            size_t take = n - off < slice ? n - off : slice, used = 0;
            s.lo = p + off;
            s.hi = p + off + take;
            cn__feed_t st = cn__head_feed(&h, p + off, take, &used);
            if (used > take)
                abort();
            off += used;
            if (st == CN__FEED_HEAD && !head) {
                head = true;
                check_head(&h, cur);
                continue;
            }
            if (st == CN__FEED_ERROR && (h.err == CN_S3E_NONE || h.err >= CN_S3E_COUNT))
                abort(); /* a refusal names its S3 error */
            if (st == CN__FEED_DONE || st == CN__FEED_ERROR) {
                cur->outcome = (int)st;
                cur->err = h.err;
                break;
            }
            if (off == n) /* more wanted, none left */
                break;
        }
        /* CONNECT and Upgrade end the message at the head: the stream is
         * then not HTTP, and the server closes it after its answer. */
        int64_t cl = head && !h.p.upgrade ? cn__head_content_length(&h) : -1;
        if (cur->outcome == CN__FEED_DONE && cl >= 0 && s.n != (uint64_t)cl)
            abort();
        cur->body_n = s.n;
        cur->body_h = s.h;
        cur->consumed = off - start;
        bool go_on =
            cur->outcome == CN__FEED_DONE && !h.p.upgrade && llhttp_should_keep_alive(&h.p);
        cn__head_free(&h);
        if (!go_on)
            break;
    }
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t slice = data[0] ? data[0] : 1;
    /* An exact-size copy, so the sanitizer sees a read past either end. */
    size_t n = size - 1;
    uint8_t *stream = malloc(n ? n : 1);
    msg_t *a = calloc(MAX_MSGS, sizeof *a), *b = calloc(MAX_MSGS, sizeof *b);
    if (!stream || !a || !b)
        goto out;
    memcpy(stream, data + 1, n);
    size_t na = parse(stream, n, n ? n : 1, a);
    size_t nb = parse(stream, n, slice, b);
    if (na != nb)
        abort();
    for (size_t i = 0; i < na; i++) {
        if (a[i].outcome != b[i].outcome || a[i].err != b[i].err)
            abort();
        /* Where a refusal stops depends on where a limit was crossed, and
         * the stream is dropped then: only what a handler sees must agree. */
        if (a[i].outcome != CN__FEED_ERROR &&
            (a[i].nhdr != b[i].nhdr || a[i].head_h != b[i].head_h || a[i].body_n != b[i].body_n ||
             a[i].body_h != b[i].body_h || a[i].consumed != b[i].consumed))
            abort();
    }
out:
    free(stream);
    free(a);
    free(b);
    return 0;
}
