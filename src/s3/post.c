/* Browser form uploads: POST /BUCKET with multipart/form-data (S3 "POST
 * Object").
 *
 * The body is parsed incrementally (cn__form_*: no allocation, slices of
 * the input handed out).  The fields before the file part are collected
 * into a bounded store (CN__POST_PRE_MAX); when the file part starts, the
 * form is judged once: the signature (SigV4 over the base64 policy, or the
 * older base64 HMAC-SHA1 "signature" with AWSAccessKeyId; none at all for
 * an anonymous upload), the key with ${filename} replaced, the policy
 * document (expiration and conditions, $key meaning that replaced key;
 * every field other than the exempt ones must be covered), the ACL, the
 * metadata.  Then a put session starts and the
 * file's bytes stream into it; the upload is committed when the body ends
 * (fields after the file are ignored, as S3 ignores them).  The put is
 * authorized by the objects service like any PutObject.
 *
 * Never holds the file in memory; never decides an access itself. */
#include "s3_int.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CN__MOD "s3"
#define CN__POST_PRE_MAX (20u * 1024) /* bytes of fields before the file */
#define CN__POST_MAX_FIELDS 128

/* ======================================================================
 * multipart/form-data (RFC 7578 / RFC 2046), incremental
 * ====================================================================== */

enum {
    CN__F_PREAMBLE,
    CN__F_AFTER_DELIM,
    CN__F_AFTER_DASH,
    CN__F_AFTER_WS,
    CN__F_HEADERS,
    CN__F_DATA,
    CN__F_EPILOGUE,
    CN__F_ERROR
};

bool cn__form_boundary(const char *content_type, char *out, size_t cap)
{
    /* multipart/form-data; boundary=XYZ  (or boundary="XYZ") */
    if (!content_type)
        return false;
    const char *p = content_type;
    while (*p == ' ')
        p++;
    if (strncasecmp(p, "multipart/form-data", 19) != 0)
        return false;
    p += 19;
    while (*p) {
        while (*p == ';' || *p == ' ' || *p == '\t')
            p++;
        const char *n = p;
        while (*p && *p != '=' && *p != ';')
            p++;
        size_t nl = (size_t)(p - n);
        while (nl && (n[nl - 1] == ' ' || n[nl - 1] == '\t'))
            nl--;
        if (*p != '=') {
            continue;
        }
        p++;
        const char *v;
        size_t vl;
        if (*p == '"') {
            v = ++p;
            while (*p && *p != '"')
                p++;
            if (!*p)
                return false;
            vl = (size_t)(p - v);
            p++;
        } else {
            v = p;
            while (*p && *p != ';' && *p != ' ' && *p != '\t')
                p++;
            vl = (size_t)(p - v);
        }
        if (nl == 8 && strncasecmp(n, "boundary", 8) == 0) {
            if (vl == 0 || vl > CN__FORM_BOUNDARY_MAX || vl + 1 > cap || v[vl - 1] == ' ')
                return false;
            for (size_t i = 0; i < vl; i++) {
                char c = v[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      strchr("'()+_,-./:=? ", c)))
                    return false;
            }
            memcpy(out, v, vl);
            out[vl] = 0;
            return true;
        }
    }
    return false;
}

void cn__form_init(cn__form_t *f, const char *boundary)
{
    memset(f, 0, sizeof *f);
    size_t bl = strlen(boundary);
    if (bl > CN__FORM_BOUNDARY_MAX)
        bl = CN__FORM_BOUNDARY_MAX;
    memcpy(f->delim, "\r\n--", 4);
    memcpy(f->delim + 4, boundary, bl);
    f->dlen = 4 + bl;
    /* The first delimiter has no CRLF before it: start as if one was seen. */
    f->match = 2;
    f->state = CN__F_PREAMBLE;
}

/* Copies a quoted-string or token parameter value into out (cap bytes). */
static bool param_value(const char **pp, const char *end, char *out, size_t cap)
{
    const char *p = *pp;
    size_t n = 0;
    if (p < end && *p == '"') {
        p++;
        while (p < end && *p != '"') {
            if (*p == '\\' && p + 1 < end)
                p++;
            if (n + 1 >= cap)
                return false;
            out[n++] = *p++;
        }
        if (p == end)
            return false;
        p++;
    } else {
        while (p < end && *p != ';' && *p != ' ' && *p != '\t') {
            if (n + 1 >= cap)
                return false;
            out[n++] = *p++;
        }
    }
    out[n] = 0;
    *pp = p;
    return true;
}

static bool disposition(cn__form_t *f, const char *v, const char *end)
{
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    if ((size_t)(end - v) < 9 || strncasecmp(v, "form-data", 9) != 0)
        return false;
    v += 9;
    while (v < end) {
        while (v < end && (*v == ';' || *v == ' ' || *v == '\t'))
            v++;
        const char *n = v;
        while (v < end && *v != '=' && *v != ';')
            v++;
        size_t nl = (size_t)(v - n);
        while (nl && (n[nl - 1] == ' ' || n[nl - 1] == '\t'))
            nl--;
        if (v == end || *v != '=')
            continue;
        v++;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        char tmp[CN__FORM_FILENAME_MAX + 1];
        if (!param_value(&v, end, tmp, sizeof tmp))
            return false;
        if (nl == 4 && strncasecmp(n, "name", 4) == 0) {
            if (strlen(tmp) > CN__FORM_NAME_MAX)
                return false;
            snprintf(f->part.name, sizeof f->part.name, "%s", tmp);
            f->has_name = true;
        } else if (nl == 8 && strncasecmp(n, "filename", 8) == 0) {
            snprintf(f->part.filename, sizeof f->part.filename, "%s", tmp);
            f->part.has_filename = true;
        }
    }
    return true;
}

