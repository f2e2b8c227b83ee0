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

/* One side of a harness: decodes payload p of opcode op and, when the
 * decoder accepts it, re-encodes it into b. */
typedef cn_err_t (*fz_side_fn)(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n,
                               cn_buf_t *b);

/* The driver of the harnesses whose input is an opcode byte, a codec byte
 * (1 or 2), a side byte (0 request, 1 response), then the payload: an
 * accepted payload re-encodes to exactly itself, a refused one is
 * CN_E_PROTOCOL and nothing else. */
static inline int fz_sided(const uint8_t *data, size_t size, fz_side_fn request,
                           fz_side_fn response)
{
    if (size < 3 || (data[1] != 1 && data[1] != 2) || data[2] > 1)
        return 0;
    cn_scribe_codec_t c = (cn_scribe_codec_t)data[1];
    const uint8_t *p = data + 3;
    size_t n = size - 3;
    cn_buf_t b = { 0 };
    cn_err_t e = (data[2] == 0 ? request : response)(data[0], c, p, n, &b);
    if (e == CN_OK)
        fz_same(&b, p, n);
    else if (e != CN_E_PROTOCOL)
        abort();
    cn_buf_free(&b);
    return 0;
}

#endif
