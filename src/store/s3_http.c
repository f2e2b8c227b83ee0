/* The S3 tier's requests: SigV4 signing over the canonical-request pieces of
 * cairn/sigv4.h, one HTTP exchange through a pooled libcurl handle, and the
 * retry rule (faults — transport errors, timeouts, 5xx, 408, 429 — retried
 * with jittered exponential backoff within the request's deadline, then
 * CN_E_UNAVAILABLE).  Never reports a fault as an answer: only a status the
 * backend sent is one.  The store's operations are backend_s3.c's. */
#include "store/s3_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cairn/sigv4.h"
#include "cairn/util.h"

/* ---- signing ---------------------------------------------------------------- */

cn_err_t cn__s3_authorization(const char *key_id, const char *secret, const char *region,
                              const char *method, const char *path, const char *query,
                              const cn__s3_hdr_t *h, size_t n, const char *payload_hash,
                              const char *amz_date, char *out, size_t cap)
{
    cn_http_kv_t kv[S3_MAX_HDRS + 3];
    char signed_list[512];
    size_t sl = 0;
    if (n > sizeof kv / sizeof kv[0])
        return CN_E_LIMIT;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(h[i].name);
        kv[i] = (cn_http_kv_t){ h[i].name, nl, h[i].value, strlen(h[i].value) };
        if (sl + nl + 2 > sizeof signed_list)
            return CN_E_LIMIT;
        if (i)
            signed_list[sl++] = ';';
        memcpy(signed_list + sl, h[i].name, nl);
        sl += nl;
    }
    signed_list[sl] = '\0';
    cn_buf_t canon = { 0 };
    cn_err_t rc =
        cn_sigv4_canonical_request(&canon, method, path, strlen(path), query,
                                   query ? strlen(query) : 0, kv, n, signed_list, sl, payload_hash);
    if (rc < 0) {
        cn_buf_free(&canon);
        return rc;
    }
    char scope[CN_SIGV4_MAX_SCOPE], sig[65];
    uint8_t key[32];
    snprintf(scope, sizeof scope, "%.8s/%s/s3/aws4_request", amz_date, region);
    cn_sigv4_signing_key_cached((const uint8_t *)secret, strlen(secret), amz_date, region, "s3",
                                key);
    cn_sigv4_sign(key, amz_date, scope, (const char *)canon.data, canon.len, sig);
    cn_buf_free(&canon);
    int w = snprintf(out, cap, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                     key_id, scope, signed_list, sig);
    return w < 0 || (size_t)w >= cap ? CN_E_LIMIT : CN_OK;
}

/* ---- one HTTP exchange ------------------------------------------------------ */

static CURL *handle_get(s3_be_t *be)
{
    CURL *h = NULL;
    pthread_mutex_lock(&be->pool_mu);
    if (be->n_pool)
        h = be->pool[--be->n_pool];
    pthread_mutex_unlock(&be->pool_mu);
    if (h)
        curl_easy_reset(h);
    else
        h = curl_easy_init();
    return h;
}

