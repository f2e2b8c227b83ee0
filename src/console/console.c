/* The console's framework: its one route under /_cairn/console on the HTTP
 * server, the embedded files, the JSON API dispatch over the op tables of the
 * api_*.c files (guards, session, the need gate, then the op), the answers
 * with the security headers, and the one cn_err_t → (status, code) table.
 * It never decides an access beyond the need gate (the services do, with the
 * session's principal) and never logs a cookie, a token secret or a body. */
#include "console_data.h"
#include "console_int.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CON_ROOT "/_cairn/console"
#define CON_API "api/"
#define CON_BODY_MAX (1u << 20) /* a JSON body */
#define CON_SEG_MAX 16          /* path segments after api/ */

struct cn_console {
    cn_console_config_t cfg; /* strings point at the copies below */
    char *node, *s3_base;
    cn__console_sess_t *sess;
    bool ring; /* the metrics sampler is started for it (ring.c) */
};

/* Per-request state of an API call. */
typedef struct con_req {
    cn_console_t *con;
    const cn_console_op_t *op; /* the matched op; NULL: login (POST session) */
    bool session_call;         /* GET/DELETE session */
    cn_buf_t body;
    bool too_large;
    char *segbuf;
    const char *seg[CON_SEG_MAX];
    size_t nseg;
    cn_principal_t who;
    char sid[CN__CONSOLE_SID_HEX + 1];
    json_t *json;
    cn_buf_t query; /* the decoded query: name NUL value NUL, nquery times */
    size_t nquery;
} con_req_t;

const cn_console_config_t *cn__console_cfg(const cn_console_t *con)
{
    return &con->cfg;
}

/* ---- answers ------------------------------------------------------------------------- */

cn_err_t cn__console_headers(cn_http_req_t *req)
{
    static const char *const h[][2] = {
        { "Content-Security-Policy",
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
          "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'" },
        { "X-Content-Type-Options", "nosniff" },
        { "Referrer-Policy", "no-referrer" },
        { "Cross-Origin-Opener-Policy", "same-origin" },
    };
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        CN_TRY(cn_http_resp_header(req, h[i][0], h[i][1]));
    return CN_OK;
}

/* The headers of an API answer: the console's and no-store. */
static void api_headers(cn_http_req_t *req)
{
    (void)cn__console_headers(req);
    (void)cn_http_resp_header(req, "Cache-Control", "no-store");
}

int cn__console_respond(cn_http_req_t *req, int status, json_t *doc)
{
    api_headers(req);
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!s) {
        static const char oom[] = "{\"error\":\"InternalError\",\"message\":\"out of memory\"}";
        (void)cn_http_respond(req, 500, "application/json", oom, sizeof oom - 1);
        return 0;
    }
    (void)cn_http_respond(req, status, "application/json", s, strlen(s));
    free(s);
    return 0;
}

int cn__console_respond_error(cn_http_req_t *req, int status, const char *code, const char *message)
{
    return cn__console_respond(
        req, status, json_pack("{s:s, s:s}", "error", code, "message", message ? message : ""));
}

int cn__console_json(cn_console_call_t *c, int status, json_t *doc)
{
    if (status == 204) {
        json_decref(doc);
        api_headers(c->req);
        (void)cn_http_respond_empty(c->req, 204, 0);
        return 0;
    }
    return cn__console_respond(c->req, status, doc);
}

int cn__console_error(cn_console_call_t *c, int status, const char *code, const char *message)
{
    return cn__console_respond_error(c->req, status, code, message);
}

