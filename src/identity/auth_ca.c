/* The auth service's certificate authorities (docs/protocol/sau2.md section
 * 6): key generation (Ed25519 for CAs and credentials, ECDSA P-256 for TLS
 * servers), certificates carrying the cairn credential extension, PEM, and
 * private keys at rest (DATA/auth/<name>.key, mode 0600).  It must never
 * write a private key anywhere but that directory, nor log one. */
#include "auth_int.h"

#include "cairn/sau2_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

/* The cairn credential extension, under a private arc (sau2.md section 6). */
#define CRED_EXT_OID "1.3.6.1.4.1.59999.20.1"
#define PUBKEY_DER_MAX 1024

const char *const cn__au_key_names[CN__AU_NKEYS] = {
    [CN__AU_CRED_CA] = "credential-ca",
    [CN__AU_ACCESS_CA] = "access-ca",
    [CN__AU_SERVER_CA] = "server-ca",
    [CN__AU_SERVER_TLS] = "server-tls",
};

cn_err_t cn__au_keygen(bool ec, EVP_PKEY **out)
{
    *out = ec ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
              : EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    return *out ? 0 : -ENOMEM;
}

/* Appends a DER length. */
static cn_err_t der_len(cn_buf_t *b, size_t n)
{
    if (n < 128)
        return cn_buf_put_u8(b, (uint8_t)n);
    CN_TRY(cn_buf_put_u8(b, 0x82));
    return cn_buf_put_u16be(b, (uint16_t)n);
}

/* DER SEQUENCE { UTF8String × 5 } of the subject's fields. */
static cn_err_t ext_der(const cn__au_subject_t *s, cn_buf_t *out)
{
    const char *f[] = { s->credential, s->kind, s->key_id, s->account, s->domain };
    cn_buf_t body = { 0 };
    cn_err_t e = 0;
    for (size_t i = 0; i < 5 && e == 0; i++) {
        size_t n = strlen(f[i]);
        e = n > 4096 ? CN_E_INVALID : cn_buf_put_u8(&body, 0x0c);
        if (e == 0)
            e = der_len(&body, n);
        if (e == 0)
            e = cn_buf_append(&body, f[i], n);
    }
    if (e == 0)
        e = cn_buf_put_u8(out, 0x30);
    if (e == 0)
        e = der_len(out, body.len);
    if (e == 0)
        e = cn_buf_append(out, body.data, body.len);
    cn_buf_free(&body);
    return e;
}

static cn_err_t add_ext(X509 *x, int nid, const char *value, X509 *issuer)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    int ok = ext && X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : CN_E_INVALID;
}

static cn_err_t add_cred_ext(X509 *x, const cn__au_subject_t *sub)
{
    cn_buf_t der = { 0 };
    ASN1_OBJECT *obj = OBJ_txt2obj(CRED_EXT_OID, 1);
    ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
    cn_err_t e = obj && os ? ext_der(sub, &der) : -ENOMEM;
    if (e == 0 && !ASN1_OCTET_STRING_set(os, der.data, (int)der.len))
        e = -ENOMEM;
    X509_EXTENSION *ext = e == 0 ? X509_EXTENSION_create_by_OBJ(NULL, obj, 0, os) : NULL;
    if (e == 0 && (!ext || !X509_add_ext(x, ext, -1)))
        e = CN_E_INVALID;
    X509_EXTENSION_free(ext);
    ASN1_OCTET_STRING_free(os);
    ASN1_OBJECT_free(obj);
    cn_buf_free(&der);
    return e;
}

/* Subject and validity of a new certificate. */
static cn_err_t cert_head(X509 *x, const char *cn, const char *domain, const uint8_t serial[16],
                          int64_t not_after_ms)
{
    BIGNUM *bn = BN_bin2bn(serial, 16, NULL);
    ASN1_INTEGER *sn = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
    X509_NAME *name = X509_get_subject_name(x);
    int ok = sn && X509_set_version(x, 2) && X509_set_serialNumber(x, sn) &&
             X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"cairn",
                                        -1, -1, 0) &&
             (!domain || X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_UTF8,
                                                    (const unsigned char *)domain, -1, -1, 0)) &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
                                        -1, 0) &&
             X509_gmtime_adj(X509_getm_notBefore(x), -60) &&
             ASN1_TIME_set(X509_getm_notAfter(x), (time_t)(not_after_ms / 1000));
    ASN1_INTEGER_free(sn);
    BN_free(bn);
    return ok ? 0 : CN_E_INVALID;
}

