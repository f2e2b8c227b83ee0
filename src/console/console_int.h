/* Shared by the console adapter's files (src/console); never included from
 * another module.  console.c owns the routes, the dispatch over the op tables
 * of the api_*.c files, the answers and the one cn_err_t table; session.c the
 * cookie sessions; guard.c the mutation guards; assets.c the embedded web
 * files.  None of these files touches the store or SQL: sessions go through
 * src/meta, everything else through the services with the session's
 * principal. */
#ifndef CN_CONSOLE_INT_H
#define CN_CONSOLE_INT_H

#include "cairn/console.h"
#include "cairn/http.h"
#include "cairn/identity.h"

#include <jansson.h>

typedef struct cn_console cn_console_t; /* the adapter's state (console.c) */
typedef struct cn_console_call {
    cn_console_t *con;
    cn_http_req_t *req;
    const cn_principal_t *who; /* the session's principal (token id, account, perms) */
    const char *session_id;    /* hex id of the session row (for "sessions" admin) */
    json_t *body;              /* parsed JSON body (POST/PUT/DELETE with a body), else NULL */
    const char *const *seg;    /* path segments after /_cairn/console/api/, decoded */
    size_t nseg;
} cn_console_call_t;
typedef int (*cn_console_fn)(cn_console_call_t *c); /* responds; returns 0 */
typedef struct cn_console_op {
    unsigned method;     /* one CN_HTTP_* bit */
    const char *pattern; /* "buckets/ * /objects" without spaces: '*' matches one segment */
    cn_console_fn fn;
    unsigned need; /* CN_PERM_* bits required (0: any session); ADMIN → admin */
} cn_console_op_t;
/* Each api_*.c exports one table, NULL-fn terminated, that console.c dispatches: */
extern const cn_console_op_t cn__console_buckets_ops[], cn__console_objects_ops[],
    cn__console_repos_ops[], cn__console_blobs_ops[], cn__console_admin_ops[],
    cn__console_metrics_ops[];
/* Answers (console.c): JSON with the security headers; jansson reference stolen. */
int cn__console_json(cn_console_call_t *c, int status, json_t *doc);
int cn__console_error(cn_console_call_t *c, int status, const char *code, const char *message);
int cn__console_err(cn_console_call_t *c, cn_err_t e); /* cn_err_t → status+code, one table */
/* The answer of a listing: a service call that returned e filled arr (stolen)
 * through a per-row callback; {key: arr} (200) when e >= 0, else arr is
 * dropped and e answered through the one table.  Returns 0.  A caller that
 * could not make arr passes -ENOMEM. */
int cn__console_list_answer(cn_console_call_t *c, cn_err_t e, const char *key, json_t *arr);
/* The answer of a call that changes something and returns no body: 204
 * when e >= 0, 404 NotFound saying missing ("no such token") for
 * CN_E_NOT_FOUND, else e through the one table.  Returns 0. */
int cn__console_done(cn_console_call_t *c, cn_err_t e, const char *missing);
/* What a per-row callback returns after making its row o: appends o (stolen)
 * to arr; CN_OK, or -ENOMEM when o is NULL or the append fails. */
cn_err_t cn__console_append(json_t *arr, json_t *o);
/* The services (borrowed from the config). */
const cn_console_config_t *cn__console_cfg(const cn_console_t *con);
/* The call's query parameter name decoded as application/x-www-form-urlencoded
 * ('+' is a space, %2B a plus: what URLSearchParams writes), the first when
 * repeated; NULL when absent.  Every console query read goes through it.
 * Valid for the call. */
const char *cn__console_query(const cn_console_call_t *c, const char *name);

/* ---- embedded web files (the generated console_assets.c; assets.c) ------- */
typedef struct cn__console_asset {
    const char *name;         /* "app-1a2b3c4d.css" under assets/; "index.html" */
    const char *source;       /* its path under src/console/web/ */
    const char *type;         /* Content-Type */
    const unsigned char *raw; /* the bytes, references rewritten */
    size_t raw_len;
    const unsigned char *gz; /* their gzip, or NULL when not smaller */
    size_t gz_len;
    const char *etag; /* quoted */
} cn__console_asset_t;
extern const cn__console_asset_t cn__console_assets[]; /* name NULL ends it */
extern const size_t cn__console_nassets;
/* Answers GET/HEAD of an embedded file at rest (the path after
 * /_cairn/console/: "" or "index.html" → the page, "assets/NAME" → an
 * asset), or 404 NotFound.  Returns 0. */
