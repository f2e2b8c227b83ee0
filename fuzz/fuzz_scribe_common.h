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

/* A harness's invariant broke: abort, so libFuzzer keeps the input. */
static inline void fz_fail(void)
{
    abort();
}

/* The end of a request side: a request the decoder accepted (e is 0) must
 * have re-encoded (w is 0) and be no longer than its opcode's bound.
 * Returns e. */
static inline cn_err_t fz_request_done(uint16_t op, cn_err_t e, cn_err_t w, size_t n)
{
    uint32_t bound = 0;
    if (!e && (w || !cn_scribe_request_bound(op, false, &bound) || n > bound))
        fz_fail();
    return e;
}

/* The end of a response side: an accepted response must have re-encoded.
 * Returns e. */
static inline cn_err_t fz_response_done(cn_err_t e, cn_err_t w)
{
    if (!e && w)
        fz_fail();
    return e;
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

/* The libFuzzer entry point of a harness made of a request side and a
 * response side (fz_sided's input). */
#define FZ_SIDED_HARNESS(request, response)                      \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) \
    {                                                            \
        return fz_sided(data, size, request, response);          \
    }

#endif
