/* Internals shared by the Scribe codec files; never included outside src/scribe. */
#ifndef CN_SCRIBE_CODEC_INT_H
#define CN_SCRIBE_CODEC_INT_H

#include "cairn/scribe.h"

#include <string.h>

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

/* A str16 path field (<= 8192 bytes; empty only where may_be_empty).  The
 * canonical path rules are the repos service's check. */
void cn__rd_path(cn_scribe_rd_t *r, bool may_be_empty, cn_scribe_str_t *out);
void cn__wr_path(cn_scribe_wr_t *w, cn_scribe_str_t s, bool may_be_empty);
/* Path lists, u32 count (<= max) | str16 path x count (each non-empty):
 * the reader validates the list and leaves it as rows for
 * cn_scribe_next_path (codec_merge.c; the lock requests share them). */
void cn__wr_paths(cn_scribe_wr_t *w, const cn_scribe_str_t *paths, uint32_t count, uint32_t max);
void cn__rd_paths(cn_scribe_rd_t *r, uint32_t max, uint32_t *count, cn_scribe_rows_t *rows);

/* Ids that name a mutation (operations, new branches) are never all zero. */
static inline bool cn__all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

/* Fingerprint inputs are little-endian whatever the codec, so an operation
 * replayed through codec 2 keeps its identity. */
static inline void cn__b3_le(cn_blake3_t *h, uint64_t v, int bytes)
{
    uint8_t le[8];
    for (int i = 0; i < bytes; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    cn_blake3_update(h, le, (size_t)bytes);
}

/* Starts a fingerprint hash with its domain string, NUL included. */
static inline void cn__b3_domain(cn_blake3_t *h, const char *domain)
{
    cn_blake3_init(h);
    cn_blake3_update(h, domain, strlen(domain) + 1);
}

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
