/* The blob operation family's client over HTTP (include/cairn/blobs_client.h),
 * on one libcurl easy handle per cn_blobc_t (connections kept alive between
 * calls).  Every answer is checked against the contract in
 * docs/protocol/blobs.md; every downloaded byte is hashed. */
#include "cairn/blobs_client.h"
#include "blobs_client_int.h"
#include "cairn/side.h"
#include "cairn/util.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HAVE_BATCH 16384
#define AUTH_PREFIX "Authorization: Bearer "
#define ERR_BODY_MAX (64u << 10)
#define JSON_BODY_MAX (4u << 20)

struct cn_blobc {
    CURL *curl;
    char *base;
    char *auth; /* "Authorization: Bearer ..." or NULL */
    cn_blobc_error_t err;
};

cn_err_t cn_blobc_new(const char *url, const char *cred, cn_blobc_t **out)
{
    *out = NULL;
    if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return CN_E_INVALID;
    cn_blobc_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c->curl = curl_easy_init();
    c->base = strdup(url);
    if (c->base) {
        size_t n = strlen(c->base);
        while (n > 0 && c->base[n - 1] == '/')
            c->base[--n] = 0;
    }
    if (cred) {
        size_t n = strlen(cred) + 32;
        c->auth = malloc(n);
        if (c->auth)
            snprintf(c->auth, n, AUTH_PREFIX "%s", cred);
    }
    if (!c->curl || !c->base || (cred && !c->auth)) {
        cn_blobc_free(c);
        return -ENOMEM;
    }
    *out = c;
    return CN_OK;
}

cn_err_t cn__blobc_dup(const cn_blobc_t *c, cn_blobc_t **out)
{
    return cn_blobc_new(c->base, c->auth ? c->auth + strlen(AUTH_PREFIX) : NULL, out);
}

void cn_blobc_free(cn_blobc_t *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    if (c->auth) {
        explicit_bzero(c->auth, strlen(c->auth));
        free(c->auth);
    }
    free(c->base);
    free(c);
}

const cn_blobc_error_t *cn_blobc_error(const cn_blobc_t *c)
{
    return &c->err;
}

/* ---- one request ------------------------------------------------------------- */
typedef struct {
    cn_blobc_t *c;
    long status;
    cn_buf_t body; /* JSON answers and error bodies */
    size_t body_cap;
    char *open; /* Cairn-Open */
    /* streaming get */
    bool streaming;
    cn_blobc_sink_fn sink;
    void *sink_ctx;
    cn_err_t sink_err;
    cn_blake3_t h;
    uint8_t *hbuf; /* bytes gathered into large updates (see hash_add) */
    size_t hlen;
    uint8_t *hbuf2;   /* the full buffer a side thread may be hashing */
    cn_side_set_t hs; /* that job (hash_settle) */
    uint64_t received, total;
    cn_blobc_progress_fn progress;
    void *progress_ctx;
    /* streaming put */
    cn_blobc_source_fn src;
    void *src_ctx;
    uint64_t sent, src_total;
    bool src_failed;
} xfer_t;

#define HASH_BUF (1u << 20)

/* One side thread for the process's verified fetches (cairn/side.h): a full
 * buffer's BLAKE3 runs there while libcurl receives the next, so a fetch is
 * bound by the slower of the two, not their sum.  Made once, never freed
 * (a thread that waits for work costs nothing); NULL: every hash inline. */
static cn_side_t *g_hash_side;
static pthread_once_t g_hash_once = PTHREAD_ONCE_INIT;
static void hash_side_make(void)
{
    g_hash_side = cn_side_new(1, "cn-fetch-hash");
}

static void blake3_job(void *h, const void *p, size_t n)
{
    cn_blake3_update(h, p, n);
}

/* The hash of the buffer before is done: its buffer and x->h are ours. */
static void hash_settle(xfer_t *x)
{
    cn_side_wait(g_hash_side, &x->hs);
}

/* x->hbuf is full: it goes to the side thread (or is hashed here) and the
 * caller fills the other buffer. */
static void hash_post(xfer_t *x)
{
    hash_settle(x);
    if (x->hbuf2) {
        uint8_t *full = x->hbuf;
        x->hbuf = x->hbuf2;
        x->hbuf2 = full;
        cn_side_run(g_hash_side, &x->hs, blake3_job, &x->h, full, x->hlen, true);
    } else {
        cn_blake3_update(&x->h, x->hbuf, x->hlen);
    }
    x->hlen = 0;
}