/* Keeps h (and its connection) for the next request, or frees it. */
static void handle_put(s3_be_t *be, CURL *h)
{
    pthread_mutex_lock(&be->pool_mu);
    if (be->n_pool < S3_POOL) {
        be->pool[be->n_pool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&be->pool_mu);
    if (h)
        curl_easy_cleanup(h);
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    s3_req_t *q = ctx;
    size_t len = size * n, vl;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new answer (after 100, or a redirect) */
        q->etag[0] = q->form[0] = '\0';
        q->last_modified_ms = -1;
        q->length = 0;
        return len;
    }
    const char *colon = memchr(p, ':', len);
    if (!colon)
        return len;
    size_t nl = (size_t)(colon - p);
    const char *v = colon + 1;
    vl = len - nl - 1;
    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
        vl--;
    if (nl == 4 && strncasecmp(p, "etag", 4) == 0 && vl < sizeof q->etag) {
        memcpy(q->etag, v, vl);
        q->etag[vl] = '\0';
    } else if (nl == 21 && strncasecmp(p, "x-amz-meta-cairn-form", 21) == 0 &&
               vl < sizeof q->form) {
        memcpy(q->form, v, vl);
        q->form[vl] = '\0';
    } else if (nl == 13 && strncasecmp(p, "last-modified", 13) == 0 && vl < 64) {
        char tmp[64];
        memcpy(tmp, v, vl);
        tmp[vl] = '\0';
        time_t t = curl_getdate(tmp, NULL);
        q->last_modified_ms = t < 0 ? -1 : (int64_t)t * 1000;
    } else if (nl == 14 && strncasecmp(p, "content-length", 14) == 0) {
        q->length = strtoull(v, NULL, 10);
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    s3_req_t *q = (s3_req_t *)((void **)ctx)[0];
    CURL *h = ((void **)ctx)[1];
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (q->out_fd >= 0 && status / 100 == 2) {
        if (status == 200 && q->resumed) { /* the range was ignored: start over */
            q->resumed = false;
            q->out_done = 0;
            if (q->out_hash)
                cn_blake3_init(q->out_hash);
            if (ftruncate(q->out_fd, 0) < 0) {
                q->io_err = -errno;
                return 0;
            }
        }
        cn_err_t e = cn_pwrite_full(q->out_fd, p, len, q->out_done);
        if (e < 0) {
            q->io_err = e;
            return 0;
        }
        if (q->out_hash)
            cn_blake3_update(q->out_hash, p, len);
        q->out_done += len;
        q->status = status;
        if (q->progress && !q->progress(q->progress_ctx, q)) {
            q->io_err = CN_E_CLOSED;
            return 0;
        }
        return len;
    }
    if (q->body.len + len <= S3_BODY_MAX && cn_buf_append(&q->body, p, len) < 0)
        return 0;
    return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *ctx)
{
    s3_req_t *q = ctx;
    size_t want = size * n;
    if (q->in_mem) {
        size_t left = q->in_mem_len - q->in_sent;
        size_t k = left < want ? left : want;
        memcpy(p, q->in_mem + q->in_sent, k);
        q->in_sent += k;
        return k;
    }
    uint64_t left = q->in_len - q->in_sent;
    size_t k = left < want ? (size_t)left : want;
    if (k == 0)
        return 0;
    ssize_t r;
    do
        r = pread(q->in_fd, p, k, (off_t)(q->in_off + q->in_sent));
    while (r < 0 && errno == EINTR);
    if (r < 0 || (r == 0 && k > 0)) {
        q->io_err = r < 0 ? -errno : CN_E_CORRUPT;
        return CURL_READFUNC_ABORT;
    }
    q->in_sent += (uint64_t)r;
    return (size_t)r;
}

static int hdr_cmp(const void *a, const void *b)
{
    return strcmp(((const cn__s3_hdr_t *)a)->name, ((const cn__s3_hdr_t *)b)->name);
}

/* The URL and the canonical path of key (NULL: the bucket). */
static cn_err_t request_target(s3_be_t *be, const s3_req_t *q, cn_buf_t *url, cn_buf_t *path)
{
    CN_TRY(cn_buf_append_str(path, "/"));
    if (!be->vhost) {
        CN_TRY(cn_sigv4_uri_encode(path, be->bucket, strlen(be->bucket), false));
        if (q->key)
            CN_TRY(cn_buf_append_str(path, "/"));
    }
    if (q->key)
        CN_TRY(cn_sigv4_uri_encode(path, q->key, strlen(q->key), true));
    CN_TRY(cn_buf_append_str(url, be->base_url));
    CN_TRY(cn_buf_append(url, path->data, path->len));
    if (q->query && *q->query)
        CN_TRY(cn_buf_printf(url, "?%s", q->query));
    CN_TRY(cn_buf_put_u8(url, 0));
    return cn_buf_put_u8(path, 0);
}

/* The signed headers of this attempt, as curl's list. */
static cn_err_t attempt_headers(s3_be_t *be, s3_req_t *q, const char *payload_hash,
                                const char *path, struct curl_slist **out)
{
    char amz_date[17], range[48], authz[1024];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
    cn__s3_hdr_t h[S3_MAX_HDRS + 3];
    size_t n = 0;
    memcpy(h, q->hdrs, q->n_hdrs * sizeof h[0]);
    n = q->n_hdrs;
    h[n++] = (cn__s3_hdr_t){ "host", be->host };
    h[n++] = (cn__s3_hdr_t){ "x-amz-content-sha256", payload_hash };
    h[n++] = (cn__s3_hdr_t){ "x-amz-date", amz_date };
    q->resumed = q->out_fd >= 0 && q->out_done > 0;
    if (q->resumed) {
        snprintf(range, sizeof range, "bytes=%llu-", (unsigned long long)q->out_done);
        h[n++] = (cn__s3_hdr_t){ "range", range };
    }
    qsort(h, n, sizeof h[0], hdr_cmp);
    CN_TRY(cn__s3_authorization(be->key_id, be->secret, be->region, q->method, path, q->query, h, n,
                                payload_hash, amz_date, authz, sizeof authz));
    struct curl_slist *l = NULL;
    char line[1200];
    for (size_t i = 0; i < n; i++) {
        snprintf(line, sizeof line, "%s: %s", h[i].name, h[i].value);
        l = curl_slist_append(l, line);
    }
    snprintf(line, sizeof line, "Authorization: %s", authz);
    l = curl_slist_append(l, line);
    l = curl_slist_append(l, "Expect:");
    if (!l)
        return -ENOMEM;
    *out = l;
    return CN_OK;
}

/* An attempt's time bounds, with left_ms of the request's deadline left.
 * A stalled transfer is a fault; a slow large one is not.  A backend that
 * holds the connection and answers nothing (hung) must cost the deadline,
 * not more: a small request (q->small) ends whole within the stall time
 * or what is left, so a retry goes on a new connection; any other is cut
 * when no byte moves for that long (libcurl averages its speed over about five
 * seconds, so a stall after a burst is seen that much later). */
static void attempt_bounds(CURL *h, const s3_req_t *q, int64_t left_ms)
{
    int64_t left = left_ms > 1000 ? left_ms : 1000;
    int64_t stall = q->once                              ? 3000
                    : left < S3_LOW_SPEED_SECONDS * 1000 ? left
                                                         : S3_LOW_SPEED_SECONDS * 1000;
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(left < S3_CONNECT_TIMEOUT_MS ? left : S3_CONNECT_TIMEOUT_MS));
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)((stall + 999) / 1000));
    if (q->small || q->once)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)stall);
}

