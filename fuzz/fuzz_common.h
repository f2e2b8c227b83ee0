/* Helpers shared by the Jay message harnesses: walk every list a decoder
 * handed out, so an iterator that strays outside its slice is caught. */
#ifndef CN_FUZZ_COMMON_H
#define CN_FUZZ_COMMON_H

#include "cairn/jay.h"

#include <stdlib.h>

static inline void fuzz_touch(cn_jay_str_t s, const uint8_t *lo, const uint8_t *hi)
{
    if (s.len && ((const uint8_t *)s.p < lo || (const uint8_t *)s.p + s.len > hi))
        abort();
}

static inline void fuzz_walk_map(const cn_jay_list_t *l, const uint8_t *lo, const uint8_t *hi)
{
    cn_jay_iter_t it = cn_jay_iter(l);
    cn_jay_kv_t kv;
    unsigned n = 0;
    while (cn_jay_next_kv(&it, &kv)) {
        fuzz_touch(kv.key, lo, hi);
        fuzz_touch(kv.value, lo, hi);
        n++;
    }
    if (n != l->count)
        abort();
}

static inline void fuzz_walk_strs(const cn_jay_list_t *l, const uint8_t *lo, const uint8_t *hi)
{
    cn_jay_iter_t it = cn_jay_iter(l);
    cn_jay_str_t s;
    unsigned n = 0;
    while (cn_jay_next_str(&it, &s)) {
        fuzz_touch(s, lo, hi);
        n++;
    }
    if (n != l->count)
        abort();
}

static inline void fuzz_walk_ints(const cn_jay_list_t *l)
{
    cn_jay_iter_t it = cn_jay_iter(l);
    int32_t v;
    unsigned n = 0;
    while (cn_jay_next_i32(&it, &v))
        n++;
    if (n != l->count)
        abort();
}

#endif
