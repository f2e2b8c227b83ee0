/* Loader for the hand-written golden fixtures in tests/jay/golden/NAME.hex (format
 * in golden/README.md), shared by the Jay codec and client tests. */
#ifndef CN_TEST_JAY_GOLDEN_H
#define CN_TEST_JAY_GOLDEN_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/util.h"

static const char *golden_dir = "tests/jay/golden";

static int golden_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Loads golden/<name>.hex into out (reset first).  Returns 0, or -1 after
 * printing why. */
static int golden_load(const char *name, cn_buf_t *out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.hex", golden_dir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "# cannot open %s\n", path);
        return -1;
    }
    cn_buf_reset(out);
    int c, rc = 0;
    while ((c = fgetc(f)) != EOF) {
        if (c == '#') {
            while ((c = fgetc(f)) != EOF && c != '\n') {
            }
        } else if (c == '"') {
            while ((c = fgetc(f)) != EOF && c != '"')
                cn_buf_put_u8(out, (uint8_t)c);
        } else if (isspace(c)) {
            continue;
        } else {
            int d = fgetc(f);
            int hi = golden_hexval(c), lo = golden_hexval(d);
            if (hi < 0 || lo < 0) {
                fprintf(stderr, "# %s: bad hex near byte %zu\n", path, out->len);
                rc = -1;
                break;
            }
            cn_buf_put_u8(out, (uint8_t)(hi << 4 | lo));
        }
    }
    fclose(f);
    return rc;
}

#endif
