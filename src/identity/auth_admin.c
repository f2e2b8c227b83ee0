/* The SAU2 administrative verbs (docs/protocol/sau2.md section 5.3): the
 * gate (a live user credential of an enabled person who is an auth
 * administrator), operation ids and replay for mutations, the revision step,
 * and the audit row every request leaves, applied or refused.  A mutation's
 * effect, revision step, operation record and audit row commit in one
 * transaction before the reply; a refusal rolls its effect back and is
 * audited in a transaction of its own.  It must never write a secret into
 * an argument list, an audit row or a log line. */
#include "auth_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define CRED_MAX_MS (366LL * 24 * 3600 * 1000)
#define AUDIT_ARGS_MAX 4096

typedef struct admin_ctx admin_ctx_t;
typedef cn_err_t (*admin_fn)(admin_ctx_t *c, cn_meta_txn_t *t);

typedef struct admin_verb {
    const char *verb;
    admin_fn fn;
    bool mutation;
    uint16_t min, max; /* argc, the verb included */
} admin_verb_t;

struct admin_ctx {
    cn_auth_t *a;
    const cn_sau2_caller_t *caller;
    const cn_sau2_req_t *req;
    cn_sau2_reply_t *reply;
    const admin_verb_t *v;
    char actor[CN__AU_NAME_MAX + 1];
    char pw_hash[256]; /* users-password: hashed before the transaction */
    cn_digest_t intent;
};

static cn_err_t refuse(admin_ctx_t *c, uint16_t code, const char *msg)
{
    return cn_sau2_reply_error(c->reply, code, "%s", msg);
}

/* Names of users and servers: 1..64 of [a-z0-9._-], starting alphanumeric. */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > CN__AU_NAME_MAX || s[0] == '.' || s[0] == '-' || s[0] == '_')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
              s[i] == '-' || s[i] == '_'))
            return false;
    return true;
}

/* Argument i as a checked name into out; false (reply set) when it is not. */
static bool arg_name(admin_ctx_t *c, uint16_t i, char out[CN__AU_NAME_MAX + 1])
{
    if (cn__au_arg(c->req, i, out, CN__AU_NAME_MAX + 1) && name_ok(out))
        return true;
    refuse(c, CN__AU_MALFORMED, "a name is 1..64 of a-z 0-9 . - _");
    return false;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end;
    if (!*s || *s == '-' || *s == '+')
        return false;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    *out = v;
    return !*end && errno == 0;
}

/* One row of a single-parameter lookup (sql with text p) into *st; returns
 * CN_META_ROW or CN_META_DONE; the caller finishes *st. */
static cn_err_t row_of(cn_meta_txn_t *t, int stmt, const char *p, cn_meta_stmt_t **st)
{
    CN_TRY(cn_meta_queryf(t, st, cn__sql_au[stmt], "s", p));
    return cn_meta_step(*st);
}

static const char *col(cn_meta_stmt_t *st, int i)
{
    const char *s = cn_meta_column_is_null(st, i) ? NULL : cn_meta_column_text(st, i, NULL);
    return s ? s : "";
}

/* ---- the gate ---------------------------------------------------------------------- */

static cn_err_t gate(admin_ctx_t *c, cn_meta_txn_t *t)
{
    cn_meta_stmt_t *st = NULL;
    cn__au_cred_t cred;
    uint16_t code = 0;
    const char *why = NULL;
    CN_TRY(cn__au_caller_check(t, c->caller, &cred, c->reply));
    if (c->reply->code)
        return 0;
    /* The actor is named in the audit row even when the gate refuses. */
    snprintf(c->actor, sizeof c->actor, "%s", cred.account);
    cn_err_t e = row_of(t, CN_SQL_AU_USER_BY_ID, cred.account, &st);
    if (e == CN_META_ROW) {
        snprintf(c->actor, sizeof c->actor, "%s", col(st, 1));
        if (strcmp(cred.kind, "user") != 0)
            code = CN__AU_FORBIDDEN, why = "administrative verbs need a user credential";
        else if (cn_meta_column_int64(st, 4))
            code = CN__AU_UNAUTHENTICATED, why = "account disabled";
        else if (strcmp(col(st, 2), "person") || !cn_meta_column_int64(st, 3))
            code = CN__AU_FORBIDDEN, why = "not an auth administrator";
    } else if (e == CN_META_DONE) { /* a server's credential */
        code = CN__AU_FORBIDDEN, why = "administrative verbs need a user credential";
    }
    cn_meta_finish(st);
    return e < 0 ? e : code ? refuse(c, code, why) : 0;
}