static bool header_line(cn__form_t *f)
{
    const char *l = f->line, *end = f->line + f->line_len;
    const char *colon = memchr(l, ':', f->line_len);
    if (!colon || colon == l)
        return false;
    size_t nl = (size_t)(colon - l);
    const char *v = colon + 1;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (nl == 19 && strncasecmp(l, "Content-Disposition", 19) == 0)
        return disposition(f, v, end);
    if (nl == 12 && strncasecmp(l, "Content-Type", 12) == 0) {
        size_t vl = (size_t)(end - v);
        if (vl >= sizeof f->part.content_type)
            return false;
        memcpy(f->part.content_type, v, vl);
        f->part.content_type[vl] = 0;
    }
    return true;
}

/* The delimiter search shared by the preamble (discard) and part data.
 * Held-back bytes of a partial match are re-emitted from the delimiter
 * itself (a boundary holds no CR, so a mismatch restarts the search at the
 * current byte). */
static int scan(cn__form_t *f, const uint8_t *p, size_t n, size_t *i, const cn__form_cb_t *cb,
                void *ctx, bool emit)
{
    while (*i < n) {
        if (f->match == 0) {
            const uint8_t *cr = memchr(p + *i, '\r', n - *i);
            size_t upto = cr ? (size_t)(cr - p) : n;
            if (emit && upto > *i) {
                int rc = cb->data(ctx, p + *i, upto - *i);
                if (rc < 0)
                    return rc;
            }
            *i = upto;
            if (!cr)
                return 0;
            f->match = 1;
            (*i)++;
            continue;
        }
        if (p[*i] == (uint8_t)f->delim[f->match]) {
            f->match++;
            (*i)++;
            if (f->match == f->dlen) {
                f->match = 0;
                return 1; /* a delimiter */
            }
            continue;
        }
        if (emit) {
            int rc = cb->data(ctx, (const uint8_t *)f->delim, f->match);
            if (rc < 0)
                return rc;
        }
        f->match = 0;
    }
    return 0;
}

int cn__form_feed(cn__form_t *f, const uint8_t *p, size_t n, const cn__form_cb_t *cb, void *ctx)
{
    size_t i = 0;
    while (i < n) {
        switch (f->state) {
        case CN__F_PREAMBLE:
        case CN__F_DATA: {
            bool data = f->state == CN__F_DATA;
            int rc = scan(f, p, n, &i, cb, ctx, data);
            if (rc < 0) {
                f->state = CN__F_ERROR;
                return rc;
            }
            if (rc == 1) {
                if (data && (rc = cb->part_end(ctx)) < 0) {
                    f->state = CN__F_ERROR;
                    return rc;
                }
                f->state = CN__F_AFTER_DELIM;
            }
            break;
        }
        case CN__F_AFTER_DELIM:
            if (p[i] == '-') {
                f->state = CN__F_AFTER_DASH;
            } else if (p[i] == '\r') {
                f->state = CN__F_AFTER_WS;
            } else if (p[i] != ' ' && p[i] != '\t') {
                f->state = CN__F_ERROR;
                return CN_E_INVALID;
            }
            i++;
            break;
        case CN__F_AFTER_DASH:
            if (p[i++] != '-') {
                f->state = CN__F_ERROR;
                return CN_E_INVALID;
            }
            f->state = CN__F_EPILOGUE;
            break;
        case CN__F_AFTER_WS:
            if (p[i++] != '\n') {
                f->state = CN__F_ERROR;
                return CN_E_INVALID;
            }
            memset(&f->part, 0, sizeof f->part);
            f->has_name = false;
            f->nheaders = 0;
            f->line_len = 0;
            f->state = CN__F_HEADERS;
            break;
        case CN__F_HEADERS: {
            uint8_t c = p[i++];
            if (c != '\n') {
                if (f->line_len >= sizeof f->line) {
                    f->state = CN__F_ERROR;
                    return CN_E_INVALID;
                }
                f->line[f->line_len++] = (char)c;
                break;
            }
            if (f->line_len == 0 || f->line[f->line_len - 1] != '\r') {
                f->state = CN__F_ERROR;
                return CN_E_INVALID;
            }
            f->line_len--;
            if (f->line_len == 0) {
                if (!f->has_name) {
                    f->state = CN__F_ERROR;
                    return CN_E_INVALID;
                }
                int rc = cb->part(ctx, &f->part);
                if (rc < 0) {
                    f->state = CN__F_ERROR;
                    return rc;
                }
                f->state = CN__F_DATA;
                f->match = 0;
                break;
            }
            if (++f->nheaders > CN__FORM_MAX_HEADERS || !header_line(f)) {
                f->state = CN__F_ERROR;
                return CN_E_INVALID;
            }
            f->line_len = 0;
            break;
        }
        case CN__F_EPILOGUE: return 0;
        default: return CN_E_INVALID;
        }
    }
    return 0;
}

