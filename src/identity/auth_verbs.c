/* The SAU2 verb handler (cn_sau2_handle): the certificate-less verbs
 * (trust-bundle and the four sign-ins), whoami and logout, credential
 * issuance, caller and account checks and operation records shared with the
 * other verb files (auth_access.c: access certificates and automation;
 * auth_authorize.c: authorize*, public-policy; auth_admin.c: administration).
 * docs/protocol/sau2.md sections 4-7.  It must never let a secret reach a
 * reply, an operation record, the audit or the log, and never trust a caller
 * field it has not checked against the state. */
#include "auth_int.h"

#include <argon2.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define SESSION_MS (12LL * 3600 * 1000)
#define ADMIN_SESSION_MS (3600LL * 1000)

/* A fixed argon2id hash checked when the user does not exist, so that the
 * answer's timing does not tell which names exist. */
static const char dummy_hash[] = "$argon2id$v=19$m=65536,t=3,p=1$AAAAAAAAAAAAAAAAAAAAAA$"
                                 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

bool cn__au_verb_is(const cn_sau2_req_t *req, const char *verb)
{
    return req->argv[0].len == strlen(verb) && memcmp(req->argv[0].p, verb, req->argv[0].len) == 0;
}

bool cn__au_arg(const cn_sau2_req_t *req, uint16_t i, char *out, size_t cap)
{
    if (i >= req->argc || req->argv[i].len >= cap || memchr(req->argv[i].p, 0, req->argv[i].len))
        return false;
    memcpy(out, req->argv[i].p, req->argv[i].len);
    out[req->argv[i].len] = '\0';
    return true;
}

cn_err_t cn__au_taken(cn_meta_txn_t *t, int stmt, const char *a, const char *b, bool *taken)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[stmt], "ss", a, b);
    if (e == 0)
        e = cn_meta_step(st);
    cn_meta_finish(st);
    *taken = e == CN_META_ROW;
    return e < 0 ? e : 0;
}

cn_err_t cn__au_caller_check(cn_meta_txn_t *t, const cn_sau2_caller_t *caller, cn__au_cred_t *cred,
                             cn_sau2_reply_t *reply)
{
    cn_meta_stmt_t *st = NULL;
    const char *why = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_CRED_GET], "s", caller->credential);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_DONE) {
        why = "unknown credential";
    } else if (e == CN_META_ROW) {
        const char *key = cn_meta_column_text(st, 3, NULL);
        cred->expires_ms = cn_meta_column_int64(st, 7);
        cred->derived = !cn_meta_column_is_null(st, 8);
        if (!cn_meta_column_is_null(st, 9) || cred->expires_ms <= cn_wall_ms())
            why = "credential revoked or expired";
        else if (!key || strcmp(key, caller->key_id) != 0)
            why = "certificate key is not the registered key";
        snprintf(cred->kind, sizeof cred->kind, "%s", cn_meta_column_text(st, 1, NULL));
        snprintf(cred->account, sizeof cred->account, "%s", cn_meta_column_text(st, 2, NULL));
    }
    cn_meta_finish(st);
    if (e >= 0 && why)
        cn_sau2_reply_error(reply, CN__AU_UNAUTHENTICATED, "%s", why);
    return e < 0 ? e : 0;
}

cn_err_t cn__au_account_get(cn_meta_txn_t *t, const char *account_id, cn__au_account_t *out)
{
    cn_meta_stmt_t *st = NULL;
    memset(out, 0, sizeof *out);
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_USER_BY_ID], "s", account_id);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        out->found = true;
        snprintf(out->name, sizeof out->name, "%s", cn_meta_column_text(st, 1, NULL));
        out->disabled = cn_meta_column_int64(st, 4) != 0;
    }
    cn_meta_finish(st);
    st = NULL;
    if (e != CN_META_DONE)
        return e < 0 ? e : 0;
    /* Not a user: a server's credential. */
    e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_SERVER_BY_ID], "s", account_id);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        out->found = out->server = true;
        snprintf(out->name, sizeof out->name, "%s", cn_meta_column_text(st, 0, NULL));
        snprintf(out->ns, sizeof out->ns, "%s", cn_meta_column_text(st, 1, NULL));
        out->disabled = cn_meta_column_int64(st, 2) != 0;
    }
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

