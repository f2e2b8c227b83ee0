/* The S3 face's route: who asks, what is named, which operation answers
 * (include/cairn/s3.h), and the helpers every operation shares.
 *
 * Addressing: path style ("/bucket/key") always; virtual-host style
 * ("bucket.DOMAIN", key = the whole path) when a domain is configured.  The
 * operation is chosen from the method, whether a bucket and a key are named,
 * and the subresource query parameters; a subresource cairn does not serve
 * answers NotImplemented rather than being mistaken for a plain request. */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CN__MOD "s3"

/* ---- the face --------------------------------------------------------------- */

cn_err_t cn_s3_new(const cn_s3_config_t *cfg, cn_s3_t **out)
{
    *out = NULL;
    if (!cfg || !cfg->objects || !cfg->identity)
        return CN_E_INVALID;
    cn_s3_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->objects = cfg->objects;
    s->identity = cfg->identity;
    s->min_part_size = cfg->min_part_size ? cfg->min_part_size : CN_S3_MIN_PART_SIZE;
    if (cfg->domain && *cfg->domain) {
        const char *d = cfg->domain;
        while (*d == '.')
            d++;
        s->domain = strdup(d);
        if (!s->domain)
            goto nomem;
        for (char *p = s->domain; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        s->domain_len = strlen(s->domain);
    }
    if (cfg->region && *cfg->region && !(s->region = strdup(cfg->region)))
        goto nomem;
    *out = s;
    return CN_OK;
nomem:
    cn_s3_free(s);
    return -ENOMEM;
}

void cn_s3_free(cn_s3_t *s3)
{
    if (!s3)
        return;
    free(s3->domain);
    free(s3->region);
    free(s3);
}

/* The secret of an access key (a token id) and its principal (out may be
 * NULL), from the identity's cache only when cached (CN_E_AGAIN on a miss). */
static cn_err_t secret_of(void *identity, const char *access_key, uint8_t *secret, size_t cap,
                          size_t *len, cn_principal_t *out, bool cached)
{
    return cn_identity_lookup_tagged(identity, access_key, cached, secret, cap, len, NULL, out);
}

/* For SigV4, an unknown or unusable key is "not found"; the secret comes
 * with the identity's tag of it, which keys the signing-key cache, from the
 * identity's cache only when cached (CN_E_AGAIN on a miss). */
static int sigv4_secret(void *identity, const char *access_key, uint8_t *secret, size_t cap,
                        size_t *len, uint8_t tag[CN_SIGV4_TAG_LEN], bool cached)
{
    _Static_assert(CN_SIGV4_TAG_LEN == CN_IDENTITY_TAG_LEN, "one tag length");
    cn_err_t e =
        cn_identity_lookup_tagged(identity, access_key, cached, secret, cap, len, tag, NULL);
    return e == CN_E_AUTH ? CN_E_NOT_FOUND : e;
}

int cn_s3_sigv4_lookup(void *identity, const char *access_key, uint8_t *secret, size_t cap,
                       size_t *len, uint8_t tag[CN_SIGV4_TAG_LEN])
{
    return sigv4_secret(identity, access_key, secret, cap, len, tag, false);
}

int cn_s3_sigv4_lookup_cached(void *identity, const char *access_key, uint8_t *secret, size_t cap,
                              size_t *len, uint8_t tag[CN_SIGV4_TAG_LEN])
{
    return sigv4_secret(identity, access_key, secret, cap, len, tag, true);
}

int cn_s3_bearer_check(void *identity, const char *token_id, const char *secret)
{
    char cred[CN_CREDENTIAL_MAX];
    int n = snprintf(cred, sizeof cred, "%s:%s", token_id, secret);
    if (n < 0 || (size_t)n >= sizeof cred)
        return CN_E_AUTH;
    cn_principal_t p;
    cn_err_t e = cn_identity_authenticate(identity, cred, (size_t)n, &p);
    memset(cred, 0, sizeof cred);
    return e;
}

/* ---- shared helpers ---------------------------------------------------------------- */

void cn__s3_error(cn__s3_rq_t *q, cn_s3_err_t e, const char *message)
{
    if (cn_http_req_on_loop(q->r)) {
        cn_http_req_decline(q->r); /* errors are answered by a worker, one way */
        return;
    }
    if (cn_http_req_responded(q->r))
        return;
    if (q->head) {
        cn_http_resp_header(q->r, "x-amz-error-code", cn_s3_err_code(e));
        cn_http_respond_empty(q->r, cn_s3_err_status(e), 0);
        return;
    }
    cn_http_respond_s3_error(q->r, e, message);
}

/* The one error table: (class, what, objects detail) → S3 code, first match
 * wins.  Every objects detail has its row (tests/s3/test_s3_errors.c walks
 * them); a failure without a detail maps by class and what. */
#define ANY CN_OBJ_WHAT_ANY
static const cn_obj_err_row_t s3_errors[] = {
    /* by rule */
    { CN_E_INVALID, ANY, CN_OBJ_BUCKET_NAME_INVALID, CN_S3E_INVALID_BUCKET_NAME },
    { CN_E_INVALID, ANY, CN_OBJ_KEY_INVALID, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_KEY_TOO_LONG, CN_S3E_KEY_TOO_LONG },
    { CN_E_INVALID, ANY, CN_OBJ_CONTENT_TYPE_TOO_LONG, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_METADATA_KEY_INVALID, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_METADATA_TOO_LARGE, CN_S3E_METADATA_TOO_LARGE },
    { CN_E_INVALID, ANY, CN_OBJ_CHECKSUM_ALG_INVALID, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_LIST_ARG_INVALID, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_PART_NUMBER_INVALID, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_PART_LIST_INVALID, CN_S3E_INVALID_PART },
    { CN_E_INVALID, ANY, CN_OBJ_PART_ORDER, CN_S3E_INVALID_PART_ORDER },
    { CN_E_INVALID, ANY, CN_OBJ_PART_MISSING, CN_S3E_INVALID_PART },
    { CN_E_INVALID, ANY, CN_OBJ_PART_ETAG_MISMATCH, CN_S3E_INVALID_PART },
    { CN_E_INVALID, ANY, CN_OBJ_PART_TOO_SMALL, CN_S3E_ENTITY_TOO_SMALL },
    { CN_E_INVALID, ANY, CN_OBJ_POLICY_INVALID, CN_S3E_MALFORMED_POLICY },
    { CN_E_INVALID, ANY, CN_OBJ_SETTING_NAME_INVALID, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_LOCK_NOT_ENABLED, CN_S3E_INVALID_REQUEST },
    { CN_E_NOT_FOUND, ANY, CN_OBJ_LOCK_UNSET, CN_S3E_NO_SUCH_OBJECT_LOCK_CONFIG },
    { CN_E_DENIED, ANY, CN_OBJ_LOCK_RETAINED, CN_S3E_ACCESS_DENIED },
    { CN_E_INVALID, ANY, CN_OBJ_LOCK_DATE_PAST, CN_S3E_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_VERSION_ID_INVALID, CN_S3E_INVALID_ARGUMENT },
    { CN_E_NOT_FOUND, ANY, CN_OBJ_NO_SUCH_VERSION, CN_S3E_NO_SUCH_VERSION },
    { CN_E_UNSUPPORTED, ANY, CN_OBJ_VERSION_IS_MARKER, CN_S3E_METHOD_NOT_ALLOWED },
    { CN_E_DENIED, ANY, CN_OBJ_VERSION_LOCKED, CN_S3E_ACCESS_DENIED },
    { CN_E_INVALID, ANY, CN_OBJ_VERSIONING_STATE_INVALID, CN_S3E_MALFORMED_XML },
    { CN_E_CONFLICT, ANY, CN_OBJ_BUCKET_STATE_INVALID, CN_S3E_INVALID_BUCKET_STATE },
    { CN_E_INVALID, ANY, CN_OBJ_TAGS_INVALID, CN_S3E_INVALID_TAG },
    { CN_E_INVALID, ANY, CN_OBJ_LIFECYCLE_INVALID, CN_S3E_INVALID_ARGUMENT },
    /* The handlers answer their configuration's own NoSuch* before this. */
    { CN_E_NOT_FOUND, ANY, CN_OBJ_SETTING_UNSET, CN_S3E_NO_SUCH_KEY },
    /* by class and what */
    { CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, 0, CN_S3E_NO_SUCH_BUCKET },
    { CN_E_NOT_FOUND, CN_OBJ_WHAT_UPLOAD, 0, CN_S3E_NO_SUCH_UPLOAD },
    { CN_E_NOT_FOUND, CN_OBJ_WHAT_PART, 0, CN_S3E_INVALID_PART },
    { CN_E_NOT_FOUND, ANY, 0, CN_S3E_NO_SUCH_KEY },
    { CN_E_INVALID, CN_OBJ_WHAT_BUCKET, 0, CN_S3E_INVALID_BUCKET_NAME },
    { CN_E_INVALID, CN_OBJ_WHAT_PART, 0, CN_S3E_INVALID_PART },
    { CN_E_INVALID, ANY, 0, CN_S3E_INVALID_ARGUMENT },
    /* by class */
    { CN_E_EXISTS, ANY, 0, CN_S3E_BUCKET_ALREADY_EXISTS },
    { CN_E_NOT_EMPTY, ANY, 0, CN_S3E_BUCKET_NOT_EMPTY },
    { CN_E_DENIED, ANY, 0, CN_S3E_ACCESS_DENIED },
    { CN_E_AUTH, ANY, 0, CN_S3E_ACCESS_DENIED },
    { CN_E_TOO_LARGE, ANY, 0, CN_S3E_ENTITY_TOO_LARGE },
    { CN_E_DIGEST_MISMATCH, ANY, 0, CN_S3E_BAD_DIGEST },
    { CN_E_LENGTH_MISMATCH, ANY, 0, CN_S3E_INCOMPLETE_BODY },
    { CN_E_PRECONDITION, ANY, 0, CN_S3E_PRECONDITION_FAILED },
    { CN_E_NOT_MODIFIED, ANY, 0, CN_S3E_NOT_MODIFIED },
    { CN_E_CONFLICT, ANY, 0, CN_S3E_CONDITIONAL_CONFLICT },
    { CN_E_NO_UPLOAD, ANY, 0, CN_S3E_NO_SUCH_UPLOAD },
    { CN_E_RANGE, ANY, 0, CN_S3E_INVALID_RANGE },
    { CN_E_RATE_LIMITED, ANY, 0, CN_S3E_SLOW_DOWN },
    { CN_E_BUSY, ANY, 0, CN_S3E_SLOW_DOWN },
    /* retryable, as blobs and Scribe say busy */
    { CN_E_SHUTDOWN, ANY, 0, CN_S3E_SERVICE_UNAVAILABLE },
    { CN_E_DB_LOCKED, ANY, 0, CN_S3E_SERVICE_UNAVAILABLE },
    { CN_E_UNAVAILABLE, ANY, 0, CN_S3E_SERVICE_UNAVAILABLE }, /* the blob tier's backend */
    { CN_E_UNSUPPORTED, ANY, 0, CN_S3E_NOT_IMPLEMENTED },
};
#undef ANY

cn_s3_err_t cn_s3_err_from(const cn_objects_req_t *rq, cn_err_t err)
{
    return (cn_s3_err_t)cn_objects_err_lookup(s3_errors, sizeof s3_errors / sizeof s3_errors[0], rq,
                                              err, CN_S3E_INTERNAL_ERROR);
}

cn_s3_err_t cn__s3_err_of(const cn_objects_req_t *orq, cn_err_t err)
{
    return cn_s3_err_from(orq, err);
}

void cn__s3_fail(cn__s3_rq_t *q, cn_err_t err)
{
    if (cn_http_req_on_loop(q->r)) {
        cn_http_req_decline(q->r); /* logged once, by the worker that answers it */
        return;
    }
    cn_s3_err_t e = cn__s3_err_of(&q->orq, err);
    const char *msg = q->orq.fail.message[0] ? q->orq.fail.message : NULL;
    if (e == CN_S3E_INTERNAL_ERROR || err == CN_E_DB_LOCKED) {
        static cn_log_limit_t lim;
        cn_warn_limited(&lim, CN__MOD, "%s %s: %s (%s) [%s]", cn_http_req_method(q->r),
                        cn_http_req_path(q->r, NULL), cn_strerror(err), q->orq.fail.message,
                        cn_http_req_id(q->r));
        msg = NULL; /* internal detail stays in the log */
    } else if (e == CN_S3E_ACCESS_DENIED) {
        cn_info(CN__MOD, "denied %s %s for %s: %s [%s]", cn_http_req_method(q->r),
                cn_http_req_path(q->r, NULL), q->anonymous ? "anonymous" : q->principal.account,
                q->orq.fail.message, cn_http_req_id(q->r));
        msg = NULL; /* the reason is for the operator, not the caller */
    }
    if (q->orq.side == CN_OBJ_SIDE_SOURCE && msg) {
        char m[300];
        snprintf(m, sizeof m, "source: %s", msg);
        cn__s3_error(q, e, m);
        return;
    }
    cn__s3_error(q, e, msg);
}

void cn__s3_xml(cn__s3_rq_t *q, int status, cn_xml_writer_t *w)
{
    cn_err_t e = cn_xml_finish(w);
    if (e) {
        cn_buf_free(w->out);
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return;
    }
    cn_http_respond_buf(q->r, status ? status : 200, "application/xml", w->out);
    cn_buf_free(w->out);
}

void cn__s3_answer_doc(cn__s3_rq_t *q, cn_err_t e, cn_buf_t *doc, cn_s3_err_t unset)
{
    if (e >= 0)
        cn_http_respond_buf(q->r, 200, "application/xml", doc);
    else if (e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)
        cn__s3_error(q, unset, NULL);
    else
        cn__s3_fail(q, e);
    cn_buf_free(doc);
}

void cn__s3_answer_done(cn__s3_rq_t *q, cn_err_t e, int status)
{
    if (e < 0)
        cn__s3_fail(q, e);
    else
        cn_http_respond_empty(q->r, status, 0);
}

void cn__s3_setting_get(cn__s3_rq_t *q, const char *attr, cn_authz_action_t act, cn_s3_err_t unset)
{
    cn_buf_t v = { 0 };
    cn_err_t e = cn_objects_bucket_attr_get(q->s3->objects, &q->orq, q->bucket, attr, act, &v);
    cn__s3_answer_doc(q, e, &v, unset);
}

void cn__s3_setting_delete(cn__s3_rq_t *q, const char *attr, cn_authz_action_t act)
{
    cn_err_t e = cn_objects_bucket_attr_set(q->s3->objects, &q->orq, q->bucket, attr, act, NULL, 0);
    if (e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)
        e = 0; /* deleting what is not set is still a success */
    cn__s3_answer_done(q, e, 204);
}

static const char *const cn__mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

/* Through the project's one date formatter, which takes no time-zone lock
 * (gmtime_r did, on every answer's Last-Modified). */
void cn__s3_http_date(int64_t unix_ms, char out[CN__S3_HTTP_DATE_MAX])
{
    char d[CN_DATE_MAX];
    size_t n = cn_date_format(unix_ms, CN_DATE_IMF, d);
    if (n >= CN__S3_HTTP_DATE_MAX)
        n = CN__S3_HTTP_DATE_MAX - 1;
    memcpy(out, d, n);
    out[n] = 0;
}

void cn__s3_iso_date(int64_t unix_ms, char out[CN_RFC3339_LEN])
{
    cn_rfc3339(unix_ms, out);
}

static int month(const char *m)
{
    for (int i = 0; i < 12; i++)
        if (strncasecmp(m, cn__mon[i], 3) == 0)
            return i;
    return -1;
}

bool cn__s3_parse_http_date(const char *s, int64_t *unix_ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    char mon[4] = { 0 }, wd[16] = { 0 };
    int d, y, H, M, S, n = 0;
    while (*s == ' ')
        s++;
    if (sscanf(s, "%15[A-Za-z], %d %3s %d %d:%d:%d GMT%n", wd, &d, mon, &y, &H, &M, &S, &n) == 7 &&
        n > 0) {
        /* RFC 1123: "Sun, 06 Nov 1994 08:49:37 GMT" */
    } else if (sscanf(s, "%15[A-Za-z], %d-%3s-%d %d:%d:%d GMT%n", wd, &d, mon, &y, &H, &M, &S,
                      &n) == 7 &&
               n > 0) {
        /* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years: 70..99 are 19xx) */
        if (y < 100)
            y += y < 70 ? 2000 : 1900;
    } else if (sscanf(s, "%15s %3s %d %d:%d:%d %d%n", wd, mon, &d, &H, &M, &S, &y, &n) == 7 &&
               n > 0) {
        /* asctime: "Sun Nov  6 08:49:37 1994" */
    } else {
        return false;
    }
    int m = month(mon);
    if (m < 0 || d < 1 || d > 31 || H > 23 || M > 59 || S > 60 || y < 1970 || y > 9999)
        return false;
    tm.tm_year = y - 1900;
    tm.tm_mon = m;
    tm.tm_mday = d;
    tm.tm_hour = H;
    tm.tm_min = M;
    tm.tm_sec = S;
    *unix_ms = (int64_t)timegm(&tm) * 1000;
    return true;
}

/* What snprintf(out, CN__S3_ETAG_MAX, "\"%s\"", etag) writes, cut the same
 * way, without printf's machinery (every PUT's answer quotes one). */
void cn__s3_quote_etag(const char *etag, char out[CN__S3_ETAG_MAX])
{
    const size_t cap = CN__S3_ETAG_MAX - 1; /* characters before the NUL */
    size_t n = etag ? strnlen(etag, cap) : 0;
    size_t k = n < cap - 1 ? n : cap - 1, len = 1;
    out[0] = '"';
    memcpy(out + 1, etag ? etag : "", k);
    len += k;
    if (len < cap)
        out[len++] = '"';
    out[len] = 0;
}

bool cn__s3_put_commit(cn__s3_rq_t *q, cn_objects_put_t **put, cn_objects_put_result_t *res,
                       char etag[CN__S3_ETAG_MAX])
{
    cn_objects_put_t *p = *put;
    *put = NULL;
    cn_err_t e = cn_objects_put_commit(p, res);
    if (e < 0) {
        cn__s3_fail(q, e);
        return false;
    }
    cn__s3_quote_etag(res->etag, etag);
    return true;
}

void cn__s3_copy_result(cn__s3_rq_t *q, const char *root, const cn_objects_put_result_t *res)
{
    char etag[CN__S3_ETAG_MAX], date[CN_RFC3339_LEN];
    cn__s3_quote_etag(res->etag, etag);
    cn__s3_iso_date(res->last_modified_ms, date);
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, root, CN_S3_XMLNS);
    cn_xml_elem(&w, "LastModified", date);
    cn_xml_elem(&w, "ETag", etag);
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}