/* ---- users ------------------------------------------------------------------------- */

/* The id of the user named name (and whether it is a service user); a
 * missing user is refused (forbidden, reply set) and returns 0. */
static cn_err_t user_id_of(admin_ctx_t *c, cn_meta_txn_t *t, const char *name,
                           char id[CN__AU_NAME_MAX + 1], bool *service)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = row_of(t, CN_SQL_AU_USER_BY_NAME, name, &st);
    if (e == CN_META_ROW) {
        snprintf(id, CN__AU_NAME_MAX + 1, "%s", col(st, 0));
        if (service)
            *service = !strcmp(col(st, 2), "service");
    }
    cn_meta_finish(st);
    if (e == CN_META_DONE)
        return refuse(c, CN__AU_FORBIDDEN, "no such user");
    return e < 0 ? e : 0;
}

static cn_err_t users_add(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char name[CN__AU_NAME_MAX + 1], id[CN__AU_NAME_MAX + 1], adm[4], kind[16];
    if (!arg_name(c, 1, name) || !arg_name(c, 2, id))
        return 0;
    if (!cn__au_arg(c->req, 3, adm, sizeof adm) || !cn__au_arg(c->req, 4, kind, sizeof kind) ||
        (strcmp(adm, "0") && strcmp(adm, "1")) ||
        (strcmp(kind, "person") && strcmp(kind, "service")))
        return refuse(c, CN__AU_MALFORMED, "administrator is 0 or 1, kind person or service");
    if (adm[0] == '1' && kind[0] == 's')
        return refuse(c, CN__AU_MALFORMED, "a service user cannot be an administrator");
    bool taken = false;
    cn_err_t e = cn__au_taken(t, CN_SQL_AU_USER_TAKEN, name, id, &taken);
    if (e == 0 && taken)
        return refuse(c, CN__AU_FORBIDDEN, "a user of that name or id exists");
    if (e == 0)
        e = cn_meta_execf(t, cn__sql_au[CN_SQL_AU_USER_INSERT], "sssini", id, name, kind,
                          (int64_t)(adm[0] == '1'), (int64_t)0);
    const char *row[] = { name, id };
    return e < 0 ? e : cn_sau2_reply_row(c->reply, 2, row);
}

static cn_err_t users_password(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char name[CN__AU_NAME_MAX + 1], gen[24];
    int64_t want;
    if (!arg_name(c, 1, name))
        return 0;
    if (!cn__au_arg(c->req, 2, gen, sizeof gen) || !parse_i64(gen, &want))
        return refuse(c, CN__AU_MALFORMED, "generation is a decimal number");
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = row_of(t, CN_SQL_AU_USER_BY_NAME, name, &st);
    bool person = e == CN_META_ROW && strcmp(col(st, 2), "person") == 0;
    int64_t cur = e == CN_META_ROW ? cn_meta_column_int64(st, 6) : 0;
    cn_meta_finish(st);
    if (e < 0)
        return e;
    if (!person)
        return refuse(c, CN__AU_FORBIDDEN, "no such person");
    if (want != cur + 1)
        return cn_sau2_reply_error(c->reply, CN__AU_FORBIDDEN, "password generation must be %lld",
                                   (long long)cur + 1);
    CN_TRY(
        cn_meta_execf(t, cn__sql_au[CN_SQL_AU_USER_SET_PASSWORD], "sis", c->pw_hash, want, name));
    const char *row[] = { name, gen };
    return cn_sau2_reply_row(c->reply, 2, row);
}

/* users-disable, users-enable, servers-disable, servers-enable. */
static cn_err_t set_disabled(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char name[CN__AU_NAME_MAX + 1];
    if (!arg_name(c, 1, name))
        return 0;
    bool users = c->v->verb[0] == 'u';
    bool off = strstr(c->v->verb, "-disable") != NULL;
    CN_TRY(cn_meta_execf(
        t, cn__sql_au[users ? CN_SQL_AU_USER_SET_DISABLED : CN_SQL_AU_SERVER_SET_DISABLED], "is",
        (int64_t)off, name));
    if (cn_meta_changes(t) == 0)
        return refuse(c, CN__AU_FORBIDDEN, users ? "no such user" : "no such server");
    const char *row[] = { name, off ? "1" : "0" };
    return cn_sau2_reply_row(c->reply, 2, row);
}

