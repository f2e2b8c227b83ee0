/* util/date.c: the one date formatter, checked against libc's gmtime_r and
 * strftime (the reference it replaces) for every day from 1900 to 2400 at
 * several times of day, and a few fixed vectors and edges. */
#include "cn_test.h"
#include "cairn/util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* What cn_date_format must write for t in form, by gmtime_r + strftime. */
static void reference(int64_t t_ms, cn_date_form_t form, char *out, size_t cap)
{
    time_t t = (time_t)(t_ms / 1000 - (t_ms % 1000 < 0));
    int ms = (int)((t_ms % 1000 + 1000) % 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    if (form == CN_DATE_IMF) {
        strftime(out, cap, "%a, %d %b %Y %H:%M:%S GMT", &tm); /* C locale */
    } else if (form == CN_DATE_AMZ) {
        strftime(out, cap, "%Y%m%dT%H%M%SZ", &tm);
    } else {
        size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(out + n, cap - n, ".%03dZ", ms);
    }
}

/* Returns the number of mismatches (each printed, the first 5 only). */
static int compare(int64_t t_ms)
{
    static int shown;
    int bad = 0;
    for (cn_date_form_t f = CN_DATE_IMF; f <= CN_DATE_RFC3339; f++) {
        char got[CN_DATE_MAX], want[CN_DATE_MAX];
        size_t n = cn_date_format(t_ms, f, got);
        reference(t_ms, f, want, sizeof want);
        if (strcmp(got, want) != 0 || n != strlen(want)) {
            if (shown++ < 5)
                fprintf(stderr, "# %lld form %d: \"%s\" != \"%s\"\n", (long long)t_ms, (int)f, got,
                        want);
            bad++;
        }
    }
    return bad;
}

static void test_every_day_1900_2400(void)
{
    /* 1900-01-01T00:00:00Z .. 2400-12-31, at midnight, a second before it,
     * noon and 23:59:59 of every day, with milliseconds. */
    const int64_t first = -2208988800LL, last = 13601087999LL;
    int bad = 0;
    long days = 0;
    for (int64_t d = first; d <= last; d += 86400, days++) {
        bad += compare(d * 1000);
        bad += compare(d * 1000 - 1);
        bad += compare((d + 43200) * 1000 + 500);
        bad += compare((d + 86399) * 1000 + 999);
    }
    CN_CHECK_EQ(days, 182987); /* 501 years: 366 * 122 + 365 * 379 */
    CN_CHECK_EQ(bad, 0);
}

static void test_seconds(void)
{
    /* Every second of two days around a leap day, and strided seconds over
     * the years 1000-9999 (strftime's %Y pads no year below 1000; ours
     * are always 4 digits, as IMF-fixdate wants: test_vectors). */
    int bad = 0;
    for (int64_t s = 951696000LL; s < 951696000LL + 2 * 86400; s++)
        bad += compare(s * 1000);
    for (int64_t s = -30610224000LL; s < 253402300799LL; s += 999983LL)
        bad += compare(s * 1000 + 7);
    CN_CHECK_EQ(bad, 0);
}

static void test_vectors(void)
{
    char s[CN_DATE_MAX];
    CN_CHECK_EQ(cn_date_format(784111777000LL, CN_DATE_IMF, s), 29);
    CN_CHECK_STR(s, "Sun, 06 Nov 1994 08:49:37 GMT"); /* RFC 9110's example */
    CN_CHECK_EQ(cn_date_format(1369353600000LL, CN_DATE_AMZ, s), 16);
    CN_CHECK_STR(s, "20130524T000000Z"); /* the SigV4 documentation's */
    cn_date_format(0, CN_DATE_RFC3339, s);
    CN_CHECK_STR(s, "1970-01-01T00:00:00.000Z");
    cn_date_format(-62135596800000LL, CN_DATE_IMF, s);
    CN_CHECK_STR(s, "Mon, 01 Jan 0001 00:00:00 GMT");
    cn_date_format(253402300800000LL, CN_DATE_RFC3339, s); /* past 9999 */
    CN_CHECK_STR(s, "10000-01-01T00:00:00.000Z");
    cn_date_format(253402300800000LL, CN_DATE_IMF, s);
    CN_CHECK_STR(s, "Sat, 01 Jan 10000 00:00:00 GMT");
    cn_civil_t c;
    cn_civil_from_unix(-1, &c);
    CN_CHECK(c.year == 1969 && c.mon == 12 && c.mday == 31 && c.hour == 23 && c.min == 59 &&
             c.sec == 59 && c.wday == 3);
}

CN_TEST_MAIN(CN_TEST(test_every_day_1900_2400), CN_TEST(test_seconds), CN_TEST(test_vectors))