bool cn__form_done(const cn__form_t *f)
{
    return f->state == CN__F_EPILOGUE;
}

/* ======================================================================
 * the policy document
 * ====================================================================== */

static bool name_eq(const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && strncasecmp(a, b, al) == 0;
}

/* The field named name (case-insensitive), or NULL. */
static cn__post_field_t *post_field(cn__post_field_t *fs, size_t n, const char *name, size_t nl)
{
    for (size_t i = 0; i < n; i++)
        if (name_eq(fs[i].name, fs[i].nlen, name, nl))
            return &fs[i];
    return NULL;
}

/* "2026-01-02T03:04:05Z" or with fractional seconds. */
static bool iso8601(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
        return false;
    const char *p = s + 19;
    int frac = 0, digits = 0;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (digits < 3)
                frac = frac * 10 + (*p - '0');
            digits++;
            p++;
        }
        if (!digits)
            return false;
        while (digits < 3) {
            frac *= 10;
            digits++;
        }
    }
    if (strcmp(p, "Z") != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60 || y < 1970)
        return false;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    *ms = (int64_t)timegm(&tm) * 1000 + frac;
    return true;
}

static bool json_int(json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *e = NULL;
        errno = 0;
        long long x = strtoll(s, &e, 10);
        if (!*s || *e || errno)
            return false;
        *out = x;
        return true;
    }
    return false;
}

/* The value a condition names: "bucket" is always the URL's bucket (a
 * bucket field is covered by it); a missing field reads as "". */
static void cond_value(cn__post_field_t *fs, size_t nf, const char *bucket, const char *name,
                       size_t nl, const char **v, size_t *vl)
{
    cn__post_field_t *f = post_field(fs, nf, name, nl);
    if (f)
        f->covered = true;
    if (name_eq(name, nl, "bucket", 6)) {
        *v = bucket;
        *vl = strlen(bucket);
    } else if (f) {
        *v = f->value;
        *vl = f->vlen;
    } else {
        *v = "";
        *vl = 0;
    }
}

static bool starts_with(const char *v, size_t vl, const char *pre, size_t pl, bool list)
{
    if (!list)
        return vl >= pl && memcmp(v, pre, pl) == 0;
    /* Content-Type may list several values: each must start with it. */
    size_t i = 0;
    while (i <= vl) {
        size_t j = i;
        while (j < vl && v[j] != ',')
            j++;
        size_t s = i;
        while (s < j && v[s] == ' ')
            s++;
        if (j - s < pl || memcmp(v + s, pre, pl) != 0)
            return false;
        i = j + 1;
    }
    return true;
}