/* One attempt.  CN_OK with q->status, or a transport fault (CN_E_UNAVAILABLE
 * to retry), or a local error (io_err). */
static cn_err_t attempt(s3_be_t *be, s3_req_t *q, const char *payload_hash, int64_t left_ms)
{
    cn_buf_t url = { 0 }, path = { 0 };
    struct curl_slist *hl = NULL;
    CURL *h = handle_get(be);
    cn_err_t rc = h ? request_target(be, q, &url, &path) : -ENOMEM;
    if (rc == CN_OK)
        rc = attempt_headers(be, q, payload_hash, (const char *)path.data, &hl);
    if (rc < 0)
        goto out;
    void *wctx[2] = { q, h };
    q->in_sent = 0;
    q->status = 0;
    q->io_err = CN_OK;
    cn_buf_reset(&q->body);
    curl_easy_setopt(h, CURLOPT_URL, (const char *)url.data);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, q);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, (void *)wctx);
    if (q->out_fd >= 0)
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, S3_FILL_RECV_BUF);
    attempt_bounds(h, q, left_ms);
    if (!strcmp(q->method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (q->has_body || !strcmp(q->method, "PUT") || !strcmp(q->method, "POST")) {
        /* Also without a body: S3 wants Content-Length: 0 on a PUT or POST. */
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, q);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)(q->in_mem ? q->in_mem_len : q->in_len));
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    } else if (strcmp(q->method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    }
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &q->status);
    if (q->io_err < 0)
        rc = q->io_err;
    else if (cc != CURLE_OK)
        rc = CN_E_UNAVAILABLE;
    if (cc != CURLE_OK && q->io_err == CN_OK)
        cn_debug("store", "s3 %s %s: %s", q->method, q->key ? q->key : "(bucket)",
                 curl_easy_strerror(cc));
out:
    curl_slist_free_all(hl);
    cn_buf_free(&url);
    cn_buf_free(&path);
    if (h)
        handle_put(be, h);
    return rc;
}

