/* A test server for the HTTP framework (not cairnd): fixed credentials and a
 * few handlers that exercise the framework's paths.
 *
 *   PUT/POST /echo[?pause=1]  streams the body into SHA-256 and answers JSON
 *                             with its length, hash, credential, checksum
 *   GET      /whoami          the credential, client IP and decoded query
 *   GET/HEAD /file/<name>     a file of --dir by sendfile (Range: bytes=a-b)
 *   GET      /stream?n=N      N bytes from a producer, chunked
 *   PUT      /fail?class=C[&at=request]   on_body (or on_request) fails with
 *                             class C (exists, timeout, pinned); the route's
 *                             err_of is a table of its own (an adapter's)
 *   PUT      /failgen?...     the same without err_of: the framework's table
 *
 * SigV4 key AKIDTEST / secret "test-secret/0123+abc"; bearer tok1:sekrit.
 * Options: --listen ADDR --dir DIR --clock-offset-s N --trust-proxy
 *          --tls-cert F --tls-key F --max-body N --region R --max-per-ip N
 */
#include "cairn/http.h"
#include "cairn/crypto.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KEY "AKIDTEST"
#define SECRET "test-secret/0123+abc"

static const char *g_dir = ".";
static int64_t g_offset_ms;

static int lookup(void *ctx, const char *key, uint8_t *secret, size_t cap, size_t *len,
                  uint8_t tag[CN_SIGV4_TAG_LEN])
{
    (void)tag; /* left zero: the verifier fingerprints the secret */
    (void)ctx;
    if (strcmp(key, KEY) != 0)
        return CN_E_NOT_FOUND;
    *len = strlen(SECRET);
    if (*len > cap)
        return CN_E_INVALID;
    memcpy(secret, SECRET, *len);
    return 0;
}

static int bearer(void *ctx, const char *id, const char *secret)
{
    (void)ctx;
    if (strcmp(id, "tok1") != 0)
        return CN_E_NOT_FOUND;
    return cn_ct_equal(secret, "sekrit", 7) && strlen(secret) == 6 ? 0 : CN_E_AUTH;
}

static int64_t clock_ms(void *ctx)
{
    (void)ctx;
    return cn_wall_ms() + g_offset_ms;
}

static const char *auth_name(cn_http_auth_kind_t k)
{
    switch (k) {
    case CN_HTTP_AUTH_SIGV4_HEADER: return "sigv4-header";
    case CN_HTTP_AUTH_SIGV4_QUERY: return "sigv4-query";
    case CN_HTTP_AUTH_BEARER: return "bearer";
    default: return "anonymous";
    }
}

static void json_str(cn_buf_t *b, const char *s)
{
    if (!s) {
        cn_buf_append_str(b, "null");
        return;
    }
    cn_buf_put_u8(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            cn_buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            cn_buf_printf(b, "\\u%04x", c);
        else
            cn_buf_put_u8(b, c);
    }
    cn_buf_put_u8(b, '"');
}

/* ---- /echo ---------------------------------------------------------------- */

typedef struct {
    cn_sha256_t *sha;
    uint64_t n;
    bool pause;
    unsigned pauses;
} echo_t;

static int echo_request(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    echo_t *e = calloc(1, sizeof *e);
    if (!e || cn_sha256_new(&e->sha)) {
        free(e);
        return -ENOMEM;
    }
    e->pause = cn_http_req_has_query(r, "pause");
    cn_http_req_set_data(r, e);
    return 0;
}

