/* Responses (include/cairn/http.h): a handler's respond call records the
 * status, the headers and where the body comes from (memory, a file, a
 * producer); cn__resp_send writes them on the connection's worker
 * once the request is over: the head and a small body in one writev, a
 * file body by sendfile(2) behind its head on plaintext, a producer's bytes
 * through one bounded buffer (chunked when its length is unknown).  Each
 * write is bounded by the listener's deadline for its length.  Replies go
 * through cn_conn_reply: when the client does not take them as fast as they
 * are written, the rest is handed to the network loop and the worker is
 * free (a stalled reader cannot hold one); a producer's body does so piece
 * by piece, its next piece produced on a worker once the client took the
 * last (CN_CONN_MORE).  Also the
 * suspend/resume of a request, and S3 XML errors. */
#include "http_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* A producer's buffer: bounded, whatever the body's length. */
#define CN__STREAM_BUF (64u * 1024)

/* Fields only the framework writes: the framing and its own labels. */
static bool framework_field(const char *name, size_t n)
{
    static const struct {
        const char *s;
        size_t n;
    } own[] = { { "content-length", 14 }, { "transfer-encoding", 17 },
                { "connection", 10 },     { "date", 4 },
                { "server", 6 },          { "x-amz-request-id", 16 },
                { "x-amz-id-2", 10 } };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (n == own[i].n && strncasecmp(name, own[i].s, n) == 0)
            return true;
    return false;
}

/* Appends the header line "name: value\r\n" (nl and vl bytes) to b, with
 * one reservation.  -ENOMEM. */
static cn_err_t put_line_n(cn_buf_t *b, const char *name, size_t nl, const char *value, size_t vl)
{
    CN_TRY(cn_buf_reserve(b, nl + vl + 4));
    uint8_t *p = b->data + b->len;
    memcpy(p, name, nl);
    p += nl;
    *p++ = ':';
    *p++ = ' ';
    memcpy(p, value, vl);
    p += vl;
    *p++ = '\r';
    *p++ = '\n';
    b->len = (size_t)(p - b->data);
    return CN_OK;
}

/* Appends the line of name and value to r->rhl; *off where it starts, *len
 * its length.  -ENOMEM, CN_E_LIMIT past 4 GiB. */
static cn_err_t line_add(cn_http_req_t *r, const char *name, size_t nl, const char *value,
                         size_t vl, uint32_t *off, uint32_t *len)
{
    if (r->rhl.len > UINT32_MAX - 4 - nl - vl)
        return CN_E_LIMIT;
    *off = (uint32_t)r->rhl.len;
    *len = (uint32_t)(nl + vl + 4);
    return put_line_n(&r->rhl, name, nl, value, vl);
}

cn_err_t cn_http_resp_header(cn_http_req_t *r, const char *name, const char *value)
{
    size_t nl = strcspn(name, "\r\n: \t"), vl = strcspn(value, "\r\n");
    if (!nl || name[nl] || value[vl] || framework_field(name, nl))
        return CN_E_INVALID;
    size_t at = r->nhdrs;
    for (size_t i = 0; i < r->nhdrs && at == r->nhdrs; i++)
        if (r->hdrs[i].name_len == nl &&
            strncasecmp((const char *)r->rhl.data + r->hdrs[i].off, name, nl) == 0)
            at = i; /* replaced in its place */
    if (at == CN__MAX_RESP_HEADERS)
        return CN_E_LIMIT;
    uint32_t off, len;
    CN_TRY(line_add(r, name, nl, value, vl, &off, &len));
    r->hdrs[at].off = off;
    r->hdrs[at].name_len = (uint32_t)nl;
    r->hdrs[at].len = len;
    if (at == r->nhdrs)
        r->nhdrs++;
    return CN_OK;
}

/* Records the status and content type of the one response.  CN_E_INVALID
 * when r already has one. */
static cn_err_t begin(cn_http_req_t *r, int status, const char *content_type)
{
    if (r->responded || status < 100 || status > 999)
        return CN_E_INVALID;
    if (content_type)
        CN_TRY(line_add(r, "Content-Type", 12, content_type, strlen(content_type), &r->ctype_off,
                        &r->ctype_len));
    r->responded = true;
    r->status = (unsigned)status;
    return CN_OK;
}

