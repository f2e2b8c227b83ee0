/* SHA-256, MD5 and HMAC-SHA256 through OpenSSL EVP (include/cairn/crypto.h). */
#include "cairn/crypto.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

struct cn_sha256 {
    EVP_MD_CTX *ctx;
};
struct cn_md5 {
    EVP_MD_CTX *ctx;
};

static EVP_MD_CTX *md_new(const EVP_MD *md)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx && EVP_DigestInit_ex(ctx, md, NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        ctx = NULL;
    }
    return ctx;
}

cn_err_t cn_sha256_new(cn_sha256_t **out)
{
    EVP_MD_CTX *ctx = md_new(EVP_sha256());
    if (!ctx)
        return -ENOMEM;
    *out = (cn_sha256_t *)ctx;
    return CN_OK;
}

void cn_sha256_update(cn_sha256_t *h, const void *p, size_t n)
{
    EVP_DigestUpdate((EVP_MD_CTX *)h, p, n);
}

void cn_sha256_final(cn_sha256_t *h, uint8_t out[CN_DIGEST_LEN])
{
    unsigned int len = CN_DIGEST_LEN;
    EVP_DigestFinal_ex((EVP_MD_CTX *)h, out, &len);
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

void cn_sha256_free(cn_sha256_t *h)
{
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

void cn_sha256(const void *p, size_t n, uint8_t out[CN_DIGEST_LEN])
{
    unsigned int len = CN_DIGEST_LEN;
    EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

cn_err_t cn_md5_new(cn_md5_t **out)
{
    EVP_MD_CTX *ctx = md_new(EVP_md5());
    if (!ctx)
        return -ENOMEM;
    *out = (cn_md5_t *)ctx;
    return CN_OK;
}

void cn_md5_update(cn_md5_t *h, const void *p, size_t n)
{
    EVP_DigestUpdate((EVP_MD_CTX *)h, p, n);
}

void cn_md5_final(cn_md5_t *h, uint8_t out[CN_MD5_LEN])
{
    unsigned int len = CN_MD5_LEN;
    EVP_DigestFinal_ex((EVP_MD_CTX *)h, out, &len);
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

void cn_md5_free(cn_md5_t *h)
{
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

void cn_md5(const void *p, size_t n, uint8_t out[CN_MD5_LEN])
{
    unsigned int len = CN_MD5_LEN;
    EVP_Digest(p, n, out, &len, EVP_md5(), NULL);
}

void cn_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                    uint8_t out[CN_DIGEST_LEN])
{
    unsigned int len = CN_DIGEST_LEN;
    HMAC(EVP_sha256(), key, (int)key_len, msg, msg_len, out, &len);
}
