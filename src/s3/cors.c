/* CORS on the S3 face: Get / Put / DeleteBucketCors (the configuration is
 * validated, stored in its canonical XML form as the bucket's "cors"
 * setting), the preflight OPTIONS a browser sends without a credential, and
 * the response headers of actual cross-origin requests.
 *
 * A rule matches when one AllowedOrigin matches the Origin (exact, "*", or
 * one '*' inside, case-sensitive), the method is one of its AllowedMethod,
 * and (preflight) every requested header matches one AllowedHeader (one '*'
 * wildcard, case-insensitive).  The first matching rule answers.  CORS is
 * not access control: a matching rule lets a browser read the answer; the
 * request itself is still authorized by the objects service. */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CN__CORS_BODY_MAX (64u * 1024)
#define CN__CORS_MAX_RULES 100
#define CN__CORS_MAX_NODES 20000
#define CN__CORS_ATTR "cors"

/* ---- matching ------------------------------------------------------------------ */

static bool sp(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Node text with surrounding whitespace removed. */
static const char *cors_text(const cn_xml_doc_t *d, int node, size_t *len)
{
    const char *t = cn_xml_node_text(d, node, len);
    if (!t) {
        *len = 0;
        return "";
    }
    while (*len && sp(*t)) {
        t++;
        (*len)--;
    }
    while (*len && sp(t[*len - 1]))
        (*len)--;
    return t;
}

static bool eq(const char *a, size_t al, const char *b, size_t bl, bool nocase)
{
    return al == bl && (nocase ? strncasecmp(a, b, al) == 0 : memcmp(a, b, al) == 0);
}

/* Pattern p (at most one '*') against s. */
static bool cors_wild(const char *p, size_t pl, const char *s, size_t sl, bool nocase)
{
    const char *star = memchr(p, '*', pl);
    if (!star)
        return eq(p, pl, s, sl, nocase);
    size_t pre = (size_t)(star - p), suf = pl - pre - 1;
    if (sl < pre + suf)
        return false;
    return eq(p, pre, s, pre, nocase) && eq(star + 1, suf, s + sl - suf, suf, nocase);
}

static bool rule_has(const cn_xml_doc_t *d, int rule, const char *elem, const char *s, size_t sl,
                     bool wild, bool nocase)
{
    for (int c = cn_xml_child(d, rule, elem); c >= 0; c = cn_xml_next(d, c, elem)) {
        size_t l;
        const char *t = cors_text(d, c, &l);
        if (wild ? cors_wild(t, l, s, sl, nocase) : eq(t, l, s, sl, nocase))
            return true;
    }
    return false;
}

/* Every comma-separated header of list matches an AllowedHeader of rule. */
static bool headers_ok(const cn_xml_doc_t *d, int rule, const char *list)
{
    const char *p = list;
    while (p && *p) {
        while (*p == ',' || sp(*p))
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        size_t l = (size_t)(e - p);
        while (l && sp(p[l - 1]))
            l--;
        if (l && !rule_has(d, rule, "AllowedHeader", p, l, true, true))
            return false;
        p = e;
    }
    return true;
}

int cn__s3_cors_match(const cn_xml_doc_t *d, const char *origin, const char *method,
                      const char *req_headers)
{
    int root = cn_xml_root(d);
    if (root < 0 || !origin || !method)
        return -1;
    for (int r = cn_xml_child(d, root, "CORSRule"); r >= 0; r = cn_xml_next(d, r, "CORSRule")) {
        if (!rule_has(d, r, "AllowedOrigin", origin, strlen(origin), true, false))
            continue;
        if (!rule_has(d, r, "AllowedMethod", method, strlen(method), false, false))
            continue;
        if (req_headers && !headers_ok(d, r, req_headers))
            continue;
        return r;
    }
    return -1;
}

/* ---- validation and the canonical form ---------------------------------------------- */

static bool method_ok(const char *m, size_t l)
{
    static const char *const ms[] = { "GET", "PUT", "HEAD", "POST", "DELETE" };
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        if (eq(m, l, ms[i], strlen(ms[i]), false))
            return true;
    return false;
}

static bool one_star(const char *t, size_t l)
{
    const char *s = memchr(t, '*', l);
    return !s || !memchr(s + 1, '*', l - (size_t)(s - t) - 1);
}

/* Writes rule's elements named elem; checks each with what. */
static cn_s3_err_t copy_elems(const cn_xml_doc_t *d, int rule, const char *elem, cn_xml_writer_t *w,
                              int what, size_t *count, char *why, size_t why_len)
{
    *count = 0;
    for (int c = cn_xml_child(d, rule, elem); c >= 0; c = cn_xml_next(d, c, elem)) {
        size_t l;
        const char *t = cors_text(d, c, &l);
        if (l == 0 || l > 1024 || memchr(t, 0, l)) {
            snprintf(why, why_len, "%s is empty or too long", elem);
            return CN_S3E_MALFORMED_XML;
        }
        if (what == 1 && !method_ok(t, l)) {
            snprintf(why, why_len,
                     "Found unsupported HTTP method in CORS config. "
                     "Unsupported method is %.*s",
                     (int)(l > 32 ? 32 : l), t);
            return CN_S3E_INVALID_REQUEST;
        }
        if (what == 2 && !one_star(t, l)) {
            snprintf(why, why_len, "%s \"%.*s\" can not have more than one wildcard.", elem,
                     (int)(l > 64 ? 64 : l), t);
            return CN_S3E_INVALID_REQUEST;
        }
        cn_xml_elem_n(w, elem, t, l);
        (*count)++;
    }
    return CN_S3E_NONE;
}

cn_s3_err_t cn__s3_cors_normalize(const cn_xml_doc_t *d, cn_buf_t *out, char *why, size_t why_len)
{
    why[0] = 0;
    int root = cn_xml_root(d);
    const char *rn = root >= 0 ? cn_xml_name(d, root) : NULL;
    if (!rn || strcmp(rn, "CORSConfiguration") != 0)
        return CN_S3E_MALFORMED_XML;
    /* Only known elements: a misspelt one would otherwise vanish silently. */
    for (int c = cn_xml_child(d, root, NULL); c >= 0; c = cn_xml_next(d, c, NULL))
        if (strcmp(cn_xml_name(d, c), "CORSRule") != 0)
            return CN_S3E_MALFORMED_XML;
    cn_xml_writer_t w;
    cn_xml_begin(&w, out);
    cn_xml_open(&w, "CORSConfiguration", CN_S3_XMLNS);
    size_t nrules = 0;
    cn_s3_err_t e = CN_S3E_NONE;
    for (int r = cn_xml_child(d, root, "CORSRule"); r >= 0 && e == CN_S3E_NONE;
         r = cn_xml_next(d, r, "CORSRule")) {
        if (++nrules > CN__CORS_MAX_RULES) {
            snprintf(why, why_len, "a CORS configuration holds at most 100 rules");
            return CN_S3E_MALFORMED_XML;
        }
        for (int c = cn_xml_child(d, r, NULL); c >= 0; c = cn_xml_next(d, c, NULL)) {
            const char *n = cn_xml_name(d, c);
            if (strcmp(n, "ID") && strcmp(n, "AllowedHeader") && strcmp(n, "AllowedMethod") &&
                strcmp(n, "AllowedOrigin") && strcmp(n, "ExposeHeader") &&
                strcmp(n, "MaxAgeSeconds"))
                return CN_S3E_MALFORMED_XML;
        }
        cn_xml_open(&w, "CORSRule", NULL);
        int id = cn_xml_child(d, r, "ID");
        if (id >= 0) {
            size_t l;
            const char *t = cors_text(d, id, &l);
            if (l > 255)
                return CN_S3E_MALFORMED_XML;
            cn_xml_elem_n(&w, "ID", t, l);
        }
        size_t n1, n2, n3, n4;
        e = copy_elems(d, r, "AllowedHeader", &w, 2, &n1, why, why_len);
        if (e == CN_S3E_NONE)
            e = copy_elems(d, r, "AllowedMethod", &w, 1, &n2, why, why_len);
        if (e == CN_S3E_NONE)
            e = copy_elems(d, r, "AllowedOrigin", &w, 2, &n3, why, why_len);
        if (e == CN_S3E_NONE)
            e = copy_elems(d, r, "ExposeHeader", &w, 0, &n4, why, why_len);
        if (e != CN_S3E_NONE)
            return e;
        if (n2 == 0 || n3 == 0) {
            snprintf(why, why_len, "a CORSRule needs an AllowedMethod and an AllowedOrigin");
            return CN_S3E_MALFORMED_XML;
        }
        int ma = cn_xml_child(d, r, "MaxAgeSeconds");
        if (ma >= 0) {
            size_t l;
            const char *t = cors_text(d, ma, &l);
            if (l == 0 || l > 10 || strspn(t, "0123456789") < l)
                return CN_S3E_MALFORMED_XML;
            cn_xml_elem_n(&w, "MaxAgeSeconds", t, l);
        }
        cn_xml_close(&w);
    }
    if (nrules == 0)
        return CN_S3E_MALFORMED_XML;
    cn_xml_close(&w);
    return cn_xml_finish(&w) == CN_OK ? CN_S3E_NONE : CN_S3E_INTERNAL_ERROR;
}

/* ---- Get / Put / DeleteBucketCors ---------------------------------------------------------- */

void cn__s3_cors_get(cn__s3_rq_t *q)
{
    cn__s3_setting_get(q, CN__CORS_ATTR, CN_ACT_GET_BUCKET_CORS, CN_S3E_NO_SUCH_CORS);
}

static void cors_put_done(cn__s3_rq_t *q)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    cn_buf_t out = { 0 };
    char why[200];
    cn_s3_err_t se = cn__s3_cors_normalize(d, &out, why, sizeof why);
    cn_xml_doc_free(d);
    if (se != CN_S3E_NONE) {
        cn_buf_free(&out);
        cn__s3_error(q, se, why[0] ? why : NULL);
        return;
    }
    cn_err_t e = cn_objects_bucket_attr_set(q->s3->objects, &q->orq, q->bucket, CN__CORS_ATTR,
                                            CN_ACT_PUT_BUCKET_CORS, out.data, out.len);
    cn_buf_free(&out);
    cn__s3_answer_done(q, e, 200);
}

