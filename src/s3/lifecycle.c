/* Lifecycle configuration on the S3 face: Get / Put /
 * DeleteBucketLifecycleConfiguration (?lifecycle).  Put validates the
 * document as S3 does (docs/s3.md lists every answer), decodes its rules
 * for the objects service, and stores them with the document; Get answers
 * the stored document byte for byte — the one sent, or, when a rule came
 * without an ID and was given one (as S3 does), the document re-encoded
 * with that ID first in its rule and every other element as sent, in order.
 *
 * Never: stores a configuration holding a transition (one storage class
 * here: NotImplemented, after the whole document validated), or one the
 * matcher could read differently from what Get answers. */
#include "s3_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CN__LC_BODY_MAX (512u * 1024)
#define CN__LC_GEN_ID_LEN 32 /* a generated ID: hex of 16 random bytes */

typedef struct lcp {
    const cn_xml_doc_t *d;
    char *why;
    size_t why_len;
    bool transition; /* a valid transition was met: NotImplemented at the end */
} lcp_t;

__attribute__((format(printf, 3, 4))) static cn_s3_err_t bad(lcp_t *p, cn_s3_err_t e,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, p->why_len, fmt, ap);
    va_end(ap);
    return e;
}

/* A leaf element's text, or NULL when it has child elements. */
static const char *leaf(const cn_xml_doc_t *d, int node, size_t *len)
{
    *len = 0;
    if (cn_xml_child(d, node, NULL) >= 0)
        return NULL;
    return cn_xml_node_text(d, node, len);
}

/* A non-negative decimal of at most 18 digits: 0 with *v; -1 otherwise,
 * -2 for a negative one (S3 answers the two differently). */
static int decimal(const char *t, size_t n, int64_t *v)
{
    bool neg = n > 1 && t[0] == '-';
    size_t i = neg ? 1 : 0;
    if (n == i || n - i > 18)
        return -1;
    int64_t x = 0;
    for (; i < n; i++) {
        if (t[i] < '0' || t[i] > '9')
            return -1;
        x = x * 10 + (t[i] - '0');
    }
    *v = neg ? -x : x;
    return neg && x ? -2 : 0;
}

/* An integer element: not an integer is MalformedXML; below lo or above
 * hi InvalidArgument. */
static cn_s3_err_t int_elem(lcp_t *p, int node, const char *what, int64_t lo, int64_t hi,
                            int64_t *out)
{
    size_t n;
    const char *t = leaf(p->d, node, &n);
    int r = t ? decimal(t, n, out) : -1;
    if (r == -1)
        return bad(p, CN_S3E_MALFORMED_XML, "%s must be an integer", what);
    if (r == -2 || *out < lo || *out > hi)
        return bad(p, CN_S3E_INVALID_ARGUMENT, "'%s' must be %s integer%s", what,
                   lo > 0 ? "a positive" : "a non-negative", hi <= 100 ? " up to 100" : "");
    return CN_S3E_NONE;
}

/* A Date: ISO 8601 (cn__s3_lock_date's forms) into Unix ms; *midnight
 * whether it is midnight UTC. */
static bool iso_midnight(const char *t, size_t n, int64_t *ms, bool *midnight)
{
    *midnight = false;
    if (!cn__s3_lock_date(t, n, ms))
        return false;
    *midnight = *ms % (86400 * (int64_t)1000) == 0;
    return true;
}

/* ---- filters ----------------------------------------------------------------------- */