int cn__s3_content_md5(cn__s3_rq_t *q, uint8_t out[CN_MD5_LEN])
{
    const char *v = cn_http_req_header(q->r, "Content-MD5");
    if (!v)
        return 0;
    uint8_t raw[CN_MD5_LEN + 3];
    size_t n = strlen(v);
    if (n != 24 || cn_base64_decode(v, n, raw, sizeof raw) != CN_MD5_LEN) {
        cn__s3_error(q, CN_S3E_INVALID_DIGEST, "The Content-MD5 you specified is not valid.");
        return CN_E_INVALID;
    }
    memcpy(out, raw, CN_MD5_LEN);
    return 1;
}

static int collect_body(cn__s3_rq_t *q, const uint8_t *p, size_t n)
{
    if (n > q->body_max - q->body.len) {
        cn__s3_error(q, CN_S3E_MALFORMED_XML, "the request body is too large");
        return CN_E_TOO_LARGE;
    }
    if (q->md5)
        cn_md5_update(q->md5, p, n);
    return cn_buf_append(&q->body, p, n);
}

static void collect_end(cn__s3_rq_t *q)
{
    if (cn_http_req_body_error(q->r) != CN_S3E_NONE)
        return; /* the framework answers the body's error */
    if (q->md5) {
        uint8_t got[CN_MD5_LEN];
        cn_md5_final(q->md5, got);
        q->md5 = NULL;
        if (memcmp(got, q->want_md5, CN_MD5_LEN) != 0) {
            cn__s3_error(q, CN_S3E_BAD_DIGEST, NULL);
            return;
        }
    }
    q->collected(q);
}

