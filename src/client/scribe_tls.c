/* The Scribe client's TLS transport (scribe_tls.h): contexts and
 * handshakes for protocol 4, reads and writes on a blocking socket whose
 * SO_RCVTIMEO/SO_SNDTIMEO bound each call. */
#include "scribe_tls.h"

#include "cairn/crypto.h"
#include "cairn/sau2_client.h"
#include "cairn/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void ssl_reason(char *msg, size_t msz, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char buf[200] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    snprintf(msg, msz, "%s%s%s", what, e ? ": " : "", buf);
    ERR_clear_error();
}

cn_err_t cn__scribe_tls_ctx(const char *ca_file, SSL_CTX **out, char *msg, size_t msz)
{
    *out = NULL;
    SSL_CTX *ctx = NULL;
    cn_err_t e = cn_tls_client_ctx_new(CN_TLS_GROUPS_PQ_ONLY, &ctx);
    if (e < 0) {
        ssl_reason(msg, msz, "cannot make a TLS context with X25519MLKEM768");
        return e;
    }
    const char *ca = ca_file && *ca_file ? ca_file : getenv("CAIRN_SCRIBE_CA");
    int ok = ca && *ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL)
                       : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        char what[300];
        snprintf(what, sizeof what, "cannot read the CA file %s", ca ? ca : "(system)");
        ssl_reason(msg, msz, what);
        SSL_CTX_free(ctx);
        return CN_E_INVALID;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    *out = ctx;
    return CN_OK;
}

cn_err_t cn__scribe_tls_connect(SSL_CTX *ctx, int fd, const char *host, SSL **out, char *msg,
                                size_t msz)
{
    *out = NULL;
    SSL *ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ssl_reason(msg, msz, "TLS");
        return -ENOMEM;
    }
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
    int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(vp, host)
                     : SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
    if (ok != 1 || SSL_connect(ssl) != 1) {
        long v = SSL_get_verify_result(ssl);
        char what[300];
        snprintf(what, sizeof what, "TLS handshake with %s failed%s%s", host,
                 v != X509_V_OK ? ": " : "",
                 v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
        ssl_reason(msg, msz, what);
        SSL_free(ssl);
        return CN_E_DENIED;
    }
    *out = ssl;
    return CN_OK;
}

static cn_err_t io_error(SSL *ssl, int r)
{
    int se = SSL_get_error(ssl, r);
    ERR_clear_error();
    if (se == SSL_ERROR_ZERO_RETURN)
        return CN_E_CLOSED;
    if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE)
        return CN_E_TIMEOUT;
    if (se == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK))
        return CN_E_TIMEOUT;
    return se == SSL_ERROR_SYSCALL && errno == 0 ? CN_E_CLOSED : -EIO;
}

cn_err_t cn__scribe_tls_write(SSL *ssl, const void *p, size_t n, size_t *done)
{
    int r = SSL_write_ex(ssl, p, n, done);
    return r == 1 ? CN_OK : io_error(ssl, r);
}

cn_err_t cn__scribe_tls_read(SSL *ssl, void *p, size_t n, size_t *done)
{
    int r = SSL_read_ex(ssl, p, n, done);
    return r == 1 ? CN_OK : io_error(ssl, r);
}

/* ---- the signed-in caller's access certificate (docs/protocol/scribe.md 15.6) ------------
 * `cairn repo login` leaves, in $XDG_CONFIG_HOME/cairn (else ~/.config/cairn):
 * auth.session ("server", "trust" and "state" lines, among others), auth.key
 * (the device key) and auth.cert (the credential certificate).  The access
 * certificate is asked of that server with the credential (SAU2
 * access-certificate) and kept beside them as auth.access (0600) until half
 * its lifetime has passed; one for another key (an older sign-in) is never
 * used.  CAIRN_AUTH_CREDENTIAL names a credential file used instead (an
 * automation runner's: docs/cli.md); its access certificate is never
 * written to disk. */
