/* S3 Object Lock on the S3 face: Put/GetObjectLockConfiguration
 * (?object-lock), Put/GetObjectRetention (?retention), Put/GetObjectLegalHold
 * (?legal-hold), the x-amz-object-lock-* headers of a write (parsed here for
 * PutObject, CopyObject and CreateMultipartUpload) and their echo on
 * GET/HEAD.
 *
 * Decode, call one objects service call, encode: the rules (versioning must
 * be Enabled, what may shorten what) are the service's; this file only
 * validates documents and headers and chooses S3's codes for their faults
 * (MalformedXML, InvalidRetentionPeriod, InvalidArgument).  It never reads
 * or writes the metadata itself. */
#include "s3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CN__LOCK_BODY_MAX (64u * 1024)
#define CN__LOCK_DAYS_MAX 36500
#define CN__LOCK_YEARS_MAX 100

/* ---- small parsers ------------------------------------------------------------------- */

static bool lock_sp(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The text of node's child name with surrounding whitespace trimmed; NULL
 * when there is no such child. */
static const char *lock_text(const cn_xml_doc_t *d, int node, const char *name, size_t *len)
{
    const char *t = cn_xml_child_text(d, node, name, len);
    if (!t)
        return NULL;
    while (*len && lock_sp(*t)) {
        t++;
        (*len)--;
    }
    while (*len && lock_sp(t[*len - 1]))
        (*len)--;
    return t;
}

static bool lock_is(const char *t, size_t n, const char *want)
{
    return t && strlen(want) == n && memcmp(t, want, n) == 0;
}

/* "GOVERNANCE" / "COMPLIANCE" exactly (S3 refuses any other spelling). */
static cn_objects_lock_mode_t lock_mode(const char *t, size_t n)
{
    if (lock_is(t, n, "GOVERNANCE"))
        return CN_OBJ_LOCK_GOVERNANCE;
    if (lock_is(t, n, "COMPLIANCE"))
        return CN_OBJ_LOCK_COMPLIANCE;
    return CN_OBJ_LOCK_NONE;
}

static const char *lock_mode_str(cn_objects_lock_mode_t m)
{
    return m == CN_OBJ_LOCK_COMPLIANCE ? "COMPLIANCE" : "GOVERNANCE";
}

/* n digits of t as a number; -1 when not all digits. */
static int64_t lock_num(const char *t, size_t n)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9')
            return -1;
        v = v * 10 + (t[i] - '0');
    }
    return v;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), by arithmetic. */
static int64_t lock_days(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool cn__s3_lock_date(const char *s, size_t n, int64_t *unix_ms)
{
    /* YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM) */
    if (!s || n < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':')
        return false;
    int64_t y = lock_num(s, 4), mo = lock_num(s + 5, 2), d = lock_num(s + 8, 2);
    int64_t h = lock_num(s + 11, 2), mi = lock_num(s + 14, 2), sec = lock_num(s + 17, 2);
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        sec < 0 || sec > 60)
        return false;
    size_t i = 19;
    int64_t frac = 0;
    if (i < n && s[i] == '.') {
        size_t digits = 0;
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
            if (digits < 3)
                frac = frac * 10 + (s[i] - '0');
        if (!digits)
            return false;
        for (; digits < 3; digits++)
            frac *= 10;
    }
    int64_t off = 0;
    if (i + 1 == n && (s[i] == 'Z' || s[i] == 'z')) {
        off = 0;
    } else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int64_t oh = lock_num(s + i + 1, 2), om = lock_num(s + i + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return false;
        off = (oh * 60 + om) * 60 * (s[i] == '+' ? 1 : -1);
    } else {
        return false;
    }
    int64_t t = lock_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    *unix_ms = t * 1000 + frac;
    return true;
}

/* ---- ObjectLockConfiguration ------------------------------------------------------------ */

/* Validates an ObjectLockConfiguration: ObjectLockEnabled "Enabled", and an
 * optional Rule/DefaultRetention with Mode and exactly one of Days / Years.
 * Writes its canonical form into out and the compact default ("GOVERNANCE
 * D1"; "" for none) into dflt.  NONE, MalformedXML or InvalidRetentionPeriod. */
