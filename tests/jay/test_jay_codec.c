/* Jay codec rejection and limit tests: handshake classification, truncation at
 * every byte of every golden layout, counts past the end, meta_len > 1 MiB,
 * negative data_len, encoder overruns that must fail rather than truncate,
 * and the error-code table.  Usage: test_jay_codec GOLDEN_DIR */
#include "cn_test.h"
#include "golden.h"

#include "cairn/jay.h"

#include <errno.h>

#define S(lit) ((cn_jay_str_t){ (lit), (uint16_t)(sizeof(lit) - 1) })

/* ---- handshake classification ---------------------------------------------- */

static void test_hello_classify(void)
{
    static const uint8_t good[] = { 0x4A, 0x41, 0x59, 0x00, 0x01, 0x00, 0x00, 0x03, 'a', ':', 'b' };
    cn_jay_hello_t h;
    /* Every strict prefix of a good handshake is "need more": at EOF, torn. */
    for (size_t n = 0; n < sizeof good; n++)
        CN_CHECK_EQ(cn_jay_hello_decode(good, n, &h), CN_E_AGAIN);
    CN_CHECK_EQ(cn_jay_hello_decode(good, sizeof good, &h), 0);
    CN_CHECK_EQ(h.verdict, CN_JAY_HS_OK);
    CN_CHECK_EQ(h.consumed, sizeof good);

    /* Bytes after the credential are not the handshake's. */
    uint8_t more[sizeof good + 4];
    memcpy(more, good, sizeof good);
    memset(more + sizeof good, 0xEE, 4);
    CN_CHECK_EQ(cn_jay_hello_decode(more, sizeof more, &h), 0);
    CN_CHECK_EQ(h.consumed, sizeof good);

    /* A wrong magic byte anywhere in the first four is Malformed, decided at once. */
    for (size_t i = 0; i < 4; i++) {
        uint8_t bad[sizeof good];
        memcpy(bad, good, sizeof good);
        bad[i] ^= 0x20;
        CN_CHECK_EQ(cn_jay_hello_decode(bad, i + 1, &h), 0);
        CN_CHECK_EQ(h.verdict, CN_JAY_HS_MALFORMED);
        CN_CHECK_EQ(cn_jay_hello_decode(bad, sizeof bad, &h), 0);
        CN_CHECK_EQ(h.verdict, CN_JAY_HS_MALFORMED);
    }
    CN_CHECK_EQ(cn_jay_hello_decode("GET / HTTP/1.1\r\n", 16, &h), 0);
    CN_CHECK_EQ(h.verdict, CN_JAY_HS_MALFORMED);

    /* Version byte, and nothing else, is VersionMismatch. */
    uint8_t v[sizeof good];
    memcpy(v, good, sizeof good);
    for (int ver = 0; ver < 256; ver++) {
        if (ver == 1)
            continue;
        v[4] = (uint8_t)ver;
        CN_CHECK_EQ(cn_jay_hello_decode(v, 5, &h), 0);
        CN_CHECK_EQ(h.verdict, CN_JAY_HS_VERSION_MISMATCH);
    }

    /* Flags are ignored, whatever they hold. */
    memcpy(v, good, sizeof good);
    v[5] = 0xFF;
    CN_CHECK_EQ(cn_jay_hello_decode(v, sizeof v, &h), 0);
    CN_CHECK_EQ(h.verdict, CN_JAY_HS_OK);
    CN_CHECK_EQ(h.flags, 0xFF);

    /* auth_len 0: no credential to check. */
    static const uint8_t empty[] = { 0x4A, 0x41, 0x59, 0x00, 0x01, 0x00, 0x00, 0x00 };
    CN_CHECK_EQ(cn_jay_hello_decode(empty, sizeof empty, &h), 0);
    CN_CHECK_EQ(h.verdict, CN_JAY_HS_AUTH_FAILED);

    /* Encoder limits. */
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_jay_hello_encode(&b, "", 0), CN_E_INVALID);
    char *big = calloc(1, 65536);
    CN_CHECK_EQ(cn_jay_hello_encode(&b, big, 65536), CN_E_LIMIT);
    CN_CHECK_EQ(b.len, 0);
    CN_CHECK_EQ(cn_jay_hello_encode(&b, big, 65535), 0);
    CN_CHECK_EQ(b.len, 8 + 65535);
    CN_CHECK_EQ(cn_jay_hello_decode(b.data, b.len, &h), 0);
    CN_CHECK_EQ(h.auth.len, 65535);
    free(big);
    cn_buf_free(&b);
}