/* BLAKE3 hashes many 1 KiB chunks in parallel only within one large update;
 * libcurl hands bytes over in pieces of any size, so gather them first. */
static void hash_add(xfer_t *x, const void *p, size_t n)
{
    if (!x->hbuf) {
        cn_blake3_update(&x->h, p, n);
        return;
    }
    while (n) {
        size_t k = HASH_BUF - x->hlen < n ? HASH_BUF - x->hlen : n;
        memcpy(x->hbuf + x->hlen, p, k);
        x->hlen += k;
        p = (const uint8_t *)p + k;
        n -= k;
        if (x->hlen == HASH_BUF)
            hash_post(x);
    }
}

static void hash_final(xfer_t *x, cn_digest_t *out)
{
    hash_settle(x);
    if (x->hlen)
        cn_blake3_update(&x->h, x->hbuf, x->hlen);
    x->hlen = 0;
    cn_blake3_final(&x->h, out);
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    xfer_t *x = ctx;
    size_t len = size * n;
    if (len > 11 && !strncasecmp(p, "Cairn-Open:", 11)) {
        const char *v = p + 11;
        size_t vl = len - 11;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        free(x->open);
        x->open = strndup(v, vl);
    } else if (len > 5 && !strncmp(p, "HTTP/", 5)) {
        free(x->open); /* a new response (after a 100 Continue) */
        x->open = NULL;
    }
    return len;
}

static size_t on_write(char *p, size_t size, size_t n, void *ctx)
{
    xfer_t *x = ctx;
    size_t len = size * n;
    if (x->status == 0)
        curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &x->status);
    if (x->streaming && x->status == 200) {
        hash_add(x, p, len);
        x->received += len;
        cn_err_t rc = x->sink(x->sink_ctx, p, len);
        if (rc) {
            x->sink_err = rc;
            return 0;
        }
        if (x->progress)
            x->progress(x->progress_ctx, x->received, x->total);
        return len;
    }
    if (x->body.len + len > x->body_cap)
        return 0;
    return cn_buf_append(&x->body, p, len) < 0 ? 0 : len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *ctx)
{
    xfer_t *x = ctx;
    ssize_t k = x->src(x->src_ctx, buf, size * n);
    if (k < 0) {
        x->src_failed = true;
        return CURL_READFUNC_ABORT;
    }
    x->sent += (uint64_t)k;
    if (x->progress)
        x->progress(x->progress_ctx, x->sent, x->src_total);
    return (size_t)k;
}

static cn_err_t map_error(cn_blobc_t *c, long status, const cn_buf_t *body)
{
    c->err.status = (int)status;
    json_t *v = body->len ? json_loadb((const char *)body->data, body->len, 0, NULL) : NULL;
    json_t *e = json_object_get(v, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *reason = json_string_value(json_object_get(e, "reason"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    snprintf(c->err.code, sizeof c->err.code, "%s", code ? code : "");
    snprintf(c->err.reason, sizeof c->err.reason, "%s", reason ? reason : "");
    snprintf(c->err.message, sizeof c->err.message, "%s", msg ? msg : "");
    json_decref(v);
    switch (status) {
    case 400:
        if (!strcmp(c->err.code, "verification_failed"))
            return !strcmp(c->err.reason, "length_mismatch") ? CN_E_LENGTH_MISMATCH
                                                             : CN_E_DIGEST_MISMATCH;
        return CN_E_INVALID;
    case 401: return CN_E_AUTH;
    case 403: return CN_E_DENIED;
    case 404: return CN_E_NOT_FOUND;
    case 409: return CN_E_UNSUPPORTED;
    case 413: return CN_E_TOO_LARGE;
    case 503: return CN_E_BUSY;
    default: return CN_E_PROTOCOL;
    }
}

/* POSTs to path; body from memory (json) or from x->src; extra headers. */
static cn_err_t perform(cn_blobc_t *c, const char *path, const char *json, xfer_t *x,
                        const char *extra_header, int64_t src_len)
{
    memset(&c->err, 0, sizeof c->err);
    CURL *h = c->curl;
    curl_easy_reset(h);
    char url[1024];
    if ((size_t)snprintf(url, sizeof url, "%s%s", c->base, path) >= sizeof url)
        return CN_E_INVALID;
    struct curl_slist *hdrs = NULL;
    if (c->auth)
        hdrs = curl_slist_append(hdrs, c->auth);
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (extra_header)
        hdrs = curl_slist_append(hdrs, extra_header);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    /* Large receive and send buffers: a 16 KiB default costs a third of the
     * loopback throughput of a large fetch in callbacks and syscalls. */
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 1L << 20);
    curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    if (x->src) {
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, x);
        if (src_len >= 0) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)src_len);
        } else {
            hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
        }
        hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
    } else {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json));
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
    if (x->sink_err)
        return x->sink_err;
    if (x->src_failed)
        return CN_E_CLOSED;
    if (cc != CURLE_OK) {
        /* An error answered mid-upload still counts as the answer. */
        if (x->status >= 400 && x->body.len)
            return map_error(c, x->status, &x->body);
        snprintf(c->err.message, sizeof c->err.message, "%s", curl_easy_strerror(cc));
        return CN_E_CLOSED;
    }
    if (x->status != 200)
        return map_error(c, x->status, &x->body);
    return CN_OK;
}