cn_err_t cn_http_respond(cn_http_req_t *r, int status, const char *content_type, const void *body,
                         size_t len)
{
    if (r->responded)
        return CN_E_INVALID;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    if (len)
        memcpy(copy, body, len);
    cn_err_t e = begin(r, status, content_type);
    if (e) {
        free(copy);
        return e;
    }
    r->rb.kind = CN__RB_MEM;
    r->rb.mem = copy;
    r->rb.mem_len = len;
    return CN_OK;
}

cn_err_t cn_http_respond_borrowed(cn_http_req_t *r, int status, const char *content_type,
                                  const void *body, size_t len, void (*done)(void *), void *ctx)
{
    CN_TRY(begin(r, status, content_type));
    r->rb.kind = CN__RB_MEM;
    r->rb.mem = body;
    r->rb.mem_len = len;
    r->rb.done = done;
    r->rb.ctx = ctx;
    return CN_OK;
}

cn_err_t cn_http_respond_buf(cn_http_req_t *r, int status, const char *content_type,
                             const cn_buf_t *body)
{
    return cn_http_respond(r, status, content_type, body->data, body->len);
}

cn_err_t cn_http_respond_empty(cn_http_req_t *r, int status, uint64_t len)
{
    CN_TRY(begin(r, status, NULL));
    r->rb.kind = CN__RB_EMPTY;
    r->rb.len = len;
    return CN_OK;
}

cn_err_t cn_http_respond_fd(cn_http_req_t *r, int status, const char *content_type, int fd,
                            uint64_t off, uint64_t len)
{
    cn_err_t e =
        off > INT64_MAX || len > INT64_MAX - off ? CN_E_INVALID : begin(r, status, content_type);
    if (e) {
        close(fd);
        return e;
    }
    r->rb.kind = CN__RB_FD;
    r->rb.fd = fd;
    r->rb.off = off;
    r->rb.len = len;
    return CN_OK;
}

/* A producer's response: done(ctx) is called on failure too. */
static cn_err_t begin_producer(cn_http_req_t *r, int status, const char *content_type,
                               cn__rb_kind_t kind, uint64_t len, void (*done)(void *), void *ctx)
{
    cn_err_t e = begin(r, status, content_type);
    if (e) {
        if (done)
            done(ctx);
        return e;
    }
    r->rb.kind = kind;
    r->rb.len = len;
    r->rb.done = done;
    r->rb.ctx = ctx;
    return CN_OK;
}

cn_err_t cn_http_respond_stream(cn_http_req_t *r, int status, const char *content_type,
                                uint64_t len, ssize_t (*read)(void *, uint64_t, char *, size_t),
                                void (*done)(void *), void *ctx)
{
    CN_TRY(begin_producer(r, status, content_type, CN__RB_STREAM, len, done, ctx));
    r->rb.read = read;
    return CN_OK;
}

/* Releases the body's resources: the fd closed, the producer told. */
static void body_release(cn_http_req_t *r)
{
    if (r->rb.kind == CN__RB_MEM && r->rb.done)
        r->rb.done(r->rb.ctx); /* borrowed (cn_http_respond_borrowed) */
    else
        free((void *)r->rb.mem);
    if (r->rb.kind == CN__RB_FD)
        close(r->rb.fd);
    if (r->rb.kind == CN__RB_STREAM && r->rb.done)
        r->rb.done(r->rb.ctx);
    memset(&r->rb, 0, sizeof r->rb);
}

void cn__resp_discard(cn_http_req_t *r)
{
    body_release(r);
    r->nhdrs = 0;
    r->rhl.len = 0;
    r->ctype_len = 0;
    r->responded = false;
}

/* ---- suspend and resume ------------------------------------------------------ */
void cn_http_req_suspend(cn_http_req_t *r)
{
    pthread_mutex_lock(&r->hc->mu);
    r->wait_gen = r->hc->resume_gen;
    pthread_mutex_unlock(&r->hc->mu);
}

void cn_http_req_resume(cn_http_req_t *r)
{
    pthread_mutex_lock(&r->hc->mu);
    r->hc->resume_gen++;
    pthread_cond_broadcast(&r->hc->cv);
    pthread_mutex_unlock(&r->hc->mu);
}