/* Runs a list statement with the cursor (argument 1) and an optional second
 * text parameter, appending the columns of each row. */
static cn_err_t list_rows(admin_ctx_t *c, cn_meta_txn_t *t, int stmt, const int *cols, size_t n,
                          const char *second)
{
    char cursor[CN_SAU2_MAX_STRING + 1];
    if (!cn__au_arg(c->req, 1, cursor, sizeof cursor))
        return refuse(c, CN__AU_MALFORMED, "bad cursor");
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = second ? cn_meta_queryf(t, &st, cn__sql_au[stmt], "ss", cursor, second)
                        : cn_meta_queryf(t, &st, cn__sql_au[stmt], "s", cursor);
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        const char *row[16];
        char num[16][24];
        for (size_t i = 0; i < n; i++) {
            int k = cols[i] < 0 ? -cols[i] - 1 : cols[i];
            if (cols[i] < 0 || cn_meta_column_is_null(st, k)) {
                /* numeric (or NULL) columns as decimal text, NULL as "" */
                snprintf(num[i], sizeof num[i], "%lld", (long long)cn_meta_column_int64(st, k));
                row[i] = cn_meta_column_is_null(st, k) ? "" : num[i];
            } else {
                row[i] = col(st, k);
            }
        }
        e = cn_sau2_reply_row(c->reply, n, row);
    }
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

/* Integer column k is written -(k + 1) in a column list. */
#define NUM(k) (-(k)-1)

static cn_err_t users_list(admin_ctx_t *c, cn_meta_txn_t *t)
{
    static const int cols[] = { 1, 0, 2, NUM(3), NUM(4), NUM(6) };
    return list_rows(c, t, CN_SQL_AU_USER_LIST, cols, 6, NULL);
}

/* ---- servers ------------------------------------------------------------------------ */

static cn_err_t servers_add(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char name[CN__AU_NAME_MAX + 1], ns[CN_SAU2_MAX_STRING + 1], id[CN__AU_NAME_MAX + 1];
    if (!arg_name(c, 1, name) || !arg_name(c, 3, id))
        return 0;
    if (!cn__au_arg(c->req, 2, ns, sizeof ns) || !ns[0])
        return refuse(c, CN__AU_MALFORMED, "a server needs a namespace");
    bool taken = false;
    cn_err_t e = cn__au_taken(t, CN_SQL_AU_SERVER_TAKEN, name, id, &taken);
    if (e == 0 && taken)
        return refuse(c, CN__AU_FORBIDDEN, "a server of that name or id exists");
    if (e == 0)
        e = cn_meta_execf(t, cn__sql_au[CN_SQL_AU_SERVER_INSERT], "sss", id, name, ns);
    const char *row[] = { name, ns, id };
    return e < 0 ? e : cn_sau2_reply_row(c->reply, 3, row);
}

static cn_err_t servers_list(admin_ctx_t *c, cn_meta_txn_t *t)
{
    static const int cols[] = { 0, 1, 2, NUM(3) };
    return list_rows(c, t, CN_SQL_AU_SERVER_LIST, cols, 4, NULL);
}

/* ---- credentials ---------------------------------------------------------------------- */

/* The subject of credentials-add: its account id, by kind. */
static cn_err_t cred_subject(admin_ctx_t *c, cn_meta_txn_t *t, const char *kind,
                             const char *subject, char id[CN__AU_NAME_MAX + 1])
{
    bool server = strcmp(kind, "server") == 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e =
        row_of(t, server ? CN_SQL_AU_SERVER_BY_NAME : CN_SQL_AU_USER_BY_NAME, subject, &st);
    bool ok = e == CN_META_ROW;
    if (ok && !server) {
        const char *want = strcmp(kind, "user") == 0 ? "person" : "service";
        ok = strcmp(col(st, 2), want) == 0;
    }
    if (ok)
        snprintf(id, CN__AU_NAME_MAX + 1, "%s", col(st, 0));
    cn_meta_finish(st);
    if (e < 0)
        return e;
    return ok ? 0 : refuse(c, CN__AU_FORBIDDEN, "no subject of that name for that kind");
}

