/* The HTTP/1.1 server on libmicrohttpd (include/cairn/http.h).
 *
 * libmicrohttpd owns sockets, keep-alive, Transfer-Encoding: chunked,
 * Expect: 100-continue, timeouts and the connection limits; it runs a pool of
 * epoll threads.  This file owns the request lifecycle on top of it:
 *
 *   URI log callback   allocate the request, keep the raw URI (the SigV4
 *                      canonical URI is built from the bytes as received)
 *   first access call  route, decide the credential, set up body decoding;
 *                      the handler's on_request answers now or asks for the body
 *   body calls         aws-chunked decoding, payload hash, checksum, length
 *                      cap, then on_body; an error switches to draining
 *   final call         verify what can only be verified at the end, on_end,
 *                      queue the response
 *   completed          on_cleanup, metrics, free
 *
 * A response can be queued by libmicrohttpd only on the first or the final
 * call, so an error found mid-body is answered after the rest of the body is
 * drained (bounded by CN__DRAIN_MAX; past that the connection is closed).
 */
#include "http_int.h"
#include "cairn/crypto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define CN__MOD "http"

void cn_http_config_default(cn_http_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->listen = "127.0.0.1:0";
    c->log_name = "http";
}

static int64_t now_ms(const cn_http_server_t *s)
{
    return s->cfg.clock_ms ? s->cfg.clock_ms(s->cfg.clock_ctx) : cn_wall_ms();
}

/* ---- address -------------------------------------------------------------- */

static cn_err_t parse_listen(cn_http_server_t *s, const char *spec)
{
    char host[128];
    const char *port;
    if (spec[0] == '[') {
        const char *end = strchr(spec, ']');
        if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= sizeof host)
            return CN_E_INVALID;
        memcpy(host, spec + 1, (size_t)(end - spec - 1));
        host[end - spec - 1] = 0;
        port = end + 2;
    } else {
        const char *colon = strrchr(spec, ':');
        if (!colon || (size_t)(colon - spec) >= sizeof host)
            return CN_E_INVALID;
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = 0;
        port = colon + 1;
    }
    if (!*port)
        return CN_E_INVALID;
    struct addrinfo hints = { 0 }, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0 || !res)
        return CN_E_INVALID;
    memcpy(&s->addr, res->ai_addr, res->ai_addrlen);
    s->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    if (host[0])
        snprintf(s->host, sizeof s->host, s->addr.ss_family == AF_INET6 ? "[%s]" : "%s", host);
    else
        snprintf(s->host, sizeof s->host, "0.0.0.0");
    return CN_OK;
}

static char *server_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static char *slurp(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    cn_buf_t b = { 0 };
    char tmp[4096];
    long long n;
    while ((n = cn_read_full(fd, tmp, sizeof tmp)) > 0) {
        if (cn_buf_append(&b, tmp, (size_t)n) || b.len > (1u << 20)) {
            n = -1;
            break;
        }
        if (n < (long long)sizeof tmp)
            break;
    }
    close(fd);
    if (n < 0 || cn_buf_put_u8(&b, 0)) {
        cn_buf_free(&b);
        return NULL;
    }
    return (char *)b.data;
}

