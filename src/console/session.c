/* The console's sessions: login with a token "ID:SECRET" (checked in
 * constant time by identity), a random 256-bit cookie, and a row in the
 * metadata (console_sessions, keyed by the cookie's SHA-256: the cookie
 * itself is stored nowhere) bound to the token.  Every request re-checks the
 * token through identity's token-state cache, which every change made
 * through identity invalidates, so a revoked or expired token or a disabled
 * account ends the session at its next request; idle and absolute timeouts
 * end it too.  (Identity itself deletes the rows of a token it revokes or
 * an account it disables, in the same transaction: enabling the account
 * again never revives a session.)  Failed logins are limited in memory per
 * source: the client address, an IPv6 one by its /64.  This file never logs
 * a cookie or a secret and never writes SQL (src/meta/sql). */
#include "console_int.h"
#include "meta/sql/console.h"
#include "cairn/authz.h"
#include "cairn/crypto.h"
#include "cairn/meta.h"
#include "cairn/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COOKIE_NAME "cairn_session"
#define COOKIE_BYTES 32
#define COOKIE_HEX (2 * COOKIE_BYTES)
#define FAIL_MAX 5                 /* failed logins of one source ... */
#define FAIL_WINDOW_MS (60 * 1000) /* ... within this window, then 429 */
#define FAIL_SOURCES 1024          /* sources remembered */
#define TOUCH_EVERY_MS (30 * 1000) /* last_seen written at most this often */
#define SOURCE_MAX 64
_Static_assert(CN__CONSOLE_FAIL_KEY_MAX <= SOURCE_MAX, "a limiter key fits a fail entry");

typedef struct fail_entry {
    char source[SOURCE_MAX];
    int64_t t[FAIL_MAX]; /* failure times, ring */
    unsigned next;
    int64_t last;
} fail_entry_t;

struct cn__console_sess {
    cn_console_t *con;
    cn_meta_t *meta;
    cn_identity_t *id;
    int64_t idle_ms, max_ms;
    pthread_mutex_t mu; /* guards fails */
    fail_entry_t fails[FAIL_SOURCES];
};

/* One session row. */
typedef struct sess_row {
    char sid[CN__CONSOLE_SID_HEX + 1];
    char token_id[CN_TOKEN_ID_MAX + 1];
    char account[CN_ACCOUNT_NAME_MAX + 1];
    char source[SOURCE_MAX];
    int64_t created_ms, last_seen_ms, ends_ms;
    int64_t db_now_ms; /* the database's clock when the row was read */
    bool found;
} sess_row_t;

cn_err_t cn_console_migrate(cn_meta_t *meta)
{
    return cn__sql_migrate(meta, &cn__sql_console_set);
}

cn_err_t cn__console_sess_new(cn_console_t *con, cn__console_sess_t **out)
{
    *out = NULL;
    const cn_console_config_t *cfg = cn__console_cfg(con);
    CN_TRY(cn_console_migrate(cfg->meta));
    cn__console_sess_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->con = con;
    s->meta = cfg->meta;
    s->id = cfg->identity;
    s->idle_ms = cfg->idle_ms;
    s->max_ms = cfg->max_ms;
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return CN_OK;
}

void cn__console_sess_free(cn__console_sess_t *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---- failed logins ------------------------------------------------------------------ */

void cn__console_fail_key(const char *ip, char key[CN__CONSOLE_FAIL_KEY_MAX])
{
    cn_authz_ip_t a;
    if (!ip || cn_authz_ip_parse(ip, &a) < 0) {
        snprintf(key, CN__CONSOLE_FAIL_KEY_MAX, "%s", ip ? ip : "");
        return;
    }
    if (a.family == 4) {
        inet_ntop(AF_INET, a.addr, key, CN__CONSOLE_FAIL_KEY_MAX);
        return;
    }
    memset(a.addr + 8, 0, 8); /* one site's /64 is one source */
    inet_ntop(AF_INET6, a.addr, key, CN__CONSOLE_FAIL_KEY_MAX - 3);
    strcat(key, "/64");
}

/* The entry of source, or a fresh one (the least recently failed replaced)
 * when create; NULL otherwise.  Under s->mu. */
static fail_entry_t *fail_find_locked(cn__console_sess_t *s, const char *source, bool create)
{
    fail_entry_t *oldest = &s->fails[0];
    for (size_t i = 0; i < FAIL_SOURCES; i++) {
        fail_entry_t *f = &s->fails[i];
        if (f->source[0] && !strcmp(f->source, source))
            return f;
        if (f->last < oldest->last)
            oldest = f;
    }
    if (!create)
        return NULL;
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->source, sizeof oldest->source, "%s", source);
    return oldest;
}

