/* The TLS 1.3 hybrid key exchange X25519MLKEM768 for OpenSSL 3.0, which has
 * no ML-KEM: a small OpenSSL provider built into cairn that offers the group
 * through the TLS-GROUP capability (IANA 0x11EC) with a key manager and a KEM
 * of the same name, the mechanism libssl 3.0 uses for any provider group.
 *
 * The layout is the IETF hybrid design's for this group
 * (draft-ietf-tls-ecdhe-mlkem, draft-kwiatkowski-tls-ecdhe-mlkem before it),
 * ML-KEM first in every field:
 *   client share  = ML-KEM-768 encapsulation key (1,184) || X25519 public key (32)
 *   server share  = ML-KEM-768 ciphertext (1,088)        || X25519 public key (32)
 *   shared secret = ML-KEM-768 shared secret (32)         || X25519 shared secret (32)
 * libssl generates the client's key (keygen), gives the server an empty key
 * (paramgen) and sets the peer's share on it, calls encapsulate on the server
 * and decapsulate on the client, and feeds the 64-byte secret to TLS 1.3's
 * key schedule as it would an ECDH secret.
 *
 * This file must never compute X25519 (OpenSSL's default provider does, through
 * EVP) or ML-KEM (mlkem.c does, over PQClean), nor be loaded into any library
 * context but the default one. */
#include "cairn/crypto.h"

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#define GROUP_NAME "X25519MLKEM768"
#define PROV_NAME "cairn-pq"
#define X_LEN 32
#define CLIENT_SHARE_LEN (CN_MLKEM768_EK_LEN + X_LEN) /* 1,216 */
#define SERVER_SHARE_LEN (CN_MLKEM768_CT_LEN + X_LEN) /* 1,120 */
#define SECRET_LEN (CN_MLKEM768_SS_LEN + X_LEN)       /* 64 */

/* One key: the client's key pair, or on the server only the client's share. */
typedef struct {
    bool has_pub, has_priv;
    uint8_t pub[CLIENT_SHARE_LEN]; /* ek || X25519 public: the encoded public key */
    uint8_t dk[CN_MLKEM768_DK_LEN];
    uint8_t x_priv[X_LEN];
} hkey_t;

/* ---- X25519, from OpenSSL ----------------------------------------------- */

static EVP_PKEY *x25519_key(const uint8_t *raw, bool priv)
{
    return priv ? EVP_PKEY_new_raw_private_key_ex(NULL, "X25519", NULL, raw, X_LEN)
                : EVP_PKEY_new_raw_public_key_ex(NULL, "X25519", NULL, raw, X_LEN);
}

/* A fresh X25519 private key and its public key. */
static bool x25519_keygen(uint8_t priv[X_LEN], uint8_t pub[X_LEN])
{
    if (RAND_bytes(priv, X_LEN) != 1)
        return false;
    EVP_PKEY *k = x25519_key(priv, true);
    size_t n = X_LEN;
    bool ok = k && EVP_PKEY_get_raw_public_key(k, pub, &n) == 1 && n == X_LEN;
    EVP_PKEY_free(k);
    return ok;
}

/* X25519(priv, peer); false on a low-order peer key (an all-zero result,
 * which OpenSSL refuses), as the hybrid design requires. */
static bool x25519_derive(const uint8_t priv[X_LEN], const uint8_t peer[X_LEN], uint8_t out[X_LEN])
{
    EVP_PKEY *k = x25519_key(priv, true), *p = x25519_key(peer, false);
    EVP_PKEY_CTX *c = k ? EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL) : NULL;
    size_t n = X_LEN;
    bool ok = c && p && EVP_PKEY_derive_init(c) == 1 && EVP_PKEY_derive_set_peer(c, p) == 1 &&
              EVP_PKEY_derive(c, out, &n) == 1 && n == X_LEN;
    EVP_PKEY_CTX_free(c);
    EVP_PKEY_free(p);
    EVP_PKEY_free(k);
    return ok;
}