cn_err_t cn_http_server_new(const cn_http_config_t *cfg, cn_http_server_t **out)
{
    *out = NULL;
    cn_http_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->cfg = *cfg;
    s->listen = server_dup(cfg->listen ? cfg->listen : "127.0.0.1:0");
    s->log_name = server_dup(cfg->log_name ? cfg->log_name : "http");
    s->region = server_dup(cfg->region);
    s->cfg.listen = s->listen;
    s->cfg.log_name = s->log_name;
    s->cfg.region = s->region;
    s->cfg.tls_cert_file = s->cfg.tls_key_file = NULL;
    if (!s->listen || !s->log_name || (cfg->region && !s->region)) {
        cn_http_server_free(s);
        return -ENOMEM;
    }
    if (parse_listen(s, s->listen) != CN_OK) {
        cn_error(CN__MOD, "bad listen address '%s'", s->listen);
        cn_http_server_free(s);
        return CN_E_INVALID;
    }
    if (cfg->tls_cert_file || cfg->tls_key_file) {
        if (!cfg->tls_cert_file || !cfg->tls_key_file ||
            !(s->cert_pem = slurp(cfg->tls_cert_file)) ||
            !(s->key_pem = slurp(cfg->tls_key_file))) {
            cn_error(CN__MOD, "cannot read the TLS certificate and key");
            cn_http_server_free(s);
            return CN_E_INVALID;
        }
    }
    if (!s->cfg.threads)
        s->cfg.threads = 8;
    if (!s->cfg.max_connections)
        s->cfg.max_connections = 1024;
    if (!s->cfg.idle_timeout_s)
        s->cfg.idle_timeout_s = 60;
    /* libmicrohttpd zeroes the whole pool between two requests of a
     * connection, so its size is paid on every request: 32 KiB holds the
     * request headers S3 allows (8 KiB) with room for the read buffer. */
    if (!s->cfg.conn_memory)
        s->cfg.conn_memory = 32 * 1024;
    if (!s->cfg.max_body)
        s->cfg.max_body = 5ull << 30;
    if (!s->cfg.max_skew_ms)
        s->cfg.max_skew_ms = CN_SIGV4_MAX_SKEW_MS;
    cn__metrics_register_builtin(s);
    *out = s;
    return CN_OK;
}

cn_err_t cn_http_server_route(cn_http_server_t *s, const cn_http_route_t *r)
{
    if (s->started || !r->on_request)
        return CN_E_INVALID;
    if (s->n_routes >= CN__MAX_ROUTES)
        return CN_E_LIMIT;
    size_t i = s->n_routes;
    s->routes[i] = *r;
    s->route_prefix[i] = strdup(r->prefix ? r->prefix : "/");
    s->route_name[i] = strdup(r->name ? r->name : "other");
    if (!s->route_prefix[i] || !s->route_name[i]) {
        free(s->route_prefix[i]);
        free(s->route_name[i]);
        return -ENOMEM;
    }
    s->routes[i].prefix = s->route_prefix[i];
    s->routes[i].name = s->route_name[i];
    s->n_routes++;
    return CN_OK;
}

cn_err_t cn_http_server_metrics_source(cn_http_server_t *s, void (*fn)(cn_buf_t *, void *),
                                       void *ctx)
{
    if (s->n_metric_src >= CN__MAX_METRIC_SOURCES)
        return CN_E_LIMIT;
    s->metric_src[s->n_metric_src].fn = fn;
    s->metric_src[s->n_metric_src].ctx = ctx;
    s->n_metric_src++;
    return CN_OK;
}

/* ---- request lifecycle ---------------------------------------------------- */

static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    cn_http_server_t *s = cls;
    cn_http_req_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->srv = s;
    r->conn = c;
    r->route = -1;
    r->uri = strdup(uri ? uri : "/");
    r->start_ns = cn_mono_ns();
    r->content_length = -1;
    r->payload_length = -1;
    return r;
}

static unsigned method_bit(const char *m)
{
    static const struct {
        const char *n;
        unsigned bit;
    } t[] = {
        { "GET", CN_HTTP_GET },     { "HEAD", CN_HTTP_HEAD },     { "PUT", CN_HTTP_PUT },
        { "POST", CN_HTTP_POST },   { "DELETE", CN_HTTP_DELETE }, { "OPTIONS", CN_HTTP_OPTIONS },
        { "PATCH", CN_HTTP_PATCH },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(m, t[i].n) == 0)
            return t[i].bit;
    return 0;
}

static int route_for(cn_http_server_t *s, cn_http_req_t *r)
{
    const char *path = (const char *)r->path.data;
    for (size_t i = 0; i < s->n_routes; i++) {
        const cn_http_route_t *rt = &s->routes[i];
        if (!(rt->methods & r->method_bit))
            continue;
        size_t pl = strlen(rt->prefix);
        if (strncmp(path, rt->prefix, pl) != 0)
            continue;
        if ((rt->flags & CN_HTTP_ROUTE_EXACT) && path[pl] != 0)
            continue;
        if (rt->match && !rt->match(r, rt->ctx))
            continue;
        return (int)i;
    }
    return -1;
}

