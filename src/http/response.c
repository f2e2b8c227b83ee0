/* Response building: headers, bodies from memory, files and producers, and
 * S3 XML errors (include/cairn/http.h).  A response is built here and queued
 * by server.c at the first point libmicrohttpd allows it. */
#include "http_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

cn_err_t cn_http_resp_header(cn_http_req_t *r, const char *name, const char *value)
{
    if (r->nhdrs >= CN__MAX_RESP_HEADERS)
        return CN_E_LIMIT;
    if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
        return CN_E_INVALID;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return -ENOMEM;
    }
    r->hdrs[r->nhdrs].name = n;
    r->hdrs[r->nhdrs].value = v;
    r->nhdrs++;
    return CN_OK;
}

static cn_err_t finish(cn_http_req_t *r, struct MHD_Response *resp, int status,
                       const char *content_type, uint64_t len)
{
    if (!resp)
        return -ENOMEM;
    if (r->resp || r->stage == CN__RQ_DONE) {
        MHD_destroy_response(resp);
        return CN_E_INVALID;
    }
    /* libmicrohttpd refuses an empty value; one space is the same field to
     * every HTTP parser (surrounding whitespace is not part of a value,
     * RFC 9110 5.5), so "x-amz-meta-k:" comes back empty, not missing. */
    for (size_t i = 0; i < r->nhdrs; i++)
        MHD_add_response_header(resp, r->hdrs[i].name,
                                r->hdrs[i].value[0] ? r->hdrs[i].value : " ");
    if (content_type)
        MHD_add_response_header(resp, "Content-Type", content_type);
    MHD_add_response_header(resp, "x-amz-request-id", r->id);
    MHD_add_response_header(resp, "x-amz-id-2", r->host_id);
    MHD_add_response_header(resp, "Server", "cairn");
    r->resp = resp;
    r->status = (unsigned)status;
    r->resp_len = len == CN_HTTP_LEN_UNKNOWN ? 0 : len;
    return CN_OK;
}

cn_err_t cn_http_respond(cn_http_req_t *r, int status, const char *content_type, const void *body,
                         size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)(uintptr_t)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
    return finish(r, resp, status, content_type, len);
}

cn_err_t cn_http_respond_buf(cn_http_req_t *r, int status, const char *content_type,
                             const cn_buf_t *body)
{
    return cn_http_respond(r, status, content_type, body->data, body->len);
}

static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls;
    (void)pos;
    (void)buf;
    (void)max;
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

cn_err_t cn_http_respond_empty(cn_http_req_t *r, int status, uint64_t len)
{
    struct MHD_Response *resp =
        len ? MHD_create_response_from_callback(len, 4096, no_body, NULL, NULL)
            : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    return finish(r, resp, status, NULL, 0);
}

/* A small file body is read into memory so that libmicrohttpd sends it with
 * the headers in one sendmsg (one TCP segment, one wake-up of the peer); from
 * an fd it sends the headers, then sendfile()s the body, a second system call
 * and a second transmit for a few KiB.  NULL when the read fails or comes up
 * short: the caller then answers from the fd as before.  Leaves fd open. */
static struct MHD_Response *inline_fd(int fd, uint64_t off, uint64_t len)
{
    char *buf = malloc(len ? (size_t)len : 1);
    if (!buf)
        return NULL;
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, (size_t)(len - got), (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    struct MHD_Response *resp =
        got == len ? MHD_create_response_from_buffer_with_free_callback((size_t)len, buf, free)
                   : NULL;
    if (!resp)
        free(buf);
    return resp;
}

cn_err_t cn_http_respond_fd(cn_http_req_t *r, int status, const char *content_type, int fd,
                            uint64_t off, uint64_t len)
{
    if (off > INT64_MAX || len > INT64_MAX - off) {
        close(fd);
        return CN_E_INVALID;
    }
    struct MHD_Response *resp = len <= CN_HTTP_INLINE_BODY_MAX ? inline_fd(fd, off, len) : NULL;
    if (resp) {
        close(fd);
        return finish(r, resp, status, content_type, len);
    }
    resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
    if (!resp) {
        close(fd);
        return -ENOMEM;
    }
    return finish(r, resp, status, content_type, len);
}

typedef struct {
    ssize_t (*read)(void *, uint64_t, char *, size_t);
    void (*done)(void *);
    void *ctx;
} cn__producer_t;

static ssize_t produce(void *cls, uint64_t pos, char *buf, size_t max)
{
    cn__producer_t *p = cls;
    ssize_t n = p->read(p->ctx, pos, buf, max);
    if (n > 0)
        return n;
    if (n == CN_HTTP_STREAM_WAIT)
        return 0; /* the producer suspended the connection: MHD calls again on resume */
    return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

void cn_http_req_suspend(cn_http_req_t *r)
{
    MHD_suspend_connection(r->conn);
}

static void produce_done(void *cls)
{
    cn__producer_t *p = cls;
    if (p->done)
        p->done(p->ctx);
    free(p);
}

cn_err_t cn_http_respond_stream(cn_http_req_t *r, int status, const char *content_type,
                                uint64_t len, ssize_t (*read)(void *, uint64_t, char *, size_t),
                                void (*done)(void *), void *ctx)
{
    cn__producer_t *p = malloc(sizeof *p);
    if (!p) {
        if (done)
            done(ctx);
        return -ENOMEM;
    }
    p->read = read;
    p->done = done;
    p->ctx = ctx;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        len == CN_HTTP_LEN_UNKNOWN ? MHD_SIZE_UNKNOWN : len, 64 * 1024, produce, p, produce_done);
    if (!resp) {
        produce_done(p);
        return -ENOMEM;
    }
    return finish(r, resp, status, content_type, len);
}

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
    if (r->resp)
        return CN_OK;
    if (r->route >= 0 && r->srv->routes[r->route].error) {
        const cn_http_route_t *rt = &r->srv->routes[r->route];
        rt->error(r, e, message, rt->ctx);
        if (r->resp)
            return CN_OK;
    }
    return cn_http_respond_s3_error(r, e, message);
}