static void test_auth_split(void)
{
    cn_jay_str_t id, secret;
    CN_CHECK_EQ(cn_jay_auth_split(S("id:se:cret"), &id, &secret), 0);
    CN_CHECK(cn_jay_str_eq(id, "id"));
    CN_CHECK(cn_jay_str_eq(secret, "se:cret"));
    CN_CHECK_EQ(cn_jay_auth_split(S("nocolon"), &id, &secret), CN_E_AUTH);
    CN_CHECK_EQ(cn_jay_auth_split(S(":secret"), &id, &secret), CN_E_AUTH);
    CN_CHECK_EQ(cn_jay_auth_split(S("id:"), &id, &secret), CN_E_AUTH);
    CN_CHECK_EQ(cn_jay_auth_split(S(""), &id, &secret), CN_E_AUTH);
}

static void test_welcome_decode(void)
{
    uint8_t w[8];
    cn_jay_welcome_t out;
    cn_jay_welcome_encode(w, CN_JAY_HS_OK);
    for (size_t n = 0; n < 8; n++)
        CN_CHECK_EQ(cn_jay_welcome_decode(w, n, &out), CN_E_AGAIN);
    w[6] = 0xAB; /* reserved: must be ignored */
    w[7] = 0xCD;
    CN_CHECK_EQ(cn_jay_welcome_decode(w, 8, &out), 0);
    CN_CHECK_EQ(out.status, CN_JAY_HS_OK);
    w[0] = 'H';
    CN_CHECK_EQ(cn_jay_welcome_decode(w, 8, &out), CN_E_PROTOCOL);
    cn_jay_welcome_encode(w, CN_JAY_HS_OK);
    w[4] = 2;
    CN_CHECK_EQ(cn_jay_welcome_decode(w, 8, &out), CN_E_PROTOCOL);
    cn_jay_welcome_encode(w, CN_JAY_HS_VERSION_MISMATCH);
    w[4] = 2; /* a newer server saying so in its own version */
    CN_CHECK_EQ(cn_jay_welcome_decode(w, 8, &out), 0);
    CN_CHECK_EQ(out.status, CN_JAY_HS_VERSION_MISMATCH);
}

/* ---- frame header ------------------------------------------------------------ */

static void test_header_limits(void)
{
    uint8_t b[CN_JAY_HDR_LEN];
    cn_jay_hdr_t h = { .code = 1, .meta_len = CN_JAY_MAX_META, .data_len = INT64_MAX };
    CN_CHECK_EQ(cn_jay_hdr_encode(b, &h), 0);
    cn_jay_hdr_t d;
    for (size_t n = 0; n < CN_JAY_HDR_LEN; n++)
        CN_CHECK_EQ(cn_jay_hdr_decode(b, n, &d), CN_E_AGAIN);
    CN_CHECK_EQ(cn_jay_hdr_decode(b, sizeof b, &d), 0);
    CN_CHECK_EQ(d.meta_len, CN_JAY_MAX_META);
    CN_CHECK_EQ(d.data_len, INT64_MAX);

    h.meta_len = CN_JAY_MAX_META + 1;
    CN_CHECK_EQ(cn_jay_hdr_encode(b, &h), CN_E_LIMIT);
    cn_store_u32be(b + 5, CN_JAY_MAX_META + 1);
    CN_CHECK_EQ(cn_jay_hdr_decode(b, sizeof b, &d), CN_E_LIMIT);
    CN_CHECK_EQ(d.meta_len, CN_JAY_MAX_META + 1);
    cn_store_u32be(b + 5, 0xFFFFFFFFu);
    CN_CHECK_EQ(cn_jay_hdr_decode(b, sizeof b, &d), CN_E_LIMIT);

    h.meta_len = 0;
    h.data_len = -1;
    CN_CHECK_EQ(cn_jay_hdr_encode(b, &h), CN_E_INVALID);
    cn_store_u32be(b + 5, 0);
    cn_store_u64be(b + 9, UINT64_C(0x8000000000000000));
    CN_CHECK_EQ(cn_jay_hdr_decode(b, sizeof b, &d), CN_E_PROTOCOL);
    cn_store_u64be(b + 9, UINT64_MAX);
    CN_CHECK_EQ(cn_jay_hdr_decode(b, sizeof b, &d), CN_E_PROTOCOL);
    CN_CHECK_EQ(d.data_len, -1);
}