/* The one table: a cn_err_t class → the status and code a call answers. */
static const struct {
    cn_err_t e;
    int status;
    const char *code;
} err_table[] = {
    { CN_E_NOT_FOUND, 404, "NotFound" },
    { CN_E_EXISTS, 409, "Conflict" },
    { CN_E_INVALID, 400, "BadRequest" },
    { CN_E_TOO_LARGE, 413, "TooLarge" },
    { CN_E_LIMIT, 400, "BadRequest" },
    { CN_E_DENIED, 403, "AccessDenied" },
    { CN_E_AUTH, 401, "Unauthorized" },
    { CN_E_CONFLICT, 409, "Conflict" },
    { CN_E_NOT_EMPTY, 409, "BucketNotEmpty" },
    { CN_E_RANGE, 416, "InvalidRange" },
    { CN_E_RATE_LIMITED, 429, "TooManyRequests" },
    { CN_E_BUSY, 503, "ServiceUnavailable" },
    { CN_E_UNAVAILABLE, 503, "ServiceUnavailable" },
    { CN_E_DB_LOCKED, 503, "ServiceUnavailable" }, /* a write that kept conflicting */
    { CN_E_SHUTDOWN, 503, "ServiceUnavailable" },
    { CN_E_TIMEOUT, 503, "ServiceUnavailable" },
    { CN_E_NO_UPLOAD, 404, "NoSuchUpload" },
    { CN_E_PRECONDITION, 412, "PreconditionFailed" },
    { CN_E_UNSUPPORTED, 501, "NotImplemented" },
    { CN_E_PINNED, 409, "Conflict" },
};

int cn__console_err(cn_console_call_t *c, cn_err_t e)
{
    for (size_t i = 0; i < sizeof err_table / sizeof err_table[0]; i++)
        if (err_table[i].e == e)
            return cn__console_respond_error(c->req, err_table[i].status, err_table[i].code,
                                             cn_strerror(e));
    return cn__console_respond_error(c->req, 500, "InternalError", cn_strerror(e));
}

int cn__console_list_answer(cn_console_call_t *c, cn_err_t e, const char *key, json_t *arr)
{
    if (e < 0) {
        json_decref(arr);
        return cn__console_err(c, e);
    }
    return cn__console_json(c, 200, json_pack("{s:o}", key, arr));
}

int cn__console_done(cn_console_call_t *c, cn_err_t e, const char *missing)
{
    if (e == CN_E_NOT_FOUND)
        return cn__console_error(c, 404, "NotFound", missing);
    if (e < 0)
        return cn__console_err(c, e);
    return cn__console_json(c, 204, NULL);
}

cn_err_t cn__console_append(json_t *arr, json_t *o)
{
    return o && json_array_append_new(arr, o) == 0 ? CN_OK : -ENOMEM;
}

/* ---- the query ------------------------------------------------------------------------- */

/* Appends raw[0..n) decoded as application/x-www-form-urlencoded ('+' a
 * space, then %XX, as URLSearchParams writes them) and a NUL to out.
 * CN_E_INVALID for a malformed escape, -ENOMEM. */
static cn_err_t form_decode(cn_buf_t *out, const char *raw, size_t n)
{
    char *t = malloc(n + 1);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        t[i] = raw[i] == '+' ? ' ' : raw[i];
    cn_err_t e = cn_http_pct_decode(out, t, n);
    free(t);
    return e < 0 ? e : cn_buf_put_u8(out, 0);
}

/* Decodes the request's raw query into q->query, the one decoder every
 * console query read goes through (cn__console_query). */
static cn_err_t query_parse(con_req_t *q, const cn_http_req_t *r)
{
    for (const char *p = cn_http_req_raw_query(r); *p;) {
        size_t len = strcspn(p, "&");
        const char *eq = memchr(p, '=', len);
        size_t nl = eq ? (size_t)(eq - p) : len;
        if (len) {
            CN_TRY(form_decode(&q->query, p, nl));
            CN_TRY(eq ? form_decode(&q->query, eq + 1, len - nl - 1) : cn_buf_put_u8(&q->query, 0));
            q->nquery++;
        }
        p += len + (p[len] == '&');
    }
    return CN_OK;
}

const char *cn__console_query(const cn_console_call_t *c, const char *name)
{
    const con_req_t *q = cn_http_req_data(c->req);
    const char *p = q ? (const char *)q->query.data : NULL;
    for (size_t i = 0; p && i < q->nquery; i++) {
        const char *value = p + strlen(p) + 1;
        if (!strcmp(p, name))
            return value;
        p = value + strlen(value) + 1;
    }
    return NULL;
}

/* ---- dispatch ------------------------------------------------------------------------- */

static const cn_console_op_t *const op_tables[] = {
    cn__console_buckets_ops, cn__console_objects_ops, cn__console_repos_ops,
    cn__console_blobs_ops,   cn__console_admin_ops,   cn__console_metrics_ops,
};

/* Whether pattern ("buckets/ * /objects" without spaces) matches the
 * segments: '*' matches any one segment, anything else itself. */
