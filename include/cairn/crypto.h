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
CN_API void cn_sha256(const void *p, size_t n, uint8_t out[CN_DIGEST_LEN]);

CN_API cn_err_t cn_md5_new(cn_md5_t **out);
CN_API void cn_md5_update(cn_md5_t *h, const void *p, size_t n);
CN_API void cn_md5_final(cn_md5_t *h, uint8_t out[CN_MD5_LEN]); /* frees h */
CN_API void cn_md5_free(cn_md5_t *h);
CN_API void cn_md5(const void *p, size_t n, uint8_t out[CN_MD5_LEN]);

CN_API void cn_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                           uint8_t out[CN_DIGEST_LEN]);

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

#ifdef __cplusplus
}
#endif
#endif
