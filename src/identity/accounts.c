/* Accounts and tokens: creation, disable, revoke and listing.  Every
 * mutation clears this handle's token cache so it applies here at once. */
#include "identity_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

static cn_err_t norm_email(const char *in, char out[CN_EMAIL_MAX + 1])
{
    size_t n = strlen(in);
    if (n < 3 || n > CN_EMAIL_MAX)
        return CN_E_INVALID;
    const char *at = strchr(in, '@');
    if (!at || at == in || !at[1] || strchr(at + 1, '@'))
        return CN_E_INVALID;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>')
            return CN_E_INVALID;
        out[i] = (char)tolower(c);
    }
    out[n] = '\0';
    return 0;
}

cn_err_t cn__id_account_insert(cn_meta_txn_t *t, const char *name, const char *email,
                               int64_t *account_id)
{
    cn_meta_stmt_t *st;
    int64_t next = 1;
    /* A portable id: the write transaction is serialized, so MAX+1 is free;
     * a racing engine would report CN_E_EXISTS and the caller retries. */
    CN_TRY(cn_meta_prepare(t, "SELECT COALESCE(MAX(id), 0) + 1 FROM cn_accounts", &st));
    cn_err_t e = cn_meta_step(st);
    if (e == CN_META_ROW)
        next = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    if (e < 0)
        return e;
    CN_TRY(cn_meta_prepare(t, "INSERT INTO cn_accounts (id, name, email, disabled, created_at)"
                              " VALUES (?, ?, ?, 0, ?)", &st));
    e = cn_meta_bind_int64(st, 1, next);
    if (e == 0)
        e = cn_meta_bind_str(st, 2, name);
    if (e == 0)
        e = cn_meta_bind_str(st, 3, email);
    if (e == 0)
        e = cn_meta_bind_int64(st, 4, (int64_t)time(NULL));
    if (e == 0)
        e = cn_meta_step(st);
    cn_meta_finish(st);
    if (e == 0)
        *account_id = next;
    return e;
}

static void row_account(cn_meta_stmt_t *st, cn_account_t *a)
{
    memset(a, 0, sizeof *a);
    a->id = cn_meta_column_int64(st, 0);
    cn__id_col_copy(st, 1, a->name, CN_ACCOUNT_NAME_MAX);
    cn__id_col_copy(st, 2, a->email, CN_EMAIL_MAX);
    a->disabled = cn_meta_column_int64(st, 3) != 0;
    a->created_at = cn_meta_column_int64(st, 4);
}

#define ACCOUNT_COLS "SELECT id, name, email, disabled, created_at FROM cn_accounts "

/* Runs a one-parameter account query; CN_E_NOT_FOUND without a row. */
static cn_err_t account_query(cn_identity_t *id, const char *sql, const char *text,
                              int64_t num, cn_account_t *out)
{
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_begin(id->meta, CN_META_READ, &t));
    cn_err_t e = cn_meta_prepare(t, sql, &st);
    if (e == 0)
        e = text ? cn_meta_bind_str(st, 1, text) : cn_meta_bind_int64(st, 1, num);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        if (out)
            row_account(st, out);
        e = 0;
    } else if (e == CN_META_DONE) {
        e = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    cn_meta_rollback(t);
    return e;
}

cn_err_t cn_identity_account_get(cn_identity_t *id, const char *name, cn_account_t *out)
{
    if (!cn__id_valid_account(name))
        return CN_E_NOT_FOUND;
    return account_query(id, ACCOUNT_COLS "WHERE name = ?", name, 0, out);
}

cn_err_t cn_identity_account_by_email(cn_identity_t *id, const char *email, cn_account_t *out)
{
    char norm[CN_EMAIL_MAX + 1];
    if (!email || norm_email(email, norm) < 0)
        return CN_E_NOT_FOUND;
    return account_query(id, ACCOUNT_COLS "WHERE email = ?", norm, 0, out);
}

cn_err_t cn_identity_account_by_id(cn_identity_t *id, int64_t account_id, cn_account_t *out)
{
    return account_query(id, ACCOUNT_COLS "WHERE id = ?", NULL, account_id, out);
}

