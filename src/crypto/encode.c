/* Random bytes, constant-time comparison, hex and base64 (include/cairn/crypto.h). */
#include "cairn/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

cn_err_t cn_random_bytes(void *out, size_t n)
{
    if (n > 0x7fffffff || RAND_bytes(out, (int)n) != 1)
        return CN_E_UNSUPPORTED;
    return CN_OK;
}

bool cn_ct_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

void cn_hex_encode(const void *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[s[i] >> 4];
        out[2 * i + 1] = digits[s[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

cn_err_t cn_hex_decode(const char *hex, size_t hex_len, void *out, size_t n)
{
    if (hex_len != 2 * n)
        return CN_E_INVALID;
    uint8_t *d = out;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return CN_E_INVALID;
        d[i] = (uint8_t)(hi << 4 | lo);
    }
    return CN_OK;
}

void cn_digest_hex(const cn_digest_t *d, char out[CN_DIGEST_HEX_LEN + 1])
{
    cn_hex_encode(d->b, CN_DIGEST_LEN, out);
}

cn_err_t cn_digest_parse(const char *hex, size_t hex_len, cn_digest_t *out)
{
    return cn_hex_decode(hex, hex_len, out->b, CN_DIGEST_LEN);
}

void cn_base64_encode(const void *p, size_t n, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, p, (int)n);
}

long cn_base64_decode(const char *s, size_t len, void *out, size_t out_cap)
{
    if (len % 4 != 0 || len / 4 * 3 > out_cap || len > 0x7ffffff0)
        return CN_E_INVALID;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '+' || c == '/' || (c == '=' && i >= len - 2);
        if (!ok || (c != '=' && i == len - 1 && s[len - 2] == '='))
            return CN_E_INVALID;
    }
    int r = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
    if (r < 0)
        return CN_E_INVALID;
    /* EVP_DecodeBlock counts padding as zero bytes; take them back. */
    if (len >= 1 && s[len - 1] == '=')
        r--;
    if (len >= 2 && s[len - 2] == '=')
        r--;
    return r;
}