int cn__s3_collect(cn__s3_rq_t *q, size_t max, void (*done)(cn__s3_rq_t *q))
{
    int m = cn__s3_content_md5(q, q->want_md5);
    if (m < 0)
        return m;
    int64_t cl = cn_http_req_payload_length(q->r);
    if (cl > 0 && (uint64_t)cl > max) {
        cn__s3_error(q, CN_S3E_MALFORMED_XML, "the request body is too large");
        return CN_E_TOO_LARGE;
    }
    if (m == 1) {
        q->has_md5 = true;
        if (cn_md5_new(&q->md5) != CN_OK) {
            cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
            return -ENOMEM;
        }
    }
    q->body_max = max;
    q->on_body = collect_body;
    q->on_end = collect_end;
    q->collected = done;
    return 0;
}

cn_xml_doc_t *cn__s3_body_xml(cn__s3_rq_t *q, bool required)
{
    if (q->body.len == 0) {
        if (required)
            cn__s3_error(q, CN_S3E_MISSING_REQUEST_BODY, NULL);
        return NULL;
    }
    cn_xml_doc_t *d = NULL;
    cn_err_t e = cn_xml_parse(q->body.data, q->body.len, 100000, &d);
    if (e) {
        cn_xml_doc_free(d);
        cn__s3_error(q, e == -ENOMEM ? CN_S3E_INTERNAL_ERROR : CN_S3E_MALFORMED_XML, NULL);
        return NULL;
    }
    return d;
}