cn_s3_err_t cn__s3_lock_config_parse(const cn_xml_doc_t *d, cn_buf_t *out, char dflt[32])
{
    dflt[0] = 0;
    int root = cn_xml_root(d);
    const char *name = cn_xml_name(d, root);
    size_t n = 0;
    const char *en = lock_text(d, root, "ObjectLockEnabled", &n);
    if (!name || strcmp(name, "ObjectLockConfiguration") != 0 || !lock_is(en, n, "Enabled"))
        return CN_S3E_MALFORMED_XML;
    cn_xml_writer_t w;
    cn_xml_begin(&w, out);
    cn_xml_open(&w, "ObjectLockConfiguration", CN_S3_XMLNS);
    cn_xml_elem(&w, "ObjectLockEnabled", "Enabled");
    int rule = cn_xml_child(d, root, "Rule");
    if (rule >= 0) {
        int dr = cn_xml_child(d, rule, "DefaultRetention");
        size_t ml = 0, dl = 0, yl = 0;
        const char *mt = dr >= 0 ? lock_text(d, dr, "Mode", &ml) : NULL;
        const char *dt = dr >= 0 ? lock_text(d, dr, "Days", &dl) : NULL;
        const char *yt = dr >= 0 ? lock_text(d, dr, "Years", &yl) : NULL;
        cn_objects_lock_mode_t m = mt ? lock_mode(mt, ml) : CN_OBJ_LOCK_NONE;
        if (m == CN_OBJ_LOCK_NONE || !dt == !yt) {
            cn_buf_free(out);
            return CN_S3E_MALFORMED_XML;
        }
        const char *vt = dt ? dt : yt;
        size_t vl = dt ? dl : yl;
        bool neg = vl > 0 && vt[0] == '-';
        int64_t v = vl && vl <= 9 ? lock_num(vt + neg, vl - neg) : -1;
        if (v < 0) {
            cn_buf_free(out);
            return CN_S3E_MALFORMED_XML;
        }
        if (neg || v < 1 || v > (dt ? CN__LOCK_DAYS_MAX : CN__LOCK_YEARS_MAX)) {
            cn_buf_free(out);
            return CN_S3E_INVALID_RETENTION_PERIOD;
        }
        char num[24];
        snprintf(num, sizeof num, "%lld", (long long)v);
        snprintf(dflt, 32, "%s %c%lld", lock_mode_str(m), dt ? 'D' : 'Y', (long long)v);
        cn_xml_open(&w, "Rule", NULL);
        cn_xml_open(&w, "DefaultRetention", NULL);
        cn_xml_elem(&w, "Mode", lock_mode_str(m));
        cn_xml_elem(&w, dt ? "Days" : "Years", num);
        cn_xml_close(&w);
        cn_xml_close(&w);
    }
    cn_xml_close(&w);
    if (cn_xml_finish(&w) != CN_OK) {
        cn_buf_free(out);
        return CN_S3E_INTERNAL_ERROR;
    }
    return CN_S3E_NONE;
}

/* The configuration a bucket created with x-amz-bucket-object-lock-enabled
 * starts with (no default retention). */
cn_err_t cn__s3_lock_config_initial(cn_buf_t *out)
{
    cn_xml_writer_t w;
    cn_xml_begin(&w, out);
    cn_xml_open(&w, "ObjectLockConfiguration", CN_S3_XMLNS);
    cn_xml_elem(&w, "ObjectLockEnabled", "Enabled");
    cn_xml_close(&w);
    return cn_xml_finish(&w);
}

static void lock_config_put_done(cn__s3_rq_t *q)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    cn_buf_t doc = { 0 };
    char dflt[32];
    cn_s3_err_t se = cn__s3_lock_config_parse(d, &doc, dflt);
    cn_xml_doc_free(d);
    if (se != CN_S3E_NONE) {
        cn__s3_error(q, se, NULL);
        return;
    }
    cn_err_t e = cn_objects_lock_config_set(q->s3->objects, &q->orq, q->bucket,
                                            (const char *)doc.data, doc.len, dflt[0] ? dflt : NULL);
    cn_buf_free(&doc);
    cn__s3_answer_done(q, e, 200);
}

