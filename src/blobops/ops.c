/* The blob operation family on the HTTP listener (docs/protocol/blobs.md):
 * discovery, the JSON call ops blobs/stat, blobs/have and blobs/delete, and
 * the dispatch of the two channel ops (fetch in fetch.c, put in
 * put.c).  One op table drives both the validation of params and the
 * JSON Schemas that discovery publishes, so the two cannot drift apart.
 *
 * This file never authorizes anything itself: it resolves the credential
 * the framework verified into a principal, and the service decides.
 */
#include "blobops_int.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CN__MOD "blobs"
#define OPS_ROOT "/_cairn/ops"

/* ---- the op table ------------------------------------------------------------ */
typedef enum {
    F_NS,
    F_DIGEST,
    F_DIGESTS,
    F_TOKEN,
    F_RANGES,
    F_LEN,
    F_AFTER,
    F_LIMIT
} ftype_t;

typedef struct {
    const char *name;
    ftype_t type;
    bool required;
    size_t max; /* arrays: most items */
    const char *doc;
} field_t;

typedef struct {
    const char *status_name; /* the declared error's name */
    int status;
    const char *code;
    const char *reason; /* NULL: any string */
} errdecl_t;

typedef struct {
    const char *id;
    const char *path;
    bool internal;
    const char *kind;   /* "call" | "channel" */
    const char *shape;  /* channel shape: "sub" | "sink" */
    const char *action; /* ACL action on the namespace */
    const char *params_in, *result_in, *bytes;
    const field_t *fields;
    size_t nfields;
    const char *result_schema; /* JSON text */
    const errdecl_t *errors;
    size_t nerrors;
    const char *doc;
} opspec_t;

static const field_t stat_fields[] = {
    { "namespace", F_NS, true, 0, "the namespace asked about" },
    { "digest", F_DIGEST, true, 0, "BLAKE3-256 of the blob, lowercase hex" },
};
static const field_t have_fields[] = {
    { "namespace", F_NS, true, 0, "the namespace asked about" },
    { "digests", F_DIGESTS, true, CN_BLOBS_HAVE_MAX,
      "digests to probe; present[] answers by index" },
    { "token", F_TOKEN, false, 0,
      "renewal form: a pin token from blobs/put; exactly one digest accompanies it" },
};
static const field_t delete_fields[] = {
    { "namespace", F_NS, true, 0, "the namespace whose membership loses the digests" },
    { "digests", F_DIGESTS, true, CN_BLOBS_DELETE_MAX, "digests to remove" },
};
static const field_t sub_fields[] = {
    { "namespace", F_NS, true, 0, "the namespace read from" },
    { "digest", F_DIGEST, true, 0, "BLAKE3-256 of the blob, lowercase hex" },
    { "ranges", F_RANGES, false, CN_BLOBS_RANGES_MAX,
      "[offset, length] pairs; over-reads clamp to the blob" },
};
static const field_t put_fields[] = {
    { "namespace", F_NS, true, 0, "the namespace written to" },
    { "digest", F_DIGEST, false, 0, "the digest the bytes must hash to" },
    { "len", F_LEN, false, 0, "the byte count the body must have" },
};

static const field_t list_fields[] = {
    { "namespace", F_NS, true, 0, "the namespace listed" },
    { "after", F_AFTER, false, 0, "continue after this digest (the previous page's next)" },
    { "limit", F_LIMIT, false, CN_BLOBS_LIST_MAX, "most digests in the page (default 1000)" },
};

#define ERR_INVALID                                   \
    {                                                 \
        "INVALID_PARAMS", 400, "invalid_params", NULL \
    }
#define ERR_UNAUTH                                      \
    {                                                   \
        "UNAUTHENTICATED", 401, "unauthenticated", NULL \
    }
#define ERR_DENIED                                  \
    {                                               \
        "ACCESS_DENIED", 403, "access_denied", NULL \
    }
#define ERR_HANDLER                                 \
    {                                               \
        "HANDLER_ERROR", 500, "handler_error", NULL \
    }
#define ERR_UNAVAIL                             \
    {                                           \
        "UNAVAILABLE", 503, "unavailable", NULL \
    }

static const errdecl_t stat_errors[] = {
    ERR_INVALID, ERR_UNAUTH,
    ERR_DENIED,  { "BLOB_MISSING", 404, "blob_missing", "unknown_resource" },
    ERR_HANDLER, ERR_UNAVAIL,
};
static const errdecl_t have_errors[] = { ERR_INVALID, ERR_UNAUTH, ERR_DENIED, ERR_HANDLER,
                                         ERR_UNAVAIL };
