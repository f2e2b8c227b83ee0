/* The Scribe client's TLS transport for protocol 4 (scribes:// endpoints):
 * TLS 1.3 with X25519MLKEM768 only, the server's certificate verified
 * against a CA file.  It must never fall back to a classical group, to
 * protocol 2 or to an unverified server.  Internal to src/client. */
#ifndef CN_CLIENT_SCRIBE_TLS_H
#define CN_CLIENT_SCRIBE_TLS_H

#include "cairn/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_ctx_st;
struct ssl_st;

/* A client context: pq-only, TLS 1.3, peer verification on, trusting the
 * PEM CA file ca_file, else $CAIRN_SCRIBE_CA, else the system's store.
 * Errors: CN_E_INVALID (an unreadable CA file), CN_E_CORRUPT; msg says why.
 * The caller frees *out with SSL_CTX_free. */
cn_err_t cn__scribe_tls_ctx(const char *ca_file, struct ssl_ctx_st **out, char *msg, size_t msz);

/* The handshake on the connected blocking socket fd; the certificate must
 * name host (a DNS name or an IP literal).  CN_E_DENIED when the peer or its
 * certificate is refused; msg says why.  *out freed with SSL_free. */
cn_err_t cn__scribe_tls_connect(struct ssl_ctx_st *ctx, int fd, const char *host,
                                struct ssl_st **out, char *msg, size_t msz);

/* The signed-in user's access certificate and device key as ctx's client
 * certificate (*direct true: caller tag 1), from the sign-in state of
 * `cairn repo login`, asking the auth server for a new certificate when the
 * cached one (auth.access) has lived half its lifetime, certifies another
 * key, or renew is set.  CAIRN_AUTH_CREDENTIAL=FILE (a credential file;
 * CAIRN_AUTH_KEY for one without a key) replaces the sign-in: a new access
 * certificate per context, kept in memory.  *renew_at (direct only, else 0)
 * is the cn__scribe_tls_clock() instant the certificate reaches half its
 * lifetime: a long-lived client renews by monotonic elapsed time, never by
 * the wall clock alone (issue 21).  Not signed in, or
 * CAIRN_SCRIBE_ANONYMOUS=1 (the sign-in is for another server's auth):
 * CN_OK, *direct false (an anonymous caller).  Errors: the state is
 * unusable or auth refused (CN_E_AUTH) or unreachable; msg says why. */
cn_err_t cn__scribe_tls_identity(struct ssl_ctx_st *ctx, bool renew, bool *direct,
                                 uint64_t *renew_at, char *msg, size_t msz);

/* A service's context (the Scribe gateway's, issue 23): pq-only, storage
 * certificates verified against ca_file (else the trust bundle trust), and
 * a new access certificate asked of auth_server with the credential file
 * cred (certificate and key, PEM), never written to disk.  *renew_at is the
 * cn__scribe_tls_clock() instant it reaches half its lifetime.  Errors as
 * cn__scribe_tls_identity's; msg says why.  Freed with SSL_CTX_free. */
cn_err_t cn__scribe_tls_service_ctx(const char *ca_file, const char *auth_server, const char *trust,
                                    const char *cred, struct ssl_ctx_st **out, uint64_t *renew_at,
                                    char *msg, size_t msz);

/* The clock renewals are measured on: CLOCK_MONOTONIC in nanoseconds.  A
 * variable only so that unit tests can inject one. */
extern uint64_t (*cn__scribe_tls_clock)(void);

/* Whether a context whose cn__scribe_tls_identity gave renew_at must be
 * rebuilt before a new connection (never when renew_at is 0). */
bool cn__scribe_tls_renew_due(uint64_t renew_at);

/* One write or read through ssl: *done bytes (> 0) or an error: CN_E_CLOSED
 * (peer closed), CN_E_TIMEOUT (the socket's timeout), -EIO. */
cn_err_t cn__scribe_tls_write(struct ssl_st *ssl, const void *p, size_t n, size_t *done);
cn_err_t cn__scribe_tls_read(struct ssl_st *ssl, void *p, size_t n, size_t *done);

#endif
