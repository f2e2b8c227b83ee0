/* Internals shared by the Scribe codec files; never included outside src/scribe. */
#ifndef CN_SCRIBE_CODEC_INT_H
#define CN_SCRIBE_CODEC_INT_H

#include "cairn/scribe.h"

/* Starts a writer on out; finish() returns its sticky error. */
static inline cn_err_t cn__wr_finish(const cn_scribe_wr_t *w)
{
    return w->err;
}

/* Marks a reader malformed (a failed semantic check inside a layout). */
static inline void cn__rd_fail(cn_scribe_rd_t *r)
{
    r->r.err = CN_E_PROTOCOL;
}

/* A str16 view as it sits in the payload, re-read without checks. */
cn_scribe_str_t cn__rd_str16_at(const uint8_t *p, cn_scribe_codec_t c, size_t *adv);

/* Encoders append whole layouts or nothing: on error the buffer is rolled back. */
#define CN__ENC_BEGIN(out, c)                         \
    cn_scribe_wr_t w = cn_scribe_wr_init((out), (c)); \
    size_t cn__start = (out)->len
#define CN__ENC_END(out)            \
    do {                            \
        if (w.err)                  \
            (out)->len = cn__start; \
        return w.err;               \
    } while (0)
#define CN__FAIL_IF(w, cond)             \
    do {                                 \
        if (cond) {                      \
            if (!(w)->err)               \
                (w)->err = CN_E_INVALID; \
        }                                \
    } while (0)
#endif