void cn__au_fail(cn_sau2_reply_t *reply, cn_err_t e)
{
    if (e == -ENOMEM)
        cn_sau2_reply_error(reply, CN__AU_INTERNAL, "out of memory");
    else
        cn_sau2_reply_error(reply, CN__AU_STORAGE, "auth state: %s", cn_strerror(e));
}

void cn__au_reply_restart(cn_sau2_reply_t *reply)
{
    cn_buf_reset(&reply->rows);
    reply->nrows = 0;
    reply->code = 0;
    reply->message[0] = '\0';
    reply->err = 0;
}

static bool is_hex(const char *s, size_t len)
{
    if (strlen(s) != len)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* ---- operations ------------------------------------------------------------------ */

cn_err_t cn__au_op_find(cn_meta_txn_t *t, const uint8_t op[CN_SAU2_ID_LEN], const char *actor,
                        const cn_digest_t *intent, cn_sau2_reply_t *reply, bool *found,
                        bool *mismatch)
{
    cn_meta_stmt_t *st = NULL;
    *found = *mismatch = false;
    cn_err_t e =
        cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_OP_GET], "b", op, (size_t)CN_SAU2_ID_LEN);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        *found = true;
        size_t ilen = 0, rlen = 0;
        const char *who = cn_meta_column_text(st, 0, NULL);
        const void *in = cn_meta_column_blob(st, 1, &ilen);
        const uint8_t *rows = cn_meta_column_blob(st, 3, &rlen);
        if (strcmp(who ? who : "", actor) != 0 || ilen != CN_DIGEST_LEN ||
            !cn_ct_equal(in, intent->b, CN_DIGEST_LEN) || rlen < 2) {
            *mismatch = true;
            e = 0;
        } else {
            reply->code = (uint16_t)cn_meta_column_int64(st, 2);
            reply->nrows = (uint16_t)(rows[0] | rows[1] << 8);
            cn_buf_reset(&reply->rows);
            e = cn_buf_append(&reply->rows, rows + 2, rlen - 2);
        }
    } else if (e == CN_META_DONE) {
        e = 0;
    }
    cn_meta_finish(st);
    return e;
}

cn_err_t cn__au_op_record(cn_meta_txn_t *t, const uint8_t op[CN_SAU2_ID_LEN], const char *actor,
                          const cn_digest_t *intent, const cn_sau2_reply_t *reply)
{
    cn_buf_t rows = { 0 };
    cn_err_t e = cn_buf_put_u16le(&rows, reply->nrows);
    if (e == 0 && reply->rows.len)
        e = cn_buf_append(&rows, reply->rows.data, reply->rows.len);
    if (e == 0)
        e = cn_meta_execf(t, cn__sql_au[CN_SQL_AU_OP_PUT], "bsbibi", op, (size_t)CN_SAU2_ID_LEN,
                          actor, intent->b, (size_t)CN_DIGEST_LEN, (int64_t)reply->code, rows.data,
                          rows.len, (int64_t)reply->revision);
    cn_buf_free(&rows);
    return e;
}

/* ---- issuing a credential ------------------------------------------------------------ */

