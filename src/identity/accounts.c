/* Accounts and tokens: creation, disable, revoke and listing.  Every
 * mutation clears this handle's token cache so it applies here at once. */
#include "identity_int.h"
#include "meta/sql/console.h"

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
                               const char *create_key, int64_t *account_id)
{
    cn_meta_stmt_t *st = NULL;
    int64_t next = 1;
    /* A portable id: the write transaction is serialized, so MAX+1 is free;
     * a racing engine would report CN_E_EXISTS and the caller retries. */
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_ACCOUNT_NEXT_ID], "");
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW)
        next = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    if (e >= 0)
        e = cn_meta_execf(t, cn__sql_id[CN_SQL_ID_ACCOUNT_INSERT], "issis", next, name, email,
                          (int64_t)time(NULL), create_key);
    if (e == 0)
        *account_id = next;
    return e;
}

/* Reads a row of an ACCOUNT_COLS statement (meta/sql/identity.h) into a. */
static void row_account(cn_meta_stmt_t *st, cn_account_t *a)
{
    memset(a, 0, sizeof *a);
    a->id = cn_meta_column_int64(st, 0);
    cn__id_col_copy(st, 1, a->name, CN_ACCOUNT_NAME_MAX);
    cn__id_col_copy(st, 2, a->email, CN_EMAIL_MAX);
    a->disabled = cn_meta_column_int64(st, 3) != 0;
    a->created_at = cn_meta_column_int64(st, 4);
}

/* One account asked for by a one-parameter query (sql, with text, or with
 * num when text is NULL), and the row found (into out, which may be NULL). */
typedef struct account_lookup {
    const char *sql;
    const char *text;
    int64_t num;
    cn_account_t *out;
} account_lookup_t;

static cn_err_t lookup_body(cn_meta_txn_t *t, void *ctx)
{
    const account_lookup_t *q = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = q->text ? cn_meta_queryf(t, &st, q->sql, "s", q->text)
                         : cn_meta_queryf(t, &st, q->sql, "i", q->num);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        if (q->out)
            row_account(st, q->out);
        e = 0;
    } else if (e == CN_META_DONE) {
        e = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    return e;
}

/* Runs a one-parameter account query; CN_E_NOT_FOUND without a row. */
static cn_err_t account_query(cn_identity_t *id, const char *sql, const char *text, int64_t num,
                              cn_account_t *out)
{
    account_lookup_t q = { sql, text, num, out };
    return cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, lookup_body, &q);
}

cn_err_t cn_identity_account_get(cn_identity_t *id, const char *name, cn_account_t *out)
{
    if (!cn__id_valid_account(name))
        return CN_E_NOT_FOUND;
    return account_query(id, cn__sql_id[CN_SQL_ID_ACCOUNT_BY_NAME], name, 0, out);
}

cn_err_t cn_identity_account_by_email(cn_identity_t *id, const char *email, cn_account_t *out)
{
    char norm[CN_EMAIL_MAX + 1];
    if (!email || norm_email(email, norm) < 0)
        return CN_E_NOT_FOUND;
    return account_query(id, cn__sql_id[CN_SQL_ID_ACCOUNT_BY_EMAIL], norm, 0, out);
}

cn_err_t cn_identity_account_by_id(cn_identity_t *id, int64_t account_id, cn_account_t *out)
{
    return account_query(id, cn__sql_id[CN_SQL_ID_ACCOUNT_BY_ID], NULL, account_id, out);
}

/* An account to create, and the id it got. */
typedef struct new_account {
    const char *name;
    const char *email;
    char key[33]; /* the create's operation key: 128 random bits in hex */
    int64_t id;
} new_account_t;

static cn_err_t create_body(cn_meta_txn_t *t, void *ctx)
{
    new_account_t *na = ctx;
    return cn__id_account_insert(t, na->name, na->email, na->key, &na->id);
}

/* An account row of na's name written with na's key is this create's
 * (cn_meta_run_keyed); its id is taken from it. */
static cn_err_t create_landed(cn_meta_txn_t *t, void *ctx, bool *found)
{
    new_account_t *na = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e =
        cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_ACCOUNT_CREATED], "ss", na->name, na->key);
    if (e == 0)
        e = cn_meta_step(st);
    *found = e == CN_META_ROW;
    if (*found)
        na->id = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    return e < 0 ? e : CN_OK;
}

