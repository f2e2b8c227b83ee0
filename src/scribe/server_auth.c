/* Protocol 4's principals and role table (docs/protocol/scribe.md 15.6):
 * the hello's access certificate resolved to a principal, and the ONE
 * dispatch-level check every request of an authenticated listener passes
 * before its handler runs — the opcode's role on the request's repository,
 * asked of auth (cairn/scribe_auth.h) and kept per session for at most the
 * lease.  repo_list's candidate pages are filtered here too.
 *
 * A listener without an auth provider keeps today's rule (every caller
 * trusted, as on protocol 2, 13.6); nothing here runs for it.
 *
 * Never: let a handler run before its opcode's role is granted; tell a
 * private repository from an absent one (both repository_not_found); keep
 * a role past its lease. */
#include "server_int.h"

#include "cairn/util.h"

#include <errno.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Where a request names its repository. */
enum {
    AT_NONE,   /* no repository: discover */
    AT_ID0,    /* [16] repository id at payload offset 0 */
    AT_ID4,    /* a bytes32 request (submit, tree_page) first: the id at offset 4 */
    AT_CREATE, /* repo_create: the name to be */
    AT_INFO,   /* repo_info: by id or by name */
    AT_LIST,   /* repo_list: filtered by its handler (cn__scribe_auth_filter) */
    AT_NS,     /* the namespace itself: authorize_repo_create */
    AT_INV     /* the namespace's inventory: instance_status (Reader = may read it) */
};

static const struct {
    uint16_t op;
    uint8_t at;
    uint8_t role;
} table[] = {
    { CN_SCRIBE_OP_DISCOVER, AT_NONE, CN_SCRIBE_ROLE_NONE },
    /* A workspace is the caller's own checkout record: registering or
     * retiring one writes nothing to the repository (pins and submits,
     * which do, need Writer), so a Reader's clone registers its own. */
    { CN_SCRIBE_OP_WORKSPACE_REGISTER, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_WORKSPACE_REMOVE, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_REPO_CREATE, AT_CREATE, CN_SCRIBE_ROLE_ADMIN },
    { CN_SCRIBE_OP_REPO_INFO, AT_INFO, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_REPO_LIST, AT_LIST, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_PUT_OBJECTS, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_GET_OBJECTS, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_PRESENCE, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_SUBMIT, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_OPERATION_OUTCOME, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_TREE_PAGE, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_CHANGED_PATHS, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_LOCK_ACQUIRE, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_LOG, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_LOCK_RELEASE, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_LOCK_LIST, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_BRANCH_LIST, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_BRANCH_MUTATE, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_BRANCH_INFO, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_BRANCH_OUTCOME, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_MERGE_SUBMIT, AT_ID4, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_MERGE_READ, AT_ID0, CN_SCRIBE_ROLE_READER },
    /* A namespace-readers grant or the namespace administrator, as auth
     * reports it (authorize's inventory column): AT_INV answers Reader. */
    { CN_SCRIBE_OP_INSTANCE_STATUS, AT_INV, CN_SCRIBE_ROLE_READER },
    /* The gateway preflights (server_gw.c): upload admission's Writer, and
     * repo_create's namespace administrator. */
    { CN_SCRIBE_OP_AUTHORIZE_UPLOAD, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE, AT_NS, CN_SCRIBE_ROLE_ADMIN },
    { CN_SCRIBE_OP_LOCK_POLICY, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_GET_CHUNKS, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_REPOSITORY_MOUNTS, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_CHERRY_PICK_INFO, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_CHERRY_PICK_SUBMIT, AT_ID4, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_WORKSPACE_LIST, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_REPO_USAGE, AT_ID0, CN_SCRIBE_ROLE_READER },
    /* Writer on one's own commits, Maintainer on others': the service
     * judges the commit's author (cn_repos_req_t.maintainer). */
    { CN_SCRIBE_OP_DESCRIBE_CHANGE, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_CHANGE_NOTES, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_CHANGE_NOTE_HISTORY, AT_ID0, CN_SCRIBE_ROLE_READER },
    { CN_SCRIBE_OP_PIN_OBJECTS, AT_ID0, CN_SCRIBE_ROLE_WRITER },
    { CN_SCRIBE_OP_TREE_PROOF, AT_ID4, CN_SCRIBE_ROLE_READER }, /* bytes32 tree_page first */
};

static const char *const role_names[] = { "no role", "Reader", "Writer", "Maintainer",
                                          "namespace administrator" };

/* ---- the hello ------------------------------------------------------------------------- */
/* The per-principal connection cap (docs/protocol/scribe.md 15.6, "Admission"):
 * claimed from the verified certificate's account before any auth round
 * trip, so that an identity at its limit costs auth nothing. */
