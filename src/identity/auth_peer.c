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

#include <stdio.h>
#include <string.h>

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

cn_err_t cn_auth_peer_caller(cn_auth_t *a, X509 *peer, cn_sau2_caller_t *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    snprintf(why, cap, "%s", "");
    if (!peer)
        return CN_OK;
    cn_buf_t pem = { 0 };
    cn_err_t e = cn__au_cert_pem(peer, &pem);
    if (e == 0)
        e = cn_auth_cert_verify(a, false, (const char *)pem.data, pem.len, out, why, cap);
    cn_buf_free(&pem);
    return e;
}