void cn__s3_lock_config_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__LOCK_BODY_MAX, lock_config_put_done);
}

void cn__s3_lock_config_get(cn__s3_rq_t *q)
{
    cn_buf_t v = { 0 };
    cn_err_t e = cn_objects_lock_config_get(q->s3->objects, &q->orq, q->bucket, &v);
    cn__s3_answer_doc(q, e, &v, CN_S3E_OBJECT_LOCK_CONFIG_NOT_FOUND);
}

/* ---- retention and legal hold of a version ----------------------------------------------- */

/* The version a request names (?versionId; NULL = the current one). */
static const char *lock_version(cn__s3_rq_t *q)
{
    return cn_http_req_query(q->r, "versionId");
}

static bool lock_bypass(cn__s3_rq_t *q)
{
    const char *v = cn_http_req_header(q->r, "x-amz-bypass-governance-retention");
    return v && strcasecmp(v, "true") == 0;
}

/* A Retention document: Mode and RetainUntilDate together, or neither (the
 * retention is removed).  NONE or MalformedXML. */
cn_s3_err_t cn__s3_retention_parse(const cn_xml_doc_t *d, cn_objects_retention_t *r)
{
    memset(r, 0, sizeof *r);
    r->legal_hold = -1;
    int root = cn_xml_root(d);
    const char *name = cn_xml_name(d, root);
    if (!name || strcmp(name, "Retention") != 0)
        return CN_S3E_MALFORMED_XML;
    size_t ml = 0, dl = 0;
    const char *mt = lock_text(d, root, "Mode", &ml);
    const char *dt = lock_text(d, root, "RetainUntilDate", &dl);
    if (!mt && !dt)
        return CN_S3E_NONE;
    if (!mt || !dt)
        return CN_S3E_MALFORMED_XML;
    r->mode = lock_mode(mt, ml);
    if (r->mode == CN_OBJ_LOCK_NONE || !cn__s3_lock_date(dt, dl, &r->until_ms))
        return CN_S3E_MALFORMED_XML;
    return CN_S3E_NONE;
}

/* PutObjectRetention or PutObjectLegalHold (hold) once the body is in. */
static void version_put_done(cn__s3_rq_t *q, bool hold)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    cn_objects_retention_t r;
    bool on = false;
    cn_s3_err_t se = hold ? cn__s3_legal_hold_parse(d, &on) : cn__s3_retention_parse(d, &r);
    cn_xml_doc_free(d);
    if (se != CN_S3E_NONE) {
        cn__s3_error(q, se, NULL);
        return;
    }
    cn_objects_t *o = q->s3->objects;
    cn_err_t e = hold
                     ? cn_objects_legal_hold_set(o, &q->orq, q->bucket, q->key, lock_version(q), on)
                     : cn_objects_retention_set(o, &q->orq, q->bucket, q->key, lock_version(q), &r,
                                                lock_bypass(q));
    cn__s3_answer_done(q, e, 200);
}

static void retention_put_done(cn__s3_rq_t *q)
{
    version_put_done(q, false);
}

void cn__s3_retention_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__LOCK_BODY_MAX, retention_put_done);
}

/* GetObjectRetention or GetObjectLegalHold (hold). */
static void version_get(cn__s3_rq_t *q, bool hold)
{
    cn_objects_retention_t r;
    cn_objects_t *o = q->s3->objects;
    cn_err_t e = hold
                     ? cn_objects_legal_hold_get(o, &q->orq, q->bucket, q->key, lock_version(q), &r)
                     : cn_objects_retention_get(o, &q->orq, q->bucket, q->key, lock_version(q), &r);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    char date[CN_RFC3339_LEN];
    cn__s3_iso_date(r.until_ms, date);
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, hold ? "LegalHold" : "Retention", CN_S3_XMLNS);
    if (hold) {
        cn_xml_elem(&w, "Status", r.legal_hold > 0 ? "ON" : "OFF");
    } else {
        cn_xml_elem(&w, "Mode", lock_mode_str(r.mode));
        cn_xml_elem(&w, "RetainUntilDate", date);
    }
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}

