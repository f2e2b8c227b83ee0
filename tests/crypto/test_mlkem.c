/* ML-KEM-768 and the X25519MLKEM768 TLS group.
 *
 * Known answers: PQClean publishes, for each scheme, the SHA-256 of the text
 * its NIST KAT generator prints (crypto_kem/ml-kem-768/META.yml,
 * "nistkat-sha256"): one count of NIST's PQCgenKAT_kem, whose randomness is
 * NIST's AES-256 CTR_DRBG seeded with the bytes 0..47.  The test rebuilds that
 * text from cairn's wrappers (the DRBG is written here from SP 800-90A, with
 * OpenSSL's AES) and compares the digest.  The TLS tests shake hands in
 * memory between contexts made by cairn's functions. */
#include "cn_test.h"
#include "cairn/crypto.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <string.h>

/* ---- NIST's KAT DRBG: AES-256 CTR_DRBG, no derivation function ---------- */

typedef struct {
    uint8_t key[32], v[16];
} drbg_t;

static void aes256_block(const uint8_t key[32], const uint8_t in[16], uint8_t out[16])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;
    EVP_EncryptInit_ex(c, EVP_aes_256_ecb(), NULL, key, NULL);
    EVP_CIPHER_CTX_set_padding(c, 0);
    EVP_EncryptUpdate(c, out, &n, in, 16);
    EVP_CIPHER_CTX_free(c);
}

static void v_increment(uint8_t v[16])
{
    for (int j = 15; j >= 0 && ++v[j] == 0; j--)
        ;
}

static void drbg_update(drbg_t *d, const uint8_t *provided)
{
    uint8_t t[48];
    for (int i = 0; i < 3; i++) {
        v_increment(d->v);
        aes256_block(d->key, d->v, t + 16 * i);
    }
    for (int i = 0; provided && i < 48; i++)
        t[i] ^= provided[i];
    memcpy(d->key, t, 32);
    memcpy(d->v, t + 32, 16);
}

static void drbg_init(drbg_t *d, const uint8_t seed[48])
{
    memset(d, 0, sizeof *d);
    drbg_update(d, seed);
}

static void drbg_bytes(drbg_t *d, uint8_t *out, size_t n)
{
    uint8_t block[16];
    while (n > 0) {
        v_increment(d->v);
        aes256_block(d->key, d->v, block);
        size_t k = n < 16 ? n : 16;
        memcpy(out, block, k);
        out += k;
        n -= k;
    }
    drbg_update(d, NULL);
}

static void hash_line(cn_sha256_t *h, const char *label, const uint8_t *p, size_t n)
{
    char hex[3];
    cn_sha256_update(h, label, strlen(label));
    for (size_t i = 0; i < n; i++) {
        snprintf(hex, sizeof hex, "%02X", p[i]);
        cn_sha256_update(h, hex, 2);
    }
    cn_sha256_update(h, "\n", 1);
}

static uint8_t ek[CN_MLKEM768_EK_LEN], dk[CN_MLKEM768_DK_LEN], ct[CN_MLKEM768_CT_LEN];

static void test_mlkem768_nist_kat(void)
{
    static const char want[] = "5352539586b6c3df58be6158a6250aeff402bd73060b0a3de68850ac074c17c3";
    uint8_t entropy[48], seed[48], coins[64], m[32], ss_e[32], ss_d[32], digest[32];
    char hex[65];
    drbg_t d;
    for (int i = 0; i < 48; i++)
        entropy[i] = (uint8_t)i;
    drbg_init(&d, entropy);
    drbg_bytes(&d, seed, sizeof seed);
    drbg_init(&d, seed);
    drbg_bytes(&d, coins, sizeof coins); /* KeyGen's d || z: one 64-byte draw */
    cn_mlkem768_keypair(ek, dk, coins);
    drbg_bytes(&d, m, sizeof m); /* Encaps' m */
    CN_CHECK_EQ(cn_mlkem768_encaps(ct, ss_e, ek, m), CN_OK);
    cn_mlkem768_decaps(ss_d, ct, dk);
    CN_CHECK_MEM(ss_e, ss_d, 32);

    cn_sha256_t *h = NULL;
    CN_CHECK_EQ(cn_sha256_new(&h), CN_OK);
    if (!h)
        return;
    cn_sha256_update(h, "count = 0\n", 10);
    hash_line(h, "seed = ", seed, sizeof seed);
    hash_line(h, "pk = ", ek, sizeof ek);
    hash_line(h, "sk = ", dk, sizeof dk);
    hash_line(h, "ct = ", ct, sizeof ct);
    hash_line(h, "ss = ", ss_e, sizeof ss_e);
    cn_sha256_final(h, digest);
    cn_hex_encode(digest, sizeof digest, hex);
    CN_CHECK_STR(hex, want);
}

/* FIPS 203's modulus check refuses a coefficient of q; a forged ciphertext
 * decapsulates to a different secret (implicit rejection), not an error. */
