/* Canonical path rules and strict UTF-8. */
#include "cairn/repos_model.h"

#include <string.h>

cn_err_t cn_repos_utf8_check(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) { i++; continue; }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
        else return CN_E_INVALID;
        if (len > n - i)
            return CN_E_INVALID;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return CN_E_INVALID;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return CN_E_INVALID;
        i += len;
    }
    return CN_OK;
}

cn_err_t cn_repos_path_check(const uint8_t *p, size_t n)
{
    if (n == 0 || n > CN_REPOS_MAX_PATH || !p)
        return CN_E_INVALID;
    size_t seg = 0;                 /* start of the current segment */
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '/') {
            if (p[i] < 0x20 || p[i] == 0x7F)
                return CN_E_INVALID;
            continue;
        }
        size_t len = i - seg;
        if (len == 0)               /* leading, trailing or doubled '/' */
            return CN_E_INVALID;
        if ((len == 1 && p[seg] == '.') || (len == 2 && p[seg] == '.' && p[seg + 1] == '.'))
            return CN_E_INVALID;
        seg = i + 1;
    }
    return cn_repos_utf8_check(p, n);
}
