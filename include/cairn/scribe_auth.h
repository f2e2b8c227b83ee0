/* cairn scribe_auth: how a protocol-4 Scribe listener asks the SAU2 auth
 * service who a caller is and what it may do (docs/protocol/scribe.md
 * 15.6).  One interface, two providers: the in-process one (cairnd serves
 * --auth and --scribe-tls on one data directory: the service's functions are
 * called directly, no network) and the remote one (a storage server apart
 * from its auth: SAU2 over TLS with libcairn's client, presenting the
 * server's own credential).  Both send the same SAU2 verbs — trust-bundle,
 * public-policy, authorize, authorize-batch — and judge the answers the same
 * way, so the Scribe adapter sees only this header.
 *
 * Every answer from the service passes the rollback check
 * (cn_auth_rollback_check) before it is acted on: a lower revision of a
 * known incarnation is CN_E_CONFLICT and the adapter answers
 * auth_unavailable.
 *
 * Never: accept a certificate that does not chain to the access CA; keep an
 * identity confirmation or a role beyond its lease (at most 30 s); let a
 * caller name its own principal (it comes from the verified certificate).
 */
#ifndef CAIRN_SCRIBE_AUTH_H
#define CAIRN_SCRIBE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn/err.h"
#include "cairn/sau2.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_meta cn_meta_t;
typedef struct cn_scribe_auth cn_scribe_auth_t;

/* SAU2 roles in order (docs/protocol/sau2.md section 7). */
enum {
    CN_SCRIBE_ROLE_NONE = 0,
    CN_SCRIBE_ROLE_READER,
    CN_SCRIBE_ROLE_WRITER,
    CN_SCRIBE_ROLE_MAINTAINER,
    CN_SCRIBE_ROLE_ADMIN /* namespace administrator */
};

/* Who a session is: from the verified access certificate, confirmed by
 * auth.  present false = anonymous. */
typedef struct cn_scribe_principal {
    bool present;
    char credential[33]; /* 32 hex */
    char key_id[65];     /* 64 hex */
    char account[65];    /* the account name auth confirmed (display name) */
    /* Protocol 4, caller 2: the gateway acting for this user (its own access
     * certificate's credential and key, the service account auth
     * confirmed); all empty for a direct caller. */
    char delegate_credential[33];
    char delegate_key_id[65];
    char delegate_account[65];
} cn_scribe_principal_t;

/* The in-process provider over the auth state of data_dir (`cairn admin
 * auth init`), serving namespace ns (1..64 of [a-z0-9._-]).  It registers
 * this cairnd as the auth server "cairnd-local" of ns with a server
 * credential of its own (created on first use, renewed when revoked or
 * within a day of its expiry; an administrator sees both in servers-list and
 * credentials-list), because authorize* answer server credentials only.
 * cache_ms bounds how long an identity confirmation is reused across
 * sessions (0 = 30,000; never beyond the lease).  meta borrowed.  Errors:
 * CN_E_NOT_FOUND (no auth state), CN_E_INVALID (bad ns, or "cairnd-local"
 * already serves another namespace), meta and crypto errors. */
CN_API cn_err_t cn_scribe_auth_local(cn_meta_t *meta, const char *data_dir, const char *ns,
                                     int64_t cache_ms, cn_scribe_auth_t **out);
/* The remote provider: fn sends one request to the auth service as this
 * server (e.g. cn_sau2_client_call on a pool whose connections present the
 * server's credential) and decodes the reply into *v, borrowing *payload;
 * a transport error is auth_unavailable.  ctx is the provider's from now on
 * (ctx_free(ctx) when it is freed, or at once on failure).  At start it
 * fetches the access CA (trust-bundle) and checks that auth accepts ns as
 * this server's namespace (CN_E_INVALID otherwise).  Errors as
 * cn_scribe_auth_local and fn's. */