cn_err_t cn_identity_account_create(cn_identity_t *id, const char *name, const char *email,
                                    cn_account_t *out)
{
    char norm[CN_EMAIL_MAX + 1];
    if (!cn__id_valid_account(name))
        return CN_E_INVALID;
    if (email && norm_email(email, norm) < 0)
        return CN_E_INVALID;
    cn_meta_txn_t *t;
    int64_t aid = 0;
    CN_TRY(cn_meta_begin(id->meta, CN_META_WRITE, &t));
    cn_err_t e = cn__id_account_insert(t, name, email ? norm : NULL, &aid);
    CN_TRY(cn__id_end(t, e));
    cn_info("identity", "account %s created (id %lld)", name, (long long)aid);
    return out ? cn_identity_account_by_id(id, aid, out) : 0;
}

/* Runs sql, an UPDATE of ?1 = v where its key ?2 = s, in a write transaction
 * of its own; CN_E_NOT_FOUND when no row has that key.  The token cache is
 * cleared once the transaction has ended. */
static cn_err_t update_one(cn_identity_t *id, const char *sql, int64_t v, const char *s)
{
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st;
    CN_TRY(cn_meta_begin(id->meta, CN_META_WRITE, &t));
    cn_err_t e = cn_meta_prepare(t, sql, &st);
    if (e == 0) {
        cn_meta_bind_int64(st, 1, v);
        cn_meta_bind_str(st, 2, s);
        e = cn_meta_step(st);
        if (e == 0 && cn_meta_changes(t) == 0)
            e = CN_E_NOT_FOUND;
        cn_meta_finish(st);
    }
    if (e < 0) {
        cn_meta_rollback(t);
        return e;
    }
    e = cn_meta_commit(t);
    cn__id_cache_clear(id);
    return e;
}

cn_err_t cn_identity_account_set_disabled(cn_identity_t *id, const char *name, bool disabled)
{
    if (!cn__id_valid_account(name))
        return CN_E_NOT_FOUND;
    cn_err_t e = update_one(id, "UPDATE cn_accounts SET disabled = ? WHERE name = ?",
                            disabled ? 1 : 0, name);
    if (e == 0)
        cn_info("identity", "account %s %s", name, disabled ? "disabled" : "enabled");
    return e;
}

cn_err_t cn_identity_account_list(cn_identity_t *id, cn_account_fn fn, void *arg)
{
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_begin(id->meta, CN_META_READ, &t));
    cn_err_t e = cn_meta_prepare(t, ACCOUNT_COLS "ORDER BY name", &st);
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        cn_account_t a;
        row_account(st, &a);
        e = fn(arg, &a);
    }
    cn_meta_finish(st);
    cn_meta_rollback(t);
    return e;
}

