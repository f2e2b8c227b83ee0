/* Scribe wire codec: golden fixtures hand-written from docs/protocol/scribe.md,
 * rejection of every truncation and of trailing bytes, limits, and the exact
 * request bounds in both codecs. */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

#define LE CN_SCRIBE_CODEC_LE
#define BE CN_SCRIBE_CODEC_BE

static cn_scribe_id_t id_from(uint8_t first)
{
    cn_scribe_id_t id;
    fx_id(id.b, first);
    return id;
}

static cn_scribe_str_t S(const char *s)
{
    return cn_scribe_cstr(s);
}

/* ---- frames ------------------------------------------------------------------- */
static void test_frame_header(void)
{
    FX(g, "53 43 52 31 01 00 00 00 01 00 00 00 00 00 00 00 1a 00 00 00 00 00 00 00");
    CN_CHECK_EQ(g_len, CN_SCRIBE_HDR_LEN);
    cn_scribe_hdr_t h = { .opcode = 1, .flags = 0, .request_id = 1, .length = 26 };
    uint8_t out[24];
    cn_scribe_hdr_encode(out, &h);
    CN_CHECK_MEM(out, g, 24);
    cn_scribe_hdr_t d;
    CN_CHECK_EQ(cn_scribe_hdr_parse(g, &d), CN_OK);
    CN_CHECK_EQ(d.opcode, 1);
    CN_CHECK_EQ(d.request_id, 1);
    CN_CHECK_EQ(d.length, 26);

    uint8_t b[24];
    memcpy(b, g, 24);
    b[0] = 'X';
    CN_CHECK_EQ(cn_scribe_hdr_parse(b, &d), CN_E_PROTOCOL); /* bad magic */
    memcpy(b, g, 24);
    b[6] = 4;
    CN_CHECK_EQ(cn_scribe_hdr_parse(b, &d), CN_E_PROTOCOL); /* unknown flag bit */
    memcpy(b, g, 24);
    b[7] = 0x80;
    CN_CHECK_EQ(cn_scribe_hdr_parse(b, &d), CN_E_PROTOCOL);
    memcpy(b, g, 24);
    b[6] = 3;
    CN_CHECK_EQ(cn_scribe_hdr_parse(b, &d), CN_OK); /* STREAM|ERROR */
    for (int i = 20; i < 24; i++) {
        memcpy(b, g, 24);
        b[i] = 1;
        CN_CHECK_EQ(cn_scribe_hdr_parse(b, &d), CN_E_PROTOCOL); /* reserved */
    }
    h.length = CN_SCRIBE_MAX_FRAME;
    cn_scribe_hdr_encode(b, &h);
    CN_CHECK_EQ(cn_scribe_hdr_parse(b, &d), CN_OK);
    h.length = CN_SCRIBE_MAX_FRAME + 1;
    cn_scribe_hdr_encode(b, &h);
    CN_CHECK_EQ(cn_scribe_hdr_parse(b, &d), CN_E_PROTOCOL); /* over 64 MiB */
}

/* ---- handshake ---------------------------------------------------------------- */
static cn_err_t dec_hello2(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_hello_t h;
    (void)c;
    return cn_scribe_dec_hello(p, n, 2, false, &h);
}
static cn_err_t dec_hello4(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_hello_t h;
    (void)c;
    return cn_scribe_dec_hello(p, n, 4, false, &h);
}

static void test_hello(void)
{
    FX(g, "02 00 01 01 00 00 00 00 00 00 00 00 00 00 00 09 00 \"cairn/0.1\"");
    CN_CHECK_EQ(g_len, 26);
    cn_scribe_hello_t h = { .version = 2, .codec = 1, .caps = 1, .client = S("cairn/0.1") };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_OK);
    CN_CHECK_EQ(b.len, g_len);
    CN_CHECK_MEM(b.data, g, g_len);
    cn_scribe_hello_t d;
    CN_CHECK_EQ(cn_scribe_dec_hello(g, g_len, 2, false, &d), CN_OK);
    CN_CHECK_EQ(d.caps, 1);
    CN_CHECK_EQ(d.client.len, 9);
    fx_truncation(dec_hello2, g, g_len, LE);

    uint8_t x[64];
    memcpy(x, g, g_len);
    x[0] = 1; /* protocol 1 */
    CN_CHECK_EQ(cn_scribe_dec_hello(x, g_len, 2, false, &d), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(cn_scribe_dec_hello(x, 3, 2, false, &d), CN_E_UNSUPPORTED); /* any layout */
    x[0] = 4;                                                               /* v4 on plaintext */
    CN_CHECK_EQ(cn_scribe_dec_hello(x, g_len, 2, false, &d), CN_E_UNSUPPORTED);
    x[0] = 2;
    x[2] = 2; /* test codec */
    CN_CHECK_EQ(cn_scribe_dec_hello(x, g_len, 2, false, &d), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(cn_scribe_dec_hello(x, g_len, 2, true, &d), CN_OK);
    x[2] = 3;
    CN_CHECK_EQ(cn_scribe_dec_hello(x, g_len, 2, true, &d), CN_E_UNSUPPORTED);
    x[2] = 1;
    x[3] = 2; /* unknown capability */
    CN_CHECK_EQ(cn_scribe_dec_hello(x, g_len, 2, false, &d), CN_E_PROTOCOL);
    x[3] = 1;
    x[6] = 0x80;
    CN_CHECK_EQ(cn_scribe_dec_hello(x, g_len, 2, false, &d), CN_E_PROTOCOL);

    /* Client string limit: 256 accepted (the 273-byte bound), 257 refused. */
    char cs[258];
    memset(cs, 'c', 257);
    cs[257] = 0;
    cn_buf_reset(&b);
    h.client = (cn_scribe_str_t){ (const uint8_t *)cs, 256 };
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_OK);
    CN_CHECK_EQ(b.len, 273);
    uint32_t bound;
    CN_CHECK(cn_scribe_request_bound(1, false, &bound));
    CN_CHECK_EQ(bound, 273);
    CN_CHECK_EQ(cn_scribe_dec_hello(b.data, b.len, 2, false, &d), CN_OK);
    b.data[15] = 1;
    b.data[16] = 1; /* length 257 */
    uint8_t big[274];
    memcpy(big, b.data, 273);
    big[273] = 'c';
    CN_CHECK_EQ(cn_scribe_dec_hello(big, 274, 2, false, &d), CN_E_PROTOCOL);
    h.client = (cn_scribe_str_t){ (const uint8_t *)cs, 257 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0); /* rolled back */
    cn_buf_free(&b);
}

static void test_hello_v4(void)
{
    static uint8_t cert[CN_SCRIBE_MAX_CERTIFICATE];
    memset(cert, 'P', sizeof cert);
    cn_scribe_hello_t h = { .version = 4,
                            .codec = 1,
                            .caps = 0,
                            .client = S("x"),
                            .caller = CN_SCRIBE_CALLER_DELEGATED,
                            .delegated_cert = { cert, 5 } };
    memset(h.binding, 0xAB, 32);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_OK);
    cn_scribe_hello_t d;
    CN_CHECK_EQ(cn_scribe_dec_hello(b.data, b.len, 4, false, &d), CN_OK);
    CN_CHECK_EQ(d.caller, 2);
    CN_CHECK_EQ(d.delegated_cert.len, 5);
    CN_CHECK_EQ(d.binding[31], 0xAB);
    fx_truncation(dec_hello4, b.data, b.len, LE);
    CN_CHECK_EQ(cn_scribe_dec_hello(b.data, b.len, 2, false, &d), CN_E_UNSUPPORTED);
    /* caller 3 and an empty certificate are malformed */
    size_t caller_at = 2 + 1 + 4 + 8 + 2 + 1;
    b.data[caller_at] = 3;
    CN_CHECK_EQ(cn_scribe_dec_hello(b.data, b.len, 4, false, &d), CN_E_PROTOCOL);
    h.delegated_cert.len = 0;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_E_INVALID);
    /* The largest protocol-4 hello is exactly the specification's 16,692. */
    static char cl[CN_SCRIBE_MAX_CLIENT_STRING];
    memset(cl, 'c', sizeof cl);
    h.client = (cn_scribe_str_t){ (const uint8_t *)cl, sizeof cl };
    h.delegated_cert.len = CN_SCRIBE_MAX_CERTIFICATE;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_OK);
    uint32_t bound;
    CN_CHECK(cn_scribe_request_bound(1, true, &bound));
    CN_CHECK_EQ(b.len, 16692);
    CN_CHECK_EQ(bound, 16692);
    CN_CHECK_EQ(cn_scribe_dec_hello(b.data, b.len, 4, false, &d), CN_OK);
    /* direct caller: no certificate */
    h.caller = CN_SCRIBE_CALLER_DIRECT;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_OK);
    CN_CHECK_EQ(b.len, 273 + 1 + 32);
    CN_CHECK_EQ(cn_scribe_dec_hello(b.data, b.len, 4, false, &d), CN_OK);
    cn_buf_free(&b);
}

