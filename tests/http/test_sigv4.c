/* SigV4 verification against AWS's published vectors: the signature test
 * suite (get-vanilla and friends), the S3 header-form examples, the presigned
 * URL example, and the aws-chunked examples with and without trailers; then
 * the signing-key cache (reuse, every field of its key, its bound, threads)
 * and the canonical request's bound. */
#include "cairn/http.h"
#include "cairn/crypto.h"
#include "cn_test.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SUITE_KEY "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define S3_KEY "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static int lookup(void *ctx, const char *key, uint8_t *secret, size_t cap, size_t *len,
                  uint8_t tag[CN_SIGV4_TAG_LEN])
{
    (void)tag; /* left zero: the verifier fingerprints the secret */
    const char *want_key = ((const char **)ctx)[0], *sec = ((const char **)ctx)[1];
    if (strcmp(key, want_key) != 0)
        return CN_E_NOT_FOUND;
    *len = strlen(sec);
    if (*len > cap)
        return CN_E_INVALID;
    memcpy(secret, sec, *len);
    return 0;
}

#define KV(n, v)                           \
    {                                      \
        n, sizeof(n) - 1, v, sizeof(v) - 1 \
    }

typedef struct {
    const char *method, *path, *query;
    const cn_http_kv_t *h;
    size_t nh;
    const char *service;
    const char *key, *secret;
    int64_t now_ms;
    bool has_body;
    const char *region;
} vec_t;

static cn_err_t run(const vec_t *v, cn_sigv4_t *out)
{
    const char *creds[2] = { v->key, v->secret };
    cn_sigv4_input_t in = {
        .method = v->method,
        .path = v->path,
        .path_len = strlen(v->path),
        .query = v->query,
        .query_len = v->query ? strlen(v->query) : 0,
        .headers = v->h,
        .n_headers = v->nh,
        .has_body = v->has_body,
        .now_ms = v->now_ms,
        .service = v->service,
        .region = v->region,
    };
    return cn_sigv4_verify(&in, lookup, creds, out);
}

static int64_t suite_now(void)
{
    int64_t t;
    cn_sigv4_parse_date("20150830T123600Z", 16, &t);
    return t;
}

static int64_t s3_now(void)
{
    int64_t t;
    cn_sigv4_parse_date("20130524T000000Z", 16, &t);
    return t;
}

#define SUITE_AUTH(signed, sig)                                                         \
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, " \
    "SignedHeaders=" signed ", Signature=" sig

static void check_suite(const char *method, const char *path, const char *query,
                        const cn_http_kv_t *h, size_t nh)
{
    cn_sigv4_t s;
    vec_t v = { method,    path,         query,       h,     nh,  "service",
                SUITE_KEY, SUITE_SECRET, suite_now(), false, NULL };
    cn_err_t e = run(&v, &s);
    CN_CHECK_EQ(e, 0);
    if (e)
        fprintf(stderr, "# %s %s?%s: %s (%s)\n", method, path, query ? query : "",
                cn_s3_err_code(s.s3err), s.detail);
    cn_sigv4_clear(&s);
}

static void test_get_vanilla(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "example.amazonaws.com"), KV("X-Amz-Date", "20150830T123600Z"),
        KV("Authorization",
           SUITE_AUTH("host;x-amz-date",
                      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"))
    };
    check_suite("GET", "/", NULL, h, 3);
}

static void test_get_vanilla_query_order_key_case(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "example.amazonaws.com"), KV("X-Amz-Date", "20150830T123600Z"),
        KV("Authorization",
           SUITE_AUTH("host;x-amz-date",
                      "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"))
    };
    check_suite("GET", "/", "Param2=value2&Param1=value1", h, 3);
}

static void test_get_vanilla_query_order_key(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "example.amazonaws.com"), KV("X-Amz-Date", "20150830T123600Z"),
        KV("Authorization",
           SUITE_AUTH("host;x-amz-date",
                      "eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1"))
    };
    check_suite("GET", "/", "Param1=value2&Param1=Value1", h, 3);
}

static void test_get_vanilla_empty_query_key(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "example.amazonaws.com"), KV("X-Amz-Date", "20150830T123600Z"),
        KV("Authorization",
           SUITE_AUTH("host;x-amz-date",
                      "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"))
    };
    check_suite("GET", "/", "Param1=value1", h, 3);
}

static void test_get_header_key_duplicate(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "example.amazonaws.com"),
        KV("My-Header1", "value2"),
        KV("My-Header1", "value2"),
        KV("My-Header1", "value1"),
        KV("X-Amz-Date", "20150830T123600Z"),
        KV("Authorization",
           SUITE_AUTH("host;my-header1;x-amz-date",
                      "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"))
    };
    check_suite("GET", "/", NULL, h, 6);
}

static void test_get_header_value_order(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "example.amazonaws.com"),
        KV("My-Header1", "value4"),
        KV("My-Header1", "value1"),
        KV("My-Header1", "value3"),
        KV("My-Header1", "value2"),
        KV("X-Amz-Date", "20150830T123600Z"),
        KV("Authorization",
           SUITE_AUTH("host;my-header1;x-amz-date",
                      "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"))
    };
    check_suite("GET", "/", NULL, h, 7);
}

static void test_post_vanilla(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "example.amazonaws.com"), KV("X-Amz-Date", "20150830T123600Z"),
        KV("Authorization",
           SUITE_AUTH("host;x-amz-date",
                      "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"))
    };
    check_suite("POST", "/", NULL, h, 3);
}

static void test_canonical_trim(void)
{
    /* Values trimmed, inner runs collapsed; the path encoded exactly once. */
    cn_http_kv_t h[] = { KV("Host", "  example.com "), KV("X-A", "a   b \t c") };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", "/a%20b/c%2Bd+e/%E2%82%AC~", 25, NULL, 0, h,
                                           2, "host;x-a", 8, EMPTY_SHA),
                0);
    CN_CHECK_STR(
        (cn_buf_put_u8(&b, 0), (const char *)b.data),
        "GET\n/a%20b/c%2Bd%2Be/%E2%82%AC~\n\nhost:example.com\nx-a:a b c\n\nhost;x-a\n" EMPTY_SHA);
    cn_buf_free(&b);
}

#define S3_AUTH(signed, sig)                                                               \
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," \
    "SignedHeaders=" signed ",Signature=" sig

static void test_s3_get_object(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "examplebucket.s3.amazonaws.com"), KV("Range", "bytes=0-9"),
        KV("x-amz-content-sha256", EMPTY_SHA), KV("x-amz-date", "20130524T000000Z"),
        KV("Authorization",
           S3_AUTH("host;range;x-amz-content-sha256;x-amz-date",
                   "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"))
    };
    vec_t v = { "GET", "/test.txt", NULL, h, 5, "s3", S3_KEY, S3_SECRET, s3_now(), false, NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), 0);
    CN_CHECK_EQ(s.payload, CN_SIGV4_PAYLOAD_HASH);
    CN_CHECK_STR(s.access_key, S3_KEY);
    CN_CHECK_STR(s.region, "us-east-1");
    cn_sigv4_clear(&s);

    /* A wrong secret, an unknown key, a skewed clock, a pinned region. */
    v.secret = "not-the-secret";
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
    v.secret = S3_SECRET;
    v.key = "OTHERKEY";
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_INVALID_ACCESS_KEY_ID);
    v.key = S3_KEY;
    v.now_ms = s3_now() + 16 * 60 * 1000;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_REQUEST_TIME_TOO_SKEWED);
    v.now_ms = s3_now() - 16 * 60 * 1000;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_REQUEST_TIME_TOO_SKEWED);
    v.now_ms = s3_now() + 14 * 60 * 1000;
    CN_CHECK_EQ(run(&v, &s), 0);
    v.region = "eu-west-1";
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_AUTH_HEADER_MALFORMED);
    v.region = "us-east-1";
    CN_CHECK_EQ(run(&v, &s), 0);
    /* A tampered header breaks it. */
    h[1].value = "bytes=0-10";
    h[1].value_len = 10;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
}

