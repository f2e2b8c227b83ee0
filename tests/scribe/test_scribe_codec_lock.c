/* Scribe lock layouts (opcodes 14, 16, 17, 29): every layout encoded in
 * both codecs against the hand-written fixtures of lock_fixtures.txt and
 * decoded back field by field; every truncation and a trailing byte
 * refused; empty and oversize path lists, more than 8 MiB of paths, a
 * `more` without rows and unsorted rows refused; the exact request bounds.
 * Usage: test_scribe_codec_lock FIXTURE_FILE */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

#define LE CN_SCRIBE_CODEC_LE
#define BE CN_SCRIBE_CODEC_BE
#define CODEC(c) ((cn_scribe_codec_t)(c))
#define SINCE 1700000000000ull

static cn_err_t d_acquire(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_lock_req_t q;
    return cn_scribe_dec_lock_req(p, n, c, CN_SCRIBE_OP_LOCK_ACQUIRE, &q);
}
static cn_err_t d_release(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_lock_req_t q;
    return cn_scribe_dec_lock_req(p, n, c, CN_SCRIBE_OP_LOCK_RELEASE, &q);
}
static cn_err_t d_count(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    uint32_t v;
    return cn_scribe_dec_u32_resp(p, n, c, &v);
}
static cn_err_t d_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_lock_list_req_t q;
    return cn_scribe_dec_lock_list_req(p, n, c, &q);
}
static cn_err_t d_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_rows_t rows;
    uint32_t count;
    bool more;
    return cn_scribe_dec_lock_list_resp(p, n, c, &rows, &count, &more);
}
static cn_err_t d_policy(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    uint64_t change;
    cn_scribe_str_t text;
    return cn_scribe_dec_lock_policy_resp(p, n, c, &change, &text);
}

static void test_acquire_release(void)
{
    cn_scribe_str_t paths[2] = { cn_scribe_cstr("art/a.png"), cn_scribe_cstr("art/b.png") };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_lock_req_t q = {
            .repo = fx_sid(0x00), .workspace = fx_sid(0x40), .branch = fx_sid(0x10), .count = 2
        };
        CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, CODEC(c), CN_SCRIBE_OP_LOCK_ACQUIRE, &q, paths),
                    CN_OK);
        fx_gold("lock_acquire_req", c, &b, d_acquire);
        cn_scribe_lock_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_lock_req(b.data, b.len, CODEC(c), CN_SCRIBE_OP_LOCK_ACQUIRE, &d),
                    CN_OK);
        cn_scribe_str_t s;
        CN_CHECK(d.count == 2 && !memcmp(d.branch.b, q.branch.b, 16) &&
                 !memcmp(d.workspace.b, q.workspace.b, 16));
        CN_CHECK(cn_scribe_next_path(&d.paths, &s) && fx_str_is(s, "art/a.png"));
        CN_CHECK(cn_scribe_next_path(&d.paths, &s) && fx_str_is(s, "art/b.png"));
        CN_CHECK(!cn_scribe_next_path(&d.paths, &s));

        cn_buf_reset(&b);
        q.force = true;
        q.count = 1;
        CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, CODEC(c), CN_SCRIBE_OP_LOCK_RELEASE, &q, paths),
                    CN_OK);
        fx_gold("lock_release_req", c, &b, d_release);
        CN_CHECK_EQ(cn_scribe_dec_lock_req(b.data, b.len, CODEC(c), CN_SCRIBE_OP_LOCK_RELEASE, &d),
                    CN_OK);
        CN_CHECK(d.force && d.count == 1);

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_u32_resp(&b, CODEC(c), 2), CN_OK);
        fx_gold("lock_count_resp", c, &b, d_count);
        cn_buf_free(&b);
    }
}

static void test_list(void)
{
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_lock_list_req_t q = { .repo = fx_sid(0x00),
                                        .prefix = cn_scribe_cstr("art"),
                                        .has_owner = true,
                                        .owner = fx_sid(0x40),
                                        .has_after = true,
                                        .after = cn_scribe_cstr("art/a.png"),
                                        .limit = 100 };
        CN_CHECK_EQ(cn_scribe_enc_lock_list_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("lock_list_req", c, &b, d_list_req);
        cn_scribe_lock_list_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_lock_list_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(fx_str_is(d.prefix, "art") && d.has_owner && d.has_after &&
                 fx_str_is(d.after, "art/a.png") && d.limit == 100);

        cn_buf_reset(&b);
        cn_scribe_lock_list_req_t all = { .repo = fx_sid(0x00) };
        CN_CHECK_EQ(cn_scribe_enc_lock_list_req(&b, CODEC(c), &all), CN_OK);
        fx_gold("lock_list_req_all", c, &b, d_list_req);

        cn_buf_reset(&b);
        cn_scribe_lock_row_t row = { cn_scribe_cstr("art/b.png"), fx_sid(0x40),
                                     cn_scribe_cstr("ann"), fx_sid(0x10), SINCE };
        CN_CHECK_EQ(cn_scribe_enc_lock_list_resp(&b, CODEC(c), &row, 1, true), CN_OK);
        fx_gold("lock_list_resp", c, &b, d_list_resp);
        cn_scribe_rows_t rows;
        uint32_t count;
        bool more;
        CN_CHECK_EQ(cn_scribe_dec_lock_list_resp(b.data, b.len, CODEC(c), &rows, &count, &more),
                    CN_OK);
        cn_scribe_lock_row_t got;
        CN_CHECK(count == 1 && more && cn_scribe_next_lock_row(&rows, &got));
        CN_CHECK(fx_str_is(got.path, "art/b.png") && fx_str_is(got.principal, "ann") &&
                 got.since_ms == SINCE && !memcmp(got.branch.b, row.branch.b, 16));
        cn_buf_free(&b);
    }
}