/* Seconds until source may try again (> 0) when it failed FAIL_MAX times
 * within the window, else 0. */
static int64_t fail_blocked(cn__console_sess_t *s, const char *source, int64_t now)
{
    int64_t wait = 0;
    pthread_mutex_lock(&s->mu);
    fail_entry_t *f = fail_find_locked(s, source, false);
    if (f) {
        int64_t first = INT64_MAX;
        unsigned n = 0;
        for (unsigned i = 0; i < FAIL_MAX; i++)
            if (f->t[i] && now - f->t[i] < FAIL_WINDOW_MS) {
                n++;
                first = f->t[i] < first ? f->t[i] : first;
            }
        if (n >= FAIL_MAX)
            wait = (first + FAIL_WINDOW_MS - now + 999) / 1000;
    }
    pthread_mutex_unlock(&s->mu);
    return wait > 0 ? wait : 0;
}

/* Records a failure of source at now (ok false) or forgets its failures. */
static void fail_note(cn__console_sess_t *s, const char *source, int64_t now, bool ok)
{
    pthread_mutex_lock(&s->mu);
    fail_entry_t *f = fail_find_locked(s, source, !ok);
    if (f && ok)
        memset(f, 0, sizeof *f);
    else if (f) {
        f->t[f->next] = now;
        f->next = (f->next + 1) % FAIL_MAX;
        f->last = now;
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- rows ------------------------------------------------------------------------------ */

static void col_copy(cn_meta_stmt_t *st, int col, char *out, size_t cap)
{
    size_t len = 0;
    const char *t = cn_meta_column_text(st, col, &len);
    if (!t || len >= cap)
        len = 0;
    if (len)
        memcpy(out, t, len);
    out[len] = '\0';
}

static cn_err_t row_get_body(cn_meta_txn_t *txn, void *ctx)
{
    sess_row_t *row = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_console_engine[CN_SQL_CON_E_SESS_GET]), "s",
        row->sid);
    if (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        col_copy(st, 0, row->token_id, sizeof row->token_id);
        col_copy(st, 1, row->account, sizeof row->account);
        col_copy(st, 2, row->source, sizeof row->source);
        row->created_ms = cn_meta_column_int64(st, 3);
        row->last_seen_ms = cn_meta_column_int64(st, 4);
        row->ends_ms = cn_meta_column_int64(st, 5);
        row->db_now_ms = cn_meta_column_int64(st, 6);
        row->found = true;
        e = CN_OK;
    }
    cn_meta_finish(st);
    return e;
}

/* A write of one session row: a sign-in's, which first deletes ended rows
 * (idle_ms and max_ms its session's bounds), a touch or a delete. */
typedef enum {
    ROW_CREATE,
    ROW_TOUCH,
    ROW_DELETE
} row_op_t;
typedef struct row_write {
    row_op_t op;
    const sess_row_t *row;
    int64_t idle_ms, max_ms;
} row_write_t;