typedef struct {
    char dir[PATH_MAX];
    char server[256], trust[PATH_MAX];
    bool signed_in;
    /* the credential certificate, its key and the cached access
     * certificate (acc "": kept in memory only, a credential file's) */
    char cert[PATH_MAX + 32], key[PATH_MAX + 32], acc[PATH_MAX + 32];
} signin_t;

static int conf_path(char *out, size_t cap, const char *dir, const char *file)
{
    int n = snprintf(out, cap, "%s/%s", dir, file);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* A value that does not fit is left empty (the state is then incomplete),
 * never cut. */
static void field(char *out, size_t cap, const char *v)
{
    size_t n = strlen(v);
    if (n < cap)
        memcpy(out, v, n + 1);
}

/* The sign-in state, when there is one that is complete. */
static void signin_read(signin_t *s)
{
    memset(s, 0, sizeof *s);
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n = xdg && *xdg ? snprintf(s->dir, sizeof s->dir, "%s/cairn", xdg)
            : home      ? snprintf(s->dir, sizeof s->dir, "%s/.config/cairn", home)
                        : -1;
    char path[PATH_MAX + 32], line[PATH_MAX + 64];
    FILE *f =
        n > 0 && (size_t)n < sizeof s->dir && !conf_path(path, sizeof path, s->dir, "auth.session")
            ? fopen(path, "r")
            : NULL;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "server ", 7))
            field(s->server, sizeof s->server, line + 7);
        else if (!strncmp(line, "trust ", 6))
            field(s->trust, sizeof s->trust, line + 6);
        else if (!strcmp(line, "state signed-in"))
            s->signed_in = true;
    }
    if (f)
        fclose(f);
    s->signed_in = s->signed_in && s->server[0] && s->trust[0] &&
                   !conf_path(s->cert, sizeof s->cert, s->dir, "auth.cert") &&
                   !conf_path(s->key, sizeof s->key, s->dir, "auth.key") &&
                   !conf_path(s->acc, sizeof s->acc, s->dir, "auth.access");
}

/* A credential file named by CAIRN_AUTH_CREDENTIAL (`cairn repo automation
 * create`, docs/cli.md): its "server" line, its certificate and trust, its
 * key or CAIRN_AUTH_KEY's.  The access certificate is kept in memory (the
 * file's directory may be read only).  Returns 0 without the variable, 1
 * with a usable file, -1 (msg says why) otherwise. */
static int signin_file(signin_t *s, char *msg, size_t msz)
{
    const char *file = getenv("CAIRN_AUTH_CREDENTIAL");
    if (!file || !*file)
        return 0;
    memset(s, 0, sizeof *s);
    char line[512];
    bool key = false, cert = false;
    FILE *f = fopen(file, "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "server ", 7) && !s->server[0])
            field(s->server, sizeof s->server, line + 7);
        key = key || (!strncmp(line, "-----BEGIN ", 11) && strstr(line, "PRIVATE KEY-----"));
        cert = cert || !strcmp(line, "-----BEGIN CERTIFICATE-----");
    }
    if (f)
        fclose(f);
    const char *kf = key ? file : getenv("CAIRN_AUTH_KEY");
    if (!f || !s->server[0] || !cert) {
        snprintf(msg, msz, "CAIRN_AUTH_CREDENTIAL: %s is not a cairn credential file", file);
        return -1;
    }
    if (!kf || !*kf) {
        snprintf(msg, msz, "CAIRN_AUTH_CREDENTIAL: %s holds no private key: set CAIRN_AUTH_KEY",
                 file);
        return -1;
    }
    field(s->trust, sizeof s->trust, file);
    field(s->cert, sizeof s->cert, file);
    field(s->key, sizeof s->key, kf);
    s->signed_in = s->trust[0] && s->cert[0] && s->key[0];
    if (!s->signed_in)
        snprintf(msg, msz, "CAIRN_AUTH_CREDENTIAL: the path is too long");
    return s->signed_in ? 1 : -1;
}