static const errdecl_t delete_errors[] = {
    ERR_INVALID, ERR_UNAUTH,  { "ACCESS_DENIED", 403, "access_denied", "operator_only" },
    ERR_HANDLER, ERR_UNAVAIL,
};
static const errdecl_t sub_errors[] = {
    ERR_INVALID,
    ERR_UNAUTH,
    ERR_DENIED,
    { "BLOB_MISSING", 404, "channel:open_failed", "unknown_resource" },
    { "UNVERIFIABLE", 409, "handler_error", "unverifiable" },
    ERR_HANDLER,
    ERR_UNAVAIL,
};
static const errdecl_t put_errors[] = {
    ERR_INVALID,
    ERR_UNAUTH,
    ERR_DENIED,
    { "VERIFICATION_FAILED", 400, "verification_failed", NULL },
    { "TOO_LARGE", 413, "too_large", NULL },
    ERR_HANDLER,
    ERR_UNAVAIL,
};

static const errdecl_t list_errors[] = { ERR_INVALID, ERR_UNAUTH, ERR_DENIED, ERR_HANDLER,
                                         ERR_UNAVAIL };

#define DIGEST_SCHEMA "{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{64}$\"}"
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const opspec_t ops[CN__BH_NOPS] = {
    [CN__BH_STAT] = { "blobs/stat", OPS_ROOT "/blobs/stat", false, "call", NULL, "read", "body",
                      "body", NULL, stat_fields, N(stat_fields),
                      "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"len\"],"
                      "\"properties\":{\"len\":{\"type\":\"integer\",\"minimum\":0}}}",
                      stat_errors, N(stat_errors), "the length of a blob the namespace holds" },
    [CN__BH_HAVE] = { "blobs/have", OPS_ROOT "/blobs/have", false, "call", NULL, "read", "body",
                      "body", NULL, have_fields, N(have_fields),
                      "{\"type\":\"object\",\"additionalProperties\":false,"
                      "\"required\":[\"present\"],\"properties\":{\"present\":{\"type\":\"array\","
                      "\"items\":{\"type\":\"boolean\"}}}}",
                      have_errors, N(have_errors),
                      "which digests the namespace holds; with token, renews that put's pin" },
    [CN__BH_DELETE] = { "blobs/delete", OPS_ROOT "/blobs/delete", true, "call", NULL, "operator",
                        "body", "body", NULL, delete_fields, N(delete_fields),
                        "{\"type\":\"object\",\"additionalProperties\":false,"
                        "\"required\":[\"removed\"],\"properties\":{\"removed\":{\"type\":"
                        "\"integer\",\"minimum\":0}}}",
                        delete_errors, N(delete_errors),
                        "removes digests from a namespace and ends its pins on them" },
    [CN__BH_SUB] = { "channels/blobs/sub", OPS_ROOT "/channels/blobs/sub", false, "channel", "sub",
                     "read", "body", "header Cairn-Open", "response body", sub_fields,
                     N(sub_fields),
                     "{\"type\":\"object\",\"additionalProperties\":false,"
                     "\"required\":[\"source\"],\"properties\":{\"source\":{\"enum\":[\"store\","
                     "\"fanout\"]},\"len\":{\"type\":\"integer\",\"minimum\":0},"
                     "\"slice_digests\":{\"type\":\"array\",\"items\":" DIGEST_SCHEMA "}}}",
                     sub_errors, N(sub_errors),
                     "blobs/fetch: verified bytes of a blob, whole or by ranges" },
    [CN__BH_PUT] = { "blobs/put", OPS_ROOT "/blobs/put", false, "channel", "sink", "write",
                     "header Cairn-Offer", "body", "request body", put_fields, N(put_fields),
                     "{\"type\":\"object\",\"additionalProperties\":false,"
                     "\"required\":[\"token\",\"digest\"],\"properties\":{\"token\":{\"type\":"
                     "\"string\"},\"digest\":" DIGEST_SCHEMA "}}",
                     put_errors, N(put_errors),
                     "streams a blob into a namespace; answers its pin token and digest" },
    [CN__BH_LIST] = { "blobs/list", OPS_ROOT "/blobs/list", false, "call", NULL, "read", "body",
                      "body", NULL, list_fields, N(list_fields),
                      "{\"type\":\"object\",\"additionalProperties\":false,"
                      "\"required\":[\"digests\"],\"properties\":{\"digests\":{\"type\":"
                      "\"array\",\"items\":" DIGEST_SCHEMA "},\"next\":" DIGEST_SCHEMA "}}",
                      list_errors, N(list_errors),
                      "cairn extension: the digests a namespace holds, in pages" },
};

/* ---- errors ------------------------------------------------------------------- */
void cn__bh_error(cn_http_req_t *r, int status, const char *code, const char *reason,
                  const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *v =
        json_pack("{s:{s:s,s:s,s:s}}", "error", "code", code, "reason", reason, "message", msg);
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    if (status == 401)
        (void)cn_http_resp_header(r, "WWW-Authenticate", "Bearer realm=\"cairn\"");
    if (text)
        (void)cn_http_respond(r, status, "application/json", text, strlen(text));
    else
        (void)cn_http_respond(r, 500, "application/json", "{}", 2);
    free(text);
    json_decref(v);
}

/* The one error table: (class, the authorization decision's why for a
 * denial) → (status, code, reason, message).  code NULL is the operation's
 * own BLOB_MISSING code; message NULL is the decision's reason (a denial) or
 * cn_strerror, else a format whose one %s is the subject (or subj when the
 * call names none).  The blobs service has no rule a wire code tells apart
 * beyond its class and the decision (docs/protocol/blobs.md), so it keeps no
 * detail enum of its own; tests/blobops/test_blobops_errors.c walks every
 * denial and every class the service documents. */