static bool pattern_match(const char *pattern, const char *const *seg, size_t nseg)
{
    size_t i = 0;
    const char *p = pattern;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (i >= nseg)
            return false;
        if (!(n == 1 && *p == '*') && (strlen(seg[i]) != n || memcmp(seg[i], p, n)))
            return false;
        i++;
        p += n + (slash ? 1 : 0);
    }
    return i == nseg;
}

/* The op for method and the segments; NULL with *known true when some op
 * serves the path with another method (405), false when none does (404). */
static const cn_console_op_t *op_find(unsigned method, const char *const *seg, size_t nseg,
                                      bool *known)
{
    *known = false;
    for (size_t t = 0; t < sizeof op_tables / sizeof op_tables[0]; t++)
        for (const cn_console_op_t *op = op_tables[t]; op->fn; op++) {
            if (!pattern_match(op->pattern, seg, nseg))
                continue;
            if (op->method & method)
                return op;
            *known = true;
        }
    return NULL;
}

/* Splits rest (the decoded path after api/) into q's segments.  false when
 * there are too many or one is empty. */
static bool split_segments(con_req_t *q, const char *rest)
{
    q->segbuf = strdup(rest);
    if (!q->segbuf)
        return false;
    size_t len = strlen(q->segbuf);
    if (len && q->segbuf[len - 1] == '/')
        q->segbuf[len - 1] = '\0'; /* "buckets/" is "buckets" */
    char *p = q->segbuf;
    while (*p) {
        if (q->nseg == CON_SEG_MAX)
            return false;
        q->seg[q->nseg++] = p;
        char *slash = strchr(p, '/');
        if (!slash)
            break;
        *slash = '\0';
        p = slash + 1;
        if (!*p)
            return false;
    }
    return q->nseg > 0;
}

/* The need gate: admin ops need the admin permission (403 Forbidden),
 * others each bit of need (403 AccessDenied).  true when it passes. */
static bool need_ok(con_req_t *q, cn_http_req_t *r)
{
    unsigned need = q->op->need;
    if ((need & CN_PERM_ADMIN) && !(q->who.perms & CN_PERM_ADMIN)) {
        cn__console_respond_error(r, 403, "Forbidden", "this call needs an admin token");
        return false;
    }
    for (unsigned bit = 1; bit; bit <<= 1)
        if ((need & bit) && bit != CN_PERM_ADMIN && !cn_perms_allow(q->who.perms, bit)) {
            cn__console_respond_error(r, 403, "AccessDenied",
                                      "the session's token lacks a permission");
            return false;
        }
    return true;
}

/* Runs the matched call once the body (if any) is in. */
static void call_run(con_req_t *q, cn_http_req_t *r)
{
    if (q->body.len) {
        json_error_t jerr;
        q->json =
            json_loadb((const char *)q->body.data, q->body.len, JSON_REJECT_DUPLICATES, &jerr);
        if (!q->json || !json_is_object(q->json)) {
            cn__console_respond_error(r, 400, "BadRequest", "the body is not a JSON object");
            return;
        }
    }
    if (!q->op && !q->session_call) {
        cn__console_login(q->con->sess, r, q->json);
        return;
    }
    if (q->session_call) {
        cn__console_session_call(q->con->sess, r, &q->who, q->sid);
        return;
    }
    cn_err_t e = query_parse(q, r);
    if (e < 0) {
        cn__console_respond_error(r, e == CN_E_INVALID ? 400 : 500,
                                  e == CN_E_INVALID ? "BadRequest" : "InternalError",
                                  e == CN_E_INVALID ? "the query is malformed" : cn_strerror(e));
        return;
    }
    cn_console_call_t c = { .con = q->con,
                            .req = r,
                            .who = &q->who,
                            .session_id = q->sid,
                            .body = q->json,
                            .seg = q->seg,
                            .nseg = q->nseg };
    (void)q->op->fn(&c);
    if (!cn_http_req_responded(r))
        cn__console_respond_error(r, 500, "InternalError", "the call gave no answer");
}

/* Decides an API call: guards, the session, the op and its gate.  0 to
 * read the body (q->op set, or a session call), 1 when answered. */