typedef cn_err_t (*cn_scribe_auth_call_fn)(void *ctx, const cn_sau2_req_t *req, cn_buf_t *payload,
                                           cn_sau2_reply_view_t *v);
CN_API cn_err_t cn_scribe_auth_remote(cn_meta_t *meta, const char *ns, int64_t cache_ms,
                                      cn_scribe_auth_call_fn fn, void *ctx,
                                      void (*ctx_free)(void *), cn_scribe_auth_t **out);
CN_API void cn_scribe_auth_free(cn_scribe_auth_t *a); /* accepts NULL */

/* The namespace this server serves (discover reports it). */
CN_API const char *cn_scribe_auth_namespace(const cn_scribe_auth_t *a);

/* Resolution in two steps, so that a listener can act between them on a
 * verified certificate before any round trip (the per-principal connection
 * cap, docs/protocol/scribe.md 15.6).
 *
 * cn_scribe_auth_check is local: peer (PEM, presented in TLS) and, for a
 * delegated caller (protocol 4, caller 2: a gateway acting for its user),
 * cert (PEM, the user's, forwarded; NULL for a direct caller) must be access
 * certificates of this auth's access CA — the trust domain: a certificate of
 * another auth never chains to it — valid now.  *out gets the subject's (and
 * delegate's) credential and key columns and, in account, the name the
 * verified certificate's subject CN carries — not yet confirmed.  Errors:
 * CN_E_AUTH (why: "an access certificate is required" for peer, "invalid
 * delegated access certificate" for cert).
 *
 * cn_scribe_auth_confirm is the round trip (or the cache): auth confirms the
 * credential live, its key the registered one and the account enabled
 * (authorize with an empty repository) and, for a delegated caller, that the
 * gateway's service-reader/-writer credential holds a delegate grant for
 * this namespace; reused for at most the lease.  It replaces account with
 * the name auth confirms.  Errors: CN_E_AUTH (refused; why says which
 * rule), CN_E_DENIED (no delegate grant: "delegate may not act for users in
 * this namespace"), CN_E_CONFLICT (auth answered from a lower revision),
 * CN_E_UNSUPPORTED/other (auth unreachable or failing): the last two are
 * auth_unavailable. */
CN_API cn_err_t cn_scribe_auth_check(cn_scribe_auth_t *a, const char *peer, size_t peer_len,
                                     const char *cert, size_t cert_len, cn_scribe_principal_t *out,
                                     char *why, size_t cap);
CN_API cn_err_t cn_scribe_auth_confirm(cn_scribe_auth_t *a, cn_scribe_principal_t *out, char *why,
                                       size_t cap);

/* Whether p may read the namespace's inventory (instance_status): a direct
 * caller holding a namespace-readers grant or the namespace administrator
 * role (SAU2 authorize's fifth column, docs/protocol/sau2.md 5.2).  NULL
 * or !present: false, no round trip.  Errors as cn_scribe_auth_authorize. */
CN_API cn_err_t cn_scribe_auth_inventory(cn_scribe_auth_t *a, const cn_scribe_principal_t *p,
                                         bool *allowed, int64_t *lease_ms);

/* The role of p (NULL or !present: anonymous) on repository repo (a storage
 * name) and the lease (Unix ms) until which it may be reused.  Errors as
 * cn_scribe_auth_confirm (CN_E_AUTH: the credential is no longer live). */
CN_API cn_err_t cn_scribe_auth_authorize(cn_scribe_auth_t *a, const cn_scribe_principal_t *p,
                                         const char *repo, int *role, int64_t *lease_ms);

/* authorize-batch: roles[i] for repos[i] (1..124 names), one lease for all. */
#define CN_SCRIBE_AUTH_BATCH_MAX 124
CN_API cn_err_t cn_scribe_auth_authorize_batch(cn_scribe_auth_t *a, const cn_scribe_principal_t *p,
                                               const char *const *repos, size_t n, int *roles,
                                               int64_t *lease_ms);

#ifdef __cplusplus
}
#endif
#endif
