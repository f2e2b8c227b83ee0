/* libFuzzer harness: SigV4 verification (src/http/sigv4.c), both the
 * Authorization header form and the presigned query form, and the
 * canonicalisation building blocks under it.
 *
 * Input: one flags byte, then a request as text:
 *   METHOD SP PATH ["?" QUERY] LF
 *   *(NAME ":" [SP] VALUE LF)
 * flags: bit0 a body follows; bit1 the region "us-east-1" is required;
 * bit2 service "service" (the AWS test suite) instead of "s3"; bit3 the clock
 * reads the suite's date, else the S3 examples' (bit5: one hour later);
 * bit4 an unbounded clock skew, so any request date passes.  Two access keys
 * are known (the AWS documentation's); a third, "BROKEN", fails its lookup.
 *
 * Invariants: the result is one of the documented errors; a refusal names an
 * S3 error and a reason and leaves no signing key behind; an acceptance names
 * a known key, a well-formed date, scope and signature; verification is
 * deterministic; percent-decoding inverts AWS UriEncode. */
#include "cairn/crypto.h"
#include "cairn/http.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 64

static const char *const keys[][2] = {
    { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" },
    { "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
};

static int lookup(void *ctx, const char *key, uint8_t *secret, size_t cap, size_t *len,
                  uint8_t tag[CN_SIGV4_TAG_LEN])
{
    (void)ctx;
    (void)tag; /* left zero: the verifier fingerprints the secret */
    if (strnlen(key, CN_SIGV4_MAX_KEY) >= CN_SIGV4_MAX_KEY)
        abort(); /* the key handed over must be a C string */
    if (strcmp(key, "BROKEN") == 0)
        return -EIO;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i][0]) == 0) {
            *len = strlen(keys[i][1]);
            if (*len > cap)
                abort();
            memcpy(secret, keys[i][1], *len);
            return 0;
        }
    return CN_E_NOT_FOUND;
}

