/* Streaming SHA-256 and MD5, and one-shot MD5, through OpenSSL EVP
 * (include/cairn/crypto.h); one-shot SHA-256 and HMAC-SHA256 are in hmac.c,
 * on OpenSSL's plain SHA256_CTX (no allocation; the reasons are there).
 *
 * The digests are fetched from OpenSSL's provider once per process, and the
 * one-shot cn_md5 reuses one digest context per thread: the implicit fetch
 * and the context that OpenSSL 3.0 sets up per call were most of a SigV4
 * verification's cost after its signing-key cache.  OpenSSL 3.0 still
 * allocates its digest state at every init.  Must never share a context
 * between threads.
 */
#include "cairn/crypto.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct cn_sha256 {
    EVP_MD_CTX *ctx;
};
struct cn_md5 {
    EVP_MD_CTX *ctx;
};

/* Fetched once; NULL when the provider lacks the algorithm (then every call
 * falls back to OpenSSL's implicit fetch, which fails the same way). */
static pthread_once_t algs_once = PTHREAD_ONCE_INIT;
static EVP_MD *alg_sha256;
static EVP_MD *alg_md5;

/* Per-thread context for the one-shot functions, freed at thread exit. */
typedef struct {
    EVP_MD_CTX *md;
} tls_ctx_t;
static pthread_key_t tls_key;
static bool tls_ok;

static void tls_free(void *p)
{
    tls_ctx_t *t = p;
    EVP_MD_CTX_free(t->md);
    free(t);
}

static void algs_init(void)
{
    alg_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    alg_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
    tls_ok = pthread_key_create(&tls_key, tls_free) == 0;
}

static const EVP_MD *sha256_md(void)
{
    pthread_once(&algs_once, algs_init);
    return alg_sha256 ? alg_sha256 : EVP_sha256();
}

static const EVP_MD *md5_md(void)
{
    pthread_once(&algs_once, algs_init);
    return alg_md5 ? alg_md5 : EVP_md5();
}

/* The calling thread's context, created on first use; NULL without memory
 * (callers then take the allocating path). */
static tls_ctx_t *tls_get(void)
{
    pthread_once(&algs_once, algs_init);
    if (!tls_ok)
        return NULL;
    tls_ctx_t *t = pthread_getspecific(tls_key);
    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->md = EVP_MD_CTX_new();
    if (!t->md || pthread_setspecific(tls_key, t) != 0) {
        tls_free(t);
        return NULL;
    }
    return t;
}

static EVP_MD_CTX *md_new(const EVP_MD *md)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx && EVP_DigestInit_ex(ctx, md, NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        ctx = NULL;
    }
    return ctx;
}

/* The digest of the concatenation of parts through the thread's context t;
 * false when t is NULL or OpenSSL failed (out is then not to be used: the
 * caller computes the value through the allocating one-shot instead). */
static bool digest_parts(tls_ctx_t *t, const EVP_MD *md, const void *const *p, const size_t *n,
                         size_t parts, uint8_t *out)
{
    unsigned int len = 0;
    if (!t || EVP_DigestInit_ex(t->md, md, NULL) != 1)
        return false;
    for (size_t i = 0; i < parts; i++)
        if (EVP_DigestUpdate(t->md, p[i], n[i]) != 1)
            return false;
    return EVP_DigestFinal_ex(t->md, out, &len) == 1;
}

static void digest_once(const EVP_MD *md, const void *p, size_t n, uint8_t *out)
{
    unsigned int len = 0;
    if (!digest_parts(tls_get(), md, &p, &n, 1, out))
        EVP_Digest(p, n, out, &len, md, NULL);
}

cn_err_t cn_sha256_new(cn_sha256_t **out)
{
    EVP_MD_CTX *ctx = md_new(sha256_md());
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

cn_err_t cn_sha256_copy(const cn_sha256_t *h, cn_sha256_t **out)
{
    *out = NULL;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return -ENOMEM;
    if (EVP_MD_CTX_copy_ex(ctx, (const EVP_MD_CTX *)h) != 1) {
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    *out = (cn_sha256_t *)ctx;
    return CN_OK;
}

void cn_sha256_free(cn_sha256_t *h)
{
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

cn_err_t cn_md5_new(cn_md5_t **out)
{
    EVP_MD_CTX *ctx = md_new(md5_md());
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
    digest_once(md5_md(), p, n, out);
}