static cn_err_t dec_hello_ok(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_hello_ok_t h;
    (void)c;
    return cn_scribe_dec_hello_ok(p, n, false, &h);
}

static void test_hello_ok(void)
{
    FX(g, "02 00 01 08 07 06 05 04 03 02 01 2c 01 00 00 01");
    cn_scribe_hello_ok_t h = { .version = 2,
                               .codec = 1,
                               .session = 0x0102030405060708ull,
                               .timeout_s = 300,
                               .compression = 1 };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_hello_ok(&b, &h), CN_OK);
    CN_CHECK_EQ(b.len, g_len);
    CN_CHECK_MEM(b.data, g, g_len);
    cn_scribe_hello_ok_t d;
    CN_CHECK_EQ(cn_scribe_dec_hello_ok(g, g_len, false, &d), CN_OK);
    CN_CHECK_EQ(d.session, 0x0102030405060708ull);
    CN_CHECK_EQ(d.timeout_s, 300);
    fx_truncation(dec_hello_ok, g, g_len, LE);
    g[11] = 0;
    g[12] = 0; /* timeout 0 */
    CN_CHECK_EQ(cn_scribe_dec_hello_ok(g, g_len, false, &d), CN_E_PROTOCOL);
    h.timeout_s = 0;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_hello_ok(&b, &h), CN_E_INVALID);
    cn_buf_free(&b);
}

/* ---- errors ------------------------------------------------------------------------ */
static cn_err_t dec_error(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_error_t e;
    return cn_scribe_dec_error(p, n, c, &e);
}

static void test_error_payload(void)
{
    FX(le, "d4 00 05 00 \"stale\"");
    FX(be, "00 d4 00 05 \"stale\"");
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_error(&b, LE, CN_SCRIBE_E_NOTE_REVISION_STALE, S("stale")), CN_OK);
    CN_CHECK(b.len == le_len && memcmp(b.data, le, le_len) == 0);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_error(&b, BE, 212, S("stale")), CN_OK);
    CN_CHECK(b.len == be_len && memcmp(b.data, be, be_len) == 0);
    cn_scribe_error_t e;
    CN_CHECK_EQ(cn_scribe_dec_error(be, be_len, BE, &e), CN_OK);
    CN_CHECK_EQ(e.code, 212);
    fx_truncation(dec_error, le, le_len, LE);
    fx_truncation(dec_error, be, be_len, BE);
    FX(zero, "00 00 00 00");
    CN_CHECK_EQ(cn_scribe_dec_error(zero, zero_len, LE, &e), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

static void test_error_codes(void)
{
    CN_CHECK_STR(cn_scribe_errcode_name(212), "note_revision_stale");
    CN_CHECK_STR(cn_scribe_errcode_name(109), "workspace_retired");
    CN_CHECK_STR(cn_scribe_errcode_name(1), "malformed");
    CN_CHECK_STR(cn_scribe_errcode_name(2), "unsupported_version");
    CN_CHECK_STR(cn_scribe_errcode_name(6), "busy");
    CN_CHECK_STR(cn_scribe_errcode_name(200), "operation_intent_mismatch");
    CN_CHECK_STR(cn_scribe_errcode_name(201), "incarnation_mismatch");
    CN_CHECK(cn_scribe_errcode_name(0) == NULL);
    CN_CHECK(cn_scribe_errcode_name(213) == NULL);
    static const char *const named[] = {
        "malformed",
        "unsupported_version",
        "unauthenticated",
        "busy",
        "auth_unavailable",
        "forbidden",
        "branch_not_found",
        "repository_not_found",
        "change_not_found",
        "operation_intent_mismatch",
        "incarnation_mismatch",
        "limit_exceeded",
        "note_revision_stale",
        "workspace_retired",
        "lock_required",
        "lock_held",
        "invalid_repository_config",
        "base_mismatch",
        "merge_incomplete",
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        bool found = false;
        for (unsigned c = 1; c < 1000 && !found; c++)
            found = cn_scribe_errcode_name((uint16_t)c) &&
                    strcmp(cn_scribe_errcode_name((uint16_t)c), named[i]) == 0;
        CN_CHECK(found);
    }
    for (unsigned c = 1; c < 600; c++) {
        bool client = (c >= 1 && c <= 4) || c == 8 || c == 9 || (c >= 100 && c <= 499);
        CN_CHECK_EQ(cn_scribe_errcode_is_client((uint16_t)c), client);
    }
    CN_CHECK(!cn_scribe_errcode_is_client(CN_SCRIBE_E_BUSY));
    CN_CHECK(!cn_scribe_errcode_is_client(CN_SCRIBE_E_AUTH_UNAVAILABLE));
    CN_CHECK(cn_scribe_errcode_is_client(CN_SCRIBE_E_WORKSPACE_RETIRED));
}

static void test_opcodes(void)
{
    CN_CHECK_STR(cn_scribe_op_name(1), "hello");
    CN_CHECK_STR(cn_scribe_op_name(13), "changed_paths");
    CN_CHECK_STR(cn_scribe_op_name(15), "log");
    CN_CHECK_STR(cn_scribe_op_name(38), "repo_usage");
    CN_CHECK_STR(cn_scribe_op_name(42), "pin_objects");
    CN_CHECK_STR(cn_scribe_op_name(43), "tree_proof");
    CN_CHECK(cn_scribe_op_name(0) == NULL && cn_scribe_op_name(18) == NULL &&
             cn_scribe_op_name(37) == NULL && cn_scribe_op_name(44) == NULL);
    CN_CHECK(cn_scribe_op_is_core(9) && cn_scribe_op_is_core(42) && cn_scribe_op_is_core(43) &&
             cn_scribe_op_is_core(12) && cn_scribe_op_is_core(30) && cn_scribe_op_is_core(31) &&
             cn_scribe_op_is_core(27) && cn_scribe_op_is_core(28) && !cn_scribe_op_is_core(37));
}

/* ---- discover ---------------------------------------------------------------------- */
static cn_err_t dec_discover(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_discover_t d;
    return cn_scribe_dec_discover(p, n, c, &d);
}

static void test_discover(void)
{
    FX(direct, "01 00 01 00 00 00 00 00");
    cn_buf_t b = { 0 };
    cn_scribe_str_t empty = { NULL, 0 };
    CN_CHECK_EQ(cn_scribe_enc_discover(&b, LE, CN_SCRIBE_ROLE_STORAGE, false, &empty, 1), CN_OK);
    CN_CHECK(b.len == direct_len && memcmp(b.data, direct, direct_len) == 0);
    fx_truncation(dec_discover, direct, direct_len, LE);

    FX(gw, "02 01 02 00 00 00 06 00 \"studio\" 0a 00 \"publishing\"");
    cn_scribe_str_t labels[2] = { S("studio"), S("publishing") };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_discover(&b, LE, CN_SCRIBE_ROLE_GATEWAY, true, labels, 2), CN_OK);
    CN_CHECK(b.len == gw_len && memcmp(b.data, gw, gw_len) == 0);
    cn_scribe_discover_t d;
    CN_CHECK_EQ(cn_scribe_dec_discover(gw, gw_len, LE, &d), CN_OK);
    CN_CHECK_EQ(d.count, 2);
    cn_scribe_str_t l1 = cn_scribe_discover_label(&d, LE, 1);
    CN_CHECK(l1.len == 10 && memcmp(l1.p, "publishing", 10) == 0);
    fx_truncation(dec_discover, gw, gw_len, LE);

    FX(role3, "03 00 01 00 00 00 00 00");
    CN_CHECK_EQ(dec_discover(role3, role3_len, LE), CN_E_PROTOCOL);
    FX(bool2, "01 02 01 00 00 00 00 00");
    CN_CHECK_EQ(dec_discover(bool2, bool2_len, LE), CN_E_PROTOCOL);
    FX(zero, "02 00 00 00 00 00");
    CN_CHECK_EQ(dec_discover(zero, zero_len, LE), CN_E_PROTOCOL);
    FX(huge, "02 00 ff ff ff ff 00 00");
    CN_CHECK_EQ(dec_discover(huge, huge_len, LE), CN_E_PROTOCOL);
    FX(label_plain, "01 00 01 00 00 00 01 00 \"x\""); /* plaintext labels are empty */
    CN_CHECK_EQ(dec_discover(label_plain, label_plain_len, LE), CN_E_PROTOCOL);
    FX(bad_ns, "02 01 01 00 00 00 02 00 \"a/\"");
    CN_CHECK_EQ(dec_discover(bad_ns, bad_ns_len, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

/* ---- repositories ------------------------------------------------------------------ */
static cn_err_t dec_repo_create(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_repo_create_req_t q;
    return cn_scribe_dec_repo_create_req(p, n, c, &q);
}
static cn_err_t dec_repo_info(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_repo_info_t r;
    return cn_scribe_dec_repo_info_resp(p, n, c, &r);
}
static cn_err_t dec_repo_info_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_repo_info_req_t r;
    return cn_scribe_dec_repo_info_req(p, n, c, &r);
}
static cn_err_t dec_repo_list(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_repo_list_resp_t r;
    return cn_scribe_dec_repo_list_resp(p, n, c, &r);
}
static cn_err_t dec_repo_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_repo_list_req_t r;
    return cn_scribe_dec_repo_list_req(p, n, c, &r);
}
static cn_err_t dec_instance(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_instance_resp_t r;
    return cn_scribe_dec_instance_resp(p, n, c, &r);
}

static cn_scribe_repo_info_t sample_info(void)
{
    cn_scribe_repo_info_t ri = { .id = id_from(0x00),
                                 .name = S("art"),
                                 .main_branch = id_from(0x10),
                                 .head = 7,
                                 .incarnation = id_from(0x20),
                                 .created_ms = 1700000000000ull,
                                 .compression = 1 };
    return ri;
}

static void test_repo_layouts(void)
{
    FX(create_le, "03 00 \"art\" 01");
    FX(create_be, "00 03 \"art\" 01");
    cn_buf_t b = { 0 };
    cn_scribe_repo_create_req_t q = { S("art"), 1 };
    CN_CHECK_EQ(cn_scribe_enc_repo_create_req(&b, LE, &q), CN_OK);
    CN_CHECK(b.len == create_le_len && memcmp(b.data, create_le, create_le_len) == 0);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_create_req(&b, BE, &q), CN_OK);
    CN_CHECK(b.len == create_be_len && memcmp(b.data, create_be, create_be_len) == 0);
    fx_truncation(dec_repo_create, create_le, create_le_len, LE);
    fx_truncation(dec_repo_create, create_be, create_be_len, BE);
    FX(create_empty, "00 00 01");
    CN_CHECK_EQ(dec_repo_create(create_empty, create_empty_len, LE), CN_E_PROTOCOL);
    FX(create_comp2, "03 00 \"art\" 02");
    CN_CHECK_EQ(dec_repo_create(create_comp2, create_comp2_len, LE), CN_E_PROTOCOL);

    FX(info, "000102030405060708090a0b0c0d0e0f 0300 \"art\" 101112131415161718191a1b1c1d1e1f"
             " 0700000000000000 202122232425262728292a2b2c2d2e2f 0068e5cf8b010000 01");
    cn_scribe_repo_info_t ri = sample_info();
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_info_resp(&b, LE, &ri), CN_OK);
    CN_CHECK(b.len == info_len && memcmp(b.data, info, info_len) == 0);
    fx_truncation(dec_repo_info, info, info_len, LE);
    cn_scribe_repo_info_t d;
    CN_CHECK_EQ(cn_scribe_dec_repo_info_resp(info, info_len, LE, &d), CN_OK);
    CN_CHECK_EQ(d.head, 7);
    CN_CHECK_EQ(d.created_ms, 1700000000000ull);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_info_resp(&b, BE, &ri), CN_OK);
    fx_truncation(dec_repo_info, b.data, b.len, BE);
    CN_CHECK_EQ(cn_scribe_dec_repo_info_resp(b.data, b.len, BE, &d), CN_OK);
    CN_CHECK_EQ(d.created_ms, 1700000000000ull);

    /* repo_info request by id and by name */
    cn_scribe_repo_info_req_t iq = { .by = CN_SCRIBE_REPO_BY_NAME, .name = S("art") };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_info_req(&b, LE, &iq), CN_OK);
    FX(info_req, "02 03 00 \"art\"");
    CN_CHECK(b.len == info_req_len && memcmp(b.data, info_req, info_req_len) == 0);
    fx_truncation(dec_repo_info_req, info_req, info_req_len, LE);
    FX(info_req3, "03 00");
    CN_CHECK_EQ(dec_repo_info_req(info_req3, info_req3_len, LE), CN_E_PROTOCOL);

    /* repo_list: page of two, with a token */
    cn_scribe_repo_info_t rows[2] = { ri, ri };
    rows[1].name = S("code");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_list_resp(&b, BE, rows, 2, true, S("tok")), CN_OK);
    cn_scribe_repo_list_resp_t lr;
    CN_CHECK_EQ(cn_scribe_dec_repo_list_resp(b.data, b.len, BE, &lr), CN_OK);
    CN_CHECK_EQ(lr.count, 2);
    cn_scribe_repo_info_t r1;
    CN_CHECK(cn_scribe_next_repo_info(&lr.rows, &r1));
    CN_CHECK(cn_scribe_next_repo_info(&lr.rows, &r1));
    CN_CHECK(r1.name.len == 4 && memcmp(r1.name.p, "code", 4) == 0);
    CN_CHECK(!cn_scribe_next_repo_info(&lr.rows, &r1));
    CN_CHECK(lr.has_token && lr.token.len == 3);
    fx_truncation(dec_repo_list, b.data, b.len, BE);
    FX(list_huge, "ff ff ff ff 00");
    CN_CHECK_EQ(dec_repo_list(list_huge, list_huge_len, LE), CN_E_PROTOCOL);
    cn_scribe_repo_list_req_t lq = { 100, true, S("tok") };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_list_req(&b, LE, &lq), CN_OK);
    FX(list_req, "64 00 00 00 01 03 00 \"tok\"");
    CN_CHECK(b.len == list_req_len && memcmp(b.data, list_req, list_req_len) == 0);
    fx_truncation(dec_repo_list_req, list_req, list_req_len, LE);

    /* instance_status */
    cn_scribe_instance_row_t irow = { ri, 4096 };
    cn_scribe_instance_resp_t ih = { .incarnation = id_from(0x50),
                                     .total_repositories = 1,
                                     .used_bytes = 8192,
                                     .has_available = true,
                                     .available_bytes = 1 << 20,
                                     .count = 1,
                                     .has_next = true,
                                     .next = id_from(0x00) };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_instance_resp(&b, LE, &ih, &irow), CN_OK);
    cn_scribe_instance_resp_t idec;
    CN_CHECK_EQ(cn_scribe_dec_instance_resp(b.data, b.len, LE, &idec), CN_OK);
    cn_scribe_instance_row_t ir;
    CN_CHECK(cn_scribe_next_instance_row(&idec.rows, &ir) && ir.bytes == 4096);
    fx_truncation(dec_instance, b.data, b.len, LE);
    cn_buf_free(&b);
}

