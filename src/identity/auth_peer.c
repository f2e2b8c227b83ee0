/* The auth service's side of the SAU2 listener: the files its TLS context is
 * made from, and "TLS client certificate -> caller".  The listener's
 * handshake accepts any certificate whose key the peer proves; the chain is
 * judged here, against the credential CA alone, so that an access
 * certificate, the listener's own server certificate or another CA's is
 * refused with SAU2's `unauthenticated` instead of a TLS alert.
 *
 * Never: trust a certificate field before its chain is verified; accept an
 * issuer other than the credential CA. */
#include "auth_int.h"

#include "cairn/sau2_server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

cn_err_t cn_auth_listener_files(cn_auth_t *a, const char *data_dir, char *cert, char *key,
                                size_t cap)
{
    int n1 = snprintf(cert, cap, "%s/auth/server-tls.pem", data_dir);
    int n2 = snprintf(key, cap, "%s/auth/server-tls.key", data_dir);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= cap || (size_t)n2 >= cap)
        return CN_E_INVALID;
    cn_buf_t pem = { 0 };
    /* The chain a client verifies against the trust bundle's server CA. */
    cn_err_t e = cn__au_cert_pem(a->cert[CN__AU_SERVER_TLS], &pem);
    if (e == 0)
        e = cn__au_cert_pem(a->cert[CN__AU_SERVER_CA], &pem);
    if (e == 0)
        e = cn__au_file_write(cert, pem.data, pem.len);
    cn_buf_free(&pem);
    return e;
}

/* Whether x chains to the credential CA, at the current time. */
static bool chains_to_credential_ca(cn_auth_t *a, X509 *x)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    bool ok = store && ctx && X509_STORE_add_cert(store, a->cert[CN__AU_CRED_CA]) == 1 &&
              X509_STORE_CTX_init(ctx, store, x, NULL) == 1 && X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    ERR_clear_error();
    return ok;
}

typedef struct {
    const cn_sau2_caller_t *caller;
    cn_sau2_reply_t *reply;
} live_t;

static cn_err_t live_body(cn_meta_txn_t *t, void *arg)
{
    live_t *l = arg;
    cn__au_cred_t cred;
    return cn__au_caller_check(t, l->caller, &cred, l->reply);
}

cn_err_t cn_auth_peer_caller(cn_auth_t *a, X509 *peer, cn_sau2_caller_t *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    snprintf(why, cap, "%s", "");
    if (!peer)
        return CN_OK;
    if (!chains_to_credential_ca(a, peer)) {
        snprintf(why, cap, "%s", "the certificate does not chain to the credential CA");
        return CN_E_AUTH;
    }
    cn_buf_t pem = { 0 };
    cn_err_t e = cn__au_cert_pem(peer, &pem);
    if (e == 0 && cn_auth_cert_caller((const char *)pem.data, pem.len, out) < 0) {
        snprintf(why, cap, "%s", "the certificate has no cairn credential extension");
        e = CN_E_AUTH;
    }
    cn_buf_free(&pem);
    if (e < 0)
        goto fail;
    /* Liveness now, so that a revoked credential is told at once; the
     * service checks it again on every request. */
    cn_sau2_reply_t reply = { 0 };
    live_t l = { out, &reply };
    e = cn_meta_run(a->meta, CN_META_RUN_READ, live_body, &l);
    if (e == 0 && reply.code) {
        snprintf(why, cap, "%s", reply.message);
        e = CN_E_DENIED;
    }
    cn_sau2_reply_free(&reply);
fail:
    if (e < 0)
        memset(out, 0, sizeof *out);
    return e;
}