int cn__console_asset_serve(cn_console_t *con, cn_http_req_t *req, const char *rest);

/* ---- security headers and guards (console.c, guard.c) --------------------- */
/* Sets the headers every console response carries (CSP, nosniff, referrer,
 * COOP).  0, or a cn_http_resp_header error. */
cn_err_t cn__console_headers(cn_http_req_t *req);
/* The mutation guards of a POST/PUT/PATCH/DELETE: Content-Type
 * application/json when a body is sent, X-Cairn-Console: 1 and an Origin
 * equal to the listener's own.  true when the request passes (and for other
 * methods); has_body tells whether the request carries a body. */
bool cn__console_guard_ok(cn_http_req_t *req, bool has_body);

/* The answers under the call helpers, for a request without a call (login,
 * session): JSON with the console's headers and no-store (doc stolen; 500
 * when NULL), and {"error","message"}.  Return 0. */
int cn__console_respond(cn_http_req_t *req, int status, json_t *doc);
int cn__console_respond_error(cn_http_req_t *req, int status, const char *code,
                              const char *message);

/* ---- sessions (session.c) ------------------------------------------------ */
#define CN__CONSOLE_SID_HEX 64 /* a session id: SHA-256 of the cookie, hex */
typedef struct cn__console_sess cn__console_sess_t;
/* The session state of con (the failed-login table); freed by
 * cn__console_sess_free (NULL ok).  -ENOMEM, or a meta error from the
 * console_sessions migration. */
cn_err_t cn__console_sess_new(cn_console_t *con, cn__console_sess_t **out);
void cn__console_sess_free(cn__console_sess_t *s);
#define CN__CONSOLE_FAIL_KEY_MAX 52 /* INET6_ADDRSTRLEN + "/64" */
/* The failed-login limiter's source for client address ip (as
 * cn_http_req_client_ip gives it) into key: an IPv4 address as itself (an
 * IPv4-mapped IPv6 one too), an IPv6 address as its /64 ("2001:db8::/64"),
 * anything else copied (truncated).  Never fails. */
void cn__console_fail_key(const char *ip, char key[CN__CONSOLE_FAIL_KEY_MAX]);
/* POST session: checks body's "token" in constant time through identity,
 * 429 past 5 failures a minute from one source (cn__console_fail_key), else
 * makes the row and answers the session document with its cookie.
 * Responds. */
void cn__console_login(cn__console_sess_t *s, cn_http_req_t *req, const json_t *body);
/* The session of req's cookie: CN_OK with *who (the token's current
 * principal) and sid (CN__CONSOLE_SID_HEX + 1 bytes) filled; CN_E_AUTH
 * when there is none or it ended (idle, absolute, token revoked or expired,
 * account disabled: the row is then deleted); a meta error.  Touches
 * last_seen now and then. */
cn_err_t cn__console_session_check(cn__console_sess_t *s, cn_http_req_t *req, cn_principal_t *who,
                                   char *sid);
/* GET session (the document) and DELETE session (ends it, clears the
 * cookie) of a checked session.  Responds. */
void cn__console_session_call(cn__console_sess_t *s, cn_http_req_t *req, const cn_principal_t *who,
                              const char *sid);
/* The sessions, for the admin "sessions" calls: {"sessions":[{"id","account",
 * "token_id","created","last_seen","source"}]} as a new JSON object, or NULL
 * with *err set. */
json_t *cn__console_sessions_list(cn_console_t *con, cn_err_t *err);
/* Ends the session whose hex id is id: 0, CN_E_NOT_FOUND, or a meta error. */
cn_err_t cn__console_session_end(cn_console_t *con, const char *id);
#define CN__CONSOLE_COOKIE_MAX 96
/* The request's session cookie as a Cookie header value ("NAME=HEX") into
 * out, for a call a fleet peer answers with the caller's own session (GET
 * metrics?node=); false when req carries none.  The caller wipes out. */
bool cn__console_session_cookie(cn_http_req_t *req, char out[CN__CONSOLE_COOKIE_MAX]);

#endif