/* ---- objects ------------------------------------------------------------------------ */
static cn_err_t dec_get(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_objs_req_t q;
    return cn_scribe_dec_objs_req(p, n, c, CN_SCRIBE_OP_GET_OBJECTS, &q);
}
static cn_err_t dec_pin(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_objs_req_t q;
    return cn_scribe_dec_objs_req(p, n, c, CN_SCRIBE_OP_PIN_OBJECTS, &q);
}
static cn_err_t dec_put(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_put_req_t q;
    return cn_scribe_dec_put_req(p, n, c, &q);
}
static cn_err_t dec_bits10(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    const uint8_t *bits;
    return cn_scribe_dec_bits_resp(p, n, c, 10, &bits);
}

static void test_objects(void)
{
    FX(get, "000102030405060708090a0b0c0d0e0f 01000000 01 "
            "ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f");
    cn_scribe_objref_t ref = { CN_REPOS_CHUNK, { { 0 } } };
    cn_digest_t hello;
    cn_blake3("hello", 5, &hello);
    ref.id = hello;
    cn_scribe_objs_req_t q = { .repo = id_from(0), .count = 1 };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_objs_req(&b, LE, CN_SCRIBE_OP_GET_OBJECTS, &q, &ref), CN_OK);
    CN_CHECK(b.len == get_len && memcmp(b.data, get, get_len) == 0);
    fx_truncation(dec_get, get, get_len, LE);
    cn_scribe_objs_req_t dq;
    CN_CHECK_EQ(cn_scribe_dec_objs_req(get, get_len, LE, CN_SCRIBE_OP_PRESENCE, &dq), CN_OK);
    cn_scribe_objref_t r0;
    cn_scribe_objref(&dq, 0, &r0);
    CN_CHECK(r0.kind == 1 && memcmp(r0.id.b, hello.b, 32) == 0);
    get[20] = 5; /* unknown kind */
    CN_CHECK_EQ(dec_get(get, get_len, LE), CN_E_PROTOCOL);
    get[20] = 4; /* commits can be read ... */
    CN_CHECK_EQ(dec_get(get, get_len, LE), CN_OK);
    /* ... but not pinned */
    q.workspace = id_from(0x40);
    q.intent = id_from(0x30);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_objs_req(&b, BE, CN_SCRIBE_OP_PIN_OBJECTS, &q, &ref), CN_OK);
    CN_CHECK_EQ(b.len, 48 + 4 + 33);
    fx_truncation(dec_pin, b.data, b.len, BE);
    b.data[52] = 4;
    CN_CHECK_EQ(dec_pin(b.data, b.len, BE), CN_E_PROTOCOL);
    b.data[52] = 1;
    memset(b.data + 32, 0, 16); /* zero intent */
    CN_CHECK_EQ(dec_pin(b.data, b.len, BE), CN_E_PROTOCOL);
    /* more than 1 GiB announced in one batch */
    cn_scribe_put_item_t many[300];
    for (int i = 0; i < 300; i++)
        many[i] = (cn_scribe_put_item_t){ CN_REPOS_CHUNK, hello, CN_REPOS_MAX_CHUNK };
    cn_buf_reset(&b);
    cn_scribe_id_t r0id = id_from(0);
    CN_CHECK_EQ(cn_scribe_enc_put_req(&b, LE, &r0id, many, 256), CN_OK); /* exactly 1 GiB */
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_put_req(&b, LE, &r0id, many, 257), CN_E_INVALID);
    FX(count0, "000102030405060708090a0b0c0d0e0f 00000000");
    CN_CHECK_EQ(dec_get(count0, count0_len, LE), CN_E_PROTOCOL);
    FX(count_big, "000102030405060708090a0b0c0d0e0f 01200000"); /* 8193 */
    CN_CHECK_EQ(dec_get(count_big, count_big_len, LE), CN_E_PROTOCOL);

    /* presence bits: 10 identities, present 0, 2, 9 */
    FX(bits, "0a 00 00 00 05 02");
    bool present[10] = { true, false, true, false, false, false, false, false, false, true };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_bits_resp(&b, LE, present, 10), CN_OK);
    CN_CHECK(b.len == bits_len && memcmp(b.data, bits, bits_len) == 0);
    fx_truncation(dec_bits10, bits, bits_len, LE);
    const uint8_t *bv;
    CN_CHECK_EQ(cn_scribe_dec_bits_resp(bits, bits_len, LE, 10, &bv), CN_OK);
    CN_CHECK(cn_scribe_bit(bv, 0) && !cn_scribe_bit(bv, 1) && cn_scribe_bit(bv, 9));
    CN_CHECK_EQ(cn_scribe_dec_bits_resp(bits, bits_len, LE, 9, &bv),
                CN_E_PROTOCOL);         /* one bit each */
    FX(bits_high, "0a 00 00 00 05 06"); /* unused bit set */
    CN_CHECK_EQ(cn_scribe_dec_bits_resp(bits_high, bits_high_len, LE, 10, &bv), CN_E_PROTOCOL);

    /* put_objects: kinds and per-kind lengths */
    cn_scribe_put_item_t items[3] = { { CN_REPOS_CHUNK, hello, 5 },
                                      { CN_REPOS_MANIFEST, hello, 49 },
                                      { CN_REPOS_CHANGESET, hello, 46 } };
    cn_scribe_id_t repo = id_from(0);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_put_req(&b, BE, &repo, items, 3), CN_OK);
    CN_CHECK_EQ(b.len, 20 + 3 * 41);
    fx_truncation(dec_put, b.data, b.len, BE);
    cn_scribe_put_req_t pq;
    CN_CHECK_EQ(cn_scribe_dec_put_req(b.data, b.len, BE, &pq), CN_OK);
    CN_CHECK_EQ(pq.total, 100);
    cn_scribe_put_item_t it;
    cn_scribe_put_item(&pq, 1, &it);
    CN_CHECK(it.kind == 2 && it.length == 49);
    cn_scribe_put_item_t bad[] = { { CN_REPOS_CHUNK, hello, 0 },
                                   { CN_REPOS_CHUNK, hello, CN_REPOS_MAX_CHUNK + 1ull },
                                   { CN_REPOS_COMMIT, hello, 100 },
                                   { CN_REPOS_MANIFEST, hello, 12 },
                                   { 9, hello, 1 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_put_req(&b, LE, &repo, &bad[i], 1), CN_E_INVALID);
        /* and the same bytes, hand-encoded, are refused by the decoder */
        cn_scribe_wr_t w = cn_scribe_wr_init(&b, LE);
        cn_scribe_wr_raw(&w, repo.b, 16);
        cn_scribe_wr_u32(&w, 1);
        cn_scribe_wr_u8(&w, bad[i].kind);
        cn_scribe_wr_raw(&w, hello.b, 32);
        cn_scribe_wr_u64(&w, bad[i].length);
        CN_CHECK_EQ(dec_put(b.data, b.len, LE), CN_E_PROTOCOL);
    }
    uint8_t stored[3] = { 1, 0, 1 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_put_resp(&b, LE, stored, 3), CN_OK);
    FX(put_resp, "03 00 00 00 01 00 01");
    CN_CHECK(b.len == put_resp_len && memcmp(b.data, put_resp, put_resp_len) == 0);

    /* get_objects stream item headers */
    uint8_t hdr[CN_SCRIBE_GET_ITEM_HDR_MAX];
    cn_scribe_get_item_t gi = { CN_REPOS_CHUNK, hello, true, 5 };
    CN_CHECK_EQ(cn_scribe_enc_get_item(hdr, LE, &gi), 42);
    FX(item,
       "01 ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f 01 0500000000000000");
    CN_CHECK_MEM(hdr, item, 42);
    cn_scribe_get_item_t gd;
    for (size_t k = 0; k < 42; k++)
        CN_CHECK_EQ(cn_scribe_dec_get_item(item, k, LE, &gd), CN_E_AGAIN);
    CN_CHECK_EQ(cn_scribe_dec_get_item(item, 42, LE, &gd), 42);
    CN_CHECK(gd.present && gd.length == 5);
    gi.present = false;
    CN_CHECK_EQ(cn_scribe_enc_get_item(hdr, BE, &gi), 34);
    CN_CHECK_EQ(cn_scribe_dec_get_item(hdr, 34, BE, &gd), 34);
    CN_CHECK(!gd.present);
    hdr[33] = 2;
    CN_CHECK_EQ(cn_scribe_dec_get_item(hdr, 34, BE, &gd), CN_E_PROTOCOL);

    /* LZ4 transfer block headers: always little-endian */
    uint8_t blk[8];
    cn_scribe_block_t bl = { 262144, 1000, false };
    cn_scribe_enc_block(blk, &bl);
    FX(blk_g, "00 00 04 00 e8 03 00 00");
    CN_CHECK_MEM(blk, blk_g, 8);
    cn_scribe_block_t bd;
    CN_CHECK_EQ(cn_scribe_dec_block(blk, 1 << 20, &bd), CN_OK);
    CN_CHECK(!bd.raw && bd.stored == 1000 && bd.original == 262144);
    CN_CHECK_EQ(cn_scribe_dec_block(blk, 1000, &bd), CN_E_PROTOCOL); /* past the object */
    cn_scribe_block_t raw = { 5, 5, true };
    cn_scribe_enc_block(blk, &raw);
    FX(blk_raw, "05 00 00 00 05 00 00 80");
    CN_CHECK_MEM(blk, blk_raw, 8);
    CN_CHECK_EQ(cn_scribe_dec_block(blk, 5, &bd), CN_OK);
    CN_CHECK(bd.raw && bd.stored == 5);
    FX(blk_big, "01 00 04 00 e8 03 00 00"); /* 256 KiB + 1 */
    CN_CHECK_EQ(cn_scribe_dec_block(blk_big, 1 << 20, &bd), CN_E_PROTOCOL);
    FX(blk_grow, "10 00 00 00 21 00 00 00"); /* over the LZ4 bound */
    CN_CHECK_EQ(cn_scribe_dec_block(blk_grow, 1 << 20, &bd), CN_E_PROTOCOL);
    FX(blk_bound, "10 00 00 00 20 00 00 00"); /* 16 + 0 + 16 */
    CN_CHECK_EQ(cn_scribe_dec_block(blk_bound, 1 << 20, &bd), CN_OK);
    FX(blk_rawlie, "10 00 00 00 0f 00 00 80"); /* raw but short */
    CN_CHECK_EQ(cn_scribe_dec_block(blk_rawlie, 1 << 20, &bd), CN_E_PROTOCOL);
    FX(blk_zero, "00 00 00 00 00 00 00 00");
    CN_CHECK_EQ(cn_scribe_dec_block(blk_zero, 1 << 20, &bd), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

/* ---- submit ------------------------------------------------------------------------- */
static cn_err_t dec_submit(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_submit_req_t q;
    return cn_scribe_dec_submit_req(p, n, c, &q);
}
static cn_err_t dec_submit_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_submit_outcome_t o;
    return cn_scribe_dec_submit_resp(p, n, c, &o);
}
static cn_err_t dec_outcome_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_outcome_resp_t o;
    return cn_scribe_dec_outcome_resp(p, n, c, &o);
}
static cn_err_t dec_outcome_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_outcome_req_t o;
    return cn_scribe_dec_outcome_req(p, n, c, &o);
}

