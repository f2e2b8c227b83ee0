/* The Scribe client's TLS transport (scribe_tls.h): contexts and
 * handshakes for protocol 4, reads and writes on a blocking socket whose
 * SO_RCVTIMEO/SO_SNDTIMEO bound each call. */
#include "scribe_tls.h"

#include "cairn/crypto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
