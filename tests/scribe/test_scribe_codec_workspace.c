/* Scribe workspace layouts (opcodes 12, 34, 35, 36): every layout encoded
 * in both codecs against the hand-written fixtures of
 * workspace_fixtures.txt and decoded back field by field; every truncation
 * and a trailing byte refused; bad tags, repeated tag names, more than 16
 * tags, unsorted row tags, unsorted rows, more than 128 rows, a `more`
 * without rows, a stray cursor and zero ids refused; the exact bounds.
 * Usage: test_scribe_codec_workspace FIXTURE_FILE */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

#define LE CN_SCRIBE_CODEC_LE
#define CODEC(c) ((cn_scribe_codec_t)(c))
#define SINCE 1700000000000ull

static cn_err_t d_register(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_ws_register_req_t q;
    return cn_scribe_dec_ws_register_req(p, n, c, &q);
}
static cn_err_t d_row(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_ws_row_t r;
    return cn_scribe_dec_ws_row_resp(p, n, c, &r);
}
static cn_err_t d_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_ws_list_req_t q;
    return cn_scribe_dec_ws_list_req(p, n, c, &q);
}
static cn_err_t d_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_rows_t rows;
    uint32_t count;
    bool more;
    return cn_scribe_dec_ws_list_resp(p, n, c, &rows, &count, &more);
}
static cn_err_t d_remove(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_ws_remove_req_t q;
    return cn_scribe_dec_ws_remove_req(p, n, c, &q);
}
static cn_err_t d_removal(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_ws_removal_t o;
    return cn_scribe_dec_ws_removal(p, n, c, &o);
}
static cn_err_t d_outcome_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_outcome_req_t q;
    return cn_scribe_dec_outcome_req(p, n, c, &q);
}

static void test_register(void)
{
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_ws_register_req_t q = { .repo = fx_sid(0x00),
                                          .workspace = fx_sid(0x40),
                                          .branch = fx_sid(0x10),
                                          .label = cn_scribe_cstr("h:/w"),
                                          .tag_count = 2,
                                          .tags = { cn_scribe_cstr("os=linux"),
                                                    cn_scribe_cstr("gpu") } };
        CN_CHECK_EQ(cn_scribe_enc_ws_register_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("ws_register_req", c, &b, d_register);
        cn_scribe_ws_register_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_ws_register_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(fx_str_is(d.label, "h:/w") && d.tag_count == 2 &&
                 fx_str_is(d.tags[0], "os=linux") && fx_str_is(d.tags[1], "gpu") &&
                 !memcmp(d.branch.b, q.branch.b, 16));

        cn_buf_reset(&b);
        cn_scribe_ws_row_t row = { .workspace = fx_sid(0x40),
                                   .branch = fx_sid(0x10),
                                   .label = cn_scribe_cstr("h:/w"),
                                   .tag_count = 2,
                                   .tags = { cn_scribe_cstr("gpu"), cn_scribe_cstr("os=linux") },
                                   .created_ms = SINCE };
        CN_CHECK_EQ(cn_scribe_enc_ws_row_resp(&b, CODEC(c), &row), CN_OK);
        fx_gold("ws_row_resp", c, &b, d_row);
        cn_scribe_ws_row_t got;
        CN_CHECK_EQ(cn_scribe_dec_ws_row_resp(b.data, b.len, CODEC(c), &got), CN_OK);
        CN_CHECK(!got.has_owner && !got.has_locks && got.created_ms == SINCE &&
                 got.tag_count == 2 && fx_str_is(got.tags[1], "os=linux"));
        cn_buf_free(&b);
    }
}