static uint16_t claim(cn_conn_t *c, const char *account, char *why, size_t cap)
{
    cn_err_t e = cn_conn_claim_principal(c, account);
    if (e == CN_E_BUSY)
        snprintf(why, cap, "too many concurrent connections for this identity");
    else if (e < 0)
        snprintf(why, cap, "out of memory");
    return e == CN_E_BUSY ? CN_SCRIBE_E_BUSY : e < 0 ? CN_SCRIBE_E_INTERNAL : 0;
}

/* A refusal of resolution as its handshake code. */
static uint16_t resolve_code(cn_err_t e, char *why, size_t cap)
{
    if (e == CN_E_AUTH || e == CN_E_DENIED)
        return CN_SCRIBE_E_UNAUTHENTICATED;
    snprintf(why, cap, "the auth service cannot confirm the caller now");
    return CN_SCRIBE_E_AUTH_UNAVAILABLE;
}

/* Whether the hello's certificates are consistent with its caller tag: 0
 * when they are, else the code (why filled). */
static uint16_t caller_form(cn__scribe_srv_t *s, X509 *peer, const cn_scribe_hello_t *h, char *why,
                            size_t cap)
{
    if (!s->auth) {
        snprintf(why, cap, "%s",
                 peer ? "client certificates are not accepted by this server (it has no auth "
                        "service)"
                      : "an access certificate is required");
        return peer || h->caller != CN_SCRIBE_CALLER_ANONYMOUS ? CN_SCRIBE_E_UNAUTHENTICATED : 0;
    }
    if (h->caller == CN_SCRIBE_CALLER_DELEGATED && !peer) {
        snprintf(why, cap, "a delegated caller (a gateway) presents its own access certificate");
        return CN_SCRIBE_E_UNAUTHENTICATED;
    }
    if (!peer != (h->caller == CN_SCRIBE_CALLER_ANONYMOUS)) {
        snprintf(why, cap, "%s",
                 peer ? "an anonymous caller (tag 0) presents no client certificate"
                      : "an access certificate is required");
        return CN_SCRIBE_E_UNAUTHENTICATED;
    }
    return 0;
}

uint16_t cn__scribe_resolve(cn__scribe_srv_t *s, cn_conn_t *c, const cn_scribe_hello_t *h,
                            cn_scribe_principal_t *who, char *why, size_t cap)
{
    X509 *peer = cn_conn_peer_cert(c);
    memset(who, 0, sizeof *who);
    uint16_t code = caller_form(s, peer, h, why, cap);
    if (code || !peer || !s->auth)
        return code;
    BIO *bio = BIO_new(BIO_s_mem());
    char *pem = NULL;
    long n = bio && PEM_write_bio_X509(bio, peer) == 1 ? BIO_get_mem_data(bio, &pem) : 0;
    /* Caller 2: the peer is the gateway, the principal the user whose
     * certificate (PEM) the hello forwards (docs/protocol/scribe.md 15.6).
     * First the local check against the access CA, then the cap is claimed
     * for the account the verified certificate names, then auth confirms:
     * a forged certificate never takes another account's place. */
    bool delegated = h->caller == CN_SCRIBE_CALLER_DELEGATED;
    cn_err_t e = n <= 0 ? -ENOMEM
                        : cn_scribe_auth_check(s->auth, pem, (size_t)n,
                                               delegated ? (const char *)h->delegated_cert.p : NULL,
                                               h->delegated_cert.len, who, why, cap);
    BIO_free(bio);
    if (e < 0)
        return resolve_code(e, why, cap);
    if (who->account[0] && (code = claim(c, who->account, why, cap)))
        return code;
    e = cn_scribe_auth_confirm(s->auth, who, why, cap);
    if (e < 0) {
        (void)cn_conn_set_principal(c, NULL); /* the claim goes back before the close */
        return resolve_code(e, why, cap);
    }
    /* The account is the principal of net's shares (worker share, memory
     * budget per principal, connection cap), whichever connection of it
     * this is; for a gateway's delegated traffic the user, never the
     * gateway.  Already claimed unless auth confirmed another name than the
     * certificate's (then the claim moves to auth's). */
    return claim(c, who->account, why, cap);
}