#define ANY (-1)
static const cn__bh_err_row_t bh_errors[] = {
    { CN_E_DENIED, CN_WHY_ANONYMOUS, 401, "unauthenticated", "credentials_required", NULL, NULL },
    { CN_E_DENIED, CN_WHY_NS_OPERATOR_ONLY, 403, "access_denied", "operator_only", NULL, NULL },
    { CN_E_DENIED, CN_WHY_TOKEN, 403, "access_denied", "token_permission", NULL, NULL },
    { CN_E_DENIED, ANY, 403, "access_denied", "closed_namespace", NULL, NULL },
    { CN_E_NOT_FOUND, ANY, 404, NULL, "unknown_resource", "%s", "" },
    { CN_E_INVALID, ANY, 400, "invalid_params", "invalid_value", NULL, NULL },
    { CN_E_LIMIT, ANY, 400, "invalid_params", "too_many", NULL, NULL },
    { CN_E_DIGEST_MISMATCH, ANY, 400, "verification_failed", "digest_mismatch",
      "the bytes do not hash to the offered digest", NULL },
    { CN_E_LENGTH_MISMATCH, ANY, 400, "verification_failed", "length_mismatch",
      "the body length differs from the offered len", NULL },
    { CN_E_TOO_LARGE, ANY, 413, "too_large", "blob_too_large", NULL, NULL },
    { CN_E_UNSUPPORTED, ANY, 409, "handler_error", "unverifiable",
      "%s is only in flight: ranged slices cannot be verified yet", "the blob" },
    { CN_E_CORRUPT, ANY, 500, "handler_error", "unverifiable",
      "the stored bytes of %s cannot be verified", "a blob" },
    { CN_E_SHUTDOWN, ANY, 503, "unavailable", "shutting_down", "the server is stopping", NULL },
    { CN_E_DB_LOCKED, ANY, 503, "unavailable", "busy", NULL, NULL },
    { CN_E_UNAVAILABLE, ANY, 503, "unavailable", "backend_unavailable",
      "the blob store's backend does not answer", NULL },
    { CN_E_BUSY, ANY, 503, "unavailable", "busy", NULL, NULL },
    { -ENOSPC, ANY, 507, "handler_error", "no_space", NULL, NULL },
};
#undef ANY

static const cn__bh_err_row_t bh_internal = {
    0, -1, 500, "handler_error", "internal", NULL, NULL,
};

const cn__bh_err_row_t *cn__bh_err_of(cn_err_t e, const cn_blobs_caller_t *c)
{
    int why = c ? (int)c->decision.why : (int)CN_WHY_NO_GRANT;
    const cn__bh_err_row_t *row = &bh_internal;
    for (size_t i = 0; i < sizeof bh_errors / sizeof bh_errors[0]; i++) {
        if (bh_errors[i].cls == e && (bh_errors[i].why < 0 || bh_errors[i].why == why)) {
            row = &bh_errors[i];
            break;
        }
    }
    return row;
}

void cn__bh_error_cn(cn_http_req_t *r, cn_err_t e, const cn_blobs_caller_t *c,
                     const char *miss_code, const char *subject)
{
    const cn__bh_err_row_t *row = cn__bh_err_of(e, c);
    char msg[CN__BH_MSG_MAX];
    if (row->message) /* a format of the table's, never of a peer's */
        snprintf(msg, sizeof msg, row->message, subject ? subject : row->subject);
    else if (e == CN_E_DENIED && c && c->decision.reason[0])
        snprintf(msg, sizeof msg, "%s", c->decision.reason);
    else
        snprintf(msg, sizeof msg, "%s", cn_strerror(e));
    static cn_log_limit_t lim;
    if (row == &bh_internal)
        cn_warn_limited(&lim, CN__MOD, "blob op failed: %s", cn_strerror(e));
    cn__bh_error(r, row->status, row->code ? row->code : miss_code, row->reason, "%s", msg);
}

void cn__bh_json(cn_http_req_t *r, json_t *v)
{
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    if (text)
        (void)cn_http_respond(r, 200, "application/json", text, strlen(text));
    else
        cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
    free(text);
    json_decref(v);
}