/* A <Tag> of a filter: appended to the rule's tags. */
static cn_s3_err_t filter_tag(lcp_t *p, int node, cn_objects_lc_rule_t *r, cn_objects_kv_t *kv)
{
    const char *k = NULL, *v = "";
    int nk = 0, nv = 0;
    for (int c = cn_xml_child(p->d, node, NULL); c >= 0; c = cn_xml_next(p->d, c, NULL)) {
        const char *name = cn_xml_name(p->d, c);
        size_t l;
        if (strcmp(name, "Key") == 0 && nk++ == 0)
            k = leaf(p->d, c, &l);
        else if (strcmp(name, "Value") == 0 && nv++ == 0)
            v = leaf(p->d, c, &l);
        else
            return bad(p, CN_S3E_MALFORMED_XML, "a Tag holds one Key and one Value");
    }
    if (!k || !v)
        return bad(p, CN_S3E_MALFORMED_XML, "a Tag holds one Key and one Value");
    if (r->ntags >= CN_OBJECTS_TAGS_MAX)
        return bad(p, CN_S3E_INVALID_ARGUMENT, "a filter holds at most 10 tags");
    kv[r->ntags].key = k;
    kv[r->ntags].value = v;
    r->ntags++;
    r->tags = kv;
    if (cn_objects_tags_check(kv, r->ntags, CN_OBJECTS_TAGS_MAX, p->why, p->why_len) < 0)
        return strstr(p->why, "same key")
                   ? bad(p, CN_S3E_INVALID_ARGUMENT, "Duplicate Tag Keys are not allowed.")
                   : CN_S3E_INVALID_TAG;
    return CN_S3E_NONE;
}

static cn_s3_err_t prefix_elem(lcp_t *p, int node, cn_objects_lc_rule_t *r)
{
    size_t n;
    const char *t = leaf(p->d, node, &n);
    if (!t)
        return bad(p, CN_S3E_MALFORMED_XML, "Prefix is text");
    if (n > CN_OBJECT_KEY_MAX)
        return bad(p, CN_S3E_INVALID_ARGUMENT, "The maximum size of a prefix is 1024.");
    r->prefix = t;
    return CN_S3E_NONE;
}

/* One predicate of a Filter or of its And (and_ok: And itself allowed). */
static cn_s3_err_t predicate(lcp_t *p, int c, cn_objects_lc_rule_t *r, cn_objects_kv_t *kv,
                             bool in_and, unsigned *seen)
{
    static const char *const names[] = { "Prefix", "Tag", "ObjectSizeGreaterThan",
                                         "ObjectSizeLessThan", "And" };
    const char *name = cn_xml_name(p->d, c);
    size_t i = 0;
    while (i < 5 && strcmp(name, names[i]) != 0)
        i++;
    if (i == 5 || (in_and && i == 4) || (i != 1 && (*seen & (1u << i))))
        return bad(p, CN_S3E_MALFORMED_XML, "unexpected %s in a Filter", name);
    *seen |= 1u << i;
    switch (i) {
    case 0: return prefix_elem(p, c, r);
    case 1: return filter_tag(p, c, r, kv);
    case 2: return int_elem(p, c, "ObjectSizeGreaterThan", 0, INT64_MAX / 2, &r->size_gt);
    case 3: return int_elem(p, c, "ObjectSizeLessThan", 1, INT64_MAX / 2, &r->size_lt);
    default: break;
    }
    unsigned in = 0;
    for (int a = cn_xml_child(p->d, c, NULL); a >= 0; a = cn_xml_next(p->d, a, NULL)) {
        cn_s3_err_t e = predicate(p, a, r, kv, true, &in);
        if (e != CN_S3E_NONE)
            return e;
    }
    return CN_S3E_NONE;
}