typedef struct {
    cn_http_kv_t *kv;
    size_t n, cap;
} cn__hdr_list_t;

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    cn__hdr_list_t *l = cls;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        cn_http_kv_t *kv = realloc(l->kv, cap * sizeof *kv);
        if (!kv)
            return MHD_NO;
        l->kv = kv;
        l->cap = cap;
    }
    cn_http_kv_t *e = &l->kv[l->n++];
    e->name = key;
    e->name_len = strlen(key);
    e->value = value ? value : "";
    e->value_len = strlen(e->value);
    return MHD_YES;
}

/* The payload mode of a request without a SigV4 credential. */
static cn_s3_err_t payload_unsigned(cn_http_req_t *r)
{
    const char *v = cn_http_req_header(r, "x-amz-content-sha256");
    r->payload = r->has_body ? CN_SIGV4_PAYLOAD_UNSIGNED : CN_SIGV4_PAYLOAD_EMPTY;
    if (!v || strcmp(v, "UNSIGNED-PAYLOAD") == 0)
        return CN_S3E_NONE;
    if (strcmp(v, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") == 0) {
        r->payload = CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER;
        return CN_S3E_NONE;
    }
    if (strlen(v) == 64 && cn_hex_decode(v, 64, r->sig.payload_hash, 32) == CN_OK) {
        r->payload = CN_SIGV4_PAYLOAD_HASH;
        return CN_S3E_NONE;
    }
    if (strncmp(v, "STREAMING-", 10) == 0)
        return CN_S3E_ACCESS_DENIED; /* a signed stream needs a seed signature */
    return CN_S3E_INVALID_ARGUMENT;
}

static void decide_auth(cn_http_req_t *r)
{
    cn_http_server_t *s = r->srv;
    const char *authz = cn_http_req_header(r, "Authorization");
    r->auth_kind = CN_HTTP_AUTH_ANONYMOUS;
    if (r->method_bit == CN_HTTP_OPTIONS) {
        /* A CORS preflight never carries a credential: a presigned URL's
         * query signs the request that follows it, not the OPTIONS. */
        r->auth_err = payload_unsigned(r);
        return;
    }
    if (authz && strncasecmp(authz, "Bearer ", 7) == 0) {
        const char *tok = authz + 7;
        while (*tok == ' ')
            tok++;
        const char *colon = strchr(tok, ':');
        char id[CN_SIGV4_MAX_KEY];
        r->auth_kind = CN_HTTP_AUTH_BEARER;
        if (!colon || colon == tok || (size_t)(colon - tok) >= sizeof id || !s->cfg.bearer_check) {
            r->auth_err = CN_S3E_ACCESS_DENIED;
            snprintf(r->auth_detail, sizeof r->auth_detail, "malformed bearer token");
            return;
        }
        memcpy(id, tok, (size_t)(colon - tok));
        id[colon - tok] = 0;
        int rc = s->cfg.bearer_check(s->cfg.bearer_ctx, id, colon + 1);
        if (rc != 0) {
            r->auth_err = rc == CN_E_NOT_FOUND                     ? CN_S3E_INVALID_ACCESS_KEY_ID
                          : (rc == CN_E_AUTH || rc == CN_E_DENIED) ? CN_S3E_ACCESS_DENIED
                                                                   : CN_S3E_INTERNAL_ERROR;
            snprintf(r->auth_detail, sizeof r->auth_detail, "the bearer token was refused");
            return;
        }
        snprintf(r->access_key, sizeof r->access_key, "%s", id);
        r->auth_err = payload_unsigned(r);
        return;
    }
    if (authz && strncmp(authz, "AWS ", 4) == 0) {
        r->auth_kind = CN_HTTP_AUTH_SIGV4_HEADER;
        r->auth_err = CN_S3E_INVALID_REQUEST;
        snprintf(r->auth_detail, sizeof r->auth_detail,
                 "The authorization mechanism you have provided is not supported. "
                 "Please use AWS4-HMAC-SHA256.");
        return;
    }
    cn__hdr_list_t hl = { 0 };
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect, &hl);
    cn_sigv4_input_t in = {
        .method = r->method,
        .path = r->raw_path,
        .path_len = strlen(r->raw_path),
        .query = r->raw_query,
        .query_len = strlen(r->raw_query),
        .headers = hl.kv,
        .n_headers = hl.n,
        .has_body = r->has_body,
        .now_ms = now_ms(s),
        .service = "s3",
        .region = s->cfg.region,
        .max_skew_ms = s->cfg.max_skew_ms,
    };
    cn_err_t err = cn_sigv4_verify(&in, s->cfg.sigv4_lookup, s->cfg.sigv4_ctx, &r->sig);
    free(hl.kv);
    if (err == CN_E_NOT_FOUND) {
        if (authz) {
            r->auth_kind = CN_HTTP_AUTH_SIGV4_HEADER;
            r->auth_err = CN_S3E_INVALID_ARGUMENT;
            snprintf(r->auth_detail, sizeof r->auth_detail, "Unsupported Authorization Type");
            return;
        }
        r->auth_err = payload_unsigned(r);
        return;
    }
    r->auth_kind = r->sig.kind;
    snprintf(r->access_key, sizeof r->access_key, "%s", r->sig.access_key);
    if (err == CN_E_AUTH) {
        r->auth_err = r->sig.s3err;
        snprintf(r->auth_detail, sizeof r->auth_detail, "%s", r->sig.detail);
        atomic_fetch_add(&s->auth_failures, 1);
        return;
    }
    if (err) {
        r->auth_err = CN_S3E_INTERNAL_ERROR;
        return;
    }
    r->payload = r->sig.payload;
}