static cn_err_t credentials_add(admin_ctx_t *c, cn_meta_txn_t *t)
{
    static const char *const kinds[] = { "user", "server", "service-reader", "service-writer" };
    char kind[24], subject[CN__AU_NAME_MAX + 1], cred[CN_SAU2_CRED_HEX + 1], exp[24];
    char label[257], id[CN__AU_NAME_MAX + 1];
    int64_t expires = 0, now = cn_wall_ms();
    bool kind_ok = false;
    if (cn__au_arg(c->req, 1, kind, sizeof kind))
        for (size_t i = 0; i < 4; i++)
            kind_ok |= strcmp(kind, kinds[i]) == 0;
    if (!kind_ok || !arg_name(c, 2, subject))
        return kind_ok ? 0
                       : refuse(c, CN__AU_MALFORMED,
                                "kind is user, server, service-reader or service-writer");
    if (!cn__au_arg(c->req, 3, cred, sizeof cred) || !cn__au_arg(c->req, 5, exp, sizeof exp) ||
        !parse_i64(exp, &expires) || !cn__au_arg(c->req, 6, label, sizeof label))
        return refuse(c, CN__AU_MALFORMED, "credential, expires-ms or label malformed");
    if (expires <= now || expires > now + CRED_MAX_MS)
        return refuse(c, CN__AU_MALFORMED, "expiry must be in the future, within 366 days");
    CN_TRY(cred_subject(c, t, kind, subject, id));
    if (c->reply->code)
        return 0;
    cn__au_issue_t in = { .kind = kind,
                          .account_name = subject,
                          .account_id = id,
                          .credential = cred,
                          .label = label,
                          .public_key = c->req->argv[4],
                          .expires_ms = expires };
    return cn__au_issue(c->a, t, &in, c->reply);
}

static cn_err_t credentials_certificate(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char cred[CN_SAU2_CRED_HEX + 1];
    if (!cn__au_arg(c->req, 1, cred, sizeof cred))
        return refuse(c, CN__AU_MALFORMED, "credential malformed");
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = row_of(t, CN_SQL_AU_CRED_GET, cred, &st);
    if (e == CN_META_ROW) {
        const char *row[] = { col(st, 5) };
        e = cn_sau2_reply_row(c->reply, 1, row);
    } else if (e == CN_META_DONE) {
        e = refuse(c, CN__AU_FORBIDDEN, "no such credential");
    }
    cn_meta_finish(st);
    return e;
}

static cn_err_t credentials_revoke(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char cred[CN_SAU2_CRED_HEX + 1], when[24];
    if (!cn__au_arg(c->req, 1, cred, sizeof cred))
        return refuse(c, CN__AU_MALFORMED, "credential malformed");
    int64_t now = cn_wall_ms();
    CN_TRY(cn_meta_execf(t, cn__sql_au[CN_SQL_AU_CRED_REVOKE], "iss", now, cred, cred));
    if (cn_meta_changes(t) == 0)
        return refuse(c, CN__AU_FORBIDDEN, "no such credential");
    snprintf(when, sizeof when, "%lld", (long long)now);
    const char *row[] = { cred, when };
    return cn_sau2_reply_row(c->reply, 2, row);
}

static cn_err_t credentials_list(admin_ctx_t *c, cn_meta_txn_t *t)
{
    static const int cols[] = { 0, 1, 2, 3, NUM(7), NUM(9), 8, 10 };
    char user[CN__AU_NAME_MAX + 1], id[CN__AU_NAME_MAX + 1] = "";
    if (c->req->argc < 3)
        return list_rows(c, t, CN_SQL_AU_CRED_LIST, cols, 8, NULL);
    if (!arg_name(c, 2, user))
        return 0;
    CN_TRY(user_id_of(c, t, user, id, NULL));
    return c->reply->code ? 0 : list_rows(c, t, CN_SQL_AU_CRED_LIST_USER, cols, 8, id);
}

/* ---- grants, namespace admins and readers, delegates, visibility ------------------------- */

/* The first of the four statements of the table a verb names (auth.h). */
static int pair_base(const char *verb)
{
    return !strncmp(verb, "grants-", 7)               ? CN_SQL_AU_GRANT_SET
           : !strncmp(verb, "namespace-admins-", 17)  ? CN_SQL_AU_NSADMIN_SET
           : !strncmp(verb, "namespace-readers-", 18) ? CN_SQL_AU_NSREADER_SET
                                                      : CN_SQL_AU_DELEGATE_SET;
}

