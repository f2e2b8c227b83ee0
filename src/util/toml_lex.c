/* The lexical pieces of the TOML parser (src/util/toml_int.h): whitespace,
 * comments, newlines, the four string forms with their escapes, and keys.
 * The text was checked as UTF-8 without NUL before any of this runs, so
 * only the control-character rules are left to enforce here. */
#include "toml_int.h"

#include <string.h>

void cn__toml_ws(cn__tp_t *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t'))
        t->p++;
}

/* Control characters other than tab are refused everywhere but as the CR
 * of a CRLF; DEL too. */
static bool is_control(const cn__tp_t *t, const char *c)
{
    unsigned char ch = (unsigned char)*c;
    if (ch == '\r')
        return !(c + 1 < t->end && c[1] == '\n');
    return (ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f;
}

/* A comment runs to the end of the line. */
cn_err_t cn__toml_comment(cn__tp_t *t)
{
    if (t->p < t->end && *t->p == '#') {
        while (t->p < t->end && *t->p != '\n') {
            if (*t->p == '\r' && t->p + 1 < t->end && t->p[1] == '\n')
                break;
            if (is_control(t, t->p))
                return cn__toml_fail(t, "control character in a comment");
            t->p++;
        }
    }
    return CN_OK;
}

/* Consumes a newline (\n or \r\n).  Returns false when none is here. */
bool cn__toml_newline(cn__tp_t *t)
{
    if (t->p < t->end && *t->p == '\n') {
        t->p++;
    } else if (t->end - t->p >= 2 && t->p[0] == '\r' && t->p[1] == '\n') {
        t->p += 2;
    } else {
        return false;
    }
    t->line++;
    t->bol = t->p;
    return true;
}

/* A growing string in the arena: the output of one string token. */
typedef struct {
    char *s;
    size_t n, cap;
} sbuf_t;

static cn_err_t sput(cn__tp_t *t, sbuf_t *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *ns = cn__toml_alloc(t, cap);
        if (!ns)
            return t->rc;
        if (b->n)
            memcpy(ns, b->s, b->n);
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
    return CN_OK;
}

static cn_err_t put_utf8(cn__tp_t *t, sbuf_t *b, uint32_t cp)
{
    char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        o[0] = (char)(0xf0 | cp >> 18);
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return sput(t, b, o, n);
}

static int hexval(char h)
{
    return h >= '0' && h <= '9'   ? h - '0'
           : h >= 'a' && h <= 'f' ? h - 'a' + 10
           : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                  : -1;
}

/* Skips the whitespace and newlines after a line-ending backslash; false
 * when the backslash is not followed by (whitespace and) a newline. */
static bool line_continuation(cn__tp_t *t)
{
    const char *q = t->p;
    while (q < t->end && (*q == ' ' || *q == '\t'))
        q++;
    if (!(q < t->end && (*q == '\n' || (*q == '\r' && q + 1 < t->end && q[1] == '\n'))))
        return false;
    t->p = q;
    for (;;) {
        cn__toml_ws(t);
        if (!cn__toml_newline(t))
            return true;
    }
}

/* One escape after the backslash at the cursor. */
static cn_err_t escape(cn__tp_t *t, sbuf_t *b, bool multi)
{
    t->p++; /* the backslash */
    if (multi && line_continuation(t))
        return CN_OK;
    if (t->p == t->end)
        return cn__toml_fail(t, "unterminated string");
    char x = *t->p;
    const char *map = "b\bt\tn\nf\fr\r\"\"\\\\";
    for (const char *m = map; *m; m += 2)
        if (*m == x) {
            t->p++;
            return sput(t, b, m + 1, 1);
        }
    if (x != 'u' && x != 'U')
        return ((unsigned char)x > 0x20 && (unsigned char)x < 0x7f)
                   ? cn__toml_fail(t, "unknown escape '\\%c'", x)
                   : cn__toml_fail(t, "unknown escape (a backslash before 0x%02x)",
                                   (unsigned char)x);
    int nd = x == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (int i = 1; i <= nd; i++) {
        int v = t->p + i < t->end ? hexval(t->p[i]) : -1;
        if (v < 0)
            return cn__toml_fail(t, "bad hex digit in \\%c escape", x);
        cp = cp << 4 | (uint32_t)v;
    }
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return cn__toml_fail(t, "escape is not an allowed Unicode scalar value");
    t->p += 1 + nd;
    return put_utf8(t, b, cp);
}

/* The body of a string after its opening delimiter; q is the quote
 * character, multi whether it is a triple-quoted form. */
static cn_err_t string_body(cn__tp_t *t, sbuf_t *b, char q, bool multi)
{
    for (;;) {
        if (t->p == t->end)
            return cn__toml_fail(t, "unterminated string");
        const char *c = t->p;
        if (*c == q) {
            if (!multi) {
                t->p++;
                return CN_OK;
            }
            size_t run = 0;
            while (c + run < t->end && c[run] == q)
                run++;
            if (run >= 3) {
                if (run > 5)
                    return cn__toml_fail(t, "too many quotes at the end of a multi-line string");
                t->p += run;
                return sput(t, b, c, run - 3);
            }
            t->p += run;
            CN_TRY(sput(t, b, c, run));
            continue;
        }
        if (*c == '\\' && q == '"') {
            CN_TRY(escape(t, b, multi));
            continue;
        }
        if (*c == '\n' || (*c == '\r' && c + 1 < t->end && c[1] == '\n')) {
            if (!multi)
                return cn__toml_fail(t, "unterminated string (a newline inside)");
            cn__toml_newline(t);
            CN_TRY(sput(t, b, "\n", 1));
            continue;
        }
        if (is_control(t, c))
            return cn__toml_fail(t, "control character in a string (use an escape)");
        const char *s = c;
        while (t->p < t->end && *t->p != q && *t->p != '\\' && !is_control(t, t->p) &&
               *t->p != '\n' && *t->p != '\r')
            t->p++;
        if (t->p == s)
            t->p++; /* a backslash in a literal string */
        CN_TRY(sput(t, b, s, (size_t)(t->p - s)));
    }
}

cn_err_t cn__toml_string(cn__tp_t *t, char **out, size_t *len, bool key)
{
    char q = *t->p;
    bool multi = t->end - t->p >= 3 && t->p[1] == q && t->p[2] == q;
    if (multi && key)
        return cn__toml_fail(t, "a multi-line string cannot be a key");
    t->p += multi ? 3 : 1;
    if (multi)
        cn__toml_newline(t); /* a newline right after the delimiter is trimmed */
    sbuf_t b = { 0 };
    CN_TRY(sput(t, &b, "", 0));
    CN_TRY(string_body(t, &b, q, multi));
    *out = b.s;
    *len = b.n;
    return CN_OK;
}

static bool is_bare(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* A dotted key at the cursor, and the whitespace after it. */
cn_err_t cn__toml_keys(cn__tp_t *t, cn__tkeys_t *keys)
{
    keys->n = 0;
    keys->bol = t->bol;
    keys->line = t->line;
    for (;;) {
        if (keys->n == CN__TOML_MAX_KEYS)
            return cn__toml_fail(t, "key nested too deeply (more than %d parts)",
                                 CN__TOML_MAX_KEYS);
        size_t i = keys->n++;
        keys->at[i] = t->p;
        keys->col[i] = cn__toml_col(t, t->bol, t->p);
        if (t->p < t->end && (*t->p == '"' || *t->p == '\'')) {
            CN_TRY(cn__toml_string(t, &keys->k[i], &keys->len[i], true));
        } else {
            const char *s = t->p;
            while (t->p < t->end && is_bare(*t->p))
                t->p++;
            if (t->p == s)
                return cn__toml_fail(t, "expected a key");
            keys->len[i] = (size_t)(t->p - s);
            keys->k[i] = cn__toml_alloc(t, keys->len[i] + 1);
            if (!keys->k[i])
                return t->rc;
            memcpy(keys->k[i], s, keys->len[i]);
            keys->k[i][keys->len[i]] = 0;
        }
        cn__toml_ws(t);
        if (t->p == t->end || *t->p != '.')
            return CN_OK;
        t->p++;
        cn__toml_ws(t);
    }
}