/* Checksum the client asked for: x-amz-checksum-<alg> header, or a trailer
 * named by x-amz-trailer.  On S3's CompleteMultipartUpload (POST ?uploadId)
 * the headers are the object's checksum, not the body's: the handler reads
 * them itself. */
static cn_s3_err_t setup_checksum(cn_http_req_t *r)
{
    bool object_checksum = r->method_bit == CN_HTTP_POST && cn_http_req_has_query(r, "uploadId");
    int found = 0;
    for (cn_http_cksum_alg_t alg = CN_CKSUM_NONE + 1; alg < CN_CKSUM_COUNT; alg++) {
        const char *v = cn_http_req_header(r, cn_http_cksum_header(alg));
        if (!v || object_checksum)
            continue;
        if (found++)
            return CN_S3E_INVALID_REQUEST;
        uint8_t raw[CN_CKSUM_MAX_LEN + 3];
        size_t vl = strlen(v);
        if (vl >= sizeof r->cksum_expected ||
            cn_base64_decode(v, vl, raw, sizeof raw) != (long)cn_http_cksum_len(alg))
            return CN_S3E_INVALID_REQUEST;
        r->cksum_alg = alg;
        memcpy(r->cksum_expected, v, vl + 1);
    }
    const char *tr = cn_http_req_header(r, "x-amz-trailer");
    if (tr) {
        bool streaming = r->payload == CN_SIGV4_PAYLOAD_STREAMING_TRAILER ||
                         r->payload == CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER;
        cn_http_cksum_alg_t a = cn_http_cksum_parse(tr);
        if (!streaming || found || a == CN_CKSUM_NONE)
            return CN_S3E_INVALID_REQUEST;
        r->cksum_alg = a;
        r->cksum_trailer = true;
    }
    if (r->cksum_alg != CN_CKSUM_NONE && cn_http_cksum_init(&r->cksum, r->cksum_alg) != CN_OK)
        return CN_S3E_INTERNAL_ERROR;
    return CN_S3E_NONE;
}