/* Namespaces and repository names: 1..255 of [a-z0-9._/-]. */
static bool ns_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || strchr("._/-", s[i])))
            return false;
    return true;
}

static bool arg_ns(admin_ctx_t *c, uint16_t i, char out[256])
{
    if (cn__au_arg(c->req, i, out, 256) && ns_ok(out))
        return true;
    refuse(c, CN__AU_MALFORMED, "a namespace or repository is 1..255 of a-z 0-9 . _ / -");
    return false;
}

static const char *const roles[] = { "reader", "writer", "maintainer", "namespace-admin" };

/* *-set and *-revoke: user namespace [role]. */
static cn_err_t pair_change(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char user[CN__AU_NAME_MAX + 1], ns[256], role[24] = "";
    int base = pair_base(c->v->verb);
    bool set = strstr(c->v->verb, "-set") != NULL, grant = base == CN_SQL_AU_GRANT_SET;
    if (!arg_name(c, 1, user) || !arg_ns(c, 2, ns))
        return 0;
    bool role_ok = !(set && grant);
    for (size_t i = 0; !role_ok && i < 4; i++)
        role_ok = cn__au_arg(c->req, 3, role, sizeof role) && !strcmp(role, roles[i]);
    if (!role_ok)
        return refuse(c, CN__AU_MALFORMED, "role is reader, writer, maintainer or namespace-admin");
    char id[CN__AU_NAME_MAX + 1];
    bool service = false;
    CN_TRY(user_id_of(c, t, user, id, &service));
    if (c->reply->code)
        return 0;
    cn_err_t e;
    if (set && base == CN_SQL_AU_DELEGATE_SET && !service)
        return refuse(c, CN__AU_FORBIDDEN, "a delegate is a service user");
    if (set)
        e = grant ? cn_meta_execf(t, cn__sql_au[base], "sss", id, ns, role)
                  : cn_meta_execf(t, cn__sql_au[base], "ss", id, ns);
    else
        e = cn_meta_execf(t, cn__sql_au[base + 1], "ss", ns, id);
    if (e >= 0 && !set && cn_meta_changes(t) == 0)
        return refuse(c, CN__AU_FORBIDDEN, "nothing to revoke");
    const char *row[] = { user, ns, role };
    return e < 0 ? e : cn_sau2_reply_row(c->reply, grant && set ? 3 : 2, row);
}

/* *-list: cursor [namespace]. */
static cn_err_t pair_list(admin_ctx_t *c, cn_meta_txn_t *t)
{
    static const int cols[] = { 0, 1, 2 };
    int base = pair_base(c->v->verb);
    size_t n = base == CN_SQL_AU_GRANT_SET ? 3 : 2;
    char ns[256];
    if (c->req->argc < 3)
        return list_rows(c, t, base + 2, cols, n, NULL);
    if (!arg_ns(c, 2, ns))
        return 0;
    return list_rows(c, t, base + 3, cols, n, ns);
}

/* visibility-get namespace repository; visibility-set ... private|public-read. */
static cn_err_t visibility(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char ns[256], repo[256], vis[16] = "private";
    bool set = c->v->mutation;
    if (!arg_ns(c, 1, ns) || !arg_ns(c, 2, repo))
        return 0;
    if (set && (!cn__au_arg(c->req, 3, vis, sizeof vis) ||
                (strcmp(vis, "private") && strcmp(vis, "public-read"))))
        return refuse(c, CN__AU_MALFORMED, "visibility is private or public-read");
    cn_err_t e = 0;
    if (set) {
        e = cn_meta_execf(t, cn__sql_au[CN_SQL_AU_VISIBILITY_SET], "sss", ns, repo, vis);
    } else {
        cn_meta_stmt_t *st = NULL;
        e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_VISIBILITY_GET], "ss", ns, repo);
        if (e == 0)
            e = cn_meta_step(st);
        if (e == CN_META_ROW)
            snprintf(vis, sizeof vis, "%s", col(st, 0));
        cn_meta_finish(st);
    }
    const char *row[] = { ns, repo, vis };
    return e < 0 ? e : cn_sau2_reply_row(c->reply, 3, row);
}

/* ---- audit and outcomes ---------------------------------------------------------------- */