static void test_s3_put_object(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "examplebucket.s3.amazonaws.com"),
        KV("Date", "Fri, 24 May 2013 00:00:00 GMT"),
        KV("x-amz-date", "20130524T000000Z"),
        KV("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        KV("x-amz-content-sha256",
           "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
        KV("Authorization",
           S3_AUTH("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                   "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"))
    };
    vec_t v = { "PUT",  "/test%24file.text", NULL,     h,    6,   "s3",
                S3_KEY, S3_SECRET,           s3_now(), true, NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), 0);
    uint8_t want[32];
    cn_sha256("Welcome to Amazon S3.", 21, want);
    CN_CHECK_MEM(s.payload_hash, want, 32);
    cn_sigv4_clear(&s);
    /* "$" unencoded on the wire canonicalises the same way. */
    v.path = "/test$file.text";
    CN_CHECK_EQ(run(&v, &s), 0);
}

static void test_s3_get_lifecycle_and_list(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "examplebucket.s3.amazonaws.com"), KV("x-amz-date", "20130524T000000Z"),
        KV("x-amz-content-sha256", EMPTY_SHA),
        KV("Authorization",
           S3_AUTH("host;x-amz-content-sha256;x-amz-date",
                   "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"))
    };
    vec_t v = { "GET", "/", "lifecycle", h, 4, "s3", S3_KEY, S3_SECRET, s3_now(), false, NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), 0);
    cn_http_kv_t h2[] = {
        KV("Host", "examplebucket.s3.amazonaws.com"), KV("x-amz-date", "20130524T000000Z"),
        KV("x-amz-content-sha256", EMPTY_SHA),
        KV("Authorization",
           S3_AUTH("host;x-amz-content-sha256;x-amz-date",
                   "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"))
    };
    vec_t v2 = { "GET", "/", "max-keys=2&prefix=J", h2, 4, "s3", S3_KEY, S3_SECRET, s3_now(),
                 false, NULL };
    CN_CHECK_EQ(run(&v2, &s), 0);
    if (s.s3err)
        fprintf(stderr, "# list: %s\n", s.detail);
}

static void test_s3_presigned(void)
{
    cn_http_kv_t h[] = { KV("Host", "examplebucket.s3.amazonaws.com") };
    const char *q =
        "X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    vec_t v = { "GET", "/test.txt", q, h, 1, "s3", S3_KEY, S3_SECRET, s3_now() + 3600 * 1000,
                false, NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), 0);
    CN_CHECK_EQ(s.kind, CN_HTTP_AUTH_SIGV4_QUERY);
    CN_CHECK_EQ(s.payload, CN_SIGV4_PAYLOAD_UNSIGNED);
    v.now_ms = s3_now() + 86401LL * 1000;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_EXPIRED_REQUEST);
    CN_CHECK_STR(cn_s3_err_code(s.s3err), "AccessDenied");
    v.now_ms = s3_now() - 3600 * 1000;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_REQUEST_NOT_YET_VALID);
    /* Expiry past seven days is refused outright. */
    const char *q8 =
        "X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    v.query = q8;
    v.now_ms = s3_now();
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_AUTH_QUERY_MALFORMED);
}

static void test_no_credential(void)
{
    cn_http_kv_t h[] = { KV("Host", "x") };
    vec_t v = { "GET", "/", "a=b", h, 1, "s3", S3_KEY, S3_SECRET, s3_now(), false, NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), CN_E_NOT_FOUND);
    cn_http_kv_t bad[] = { KV("Host", "x"), KV("Authorization", "AWS4-HMAC-SHA256 Credential=x") };
    v.h = bad;
    v.nh = 2;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_AUTH_HEADER_MALFORMED);
}

/* ---- every refusal, one step of the verification at a time ----------------- */

#define S3_CRED "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"
#define AUTHZ(cred, signed, sig) \
    "AWS4-HMAC-SHA256 Credential=" cred ",SignedHeaders=" signed ",Signature=" sig
#define WRONG_SIG "0000000000000000000000000000000000000000000000000000000000000000"
#define GET_SIG "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
#define GET_SIGNED "host;range;x-amz-content-sha256;x-amz-date"

typedef struct {
    const char *why;
    const char *auth;             /* Authorization; NULL: none */
    const char *date_name, *date; /* a date header; NULL: none */
    const char *sha;              /* x-amz-content-sha256; NULL: none */
    const char *query;
    cn_err_t want;
    cn_s3_err_t want_s3;
    const char *detail; /* how the detail starts */
} refusal_t;

