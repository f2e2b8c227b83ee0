/* The credential of a request and the set-up of its body's verification:
 * Bearer tokens, SigV4 in the header and presigned forms (cairn/sigv4.h),
 * the payload mode, aws-chunked decoding, the payload hash and the
 * x-amz-checksum-* the client declared.  Decided once the head is in,
 * before a handler runs; never reads the body. */
#include "http_int.h"
#include "cairn/crypto.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int64_t now_ms(const cn_http_server_t *s)
{
    return s->cfg.clock_ms ? s->cfg.clock_ms(s->cfg.clock_ctx) : cn_wall_ms();
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

void cn__auth_decide(cn_http_req_t *r)
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
    if (authz && strncasecmp(authz, "Bearer ", 7) == 0 && r->on_loop) {
        r->declined = true; /* a bearer check may read the database */
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
            /* A store that is down or contended is a retryable 503. */
            bool down = rc == CN_E_UNAVAILABLE || rc == CN_E_DB_LOCKED || rc == CN_E_BUSY;
            r->auth_err = rc == CN_E_NOT_FOUND                     ? CN_S3E_INVALID_ACCESS_KEY_ID
                          : (rc == CN_E_AUTH || rc == CN_E_DENIED) ? CN_S3E_ACCESS_DENIED
                          : down                                   ? CN_S3E_SERVICE_UNAVAILABLE
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
    cn_sigv4_input_t in = {
        .method = r->method,
        .path = r->raw_path,
        .path_len = strlen(r->raw_path),
        .query = r->raw_query,
        .query_len = strlen(r->raw_query),
        .headers = r->head.kv,
        .n_headers = r->head.n,
        .has_body = r->has_body,
        .now_ms = now_ms(s),
        .service = "s3",
        .region = s->cfg.region,
        .max_skew_ms = s->cfg.max_skew_ms,
    };
    /* On the loop the secret comes from memory only; a miss fails the
     * verification, which the loop declines (below) without counting. */
    cn_http_secret_lookup_fn lookup = r->on_loop ? s->cfg.sigv4_lookup_cached : s->cfg.sigv4_lookup;
    cn_err_t err = cn_sigv4_verify(&in, lookup, s->cfg.sigv4_ctx, &r->sig);
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
    if (err && r->on_loop) {
        r->declined = true; /* a worker verifies it again, and answers the refusal */
        return;
    }
    r->auth_kind = r->sig.kind;
    size_t kl = strnlen(r->sig.access_key, sizeof r->access_key - 1); /* snprintf's cut */
    memcpy(r->access_key, r->sig.access_key, kl);
    r->access_key[kl] = 0;
    if (err == CN_E_AUTH) {
        r->auth_err = r->sig.s3err;
        snprintf(r->auth_detail, sizeof r->auth_detail, "%s", r->sig.detail);
        if (r->auth_err != CN_S3E_SERVICE_UNAVAILABLE) /* an outage, not a bad signature */
            atomic_fetch_add(&s->auth_failures, 1);
        return;
    }
    if (err) {
        r->auth_err = CN_S3E_INTERNAL_ERROR;
        return;
    }
    r->payload = r->sig.payload;
}

/* SHA-256 fetched from the provider once: EVP_sha256() in EVP_DigestInit_ex
 * is an implicit fetch (a method-store lookup under its lock) on every
 * request that hashes its body.  NULL when the fetch failed: then the
 * implicit fetch, which fails the same way. */
static pthread_once_t body_md_once = PTHREAD_ONCE_INIT;
static EVP_MD *body_md;

static void body_md_init(void)
{
    body_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *body_sha256(void)
{
    pthread_once(&body_md_once, body_md_init);
    return body_md ? body_md : EVP_sha256();
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

cn_s3_err_t cn__body_setup(cn_http_req_t *r)
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
        if (!ctx || EVP_DigestInit_ex(ctx, body_sha256(), NULL) != 1) {
            EVP_MD_CTX_free(ctx);
            return CN_S3E_INTERNAL_ERROR;
        }
        r->body_sha = ctx;
    }
    return setup_checksum(r);
}