static cn_s3_err_t setup_body(cn_http_req_t *r)
{
    const cn_http_route_t *rt = &r->srv->routes[r->route];
    r->max_body = rt->max_body ? rt->max_body : r->srv->cfg.max_body;
    bool chunked = r->payload == CN_SIGV4_PAYLOAD_STREAMING ||
                   r->payload == CN_SIGV4_PAYLOAD_STREAMING_TRAILER ||
                   r->payload == CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER;
    r->payload_length = r->content_length;
    if (chunked) {
        const char *dl = cn_http_req_header(r, "x-amz-decoded-content-length");
        r->payload_length = -1;
        if (dl) {
            char *end = NULL;
            long long v = strtoll(dl, &end, 10);
            if (!*dl || *end || v < 0)
                return CN_S3E_INVALID_ARGUMENT;
            r->payload_length = v;
        } else if (r->payload == CN_SIGV4_PAYLOAD_STREAMING) {
            return CN_S3E_MISSING_CONTENT_LENGTH;
        }
    }
    if (r->payload_length >= 0 && (uint64_t)r->payload_length > r->max_body)
        return CN_S3E_ENTITY_TOO_LARGE;
    if (chunked) {
        r->chunk = malloc(sizeof *r->chunk);
        if (!r->chunk)
            return CN_S3E_INTERNAL_ERROR;
        bool signed_chunks = r->payload != CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER;
        uint64_t cap = r->payload_length >= 0 ? (uint64_t)r->payload_length : r->max_body;
        if (cn_awschunk_init(r->chunk, signed_chunks ? &r->sig : NULL, signed_chunks,
                             r->payload != CN_SIGV4_PAYLOAD_STREAMING, cap) != CN_OK)
            return CN_S3E_INTERNAL_ERROR;
    }
    if (r->payload == CN_SIGV4_PAYLOAD_HASH || r->payload == CN_SIGV4_PAYLOAD_DEFERRED) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
            EVP_MD_CTX_free(ctx);
            return CN_S3E_INTERNAL_ERROR;
        }
        r->body_sha = ctx;
    }
    return setup_checksum(r);
}

static void begin_drain(cn_http_req_t *r, cn_s3_err_t e)
{
    if (r->body_err == CN_S3E_NONE && !r->resp)
        r->body_err = e;
    r->stage = CN__RQ_DRAIN;
}

/* Decoded payload bytes: hash, checksum, cap, then the handler. */
static int emit(void *ctx, const uint8_t *p, size_t n)
{
    cn_http_req_t *r = ctx;
    if (n > r->max_body - r->received) {
        begin_drain(r, CN_S3E_ENTITY_TOO_LARGE);
        return CN_E_TOO_LARGE;
    }
    if (r->payload_length >= 0 && r->received + n > (uint64_t)r->payload_length) {
        begin_drain(r, CN_S3E_INCOMPLETE_BODY);
        return CN_E_LENGTH_MISMATCH;
    }
    r->received += n;
    if (r->body_sha)
        EVP_DigestUpdate(r->body_sha, p, n);
    if (r->cksum_alg)
        cn_http_cksum_update(&r->cksum, p, n);
    const cn_http_route_t *rt = &r->srv->routes[r->route];
    if (!rt->on_body)
        return 0;
    int rc = rt->on_body(r, p, n, rt->ctx);
    if (r->resp) {
        /* The handler answered mid-body (e.g. a quota): drain and send it. */
        r->stage = CN__RQ_DRAIN;
        return CN_E_CLOSED;
    }
    if (rc == CN_HTTP_PAUSE) {
        r->paused = true;
        return 0;
    }
    if (rc < 0) {
        begin_drain(r, cn_s3_err_from_cn(rc));
        return rc;
    }
    return 0;
}

static void server_body(cn_http_req_t *r, const char *data, size_t n)
{
    atomic_fetch_add(&r->srv->stats[r->route >= 0 ? r->route : CN__MAX_ROUTES].bytes_in, n);
    r->wire_received += n;
    if (r->stage == CN__RQ_DRAIN) {
        r->drained += n;
        return;
    }
    if (r->chunk) {
        cn_err_t err = cn_awschunk_feed(r->chunk, (const uint8_t *)data, n, emit, r);
        if (err && r->stage != CN__RQ_DRAIN)
            begin_drain(r, r->chunk->s3err ? r->chunk->s3err : cn_s3_err_from_cn(err));
    } else {
        emit(r, (const uint8_t *)data, n);
    }
}