/* ---- the key manager ---------------------------------------------------- */

static void *km_new(void *provctx)
{
    (void)provctx;
    return OPENSSL_zalloc(sizeof(hkey_t));
}

static void km_free(void *key)
{
    OPENSSL_clear_free(key, sizeof(hkey_t));
}

static int km_has(const void *keydata, int selection)
{
    const hkey_t *k = keydata;
    if (!k)
        return 0;
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) && !k->has_priv)
        return 0;
    if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) && !k->has_pub)
        return 0;
    return 1;
}

static int km_get_params(void *keydata, OSSL_PARAM params[])
{
    const hkey_t *k = keydata;
    OSSL_PARAM *p;
    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_BITS)) &&
        !OSSL_PARAM_set_int(p, 8 * CLIENT_SHARE_LEN))
        return 0;
    /* NIST category 3, as ML-KEM-768 alone. */
    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_SECURITY_BITS)) &&
        !OSSL_PARAM_set_int(p, 192))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_MAX_SIZE)) &&
        !OSSL_PARAM_set_int(p, SERVER_SHARE_LEN))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY)) &&
        (!k->has_pub || !OSSL_PARAM_set_octet_string(p, k->pub, sizeof k->pub)))
        return 0;
    return 1;
}

static const OSSL_PARAM *km_gettable_params(void *provctx)
{
    static const OSSL_PARAM list[] = {
        OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, NULL),
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, NULL, 0),
        OSSL_PARAM_END,
    };
    (void)provctx;
    return list;
}

/* The server side: the client's share, which must be exactly 1,216 bytes. */
static int km_set_params(void *keydata, const OSSL_PARAM params[])
{
    hkey_t *k = keydata;
    const OSSL_PARAM *p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY);
    if (!p)
        return 1;
    void *dst = k->pub;
    size_t n = 0;
    if (p->data_size != sizeof k->pub || !OSSL_PARAM_get_octet_string(p, &dst, sizeof k->pub, &n) ||
        n != sizeof k->pub)
        return 0;
    OPENSSL_cleanse(k->dk, sizeof k->dk);
    OPENSSL_cleanse(k->x_priv, sizeof k->x_priv);
    k->has_pub = true;
    k->has_priv = false;
    return 1;
}

static const OSSL_PARAM *km_settable_params(void *provctx)
{
    static const OSSL_PARAM list[] = {
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, NULL, 0),
        OSSL_PARAM_END,
    };
    (void)provctx;
    return list;
}

typedef struct {
    int selection;
} gen_t;

static int gen_set_params(void *genctx, const OSSL_PARAM params[])
{
    const OSSL_PARAM *p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_GROUP_NAME);
    const char *name = NULL;
    (void)genctx;
    /* libssl names the group it asked for; there is only one. */
    if (p && (!OSSL_PARAM_get_utf8_string_ptr(p, &name) || strcasecmp(name, GROUP_NAME) != 0))
        return 0;
    return 1;
}

static const OSSL_PARAM *gen_settable_params(void *genctx, void *provctx)
{
    static const OSSL_PARAM list[] = {
        OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, NULL, 0),
        OSSL_PARAM_END,
    };
    (void)genctx;
    (void)provctx;
    return list;
}

static void *gen_init(void *provctx, int selection, const OSSL_PARAM params[])
{
    (void)provctx;
    gen_t *g = OPENSSL_zalloc(sizeof *g);
    if (g)
        g->selection = selection;
    if (g && !gen_set_params(g, params)) {
        OPENSSL_free(g);
        return NULL;
    }
    return g;
}

/* A key pair when asked for one (the client); an empty key for paramgen (the
 * server, which then receives the client's share through km_set_params). */