cn_s3_err_t cn__s3_post_policy_check(const char *json, size_t len, int64_t now_ms,
                                     const char *bucket, cn__post_field_t *fs, size_t nf,
                                     int64_t *len_min, int64_t *len_max, char *why, size_t why_len)
{
    *len_min = 0;
    *len_max = INT64_MAX;
    why[0] = 0;
    json_error_t jerr;
    json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    cn_s3_err_t e = CN_S3E_NONE;
    if (!doc || !json_is_object(doc)) {
        snprintf(why, why_len, "Invalid Policy: Invalid JSON.");
        e = CN_S3E_INVALID_POLICY_DOCUMENT;
        goto out;
    }
    json_t *exp = json_object_get(doc, "expiration");
    json_t *conds = json_object_get(doc, "conditions");
    int64_t exp_ms = 0;
    if (!json_is_string(exp) || !iso8601(json_string_value(exp), &exp_ms)) {
        snprintf(why, why_len, "Invalid Policy: Invalid 'expiration' value.");
        e = CN_S3E_INVALID_POLICY_DOCUMENT;
        goto out;
    }
    if (!json_is_array(conds)) {
        snprintf(why, why_len, "Invalid Policy: Policy missing 'conditions'.");
        e = CN_S3E_INVALID_POLICY_DOCUMENT;
        goto out;
    }
    if (exp_ms <= now_ms) {
        snprintf(why, why_len, "Invalid according to Policy: Policy expired.");
        e = CN_S3E_ACCESS_DENIED;
        goto out;
    }
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        if (json_is_object(c)) {
            const char *k;
            json_t *v;
            if (json_object_size(c) == 0) {
                snprintf(why, why_len, "Invalid Policy: Invalid Simple-Condition.");
                e = CN_S3E_INVALID_POLICY_DOCUMENT;
                goto out;
            }
            json_object_foreach(c, k, v)
            {
                if (!json_is_string(v)) {
                    snprintf(why, why_len,
                             "Invalid Policy: Invalid Simple-Condition: "
                             "value must be a string.");
                    e = CN_S3E_INVALID_POLICY_DOCUMENT;
                    goto out;
                }
                const char *fv;
                size_t fl;
                cond_value(fs, nf, bucket, k, strlen(k), &fv, &fl);
                size_t wl = json_string_length(v);
                if (fl != wl || memcmp(fv, json_string_value(v), wl) != 0) {
                    snprintf(why, why_len,
                             "Invalid according to Policy: Policy Condition "
                             "failed: [\"eq\", \"$%.64s\", \"%.64s\"]",
                             k, json_string_value(v));
                    e = CN_S3E_ACCESS_DENIED;
                    goto out;
                }
            }
            continue;
        }
        if (!json_is_array(c) || json_array_size(c) != 3 || !json_is_string(json_array_get(c, 0))) {
            snprintf(why, why_len, "Invalid Policy: Invalid condition.");
            e = CN_S3E_INVALID_POLICY_DOCUMENT;
            goto out;
        }
        const char *op = json_string_value(json_array_get(c, 0));
        json_t *a1 = json_array_get(c, 1), *a2 = json_array_get(c, 2);
        if (strcasecmp(op, "content-length-range") == 0) {
            int64_t lo, hi;
            if (!json_int(a1, &lo) || !json_int(a2, &hi) || lo < 0 || hi < lo) {
                snprintf(why, why_len, "Invalid Policy: Invalid content-length-range.");
                e = CN_S3E_INVALID_POLICY_DOCUMENT;
                goto out;
            }
            *len_min = lo > *len_min ? lo : *len_min;
            *len_max = hi < *len_max ? hi : *len_max;
            continue;
        }
        bool eq = strcasecmp(op, "eq") == 0, sw = strcasecmp(op, "starts-with") == 0;
        if ((!eq && !sw) || !json_is_string(a1) || !json_is_string(a2) ||
            json_string_value(a1)[0] != '$') {
            snprintf(why, why_len, "Invalid Policy: Invalid condition '%.32s'.", op);
            e = CN_S3E_INVALID_POLICY_DOCUMENT;
            goto out;
        }
        const char *name = json_string_value(a1) + 1;
        size_t nl = json_string_length(a1) - 1;
        const char *want = json_string_value(a2);
        size_t wl = json_string_length(a2);
        const char *fv;
        size_t fl;
        cond_value(fs, nf, bucket, name, nl, &fv, &fl);
        bool ok = eq ? (fl == wl && memcmp(fv, want, wl) == 0)
                     : starts_with(fv, fl, want, wl, name_eq(name, nl, "content-type", 12));
        if (!ok) {
            snprintf(why, why_len,
                     "Invalid according to Policy: Policy Condition failed: "
                     "[\"%s\", \"$%.64s\", \"%.64s\"]",
                     eq ? "eq" : "starts-with", name, want);
            e = CN_S3E_ACCESS_DENIED;
            goto out;
        }
    }
    /* Every field must be covered, except these. */
    for (size_t k = 0; k < nf; k++) {
        static const char *const exempt[] = { "policy", "x-amz-signature", "signature",
                                              "awsaccesskeyid", "file" };
        bool ex =
            fs[k].covered || (fs[k].nlen >= 9 && strncasecmp(fs[k].name, "x-ignore-", 9) == 0);
        for (size_t j = 0; !ex && j < sizeof exempt / sizeof exempt[0]; j++)
            ex = name_eq(fs[k].name, fs[k].nlen, exempt[j], strlen(exempt[j]));
        if (!ex) {
            snprintf(why, why_len, "Invalid according to Policy: Extra input fields: %.*s",
                     (int)(fs[k].nlen > 64 ? 64 : fs[k].nlen), fs[k].name);
            e = CN_S3E_ACCESS_DENIED;
            goto out;
        }
    }
out:
    json_decref(doc);
    return e;
}

/* ======================================================================
 * the operation
 * ====================================================================== */

typedef struct {
    cn__s3_rq_t *q;
    cn__form_t form;
    char *store; /* field names and values, NUL-separated */
    size_t store_len;
    cn__post_field_t fields[CN__POST_MAX_FIELDS];
    size_t nfields;
    int part; /* 0 none, 1 a field, 2 the file, 3 ignored */
    bool file_seen;
    /* once the form is judged */
    cn_objects_put_t *put;
    cn_objects_kv_t meta[64 + CN__S3_SYSTEM_META_COUNT];
    size_t nmeta;
    cn_authz_acl_t *acl;
    char *key;
    uint8_t md5[CN_MD5_LEN];
    cn_http_cksum_t ck;
    cn_http_cksum_alg_t ck_alg;
    const char *ck_want;
    int64_t len_min, len_max;
    uint64_t size;
    int status; /* success_action_status */
    const char *redirect;
} cn__post_t;

static const char *post_fv(cn__post_t *s, const char *name)
{
    cn__post_field_t *f = post_field(s->fields, s->nfields, name, strlen(name));
    return f ? f->value : NULL;
}

static void post_cleanup(cn__s3_rq_t *q)
{
    cn__post_t *s = q->op;
    if (!s)
        return;
    cn_objects_put_abort(s->put);
    cn_http_cksum_free(&s->ck);
    free(s->store);
    free(s->acl);
    free(s->key);
    free(s);
    q->op = NULL;
}

/* Checks the form's credential.  true with q's principal set (or left
 * anonymous); false after answering. */