/* ---- tokens ----------------------------------------------------------------- */

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
static const char b62[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

cn_err_t cn__id_new_credential(char token_id[CN_TOKEN_ID_MAX + 1],
                               char secret[CN_SECRET_MAX + 1])
{
    uint8_t r[18];
    CN_TRY(cn_random_bytes(r, sizeof r));
    token_id[0] = 'C';
    token_id[1] = 'N';
    for (size_t i = 0; i < sizeof r; i++)
        token_id[2 + i] = b32[r[i] & 31];
    token_id[2 + sizeof r] = '\0';
    /* 40 characters of 62 by rejection sampling: ~238 bits. */
    size_t n = 0;
    while (n < 40) {
        uint8_t buf[64];
        CN_TRY(cn_random_bytes(buf, sizeof buf));
        for (size_t i = 0; i < sizeof buf && n < 40; i++)
            if (buf[i] < 248)
                secret[n++] = b62[buf[i] % 62];
        OPENSSL_cleanse(buf, sizeof buf);
    }
    secret[n] = '\0';
    OPENSSL_cleanse(r, sizeof r);
    return 0;
}

cn_err_t cn__id_token_put(cn_identity_t *id, cn_meta_txn_t *t, const char *token_id,
                          int64_t account_id, const char *secret, size_t secret_len,
                          cn_perms_t perms, int64_t expires_at)
{
    char hex[2 * CN__ID_BOX_MAX + 1];
    CN_TRY(cn__id_seal(id->key, token_id, (const uint8_t *)secret, secret_len, hex));
    cn_meta_stmt_t *st;
    cn_err_t e = cn_meta_prepare(t,
        "INSERT INTO cn_tokens (id, account_id, secret_box, perms, created_at, revoked_at,"
        " expires_at) VALUES (?, ?, ?, ?, ?, NULL, ?)"
        " ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id,"
        " secret_box = excluded.secret_box, perms = excluded.perms, revoked_at = NULL,"
        " expires_at = excluded.expires_at", &st);
    if (e == 0) {
        cn_meta_bind_str(st, 1, token_id);
        cn_meta_bind_int64(st, 2, account_id);
        cn_meta_bind_str(st, 3, hex);
        cn_meta_bind_int64(st, 4, (int64_t)perms);
        cn_meta_bind_int64(st, 5, (int64_t)time(NULL));
        if (expires_at)
            cn_meta_bind_int64(st, 6, expires_at);
        else
            cn_meta_bind_null(st, 6);
        e = cn_meta_step(st);
        cn_meta_finish(st);
    }
    return e;
}

cn_err_t cn_identity_token_create(cn_identity_t *id, const char *account, cn_perms_t perms,
                                  int64_t expires_at, char cred[CN_CREDENTIAL_MAX])
{
    if (!perms || (perms & ~(cn_perms_t)CN_PERM_ALL) || expires_at < 0)
        return CN_E_INVALID;
    cn_account_t a;
    CN_TRY(cn_identity_account_get(id, account, &a));
    char tid[CN_TOKEN_ID_MAX + 1], secret[CN_SECRET_MAX + 1];
    CN_TRY(cn__id_new_credential(tid, secret));
    cn_meta_txn_t *t;
    cn_err_t e = cn_meta_begin(id->meta, CN_META_WRITE, &t);
    if (e == 0) {
        e = cn__id_token_put(id, t, tid, a.id, secret, strlen(secret), perms, expires_at);
        if (e == 0)
            e = cn_meta_commit(t);
        else
            cn_meta_rollback(t);
    }
    if (e == 0) {
        snprintf(cred, CN_CREDENTIAL_MAX, "%s:%s", tid, secret);
        cn__id_cache_clear(id);   /* a cached "no such token" for tid */
        cn_info("identity", "token %s created for account %s", tid, a.name);
    }
    OPENSSL_cleanse(secret, sizeof secret);
    return e;
}

cn_err_t cn_identity_token_revoke(cn_identity_t *id, const char *token_id)
{
    if (!token_id || !cn__id_valid_token_id(token_id, strlen(token_id)))
        return CN_E_NOT_FOUND;
    cn_err_t e = update_one(id, "UPDATE cn_tokens SET revoked_at = COALESCE(revoked_at, ?)"
                                " WHERE id = ?", (int64_t)time(NULL), token_id);
    if (e == 0)
        cn_info("identity", "token %s revoked", token_id);
    return e;
}

cn_err_t cn_identity_token_list(cn_identity_t *id, const char *account, cn_token_fn fn,
                                void *arg)
{
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_begin(id->meta, CN_META_READ, &t));
#define TOKEN_COLS "SELECT t.id, a.name, a.id, t.perms, t.created_at, t.revoked_at," \
    " t.expires_at FROM cn_tokens t JOIN cn_accounts a ON a.id = t.account_id "
    cn_err_t e = cn_meta_prepare(t, account ? TOKEN_COLS "WHERE a.name = ? ORDER BY a.name, t.id"
                                            : TOKEN_COLS "ORDER BY a.name, t.id", &st);
    if (e == 0 && account)
        e = cn_meta_bind_str(st, 1, account);
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        cn_token_info_t ti;
        memset(&ti, 0, sizeof ti);
        cn__id_col_copy(st, 0, ti.token_id, CN_TOKEN_ID_MAX);
        cn__id_col_copy(st, 1, ti.account, CN_ACCOUNT_NAME_MAX);
        ti.account_id = cn_meta_column_int64(st, 2);
        ti.perms = (cn_perms_t)cn_meta_column_int64(st, 3) & CN_PERM_ALL;
        ti.created_at = cn_meta_column_int64(st, 4);
        ti.revoked_at = cn_meta_column_int64(st, 5);
        ti.expires_at = cn_meta_column_int64(st, 6);
        e = fn(arg, &ti);
    }
    cn_meta_finish(st);
    cn_meta_rollback(t);
    return e;
}
