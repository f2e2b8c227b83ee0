/* Console API: administration (admin tokens only; the dispatcher's need
 * gate answers others 403 Forbidden) — accounts, tokens, console sessions.
 * Every call is the identity function `cairn admin` calls.  A new token's
 * secret is in the one answer to its creation and nowhere else: never in a
 * listing, a log line or a URL. */
#include "console_data.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The names of perms' bits, as a new JSON array. */
static json_t *perms_json(cn_perms_t perms)
{
    json_t *arr = json_array();
    for (unsigned b = 0; arr && b < 32; b++) {
        const char *n = (perms & (1u << b)) ? cn_perm_name(1u << b) : NULL;
        if (n)
            json_array_append_new(arr, json_string(n));
    }
    return arr;
}

static json_t *unix_s(int64_t s)
{
    return s ? cn__console_time(s * 1000) : json_null();
}

static cn_err_t account_one(void *arg, const cn_account_t *a)
{
    json_t *o = json_pack("{s:s,s:b,s:o}", "name", a->name, "disabled", a->disabled, "created",
                          unix_s(a->created_at));
    if (o && a->email[0])
        json_object_set_new(o, "email", json_string(a->email));
    return cn__console_append(arg, o);
}

/* GET accounts. */
static int accounts_list(cn_console_call_t *c)
{
    json_t *arr = json_array();
    cn_err_t e = arr ? cn_identity_account_list(cn__console_cfg(c->con)->identity, account_one, arr)
                     : -ENOMEM;
    return cn__console_list_answer(c, e, "accounts", arr);
}

/* POST accounts {"name", "email"?} → 201 {"name"}. */
static int accounts_create(cn_console_call_t *c)
{
    const char *name = cn__console_body_str(c, "name");
    if (!name)
        return cn__console_error(c, 400, "BadRequest", "name is required");
    cn_account_t a;
    cn_err_t e = cn_identity_account_create(cn__console_cfg(c->con)->identity, name,
                                            cn__console_body_str(c, "email"), &a);
    if (e == CN_E_EXISTS)
        return cn__console_error(c, 409, "Conflict", "that account name or email is taken");
    if (e == CN_E_INVALID)
        return cn__console_error(c, 400, "BadRequest",
                                 "an account name is [A-Za-z0-9][A-Za-z0-9._-]*, at most 64");
    if (e < 0)
        return cn__console_err(c, e);
    return cn__console_json(c, 201, json_pack("{s:s}", "name", a.name));
}

/* PUT accounts/A/disabled {"disabled": bool}. */
static int account_disable(cn_console_call_t *c)
{
    json_t *d = c->body ? json_object_get(c->body, "disabled") : NULL;
    if (!json_is_boolean(d))
        return cn__console_error(c, 400, "BadRequest", "disabled must be true or false");
    cn_err_t e = cn_identity_account_set_disabled(cn__console_cfg(c->con)->identity, c->seg[1],
                                                  json_is_true(d));
    return cn__console_done(c, e, "no such account");
}

static cn_err_t token_one(void *arg, const cn_token_info_t *t)
{
    json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:o,s:b}", "id", t->token_id, "account", t->account,
                          "perms", perms_json(t->perms), "created", unix_s(t->created_at),
                          "expires", unix_s(t->expires_at), "revoked", t->revoked_at != 0);
    return cn__console_append(arg, o);
}

/* GET tokens?account=A (never a secret). */
static int tokens_list(cn_console_call_t *c)
{
    const char *acct = cn__console_query(c, "account");
    json_t *arr = json_array();
    cn_err_t e = arr ? cn_identity_token_list(cn__console_cfg(c->con)->identity,
                                              acct && *acct ? acct : NULL, token_one, arr)
                     : -ENOMEM;
    return cn__console_list_answer(c, e, "tokens", arr);
}