/* The seconds left of the first half of the cached access certificate's
 * lifetime, by the wall clock (the certificate was fetched earlier, maybe
 * by another process): > 0 when it may still be used, i.e. it certifies the
 * device key and less than half its lifetime has passed; <= 0 otherwise. */
static long access_left(X509 *x, EVP_PKEY *key)
{
    int days = 0, secs = 0;
    const ASN1_TIME *nb = X509_get0_notBefore(x), *na = X509_get0_notAfter(x);
    if (X509_check_private_key(x, key) != 1 || ASN1_TIME_diff(&days, &secs, nb, na) != 1)
        return 0;
    long life = (long)days * 86400 + secs;
    if (ASN1_TIME_diff(&days, &secs, nb, NULL) != 1)
        return 0;
    long age = (long)days * 86400 + secs;
    return age < 0 ? 0 : life / 2 - age;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t (*cn__scribe_tls_clock)(void) = mono_ns;

bool cn__scribe_tls_renew_due(uint64_t renew_at)
{
    return renew_at && cn__scribe_tls_clock() >= renew_at;
}

/* Asks the auth server for a new access certificate and keeps it: in the
 * file s->acc, or in *mem when s->acc is "". */
static cn_err_t access_fetch(const signin_t *s, cn_buf_t *mem, char *msg, size_t msz)
{
    cn_sau2_client_opts_t o = {
        .addr = s->server, .trust_file = s->trust, .cert_file = s->cert, .key_file = s->key
    };
    cn_sau2_conn_t *c = NULL;
    cn_sau2_req_t req;
    memset(&req, 0, sizeof req);
    req.argc = 1;
    req.argv[0] = (cn_sau2_str_t){ (const uint8_t *)"access-certificate", 18 };
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    size_t off = 0;
    cn_sau2_row_t row;
    cn_err_t e = cn_sau2_conn_open(&o, &c);
    if (e == 0)
        e = cn_sau2_conn_call(c, &req, &payload, &v);
    if (e == 0 && v.code) {
        snprintf(msg, msz, "access certificate from %s refused: %.*s", s->server,
                 (int)v.message.len, (const char *)v.message.p);
        e = CN_E_AUTH;
    } else if (e == 0 && (!cn_sau2_row_next(&v, &off, &row) || row.n != 2)) {
        e = CN_E_PROTOCOL;
    } else if (e == 0) {
        e = s->acc[0] ? cn_file_replace(s->acc, row.s[0].p, row.s[0].len, 0600)
                      : cn_buf_append(mem, row.s[0].p, row.s[0].len);
    }
    if (e < 0 && !msg[0])
        snprintf(msg, msz, "cannot get an access certificate from %s: %s", s->server,
                 cn_strerror(e));
    cn_buf_free(&payload);
    cn_sau2_conn_close(c);
    return e;
}

/* The access certificate: the cached one when still fresh for key k
 * (never when renew), else a new one from the auth server (one try); *left
 * is the seconds left of its first half-life.  NULL with msg set on
 * failure. */
static X509 *access_get(const signin_t *s, EVP_PKEY *k, bool renew, long *left, cn_err_t *e,
                        char *msg, size_t msz)
{
    X509 *x = NULL;
    cn_buf_t mem = { 0 };
    for (int attempt = renew ? 1 : 0; attempt < 2 && *e == CN_OK && !x; attempt++) {
        if (attempt == 1)
            *e = access_fetch(s, &mem, msg, msz);
        if (*e != CN_OK)
            break;
        BIO *b = s->acc[0] ? BIO_new_file(s->acc, "r")
                 : mem.len ? BIO_new_mem_buf(mem.data, (int)mem.len)
                           : NULL;
        x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
        BIO_free(b);
        *left = x ? access_left(x, k) : 0;
        if (x && *left <= 0) {
            X509_free(x);
            x = NULL;
        }
    }
    cn_buf_free(&mem);
    if (*e == CN_OK && !x) {
        snprintf(msg, msz, "the access certificate from %s is unusable", s->server);
        *e = CN_E_PROTOCOL;
    }
    return x;
}

cn_err_t cn__scribe_tls_identity(struct ssl_ctx_st *ctx, bool renew, bool *direct,
                                 uint64_t *renew_at, char *msg, size_t msz)
{
    signin_t s;
    *direct = false;
    *renew_at = 0;
    msg[0] = '\0';
    const char *anon = getenv("CAIRN_SCRIBE_ANONYMOUS");
    if (anon && !strcmp(anon, "1"))
        return CN_OK; /* asked for: the sign-in is for another server */
    int file = signin_file(&s, msg, msz);
    if (file < 0)
        return CN_E_INVALID;
    if (file == 0)
        signin_read(&s);
    if (!s.signed_in)
        return CN_OK; /* not signed in: an anonymous caller */
    EVP_PKEY *k = NULL;
    FILE *f = fopen(s.key, "r");
    if (f) {
        k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        fclose(f);
    }
    if (!k) {
        snprintf(msg, msz, "cannot read the device key %s", s.key);
        return CN_E_INVALID;
    }
    cn_err_t e = CN_OK;
    long left = 0;
    uint64_t now = cn__scribe_tls_clock();
    X509 *x = access_get(&s, k, renew, &left, &e, msg, msz);
    if (e == CN_OK &&
        (SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, k) != 1)) {
        ssl_reason(msg, msz, "cannot use the access certificate");
        e = CN_E_INVALID;
    }
    *direct = e == CN_OK;
    if (*direct) /* from now on by the monotonic clock, whatever the wall clock does */
        *renew_at = now + (uint64_t)left * 1000000000u;
    X509_free(x);
    EVP_PKEY_free(k);
    ERR_clear_error();
    return e;
}

