/* cairn sigv4: the AWS request-authentication wire pieces — x-amz-checksum-*
 * algorithms, Signature Version 4 verification (header, presigned and
 * streaming forms) and aws-chunked body decoding.  Pure functions over bytes
 * (the one state, a cache of derived signing keys, changes no result): never
 * sockets, never the identity store (secrets come through a callback). */
#ifndef CAIRN_SIGV4_H
#define CAIRN_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/s3err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Checksums that S3 clients send (x-amz-checksum-*)
 * ====================================================================== */

typedef enum cn_http_cksum_alg {
    CN_CKSUM_NONE = 0,
    CN_CKSUM_CRC32,
    CN_CKSUM_CRC32C,
    CN_CKSUM_CRC64NVME,
    CN_CKSUM_SHA1,
    CN_CKSUM_SHA256,
    CN_CKSUM_COUNT /* one past the last: loop from CN_CKSUM_NONE + 1 */
} cn_http_cksum_alg_t;

#define CN_CKSUM_MAX_LEN 32
#define CN_CKSUM_B64_LEN 48 /* base64 of the largest value, with NUL */

/* A streaming checksum of one algorithm.  init may allocate (SHA); final
 * releases; free accepts an abandoned or zeroed value. */
typedef struct cn_http_cksum {
    cn_http_cksum_alg_t alg;
    uint64_t crc;
    void *md; /* OpenSSL EVP context for the SHA algorithms */
} cn_http_cksum_t;

/* "crc32" / "CRC32" / "x-amz-checksum-crc32" → the algorithm; NONE if unknown. */
CN_API cn_http_cksum_alg_t cn_http_cksum_parse(const char *name);
/* The header name "x-amz-checksum-crc32", and the S3 name "CRC32". */
CN_API const char *cn_http_cksum_header(cn_http_cksum_alg_t alg);
CN_API const char *cn_http_cksum_name(cn_http_cksum_alg_t alg);
CN_API size_t cn_http_cksum_len(cn_http_cksum_alg_t alg); /* raw bytes */
CN_API cn_err_t cn_http_cksum_init(cn_http_cksum_t *c, cn_http_cksum_alg_t alg);
CN_API void cn_http_cksum_update(cn_http_cksum_t *c, const void *p, size_t n);
/* Writes the raw value (big-endian for CRCs, as S3 encodes them) and its
 * base64 form; returns the raw length.  Releases c. */
CN_API size_t cn_http_cksum_final(cn_http_cksum_t *c, uint8_t raw[CN_CKSUM_MAX_LEN],
                                  char b64[CN_CKSUM_B64_LEN]);
CN_API void cn_http_cksum_free(cn_http_cksum_t *c);
/* CRC-64/NVME (the polynomial S3 calls CRC64NVME); incremental from 0. */
CN_API uint64_t cn_crc64nvme(uint64_t crc, const void *p, size_t n);

/* ======================================================================
 * AWS Signature Version 4 (pure functions; no sockets)
 * ====================================================================== */

/* A header or query pair as seen on the wire (not NUL-terminated). */
typedef struct cn_http_kv {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} cn_http_kv_t;

/* The length of a secret's tag (see cn_http_secret_lookup_fn). */
#define CN_SIGV4_TAG_LEN 32

/* Looks up the secret for access_key (the token id).  Writes up to cap bytes
 * into secret and its length into *len.  Returns 0, CN_E_NOT_FOUND for an
 * unknown or revoked key, or another error (→ InternalError).  Called on the
 * server's threads; must be thread-safe.
 * tag arrives zeroed; a store that can may fill it with a tag of the secret
 * it returns: a value computed when it cached that secret (not per call)
 * that differs whenever the secret of access_key differs (a MAC of the
 * secret under a key of its own is one).  The signing-key cache then finds
 * the key by (access_key, tag) instead of fingerprinting the secret on every
 * request; left zero, the verifier fingerprints the secret itself. */
typedef int (*cn_http_secret_lookup_fn)(void *ctx, const char *access_key, uint8_t *secret,
                                        size_t cap, size_t *len, uint8_t tag[CN_SIGV4_TAG_LEN]);

typedef enum cn_sigv4_payload {
    CN_SIGV4_PAYLOAD_EMPTY = 0,         /* no body: hash of "" (checked by framework) */
    CN_SIGV4_PAYLOAD_HASH,              /* x-amz-content-sha256: <hex>, checked at end */
    CN_SIGV4_PAYLOAD_UNSIGNED,          /* UNSIGNED-PAYLOAD */
    CN_SIGV4_PAYLOAD_DEFERRED,          /* no x-amz-content-sha256: signature over body hash */
    CN_SIGV4_PAYLOAD_STREAMING,         /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    CN_SIGV4_PAYLOAD_STREAMING_TRAILER, /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER,  /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
} cn_sigv4_payload_t;