static const char submit_fx[] =
    "000102030405060708090a0b0c0d0e0f 202122232425262728292a2b2c2d2e2f "
    "303132333435363738393a3b3c3d3e3f"
    " 101112131415161718191a1b1c1d1e1f 404142434445464748494a4b4c4d4e4f 0000000000000000"
    " d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c 00 0300 \"ann\" 05000000 "
    "\"add a\"";

static void test_submit(void)
{
    FX(g, submit_fx);
    cn_scribe_submit_req_t q = { .repo = id_from(0x00),
                                 .incarnation = id_from(0x20),
                                 .operation = id_from(0x30),
                                 .branch = id_from(0x10),
                                 .workspace = id_from(0x40),
                                 .base = 0,
                                 .keep_locks = false,
                                 .author = S("ann"),
                                 .message = S("add a") };
    CN_CHECK_EQ(cn_digest_parse("d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c",
                                64, &q.changeset),
                CN_OK);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_submit_req(&b, LE, &q), CN_OK);
    CN_CHECK(b.len == g_len && memcmp(b.data, g, g_len) == 0);
    fx_truncation(dec_submit, g, g_len, LE);

    /* The fingerprint of the doc, the same through codec 2, author excluded. */
    cn_scribe_submit_req_t d;
    CN_CHECK_EQ(cn_scribe_dec_submit_req(g, g_len, LE, &d), CN_OK);
    cn_digest_t fp, fp_be, expect;
    cn_scribe_submit_fingerprint(&d, &fp);
    CN_CHECK_EQ(cn_digest_parse("139235015b2647defe66bb5b82a97fb5c40db88439a21b0c47fb80c681746034",
                                64, &expect),
                CN_OK);
    CN_CHECK_MEM(fp.b, expect.b, 32);
    cn_buf_reset(&b);
    q.author = S("someone else");
    CN_CHECK_EQ(cn_scribe_enc_submit_req(&b, BE, &q), CN_OK);
    fx_truncation(dec_submit, b.data, b.len, BE);
    CN_CHECK_EQ(cn_scribe_dec_submit_req(b.data, b.len, BE, &d), CN_OK);
    cn_scribe_submit_fingerprint(&d, &fp_be);
    CN_CHECK_MEM(fp_be.b, expect.b, 32);
    /* ... and it equals the model's fingerprint of the semantic request */
    cn_repos_submit_intent_t si;
    memcpy(si.repository, d.repo.b, 16);
    memcpy(si.incarnation, d.incarnation.b, 16);
    memcpy(si.branch, d.branch.b, 16);
    memcpy(si.workspace, d.workspace.b, 16);
    si.base = d.base;
    si.changeset = d.changeset;
    si.keep_locks = d.keep_locks;
    si.message = d.message.p;
    si.message_len = d.message.len;
    cn_digest_t fp_model;
    cn_repos_submit_fingerprint(&si, &fp_model);
    CN_CHECK_MEM(fp_model.b, expect.b, 32);
    /* every intent field changes it: keep locks, workspace, incarnation */
    d.keep_locks = true;
    cn_scribe_submit_fingerprint(&d, &fp);
    CN_CHECK(memcmp(fp.b, expect.b, 32) != 0);
    d.keep_locks = false;
    d.workspace.b[0] ^= 1;
    cn_scribe_submit_fingerprint(&d, &fp);
    CN_CHECK(memcmp(fp.b, expect.b, 32) != 0);
    d.workspace.b[0] ^= 1;
    d.incarnation.b[15] ^= 1;
    cn_scribe_submit_fingerprint(&d, &fp);
    CN_CHECK(memcmp(fp.b, expect.b, 32) != 0);

    /* zero operation id, bool 2 */
    uint8_t x[512];
    memcpy(x, g, g_len);
    memset(x + 32, 0, 16);
    CN_CHECK_EQ(dec_submit(x, g_len, LE), CN_E_PROTOCOL);
    memcpy(x, g, g_len);
    x[16 * 5 + 8 + 32] = 2;
    CN_CHECK_EQ(dec_submit(x, g_len, LE), CN_E_PROTOCOL);

    /* accepted outcome golden */
    FX(acc, "303132333435363738393a3b3c3d3e3f 01 0100000000000000 "
            "54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca");
    cn_scribe_submit_outcome_t o = { .operation = id_from(0x30), .outcome = 1, .change = 1 };
    CN_CHECK_EQ(cn_digest_parse("54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca",
                                64, &o.commit),
                CN_OK);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, LE, &o, NULL), CN_OK);
    CN_CHECK(b.len == acc_len && memcmp(b.data, acc, acc_len) == 0);
    fx_truncation(dec_submit_resp, acc, acc_len, LE);

    /* rejected outcome with conflict paths, both codecs */
    cn_scribe_str_t paths[2] = { S("a.txt"), S("b/c") };
    cn_scribe_submit_outcome_t rj = { .operation = id_from(0x30),
                                      .outcome = 2,
                                      .code = CN_SCRIBE_E_BASE_CONFLICT,
                                      .head = 9,
                                      .detail = S("changed since base"),
                                      .path_count = 2 };
    for (int c = 1; c <= 2; c++) {
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, (cn_scribe_codec_t)c, &rj, paths), CN_OK);
        fx_truncation(dec_submit_resp, b.data, b.len, (cn_scribe_codec_t)c);
        cn_scribe_submit_outcome_t od;
        CN_CHECK_EQ(cn_scribe_dec_submit_resp(b.data, b.len, (cn_scribe_codec_t)c, &od), CN_OK);
        CN_CHECK_EQ(od.code, 202);
        CN_CHECK_EQ(od.head, 9);
        cn_scribe_str_t p1 = cn_scribe_outcome_path(&od, (cn_scribe_codec_t)c, 1);
        CN_CHECK(p1.len == 3 && memcmp(p1.p, "b/c", 3) == 0);
    }

    /* operation_outcome */
    cn_scribe_outcome_req_t oq = { id_from(0), id_from(0x30) };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_outcome_req(&b, LE, &oq), CN_OK);
    CN_CHECK_EQ(b.len, 32);
    fx_truncation(dec_outcome_req, b.data, b.len, LE);
    cn_scribe_outcome_resp_t orr = { .kind = 1, .submit = o };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_outcome_resp(&b, LE, &orr, NULL), CN_OK);
    CN_CHECK(b.len == acc_len + 1 && b.data[0] == 1 && memcmp(b.data + 1, acc, acc_len) == 0);
    fx_truncation(dec_outcome_resp, b.data, b.len, LE);
    FX(unknown, "00");
    CN_CHECK_EQ(dec_outcome_resp(unknown, unknown_len, LE), CN_OK);
    FX(kind3, "03");
    CN_CHECK_EQ(dec_outcome_resp(kind3, kind3_len, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

/* ---- history ------------------------------------------------------------------------- */
static cn_err_t dec_tree_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_tree_page_req_t q;
    return cn_scribe_dec_tree_page_req(p, n, c, &q);
}
static cn_err_t dec_tree_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_tree_page_resp_t q;
    return cn_scribe_dec_tree_page_resp(p, n, c, &q);
}
static cn_err_t dec_changed_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_changed_req_t q;
    return cn_scribe_dec_changed_req(p, n, c, &q);
}
static cn_err_t dec_changed_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_changed_resp_t q;
    return cn_scribe_dec_changed_resp(p, n, c, &q);
}
static cn_err_t dec_log_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_log_req_t q;
    return cn_scribe_dec_log_req(p, n, c, &q);
}
static cn_err_t dec_log_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_log_resp_t q;
    return cn_scribe_dec_log_resp(p, n, c, false, &q);
}
static cn_err_t dec_log_resp_all(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_log_resp_t q;
    return cn_scribe_dec_log_resp(p, n, c, true, &q);
}