/* The permission names of a body into *out; false after answering 400. */
static bool perms_parse(cn_console_call_t *c, json_t *names, cn_perms_t *out)
{
    *out = 0;
    size_t i;
    json_t *v;
    if (!json_is_array(names) || json_array_size(names) == 0) {
        cn__console_error(c, 400, "BadRequest", "perms must list permission names");
        return false;
    }
    json_array_foreach(names, i, v)
    {
        cn_perms_t p;
        if (!json_is_string(v) ||
            cn_perm_parse(json_string_value(v), json_string_length(v), &p) != CN_OK) {
            cn__console_error(c, 400, "BadRequest", "unknown permission name");
            return false;
        }
        *out |= p;
    }
    return true;
}

/* POST tokens {"account","perms":[names],"expires":UNIX_S|0} → 201
 * {"token":"ID:SECRET","id"}: the only time the secret is shown. */
static int tokens_create(cn_console_call_t *c)
{
    const char *acct = cn__console_body_str(c, "account");
    json_t *ex = c->body ? json_object_get(c->body, "expires") : NULL;
    cn_perms_t perms;
    if (!acct)
        return cn__console_error(c, 400, "BadRequest", "account is required");
    if (ex && !json_is_integer(ex) && !json_is_null(ex))
        return cn__console_error(c, 400, "BadRequest", "expires is unix seconds or 0");
    if (!perms_parse(c, c->body ? json_object_get(c->body, "perms") : NULL, &perms))
        return 0;
    int64_t expires = json_is_integer(ex) ? (int64_t)json_integer_value(ex) : 0;
    if (expires < 0 || (expires && expires * 1000 <= cn_wall_ms()))
        return cn__console_error(c, 400, "BadRequest", "expires must be in the future");
    char cred[CN_CREDENTIAL_MAX];
    cn_err_t e =
        cn_identity_token_create(cn__console_cfg(c->con)->identity, acct, perms, expires, cred);
    if (e == CN_E_NOT_FOUND)
        return cn__console_error(c, 404, "NotFound", "no such account");
    if (e < 0)
        return cn__console_err(c, e);
    size_t idlen = strcspn(cred, ":");
    json_t *doc = json_pack("{s:s,s:s%}", "token", cred, "id", cred, idlen);
    explicit_bzero(cred, sizeof cred);
    return cn__console_json(c, 201, doc);
}

/* DELETE tokens/ID. */
static int tokens_revoke(cn_console_call_t *c)
{
    cn_err_t e = cn_identity_token_revoke(cn__console_cfg(c->con)->identity, c->seg[1]);
    return cn__console_done(c, e, "no such token");
}

/* GET sessions / DELETE sessions/ID (session.c keeps them). */
static int sessions_list(cn_console_call_t *c)
{
    cn_err_t e = CN_OK;
    json_t *doc = cn__console_sessions_list(c->con, &e);
    if (!doc)
        return cn__console_err(c, e < 0 ? e : -ENOMEM);
    return cn__console_json(c, 200, doc);
}

static int sessions_end(cn_console_call_t *c)
{
    cn_err_t e = cn__console_session_end(c->con, c->seg[1]);
    return cn__console_done(c, e, "no such session");
}

const cn_console_op_t cn__console_admin_ops[] = {
    { CN_HTTP_GET, "accounts", accounts_list, CN_PERM_ADMIN },
    { CN_HTTP_POST, "accounts", accounts_create, CN_PERM_ADMIN },
    { CN_HTTP_PUT, "accounts/*/disabled", account_disable, CN_PERM_ADMIN },
    { CN_HTTP_GET, "tokens", tokens_list, CN_PERM_ADMIN },
    { CN_HTTP_POST, "tokens", tokens_create, CN_PERM_ADMIN },
    { CN_HTTP_DELETE, "tokens/*", tokens_revoke, CN_PERM_ADMIN },
    { CN_HTTP_GET, "sessions", sessions_list, CN_PERM_ADMIN },
    { CN_HTTP_DELETE, "sessions/*", sessions_end, CN_PERM_ADMIN },
    { 0, NULL, NULL, 0 },
};