void cn__s3_cors_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__CORS_BODY_MAX, cors_put_done);
}

void cn__s3_cors_delete(cn__s3_rq_t *q)
{
    cn__s3_setting_delete(q, CN__CORS_ATTR, CN_ACT_PUT_BUCKET_CORS);
}

/* ---- answering browsers ---------------------------------------------------------------------- */

/* Loads the bucket's configuration (no authorization: a preflight carries
 * no credential).  1 with *d set, 0 when none is set, -1 for no bucket. */
static int cors_load(cn__s3_rq_t *q, cn_xml_doc_t **d)
{
    *d = NULL;
    cn_buf_t v = { 0 };
    bool has = false;
    cn_err_t e = cn_objects_bucket_peek(q->s3->objects, q->bucket, NULL, CN__CORS_ATTR, &v, &has);
    if (e < 0 || !has) {
        cn_buf_free(&v);
        return e < 0 ? -1 : 0;
    }
    e = cn_xml_parse(v.data, v.len, CN__CORS_MAX_NODES, d);
    cn_buf_free(&v);
    if (e < 0) {
        cn_xml_doc_free(*d);
        *d = NULL;
        return 0;
    }
    return 1;
}

/* Joins the texts of rule's elem children with ", " into out. */
static void join(const cn_xml_doc_t *d, int rule, const char *elem, cn_buf_t *out)
{
    out->len = 0;
    for (int c = cn_xml_child(d, rule, elem); c >= 0; c = cn_xml_next(d, c, elem)) {
        size_t l;
        const char *t = cors_text(d, c, &l);
        if (out->len)
            cn_buf_append(out, ", ", 2);
        cn_buf_append(out, t, l);
    }
    cn_buf_append(out, "", 1);
}