/* ---- params validation -------------------------------------------------------- */
static bool digest_ok(json_t *v, cn_digest_t *out)
{
    if (!json_is_string(v) || json_string_length(v) != CN_DIGEST_HEX_LEN)
        return false;
    const char *s = json_string_value(v);
    for (size_t i = 0; i < CN_DIGEST_HEX_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return cn_digest_parse(s, CN_DIGEST_HEX_LEN, out) >= 0;
}

static const char *type_name(ftype_t t)
{
    switch (t) {
    case F_NS:
    case F_DIGEST:
    case F_TOKEN: return "a string";
    case F_DIGESTS: return "an array of digests";
    case F_RANGES: return "an array of [offset, length] pairs";
    case F_LEN: return "a non-negative integer";
    case F_AFTER: return "a digest";
    case F_LIMIT: return "an integer from 1";
    }
    return "?";
}

void cn__bh_params_free(cn__bh_params_t *p)
{
    free(p->digests);
    p->digests = NULL;
}

#define BAD(why, ...)                                   \
    do {                                                \
        snprintf(reason, CN__BH_REASON_MAX, "%s", why); \
        snprintf(msg, CN__BH_MSG_MAX, __VA_ARGS__);     \
        cn__bh_params_free(p);                          \
        return CN_E_INVALID;                            \
    } while (0)

cn_err_t cn__bh_validate(cn__bh_op_t op, json_t *obj, cn__bh_params_t *p,
                         char reason[CN__BH_REASON_MAX], char msg[CN__BH_MSG_MAX])
{
    const opspec_t *o = &ops[op];
    memset(p, 0, sizeof *p);
    p->len = -1;
    p->limit = -1;
    if (!json_is_object(obj))
        BAD("not_an_object", "%s params must be a JSON object", o->id);
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        size_t i = 0;
        while (i < o->nfields && strcmp(o->fields[i].name, key) != 0)
            i++;
        if (i == o->nfields)
            BAD("unknown_field", "%s has no field \"%.64s\"", o->id, key);
    }
    for (size_t i = 0; i < o->nfields; i++) {
        const field_t *f = &o->fields[i];
        v = json_object_get(obj, f->name);
        if (!v) {
            if (f->required)
                BAD("missing_field", "%s needs \"%s\"", o->id, f->name);
            continue;
        }
        switch (f->type) {
        case F_NS:
            if (!json_is_string(v))
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            if (!cn_blobs_ns_valid(json_string_value(v), json_string_length(v)))
                BAD("invalid_namespace",
                    "\"%s\" must be 1-%d bytes of [A-Za-z0-9._/-], not starting with '/'", f->name,
                    CN_NAMESPACE_MAX);
            p->ns = json_string_value(v);
            break;
        case F_DIGEST:
            if (!json_is_string(v))
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            if (!digest_ok(v, &p->digest))
                BAD("malformed_digest", "\"%s\" must be 64 lowercase hex digits", f->name);
            p->has_digest = true;
            break;
        case F_TOKEN:
            if (!json_is_string(v))
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            if (json_string_length(v) == 0 || json_string_length(v) > 256)
                BAD("invalid_value", "\"%s\" must be 1-256 bytes", f->name);
            p->token = json_string_value(v);
            break;
        case F_LEN:
            if (!json_is_integer(v) || json_integer_value(v) < 0)
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            p->len = (int64_t)json_integer_value(v);
            break;
        case F_AFTER:
            if (!json_is_string(v))
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            if (!digest_ok(v, &p->after))
                BAD("malformed_digest", "\"%s\" must be 64 lowercase hex digits", f->name);
            p->has_after = true;
            break;
        case F_LIMIT:
            if (!json_is_integer(v))
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            if (json_integer_value(v) < 1 || json_integer_value(v) > (json_int_t)f->max)
                BAD("invalid_value", "\"%s\" must be 1-%zu", f->name, f->max);
            p->limit = (int64_t)json_integer_value(v);
            break;
        case F_DIGESTS: {
            if (!json_is_array(v))
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            size_t n = json_array_size(v);
            if (n > f->max)
                BAD("too_many", "\"%s\" holds %zu items; at most %zu", f->name, n, f->max);
            p->digests = malloc((n ? n : 1) * sizeof *p->digests);
            if (!p->digests)
                return -ENOMEM;
            for (size_t k = 0; k < n; k++) {
                json_t *e = json_array_get(v, k);
                if (!json_is_string(e))
                    BAD("wrong_type", "\"%s\"[%zu] must be a string", f->name, k);
                if (!digest_ok(e, &p->digests[k]))
                    BAD("malformed_digest", "\"%s\"[%zu] must be 64 lowercase hex digits", f->name,
                        k);
            }
            p->ndigests = n;
            break;
        }
        case F_RANGES: {
            if (!json_is_array(v))
                BAD("wrong_type", "\"%s\" must be %s", f->name, type_name(f->type));
            size_t n = json_array_size(v);
            if (n > f->max)
                BAD("too_many", "\"%s\" holds %zu items; at most %zu", f->name, n, f->max);
            for (size_t k = 0; k < n; k++) {
                json_t *e = json_array_get(v, k);
                json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
                if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(a) ||
                    !json_is_integer(b) || json_integer_value(a) < 0 || json_integer_value(b) < 0)
                    BAD("wrong_type",
                        "\"%s\"[%zu] must be [offset, length], both "
                        "non-negative integers",
                        f->name, k);
                p->ranges[k].off = (uint64_t)json_integer_value(a);
                p->ranges[k].len = (uint64_t)json_integer_value(b);
            }
            p->nranges = n;
            p->has_ranges = true;
            break;
        }
        }
    }
    if (op == CN__BH_HAVE && p->token && p->ndigests != 1)
        BAD("token_needs_one_digest", "the renewal form of blobs/have takes exactly one digest");
    return CN_OK;
}