/* End of the body: everything that can only be checked once it is all in. */
static cn_s3_err_t verify_end(cn_http_req_t *r)
{
    if (r->chunk) {
        if (cn_awschunk_end(r->chunk) != CN_OK)
            return r->chunk->s3err ? r->chunk->s3err : CN_S3E_INCOMPLETE_BODY;
    }
    if (r->payload_length >= 0 && r->received != (uint64_t)r->payload_length)
        return CN_S3E_INCOMPLETE_BODY;
    if (r->body_sha) {
        uint8_t h[32];
        unsigned int hl = 32;
        EVP_DigestFinal_ex(r->body_sha, h, &hl);
        EVP_MD_CTX_free(r->body_sha);
        r->body_sha = NULL;
        if (r->payload == CN_SIGV4_PAYLOAD_DEFERRED) {
            if (cn_sigv4_finish_deferred(&r->sig, h) != CN_OK)
                return CN_S3E_SIGNATURE_DOES_NOT_MATCH;
        } else if (!cn_ct_equal(h, r->sig.payload_hash, 32)) {
            return CN_S3E_CONTENT_SHA256_MISMATCH;
        }
    } else if (r->payload == CN_SIGV4_PAYLOAD_EMPTY && r->received != 0) {
        return CN_S3E_CONTENT_SHA256_MISMATCH;
    }
    if (r->cksum_alg) {
        uint8_t raw[CN_CKSUM_MAX_LEN];
        cn_http_cksum_final(&r->cksum, raw, r->cksum_b64);
        if (r->cksum_trailer) {
            const char *v = cn_awschunk_trailer(r->chunk, cn_http_cksum_header(r->cksum_alg));
            if (!v || strlen(v) >= sizeof r->cksum_expected)
                return CN_S3E_INVALID_REQUEST;
            strcpy(r->cksum_expected, v);
        }
        if (strcmp(r->cksum_expected, r->cksum_b64) != 0)
            return CN_S3E_BAD_DIGEST;
    }
    return CN_S3E_NONE;
}

static enum MHD_Result server_queue(cn_http_req_t *r)
{
    if (!r->resp)
        cn__framework_error(r, CN_S3E_INTERNAL_ERROR, NULL);
    if (!r->resp)
        return MHD_NO;
    enum MHD_Result rc = MHD_queue_response(r->conn, r->status, r->resp);
    MHD_destroy_response(r->resp);
    r->resp = NULL;
    r->stage = CN__RQ_DONE;
    return rc;
}

static void call_error(cn_http_req_t *r, cn_s3_err_t e, const char *msg)
{
    cn__framework_error(r, e, msg);
}

/* The request ids (x-amz-request-id, x-amz-id-2) are opaque labels, not
 * secrets: a per-thread xorshift128+ seeded once from the system's generator
 * makes them, because RAND_bytes costs a getpid() system call (its fork
 * check) on every request. */
static void id_bytes(uint8_t *out, size_t n)
{
    static _Thread_local uint64_t st[2];
    if (!st[0] && !st[1]) {
        if (cn_random_bytes(st, sizeof st) != CN_OK || (!st[0] && !st[1])) {
            st[0] = (uint64_t)cn_mono_ns() | 1;
            st[1] = (uint64_t)(uintptr_t)&st;
        }
    }
    while (n) {
        uint64_t a = st[0], b = st[1];
        st[0] = b;
        a ^= a << 23;
        st[1] = a ^ b ^ (a >> 17) ^ (b >> 26);
        uint64_t v = st[1] + b;
        size_t k = n < sizeof v ? n : sizeof v;
        memcpy(out, &v, k);
        out += k;
        n -= k;
    }
}