static cn_err_t row_write_body(cn_meta_txn_t *txn, void *ctx)
{
    const row_write_t *w = ctx;
    const sess_row_t *r = w->row;
    const cn_meta_batch_sql_t *e = cn__sql_console_engine;
    switch (w->op) {
    case ROW_CREATE:
        CN_TRY(cn_meta_execf(txn, cn_meta_batch_text(txn, &e[CN_SQL_CON_E_SESS_EXPIRE]), "i",
                             w->idle_ms));
        return cn_meta_execf(txn, cn_meta_batch_text(txn, &e[CN_SQL_CON_E_SESS_CREATE]), "ssssi",
                             r->sid, r->token_id, r->account, r->source, w->max_ms);
    case ROW_TOUCH:
        return cn_meta_execf(txn, cn_meta_batch_text(txn, &e[CN_SQL_CON_E_SESS_TOUCH]), "s",
                             r->sid);
    default: {
        cn_err_t err = cn_meta_execf(txn, cn__sql_console[CN_SQL_CON_SESS_DELETE], "s", r->sid);
        return err >= 0 && cn_meta_changes(txn) == 0 ? CN_E_NOT_FOUND : err;
    }
    }
}

static cn_err_t row_write(cn_meta_t *meta, row_op_t op, const sess_row_t *row, int64_t idle_ms,
                          int64_t max_ms)
{
    row_write_t w = { .op = op, .row = row, .idle_ms = idle_ms, .max_ms = max_ms };
    return cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, row_write_body, &w);
}

/* ---- the session document and the cookie -------------------------------------------- */

static json_t *session_doc(cn__console_sess_t *s, const cn_principal_t *p)
{
    json_t *perms = json_array();
    for (unsigned bit = 1; bit && perms; bit <<= 1) {
        const char *name = (p->perms & bit) ? cn_perm_name(bit) : NULL;
        if (name)
            json_array_append_new(perms, json_string(name));
    }
    return json_pack("{s:s, s:s, s:o*, s:b, s:s, s:I, s:I}", "account", p->account, "token_id",
                     p->token_id, "perms", perms, "admin", (p->perms & CN_PERM_ADMIN) != 0, "node",
                     cn__console_cfg(s->con)->node, "idle_s", (json_int_t)(s->idle_ms / 1000),
                     "max_s", (json_int_t)(s->max_ms / 1000));
}

/* Sets the cookie (value NULL: cleared). */
static void set_cookie(cn_http_req_t *req, const char *value)
{
    char c[256];
    snprintf(c, sizeof c, COOKIE_NAME "=%s; HttpOnly; SameSite=Strict; Path=/_cairn/console/%s%s",
             value ? value : "", value ? "" : "; Max-Age=0",
             cn_http_req_is_tls(req) ? "; Secure" : "");
    (void)cn_http_resp_header(req, "Set-Cookie", c);
    explicit_bzero(c, sizeof c);
}

/* The cookie's value (COOKIE_HEX hex digits) into out: true when present
 * and well formed. */
static bool cookie_get(cn_http_req_t *req, char out[COOKIE_HEX + 1])
{
    const char *h = cn_http_req_header(req, "Cookie");
    size_t nlen = sizeof COOKIE_NAME - 1;
    for (const char *p = h; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        if (!strncmp(p, COOKIE_NAME "=", nlen + 1)) {
            const char *v = p + nlen + 1;
            size_t n = strcspn(v, "; ");
            if (n != COOKIE_HEX || strspn(v, "0123456789abcdef") < COOKIE_HEX)
                return false;
            memcpy(out, v, COOKIE_HEX);
            out[COOKIE_HEX] = '\0';
            return true;
        }
        p = strchr(p, ';');
    }
    return false;
}

static void sid_of(const char *cookie, char sid[CN__CONSOLE_SID_HEX + 1])
{
    uint8_t d[32];
    cn_sha256(cookie, strlen(cookie), d);
    cn_hex_encode(d, sizeof d, sid);
}

/* ---- login, check, session calls ------------------------------------------------------ */

bool cn__console_session_cookie(cn_http_req_t *req, char out[CN__CONSOLE_COOKIE_MAX])
{
    char v[COOKIE_HEX + 1];
    bool ok = cookie_get(req, v);
    if (ok)
        snprintf(out, CN__CONSOLE_COOKIE_MAX, COOKIE_NAME "=%s", v);
    explicit_bzero(v, sizeof v);
    return ok;
}