static void xfer_init(xfer_t *x, cn_blobc_t *c, size_t cap)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    x->body_cap = cap;
    cn_side_set_init(&x->hs);
}

static void xfer_fini(xfer_t *x)
{
    hash_settle(x); /* no job reads a buffer freed here */
    cn_side_set_destroy(&x->hs);
    free(x->hbuf);
    free(x->hbuf2);
    cn_buf_free(&x->body);
    free(x->open);
}

/* A call op: params (consumed) → *result (caller decrefs). */
static cn_err_t call(cn_blobc_t *c, const char *op, json_t *params, json_t **result)
{
    *result = NULL;
    char *text = params ? json_dumps(params, JSON_COMPACT) : NULL;
    json_decref(params);
    if (!text)
        return -ENOMEM;
    char path[128];
    snprintf(path, sizeof path, "/_cairn/ops/%s", op);
    xfer_t x;
    xfer_init(&x, c, JSON_BODY_MAX);
    cn_err_t rc = perform(c, path, text, &x, NULL, 0);
    free(text);
    if (rc >= 0) {
        *result = json_loadb((const char *)x.body.data, x.body.len, 0, NULL);
        if (!json_is_object(*result)) {
            json_decref(*result);
            *result = NULL;
            rc = CN_E_PROTOCOL;
        }
    }
    xfer_fini(&x);
    return rc;
}

static json_t *hex_of(const cn_digest_t *d)
{
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(d, hex);
    return json_string(hex);
}

static bool parse_hex(json_t *v, cn_digest_t *out)
{
    return json_is_string(v) && json_string_length(v) == CN_DIGEST_HEX_LEN &&
           cn_digest_parse(json_string_value(v), CN_DIGEST_HEX_LEN, out) >= 0;
}

cn_err_t cn_blobc_stat(cn_blobc_t *c, const char *ns, const cn_digest_t *d, uint64_t *len)
{
    json_t *res = NULL;
    CN_TRY(
        call(c, "blobs/stat", json_pack("{s:s,s:o}", "namespace", ns, "digest", hex_of(d)), &res));
    json_t *v = json_object_get(res, "len");
    cn_err_t rc = json_is_integer(v) && json_integer_value(v) >= 0 ? CN_OK : CN_E_PROTOCOL;
    if (rc == CN_OK)
        *len = (uint64_t)json_integer_value(v);
    json_decref(res);
    return rc;
}