static void *resume_later(void *arg)
{
    struct timespec ts = { 0, 2 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    cn_http_req_resume(arg);
    return NULL;
}

static int echo_body(cn_http_req_t *r, const uint8_t *p, size_t n, void *ctx)
{
    (void)ctx;
    echo_t *e = cn_http_req_data(r);
    cn_sha256_update(e->sha, p, n);
    e->n += n;
    if (e->pause && e->pauses < 8) {
        pthread_t t;
        e->pauses++;
        if (pthread_create(&t, NULL, resume_later, r) == 0) {
            pthread_detach(t);
            return CN_HTTP_PAUSE;
        }
    }
    return 0;
}

static void echo_end(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    echo_t *e = cn_http_req_data(r);
    if (cn_http_req_body_error(r) != CN_S3E_NONE)
        return; /* nothing staged to discard; the framework answers */
    uint8_t h[32];
    char hex[65];
    cn_sha256_final(e->sha, h);
    e->sha = NULL;
    cn_hex_encode(h, 32, hex);
    const char *ck = NULL;
    cn_http_cksum_alg_t alg = cn_http_req_checksum(r, &ck);
    cn_buf_t b = { 0 };
    cn_buf_printf(&b, "{\"len\":%" PRIu64 ",\"sha256\":\"%s\",\"auth\":\"%s\",\"key\":", e->n, hex,
                  auth_name(cn_http_req_auth(r)));
    json_str(&b, cn_http_req_access_key(r));
    cn_buf_printf(&b, ",\"payload_mode\":%d,\"pauses\":%u,\"checksum_alg\":",
                  (int)cn_http_req_payload_mode(r), e->pauses);
    json_str(&b, cn_http_cksum_name(alg));
    cn_buf_append_str(&b, ",\"checksum\":");
    json_str(&b, ck);
    cn_buf_append_str(&b, ",\"content_encoding\":");
    json_str(&b, cn_http_req_content_encoding(r));
    cn_buf_printf(&b, ",\"declared\":%" PRId64 "}", cn_http_req_payload_length(r));
    cn_http_respond_buf(r, 200, "application/json", &b);
    cn_buf_free(&b);
}

static void echo_cleanup(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    echo_t *e = cn_http_req_data(r);
    if (e) {
        cn_sha256_free(e->sha);
        free(e);
    }
}

/* ---- /whoami ---------------------------------------------------------------- */

static int whoami(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    cn_buf_t b = { 0 };
    cn_buf_printf(&b, "{\"auth\":\"%s\",\"key\":", auth_name(cn_http_req_auth(r)));
    json_str(&b, cn_http_req_access_key(r));
    cn_buf_append_str(&b, ",\"client_ip\":");
    json_str(&b, cn_http_req_client_ip(r));
    cn_buf_append_str(&b, ",\"peer\":");
    json_str(&b, cn_http_req_peer(r));
    cn_buf_append_str(&b, ",\"path\":");
    json_str(&b, cn_http_req_path(r, NULL));
    cn_buf_append_str(&b, ",\"query\":{");
    for (size_t i = 0; i < cn_http_req_query_count(r); i++) {
        const char *n, *v;
        cn_http_req_query_at(r, i, &n, &v);
        if (i)
            cn_buf_put_u8(&b, ',');
        json_str(&b, n);
        cn_buf_put_u8(&b, ':');
        json_str(&b, v);
    }
    cn_buf_append_str(&b, "}}");
    cn_http_resp_header(r, "x-test", "whoami");
    int rc = cn_http_respond_buf(r, 200, "application/json", &b);
    cn_buf_free(&b);
    return rc;
}

/* ---- /file/<name> ---------------------------------------------------------- */

static int file_get(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    const char *name = cn_http_req_path(r, NULL) + 6;
    if (!*name || strchr(name, '/') || strcmp(name, "..") == 0)
        return cn_http_respond_s3_error(r, CN_S3E_NO_SUCH_KEY, NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return cn_http_respond_s3_error(r, CN_S3E_NO_SUCH_KEY, NULL);
    }
    uint64_t size = (uint64_t)st.st_size, off = 0, len = size;
    int status = 200;
    const char *range = cn_http_req_header(r, "Range");
    unsigned long long a, b;
    if (range && sscanf(range, "bytes=%llu-%llu", &a, &b) == 2) {
        if (a >= size || b < a) {
            close(fd);
            return cn_http_respond_s3_error(r, CN_S3E_INVALID_RANGE, NULL);
        }
        if (b >= size)
            b = size - 1;
        off = a;
        len = b - a + 1;
        status = 206;
        char cr[96];
        snprintf(cr, sizeof cr, "bytes %llu-%llu/%" PRIu64, a, b, size);
        cn_http_resp_header(r, "Content-Range", cr);
    }
    cn_http_resp_header(r, "Accept-Ranges", "bytes");
    if (cn_http_req_method_bit(r) == CN_HTTP_HEAD) {
        close(fd);
        return cn_http_respond_empty(r, status, len);
    }
    return cn_http_respond_fd(r, status, "application/octet-stream", fd, off, len);
}

/* ---- /stream ------------------------------------------------------------------ */

typedef struct {
    uint64_t n;
} stream_t;

static ssize_t stream_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    stream_t *s = ctx;
    if (pos >= s->n)
        return 0;
    size_t take = s->n - pos < max ? (size_t)(s->n - pos) : max;
    for (size_t i = 0; i < take; i++)
        buf[i] = (char)('a' + (pos + i) % 26);
    return (ssize_t)take;
}

static int stream_get(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    const char *n = cn_http_req_query(r, "n");
    stream_t *s = malloc(sizeof *s);
    if (!s)
        return -ENOMEM;
    s->n = n ? strtoull(n, NULL, 10) : 1000;
    return cn_http_respond_stream(r, 200, "text/plain", CN_HTTP_LEN_UNKNOWN, stream_read, free, s);
}

/* ---- /fail, /failgen ------------------------------------------------------------ */

/* The class a /fail request names (query class). */
static cn_err_t fail_class(const cn_http_req_t *r)
{
    const char *c = cn_http_req_query(r, "class");
    if (c && strcmp(c, "exists") == 0)
        return CN_E_EXISTS;
    if (c && strcmp(c, "timeout") == 0)
        return CN_E_TIMEOUT;
    if (c && strcmp(c, "pinned") == 0)
        return CN_E_PINNED;
    return -EIO;
}

