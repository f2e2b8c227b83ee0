/* cairn crypto: BLAKE3-256 (the store's content address), SHA-256, MD5,
 * HMAC-SHA256, CRC32/CRC32C, secure random, constant-time comparison, hex.
 *
 * BLAKE3 is the official C implementation with run-time SIMD dispatch; the
 * rest is OpenSSL.  Nothing here knows of storage or protocols, and nothing
 * here may log its inputs.
 */
#ifndef CAIRN_CRYPTO_H
#define CAIRN_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CN_DIGEST_LEN 32 /* BLAKE3-256 and SHA-256 */
#define CN_DIGEST_HEX_LEN 64
#define CN_MD5_LEN 16

typedef struct cn_digest {
    uint8_t b[CN_DIGEST_LEN];
} cn_digest_t;

/* ---- BLAKE3 --------------------------------------------------------------
 * The hasher is an opaque-sized value type: embed it, no allocation. */
typedef struct cn_blake3 {
    _Alignas(16) uint8_t opaque[1920];
} cn_blake3_t;
CN_API void cn_blake3_init(cn_blake3_t *h);
CN_API void cn_blake3_update(cn_blake3_t *h, const void *p, size_t n);
CN_API void cn_blake3_final(const cn_blake3_t *h, cn_digest_t *out);
CN_API void cn_blake3(const void *p, size_t n, cn_digest_t *out);
/* BLAKE3's keyed hash (a MAC/PRF under key) of p, into out; the hasher's
 * copy of the input is wiped before it returns (a secret may be hashed). */
CN_API void cn_blake3_keyed(const uint8_t key[CN_DIGEST_LEN], const void *p, size_t n,
                            cn_digest_t *out);
/* Name of the SIMD back end the dispatcher picks on this CPU ("avx512", ...). */
CN_API const char *cn_blake3_backend(void);

/* ---- SHA-256 / MD5 (streaming, OpenSSL EVP) -----------------------------
 * init allocates; final writes the digest and frees; free() releases a
 * context abandoned before final (accepts NULL). */
typedef struct cn_sha256 cn_sha256_t;
typedef struct cn_md5 cn_md5_t;
CN_API cn_err_t cn_sha256_new(cn_sha256_t **out);
CN_API void cn_sha256_update(cn_sha256_t *h, const void *p, size_t n);
CN_API void cn_sha256_final(cn_sha256_t *h, uint8_t out[CN_DIGEST_LEN]); /* frees h */
CN_API void cn_sha256_free(cn_sha256_t *h);
/* A second context in h's state (h unchanged; the copy is the caller's to
 * final or free): e.g. a digest of the bytes so far while h goes on.
 * -ENOMEM. */
CN_API cn_err_t cn_sha256_copy(const cn_sha256_t *h, cn_sha256_t **out);
CN_API void cn_sha256(const void *p, size_t n, uint8_t out[CN_DIGEST_LEN]);

CN_API cn_err_t cn_md5_new(cn_md5_t **out);
CN_API void cn_md5_update(cn_md5_t *h, const void *p, size_t n);
CN_API void cn_md5_final(cn_md5_t *h, uint8_t out[CN_MD5_LEN]); /* frees h */
CN_API void cn_md5_free(cn_md5_t *h);
CN_API void cn_md5(const void *p, size_t n, uint8_t out[CN_MD5_LEN]);

CN_API void cn_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                           uint8_t out[CN_DIGEST_LEN]);

/* HMAC-SHA256 under a key prepared once: the hash states after the key's
 * inner and outer padded blocks, so that each MAC under it hashes two blocks
 * fewer than cn_hmac_sha256 (a SigV4 signature: 4 blocks, not 6).  A value
 * type (embed it, copy it; no allocation) as sensitive as the key itself:
 * wipe it when done.  cn_hmac_sha256_keyed(k, m) equals cn_hmac_sha256(key,
 * m) for the key k was prepared with; any key length (RFC 2104). */
typedef struct cn_hmac_sha256_key {
    _Alignas(8) uint8_t opaque[224];
} cn_hmac_sha256_key_t;
CN_API void cn_hmac_sha256_key_init(cn_hmac_sha256_key_t *k, const void *key, size_t key_len);
CN_API void cn_hmac_sha256_keyed(const cn_hmac_sha256_key_t *k, const void *msg, size_t msg_len,
                                 uint8_t out[CN_DIGEST_LEN]);
CN_API void cn_hmac_sha256_key_wipe(cn_hmac_sha256_key_t *k);

/* CRC-32 (IEEE, as zlib) and CRC-32C (Castagnoli); incremental: pass the
 * previous result, starting from 0. */
CN_API uint32_t cn_crc32(uint32_t crc, const void *p, size_t n);
CN_API uint32_t cn_crc32c(uint32_t crc, const void *p, size_t n);

/* ---- random, comparison, encodings -------------------------------------- */
CN_API cn_err_t cn_random_bytes(void *out, size_t n);            /* CSPRNG */
CN_API bool cn_ct_equal(const void *a, const void *b, size_t n); /* constant time in n */