static void test_tree_page(void)
{
    FX(req, "000102030405060708090a0b0c0d0e0f 101112131415161718191a1b1c1d1e1f 0100000000000000"
            " 0000 64000000 00");
    cn_scribe_tree_page_req_t q = {
        .repo = id_from(0), .branch = id_from(0x10), .change = 1, .limit = 100
    };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_tree_page_req(&b, LE, &q), CN_OK);
    CN_CHECK(b.len == req_len && memcmp(b.data, req, req_len) == 0);
    fx_truncation(dec_tree_req, req, req_len, LE);

    /* The page of the doc's one-file tree, roots of section 10.4. */
    FX(resp,
       "01000000 0500 \"a.txt\" 8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1"
       " 0500000000000000 00 0100000000000000 00"
       " 5ab8008cab68dc4710ceab43cd2831ece0cc0a65ef0446e60754dd9869797996"
       " aac3195eeaf787fe1747008fca15233a291b9cd607e1149a7aeb0603d096bab6");
    cn_scribe_tree_entry_t e = { .path = S("a.txt"), .size = 5, .mode = 0, .last_change = 1 };
    cn_digest_t cr, rr;
    cn_digest_parse("8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1", 64,
                    &e.manifest);
    cn_digest_parse("5ab8008cab68dc4710ceab43cd2831ece0cc0a65ef0446e60754dd9869797996", 64, &cr);
    cn_digest_parse("aac3195eeaf787fe1747008fca15233a291b9cd607e1149a7aeb0603d096bab6", 64, &rr);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_tree_page_resp(&b, LE, &e, 1, false, &cr, &rr), CN_OK);
    CN_CHECK(b.len == resp_len && memcmp(b.data, resp, resp_len) == 0);
    fx_truncation(dec_tree_resp, resp, resp_len, LE);
    cn_scribe_tree_page_resp_t pr;
    CN_CHECK_EQ(cn_scribe_dec_tree_page_resp(resp, resp_len, LE, &pr), CN_OK);
    cn_scribe_tree_entry_t de;
    CN_CHECK(cn_scribe_next_tree_entry(&pr.rows, &de) && de.size == 5 && de.last_change == 1);
    CN_CHECK(!pr.more && memcmp(pr.revision_root.b, rr.b, 32) == 0);
    resp[4 + 2 + 5 + 32 + 8] = 3; /* mode 3 */
    CN_CHECK_EQ(dec_tree_resp(resp, resp_len, LE), CN_E_PROTOCOL);

    /* changed_paths */
    cn_scribe_changed_req_t cq = { .repo = id_from(0),
                                   .branch = id_from(0x10),
                                   .from = 9,
                                   .to = 3,
                                   .prefix = S("art"),
                                   .limit = 10,
                                   .has_token = true,
                                   .token = S("opaque") };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_changed_req(&b, BE, &cq), CN_OK);
    fx_truncation(dec_changed_req, b.data, b.len, BE);
    cn_scribe_changed_row_t rows[2] = { { .path = S("art/a.png"),
                                          .change = 7,
                                          .present = true,
                                          .manifest = e.manifest,
                                          .size = 9,
                                          .mode = 1 },
                                        { .path = S("art/b.png"), .change = 8, .present = false } };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_changed_resp(&b, LE, rows, 2, false, S("")), CN_OK);
    fx_truncation(dec_changed_resp, b.data, b.len, LE);
    cn_scribe_changed_resp_t cr2;
    CN_CHECK_EQ(cn_scribe_dec_changed_resp(b.data, b.len, LE, &cr2), CN_OK);
    cn_scribe_changed_row_t dr;
    CN_CHECK(cn_scribe_next_changed_row(&cr2.rows, &dr) && dr.present && dr.mode == 1);
    CN_CHECK(cn_scribe_next_changed_row(&cr2.rows, &dr) && !dr.present && dr.change == 8);
    cn_buf_free(&b);
}

