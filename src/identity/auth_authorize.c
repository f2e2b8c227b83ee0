/* The storage servers' SAU2 verbs (docs/protocol/sau2.md sections 5.2 and
 * 7): authorize, authorize-batch and public-policy.  The caller is a live
 * server credential of an enabled server; it may ask only about its own
 * namespace.  The role answered is the lesser of the subject kind's ceiling
 * (and a read-only delegate's) and the account's current grants; the lease ends
 * within 30 s and never after any credential involved.  It must never
 * answer a role for a credential it has not found live with its registered
 * key, nor for a namespace that is not the calling server's. */
#include "auth_int.h"

#include <stdio.h>
#include <string.h>

#include "cairn/util.h"

#define LEASE_MS 30000LL
#define DELEGATE_REFUSAL "delegate may not act for users in this namespace"

/* Roles in order; 0 = none. */
enum {
    R_NONE,
    R_READER,
    R_WRITER,
    R_MAINTAINER,
    R_ADMIN
};
static const char *const role_names[] = { "", "reader", "writer", "maintainer", "namespace-admin" };

/* Each kind's ceiling (section 7); a kind not listed (server) has none. */
static const struct {
    const char *kind;
    int ceiling;
} ceilings[] = {
    { "user", R_ADMIN },
    { "session", R_ADMIN },
    { "automation", R_READER },
    { "automation-write", R_WRITER },
    { "automation-maintain", R_MAINTAINER },
    { "automation-admin", R_ADMIN },
    { "service-reader", R_READER },
    { "service-writer", R_WRITER },
};

static int ceiling_of(const char *kind)
{
    for (size_t i = 0; i < sizeof ceilings / sizeof ceilings[0]; i++)
        if (!strcmp(kind, ceilings[i].kind))
            return ceilings[i].ceiling;
    return R_NONE;
}

/* What a delegate passes at most: a service-reader gateway never passes a
 * write; a service-writer gateway relays its user's own role, namespace
 * administration included, so that a gateway stands in for storage
 * (repo_create, lock breaking) for whoever may do it there. */
static int delegate_ceiling(const char *kind)
{
    return !strcmp(kind, "service-reader") ? R_READER : R_ADMIN;
}

static int role_of(const char *name)
{
    for (int i = R_READER; i <= R_ADMIN; i++)
        if (!strcmp(name, role_names[i]))
            return i;
    return R_NONE;
}

typedef struct az {
    cn_auth_t *a;
    const cn_sau2_caller_t *caller;
    const cn_sau2_req_t *req;
    cn_sau2_reply_t *reply;
    bool batch, policy;
    char ns[256];
    uint16_t first_repo; /* the argument index of the first repository */
    /* resolved inside the transaction */
    bool anonymous;
    int role;       /* min(ceilings, grants) for the namespace */
    bool inventory; /* may read the namespace's inventory (instance_status) */
    int64_t lease;  /* Unix ms */
    char account[CN__AU_NAME_MAX + 1], delegate[CN__AU_NAME_MAX + 1];
} az_t;

/* Whether the namespace / repository text is 1..255 of [a-z0-9._/-]. */
static bool name_ok(const cn_sau2_str_t *s)
{
    if (s->len == 0 || s->len > 255)
        return false;
    for (size_t i = 0; i < s->len; i++) {
        uint8_t ch = s->p[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || strchr("._/-", ch)))
            return false;
    }
    return true;
}

static void lease_cap(az_t *z, int64_t expires_ms)
{
    if (expires_ms < z->lease)
        z->lease = expires_ms;
}

/* One text row lookup: whether stmt (namespace, user_id) returns a row; its
 * first column into out (cap bytes) when out is not NULL. */
static cn_err_t lookup(cn_meta_txn_t *t, int stmt, const char *ns, const char *id, char *out,
                       size_t cap, bool *hit)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[stmt], "ss", ns, id);
    if (e == 0)
        e = cn_meta_step(st);
    *hit = e == CN_META_ROW;
    if (*hit && out)
        snprintf(out, cap, "%s", cn_meta_column_text(st, 0, NULL));
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

/* The calling server: a live server credential of an enabled server whose
 * namespace is the one asked about. */