bool cn__s3_int_arg(cn__s3_rq_t *q, const char *value, const char *what, int64_t lo, int64_t hi,
                    int64_t def, int64_t *out)
{
    if (!value) {
        *out = def;
        return true;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (!*value || *end || errno || v < lo || v > hi) {
        char m[160];
        snprintf(m, sizeof m, "%s is not a valid value", what);
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, m);
        return false;
    }
    *out = v;
    return true;
}

void cn__s3_owner(cn_xml_writer_t *w, const char *elem, const char *account)
{
    cn_xml_open(w, elem, NULL);
    cn_xml_elem(w, "ID", account);
    cn_xml_elem(w, "DisplayName", account);
    cn_xml_close(w);
}

void cn__s3_url_text(cn_xml_writer_t *w, const char *elem, const char *s, bool url)
{
    if (!url) {
        cn_xml_elem(w, elem, s);
        return;
    }
    cn_buf_t b = { 0 };
    if (cn_sigv4_uri_encode(&b, s, strlen(s), true) != CN_OK) {
        w->err = w->err ? w->err : -ENOMEM;
        cn_buf_free(&b);
        return;
    }
    cn_xml_elem_n(w, elem, (const char *)b.data, b.len);
    cn_buf_free(&b);
}

void cn__s3_bucket_owner(cn__s3_rq_t *q, char out[CN_ACCOUNT_NAME_MAX + 1])
{
    out[0] = 0;
    if (q->bucket && cn_objects_bucket_peek(q->s3->objects, q->bucket, out, NULL, NULL, NULL) < 0)
        out[0] = 0;
}

/* ---- put headers ------------------------------------------------------------------ */

const char *const cn__s3_system_meta[CN__S3_SYSTEM_META_COUNT] = {
    "Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires",
};

#define CN__S3_USER_META_MAX 2048 /* S3's limit on x-amz-meta-* names + values */
#define CN__S3_META_MAX_COUNT 64

typedef struct {
    cn__s3_rq_t *q;
    cn__s3_put_hdrs_t *h;
    size_t bytes;
    size_t names_len;
    cn_s3_err_t err;
    const char *why;
} cn__meta_walk_t;

static bool meta_hdr(void *ctx, const char *name, const char *value)
{
    cn__meta_walk_t *w = ctx;
    if (strncasecmp(name, "x-amz-meta-", 11) != 0)
        return true;
    const char *k = name + 11;
    size_t kl = strlen(k);
    if (kl == 0) {
        w->err = CN_S3E_INVALID_ARGUMENT;
        w->why = "empty metadata name";
        return false;
    }
    w->bytes += kl + strlen(value);
    if (w->bytes > CN__S3_USER_META_MAX || w->h->nmeta >= CN__S3_META_MAX_COUNT) {
        w->err = CN_S3E_METADATA_TOO_LARGE;
        return false;
    }
    char *nm = w->h->names + w->names_len;
    for (size_t i = 0; i <= kl; i++)
        nm[i] = (k[i] >= 'A' && k[i] <= 'Z') ? (char)(k[i] - 'A' + 'a') : k[i];
    w->names_len += kl + 1;
    w->h->meta[w->h->nmeta].key = nm;
    w->h->meta[w->h->nmeta].value = value;
    w->h->nmeta++;
    return true;
}

/* Headers asking for something this face does not store: refused rather
 * than silently dropped. */
static const char *unsupported_put_header(cn__s3_rq_t *q)
{
    static const char *const hs[] = {
        "x-amz-server-side-encryption",
        "x-amz-server-side-encryption-customer-algorithm",
        "x-amz-server-side-encryption-aws-kms-key-id",
        "x-amz-website-redirect-location",
    };
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        if (cn_http_req_header(q->r, hs[i]))
            return hs[i];
    const char *sc = cn_http_req_header(q->r, "x-amz-storage-class");
    if (sc && strcmp(sc, "STANDARD") != 0)
        return "x-amz-storage-class";
    return NULL;
}