static void test_log(void)
{
    cn_scribe_log_req_t q = { .repo = id_from(0),
                              .branch = id_from(0x10),
                              .has_path = true,
                              .path = S("a.txt"),
                              .has_before = true,
                              .before = 9,
                              .has_after_path = true,
                              .after_path = S("a.txt"),
                              .limit = 50 };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_log_req(&b, LE, &q), CN_OK);
    fx_truncation(dec_log_req, b.data, b.len, LE);
    /* mode rules */
    cn_scribe_log_req_t bad[] = {
        { .has_path = false, .follow_merges = true, .limit = 1 },
        { .has_path = true, .path = S("a"), .all_branches = true, .limit = 1 },
        { .has_path = true,
          .path = S("a"),
          .has_ceiling = true,
          .ceiling = 3,
          .follow_merges = true },
        { .has_path = true, .path = S("a"), .has_after_path = true, .after_path = S("a") },
        { .has_after_path = true, .after_path = S("a"), .has_before = true, .before = 2 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_log_req(&b, LE, &bad[i]), CN_OK);
        CN_CHECK_EQ(dec_log_req(b.data, b.len, LE), CN_E_PROTOCOL);
    }
    cn_scribe_log_req_t all = { .has_path = true,
                                .path = S("a"),
                                .follow_merges = true,
                                .all_branches = true,
                                .has_ceiling = true,
                                .ceiling = 4 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_log_req(&b, BE, &all), CN_OK);
    CN_CHECK_EQ(dec_log_req(b.data, b.len, BE), CN_OK);

    /* rows: a move event, and the merge/pick options in order */
    cn_scribe_log_row_t rows[2] = { { .change = 7,
                                      .branch = id_from(0x10),
                                      .branch_name = S("main"),
                                      .parent = 6,
                                      .path = S("b.txt"),
                                      .event = CN_REPOS_MOVE,
                                      .from_path = S("a.txt"),
                                      .author = S("ann"),
                                      .message = S("rename"),
                                      .time_ms = 5,
                                      .ceiling = 9 },
                                    { .change = 1,
                                      .branch = id_from(0x10),
                                      .branch_name = S("main"),
                                      .parent = 0,
                                      .path = S("a.txt"),
                                      .event = CN_REPOS_ADD,
                                      .author = S("ann"),
                                      .message = S("add a"),
                                      .time_ms = 1,
                                      .has_merge = true,
                                      .merge_branch = id_from(0x60),
                                      .merge_change = 3,
                                      .has_pick = true,
                                      .pick_branch = id_from(0x70),
                                      .pick_change = 2,
                                      .ceiling = 9 } };
    for (int c = 1; c <= 2; c++) {
        for (int mode = 0; mode < 2; mode++) {
            cn_buf_reset(&b);
            CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, (cn_scribe_codec_t)c, mode, rows, 2), CN_OK);
            fx_truncation(mode ? dec_log_resp_all : dec_log_resp, b.data, b.len,
                          (cn_scribe_codec_t)c);
            cn_scribe_log_resp_t lr;
            CN_CHECK_EQ(cn_scribe_dec_log_resp(b.data, b.len, (cn_scribe_codec_t)c, mode, &lr),
                        CN_OK);
            /* the other mode's layout does not parse */
            CN_CHECK(cn_scribe_dec_log_resp(b.data, b.len, (cn_scribe_codec_t)c, !mode, &lr) !=
                     CN_OK);
            CN_CHECK_EQ(cn_scribe_dec_log_resp(b.data, b.len, (cn_scribe_codec_t)c, mode, &lr),
                        CN_OK);
            cn_scribe_log_row_t r;
            CN_CHECK(cn_scribe_next_log_row(&lr.rows, mode, &r));
            CN_CHECK(r.event == CN_REPOS_MOVE && r.from_path.len == 5 && !r.has_merge);
            CN_CHECK(cn_scribe_next_log_row(&lr.rows, mode, &r));
            CN_CHECK(r.has_merge && r.merge_change == 3 && r.has_pick && r.pick_change == 2);
        }
    }
    /* the merge option sits right before the pick option: no merge, pick set */
    cn_scribe_log_row_t one = rows[1];
    one.has_merge = false;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, LE, false, &one, 1), CN_OK);
    CN_CHECK(b.data[b.len - 1 - 8 - 16 - 1] == 0 && b.data[b.len - 1 - 8 - 16] == 1);
    cn_buf_free(&b);
}

/* ---- notes ---------------------------------------------------------------------------- */
static cn_err_t dec_describe(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_describe_req_t q;
    return cn_scribe_dec_describe_req(p, n, c, &q);
}
static cn_err_t dec_note(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_note_t q;
    return cn_scribe_dec_note_resp(p, n, c, &q);
}
static cn_err_t dec_notes_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_notes_req_t q;
    return cn_scribe_dec_notes_req(p, n, c, &q);
}
static cn_err_t dec_notes_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_rows_t r;
    uint32_t k;
    return cn_scribe_dec_notes_resp(p, n, c, &r, &k);
}
static cn_err_t dec_history_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_rows_t r;
    uint32_t k;
    bool m;
    return cn_scribe_dec_history_resp(p, n, c, &r, &k, &m);
}

static void test_notes(void)
{
    FX(desc,
       "000102030405060708090a0b0c0d0e0f 0100000000000000 00000000 0300 \"ann\" 04000000 \"why?\"");
    cn_scribe_describe_req_t q = { id_from(0), 1, 0, S("ann"), S("why?") };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_describe_req(&b, LE, &q), CN_OK);
    CN_CHECK(b.len == desc_len && memcmp(b.data, desc, desc_len) == 0);
    fx_truncation(dec_describe, desc, desc_len, LE);
    q.text = S(" \t\n");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_describe_req(&b, LE, &q), CN_E_INVALID);
    FX(blank, "000102030405060708090a0b0c0d0e0f 0100000000000000 00000000 0000 02000000 \" \n\"");
    CN_CHECK_EQ(dec_describe(blank, blank_len, LE), CN_E_PROTOCOL);
    FX(empty, "000102030405060708090a0b0c0d0e0f 0100000000000000 00000000 0000 00000000");
    CN_CHECK_EQ(dec_describe(empty, empty_len, LE), CN_E_PROTOCOL);

    FX(note, "0100000000000000 01000000 0300 \"ann\" 0900000000000000 04000000 \"why?\"");
    cn_scribe_note_t nt = { 1, 1, S("ann"), 9, S("why?") };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_note_resp(&b, LE, &nt), CN_OK);
    CN_CHECK(b.len == note_len && memcmp(b.data, note, note_len) == 0);
    fx_truncation(dec_note, note, note_len, LE);
    note[8] = 0; /* revision 0 */
    CN_CHECK_EQ(dec_note(note, note_len, LE), CN_E_PROTOCOL);

    uint64_t changes[3] = { 1, 2, 3 };
    cn_scribe_id_t repo = id_from(0);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_notes_req(&b, BE, &repo, changes, 3), CN_OK);
    fx_truncation(dec_notes_req, b.data, b.len, BE);
    cn_scribe_notes_req_t nq;
    CN_CHECK_EQ(cn_scribe_dec_notes_req(b.data, b.len, BE, &nq), CN_OK);
    CN_CHECK_EQ(cn_scribe_notes_change(&nq, 2), 3);
    const cn_scribe_note_t *opt[3] = { &nt, NULL, &nt };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_notes_resp(&b, LE, opt, 3), CN_OK);
    fx_truncation(dec_notes_resp, b.data, b.len, LE);
    cn_scribe_rows_t rows;
    uint32_t count;
    CN_CHECK_EQ(cn_scribe_dec_notes_resp(b.data, b.len, LE, &rows, &count), CN_OK);
    bool present;
    cn_scribe_note_t dn;
    CN_CHECK(cn_scribe_next_note_opt(&rows, &present, &dn) && present);
    CN_CHECK(cn_scribe_next_note_opt(&rows, &present, &dn) && !present);

    cn_scribe_note_t hist[2] = { nt, nt };
    hist[1].revision = 2;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_history_resp(&b, LE, hist, 2, true), CN_OK);
    fx_truncation(dec_history_resp, b.data, b.len, LE);
    hist[1].revision = 1; /* not oldest first */
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_history_resp(&b, LE, hist, 2, true), CN_E_INVALID);
    cn_buf_free(&b);
}