static cn_err_t server_gate(az_t *z, cn_meta_txn_t *t)
{
    cn__au_cred_t cred;
    cn__au_account_t acct;
    CN_TRY(cn__au_state_read(t, z->reply));
    CN_TRY(cn__au_caller_check(t, z->caller, &cred, z->reply));
    if (z->reply->code)
        return 0;
    CN_TRY(cn__au_account_get(t, cred.account, &acct));
    if (strcmp(cred.kind, "server") != 0 || !acct.server)
        return cn_sau2_reply_error(z->reply, CN__AU_FORBIDDEN, "%s needs a server credential",
                                   z->policy ? "public-policy" : "authorize");
    if (acct.disabled)
        return cn_sau2_reply_error(z->reply, CN__AU_UNAUTHENTICATED, "server disabled");
    if (strcmp(acct.ns, z->ns) != 0)
        return cn_sau2_reply_error(z->reply, CN__AU_FORBIDDEN,
                                   "namespace %s is not the calling server's", z->ns);
    z->lease = cn_wall_ms() + LEASE_MS;
    lease_cap(z, cred.expires_ms);
    return 0;
}

/* A credential named by a caller column pair (credential id, key id): live,
 * its registered key, its account enabled.  *ok false (no reply set) when it
 * is not. */
static cn_err_t column_cred(cn_meta_txn_t *t, const cn_sau2_str_t *id, const cn_sau2_str_t *key,
                            cn__au_cred_t *cred, cn__au_account_t *acct, bool *ok)
{
    cn_sau2_caller_t c = { .present = true };
    cn_sau2_reply_t r = { 0 };
    *ok = false;
    if (id->len != CN_SAU2_CRED_HEX || key->len != CN_SAU2_KEY_HEX)
        return 0;
    memcpy(c.credential, id->p, id->len);
    memcpy(c.key_id, key->p, key->len);
    cn_err_t e = cn__au_caller_check(t, &c, cred, &r);
    if (e == 0 && r.code == 0)
        e = cn__au_account_get(t, cred->account, acct);
    *ok = e == 0 && r.code == 0 && acct->found && !acct->disabled;
    cn_sau2_reply_free(&r);
    return e;
}

/* The subject and the delegate (argument indexes s and s + 2), the role the
 * subject's account holds in the namespace, capped by the subject's ceiling
 * and the delegate's (delegate_ceiling). */
static cn_err_t resolve(az_t *z, cn_meta_txn_t *t, uint16_t s)
{
    const cn_sau2_str_t *v = z->req->argv;
    bool direct = v[s + 2].len == 0 && v[s + 3].len == 0;
    cn__au_cred_t sc, dc;
    cn__au_account_t sa, da;
    bool ok;
    z->anonymous = v[s].len == 0 && v[s + 1].len == 0 && direct;
    if (z->anonymous) {
        if (!z->batch)
            return cn_sau2_reply_error(z->reply, CN__AU_MALFORMED, "authorize needs a subject");
        return 0;
    }
    CN_TRY(column_cred(t, &v[s], &v[s + 1], &sc, &sa, &ok));
    if (!ok || sa.server)
        return cn_sau2_reply_error(z->reply, CN__AU_UNAUTHENTICATED,
                                   "subject credential not live, key not registered or account "
                                   "disabled");
    lease_cap(z, sc.expires_ms);
    snprintf(z->account, sizeof z->account, "%s", sa.name);
    int ceiling = ceiling_of(sc.kind);
    if (!direct) {
        bool grant = false;
        CN_TRY(column_cred(t, &v[s + 2], &v[s + 3], &dc, &da, &ok));
        if (ok && (!strcmp(dc.kind, "service-reader") || !strcmp(dc.kind, "service-writer")))
            CN_TRY(lookup(t, CN_SQL_AU_DELEGATE_HAS, z->ns, dc.account, NULL, 0, &grant));
        if (!grant)
            return cn_sau2_reply_error(z->reply, CN__AU_FORBIDDEN, DELEGATE_REFUSAL);
        lease_cap(z, dc.expires_ms);
        snprintf(z->delegate, sizeof z->delegate, "%s", da.name);
        if (delegate_ceiling(dc.kind) < ceiling)
            ceiling = delegate_ceiling(dc.kind);
    }
    char granted[24] = "";
    bool hit;
    CN_TRY(lookup(t, CN_SQL_AU_GRANT_GET, z->ns, sc.account, granted, sizeof granted, &hit));
    int role = role_of(granted);
    CN_TRY(lookup(t, CN_SQL_AU_NSADMIN_HAS, z->ns, sc.account, NULL, 0, &hit));
    if (hit)
        role = R_ADMIN;
    z->role = role < ceiling ? role : ceiling;
    /* The inventory (authorize's fifth column): a namespace-readers grant
     * or the namespace administrator, for a kind that reads at all, and for
     * a direct caller only (a gateway polls with its own certificate). */
    CN_TRY(lookup(t, CN_SQL_AU_NSREADER_HAS, z->ns, sc.account, NULL, 0, &hit));
    z->inventory = direct && ceiling >= R_READER && (hit || z->role == R_ADMIN);
    return 0;
}

