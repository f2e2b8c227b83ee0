/* The gateway wire (docs/protocol/scribe-gateway.md, "Wire"): discover's
 * two forms, instance_status (26), authorize_upload (27) and
 * authorize_repo_create (28) encoded in both codecs against the
 * hand-written fixtures of gw_fixtures.txt and decoded back field by field;
 * every truncation and a trailing byte refused; bad tags, counts over their
 * limits, unsorted inventory rows and stray cursors refused; the exact
 * request bounds; the name resolver and the command line's REPO.
 * Usage: test_scribe_codec_gw FIXTURE_FILE */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

#define LE CN_SCRIBE_CODEC_LE
#define CODEC(c) ((cn_scribe_codec_t)(c))
#define CREATED 1700000000000ull

/* fx_str_is, for a view that may be empty (and then NULL). */
static bool str_is(cn_scribe_str_t a, const char *want)
{
    return a.len == strlen(want) && (a.len == 0 || memcmp(a.p, want, a.len) == 0);
}

static cn_err_t d_discover(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_discover_t d;
    return cn_scribe_dec_discover(p, n, c, &d);
}
static cn_err_t d_inst_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_instance_req_t q;
    return cn_scribe_dec_instance_req(p, n, c, &q);
}
static cn_err_t d_inst_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_instance_resp_t r;
    return cn_scribe_dec_instance_resp(p, n, c, &r);
}
static cn_err_t d_upload(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_id_t id;
    return cn_scribe_dec_repo_id_req(p, n, c, &id);
}
static cn_err_t d_create(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_authorize_create_req_t q;
    return cn_scribe_dec_authorize_create_req(p, n, c, &q);
}

/* ---- discover ---------------------------------------------------------------------------- */
static void test_discover(void)
{
    cn_scribe_str_t labels[2] = { cn_scribe_cstr("studio"), cn_scribe_cstr("publishing") };
    cn_scribe_str_t empty = { NULL, 0 };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_discover(&b, CODEC(c), CN_SCRIBE_ROLE_GATEWAY, true, labels, 2),
                    CN_OK);
        fx_gold("discover_gateway", c, &b, d_discover);
        cn_scribe_discover_t d;
        CN_CHECK_EQ(cn_scribe_dec_discover(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.role == CN_SCRIBE_ROLE_GATEWAY && d.authentication && d.count == 2);
        CN_CHECK(str_is(cn_scribe_discover_label(&d, CODEC(c), 0), "studio"));
        CN_CHECK(str_is(cn_scribe_discover_label(&d, CODEC(c), 1), "publishing"));

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_discover(&b, CODEC(c), CN_SCRIBE_ROLE_STORAGE, false, &empty, 1),
                    CN_OK);
        fx_gold("discover_storage", c, &b, d_discover);
        CN_CHECK_EQ(cn_scribe_dec_discover(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.role == CN_SCRIBE_ROLE_STORAGE && !d.authentication && d.count == 1);
        cn_buf_free(&b);
    }
    /* A gateway of 64 servers is the most; 65 and 0 are refused both ways. */
    cn_scribe_str_t many[65];
    for (int i = 0; i < 65; i++)
        many[i] = cn_scribe_cstr("ns");
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_discover(&b, LE, CN_SCRIBE_ROLE_GATEWAY, true, many, 64), CN_OK);
    CN_CHECK_EQ(d_discover(b.data, b.len, LE), CN_OK);
    b.data[2] = 65; /* the count, little-endian */
    CN_CHECK_EQ(d_discover(b.data, b.len, LE), CN_E_PROTOCOL);
    cn_buf_reset(&b);
    CN_CHECK(cn_scribe_enc_discover(&b, LE, CN_SCRIBE_ROLE_GATEWAY, true, many, 65) < 0);
    CN_CHECK(cn_scribe_enc_discover(&b, LE, CN_SCRIBE_ROLE_GATEWAY, true, many, 0) < 0);
    CN_CHECK(cn_scribe_enc_discover(&b, LE, CN_SCRIBE_ROLE_STORAGE, true, many, 2) < 0);
    CN_CHECK(cn_scribe_enc_discover(&b, LE, 3, true, many, 1) < 0);
    CN_CHECK_EQ(b.len, 0);
    cn_buf_free(&b);
    static const char *const bad[] = {
        "03 01 01000000 0600 \"studio\"",                 /* role tag 3 */
        "00 01 01000000 0600 \"studio\"",                 /* role tag 0 */
        "02 02 01000000 0600 \"studio\"",                 /* bool tag 2 */
        "02 01 00000000",                                 /* no server */
        "02 01 41000000",                                 /* 65 servers */
        "01 01 02000000 0600 \"studio\" 0600 \"studio\"", /* storage with two */
        "02 01 01000000 0600 \"stu/io\"",                 /* a bad label */
        "02 00 01000000 0600 \"studio\"",                 /* a label on plaintext */
        "02 01 01000000 0000",                            /* an empty label with auth */
        "02 01 02000000 0600 \"studio\"",                 /* one label short */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FX(p, bad[i]);
        cn_err_t e = d_discover(p, p_len, LE);
        if (e != CN_E_PROTOCOL)
            fprintf(stderr, "# discover accepted: %s\n", bad[i]);
        CN_CHECK_EQ(e, CN_E_PROTOCOL);
    }
}