/* ---- the role of a session on a repository ------------------------------------------------- */
static bool cached_role(cn__scribe_srv_t *s, cn__scribe_session_t *ss, const uint8_t id[16],
                        int *role)
{
    int64_t now = cn_wall_ms();
    bool hit = false;
    pthread_mutex_lock(&s->mu);
    for (unsigned i = 0; i < CN_SCRIBE_ROLE_CACHE && !hit; i++)
        if (ss->roles[i].until_ms > now && !memcmp(ss->roles[i].repo, id, 16)) {
            *role = ss->roles[i].role;
            hit = true;
        }
    pthread_mutex_unlock(&s->mu);
    return hit;
}

static void cache_role(cn__scribe_srv_t *s, cn__scribe_session_t *ss, const uint8_t id[16],
                       int role, int64_t lease)
{
    pthread_mutex_lock(&s->mu);
    unsigned slot = ss->roles_next++ % CN_SCRIBE_ROLE_CACHE;
    for (unsigned i = 0; i < CN_SCRIBE_ROLE_CACHE; i++)
        if (!memcmp(ss->roles[i].repo, id, 16))
            slot = i;
    memcpy(ss->roles[slot].repo, id, 16);
    ss->roles[slot].role = role;
    ss->roles[slot].until_ms = lease;
    pthread_mutex_unlock(&s->mu);
}

/* The role on the repository with id `id`, asked by name (cached per
 * session until the lease).  An unknown id is role none: it answers like
 * a private repository. */
static cn_err_t role_by_id(cn__scribe_call_t *k, const uint8_t id[16], int *role)
{
    cn__scribe_srv_t *s = k->sc->srv;
    if (cached_role(s, k->sc->ss, id, role))
        return 0;
    cn_repos_info_t ri;
    cn_repos_req_t rq = { .trusted = true };
    cn_err_t e = cn_repos_info(s->repos, &rq, id, &ri);
    if (e == CN_E_NOT_FOUND || (e < 0 && rq.fail.detail == CN_REPOS_E_REPOSITORY_NOT_FOUND)) {
        *role = CN_SCRIBE_ROLE_NONE;
        return 0;
    }
    int64_t lease = 0;
    if (e == 0)
        e = cn_scribe_auth_authorize(s->auth, &k->sc->ss->who, ri.name, role, &lease);
    if (e == 0)
        cache_role(s, k->sc->ss, id, *role, lease);
    return e;
}

/* The role asked by a name the request carries (repo_create, repo_info by
 * name): not cached, the name may not exist yet. */
static cn_err_t role_by_name(cn__scribe_call_t *k, const cn_scribe_str_t *name, int *role)
{
    char n[CN_SCRIBE_MAX_REPO_NAME + 1];
    if (name->len == 0 || name->len > CN_SCRIBE_MAX_REPO_NAME)
        return CN_E_INVALID;
    memcpy(n, name->p, name->len);
    n[name->len] = '\0';
    int64_t lease;
    return cn_scribe_auth_authorize(k->sc->srv->auth, &k->sc->ss->who, n, role, &lease);
}

/* The role the request's repository gives, by where the opcode names it.
 * CN_E_INVALID: the payload does not hold it (the request is malformed). */
static cn_err_t request_role(cn__scribe_call_t *k, uint8_t at, int *role)
{
    switch (at) {
    case AT_ID0:
    case AT_ID4: {
        size_t off = at == AT_ID4 ? 4 : 0;
        if (k->len < off + 16)
            return CN_E_INVALID;
        return role_by_id(k, k->payload + off, role);
    }
    case AT_CREATE: {
        cn_scribe_repo_create_req_t q;
        if (cn_scribe_dec_repo_create_req(k->payload, k->len, k->sc->codec, &q) < 0)
            return CN_E_INVALID;
        return role_by_name(k, &q.name, role);
    }
    case AT_INFO: {
        cn_scribe_repo_info_req_t q;
        if (cn_scribe_dec_repo_info_req(k->payload, k->len, k->sc->codec, &q) < 0)
            return CN_E_INVALID;
        return q.by == CN_SCRIBE_REPO_BY_ID ? role_by_id(k, q.id.b, role)
                                            : role_by_name(k, &q.name, role);
    }
    case AT_INV: {
        bool inventory = false;
        int64_t lease;
        cn_err_t e =
            cn_scribe_auth_inventory(k->sc->srv->auth, &k->sc->ss->who, &inventory, &lease);
        *role = inventory ? CN_SCRIBE_ROLE_READER : CN_SCRIBE_ROLE_NONE;
        return e;
    }
    default: {
        /* The namespace: any repository name asks it (no visibility row). */
        static const cn_scribe_str_t probe = { (const uint8_t *)".namespace", 10 };
        return role_by_name(k, &probe, role);
    }
    }
}