static cn_err_t audit_list(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char cursor[24];
    int64_t after = 0;
    if (!cn__au_arg(c->req, 1, cursor, sizeof cursor) || (cursor[0] && !parse_i64(cursor, &after)))
        return refuse(c, CN__AU_MALFORMED, "the cursor is an audit sequence number");
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_AUDIT_LIST], "i", after);
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        char seq[24], at[24], code[8], rev[24];
        snprintf(seq, sizeof seq, "%lld", (long long)cn_meta_column_int64(st, 0));
        snprintf(at, sizeof at, "%lld", (long long)cn_meta_column_int64(st, 1));
        snprintf(code, sizeof code, "%lld", (long long)cn_meta_column_int64(st, 5));
        snprintf(rev, sizeof rev, "%lld", (long long)cn_meta_column_int64(st, 6));
        const char *row[] = { seq, at, col(st, 2), col(st, 3), col(st, 4), code, rev };
        e = cn_sau2_reply_row(c->reply, 7, row);
    }
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

static cn_err_t operation_outcome(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char hex[CN_SAU2_ID_LEN * 2 + 1];
    uint8_t op[CN_SAU2_ID_LEN];
    if (!cn__au_arg(c->req, 1, hex, sizeof hex) || cn_hex_decode(hex, strlen(hex), op, sizeof op))
        return refuse(c, CN__AU_MALFORMED, "operation id is 32 hex digits");
    /* Only the actor's own operations are visible; the intent is not known
     * here, so a found operation of this actor is compared by actor alone. */
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_OP_GET], "b", op, sizeof op);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW && strcmp(col(st, 0), c->actor) == 0) {
        size_t n = 0;
        const uint8_t *rows = cn_meta_column_blob(st, 3, &n);
        c->reply->code = (uint16_t)cn_meta_column_int64(st, 2);
        c->reply->nrows = n >= 2 ? (uint16_t)(rows[0] | rows[1] << 8) : 0;
        e = n > 2 ? cn_buf_append(&c->reply->rows, rows + 2, n - 2) : 0;
    } else if (e >= 0) {
        e = refuse(c, CN__AU_FORBIDDEN, "unknown operation");
    }
    cn_meta_finish(st);
    return e;
}

static const admin_verb_t verbs[] = {
    { "users-add", users_add, true, 5, 5 },
    { "users-password", users_password, true, 3, 3 },
    { "users-disable", set_disabled, true, 2, 2 },
    { "users-enable", set_disabled, true, 2, 2 },
    { "users-list", users_list, false, 2, 2 },
    { "servers-add", servers_add, true, 4, 4 },
    { "servers-disable", set_disabled, true, 2, 2 },
    { "servers-enable", set_disabled, true, 2, 2 },
    { "servers-list", servers_list, false, 2, 2 },
    { "credentials-add", credentials_add, true, 7, 7 },
    { "credentials-certificate", credentials_certificate, false, 2, 2 },
    { "credentials-revoke", credentials_revoke, true, 2, 2 },
    { "credentials-list", credentials_list, false, 2, 3 },
    { "grants-set", pair_change, true, 4, 4 },
    { "grants-revoke", pair_change, true, 3, 3 },
    { "grants-list", pair_list, false, 2, 3 },
    { "namespace-admins-set", pair_change, true, 3, 3 },
    { "namespace-admins-revoke", pair_change, true, 3, 3 },
    { "namespace-admins-list", pair_list, false, 2, 3 },
    { "namespace-readers-set", pair_change, true, 3, 3 },
    { "namespace-readers-revoke", pair_change, true, 3, 3 },
    { "namespace-readers-list", pair_list, false, 2, 3 },
    { "delegates-set", pair_change, true, 3, 3 },
    { "delegates-revoke", pair_change, true, 3, 3 },
    { "delegates-list", pair_list, false, 2, 3 },
    { "visibility-get", visibility, false, 3, 3 },
    { "visibility-set", visibility, true, 4, 4 },
    { "audit-list", audit_list, false, 2, 2 },
    { "operation-outcome", operation_outcome, false, 2, 2 },
};

/* ---- running one request ---------------------------------------------------------------- */

/* Appends one audit row for the request: actor, verb, arguments (no
 * secret: none is ever an argument), the answer's code, the revision. */