cn_err_t cn__bh_params(cn_http_req_t *r, cn__bh_op_t op, json_t *obj, cn__bh_params_t *p)
{
    char reason[CN__BH_REASON_MAX], msg[CN__BH_MSG_MAX];
    cn_err_t rc = cn__bh_validate(op, obj, p, reason, msg);
    if (rc == CN_E_INVALID)
        cn__bh_error(r, 400, "invalid_params", reason, "%s", msg);
    else if (rc < 0)
        cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
    return rc < 0 ? CN_E_INVALID : CN_OK;
}

/* ---- schemas and discovery --------------------------------------------------- */
static json_t *field_schema(const field_t *f)
{
    json_t *s = NULL;
    switch (f->type) {
    case F_NS:
        s = json_pack("{s:s,s:i,s:i,s:s}", "type", "string", "minLength", 1, "maxLength",
                      CN_NAMESPACE_MAX, "pattern", "^[A-Za-z0-9._-][A-Za-z0-9._/-]*$");
        break;
    case F_DIGEST: s = json_loads(DIGEST_SCHEMA, 0, NULL); break;
    case F_TOKEN:
        s = json_pack("{s:s,s:i,s:i}", "type", "string", "minLength", 1, "maxLength", 256);
        break;
    case F_LEN: s = json_pack("{s:s,s:i}", "type", "integer", "minimum", 0); break;
    case F_AFTER: s = json_loads(DIGEST_SCHEMA, 0, NULL); break;
    case F_LIMIT:
        s = json_pack("{s:s,s:i,s:I}", "type", "integer", "minimum", 1, "maximum",
                      (json_int_t)f->max);
        break;
    case F_DIGESTS:
        s = json_pack("{s:s,s:o,s:I}", "type", "array", "items", json_loads(DIGEST_SCHEMA, 0, NULL),
                      "maxItems", (json_int_t)f->max);
        break;
    case F_RANGES:
        s = json_pack("{s:s,s:I,s:{s:s,s:i,s:i,s:{s:s,s:i}}}", "type", "array", "maxItems",
                      (json_int_t)f->max, "items", "type", "array", "minItems", 2, "maxItems", 2,
                      "items", "type", "integer", "minimum", 0);
        break;
    }
    if (s)
        json_object_set_new(s, "description", json_string(f->doc));
    return s;
}

static json_t *params_schema(const opspec_t *o)
{
    json_t *props = json_object(), *req = json_array();
    for (size_t i = 0; i < o->nfields; i++) {
        json_object_set_new(props, o->fields[i].name, field_schema(&o->fields[i]));
        if (o->fields[i].required)
            json_array_append_new(req, json_string(o->fields[i].name));
    }
    return json_pack("{s:s,s:b,s:o,s:o}", "type", "object", "additionalProperties", 0, "required",
                     req, "properties", props);
}

static json_t *error_schema(const errdecl_t *e)
{
    json_t *code = json_pack("{s:s}", "const", e->code);
    json_t *reason =
        e->reason ? json_pack("{s:s}", "const", e->reason) : json_pack("{s:s}", "type", "string");
    json_t *schema =
        json_pack("{s:s,s:b,s:[s],s:{s:{s:s,s:b,s:[s,s,s],s:{s:o,s:o,s:{s:s}}}}}", "type", "object",
                  "additionalProperties", 0, "required", "error", "properties", "error", "type",
                  "object", "additionalProperties", 0, "required", "code", "reason", "message",
                  "properties", "code", code, "reason", reason, "message", "type", "string");
    return json_pack("{s:s,s:i,s:o}", "name", e->status_name, "status", e->status, "schema",
                     schema);
}

static json_t *op_json(const opspec_t *o)
{
    json_t *errs = json_array();
    for (size_t i = 0; i < o->nerrors; i++)
        json_array_append_new(errs, error_schema(&o->errors[i]));
    json_t *carriage = json_pack("{s:s,s:s,s:s,s:s}", "method", "POST", "path", o->path, "params",
                                 o->params_in, "result", o->result_in);
    if (o->bytes)
        json_object_set_new(carriage, "bytes", json_string(o->bytes));
    json_t *v =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o}", "id", o->id, "kind", o->kind,
                  "visibility", o->internal ? "Internal" : "External", "action", o->action,
                  "description", o->doc, "params", params_schema(o), "result",
                  json_loads(o->result_schema, 0, NULL), "errors", errs, "carriage", carriage);
    if (v && o->shape)
        json_object_set_new(v, "shape", json_string(o->shape));
    return v;
}

static json_t *discovery(bool with_internal)
{
    json_t *list = json_array();
    for (int i = 0; i < CN__BH_NOPS; i++)
        if (with_internal || !ops[i].internal)
            json_array_append_new(list, op_json(&ops[i]));
    return json_pack("{s:s,s:s,s:o}", "family", "blobs", "digest", "blake3-256", "ops", list);
}