static bool post_auth(cn__post_t *s, bool *signed_out)
{
    cn__s3_rq_t *q = s->q;
    const char *policy = post_fv(s, "policy");
    const char *alg = post_fv(s, "x-amz-algorithm");
    const char *cred = post_fv(s, "x-amz-credential");
    const char *date = post_fv(s, "x-amz-date");
    const char *sig4 = post_fv(s, "x-amz-signature");
    const char *akid = post_fv(s, "AWSAccessKeyId");
    const char *sig2 = post_fv(s, "signature");
    *signed_out = false;
    if (!q->anonymous)
        return true; /* a header-signed POST: the framework verified it */
    bool v4 = alg || cred || sig4, v2 = akid || sig2;
    if (!policy) {
        if (v4 || v2) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "Bucket POST must contain a field named 'policy'.");
            return false;
        }
        return true; /* anonymous: authz decides */
    }
    if (!v4 && !v2) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "Bucket POST must contain a field named 'x-amz-signature' or "
                     "'AWSAccessKeyId' with a policy.");
        return false;
    }
    char key[CN_SIGV4_MAX_KEY] = "", date8[9] = "", region[CN_SIGV4_MAX_REGION] = "";
    if (v4) {
        if (!alg || strcmp(alg, "AWS4-HMAC-SHA256") != 0) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "x-amz-algorithm must be AWS4-HMAC-SHA256");
            return false;
        }
        if (!cred || !date || !sig4) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "Bucket POST must contain the fields "
                         "x-amz-credential, x-amz-date and x-amz-signature.");
            return false;
        }
        /* AKID/YYYYMMDD/REGION/s3/aws4_request */
        const char *p1 = strchr(cred, '/');
        const char *p2 = p1 ? strchr(p1 + 1, '/') : NULL;
        const char *p3 = p2 ? strchr(p2 + 1, '/') : NULL;
        int64_t dms;
        if (!p1 || !p2 || !p3 || (size_t)(p1 - cred) >= sizeof key || p2 - p1 != 9 ||
            (size_t)(p3 - p2 - 1) >= sizeof region || strcmp(p3, "/s3/aws4_request") != 0 ||
            cn_sigv4_parse_date(date, strlen(date), &dms) != CN_OK ||
            strncmp(date, p1 + 1, 8) != 0) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Invalid x-amz-credential or x-amz-date.");
            return false;
        }
        memcpy(key, cred, (size_t)(p1 - cred));
        memcpy(date8, p1 + 1, 8);
        memcpy(region, p2 + 1, (size_t)(p3 - p2 - 1));
    } else {
        if (!akid || !sig2) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "Bucket POST must contain the fields "
                         "AWSAccessKeyId and signature.");
            return false;
        }
        snprintf(key, sizeof key, "%s", akid);
    }
    uint8_t secret[CN_SECRET_MAX];
    size_t slen = 0;
    cn_err_t e = cn_identity_lookup_secret(q->s3->identity, key, secret, sizeof secret, &slen,
                                           &q->principal);
    if (e < 0) {
        memset(secret, 0, sizeof secret);
        cn__s3_error(q, e == CN_E_AUTH ? CN_S3E_INVALID_ACCESS_KEY_ID : CN_S3E_INTERNAL_ERROR,
                     NULL);
        return false;
    }
    bool ok;
    if (v4) {
        uint8_t sk[32], mac[32];
        char hex[65];
        cn_sigv4_signing_key_cached(secret, slen, date8, region, "s3", sk);
        cn_hmac_sha256(sk, sizeof sk, policy, strlen(policy), mac);
        cn_hex_encode(mac, sizeof mac, hex);
        ok = strlen(sig4) == 64 && cn_ct_equal(hex, sig4, 64);
        memset(sk, 0, sizeof sk);
    } else {
        uint8_t mac[EVP_MAX_MD_SIZE];
        unsigned ml = 0;
        char b64[64];
        ok = HMAC(EVP_sha1(), secret, (int)slen, (const uint8_t *)policy, strlen(policy), mac,
                  &ml) != NULL;
        if (ok) {
            cn_base64_encode(mac, ml, b64);
            ok = strlen(sig2) == strlen(b64) && cn_ct_equal(b64, sig2, strlen(b64));
        }
    }
    memset(secret, 0, sizeof secret);
    if (!ok) {
        memset(&q->principal, 0, sizeof q->principal);
        cn__s3_error(q, CN_S3E_SIGNATURE_DOES_NOT_MATCH, NULL);
        return false;
    }
    if (cn_identity_rate_take(q->s3->identity, q->principal.token_id) == CN_E_RATE_LIMITED) {
        cn__s3_error(q, CN_S3E_SLOW_DOWN, NULL);
        return false;
    }
    q->anonymous = false;
    q->orq.principal = &q->principal;
    *signed_out = true;
    return true;
}

/* The policy document: decoded and checked against the fields, the key
 * field standing for s->key (the key after substitution; set before).
 * false after answering. */