cn_err_t cn__au_issue(cn_auth_t *a, cn_meta_txn_t *t, const cn__au_issue_t *in,
                      cn_sau2_reply_t *reply)
{
    char key_id[CN_SAU2_KEY_HEX + 1], exp[24];
    uint8_t serial[16];
    EVP_PKEY *pub = NULL;
    X509 *x = NULL;
    cn_buf_t pem = { 0 }, der = { 0 };
    if (!is_hex(in->credential, CN_SAU2_CRED_HEX) ||
        cn__au_pubkey_parse(in->public_key.p, in->public_key.len, &pub, key_id) != 0)
        return cn_sau2_reply_error(reply, CN__AU_MALFORMED,
                                   "credential must be 32 hex digits and the key Ed25519 SPKI hex");
    cn_hex_decode(in->credential, CN_SAU2_CRED_HEX, serial, sizeof serial);
    serial[0] &= 0x7f; /* a positive INTEGER; the extension keeps the exact id */
    cn__au_subject_t sub = { in->credential, in->kind, key_id, in->account_name, a->domain };
    bool taken = false;
    cn_err_t e = cn__au_taken(t, CN_SQL_AU_KEY_SEEN, key_id, in->credential, &taken);
    if (e == 0 && taken) {
        cn_sau2_reply_error(reply, CN__AU_FORBIDDEN,
                            "public key or credential id already registered");
        goto out;
    }
    if (e == 0)
        e = cn_meta_execf(t, cn__sql_au[CN_SQL_AU_KEY_REGISTER], "ss", key_id, in->credential);
    if (e >= 0)
        e = cn__au_cert_make(pub, in->account_name, a->cert[CN__AU_CRED_CA], a->key[CN__AU_CRED_CA],
                             serial, in->expires_ms, false, &sub, &x);
    if (e >= 0)
        e = cn__au_cert_pem(x, &pem);
    if (e >= 0)
        e = cn_buf_reserve(&der, in->public_key.len / 2);
    if (e >= 0) {
        der.len = in->public_key.len / 2;
        e = cn_hex_decode((const char *)in->public_key.p, in->public_key.len, der.data, der.len);
    }
    if (e >= 0)
        e = cn_meta_execf(t, cn__sql_au[CN_SQL_AU_CRED_INSERT], "ssssbsiiss", in->credential,
                          in->kind, in->account_id, key_id, der.data, der.len,
                          (const char *)pem.data, cn_wall_ms(), in->expires_ms, in->parent,
                          in->label);
    snprintf(exp, sizeof exp, "%lld", (long long)in->expires_ms);
    const char *row[] = { (const char *)pem.data, in->credential, exp };
    const char *krow[] = { (const char *)pem.data, in->credential, in->kind, exp };
    if (e >= 0)
        e = in->with_kind ? cn_sau2_reply_row(reply, 4, krow)
                          : cn_sau2_reply_row(reply, in->with_ids ? 3 : 1, row);
out:
    cn_buf_free(&pem);
    cn_buf_free(&der);
    X509_free(x);
    EVP_PKEY_free(pub);
    return e < 0 ? e : 0;
}

/* ---- trust-bundle ---------------------------------------------------------------------- */

static cn_err_t bundle_body(cn_meta_txn_t *t, void *arg)
{
    cn_sau2_reply_t *reply = arg;
    cn__au_reply_restart(reply);
    CN_TRY(cn__au_state_read(t, reply));
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_CA_LIST], "");
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        const char *name = cn_meta_column_text(st, 0, NULL);
        const char *row[] = { name, cn_meta_column_text(st, 1, NULL) };
        e = strcmp(name, "server-tls") ? cn_sau2_reply_row(reply, 2, row) : 0;
    }
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

/* ---- sign-in ------------------------------------------------------------------------- */

typedef struct signin {
    cn_auth_t *a;
    const cn_sau2_req_t *req;
    bool admin, outcome;
    cn_digest_t intent;
    char user[CN__AU_NAME_MAX + 1], credential[CN_SAU2_CRED_HEX + 1];
    char user_id[CN__AU_NAME_MAX + 1];
    cn_sau2_reply_t *reply;
} signin_t;

static cn_err_t signin_body(cn_meta_txn_t *t, void *arg)
{
    signin_t *s = arg;
    bool found, mismatch;
    cn__au_reply_restart(s->reply);
    CN_TRY(cn__au_state_read(t, s->reply));
    CN_TRY(cn__au_op_find(t, s->req->op, "", &s->intent, s->reply, &found, &mismatch));
    if (mismatch)
        return cn_sau2_reply_error(s->reply, CN__AU_INTENT_MISMATCH,
                                   "operation id already used for another request");
    if (found) /* a replay: the recorded certificate, its expiry unchanged */
        return 0;
    if (s->outcome)
        return cn_sau2_reply_error(s->reply, CN__AU_FORBIDDEN, "unknown operation");
    cn__au_issue_t in = {
        .kind = s->admin ? "user" : "session",
        .account_name = s->user,
        .account_id = s->user_id,
        .credential = s->credential,
        .label = s->admin ? "admin-login" : "login",
        .public_key = s->req->argv[3],
        .expires_ms = cn_wall_ms() + (s->admin ? ADMIN_SESSION_MS : SESSION_MS),
        .with_ids = true,
    };
    CN_TRY(cn__au_issue(s->a, t, &in, s->reply));
    if (s->reply->code)
        return 0;
    return cn__au_op_record(t, s->req->op, "", &s->intent, s->reply);
}