/* ---- codec 2 goldens: the same layouts, every integer big-endian ----------------- */
static void check_golden(const cn_buf_t *b, const char *text)
{
    FX(g, text);
    CN_CHECK_EQ(b->len, g_len);
    CN_CHECK(b->len == g_len && memcmp(b->data, g, g_len) == 0);
}

static void test_codec2_goldens(void)
{
    cn_buf_t b = { 0 };
    cn_scribe_submit_req_t q = { .repo = id_from(0x00),
                                 .incarnation = id_from(0x20),
                                 .operation = id_from(0x30),
                                 .branch = id_from(0x10),
                                 .workspace = id_from(0x40),
                                 .base = 6,
                                 .keep_locks = true,
                                 .author = S("ann"),
                                 .message = S("add a") };
    cn_digest_parse("d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c", 64,
                    &q.changeset);
    CN_CHECK_EQ(cn_scribe_enc_submit_req(&b, BE, &q), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f 202122232425262728292a2b2c2d2e2f"
                     " 303132333435363738393a3b3c3d3e3f 101112131415161718191a1b1c1d1e1f"
                     " 404142434445464748494a4b4c4d4e4f 0000000000000006"
                     " d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c 01"
                     " 0003 \"ann\" 00000005 \"add a\"");

    cn_scribe_submit_outcome_t o = { .operation = id_from(0x30), .outcome = 1, .change = 1 };
    cn_digest_parse("54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca", 64,
                    &o.commit);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, BE, &o, NULL), CN_OK);
    check_golden(&b, "303132333435363738393a3b3c3d3e3f 01 0000000000000001"
                     " 54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca");

    cn_scribe_str_t path = S("a.txt");
    cn_scribe_submit_outcome_t rj = { .operation = id_from(0x30),
                                      .outcome = 2,
                                      .code = 202,
                                      .head = 9,
                                      .detail = S("late"),
                                      .path_count = 1 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, BE, &rj, &path), CN_OK);
    check_golden(&b, "303132333435363738393a3b3c3d3e3f 02 00ca 0000000000000009 0004 \"late\""
                     " 00000001 0005 \"a.txt\"");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, LE, &rj, &path), CN_OK);
    check_golden(&b, "303132333435363738393a3b3c3d3e3f 02 ca00 0900000000000000 0400 \"late\""
                     " 01000000 0500 \"a.txt\"");

    cn_scribe_tree_page_req_t tq = { .repo = id_from(0),
                                     .branch = id_from(0x10),
                                     .change = 1,
                                     .prefix = S("art"),
                                     .limit = 100,
                                     .has_after = true,
                                     .after = S("art/a.png") };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_tree_page_req(&b, BE, &tq), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f 101112131415161718191a1b1c1d1e1f"
                     " 0000000000000001 0003 \"art\" 00000064 01 0009 \"art/a.png\"");

    cn_scribe_objref_t ref = { CN_REPOS_MANIFEST, { { 0 } } };
    cn_digest_parse("8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1", 64,
                    &ref.id);
    cn_scribe_objs_req_t gq = { .repo = id_from(0), .count = 1 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_objs_req(&b, BE, CN_SCRIBE_OP_GET_OBJECTS, &gq, &ref), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f 00000001 02"
                     " 8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1");

    cn_scribe_put_item_t pi = { CN_REPOS_MANIFEST, ref.id, 49 };
    cn_scribe_id_t repo = id_from(0);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_put_req(&b, BE, &repo, &pi, 1), CN_OK);
    check_golden(
        &b, "000102030405060708090a0b0c0d0e0f 00000001 02"
            " 8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1 0000000000000031");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_put_req(&b, LE, &repo, &pi, 1), CN_OK);
    check_golden(
        &b, "000102030405060708090a0b0c0d0e0f 01000000 02"
            " 8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1 3100000000000000");

    bool present[10] = { true, false, true, false, false, false, false, false, false, true };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_bits_resp(&b, BE, present, 10), CN_OK);
    check_golden(&b, "00 00 00 0a 05 02");

    cn_scribe_note_t nt = { 1, 1, S("ann"), 9, S("why?") };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_note_resp(&b, BE, &nt), CN_OK);
    check_golden(&b, "0000000000000001 00000001 0003 \"ann\" 0000000000000009 00000004 \"why?\"");

    cn_scribe_repo_info_t ri = sample_info();
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_info_resp(&b, BE, &ri), CN_OK);
    check_golden(&b,
                 "000102030405060708090a0b0c0d0e0f 0003 \"art\" 101112131415161718191a1b1c1d1e1f"
                 " 0000000000000007 202122232425262728292a2b2c2d2e2f 0000018bcfe56800 01");

    cn_scribe_str_t empty = { NULL, 0 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_discover(&b, BE, CN_SCRIBE_ROLE_STORAGE, false, &empty, 1), CN_OK);
    check_golden(&b, "01 00 00 00 00 01 00 00");

    cn_scribe_outcome_req_t oq = { id_from(0), id_from(0x30) };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_outcome_req(&b, BE, &oq), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f 303132333435363738393a3b3c3d3e3f");

    uint64_t ch[2] = { 1, 2 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_notes_req(&b, BE, &repo, ch, 2), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f 00000002 0000000000000001 0000000000000002");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_notes_req(&b, LE, &repo, ch, 2), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f 02000000 0100000000000000 0200000000000000");

    cn_scribe_history_req_t hq = { id_from(0), 1, 0, 1024 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_history_req(&b, BE, &hq), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f 0000000000000001 00000000 00000400");

    cn_scribe_id_t u = id_from(0);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_u64_resp(&b, BE, 4096), CN_OK);
    check_golden(&b, "0000000000001000");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_repo_id_req(&b, BE, &u), CN_OK);
    check_golden(&b, "000102030405060708090a0b0c0d0e0f");

    cn_scribe_log_row_t row = { .change = 1,
                                .branch = id_from(0x10),
                                .branch_name = S("main"),
                                .path = S("a.txt"),
                                .event = CN_REPOS_ADD,
                                .author = S("ann"),
                                .message = S("add a"),
                                .time_ms = 1 };
    cn_digest_parse("54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca", 64,
                    &row.commit);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, LE, false, &row, 1), CN_OK);
    check_golden(
        &b,
        "01000000 0100000000000000 54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca"
        " 101112131415161718191a1b1c1d1e1f 0400 \"main\" 0000000000000000 0500 \"a.txt\" 01"
        " 0300 \"ann\" 05000000 \"add a\" 0100000000000000 00 00");
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, BE, false, &row, 1), CN_OK);
    check_golden(
        &b,
        "00000001 0000000000000001 54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca"
        " 101112131415161718191a1b1c1d1e1f 0004 \"main\" 0000000000000000 0005 \"a.txt\" 01"
        " 0003 \"ann\" 00000005 \"add a\" 0000000000000001 00 00");

    cn_scribe_changed_row_t crow = {
        .path = S("a.txt"), .change = 1, .present = true, .manifest = ref.id, .size = 5, .mode = 0
    };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_changed_resp(&b, BE, &crow, 1, false, empty), CN_OK);
    check_golden(
        &b,
        "00000001 0005 \"a.txt\" 0000000000000001 01"
        " 8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1 0000000000000005 00 00");
    cn_buf_free(&b);
}

/* ---- exact request bounds, both codecs ----------------------------------------------- */
static uint8_t big_path[CN_SCRIBE_MAX_PATH], big_msg[CN_SCRIBE_MAX_MESSAGE],
    big_tok[CN_SCRIBE_MAX_TOKEN];

typedef cn_err_t (*dec_op_fn)(const uint8_t *p, size_t n, cn_scribe_codec_t c);