static bool post_policy(cn__post_t *s)
{
    cn__s3_rq_t *q = s->q;
    const char *policy = post_fv(s, "policy");
    s->len_min = 0;
    s->len_max = INT64_MAX;
    if (!policy)
        return true;
    size_t pl = strlen(policy);
    char *json = malloc(pl / 4 * 3 + 4);
    if (!json) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return false;
    }
    long jl = cn_base64_decode(policy, pl, json, pl / 4 * 3 + 4);
    if (jl < 0) {
        free(json);
        cn__s3_error(q, CN_S3E_INVALID_POLICY_DOCUMENT, "Invalid Policy: Invalid Base64.");
        return false;
    }
    char why[256];
    for (size_t i = 0; i < s->nfields; i++)
        s->fields[i].covered = false;
    /* The conditions on $key judge the key the object gets, with ${filename}
     * already replaced (["starts-with", "$key", "user/"] passes for
     * "user/${filename}" only when the result is under user/). */
    cn__post_field_t *kf = post_field(s->fields, s->nfields, "key", 3);
    if (kf && s->key) {
        kf->value = s->key;
        kf->vlen = strlen(s->key);
    }
    cn_s3_err_t e = cn__s3_post_policy_check(json, (size_t)jl, cn_wall_ms(), q->bucket, s->fields,
                                             s->nfields, &s->len_min, &s->len_max, why, sizeof why);
    free(json);
    if (e != CN_S3E_NONE) {
        cn__s3_error(q, e, why[0] ? why : NULL);
        return false;
    }
    return true;
}

/* The key with ${filename} replaced.  NULL after answering. */
static char *post_key(cn__post_t *s, const char *filename)
{
    const char *k = post_fv(s, "key");
    if (!k || !*k) {
        cn__s3_error(s->q, CN_S3E_INVALID_ARGUMENT,
                     "Bucket POST must contain a field named 'key'.  If it is specified, "
                     "please check the order of the fields.");
        return NULL;
    }
    /* Browsers send a bare name; older ones sent the whole path. */
    const char *base = filename;
    for (const char *p = filename; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    cn_buf_t b = { 0 };
    const char *p = k;
    cn_err_t e = CN_OK;
    while (e == CN_OK && *p) {
        const char *m = strstr(p, "${filename}");
        if (!m) {
            e = cn_buf_append_str(&b, p);
            break;
        }
        e = cn_buf_append(&b, p, (size_t)(m - p));
        if (e == CN_OK)
            e = cn_buf_append_str(&b, base);
        p = m + 11;
    }
    if (e == CN_OK)
        e = cn_buf_append(&b, "", 1);
    if (e != CN_OK) {
        cn_buf_free(&b);
        cn__s3_error(s->q, CN_S3E_INTERNAL_ERROR, NULL);
        return NULL;
    }
    size_t kl = b.len - 1;
    if (kl == 0 || kl > CN_OBJECT_KEY_MAX) {
        cn_buf_free(&b);
        cn__s3_error(s->q, kl ? CN_S3E_KEY_TOO_LONG : CN_S3E_INVALID_ARGUMENT,
                     kl ? NULL : "the key is empty");
        return NULL;
    }
    return (char *)b.data;
}

/* Put arguments from the fields.  false after answering. */
static bool post_args(cn__post_t *s, cn_objects_put_args_t *a)
{
    cn__s3_rq_t *q = s->q;
    memset(a, 0, sizeof *a);
    size_t umeta = 0;
    for (size_t i = 0; i < s->nfields; i++) {
        cn__post_field_t *f = &s->fields[i];
        if (f->nlen > 11 && strncasecmp(f->name, "x-amz-meta-", 11) == 0) {
            umeta += f->nlen - 11 + f->vlen;
            if (umeta > 2048 || s->nmeta >= 64) {
                cn__s3_error(q, CN_S3E_METADATA_TOO_LARGE, NULL);
                return false;
            }
            /* Lowercase in place: names are ours (the store). */
            for (size_t j = 0; j < f->nlen; j++)
                if (f->name[j] >= 'A' && f->name[j] <= 'Z')
                    f->name[j] = (char)(f->name[j] - 'A' + 'a');
            s->meta[s->nmeta].key = f->name + 11;
            s->meta[s->nmeta].value = f->value;
            s->nmeta++;
        } else if (name_eq(f->name, f->nlen, "tagging", 7) ||
                   (name_eq(f->name, f->nlen, "x-amz-storage-class", 19) &&
                    strcmp(f->value, "STANDARD") != 0) ||
                   (f->nlen > 28 &&
                    strncasecmp(f->name, "x-amz-server-side-encryption", 28) == 0)) {
            char m[160];
            snprintf(m, sizeof m, "the field %.64s is not supported", f->name);
            cn__s3_error(q, CN_S3E_NOT_IMPLEMENTED, m);
            return false;
        }
    }
    for (size_t i = 0; i < CN__S3_SYSTEM_META_COUNT; i++) {
        const char *v = post_fv(s, cn__s3_system_meta[i]);
        if (v && *v) {
            s->meta[s->nmeta].key = cn__s3_system_meta[i];
            s->meta[s->nmeta].value = v;
            s->nmeta++;
        }
    }
    a->meta = s->meta;
    a->nmeta = s->nmeta;
    a->content_type = post_fv(s, "Content-Type");
    const char *canned = post_fv(s, "acl");
    if (canned) {
        char bowner[CN_ACCOUNT_NAME_MAX + 1] = "";
        cn__s3_bucket_owner(q, bowner);
        s->acl = malloc(sizeof *s->acl);
        if (!s->acl) {
            cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
            return false;
        }
        const char *owner =
            q->anonymous ? (bowner[0] ? bowner : "anonymous") : q->principal.account;
        if (cn_authz_acl_canned(s->acl, canned, strlen(canned), owner, bowner[0] ? bowner : NULL,
                                false) != CN_OK) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "unknown canned ACL");
            return false;
        }
        a->acl = s->acl;
        a->canned_acl = canned;
    }
    const char *md5 = post_fv(s, "Content-MD5");
    if (md5) {
        uint8_t raw[CN_MD5_LEN + 3];
        if (strlen(md5) != 24 || cn_base64_decode(md5, 24, raw, sizeof raw) != CN_MD5_LEN) {
            cn__s3_error(q, CN_S3E_INVALID_DIGEST, NULL);
            return false;
        }
        memcpy(s->md5, raw, CN_MD5_LEN);
        a->expect_md5 = s->md5;
    }
    for (size_t i = 0; i < s->nfields; i++) {
        cn__post_field_t *f = &s->fields[i];
        if (f->nlen <= 15 || strncasecmp(f->name, "x-amz-checksum-", 15) != 0 ||
            name_eq(f->name, f->nlen, "x-amz-checksum-algorithm", 24))
            continue;
        cn_http_cksum_alg_t alg = cn_http_cksum_parse(f->name);
        if (alg == CN_CKSUM_NONE || s->ck_alg != CN_CKSUM_NONE) {
            cn__s3_error(q, CN_S3E_INVALID_REQUEST,
                         "Expecting a single x-amz-checksum- field of a known algorithm");
            return false;
        }
        if (cn_http_cksum_init(&s->ck, alg) != CN_OK) {
            cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
            return false;
        }
        s->ck_alg = alg;
        s->ck_want = f->value;
    }
    const char *st = post_fv(s, "success_action_status");
    s->status = st && (!strcmp(st, "200") || !strcmp(st, "201")) ? atoi(st) : 204;
    const char *rd = post_fv(s, "success_action_redirect");
    if (!rd)
        rd = post_fv(s, "redirect");
    if (rd && (!strncasecmp(rd, "http://", 7) || !strncasecmp(rd, "https://", 8)))
        s->redirect = rd;
    return true;
}