bool cn__s3_put_hdrs(cn__s3_rq_t *q, cn__s3_put_hdrs_t *h, bool conditions)
{
    memset(h, 0, sizeof *h);
    const char *bad = unsupported_put_header(q);
    if (bad) {
        char m[160];
        snprintf(m, sizeof m, "the header %s is not supported", bad);
        cn__s3_error(q, CN_S3E_NOT_IMPLEMENTED, m);
        return false;
    }
    h->meta = calloc(CN__S3_META_MAX_COUNT + CN__S3_SYSTEM_META_COUNT, sizeof *h->meta);
    h->names = malloc(CN__S3_USER_META_MAX + CN__S3_META_MAX_COUNT + 1);
    if (!h->meta || !h->names) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return false;
    }
    cn__meta_walk_t w = { q, h, 0, 0, CN_S3E_NONE, NULL };
    cn_http_req_headers(q->r, meta_hdr, &w);
    if (w.err) {
        cn__s3_error(q, w.err, w.why);
        return false;
    }
    /* Standard headers S3 stores with an object ride in the metadata under
     * their canonical names: an x-amz-meta-* name is always lowercase, so
     * the two never collide. */
    for (size_t i = 0; i < CN__S3_SYSTEM_META_COUNT; i++) {
        const char *name = cn__s3_system_meta[i];
        const char *v = strcmp(name, "Content-Encoding") == 0 ? cn_http_req_content_encoding(q->r)
                                                              : cn_http_req_header(q->r, name);
        if (v && *v) {
            h->meta[h->nmeta].key = name;
            h->meta[h->nmeta].value = v;
            h->nmeta++;
        }
    }
    h->args.meta = h->meta;
    h->args.nmeta = h->nmeta;
    h->args.content_type = cn_http_req_header(q->r, "Content-Type");
    {
        char bowner[CN_ACCOUNT_NAME_MAX + 1] = "";
        const char *c = cn_http_req_header(q->r, "x-amz-acl");
        if (!c && cn_http_req_auth(q->r) == CN_HTTP_AUTH_SIGV4_QUERY)
            c = cn_http_req_query(q->r, "x-amz-acl");
        /* Only an ACL of the request names the bucket owner (an anonymous
         * writer's object without one is the owner's, the service decides):
         * one read less otherwise. */
        if ((q->anonymous && cn__s3_acl_in_request(q)) ||
            (c && strncmp(c, "bucket-owner-", 13) == 0))
            cn__s3_bucket_owner(q, bowner);
        h->acl = malloc(sizeof *h->acl);
        if (!h->acl) {
            cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
            return false;
        }
        /* An anonymous writer's object belongs to the bucket owner. */
        const char *owner =
            q->anonymous ? (bowner[0] ? bowner : "anonymous") : q->principal.account;
        bool present = false;
        const char *canned = NULL;
        if (!cn__s3_acl_from_request(q, owner, bowner, false, h->acl, &present, &canned))
            return false;
        if (present) {
            h->args.acl = h->acl;
            h->args.canned_acl = canned;
        }
    }
    bool locked = false;
    if (!cn__s3_lock_hdrs(q, &h->retention, &locked))
        return false;
    if (locked)
        h->args.retention = &h->retention;
    if (conditions) {
        const char *inm = cn_http_req_header(q->r, "If-None-Match");
        const char *im = cn_http_req_header(q->r, "If-Match");
        if (inm) {
            if (strcmp(inm, "*") != 0) {
                cn__s3_error(q, CN_S3E_NOT_IMPLEMENTED,
                             "If-None-Match on a write supports only '*'");
                return false;
            }
            h->args.if_none_match = true;
        }
        if (im) {
            if (!*im) {
                cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "If-Match is empty");
                return false;
            }
            h->args.if_match = im;
        }
    }
    return true;
}

void cn__s3_put_hdrs_free(cn__s3_put_hdrs_t *h)
{
    free(h->meta);
    free(h->names);
    free(h->acl);
    memset(h, 0, sizeof *h);
}

/* ---- addressing ----------------------------------------------------------------------- */

/* The bucket named by the Host header under the configured domain, or NULL. */
static char *vhost_bucket(const cn_s3_t *s3, const cn_http_req_t *r)
{
    if (!s3->domain)
        return NULL;
    const char *host = cn_http_req_header(r, "Host");
    if (!host)
        return NULL;
    size_t hl = strcspn(host, ":");
    if (host[0] == '[')
        return NULL;
    if (hl <= s3->domain_len + 1 || host[hl - s3->domain_len - 1] != '.' ||
        strncasecmp(host + hl - s3->domain_len, s3->domain, s3->domain_len) != 0)
        return NULL;
    size_t bl = hl - s3->domain_len - 1;
    char *b = malloc(bl + 1);
    if (!b)
        return NULL;
    for (size_t i = 0; i < bl; i++)
        b[i] = (host[i] >= 'A' && host[i] <= 'Z') ? (char)(host[i] - 'A' + 'a') : host[i];
    b[bl] = 0;
    return b;
}

static cn_err_t address(cn__s3_rq_t *q)
{
    size_t plen = 0;
    const char *path = cn_http_req_path(q->r, &plen);
    const char *p = path + 1; /* after the leading '/' */
    size_t rest = plen ? plen - 1 : 0;
    q->bucket = vhost_bucket(q->s3, q->r);
    if (!q->bucket) {
        const char *slash = memchr(p, '/', rest);
        size_t bl = slash ? (size_t)(slash - p) : rest;
        if (bl) {
            q->bucket = malloc(bl + 1);
            if (!q->bucket)
                return -ENOMEM;
            memcpy(q->bucket, p, bl);
            q->bucket[bl] = 0;
        }
        if (!slash)
            return CN_OK;
        p = slash + 1;
        rest -= bl + 1;
    }
    if (rest) {
        q->key = malloc(rest + 1);
        if (!q->key)
            return -ENOMEM;
        memcpy(q->key, p, rest);
        q->key[rest] = 0;
    }
    return CN_OK;
}

/* ---- who asks ------------------------------------------------------------------------- */