static void test_policy(void)
{
    const char *utf8 = "version = 1\n\n[profiles.art]\nowner = \"Zo\xc3\xab\"\n";
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        CN_CHECK_EQ(
            cn_scribe_enc_lock_policy_resp(&b, CODEC(c), 0, cn_scribe_cstr("version = 1\n")),
            CN_OK);
        fx_gold("lock_policy_default", c, &b, d_policy);
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_lock_policy_resp(&b, CODEC(c), 7, cn_scribe_cstr(utf8)), CN_OK);
        fx_gold("lock_policy_utf8", c, &b, d_policy);
        uint64_t change;
        cn_scribe_str_t text;
        CN_CHECK_EQ(cn_scribe_dec_lock_policy_resp(b.data, b.len, CODEC(c), &change, &text), CN_OK);
        CN_CHECK(change == 7 && fx_str_is(text, utf8));
        cn_buf_free(&b);
    }
}

/* A path list of n paths of len bytes each (n <= 10,001). */
static cn_scribe_str_t *many(uint32_t n, size_t len, char **store)
{
    cn_scribe_str_t *v = calloc(n, sizeof *v);
    *store = malloc(len ? len : 1);
    memset(*store, 'a', len);
    for (uint32_t i = 0; i < n; i++)
        v[i] = (cn_scribe_str_t){ (const uint8_t *)*store, (uint32_t)len };
    return v;
}

static void test_refusals(void)
{
    static const uint8_t zeros[33]; /* repo, workspace, force false */
    cn_buf_t b = { 0 };
    cn_scribe_lock_req_t q = { .repo = fx_sid(0x00), .workspace = fx_sid(0x40) };
    char *store;
    cn_scribe_str_t *v = many(CN_SCRIBE_MAX_LOCK_PATHS + 1, 8, &store);
    /* no path; 10,001 paths; an empty path */
    CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, LE, CN_SCRIBE_OP_LOCK_ACQUIRE, &q, v), CN_E_INVALID);
    q.count = CN_SCRIBE_MAX_LOCK_PATHS + 1;
    CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, LE, CN_SCRIBE_OP_LOCK_ACQUIRE, &q, v), CN_E_INVALID);
    cn_scribe_str_t empty = { (const uint8_t *)"", 0 };
    q.count = 1;
    CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, LE, CN_SCRIBE_OP_LOCK_ACQUIRE, &q, &empty),
                CN_E_INVALID);
    CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, LE, CN_SCRIBE_OP_LOCK_LIST, &q, v), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0u);
    /* decoders: count 0, count over 10,000 (with the bytes there), an empty path */
    FX(zero, "000102030405060708090a0b0c0d0e0f 404142434445464748494a4b4c4d4e4f 00 00000000");
    cn_scribe_lock_req_t d;
    CN_CHECK(cn_scribe_dec_lock_req(zero, zero_len, LE, CN_SCRIBE_OP_LOCK_RELEASE, &d) < 0);
    FX(emptyp,
       "000102030405060708090a0b0c0d0e0f 404142434445464748494a4b4c4d4e4f 00 01000000 0000");
    CN_CHECK(cn_scribe_dec_lock_req(emptyp, emptyp_len, LE, CN_SCRIBE_OP_LOCK_RELEASE, &d) < 0);
    CN_CHECK(cn_scribe_dec_lock_req(emptyp, emptyp_len, LE, CN_SCRIBE_OP_LOCK_LIST, &d) < 0);
    cn_buf_t big = { 0 };
    cn_scribe_wr_t w = cn_scribe_wr_init(&big, LE);
    cn_scribe_wr_raw(&w, zeros, sizeof zeros);
    cn_scribe_wr_u32(&w, CN_SCRIBE_MAX_LOCK_PATHS + 1);
    for (uint32_t i = 0; i <= CN_SCRIBE_MAX_LOCK_PATHS; i++)
        cn_scribe_wr_str16(&w, v[i], CN_SCRIBE_MAX_PATH);
    CN_CHECK(cn_scribe_dec_lock_req(big.data, big.len, LE, CN_SCRIBE_OP_LOCK_RELEASE, &d) < 0);
    free(v);
    free(store);
    /* more than 8 MiB of paths: 1,025 paths of 8,192 bytes */
    v = many(1025, CN_SCRIBE_MAX_PATH, &store);
    q.count = 1025;
    CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, LE, CN_SCRIBE_OP_LOCK_RELEASE, &q, v), CN_E_INVALID);
    cn_buf_reset(&big);
    w = cn_scribe_wr_init(&big, LE);
    cn_scribe_wr_raw(&w, zeros, sizeof zeros);
    cn_scribe_wr_u32(&w, 1025);
    for (uint32_t i = 0; i < 1025; i++)
        cn_scribe_wr_str16(&w, v[i], CN_SCRIBE_MAX_PATH);
    CN_CHECK(cn_scribe_dec_lock_req(big.data, big.len, LE, CN_SCRIBE_OP_LOCK_RELEASE, &d) < 0);
    free(v);
    free(store);
    cn_buf_free(&big);
    /* responses: more without rows, rows out of order, a long principal */
    CN_CHECK_EQ(cn_scribe_enc_lock_list_resp(&b, LE, NULL, 0, true), CN_E_INVALID);
    FX(more0, "00000000 01");
    CN_CHECK(d_list_resp(more0, more0_len, LE) < 0);
    cn_scribe_lock_row_t rows[2] = {
        { cn_scribe_cstr("b"), fx_sid(0x40), cn_scribe_cstr(""), fx_sid(0x10), 1 },
        { cn_scribe_cstr("a"), fx_sid(0x40), cn_scribe_cstr(""), fx_sid(0x10), 1 },
    };
    CN_CHECK_EQ(cn_scribe_enc_lock_list_resp(&b, LE, rows, 2, false), CN_E_INVALID);
    cn_scribe_wr_t w2 = cn_scribe_wr_init(&b, LE);
    cn_scribe_wr_u32(&w2, 2);
    for (int i = 0; i < 2; i++) {
        cn_scribe_wr_str16(&w2, rows[i].path, 100);
        cn_scribe_wr_raw(&w2, rows[i].workspace.b, 16);
        cn_scribe_wr_str16(&w2, rows[i].principal, 100);
        cn_scribe_wr_raw(&w2, rows[i].branch.b, 16);
        cn_scribe_wr_u64(&w2, 1);
    }
    cn_scribe_wr_bool(&w2, false);
    CN_CHECK(d_list_resp(b.data, b.len, LE) < 0);
    cn_buf_free(&b);
}

