/* The storage side of the gateway preflights (docs/protocol/scribe-gateway.md,
 * "Wire"): authorize_upload (27) and authorize_repo_create (28).  A gateway
 * asks them before it grants its own upload admission or persists a new
 * placement; the storage server repeats every check on the real put_objects
 * and repo_create, so a preflight grants nothing (no lease, no reservation).
 *
 * Authorization is the role table's (server_auth.c): Writer on the
 * repository for 27, namespace administrator for 28, on a listener with an
 * auth provider; a listener without one trusts every caller, as on protocol
 * 2.  What stays here is what the table cannot know: that the repository
 * exists (27, as upload admission would find) and that an explicit
 * namespace is the one this server serves (28).
 *
 * Never: answer success for a namespace this server does not serve; accept
 * a namespace on an endpoint that serves none. */
#include "server_int.h"

#include <string.h>

bool cn__scribe_gw_delegated(const cn__scribe_call_t *k)
{
    return k->sc->version == 4 && k->sc->ss && k->sc->ss->caller == CN_SCRIBE_CALLER_DELEGATED;
}

static cn_err_t reply_empty(cn__scribe_call_t *k)
{
    cn_buf_reset(&k->sc->out);
    return cn__scribe_reply(k, 0);
}

/* 27: [16] repository -> empty.  The role table asked Writer already; the
 * repository must exist, as put_objects' admission would require (an
 * unknown id answers repository_not_found, as a private one does). */
static cn_err_t op_authorize_upload(cn__scribe_call_t *k)
{
    cn_scribe_id_t id;
    if (cn_scribe_dec_repo_id_req(k->payload, k->len, k->sc->codec, &id) < 0)
        return cn__scribe_malformed(k);
    cn_repos_info_t ri;
    cn_err_t err = cn_repos_info(k->sc->srv->repos, &k->rq, id.b, &ri);
    return err < 0 ? cn__scribe_fail(k, err) : reply_empty(k);
}

/* 28: u8 has_namespace | str16 namespace -> empty.  None means this
 * endpoint's default (its one namespace, or none on an endpoint without
 * auth); an explicit label must be the served one, else malformed. */
static cn_err_t op_authorize_repo_create(cn__scribe_call_t *k)
{
    cn_scribe_authorize_create_req_t q;
    if (cn_scribe_dec_authorize_create_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    if (!q.has_namespace)
        return reply_empty(k);
    cn_scribe_auth_t *auth = k->sc->srv->auth;
    if (!auth)
        return cn__scribe_fail_code(k, CN_SCRIBE_E_MALFORMED,
                                    "this endpoint serves no namespace: send none, not \"%.*s\"",
                                    (int)q.ns.len, (const char *)q.ns.p);
    const char *served = cn_scribe_auth_namespace(auth);
    if (strlen(served) != q.ns.len || memcmp(served, q.ns.p, q.ns.len) != 0)
        return cn__scribe_fail_code(k, CN_SCRIBE_E_MALFORMED,
                                    "namespace \"%.*s\" is not served here (this server serves %s)",
                                    (int)q.ns.len, (const char *)q.ns.p, served);
    return reply_empty(k);
}

cn_err_t cn__scribe_op_gw(cn__scribe_call_t *k)
{
    return k->hdr.opcode == CN_SCRIBE_OP_AUTHORIZE_UPLOAD ? op_authorize_upload(k)
                                                          : op_authorize_repo_create(k);
}