cn_err_t cn__au_cert_make(EVP_PKEY *pub, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                          const uint8_t serial[16], int64_t not_after_ms, bool ca,
                          const cn__au_subject_t *sub, X509 **out)
{
    X509 *x = X509_new();
    cn_err_t e = x ? cert_head(x, cn, sub ? sub->domain : NULL, serial, not_after_ms) : -ENOMEM;
    if (e == 0 &&
        !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : X509_get_subject_name(x)))
        e = CN_E_INVALID;
    if (e == 0 && !X509_set_pubkey(x, pub))
        e = CN_E_INVALID;
    if (e == 0)
        e = add_ext(x, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE",
                    issuer);
    if (e == 0)
        e = add_ext(x, NID_key_usage,
                    ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature", issuer);
    if (e == 0 && !ca)
        e = add_ext(x, NID_ext_key_usage, sub ? "clientAuth" : "serverAuth", issuer);
    if (e == 0 && !ca && !sub) /* the listener's certificate: loopback names */
        e = add_ext(x, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1", issuer);
    if (e == 0 && sub)
        e = add_cred_ext(x, sub);
    /* Ed25519 signs without a separate digest; ECDSA with SHA-256. */
    const EVP_MD *md = EVP_PKEY_is_a(issuer_key, "ED25519") ? NULL : EVP_sha256();
    if (e == 0 && X509_sign(x, issuer_key, md) <= 0)
        e = CN_E_INVALID;
    if (e < 0) {
        X509_free(x);
        return e;
    }
    *out = x;
    return 0;
}

/* Copies a memory BIO's text into out, NUL-terminated. */
static cn_err_t bio_take(BIO *bio, int ok, cn_buf_t *out)
{
    char *p = NULL;
    long n = ok ? BIO_get_mem_data(bio, &p) : 0;
    cn_err_t e = n > 0 ? cn_buf_append(out, p, (size_t)n) : CN_E_INVALID;
    if (e == 0)
        e = cn_buf_put_u8(out, 0);
    if (e == 0)
        out->len--;
    BIO_free(bio);
    return e;
}

cn_err_t cn__au_cert_pem(X509 *x, cn_buf_t *out)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio)
        return -ENOMEM;
    return bio_take(bio, PEM_write_bio_X509(bio, x), out);
}

cn_err_t cn__au_key_pem(EVP_PKEY *k, cn_buf_t *out)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio)
        return -ENOMEM;
    return bio_take(bio, PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL), out);
}