typedef enum cn_http_auth_kind {
    CN_HTTP_AUTH_ANONYMOUS = 0, /* no credential presented */
    CN_HTTP_AUTH_SIGV4_HEADER,
    CN_HTTP_AUTH_SIGV4_QUERY, /* presigned URL */
    CN_HTTP_AUTH_BEARER,      /* Authorization: Bearer <id>:<secret> */
} cn_http_auth_kind_t;

#define CN_SIGV4_MAX_KEY 128
#define CN_SIGV4_MAX_REGION 64
#define CN_SIGV4_MAX_SCOPE 256
#define CN_SIGV4_MAX_SKEW_MS (15LL * 60 * 1000)
#define CN_SIGV4_MAX_EXPIRES 604800 /* 7 days, as S3 */
#define CN_SIGV4_MAX_SECRET 256
/* The bound of one verification's scratch area, on the verifier's stack: the
 * canonical request plus a presigned URL's decoded values.  The HTTP layer
 * refuses request heads over 64 KiB, so only a request near that limit whose
 * path or query grows when canonicalised (%XX for raw bytes), or whose
 * SignedHeaders repeats a long header, can pass it; such a request is
 * refused (see cn_sigv4_verify), never truncated. */
#define CN_SIGV4_MAX_CANONICAL 65536

typedef struct cn_sigv4_input {
    const char *method; /* "GET" */
    const char *path;   /* raw request path as received (before '?') */
    size_t path_len;
    const char *query; /* raw query string (after '?'), may be NULL */
    size_t query_len;
    const cn_http_kv_t *headers; /* in wire order; duplicates allowed */
    size_t n_headers;
    bool has_body;       /* a request body follows (length > 0 or chunked) */
    int64_t now_ms;      /* the server's clock, Unix ms */
    const char *service; /* "s3" */
    const char *region;  /* NULL: any region, else the one required */
    int64_t max_skew_ms; /* 0: CN_SIGV4_MAX_SKEW_MS */
} cn_sigv4_input_t;

/* The outcome of verifying a request's seed signature, plus what the body
 * verifier needs to go on (signing key, scope, previous signature). */
typedef struct cn_sigv4 {
    cn_http_auth_kind_t kind;
    cn_sigv4_payload_t payload;
    char access_key[CN_SIGV4_MAX_KEY];
    char region[CN_SIGV4_MAX_REGION];
    char amz_date[17];              /* 20130524T000000Z */
    char scope[CN_SIGV4_MAX_SCOPE]; /* 20130524/us-east-1/s3/aws4_request */
    uint8_t signing_key[32];
    char signature[65];       /* the seed signature, lowercase hex */
    uint8_t payload_hash[32]; /* for CN_SIGV4_PAYLOAD_HASH */
    int64_t request_ms;       /* time from x-amz-date */
    int64_t expires_ms;       /* presigned: when it stops being valid */
    cn_s3_err_t s3err;        /* why verification failed */
    char detail[160];         /* a human-readable reason (no secrets) */
    cn_buf_t deferred;        /* DEFERRED: canonical request minus its last line */
} cn_sigv4_t;

/* Verifies the SigV4 credential of a request (header form or presigned query
 * form).  Returns 0 with out filled when the seed signature holds, CN_E_AUTH
 * with out->s3err/detail set when it does not (SignatureDoesNotMatch,
 * InvalidAccessKeyId, AuthorizationHeaderMalformed, RequestTimeTooSkewed,
 * AccessDenied for an expired presign, ...; a request past
 * CN_SIGV4_MAX_CANONICAL is AuthorizationHeaderMalformed or
 * AuthorizationQueryParametersError, "too large to verify"), CN_E_NOT_FOUND
 * when the request carries no SigV4 credential at all, or -ENOMEM (only a
 * DEFERRED payload allocates: out->deferred).  For DEFERRED payloads the
 * signature is checked by cn_sigv4_finish_deferred() once the body hash is
 * known.  The caller frees out with cn_sigv4_clear().  The secret never leaves
 * this function except as the derived signing key in out and the key cache's
 * fingerprint of it.  lookup is called on every request, so a revoked key is
 * refused at once whatever the cache holds.  Any thread; uses about 82 KiB of
 * the caller's stack (CN_SIGV4_MAX_CANONICAL plus the query's sort). */