static int fail_request(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    const char *at = cn_http_req_query(r, "at");
    return at && strcmp(at, "request") == 0 ? fail_class(r) : 0;
}

static int fail_body(cn_http_req_t *r, const uint8_t *p, size_t n, void *ctx)
{
    (void)p, (void)n, (void)ctx;
    return fail_class(r);
}

static void fail_end(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    if (cn_http_req_body_error(r) == CN_S3E_NONE)
        cn_http_respond(r, 200, "text/plain", "not failed", 10);
}

/* An adapter's own table, which differs from the framework's on purpose;
 * CN_E_PINNED it answers itself, in a vocabulary of its own. */
static cn_s3_err_t fail_err_of(cn_http_req_t *r, cn_err_t rc, void *ctx)
{
    (void)ctx;
    switch (rc) {
    case CN_E_EXISTS: return CN_S3E_BUCKET_ALREADY_EXISTS;
    case CN_E_TIMEOUT: return CN_S3E_SERVICE_UNAVAILABLE;
    case CN_E_PINNED:
        cn_http_respond(r, 423, "application/json", "{\"own\":true}", 12);
        return CN_S3E_NONE;
    default: return CN_S3E_INTERNAL_ERROR;
    }
}

int main(int argc, char **argv)
{
    cn_http_config_t cfg;
    cn_http_config_default(&cfg);
    cfg.sigv4_lookup = lookup;
    cfg.bearer_check = bearer;
    cfg.clock_ms = clock_ms;
    cfg.threads = 4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--trust-proxy") == 0) {
            cfg.trust_proxy_headers = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "usage: %s [--listen ADDR] [--dir DIR] ...\n", argv[0]);
            return 2;
        }
        i++;
        if (strcmp(a, "--listen") == 0)
            cfg.listen = v;
        else if (strcmp(a, "--dir") == 0)
            g_dir = v;
        else if (strcmp(a, "--clock-offset-s") == 0)
            g_offset_ms = strtoll(v, NULL, 10) * 1000;
        else if (strcmp(a, "--tls-cert") == 0)
            cfg.tls_cert_file = v;
        else if (strcmp(a, "--tls-key") == 0)
            cfg.tls_key_file = v;
        else if (strcmp(a, "--max-body") == 0)
            cfg.max_body = strtoull(v, NULL, 10);
        else if (strcmp(a, "--region") == 0)
            cfg.region = v;
        else if (strcmp(a, "--max-per-ip") == 0)
            cfg.max_per_ip = (unsigned)atoi(v);
        else if (strcmp(a, "--idle-timeout-s") == 0)
            cfg.idle_timeout_s = (unsigned)atoi(v);
        else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    if (getenv("JAY_TRUST_PROXY_HEADERS") && strcmp(getenv("JAY_TRUST_PROXY_HEADERS"), "1") == 0)
        cfg.trust_proxy_headers = true;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    cn_http_server_t *s;
    if (cn_http_server_new(&cfg, &s) != 0)
        return 1;
    cn_http_route_t echo = { .name = "echo",
                             .methods = CN_HTTP_PUT | CN_HTTP_POST,
                             .prefix = "/echo",
                             .on_request = echo_request,
                             .on_body = echo_body,
                             .on_end = echo_end,
                             .on_cleanup = echo_cleanup };
    cn_http_route_t who = { .name = "whoami",
                            .methods = CN_HTTP_GET | CN_HTTP_HEAD,
                            .prefix = "/whoami",
                            .on_request = whoami };
    cn_http_route_t file = { .name = "file",
                             .methods = CN_HTTP_GET | CN_HTTP_HEAD,
                             .prefix = "/file/",
                             .on_request = file_get };
    cn_http_route_t stream = {
        .name = "stream", .methods = CN_HTTP_GET, .prefix = "/stream", .on_request = stream_get
    };
    cn_http_route_t fail = { .name = "fail",
                             .methods = CN_HTTP_PUT,
                             .prefix = "/fail",
                             .flags = CN_HTTP_ROUTE_EXACT,
                             .on_request = fail_request,
                             .on_body = fail_body,
                             .on_end = fail_end,
                             .err_of = fail_err_of };
    cn_http_route_t failgen = fail; /* the same, answered by the framework's table */
    failgen.name = "failgen";
    failgen.prefix = "/failgen";
    failgen.err_of = NULL;
    if (cn_http_server_route(s, &echo) || cn_http_server_route(s, &who) ||
        cn_http_server_route(s, &file) || cn_http_server_route(s, &stream) ||
        cn_http_server_route(s, &fail) || cn_http_server_route(s, &failgen) ||
        cn_http_server_start(s) != 0) {
        cn_http_server_free(s);
        return 1;
    }
    int sig;
    sigwait(&set, &sig);
    cn_http_server_free(s);
    return 0;
}