/* ---- truncation and overrun of every layout ---------------------------------- */

static const char *const req_fixtures[] = {
    "req_create_bucket",
    "req_delete_bucket",
    "req_head_bucket",
    "req_list_buckets",
    "req_ping",
    "req_get_object",
    "req_head_object",
    "req_delete_object",
    "req_put_object",
    "req_put_object_skip_etag",
    "req_put_object_legacy",
    "req_list_objects",
    "req_get_object_range",
    "req_copy_object",
    "req_create_multipart",
    "req_upload_part",
    "req_complete_multipart",
    "req_abort_multipart",
    "req_list_parts",
};

static const struct {
    const char *name;
    uint8_t op;
} resp_fixtures[] = {
    { "resp_put_object", CN_JAY_OP_PUT_OBJECT },
    { "resp_upload_part", CN_JAY_OP_UPLOAD_PART },
    { "resp_get_object", CN_JAY_OP_GET_OBJECT },
    { "resp_head_object", CN_JAY_OP_HEAD_OBJECT },
    { "resp_get_object_range", CN_JAY_OP_GET_OBJECT_RANGE },
    { "resp_copy_object", CN_JAY_OP_COPY_OBJECT },
    { "resp_list_objects", CN_JAY_OP_LIST_OBJECTS },
    { "resp_list_buckets", CN_JAY_OP_LIST_BUCKETS },
    { "resp_head_bucket", CN_JAY_OP_HEAD_BUCKET },
    { "resp_complete_multipart", CN_JAY_OP_COMPLETE_MULTIPART },
    { "resp_list_parts", CN_JAY_OP_LIST_PARTS },
    { "resp_create_multipart", CN_JAY_OP_CREATE_MULTIPART },
    { "resp_error_not_found", CN_JAY_OP_GET_OBJECT },
    { "resp_error_unknown_op", CN_JAY_OP_PING },
};

static void test_req_truncated(void)
{
    for (size_t f = 0; f < sizeof req_fixtures / sizeof req_fixtures[0]; f++) {
        cn_buf_t fx = { 0 };
        CN_CHECK(golden_load(req_fixtures[f], &fx) == 0);
        uint8_t op = fx.data[0];
        const uint8_t *meta = fx.data + CN_JAY_HDR_LEN;
        size_t len = fx.len - CN_JAY_HDR_LEN;
        cn_jay_req_t q;
        bool has_skip =
            op == CN_JAY_OP_PUT_OBJECT && strcmp(req_fixtures[f], "req_put_object_legacy");
        for (size_t cut = 0; cut < len; cut++) {
            /* Each cut is copied to a fresh allocation so ASan sees any overread. */
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, meta, cut);
            cn_err_t e = cn_jay_req_decode(op, copy, cut, &q);
            if (has_skip && cut == len - 1)
                CN_CHECK_EQ(e, 0); /* skip_etag is optional: legacy layout */
            else if (e != CN_E_PROTOCOL) {
                fprintf(stderr, "# %s cut at %zu: %s\n", req_fixtures[f], cut, cn_errname(e));
                CN_CHECK(0);
            }
            free(copy);
        }
        /* One byte too many is not silently ignored. */
        cn_buf_put_u8(&fx, 0);
        meta = fx.data + CN_JAY_HDR_LEN;
        cn_err_t e = cn_jay_req_decode(op, meta, len + 1, &q);
        if (has_skip || op != CN_JAY_OP_PUT_OBJECT)
            CN_CHECK_EQ(e, CN_E_PROTOCOL);
        else
            CN_CHECK_EQ(e, 0); /* legacy + one byte = skip_etag false */
        cn_buf_free(&fx);
    }
}