static bool is_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void check_outcome(cn_err_t e, const cn_sigv4_t *v)
{
    if (e != CN_OK && e != CN_E_AUTH && e != CN_E_NOT_FOUND && e != -ENOMEM)
        abort();
    if (!memchr(v->detail, 0, sizeof v->detail) ||
        !memchr(v->access_key, 0, sizeof v->access_key) ||
        !memchr(v->region, 0, sizeof v->region) || !memchr(v->scope, 0, sizeof v->scope))
        abort();
    if (e == CN_E_AUTH) {
        if (v->s3err == CN_S3E_NONE || v->s3err >= CN_S3E_COUNT || !v->detail[0] ||
            !is_zero(v->signing_key, sizeof v->signing_key))
            abort();
        return;
    }
    if (e == CN_E_NOT_FOUND) {
        if (v->kind != CN_HTTP_AUTH_ANONYMOUS)
            abort();
        return;
    }
    if (e != CN_OK)
        return;
    if (v->kind != CN_HTTP_AUTH_SIGV4_HEADER && v->kind != CN_HTTP_AUTH_SIGV4_QUERY)
        abort();
    if (strcmp(v->access_key, keys[0][0]) != 0 && strcmp(v->access_key, keys[1][0]) != 0)
        abort();
    if (strlen(v->signature) != 64)
        abort();
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)v->signature[i]) || isupper((unsigned char)v->signature[i]))
            abort();
    int64_t ms;
    size_t sl = strlen(v->scope);
    if (strlen(v->amz_date) != 16 || cn_sigv4_parse_date(v->amz_date, 16, &ms) != CN_OK ||
        ms != v->request_ms || memcmp(v->scope, v->amz_date, 8) != 0 || sl < 22 ||
        strcmp(v->scope + sl - 13, "/aws4_request") != 0 || !v->region[0])
        abort();
    if ((v->payload == CN_SIGV4_PAYLOAD_DEFERRED) != (v->deferred.len > 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    /* A NUL-terminated copy, so the request line can be cut at '?'. */
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    size_t tlen = size - 1;

    const char *line_end = memchr(text, '\n', tlen);
    size_t rl = line_end ? (size_t)(line_end - text) : tlen;
    const char *sp = memchr(text, ' ', rl);
    if (!sp)
        goto out;
    char method[16];
    size_t ml = (size_t)(sp - text);
    if (ml == 0 || ml >= sizeof method || memchr(text, 0, ml))
        goto out; /* the server hands over a C-string method */
    memcpy(method, text, ml);
    method[ml] = 0;
    const char *target = sp + 1;
    size_t target_len = rl - ml - 1;
    const char *q = memchr(target, '?', target_len);
    size_t path_len = q ? (size_t)(q - target) : target_len;

    cn_http_kv_t h[MAX_HEADERS];
    size_t nh = 0;
    size_t pos = line_end ? rl + 1 : tlen;
    while (pos < tlen && nh < MAX_HEADERS) {
        const char *l = text + pos;
        const char *nl = memchr(l, '\n', tlen - pos);
        size_t ll = nl ? (size_t)(nl - l) : tlen - pos;
        pos += ll + 1;
        if (ll == 0)
            break;
        const char *colon = memchr(l, ':', ll);
        if (!colon)
            continue;
        const char *val = colon + 1;
        size_t vl = ll - (size_t)(val - l);
        if (vl && *val == ' ') {
            val++;
            vl--;
        }
        h[nh++] = (cn_http_kv_t){ l, (size_t)(colon - l), val, vl };
    }

    int64_t now;
    cn_sigv4_parse_date((flags & 8) ? "20150830T123600Z" : "20130524T000000Z", 16, &now);
    if (flags & 32)
        now += 3600 * 1000;
    cn_sigv4_input_t in = {
        .method = method,
        .path = target,
        .path_len = path_len,
        .query = q ? q + 1 : NULL,
        .query_len = q ? target_len - path_len - 1 : 0,
        .headers = h,
        .n_headers = nh,
        .has_body = (flags & 1) != 0,
        .now_ms = now,
        .service = (flags & 4) ? "service" : "s3",
        .region = (flags & 2) ? "us-east-1" : NULL,
        .max_skew_ms = (flags & 16) ? (int64_t)1 << 50 : 0,
    };

    cn_sigv4_t v1, v2;
    cn_err_t e1 = cn_sigv4_verify(&in, lookup, NULL, &v1);
    check_outcome(e1, &v1);
    cn_err_t e2 = cn_sigv4_verify(&in, lookup, NULL, &v2);
    if (e1 != e2 || v1.s3err != v2.s3err || v1.kind != v2.kind || v1.payload != v2.payload ||
        strcmp(v1.signature, v2.signature) != 0 ||
        memcmp(v1.signing_key, v2.signing_key, sizeof v1.signing_key) != 0)
        abort();
    if (e1 == CN_OK && v1.payload == CN_SIGV4_PAYLOAD_DEFERRED) {
        uint8_t empty[32];
        cn_sha256("", 0, empty);
        cn_err_t f = cn_sigv4_finish_deferred(&v1, empty);
        if (f != CN_OK && f != CN_E_AUTH && f != -ENOMEM)
            abort();
    }
    cn_sigv4_clear(&v1);
    cn_sigv4_clear(&v2);

    /* Canonicalisation on its own, over whatever the input signs. */
    {
        cn_buf_t canon = { 0 };
        cn_err_t c =
            cn_sigv4_canonical_request(&canon, method, in.path, in.path_len, in.query, in.query_len,
                                       h, nh, "host;x-amz-date", 15, "UNSIGNED-PAYLOAD");
        if (c != CN_OK && c != CN_E_INVALID && c != CN_E_LIMIT && c != -ENOMEM)
            abort();
        if (c == CN_OK &&
            (canon.len < ml || memcmp(canon.data, method, ml) != 0 || canon.data[ml] != '\n'))
            abort();
        cn_buf_free(&canon);
    }

    /* Percent-decoding inverts AWS UriEncode (over NUL-free bytes). */
    {
        cn_buf_t dec = { 0 }, enc = { 0 }, again = { 0 };
        if (cn_http_pct_decode(&dec, in.path, in.path_len) == CN_OK) {
            if (memchr(dec.data, 0, dec.len))
                abort(); /* an encoded NUL must be refused */
            if (cn_sigv4_uri_encode(&enc, (const char *)dec.data, dec.len, true) == CN_OK) {
                for (size_t i = 0; i < enc.len; i++) {
                    unsigned char c = enc.data[i];
                    if (!(isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/' ||
                          c == '%'))
                        abort();
                }
                if (cn_http_pct_decode(&again, (const char *)enc.data, enc.len) != CN_OK ||
                    again.len != dec.len || (dec.len && memcmp(again.data, dec.data, dec.len)))
                    abort();
            }
        }
        cn_buf_free(&dec);
        cn_buf_free(&enc);
        cn_buf_free(&again);
    }

    /* An accepted ISO 8601 basic date names a real calendar instant. */
    for (size_t i = 0; i < nh; i++) {
        int64_t ms;
        if (h[i].value_len == 16 && cn_sigv4_parse_date(h[i].value, 16, &ms) == CN_OK) {
            const char *s = h[i].value;
            time_t t = (time_t)(ms / 1000);
            struct tm tm;
            gmtime_r(&t, &tm);
            int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
            int m = (s[4] - '0') * 10 + (s[5] - '0'), dd = (s[6] - '0') * 10 + (s[7] - '0');
            if (tm.tm_year + 1900 != y || tm.tm_mon + 1 != m || tm.tm_mday != dd)
                abort(); /* e.g. 20130231 must not become March 3rd */
        }
    }
out:
    free(text);
    return 0;
}
