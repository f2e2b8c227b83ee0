/* BLAKE3-256 over the official C implementation (include/cairn/crypto.h). */
#include "cairn/crypto.h"

#include <blake3.h>
#include <openssl/crypto.h>
#include <string.h>

_Static_assert(sizeof(blake3_hasher) <= sizeof(((cn_blake3_t *)0)->opaque),
               "cn_blake3_t too small for blake3_hasher");
_Static_assert(_Alignof(blake3_hasher) <= 16, "cn_blake3_t alignment");

void cn_blake3_init(cn_blake3_t *h)
{
    blake3_hasher_init((blake3_hasher *)h->opaque);
}

void cn_blake3_update(cn_blake3_t *h, const void *p, size_t n)
{
    blake3_hasher_update((blake3_hasher *)h->opaque, p, n);
}

void cn_blake3_final(const cn_blake3_t *h, cn_digest_t *out)
{
    blake3_hasher_finalize((const blake3_hasher *)h->opaque, out->b, CN_DIGEST_LEN);
}

void cn_blake3(const void *p, size_t n, cn_digest_t *out)
{
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, p, n);
    cn_blake3_final(&h, out);
}

void cn_blake3_keyed(const uint8_t key[CN_DIGEST_LEN], const void *p, size_t n, cn_digest_t *out)
{
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, key);
    blake3_hasher_update(&h, p, n);
    blake3_hasher_finalize(&h, out->b, CN_DIGEST_LEN);
    /* The chunk state holds the last block of input; the stack of chaining
     * values, only past a chunk (1 KiB). */
    OPENSSL_cleanse(&h.chunk, sizeof h.chunk);
    if (n > BLAKE3_CHUNK_LEN)
        OPENSSL_cleanse(&h, sizeof h);
}

const char *cn_blake3_backend(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
        return "avx512";
    if (__builtin_cpu_supports("avx2"))
        return "avx2";
    if (__builtin_cpu_supports("sse4.1"))
        return "sse41";
    return "sse2";
#elif defined(__aarch64__)
    return "neon";
#else
    return "portable";
#endif
}
