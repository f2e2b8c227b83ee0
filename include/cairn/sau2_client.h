/* cairn sau2_client: libcairn's client of the SAU2 auth protocol — one TLS
 * connection (cn_sau2_conn_*) and a small pool over it (cn_sau2_client_*).
 *
 * TLS 1.3 with X25519MLKEM768 only; the server's certificate chain is
 * verified against a trust file (the pinned trust bundle, or a CA file the
 * operator gave); the host name is not checked, because the listener's
 * certificate comes from the deployment's own server CA, which signs
 * nothing else (docs/protocol/sau2.md, "Client trust").  When signed in, the
 * credential certificate and the device key are presented: they are who the
 * caller is.
 *
 * Never: send a request over a connection whose server was not verified,
 * except with trust_file NULL, which only the first contact uses to fetch
 * the trust bundle it then pins; keep a secret after the call (request
 * buffers are wiped).
 */
#ifndef CAIRN_SAU2_CLIENT_H
#define CAIRN_SAU2_CLIENT_H

#include <stdint.h>

#include "cairn/err.h"
#include "cairn/sau2.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_sau2_client_opts {
    const char *addr;       /* "host:port" ("[v6]:port"); a name is resolved */
    const char *trust_file; /* PEM CAs the server must chain to; NULL = not verified */
    const char *cert_file;  /* the credential certificate (PEM), or NULL: none presented */
    const char *key_file;   /* its private key (the device key, PEM) */
    int64_t timeout_ms;     /* connect, and each call's send and receive; 0 = 30,000 */
} cn_sau2_client_opts_t;

/* ---- one connection ------------------------------------------------------------ */
typedef struct cn_sau2_conn cn_sau2_conn_t;

/* Connects and completes the TLS handshake.  Errors: CN_E_INVALID (bad
 * address or unusable certificate/key/trust file), CN_E_AUTH (the handshake
 * failed: the server is not verified, or refused the key exchange),
 * CN_E_TIMEOUT, -errno (connect).  *out freed by cn_sau2_conn_close. */
CN_API cn_err_t cn_sau2_conn_open(const cn_sau2_client_opts_t *o, cn_sau2_conn_t **out);
/* Sends req and reads its reply into payload (reset first; the caller's,
 * cn_buf_free), decoded into *v (borrowing payload).  Errors: CN_E_CLOSED
 * (the server closed the connection before a reply byte: an idle or a
 * refused connection), CN_E_TIMEOUT, CN_E_PROTOCOL (a malformed reply),
 * CN_E_INVALID (req breaks a codec rule), -errno.  After an error the
 * connection is unusable. */
CN_API cn_err_t cn_sau2_conn_call(cn_sau2_conn_t *c, const cn_sau2_req_t *req, cn_buf_t *payload,
                                  cn_sau2_reply_view_t *v);
/* The key exchange group the handshake negotiated ("X25519MLKEM768"). */
CN_API const char *cn_sau2_conn_group(cn_sau2_conn_t *c);
CN_API void cn_sau2_conn_close(cn_sau2_conn_t *c); /* accepts NULL */

/* ---- the pool ------------------------------------------------------------------ */
typedef struct cn_sau2_client cn_sau2_client_t;

#define CN_SAU2_POOL_MAX 4 /* connections at once */
/* An idle connection older than this is not reused (the listener closes
 * one idle for 60 s). */
#define CN_SAU2_POOL_REUSE_MS 50000

/* A pool of at most CN_SAU2_POOL_MAX connections to o->addr (o's strings
 * are copied).  Its reuse window is CN_SAU2_POOL_REUSE_MS, or the
 * environment's CAIRN_SAU2_REUSE_MS when that is a whole number from 1 to
 * CN_SAU2_POOL_REUSE_MS, read here once (for tests: never longer).  Errors:
 * -ENOMEM, CN_E_INVALID (o->addr NULL).  Thread-safe once made. */
CN_API cn_err_t cn_sau2_client_new(const cn_sau2_client_opts_t *o, cn_sau2_client_t **out);
/* cn_sau2_conn_call on a pooled connection (waiting while all are busy):
 * one reused within the reuse window of its last reply, else a new one.
 * When the service had closed a reused connection (CN_E_CLOSED), the
 * request is sent once more, on a new connection (an idle one is closed
 * to make room when the pool is full).  Errors as cn_sau2_conn_open and
 * cn_sau2_conn_call. */
CN_API cn_err_t cn_sau2_client_call(cn_sau2_client_t *cl, const cn_sau2_req_t *req,
                                    cn_buf_t *payload, cn_sau2_reply_view_t *v);
CN_API void cn_sau2_client_free(cn_sau2_client_t *cl); /* accepts NULL; no call in flight */

#ifdef __cplusplus
}
#endif
#endif