/* Reads the user's hash and flags (a read transaction). */
typedef struct user_q {
    const char *name;
    char hash[256];
    char id[CN__AU_NAME_MAX + 1];
    bool found, disabled, admin, person;
} user_q_t;

static cn_err_t user_body(cn_meta_txn_t *t, void *arg)
{
    user_q_t *q = arg;
    cn_meta_stmt_t *st = NULL;
    q->found = q->disabled = q->admin = q->person = false;
    q->hash[0] = q->id[0] = '\0';
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_USER_BY_NAME], "s", q->name);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        const char *h = cn_meta_column_text(st, 5, NULL);
        q->found = h != NULL;
        snprintf(q->hash, sizeof q->hash, "%s", h ? h : "");
        snprintf(q->id, sizeof q->id, "%s", cn_meta_column_text(st, 0, NULL));
        q->person = strcmp(cn_meta_column_text(st, 2, NULL), "person") == 0;
        q->admin = cn_meta_column_int64(st, 3) != 0;
        q->disabled = cn_meta_column_int64(st, 4) != 0;
    }
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

static cn_err_t sign_in(cn_auth_t *a, const cn_sau2_req_t *req, cn_sau2_reply_t *reply)
{
    static const uint8_t zero[CN_SAU2_ID_LEN];
    signin_t s = { .a = a, .req = req, .reply = reply };
    s.outcome =
        req->argv[0].len > 8 && memcmp(req->argv[0].p + req->argv[0].len - 8, "-outcome", 8) == 0;
    s.admin = req->argv[0].p[0] == 'a';
    if (req->argc != 4 || !memcmp(req->op, zero, sizeof zero) ||
        !cn__au_arg(req, 1, s.user, sizeof s.user) ||
        !cn__au_arg(req, 2, s.credential, sizeof s.credential))
        return cn_sau2_reply_error(reply, CN__AU_MALFORMED,
                                   "expected user credential public-key and an operation id");
    /* The -outcome verbs replay their sign-in: the intent is the sign-in's. */
    cn_sau2_req_t b = *req;
    b.argv[0].p = (const uint8_t *)(s.admin ? "admin-login" : "login");
    b.argv[0].len = s.admin ? 11 : 5;
    cn_err_t e = cn_sau2_intent(&b, s.admin ? 0 : 1, &s.intent);
    user_q_t q = { .name = s.user };
    if (e == 0)
        e = cn_meta_run(a->meta, CN_META_RUN_READ | CN_META_RETRY, user_body, &q);
    if (e < 0) {
        cn__au_fail(reply, e);
        return 0;
    }
    /* Always one argon2id verification, found or not (constant work). */
    bool ok = argon2id_verify(q.found ? q.hash : dummy_hash, req->secret.p, req->secret.len) ==
                  ARGON2_OK &&
              q.found;
    OPENSSL_cleanse(q.hash, sizeof q.hash);
    if (!ok || q.disabled || !q.person) {
        cn_info("auth", "sign-in refused for user %s", s.user);
        return cn_sau2_reply_error(reply, CN__AU_UNAUTHENTICATED, "unknown user or wrong password");
    }
    if (s.admin && !q.admin)
        return cn_sau2_reply_error(reply, CN__AU_FORBIDDEN, "%s is not an auth administrator",
                                   s.user);
    snprintf(s.user_id, sizeof s.user_id, "%s", q.id);
    e = cn_meta_run(a->meta, CN_META_RUN_WRITE | CN_META_RETRY, signin_body, &s);
    if (e < 0)
        cn__au_fail(reply, e);
    else if (reply->code == 0)
        cn_info("auth", "sign-in of %s, credential %s", s.user, s.credential);
    return 0;
}

/* ---- whoami, logout -------------------------------------------------------------------- */

typedef struct self {
    const cn_sau2_caller_t *caller;
    cn_sau2_reply_t *reply;
} self_t;

/* A fresh reply (the body may run again), the state's incarnation and
 * revision, then the caller's credential. */
static cn_err_t self_check(cn_meta_txn_t *t, self_t *s, cn__au_cred_t *cred)
{
    cn__au_reply_restart(s->reply);
    CN_TRY(cn__au_state_read(t, s->reply));
    return cn__au_caller_check(t, s->caller, cred, s->reply);
}