/* ---- instance_status (26) -------------------------------------------------------------- */
static cn_scribe_instance_row_t row(uint8_t id, const char *name, uint8_t main, uint64_t head,
                                    uint8_t inc, uint8_t compression, uint64_t bytes)
{
    cn_scribe_instance_row_t r = { .bytes = bytes };
    r.info.id = fx_sid(id);
    r.info.name = cn_scribe_cstr(name);
    r.info.main_branch = fx_sid(main);
    r.info.head = head;
    r.info.incarnation = fx_sid(inc);
    r.info.created_ms = CREATED;
    r.info.compression = compression;
    return r;
}

static void test_instance_req(void)
{
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_instance_req_t q = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_instance_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("instance_req_first", c, &b, d_inst_req);
        cn_buf_reset(&b);
        q.has_after = true;
        q.after = fx_sid(0x00);
        CN_CHECK_EQ(cn_scribe_enc_instance_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("instance_req_after", c, &b, d_inst_req);
        cn_scribe_instance_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_instance_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.has_after && !memcmp(d.after.b, q.after.b, 16));
        cn_buf_free(&b);
    }
    FX(tag2, "02 000102030405060708090a0b0c0d0e0f");
    CN_CHECK_EQ(d_inst_req(tag2, tag2_len, LE), CN_E_PROTOCOL);
    FX(short_id, "01 0001020304050607");
    CN_CHECK_EQ(d_inst_req(short_id, short_id_len, LE), CN_E_PROTOCOL);
}