static void *gen(void *genctx, OSSL_CALLBACK *cb, void *cbarg)
{
    const gen_t *g = genctx;
    (void)cb;
    (void)cbarg;
    hkey_t *k = km_new(NULL);
    if (!k || !(g->selection & OSSL_KEYMGMT_SELECT_KEYPAIR))
        return k;
    uint8_t coins[64];
    bool ok = RAND_bytes(coins, sizeof coins) == 1;
    if (ok) {
        cn_mlkem768_keypair(k->pub, k->dk, coins);
        ok = x25519_keygen(k->x_priv, k->pub + CN_MLKEM768_EK_LEN);
    }
    OPENSSL_cleanse(coins, sizeof coins);
    if (!ok) {
        km_free(k);
        return NULL;
    }
    k->has_pub = k->has_priv = true;
    return k;
}

static void gen_cleanup(void *genctx)
{
    OPENSSL_free(genctx);
}

static const OSSL_DISPATCH km_fns[] = {
    { OSSL_FUNC_KEYMGMT_NEW, (void (*)(void))km_new },
    { OSSL_FUNC_KEYMGMT_FREE, (void (*)(void))km_free },
    { OSSL_FUNC_KEYMGMT_HAS, (void (*)(void))km_has },
    { OSSL_FUNC_KEYMGMT_GET_PARAMS, (void (*)(void))km_get_params },
    { OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, (void (*)(void))km_gettable_params },
    { OSSL_FUNC_KEYMGMT_SET_PARAMS, (void (*)(void))km_set_params },
    { OSSL_FUNC_KEYMGMT_SETTABLE_PARAMS, (void (*)(void))km_settable_params },
    { OSSL_FUNC_KEYMGMT_GEN_INIT, (void (*)(void))gen_init },
    { OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS, (void (*)(void))gen_set_params },
    { OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS, (void (*)(void))gen_settable_params },
    { OSSL_FUNC_KEYMGMT_GEN, (void (*)(void))gen },
    { OSSL_FUNC_KEYMGMT_GEN_CLEANUP, (void (*)(void))gen_cleanup },
    { 0, NULL },
};

/* ---- the KEM ------------------------------------------------------------ */

/* The KEM context only borrows the key: EVP holds it for the operation. */
typedef struct {
    const hkey_t *key;
} kem_t;

static void *kem_newctx(void *provctx)
{
    (void)provctx;
    return OPENSSL_zalloc(sizeof(kem_t));
}

static void kem_freectx(void *ctx)
{
    OPENSSL_free(ctx);
}

static int kem_encaps_init(void *ctx, void *key, const OSSL_PARAM params[])
{
    (void)params;
    ((kem_t *)ctx)->key = key;
    return key && ((const hkey_t *)key)->has_pub;
}

static int kem_decaps_init(void *ctx, void *key, const OSSL_PARAM params[])
{
    (void)params;
    ((kem_t *)ctx)->key = key;
    return key && ((const hkey_t *)key)->has_priv;
}

/* The server: ciphertext || ephemeral X25519 public key, and the secret.
 * Fails on an encapsulation key over the modulus or a low-order X25519 key,
 * which ends the handshake. */
static int kem_encaps(void *ctx, unsigned char *out, size_t *outlen, unsigned char *secret,
                      size_t *secretlen)
{
    const hkey_t *k = ((kem_t *)ctx)->key;
    if (!out) {
        *outlen = SERVER_SHARE_LEN;
        *secretlen = SECRET_LEN;
        return 1;
    }
    if (*outlen < SERVER_SHARE_LEN || *secretlen < SECRET_LEN)
        return 0;
    uint8_t m[32], e[X_LEN];
    bool ok = RAND_bytes(m, sizeof m) == 1 && cn_mlkem768_encaps(out, secret, k->pub, m) == CN_OK &&
              x25519_keygen(e, out + CN_MLKEM768_CT_LEN) &&
              x25519_derive(e, k->pub + CN_MLKEM768_EK_LEN, secret + CN_MLKEM768_SS_LEN);
    OPENSSL_cleanse(m, sizeof m);
    OPENSSL_cleanse(e, sizeof e);
    if (!ok) {
        OPENSSL_cleanse(secret, SECRET_LEN);
        return 0;
    }
    *outlen = SERVER_SHARE_LEN;
    *secretlen = SECRET_LEN;
    return 1;
}

