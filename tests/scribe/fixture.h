/* Golden-fixture helpers shared by the scribe and repos unit tests: fixtures
 * are written as in docs/protocol/scribe.md — hex byte pairs, spaces ignored,
 * "quoted" runs as ASCII. */
#ifndef CN_TEST_FIXTURE_H
#define CN_TEST_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int fx_nib(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Parses a fixture into out (cap bytes); returns its length (aborts on a
 * malformed fixture: that is a bug in the test itself). */
static size_t fx(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*s) {
        if (*s == ' ' || *s == '\n') {
            s++;
            continue;
        }
        if (*s == '"') {
            for (s++; *s && *s != '"'; s++) {
                if (n >= cap)
                    abort();
                out[n++] = (uint8_t)*s;
            }
            if (*s != '"')
                abort();
            s++;
            continue;
        }
        int a = fx_nib(s[0]), b = s[1] ? fx_nib(s[1]) : -1;
        if (a < 0 || b < 0 || n >= cap)
            abort();
        out[n++] = (uint8_t)(a << 4 | b);
        s += 2;
    }
    return n;
}

#define FX(name, text)                               \
    uint8_t name[4096];                              \
    size_t name##_len = fx(text, name, sizeof name); \
    (void)name##_len

static void fx_id(uint8_t out[16], uint8_t first)
{
    for (int i = 0; i < 16; i++)
        out[i] = (uint8_t)(first + i);
}

#endif