cn_err_t cn_blobc_have(cn_blobc_t *c, const char *ns, const cn_digest_t *d, size_t n,
                       const char *token, bool *present)
{
    if (token && n != 1)
        return CN_E_INVALID;
    for (size_t off = 0; off < n || (n == 0 && off == 0); off += HAVE_BATCH) {
        size_t k = n - off < HAVE_BATCH ? n - off : HAVE_BATCH;
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < k; i++)
            json_array_append_new(arr, hex_of(&d[off + i]));
        json_t *p = json_pack("{s:s,s:o}", "namespace", ns, "digests", arr);
        if (p && token)
            json_object_set_new(p, "token", json_string(token));
        json_t *res = NULL;
        CN_TRY(call(c, "blobs/have", p, &res));
        json_t *pr = json_object_get(res, "present");
        cn_err_t rc = json_is_array(pr) && json_array_size(pr) == k ? CN_OK : CN_E_PROTOCOL;
        for (size_t i = 0; rc == CN_OK && i < k; i++) {
            json_t *b = json_array_get(pr, i);
            if (!json_is_boolean(b))
                rc = CN_E_PROTOCOL;
            else
                present[off + i] = json_is_true(b);
        }
        json_decref(res);
        if (rc < 0)
            return rc;
        if (n == 0)
            break;
    }
    return CN_OK;
}

cn_err_t cn_blobc_delete(cn_blobc_t *c, const char *ns, const cn_digest_t *d, size_t n,
                         size_t *removed)
{
    size_t total = 0;
    for (size_t off = 0; off < n || (n == 0 && off == 0); off += HAVE_BATCH) {
        size_t k = n - off < HAVE_BATCH ? n - off : HAVE_BATCH;
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < k; i++)
            json_array_append_new(arr, hex_of(&d[off + i]));
        json_t *res = NULL;
        CN_TRY(
            call(c, "blobs/delete", json_pack("{s:s,s:o}", "namespace", ns, "digests", arr), &res));
        json_t *v = json_object_get(res, "removed");
        cn_err_t rc = json_is_integer(v) ? CN_OK : CN_E_PROTOCOL;
        total += rc == CN_OK ? (size_t)json_integer_value(v) : 0;
        json_decref(res);
        if (rc < 0)
            return rc;
        if (n == 0)
            break;
    }
    if (removed)
        *removed = total;
    return CN_OK;
}

cn_err_t cn_blobc_list(cn_blobc_t *c, const char *ns, const cn_digest_t *after, size_t max,
                       cn_digest_t *out, size_t *n, bool *more)
{
    *n = 0;
    *more = false;
    json_t *p = json_pack("{s:s,s:I}", "namespace", ns, "limit", (json_int_t)max);
    if (p && after)
        json_object_set_new(p, "after", hex_of(after));
    json_t *res = NULL;
    CN_TRY(call(c, "blobs/list", p, &res));
    json_t *arr = json_object_get(res, "digests");
    cn_err_t rc = json_is_array(arr) && json_array_size(arr) <= max ? CN_OK : CN_E_PROTOCOL;
    for (size_t i = 0; rc == CN_OK && i < json_array_size(arr); i++)
        if (!parse_hex(json_array_get(arr, i), &out[(*n)++]))
            rc = CN_E_PROTOCOL;
    *more = rc == CN_OK && json_object_get(res, "next") != NULL;
    json_decref(res);
    return rc;
}

cn_err_t cn_blobc_put(cn_blobc_t *c, const char *ns, const cn_digest_t *expect, int64_t len,
                      cn_blobc_source_fn src, void *src_ctx, cn_blobc_progress_fn progress,
                      void *progress_ctx, cn_blobc_put_result_t *out)
{
    memset(out, 0, sizeof *out);
    json_t *offer = json_pack("{s:s}", "namespace", ns);
    if (offer && expect)
        json_object_set_new(offer, "digest", hex_of(expect));
    if (offer && len >= 0)
        json_object_set_new(offer, "len", json_integer(len));
    char *text = offer ? json_dumps(offer, JSON_COMPACT) : NULL;
    json_decref(offer);
    if (!text)
        return -ENOMEM;
    size_t hn = strlen(text) + 16;
    char *hdr = malloc(hn);
    if (!hdr) {
        free(text);
        return -ENOMEM;
    }
    snprintf(hdr, hn, "Cairn-Offer: %s", text);
    free(text);
    xfer_t x;
    xfer_init(&x, c, ERR_BODY_MAX);
    x.src = src;
    x.src_ctx = src_ctx;
    x.src_total = len >= 0 ? (uint64_t)len : 0;
    x.progress = progress;
    x.progress_ctx = progress_ctx;
    cn_err_t rc = perform(c, "/_cairn/ops/blobs/put", NULL, &x, hdr, len);
    free(hdr);
    if (rc >= 0) {
        json_t *res = json_loadb((const char *)x.body.data, x.body.len, 0, NULL);
        const char *tok = json_string_value(json_object_get(res, "token"));
        if (!tok || strlen(tok) > CN_BLOBC_TOKEN_MAX ||
            !parse_hex(json_object_get(res, "digest"), &out->digest) ||
            (expect && memcmp(out->digest.b, expect->b, CN_DIGEST_LEN) != 0))
            rc = CN_E_PROTOCOL;
        else
            snprintf(out->token, sizeof out->token, "%s", tok);
        json_decref(res);
    }
    xfer_fini(&x);
    return rc;
}