static void test_list(void)
{
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_ws_list_req_t q = { .repo = fx_sid(0x00),
                                      .scope = 1,
                                      .has_cursor = true,
                                      .cursor = fx_sid(0x40),
                                      .limit = 128 };
        CN_CHECK_EQ(cn_scribe_enc_ws_list_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("ws_list_req", c, &b, d_list_req);
        cn_scribe_ws_list_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_ws_list_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.scope == 1 && d.has_cursor && d.limit == 128 &&
                 !memcmp(d.cursor.b, q.cursor.b, 16));
        cn_buf_reset(&b);
        cn_scribe_ws_list_req_t own = { .repo = fx_sid(0x00), .cursor = fx_sid(0x40) };
        CN_CHECK_EQ(cn_scribe_enc_ws_list_req(&b, CODEC(c), &own), CN_OK); /* cursor unused */
        fx_gold("ws_list_req_own", c, &b, d_list_req);

        cn_buf_reset(&b);
        cn_scribe_ws_row_t row = { .workspace = fx_sid(0x40),
                                   .branch = fx_sid(0x10),
                                   .has_owner = true,
                                   .owner = fx_sid(0x50),
                                   .created_ms = SINCE,
                                   .has_locks = true };
        CN_CHECK_EQ(cn_scribe_enc_ws_list_resp(&b, CODEC(c), &row, 1, true), CN_OK);
        fx_gold("ws_list_resp", c, &b, d_list_resp);
        cn_scribe_rows_t rows;
        uint32_t count;
        bool more;
        CN_CHECK_EQ(cn_scribe_dec_ws_list_resp(b.data, b.len, CODEC(c), &rows, &count, &more),
                    CN_OK);
        cn_scribe_ws_row_t got;
        CN_CHECK(count == 1 && more && cn_scribe_next_ws_row(&rows, &got));
        CN_CHECK(got.has_owner && got.has_locks && !memcmp(got.owner.b, row.owner.b, 16) &&
                 got.label.len == 0 && got.tag_count == 0);
        CN_CHECK(!cn_scribe_next_ws_row(&rows, &got));
        cn_buf_free(&b);
    }
}

static void test_remove(void)
{
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_ws_remove_req_t q = { fx_sid(0x00), fx_sid(0x20), fx_sid(0x30), fx_sid(0x40) };
        CN_CHECK_EQ(cn_scribe_enc_ws_remove_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("ws_remove_req", c, &b, d_remove);
        cn_scribe_ws_remove_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_ws_remove_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(!memcmp(&d, &q, sizeof d));

        cn_buf_reset(&b);
        cn_scribe_ws_removal_t o = { .operation = fx_sid(0x30), .retired_ms = SINCE };
        CN_CHECK_EQ(cn_scribe_enc_ws_removal(&b, CODEC(c), &o), CN_OK);
        fx_gold("ws_removal_retired", c, &b, d_removal);
        cn_scribe_ws_removal_t got;
        CN_CHECK_EQ(cn_scribe_dec_ws_removal(b.data, b.len, CODEC(c), &got), CN_OK);
        CN_CHECK(got.code == 0 && got.retired_ms == SINCE);

        cn_buf_reset(&b);
        o = (cn_scribe_ws_removal_t){ .operation = fx_sid(0x30),
                                      .code = CN_SCRIBE_E_LOCK_HELD,
                                      .detail = cn_scribe_cstr("held") };
        CN_CHECK_EQ(cn_scribe_enc_ws_removal(&b, CODEC(c), &o), CN_OK);
        fx_gold("ws_removal_held", c, &b, d_removal);
        CN_CHECK_EQ(cn_scribe_dec_ws_removal(b.data, b.len, CODEC(c), &got), CN_OK);
        CN_CHECK(got.code == CN_SCRIBE_E_LOCK_HELD && fx_str_is(got.detail, "held"));

        cn_buf_reset(&b);
        cn_scribe_outcome_req_t oq = { fx_sid(0x00), fx_sid(0x30) };
        CN_CHECK_EQ(cn_scribe_enc_outcome_req(&b, CODEC(c), &oq), CN_OK);
        fx_gold("ws_removal_outcome_req", c, &b, d_outcome_req);
        cn_buf_free(&b);
    }
}