/* The role on one repository: the namespace role, or reader on a
 * public-read repository (for anonymous callers too) when that is more. */
static cn_err_t repo_role(az_t *z, cn_meta_txn_t *t, const char *repo, int *role, char *vis,
                          size_t cap)
{
    cn_meta_stmt_t *st = NULL;
    snprintf(vis, cap, "private");
    *role = z->role;
    if (*role >= R_READER && !z->policy)
        return 0; /* visibility cannot raise it */
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_VISIBILITY_GET], "ss", z->ns, repo);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW)
        snprintf(vis, cap, "%s", cn_meta_column_text(st, 0, NULL));
    cn_meta_finish(st);
    if (!strcmp(vis, "public-read") && *role < R_READER)
        *role = R_READER;
    return e < 0 ? e : 0;
}

static cn_err_t az_body(cn_meta_txn_t *t, void *arg)
{
    az_t *z = arg;
    cn__au_reply_restart(z->reply); /* a repeated attempt starts afresh */
    z->role = R_NONE;
    z->inventory = false;
    z->account[0] = z->delegate[0] = '\0';
    CN_TRY(server_gate(z, t));
    if (z->reply->code)
        return 0;
    if (!z->policy)
        CN_TRY(resolve(z, t, z->batch ? 2 : 3));
    if (z->reply->code)
        return 0;
    char lease[24], vis[16], repo[256];
    snprintf(lease, sizeof lease, "%lld", (long long)z->lease);
    for (uint16_t i = z->first_repo; i < z->req->argc; i++) {
        int role = z->role;
        const cn_sau2_str_t *r = &z->req->argv[i];
        if (z->batch || z->policy || r->len) {
            memcpy(repo, r->p, r->len);
            repo[r->len] = '\0';
            CN_TRY(repo_role(z, t, repo, &role, vis, sizeof vis));
        }
        if (!z->batch && !z->policy) { /* authorize: one row; identity only when empty */
            const char *row[] = { r->len ? role_names[role] : "", lease, z->account, z->delegate,
                                  z->inventory ? "1" : "0" };
            return cn_sau2_reply_row(z->reply, 5, row);
        }
        const char *row[] = { repo, z->policy ? vis : role_names[role] };
        CN_TRY(cn_sau2_reply_row(z->reply, 2, row));
    }
    const char *last[] = { lease };
    return z->batch ? cn_sau2_reply_row(z->reply, 1, last) : 0;
}

/* Checks the shape of the request: the counts, the namespace and every
 * repository name (authorize's may be empty: identity only). */
static bool az_shape(az_t *z)
{
    const cn_sau2_req_t *q = z->req;
    bool single = !z->batch && !z->policy;
    if (single ? q->argc != 7 : q->argc < (z->policy ? 2 : 6))
        return false;
    if (!name_ok(&q->argv[1]))
        return false;
    memcpy(z->ns, q->argv[1].p, q->argv[1].len);
    z->ns[q->argv[1].len] = '\0';
    z->first_repo = z->batch ? 6 : 2;
    if (single)
        return q->argv[2].len == 0 || name_ok(&q->argv[2]);
    for (uint16_t i = z->first_repo; i < q->argc; i++)
        if (!name_ok(&q->argv[i]))
            return false;
    return true;
}

bool cn__au_authorize(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                      cn_sau2_reply_t *reply)
{
    az_t z = { .a = a, .caller = caller, .req = req, .reply = reply };
    z.batch = cn__au_verb_is(req, "authorize-batch");
    z.policy = cn__au_verb_is(req, "public-policy");
    if (!z.batch && !z.policy && !cn__au_verb_is(req, "authorize"))
        return false;
    if (!az_shape(&z)) {
        cn_sau2_reply_error(reply, CN__AU_MALFORMED,
                            "bad arguments: see docs/protocol/sau2.md section 5.2");
        return true;
    }
    cn_err_t e = cn_meta_run(a->meta, CN_META_RUN_READ | CN_META_RETRY, az_body, &z);
    if (e < 0)
        cn__au_fail(reply, e);
    return true;
}