static void test_mlkem768_checks(void)
{
    uint8_t coins[64] = { 1 }, m[32] = { 2 }, ss[32], ss2[32], bad[CN_MLKEM768_EK_LEN];
    cn_mlkem768_keypair(ek, dk, coins);
    CN_CHECK_EQ(cn_mlkem768_encaps(ct, ss, ek, m), CN_OK);
    memcpy(bad, ek, sizeof bad);
    bad[0] = 0x01; /* first coefficient = 0xd01 = 3329 = q */
    bad[1] = (uint8_t)((bad[1] & 0xf0) | 0x0d);
    CN_CHECK_EQ(cn_mlkem768_encaps(ct, ss2, bad, m), CN_E_INVALID);
    ct[5] ^= 1;
    cn_mlkem768_decaps(ss2, ct, dk);
    CN_CHECK(memcmp(ss, ss2, 32) != 0);
    ct[5] ^= 1;
    cn_mlkem768_decaps(ss2, ct, dk);
    CN_CHECK_MEM(ss, ss2, 32);
}

/* ---- TLS in memory -------------------------------------------------------- */

/* A server context with a fresh self-signed P-256 certificate. */
static SSL_CTX *server_ctx(cn_tls_groups_t groups)
{
    SSL_CTX *ctx = NULL;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *x = X509_new();
    if (!key || !x)
        goto out;
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"localhost", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_set_pubkey(x, key);
    X509_sign(x, key, EVP_sha256());
    CN_CHECK_EQ(cn_crypto_pq_load(), CN_OK);
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || cn_tls_ctx_set_groups(ctx, groups) != CN_OK ||
        SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
        SSL_CTX_free(ctx);
        ctx = NULL;
    }
out:
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

/* Drives both ends over a BIO pair until both finish or one fails; 1 when
 * both completed.  The group names are written to cg and sg. */
static int handshake(SSL_CTX *sctx, SSL_CTX *cctx, const char **sg, const char **cg)
{
    SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
    BIO *bs = NULL, *bc = NULL;
    int done_s = 0, done_c = 0, ok = 0;
    BIO_new_bio_pair(&bs, 0, &bc, 0);
    SSL_set_bio(s, bs, bs);
    SSL_set_bio(c, bc, bc);
    SSL_set_accept_state(s);
    SSL_set_connect_state(c);
    for (int round = 0; round < 20 && !(done_s && done_c); round++) {
        int rc = done_c ? 1 : SSL_do_handshake(c), rs = done_s ? 1 : SSL_do_handshake(s);
        if (rc == 1)
            done_c = 1;
        else if (SSL_get_error(c, rc) != SSL_ERROR_WANT_READ)
            break;
        if (rs == 1)
            done_s = 1;
        else if (SSL_get_error(s, rs) != SSL_ERROR_WANT_READ)
            break;
    }
    if (done_s && done_c) {
        ok = 1;
        *sg = cn_tls_negotiated_group(s);
        *cg = cn_tls_negotiated_group(c);
    }
    SSL_free(s);
    SSL_free(c);
    return ok;
}

static void test_tls_group_pq_only(void)
{
    SSL_CTX *sctx = server_ctx(CN_TLS_GROUPS_PQ_ONLY), *cctx = NULL, *classic = NULL;
    const char *sg = NULL, *cg = NULL;
    CN_CHECK(sctx != NULL);
    CN_CHECK_EQ(cn_tls_client_ctx_new(CN_TLS_GROUPS_PQ_ONLY, &cctx), CN_OK);
    if (!sctx || !cctx)
        goto out;
    CN_CHECK_EQ(handshake(sctx, cctx, &sg, &cg), 1);
    CN_CHECK_STR(sg, "X25519MLKEM768");
    CN_CHECK_STR(cg, "X25519MLKEM768");
    /* A classical-only client cannot connect. */
    classic = SSL_CTX_new(TLS_client_method());
    CN_CHECK(classic && SSL_CTX_set1_groups_list(classic, "X25519:P-256") == 1);
    CN_CHECK_EQ(handshake(sctx, classic, &sg, &cg), 0);
out:
    SSL_CTX_free(classic);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

/* Hybrid-first serves both: the hybrid group to a client that offers it, and
 * X25519 to one that does not. */
static void test_tls_group_hybrid_first(void)
{
    SSL_CTX *sctx = server_ctx(CN_TLS_GROUPS_HYBRID_FIRST), *cctx = NULL, *classic = NULL;
    const char *sg = NULL, *cg = NULL;
    CN_CHECK_EQ(cn_tls_client_ctx_new(CN_TLS_GROUPS_HYBRID_FIRST, &cctx), CN_OK);
    classic = SSL_CTX_new(TLS_client_method());
    if (!sctx || !cctx || !classic)
        goto out;
    CN_CHECK_EQ(handshake(sctx, cctx, &sg, &cg), 1);
    CN_CHECK_STR(sg, "X25519MLKEM768");
    CN_CHECK(SSL_CTX_set1_groups_list(classic, "X25519") == 1);
    CN_CHECK_EQ(handshake(sctx, classic, &sg, &cg), 1);
    CN_CHECK_STR(sg, "x25519");
out:
    SSL_CTX_free(classic);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

int main(void)
{
    static const cn_test_case_t cases[] = {
        { "mlkem768_nist_kat", test_mlkem768_nist_kat },
        { "mlkem768_checks", test_mlkem768_checks },
        { "tls_group_pq_only", test_tls_group_pq_only },
        { "tls_group_hybrid_first", test_tls_group_hybrid_first },
    };
    return cn_test_run(cases, sizeof cases / sizeof cases[0]);
}
