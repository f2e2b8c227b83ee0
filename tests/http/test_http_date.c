/* The Date header's text (src/http/response.c, cn__http_date): formatted
 * once per second and thread, not per answer (issue 16), and still the
 * current second's.  From outside the server the cache cannot be told from
 * a fresh format without a timing; here it can: a mark left in the cached
 * text stays there for the rest of the second, and a fresh format would
 * have overwritten it. */
#include "cn_test.h"
#include "http/http_int.h"

#include <string.h>

static void test_date_is_the_current_seconds(void)
{
    for (int tries = 0; tries < 5; tries++) {
        int64_t before = cn_wall_ms() / 1000;
        const char *got = cn__http_date();
        char want[CN_DATE_MAX];
        cn_date_format(before * 1000, CN_DATE_IMF, want);
        if (cn_wall_ms() / 1000 != before)
            continue; /* a second ended in between: try again */
        CN_CHECK_STR(got, want);
        return;
    }
    CN_CHECK(!"five seconds ended within five calls");
}

static void test_date_is_formatted_once_per_second(void)
{
    for (int tries = 0; tries < 5; tries++) {
        int64_t before = cn_wall_ms() / 1000;
        /* The cache is the thread's own buffer, which the caller may not
         * write but the test does, to see whether the next call formats. */
        char *text = (char *)cn__http_date();
        char saved = text[0];
        text[0] = '#';
        const char *again = cn__http_date();
        bool cached = again == text && again[0] == '#';
        text[0] = saved;
        if (cn_wall_ms() / 1000 != before)
            continue; /* a new second formats anew, as it must */
        CN_CHECK(cached);
        break;
    }
    /* The next second has its own text. */
    char first[CN_DATE_MAX];
    strcpy(first, cn__http_date());
    int64_t s = cn_wall_ms() / 1000;
    while (cn_wall_ms() / 1000 == s)
        cn_sleep_ms(10);
    CN_CHECK(strcmp(first, cn__http_date()) != 0);
}

CN_TEST_MAIN(CN_TEST(test_date_is_the_current_seconds),
             CN_TEST(test_date_is_formatted_once_per_second))
