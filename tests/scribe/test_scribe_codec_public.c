/* Scribe public-read and mount layouts (opcodes 30, 31): every layout
 * encoded in both codecs against the hand-written fixtures of
 * public_fixtures.txt and decoded back field by field; every truncation and
 * a trailing byte refused; empty and oversize witness lists, repeated or
 * unordered mount names, repeated paths, malformed ids and pins, empty or
 * long names, non-canonical paths and more than 64 mounts refused by the
 * encoders and the decoders; the exact request bounds against maximal
 * encodings; a maximal mount reply (64 rows, 8,192-byte paths).
 * Usage: test_scribe_codec_public FIXTURE_FILE */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

#define LE CN_SCRIBE_CODEC_LE
#define BE CN_SCRIBE_CODEC_BE
#define CODEC(c) ((cn_scribe_codec_t)(c))
#define RID "0123456789abcdef0123456789abcdef"
#define BID "fedcba9876543210fedcba9876543210"

static cn_err_t d_chunks(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_chunks_req_t q;
    return cn_scribe_dec_chunks_req(p, n, c, &q);
}
static cn_err_t d_count(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    uint32_t v;
    return cn_scribe_dec_count_resp(p, n, c, &v);
}
static cn_err_t d_mounts_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_mounts_req_t q;
    return cn_scribe_dec_mounts_req(p, n, c, &q);
}
static cn_err_t d_mounts(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_rows_t rows;
    uint32_t count;
    return cn_scribe_dec_mounts_resp(p, n, c, &rows, &count);
}

static cn_digest_t digest_from(uint8_t first)
{
    cn_digest_t d;
    for (int i = 0; i < 32; i++)
        d.b[i] = (uint8_t)(first + i);
    return d;
}

static cn_digest_t digest_hex(const char *hex)
{
    cn_digest_t d;
    CN_CHECK_EQ(fx(hex, d.b, sizeof d.b), 32u);
    return d;
}

static void test_chunks(void)
{
    cn_scribe_witness_t w[2] = {
        { digest_hex("ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f"),
          digest_hex("8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1") },
        { digest_from(0x20), digest_from(0x40) },
    };
    cn_scribe_id_t repo = fx_sid(0x00);
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_chunks_req(&b, CODEC(c), &repo, w, 2), CN_OK);
        fx_gold("chunks_req", c, &b, d_chunks);
        cn_scribe_chunks_req_t q;
        CN_CHECK_EQ(cn_scribe_dec_chunks_req(b.data, b.len, CODEC(c), &q), CN_OK);
        CN_CHECK(q.count == 2 && !memcmp(q.repo.b, repo.b, 16));
        for (uint32_t i = 0; i < 2; i++) {
            cn_scribe_witness_t got;
            cn_scribe_chunks_witness(&q, i, &got);
            CN_CHECK(!memcmp(&got, &w[i], sizeof got));
        }
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_count_resp(&b, CODEC(c), 2), CN_OK);
        fx_gold("chunks_count", c, &b, d_count);
        cn_buf_free(&b);
    }
}

static void test_mounts_req(void)
{
    cn_scribe_mounts_req_t q = { fx_sid(0x00), fx_sid(0x10), 7 };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_mounts_req(&b, CODEC(c), &q), CN_OK);
        fx_gold("mounts_req", c, &b, d_mounts_req);
        cn_scribe_mounts_req_t d;
        CN_CHECK_EQ(cn_scribe_dec_mounts_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(!memcmp(&d, &q, sizeof d));
        cn_buf_free(&b);
    }
}

static cn_scribe_mount_t mount(const char *name, const char *path, const char *rid, const char *bid,
                               const char *rev)
{
    return (cn_scribe_mount_t){ cn_scribe_cstr(name), cn_scribe_cstr(path), cn_scribe_cstr(rid),
                                cn_scribe_cstr(bid), cn_scribe_cstr(rev) };
}

static void test_mounts_resp(void)
{
    char name[65];
    memset(name, 'a', 64);
    name[64] = 0;
    cn_scribe_mount_t one = mount("engine", "third_party/engine", RID, BID, "42");
    cn_scribe_mount_t max[2] = {
        mount(name, "third_party/engine", "ffffffffffffffffffffffffffffffff",
              "00000000000000000000000000000000", "18446744073709551615"),
        mount("b", "x", RID, BID, "0"),
    };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_mounts_resp(&b, CODEC(c), NULL, 0), CN_OK);
        fx_gold("mounts_resp_empty", c, &b, d_mounts);
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_mounts_resp(&b, CODEC(c), &one, 1), CN_OK);
        fx_gold("mounts_resp_one", c, &b, d_mounts);
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_mounts_resp(&b, CODEC(c), max, 2), CN_OK);
        fx_gold("mounts_resp_max", c, &b, d_mounts);
        cn_scribe_rows_t rows;
        uint32_t count;
        CN_CHECK_EQ(cn_scribe_dec_mounts_resp(b.data, b.len, CODEC(c), &rows, &count), CN_OK);
        cn_scribe_mount_t m;
        uint8_t id[16];
        uint64_t rev = 0;
        CN_CHECK(count == 2 && cn_scribe_next_mount(&rows, &m) && fx_str_is(m.name, name));
        CN_CHECK(fx_str_is(m.path, "third_party/engine") && cn_scribe_mount_id(m.repository, id));
        CN_CHECK(id[0] == 0xff && id[15] == 0xff && cn_scribe_mount_id(m.branch, id) && !id[7]);
        CN_CHECK(cn_scribe_mount_revision(m.revision, &rev) && rev == UINT64_MAX);
        CN_CHECK(cn_scribe_next_mount(&rows, &m) && fx_str_is(m.name, "b"));
        CN_CHECK(cn_scribe_mount_id(m.repository, id) && id[0] == 0x01 && id[15] == 0xef);
        CN_CHECK(cn_scribe_mount_revision(m.revision, &rev) && rev == 0);
        CN_CHECK(!cn_scribe_next_mount(&rows, &m));
        cn_buf_free(&b);
    }
}