/* The client: the secret from the server's share, which must be 1,120 bytes. */
static int kem_decaps(void *ctx, unsigned char *out, size_t *outlen, const unsigned char *in,
                      size_t inlen)
{
    const hkey_t *k = ((kem_t *)ctx)->key;
    if (!out) {
        *outlen = SECRET_LEN;
        return 1;
    }
    if (*outlen < SECRET_LEN || inlen != SERVER_SHARE_LEN)
        return 0;
    cn_mlkem768_decaps(out, in, k->dk);
    if (!x25519_derive(k->x_priv, in + CN_MLKEM768_CT_LEN, out + CN_MLKEM768_SS_LEN)) {
        OPENSSL_cleanse(out, SECRET_LEN);
        return 0;
    }
    *outlen = SECRET_LEN;
    return 1;
}

static const OSSL_DISPATCH kem_fns[] = {
    { OSSL_FUNC_KEM_NEWCTX, (void (*)(void))kem_newctx },
    { OSSL_FUNC_KEM_FREECTX, (void (*)(void))kem_freectx },
    { OSSL_FUNC_KEM_ENCAPSULATE_INIT, (void (*)(void))kem_encaps_init },
    { OSSL_FUNC_KEM_ENCAPSULATE, (void (*)(void))kem_encaps },
    { OSSL_FUNC_KEM_DECAPSULATE_INIT, (void (*)(void))kem_decaps_init },
    { OSSL_FUNC_KEM_DECAPSULATE, (void (*)(void))kem_decaps },
    { 0, NULL },
};

/* ---- the provider ------------------------------------------------------- */

static const OSSL_ALGORITHM km_algs[] = {
    { GROUP_NAME, "provider=" PROV_NAME, km_fns, "X25519MLKEM768 hybrid TLS key share" },
    { NULL, NULL, NULL, NULL },
};
static const OSSL_ALGORITHM kem_algs[] = {
    { GROUP_NAME, "provider=" PROV_NAME, kem_fns, "X25519MLKEM768 hybrid TLS KEM" },
    { NULL, NULL, NULL, NULL },
};

static const OSSL_ALGORITHM *prov_query(void *provctx, int operation_id, int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
    return operation_id == OSSL_OP_KEYMGMT ? km_algs
           : operation_id == OSSL_OP_KEM   ? kem_algs
                                           : NULL;
}

/* What libssl reads to add the group: its names, codepoint, strength, the
 * protocol versions (TLS 1.3 only, no DTLS) and that it is a KEM. */
static const unsigned int group_id = CN_TLS_GROUP_X25519MLKEM768, group_secbits = 192,
                          group_is_kem = 1;
static const int group_min_tls = TLS1_3_VERSION, group_max_tls = 0, group_no_dtls = -1;
#define STR_PARAM(key)                                                        \
    {                                                                         \
        key, OSSL_PARAM_UTF8_STRING, (void *)GROUP_NAME, sizeof GROUP_NAME, 0 \
    }
#define NUM_PARAM(key, type, var)              \
    {                                          \
        key, type, (void *)&var, sizeof var, 0 \
    }