/* Makes the row of a checked principal p and answers with the cookie. */
static void login_ok(cn__console_sess_t *s, cn_http_req_t *req, const cn_principal_t *p,
                     const char *source)
{
    uint8_t rnd[COOKIE_BYTES];
    char cookie[COOKIE_HEX + 1];
    sess_row_t row = { 0 };
    cn_err_t e = cn_random_bytes(rnd, sizeof rnd);
    if (e >= 0) {
        cn_hex_encode(rnd, sizeof rnd, cookie);
        sid_of(cookie, row.sid);
        snprintf(row.token_id, sizeof row.token_id, "%s", p->token_id);
        snprintf(row.account, sizeof row.account, "%s", p->account);
        snprintf(row.source, sizeof row.source, "%s", source);
        e = row_write(s->meta, ROW_CREATE, &row, s->idle_ms, s->max_ms);
    }
    if (e < 0)
        cn__console_respond_error(req, 500, "InternalError", cn_strerror(e));
    else {
        set_cookie(req, cookie);
        cn__console_respond(req, 200, session_doc(s, p));
    }
    explicit_bzero(rnd, sizeof rnd);
    explicit_bzero(cookie, sizeof cookie);
}

void cn__console_login(cn__console_sess_t *s, cn_http_req_t *req, const json_t *body)
{
    const char *source = cn_http_req_client_ip(req);
    char key[CN__CONSOLE_FAIL_KEY_MAX];
    cn__console_fail_key(source, key);
    int64_t now = cn_wall_ms();
    int64_t wait = fail_blocked(s, key, now);
    if (wait > 0) {
        char ra[24];
        snprintf(ra, sizeof ra, "%lld", (long long)wait);
        (void)cn_http_resp_header(req, "Retry-After", ra);
        cn__console_respond_error(req, 429, "TooManyRequests",
                                  "too many failed sign-ins from this address; wait a minute");
        return;
    }
    const json_t *tok = body ? json_object_get(body, "token") : NULL;
    if (!json_is_string(tok)) {
        cn__console_respond_error(req, 400, "BadRequest",
                                  "the body needs {\"token\": \"ID:SECRET\"}");
        return;
    }
    cn_principal_t p;
    cn_err_t e =
        cn_identity_authenticate(s->id, json_string_value(tok), json_string_length(tok), &p);
    if (e == CN_E_AUTH) {
        fail_note(s, key, now, false);
        cn__console_respond_error(req, 401, "Unauthorized", "the token is not valid");
    } else if (e < 0)
        cn__console_respond_error(req, 500, "InternalError", cn_strerror(e));
    else {
        fail_note(s, key, now, true);
        login_ok(s, req, &p, source);
    }
    explicit_bzero(&p, sizeof p);
}

/* The token's current principal: CN_E_AUTH when it no longer authenticates. */
static cn_err_t token_recheck(cn__console_sess_t *s, const sess_row_t *row, cn_principal_t *who)
{
    uint8_t secret[CN_SECRET_MAX];
    size_t len = 0;
    cn_err_t e = cn_identity_lookup_secret(s->id, row->token_id, secret, sizeof secret, &len, who);
    explicit_bzero(secret, sizeof secret);
    if (e == CN_E_AUTH || e == CN_E_NOT_FOUND || (e >= 0 && strcmp(who->account, row->account)))
        return CN_E_AUTH;
    return e;
}

cn_err_t cn__console_session_check(cn__console_sess_t *s, cn_http_req_t *req, cn_principal_t *who,
                                   char *sid)
{
    char cookie[COOKIE_HEX + 1];
    sess_row_t row = { 0 };
    if (!cookie_get(req, cookie))
        return CN_E_AUTH;
    sid_of(cookie, row.sid);
    explicit_bzero(cookie, sizeof cookie);
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, row_get_body, &row));
    if (!row.found)
        return CN_E_AUTH;
    int64_t now = row.db_now_ms;
    cn_err_t e = now >= row.ends_ms || now - row.last_seen_ms >= s->idle_ms
                     ? CN_E_AUTH
                     : token_recheck(s, &row, who);
    if (e == CN_E_AUTH) {
        (void)row_write(s->meta, ROW_DELETE, &row, 0, 0);
        explicit_bzero(who, sizeof *who);
        return CN_E_AUTH;
    }
    CN_TRY(e);
    /* at most once per 30 s, and often enough for a short test timeout */
    int64_t every = s->idle_ms / 4 < TOUCH_EVERY_MS ? s->idle_ms / 4 : TOUCH_EVERY_MS;
    if (now - row.last_seen_ms >= every)
        (void)row_write(s->meta, ROW_TOUCH, &row, 0, 0);
    memcpy(sid, row.sid, sizeof row.sid);
    return CN_OK;
}