CN_API cn_err_t cn_sigv4_verify(const cn_sigv4_input_t *in, cn_http_secret_lookup_fn lookup,
                                void *lookup_ctx, cn_sigv4_t *out);
/* Completes a DEFERRED verification with the SHA-256 of the body.  0 or
 * CN_E_AUTH (s3err = SignatureDoesNotMatch). */
CN_API cn_err_t cn_sigv4_finish_deferred(cn_sigv4_t *v, const uint8_t body_sha256[32]);
CN_API void cn_sigv4_clear(cn_sigv4_t *v);

/* Building blocks, exposed for tests and for clients that sign. */
/* AWS UriEncode: unreserved A-Za-z0-9-._~ kept, everything else %XX
 * (uppercase); '/' kept when keep_slash. */
CN_API cn_err_t cn_sigv4_uri_encode(cn_buf_t *out, const char *s, size_t n, bool keep_slash);
/* Percent-decodes s into out (no '+' → space: S3 clients encode spaces as
 * %20).  CN_E_INVALID on a bad escape or an encoded NUL. */
CN_API cn_err_t cn_http_pct_decode(cn_buf_t *out, const char *s, size_t n);
/* The same decoding into dst, which must hold n bytes (decoding never
 * lengthens; no NUL is added): the decoded length, or -1 where
 * cn_http_pct_decode says CN_E_INVALID. */
CN_API long cn_http_pct_decode_to(char *dst, const char *s, size_t n);
/* Appends the canonical request (without a trailing newline) for the given
 * signed header list (";"-separated, lowercase), with payload_hash as its last
 * line, skipping X-Amz-Signature from the query.  CN_E_INVALID when a signed
 * header is missing or the path/query is malformed; CN_E_LIMIT past 1,024
 * query parameters or CN_SIGV4_MAX_CANONICAL bytes (out is then unchanged);
 * -ENOMEM.  Builds on the stack as cn_sigv4_verify does. */
CN_API cn_err_t cn_sigv4_canonical_request(cn_buf_t *out, const char *method, const char *path,
                                           size_t path_len, const char *query, size_t query_len,
                                           const cn_http_kv_t *headers, size_t n_headers,
                                           const char *signed_headers, size_t signed_len,
                                           const char *payload_hash);
/* The signing key: HMAC chain of "AWS4" secret, the credential's date
 * (date8: 8 characters, need not be NUL-terminated), region, service and
 * "aws4_request".  Derives it every time. */
CN_API void cn_sigv4_signing_key(const uint8_t *secret, size_t secret_len, const char *date8,
                                 const char *region, const char *service, uint8_t out[32]);

/* ---- the signing-key cache ------------------------------------------------
 * What: cn_sigv4_verify (and anyone calling cn_sigv4_signing_key_cached) keeps
 * derived signing keys in one process-wide cache of
 * CN_SIGV4_KEY_CACHE_SLOTS slots, keyed by the whole tuple (access key,
 * secret, date, region, service): a slot holds the access key, date, region
 * and service, a tag of the secret (the credential store's, handed out with
 * the secret and computed once when it cached it; else a fingerprint, BLAKE3
 * keyed by a random key made once per process, computed per request) and
 * the derived key (also prepared for HMAC: cn_hmac_sha256_key_t), never the
 * secret itself.
 * A lookup hashes the tuple to a set of 4 slots and answers only from a slot
 * whose every field matches (the fingerprint compared in constant time); a
 * miss derives the key outside the lock and replaces the least recently used
 * slot of the set.  Access keys and regions of 64 bytes or more and services
 * over 16 bytes are never cached.
 * Bound: 64 slots of about 470 bytes, fixed at build time; no allocation.
 * Why it is safe: the key is a pure function of the tuple, so a cached key is
 * exactly the key a derivation would give; a rotated secret has another
 * tag and so another entry (the old one ages out unused), a new day
 * is another date.  The cache never decides who is authenticated: the
 * credential store is still asked for the secret on every request, and the
 * signature still checked.  What it holds is as sensitive as the keys every
 * verified cn_sigv4_t already carries: each one signs for one access key,
 * one day, one region and one service.  Global by design, as a CPU cache is:
 * it changes no result, so it needs no owner and no lifecycle.  Thread-safe
 * (one mutex, held for a few compares and a 32-byte copy). */
#define CN_SIGV4_KEY_CACHE_SLOTS 64
/* cn_sigv4_signing_key through the cache; the same out for the same inputs. */
CN_API void cn_sigv4_signing_key_cached(const uint8_t *secret, size_t secret_len, const char *date8,
                                        const char *region, const char *service, uint8_t out[32]);
