/* One-shot SHA-256 and HMAC-SHA256 (include/cairn/crypto.h) on OpenSSL's
 * plain SHA256_CTX.
 *
 * Why not EVP, as hash.c: OpenSSL 3.0 allocates a digest's state at every
 * EVP_DigestInit_ex and at every EVP_MD_CTX_copy_ex, and dispatches each call
 * through its provider; a SigV4 verification is one SHA-256 and one HMAC,
 * and measured per HMAC of a string to sign (131 bytes): EVP with the padded
 * key hashed per call 13.8k instructions (callgrind) / 350 ns (SHA-NI),
 * EVP_MD_CTX_copy_ex of prepared states 9.4k / 233 ns, EVP_MAC_CTX_dup 13.5k
 * / 646 ns, SHA256_CTX copies 8.2k / 197 ns.  SHA256_CTX is a plain struct:
 * a prepared key is two of them (the states after the key's ipad and opad
 * blocks) copied by assignment, with no allocation and no failure path.
 * The low-level functions are deprecated since OpenSSL 3.0 (still in 4.0)
 * but are the same code the default provider runs (the same block function
 * and its SHA-NI/AVX2 dispatch), so the digests are bit for bit the same;
 * the deprecation is silenced in this file only.  A build of OpenSSL without
 * the deprecated API fails here, loudly, rather than silently slower.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "cairn/crypto.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>

#ifdef OPENSSL_NO_DEPRECATED_3_0
#error "src/crypto/hmac.c needs OpenSSL's SHA256_Init/Update/Final (built without deprecated APIs)"
#endif

#define HMAC_BLOCK SHA256_CBLOCK /* 64 */

/* The two states of a prepared key, as cn_hmac_sha256_key_t's bytes. */
typedef struct {
    SHA256_CTX inner, outer;
} hk_t;

_Static_assert(sizeof(hk_t) <= sizeof(cn_hmac_sha256_key_t), "cn_hmac_sha256_key_t too small");
_Static_assert(_Alignof(hk_t) <= _Alignof(cn_hmac_sha256_key_t), "cn_hmac_sha256_key_t misaligned");

void cn_sha256(const void *p, size_t n, uint8_t out[CN_DIGEST_LEN])
{
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, p, n);
    SHA256_Final(out, &c);
}

void cn_hmac_sha256_key_init(cn_hmac_sha256_key_t *key, const void *k, size_t k_len)
{
    hk_t *h = (hk_t *)key->opaque;
    uint8_t kb[HMAC_BLOCK] = { 0 }, pad[HMAC_BLOCK];
    if (k_len > HMAC_BLOCK)
        cn_sha256(k, k_len, kb); /* a long key is hashed first (RFC 2104) */
    else if (k_len)
        memcpy(kb, k, k_len);
    for (size_t i = 0; i < HMAC_BLOCK; i++)
        pad[i] = kb[i] ^ 0x36;
    SHA256_Init(&h->inner);
    SHA256_Update(&h->inner, pad, HMAC_BLOCK);
    for (size_t i = 0; i < HMAC_BLOCK; i++)
        pad[i] = kb[i] ^ 0x5c;
    SHA256_Init(&h->outer);
    SHA256_Update(&h->outer, pad, HMAC_BLOCK);
    OPENSSL_cleanse(kb, sizeof kb);
    OPENSSL_cleanse(pad, sizeof pad);
}

void cn_hmac_sha256_keyed(const cn_hmac_sha256_key_t *key, const void *msg, size_t msg_len,
                          uint8_t out[CN_DIGEST_LEN])
{
    const hk_t *h = (const hk_t *)key->opaque;
    uint8_t inner[CN_DIGEST_LEN];
    /* c holds a key state only until its update; SHA256_Final wipes the
     * buffered block and leaves a digest, so nothing of the key is left. */
    SHA256_CTX c = h->inner;
    SHA256_Update(&c, msg, msg_len);
    SHA256_Final(inner, &c);
    c = h->outer;
    SHA256_Update(&c, inner, sizeof inner);
    SHA256_Final(out, &c);
    OPENSSL_cleanse(inner, sizeof inner);
}

void cn_hmac_sha256_key_wipe(cn_hmac_sha256_key_t *key)
{
    OPENSSL_cleanse(key, sizeof *key);
}

void cn_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                    uint8_t out[CN_DIGEST_LEN])
{
    cn_hmac_sha256_key_t k;
    cn_hmac_sha256_key_init(&k, key, key_len);
    cn_hmac_sha256_keyed(&k, msg, msg_len, out);
    cn_hmac_sha256_key_wipe(&k);
}