static enum MHD_Result first_call(cn_http_req_t *r, const char *method)
{
    cn_http_server_t *s = r->srv;
    r->method = method;
    r->method_bit = method_bit(method);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, r->peer,
                      sizeof r->peer);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, r->peer,
                      sizeof r->peer);
    }
    snprintf(r->client_ip, sizeof r->client_ip, "%s", r->peer);
    if (s->cfg.trust_proxy_headers) {
        const char *xff = cn_http_req_header(r, "X-Forwarded-For");
        if (xff) {
            while (*xff == ' ' || *xff == '\t')
                xff++;
            size_t n = strcspn(xff, ", \t");
            char ip[64];
            unsigned char bin[16];
            if (n > 0 && n < sizeof ip) {
                memcpy(ip, xff, n);
                ip[n] = 0;
                if (inet_pton(AF_INET, ip, bin) == 1 || inet_pton(AF_INET6, ip, bin) == 1)
                    memcpy(r->client_ip, ip, n + 1);
            }
        }
    }
    r->tls = s->cert_pem != NULL;
    uint8_t rnd[8 + 24];
    id_bytes(rnd, sizeof rnd);
    for (int i = 0; i < 8; i++)
        snprintf(r->id + 2 * i, 3, "%02X", rnd[i]);
    cn_base64_encode(rnd + 8, 24, r->host_id);

    const char *cl = cn_http_req_header(r, "Content-Length");
    const char *te = cn_http_req_header(r, "Transfer-Encoding");
    if (cl) {
        char *end = NULL;
        long long v = strtoll(cl, &end, 10);
        if (!*cl || *end || v < 0) {
            call_error(r, CN_S3E_INVALID_ARGUMENT, "Content-Length is not valid");
            return server_queue(r);
        }
        r->content_length = v;
    }
    r->has_body = (r->content_length > 0) || (te && strcasecmp(te, "identity") != 0);

    if (cn__req_parse_target(r) != CN_OK) {
        call_error(r, CN_S3E_INVALID_URI, NULL);
        return server_queue(r);
    }
    if (!r->method_bit) {
        call_error(r, CN_S3E_NOT_IMPLEMENTED, "this HTTP method is not supported");
        return server_queue(r);
    }
    r->route = route_for(s, r);
    const char *expect = cn_http_req_header(r, "Expect");
    if (expect && strcasecmp(expect, "100-continue") != 0) {
        call_error(r, CN_S3E_EXPECTATION_FAILED, NULL);
        return server_queue(r);
    }
    if (r->route < 0) {
        call_error(r, CN_S3E_NOT_IMPLEMENTED, "no handler serves this request");
        return server_queue(r);
    }
    const cn_http_route_t *rt = &s->routes[r->route];
    decide_auth(r);
    if (r->auth_err != CN_S3E_NONE && !(rt->flags & CN_HTTP_ROUTE_OWN_AUTH_ERRORS)) {
        call_error(r, r->auth_err, r->auth_detail[0] ? r->auth_detail : NULL);
        return server_queue(r);
    }
    if (r->auth_err != CN_S3E_NONE)
        r->payload = CN_SIGV4_PAYLOAD_UNSIGNED; /* the handler refuses; nothing to verify */
    cn_s3_err_t e = setup_body(r);
    if (e != CN_S3E_NONE) {
        call_error(r, e, NULL);
        return server_queue(r);
    }
    r->handler_started = true;
    int rc = rt->on_request(r, rt->ctx);
    if (r->resp)
        return server_queue(r);
    if (rc < 0) {
        call_error(r, cn_s3_err_from_cn(rc), NULL);
        return server_queue(r);
    }
    r->stage = CN__RQ_BODY;
    return MHD_YES;
}

/* libmicrohttpd closes the connection after a response queued on the first
 * call (it will not read past it), so a request without a body is answered
 * on the final call, which keeps the connection alive. */
static bool peek_has_body(cn_http_req_t *r)
{
    const char *cl = cn_http_req_header(r, "Content-Length");
    const char *te = cn_http_req_header(r, "Transfer-Encoding");
    if (te && strcasecmp(te, "identity") != 0)
        return true;
    return cl && strcmp(cl, "0") != 0;
}

static enum MHD_Result final_call(cn_http_req_t *r)
{
    const cn_http_route_t *rt = &r->srv->routes[r->route];
    cn_s3_err_t e = CN_S3E_NONE;
    if (r->stage == CN__RQ_BODY)
        e = verify_end(r);
    if (e != CN_S3E_NONE && r->body_err == CN_S3E_NONE)
        r->body_err = e;
    if (r->resp && r->body_err == CN_S3E_NONE)
        return server_queue(r);
    if (!r->resp && rt->on_end)
        rt->on_end(r, rt->ctx);
    if (r->body_err != CN_S3E_NONE) {
        /* Verification failed: whatever the handler answered, the client gets the error. */
        if (r->resp) {
            MHD_destroy_response(r->resp);
            r->resp = NULL;
            for (size_t i = 0; i < r->nhdrs; i++) {
                free(r->hdrs[i].name);
                free(r->hdrs[i].value);
            }
            r->nhdrs = 0;
        }
        call_error(r, r->body_err, NULL);
    }
    return server_queue(r);
}