cn_err_t cn__au_pubkey_parse(const uint8_t *hex, size_t len, EVP_PKEY **out,
                             char key_id[CN_SAU2_KEY_HEX + 1])
{
    uint8_t der[PUBKEY_DER_MAX];
    if (len == 0 || len % 2 || len / 2 > sizeof der)
        return CN_E_INVALID;
    for (size_t i = 0; i < len; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
            return CN_E_INVALID; /* lowercase only: one spelling per key */
    CN_TRY(cn_hex_decode((const char *)hex, len, der, len / 2));
    const unsigned char *p = der;
    EVP_PKEY *k = d2i_PUBKEY(NULL, &p, (long)(len / 2));
    if (!k || p != der + len / 2 || !EVP_PKEY_is_a(k, "ED25519")) {
        EVP_PKEY_free(k);
        return CN_E_INVALID;
    }
    cn_digest_t d;
    cn_blake3(der, len / 2, &d);
    cn_digest_hex(&d, key_id);
    *out = k;
    return 0;
}

static cn_err_t key_path(const char *data_dir, const char *name, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/auth/%s.key", data_dir, name);
    return n > 0 && (size_t)n < cap ? 0 : CN_E_INVALID;
}

cn_err_t cn__au_file_write(const char *path, const void *p, size_t n)
{
    return cn_file_replace(path, p, n, 0600);
}

cn_err_t cn__au_key_save(const char *data_dir, const char *name, EVP_PKEY *k)
{
    char path[PATH_MAX], dir[PATH_MAX];
    CN_TRY(key_path(data_dir, name, path, sizeof path));
    snprintf(dir, sizeof dir, "%s/auth", data_dir);
    CN_TRY(cn_mkdir_p(dir, 0700));
    cn_buf_t pem = { 0 };
    cn_err_t e = cn__au_key_pem(k, &pem);
    if (e == 0)
        e = cn__au_file_write(path, pem.data, pem.len);
    OPENSSL_cleanse(pem.data, pem.len);
    cn_buf_free(&pem);
    return e;
}

cn_err_t cn__au_key_load(const char *data_dir, const char *name, EVP_PKEY **out)
{
    char path[PATH_MAX];
    CN_TRY(key_path(data_dir, name, path, sizeof path));
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    *out = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    return *out ? 0 : CN_E_CORRUPT;
}

/* Reads the DER of the cairn extension's five UTF8Strings into caller. */
static cn_err_t ext_fields(const uint8_t *p, size_t n, cn_sau2_caller_t *c)
{
    cn_rd_t r = cn_rd_init(p, n);
    if (cn_rd_u8(&r) != 0x30)
        return CN_E_INVALID;
    uint8_t l = cn_rd_u8(&r);
    if (l == 0x82)
        cn_rd_u16be(&r);
    else if (l >= 0x80)
        return CN_E_INVALID;
    for (int i = 0; i < 3 && r.err == 0; i++) {
        if (cn_rd_u8(&r) != 0x0c)
            return CN_E_INVALID;
        size_t len = cn_rd_u8(&r);
        const uint8_t *s = cn_rd_bytes(&r, len);
        char *dst = i == 0 ? c->credential : i == 2 ? c->key_id : NULL;
        size_t cap = i == 0 ? CN_SAU2_CRED_HEX : CN_SAU2_KEY_HEX;
        if (dst && s) {
            if (len != cap)
                return CN_E_INVALID;
            memcpy(dst, s, len);
            dst[len] = '\0';
        }
    }
    return r.err ? CN_E_INVALID : 0;
}

cn_err_t cn_auth_cert_caller(const char *pem, size_t len, cn_sau2_caller_t *out)
{
    memset(out, 0, sizeof *out);
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    ASN1_OBJECT *obj = OBJ_txt2obj(CRED_EXT_OID, 1);
    int at = x && obj ? X509_get_ext_by_OBJ(x, obj, -1) : -1;
    cn_err_t e = CN_E_INVALID;
    if (at >= 0) {
        ASN1_OCTET_STRING *os = X509_EXTENSION_get_data(X509_get_ext(x, at));
        e = ext_fields(ASN1_STRING_get0_data(os), (size_t)ASN1_STRING_length(os), out);
    }
    ASN1_OBJECT_free(obj);
    X509_free(x);
    out->present = e == 0;
    return e;
}

/* ---- a storage listener's certificate (cairnd --scribe-tls with --auth) --------------
 * DATA/auth/scribe-tls.pem (the certificate, then the server CA) and
 * DATA/auth/scribe-tls.key: ECDSA P-256, issued by the server CA for
 * localhost, the loopback addresses and the listener's host (the machine's
 * name too when the listener is on a wildcard address), one year. */
#define STORAGE_TLS_NAME "scribe-tls"
#define STORAGE_TLS_LIFETIME_MS (365LL * 86400 * 1000)
#define STORAGE_TLS_RENEW_S (30L * 86400)

/* The listener address's host ("" for a wildcard) into host. */
static cn_err_t addr_host(const char *addr, char *host, size_t cap)
{
    const char *h = addr, *end = strrchr(addr, ':');
    if (addr[0] == '[') {
        h = addr + 1;
        end = strchr(h, ']');
    }
    size_t n = end ? (size_t)(end - h) : strlen(h);
    if (n >= cap)
        return CN_E_INVALID;
    memcpy(host, h, n);
    host[n] = '\0';
    if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !strcmp(host, "*"))
        host[0] = '\0';
    return 0;
}

/* The subjectAltName value for host ("" : the machine's name, if any). */
static void storage_san(const char *host, char *san, size_t cap)
{
    char name[256] = "";
    unsigned char ip[16];
    if (!*host && gethostname(name, sizeof name - 1) == 0 && strcmp(name, "localhost"))
        host = name;
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    bool loop = !strcmp(host, "localhost") || !strcmp(host, "127.0.0.1") || !strcmp(host, "::1");
    snprintf(san, cap, "DNS:localhost,IP:127.0.0.1,IP:::1%s%s%s", *host && !loop ? "," : "",
             *host && !loop ? (literal ? "IP:" : "DNS:") : "", *host && !loop ? host : "");
}

/* Whether the stored certificate still serves: issued by this server CA,
 * for key k and host, and more than 30 days from its expiry. */