/* Answers a refused request: a failed auth call, or a role below the need. */
static cn_err_t refuse(cn__scribe_call_t *k, cn_err_t e, int role, int need)
{
    const char *op = cn_scribe_op_name(k->hdr.opcode) ? cn_scribe_op_name(k->hdr.opcode) : "?";
    bool anon = !k->sc->ss->who.present;
    if (e == CN_E_INVALID)
        return cn__scribe_malformed(k);
    if (e == CN_E_AUTH) {
        k->close = true; /* the credential died under the session */
        return cn__scribe_fail_code(k, CN_SCRIBE_E_UNAUTHENTICATED,
                                    "the caller's credential is no longer live");
    }
    if (e == CN_E_DENIED) /* a definite answer about the gateway, not an outage */
        return cn__scribe_fail_code(k, CN_SCRIBE_E_FORBIDDEN,
                                    "delegate may not act for users in this namespace");
    if (e < 0)
        return cn__scribe_fail_code(k, CN_SCRIBE_E_AUTH_UNAVAILABLE,
                                    "the auth service cannot authorize %s now", op);
    if (role == CN_SCRIBE_ROLE_NONE && k->hdr.opcode != CN_SCRIBE_OP_REPO_CREATE &&
        k->hdr.opcode != CN_SCRIBE_OP_INSTANCE_STATUS &&
        k->hdr.opcode != CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE)
        return cn__scribe_fail_code(k, CN_SCRIBE_E_REPOSITORY_NOT_FOUND, "repository not found");
    const char *needs = k->hdr.opcode == CN_SCRIBE_OP_INSTANCE_STATUS
                            ? "a namespace-readers grant or the namespace administrator"
                            : role_names[need];
    return cn__scribe_fail_code(k, anon ? CN_SCRIBE_E_UNAUTHENTICATED : CN_SCRIBE_E_FORBIDDEN,
                                "%s needs %s%s", op, needs,
                                anon ? ": sign in (cairn repo login)" : "");
}

cn_err_t cn__scribe_authorize(cn__scribe_call_t *k, bool *answered)
{
    *answered = false;
    if (!k->sc->srv->auth)
        return 0;
    k->rq.authed = true;
    k->rq.account = k->sc->ss->who.present ? k->sc->ss->who.account : NULL;
    int i = -1;
    for (size_t j = 0; j < sizeof table / sizeof table[0]; j++)
        if (table[j].op == k->hdr.opcode)
            i = (int)j;
    *answered = true;
    if (i < 0)
        return cn__scribe_fail_code(k, CN_SCRIBE_E_FORBIDDEN,
                                    "opcode %u has no row in the role table", k->hdr.opcode);
    if (table[i].at == AT_NONE || table[i].at == AT_LIST) {
        *answered = false;
        return 0;
    }
    int role = CN_SCRIBE_ROLE_NONE;
    cn_err_t e = request_role(k, table[i].at, &role);
    /* The service's own rules (workspace ownership, authorship, breaking
     * locks, lock rules) need the principal and whether it is Maintainer. */
    k->rq.maintainer = e == 0 && role >= CN_SCRIBE_ROLE_MAINTAINER;
    if (e == 0 && role >= table[i].role) {
        *answered = false;
        return 0;
    }
    return refuse(k, e, role, table[i].role);
}

/* ---- repo_list ------------------------------------------------------------------------- */
cn_err_t cn__scribe_auth_filter(cn__scribe_call_t *k, cn_repos_info_t *rows, uint32_t *n,
                                bool *answered)
{
    cn__scribe_srv_t *s = k->sc->srv;
    *answered = false;
    if (!s->auth)
        return 0;
    uint32_t kept = 0;
    for (uint32_t at = 0; at < *n; at += CN_SCRIBE_AUTH_BATCH_MAX) {
        uint32_t m = *n - at < CN_SCRIBE_AUTH_BATCH_MAX ? *n - at : CN_SCRIBE_AUTH_BATCH_MAX;
        const char *names[CN_SCRIBE_AUTH_BATCH_MAX];
        int roles[CN_SCRIBE_AUTH_BATCH_MAX];
        int64_t lease;
        for (uint32_t i = 0; i < m; i++)
            names[i] = rows[at + i].name;
        cn_err_t e =
            cn_scribe_auth_authorize_batch(s->auth, &k->sc->ss->who, names, m, roles, &lease);
        if (e < 0) {
            *answered = true;
            return refuse(k, e == CN_E_INVALID ? CN_E_UNSUPPORTED : e, 0, 0);
        }
        for (uint32_t i = 0; i < m; i++)
            if (roles[i] >= CN_SCRIBE_ROLE_READER)
                rows[kept++] = rows[at + i];
    }
    *n = kept;
    return 0;
}