/* The rule's answer headers: origin, methods, expose, max-age, credentials. */
static void rule_headers(cn__s3_rq_t *q, const cn_xml_doc_t *d, int rule, const char *origin)
{
    bool star = rule_has(d, rule, "AllowedOrigin", "*", 1, false, false) &&
                !rule_has(d, rule, "AllowedOrigin", origin, strlen(origin), false, false);
    cn_http_resp_header(q->r, "Access-Control-Allow-Origin", star ? "*" : origin);
    if (!star)
        cn_http_resp_header(q->r, "Access-Control-Allow-Credentials", "true");
    cn_buf_t b = { 0 };
    join(d, rule, "AllowedMethod", &b);
    if (b.data && b.data[0])
        cn_http_resp_header(q->r, "Access-Control-Allow-Methods", (const char *)b.data);
    join(d, rule, "ExposeHeader", &b);
    if (b.data && b.data[0])
        cn_http_resp_header(q->r, "Access-Control-Expose-Headers", (const char *)b.data);
    int ma = cn_xml_child(d, rule, "MaxAgeSeconds");
    if (ma >= 0) {
        size_t l;
        const char *t = cors_text(d, ma, &l);
        char age[16];
        snprintf(age, sizeof age, "%.*s", (int)(l < 15 ? l : 15), t);
        cn_http_resp_header(q->r, "Access-Control-Max-Age", age);
    }
    cn_buf_free(&b);
}