/* ---- credentials ------------------------------------------------------------- */
static const char *auth_reason(cn_s3_err_t e)
{
    switch (e) {
    case CN_S3E_SIGNATURE_DOES_NOT_MATCH: return "bad_signature";
    case CN_S3E_INVALID_ACCESS_KEY_ID: return "unknown_token";
    case CN_S3E_REQUEST_TIME_TOO_SKEWED: return "clock_skew";
    case CN_S3E_EXPIRED_REQUEST: return "expired";
    default: return "bad_credentials";
    }
}

/* Resolves the verified credential into q->principal; responds on failure. */
static bool resolve(cn_http_req_t *r, cn__bh_req_t *q)
{
    cn_s3_err_t ae = cn_http_req_auth_error(r);
    if (ae == CN_S3E_SERVICE_UNAVAILABLE) { /* the credential store is down: retry */
        cn__bh_error(r, 503, "unavailable", "busy", "%s", cn_s3_err_message(ae));
        return false;
    }
    if (ae != CN_S3E_NONE) {
        cn__bh_error(r, 401, "unauthenticated", auth_reason(ae), "%s", cn_s3_err_message(ae));
        return false;
    }
    if (cn_http_req_auth(r) == CN_HTTP_AUTH_ANONYMOUS) {
        q->anonymous = true;
        return true;
    }
    uint8_t secret[CN_SECRET_MAX];
    size_t slen = 0;
    cn_err_t rc = cn_identity_lookup_secret(q->h->id, cn_http_req_access_key(r), secret,
                                            sizeof secret, &slen, &q->principal);
    explicit_bzero(secret, sizeof secret);
    if (rc < 0) {
        if (rc == CN_E_AUTH)
            cn__bh_error(r, 401, "unauthenticated", "unknown_token", "the token is not active");
        else
            cn__bh_error_cn(r, rc, NULL, "blob_missing", NULL);
        return false;
    }
    if (cn_identity_rate_take(q->h->id, q->principal.token_id) == CN_E_RATE_LIMITED) {
        (void)cn_http_resp_header(r, "Retry-After", "1");
        cn__bh_error(r, 503, "unavailable", "rate_limited", "slow down");
        return false;
    }
    return true;
}

void cn__bh_caller(cn__bh_req_t *q, cn_blobs_caller_t *c)
{
    memset(c, 0, sizeof *c);
    c->principal = q->anonymous ? NULL : &q->principal;
}

/* ---- the route ------------------------------------------------------------------ */
static int op_for_path(const char *path)
{
    for (int i = 0; i < CN__BH_NOPS; i++)
        if (!strcmp(path, ops[i].path))
            return i;
    return -2;
}

/* The route's pool hint (cn_http_route_t.reads): discovery and the ops
 * whose namespace action is "read" (stat, have, list, fetch). */
static bool op_reads(const char *method, const char *raw_path, void *ctx)
{
    (void)ctx;
    if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
        return true;
    int op = op_for_path(raw_path);
    return op >= 0 && !strcmp(ops[op].action, "read");
}

static int on_request(cn_http_req_t *r, void *ctx)
{
    cn__bh_t *h = ctx;
    const char *path = cn_http_req_path(r, NULL);
    bool root = !strcmp(path, OPS_ROOT) || !strcmp(path, OPS_ROOT "/");
    int op = root ? -1 : op_for_path(path);
    if (op == -2) {
        cn__bh_error(r, 404, "unknown_op", "unknown_op", "no op is served at %.200s", path);
        return 0;
    }
    unsigned want = op == -1 ? (CN_HTTP_GET | CN_HTTP_HEAD) : CN_HTTP_POST;
    if (!(cn_http_req_method_bit(r) & want)) {
        (void)cn_http_resp_header(r, "Allow", op == -1 ? "GET, HEAD" : "POST");
        cn__bh_error(r, 405, "method_not_allowed", "method_not_allowed", "%s takes %s",
                     op == -1 ? "discovery" : ops[op].id, op == -1 ? "GET" : "POST");
        return 0;
    }
    cn__bh_req_t *q = calloc(1, sizeof *q);
    if (!q) {
        cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
        return 0;
    }
    q->h = h;
    q->op = op;
    q->put_err = CN_OK;
    cn_http_req_set_data(r, q);
    if (!resolve(r, q))
        return 0;
    if (op == -1) {
        bool operator= !q->anonymous &&(q->principal.perms &CN_PERM_ADMIN);
        cn__bh_json(r, json_incref(operator? h->discovery_all : h->discovery_ext));
        return 0;
    }
    if (op == CN__BH_PUT)
        return cn__bh_put_request(r, q);
    int64_t len = cn_http_req_payload_length(r);
    if (len > (int64_t)CN__BH_JSON_MAX) {
        cn__bh_error(r, 413, "too_large", "params_too_large", "%s params exceed %u bytes",
                     ops[op].id, CN__BH_JSON_MAX);
        return 0;
    }
    return 0;
}