static const refusal_t refusals[] = {
    { "the published example passes", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), "x-amz-date",
      "20130524T000000Z", EMPTY_SHA, NULL, 0, 0, "" },
    { "a header and a query signature at once", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), "x-amz-date",
      "20130524T000000Z", EMPTY_SHA, "X-Amz-Algorithm=AWS4-HMAC-SHA256", CN_E_AUTH,
      CN_S3E_INVALID_ARGUMENT, "Only one auth mechanism allowed" },
    { "SigV4a", "AWS4-ECDSA-P256-SHA256 Credential=" S3_CRED ",SignedHeaders=host,Signature=x",
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_NOT_IMPLEMENTED,
      "unsupported signing algorithm" },
    { "an unknown algorithm",
      "AWS4-HMAC-SHA1 Credential=" S3_CRED ",SignedHeaders=host,Signature=x", "x-amz-date",
      "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "unsupported signing algorithm" },
    { "a header without Signature", "AWS4-HMAC-SHA256 Credential=" S3_CRED ",SignedHeaders=host",
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the authorization header is malformed" },
    { "a credential with too few parts",
      AUTHZ("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3", GET_SIGNED, GET_SIG), "x-amz-date",
      "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the Credential is malformed; expected \"<" },
    { "a credential without a key",
      AUTHZ("/20130524/us-east-1/s3/aws4_request", GET_SIGNED, GET_SIG), "x-amz-date",
      "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the Credential is malformed; expected \"<" },
    { "a credential with a wrong terminator",
      AUTHZ("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_requesx", GET_SIGNED, GET_SIG),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the Credential is malformed" },
    { "a credential with a short date",
      AUTHZ("AKIAIOSFODNN7EXAMPLE/2013052/us-east-1/s3/aws4_request", GET_SIGNED, GET_SIG),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the Credential is malformed" },
    { "a credential for another service",
      AUTHZ("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request", GET_SIGNED, GET_SIG),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the service in the credential must be 's" },
    { "a credential dated another day",
      AUTHZ("AKIAIOSFODNN7EXAMPLE/20130525/us-east-1/s3/aws4_request", GET_SIGNED, GET_SIG),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the credential date does not match the r" },
    { "no date at all", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), NULL, NULL, EMPTY_SHA, NULL, CN_E_AUTH,
      CN_S3E_ACCESS_DENIED, "AWS authentication requires a valid Date" },
    { "an x-amz-date not in the basic format", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), "x-amz-date",
      "2013-05-24T00:00:00Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_ACCESS_DENIED,
      "X-Amz-Date must be in the ISO8601 basic" },
    { "a Date header that is not a date", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), "Date", "Friday",
      EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_ACCESS_DENIED, "the Date header is not valid" },
    { "a valid Date header alone reaches the signature",
      AUTHZ(S3_CRED, "date;host;range;x-amz-content-sha256", WRONG_SIG), "Date",
      "Fri, 24 May 2013 00:00:00 GMT", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH,
      "The request signature we calculated does" },
    { "host not signed", AUTHZ(S3_CRED, "range;x-amz-content-sha256;x-amz-date", GET_SIG),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the host header must be signed" },
    { "a signed header that is absent", AUTHZ(S3_CRED, "host;x-absent;x-amz-date", GET_SIG),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "a signed header is missing or the reques" },
    { "an upper-case signed header", AUTHZ(S3_CRED, "host;Range;x-amz-date", GET_SIG), "x-amz-date",
      "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "a signed header is missing or the reques" },
    { "SigV4a streaming", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), "x-amz-date", "20130524T000000Z",
      "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", NULL, CN_E_AUTH, CN_S3E_NOT_IMPLEMENTED,
      "SigV4a streaming is not supported" },
    { "a content hash that is not one", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), "x-amz-date",
      "20130524T000000Z", "sha256-please", NULL, CN_E_AUTH, CN_S3E_INVALID_ARGUMENT,
      "x-amz-content-sha256 must be UNSIGNED-PA" },
    { "unsigned payload reaches the signature", AUTHZ(S3_CRED, GET_SIGNED, GET_SIG), "x-amz-date",
      "20130524T000000Z", "UNSIGNED-PAYLOAD", NULL, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH,
      "The request signature we calculated does" },
    { "a signature one character short", AUTHZ(S3_CRED, GET_SIGNED, "0123456789abcdef"),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the signature must be 64 hexadecimal cha" },
    { "a signature that is not hexadecimal",
      AUTHZ(S3_CRED, GET_SIGNED,
            "g0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, CN_E_AUTH, CN_S3E_AUTH_HEADER_MALFORMED,
      "the signature must be 64 hexadecimal cha" },
    { "an upper-case signature is the same signature",
      AUTHZ(S3_CRED, GET_SIGNED,
            "F0E8BDB87C964420E857BD35B5D6ED310BD44F0170ABA48DD91039C6036BDB41"),
      "x-amz-date", "20130524T000000Z", EMPTY_SHA, NULL, 0, 0, "" },
};

#define PRE_CRED "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
#define PRE_SIG "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static const refusal_t presigned_refusals[] = {
    { "an unknown X-Amz-Algorithm", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA1&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "unsupported X-Amz-Algorithm" },
    { "no X-Amz-Signature", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host",
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Credential, X-Amz-SignedHeaders an" },
    { "a malformed credential", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE"
      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "the Credential is malformed; expected \"<" },
    { "no X-Amz-Date", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Date is required" },
    { "an X-Amz-Date not in the basic format", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Date must be in the ISO8601 basic" },
    { "no X-Amz-Expires", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Expires is required" },
    { "an X-Amz-Expires of 0", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=0&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Expires must be between 1 and 6048" },
    { "an X-Amz-Expires with a sign", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=%2B5&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Expires must be between 1 and 6048" },
    { "host not signed in a URL", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=range&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "the host header must be signed" },
    { "a signed streaming body in a URL", NULL, NULL, NULL, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_INVALID_ARGUMENT, "x-amz-content-sha256 must be UNSIGNED-PA" },
    { "a URL signature that is not hexadecimal", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=zz",
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "the signature must be 64 hexadecimal cha" },
    /* The items are found by exact name, in one pass: longer, shorter or
     * differently cased names are other items, and the first of a name is
     * the one read. */
    { "X-Amz-Dates and X-Amz-DATE are not X-Amz-Date", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Dates=20130524T000000Z"
      "&X-Amz-DATE=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Date is required" },
    { "X-Amz-Expire is not X-Amz-Expires", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expire=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Expires is required" },
    { "the first X-Amz-Expires is the one read", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=0&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Expires must be between 1 and 6048" },
    { "an X-Amz-Date with no '=' is empty", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&" PRE_SIG,
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Date must be in the ISO8601 basic" },
    { "an X-Amz-Signature with a bad escape is absent", NULL, NULL, NULL, NULL,
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&" PRE_CRED "&X-Amz-Date=20130524T000000Z"
      "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=%zz",
      CN_E_AUTH, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Credential, X-Amz-SignedHeaders an" },
};

/* Runs one refusal over the S3 GET example's request (path, Range, key). */
static void check_refusal(const refusal_t *r, const char *secret, bool has_body)
{
    cn_http_kv_t h[5] = { KV("Host", "examplebucket.s3.amazonaws.com"), KV("Range", "bytes=0-9") };
    size_t nh = 2;
    if (r->sha)
        h[nh++] = (cn_http_kv_t){ "x-amz-content-sha256", 20, r->sha, strlen(r->sha) };
    if (r->date_name)
        h[nh++] = (cn_http_kv_t){ r->date_name, strlen(r->date_name), r->date, strlen(r->date) };
    if (r->auth)
        h[nh++] = (cn_http_kv_t){ "Authorization", 13, r->auth, strlen(r->auth) };
    vec_t v = {
        "GET", "/test.txt", r->query, h, nh, "s3", S3_KEY, secret, s3_now(), has_body, NULL
    };
    cn_sigv4_t s;
    cn_err_t e = run(&v, &s);
    if (e != r->want || (e == CN_E_AUTH && s.s3err != r->want_s3))
        fprintf(stderr, "# %s: %s, %s (%s)\n", r->why, cn_errname(e), cn_s3_err_code(s.s3err),
                s.detail);
    CN_CHECK_EQ(e, r->want);
    if (e == CN_E_AUTH) {
        CN_CHECK_EQ(s.s3err, r->want_s3);
        CN_CHECK(strncmp(s.detail, r->detail, strlen(r->detail)) == 0);
        static const uint8_t zero[32];
        CN_CHECK_MEM(s.signing_key, zero, 32); /* a refusal keeps no key */
    }
    cn_sigv4_clear(&s);
}

static void test_refusals(void)
{
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        check_refusal(&refusals[i], S3_SECRET, false);
    for (size_t i = 0; i < sizeof presigned_refusals / sizeof presigned_refusals[0]; i++)
        check_refusal(&presigned_refusals[i], S3_SECRET, false);

    /* A credential store that fails is not a bad key. */
    static char long_secret[CN_SIGV4_MAX_SECRET + 2];
    memset(long_secret, 'k', sizeof long_secret - 1);
    refusal_t store = refusals[0];
    store.want = CN_E_AUTH;
    store.want_s3 = CN_S3E_INTERNAL_ERROR;
    store.detail = "the credential store failed";
    check_refusal(&store, long_secret, false);
}

/* A body without x-amz-content-sha256 defers the comparison until its hash is
 * known; the signature is computed here with the module's own primitives. */
static void test_deferred_payload(void)
{
    static const char body[] = "Welcome to Amazon S3.";
    uint8_t body_sha[32], other_sha[32], key[32];
    char body_hex[65], sig[65];
    cn_sha256(body, sizeof body - 1, body_sha);
    cn_sha256("something else", 14, other_sha);
    cn_hex_encode(body_sha, 32, body_hex);
    cn_http_kv_t h[3] = { KV("Host", "examplebucket.s3.amazonaws.com"),
                          KV("x-amz-date", "20130524T000000Z") };
    cn_buf_t canon = { 0 };
    CN_CHECK_EQ(cn_sigv4_canonical_request(&canon, "PUT", "/test.txt", 9, NULL, 0, h, 2,
                                           "host;x-amz-date", 15, body_hex),
                0);
    cn_sigv4_signing_key((const uint8_t *)S3_SECRET, strlen(S3_SECRET), "20130524", "us-east-1",
                         "s3", key);
    cn_sigv4_sign(key, "20130524T000000Z", "20130524/us-east-1/s3/aws4_request",
                  (const char *)canon.data, canon.len, sig);
    cn_buf_free(&canon);
    char auth[256];
    snprintf(auth, sizeof auth, AUTHZ(S3_CRED, "host;x-amz-date", "%s"), sig);
    h[2] = (cn_http_kv_t){ "Authorization", 13, auth, strlen(auth) };
    vec_t v = { "PUT", "/test.txt", NULL, h, 3, "s3", S3_KEY, S3_SECRET, s3_now(), true, NULL };

    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), 0);
    CN_CHECK_EQ(s.payload, CN_SIGV4_PAYLOAD_DEFERRED);
    CN_CHECK_EQ(cn_sigv4_finish_deferred(&s, body_sha), 0);
    cn_sigv4_clear(&s);

    CN_CHECK_EQ(run(&v, &s), 0);
    CN_CHECK_EQ(cn_sigv4_finish_deferred(&s, other_sha), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
    cn_sigv4_clear(&s);

    /* Without a body there is nothing to defer: the empty hash is assumed. */
    v.has_body = false;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
}

/* ---- aws-chunked ---------------------------------------------------------- */

typedef struct {
    uint64_t n;
    bool all_a;
} sink_t;

static int sink(void *ctx, const uint8_t *p, size_t n)
{
    sink_t *s = ctx;
    for (size_t i = 0; i < n; i++)
        if (p[i] != 'a')
            s->all_a = false;
    s->n += n;
    return 0;
}

static char *chunked_body(const char *s1, const char *s2, const char *s3, const char *trailer,
                          size_t *len)
{
    cn_buf_t b = { 0 };
    cn_buf_printf(&b, "10000;chunk-signature=%s\r\n", s1);
    for (int i = 0; i < 65536; i++)
        cn_buf_put_u8(&b, 'a');
    cn_buf_printf(&b, "\r\n400;chunk-signature=%s\r\n", s2);
    for (int i = 0; i < 1024; i++)
        cn_buf_put_u8(&b, 'a');
    cn_buf_printf(&b, "\r\n0;chunk-signature=%s\r\n", s3);
    if (trailer)
        cn_buf_append_str(&b, trailer);
    cn_buf_append_str(&b, "\r\n");
    *len = b.len;
    return (char *)b.data;
}

static cn_err_t decode(const cn_sigv4_t *sig, bool trailer, const char *body, size_t len,
                       size_t slice, sink_t *out, cn_awschunk_t *d)
{
    out->n = 0;
    out->all_a = true;
    CN_TRY(cn_awschunk_init(d, sig, true, trailer, 66560));
    cn_err_t e = 0;
    for (size_t off = 0; off < len && !e; off += slice)
        e = cn_awschunk_feed(d, (const uint8_t *)body + off, len - off < slice ? len - off : slice,
                             sink, out);
    if (!e)
        e = cn_awschunk_end(d);
    return e;
}

static void test_streaming_example(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "s3.amazonaws.com"),
        KV("x-amz-date", "20130524T000000Z"),
        KV("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        KV("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        KV("Content-Encoding", "aws-chunked"),
        KV("x-amz-decoded-content-length", "66560"),
        KV("Content-Length", "66824"),
        KV("Authorization",
           S3_AUTH("content-encoding;content-length;host;x-amz-content-sha256;"
                   "x-amz-date;x-amz-decoded-content-length;x-amz-storage-class",
                   "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"))
    };
    vec_t v = { "PUT",    "/examplebucket/chunkObject.txt",
                NULL,     h,
                8,        "s3",
                S3_KEY,   S3_SECRET,
                s3_now(), true,
                NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), 0);
    CN_CHECK_EQ(s.payload, CN_SIGV4_PAYLOAD_STREAMING);
    size_t len;
    char *body = chunked_body("ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                              "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                              "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
                              NULL, &len);
    CN_CHECK_EQ(len, 66824);
    static const size_t slices[] = { 1, 7, 100, 65536, 70000 };
    for (size_t i = 0; i < 5; i++) {
        cn_awschunk_t d;
        sink_t out;
        CN_CHECK_EQ(decode(&s, false, body, len, slices[i], &out, &d), 0);
        CN_CHECK_EQ(out.n, 66560);
        CN_CHECK(out.all_a);
        cn_awschunk_free(&d);
    }
    /* A flipped data byte breaks the chain at that chunk. */
    body[100] = 'b';
    {
        cn_awschunk_t d;
        sink_t out;
        CN_CHECK_EQ(decode(&s, false, body, len, 4096, &out, &d), CN_E_AUTH);
        CN_CHECK_EQ(d.s3err, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
        cn_awschunk_free(&d);
    }
    body[100] = 'a';
    /* Truncated before the final chunk: incomplete. */
    {
        cn_awschunk_t d;
        sink_t out;
        CN_CHECK_EQ(decode(&s, false, body, len - 90, 4096, &out, &d), CN_E_PROTOCOL);
        cn_awschunk_free(&d);
    }
    /* A trailer on a body signed without one. */
    free(body);
    body = chunked_body("ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
                        "x-amz-checksum-crc32:NSRBwg==\r\n", &len);
    {
        cn_awschunk_t d;
        sink_t out;
        CN_CHECK(decode(&s, false, body, len, 4096, &out, &d) != 0);
        cn_awschunk_free(&d);
    }
    free(body);
    /* A body larger than declared is refused before it is delivered. */
    {
        cn_awschunk_t d;
        CN_CHECK_EQ(cn_awschunk_init(&d, &s, true, false, 100), 0);
        const char *hdr = "10000;chunk-signature="
                          "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n";
        CN_CHECK_EQ(cn_awschunk_feed(&d, (const uint8_t *)hdr, strlen(hdr), sink, &(sink_t){ 0 }),
                    CN_E_TOO_LARGE);
        cn_awschunk_free(&d);
    }
    cn_sigv4_clear(&s);
}

static void test_streaming_trailer_example(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "s3.amazonaws.com"),
        KV("x-amz-date", "20130524T000000Z"),
        KV("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        KV("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"),
        KV("Content-Encoding", "aws-chunked"),
        KV("x-amz-decoded-content-length", "66560"),
        KV("x-amz-trailer", "x-amz-checksum-crc32c"),
        KV("Authorization",
           S3_AUTH("content-encoding;host;x-amz-content-sha256;x-amz-date;"
                   "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer",
                   "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"))
    };
    vec_t v = { "PUT",    "/examplebucket/chunkObject.txt",
                NULL,     h,
                8,        "s3",
                S3_KEY,   S3_SECRET,
                s3_now(), true,
                NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), 0);
    CN_CHECK_EQ(s.payload, CN_SIGV4_PAYLOAD_STREAMING_TRAILER);
    const char *tr = "x-amz-checksum-crc32c:sOO8/Q==\r\n"
                     "x-amz-trailer-signature:"
                     "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n";
    size_t len;
    char *body =
        chunked_body("b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
                     "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
                     "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992", tr, &len);
    cn_awschunk_t d;
    sink_t out;
    CN_CHECK_EQ(decode(&s, true, body, len, 333, &out, &d), 0);
    CN_CHECK_EQ(out.n, 66560);
    CN_CHECK_STR(cn_awschunk_trailer(&d, "x-amz-checksum-crc32c"), "sOO8/Q==");
    cn_awschunk_free(&d);
    free(body);
    /* The trailer value changed: the trailer signature fails. */
    const char *bad = "x-amz-checksum-crc32c:AAAAAA==\r\n"
                      "x-amz-trailer-signature:"
                      "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n";
    body =
        chunked_body("b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
                     "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
                     "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992", bad, &len);
    CN_CHECK_EQ(decode(&s, true, body, len, 4096, &out, &d), CN_E_AUTH);
    cn_awschunk_free(&d);
    free(body);
    /* Our CRC32C of the payload is the documented trailer value. */
    cn_http_cksum_t c;
    uint8_t raw[CN_CKSUM_MAX_LEN];
    char b64[CN_CKSUM_B64_LEN];
    CN_CHECK_EQ(cn_http_cksum_init(&c, CN_CKSUM_CRC32C), 0);
    for (int i = 0; i < 66560; i++)
        cn_http_cksum_update(&c, "a", 1);
    CN_CHECK_EQ(cn_http_cksum_final(&c, raw, b64), 4);
    CN_CHECK_STR(b64, "sOO8/Q==");
    cn_sigv4_clear(&s);
}

static void test_unsigned_trailer(void)
{
    const char *body = "5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
    for (size_t slice = 1; slice < 20; slice += 6) {
        cn_awschunk_t d;
        sink_t out = { 0 };
        CN_CHECK_EQ(cn_awschunk_init(&d, NULL, false, true, UINT64_MAX), 0);
        cn_err_t e = 0;
        size_t len = strlen(body);
        for (size_t off = 0; off < len && !e; off += slice)
            e = cn_awschunk_feed(&d, (const uint8_t *)body + off,
                                 len - off < slice ? len - off : slice, sink, &out);
        CN_CHECK_EQ(e, 0);
        CN_CHECK_EQ(cn_awschunk_end(&d), 0);
        CN_CHECK_EQ(out.n, 11);
        CN_CHECK_STR(cn_awschunk_trailer(&d, "X-Amz-Checksum-CRC32"), "DUoRhQ==");
        cn_awschunk_free(&d);
    }
    cn_http_cksum_t c;
    uint8_t raw[CN_CKSUM_MAX_LEN];
    char b64[CN_CKSUM_B64_LEN];
    cn_http_cksum_init(&c, CN_CKSUM_CRC32);
    cn_http_cksum_update(&c, "hello world", 11);
    cn_http_cksum_final(&c, raw, b64);
    CN_CHECK_STR(b64, "DUoRhQ==");
    /* Malformed framing. */
    const char *bad[] = { "zz\r\n", "5\r\nhelloXX", "5;x\r\nhello\r\n0\r\n\r\nextra" };
    for (size_t i = 0; i < 3; i++) {
        cn_awschunk_t d;
        cn_awschunk_init(&d, NULL, false, true, UINT64_MAX);
        cn_err_t e =
            cn_awschunk_feed(&d, (const uint8_t *)bad[i], strlen(bad[i]), sink, &(sink_t){ 0 });
        if (!e)
            e = cn_awschunk_end(&d);
        CN_CHECK(e != 0);
        cn_awschunk_free(&d);
    }
}

static void test_checksums(void)
{
    CN_CHECK_EQ(cn_crc64nvme(0, "123456789", 9), (long long)0xAE8B14860A799888ull);
    /* Incremental in any split. */
    uint64_t c = cn_crc64nvme(0, "1234", 4);
    CN_CHECK_EQ(cn_crc64nvme(c, "56789", 5), (long long)0xAE8B14860A799888ull);
    CN_CHECK_EQ(cn_http_cksum_parse("x-amz-checksum-crc64nvme"), CN_CKSUM_CRC64NVME);
    CN_CHECK_EQ(cn_http_cksum_parse("SHA256"), CN_CKSUM_SHA256);
    CN_CHECK_EQ(cn_http_cksum_parse("md5"), CN_CKSUM_NONE);
    cn_http_cksum_t k;
    uint8_t raw[CN_CKSUM_MAX_LEN];
    char b64[CN_CKSUM_B64_LEN];
    cn_http_cksum_init(&k, CN_CKSUM_SHA1);
    cn_http_cksum_update(&k, "abc", 3);
    CN_CHECK_EQ(cn_http_cksum_final(&k, raw, b64), 20);
    CN_CHECK_STR(b64, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
}

static void test_encoding(void)
{
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_sigv4_uri_encode(&b, "a b+c/~*", 8, false), 0);
    cn_buf_put_u8(&b, 0);
    CN_CHECK_STR((const char *)b.data, "a%20b%2Bc%2F~%2A");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_http_pct_decode(&b, "%41%2", 5), CN_E_INVALID);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_http_pct_decode(&b, "a%00", 4), CN_E_INVALID);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_http_pct_decode(&b, "a+%2b%7e", 8), 0);
    cn_buf_put_u8(&b, 0);
    CN_CHECK_STR((const char *)b.data, "a++~");
    cn_buf_free(&b);
    char d[8] = "xxxxxxx";
    CN_CHECK_EQ(cn_http_pct_decode_to(d, "a%2Fb%7e", 8), 4); /* no NUL added */
    CN_CHECK(memcmp(d, "a/b~xxx", 7) == 0);
    CN_CHECK_EQ(cn_http_pct_decode_to(d, "a%0", 3), -1);
    CN_CHECK_EQ(cn_http_pct_decode_to(d, "%00", 3), -1);
    CN_CHECK_EQ(cn_http_pct_decode_to(d, "", 0), 0);
    int64_t t;
    CN_CHECK_EQ(cn_sigv4_parse_date("20130524T000000Z", 16, &t), 0);
    CN_CHECK_EQ(t, 1369353600000LL);
    CN_CHECK_EQ(cn_sigv4_parse_date("20130524T000000", 15, &t), CN_E_INVALID);
    CN_CHECK_EQ(cn_sigv4_parse_date("2013052xT000000Z", 16, &t), CN_E_INVALID);
    /* The arithmetic against libc's timegm, every day from 1900 to 2400 at a
     * time of day that moves with it; impossible days refused. */
    for (int64_t day = -25567; day < 157054; day++) {
        time_t secs = (time_t)(day * 86400 + (day * 7919) % 86400);
        struct tm tm;
        gmtime_r(&secs, &tm);
        char s[17];
        strftime(s, sizeof s, "%Y%m%dT%H%M%SZ", &tm);
        if (cn_sigv4_parse_date(s, 16, &t) != 0 || t != (int64_t)secs * 1000) {
            printf("# %s not parsed as its timegm value\n", s);
            CN_CHECK_EQ(cn_sigv4_parse_date(s, 16, &t), 0);
            CN_CHECK_EQ(t, (int64_t)secs * 1000);
            break;
        }
    }
    CN_CHECK_EQ(cn_sigv4_parse_date("20240229T120000Z", 16, &t), 0);
    CN_CHECK_EQ(cn_sigv4_parse_date("20230229T120000Z", 16, &t), CN_E_INVALID);
    CN_CHECK_EQ(cn_sigv4_parse_date("21000229T120000Z", 16, &t), CN_E_INVALID);
    CN_CHECK_EQ(cn_sigv4_parse_date("20000229T120000Z", 16, &t), 0);
    CN_CHECK_EQ(cn_sigv4_parse_date("20130431T120000Z", 16, &t), CN_E_INVALID);
    CN_CHECK_EQ(cn_sigv4_parse_date("20131301T120000Z", 16, &t), CN_E_INVALID);
    CN_CHECK_EQ(cn_sigv4_parse_date("20130100T120000Z", 16, &t), CN_E_INVALID);
    CN_CHECK_EQ(cn_sigv4_parse_date("20130101T235960Z", 16, &t), CN_E_INVALID);
    CN_CHECK_EQ(cn_sigv4_parse_date("20130101T120060Z", 16, &t), 0);
    CN_CHECK_EQ(t, 1357041660000LL);
}

/* ---- the signing-key cache ------------------------------------------------ */

typedef struct {
    const char *secret, *date8, *region, *service;
} tuple_t;

static void derive(const tuple_t *t, uint8_t key[32])
{
    cn_sigv4_signing_key((const uint8_t *)t->secret, strlen(t->secret), t->date8, t->region,
                         t->service, key);
}

/* Through the cache; *hit tells whether it answered without deriving. */
static void cached(const tuple_t *t, uint8_t key[32], bool *hit)
{
    uint64_t h0, m0, h1, m1;
    cn_sigv4_key_cache_stats(&h0, &m0);
    cn_sigv4_signing_key_cached((const uint8_t *)t->secret, strlen(t->secret), t->date8, t->region,
                                t->service, key);
    cn_sigv4_key_cache_stats(&h1, &m1);
    CN_CHECK_EQ((h1 - h0) + (m1 - m0), 1);
    *hit = h1 == h0 + 1;
}

static void test_key_cache_reuse(void)
{
    static const tuple_t base = { S3_SECRET, "20130524", "us-east-1", "s3" };
    /* Each differs from base in one field: the secret rotated by one byte. */
    static const tuple_t other[] = {
        { S3_SECRET, "20130525", "us-east-1", "s3" },
        { S3_SECRET, "20130524", "eu-west-1", "s3" },
        { S3_SECRET, "20130524", "us-east-1", "s4" },
        { "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz", "20130524", "us-east-1", "s3" },
    };
    uint8_t want[32], got[32], again[32];
    bool hit;
    cn_sigv4_key_cache_clear();
    derive(&base, want);
    cached(&base, got, &hit);
    CN_CHECK(!hit);
    CN_CHECK_MEM(got, want, 32);
    cached(&base, again, &hit);
    CN_CHECK(hit); /* the same tuple: the same key, not derived again */
    CN_CHECK_MEM(again, want, 32);
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        uint8_t k[32], direct[32];
        derive(&other[i], direct);
        cached(&other[i], k, &hit);
        CN_CHECK(!hit); /* never answered by base's slot */
        CN_CHECK_MEM(k, direct, 32);
        CN_CHECK(memcmp(k, want, 32) != 0);
        cached(&other[i], k, &hit);
        CN_CHECK(hit);
        CN_CHECK_MEM(k, direct, 32);
    }
    /* Cleared: derived again, the same key. */
    cn_sigv4_key_cache_clear();
    cached(&base, got, &hit);
    CN_CHECK(!hit);
    CN_CHECK_MEM(got, want, 32);
    /* A region too long for a slot is derived every time, correctly. */
    char long_region[CN_SIGV4_MAX_REGION + 1];
    memset(long_region, 'r', sizeof long_region - 1);
    long_region[sizeof long_region - 1] = 0;
    tuple_t lr = { S3_SECRET, "20130524", long_region, "s3" };
    derive(&lr, want);
    for (int i = 0; i < 2; i++) {
        cached(&lr, got, &hit);
        CN_CHECK(!hit);
        CN_CHECK_MEM(got, want, 32);
    }
}

/* Keys found by a credential store's tag: the access key is part of the
 * tuple (a store's tag need only differ between the secrets of one access
 * key, e.g. a generation number), a tag that changed with the secret misses,
 * and a zero tag falls back to fingerprinting the secret. */
static void test_key_cache_tagged(void)
{
    static const char *const other = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz";
    uint8_t t1[CN_SIGV4_TAG_LEN] = { 1 }, t2[CN_SIGV4_TAG_LEN] = { 2 };
    uint8_t zero[CN_SIGV4_TAG_LEN] = { 0 }, want_a[32], want_b[32], got[32];
    uint64_t h0, m0, h1, m1;
    const uint8_t *a = (const uint8_t *)S3_SECRET, *b = (const uint8_t *)other;
    size_t al = strlen(S3_SECRET), bl = strlen(other);
    cn_sigv4_signing_key(a, al, "20130524", "us-east-1", "s3", want_a);
    cn_sigv4_signing_key(b, bl, "20130524", "us-east-1", "s3", want_b);
    cn_sigv4_key_cache_clear();
    cn_sigv4_key_cache_stats(&h0, &m0);
    /* Two access keys with the same tag and different secrets. */
    cn_sigv4_signing_key_tagged("AKONE", t1, a, al, "20130524", "us-east-1", "s3", got);
    CN_CHECK_MEM(got, want_a, 32);
    cn_sigv4_signing_key_tagged("AKTWO", t1, b, bl, "20130524", "us-east-1", "s3", got);
    CN_CHECK_MEM(got, want_b, 32);
    /* Found again by (access key, tag): hits, no derivation. */
    cn_sigv4_signing_key_tagged("AKONE", t1, a, al, "20130524", "us-east-1", "s3", got);
    CN_CHECK_MEM(got, want_a, 32);
    cn_sigv4_key_cache_stats(&h1, &m1);
    CN_CHECK_EQ(h1 - h0, 1);
    CN_CHECK_EQ(m1 - m0, 2);
    /* AKONE's secret rotated to b: another tag, the key of b. */
    cn_sigv4_signing_key_tagged("AKONE", t2, b, bl, "20130524", "us-east-1", "s3", got);
    CN_CHECK_MEM(got, want_b, 32);
    /* No tag: the secret's fingerprint tells them apart. */
    cn_sigv4_signing_key_tagged("AKONE", zero, a, al, "20130524", "us-east-1", "s3", got);
    CN_CHECK_MEM(got, want_a, 32);
    cn_sigv4_signing_key_tagged("AKONE", NULL, b, bl, "20130524", "us-east-1", "s3", got);
    CN_CHECK_MEM(got, want_b, 32);
    /* An access key too long for a slot is derived every time, correctly. */
    char long_key[CN_SIGV4_MAX_KEY];
    memset(long_key, 'K', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    for (int i = 0; i < 2; i++) {
        cn_sigv4_key_cache_stats(&h0, &m0);
        cn_sigv4_signing_key_tagged(long_key, t1, a, al, "20130524", "us-east-1", "s3", got);
        CN_CHECK_MEM(got, want_a, 32);
        cn_sigv4_key_cache_stats(&h1, &m1);
        CN_CHECK_EQ(m1 - m0, 1);
    }
}

/* A slot answers only when every field matches, not when the tuple merely
 * hashes to its set: for each field, many tuples differing from a cached one
 * in that field alone (some share its set, whatever the hash) are each
 * derived, never answered with the cached tuple's key. */
static void test_key_cache_full_compare(void)
{
    static const tuple_t base = { S3_SECRET, "20130524", "us-east-1", "s3" };
    enum {
        VARIANTS = 256
    };
    cn_sigv4_key_cache_clear();
    for (int field = 0; field < 4; field++) {
        int wrong = 0, hits = 0;
        for (int i = 0; i < VARIANTS; i++) {
            char secret[64], date8[9], region[16], service[16];
            snprintf(secret, sizeof secret, "%s%d", S3_SECRET, i);
            snprintf(date8, sizeof date8, "2014%04d", i);
            snprintf(region, sizeof region, "region-%d", i);
            snprintf(service, sizeof service, "svc%d", i);
            tuple_t t = base;
            if (field == 0)
                t.secret = secret;
            else if (field == 1)
                t.date8 = date8;
            else if (field == 2)
                t.region = region;
            else
                t.service = service;
            uint8_t want[32], got[32];
            bool hit;
            cached(&base, got, &hit); /* most recently used: never the one evicted */
            derive(&t, want);
            cached(&t, got, &hit);
            wrong += memcmp(got, want, 32) != 0;
            hits += hit;
        }
        CN_CHECK_EQ(wrong, 0);
        CN_CHECK_EQ(hits, 0);
    }
}

/* Secrets of every length around BLAKE3's block (64 bytes) and chunk (1 KiB)
 * and up to the bound: one that differs from a cached one only in its last
 * byte misses and gets its own key; the same secret again hits. */
static void test_key_cache_secret_lengths(void)
{
    static const size_t lens[] = { 1, 40, 63, 64, 65, 128, 200, CN_SIGV4_MAX_SECRET };
    cn_sigv4_key_cache_clear();
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char a[CN_SIGV4_MAX_SECRET + 1], b[CN_SIGV4_MAX_SECRET + 1];
        memset(a, 'k', lens[i]);
        a[lens[i]] = 0;
        memcpy(b, a, lens[i] + 1);
        b[lens[i] - 1] = 'j';
        tuple_t ta = { a, "20130524", "us-east-1", "s3" },
                tb = { b, "20130524", "us-east-1", "s3" };
        uint8_t want[32], got[32];
        bool hit;
        cached(&ta, got, &hit);
        derive(&ta, want);
        CN_CHECK_MEM(got, want, 32);
        CN_CHECK(!hit);
        cached(&tb, got, &hit);
        derive(&tb, want);
        CN_CHECK_MEM(got, want, 32);
        CN_CHECK(!hit);
        cached(&ta, got, &hit);
        derive(&ta, want);
        CN_CHECK_MEM(got, want, 32);
        CN_CHECK(hit);
    }
}

/* The cache holds at most CN_SIGV4_KEY_CACHE_SLOTS keys, each still right. */
static void test_key_cache_bound(void)
{
    enum {
        N = 4 * CN_SIGV4_KEY_CACHE_SLOTS
    };
    char dates[N][9];
    cn_sigv4_key_cache_clear();
    for (int pass = 0; pass < 2; pass++) {
        int hits = 0;
        for (int i = 0; i < N; i++) {
            snprintf(dates[i], sizeof dates[i], "2013%04d", i);
            tuple_t t = { S3_SECRET, dates[i], "us-east-1", "s3" };
            uint8_t want[32], got[32];
            bool hit;
            derive(&t, want);
            cached(&t, got, &hit);
            CN_CHECK_MEM(got, want, 32);
            hits += hit;
        }
        if (pass == 0)
            CN_CHECK_EQ(hits, 0);
        else
            CN_CHECK(hits <= CN_SIGV4_KEY_CACHE_SLOTS);
    }
}

/* Through cn_sigv4_verify: the second verification of a request reuses the
 * key; a rotated secret or a revoked key is still refused. */
static void test_key_cache_verify(void)
{
    cn_http_kv_t h[] = {
        KV("Host", "examplebucket.s3.amazonaws.com"), KV("Range", "bytes=0-9"),
        KV("x-amz-content-sha256", EMPTY_SHA), KV("x-amz-date", "20130524T000000Z"),
        KV("Authorization", S3_AUTH("host;range;x-amz-content-sha256;x-amz-date", GET_SIG))
    };
    vec_t v = { "GET", "/test.txt", NULL, h, 5, "s3", S3_KEY, S3_SECRET, s3_now(), false, NULL };
    cn_sigv4_t s;
    uint64_t h0, m0, h1, m1;
    cn_sigv4_key_cache_clear();
    CN_CHECK_EQ(run(&v, &s), 0);
    cn_sigv4_key_cache_stats(&h0, &m0);
    CN_CHECK_EQ(run(&v, &s), 0);
    cn_sigv4_key_cache_stats(&h1, &m1);
    CN_CHECK_EQ(h1 - h0, 1);
    CN_CHECK_EQ(m1 - m0, 0);
    uint8_t want[32];
    cn_sigv4_signing_key((const uint8_t *)S3_SECRET, strlen(S3_SECRET), "20130524", "us-east-1",
                         "s3", want);
    CN_CHECK_MEM(s.signing_key, want, 32);
    cn_sigv4_clear(&s);
    /* The token's secret rotated: its old key is cached, the request is
     * still refused (and the new secret's key derived). */
    v.secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz";
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
    cn_sigv4_key_cache_stats(&h0, &m0);
    CN_CHECK_EQ(m0 - m1, 1);
    /* Revoked: the store no longer knows the key; the cache does not help. */
    v.secret = S3_SECRET;
    v.key = "REVOKED";
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_INVALID_ACCESS_KEY_ID);
}

/* A store that hands out a tag with the secret, as the server's does. */
typedef struct {
    const char *key, *secret;
    uint8_t tag;
} tagged_store_t;

static int lookup_tagged(void *ctx, const char *key, uint8_t *secret, size_t cap, size_t *len,
                         uint8_t tag[CN_SIGV4_TAG_LEN])
{
    const tagged_store_t *st = ctx;
    if (strcmp(key, st->key) != 0)
        return CN_E_NOT_FOUND;
    *len = strlen(st->secret);
    if (*len > cap)
        return CN_E_INVALID;
    memcpy(secret, st->secret, *len);
    tag[0] = st->tag;
    return 0;
}

/* A presigned GET of /o signed by key with secret (the signature computed
 * with a freshly derived key: no cache), verified through st. */
static cn_err_t presigned_verify(const tagged_store_t *st, const char *key, const char *secret,
                                 cn_sigv4_t *s)
{
    static cn_http_kv_t h[] = { KV("Host", "h") };
    char q[512], sig[65];
    uint8_t k[32];
    int n = snprintf(q, sizeof q,
                     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s%%2F20130524%%2Fus-east-1"
                     "%%2Fs3%%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
                     "&X-Amz-SignedHeaders=host",
                     key);
    cn_buf_t canon = { 0 };
    CN_CHECK_EQ(cn_sigv4_canonical_request(&canon, "GET", "/o", 2, q, (size_t)n, h, 1, "host", 4,
                                           "UNSIGNED-PAYLOAD"),
                0);
    cn_sigv4_signing_key((const uint8_t *)secret, strlen(secret), "20130524", "us-east-1", "s3", k);
    cn_sigv4_sign(k, "20130524T000000Z", "20130524/us-east-1/s3/aws4_request",
                  (const char *)canon.data, canon.len, sig);
    cn_buf_free(&canon);
    snprintf(q + n, sizeof q - (size_t)n, "&X-Amz-Signature=%s", sig);
    cn_sigv4_input_t in = { .method = "GET",
                            .path = "/o",
                            .path_len = 2,
                            .query = q,
                            .query_len = strlen(q),
                            .headers = h,
                            .n_headers = 1,
                            .now_ms = s3_now(),
                            .service = "s3" };
    return cn_sigv4_verify(&in, lookup_tagged, (void *)st, s);
}

/* The cache keeps each key prepared for HMAC: a verification answered from a
 * slot (and from a slot refilled after evictions) accepts exactly what a
 * fresh derivation signs, for many keys; a rotated secret (another tag, or
 * with no tag another fingerprint) is never served the old slot's state. */
static void test_key_cache_prepared(void)
{
    uint64_t h0, m0, h1, m1;
    cn_sigv4_key_cache_clear();
    cn_sigv4_key_cache_stats(&h0, &m0);
    for (int round = 0; round < 3; round++) { /* again after evictions */
        for (int i = 0; i < 2 * CN_SIGV4_KEY_CACHE_SLOTS; i++) {
            char key[16], secret[64];
            snprintf(key, sizeof key, "AKID%04d", i);
            snprintf(secret, sizeof secret, "secret/%d/of/key/%s", i * 31, key);
            tagged_store_t st = { key, secret, (uint8_t)(i & 1) }; /* half untagged */
            cn_sigv4_t s;
            cn_err_t e = presigned_verify(&st, key, secret, &s);
            CN_CHECK_EQ(e, 0);
            cn_sigv4_clear(&s);
            e = presigned_verify(&st, key, secret, &s); /* the same tuple: from its slot */
            CN_CHECK_EQ(e, 0);
            cn_sigv4_clear(&s);
            /* Rotated: the store has a new secret (and tag); a URL signed
             * with the old one is refused, one signed with the new holds. */
            char rotated[80];
            snprintf(rotated, sizeof rotated, "%s+", secret);
            tagged_store_t nst = { key, rotated, st.tag ? (uint8_t)(st.tag + 1) : 0 };
            CN_CHECK_EQ(presigned_verify(&nst, key, secret, &s), CN_E_AUTH);
            CN_CHECK_EQ(s.s3err, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
            CN_CHECK_EQ(presigned_verify(&nst, key, rotated, &s), 0);
            cn_sigv4_clear(&s);
        }
    }
    cn_sigv4_key_cache_stats(&h1, &m1);
    CN_CHECK(h1 - h0 >= 3 * 2 * CN_SIGV4_KEY_CACHE_SLOTS); /* every second lookup at least */
    CN_CHECK(m1 - m0 >= 2 * CN_SIGV4_KEY_CACHE_SLOTS);
}

#define THREADS 4
#define ROUNDS 3000

typedef struct {
    int id;
    int wrong;
} worker_t;

/* Mixed traffic: a few hot tuples shared by every thread, a cold one per
 * round that forces evictions, and whole verifications. */
static void *cache_worker(void *arg)
{
    worker_t *w = arg;
    static const char *const secrets[2] = { S3_SECRET, SUITE_SECRET };
    static const char *const regions[2] = { "us-east-1", "eu-west-1" };
    cn_http_kv_t h[] = {
        KV("Host", "examplebucket.s3.amazonaws.com"), KV("Range", "bytes=0-9"),
        KV("x-amz-content-sha256", EMPTY_SHA), KV("x-amz-date", "20130524T000000Z"),
        KV("Authorization", S3_AUTH("host;range;x-amz-content-sha256;x-amz-date", GET_SIG))
    };
    vec_t v = { "GET", "/test.txt", NULL, h, 5, "s3", S3_KEY, S3_SECRET, s3_now(), false, NULL };
    for (int r = 0; r < ROUNDS; r++) {
        char date8[9];
        snprintf(date8, sizeof date8, "2013%02d%02d", 1 + (r / 7) % 12, 1 + r % 28);
        tuple_t t = { secrets[(r + w->id) % 2], (r % 5) ? "20130524" : date8,
                      regions[(r / 2 + w->id) % 2], (r % 3) ? "s3" : "service" };
        uint8_t want[32], got[32];
        derive(&t, want);
        cn_sigv4_signing_key_cached((const uint8_t *)t.secret, strlen(t.secret), t.date8, t.region,
                                    t.service, got);
        if (memcmp(got, want, 32) != 0)
            w->wrong++;
        if (r % 10 == 0) {
            cn_sigv4_t s;
            if (run(&v, &s) != 0)
                w->wrong++;
            cn_sigv4_clear(&s);
        }
    }
    return NULL;
}

static void test_key_cache_threads(void)
{
    pthread_t tid[THREADS];
    worker_t w[THREADS];
    uint64_t h0, m0, h1, m1;
    cn_sigv4_key_cache_clear();
    cn_sigv4_key_cache_stats(&h0, &m0);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){ i, 0 };
        CN_CHECK_EQ(pthread_create(&tid[i], NULL, cache_worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
        CN_CHECK_EQ(w[i].wrong, 0);
    }
    cn_sigv4_key_cache_stats(&h1, &m1);
    /* Every lookup counted once: ROUNDS direct ones and ROUNDS / 10 through
     * verify, per thread. */
    CN_CHECK_EQ((h1 - h0) + (m1 - m0), THREADS * (ROUNDS + ROUNDS / 10));
    CN_CHECK(h1 - h0 > 0);
}

/* ---- the canonical request's bound ---------------------------------------- */

static void test_canonical_bound(void)
{
    static char path[CN_SIGV4_MAX_CANONICAL + 2];
    cn_http_kv_t h[3] = { KV("Host", "x") };
    cn_buf_t b = { 0 };
    /* Just inside: "GET\n" path "\n\nhost:x\n\nhost\n" "UNSIGNED-PAYLOAD" */
    size_t fixed = 4 + 2 + 7 + 1 + 5 + 16, plen = CN_SIGV4_MAX_CANONICAL - fixed;
    path[0] = '/';
    memset(path + 1, 'a', plen - 1);
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", path, plen, NULL, 0, h, 1, "host", 4,
                                           "UNSIGNED-PAYLOAD"),
                0);
    CN_CHECK_EQ(b.len, CN_SIGV4_MAX_CANONICAL);
    cn_buf_reset(&b);
    /* One byte more: refused whole, nothing appended. */
    path[plen] = 'a';
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", path, plen + 1, NULL, 0, h, 1, "host", 4,
                                           "UNSIGNED-PAYLOAD"),
                CN_E_LIMIT);
    CN_CHECK_EQ(b.len, 0);
    /* A raw path of 24,000 bytes that canonicalises to three times that. */
    memset(path + 1, '$', 24000);
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", path, 24001, NULL, 0, h, 1, "host", 4,
                                           "UNSIGNED-PAYLOAD"),
                CN_E_LIMIT);
    CN_CHECK_EQ(b.len, 0);
    /* A malformed request is still malformed past the bound. */
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", path, 24001, NULL, 0, h, 1, "host;absent", 11,
                                           "UNSIGNED-PAYLOAD"),
                CN_E_INVALID);

    /* A short request whose SignedHeaders names a 2 KiB header 40 times. */
    static char value[2048], list[40 * 6], auth[sizeof list + 256];
    memset(value, 'v', sizeof value);
    for (int i = 0; i < 40; i++)
        memcpy(list + 6 * i, "x-big;", 6);
    size_t ll = 6 * 40 - 1; /* without the last ';' */
    snprintf(auth, sizeof auth,
             "AWS4-HMAC-SHA256 Credential=" S3_CRED ",SignedHeaders=host;x-amz-date;%.*s"
             ",Signature=" WRONG_SIG,
             (int)ll, list);
    cn_http_kv_t big[] = { KV("Host", "examplebucket.s3.amazonaws.com"),
                           KV("x-amz-date", "20130524T000000Z"),
                           { "x-big", 5, value, sizeof value },
                           { "Authorization", 13, auth, strlen(auth) } };
    vec_t v = { "GET", "/test.txt", NULL, big, 4, "s3", S3_KEY, S3_SECRET, s3_now(), false, NULL };
    cn_sigv4_t s;
    CN_CHECK_EQ(run(&v, &s), CN_E_AUTH);
    CN_CHECK_EQ(s.s3err, CN_S3E_AUTH_HEADER_MALFORMED);
    CN_CHECK(strncmp(s.detail, "the request is too large to verify", 34) == 0);
    static const uint8_t zero[32];
    CN_CHECK_MEM(s.signing_key, zero, 32);
    cn_buf_free(&b);
}