static bool principal(cn__s3_rq_t *q)
{
    cn_http_auth_kind_t k = cn_http_req_auth(q->r);
    cn_err_t e = CN_OK;
    if (k == CN_HTTP_AUTH_ANONYMOUS) {
        if (cn_http_req_has_query(q->r, "AWSAccessKeyId") &&
            cn_http_req_has_query(q->r, "Signature")) {
            /* A Signature Version 2 presigned URL: refused, never served as
             * an anonymous request. */
            cn__s3_error(q, CN_S3E_INVALID_REQUEST,
                         "The authorization mechanism you have provided is not supported. "
                         "Please use AWS4-HMAC-SHA256.");
            return false;
        }
        q->anonymous = true;
        q->orq.principal = NULL;
        return true;
    }
    if (k == CN_HTTP_AUTH_BEARER) {
        const char *a = cn_http_req_header(q->r, "Authorization");
        a = a ? a + 7 : "";
        while (*a == ' ')
            a++;
        e = cn_identity_authenticate(q->s3->identity, a, strlen(a), &q->principal);
    } else {
        uint8_t secret[CN_SECRET_MAX];
        size_t len = 0;
        e = secret_of(q->s3->identity, cn_http_req_access_key(q->r), secret, sizeof secret, &len,
                      &q->principal, cn_http_req_on_loop(q->r));
        memset(secret, 0, sizeof secret);
    }
    if (e != CN_OK && cn_http_req_on_loop(q->r)) {
        cn_http_req_decline(q->r);
        return false;
    }
    if (e != CN_OK) {
        cn__s3_error(q, e == CN_E_AUTH ? CN_S3E_INVALID_ACCESS_KEY_ID : CN_S3E_INTERNAL_ERROR,
                     NULL);
        return false;
    }
    q->orq.principal = &q->principal;
    if (cn_http_req_on_loop(q->r))
        return true; /* the rate is taken once the loop answers (loop_rate) */
    if (cn_identity_rate_take(q->s3->identity, q->principal.token_id) == CN_E_RATE_LIMITED) {
        cn__s3_error(q, CN_S3E_SLOW_DOWN, NULL);
        return false;
    }
    return true;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

/* Query parameters that select an S3 subresource (or a variant of an
 * operation).  A request carrying one its operation does not use is refused. */
static const char *const cn__subresources[] = {
    "acl",
    "accelerate",
    "analytics",
    "attributes",
    "cors",
    "delete",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "legal-hold",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "ownershipControls",
    "partNumber",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "replication",
    "requestPayment",
    "restore",
    "retention",
    "select",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versioning",
    "versions",
    "website",
    "versionId",
    "session",
    "renameObject",
};

/* Whether the request carries any subresource parameter at all: one pass
 * over its (few) parameters, so that the common request (none, or only a
 * presigned URL's X-Amz-*) skips the per-subresource lookups below. */
static bool any_subresource(const cn_http_req_t *r)
{
    size_t n = cn_http_req_query_count(r);
    for (size_t i = 0; i < n; i++) {
        const char *name, *value;
        cn_http_req_query_at(r, i, &name, &value);
        for (size_t j = 0; j < sizeof cn__subresources / sizeof cn__subresources[0]; j++)
            if (name[0] == cn__subresources[j][0] && !strcmp(name, cn__subresources[j]))
                return true;
    }
    return false;
}

/* true when every subresource present is named in allowed (" a b "). */
static bool router_only(cn__s3_rq_t *q, const char *allowed, const char **extra)
{
    if (!any_subresource(q->r))
        return true;
    for (size_t i = 0; i < sizeof cn__subresources / sizeof cn__subresources[0]; i++) {
        const char *s = cn__subresources[i];
        if (!cn_http_req_has_query(q->r, s))
            continue;
        if (!strcmp(s, "versionId")) {
            const char *v = cn_http_req_query(q->r, s);
            if (v && !strcmp(v, "null"))
                continue; /* the one version an unversioned bucket has */
        }
        char word[40];
        snprintf(word, sizeof word, " %s ", s);
        if (!strstr(allowed, word)) {
            *extra = s;
            return false;
        }
    }
    return true;
}

typedef void (*cn__op_fn)(cn__s3_rq_t *q);

static cn__op_fn pick_service(cn__s3_rq_t *q, unsigned m)
{
    (void)q;
    return m == CN_HTTP_GET ? cn__s3_list_buckets : NULL;
}

static cn__op_fn pick_bucket(cn__s3_rq_t *q, unsigned m, const char **allowed)
{
    cn_http_req_t *r = q->r;
    switch (m) {
    case CN_HTTP_GET:
        if (cn_http_req_has_query(r, "location")) {
            *allowed = " location ";
            return cn__s3_get_location;
        }
        if (cn_http_req_has_query(r, "versioning")) {
            *allowed = " versioning ";
            return cn__s3_versioning_get;
        }
        if (cn_http_req_has_query(r, "versions")) {
            *allowed = " versions ";
            return cn__s3_list_versions;
        }
        if (cn_http_req_has_query(r, "policyStatus")) {
            *allowed = " policyStatus ";
            return cn__s3_policy_status;
        }
        if (cn_http_req_has_query(r, "policy")) {
            *allowed = " policy ";
            return cn__s3_policy_get;
        }
        if (cn_http_req_has_query(r, "uploads")) {
            *allowed = " uploads ";
            return cn__s3_mpu_list_uploads;
        }
        if (cn_http_req_has_query(r, "acl")) {
            *allowed = " acl ";
            return cn__s3_acl_get;
        }
        if (cn_http_req_has_query(r, "publicAccessBlock")) {
            *allowed = " publicAccessBlock ";
            return cn__s3_pab_get;
        }
        if (cn_http_req_has_query(r, "cors")) {
            *allowed = " cors ";
            return cn__s3_cors_get;
        }
        if (cn_http_req_has_query(r, "tagging")) {
            *allowed = " tagging ";
            return cn__s3_bucket_tagging_get;
        }
        if (cn_http_req_has_query(r, "lifecycle")) {
            *allowed = " lifecycle ";
            return cn__s3_lifecycle_get;
        }
        if (cn_http_req_has_query(r, "object-lock")) {
            *allowed = " object-lock ";
            return cn__s3_lock_config_get;
        }
        *allowed = "  ";
        return cn__s3_list_objects;
    case CN_HTTP_HEAD: *allowed = "  "; return cn__s3_head_bucket;
    case CN_HTTP_PUT:
        if (cn_http_req_has_query(r, "versioning")) {
            *allowed = " versioning ";
            return cn__s3_versioning_put;
        }
        if (cn_http_req_has_query(r, "policy")) {
            *allowed = " policy ";
            return cn__s3_policy_put;
        }
        if (cn_http_req_has_query(r, "acl")) {
            *allowed = " acl ";
            return cn__s3_acl_put;
        }
        if (cn_http_req_has_query(r, "publicAccessBlock")) {
            *allowed = " publicAccessBlock ";
            return cn__s3_pab_put;
        }
        if (cn_http_req_has_query(r, "cors")) {
            *allowed = " cors ";
            return cn__s3_cors_put;
        }
        if (cn_http_req_has_query(r, "tagging")) {
            *allowed = " tagging ";
            return cn__s3_bucket_tagging_put;
        }
        if (cn_http_req_has_query(r, "lifecycle")) {
            *allowed = " lifecycle ";
            return cn__s3_lifecycle_put;
        }
        if (cn_http_req_has_query(r, "object-lock")) {
            *allowed = " object-lock ";
            return cn__s3_lock_config_put;
        }
        *allowed = "  ";
        return cn__s3_create_bucket;
    case CN_HTTP_DELETE:
        if (cn_http_req_has_query(r, "policy")) {
            *allowed = " policy ";
            return cn__s3_policy_delete;
        }
        if (cn_http_req_has_query(r, "publicAccessBlock")) {
            *allowed = " publicAccessBlock ";
            return cn__s3_pab_delete;
        }
        if (cn_http_req_has_query(r, "cors")) {
            *allowed = " cors ";
            return cn__s3_cors_delete;
        }
        if (cn_http_req_has_query(r, "tagging")) {
            *allowed = " tagging ";
            return cn__s3_bucket_tagging_delete;
        }
        if (cn_http_req_has_query(r, "lifecycle")) {
            *allowed = " lifecycle ";
            return cn__s3_lifecycle_delete;
        }
        *allowed = "  ";
        return cn__s3_delete_bucket;
    case CN_HTTP_POST:
        if (cn_http_req_has_query(r, "delete")) {
            *allowed = " delete ";
            return cn__s3_delete_objects;
        }
        *allowed = "  ";
        return cn__s3_post_object;
    case CN_HTTP_OPTIONS: *allowed = "  "; return cn__s3_cors_preflight;
    default: return NULL;
    }
}

static cn__op_fn pick_object(cn__s3_rq_t *q, unsigned m, const char **allowed)
{
    cn_http_req_t *r = q->r;
    bool upload = cn_http_req_has_query(r, "uploadId");
    switch (m) {
    case CN_HTTP_GET:
        if (upload) {
            *allowed = " uploadId ";
            return cn__s3_mpu_list_parts;
        }
        if (cn_http_req_has_query(r, "attributes")) {
            *allowed = " attributes versionId ";
            return cn__s3_get_object_attributes;
        }
        if (cn_http_req_has_query(r, "acl")) {
            *allowed = " acl ";
            return cn__s3_acl_get;
        }
        if (cn_http_req_has_query(r, "retention")) {
            *allowed = " retention versionId ";
            return cn__s3_retention_get;
        }
        if (cn_http_req_has_query(r, "legal-hold")) {
            *allowed = " legal-hold versionId ";
            return cn__s3_legal_hold_get;
        }
        if (cn_http_req_has_query(r, "tagging")) {
            *allowed = " tagging versionId ";
            return cn__s3_obj_tagging_get;
        }
        *allowed = " partNumber versionId ";
        return cn__s3_get_object;
    case CN_HTTP_HEAD: *allowed = " partNumber versionId "; return cn__s3_get_object;
    case CN_HTTP_PUT:
        if (upload || cn_http_req_has_query(r, "partNumber")) {
            *allowed = " uploadId partNumber ";
            return cn_http_req_header(r, "x-amz-copy-source") ? cn__s3_mpu_upload_part_copy
                                                              : cn__s3_mpu_upload_part;
        }
        if (cn_http_req_has_query(r, "acl")) {
            *allowed = " acl ";
            return cn__s3_acl_put;
        }
        if (cn_http_req_has_query(r, "retention")) {
            *allowed = " retention versionId ";
            return cn__s3_retention_put;
        }
        if (cn_http_req_has_query(r, "legal-hold")) {
            *allowed = " legal-hold versionId ";
            return cn__s3_legal_hold_put;
        }
        if (cn_http_req_has_query(r, "tagging")) {
            *allowed = " tagging versionId ";
            return cn__s3_obj_tagging_put;
        }
        *allowed = "  ";
        return cn_http_req_header(r, "x-amz-copy-source") ? cn__s3_copy_object : cn__s3_put_object;
    case CN_HTTP_DELETE:
        if (upload) {
            *allowed = " uploadId ";
            return cn__s3_mpu_abort;
        }
        if (cn_http_req_has_query(r, "tagging")) {
            *allowed = " tagging versionId ";
            return cn__s3_obj_tagging_delete;
        }
        *allowed = " versionId ";
        return cn__s3_delete_object;
    case CN_HTTP_POST:
        if (cn_http_req_has_query(r, "uploads")) {
            *allowed = " uploads ";
            return cn__s3_mpu_create;
        }
        if (upload) {
            *allowed = " uploadId ";
            return cn__s3_mpu_complete;
        }
        return NULL;
    case CN_HTTP_OPTIONS: *allowed = "  "; return cn__s3_cors_preflight;
    default: return NULL;
    }
}

/* x-amz-expected-bucket-owner: the request fails unless the bucket's owner
 * is that account. */
static bool expected_owner(cn__s3_rq_t *q)
{
    const char *want = cn_http_req_header(q->r, "x-amz-expected-bucket-owner");
    if (!want || !q->bucket)
        return true;
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    cn__s3_bucket_owner(q, owner);
    if (owner[0] && strcmp(owner, want) == 0)
        return true;
    if (!owner[0]) {
        /* Unknown bucket (or no right to see it): let the operation say which. */
        return true;
    }
    cn__s3_error(q, CN_S3E_ACCESS_DENIED, NULL);
    return false;
}

/* On the loop, only GetObject and HeadObject are answered (the operation
 * reads one object head and a small body); its principal's rate is taken
 * when it has its answer, so that a declined request, served again by a
 * worker, is counted once.  An empty token bucket declines, and the worker
 * answers SlowDown. */
static bool loop_op(cn__s3_rq_t *q, cn__op_fn fn)
{
    if (fn == cn__s3_get_object)
        return true;
    cn_http_req_decline(q->r);
    return false;
}

static void loop_rate(cn__s3_rq_t *q)
{
    cn_http_req_t *r = q->r;
    unsigned st = cn_http_req_status(r);
    if (q->anonymous || !st || st >= 400)
        return;
    if (cn_identity_rate_take(q->s3->identity, q->principal.token_id) == CN_E_RATE_LIMITED)
        cn_http_req_decline(r);
}

static int on_request(cn_http_req_t *r, void *ctx)
{
    cn_s3_t *s3 = ctx;
    cn__s3_rq_t *q = calloc(1, sizeof *q);
    if (!q)
        return -ENOMEM;
    q->s3 = s3;
    q->r = r;
    cn_http_req_set_data(r, q);
    unsigned m = cn_http_req_method_bit(r);
    q->head = m == CN_HTTP_HEAD;
    if (address(q) != CN_OK)
        return -ENOMEM;
    const char *ip = cn_http_req_client_ip(r);
    if (!ip || cn_authz_ip_parse(ip, &q->orq.source_ip) != CN_OK)
        memset(&q->orq.source_ip, 0, sizeof q->orq.source_ip);
    q->orq.secure_transport = cn_http_req_is_tls(r);
    q->orq.referer = cn_http_req_header(r, "Referer");
    q->orq.user_agent = cn_http_req_header(r, "User-Agent");
    /* The grant headers as sent, for the s3:x-amz-grant-* policy keys
     * (authz shows them only on the writes that may carry an ACL). */
    q->orq.grants.read = cn_http_req_header(r, "x-amz-grant-read");
    q->orq.grants.write = cn_http_req_header(r, "x-amz-grant-write");
    q->orq.grants.read_acp = cn_http_req_header(r, "x-amz-grant-read-acp");
    q->orq.grants.write_acp = cn_http_req_header(r, "x-amz-grant-write-acp");
    q->orq.grants.full_control = cn_http_req_header(r, "x-amz-grant-full-control");
    /* CORS response headers ride on every answer to a browser's actual
     * request, errors included; a preflight answers them itself. */
    if (q->bucket && m != CN_HTTP_OPTIONS && cn_http_req_header(r, "Origin"))
        cn__s3_cors_actual(q);
    if (!principal(q))
        return 0;
    if (q->key && strlen(q->key) > CN_OBJECT_KEY_MAX) {
        cn__s3_error(q, CN_S3E_KEY_TOO_LONG, NULL);
        return 0;
    }

    const char *allowed = "  ";
    cn__op_fn fn;
    if (!q->bucket)
        fn = pick_service(q, m);
    else if (!q->key)
        fn = pick_bucket(q, m, &allowed);
    else
        fn = pick_object(q, m, &allowed);
    const char *extra = NULL;
    if (!fn) {
        if (m == CN_HTTP_OPTIONS || m == CN_HTTP_PATCH ||
            (m == CN_HTTP_POST && q->bucket && !q->key))
            cn__s3_error(q, CN_S3E_NOT_IMPLEMENTED, "this request is not supported");
        else
            cn__s3_error(q, CN_S3E_METHOD_NOT_ALLOWED, NULL);
        return 0;
    }
    if (!router_only(q, allowed, &extra)) {
        char msg[160];
        snprintf(msg, sizeof msg, "the '%s' subresource is not supported here", extra);
        cn__s3_error(q, CN_S3E_NOT_IMPLEMENTED, msg);
        return 0;
    }
    if (cn_http_req_on_loop(r) && !loop_op(q, fn))
        return 0;
    if (!expected_owner(q))
        return 0;
    fn(q);
    if (cn_http_req_on_loop(r)) {
        loop_rate(q);
        return 0;
    }
    if (!cn_http_req_responded(r) && !q->on_end) {
        cn_warn(CN__MOD, "operation neither answered nor took the body [%s]", cn_http_req_id(r));
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
    }
    return 0;
}

static int on_body(cn_http_req_t *r, const uint8_t *p, size_t n, void *ctx)
{
    (void)ctx;
    cn__s3_rq_t *q = cn_http_req_data(r);
    if (!q || !q->on_body)
        return 0;
    return q->on_body(q, p, n);
}

static void on_end(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    cn__s3_rq_t *q = cn_http_req_data(r);
    if (q && q->on_end)
        q->on_end(q);
}

static void on_cleanup(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    cn__s3_rq_t *q = cn_http_req_data(r);
    if (!q)
        return;
    if (q->on_cleanup)
        q->on_cleanup(q);
    cn_md5_free(q->md5);
    cn_buf_free(&q->body);
    free(q->bucket);
    free(q->key);
    free(q);
    cn_http_req_set_data(r, NULL);
}

static void on_error(cn_http_req_t *r, cn_s3_err_t e, const char *message, void *ctx)
{
    (void)ctx;
    if (cn_http_req_method_bit(r) == CN_HTTP_HEAD) {
        cn_http_resp_header(r, "x-amz-error-code", cn_s3_err_code(e));
        cn_http_respond_empty(r, cn_s3_err_status(e), 0);
        return;
    }
    cn_http_respond_s3_error(r, e, message);
}

/* A failure an operation's callback returned (cn_http_route_t.err_of): the
 * one error table, with the request's objects context (what failed, and the
 * detail a service call left) when the request got that far. */
static cn_s3_err_t on_failure(cn_http_req_t *r, cn_err_t rc, void *ctx)
{
    (void)ctx;
    const cn__s3_rq_t *q = cn_http_req_data(r);
    return cn__s3_err_of(q ? &q->orq : NULL, rc);
}

static bool router_match(const cn_http_req_t *r, void *ctx)
{
    const char *p = cn_http_req_path(r, NULL);
    if (!(p[0] == '/' && p[1] == '_'))
        return true;
    /* Under a virtual host the path is a key, and a key may start with '_'. */
    char *b = vhost_bucket(ctx, r);
    bool vhost = b != NULL;
    free(b);
    return vhost;
}

void cn__s3_route(cn_s3_t *s3, cn_http_route_t *out)
{
    cn_http_route_t rt;
    memset(&rt, 0, sizeof rt);
    rt.name = "s3";
    rt.methods = CN_HTTP_ANY;
    rt.prefix = "/";
    rt.flags = CN_HTTP_ROUTE_LOOP; /* GetObject and HeadObject of small objects */
    rt.match = router_match;
    rt.on_request = on_request;
    rt.on_body = on_body;
    rt.on_end = on_end;
    rt.on_cleanup = on_cleanup;
    rt.error = on_error;
    rt.err_of = on_failure;
    rt.ctx = s3;
    *out = rt;
}

cn_err_t cn_s3_register(cn_s3_t *s3, cn_http_server_t *srv)
{
    cn_http_route_t rt;
    cn__s3_route(s3, &rt);
    rt.max_body = cn_objects_max_object_bytes(s3->objects);
    return cn_http_server_route(srv, &rt);
}