void cn__s3_cors_actual(cn__s3_rq_t *q)
{
    const char *origin = cn_http_req_header(q->r, "Origin");
    cn_xml_doc_t *d = NULL;
    if (!origin || cors_load(q, &d) <= 0)
        return;
    /* The answer depends on Origin whether or not a rule matched. */
    cn_http_resp_header(q->r, "Vary",
                        "Origin, Access-Control-Request-Headers, "
                        "Access-Control-Request-Method");
    int rule = cn__s3_cors_match(d, origin, cn_http_req_method(q->r), NULL);
    if (rule >= 0)
        rule_headers(q, d, rule, origin);
    cn_xml_doc_free(d);
}

void cn__s3_cors_preflight(cn__s3_rq_t *q)
{
    const char *origin = cn_http_req_header(q->r, "Origin");
    const char *method = cn_http_req_header(q->r, "Access-Control-Request-Method");
    const char *hdrs = cn_http_req_header(q->r, "Access-Control-Request-Headers");
    if (!origin || !*origin) {
        cn__s3_error(q, CN_S3E_BAD_REQUEST,
                     "Insufficient information. Origin request header needed.");
        return;
    }
    if (!method || !method_ok(method, strlen(method))) {
        cn__s3_error(q, CN_S3E_BAD_REQUEST, "Invalid Access-Control-Request-Method");
        return;
    }
    cn_xml_doc_t *d = NULL;
    int have = cors_load(q, &d);
    if (have < 0) {
        cn__s3_error(q, CN_S3E_ACCESS_FORBIDDEN, "CORSResponse: Bucket not found");
        return;
    }
    if (have == 0) {
        cn__s3_error(q, CN_S3E_ACCESS_FORBIDDEN,
                     "CORSResponse: CORS is not enabled for this bucket.");
        return;
    }
    int rule = cn__s3_cors_match(d, origin, method, hdrs);
    if (rule < 0) {
        cn_xml_doc_free(d);
        cn__s3_error(q, CN_S3E_ACCESS_FORBIDDEN, NULL);
        return;
    }
    rule_headers(q, d, rule, origin);
    cn_xml_doc_free(d);
    if (hdrs && *hdrs)
        cn_http_resp_header(q->r, "Access-Control-Allow-Headers", hdrs);
    cn_http_resp_header(q->r, "Vary",
                        "Origin, Access-Control-Request-Headers, "
                        "Access-Control-Request-Method");
    cn_http_respond_empty(q->r, 200, 0);
}