cn_err_t cn__scribe_tls_service_ctx(const char *ca_file, const char *auth_server, const char *trust,
                                    const char *cred, SSL_CTX **out, uint64_t *renew_at, char *msg,
                                    size_t msz)
{
    signin_t s;
    memset(&s, 0, sizeof s);
    *out = NULL;
    *renew_at = 0;
    msg[0] = '\0';
    if (!auth_server || !trust || !cred) {
        snprintf(msg, msz, "needs --auth-server, --auth-trust and --auth-credential");
        return CN_E_INVALID;
    }
    field(s.server, sizeof s.server, auth_server);
    field(s.trust, sizeof s.trust, trust);
    field(s.cert, sizeof s.cert, cred);
    field(s.key, sizeof s.key, cred);
    SSL_CTX *ctx = NULL;
    CN_TRY(cn__scribe_tls_ctx(ca_file && *ca_file ? ca_file : trust, &ctx, msg, msz));
    EVP_PKEY *k = NULL;
    FILE *f = fopen(cred, "r");
    if (f) {
        k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        fclose(f);
    }
    cn_err_t e = k ? CN_OK : CN_E_INVALID;
    if (!k)
        snprintf(msg, msz, "no private key in %s", cred);
    long left = 0;
    uint64_t now = cn__scribe_tls_clock();
    X509 *x = e == CN_OK ? access_get(&s, k, true, &left, &e, msg, msz) : NULL;
    if (e == CN_OK &&
        (SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, k) != 1)) {
        ssl_reason(msg, msz, "cannot use the access certificate");
        e = CN_E_INVALID;
    }
    X509_free(x);
    EVP_PKEY_free(k);
    ERR_clear_error();
    if (e != CN_OK) {
        SSL_CTX_free(ctx);
        return e;
    }
    *renew_at = now + (uint64_t)left * 1000000000u;
    *out = ctx;
    return CN_OK;
}