static void test_tags(void)
{
    CN_CHECK(cn_scribe_ws_tag_ok(cn_scribe_cstr("gpu")));
    CN_CHECK(cn_scribe_ws_tag_ok(cn_scribe_cstr("9.x_y-z=A:b/c")));
    CN_CHECK(cn_scribe_ws_tag_ok(cn_scribe_cstr("os=")));
    const char *bad[] = {
        "", "GPU", "-a", ".a", "_a", "=v", "a b", "a=b c", "a\xc3\xa9", "a=\x7f"
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CN_CHECK(!cn_scribe_ws_tag_ok(cn_scribe_cstr(bad[i])));
    char long_tag[66];
    memset(long_tag, 'a', 65);
    long_tag[65] = 0;
    CN_CHECK(!cn_scribe_ws_tag_ok(cn_scribe_cstr(long_tag)));
    long_tag[64] = 0;
    CN_CHECK(cn_scribe_ws_tag_ok(cn_scribe_cstr(long_tag)));
}

static void test_refusals(void)
{
    cn_buf_t b = { 0 };
    cn_scribe_ws_register_req_t q = { .repo = fx_sid(0x00),
                                      .workspace = fx_sid(0x40),
                                      .branch = fx_sid(0x10),
                                      .tag_count = 2,
                                      .tags = { cn_scribe_cstr("os=a"), cn_scribe_cstr("os=b") } };
    /* a repeated name, a bad tag, 17 tags, a zero workspace */
    CN_CHECK_EQ(cn_scribe_enc_ws_register_req(&b, LE, &q), CN_E_INVALID);
    q.tags[1] = cn_scribe_cstr("Bad");
    CN_CHECK_EQ(cn_scribe_enc_ws_register_req(&b, LE, &q), CN_E_INVALID);
    q.tag_count = 17;
    CN_CHECK_EQ(cn_scribe_enc_ws_register_req(&b, LE, &q), CN_E_INVALID);
    q.tag_count = 0;
    memset(q.workspace.b, 0, 16);
    CN_CHECK_EQ(cn_scribe_enc_ws_register_req(&b, LE, &q), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0u);
    /* decoders: the same refusals from bytes */
    const char *ids = "000102030405060708090a0b0c0d0e0f 404142434445464748494a4b4c4d4e4f "
                      "101112131415161718191a1b1c1d1e1f 0000 ";
    char text[1024];
    snprintf(text, sizeof text, "%s 0200 0400 \"os=a\" 0400 \"os=b\"", ids);
    FX(dup, text);
    CN_CHECK(d_register(dup, dup_len, LE) < 0);
    snprintf(text, sizeof text, "%s 0100 0300 \"GPU\"", ids);
    FX(upper, text);
    CN_CHECK(d_register(upper, upper_len, LE) < 0);
    snprintf(text, sizeof text, "%s 1100", ids); /* 17 tags announced */
    FX(many, text);
    CN_CHECK(d_register(many, many_len, LE) < 0);
    FX(zero_ws, "000102030405060708090a0b0c0d0e0f 00000000000000000000000000000000 "
                "101112131415161718191a1b1c1d1e1f 0000 0000");
    CN_CHECK(d_register(zero_ws, zero_ws_len, LE) < 0);
    /* a row whose tags are not ascending */
    FX(unsorted, "404142434445464748494a4b4c4d4e4f 101112131415161718191a1b1c1d1e1f 00 0000"
                 " 0200 0800 \"os=linux\" 0300 \"gpu\" 0068e5cf8b010000 00");
    CN_CHECK(d_row(unsorted, unsorted_len, LE) < 0);
    /* list requests: scope 2, a cursor without has-cursor */
    FX(scope2, "000102030405060708090a0b0c0d0e0f 02 00 00000000000000000000000000000000 00000000");
    CN_CHECK(d_list_req(scope2, scope2_len, LE) < 0);
    FX(stray, "000102030405060708090a0b0c0d0e0f 00 00 01000000000000000000000000000000 00000000");
    CN_CHECK(d_list_req(stray, stray_len, LE) < 0);
    /* list responses: more without rows, 129 rows announced, rows out of order */
    FX(more0, "00000000 01");
    CN_CHECK(d_list_resp(more0, more0_len, LE) < 0);
    CN_CHECK_EQ(cn_scribe_enc_ws_list_resp(&b, LE, NULL, 0, true), CN_E_INVALID);
    FX(over, "81000000");
    CN_CHECK(d_list_resp(over, over_len, LE) < 0);
    cn_scribe_ws_row_t rows[2] = { { .workspace = fx_sid(0x41) }, { .workspace = fx_sid(0x40) } };
    CN_CHECK_EQ(cn_scribe_enc_ws_list_resp(&b, LE, rows, 2, false), CN_E_INVALID);
    FX(order, "02000000"
              " 4142434445464748494a4b4c4d4e4f50 101112131415161718191a1b1c1d1e1f 00 0000 0000"
              " 0000000000000000 00"
              " 404142434445464748494a4b4c4d4e4f 101112131415161718191a1b1c1d1e1f 00 0000 0000"
              " 0000000000000000 00 00");
    CN_CHECK(d_list_resp(order, order_len, LE) < 0);
    /* removal: zero operation, zero workspace */
    FX(zero_op, "000102030405060708090a0b0c0d0e0f 202122232425262728292a2b2c2d2e2f"
                " 00000000000000000000000000000000 404142434445464748494a4b4c4d4e4f");
    CN_CHECK(d_remove(zero_op, zero_op_len, LE) < 0);
    cn_scribe_ws_remove_req_t rq = { fx_sid(0x00), fx_sid(0x20), fx_sid(0x30), { { 0 } } };
    CN_CHECK_EQ(cn_scribe_enc_ws_remove_req(&b, LE, &rq), CN_E_INVALID);
    cn_buf_free(&b);
}

/* The maximal registration is its documented bound; 34-36 are the
 * specification's fixed sizes. */
static void test_bounds(void)
{
    uint32_t bound = 0;
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_WORKSPACE_REGISTER, false, &bound));
    CN_CHECK_EQ(bound, 1364u);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_WORKSPACE_LIST, false, &bound));
    CN_CHECK_EQ(bound, 38u);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_WORKSPACE_REMOVE, false, &bound));
    CN_CHECK_EQ(bound, 64u);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME, false, &bound));
    CN_CHECK_EQ(bound, 32u);
    char label[257], tags[16][65];
    memset(label, 'l', 256);
    label[256] = 0;
    cn_scribe_ws_register_req_t q = { .workspace = fx_sid(0x40),
                                      .label = cn_scribe_cstr(label),
                                      .tag_count = 16 };
    for (int i = 0; i < 16; i++) {
        memset(tags[i], 'v', 64);
        tags[i][0] = (char)('a' + i);
        tags[i][1] = '=';
        tags[i][64] = 0;
        q.tags[i] = cn_scribe_cstr(tags[i]);
    }
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_ws_register_req(&b, CODEC(c), &q), CN_OK);
        CN_CHECK_EQ(b.len, 1364u);
        CN_CHECK_EQ(d_register(b.data, b.len, CODEC(c)), CN_OK);
        cn_buf_reset(&b);
        cn_scribe_ws_list_req_t lq = { .limit = 1 };
        CN_CHECK_EQ(cn_scribe_enc_ws_list_req(&b, CODEC(c), &lq), CN_OK);
        CN_CHECK_EQ(b.len, 38u);
        cn_buf_free(&b);
    }
    CN_CHECK_STR(cn_scribe_op_name(12), "workspace_register");
    CN_CHECK_STR(cn_scribe_op_name(36), "workspace_remove_outcome");
    CN_CHECK_STR(cn_scribe_errcode_name(109), "workspace_retired");
}

static const cn_test_case_t cases[] = {
    CN_TEST(test_register), CN_TEST(test_list),     CN_TEST(test_remove),
    CN_TEST(test_tags),     CN_TEST(test_refusals), CN_TEST(test_bounds),
};

int main(int argc, char **argv)
{
    return fx_main(argc, argv, "tests/scribe/workspace_fixtures.txt", cases,
                   sizeof cases / sizeof cases[0]);
}
