/* channels/blobs/sub — blobs/fetch on the HTTP listener: the establishment
 * ack as JSON in the response header Cairn-Open, then the bytes as the body.
 * A whole raw blob from the store, or one range of it, goes file → socket
 * (sendfile, with a Content-Length); several ranges and enveloped reads
 * stream through the service's verifying reader (Content-Length known); a
 * tap on a live put streams chunked, suspending the connection while the
 * putter has sent nothing new, so no server thread ever waits on a putter.  The miss is the establishment
 * refusal 404 channel:open_failed / unknown_resource with the digest as the
 * message; a read the service cannot verify is refused (handler_error) and
 * never streamed.
 */
#include "blobops_int.h"
#include "cairn/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CN__MOD "blobs"

typedef struct {
    cn_blobs_fetch_t *f;
    cn_http_req_t *r;
} sub_stream_t;

static void w_suspend(void *ctx)
{
    cn_http_req_suspend(ctx);
}
static void w_resume(void *ctx)
{
    cn_http_req_resume(ctx);
}

static ssize_t produce(void *ctx, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sub_stream_t *s = ctx;
    cn_blobs_waiter_t w = { w_suspend, w_resume, s->r };
    ssize_t n = cn_blobs_fetch_read(s->f, buf, max, &w);
    if (n == CN_E_AGAIN)
        return CN_HTTP_STREAM_WAIT;
    if (n < 0) {
        /* Cut the stream short: the consumer's hash check fails, it re-fetches. */
        cn_info(CN__MOD, "fetch stream ended early: %s", cn_strerror((cn_err_t)n));
        return -1;
    }
    return n;
}

static void produce_done(void *ctx)
{
    sub_stream_t *s = ctx;
    cn_blobs_fetch_close(s->f);
    free(s);
}

static char *ack_json(const cn_blobs_ack_t *a)
{
    json_t *v =
        json_pack("{s:s}", "source", a->source == CN_BLOBS_SOURCE_FANOUT ? "fanout" : "store");
    if (v && a->has_len)
        json_object_set_new(v, "len", json_integer((json_int_t)a->len));
    if (v && a->nslices) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < a->nslices; i++) {
            char hex[CN_DIGEST_HEX_LEN + 1];
            cn_digest_hex(&a->slice[i], hex);
            json_array_append_new(arr, json_string(hex));
        }
        json_object_set_new(v, "slice_digests", arr);
    }
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return text;
}

void cn__bh_sub(cn_http_req_t *r, cn__bh_req_t *q)
{
    cn__bh_params_t *p = &q->params;
    cn_blobs_caller_t c;
    cn__bh_caller(q, &c);
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&p->digest, hex);
    cn_blobs_fetch_t *f = NULL;
    /* "ranges": [] asks for nothing; it is still the ranged form. */
    cn_blobs_range_t none = { 0, 0 };
    const cn_blobs_range_t *ranges = p->has_ranges ? (p->nranges ? p->ranges : &none) : NULL;
    size_t nranges = p->has_ranges ? (p->nranges ? p->nranges : 1) : 0;
    cn_err_t rc = cn_blobs_fetch_open(q->h->b, &c, p->ns, &p->digest, ranges, nranges, &f);
    if (rc < 0) {
        cn__bh_error_cn(r, rc, &c, "channel:open_failed", hex);
        return;
    }
    const cn_blobs_ack_t *a = cn_blobs_fetch_ack(f);
    char *ack = ack_json(a);
    if (!ack || cn_http_resp_header(r, "Cairn-Open", ack) < 0) {
        free(ack);
        cn_blobs_fetch_close(f);
        cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
        return;
    }
    free(ack);
    /* Stored bytes share the console's origin: never run or sniffed there. */
    (void)cn_http_resp_header(r, "Content-Security-Policy", "sandbox");
    (void)cn_http_resp_header(r, "X-Content-Type-Options", "nosniff");
    const char *type = "application/octet-stream";
    int fd = -1;
    uint64_t off = 0, len = 0;
    /* A packed blob's bytes sit at an offset of its pack: sendfile from there. */
    if (cn_blobs_fetch_take_fd_at(f, &fd, &off, &len) == CN_OK) {
        cn_blobs_fetch_close(f);
        if (len == 0) {
            close(fd);
            (void)cn_http_respond(r, 200, type, "", 0);
        } else {
            (void)cn_http_respond_fd(r, 200, type, fd, off, len);
        }
        return;
    }
    sub_stream_t *s = malloc(sizeof *s);
    if (!s) {
        cn_blobs_fetch_close(f);
        cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
        return;
    }
    s->f = f;
    s->r = r;
    uint64_t total = a->source == CN_BLOBS_SOURCE_FANOUT ? CN_HTTP_LEN_UNKNOWN : a->total;
    (void)cn_http_respond_stream(r, 200, type, total, produce, produce_done, s);
}