/* The same, found by (access_key, tag) when tag is not all zero: tag must be
 * one a lookup gave with this secret (cn_http_secret_lookup_fn's contract:
 * another secret of access_key never has the same tag); all zero, the
 * secret is fingerprinted as cn_sigv4_signing_key_cached does.  Access keys
 * of 64 bytes or more are never cached. */
CN_API void cn_sigv4_signing_key_tagged(const char *access_key, const uint8_t tag[CN_SIGV4_TAG_LEN],
                                        const uint8_t *secret, size_t secret_len, const char *date8,
                                        const char *region, const char *service, uint8_t out[32]);
/* Lookups answered from the cache and lookups that derived, since start. */
CN_API void cn_sigv4_key_cache_stats(uint64_t *hits, uint64_t *misses);
/* Wipes every slot (the counters stay); the next lookups derive again. */
CN_API void cn_sigv4_key_cache_clear(void);

/* hex(HMAC(signing_key, "AWS4-HMAC-SHA256\n" date "\n" scope "\n" hex(sha256(canon)))) */
CN_API void cn_sigv4_sign(const uint8_t key[32], const char *amz_date, const char *scope,
                          const char *canonical, size_t canonical_len, char sig_hex[65]);
/* Parses "20130524T000000Z" into Unix ms; CN_E_INVALID otherwise. */
CN_API cn_err_t cn_sigv4_parse_date(const char *s, size_t n, int64_t *out_ms);

/* ---- aws-chunked body decoding ----------------------------------------
 * Incremental: feed it the raw body in any slicing; it hands out the decoded
 * payload as slices of the input (no copies, no allocation beyond the fixed
 * state and one SHA-256 context).  Chunk signatures chain from the seed
 * signature; trailers are collected into a bounded buffer. */

#define CN_AWSCHUNK_LINE_MAX 4096
#define CN_AWSCHUNK_TRAILER_MAX 4096
#define CN_AWSCHUNK_MAX_TRAILERS 8

typedef int (*cn_awschunk_emit_fn)(void *ctx, const uint8_t *p, size_t n);

typedef struct cn_awschunk {
    int state;
    bool signed_chunks;    /* chunk-signature= present and checked */
    bool trailer;          /* trailers follow the final chunk */
    const cn_sigv4_t *sig; /* signing key, date, scope (borrowed) */
    char prev_sig[65];
    char chunk_sig[65];
    char trailer_sig[65];
    bool trailer_sig_seen;
    void *chunk_sha; /* SHA-256 of the current chunk (signed only) */
    uint64_t chunk_left;
    uint64_t decoded;     /* payload bytes so far */
    uint64_t max_decoded; /* refuse more than this (UINT64_MAX: none) */
    size_t line_len;
    char line[CN_AWSCHUNK_LINE_MAX];
    size_t trailer_len;
    char trailers[CN_AWSCHUNK_TRAILER_MAX]; /* "name:value\n" lines, as received */
    size_t n_trailers;
    cn_http_kv_t trailer_kv[CN_AWSCHUNK_MAX_TRAILERS];
    cn_s3_err_t s3err;
    bool done;
} cn_awschunk_t;

/* sig may be NULL for the unsigned trailer form.  max_decoded caps the
 * payload (x-amz-decoded-content-length or a policy limit). */
CN_API cn_err_t cn_awschunk_init(cn_awschunk_t *d, const cn_sigv4_t *sig, bool signed_chunks,
                                 bool trailer, uint64_t max_decoded);
/* Consumes all n bytes, calling emit for each decoded payload span (emit's
 * non-zero return stops decoding and is returned).  0, or CN_E_AUTH
 * (SignatureDoesNotMatch), CN_E_PROTOCOL (malformed framing → IncompleteBody /
 * InvalidRequest in d->s3err), CN_E_TOO_LARGE.  Bytes after the end are an error. */
CN_API cn_err_t cn_awschunk_feed(cn_awschunk_t *d, const uint8_t *p, size_t n,
                                 cn_awschunk_emit_fn emit, void *ctx);
/* At end of the raw body: CN_E_PROTOCOL unless the final chunk (and the
 * trailers, with their signature in the signed form) arrived. */
CN_API cn_err_t cn_awschunk_end(cn_awschunk_t *d);
/* A trailer's value by name (case-insensitive), NUL-terminated, or NULL. */
CN_API const char *cn_awschunk_trailer(const cn_awschunk_t *d, const char *name);
CN_API void cn_awschunk_free(cn_awschunk_t *d);

#ifdef __cplusplus
}
#endif
#endif