static cn_err_t whoami_body(cn_meta_txn_t *t, void *arg)
{
    self_t *s = arg;
    cn__au_cred_t cred;
    CN_TRY(self_check(t, s, &cred));
    if (s->reply->code)
        return 0;
    cn_meta_stmt_t *st = NULL;
    char exp[24];
    snprintf(exp, sizeof exp, "%lld", (long long)cred.expires_ms);
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_USER_BY_ID], "s", cred.account);
    if (e == 0)
        e = cn_meta_step(st);
    /* A server credential's account is the server's id: no user row. */
    bool user = e == CN_META_ROW;
    const char *row[] = { user ? cn_meta_column_text(st, 1, NULL) : cred.account,
                          cred.kind,
                          s->caller->credential,
                          s->caller->key_id,
                          exp,
                          user && cn_meta_column_int64(st, 3) ? "1" : "0" };
    if (e >= 0)
        e = cn_sau2_reply_row(s->reply, 6, row);
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

/* Revokes the caller's credential and its derived children; one revision. */
static cn_err_t logout_body(cn_meta_txn_t *t, void *arg)
{
    self_t *s = arg;
    cn__au_cred_t cred;
    CN_TRY(self_check(t, s, &cred));
    if (s->reply->code)
        return 0;
    CN_TRY(cn_meta_execf(t, cn__sql_au[CN_SQL_AU_CRED_REVOKE], "iss", cn_wall_ms(),
                         s->caller->credential, s->caller->credential));
    CN_TRY(cn_meta_execf(t, cn__sql_au[CN_SQL_AU_REVISION_BUMP], ""));
    return cn__au_state_read(t, s->reply);
}

static cn_err_t self_verb(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                          cn_sau2_reply_t *reply, bool logout)
{
    self_t s = { caller, reply };
    if (req->argc != 1)
        return cn_sau2_reply_error(reply, CN__AU_MALFORMED, "takes no argument");
    cn_err_t e =
        cn_meta_run(a->meta, (logout ? CN_META_RUN_WRITE : CN_META_RUN_READ) | CN_META_RETRY,
                    logout ? logout_body : whoami_body, &s);
    if (e < 0)
        cn__au_fail(reply, e);
    else if (logout && reply->code == 0)
        cn_info("auth", "logout of credential %s", caller->credential);
    return 0;
}

/* ---- the handler ----------------------------------------------------------------------- */

static cn_err_t handle(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                       cn_sau2_reply_t *reply);

cn_err_t cn_sau2_handle(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                        cn_sau2_reply_t *reply)
{
    CN_TRY(handle(a, caller, req, reply));
    /* A reply past a row or string limit cannot be encoded: say so instead. */
    if (reply->err == -ENOMEM)
        return reply->err;
    if (reply->err)
        cn_sau2_reply_error(reply, CN__AU_LIMIT, "the answer exceeds the SAU2 reply limits");
    return 0;
}

static cn_err_t handle(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                       cn_sau2_reply_t *reply)
{
    static const char *const open_verbs[] = { "login", "login-outcome", "admin-login",
                                              "admin-login-outcome" };
    cn__au_reply_restart(reply);
    if (cn__au_verb_is(req, "trust-bundle")) {
        if (req->argc != 1)
            return cn_sau2_reply_error(reply, CN__AU_MALFORMED, "trust-bundle takes no argument");
        cn_err_t e = cn_meta_run(a->meta, CN_META_RUN_READ | CN_META_RETRY, bundle_body, reply);
        if (e < 0)
            cn__au_fail(reply, e);
        return 0;
    }
    for (size_t i = 0; i < sizeof open_verbs / sizeof open_verbs[0]; i++)
        if (cn__au_verb_is(req, open_verbs[i]))
            return sign_in(a, req, reply);
    if (!caller || !caller->present)
        return cn_sau2_reply_error(reply, CN__AU_UNAUTHENTICATED,
                                   "a credential certificate is required");
    if (cn__au_verb_is(req, "whoami") || cn__au_verb_is(req, "logout"))
        return self_verb(a, caller, req, reply, cn__au_verb_is(req, "logout"));
    if (cn__au_access(a, caller, req, reply) || cn__au_authorize(a, caller, req, reply) ||
        cn__au_admin(a, caller, req, reply))
        return 0;
    return cn_sau2_reply_error(reply, CN__AU_UNSUPPORTED, "unknown or not yet offered verb");
}