cn_err_t cn_identity_account_create(cn_identity_t *id, const char *name, const char *email,
                                    cn_account_t *out)
{
    char norm[CN_EMAIL_MAX + 1];
    if (!cn__id_valid_account(name))
        return CN_E_INVALID;
    if (email && norm_email(email, norm) < 0)
        return CN_E_INVALID;
    new_account_t na = { .name = name, .email = email ? norm : NULL };
    uint8_t r[16];
    CN_TRY(cn_random_bytes(r, sizeof r));
    cn_hex_encode(r, sizeof r, na.key);
    CN_TRY(cn__id_write_run_keyed(id, CN_META_RUN_WRITE | CN_META_RETRY, create_body, create_landed,
                                  &na));
    cn_info("identity", "account %s created (id %lld)", name, (long long)na.id);
    return out ? cn_identity_account_by_id(id, na.id, out) : 0;
}

/* An UPDATE of one row: sql sets ?1 = v where its key ?2 = key; then, when
 * ends is not NULL, ends (a DELETE of console sessions by ?1 = key).  The
 * update sets a state, which a run whose COMMIT was lost with its server
 * looks for (cn_meta_run_keyed): the row of landed (by ?1 = key) holds
 * want in its column col, whether this update or another that asked the
 * same put it there. */
typedef struct one_update {
    const char *sql;
    int64_t v;
    const char *key;
    const char *ends;
    const char *landed;
    int col;
    int64_t want;
} one_update_t;

static cn_err_t update_body(cn_meta_txn_t *t, void *ctx)
{
    const one_update_t *u = ctx;
    cn_err_t e = cn_meta_execf(t, u->sql, "is", u->v, u->key);
    if (e == 0 && cn_meta_changes(t) == 0)
        e = CN_E_NOT_FOUND;
    if (e == 0 && u->ends)
        e = cn_meta_execf(t, u->ends, "s", u->key);
    return e;
}

static cn_err_t update_landed(cn_meta_txn_t *t, void *ctx, bool *found)
{
    const one_update_t *u = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, u->landed, "s", u->key);
    if (e == 0)
        e = cn_meta_step(st);
    *found = e == CN_META_ROW && cn_meta_column_int64(st, u->col) == u->want;
    cn_meta_finish(st);
    return e < 0 ? e : CN_OK;
}

/* Runs u (its UPDATE, then its ends) in one write transaction of its own;
 * CN_E_NOT_FOUND when no row has its key.  Cached token states are dropped
 * by the write generation it bumps (gen.c). */
static cn_err_t update_one(cn_identity_t *id, one_update_t *u)
{
    return cn__id_write_run_keyed(id, CN_META_RUN_WRITE | CN_META_RETRY, update_body, update_landed,
                                  u);
}

/* Disabling deletes the account's console sessions in the same transaction
 * (whichever path calls this: the console, `cairn admin`), so enabling it
 * again revives its tokens but never a browser's session. */
cn_err_t cn_identity_account_set_disabled(cn_identity_t *id, const char *name, bool disabled)
{
    if (!cn__id_valid_account(name))
        return CN_E_NOT_FOUND;
    one_update_t u = {
        .sql = cn__sql_id[CN_SQL_ID_ACCOUNT_SET_DISABLED],
        .v = disabled ? 1 : 0,
        .key = name,
        .ends = disabled ? cn__sql_console[CN_SQL_CON_SESS_END_ACCOUNT] : NULL,
        .landed = cn__sql_id[CN_SQL_ID_ACCOUNT_BY_NAME],
        .col = 3, /* ACCOUNT_COLS' disabled */
        .want = disabled ? 1 : 0,
    };
    cn_err_t e = update_one(id, &u);
    if (e == 0)
        cn_info("identity", "account %s %s", name, disabled ? "disabled" : "enabled");
    return e;
}

/* Every account, read into rows (each a cn_account_t); handed to the
 * caller's callback after the run, so that a repeated run (CN_META_RETRY)
 * hands each row once. */
static cn_err_t accounts_body(cn_meta_txn_t *t, void *ctx)
{
    cn_buf_t *rows = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(rows); /* an earlier attempt's rows */
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_ACCOUNT_LIST], "");
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        cn_account_t a;
        row_account(st, &a);
        e = cn_buf_append(rows, &a, sizeof a);
    }
    cn_meta_finish(st);
    return e;
}

cn_err_t cn_identity_account_list(cn_identity_t *id, cn_account_fn fn, void *arg)
{
    cn_buf_t rows = { 0 };
    cn_err_t e = cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, accounts_body, &rows);
    for (size_t off = 0; e == 0 && off < rows.len; off += sizeof(cn_account_t)) {
        cn_account_t a;
        memcpy(&a, rows.data + off, sizeof a);
        e = fn(arg, &a);
    }
    cn_buf_free(&rows);
    return e;
}