static void test_resp_truncated(void)
{
    for (size_t f = 0; f < sizeof resp_fixtures / sizeof resp_fixtures[0]; f++) {
        cn_buf_t fx = { 0 };
        CN_CHECK(golden_load(resp_fixtures[f].name, &fx) == 0);
        uint8_t status = fx.data[0];
        const uint8_t *meta = fx.data + CN_JAY_HDR_LEN;
        size_t len = fx.len - CN_JAY_HDR_LEN;
        cn_jay_resp_t r;
        for (size_t cut = 0; cut < len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, meta, cut);
            cn_err_t e = cn_jay_resp_decode(resp_fixtures[f].op, status, copy, cut, &r);
            if (e != CN_E_PROTOCOL) {
                fprintf(stderr, "# %s cut at %zu: %s\n", resp_fixtures[f].name, cut, cn_errname(e));
                CN_CHECK(0);
            }
            free(copy);
        }
        cn_buf_put_u8(&fx, 0);
        CN_CHECK_EQ(
            cn_jay_resp_decode(resp_fixtures[f].op, status, fx.data + CN_JAY_HDR_LEN, len + 1, &r),
            CN_E_PROTOCOL);
        cn_buf_free(&fx);
    }
}

static void test_counts_past_end(void)
{
    cn_jay_req_t q;
    cn_jay_resp_t r;
    /* PutObject with a map claiming 65535 pairs and holding one. */
    static const uint8_t put[] = { 0, 1, 'b', 0, 1, 'k', 0, 0, 0xFF, 0xFF, 0, 1, 'x', 0, 1, 'y' };
    CN_CHECK_EQ(cn_jay_req_decode(CN_JAY_OP_PUT_OBJECT, put, sizeof put, &q), CN_E_PROTOCOL);
    /* Complete with 3 part numbers promised and 2 present. */
    static const uint8_t cm[] = { 0, 1, 'b', 0, 1, 'k', 0, 1, 'u', 0, 3, 0, 0, 0, 1, 0, 0, 0, 2 };
    CN_CHECK_EQ(cn_jay_req_decode(CN_JAY_OP_COMPLETE_MULTIPART, cm, sizeof cm, &q), CN_E_PROTOCOL);
    /* A string length past the end. */
    static const uint8_t s[] = { 0xFF, 0xFF, 'b' };
    CN_CHECK_EQ(cn_jay_req_decode(CN_JAY_OP_CREATE_BUCKET, s, sizeof s, &q), CN_E_PROTOCOL);
    /* List responses whose count cannot fit in what is left. */
    static const uint8_t lo[] = {
        0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    };
    CN_CHECK_EQ(cn_jay_resp_decode(CN_JAY_OP_LIST_OBJECTS, 0, lo, sizeof lo, &r), CN_E_PROTOCOL);
    static const uint8_t lb[] = { 0xFF, 0xFF, 0, 0, 0, 0 };
    CN_CHECK_EQ(cn_jay_resp_decode(CN_JAY_OP_LIST_BUCKETS, 0, lb, sizeof lb, &r), CN_E_PROTOCOL);
    static const uint8_t lp[] = { 0x00, 0x01, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 };
    CN_CHECK_EQ(cn_jay_resp_decode(CN_JAY_OP_LIST_PARTS, 0, lp, sizeof lp, &r), CN_E_PROTOCOL);
    /* A well-formed count at its limit decodes. */
    size_t n = 2 + 65535 * 4;
    uint8_t *big = calloc(1, n + 12);
    memcpy(big, (uint8_t[]){ 0, 1, 'b', 0, 1, 'k', 0, 1, 'u', 0xFF, 0xFF }, 11);
    CN_CHECK_EQ(cn_jay_req_decode(CN_JAY_OP_COMPLETE_MULTIPART, big, 9 + n, &q), 0);
    CN_CHECK_EQ(q.part_numbers.count, 65535);
    free(big);
    /* Unknown opcodes are UnknownOp, not InvalidArgument. */
    CN_CHECK_EQ(cn_jay_req_decode(0x30, NULL, 0, &q), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(cn_jay_req_decode(0x00, NULL, 0, &q), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(cn_jay_resp_decode(0x30, 0, NULL, 0, &r), CN_E_UNSUPPORTED);
}

/* ---- encoders fail rather than truncate ------------------------------------- */

static void test_encoder_limits(void)
{
    cn_buf_t b = { 0 };
    cn_jay_w_t w;
    char *big = malloc(70000);
    memset(big, 'a', 70000);

    cn_jay_w_begin(&w, &b, 0x01, 0);
    cn_jay_w_str(&w, big, 65535);
    CN_CHECK_EQ(cn_jay_w_end(&w, 0), 0);
    CN_CHECK_EQ(b.len, CN_JAY_HDR_LEN + 2 + 65535);
    cn_buf_reset(&b);

    cn_buf_put_u8(&b, 0x77); /* bytes before the frame are untouched on failure */
    cn_jay_w_begin(&w, &b, 0x01, 0);
    cn_jay_w_str(&w, big, 65536);
    CN_CHECK_EQ(cn_jay_w_end(&w, 0), CN_E_LIMIT);
    CN_CHECK_EQ(b.len, 1);

    cn_jay_str_t s;
    big[69999] = 0;
    CN_CHECK_EQ(cn_jay_str_make(big, &s), CN_E_LIMIT);
    CN_CHECK_EQ(cn_jay_str_make_n(big, 65535, &s), 0);
    CN_CHECK_EQ(s.len, 65535);

    cn_jay_w_begin(&w, &b, 0x01, 0);
    cn_jay_w_count(&w, 65536);
    CN_CHECK_EQ(cn_jay_w_end(&w, 0), CN_E_LIMIT);

    int32_t *parts = calloc(65536, sizeof *parts);
    cn_jay_req_t cm = { .op = CN_JAY_OP_COMPLETE_MULTIPART, .parts = parts, .n_parts = 65536 };
    CN_CHECK_EQ(cn_jay_req_encode(&b, &cm, 0), CN_E_LIMIT);
    CN_CHECK_EQ(b.len, 1);
    cm.n_parts = 65535;
    CN_CHECK_EQ(cn_jay_req_encode(&b, &cm, 0), 0);
    free(parts);
    cn_buf_reset(&b);

    /* Metadata past 1 MiB: twenty 60000-byte strings. */
    cn_jay_str_t *many = calloc(20, sizeof *many);
    for (int i = 0; i < 20; i++)
        cn_jay_str_make_n(big, 60000, &many[i]);
    cn_jay_resp_t lo = { .prefixes = many, .n_prefixes = 20, .objs = NULL };
    static const cn_jay_obj_entry_t none[1];
    lo.objs = none;
    lo.n_entries = 0;
    CN_CHECK_EQ(cn_jay_resp_encode(&b, CN_JAY_OP_LIST_OBJECTS, 0, 0, &lo, 0), CN_E_LIMIT);
    CN_CHECK_EQ(b.len, 0);
    lo.n_prefixes = 17; /* 17 * 60002 < 1 MiB */
    CN_CHECK_EQ(cn_jay_resp_encode(&b, CN_JAY_OP_LIST_OBJECTS, 0, 0, &lo, 0), 0);
    free(many);

    cn_jay_req_t ping = { .op = CN_JAY_OP_PING };
    CN_CHECK_EQ(cn_jay_req_encode(&b, &ping, -1), CN_E_INVALID);
    cn_jay_req_t unk = { .op = 0x31 };
    CN_CHECK_EQ(cn_jay_req_encode(&b, &unk, 0), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(cn_jay_error_encode(&b, CN_JAY_ST_OK, 0, "x", "y"), CN_E_INVALID);
    free(big);
    cn_buf_free(&b);
}

/* ---- the error-code table ----------------------------------------------------- */

static void test_codes(void)
{
    static const struct {
        const char *s;
        uint8_t status;
    } table[] = {
        { "AccessDenied", 0x04 },      { "BucketAlreadyExists", 0x02 },
        { "BucketNotEmpty", 0x02 },    { "EntityTooLarge", 0x03 },
        { "InternalError", 0x05 },     { "InvalidArgument", 0x03 },
        { "InvalidBucketName", 0x03 }, { "InvalidRange", 0x03 },
        { "NoSuchBucket", 0x01 },      { "NoSuchKey", 0x01 },
        { "NoSuchUpload", 0x01 },      { "RateLimitExceeded", 0x03 },
        { "UnknownOp", 0x03 },
    };
    CN_CHECK_EQ(CN_JAY_CODE_END - 1, sizeof table / sizeof table[0]);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        cn_jay_code_t c = cn_jay_code_parse(table[i].s, strlen(table[i].s));
        CN_CHECK(c != CN_JAY_CODE_NONE);
        CN_CHECK_STR(cn_jay_code_str(c), table[i].s);
        CN_CHECK_EQ(cn_jay_code_status(c), table[i].status);
    }
    CN_CHECK_EQ(cn_jay_code_parse("nosuchkey", 9), CN_JAY_CODE_NONE);
    CN_CHECK_EQ(cn_jay_code_parse("NoSuchKeyX", 10), CN_JAY_CODE_NONE);
    CN_CHECK_STR(cn_jay_code_str(CN_JAY_CODE_END), "");
    CN_CHECK_EQ(CN_JAY_ST_OK, 0);
    CN_CHECK_EQ(CN_JAY_ST_INTERNAL, 5);

    static const uint8_t ops[] = { 0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x13, 0x14,
                                   0x15, 0x16, 0x20, 0x21, 0x22, 0x23, 0x24, 0xFF };
    size_t known = 0;
    for (int op = 0; op < 256; op++)
        if (cn_jay_op_name((uint8_t)op))
            known++;
    CN_CHECK_EQ(known, sizeof ops);
    for (size_t i = 0; i < sizeof ops; i++)
        CN_CHECK(cn_jay_op_name(ops[i]) != NULL);
}

static void test_iter_unvalidated(void)
{
    /* An iterator over a hand-made list that runs short stops, never overreads. */
    static const uint8_t bytes[] = { 0, 3, 'a', 'b', 'c', 0, 9 };
    cn_jay_list_t l = { bytes, sizeof bytes, 5 };
    cn_jay_iter_t it = cn_jay_iter(&l);
    cn_jay_str_t s;
    CN_CHECK(cn_jay_next_str(&it, &s));
    CN_CHECK(cn_jay_str_eq(s, "abc"));
    CN_CHECK(!cn_jay_next_str(&it, &s));
    CN_CHECK(!cn_jay_next_str(&it, &s));
}

int main(int argc, char **argv)
{
    if (argc > 1)
        golden_dir = argv[1];
    static const cn_test_case_t cases[] = {
        CN_TEST(test_hello_classify),   CN_TEST(test_auth_split),     CN_TEST(test_welcome_decode),
        CN_TEST(test_header_limits),    CN_TEST(test_req_truncated),  CN_TEST(test_resp_truncated),
        CN_TEST(test_counts_past_end),  CN_TEST(test_encoder_limits), CN_TEST(test_codes),
        CN_TEST(test_iter_unvalidated),
    };
    return cn_test_run(cases, sizeof cases / sizeof cases[0]);
}
