/* Strict UTF-8 validation (include/cairn/util.h): the one copy every parser
 * of names, keys, paths and text fields uses.  Reads only the bytes it is
 * given; never allocates. */
#include "cairn/util.h"

size_t cn_utf8_seq(const void *p, size_t n)
{
    const uint8_t *s = p;
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c < 0x80)
        return 1;
    /* RFC 3629's table of well-formed sequences: the first byte fixes the
     * length and narrows the range of the second, which is where overlong
     * forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4)
     * show; C0, C1 and F5..FF never start one. */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    return len;
}

bool cn_utf8_valid(const void *p, size_t n)
{
    const uint8_t *s = p;
    for (size_t i = 0; i < n;) {
        size_t len = cn_utf8_seq(s + i, n - i);
        if (!len)
            return false;
        i += len;
    }
    return true;
}