static int on_body(cn_http_req_t *r, const uint8_t *p, size_t n, void *ctx)
{
    (void)ctx;
    cn__bh_req_t *q = cn_http_req_data(r);
    if (q->op == CN__BH_PUT)
        return cn__bh_put_body(r, q, p, n);
    if (q->body.len + n > CN__BH_JSON_MAX) {
        cn__bh_error(r, 413, "too_large", "params_too_large", "%s params exceed %u bytes",
                     ops[q->op].id, CN__BH_JSON_MAX);
        return 0; /* answered: the framework drains the rest */
    }
    return cn_buf_append(&q->body, p, n) < 0 ? -ENOMEM : 0;
}

static void call_op(cn_http_req_t *r, cn__bh_req_t *q)
{
    cn__bh_params_t *p = &q->params;
    cn_blobs_caller_t c;
    cn__bh_caller(q, &c);
    char hex[CN_DIGEST_HEX_LEN + 1];
    switch (q->op) {
    case CN__BH_STAT: {
        uint64_t len = 0;
        cn_digest_hex(&p->digest, hex);
        cn_err_t rc = cn_blobs_stat(q->h->b, &c, p->ns, &p->digest, &len);
        if (rc < 0)
            cn__bh_error_cn(r, rc, &c, "blob_missing", hex);
        else
            cn__bh_json(r, json_pack("{s:I}", "len", (json_int_t)len));
        return;
    }
    case CN__BH_HAVE: {
        bool *present = malloc((p->ndigests ? p->ndigests : 1) * sizeof *present);
        if (!present) {
            cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
            return;
        }
        cn_err_t rc = cn_blobs_have(q->h->b, &c, p->ns, p->digests, p->ndigests, p->token, present);
        if (rc < 0) {
            cn__bh_error_cn(r, rc, &c, "blob_missing", NULL);
        } else {
            /* Written directly: at 16,384 digests a JSON tree costs more than the lookups. */
            cn_buf_t out = { 0 };
            cn_err_t e = cn_buf_reserve(&out, 16 + 6 * p->ndigests);
            if (e >= 0)
                e = cn_buf_append_str(&out, "{\"present\":[");
            for (size_t i = 0; e >= 0 && i < p->ndigests; i++)
                e = cn_buf_append_str(&out, present[i] ? (i ? ",true" : "true")
                                                       : (i ? ",false" : "false"));
            if (e >= 0)
                e = cn_buf_append_str(&out, "]}");
            if (e >= 0)
                (void)cn_http_respond_buf(r, 200, "application/json", &out);
            else
                cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
            cn_buf_free(&out);
        }
        free(present);
        return;
    }
    case CN__BH_DELETE: {
        size_t removed = 0;
        cn_err_t rc = cn_blobs_delete(q->h->b, &c, p->ns, p->digests, p->ndigests, &removed);
        if (rc < 0)
            cn__bh_error_cn(r, rc, &c, "blob_missing", NULL);
        else
            cn__bh_json(r, json_pack("{s:I}", "removed", (json_int_t)removed));
        return;
    }
    case CN__BH_SUB: cn__bh_sub(r, q); return;
    case CN__BH_LIST: {
        size_t max = p->limit > 0 ? (size_t)p->limit : 1000, n = 0;
        bool more = false;
        cn_digest_t *out = malloc(max * sizeof *out);
        if (!out) {
            cn__bh_error(r, 500, "handler_error", "internal", "out of memory");
            return;
        }
        cn_err_t rc =
            cn_blobs_list(q->h->b, &c, p->ns, p->has_after ? &p->after : NULL, max, out, &n, &more);
        if (rc < 0) {
            cn__bh_error_cn(r, rc, &c, "blob_missing", NULL);
        } else {
            json_t *arr = json_array();
            for (size_t i = 0; arr && i < n; i++) {
                cn_digest_hex(&out[i], hex);
                json_array_append_new(arr, json_string(hex));
            }
            json_t *v = json_pack("{s:o}", "digests", arr);
            if (v && more) {
                cn_digest_hex(&out[n - 1], hex);
                json_object_set_new(v, "next", json_string(hex));
            }
            cn__bh_json(r, v);
        }
        free(out);
        return;
    }
    }
}

static void on_end(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    cn__bh_req_t *q = cn_http_req_data(r);
    if (!q)
        return;
    if (q->op == CN__BH_PUT) {
        cn__bh_put_end(r, q);
        return;
    }
    if (cn_http_req_body_error(r) != CN_S3E_NONE)
        return; /* the framework answers it (route error) */
    json_error_t jerr;
    q->json = json_loadb(q->body.data ? (const char *)q->body.data : "", q->body.len,
                         JSON_REJECT_DUPLICATES, &jerr);
    if (!q->json) {
        cn__bh_error(r, 400, "invalid_params", "malformed_json", "%s params: %s at %d:%d",
                     ops[q->op].id, jerr.text, jerr.line, jerr.column);
        return;
    }
    if (cn__bh_params(r, (cn__bh_op_t)q->op, q->json, &q->params) < 0)
        return;
    call_op(r, q);
}