/* Query items sort by their canonical (encoded) form, not their decoded one,
 * with no allocation whatever their number; one past the limit is refused. */
static void test_canonical_query_order(void)
{
    cn_http_kv_t h[] = { KV("Host", "x") };
    cn_buf_t b = { 0 };
    /* decoded order: a, a!, a~, a\x7f; canonical order: a, a%21, a%7F, a~ */
    const char *q = "a%7F=1&a=2&a~=3&a%21=4&X-Amz-Signature=zz&&b";
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", "/", 1, q, strlen(q), h, 1, "host", 4, "P"),
                0);
    cn_buf_put_u8(&b, 0);
    CN_CHECK_STR((const char *)b.data, "GET\n/\na=2&a%21=4&a%7F=1&a~=3&b=\nhost:x\n\nhost\nP");
    cn_buf_reset(&b);

    static char many[1025 * 12];
    size_t n = 0;
    for (int i = 1023; i >= 0; i--)
        n += (size_t)snprintf(many + n, sizeof many - n, "%sk%04d=%d", n ? "&" : "", i, i % 7);
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", "/", 1, many, n, h, 1, "host", 4, "P"), 0);
    cn_buf_put_u8(&b, 0);
    const char *cq = strchr((const char *)b.data + 4, '\n') + 1;
    CN_CHECK(strncmp(cq, "k0000=0&k0001=1&k0002=2&", 24) == 0);
    CN_CHECK(strstr(cq, "&k1022=0&k1023=1\n") != NULL);
    cn_buf_reset(&b);
    n += (size_t)snprintf(many + n, sizeof many - n, "&k9999=1");
    CN_CHECK_EQ(cn_sigv4_canonical_request(&b, "GET", "/", 1, many, n, h, 1, "host", 4, "P"),
                CN_E_LIMIT);
    cn_buf_free(&b);
}