void cn__console_session_call(cn__console_sess_t *s, cn_http_req_t *req, const cn_principal_t *who,
                              const char *sid)
{
    if (cn_http_req_method_bit(req) != CN_HTTP_DELETE) {
        cn__console_respond(req, 200, session_doc(s, who));
        return;
    }
    sess_row_t row = { 0 };
    memcpy(row.sid, sid, sizeof row.sid);
    cn_err_t e = row_write(s->meta, ROW_DELETE, &row, 0, 0);
    if (e < 0 && e != CN_E_NOT_FOUND) {
        cn__console_respond_error(req, 500, "InternalError", cn_strerror(e));
        return;
    }
    set_cookie(req, NULL);
    (void)cn__console_headers(req);
    (void)cn_http_resp_header(req, "Cache-Control", "no-store");
    (void)cn_http_respond_empty(req, 204, 0);
}

/* ---- the admin calls ------------------------------------------------------------------ */

static json_t *ms_time(int64_t ms)
{
    char t[CN_RFC3339_LEN];
    cn_rfc3339(ms, t);
    return json_string(t);
}

typedef struct list_ctx {
    json_t *arr;
    int64_t idle_ms;
} list_ctx_t;

static cn_err_t list_body(cn_meta_txn_t *txn, void *ctx)
{
    list_ctx_t *l = ctx;
    json_array_clear(l->arr);
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_console_engine[CN_SQL_CON_E_SESS_LIST]), "");
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        sess_row_t r;
        int64_t seen = cn_meta_column_int64(st, 5), now = cn_meta_column_int64(st, 7);
        if (cn_meta_column_int64(st, 6) <= now || now - seen >= l->idle_ms)
            continue; /* ended; the next sign-in deletes it */
        col_copy(st, 0, r.sid, sizeof r.sid);
        col_copy(st, 1, r.token_id, sizeof r.token_id);
        col_copy(st, 2, r.account, sizeof r.account);
        col_copy(st, 3, r.source, sizeof r.source);
        json_t *o =
            json_pack("{s:s, s:s, s:s, s:o, s:o, s:s}", "id", r.sid, "account", r.account,
                      "token_id", r.token_id, "created", ms_time(cn_meta_column_int64(st, 4)),
                      "last_seen", ms_time(seen), "source", r.source);
        if (cn__console_append(l->arr, o) < 0)
            e = -ENOMEM;
    }
    cn_meta_finish(st);
    return e;
}

json_t *cn__console_sessions_list(cn_console_t *con, cn_err_t *err)
{
    const cn_console_config_t *cfg = cn__console_cfg(con);
    list_ctx_t l = { .arr = json_array(), .idle_ms = cfg->idle_ms };
    *err =
        l.arr ? cn_meta_run(cfg->meta, CN_META_RUN_READ | CN_META_RETRY, list_body, &l) : -ENOMEM;
    if (*err < 0) {
        json_decref(l.arr);
        return NULL;
    }
    json_t *doc = json_pack("{s:o}", "sessions", l.arr);
    if (!doc)
        *err = -ENOMEM;
    return doc;
}

cn_err_t cn__console_session_end(cn_console_t *con, const char *id)
{
    sess_row_t row = { 0 };
    if (strlen(id) != CN__CONSOLE_SID_HEX)
        return CN_E_NOT_FOUND;
    memcpy(row.sid, id, CN__CONSOLE_SID_HEX + 1);
    return row_write(cn__console_cfg(con)->meta, ROW_DELETE, &row, 0, 0);
}