static void on_cleanup(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    cn__bh_req_t *q = cn_http_req_data(r);
    if (!q)
        return;
    cn_blobs_put_abort(q->put);
    cn__bh_params_free(&q->params);
    json_decref(q->json);
    cn_buf_free(&q->body);
    free(q);
}

/* Framework-generated errors (bad credentials, body framing, size caps) in
 * the family's JSON shape. */
static void on_error(cn_http_req_t *r, cn_s3_err_t e, const char *message, void *ctx)
{
    (void)ctx;
    int status = cn_s3_err_status(e);
    const char *msg = message ? message : cn_s3_err_message(e);
    switch (e) {
    case CN_S3E_SIGNATURE_DOES_NOT_MATCH:
    case CN_S3E_INVALID_ACCESS_KEY_ID:
    case CN_S3E_REQUEST_TIME_TOO_SKEWED:
    case CN_S3E_EXPIRED_REQUEST:
    case CN_S3E_AUTH_HEADER_MALFORMED:
    case CN_S3E_AUTH_QUERY_MALFORMED:
        cn__bh_error(r, 401, "unauthenticated", auth_reason(e), "%s", msg);
        return;
    case CN_S3E_ENTITY_TOO_LARGE:
        cn__bh_error(r, 413, "too_large", "body_too_large", "%s", msg);
        return;
    case CN_S3E_INTERNAL_ERROR:
        cn__bh_error(r, 500, "handler_error", "internal", "%s", msg);
        return;
    case CN_S3E_SLOW_DOWN:
    case CN_S3E_SERVICE_UNAVAILABLE: cn__bh_error(r, 503, "unavailable", "busy", "%s", msg); return;
    default:
        cn__bh_error(r, status >= 400 ? status : 400, "bad_request", cn_s3_err_code(e), "%s", msg);
        return;
    }
}

/* A failure a callback returned (cn_http_route_t.err_of): answered here,
 * through the one error table, in the family's JSON. */
static cn_s3_err_t on_failure(cn_http_req_t *r, cn_err_t rc, void *ctx)
{
    (void)ctx;
    cn__bh_error_cn(r, rc, NULL, "blob_missing", NULL);
    return CN_S3E_NONE;
}

void cn_blobs_http_free(cn_blobs_http_t *h)
{
    if (!h)
        return;
    json_decref(h->discovery_ext);
    json_decref(h->discovery_all);
    free(h);
}

static void metrics(cn_buf_t *out, void *ctx)
{
    cn__bh_t *h = ctx;
    cn_blobs_counters_t k;
    cn_blobs_counters(h->b, &k);
    (void)cn_buf_printf(
        out,
        "# TYPE cairn_blobs_puts_total counter\ncairn_blobs_puts_total %llu\n"
        "# TYPE cairn_blobs_put_bytes_total counter\ncairn_blobs_put_bytes_total %llu\n"
        "# TYPE cairn_blobs_fetches_total counter\n"
        "cairn_blobs_fetches_total{source=\"store\"} %llu\n"
        "cairn_blobs_fetches_total{source=\"fanout\"} %llu\n"
        "# TYPE cairn_blobs_misses_total counter\ncairn_blobs_misses_total %llu\n"
        "# TYPE cairn_blobs_taps_dropped_total counter\ncairn_blobs_taps_dropped_total %llu\n"
        "# TYPE cairn_blobs_broadcasts_total counter\ncairn_blobs_broadcasts_total %llu\n"
        "# TYPE cairn_blobs_pin_tokens gauge\ncairn_blobs_pin_tokens %llu\n",
        (unsigned long long)k.puts, (unsigned long long)k.put_bytes,
        (unsigned long long)k.fetches_store, (unsigned long long)k.fetches_fanout,
        (unsigned long long)k.misses, (unsigned long long)k.taps_dropped,
        (unsigned long long)k.broadcasts, (unsigned long long)k.tokens);
}

cn_err_t cn_blobs_http_register(cn_http_server_t *srv, cn_blobs_t *b, cn_identity_t *id,
                                cn_blobs_http_t **out)
{
    *out = NULL;
    cn__bh_t *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->b = b;
    h->id = id;
    h->discovery_ext = discovery(false);
    h->discovery_all = discovery(true);
    if (!h->discovery_ext || !h->discovery_all) {
        cn_blobs_http_free(h);
        return -ENOMEM;
    }
    cn_http_route_t rt = {
        .name = "blobs",
        .methods = CN_HTTP_ANY,
        .prefix = OPS_ROOT,
        .flags = CN_HTTP_ROUTE_OWN_AUTH_ERRORS,
        .on_request = on_request,
        .on_body = on_body,
        .on_end = on_end,
        .on_cleanup = on_cleanup,
        .error = on_error,
        .err_of = on_failure,
        .ctx = h,
        .max_body = UINT64_C(1) << 40,
        .reads = op_reads,
    };
    cn_err_t rc = cn_http_server_route(srv, &rt);
    if (rc >= 0)
        rc = cn_http_server_metrics_source(srv, metrics, h);
    if (rc < 0) {
        cn_blobs_http_free(h);
        return rc;
    }
    *out = h;
    return CN_OK;
}