/* The file part begins: judge the form, start the put.  0 or the request
 * was answered (< 0). */
static int post_begin(cn__post_t *s, const cn__form_part_t *part)
{
    cn__s3_rq_t *q = s->q;
    bool is_signed;
    if (!post_auth(s, &is_signed))
        return CN_E_INVALID;
    s->key = post_key(s, part->filename);
    if (!s->key || !post_policy(s))
        return CN_E_INVALID;
    cn_objects_put_args_t a;
    if (!post_args(s, &a))
        return CN_E_INVALID;
    cn_err_t e = cn_objects_put_begin(q->s3->objects, &q->orq, q->bucket, s->key, &a, -1, &s->put);
    if (e < 0) {
        if (e == CN_E_NOT_FOUND && q->orq.what != CN_OBJ_WHAT_BUCKET)
            q->orq.what = CN_OBJ_WHAT_BUCKET;
        cn__s3_fail(q, e);
        return e;
    }
    return 0;
}

static int post_part(void *ctx, const cn__form_part_t *part)
{
    cn__post_t *s = ctx;
    if (s->file_seen) {
        s->part = 3; /* after the file: ignored, as S3 does */
        return 0;
    }
    if (strcasecmp(part->name, "file") == 0) {
        s->file_seen = true;
        s->part = 2;
        return post_begin(s, part);
    }
    size_t nl = strlen(part->name);
    if (s->nfields >= CN__POST_MAX_FIELDS || nl + 2 > CN__POST_PRE_MAX - s->store_len) {
        cn__s3_error(s->q, CN_S3E_MAX_POST_PRE_DATA, NULL);
        return CN_E_LIMIT;
    }
    if (post_field(s->fields, s->nfields, part->name, nl)) {
        char m[320];
        snprintf(m, sizeof m, "the field %.256s appears more than once", part->name);
        cn__s3_error(s->q, CN_S3E_INVALID_ARGUMENT, m);
        return CN_E_INVALID;
    }
    cn__post_field_t *f = &s->fields[s->nfields++];
    memset(f, 0, sizeof *f);
    /* Offsets until the value ends (the store does not move: fixed size). */
    f->name = s->store + s->store_len;
    memcpy(f->name, part->name, nl + 1);
    f->nlen = nl;
    s->store_len += nl + 1;
    f->value = s->store + s->store_len;
    s->part = 1;
    return 0;
}

static int post_data(void *ctx, const uint8_t *p, size_t n)
{
    cn__post_t *s = ctx;
    if (s->part == 1) {
        cn__post_field_t *f = &s->fields[s->nfields - 1];
        if (n + 1 > CN__POST_PRE_MAX - s->store_len) {
            cn__s3_error(s->q, CN_S3E_MAX_POST_PRE_DATA, NULL);
            return CN_E_LIMIT;
        }
        memcpy(f->value + f->vlen, p, n);
        f->vlen += n;
        s->store_len += n;
        return 0;
    }
    if (s->part != 2)
        return 0;
    if (n > (uint64_t)s->len_max - s->size) {
        cn__s3_error(s->q, CN_S3E_ENTITY_TOO_LARGE, NULL);
        return CN_E_TOO_LARGE;
    }
    s->size += n;
    if (s->ck_alg)
        cn_http_cksum_update(&s->ck, p, n);
    cn_err_t e = cn_objects_put_write(s->put, p, n);
    if (e < 0) {
        cn__s3_fail(s->q, e);
        return e;
    }
    return 0;
}

