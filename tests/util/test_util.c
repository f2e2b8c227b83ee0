/* util: buffers, the bounds-checked reader, RFC 3339, error names. */
#include "cn_test.h"
#include "cairn/util.h"

#include <errno.h>

static void test_buf_codec_roundtrip(void)
{
    cn_buf_t b = {0};
    CN_CHECK_EQ(cn_buf_put_u8(&b, 0xAB), 0);
    CN_CHECK_EQ(cn_buf_put_u16be(&b, 0x1234), 0);
    CN_CHECK_EQ(cn_buf_put_u32be(&b, 0x4A415900), 0);
    CN_CHECK_EQ(cn_buf_put_u64be(&b, 0x0102030405060708ull), 0);
    CN_CHECK_EQ(cn_buf_put_u32le(&b, 0xDEADBEEF), 0);
    CN_CHECK_EQ(b.len, 1 + 2 + 4 + 8 + 4);
    static const uint8_t expect[] = {0xAB, 0x12, 0x34, 0x4A, 0x41, 0x59, 0x00, 1, 2, 3, 4, 5, 6, 7, 8,
                                     0xEF, 0xBE, 0xAD, 0xDE};
    CN_CHECK_MEM(b.data, expect, sizeof expect);

    cn_rd_t r = cn_rd_init(b.data, b.len);
    CN_CHECK_EQ(cn_rd_u8(&r), 0xAB);
    CN_CHECK_EQ(cn_rd_u16be(&r), 0x1234);
    CN_CHECK_EQ(cn_rd_u32be(&r), 0x4A415900);
    CN_CHECK(cn_rd_u64be(&r) == 0x0102030405060708ull);
    CN_CHECK_EQ(cn_rd_u32le(&r), 0xDEADBEEF);
    CN_CHECK_EQ(r.err, 0);
    CN_CHECK_EQ(cn_rd_left(&r), 0);
    /* Reading past the end is a sticky error, never an over-read. */
    CN_CHECK_EQ(cn_rd_u8(&r), 0);
    CN_CHECK_EQ(r.err, CN_E_PROTOCOL);
    CN_CHECK(cn_rd_bytes(&r, 0) == NULL);
    cn_buf_free(&b);
    cn_buf_free(&b);
}

static void test_reader_huge_length(void)
{
    uint8_t x[4] = {0};
    cn_rd_t r = cn_rd_init(x, sizeof x);
    CN_CHECK(cn_rd_bytes(&r, SIZE_MAX) == NULL);
    CN_CHECK_EQ(r.err, CN_E_PROTOCOL);
}

static void test_rfc3339(void)
{
    char s[CN_RFC3339_LEN];
    cn_rfc3339(0, s);
    CN_CHECK_STR(s, "1970-01-01T00:00:00.000Z");
    cn_rfc3339(1796222689123LL, s);
    CN_CHECK_STR(s, "2026-12-02T14:44:49.123Z");
}

static void test_errors(void)
{
    CN_CHECK_STR(cn_errname(CN_E_NOT_FOUND), "CN_E_NOT_FOUND");
    CN_CHECK_STR(cn_errname(-ENOSPC), "ENOSPC");
    CN_CHECK_STR(cn_strerror(CN_E_DIGEST_MISMATCH), "content does not match the expected digest");
    for (int e = CN_E_BASE + 1; e < CN_E_END; e++)
        CN_CHECK(strcmp(cn_errname(e), "CN_E_UNKNOWN") != 0);
}

CN_TEST_MAIN(CN_TEST(test_buf_codec_roundtrip), CN_TEST(test_reader_huge_length),
             CN_TEST(test_rfc3339), CN_TEST(test_errors))