/* The maximal acquire (10,000 paths, 8 MiB of them), release and listing
 * are exactly their documented bounds. */
static void test_bounds(void)
{
    uint32_t bound = 0;
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_LOCK_ACQUIRE, false, &bound));
    CN_CHECK_EQ(bound, 8408660u);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_LOCK_RELEASE, false, &bound));
    CN_CHECK_EQ(bound, 8408645u);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_LOCK_LIST, false, &bound));
    CN_CHECK_EQ(bound, 16426u);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_LOCK_POLICY, false, &bound));
    CN_CHECK_EQ(bound, 16u);
    /* 8,608 paths of 839 bytes and 1,392 of 838: 10,000 paths, 8 MiB */
    char *long_p = malloc(839);
    memset(long_p, 'x', 839);
    cn_scribe_str_t *v = calloc(CN_SCRIBE_MAX_LOCK_PATHS, sizeof *v);
    for (uint32_t i = 0; i < CN_SCRIBE_MAX_LOCK_PATHS; i++)
        v[i] = (cn_scribe_str_t){ (const uint8_t *)long_p, i < 8608 ? 839u : 838u };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        cn_scribe_lock_req_t q = { .count = CN_SCRIBE_MAX_LOCK_PATHS };
        CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, CODEC(c), CN_SCRIBE_OP_LOCK_ACQUIRE, &q, v), CN_OK);
        CN_CHECK_EQ(b.len, 8408660u);
        CN_CHECK_EQ(d_acquire(b.data, b.len, CODEC(c)), CN_OK);
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_lock_req(&b, CODEC(c), CN_SCRIBE_OP_LOCK_RELEASE, &q, v), CN_OK);
        CN_CHECK_EQ(b.len, 8408645u);
        CN_CHECK_EQ(d_release(b.data, b.len, CODEC(c)), CN_OK);
        cn_buf_free(&b);
    }
    free(v);
    free(long_p);
    CN_CHECK_STR(cn_scribe_op_name(14), "lock_acquire");
    CN_CHECK_STR(cn_scribe_op_name(29), "lock_policy");
    CN_CHECK_STR(cn_scribe_errcode_name(206), "lock_held");
}

static const cn_test_case_t cases[] = {
    CN_TEST(test_acquire_release), CN_TEST(test_list),   CN_TEST(test_policy),
    CN_TEST(test_refusals),        CN_TEST(test_bounds),
};

int main(int argc, char **argv)
{
    return fx_main(argc, argv, "tests/scribe/lock_fixtures.txt", cases,
                   sizeof cases / sizeof cases[0]);
}