static cn_s3_err_t filter(lcp_t *p, int node, cn_objects_lc_rule_t *r, cn_objects_kv_t *kv)
{
    unsigned seen = 0;
    int n = 0;
    for (int c = cn_xml_child(p->d, node, NULL); c >= 0; c = cn_xml_next(p->d, c, NULL)) {
        if (n++)
            return bad(p, CN_S3E_MALFORMED_XML, "a Filter holds one predicate (use And)");
        cn_s3_err_t e = predicate(p, c, r, kv, false, &seen);
        if (e != CN_S3E_NONE)
            return e;
    }
    if (r->size_gt >= 0 && r->size_lt >= 0 && r->size_gt >= r->size_lt)
        return bad(p, CN_S3E_INVALID_ARGUMENT,
                   "ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
    return CN_S3E_NONE;
}

/* ---- actions --------------------------------------------------------------------- */

static cn_s3_err_t expiration(lcp_t *p, int node, cn_objects_lc_rule_t *r)
{
    int n = 0;
    for (int c = cn_xml_child(p->d, node, NULL); c >= 0; c = cn_xml_next(p->d, c, NULL), n++) {
        const char *name = cn_xml_name(p->d, c);
        size_t l;
        const char *t = leaf(p->d, c, &l);
        int64_t v = 0;
        if (n)
            return bad(p, CN_S3E_MALFORMED_XML,
                       "an Expiration holds one of Days, Date and ExpiredObjectDeleteMarker");
        if (strcmp(name, "Days") == 0) {
            cn_s3_err_t e = int_elem(p, c, "Days", 1, INT32_MAX, &v);
            if (e != CN_S3E_NONE)
                return e;
            r->exp_days = (int32_t)v;
        } else if (strcmp(name, "Date") == 0) {
            bool midnight;
            if (!t || !iso_midnight(t, l, &r->exp_date_ms, &midnight))
                return bad(p, CN_S3E_INVALID_ARGUMENT, "Invalid date in Expiration");
            if (!midnight || r->exp_date_ms <= 0)
                return bad(p, CN_S3E_INVALID_ARGUMENT, "'Date' must be at midnight GMT");
        } else if (strcmp(name, "ExpiredObjectDeleteMarker") == 0) {
            if (!t || !((l == 4 && !memcmp(t, "true", 4)) || (l == 5 && !memcmp(t, "false", 5))))
                return bad(p, CN_S3E_MALFORMED_XML, "ExpiredObjectDeleteMarker is true or false");
            r->exp_marker = l == 4;
        } else {
            return bad(p, CN_S3E_MALFORMED_XML, "unexpected %s in Expiration", name);
        }
    }
    if (n == 0)
        return bad(p, CN_S3E_MALFORMED_XML, "an empty Expiration");
    return CN_S3E_NONE;
}

/* Children of an action element: each of names[0..n) at most once, the
 * first required; values in vals (-1 when absent). */
static cn_s3_err_t action_ints(lcp_t *p, int node, const char *const *names, const int64_t *lo,
                               const int64_t *hi, size_t n, int64_t *vals)
{
    for (size_t i = 0; i < n; i++)
        vals[i] = -1;
    for (int c = cn_xml_child(p->d, node, NULL); c >= 0; c = cn_xml_next(p->d, c, NULL)) {
        const char *name = cn_xml_name(p->d, c);
        size_t i = 0;
        while (i < n && strcmp(name, names[i]) != 0)
            i++;
        if (i == n || vals[i] >= 0)
            return bad(p, CN_S3E_MALFORMED_XML, "unexpected %s in %s", name,
                       cn_xml_name(p->d, node));
        cn_s3_err_t e = int_elem(p, c, names[i], lo[i], hi[i], &vals[i]);
        if (e != CN_S3E_NONE)
            return e;
    }
    if (vals[0] < 0)
        return bad(p, CN_S3E_MALFORMED_XML, "%s needs %s", cn_xml_name(p->d, node), names[0]);
    return CN_S3E_NONE;
}

static bool storage_class_ok(const char *t, size_t l)
{
    static const char *const cls[] = { "GLACIER",      "STANDARD_IA",
                                       "ONEZONE_IA",   "INTELLIGENT_TIERING",
                                       "DEEP_ARCHIVE", "GLACIER_IR" };
    for (size_t i = 0; t && i < sizeof cls / sizeof cls[0]; i++)
        if (strlen(cls[i]) == l && memcmp(cls[i], t, l) == 0)
            return true;
    return false;
}

/* Transition / NoncurrentVersionTransition: validated, then refused later. */
static cn_s3_err_t transition(lcp_t *p, int node, bool noncurrent)
{
    bool when = false, cls = false;
    for (int c = cn_xml_child(p->d, node, NULL); c >= 0; c = cn_xml_next(p->d, c, NULL)) {
        const char *name = cn_xml_name(p->d, c);
        size_t l;
        const char *t = leaf(p->d, c, &l);
        int64_t v;
        cn_s3_err_t e = CN_S3E_NONE;
        if (!when && strcmp(name, noncurrent ? "NoncurrentDays" : "Days") == 0) {
            e = int_elem(p, c, name, 0, INT32_MAX, &v);
            when = true;
        } else if (!when && !noncurrent && strcmp(name, "Date") == 0) {
            bool mid;
            if (!t || !iso_midnight(t, l, &v, &mid) || !mid)
                e = bad(p, CN_S3E_INVALID_ARGUMENT, "'Date' must be at midnight GMT");
            when = true;
        } else if (!cls && strcmp(name, "StorageClass") == 0) {
            if (!storage_class_ok(t, l))
                e = bad(p, CN_S3E_MALFORMED_XML, "unknown StorageClass");
            cls = true;
        } else if (!(noncurrent && strcmp(name, "NewerNoncurrentVersions") == 0)) {
            e = bad(p, CN_S3E_MALFORMED_XML, "unexpected %s in %s", name, cn_xml_name(p->d, node));
        }
        if (e != CN_S3E_NONE)
            return e;
    }
    if (!cls || (!when && noncurrent))
        return bad(p, CN_S3E_MALFORMED_XML, "%s needs its days and a StorageClass",
                   cn_xml_name(p->d, node));
    p->transition = true;
    return CN_S3E_NONE;
}

/* ---- rules ------------------------------------------------------------------------- */

enum {
    R_ID,
    R_PREFIX,
    R_FILTER,
    R_STATUS,
    R_EXP,
    R_NCEXP,
    R_ABORT,
    R_TRANS,
    R_NCTRANS,
    R_N
};
static const char *const rule_elems[R_N] = { "ID",
                                             "Prefix",
                                             "Filter",
                                             "Status",
                                             "Expiration",
                                             "NoncurrentVersionExpiration",
                                             "AbortIncompleteMultipartUpload",
                                             "Transition",
                                             "NoncurrentVersionTransition" };

static cn_s3_err_t rule_action(lcp_t *p, int k, int c, cn_objects_lc_rule_t *r)
{
    static const char *const nc[] = { "NoncurrentDays", "NewerNoncurrentVersions" };
    static const int64_t nc_lo[] = { 1, 1 }, nc_hi[] = { INT32_MAX, 100 };
    static const char *const ab[] = { "DaysAfterInitiation" };
    static const int64_t ab_lo[] = { 1 }, ab_hi[] = { INT32_MAX };
    int64_t v[2];
    cn_s3_err_t e = CN_S3E_NONE;
    switch (k) {
    case R_EXP: return expiration(p, c, r);
    case R_NCEXP:
        e = action_ints(p, c, nc, nc_lo, nc_hi, 2, v);
        r->nc_days = (int32_t)v[0];
        r->nc_newer = v[1] > 0 ? (int32_t)v[1] : 0;
        return e;
    case R_ABORT:
        e = action_ints(p, c, ab, ab_lo, ab_hi, 1, v);
        r->abort_days = (int32_t)v[0];
        return e;
    case R_TRANS: return transition(p, c, false);
    default: return transition(p, c, true);
    }
}

static cn_s3_err_t rule_status(lcp_t *p, int c, cn_objects_lc_rule_t *r)
{
    size_t l;
    const char *t = leaf(p->d, c, &l);
    if (t && l == 7 && memcmp(t, "Enabled", 7) == 0)
        r->enabled = true;
    else if (!(t && l == 8 && memcmp(t, "Disabled", 8) == 0))
        return bad(p, CN_S3E_MALFORMED_XML, "Status is Enabled or Disabled");
    return CN_S3E_NONE;
}

static cn_s3_err_t rule_elem(lcp_t *p, int k, int c, cn_objects_lc_rule_t *r, cn_objects_kv_t *kv)
{
    size_t l;
    const char *t;
    switch (k) {
    case R_ID:
        t = leaf(p->d, c, &l);
        if (!t)
            return bad(p, CN_S3E_MALFORMED_XML, "ID is text");
        if (l > CN_OBJECTS_LC_ID_MAX)
            return bad(p, CN_S3E_INVALID_ARGUMENT,
                       "ID length should not exceed allowed limit "
                       "of 255");
        r->id = l ? t : NULL; /* an empty ID is given one, as a missing one */
        return CN_S3E_NONE;
    case R_PREFIX: return prefix_elem(p, c, r);
    case R_FILTER: return filter(p, c, r, kv);
    case R_STATUS: return rule_status(p, c, r);
    default: return rule_action(p, k, c, r);
    }
}

static cn_s3_err_t rule(lcp_t *p, int node, cn_objects_lc_rule_t *r, cn_objects_kv_t *kv)
{
    memset(r, 0, sizeof *r);
    r->prefix = "";
    r->size_gt = r->size_lt = -1;
    unsigned seen = 0;
    for (int c = cn_xml_child(p->d, node, NULL); c >= 0; c = cn_xml_next(p->d, c, NULL)) {
        const char *name = cn_xml_name(p->d, c);
        int k = 0;
        while (k < R_N && strcmp(name, rule_elems[k]) != 0)
            k++;
        bool many = k == R_TRANS || k == R_NCTRANS;
        if (k == R_N || (!many && (seen & (1u << k))))
            return bad(p, CN_S3E_MALFORMED_XML, "unexpected %s in a Rule", name);
        seen |= 1u << k;
        cn_s3_err_t e = rule_elem(p, k, c, r, kv);
        if (e != CN_S3E_NONE)
            return e;
    }
    if (!(seen & (1u << R_STATUS)))
        return bad(p, CN_S3E_MALFORMED_XML, "a Rule needs a Status");
    if ((seen & (1u << R_PREFIX)) && (seen & (1u << R_FILTER)))
        return bad(p, CN_S3E_MALFORMED_XML, "a Rule holds Prefix or Filter, not both");
    if (!(seen & (1u << R_PREFIX)) && !(seen & (1u << R_FILTER)))
        return bad(p, CN_S3E_MALFORMED_XML, "a Rule needs a Prefix or a Filter");
    unsigned acts =
        (1u << R_EXP) | (1u << R_NCEXP) | (1u << R_ABORT) | (1u << R_TRANS) | (1u << R_NCTRANS);
    if (!(seen & acts))
        return bad(p, CN_S3E_INVALID_REQUEST,
                   "At least one action needs to be specified in a "
                   "rule");
    if (r->abort_days && (r->ntags || r->size_gt >= 0 || r->size_lt >= 0))
        return bad(p, CN_S3E_INVALID_REQUEST,
                   "AbortIncompleteMultipartUpload cannot be "
                   "specified with a tag or size filter");
    if (r->exp_marker && r->ntags)
        return bad(p, CN_S3E_INVALID_REQUEST,
                   "ExpiredObjectDeleteMarker cannot be specified "
                   "with a tag filter");
    return CN_S3E_NONE;
}

/* ---- the document ---------------------------------------------------------------------- */

void cn__s3_lc_free(cn__s3_lc_t *lc)
{
    free(lc->rules);
    free(lc->tags);
    free(lc->ids);
    cn_buf_free(&lc->doc);
    memset(lc, 0, sizeof *lc);
}

/* Gives every rule without an ID a random one (hex, unique). */
static cn_s3_err_t give_ids(cn__s3_lc_t *lc)
{
    for (size_t i = 0; i < lc->nrules; i++) {
        if (lc->rules[i].id)
            continue;
        if (!lc->ids && !(lc->ids = calloc(lc->nrules, CN__LC_GEN_ID_LEN + 1)))
            return CN_S3E_INTERNAL_ERROR;
        uint8_t rnd[CN__LC_GEN_ID_LEN / 2];
        if (cn_random_bytes(rnd, sizeof rnd) < 0)
            return CN_S3E_INTERNAL_ERROR;
        char *id = lc->ids + i * (CN__LC_GEN_ID_LEN + 1);
        for (size_t j = 0; j < sizeof rnd; j++)
            snprintf(id + 2 * j, 3, "%02x", rnd[j]);
        lc->rules[i].id = id;
        lc->generated = true;
    }
    return CN_S3E_NONE;
}

/* Copies element node and everything under it. */
static void copy_tree(cn_xml_writer_t *w, const cn_xml_doc_t *d, int node)
{
    const char *name = cn_xml_name(d, node);
    if (cn_xml_child(d, node, NULL) < 0) {
        size_t l;
        const char *t = cn_xml_node_text(d, node, &l);
        cn_xml_elem_n(w, name, t, l);
        return;
    }
    cn_xml_open(w, name, NULL);
    for (int c = cn_xml_child(d, node, NULL); c >= 0; c = cn_xml_next(d, c, NULL))
        copy_tree(w, d, c);
    cn_xml_close(w);
}

/* The document with every rule's ID first (generated ones included). */
static cn_err_t reencode(const cn_xml_doc_t *d, cn__s3_lc_t *lc)
{
    cn_xml_writer_t w;
    cn_xml_begin(&w, &lc->doc);
    cn_xml_open(&w, "LifecycleConfiguration", CN_S3_XMLNS);
    size_t i = 0;
    int root = cn_xml_root(d);
    for (int r = cn_xml_child(d, root, NULL); r >= 0; r = cn_xml_next(d, r, NULL), i++) {
        cn_xml_open(&w, "Rule", NULL);
        cn_xml_elem(&w, "ID", lc->rules[i].id);
        for (int c = cn_xml_child(d, r, NULL); c >= 0; c = cn_xml_next(d, c, NULL))
            if (strcmp(cn_xml_name(d, c), "ID") != 0)
                copy_tree(&w, d, c);
        cn_xml_close(&w);
    }
    cn_xml_close(&w);
    return cn_xml_finish(&w);
}

static cn_s3_err_t unique_ids(lcp_t *p, const cn__s3_lc_t *lc)
{
    for (size_t i = 0; i < lc->nrules; i++)
        for (size_t j = 0; lc->rules[i].id && j < i; j++)
            if (lc->rules[j].id && strcmp(lc->rules[i].id, lc->rules[j].id) == 0)
                return bad(p, CN_S3E_INVALID_ARGUMENT,
                           "Rule ID must be unique. Found same ID "
                           "for more than one rule");
    return CN_S3E_NONE;
}

cn_s3_err_t cn__s3_lc_parse(const cn_xml_doc_t *d, cn__s3_lc_t *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    why[0] = 0;
    lcp_t p = { d, why, why_len, false };
    int root = cn_xml_root(d);
    const char *rn = root >= 0 ? cn_xml_name(d, root) : NULL;
    if (!rn || strcmp(rn, "LifecycleConfiguration") != 0)
        return bad(&p, CN_S3E_MALFORMED_XML, "the root is not LifecycleConfiguration");
    size_t n = 0;
    for (int r = cn_xml_child(d, root, NULL); r >= 0; r = cn_xml_next(d, r, NULL), n++)
        if (strcmp(cn_xml_name(d, r), "Rule") != 0)
            return bad(&p, CN_S3E_MALFORMED_XML, "a LifecycleConfiguration holds Rules only");
    if (n == 0 || n > CN_OBJECTS_LC_RULES_MAX)
        return bad(&p, CN_S3E_MALFORMED_XML, "a configuration holds 1 to 1000 rules");
    out->rules = calloc(n, sizeof *out->rules);
    out->tags = calloc(n * CN_OBJECTS_TAGS_MAX, sizeof *out->tags);
    if (!out->rules || !out->tags)
        return CN_S3E_INTERNAL_ERROR;
    size_t i = 0;
    for (int r = cn_xml_child(d, root, NULL); r >= 0; r = cn_xml_next(d, r, NULL), i++) {
        cn_s3_err_t e = rule(&p, r, &out->rules[i], out->tags + i * CN_OBJECTS_TAGS_MAX);
        if (e != CN_S3E_NONE)
            return e;
        out->nrules = i + 1;
    }
    cn_s3_err_t e = unique_ids(&p, out);
    if (e == CN_S3E_NONE && p.transition)
        e = bad(&p, CN_S3E_NOT_IMPLEMENTED,
                "transitions are not supported: this server has "
                "one storage class");
    if (e == CN_S3E_NONE)
        e = give_ids(out);
    if (e == CN_S3E_NONE && out->generated && reencode(d, out) < 0)
        e = CN_S3E_INTERNAL_ERROR;
    return e;
}

/* ---- x-amz-expiration ---------------------------------------------------------------- */

void cn__s3_expiration_value(int64_t expiry_ms, const char *rule_id, cn_buf_t *out)
{
    char date[CN__S3_HTTP_DATE_MAX];
    cn__s3_http_date(expiry_ms, date);
    cn_buf_printf(out, "expiry-date=\"%s\", rule-id=\"", date);
    /* An ID is any XML text: what could end the quoted string or the header
     * line goes percent-encoded. */
    for (const unsigned char *p = (const unsigned char *)rule_id; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\' || *p == '%')
            cn_buf_printf(out, "%%%02X", *p);
        else
            cn_buf_put_u8(out, *p);
    }
    cn_buf_append(out, "\"", 1);
}

bool cn__s3_expiration_header(cn__s3_rq_t *q, const char *key, uint64_t size, int64_t version_id,
                              uint32_t ntags, int64_t last_modified_ms)
{
    int64_t exp = 0;
    char id[CN_OBJECTS_LC_ID_MAX + 1];
    uint64_t word = q->lc_word; /* for this one answer */
    q->lc_word = 0;
    /* On the loop only the rules cached under the bucket's generation
     * answer; else a worker reads them (and caches them for the loop). */
    int found = cn_http_req_on_loop(q->r)
                    ? cn_objects_lifecycle_expiry_cached(q->s3->objects, q->bucket, key, size,
                                                         ntags, last_modified_ms, &exp, id)
                    : cn_objects_lifecycle_expiry_under(q->s3->objects, q->bucket, word, key, size,
                                                        version_id, last_modified_ms, &exp, id);
    if (found == CN_E_AGAIN && cn_http_req_on_loop(q->r))
        return false;
    if (found != 1)
        return true;
    cn_buf_t v = { 0 };
    cn__s3_expiration_value(exp, id, &v);
    if (cn_buf_put_u8(&v, 0) >= 0)
        cn_http_resp_header(q->r, "x-amz-expiration", (const char *)v.data);
    cn_buf_free(&v);
    return true;
}

/* ---- the operations ------------------------------------------------------------------ */

void cn__s3_lifecycle_get(cn__s3_rq_t *q)
{
    cn_buf_t doc = { 0 };
    cn_err_t e = cn_objects_lifecycle_get(q->s3->objects, &q->orq, q->bucket, &doc);
    if (e < 0) {
        cn_buf_free(&doc);
        if (e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)
            cn__s3_error(q, CN_S3E_NO_SUCH_LIFECYCLE, NULL);
        else
            cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_buf(q->r, 200, "application/xml", &doc);
    cn_buf_free(&doc);
}

static void lifecycle_put_done(cn__s3_rq_t *q)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    cn__s3_lc_t lc;
    char why[200];
    cn_s3_err_t se = cn__s3_lc_parse(d, &lc, why, sizeof why);
    if (se != CN_S3E_NONE) {
        cn__s3_lc_free(&lc);
        cn_xml_doc_free(d);
        cn__s3_error(q, se, why[0] ? why : NULL);
        return;
    }
    const char *doc = lc.generated ? (const char *)lc.doc.data : (const char *)q->body.data;
    size_t len = lc.generated ? lc.doc.len : q->body.len;
    cn_err_t e =
        cn_objects_lifecycle_set(q->s3->objects, &q->orq, q->bucket, lc.rules, lc.nrules, doc, len);
    cn__s3_lc_free(&lc);
    cn_xml_doc_free(d);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 200, 0);
}

void cn__s3_lifecycle_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__LC_BODY_MAX, lifecycle_put_done);
}

void cn__s3_lifecycle_delete(cn__s3_rq_t *q)
{
    cn_err_t e = cn_objects_lifecycle_set(q->s3->objects, &q->orq, q->bucket, NULL, 0, NULL, 0);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 204, 0);
}