cn_err_t cn__req_wait_resume(cn_http_req_t *r, int64_t deadline)
{
    cn__hconn_t *hc = r->hc;
    cn_err_t e = CN_OK;
    pthread_mutex_lock(&hc->mu);
    while (hc->resume_gen == r->wait_gen) {
        int64_t now = cn_mono_ms();
        if (now >= deadline) {
            e = CN_E_TIMEOUT;
            break;
        }
        /* Short slices: a peer that went away (or the end of the grace
         * period at shutdown) ends the wait without a resume. */
        int64_t until = deadline - now > 100 ? now + 100 : deadline;
        struct timespec ts = { .tv_sec = until / 1000, .tv_nsec = (until % 1000) * 1000000 };
        pthread_cond_timedwait(&hc->cv, &hc->mu, &ts);
        if (hc->resume_gen == r->wait_gen && cn_conn_hung_up(hc->c)) {
            e = CN_E_CLOSED;
            break;
        }
    }
    pthread_mutex_unlock(&hc->mu);
    return e;
}

/* ---- the head -------------------------------------------------------------------- */
const char *cn__http_date(void)
{
    static _Thread_local char text[CN_DATE_MAX];
    static _Thread_local int64_t at = -1;
    int64_t now = cn_wall_ms() / 1000;
    if (now != at) {
        cn_date_format(now * 1000, CN_DATE_IMF, text); /* no time-zone lock */
        at = now;
    }
    return text;
}

static const char *reason(unsigned status)
{
    static const struct {
        unsigned status;
        const char *text;
    } t[] = {
        { 100, "Continue" },
        { 200, "OK" },
        { 201, "Created" },
        { 202, "Accepted" },
        { 204, "No Content" },
        { 206, "Partial Content" },
        { 301, "Moved Permanently" },
        { 302, "Found" },
        { 303, "See Other" },
        { 304, "Not Modified" },
        { 307, "Temporary Redirect" },
        { 400, "Bad Request" },
        { 401, "Unauthorized" },
        { 403, "Forbidden" },
        { 404, "Not Found" },
        { 405, "Method Not Allowed" },
        { 408, "Request Timeout" },
        { 409, "Conflict" },
        { 411, "Length Required" },
        { 412, "Precondition Failed" },
        { 413, "Content Too Large" },
        { 416, "Range Not Satisfiable" },
        { 417, "Expectation Failed" },
        { 431, "Request Header Fields Too Large" },
        { 500, "Internal Server Error" },
        { 501, "Not Implemented" },
        { 503, "Service Unavailable" },
        { 507, "Insufficient Storage" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].status == status)
            return t[i].text;
    return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
}

typedef enum {
    FRAME_LENGTH,  /* Content-Length */
    FRAME_CHUNKED, /* Transfer-Encoding: chunked */
    FRAME_CLOSE,   /* the body ends when the connection does (HTTP/1.0) */
    FRAME_NONE,    /* no body by status (1xx, 204, 304) */
} frame_t;

/* Appends "name: value\r\n" (no printf: the head is built for every
 * request, and vfprintf was a top entry of the small-GET profile). */
static cn_err_t put_line(cn_buf_t *h, const char *name, const char *value)
{
    return put_line_n(h, name, strlen(name), value, strlen(value));
}

/* v in decimal into out (at least 21 bytes); returns out. */
static const char *u64_dec(uint64_t v, char *out)
{
    char *p = out + 20;
    *p = 0;
    do
        *--p = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    return p;
}

static cn_err_t build_head(cn_http_req_t *r, cn_buf_t *h, frame_t frame, uint64_t len, bool keep)
{
    char num[21];
    /* The set lines and about as much again for the framework's: one
     * allocation, no growth. */
    cn_err_t e = cn_buf_reserve(h, r->rhl.len + 320);
    e |= cn_buf_append_str(h, "HTTP/1.1 ");
    e |= cn_buf_append_str(h, u64_dec(r->status, num));
    e |= cn_buf_append(h, " ", 1);
    e |= cn_buf_append_str(h, reason(r->status));
    e |= cn_buf_append(h, "\r\n", 2);
    for (size_t i = 0; i < r->nhdrs; i++)
        e |= cn_buf_append(h, r->rhl.data + r->hdrs[i].off, r->hdrs[i].len);
    if (r->ctype_len)
        e |= cn_buf_append(h, r->rhl.data + r->ctype_off, r->ctype_len);
    e |= put_line(h, "x-amz-request-id", r->id);
    e |= put_line(h, "x-amz-id-2", r->host_id);
    e |= cn_buf_append_str(h, "Server: cairn\r\n");
    e |= put_line(h, "Date", cn__http_date());
    if (frame == FRAME_LENGTH)
        e |= put_line(h, "Content-Length", u64_dec(len, num));
    else if (frame == FRAME_CHUNKED)
        e |= cn_buf_append_str(h, "Transfer-Encoding: chunked\r\n");
    if (!keep)
        e |= cn_buf_append_str(h, "Connection: close\r\n");
    else if (r->http10)
        e |= cn_buf_append_str(h, "Connection: keep-alive\r\n");
    e |= cn_buf_append_str(h, "\r\n");
    return e ? -ENOMEM : CN_OK;
}

