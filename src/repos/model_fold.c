/* Case-fold v1: the simple case folding (Unicode status C and S) of the
 * scripts where case-insensitive file systems most often collide — Basic
 * Latin, Latin-1, Latin Extended-A, Greek, Cyrillic, Armenian, Latin Extended
 * Additional, letterlike symbols, Roman numerals, circled and fullwidth
 * Latin.  Everything else folds to itself.  The table is part of the
 * canonical rules; a change to it is a new fold version. */
#include "cairn/repos_model.h"

uint32_t cn_repos_fold_cp(uint32_t c)
{
    if (c < 0x80)
        return (c >= 'A' && c <= 'Z') ? c + 0x20 : c;
    if (c == 0xB5)
        return 0x3BC;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
        return c + 0x20;
    if (c >= 0x100 && c <= 0x12F)
        return c | 1;
    if (c >= 0x132 && c <= 0x137)
        return c | 1;
    if (c >= 0x139 && c <= 0x148)
        return (c & 1) ? c + 1 : c;
    if (c >= 0x14A && c <= 0x177)
        return c | 1;
    if (c == 0x178)
        return 0xFF;
    if (c >= 0x179 && c <= 0x17E)
        return (c & 1) ? c + 1 : c;
    if (c == 0x17F)
        return 's';
    if (c == 0x386)
        return 0x3AC;
    if (c >= 0x388 && c <= 0x38A)
        return c + 0x25;
    if (c == 0x38C)
        return 0x3CC;
    if (c == 0x38E || c == 0x38F)
        return c + 0x3F;
    if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB))
        return c + 0x20;
    if (c == 0x3C2)
        return 0x3C3;
    if (c >= 0x400 && c <= 0x40F)
        return c + 0x50;
    if (c >= 0x410 && c <= 0x42F)
        return c + 0x20;
    if (c >= 0x460 && c <= 0x481)
        return c | 1;
    if (c >= 0x48A && c <= 0x4BF)
        return c | 1;
    if (c == 0x4C0)
        return 0x4CF;
    if (c >= 0x4C1 && c <= 0x4CE)
        return (c & 1) ? c + 1 : c;
    if (c >= 0x4D0 && c <= 0x52F)
        return c | 1;
    if (c >= 0x531 && c <= 0x556)
        return c + 0x30;
    if (c >= 0x1E00 && c <= 0x1E95)
        return c | 1;
    if (c == 0x1E9E)
        return 0xDF;
    if (c >= 0x1EA0 && c <= 0x1EFF)
        return c | 1;
    if (c == 0x2126)
        return 0x3C9;
    if (c == 0x212A)
        return 'k';
    if (c == 0x212B)
        return 0xE5;
    if (c >= 0x2160 && c <= 0x216F)
        return c + 0x10;
    if (c >= 0x24B6 && c <= 0x24CF)
        return c + 0x1A;
    if (c >= 0xFF21 && c <= 0xFF3A)
        return c + 0x20;
    return c;
}

/* Decodes one code point of valid UTF-8 at p[*i]. */
static uint32_t next_cp(const uint8_t *p, size_t *i)
{
    uint8_t c = p[*i];
    if (c < 0x80) {
        (*i)++;
        return c;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; k++)
        cp = cp << 6 | (p[*i + k] & 0x3F);
    *i += len;
    return cp;
}

static size_t put_cp(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

long cn_repos_path_fold(const uint8_t *p, size_t n, uint8_t *out, size_t cap)
{
    if (cn_repos_utf8_check(p, n))
        return CN_E_INVALID;
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t tmp[4];
        size_t k = put_cp(tmp, cn_repos_fold_cp(next_cp(p, &i)));
        if (k > cap - o)
            return CN_E_TOO_LARGE;
        for (size_t j = 0; j < k; j++)
            out[o++] = tmp[j];
    }
    return (long)o;
}

bool cn_repos_path_alias(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    if (an == bn && (an == 0 || __builtin_memcmp(a, b, an) == 0))
        return false;
    size_t i = 0, j = 0;
    while (i < an && j < bn)
        if (cn_repos_fold_cp(next_cp(a, &i)) != cn_repos_fold_cp(next_cp(b, &j)))
            return false;
    return i == an && j == bn;
}
