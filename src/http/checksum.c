/* The x-amz-checksum-* algorithms S3 clients send: CRC32, CRC32C, CRC64NVME,
 * SHA1, SHA256 (include/cairn/http.h).  Values are big-endian raw bytes,
 * base64 on the wire, as S3 encodes them. */
#include "cairn/http.h"
#include "cairn/crypto.h"

#include <errno.h>
#include <pthread.h>
#include <openssl/evp.h>
#include <string.h>
#include <strings.h>

static const struct {
    cn_http_cksum_alg_t alg;
    const char *name;
    const char *header;
    size_t len;
} cn__algs[] = {
    { CN_CKSUM_CRC32, "CRC32", "x-amz-checksum-crc32", 4 },
    { CN_CKSUM_CRC32C, "CRC32C", "x-amz-checksum-crc32c", 4 },
    { CN_CKSUM_CRC64NVME, "CRC64NVME", "x-amz-checksum-crc64nvme", 8 },
    { CN_CKSUM_SHA1, "SHA1", "x-amz-checksum-sha1", 20 },
    { CN_CKSUM_SHA256, "SHA256", "x-amz-checksum-sha256", 32 },
};
#define CN__NALGS (sizeof cn__algs / sizeof cn__algs[0])

cn_http_cksum_alg_t cn_http_cksum_parse(const char *name)
{
    if (!name)
        return CN_CKSUM_NONE;
    if (strncasecmp(name, "x-amz-checksum-", 15) == 0)
        name += 15;
    for (size_t i = 0; i < CN__NALGS; i++)
        if (strcasecmp(name, cn__algs[i].name) == 0)
            return cn__algs[i].alg;
    return CN_CKSUM_NONE;
}

static int idx(cn_http_cksum_alg_t alg)
{
    for (size_t i = 0; i < CN__NALGS; i++)
        if (cn__algs[i].alg == alg)
            return (int)i;
    return -1;
}

const char *cn_http_cksum_header(cn_http_cksum_alg_t alg)
{
    int i = idx(alg);
    return i < 0 ? NULL : cn__algs[i].header;
}

const char *cn_http_cksum_name(cn_http_cksum_alg_t alg)
{
    int i = idx(alg);
    return i < 0 ? NULL : cn__algs[i].name;
}

size_t cn_http_cksum_len(cn_http_cksum_alg_t alg)
{
    int i = idx(alg);
    return i < 0 ? 0 : cn__algs[i].len;
}

/* CRC-64/NVME: reflected polynomial 0x9A6C9329AC4BC9B5, init and xorout all
 * ones; check("123456789") = 0xAE8B14860A799888.  Slicing-by-8 tables. */
static uint64_t cn__crc64_tab[8][256];
static pthread_once_t cn__crc64_once = PTHREAD_ONCE_INIT;

static void crc64_init(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x9A6C9329AC4BC9B5ull : c >> 1;
        cn__crc64_tab[0][i] = c;
    }
    for (unsigned i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            cn__crc64_tab[t][i] =
                (cn__crc64_tab[t - 1][i] >> 8) ^ cn__crc64_tab[0][cn__crc64_tab[t - 1][i] & 0xff];
}

uint64_t cn_crc64nvme(uint64_t crc, const void *p, size_t n)
{
    pthread_once(&cn__crc64_once, crc64_init);
    const uint8_t *b = p;
    uint64_t c = ~crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, b, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        c ^= v;
        c = cn__crc64_tab[7][c & 0xff] ^ cn__crc64_tab[6][(c >> 8) & 0xff] ^
            cn__crc64_tab[5][(c >> 16) & 0xff] ^ cn__crc64_tab[4][(c >> 24) & 0xff] ^
            cn__crc64_tab[3][(c >> 32) & 0xff] ^ cn__crc64_tab[2][(c >> 40) & 0xff] ^
            cn__crc64_tab[1][(c >> 48) & 0xff] ^ cn__crc64_tab[0][c >> 56];
        b += 8;
        n -= 8;
    }
    while (n--)
        c = cn__crc64_tab[0][(c ^ *b++) & 0xff] ^ (c >> 8);
    return ~c;
}

cn_err_t cn_http_cksum_init(cn_http_cksum_t *c, cn_http_cksum_alg_t alg)
{
    memset(c, 0, sizeof *c);
    c->alg = alg;
    if (alg == CN_CKSUM_SHA1 || alg == CN_CKSUM_SHA256) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (!ctx)
            return -ENOMEM;
        if (EVP_DigestInit_ex(ctx, alg == CN_CKSUM_SHA1 ? EVP_sha1() : EVP_sha256(), NULL) != 1) {
            EVP_MD_CTX_free(ctx);
            return -ENOMEM;
        }
        c->md = ctx;
    } else if (idx(alg) < 0 && alg != CN_CKSUM_NONE) {
        return CN_E_INVALID;
    }
    return CN_OK;
}

void cn_http_cksum_update(cn_http_cksum_t *c, const void *p, size_t n)
{
    switch (c->alg) {
    case CN_CKSUM_CRC32: c->crc = cn_crc32((uint32_t)c->crc, p, n); break;
    case CN_CKSUM_CRC32C: c->crc = cn_crc32c((uint32_t)c->crc, p, n); break;
    case CN_CKSUM_CRC64NVME: c->crc = cn_crc64nvme(c->crc, p, n); break;
    case CN_CKSUM_SHA1:
    case CN_CKSUM_SHA256:
        if (c->md)
            EVP_DigestUpdate(c->md, p, n);
        break;
    default: break;
    }
}

size_t cn_http_cksum_final(cn_http_cksum_t *c, uint8_t raw[CN_CKSUM_MAX_LEN],
                           char b64[CN_CKSUM_B64_LEN])
{
    size_t len = cn_http_cksum_len(c->alg);
    switch (c->alg) {
    case CN_CKSUM_CRC32:
    case CN_CKSUM_CRC32C: cn_store_u32be(raw, (uint32_t)c->crc); break;
    case CN_CKSUM_CRC64NVME: cn_store_u64be(raw, c->crc); break;
    case CN_CKSUM_SHA1:
    case CN_CKSUM_SHA256: {
        unsigned int l = (unsigned int)len;
        if (c->md)
            EVP_DigestFinal_ex(c->md, raw, &l);
        break;
    }
    default: len = 0; break;
    }
    cn_base64_encode(raw, len, b64);
    cn_http_cksum_free(c);
    return len;
}

void cn_http_cksum_free(cn_http_cksum_t *c)
{
    if (c && c->md) {
        EVP_MD_CTX_free(c->md);
        c->md = NULL;
    }
}