void cn__s3_retention_get(cn__s3_rq_t *q)
{
    version_get(q, false);
}

/* A LegalHold document: Status ON or OFF.  NONE or MalformedXML. */
cn_s3_err_t cn__s3_legal_hold_parse(const cn_xml_doc_t *d, bool *on)
{
    int root = cn_xml_root(d);
    const char *name = cn_xml_name(d, root);
    size_t n = 0;
    const char *t =
        name && strcmp(name, "LegalHold") == 0 ? lock_text(d, root, "Status", &n) : NULL;
    if (lock_is(t, n, "ON") || lock_is(t, n, "OFF")) {
        *on = lock_is(t, n, "ON");
        return CN_S3E_NONE;
    }
    return CN_S3E_MALFORMED_XML;
}

static void legal_hold_put_done(cn__s3_rq_t *q)
{
    version_put_done(q, true);
}

void cn__s3_legal_hold_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__LOCK_BODY_MAX, legal_hold_put_done);
}

void cn__s3_legal_hold_get(cn__s3_rq_t *q)
{
    version_get(q, true);
}

/* ---- headers of a write, and their echo ---------------------------------------------------- */

bool cn__s3_lock_hdrs(cn__s3_rq_t *q, cn_objects_retention_t *r, bool *given)
{
    memset(r, 0, sizeof *r);
    r->legal_hold = -1;
    *given = false;
    const char *mode = cn_http_req_header(q->r, "x-amz-object-lock-mode");
    const char *date = cn_http_req_header(q->r, "x-amz-object-lock-retain-until-date");
    const char *hold = cn_http_req_header(q->r, "x-amz-object-lock-legal-hold");
    if (!mode && !date && !hold)
        return true;
    if (!mode != !date) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "x-amz-object-lock-mode and x-amz-object-lock-retain-until-date must both "
                     "be supplied");
        return false;
    }
    if (mode) {
        r->mode = lock_mode(mode, strlen(mode));
        if (r->mode == CN_OBJ_LOCK_NONE) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Unknown wormMode directive.");
            return false;
        }
        if (!cn__s3_lock_date(date, strlen(date), &r->until_ms)) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "The retain until date must be provided in ISO 8601 format");
            return false;
        }
        if (r->until_ms <= cn_wall_ms()) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "The retain until date must be in the future!");
            return false;
        }
    }
    if (hold) {
        if (strcmp(hold, "ON") != 0 && strcmp(hold, "OFF") != 0) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Legal Hold must be either of 'ON' or 'OFF'");
            return false;
        }
        r->legal_hold = strcmp(hold, "ON") == 0;
    }
    /* The token's object:lock and the bucket's object lock are the service's
     * to check (cn__lock_put_check), after the write is authorized. */
    *given = true;
    return true;
}

void cn__s3_lock_echo(cn__s3_rq_t *q, const cn_objects_retention_t *r)
{
    if (r->mode != CN_OBJ_LOCK_NONE) {
        char date[CN_RFC3339_LEN];
        cn__s3_iso_date(r->until_ms, date);
        cn_http_resp_header(q->r, "x-amz-object-lock-mode", lock_mode_str(r->mode));
        cn_http_resp_header(q->r, "x-amz-object-lock-retain-until-date", date);
    }
    if (r->legal_hold > 0 || r->mode != CN_OBJ_LOCK_NONE)
        cn_http_resp_header(q->r, "x-amz-object-lock-legal-hold", r->legal_hold > 0 ? "ON" : "OFF");
}

void cn__s3_lock_echo_version(cn__s3_rq_t *q, int64_t version_id)
{
    cn_objects_retention_t r;
    if (cn_objects_version_lock(q->s3->objects, version_id, &r) == CN_OK)
        cn__s3_lock_echo(q, &r);
}