int64_t cn__rolling_deadline(cn_conn_t *c, int64_t start_ms, uint64_t bytes)
{
    int64_t d = cn_conn_deadline_for(c, bytes);
    return d == INT64_MAX ? d : d - (cn_mono_ms() - start_ms);
}

/* ---- bodies ------------------------------------------------------------------------ */
/* The head, if it is not written yet, in front of iov's bytes, by
 * cn_conn_reply (so a client that stops reading holds no worker). */
static cn_err_t stream_reply(cn_http_req_t *r, struct iovec *iov, int n, int64_t deadline)
{
    struct iovec all[4];
    int k = 0;
    if (r->stream.head.len)
        all[k++] = (struct iovec){ r->stream.head.data, r->stream.head.len };
    for (int i = 0; i < n && k < 4; i++)
        if (iov[i].iov_len)
            all[k++] = iov[i];
    cn_err_t e = cn_conn_reply(r->hc->c, all, k, -1, 0, 0, deadline);
    cn_buf_free(&r->stream.head); /* written, or the stream is broken */
    return e;
}

/* A producer's bytes, through one buffer, with chunked framing when asked,
 * from r->stream.pos on.  Each piece goes out through cn_conn_reply: when
 * the client does not take it at once, CN_CONN_MORE leaves the rest of it
 * to the loop, and cn__resp_resume goes on from there on a worker. */
static cn_err_t stream_run(cn_http_req_t *r)
{
    cn_conn_t *c = r->hc->c;
    uint64_t len = r->rb.len;
    cn_err_t e = CN_OK;
    while (len == CN_HTTP_LEN_UNKNOWN || r->stream.pos < len) {
        size_t want = CN__STREAM_BUF;
        if (len != CN_HTTP_LEN_UNKNOWN && len - r->stream.pos < want)
            want = (size_t)(len - r->stream.pos);
        ssize_t n = r->rb.read(r->rb.ctx, r->stream.pos, r->stream.buf, want);
        if (n == CN_HTTP_STREAM_WAIT) { /* the head goes before a wait */
            e = r->stream.head.len ? stream_reply(r, NULL, 0, cn_conn_deadline_for(c, 0)) : 0;
            if (!e)
                e = cn__req_wait_resume(r, cn_conn_deadline_for(c, 0));
            if (e)
                break;
            continue;
        }
        if (n < 0 || (n == 0 && len != CN_HTTP_LEN_UNKNOWN)) {
            e = CN_E_LENGTH_MISMATCH; /* the body must not look whole */
            break;
        }
        if (n == 0)
            break;
        if ((size_t)n > want)
            n = (ssize_t)want;
        char pre[24];
        struct iovec iov[3] = { { pre, 0 }, { r->stream.buf, (size_t)n }, { (void *)"\r\n", 0 } };
        if (r->stream.chunked) {
            iov[0].iov_len = (size_t)snprintf(pre, sizeof pre, "%zx\r\n", (size_t)n);
            iov[2].iov_len = 2;
        }
        r->stream.pos += (uint64_t)n;
        e = stream_reply(r, iov, 3, cn__rolling_deadline(c, r->stream.start, r->stream.pos));
        bool last = len != CN_HTTP_LEN_UNKNOWN && r->stream.pos >= len;
        if (!e && !last)
            e = cn_conn_reply_settle(c, CN_CONN_PART_WAIT_MS);
        if (!e && !last && cn_conn_reply_pending(c))
            return CN_CONN_MORE;
        if (e)
            break;
    }
    struct iovec end = { (void *)"0\r\n\r\n", r->stream.chunked ? 5 : 0 };
    if (!e && (end.iov_len || r->stream.head.len))
        e = stream_reply(r, &end, 1, cn_conn_deadline_for(c, 5));
    r->resp_len = r->stream.pos;
    return e;
}

static void stream_end(cn_http_req_t *r)
{
    free(r->stream.buf);
    r->stream.buf = NULL;
    cn_buf_free(&r->stream.head);
}