static enum MHD_Result server_access(void *cls, struct MHD_Connection *c, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
    (void)cls;
    (void)url;
    (void)version;
    cn_http_req_t *r = *con_cls;
    if (!r)
        return MHD_NO;
    r->conn = c;
    if (r->stage == CN__RQ_NEW) {
        if (!r->deferred_start && !peek_has_body(r)) {
            r->deferred_start = true;
            return MHD_YES;
        }
        enum MHD_Result rc = first_call(r, method);
        if (!r->deferred_start || r->stage != CN__RQ_BODY)
            return rc;
        /* No body is coming: this is also the final call. */
        return final_call(r);
    }
    if (r->stage == CN__RQ_DONE)
        return MHD_NO;
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        server_body(r, upload_data, n);
        if (r->stage == CN__RQ_DRAIN && r->drained > CN__DRAIN_MAX)
            return MHD_NO;
        if (r->paused) {
            r->paused = false;
            MHD_suspend_connection(c);
        }
        return MHD_YES;
    }
    return final_call(r);
}

void cn_http_req_resume(cn_http_req_t *r)
{
    MHD_resume_connection(r->conn);
}

static void server_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                             enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    cn_http_server_t *s = cls;
    cn_http_req_t *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    if (r->handler_started && r->route >= 0 && s->routes[r->route].on_cleanup)
        s->routes[r->route].on_cleanup(r, s->routes[r->route].ctx);
    cn__metrics_record(s, r);
    cn__req_free(r);
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_ctx,
                        enum MHD_ConnectionNotificationCode toe)
{
    (void)c;
    (void)socket_ctx;
    cn_http_server_t *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&s->open_connections, 1);
        atomic_fetch_add(&s->connections_total, 1);
    } else {
        atomic_fetch_sub(&s->open_connections, 1);
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = 0;
    cn_debug(CN__MOD, "libmicrohttpd: %s", msg);
}

cn_err_t cn_http_server_start(cn_http_server_t *s)
{
    if (s->started)
        return CN_E_INVALID;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (s->addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (s->cert_pem)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem opts[24];
    int n = 0;
#define CN__OPT(o, v, p) \
    (opts[n].option = (o), opts[n].value = (intptr_t)(v), opts[n].ptr_value = (p), n++)
    CN__OPT(MHD_OPTION_SOCK_ADDR, 0, &s->addr);
    CN__OPT(MHD_OPTION_THREAD_POOL_SIZE, s->cfg.threads, NULL);
    CN__OPT(MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections, NULL);
    if (s->cfg.max_per_ip)
        CN__OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->cfg.max_per_ip, NULL);
    CN__OPT(MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.idle_timeout_s, NULL);
    CN__OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->cfg.conn_memory, NULL);
    CN__OPT(MHD_OPTION_URI_LOG_CALLBACK, uri_log, s);
    CN__OPT(MHD_OPTION_NOTIFY_COMPLETED, server_completed, s);
    CN__OPT(MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s);
    CN__OPT(MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL);
    CN__OPT(MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL);
    if (s->cert_pem) {
        CN__OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert_pem);
        CN__OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, s->key_pem);
    }
    CN__OPT(MHD_OPTION_END, 0, NULL);
#undef CN__OPT
    s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, server_access, s, MHD_OPTION_ARRAY, opts,
                              MHD_OPTION_END);
    if (!s->mhd) {
        cn_error(CN__MOD, "cannot listen on %s", s->listen);
        return -EADDRNOTAVAIL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (di && getsockname(di->listen_fd, (struct sockaddr *)&ss, &sl) == 0) {
        s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    }
    s->started = true;
    cn_info(CN__MOD, "listening %s on %s:%d", s->log_name, s->host, s->port);
    return CN_OK;
}

int cn_http_server_port(const cn_http_server_t *s)
{
    return s->port;
}

void cn_http_server_stop(cn_http_server_t *s)
{
    if (!s || !s->mhd)
        return;
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
}

void cn_http_server_free(cn_http_server_t *s)
{
    if (!s)
        return;
    cn_http_server_stop(s);
    for (size_t i = 0; i < s->n_routes; i++) {
        free(s->route_prefix[i]);
        free(s->route_name[i]);
    }
    free(s->listen);
    free(s->log_name);
    free(s->region);
    if (s->key_pem) {
        memset(s->key_pem, 0, strlen(s->key_pem));
        free(s->key_pem);
    }
    free(s->cert_pem);
    free(s);
}