static int api_request(con_req_t *q, cn_http_req_t *r, const char *rest)
{
    unsigned m = cn_http_req_method_bit(r);
    int64_t clen = cn_http_req_content_length(r);
    bool has_body = clen > 0 || (clen < 0 && cn_http_req_header(r, "Transfer-Encoding"));
    if (clen > (int64_t)CON_BODY_MAX)
        return cn__console_respond_error(r, 413, "TooLarge",
                                         "a console call's body is at most 1 MiB"),
               1;
    if (!cn__console_guard_ok(r, has_body))
        return cn__console_respond_error(r, 403, "Forbidden",
                                         "a console mutation needs Content-Type: "
                                         "application/json, X-Cairn-Console: 1 and "
                                         "the console's own Origin"),
               1;
    if (!split_segments(q, rest))
        return cn__console_respond_error(r, 404, "NotFound", "no console call is served here"), 1;
    bool session = q->nseg == 1 && !strcmp(q->seg[0], "session");
    if (session && m == CN_HTTP_POST)
        return 0; /* login: no session yet */
    cn_err_t e = cn__console_session_check(q->con->sess, r, &q->who, q->sid);
    if (e < 0)
        return cn__console_respond_error(r, e == CN_E_AUTH ? 401 : 500,
                                         e == CN_E_AUTH ? "Unauthorized" : "InternalError",
                                         e == CN_E_AUTH ? "no valid session" : cn_strerror(e)),
               1;
    if (session) {
        if (m != CN_HTTP_GET && m != CN_HTTP_DELETE && m != CN_HTTP_HEAD)
            return cn__console_respond_error(r, 405, "MethodNotAllowed",
                                             "session takes GET, POST, DELETE"),
                   1;
        q->session_call = true;
        return 0;
    }
    bool known = false;
    q->op = op_find(m == CN_HTTP_HEAD ? CN_HTTP_GET : m, q->seg, q->nseg, &known);
    if (!q->op)
        return cn__console_respond_error(
                   r, known ? 405 : 404, known ? "MethodNotAllowed" : "NotFound",
                   known ? "this call takes another method" : "no such console call"),
               1;
    return need_ok(q, r) ? 0 : 1;
}

static bool route_match(const cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    const char *p = cn_http_req_path(r, NULL);
    return !strcmp(p, CON_ROOT) || !strncmp(p, CON_ROOT "/", sizeof CON_ROOT);
}

static int on_request(cn_http_req_t *r, void *ctx)
{
    cn_console_t *con = ctx;
    const char *path = cn_http_req_path(r, NULL);
    if (!strcmp(path, CON_ROOT)) {
        (void)cn__console_headers(r);
        (void)cn_http_resp_header(r, "Location", CON_ROOT "/");
        (void)cn_http_respond_empty(r, 301, 0);
        return 0;
    }
    const char *rest = path + sizeof CON_ROOT; /* after "/_cairn/console/" */
    if (strncmp(rest, CON_API, sizeof CON_API - 1)) {
        unsigned m = cn_http_req_method_bit(r);
        if (m != CN_HTTP_GET && m != CN_HTTP_HEAD) {
            (void)cn__console_headers(r);
            (void)cn_http_resp_header(r, "Allow", "GET, HEAD");
            return cn__console_respond_error(r, 405, "MethodNotAllowed",
                                             "the console's files take GET");
        }
        return cn__console_asset_serve(con, r, rest);
    }
    con_req_t *q = calloc(1, sizeof *q);
    if (!q)
        return cn__console_respond_error(r, 500, "InternalError", "out of memory");
    q->con = con;
    cn_http_req_set_data(r, q);
    if (api_request(q, r, rest + sizeof CON_API - 1))
        return 0;
    int64_t clen = cn_http_req_content_length(r);
    if (clen == 0 || (clen < 0 && !cn_http_req_header(r, "Transfer-Encoding")))
        call_run(q, r); /* no body to wait for */
    return 0;
}

static int on_body(cn_http_req_t *r, const uint8_t *p, size_t n, void *ctx)
{
    (void)ctx;
    con_req_t *q = cn_http_req_data(r);
    if (!q || q->too_large)
        return 0;
    if (q->body.len + n > CON_BODY_MAX) {
        q->too_large = true;
        return 0;
    }
    return cn_buf_append(&q->body, p, n) < 0 ? -1 : 0;
}