/* SHA-256 (hex) of the request body, signed as x-amz-content-sha256. */
static cn_err_t payload_sha256(const s3_req_t *q, char hex[65])
{
    uint8_t d[32];
    if (!q->has_body) {
        memcpy(hex, EMPTY_SHA256, 65);
        return CN_OK;
    }
    if (q->in_mem) {
        cn_sha256(q->in_mem, q->in_mem_len, d);
        cn_hex_encode(d, 32, hex);
        return CN_OK;
    }
    cn_sha256_t *h;
    CN_TRY(cn_sha256_new(&h));
    uint8_t *buf = malloc(CN__STORE_IO_CHUNK);
    cn_err_t rc = buf ? CN_OK : -ENOMEM;
    for (uint64_t off = 0; rc == CN_OK && off < q->in_len;) {
        size_t want =
            q->in_len - off < CN__STORE_IO_CHUNK ? (size_t)(q->in_len - off) : CN__STORE_IO_CHUNK;
        ssize_t r = pread(q->in_fd, buf, want, (off_t)(q->in_off + off));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            rc = r < 0 ? -errno : CN_E_CORRUPT;
        else
            cn_sha256_update(h, buf, (size_t)r), off += (uint64_t)r;
    }
    free(buf);
    if (rc < 0) {
        cn_sha256_free(h);
        return rc;
    }
    cn_sha256_final(h, d);
    cn_hex_encode(d, 32, hex);
    return CN_OK;
}

/* A backend's answer that is a fault, retried within the request's deadline.
 * It judges HTTP statuses, not cn_err_t, so it shares no list with
 * cn_meta_run's (meta/run.c) or the lifecycle worker's act_transient
 * (objects/lifecycle_run.c), which sees this rule's exhaustion as
 * CN_E_UNAVAILABLE. */
static bool retryable(long status)
{
    return status >= 500 || status == 429 || status == 408;
}

/* The request with retries: CN_OK with q->status (any answer that is not a
 * fault), CN_E_UNAVAILABLE once the deadline passed, or a local error. */
cn_err_t cn__s3_call(s3_be_t *be, s3_req_t *q)
{
    char hash[65];
    CN_TRY(payload_sha256(q, hash));
    int64_t start = cn_mono_ns() / 1000000, backoff = 100;
    for (int n = 0;; n++) {
        int64_t left = be->deadline_ms - (cn_mono_ns() / 1000000 - start);
        cn_err_t rc = attempt(be, q, hash, left);
        if (rc < 0 && rc != CN_E_UNAVAILABLE)
            return rc;
        if (rc == CN_OK && !retryable(q->status))
            return CN_OK;
        if (q->once)
            return CN_E_UNAVAILABLE;
        /* Jitter: a random point of [backoff/2, backoff). */
        uint16_t r = 0;
        (void)cn_random_bytes(&r, sizeof r);
        int64_t sleep_ms = backoff / 2 + (backoff / 2) * r / 65536;
        left = be->deadline_ms - (cn_mono_ns() / 1000000 - start);
        if (left <= sleep_ms) {
            cn_warn("store", "s3 %s %s: backend unavailable after %d attempt(s) (last: %s %ld)",
                    q->method, q->key ? q->key : "(bucket)", n + 1,
                    rc == CN_OK ? "status" : "transport fault", q->status);
            return CN_E_UNAVAILABLE;
        }
        cn_sleep_ms(sleep_ms);
        backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
    }
}

void cn__s3_req_init(s3_req_t *q, const char *method, const char *key)
{
    memset(q, 0, sizeof *q);
    q->method = method;
    q->key = key;
    q->in_fd = -1;
    q->out_fd = -1;
    q->last_modified_ms = -1;
}

void cn__s3_req_hdr(s3_req_t *q, const char *name, const char *value)
{
    if (q->n_hdrs < S3_MAX_HDRS)
        q->hdrs[q->n_hdrs++] = (cn__s3_hdr_t){ name, value };
}

/* An answer that is neither success nor a documented outcome. */
cn_err_t cn__s3_unexpected(const s3_req_t *q)
{
    cn_warn("store", "s3 %s %s: unexpected status %ld: %.*s", q->method,
            q->key ? q->key : "(bucket)", q->status, (int)(q->body.len < 300 ? q->body.len : 300),
            q->body.data ? (const char *)q->body.data : "");
    return q->status == 403 || q->status == 401 ? CN_E_AUTH : CN_E_UNAVAILABLE;
}
