/* Golden-fixture helpers shared by the scribe and repos unit tests: fixtures
 * are written as in docs/protocol/scribe.md — hex byte pairs, spaces ignored,
 * "quoted" runs as ASCII — inline or in a fixture file; and the truncation
 * check every payload decoder must pass. */
#ifndef CN_TEST_FIXTURE_H
#define CN_TEST_FIXTURE_H

#include "cairn/scribe.h"
#include "cn_test.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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

/* Loads the payload of entry "@ NAME OP DIR CODEC" (codec "le" or "be") of
 * a fixture file (tests/scribe/branch_fixtures.txt: its header says the
 * format) into out (cap bytes).  Returns its length, or (size_t)-1 after
 * saying why on stderr. */
static inline size_t fx_entry(const char *file, const char *name, const char *codec, uint8_t *out,
                              size_t cap)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "# cannot open %s\n", file);
        return (size_t)-1;
    }
    char line[512], want[160];
    snprintf(want, sizeof want, "%s %s", name, codec);
    static char text[65536];
    size_t tl = 0;
    bool in = false, found = false;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '@') {
            if (in)
                break;
            char n[128], c[8];
            int op;
            char dir[16];
            in = sscanf(line, "@ %127s %d %15s %7s", n, &op, dir, c) == 4 && strcmp(n, name) == 0 &&
                 strcmp(c, codec) == 0;
            found = found || in;
            continue;
        }
        if (!in)
            continue;
        bool quoted = false;
        for (char *q = line; *q && *q != '\n'; q++) {
            if (*q == '"')
                quoted = !quoted;
            if (*q == '#' && !quoted)
                break;
            if (tl + 2 < sizeof text)
                text[tl++] = *q;
        }
        text[tl++] = ' ';
    }
    fclose(f);
    if (!found) {
        fprintf(stderr, "# fixture %s not in %s\n", want, file);
        return (size_t)-1;
    }
    text[tl] = 0;
    return fx(text, out, cap);
}

/* A payload decoder under test: CN_OK or an error, nothing else observed. */
typedef cn_err_t (*fx_dec_fn)(const uint8_t *p, size_t n, cn_scribe_codec_t c);

/* dec must accept p whole and refuse every strict prefix and p plus one
 * byte; each prefix is an exact-size copy so ASan sees any overread. */
static inline void fx_truncation(fx_dec_fn dec, const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    uint8_t *buf = malloc(n + 1);
    memcpy(buf, p, n);
    CN_CHECK_EQ(dec(buf, n, c), CN_OK);
    for (size_t k = 0; k < n; k++) {
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, p, k);
        cn_err_t e = dec(cut, k, c);
        if (e == CN_OK)
            fprintf(stderr, "# truncation to %zu of %zu accepted\n", k, n);
        CN_CHECK(e != CN_OK);
        free(cut);
    }
    buf[n] = 0;
    CN_CHECK(dec(buf, n + 1, c) != CN_OK);
    free(buf);
}

/* The encoder's bytes b must be fixture NAME of FILE in codec c (0 BE, 1 LE),
 * which dec accepts whole and refuses truncated or with a trailing byte.  The
 * first differing byte is reported.  buf (cap bytes) receives the fixture. */
static inline void fx_golden(const char *file, const char *name, int c, const cn_buf_t *b,
                             fx_dec_fn dec, uint8_t *buf, size_t cap)
{
    size_t n = fx_entry(file, name, c == 1 ? "le" : "be", buf, cap);
    CN_CHECK(n != (size_t)-1);
    if (n == (size_t)-1)
        return;
    size_t m = b->len < n ? b->len : n;
    for (size_t i = 0; i < m; i++) {
        if (b->data[i] != buf[i]) {
            fprintf(stderr, "# %s codec %d: byte %zu: encoder 0x%02x, fixture 0x%02x\n", name, c, i,
                    b->data[i], buf[i]);
            CN_CHECK(0);
            break;
        }
    }
    if (b->len != n)
        fprintf(stderr, "# %s codec %d: encoder %zu bytes, fixture %zu\n", name, c, b->len, n);
    CN_CHECK_EQ(b->len, n);
    fx_truncation(dec, buf, n, (cn_scribe_codec_t)c);
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

/* ---- a test over one fixture file ------------------------------------------------------- */
/* The id whose bytes are first, first + 1, ... (fx_id). */
static inline cn_scribe_id_t fx_sid(uint8_t first)
{
    cn_scribe_id_t id;
    fx_id(id.b, first);
    return id;
}

/* Whether slice a holds exactly the string want. */
static inline bool fx_str_is(cn_scribe_str_t a, const char *want)
{
    /* An empty view may carry no pointer: memcmp must not see it. */
    return a.len == strlen(want) && (a.len == 0 || memcmp(a.p, want, a.len) == 0);
}

/* The fixture file of this test: set by fx_main (path non-NULL), read by
 * fx_gold (NULL). */
static inline const char *fx_file(const char *path)
{
    static const char *file;
    if (path)
        file = path;
    return file;
}

/* The encoder's bytes b must be fixture NAME of the test's file in codec c
 * (fx_golden, through one buffer). */
static inline void fx_gold(const char *name, int c, const cn_buf_t *b, fx_dec_fn dec)
{
    static uint8_t buf[16384];
    fx_golden(fx_file(NULL), name, c, b, dec, buf, sizeof buf);
}

/* main() of such a test: the fixture file is argv[1] when given (meson
 * passes the source tree's), else file; then runs cases[0..n). */
static inline int fx_main(int argc, char **argv, const char *file, const cn_test_case_t *cases,
                          size_t n)
{
    fx_file(argc > 1 ? argv[1] : file);
    return cn_test_run(cases, n);
}

#endif
