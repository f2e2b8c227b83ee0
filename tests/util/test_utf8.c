/* util: strict UTF-8 (cn_utf8_valid, cn_utf8_seq) at every boundary RFC 3629
 * draws, and against a straightforward decoder over every 1-, 2- and 3-byte
 * input and a sweep of 4-byte ones. */
#include "cn_test.h"
#include "cairn/util.h"

#include <stdbool.h>
#include <stdint.h>

#define VALID(s) cn_utf8_valid((s), sizeof(s) - 1)

static void test_ascii_and_empty(void)
{
    CN_CHECK(cn_utf8_valid(NULL, 0));
    CN_CHECK(cn_utf8_valid("", 0));
    CN_CHECK(VALID("plain ascii / key.txt"));
    CN_CHECK(VALID("\x7F"));
    /* NUL is a character; refusing it is the caller's rule. */
    CN_CHECK(VALID("a\0b"));
    CN_CHECK_EQ(cn_utf8_seq("A", 1), 1);
}

static void test_boundaries_valid(void)
{
    CN_CHECK(VALID("\xC2\x80"));         /* U+0080, first 2-byte */
    CN_CHECK(VALID("\xDF\xBF"));         /* U+07FF */
    CN_CHECK(VALID("\xE0\xA0\x80"));     /* U+0800, first 3-byte */
    CN_CHECK(VALID("\xED\x9F\xBF"));     /* U+D7FF, just below surrogates */
    CN_CHECK(VALID("\xEE\x80\x80"));     /* U+E000, just above them */
    CN_CHECK(VALID("\xEF\xBF\xBD"));     /* U+FFFD */
    CN_CHECK(VALID("\xEF\xBF\xBF"));     /* U+FFFF */
    CN_CHECK(VALID("\xF0\x90\x80\x80")); /* U+10000, first 4-byte */
    CN_CHECK(VALID("\xF4\x8F\xBF\xBF")); /* U+10FFFF, the last */
    CN_CHECK(VALID("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
    CN_CHECK_EQ(cn_utf8_seq("\xC3\xA9", 2), 2);
    CN_CHECK_EQ(cn_utf8_seq("\xE2\x82\xAC", 3), 3);
    CN_CHECK_EQ(cn_utf8_seq("\xF0\x9F\x98\x80!", 5), 4);
}

static void test_overlong(void)
{
    CN_CHECK(!VALID("\xC0\x80"));             /* U+0000 in two bytes */
    CN_CHECK(!VALID("\xC0\xAF"));             /* "/" in two bytes */
    CN_CHECK(!VALID("\xC1\xBF"));             /* U+007F in two bytes */
    CN_CHECK(!VALID("\xE0\x80\x80"));         /* U+0000 in three */
    CN_CHECK(!VALID("\xE0\x9F\xBF"));         /* U+07FF in three */
    CN_CHECK(!VALID("\xF0\x80\x80\x80"));     /* U+0000 in four */
    CN_CHECK(!VALID("\xF0\x8F\xBF\xBF"));     /* U+FFFF in four */
    CN_CHECK(!VALID("\xF8\x88\x80\x80\x80")); /* five-byte forms do not exist */
    CN_CHECK(!VALID("\xFC\x84\x80\x80\x80\x80"));
}

static void test_surrogates(void)
{
    CN_CHECK(!VALID("\xED\xA0\x80"));             /* U+D800 */
    CN_CHECK(!VALID("\xED\xAF\xBF"));             /* U+DBFF */
    CN_CHECK(!VALID("\xED\xB0\x80"));             /* U+DC00 */
    CN_CHECK(!VALID("\xED\xBF\xBF"));             /* U+DFFF */
    CN_CHECK(!VALID("\xED\xA0\xBD\xED\xB8\x80")); /* a CESU-8 pair */
}

static void test_above_max(void)
{
    CN_CHECK(!VALID("\xF4\x90\x80\x80")); /* U+110000 */
    CN_CHECK(!VALID("\xF5\x80\x80\x80"));
    CN_CHECK(!VALID("\xF7\xBF\xBF\xBF")); /* U+1FFFFF */
    CN_CHECK(!VALID("\xFE"));
    CN_CHECK(!VALID("\xFF"));
}

static void test_truncated_and_stray(void)
{
    CN_CHECK(!VALID("\xC3"));
    CN_CHECK(!VALID("\xE2\x82"));
    CN_CHECK(!VALID("\xF0\x9F\x98"));
    CN_CHECK(!VALID("ok\xF0\x9F"));
    /* The length bounds the read even when the bytes beyond would complete it. */
    CN_CHECK(!cn_utf8_valid("\xE2\x82\xAC", 2));
    CN_CHECK_EQ(cn_utf8_seq("\xF0\x9F\x98\x80", 3), 0);
    CN_CHECK(!VALID("\x80")); /* a lone continuation byte */
    CN_CHECK(!VALID("\xBF"));
    CN_CHECK(!VALID("a\x80z"));
    CN_CHECK(!VALID("\xC3\xA9\xA9")); /* one continuation too many */
    CN_CHECK(!VALID("\xE2\x28\xA1")); /* a non-continuation inside */
    CN_CHECK(!VALID("\xF0\x9F\x28\x80"));
    CN_CHECK(!VALID("\xC3\xC3\xA9"));
}

/* The obvious decoder the table must agree with. */
static bool ref_valid(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1Fu;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0Fu;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07u;
            min = 0x10000;
        } else
            return false;
        if (len > n - i)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

static void test_agrees_with_decoder(void)
{
    uint8_t b[4];
    size_t disagree = 0;
    for (unsigned x = 0; x < 256; x++) {
        b[0] = (uint8_t)x;
        disagree += cn_utf8_valid(b, 1) != ref_valid(b, 1);
        for (unsigned y = 0; y < 256; y++) {
            b[1] = (uint8_t)y;
            disagree += cn_utf8_valid(b, 2) != ref_valid(b, 2);
            for (unsigned z = 0; z < 256; z++) {
                b[2] = (uint8_t)z;
                disagree += cn_utf8_valid(b, 3) != ref_valid(b, 3);
            }
        }
    }
    /* Four bytes: every lead byte with the continuation bytes' edges and
     * a few values around them. */
    static const uint8_t pick[] = { 0x00, 0x41, 0x7F, 0x80, 0x81, 0x8F, 0x90, 0x9F, 0xA0,
                                    0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xFF };
    for (unsigned x = 0; x < 256; x++)
        for (size_t i = 0; i < sizeof pick; i++)
            for (size_t j = 0; j < sizeof pick; j++)
                for (size_t k = 0; k < sizeof pick; k++) {
                    b[0] = (uint8_t)x;
                    b[1] = pick[i];
                    b[2] = pick[j];
                    b[3] = pick[k];
                    disagree += cn_utf8_valid(b, 4) != ref_valid(b, 4);
                }
    CN_CHECK_EQ(disagree, 0);
}

CN_TEST_MAIN(CN_TEST(test_ascii_and_empty), CN_TEST(test_boundaries_valid), CN_TEST(test_overlong),
             CN_TEST(test_surrogates), CN_TEST(test_above_max), CN_TEST(test_truncated_and_stray),
             CN_TEST(test_agrees_with_decoder))