static cn_err_t dec_presence(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_objs_req_t q;
    return cn_scribe_dec_objs_req(p, n, c, CN_SCRIBE_OP_PRESENCE, &q);
}
static cn_err_t dec_instance_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_instance_req_t q;
    return cn_scribe_dec_instance_req(p, n, c, &q);
}
static cn_err_t dec_repo_id(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_id_t q;
    return cn_scribe_dec_repo_id_req(p, n, c, &q);
}
static cn_err_t dec_history_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_history_req_t q;
    return cn_scribe_dec_history_req(p, n, c, &q);
}

static void max_request(uint16_t op, cn_scribe_codec_t c, cn_buf_t *b)
{
    cn_scribe_str_t path = { big_path, CN_SCRIBE_MAX_PATH };
    cn_scribe_str_t tok = { big_tok, CN_SCRIBE_MAX_TOKEN };
    cn_scribe_str_t name = { big_path, CN_SCRIBE_MAX_REPO_NAME };
    cn_scribe_str_t author = { big_path, CN_SCRIBE_MAX_AUTHOR };
    cn_scribe_str_t msg = { big_msg, CN_SCRIBE_MAX_MESSAGE };
    cn_scribe_id_t id = id_from(1);
    static cn_scribe_objref_t refs[CN_SCRIBE_MAX_BATCH];
    static cn_scribe_put_item_t items[CN_SCRIBE_MAX_BATCH];
    static uint64_t changes[CN_SCRIBE_MAX_PAGE];
    for (int i = 0; i < CN_SCRIBE_MAX_BATCH; i++) {
        refs[i].kind = 1;
        items[i] = (cn_scribe_put_item_t){ 1, { { 0 } }, 100 };
    }
    cn_buf_reset(b);
    switch (op) {
    case CN_SCRIBE_OP_DISCOVER: break;
    case CN_SCRIBE_OP_REPO_CREATE: {
        cn_scribe_repo_create_req_t q = { name, 1 };
        cn_scribe_enc_repo_create_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_REPO_INFO: {
        cn_scribe_repo_info_req_t q = { .by = 2, .name = name };
        cn_scribe_enc_repo_info_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_REPO_LIST: {
        cn_scribe_repo_list_req_t q = { 1, true, tok };
        cn_scribe_enc_repo_list_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_PUT_OBJECTS:
        cn_scribe_enc_put_req(b, c, &id, items, CN_SCRIBE_MAX_BATCH);
        break;
    case CN_SCRIBE_OP_GET_OBJECTS:
    case CN_SCRIBE_OP_PRESENCE:
    case CN_SCRIBE_OP_PIN_OBJECTS: {
        cn_scribe_objs_req_t q = { id, id, id, CN_SCRIBE_MAX_BATCH, NULL };
        cn_scribe_enc_objs_req(b, c, op, &q, refs);
        break;
    }
    case CN_SCRIBE_OP_SUBMIT: {
        cn_scribe_submit_req_t q = { id, id, id, id, id, 1, { { 0 } }, true, author, msg };
        cn_scribe_enc_submit_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_OPERATION_OUTCOME: {
        cn_scribe_outcome_req_t q = { id, id };
        cn_scribe_enc_outcome_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_TREE_PAGE: {
        cn_scribe_tree_page_req_t q = { id, id, 1, path, 1, true, path };
        cn_scribe_enc_tree_page_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_CHANGED_PATHS: {
        cn_scribe_changed_req_t q = { id, id, 1, 2, path, 1, true, tok };
        cn_scribe_enc_changed_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_LOG: {
        cn_scribe_log_req_t q = { id, id, true, path, true, true, true, 1, true, 2, true, path, 1 };
        cn_scribe_enc_log_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_INSTANCE_STATUS: {
        cn_scribe_instance_req_t q = { true, id };
        cn_scribe_enc_instance_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_REPO_USAGE: cn_scribe_enc_repo_id_req(b, c, &id); break;
    case CN_SCRIBE_OP_DESCRIBE_CHANGE: {
        cn_scribe_describe_req_t q = { id, 1, 1, author, msg };
        cn_scribe_enc_describe_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_CHANGE_NOTES:
        cn_scribe_enc_notes_req(b, c, &id, changes, CN_SCRIBE_MAX_PAGE);
        break;
    case CN_SCRIBE_OP_CHANGE_NOTE_HISTORY: {
        cn_scribe_history_req_t q = { id, 1, 1, 1 };
        cn_scribe_enc_history_req(b, c, &q);
        break;
    }
    default: break;
    }
}

static cn_err_t dec_empty(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    (void)p;
    (void)c;
    return n == 0 ? CN_OK : CN_E_PROTOCOL;
}

static void test_request_bounds(void)
{
    memset(big_path, 'p', sizeof big_path);
    memset(big_msg, 'm', sizeof big_msg);
    memset(big_tok, 't', sizeof big_tok);
    static const struct {
        uint16_t op;
        dec_op_fn dec;
        uint32_t doc;
    } ops[] = {
        { 2, dec_empty, 0 },
        { 3, dec_repo_create, 196 },
        { 4, dec_repo_info_req, 196 },
        { 5, dec_repo_list_req, 8263 },
        { 6, dec_put, 335892 },
        { 7, dec_get, 270356 },
        { 8, dec_presence, 270356 },
        { 9, dec_submit, 65919 },
        { 10, dec_outcome_req, 32 },
        { 11, dec_tree_req, 16433 },
        { 13, dec_changed_req, 16505 },
        { 15, dec_log_req, 16446 },
        { 26, dec_instance_req, 17 },
        { 38, dec_repo_id, 16 },
        { 39, dec_describe, 65826 },
        { 40, dec_notes_req, 32788 },
        { 41, dec_history_req, 32 },
        { 42, dec_pin, 270388 },
    };
    cn_buf_t b = { 0 };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        uint32_t bound = 0;
        CN_CHECK(cn_scribe_request_bound(ops[i].op, false, &bound));
        CN_CHECK_EQ(bound, ops[i].doc);
        CN_CHECK(bound < 16u * 1024 * 1024);
        for (int c = 1; c <= 2; c++) {
            max_request(ops[i].op, (cn_scribe_codec_t)c, &b);
            if (b.len != bound)
                fprintf(stderr, "# op %u codec %d: maximal encoding %zu, bound %u\n", ops[i].op, c,
                        b.len, bound);
            CN_CHECK_EQ(b.len, bound);
            CN_CHECK_EQ(ops[i].dec(b.data, b.len, (cn_scribe_codec_t)c), CN_OK);
        }
    }
    CN_CHECK(!cn_scribe_request_bound(37, false, NULL)); /* unassigned: no layout */
    CN_CHECK(!cn_scribe_request_bound(0, false, NULL));
    /* One more byte in any limited field is refused: path 8193 in tree_page. */
    cn_scribe_tree_page_req_t q = { .prefix = { big_path, CN_SCRIBE_MAX_PATH + 1 } };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_tree_page_req(&b, LE, &q), CN_E_INVALID);
    cn_buf_free(&b);
}

static void test_strings(void)
{
    /* strict UTF-8 in str16: overlong, surrogate, above U+10FFFF, truncated */
    static const char *const bad[] = { "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82",
                                       "\xFF" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t p[16];
        size_t n = strlen(bad[i]);
        p[0] = (uint8_t)n;
        p[1] = 0;
        memcpy(p + 2, bad[i], n);
        cn_scribe_rd_t r = cn_scribe_rd_init(p, n + 2, LE);
        cn_scribe_str_t s;
        cn_scribe_rd_str16(&r, 100, &s);
        CN_CHECK(cn_scribe_rd_end(&r) != CN_OK);
        /* bytes16 takes them as they are */
        r = cn_scribe_rd_init(p, n + 2, LE);
        cn_scribe_rd_bytes16(&r, 100, &s);
        CN_CHECK_EQ(cn_scribe_rd_end(&r), CN_OK);
    }
    uint8_t ok[] = { 4, 0, 0xE2, 0x82, 0xAC, 'x' };
    cn_scribe_rd_t r = cn_scribe_rd_init(ok, sizeof ok, LE);
    cn_scribe_str_t s;
    cn_scribe_rd_str16(&r, 4, &s);
    CN_CHECK_EQ(cn_scribe_rd_end(&r), CN_OK);
    r = cn_scribe_rd_init(ok, sizeof ok, LE);
    cn_scribe_rd_str16(&r, 3, &s); /* over its limit */
    CN_CHECK(cn_scribe_rd_end(&r) != CN_OK);
}

CN_TEST_MAIN(CN_TEST(test_frame_header), CN_TEST(test_hello), CN_TEST(test_hello_v4),
             CN_TEST(test_hello_ok), CN_TEST(test_error_payload), CN_TEST(test_error_codes),
             CN_TEST(test_opcodes), CN_TEST(test_discover), CN_TEST(test_repo_layouts),
             CN_TEST(test_objects), CN_TEST(test_submit), CN_TEST(test_tree_page),
             CN_TEST(test_log), CN_TEST(test_notes), CN_TEST(test_codec2_goldens),
             CN_TEST(test_request_bounds), CN_TEST(test_strings))