typedef struct {
    const uint8_t *p;
    size_t n, off;
} membuf_t;

static ssize_t mem_source(void *ctx, void *buf, size_t max)
{
    membuf_t *m = ctx;
    size_t k = m->n - m->off < max ? m->n - m->off : max;
    memcpy(buf, m->p + m->off, k);
    m->off += k;
    return (ssize_t)k;
}

cn_err_t cn_blobc_put_buf(cn_blobc_t *c, const char *ns, const void *p, size_t n,
                          cn_blobc_put_result_t *out)
{
    membuf_t m = { p, n, 0 };
    cn_digest_t d;
    cn_blake3(p, n, &d);
    return cn_blobc_put(c, ns, &d, (int64_t)n, mem_source, &m, NULL, NULL, out);
}

cn_err_t cn_blobc_get(cn_blobc_t *c, const char *ns, const cn_digest_t *d, const uint64_t range[2],
                      cn_blobc_sink_fn sink, void *sink_ctx, cn_blobc_progress_fn progress,
                      void *progress_ctx, cn_blobc_get_info_t *info)
{
    cn_blobc_get_info_t dummy;
    if (!info)
        info = &dummy;
    memset(info, 0, sizeof *info);
    json_t *p = json_pack("{s:s,s:o}", "namespace", ns, "digest", hex_of(d));
    if (p && range)
        json_object_set_new(p, "ranges",
                            json_pack("[[I,I]]", (json_int_t)range[0], (json_int_t)range[1]));
    char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    if (!text)
        return -ENOMEM;
    xfer_t x;
    xfer_init(&x, c, ERR_BODY_MAX);
    x.streaming = true;
    x.sink = sink;
    x.sink_ctx = sink_ctx;
    x.progress = progress;
    x.progress_ctx = progress_ctx;
    x.hbuf = malloc(HASH_BUF);                  /* NULL: hash piece by piece, slower, still right */
    x.hbuf2 = x.hbuf ? malloc(HASH_BUF) : NULL; /* NULL: each full buffer hashed here */
    pthread_once(&g_hash_once, hash_side_make);
    cn_blake3_init(&x.h);
    cn_err_t rc = perform(c, "/_cairn/ops/channels/blobs/sub", text, &x, NULL, 0);
    free(text);
    info->received = x.received;
    json_t *ack = x.open ? json_loads(x.open, 0, NULL) : NULL;
    const char *src = json_string_value(json_object_get(ack, "source"));
    json_t *len = json_object_get(ack, "len");
    info->fanout = src && !strcmp(src, "fanout");
    if (json_is_integer(len)) {
        info->has_len = true;
        info->len = (uint64_t)json_integer_value(len);
    }
    if (rc >= 0 && (!src || (!info->fanout && strcmp(src, "store") != 0)))
        rc = CN_E_PROTOCOL;
    if (rc == CN_E_CLOSED && info->fanout)
        rc = CN_E_DIGEST_MISMATCH; /* a cut tap: the hash check cannot pass */
    if (rc >= 0) {
        cn_digest_t got, want = *d;
        hash_final(&x, &got);
        if (range) {
            json_t *sl = json_object_get(ack, "slice_digests");
            if (!json_is_array(sl) || json_array_size(sl) != 1 ||
                !parse_hex(json_array_get(sl, 0), &want))
                rc = CN_E_PROTOCOL;
        } else if (info->has_len && info->len != x.received) {
            rc = CN_E_DIGEST_MISMATCH;
        }
        if (rc >= 0 && memcmp(got.b, want.b, CN_DIGEST_LEN) != 0)
            rc = CN_E_DIGEST_MISMATCH;
    }
    json_decref(ack);
    xfer_fini(&x);
    return rc;
}
