/* cairn sau2_server: the SAU2 listener (`cairnd --auth ADDR`) — the adapter
 * that carries SAU2 frames over src/net to the auth service — and the two
 * things the listener needs from the service: its TLS files and "TLS client
 * certificate -> caller".
 *
 * Never: let a service see a socket; take a caller from anything but a
 * certificate verified against the credential CA; log a request's secret.
 */
#ifndef CAIRN_SAU2_SERVER_H
#define CAIRN_SAU2_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "cairn/err.h"
#include "cairn/net.h"
#include "cairn/sau2.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the service side (src/identity/auth_peer.c) -------------------------------- */

/* Writes the listener's certificate chain (the server-tls certificate, then
 * the server CA) to data_dir/auth/server-tls.pem (mode 0600, replaced
 * atomically) and gives the paths of it and of its key
 * (data_dir/auth/server-tls.key, written by cn_auth_init).  cap bytes each.
 * Errors: CN_E_INVALID (paths too long), -errno. */
CN_API cn_err_t cn_auth_listener_files(cn_auth_t *a, const char *data_dir, char *cert, char *key,
                                       size_t cap);

/* The certificate of a storage listener served beside this auth (cairnd
 * --scribe-tls ADDR --auth ADDR without --scribe-tls-cert/-key): an ECDSA
 * P-256 certificate issued by the server CA for localhost, the loopback
 * addresses and addr's host (the machine's name for a wildcard address),
 * valid one year, in data_dir/auth/scribe-tls.pem (then the server CA) and
 * .key, mode 0600; issued anew when missing, unreadable, not this server
 * CA's, not for addr's host or within 30 days of expiry (*issued true).
 * cert and key get the paths (cap bytes each), fp the certificate's SHA-256
 * in hex.  Errors: CN_E_NOT_FOUND (no auth state), CN_E_INVALID, -errno. */
CN_API cn_err_t cn_auth_storage_tls_files(cn_meta_t *meta, const char *data_dir, const char *addr,
                                          char *cert, char *key, size_t cap, char fp[65],
                                          bool *issued);

/* The caller a TLS client certificate stands for.  peer NULL: no
 * certificate, *out = { present = false }, 0.  Otherwise
 * cn_auth_cert_verify against the credential CA (so access, server and
 * foreign certificates fail with CN_E_AUTH, a dead credential with
 * CN_E_DENIED and why filled); else 0 with *out filled.  Thread-safe. */
CN_API cn_err_t cn_auth_peer_caller(cn_auth_t *a, struct x509_st *peer, cn_sau2_caller_t *out,
                                    char *why, size_t cap);

/* ---- the listener (src/sau2/server.c) ------------------------------------------ */

typedef struct cn_sau2_listen {
    int64_t first_request_ms; /* accept -> TLS done and the first frame head read; 0 = 3,000 */
    int64_t idle_ms;          /* between requests; 0 = 60,000 */
} cn_sau2_listen_t;

typedef struct cn_sau2_listener cn_sau2_listener_t;

/* Opens the auth service over meta and data_dir (cn_auth_open; CN_E_NOT_FOUND
 * when `cairn admin auth init` never ran), writes its TLS files and plugs a
 * listener into srv: TLS 1.3, X25519MLKEM768 only, the certificate of auth
 * init, an optional client certificate.  opts gives the address and the
 * admission limits (its TLS fields are ignored: the certificate is auth
 * init's); cfg the deadlines.  Every error is logged.  *out is freed by
 * cn_sau2_listener_free once srv has stopped running.  The creating thread,
 * before cn_server_run. */
CN_API cn_err_t cn_sau2_listener_start(cn_meta_t *meta, const char *data_dir,
                                       const cn_sau2_listen_t *cfg, const cn_listen_opts_t *opts,
                                       cn_server_t *srv, cn_sau2_listener_t **out);
CN_API void cn_sau2_listener_free(cn_sau2_listener_t *l); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif
