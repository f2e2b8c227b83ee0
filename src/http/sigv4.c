/* AWS Signature Version 4 verification for S3 (include/cairn/http.h).
 *
 * Canonical request as AWS specifies it for S3: the path is the received path
 * percent-decoded once and re-encoded once with UriEncode ('/' kept), never
 * normalised nor double-encoded; the query is decoded, re-encoded, and sorted
 * by name then value; signed header values are trimmed, inner runs of spaces
 * collapsed, repeated headers joined with ','.  The secret is used only to
 * derive the signing key and never copied elsewhere or logged.
 */
#include "cairn/http.h"
#include "cairn/crypto.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CN__EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define CN__MAX_QUERY_PARAMS 1024

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

cn_err_t cn_sigv4_uri_encode(cn_buf_t *out, const char *s, size_t n, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    CN_TRY(cn_buf_reserve(out, n));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            CN_TRY(cn_buf_put_u8(out, c));
        } else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            CN_TRY(cn_buf_append(out, e, 3));
        }
    }
    return CN_OK;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

cn_err_t cn_http_pct_decode(cn_buf_t *out, const char *s, size_t n)
{
    CN_TRY(cn_buf_reserve(out, n + 1));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return CN_E_INVALID;
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return CN_E_INVALID;
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
        }
        if (c == 0)
            return CN_E_INVALID;
        CN_TRY(cn_buf_put_u8(out, c));
    }
    return CN_OK;
}

/* ---- query ---------------------------------------------------------------- */

typedef struct {
    size_t off;
    size_t name_len;
    size_t val_len;
} cn__qpair_t;

typedef struct {
    const char *base;
    const cn__qpair_t *p;
} cn__qsort_ctx_t;

static int qcmp(const void *a, const void *b, void *ctx)
{
    const char *base = ctx;
    const cn__qpair_t *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(base + x->off, base + y->off, n);
    if (c)
        return c;
    if (x->name_len != y->name_len)
        return x->name_len < y->name_len ? -1 : 1;
    n = x->val_len < y->val_len ? x->val_len : y->val_len;
    c = memcmp(base + x->off + x->name_len, base + y->off + y->name_len, n);
    if (c)
        return c;
    return x->val_len == y->val_len ? 0 : (x->val_len < y->val_len ? -1 : 1);
}

/* Decodes then re-encodes one query component (AWS's canonical form). */
static cn_err_t requote(cn_buf_t *enc, cn_buf_t *tmp, const char *s, size_t n)
{
    cn_buf_reset(tmp);
    CN_TRY(cn_http_pct_decode(tmp, s, n));
    return cn_sigv4_uri_encode(enc, (const char *)tmp->data, tmp->len, false);
}

static cn_err_t canonical_query(cn_buf_t *out, const char *q, size_t qn)
{
    cn_buf_t enc = { 0 }, tmp = { 0 };
    cn__qpair_t *pairs = NULL;
    size_t np = 0;
    cn_err_t err = CN_OK;
    size_t count = 0;
    for (size_t i = 0; i < qn; i++)
        if (q[i] == '&')
            count++;
    if (count + 1 > CN__MAX_QUERY_PARAMS)
        return CN_E_LIMIT;
    pairs = calloc(count + 1, sizeof *pairs);
    if (!pairs)
        return -ENOMEM;
    size_t pos = 0;
    while (pos <= qn && qn > 0) {
        const char *amp = memchr(q + pos, '&', qn - pos);
        size_t end = amp ? (size_t)(amp - q) : qn;
        const char *item = q + pos;
        size_t ilen = end - pos;
        if (ilen > 0) {
            const char *eq = memchr(item, '=', ilen);
            size_t nlen = eq ? (size_t)(eq - item) : ilen;
            if (!(nlen == 15 && memcmp(item, "X-Amz-Signature", 15) == 0)) {
                cn__qpair_t *p = &pairs[np++];
                p->off = enc.len;
                if ((err = requote(&enc, &tmp, item, nlen)))
                    goto out;
                p->name_len = enc.len - p->off;
                if (eq && (err = requote(&enc, &tmp, eq + 1, ilen - nlen - 1)))
                    goto out;
                p->val_len = enc.len - p->off - p->name_len;
            }
        }
        if (!amp)
            break;
        pos = end + 1;
    }
    if (np > 1)
        qsort_r(pairs, np, sizeof *pairs, qcmp, enc.data);
    for (size_t i = 0; i < np; i++) {
        /* An all-empty query ("?=") leaves enc without storage: no offset to add. */
        const char *base = enc.data ? (const char *)enc.data + pairs[i].off : "";
        if ((i && (err = cn_buf_put_u8(out, '&'))) ||
            (err = cn_buf_append(out, base, pairs[i].name_len)) ||
            (err = cn_buf_put_u8(out, '=')) ||
            (err = cn_buf_append(out, base + pairs[i].name_len, pairs[i].val_len)))
            goto out;
    }
out:
    free(pairs);
    cn_buf_free(&enc);
    cn_buf_free(&tmp);
    return err;
}

/* ---- headers -------------------------------------------------------------- */

static const cn_http_kv_t *find(const cn_http_kv_t *h, size_t n, const char *name, size_t name_len)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].name_len == name_len && strncasecmp(h[i].name, name, name_len) == 0)
            return &h[i];
    return NULL;
}

/* Appends v trimmed, with inner runs of spaces and tabs collapsed to one. */
static cn_err_t sigv4_trimmed(cn_buf_t *out, const char *v, size_t n)
{
    while (n && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
        n--;
    bool sp = false;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == ' ' || c == '\t') {
            sp = true;
            continue;
        }
        if (sp)
            CN_TRY(cn_buf_put_u8(out, ' '));
        sp = false;
        CN_TRY(cn_buf_put_u8(out, (uint8_t)c));
    }
    return CN_OK;
}

cn_err_t cn_sigv4_canonical_request(cn_buf_t *out, const char *method, const char *path,
                                    size_t path_len, const char *query, size_t query_len,
                                    const cn_http_kv_t *headers, size_t n_headers,
                                    const char *signed_headers, size_t signed_len,
                                    const char *payload_hash)
{
    cn_buf_t tmp = { 0 };
    cn_err_t err;
    if ((err = cn_buf_append_str(out, method)) || (err = cn_buf_put_u8(out, '\n')))
        goto out;
    if (path_len == 0) {
        err = cn_buf_put_u8(out, '/');
    } else {
        if ((err = cn_http_pct_decode(&tmp, path, path_len)))
            goto out;
        err = cn_sigv4_uri_encode(out, (const char *)tmp.data, tmp.len, true);
    }
    if (err || (err = cn_buf_put_u8(out, '\n')))
        goto out;
    if (query && query_len && (err = canonical_query(out, query, query_len)))
        goto out;
    if ((err = cn_buf_put_u8(out, '\n')))
        goto out;
    /* Canonical headers, in the order of the signed list. */
    size_t pos = 0;
    while (pos < signed_len) {
        const char *semi = memchr(signed_headers + pos, ';', signed_len - pos);
        size_t end = semi ? (size_t)(semi - signed_headers) : signed_len;
        const char *name = signed_headers + pos;
        size_t nlen = end - pos;
        if (nlen == 0) {
            err = CN_E_INVALID;
            goto out;
        }
        for (size_t k = 0; k < nlen; k++) {
            if (isupper((unsigned char)name[k])) {
                err = CN_E_INVALID;
                goto out;
            }
        }
        if ((err = cn_buf_append(out, name, nlen)) || (err = cn_buf_put_u8(out, ':')))
            goto out;
        bool found = false;
        for (size_t i = 0; i < n_headers; i++) {
            if (headers[i].name_len != nlen || strncasecmp(headers[i].name, name, nlen) != 0)
                continue;
            if (found && (err = cn_buf_put_u8(out, ',')))
                goto out;
            if ((err = sigv4_trimmed(out, headers[i].value, headers[i].value_len)))
                goto out;
            found = true;
        }
        if (!found) {
            err = CN_E_INVALID;
            goto out;
        }
        if ((err = cn_buf_put_u8(out, '\n')))
            goto out;
        pos = end + 1;
    }
    if ((err = cn_buf_put_u8(out, '\n')) ||
        (err = cn_buf_append(out, signed_headers, signed_len)) ||
        (err = cn_buf_put_u8(out, '\n')) || (err = cn_buf_append_str(out, payload_hash)))
        goto out;
out:
    cn_buf_free(&tmp);
    return err;
}

void cn_sigv4_signing_key(const uint8_t *secret, size_t secret_len, const char *date8,
                          const char *region, const char *service, uint8_t out[32])
{
    uint8_t k[4 + CN_SIGV4_MAX_SECRET];
    uint8_t a[32], b[32];
    size_t kl = secret_len > CN_SIGV4_MAX_SECRET ? CN_SIGV4_MAX_SECRET : secret_len;
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, kl);
    cn_hmac_sha256(k, 4 + kl, date8, 8, a);
    cn_hmac_sha256(a, 32, region, strlen(region), b);
    cn_hmac_sha256(b, 32, service, strlen(service), a);
    cn_hmac_sha256(a, 32, "aws4_request", 12, out);
    memset(k, 0, sizeof k);
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
}

void cn_sigv4_sign(const uint8_t key[32], const char *amz_date, const char *scope,
                   const char *canonical, size_t canonical_len, char sig_hex[65])
{
    uint8_t h[32], mac[32];
    char hh[65];
    char sts[512];
    cn_sha256(canonical, canonical_len, h);
    cn_hex_encode(h, 32, hh);
    int n = snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope, hh);
    if (n < 0 || (size_t)n >= sizeof sts)
        n = 0;
    cn_hmac_sha256(key, 32, sts, (size_t)n, mac);
    cn_hex_encode(mac, 32, sig_hex);
}

cn_err_t cn_sigv4_parse_date(const char *s, size_t n, int64_t *out_ms)
{
    if (n != 16 || s[8] != 'T' || s[15] != 'Z')
        return CN_E_INVALID;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)s[i]))
            return CN_E_INVALID;
    struct tm tm = { 0 };
    tm.tm_year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0') - 1900;
    tm.tm_mon = (s[4] - '0') * 10 + (s[5] - '0') - 1;
    tm.tm_mday = (s[6] - '0') * 10 + (s[7] - '0');
    tm.tm_hour = (s[9] - '0') * 10 + (s[10] - '0');
    tm.tm_min = (s[11] - '0') * 10 + (s[12] - '0');
    tm.tm_sec = (s[13] - '0') * 10 + (s[14] - '0');
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return CN_E_INVALID;
    int year = tm.tm_year, mon = tm.tm_mon, mday = tm.tm_mday;
    time_t t = timegm(&tm);
    /* timegm normalises: "20130231" would silently become March 3rd. */
    if (t == (time_t)-1 || tm.tm_year != year || tm.tm_mon != mon || tm.tm_mday != mday)
        return CN_E_INVALID;
    *out_ms = (int64_t)t * 1000;
    return CN_OK;
}

/* Parses an RFC 7231 Date header ("Fri, 24 May 2013 00:00:00 GMT"). */
static cn_err_t parse_http_date(const char *s, size_t n, int64_t *out_ms)
{
    char tmp[64];
    if (n >= sizeof tmp)
        return CN_E_INVALID;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    struct tm tm = { 0 };
    const char *end = strptime(tmp, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end || *end)
        return CN_E_INVALID;
    int year = tm.tm_year, mon = tm.tm_mon, mday = tm.tm_mday;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_year != year || tm.tm_mon != mon || tm.tm_mday != mday)
        return CN_E_INVALID;
    *out_ms = (int64_t)t * 1000;
    return CN_OK;
}

/* ---- verification --------------------------------------------------------- */

static cn_err_t sigv4_fail(cn_sigv4_t *v, cn_s3_err_t e, const char *detail)
{
    v->s3err = e;
    snprintf(v->detail, sizeof v->detail, "%s", detail);
    return CN_E_AUTH;
}

/* Finds name in a raw query and percent-decodes its value into out. */
static bool query_get(const char *q, size_t qn, const char *name, cn_buf_t *out)
{
    size_t nl = strlen(name), pos = 0;
    while (q && pos < qn) {
        const char *amp = memchr(q + pos, '&', qn - pos);
        size_t end = amp ? (size_t)(amp - q) : qn;
        const char *item = q + pos;
        size_t ilen = end - pos;
        if (ilen >= nl && memcmp(item, name, nl) == 0 && (ilen == nl || item[nl] == '=')) {
            cn_buf_reset(out);
            size_t vl = ilen > nl ? ilen - nl - 1 : 0;
            if (cn_http_pct_decode(out, item + nl + 1, vl) != CN_OK)
                return false;
            return cn_buf_put_u8(out, 0) == CN_OK && (out->len--, true);
        }
        pos = end + 1;
    }
    return false;
}

typedef struct {
    const char *algorithm;
    size_t algorithm_len;
    const char *credential;
    size_t credential_len;
    const char *signed_headers;
    size_t signed_len;
    const char *signature;
    size_t signature_len;
} cn__auth_parts_t;

static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

/* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." */
static bool parse_auth_header(const char *h, size_t n, cn__auth_parts_t *p)
{
    memset(p, 0, sizeof *p);
    const char *sp = memchr(h, ' ', n);
    if (!sp)
        return false;
    p->algorithm = h;
    p->algorithm_len = (size_t)(sp - h);
    size_t pos = p->algorithm_len + 1;
    while (pos < n) {
        const char *comma = memchr(h + pos, ',', n - pos);
        size_t end = comma ? (size_t)(comma - h) : n;
        const char *item = h + pos;
        size_t ilen = end - pos;
        trim(&item, &ilen);
        const char *eq = memchr(item, '=', ilen);
        if (eq) {
            size_t kl = (size_t)(eq - item);
            const char *val = eq + 1;
            size_t vl = ilen - kl - 1;
            if (kl == 10 && memcmp(item, "Credential", 10) == 0) {
                p->credential = val;
                p->credential_len = vl;
            } else if (kl == 13 && memcmp(item, "SignedHeaders", 13) == 0) {
                p->signed_headers = val;
                p->signed_len = vl;
            } else if (kl == 9 && memcmp(item, "Signature", 9) == 0) {
                p->signature = val;
                p->signature_len = vl;
            }
        } else if (ilen) {
            return false;
        }
        pos = end + 1;
    }
    return p->credential && p->signed_headers && p->signature;
}

static bool copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return false;
    memcpy(dst, s, n);
    dst[n] = 0;
    return true;
}

static bool has_token(const char *list, size_t n, const char *tok)
{
    size_t tl = strlen(tok), pos = 0;
    while (pos < n) {
        const char *semi = memchr(list + pos, ';', n - pos);
        size_t end = semi ? (size_t)(semi - list) : n;
        if (end - pos == tl && memcmp(list + pos, tok, tl) == 0)
            return true;
        pos = end + 1;
    }
    return false;
}

static bool sig_equal(const char *a, const char *b, size_t n)
{
    char la[65];
    if (n != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        la[i] = (char)tolower((unsigned char)a[i]);
    return cn_ct_equal(la, b, 64);
}

/* Where a request's signature came from: the Authorization header (cred, sh
 * and sig point into it) or a presigned URL's query (they point into the
 * decoded copies here). */
typedef struct {
    bool presigned;
    const char *cred, *sh, *sig;
    size_t cred_len, sh_len, sig_len;
    cn_buf_t credential, signed_hdrs, signature; /* presigned: the decoded values */
    cn_buf_t tmp;                                /* any other decoded query value */
} form_t;

static void form_free(form_t *f)
{
    cn_buf_free(&f->credential);
    cn_buf_free(&f->signed_hdrs);
    cn_buf_free(&f->signature);
    cn_buf_free(&f->tmp);
}

/* The error S3 gives for a malformed part of this form's signature. */
static cn_s3_err_t malformed(const form_t *f)
{
    return f->presigned ? CN_S3E_AUTH_QUERY_MALFORMED : CN_S3E_AUTH_HEADER_MALFORMED;
}

static cn_err_t read_header_form(const cn_http_kv_t *authz, cn_sigv4_t *v, form_t *f)
{
    cn__auth_parts_t ap;
    v->kind = CN_HTTP_AUTH_SIGV4_HEADER;
    if (!parse_auth_header(authz->value, authz->value_len, &ap))
        return sigv4_fail(v, CN_S3E_AUTH_HEADER_MALFORMED, "the authorization header is malformed");
    if (ap.algorithm_len != 16 || memcmp(ap.algorithm, "AWS4-HMAC-SHA256", 16) != 0) {
        bool sigv4a =
            ap.algorithm_len == 22 && memcmp(ap.algorithm, "AWS4-ECDSA-P256-SHA256", 22) == 0;
        return sigv4_fail(v, sigv4a ? CN_S3E_NOT_IMPLEMENTED : CN_S3E_AUTH_HEADER_MALFORMED,
                          "unsupported signing algorithm");
    }
    f->cred = ap.credential;
    f->cred_len = ap.credential_len;
    f->sh = ap.signed_headers;
    f->sh_len = ap.signed_len;
    f->sig = ap.signature;
    f->sig_len = ap.signature_len;
    return CN_OK;
}

/* f->tmp holds the decoded X-Amz-Algorithm. */
static cn_err_t read_query_form(const cn_sigv4_input_t *in, cn_sigv4_t *v, form_t *f)
{
    f->presigned = true;
    v->kind = CN_HTTP_AUTH_SIGV4_QUERY;
    if (strcmp((const char *)f->tmp.data, "AWS4-HMAC-SHA256") != 0)
        return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED, "unsupported X-Amz-Algorithm");
    if (!query_get(in->query, in->query_len, "X-Amz-Credential", &f->credential) ||
        !query_get(in->query, in->query_len, "X-Amz-SignedHeaders", &f->signed_hdrs) ||
        !query_get(in->query, in->query_len, "X-Amz-Signature", &f->signature))
        return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED,
                          "X-Amz-Credential, X-Amz-SignedHeaders and X-Amz-Signature are required");
    f->cred = (const char *)f->credential.data;
    f->cred_len = f->credential.len;
    f->sh = (const char *)f->signed_hdrs.data;
    f->sh_len = f->signed_hdrs.len;
    f->sig = (const char *)f->signature.data;
    f->sig_len = f->signature.len;
    return CN_OK;
}

/* Step 1: which form signs the request (one at most).  CN_E_NOT_FOUND when
 * neither does: the request is not SigV4 at all. */
static cn_err_t read_form(const cn_sigv4_input_t *in, cn_sigv4_t *v, form_t *f)
{
    const cn_http_kv_t *authz = find(in->headers, in->n_headers, "authorization", 13);
    bool has_query_alg = query_get(in->query, in->query_len, "X-Amz-Algorithm", &f->tmp);
    bool has_header = authz && authz->value_len >= 5 && strncmp(authz->value, "AWS4-", 5) == 0;
    if (has_header && has_query_alg)
        return sigv4_fail(v, CN_S3E_INVALID_ARGUMENT, "Only one auth mechanism allowed");
    if (has_header)
        return read_header_form(authz, v, f);
    if (has_query_alg)
        return read_query_form(in, v, f);
    return CN_E_NOT_FOUND;
}

/* Step 2: Credential = <key>/<yyyymmdd>/<region>/<service>/aws4_request.
 * Fills v's access_key, region and scope; *date8 points at the credential's
 * date (8 characters, not NUL-terminated). */
static cn_err_t check_credential(const cn_sigv4_input_t *in, cn_sigv4_t *v, const form_t *f,
                                 const char **date8)
{
    const char *cred = f->cred, *slash[4];
    size_t cred_len = f->cred_len;
    int found = 0;
    for (size_t i = cred_len; i > 0 && found < 4; i--)
        if (cred[i - 1] == '/')
            slash[found++] = cred + i - 1;
    if (found < 4 || slash[3] == cred)
        return sigv4_fail(
            v, malformed(f),
            "the Credential is malformed; expected \"<key>/<date>/<region>/s3/aws4_request\"");
    const char *date = slash[3] + 1, *region = slash[2] + 1, *service = slash[1] + 1,
               *term = slash[0] + 1;
    size_t date_len = (size_t)(slash[2] - date), region_len = (size_t)(slash[1] - region),
           service_len = (size_t)(slash[0] - service), term_len = (size_t)(cred + cred_len - term);
    if (!copy(v->access_key, sizeof v->access_key, cred, (size_t)(slash[3] - cred)) ||
        !copy(v->region, sizeof v->region, region, region_len) || date_len != 8 ||
        region_len == 0 || term_len != 12 || memcmp(term, "aws4_request", 12) != 0)
        return sigv4_fail(v, malformed(f), "the Credential is malformed");
    if (service_len != strlen(in->service) || memcmp(service, in->service, service_len) != 0) {
        snprintf(v->detail, sizeof v->detail, "the service in the credential must be '%s'",
                 in->service);
        v->s3err = malformed(f);
        return CN_E_AUTH;
    }
    if (in->region && strcmp(in->region, v->region) != 0) {
        v->s3err = malformed(f);
        snprintf(v->detail, sizeof v->detail, "the region '%.60s' is wrong; expecting '%.60s'",
                 v->region, in->region);
        return CN_E_AUTH;
    }
    if ((size_t)snprintf(v->scope, sizeof v->scope, "%.8s/%s/%s/aws4_request", date, v->region,
                         in->service) >= sizeof v->scope)
        return sigv4_fail(v, CN_S3E_AUTH_HEADER_MALFORMED, "the credential scope is too long");
    *date8 = date;
    return CN_OK;
}

/* Step 3: the request time, from X-Amz-Date (query or header) or else Date;
 * fills v's request_ms and amz_date. */
static cn_err_t read_request_time(const cn_sigv4_input_t *in, cn_sigv4_t *v, form_t *f)
{
    const char *ds = NULL;
    size_t dl = 0;
    bool http_date = false;
    if (f->presigned) {
        if (!query_get(in->query, in->query_len, "X-Amz-Date", &f->tmp))
            return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Date is required");
        ds = (const char *)f->tmp.data;
        dl = f->tmp.len;
    } else {
        const cn_http_kv_t *xd = find(in->headers, in->n_headers, "x-amz-date", 10);
        if (!xd) {
            xd = find(in->headers, in->n_headers, "date", 4);
            http_date = true;
        }
        if (!xd)
            return sigv4_fail(v, CN_S3E_ACCESS_DENIED,
                              "AWS authentication requires a valid Date or x-amz-date header");
        ds = xd->value;
        dl = xd->value_len;
        trim(&ds, &dl);
    }
    if (http_date) {
        if (parse_http_date(ds, dl, &v->request_ms) != CN_OK)
            return sigv4_fail(v, CN_S3E_ACCESS_DENIED, "the Date header is not valid");
        time_t t = (time_t)(v->request_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(v->amz_date, sizeof v->amz_date, "%Y%m%dT%H%M%SZ", &tm);
        return CN_OK;
    }
    if (cn_sigv4_parse_date(ds, dl, &v->request_ms) != CN_OK)
        return sigv4_fail(v, f->presigned ? CN_S3E_AUTH_QUERY_MALFORMED : CN_S3E_ACCESS_DENIED,
                          "X-Amz-Date must be in the ISO8601 basic format yyyyMMdd'T'HHmmss'Z'");
    memcpy(v->amz_date, ds, 16);
    v->amz_date[16] = 0;
    return CN_OK;
}

/* Step 4: now is inside the request's window: the URL's X-Amz-Expires, or
 * the allowed clock skew around a header-signed request's time. */
static cn_err_t check_window(const cn_sigv4_input_t *in, cn_sigv4_t *v, form_t *f)
{
    int64_t skew = in->max_skew_ms > 0 ? in->max_skew_ms : CN_SIGV4_MAX_SKEW_MS;
    if (!f->presigned) {
        int64_t d = in->now_ms - v->request_ms;
        if (d > skew || -d > skew)
            return sigv4_fail(
                v, CN_S3E_REQUEST_TIME_TOO_SKEWED,
                "The difference between the request time and the current time is too large.");
        return CN_OK;
    }
    if (!query_get(in->query, in->query_len, "X-Amz-Expires", &f->tmp))
        return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Expires is required");
    char *end = NULL;
    long long ex = strtoll((const char *)f->tmp.data, &end, 10);
    if (f->tmp.len == 0 || *end || ex < 1 || ex > CN_SIGV4_MAX_EXPIRES ||
        !isdigit((unsigned char)f->tmp.data[0]))
        return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED,
                          "X-Amz-Expires must be between 1 and 604800 seconds");
    v->expires_ms = v->request_ms + ex * 1000;
    if (v->request_ms - in->now_ms > skew)
        return sigv4_fail(v, CN_S3E_REQUEST_NOT_YET_VALID, "Request is not valid yet");
    if (in->now_ms > v->expires_ms)
        return sigv4_fail(v, CN_S3E_EXPIRED_REQUEST, "Request has expired");
    return CN_OK;
}

/* Step 5: the payload hash the client signed, into hash (NUL-terminated;
 * empty when the body's hash is deferred); fills v's payload (and
 * payload_hash for a hex value). */
static cn_err_t read_payload_hash(const cn_sigv4_input_t *in, cn_sigv4_t *v, bool presigned,
                                  char hash[80])
{
    const cn_http_kv_t *ph = find(in->headers, in->n_headers, "x-amz-content-sha256", 20);
    if (!ph) {
        if (presigned) {
            v->payload = CN_SIGV4_PAYLOAD_UNSIGNED;
            strcpy(hash, "UNSIGNED-PAYLOAD");
        } else if (in->has_body) {
            v->payload = CN_SIGV4_PAYLOAD_DEFERRED;
            hash[0] = 0;
        } else {
            v->payload = CN_SIGV4_PAYLOAD_EMPTY;
            strcpy(hash, CN__EMPTY_SHA256);
        }
        return CN_OK;
    }
    const char *p = ph->value;
    size_t pl = ph->value_len;
    trim(&p, &pl);
#define CN__IS(s) (pl == sizeof(s) - 1 && memcmp(p, s, pl) == 0)
    if (CN__IS("UNSIGNED-PAYLOAD"))
        v->payload = CN_SIGV4_PAYLOAD_UNSIGNED;
    else if (CN__IS("STREAMING-AWS4-HMAC-SHA256-PAYLOAD") && !presigned)
        v->payload = CN_SIGV4_PAYLOAD_STREAMING;
    else if (CN__IS("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") && !presigned)
        v->payload = CN_SIGV4_PAYLOAD_STREAMING_TRAILER;
    else if (CN__IS("STREAMING-UNSIGNED-PAYLOAD-TRAILER"))
        v->payload = CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER;
    else if (pl >= 29 && memcmp(p, "STREAMING-AWS4-ECDSA-P256-SHA256", 29) == 0)
        return sigv4_fail(v, CN_S3E_NOT_IMPLEMENTED, "SigV4a streaming is not supported");
    else if (pl == 64 && cn_hex_decode(p, 64, v->payload_hash, 32) == CN_OK)
        v->payload = CN_SIGV4_PAYLOAD_HASH;
    else
        return sigv4_fail(
            v, CN_S3E_INVALID_ARGUMENT,
            "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-*, or a valid sha256 value");
#undef CN__IS
    if (pl >= 80)
        return sigv4_fail(v, CN_S3E_INVALID_ARGUMENT, "x-amz-content-sha256 is too long");
    memcpy(hash, p, pl);
    hash[pl] = 0;
    return CN_OK;
}

static bool is_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* Step 6: the access key's secret, from the credential store, turned into
 * v->signing_key.  The secret never outlives this function. */
static cn_err_t derive_key(const cn_sigv4_input_t *in, cn_http_secret_lookup_fn lookup,
                           void *lookup_ctx, cn_sigv4_t *v)
{
    uint8_t secret[CN_SIGV4_MAX_SECRET];
    size_t secret_len = 0;
    int lr = lookup ? lookup(lookup_ctx, v->access_key, secret, sizeof secret, &secret_len)
                    : CN_E_NOT_FOUND;
    if (lr == CN_E_NOT_FOUND)
        return sigv4_fail(v, CN_S3E_INVALID_ACCESS_KEY_ID,
                          "The AWS Access Key Id you provided does not exist in our records.");
    if (lr != 0 || secret_len > sizeof secret) {
        memset(secret, 0, sizeof secret);
        return sigv4_fail(v, CN_S3E_INTERNAL_ERROR, "the credential store failed");
    }
    char date8[9];
    memcpy(date8, v->amz_date, 8);
    date8[8] = 0;
    cn_sigv4_signing_key(secret, secret_len, date8, v->region, in->service, v->signing_key);
    memset(secret, 0, sizeof secret);
    return CN_OK;
}

/* Step 7: the canonical request, then the signature compared in constant
 * time; or, for a deferred payload, the canonical request kept in
 * v->deferred until cn_sigv4_finish_deferred has the body's hash. */
static cn_err_t check_signature(const cn_sigv4_input_t *in, cn_sigv4_t *v, const form_t *f,
                                const char *payload_hash)
{
    cn_buf_t canon = { 0 };
    cn_err_t err = cn_sigv4_canonical_request(&canon, in->method, in->path, in->path_len, in->query,
                                              in->query_len, in->headers, in->n_headers, f->sh,
                                              f->sh_len, payload_hash);
    if (err == CN_E_INVALID || err == CN_E_LIMIT) {
        err = sigv4_fail(v, malformed(f),
                         "a signed header is missing or the request URI is malformed");
        goto out;
    }
    if (err)
        goto out;
    for (size_t i = 0; i < 64; i++)
        v->signature[i] = (char)tolower((unsigned char)f->sig[i]);
    v->signature[64] = 0;
    if (v->payload == CN_SIGV4_PAYLOAD_DEFERRED) {
        v->deferred = canon;
        memset(&canon, 0, sizeof canon);
        goto out;
    }
    char mine[65];
    cn_sigv4_sign(v->signing_key, v->amz_date, v->scope, (const char *)canon.data, canon.len, mine);
    if (!sig_equal(f->sig, mine, f->sig_len))
        err = sigv4_fail(v, CN_S3E_SIGNATURE_DOES_NOT_MATCH,
                         "The request signature we calculated does not match the signature you "
                         "provided. Check your key and signing method.");
out:
    cn_buf_free(&canon);
    return err;
}

cn_err_t cn_sigv4_verify(const cn_sigv4_input_t *in, cn_http_secret_lookup_fn lookup,
                         void *lookup_ctx, cn_sigv4_t *v)
{
    memset(v, 0, sizeof *v);
    form_t f = { 0 };
    const char *date8 = NULL;
    char payload_hash[80];
    cn_err_t err;
    if ((err = read_form(in, v, &f)) || (err = check_credential(in, v, &f, &date8)) ||
        (err = read_request_time(in, v, &f)))
        goto out;
    if (memcmp(v->amz_date, date8, 8) != 0) {
        err = sigv4_fail(v, malformed(&f), "the credential date does not match the request date");
        goto out;
    }
    if ((err = check_window(in, v, &f)))
        goto out;
    if (!has_token(f.sh, f.sh_len, "host")) {
        err = sigv4_fail(v, malformed(&f), "the host header must be signed");
        goto out;
    }
    if ((err = read_payload_hash(in, v, f.presigned, payload_hash)))
        goto out;
    if (!is_hex64(f.sig, f.sig_len)) {
        /* Refused now, not after a deferred body has been read to compare it. */
        err = sigv4_fail(v, malformed(&f), "the signature must be 64 hexadecimal characters");
        goto out;
    }
    if ((err = derive_key(in, lookup, lookup_ctx, v)))
        goto out;
    err = check_signature(in, v, &f, payload_hash);
out:
    form_free(&f);
    /* Only a verified request keeps its key (a deferred one needs it). */
    if (err)
        memset(v->signing_key, 0, sizeof v->signing_key);
    return err;
}

cn_err_t cn_sigv4_finish_deferred(cn_sigv4_t *v, const uint8_t body_sha256[32])
{
    if (v->payload != CN_SIGV4_PAYLOAD_DEFERRED)
        return CN_OK;
    char hex[65], mine[65];
    cn_hex_encode(body_sha256, 32, hex);
    CN_TRY(cn_buf_append(&v->deferred, hex, 64));
    cn_sigv4_sign(v->signing_key, v->amz_date, v->scope, (const char *)v->deferred.data,
                  v->deferred.len, mine);
    cn_buf_free(&v->deferred);
    if (!cn_ct_equal(mine, v->signature, 64)) {
        v->s3err = CN_S3E_SIGNATURE_DOES_NOT_MATCH;
        return CN_E_AUTH;
    }
    return CN_OK;
}

void cn_sigv4_clear(cn_sigv4_t *v)
{
    if (!v)
        return;
    cn_buf_free(&v->deferred);
    memset(v->signing_key, 0, sizeof v->signing_key);
}