static int post_part_end(void *ctx)
{
    cn__post_t *s = ctx;
    if (s->part == 1) {
        cn__post_field_t *f = &s->fields[s->nfields - 1];
        f->value[f->vlen] = 0;
        s->store_len += 1;
    }
    s->part = 0;
    return 0;
}

static const cn__form_cb_t cn__post_cb = { post_part, post_data, post_part_end };

static int post_body(cn__s3_rq_t *q, const uint8_t *p, size_t n)
{
    cn__post_t *s = q->op;
    int rc = cn__form_feed(&s->form, p, n, &cn__post_cb, s);
    if (rc < 0 && !cn_http_req_responded(q->r))
        cn__s3_error(q, CN_S3E_MALFORMED_POST, NULL);
    return rc < 0 ? rc : 0;
}

/* Appends s URL-encoded (query component) to b. */
static void qenc(cn_buf_t *b, const char *s)
{
    cn_sigv4_uri_encode(b, s, strlen(s), false);
}

static void post_end(cn__s3_rq_t *q)
{
    cn__post_t *s = q->op;
    if (cn_http_req_body_error(q->r) != CN_S3E_NONE)
        return;
    if (!cn__form_done(&s->form)) {
        cn__s3_error(q, CN_S3E_MALFORMED_POST, NULL);
        return;
    }
    if (!s->file_seen || !s->put) {
        cn__s3_error(q, CN_S3E_POST_FILE_COUNT, NULL);
        return;
    }
    if ((int64_t)s->size < s->len_min) {
        cn__s3_error(q, CN_S3E_ENTITY_TOO_SMALL, NULL);
        return;
    }
    if (s->ck_alg) {
        uint8_t raw[CN_CKSUM_MAX_LEN];
        char b64[CN_CKSUM_B64_LEN];
        cn_http_cksum_final(&s->ck, raw, b64);
        s->ck_alg = CN_CKSUM_NONE;
        if (strcmp(b64, s->ck_want) != 0) {
            cn__s3_error(q, CN_S3E_BAD_DIGEST, NULL);
            return;
        }
    }
    cn_objects_put_result_t res;
    char etag[CN__S3_ETAG_MAX];
    if (!cn__s3_put_commit(q, &s->put, &res, etag))
        return;
    cn_buf_t loc = { 0 };
    const char *host = cn_http_req_header(q->r, "Host");
    cn_buf_printf(&loc, "%s://%s/%s/", cn_http_req_is_tls(q->r) ? "https" : "http",
                  host ? host : "localhost", q->bucket);
    cn_sigv4_uri_encode(&loc, s->key, strlen(s->key), true);
    cn_buf_append(&loc, "", 1);
    cn_http_resp_header(q->r, "ETag", etag);
    if (!s->redirect)
        cn_http_resp_header(q->r, "Location", (const char *)loc.data);
    if (s->redirect) {
        cn_buf_t u = { 0 };
        cn_buf_append_str(&u, s->redirect);
        cn_buf_append_str(&u, strchr(s->redirect, '?') ? "&bucket=" : "?bucket=");
        qenc(&u, q->bucket);
        cn_buf_append_str(&u, "&key=");
        qenc(&u, s->key);
        cn_buf_append_str(&u, "&etag=");
        qenc(&u, etag);
        cn_buf_append(&u, "", 1);
        cn_http_resp_header(q->r, "Location", (const char *)u.data);
        cn_buf_free(&u);
        cn_http_respond_empty(q->r, 303, 0);
    } else if (s->status == 201) {
        cn_buf_t out = { 0 };
        cn_xml_writer_t w;
        cn_xml_begin(&w, &out);
        cn_xml_open(&w, "PostResponse", NULL);
        cn_xml_elem(&w, "Location", (const char *)loc.data);
        cn_xml_elem(&w, "Bucket", q->bucket);
        cn_xml_elem(&w, "Key", s->key);
        cn_xml_elem(&w, "ETag", etag);
        cn_xml_close(&w);
        cn__s3_xml(q, 201, &w);
    } else {
        cn_http_respond_empty(q->r, s->status, 0);
    }
    cn_buf_free(&loc);
}

void cn__s3_post_object(cn__s3_rq_t *q)
{
    char boundary[CN__FORM_BOUNDARY_MAX + 1];
    if (!cn__form_boundary(cn_http_req_header(q->r, "Content-Type"), boundary, sizeof boundary)) {
        cn__s3_error(q, CN_S3E_PRECONDITION_FAILED,
                     "Bucket POST must be of the enclosure-type multipart/form-data");
        return;
    }
    cn__post_t *s = calloc(1, sizeof *s);
    if (s)
        s->store = malloc(CN__POST_PRE_MAX);
    if (!s || !s->store) {
        if (s)
            free(s);
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return;
    }
    s->q = q;
    cn__form_init(&s->form, boundary);
    q->op = s;
    q->on_cleanup = post_cleanup;
    q->on_body = post_body;
    q->on_end = post_end;
}