/* The encoder refuses rows, and the decoder refuses their bytes written
 * field by field (the encoder cannot make them). */
static void refused_rows(const cn_scribe_mount_t *rows, uint32_t n)
{
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_mounts_resp(&b, LE, rows, n), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0u);
    cn_scribe_wr_t w = cn_scribe_wr_init(&b, LE);
    cn_scribe_wr_u32(&w, n);
    for (uint32_t i = 0; i < n; i++) {
        cn_scribe_wr_str16(&w, rows[i].name, 65535);
        cn_scribe_wr_bytes16(&w, rows[i].path, 65535);
        cn_scribe_wr_str16(&w, rows[i].repository, 65535);
        cn_scribe_wr_str16(&w, rows[i].branch, 65535);
        cn_scribe_wr_str16(&w, rows[i].revision, 65535);
    }
    CN_CHECK_EQ(w.err, CN_OK);
    cn_scribe_rows_t it;
    uint32_t count;
    CN_CHECK(cn_scribe_dec_mounts_resp(b.data, b.len, LE, &it, &count) < 0);
    cn_buf_free(&b);
}

static void test_mount_refusals(void)
{
    char long_name[66];
    memset(long_name, 'n', 65);
    long_name[65] = 0;
    cn_scribe_mount_t ok = mount("a", "lib/a", RID, BID, "1");
    struct {
        cn_scribe_mount_t rows[2];
        uint32_t n;
    } bad[] = {
        { { ok, mount("a", "lib/b", RID, BID, "1") }, 2 },   /* a repeated name */
        { { mount("b", "lib/b", RID, BID, "1"), ok }, 2 },   /* names out of order */
        { { ok, mount("b", "lib/a", RID, BID, "1") }, 2 },   /* a repeated path */
        { { mount("", "lib/a", RID, BID, "1") }, 1 },        /* an empty name */
        { { mount(long_name, "lib/a", RID, BID, "1") }, 1 }, /* a 65-byte name */
        { { mount("a", "lib//a", RID, BID, "1") }, 1 },      /* a non-canonical path */
        { { mount("a", "/lib", RID, BID, "1") }, 1 },        /* a leading slash */
        { { mount("a", "lib/a", "0123456789ABCDEF0123456789abcdef", BID, "1") }, 1 },
        { { mount("a", "lib/a", RID, "fedcba9876543210fedcba987654321", "1") }, 1 },
        { { mount("a", "lib/a", RID, "fedcba9876543210fedcba98765432100", "1") }, 1 },
        { { mount("a", "lib/a", RID, "fedcba9876543210fedcba987654321g", "1") }, 1 },
        { { mount("a", "lib/a", RID, BID, "01") }, 1 },                    /* a leading zero */
        { { mount("a", "lib/a", RID, BID, "") }, 1 },                      /* no digit */
        { { mount("a", "lib/a", RID, BID, "-1") }, 1 },                    /* signed */
        { { mount("a", "lib/a", RID, BID, "18446744073709551616") }, 1 },  /* 2^64 */
        { { mount("a", "lib/a", RID, BID, "118446744073709551615") }, 1 }, /* 21 digits */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused_rows(bad[i].rows, bad[i].n);
    /* 65 rows: the encoder refuses; a count of 65 is refused whatever follows */
    cn_scribe_mount_t *many = calloc(65, sizeof *many);
    char(*names)[8] = calloc(65, 8), (*paths)[8] = calloc(65, 8);
    for (int i = 0; i < 65; i++) {
        snprintf(names[i], 8, "m%02d", i);
        snprintf(paths[i], 8, "p/%02d", i);
        many[i] = mount(names[i], paths[i], RID, BID, "1");
    }
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_mounts_resp(&b, LE, many, 65), CN_E_INVALID);
    CN_CHECK_EQ(cn_scribe_enc_mounts_resp(&b, LE, many, 64), CN_OK);
    b.data[0] = 65; /* the same rows (and one short) under a count of 65 */
    cn_scribe_rows_t it;
    uint32_t count;
    CN_CHECK(cn_scribe_dec_mounts_resp(b.data, b.len, LE, &it, &count) < 0);
    free(many);
    free(names);
    free(paths);
    cn_buf_free(&b);
}