CN_TEST_MAIN(CN_TEST(test_get_vanilla), CN_TEST(test_get_vanilla_query_order_key_case),
             CN_TEST(test_get_vanilla_query_order_key), CN_TEST(test_get_vanilla_empty_query_key),
             CN_TEST(test_get_header_key_duplicate), CN_TEST(test_get_header_value_order),
             CN_TEST(test_post_vanilla), CN_TEST(test_canonical_trim), CN_TEST(test_s3_get_object),
             CN_TEST(test_s3_put_object), CN_TEST(test_s3_get_lifecycle_and_list),
             CN_TEST(test_s3_presigned), CN_TEST(test_no_credential), CN_TEST(test_refusals),
             CN_TEST(test_deferred_payload), CN_TEST(test_streaming_example),
             CN_TEST(test_streaming_trailer_example), CN_TEST(test_unsigned_trailer),
             CN_TEST(test_checksums), CN_TEST(test_encoding), CN_TEST(test_key_cache_reuse),
             CN_TEST(test_key_cache_tagged), CN_TEST(test_key_cache_full_compare),
             CN_TEST(test_key_cache_secret_lengths), CN_TEST(test_key_cache_bound),
             CN_TEST(test_key_cache_verify), CN_TEST(test_key_cache_prepared),
             CN_TEST(test_key_cache_threads), CN_TEST(test_canonical_bound),
             CN_TEST(test_canonical_query_order))
