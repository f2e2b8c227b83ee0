/* Helpers shared by the Scribe harnesses: every slice a decoder hands out
 * must lie inside the input. */
#ifndef CN_FUZZ_SCRIBE_COMMON_H
#define CN_FUZZ_SCRIBE_COMMON_H

#include "cairn/scribe.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fz_in(cn_scribe_str_t s, const uint8_t *lo, const uint8_t *hi)
{
    if (s.len && (s.p < lo || s.p + s.len > hi))
        abort();
}

/* The encoding must be the input itself (every layout is canonical). */
static inline void fz_same(const cn_buf_t *b, const uint8_t *p, size_t n)
{
    if (b->len != n || (n && memcmp(b->data, p, n) != 0))
        abort();
}

#endif