cn_err_t cn__resp_resume(cn_http_req_t *r)
{
    cn_err_t e = stream_run(r);
    if (e == CN_CONN_MORE)
        return e;
    stream_end(r);
    body_release(r);
    return e;
}

void cn__resp_abandon(cn_http_req_t *r)
{
    stream_end(r);
    body_release(r);
}

cn_err_t cn__resp_send(cn_http_req_t *r, bool keep)
{
    cn_conn_t *c = r->hc->c;
    bool head_only = r->method_bit == CN_HTTP_HEAD;
    uint64_t len = r->rb.kind == CN__RB_MEM ? r->rb.mem_len : r->rb.len;
    frame_t frame = FRAME_LENGTH;
    if (r->status < 200 || r->status == 204 || r->status == 304)
        frame = FRAME_NONE;
    else if (r->rb.kind == CN__RB_STREAM && len == CN_HTTP_LEN_UNKNOWN)
        frame = r->http10 ? FRAME_CLOSE : FRAME_CHUNKED;
    if (frame == FRAME_CLOSE && !head_only)
        keep = false;
    if (r->rb.kind == CN__RB_EMPTY && len && !head_only && frame != FRAME_NONE)
        keep = false; /* a length without bytes (a handler's slip): the peer must not wait */
    cn_buf_t h = { 0 };
    cn_err_t e = build_head(r, &h, frame, len, keep);
    bool body = !e && !head_only && frame != FRAME_NONE;
    r->resp_len = body && len != CN_HTTP_LEN_UNKNOWN ? len : 0;
    bool producer = body && r->rb.kind == CN__RB_STREAM;
    if (e) {
        /* nothing sent */
    } else if (!producer) {
        /* The whole reply is described without the worker (the head, a
         * memory body, a file range): a client that does not read it gets
         * it written by the loop, and the worker goes back to the pool. */
        struct iovec iov[2] = { { h.data, h.len }, { (void *)r->rb.mem, 0 } };
        bool mem = body && r->rb.kind == CN__RB_MEM, file = body && r->rb.kind == CN__RB_FD;
        iov[1].iov_len = mem ? r->rb.mem_len : 0;
        uint64_t flen = file ? len : 0;
        e = cn_conn_reply(c, iov, mem ? 2 : 1, file ? r->rb.fd : -1, file ? r->rb.off : 0, flen,
                          cn_conn_deadline_for(c, h.len + iov[1].iov_len + flen));
    } else {
        /* A producer's pieces, each by cn_conn_reply: a client that stops
         * reading gets the rest of a piece from the loop, and the next one
         * from a worker once it took that (CN_CONN_MORE). */
        r->stream.head = h;
        h = (cn_buf_t){ 0 };
        r->stream.chunked = frame == FRAME_CHUNKED;
        r->stream.start = cn_mono_ms();
        r->stream.buf = malloc(CN__STREAM_BUF);
        e = r->stream.buf ? cn__resp_resume(r) : -ENOMEM;
        if (e == CN_CONN_MORE)
            return e;
    }
    cn_buf_free(&h);
    stream_end(r);
    body_release(r);
    return e;
}

/* ---- errors ------------------------------------------------------------------------ */
cn_err_t cn_http_respond_s3_error(cn_http_req_t *r, cn_s3_err_t e, const char *message)
{
    cn_buf_t b = { 0 };
    cn_err_t err = cn_s3_error_xml(&b, e, message, cn_http_req_path(r, NULL), r->id, r->host_id);
    if (!err)
        err = cn_http_respond(r, cn_s3_err_status(e), "application/xml", b.data, b.len);
    cn_buf_free(&b);
    return err;
}

cn_err_t cn__framework_error(cn_http_req_t *r, cn_s3_err_t e, const char *message)
{
    if (r->responded)
        return CN_OK;
    static cn_log_limit_t lim;
    if (e == CN_S3E_INTERNAL_ERROR) /* the cause stays in the log, never on the wire */
        cn_warn_limited(&lim, "http", "%s %s: InternalError: %s [%s]", r->method,
                        cn_http_req_path(r, NULL), message ? message : "no detail", r->id);
    if (r->route >= 0 && r->srv->routes[r->route].error) {
        const cn_http_route_t *rt = &r->srv->routes[r->route];
        rt->error(r, e, message, rt->ctx);
        if (r->responded)
            return CN_OK;
    }
    return cn_http_respond_s3_error(r, e, message);
}
