/* TLS through OpenSSL.  Every TLS context cairn serves with is made here:
 * TLS 1.3 only, with cairn's X25519MLKEM768 provider (src/crypto/pqtls.c)
 * loaded first and the group list of cn_tls_groups_t set, so that no listener
 * can end up with OpenSSL's defaults by accident.  It must never pick a
 * listener's group rule itself: the caller does (cn_listen_opts_t.tls_pq_only,
 * which cairnd sets from --tls-groups), and it reads no environment. */
#include "net/net_int.h"

#include <errno.h>
#include <openssl/err.h>
#include <poll.h>

#include "cairn/crypto.h"

static void tls_log_errors(const char *what)
{
    unsigned long e;
    char buf[256];
    while ((e = ERR_get_error()) != 0) {
        ERR_error_string_n(e, buf, sizeof buf);
        cn_error("net", "%s: %s", what, buf);
    }
}

cn_err_t cn__tls_ctx_new(const char *cert, const char *key, SSL_CTX **out)
{
    return cn__tls_ctx_new_groups(cert, key, CN_TLS_GROUPS_HYBRID_FIRST, out);
}

cn_err_t cn__tls_ctx_new_groups(const char *cert, const char *key, cn_tls_groups_t groups,
                                SSL_CTX **out)
{
    *out = NULL;
    ERR_clear_error();
    if (cn_crypto_pq_load() < 0) {
        tls_log_errors("the X25519MLKEM768 provider");
        return CN_E_CORRUPT;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        tls_log_errors("TLS context");
        return -ENOMEM;
    }
    if (cn_tls_ctx_set_groups(ctx, groups) < 0)
        goto bad;
    /* Bodies are streamed in whole-record writes; partial writes keep the
     * non-blocking retry loop simple. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        tls_log_errors(cert);
        goto bad_files;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        tls_log_errors(key);
        goto bad_files;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        tls_log_errors("certificate and key do not match");
        goto bad_files;
    }
    *out = ctx;
    return CN_OK;
bad:
    tls_log_errors("TLS context");
bad_files:
    SSL_CTX_free(ctx);
    return CN_E_CORRUPT;
}

cn_err_t cn__tls_accept(cn_conn_t *c, int64_t deadline)
{
    if (!c->ssl) {
        c->ssl = SSL_new(c->ls->tls);
        if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
            ERR_clear_error();
            return -ENOMEM;
        }
    }
    for (;;) {
        ERR_clear_error();
        int r = SSL_accept(c->ssl);
        if (r == 1) {
            /* Tests and operators check the key exchange here. */
            cn_debug("net", "TLS handshake with %s: %s, group %s", c->peer_text,
                     SSL_get_version(c->ssl), cn_tls_negotiated_group(c->ssl));
            return CN_OK;
        }
        switch (SSL_get_error(c->ssl, r)) {
        case SSL_ERROR_WANT_READ:
            return CN_E_AGAIN; /* the peer's next flight: the loop waits for it */
        case SSL_ERROR_WANT_WRITE: break;
        default:
            /* A failed handshake is the peer's problem: debug, not error. */
            if (cn_mono_ms() < deadline) {
                unsigned long e = ERR_peek_error();
                char buf[256] = "connection closed";
                if (e)
                    ERR_error_string_n(e, buf, sizeof buf);
                cn_debug("net", "TLS handshake with %s failed: %s", c->peer_text, buf);
            }
            ERR_clear_error();
            return CN_E_CLOSED;
        }
        CN_TRY(cn__wait_fd(c->fd, POLLOUT, deadline));
    }
}