static const OSSL_PARAM group_params[] = {
    STR_PARAM(OSSL_CAPABILITY_TLS_GROUP_NAME),
    STR_PARAM(OSSL_CAPABILITY_TLS_GROUP_NAME_INTERNAL),
    STR_PARAM(OSSL_CAPABILITY_TLS_GROUP_ALG),
    NUM_PARAM(OSSL_CAPABILITY_TLS_GROUP_ID, OSSL_PARAM_UNSIGNED_INTEGER, group_id),
    NUM_PARAM(OSSL_CAPABILITY_TLS_GROUP_SECURITY_BITS, OSSL_PARAM_UNSIGNED_INTEGER, group_secbits),
    NUM_PARAM(OSSL_CAPABILITY_TLS_GROUP_MIN_TLS, OSSL_PARAM_INTEGER, group_min_tls),
    NUM_PARAM(OSSL_CAPABILITY_TLS_GROUP_MAX_TLS, OSSL_PARAM_INTEGER, group_max_tls),
    NUM_PARAM(OSSL_CAPABILITY_TLS_GROUP_MIN_DTLS, OSSL_PARAM_INTEGER, group_no_dtls),
    NUM_PARAM(OSSL_CAPABILITY_TLS_GROUP_MAX_DTLS, OSSL_PARAM_INTEGER, group_no_dtls),
    NUM_PARAM(OSSL_CAPABILITY_TLS_GROUP_IS_KEM, OSSL_PARAM_UNSIGNED_INTEGER, group_is_kem),
    OSSL_PARAM_END,
};

static int prov_capabilities(void *provctx, const char *capability, OSSL_CALLBACK *cb, void *arg)
{
    (void)provctx;
    if (strcasecmp(capability, "TLS-GROUP") == 0)
        return cb(group_params, arg);
    return 1; /* no other capability: nothing to report is not an error */
}

static const OSSL_DISPATCH prov_fns[] = {
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))prov_query },
    { OSSL_FUNC_PROVIDER_GET_CAPABILITIES, (void (*)(void))prov_capabilities },
    { 0, NULL },
};

static int prov_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                     const OSSL_DISPATCH **out, void **provctx)
{
    (void)in;
    *out = prov_fns;
    *provctx = (void *)handle;
    return 1;
}

/* Registering a provider is process-wide in OpenSSL: once per process.  The
 * two handles stay loaded for the process's life; kept here so that they are
 * still referenced at exit (OPENSSL_cleanup drops only the store's own
 * references), which is what a leak checker asks. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cn_err_t load_result = CN_E_CORRUPT;
static OSSL_PROVIDER *prov_default, *prov_pq;

static void load(void)
{
    /* Loading any provider explicitly turns off the implicit "default" one,
     * which X25519, the ciphers and the certificates still need. */
    if (OSSL_PROVIDER_add_builtin(NULL, PROV_NAME, prov_init) == 1 &&
        (prov_default = OSSL_PROVIDER_load(NULL, "default")) != NULL &&
        (prov_pq = OSSL_PROVIDER_load(NULL, PROV_NAME)) != NULL)
        load_result = CN_OK;
}

cn_err_t cn_crypto_pq_load(void)
{
    pthread_once(&load_once, load);
    return load_result;
}

/* ---- contexts ----------------------------------------------------------- */

/* OpenSSL 3.0's own default order after the hybrid group. */
#define GROUPS_CLASSICAL \
    "X25519:P-256:X448:P-521:P-384:ffdhe2048:ffdhe3072:ffdhe4096:ffdhe6144:ffdhe8192"

cn_err_t cn_tls_ctx_set_groups(SSL_CTX *ctx, cn_tls_groups_t groups)
{
    const char *list =
        groups == CN_TLS_GROUPS_PQ_ONLY ? GROUP_NAME : GROUP_NAME ":" GROUPS_CLASSICAL;
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) || !SSL_CTX_set1_groups_list(ctx, list))
        return CN_E_CORRUPT;
    return CN_OK;
}

cn_err_t cn_tls_client_ctx_new(cn_tls_groups_t groups, SSL_CTX **out)
{
    *out = NULL;
    cn_err_t e = cn_crypto_pq_load();
    if (e < 0)
        return e;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return -ENOMEM;
    if ((e = cn_tls_ctx_set_groups(ctx, groups)) < 0) {
        SSL_CTX_free(ctx);
        return e;
    }
    *out = ctx;
    return CN_OK;
}

const char *cn_tls_negotiated_group(SSL *ssl)
{
    int nid = SSL_get_negotiated_group(ssl);
    const char *name = nid ? SSL_group_to_name(ssl, nid) : NULL;
    return name ? name : "none";
}