static void test_chunks_refusals(void)
{
    cn_scribe_id_t repo = fx_sid(0);
    cn_scribe_witness_t *w = calloc(CN_SCRIBE_MAX_WITNESSES + 1, sizeof *w);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_chunks_req(&b, LE, &repo, w, 0), CN_E_INVALID);
    CN_CHECK_EQ(cn_scribe_enc_chunks_req(&b, LE, &repo, w, CN_SCRIBE_MAX_WITNESSES + 1),
                CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0u);
    cn_scribe_chunks_req_t q;
    FX(zero, "000102030405060708090a0b0c0d0e0f 00000000");
    CN_CHECK(cn_scribe_dec_chunks_req(zero, zero_len, LE, &q) < 0);
    /* a count of 1,025 with all its bytes there */
    cn_scribe_wr_t wr = cn_scribe_wr_init(&b, BE);
    cn_scribe_wr_raw(&wr, repo.b, 16);
    cn_scribe_wr_u32(&wr, CN_SCRIBE_MAX_WITNESSES + 1);
    for (uint32_t i = 0; i <= CN_SCRIBE_MAX_WITNESSES; i++)
        cn_scribe_wr_raw(&wr, w[i].chunk.b, 64);
    CN_CHECK(cn_scribe_dec_chunks_req(b.data, b.len, BE, &q) < 0);
    /* a count larger than the bytes that follow (one witness short) */
    b.data[19] = 0;
    b.data[18] = 4; /* 1,024 announced, 1,025 there: trailing */
    CN_CHECK(cn_scribe_dec_chunks_req(b.data, b.len, BE, &q) < 0);
    CN_CHECK_EQ(cn_scribe_dec_chunks_req(b.data, b.len - 64, BE, &q), CN_OK);
    CN_CHECK(cn_scribe_dec_chunks_req(b.data, b.len - 65, BE, &q) < 0);
    free(w);
    cn_buf_free(&b);
}

/* The bounds of 30 and 31 are their maximal encodings, in both codecs, and
 * a maximal mount reply (64 rows, 64-byte names, 8,192-byte paths) goes
 * through both ways. */
static void test_bounds(void)
{
    uint32_t bound = 0;
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_GET_CHUNKS, false, &bound) && bound == 65556);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_REPOSITORY_MOUNTS, true, &bound) && bound == 40);
    cn_scribe_id_t repo = fx_sid(0);
    cn_scribe_witness_t *w = calloc(CN_SCRIBE_MAX_WITNESSES, sizeof *w);
    char *paths = malloc(64 * 8193);
    cn_scribe_mount_t rows[64];
    char names[64][65];
    for (int c = 1; c <= 2; c++) {
        cn_buf_t b = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_chunks_req(&b, CODEC(c), &repo, w, CN_SCRIBE_MAX_WITNESSES),
                    CN_OK);
        CN_CHECK_EQ(b.len, 65556u);
        cn_buf_reset(&b);
        cn_scribe_mounts_req_t q = { repo, repo, UINT64_MAX };
        CN_CHECK_EQ(cn_scribe_enc_mounts_req(&b, CODEC(c), &q), CN_OK);
        CN_CHECK_EQ(b.len, 40u);
        cn_buf_reset(&b);
        for (int i = 0; i < 64; i++) {
            memset(names[i], 'n', 64);
            names[i][62] = (char)('0' + i / 10);
            names[i][63] = (char)('0' + i % 10);
            names[i][64] = 0;
            char *p = paths + i * 8193;
            memset(p, 'p', 8192);
            p[0] = (char)('A' + i % 26);
            p[1] = (char)('A' + i / 26);
            p[8192] = 0;
            rows[i] = mount(names[i], p, RID, BID, "18446744073709551615");
        }
        CN_CHECK_EQ(cn_scribe_enc_mounts_resp(&b, CODEC(c), rows, 64), CN_OK);
        CN_CHECK_EQ(b.len, 4u + 64u * (66 + 8194 + 34 + 34 + 22));
        cn_scribe_rows_t it;
        uint32_t count;
        CN_CHECK_EQ(cn_scribe_dec_mounts_resp(b.data, b.len, CODEC(c), &it, &count), CN_OK);
        CN_CHECK_EQ(count, 64u);
        cn_buf_free(&b);
    }
    free(w);
    free(paths);
}

static const cn_test_case_t cases[] = {
    CN_TEST(test_chunks),         CN_TEST(test_mounts_req),      CN_TEST(test_mounts_resp),
    CN_TEST(test_mount_refusals), CN_TEST(test_chunks_refusals), CN_TEST(test_bounds),
};

int main(int argc, char **argv)
{
    return fx_main(argc, argv, "tests/scribe/public_fixtures.txt", cases,
                   sizeof cases / sizeof cases[0]);
}