/* ---- tokens ----------------------------------------------------------------- */

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
static const char b62[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

cn_err_t cn__id_new_credential(char token_id[CN_TOKEN_ID_MAX + 1], char secret[CN_SECRET_MAX + 1])
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
    /* 'n' takes no argument: expires_at is then left over, and unread. */
    return cn_meta_execf(t, cn__sql_id[CN_SQL_ID_TOKEN_PUT], expires_at ? "sisiii" : "sisiin",
                         token_id, account_id, hex, (int64_t)perms, (int64_t)time(NULL),
                         expires_at);
}

/* A token to store: its id, secret, account, permissions and expiry. */
typedef struct token_row {
    cn_identity_t *id;
    const char *token_id;
    int64_t account_id;
    const char *secret;
    cn_perms_t perms;
    int64_t expires_at;
} token_row_t;

static cn_err_t token_put_body(cn_meta_txn_t *t, void *ctx)
{
    const token_row_t *tr = ctx;
    return cn__id_token_put(tr->id, t, tr->token_id, tr->account_id, tr->secret, strlen(tr->secret),
                            tr->perms, tr->expires_at);
}

/* The token's random id is its operation key: a token row of that id is
 * this create's (cn_meta_run_keyed). */
static cn_err_t token_landed(cn_meta_txn_t *t, void *ctx, bool *found)
{
    const token_row_t *tr = ctx;
    cn_err_t e = cn_meta_execf(t, cn__sql_id[CN_SQL_ID_TOKEN_STATE], "s", tr->token_id);
    *found = e == CN_META_ROW;
    return e < 0 ? e : CN_OK;
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
    token_row_t tr = { id, tid, a.id, secret, perms, expires_at };
    cn_err_t e = cn__id_write_run_keyed(id, CN_META_RUN_WRITE | CN_META_RETRY, token_put_body,
                                        token_landed, &tr);
    if (e == 0) {
        snprintf(cred, CN_CREDENTIAL_MAX, "%s:%s", tid, secret);
        cn_info("identity", "token %s created for account %s", tid, a.name);
    }
    OPENSSL_cleanse(secret, sizeof secret);
    return e;
}

cn_err_t cn_identity_token_revoke(cn_identity_t *id, const char *token_id)
{
    if (!token_id || !cn__id_valid_token_id(token_id, strlen(token_id)))
        return CN_E_NOT_FOUND;
    /* its console sessions end in the same transaction */
    one_update_t u = {
        .sql = cn__sql_id[CN_SQL_ID_TOKEN_REVOKE],
        .v = (int64_t)time(NULL),
        .key = token_id,
        .ends = cn__sql_console[CN_SQL_CON_SESS_END_TOKEN],
        .landed = cn__sql_id[CN_SQL_ID_TOKEN_REVOKED],
        .col = 0,
        .want = 1,
    };
    cn_err_t e = update_one(id, &u);
    if (e == 0)
        cn_info("identity", "token %s revoked", token_id);
    return e;
}

/* The tokens of account (NULL: of every account), read into rows (each a
 * cn_token_info_t) and handed to the caller's callback after the run, so
 * that a repeated run (CN_META_RETRY) hands each row once. */
typedef struct token_walk {
    const char *account;
    cn_buf_t rows;
} token_walk_t;

static cn_err_t tokens_body(cn_meta_txn_t *t, void *ctx)
{
    token_walk_t *w = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&w->rows); /* an earlier attempt's rows */
    cn_err_t e = w->account ? cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_TOKEN_LIST_ACCOUNT], "s",
                                             w->account)
                            : cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_TOKEN_LIST], "");
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
        e = cn_buf_append(&w->rows, &ti, sizeof ti);
    }
    cn_meta_finish(st);
    return e;
}

cn_err_t cn_identity_token_list(cn_identity_t *id, const char *account, cn_token_fn fn, void *arg)
{
    token_walk_t w = { account, { 0 } };
    cn_err_t e = cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, tokens_body, &w);
    for (size_t off = 0; e == 0 && off < w.rows.len; off += sizeof(cn_token_info_t)) {
        cn_token_info_t ti;
        memcpy(&ti, w.rows.data + off, sizeof ti);
        e = fn(arg, &ti);
    }
    cn_buf_free(&w.rows);
    return e;
}