static bool storage_cert_ok(cn_auth_t *a, X509 *x, EVP_PKEY *k, const char *host)
{
    time_t soon = time(NULL) + STORAGE_TLS_RENEW_S;
    EVP_PKEY *ca = X509_get0_pubkey(a->cert[CN__AU_SERVER_CA]);
    bool named =
        !*host || X509_check_host(x, host, 0, 0, NULL) == 1 || X509_check_ip_asc(x, host, 0) == 1;
    bool ok = ca && X509_verify(x, ca) == 1 && X509_check_private_key(x, k) == 1 && named &&
              X509_cmp_time(X509_get0_notAfter(x), &soon) > 0;
    ERR_clear_error();
    return ok;
}

/* Issues a new key and certificate for host and writes both (key first:
 * a certificate never names a key that is not on disk). */
static cn_err_t storage_issue(cn_auth_t *a, const char *data_dir, const char *host,
                              const char *cert_path)
{
    EVP_PKEY *k = NULL;
    X509 *x = X509_new();
    uint8_t serial[16];
    char san[600];
    storage_san(host, san, sizeof san);
    cn_err_t e = x ? cn_random_bytes(serial, sizeof serial) : -ENOMEM;
    serial[0] &= 0x7f; /* a positive INTEGER */
    if (e == 0)
        e = cn__au_keygen(true, &k);
    if (e == 0)
        e = cert_head(x, "cairn storage", NULL, serial, cn_wall_ms() + STORAGE_TLS_LIFETIME_MS);
    X509 *ca = a->cert[CN__AU_SERVER_CA];
    if (e == 0 && (!X509_set_issuer_name(x, X509_get_subject_name(ca)) || !X509_set_pubkey(x, k)))
        e = CN_E_INVALID;
    if (e == 0)
        e = add_ext(x, NID_basic_constraints, "critical,CA:FALSE", ca);
    if (e == 0)
        e = add_ext(x, NID_key_usage, "critical,digitalSignature", ca);
    if (e == 0)
        e = add_ext(x, NID_ext_key_usage, "serverAuth", ca);
    if (e == 0)
        e = add_ext(x, NID_subject_alt_name, san, ca);
    if (e == 0 && X509_sign(x, a->key[CN__AU_SERVER_CA], EVP_sha256()) <= 0)
        e = CN_E_INVALID;
    cn_buf_t pem = { 0 };
    if (e == 0)
        e = cn__au_key_save(data_dir, STORAGE_TLS_NAME, k);
    if (e == 0)
        e = cn__au_cert_pem(x, &pem);
    if (e == 0)
        e = cn__au_cert_pem(ca, &pem);
    if (e == 0)
        e = cn__au_file_write(cert_path, pem.data, pem.len);
    cn_buf_free(&pem);
    X509_free(x);
    EVP_PKEY_free(k);
    return e;
}

/* The stored certificate and key, when both read. */
static void storage_load(const char *cert_path, const char *key_path, X509 **x, EVP_PKEY **k)
{
    FILE *f = fopen(cert_path, "r");
    *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    f = fopen(key_path, "r");
    *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    ERR_clear_error();
}

cn_err_t cn_auth_storage_tls_files(cn_meta_t *meta, const char *data_dir, const char *addr,
                                   char *cert, char *key, size_t cap, char fp[65], bool *issued)
{
    char host[256];
    *issued = false;
    int n1 = snprintf(cert, cap, "%s/auth/%s.pem", data_dir, STORAGE_TLS_NAME);
    if (n1 < 0 || (size_t)n1 >= cap || key_path(data_dir, STORAGE_TLS_NAME, key, cap) < 0 ||
        addr_host(addr, host, sizeof host) < 0)
        return CN_E_INVALID;
    cn_auth_t *a = NULL;
    CN_TRY(cn_auth_open(meta, data_dir, NULL, &a));
    X509 *x = NULL;
    EVP_PKEY *k = NULL;
    storage_load(cert, key, &x, &k);
    cn_err_t e = 0;
    if (!x || !k || !storage_cert_ok(a, x, k, host)) {
        X509_free(x);
        EVP_PKEY_free(k);
        e = storage_issue(a, data_dir, host, cert);
        if (e == 0)
            storage_load(cert, key, &x, &k);
        *issued = e == 0;
        e = e == 0 && !x ? CN_E_CORRUPT : e;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (e == 0 && X509_digest(x, EVP_sha256(), md, &mdlen) != 1)
        e = CN_E_INVALID;
    if (e == 0)
        cn_hex_encode(md, mdlen, fp);
    X509_free(x);
    EVP_PKEY_free(k);
    cn_auth_close(a);
    return e;
}