static cn_err_t audit(admin_ctx_t *c, cn_meta_txn_t *t)
{
    char args[AUDIT_ARGS_MAX + 1], verb[64];
    size_t n = 0;
    for (uint16_t i = 1; i < c->req->argc && n < AUDIT_ARGS_MAX; i++) {
        size_t len = c->req->argv[i].len;
        if (n + len + (i > 1) > AUDIT_ARGS_MAX)
            len = AUDIT_ARGS_MAX - n - (i > 1);
        if (i > 1)
            args[n++] = ' ';
        memcpy(args + n, c->req->argv[i].p, len);
        n += len;
    }
    for (size_t i = 0; i < n; i++)
        if (args[i] == '\0')
            args[i] = '?';
    args[n] = '\0';
    if (!cn__au_arg(c->req, 0, verb, sizeof verb))
        snprintf(verb, sizeof verb, "?");
    return cn_meta_execf(t, cn__sql_au[CN_SQL_AU_AUDIT_ADD], "isssii", cn_wall_ms(), c->actor, verb,
                         args, (int64_t)c->reply->code, (int64_t)c->reply->revision);
}

static cn_err_t admin_body(cn_meta_txn_t *t, void *arg)
{
    static const uint8_t zero[CN_SAU2_ID_LEN];
    admin_ctx_t *c = arg;
    bool found = false, mismatch = false;
    cn__au_reply_restart(c->reply); /* a repeated attempt starts afresh */
    c->actor[0] = '\0';
    CN_TRY(cn__au_state_read(t, c->reply));
    CN_TRY(gate(c, t));
    if (c->reply->code == 0 && c->v->mutation) {
        if (!memcmp(c->req->op, zero, sizeof zero))
            refuse(c, CN__AU_MALFORMED, "a mutation needs an operation id");
        else
            CN_TRY(
                cn__au_op_find(t, c->req->op, c->actor, &c->intent, c->reply, &found, &mismatch));
        if (mismatch)
            refuse(c, CN__AU_INTENT_MISMATCH, "operation id already used for another request");
    }
    if (c->reply->code == 0 && !found)
        CN_TRY(c->v->fn(c, t));
    /* Only applied operations are recorded, so a found one replays with code
     * 0: any refusal here (an intent mismatch included) is audited on its own
     * by the caller, once. */
    if (c->reply->code != 0) {
        cn_meta_discard(t);
        return 0;
    }
    if (c->v->mutation && !found) {
        CN_TRY(cn_meta_execf(t, cn__sql_au[CN_SQL_AU_REVISION_BUMP], ""));
        CN_TRY(cn__au_state_read(t, c->reply));
        CN_TRY(cn__au_op_record(t, c->req->op, c->actor, &c->intent, c->reply));
    }
    return audit(c, t);
}

static cn_err_t audit_body(cn_meta_txn_t *t, void *arg)
{
    return audit(arg, t);
}

bool cn__au_admin(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                  cn_sau2_reply_t *reply)
{
    const admin_verb_t *v = NULL;
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0] && !v; i++)
        if (cn__au_verb_is(req, verbs[i].verb))
            v = &verbs[i];
    if (!v)
        return false;
    admin_ctx_t c = { .a = a, .caller = caller, .req = req, .reply = reply, .v = v };
    cn_err_t e = 0;
    if (req->argc < v->min || req->argc > v->max)
        refuse(&c, CN__AU_MALFORMED, "wrong number of arguments");
    else if (v->mutation)
        e = cn_sau2_intent(req, 0, &c.intent);
    if (e == 0 && reply->code == 0 && req->has_secret) /* users-password: hash outside the txn */
        e = cn__au_hash_password(a, req->secret.p, req->secret.len, c.pw_hash, sizeof c.pw_hash);
    if (e == 0 && reply->code == 0)
        e = cn_meta_run(a->meta, CN_META_RUN_WRITE | CN_META_RETRY, admin_body, &c);
    OPENSSL_cleanse(c.pw_hash, sizeof c.pw_hash);
    if (e < 0) {
        cn__au_fail(reply, e);
        return true;
    }
    if (reply->code != 0) {
        e = cn_meta_run(a->meta, CN_META_RUN_WRITE | CN_META_RETRY, audit_body, &c);
        if (e < 0)
            cn_warn("auth", "auditing a refused %s failed: %s", v->verb, cn_strerror(e));
    }
    return true;
}