/* Lowercase hex; out must hold 2*n+1 bytes and is NUL-terminated. */
CN_API void cn_hex_encode(const void *p, size_t n, char *out);
/* Strict: exactly 2*n hex digits, either case.  CN_E_INVALID otherwise. */
CN_API cn_err_t cn_hex_decode(const char *hex, size_t hex_len, void *out, size_t n);
CN_API void cn_digest_hex(const cn_digest_t *d, char out[CN_DIGEST_HEX_LEN + 1]);
CN_API cn_err_t cn_digest_parse(const char *hex, size_t hex_len, cn_digest_t *out);

/* Standard base64 with padding.  encode: out holds 4*((n+2)/3)+1 bytes.
 * decode: returns bytes written or CN_E_INVALID; out holds 3*(len/4) bytes. */
CN_API void cn_base64_encode(const void *p, size_t n, char *out);
CN_API long cn_base64_decode(const char *s, size_t len, void *out, size_t out_cap);

/* ---- ML-KEM-768 (FIPS 203) and the X25519MLKEM768 TLS group ------------- */
/* PQClean's implementation (the npm pqclean package, built by meson); these
 * take their randomness as arguments so that known-answer tests can fix it.
 * Thread-safe; no allocation. */
#define CN_MLKEM768_EK_LEN 1184 /* encapsulation (public) key */
#define CN_MLKEM768_DK_LEN 2400 /* decapsulation (secret) key */
#define CN_MLKEM768_CT_LEN 1088
#define CN_MLKEM768_SS_LEN 32
/* KeyGen from the 64 bytes d || z. */
CN_API void cn_mlkem768_keypair(uint8_t ek[CN_MLKEM768_EK_LEN], uint8_t dk[CN_MLKEM768_DK_LEN],
                                const uint8_t coins[64]);
/* Encaps with message m (32 bytes).  CN_E_INVALID when ek fails FIPS 203's
 * modulus check (a coefficient >= q), and then nothing is written. */
CN_API cn_err_t cn_mlkem768_encaps(uint8_t ct[CN_MLKEM768_CT_LEN], uint8_t ss[CN_MLKEM768_SS_LEN],
                                   const uint8_t ek[CN_MLKEM768_EK_LEN], const uint8_t m[32]);
/* Decaps; a forged ciphertext yields the implicit-rejection secret, never an error. */
CN_API void cn_mlkem768_decaps(uint8_t ss[CN_MLKEM768_SS_LEN], const uint8_t ct[CN_MLKEM768_CT_LEN],
                               const uint8_t dk[CN_MLKEM768_DK_LEN]);

/* The TLS 1.3 group X25519MLKEM768 (IANA 0x11EC) for OpenSSL 3.0, which lacks
 * it: registers cairn's built-in provider and loads it, with OpenSSL's
 * "default" provider, into the default library context, so that every
 * SSL_CTX made afterwards knows the group by that name.  Idempotent and
 * thread-safe; call before the first SSL_CTX_new.  CN_E_CORRUPT when OpenSSL
 * refuses the provider (the error queue says why). */
#define CN_TLS_GROUP_X25519MLKEM768 0x11EC
CN_API cn_err_t cn_crypto_pq_load(void);

/* Which key-exchange groups a TLS context offers and accepts. */
typedef enum {
    /* X25519MLKEM768 first, then OpenSSL's classical groups (X25519, P-256,
     * X448, P-521, P-384, ffdhe*): Jay and HTTP, whose clients (aws-cli,
     * browsers, older OpenSSL) may lack the hybrid group. */
    CN_TLS_GROUPS_HYBRID_FIRST = 0,
    /* X25519MLKEM768 alone: Scribe protocol 4 and SAU2, whose contract says a
     * peer without it cannot connect. */
    CN_TLS_GROUPS_PQ_ONLY = 1,
} cn_tls_groups_t;

struct ssl_ctx_st; /* OpenSSL's SSL_CTX */
struct ssl_st;     /* OpenSSL's SSL */

/* Makes ctx TLS 1.3 only and sets its group list.  ctx must have been made
 * after cn_crypto_pq_load(); CN_E_CORRUPT when OpenSSL refuses the list. */
CN_API cn_err_t cn_tls_ctx_set_groups(struct ssl_ctx_st *ctx, cn_tls_groups_t groups);

/* A new TLS 1.3 client context for cairn's own clients with the group rule
 * applied (the provider loaded first).  Peer verification is the caller's to
 * configure.  The caller frees *out with SSL_CTX_free. */
CN_API cn_err_t cn_tls_client_ctx_new(cn_tls_groups_t groups, struct ssl_ctx_st **out);

/* The name of the group a completed handshake negotiated ("X25519MLKEM768",
 * "x25519", ...), or "none"; a static string. */
CN_API const char *cn_tls_negotiated_group(struct ssl_st *ssl);

#ifdef __cplusplus
}
#endif
#endif