static void test_instance_resp(void)
{
    cn_scribe_instance_row_t rows[2] = { row(0x00, "art", 0x10, 3, 0x20, 0, 4096),
                                         row(0x60, "code", 0x70, 0, 0x80, 1, 0) };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_instance_resp_t h = { .incarnation = fx_sid(0x50),
                                        .total_repositories = 2,
                                        .used_bytes = 8192,
                                        .has_available = true,
                                        .available_bytes = 1u << 30,
                                        .count = 2,
                                        .has_next = true,
                                        .next = fx_sid(0x60) };
        CN_CHECK_EQ(cn_scribe_enc_instance_resp(&b, CODEC(c), &h, rows), CN_OK);
        fx_gold("instance_resp_first", c, &b, d_inst_resp);
        cn_scribe_instance_resp_t d;
        CN_CHECK_EQ(cn_scribe_dec_instance_resp(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.total_repositories == 2 && d.used_bytes == 8192 && d.has_available &&
                 d.available_bytes == (1u << 30) && d.count == 2 && d.has_next &&
                 !memcmp(d.next.b, rows[1].info.id.b, 16) &&
                 !memcmp(d.incarnation.b, h.incarnation.b, 16));
        cn_scribe_instance_row_t r;
        CN_CHECK(cn_scribe_next_instance_row(&d.rows, &r) && str_is(r.info.name, "art") &&
                 r.bytes == 4096 && r.info.head == 3 && r.info.created_ms == CREATED);
        CN_CHECK(cn_scribe_next_instance_row(&d.rows, &r) && str_is(r.info.name, "code") &&
                 r.bytes == 0 && r.info.compression == 1);
        CN_CHECK(!cn_scribe_next_instance_row(&d.rows, &r));

        cn_buf_reset(&b);
        cn_scribe_instance_resp_t last = { .incarnation = fx_sid(0x50), .total_repositories = 2 };
        CN_CHECK_EQ(cn_scribe_enc_instance_resp(&b, CODEC(c), &last, NULL), CN_OK);
        fx_gold("instance_resp_last", c, &b, d_inst_resp);
        CN_CHECK_EQ(cn_scribe_dec_instance_resp(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(!d.has_available && !d.has_next && d.count == 0);

        /* The encoder refuses what the decoder would. */
        cn_buf_reset(&b);
        cn_scribe_instance_row_t swapped[2] = { rows[1], rows[0] };
        CN_CHECK(cn_scribe_enc_instance_resp(&b, CODEC(c), &h, swapped) < 0);
        h.next = fx_sid(0x00); /* a cursor before the last row */
        CN_CHECK(cn_scribe_enc_instance_resp(&b, CODEC(c), &h, rows) < 0);
        last.has_next = true; /* a cursor without a row */
        CN_CHECK(cn_scribe_enc_instance_resp(&b, CODEC(c), &last, NULL) < 0);
        last.has_next = false;
        last.count = CN_SCRIBE_MAX_INSTANCE_PAGE + 1;
        CN_CHECK(cn_scribe_enc_instance_resp(&b, CODEC(c), &last, NULL) < 0);
        CN_CHECK_EQ(b.len, 0);
        cn_buf_free(&b);
    }
}

/* Decoder refusals written as bytes: the header of a first page, then rows. */
#define INST_HEAD "505152535455565758595a5b5c5d5e5f 0200000000000000 0000000000000000 00 "
#define ROW(id)                                                         \
    id " 0100 \"a\" 101112131415161718191a1b1c1d1e1f 0000000000000000 " \
       "202122232425262728292a2b2c2d2e2f 0068e5cf8b010000 00 0000000000000000 "
#define ID0 "000102030405060708090a0b0c0d0e0f"
#define ID6 "606162636465666768696a6b6c6d6e6f"

static void test_instance_refusals(void)
{
    static const char *const bad[] = {
        INST_HEAD "81000000",                         /* 129 rows */
        INST_HEAD "ffffffff",                         /* a count past the bytes */
        INST_HEAD "02000000 " ROW(ID6) ROW(ID0) "00", /* rows out of order */
        INST_HEAD "02000000 " ROW(ID0) ROW(ID0) "00", /* a row repeated */
        INST_HEAD "00000000 01 " ID0,                 /* a cursor without a row */
        INST_HEAD "01000000 " ROW(ID6) "01 " ID0,     /* a cursor before the row */
        INST_HEAD "01000000 " ROW(ID0) "02 " ID0,     /* has_next tag 2 */
        "505152535455565758595a5b5c5d5e5f 0200000000000000 0000000000000000 02 00000000 00",
        "505152535455565758595a5b5c5d5e5f 0200000000000000 0000000000000000 01 00000000 00",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FX(p, bad[i]);
        cn_err_t e = d_inst_resp(p, p_len, LE);
        if (e != CN_E_PROTOCOL)
            fprintf(stderr, "# instance_status accepted case %zu\n", i);
        CN_CHECK_EQ(e, CN_E_PROTOCOL);
    }
    FX(ok, INST_HEAD "02000000 " ROW(ID0) ROW(ID6) "01 " ID6);
    CN_CHECK_EQ(d_inst_resp(ok, ok_len, LE), CN_OK);
    /* A full page of 128 rows is accepted; the count says 129 is not. */
    cn_scribe_instance_row_t *rows = calloc(CN_SCRIBE_MAX_INSTANCE_PAGE, sizeof *rows);
    for (unsigned i = 0; i < CN_SCRIBE_MAX_INSTANCE_PAGE; i++) {
        rows[i] = row(0, "r", 0x10, 0, 0x20, 0, i);
        rows[i].info.id.b[0] = (uint8_t)i;
    }
    cn_scribe_instance_resp_t h = { .count = CN_SCRIBE_MAX_INSTANCE_PAGE, .has_next = true };
    h.next = rows[CN_SCRIBE_MAX_INSTANCE_PAGE - 1].info.id;
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_instance_resp(&b, LE, &h, rows), CN_OK);
    CN_CHECK_EQ(d_inst_resp(b.data, b.len, LE), CN_OK);
    cn_buf_free(&b);
    free(rows);
}

/* ---- authorize_upload (27), authorize_repo_create (28) ----------------------------------- */
static void test_authorize(void)
{
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_id_t repo = fx_sid(0x00);
        CN_CHECK_EQ(cn_scribe_enc_repo_id_req(&b, CODEC(c), &repo), CN_OK);
        fx_gold("authorize_upload_req", c, &b, d_upload);

        cn_buf_reset(&b);
        cn_scribe_authorize_create_req_t q = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_authorize_create_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("authorize_create_req_default", c, &b, d_create);
        cn_scribe_authorize_create_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_authorize_create_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(!d.has_namespace && d.ns.len == 0);

        cn_buf_reset(&b);
        q.has_namespace = true;
        q.ns = cn_scribe_cstr("studio");
        CN_CHECK_EQ(cn_scribe_enc_authorize_create_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("authorize_create_req_ns", c, &b, d_create);
        CN_CHECK_EQ(cn_scribe_dec_authorize_create_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.has_namespace && str_is(d.ns, "studio"));

        cn_buf_reset(&b);
        fx_gold("authorize_resp", c, &b, cn_scribe_dec_empty_resp);
        q.ns = cn_scribe_cstr("a/b");
        CN_CHECK(cn_scribe_enc_authorize_create_req(&b, CODEC(c), &q) < 0);
        q.ns = cn_scribe_cstr("");
        CN_CHECK(cn_scribe_enc_authorize_create_req(&b, CODEC(c), &q) < 0);
        CN_CHECK_EQ(b.len, 0);
        cn_buf_free(&b);
    }
    static const char *const bad[] = {
        "02 0600 \"studio\"", /* has_namespace tag 2 */
        "01 0000",            /* an empty label */
        "01 0600 \"stu io\"", /* a space */
        "01 0300 \"a/b\"",    /* a slash */
        "01 0600 \"studi\"",  /* the length past the bytes */
        "00 00",              /* a trailing byte after none */
        "01 4100 \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", /* 65 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FX(p, bad[i]);
        cn_err_t e = d_create(p, p_len, LE);
        if (e != CN_E_PROTOCOL)
            fprintf(stderr, "# authorize_repo_create accepted: %s\n", bad[i]);
        CN_CHECK_EQ(e, CN_E_PROTOCOL);
    }
    FX(max, "01 4000 \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"");
    CN_CHECK_EQ(d_create(max, max_len, LE), CN_OK);
    FX(one, "00");
    CN_CHECK_EQ(cn_scribe_dec_empty_resp(one, one_len, LE), CN_E_PROTOCOL);
    uint32_t bound = 0;
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_AUTHORIZE_UPLOAD, false, &bound) && bound == 16);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE, true, &bound) &&
             bound == max_len);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_INSTANCE_STATUS, false, &bound) && bound == 17);
    CN_CHECK(cn_scribe_op_is_core(26) && cn_scribe_op_is_core(27) && cn_scribe_op_is_core(28));
}

/* ---- names ------------------------------------------------------------------------------- */
static void test_names(void)
{
    cn_scribe_name_t n;
    CN_CHECK_EQ(cn_scribe_name_split(cn_scribe_cstr("art"), &n), CN_OK);
    CN_CHECK(n.ns.len == 0 && str_is(n.name, "art"));
    CN_CHECK_EQ(cn_scribe_name_split(cn_scribe_cstr("studio/art"), &n), CN_OK);
    CN_CHECK(str_is(n.ns, "studio") && str_is(n.name, "art"));
    CN_CHECK_EQ(cn_scribe_name_split(cn_scribe_cstr("A-b_c.9/x y"), &n), CN_OK);
    CN_CHECK(str_is(n.ns, "A-b_c.9") && str_is(n.name, "x y"));
    /* The longest: a 64-byte label, '/', a 128-byte name = 193 bytes. */
    char longest[194];
    memset(longest, 'n', 64);
    longest[64] = '/';
    memset(longest + 65, 'r', 128);
    longest[193] = 0;
    CN_CHECK_EQ(cn_scribe_name_split(cn_scribe_cstr(longest), &n), CN_OK);
    CN_CHECK(n.ns.len == 64 && n.name.len == 128);
    longest[64] = 'n'; /* 193 bytes without '/': no storage name is that long */
    CN_CHECK_EQ(cn_scribe_name_split(cn_scribe_cstr(longest), &n), CN_E_INVALID);
    static const char *const bad[] = {
        "",          "/art", "studio/", "a/b/c",    "stu dio/art",  "..",
        "studio/..", ".",    "art\x01", "ns:1/art", "studio/a\x7f", "\xff",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cn_err_t e = cn_scribe_name_split(cn_scribe_cstr(bad[i]), &n);
        if (e != CN_E_INVALID)
            fprintf(stderr, "# name accepted: %s\n", bad[i]);
        CN_CHECK_EQ(e, CN_E_INVALID);
    }
    char label[66];
    memset(label, 'x', 65);
    label[65] = 0;
    CN_CHECK(!cn_scribe_namespace_ok(cn_scribe_cstr(label)));
    label[64] = 0;
    CN_CHECK(cn_scribe_namespace_ok(cn_scribe_cstr(label)));
    CN_CHECK(cn_scribe_storage_name_ok(cn_scribe_cstr("caf\xc3\xa9")));
}

static void test_repo_ref(void)
{
    static const struct {
        const char *arg;
        bool endpoint, tls;
        const char *ep, *ns, *name;
    } ok[] = {
        { "art", false, false, "", "", "art" },
        { "studio/art", false, false, "", "studio", "art" },
        { "127.0.0.1:7447/art", true, false, "127.0.0.1:7447", "", "art" },
        { "h:1/studio/art", true, false, "h:1", "studio", "art" },
        { "scribe://host/art", true, false, "host", "", "art" },
        { "scribe://host:7447/studio/art", true, false, "host:7447", "studio", "art" },
        { "scribes://host:7448/art", true, true, "host:7448", "", "art" },
        { "[::1]:7447/ns/art", true, false, "[::1]:7447", "ns", "art" },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cn_scribe_repo_ref_t r;
        cn_err_t e = cn_scribe_repo_ref_parse(cn_scribe_cstr(ok[i].arg), &r);
        bool good = e == CN_OK && r.has_endpoint == ok[i].endpoint && r.tls == ok[i].tls &&
                    str_is(r.endpoint, ok[i].ep) && str_is(r.name.ns, ok[i].ns) &&
                    str_is(r.name.name, ok[i].name);
        if (!good)
            fprintf(stderr, "# REPO %s misread\n", ok[i].arg);
        CN_CHECK(good);
    }
    static const char *const bad[] = {
        "http://h:1/art", "scribe://", "scribe://host", "scribe:///art", "h:1", "h:1/", "h:1/a/b/c",
        "a/b/c",          "",          "ns:x/",         "u@h:1/art",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cn_scribe_repo_ref_t r;
        cn_err_t e = cn_scribe_repo_ref_parse(cn_scribe_cstr(bad[i]), &r);
        if (e != CN_E_INVALID)
            fprintf(stderr, "# REPO accepted: %s\n", bad[i]);
        CN_CHECK_EQ(e, CN_E_INVALID);
    }
}

static const cn_test_case_t cases[] = {
    CN_TEST(test_discover),          CN_TEST(test_instance_req), CN_TEST(test_instance_resp),
    CN_TEST(test_instance_refusals), CN_TEST(test_authorize),    CN_TEST(test_names),
    CN_TEST(test_repo_ref),
};

int main(int argc, char **argv)
{
    return fx_main(argc, argv, "tests/scribe/gw_fixtures.txt", cases,
                   sizeof cases / sizeof cases[0]);
}