static void on_end(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    con_req_t *q = cn_http_req_data(r);
    if (!q || cn_http_req_responded(r))
        return;
    if (q->too_large) {
        cn__console_respond_error(r, 413, "TooLarge", "a console call's body is at most 1 MiB");
        return;
    }
    if (cn_http_req_body_error(r) != CN_S3E_NONE) {
        cn__console_respond_error(r, 400, "BadRequest", "the body did not arrive whole");
        return;
    }
    call_run(q, r);
}

static void on_cleanup(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    con_req_t *q = cn_http_req_data(r);
    if (!q)
        return;
    cn_buf_free(&q->body);
    json_decref(q->json);
    cn_buf_free(&q->query);
    free(q->segbuf);
    explicit_bzero(&q->who, sizeof q->who);
    free(q);
    cn_http_req_set_data(r, NULL);
}

/* Framework-made errors (a malformed request, a body past the cap) in the
 * console's JSON, with its headers. */
static void on_error(cn_http_req_t *r, cn_s3_err_t e, const char *message, void *ctx)
{
    (void)ctx;
    int status = e == CN_S3E_ENTITY_TOO_LARGE ? 413 : cn_s3_err_status(e);
    const char *code = status == 413   ? "TooLarge"
                       : status == 401 ? "Unauthorized"
                       : status == 403 ? "Forbidden"
                       : status == 404 ? "NotFound"
                       : status == 429 ? "TooManyRequests"
                       : status >= 500 ? "InternalError"
                                       : "BadRequest";
    cn__console_respond_error(r, status >= 400 ? status : 400, code,
                              message ? message : cn_s3_err_message(e));
}

/* Mutations and bodies go to the storage pool, reads to the query pool. */
static bool route_reads(const char *method, const char *raw_path, void *ctx)
{
    (void)raw_path;
    (void)ctx;
    return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

/* ---- life ------------------------------------------------------------------------- */

static int64_t env_ms(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*end || errno || n <= 0) {
        cn_warn("console", "%s=%s: want positive milliseconds; using the default", name, v);
        return 0;
    }
    return (int64_t)n;
}

void cn_console_config_env(cn_console_config_t *cfg)
{
    cfg->idle_ms = env_ms("CAIRN_CONSOLE_IDLE_MS");
    cfg->max_ms = env_ms("CAIRN_CONSOLE_MAX_MS");
}

cn_err_t cn_console_register(cn_http_server_t *srv, const cn_console_config_t *cfg,
                             cn_console_t **out)
{
    *out = NULL;
    if (!cfg->meta || !cfg->identity)
        return CN_E_INVALID;
    cn_console_t *con = calloc(1, sizeof *con);
    if (!con)
        return -ENOMEM;
    con->cfg = *cfg;
    con->node = strdup(cfg->node ? cfg->node : "");
    con->s3_base = cfg->s3_base ? strdup(cfg->s3_base) : NULL;
    cn_err_t e = !con->node || (cfg->s3_base && !con->s3_base) ? -ENOMEM : CN_OK;
    con->cfg.node = con->node;
    con->cfg.s3_base = con->s3_base;
    if (!con->cfg.idle_ms)
        con->cfg.idle_ms = 30 * 60 * 1000;
    if (!con->cfg.max_ms)
        con->cfg.max_ms = 12 * 3600 * 1000;
    if (e >= 0)
        e = cn__console_sess_new(con, &con->sess);
    if (e >= 0 && (e = cn__console_ring_start(con)) >= 0)
        con->ring = true;
    cn_http_route_t rt = {
        .name = "console",
        .methods = CN_HTTP_ANY,
        .prefix = CON_ROOT,
        .flags = CN_HTTP_ROUTE_OWN_AUTH_ERRORS,
        .match = route_match,
        .on_request = on_request,
        .on_body = on_body,
        .on_end = on_end,
        .on_cleanup = on_cleanup,
        .error = on_error,
        .ctx = con,
        .max_body = CON_BODY_MAX,
        .reads = route_reads,
    };
    if (e >= 0)
        e = cn_http_server_route(srv, &rt);
    if (e < 0) {
        cn_console_free(con);
        return e;
    }
    *out = con;
    return CN_OK;
}

void cn_console_free(cn_console_t *con)
{
    if (!con)
        return;
    if (con->ring)
        cn__console_ring_stop(con);
    cn__console_sess_free(con->sess);
    free(con->node);
    free(con->s3_base);
    free(con);
}
