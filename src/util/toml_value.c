/* Values of the TOML parser (src/util/toml_int.h): booleans, integers in
 * four bases, floats, the four date and time forms, arrays and inline
 * tables.  A scalar is first cut as one token of the characters numbers,
 * dates and booleans can hold, then recognised whole by a strict grammar:
 * a prefix that looks right is never taken for the value. */
#include "toml_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_tokch(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == '+' || c == '-' || c == '.' || c == ':';
}

/* Digits of base with single underscores between them: "1_000".  Returns
 * the count of digits, or -1 when the shape is wrong. */
static int digits(const char *s, size_t n, int base)
{
    int count = 0;
    bool prev = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '_') {
            if (!prev || i + 1 == n)
                return -1;
            prev = false;
            continue;
        }
        int v = is_digit(c)                              ? c - '0'
                : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                         : 99;
        if (v >= base)
            return -1;
        prev = true;
        count++;
    }
    return prev ? count : -1;
}

static cn_err_t integer(cn__tp_t *t, const char *s, size_t n, cn_toml_val_t *v)
{
    bool neg = false, sign = false;
    int base = 10;
    if (*s == '+' || *s == '-') {
        neg = *s == '-';
        sign = true;
        s++;
        n--;
    }
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
        if (sign)
            return cn__toml_fail(t, "a hexadecimal, octal or binary integer takes no sign");
        base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
        s += 2;
        n -= 2;
    } else if (n >= 2 && s[0] == '0') {
        return cn__toml_fail(t, "leading zeros are not allowed in an integer");
    }
    if (digits(s, n, base) < 0)
        return cn__toml_fail(t, "invalid integer (digits with single underscores between them)");
    uint64_t mag = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_')
            continue;
        unsigned dg = (unsigned)(is_digit(s[i]) ? s[i] - '0' : (s[i] | 0x20) - 'a' + 10);
        if (mag > (UINT64_MAX - dg) / (unsigned)base)
            return cn__toml_fail(t, "integer out of range");
        mag = mag * (unsigned)base + dg;
    }
    if ((!neg && mag > (uint64_t)INT64_MAX) || (neg && mag > (uint64_t)INT64_MAX + 1))
        return cn__toml_fail(t, "integer out of range");
    v->type = CN_TOML_INT;
    v->u.i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return CN_OK;
}

/* [+-] int-part ( '.' digits )? ( [eE] [+-]? digits )?, at least one of the
 * two; or inf / nan with an optional sign. */
static cn_err_t floating(cn__tp_t *t, const char *s, size_t n, cn_toml_val_t *v)
{
    const char *d = s + (*s == '+' || *s == '-');
    size_t dn = n - (size_t)(d - s);
    v->type = CN_TOML_FLOAT;
    if (dn == 3 && (!memcmp(d, "inf", 3) || !memcmp(d, "nan", 3))) {
        v->u.f = d[0] == 'i' ? INFINITY : NAN;
        if (*s == '-')
            v->u.f = -v->u.f;
        return CN_OK;
    }
    size_t ip = strcspn(d, ".eE");
    ip = ip > dn ? dn : ip;
    if (digits(d, ip, 10) < 0 || (d[0] == '0' && ip > 1))
        return cn__toml_fail(t, "invalid float (its integer part)");
    size_t i = ip;
    if (i < dn && d[i] == '.') {
        size_t f = i + 1, e = f;
        while (e < dn && d[e] != 'e' && d[e] != 'E')
            e++;
        if (digits(d + f, e - f, 10) < 0)
            return cn__toml_fail(t, "invalid float (digits must follow the '.')");
        i = e;
    }
    if (i < dn) {
        size_t e = i + 1;
        if (e < dn && (d[e] == '+' || d[e] == '-'))
            e++;
        if (digits(d + e, dn - e, 10) < 0)
            return cn__toml_fail(t, "invalid float (its exponent)");
    }
    char buf[128];
    size_t k = 0;
    for (size_t j = 0; j < n && k + 1 < sizeof buf; j++)
        if (s[j] != '_')
            buf[k++] = s[j];
    if (k + 1 >= sizeof buf)
        return cn__toml_fail(t, "float too long");
    buf[k] = 0;
    v->u.f = strtod(buf, NULL);
    return CN_OK;
}

/* n digits at s as a number; -1 when they are not all digits. */
static int num(const char *s, size_t n)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int days_in(int y, int m)
{
    static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : d[m - 1];
}

/* HH:MM:SS(.frac)? at s; returns the length taken, or -1. */
static long parse_time(const char *s, size_t n, cn_toml_datetime_t *dt)
{
    if (n < 8 || s[2] != ':' || s[5] != ':')
        return -1;
    dt->hour = num(s, 2);
    dt->minute = num(s + 3, 2);
    dt->second = num(s + 6, 2);
    if (dt->hour < 0 || dt->hour > 23 || dt->minute < 0 || dt->minute > 59 || dt->second < 0 ||
        dt->second > 59)
        return -1;
    size_t i = 8;
    if (i < n && s[i] == '.') {
        i++;
        size_t f = i;
        while (i < n && is_digit(s[i])) {
            if (dt->frac_digits < 9) {
                dt->nanosecond = dt->nanosecond * 10 + (uint32_t)(s[i] - '0');
                dt->frac_digits++;
            }
            i++;
        }
        if (i == f)
            return -1;
        for (int k = dt->frac_digits; k < 9; k++)
            dt->nanosecond *= 10;
    }
    return (long)i;
}

/* The four date and time forms; s holds no space (the caller joined a
 * "date time" pair with 'T'). */
static cn_err_t datetime(cn__tp_t *t, const char *s, size_t n, cn_toml_val_t *v)
{
    cn_toml_datetime_t *dt = &v->u.dt;
    memset(dt, 0, sizeof *dt);
    if (n >= 3 && s[2] == ':') {
        if (parse_time(s, n, dt) != (long)n)
            return cn__toml_fail(t, "invalid local time (HH:MM:SS[.fraction])");
        v->type = CN_TOML_TIME_LOCAL;
        return CN_OK;
    }
    if (n < 10 || s[4] != '-' || s[7] != '-' || (dt->year = num(s, 4)) < 0 ||
        (dt->month = num(s + 5, 2)) < 1 || dt->month > 12 || (dt->day = num(s + 8, 2)) < 1 ||
        dt->day > days_in(dt->year, dt->month))
        return cn__toml_fail(t, "invalid date (YYYY-MM-DD, a real day)");
    if (n == 10) {
        v->type = CN_TOML_DATE_LOCAL;
        return CN_OK;
    }
    long tl = (s[10] == 'T' || s[10] == 't') ? parse_time(s + 11, n - 11, dt) : -1;
    if (tl < 0)
        return cn__toml_fail(t, "invalid date-time (YYYY-MM-DDTHH:MM:SS[.fraction][offset])");
    size_t i = 11 + (size_t)tl;
    v->type = CN_TOML_DATETIME_LOCAL;
    if (i == n)
        return CN_OK;
    v->type = CN_TOML_DATETIME;
    if (i + 1 == n && (s[i] == 'Z' || s[i] == 'z'))
        return CN_OK;
    int oh, om;
    if (n - i != 6 || (s[i] != '+' && s[i] != '-') || s[i + 3] != ':' ||
        (oh = num(s + i + 1, 2)) < 0 || oh > 23 || (om = num(s + i + 4, 2)) < 0 || om > 59)
        return cn__toml_fail(t, "invalid offset of a date-time (Z or +HH:MM)");
    dt->offset_minutes = (s[i] == '-' ? -1 : 1) * (oh * 60 + om);
    return CN_OK;
}

/* Cuts the token at the cursor; a date followed by a space and a time is
 * one token, joined with 'T' in buf. */
static size_t cut_token(cn__tp_t *t, char *buf, size_t cap)
{
    const char *s = t->p;
    while (t->p < t->end && is_tokch(*t->p))
        t->p++;
    size_t n = (size_t)(t->p - s);
    if (n == 10 && s[4] == '-' && s[7] == '-' && t->end - t->p >= 4 && t->p[0] == ' ' &&
        is_digit(t->p[1]) && is_digit(t->p[2]) && t->p[3] == ':') {
        t->p++;
        while (t->p < t->end && is_tokch(*t->p))
            t->p++;
        n = (size_t)(t->p - s);
    }
    if (n >= cap)
        return n;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (n > 10 && buf[10] == ' ')
        buf[10] = 'T';
    return n;
}

cn_err_t cn__toml_scalar(cn__tp_t *t, cn_toml_val_t **out)
{
    cn_toml_val_t *v = cn__toml_new(t, CN_TOML_INT);
    if (!v)
        return t->rc;
    const char *at = t->p;
    char tok[128];
    size_t n = cut_token(t, tok, sizeof tok);
    if (n >= sizeof tok)
        return cn__toml_fail(t, "value too long");
    cn_err_t e;
    const char *d = tok + (tok[0] == '+' || tok[0] == '-'); /* past the sign */
    t->p = at;                                              /* errors name the token's start */
    if (n == 0) {
        e = cn__toml_fail(t, "expected a value");
    } else if (!strcmp(tok, "true") || !strcmp(tok, "false")) {
        v->type = CN_TOML_BOOL;
        v->u.b = tok[0] == 't';
        e = CN_OK;
    } else if (strchr(tok, ':') || (n >= 10 && tok[4] == '-' && is_digit(tok[0]))) {
        e = datetime(t, tok, n, v);
    } else if (!strcmp(d, "inf") || !strcmp(d, "nan") ||
               (is_digit(d[0]) && !(d[0] == '0' && d[1] == 'x') && strpbrk(d, ".eE"))) {
        e = floating(t, tok, n, v);
    } else if (is_digit(tok[0]) || ((tok[0] == '+' || tok[0] == '-') && n > 1)) {
        e = integer(t, tok, n, v);
    } else {
        e = cn__toml_fail(t, "invalid value '%s' (strings need quotes)", tok);
    }
    if (e)
        return e;
    t->p = at + n;
    *out = v;
    return CN_OK;
}

/* Whitespace, newlines and comments inside an array. */
static cn_err_t array_ws(cn__tp_t *t)
{
    for (;;) {
        cn__toml_ws(t);
        CN_TRY(cn__toml_comment(t));
        if (!cn__toml_newline(t))
            return CN_OK;
    }
}

static cn_err_t array(cn__tp_t *t, cn_toml_val_t *a, int depth)
{
    t->p++; /* [ */
    for (;;) {
        CN_TRY(array_ws(t));
        if (t->p < t->end && *t->p == ']')
            break;
        cn_toml_val_t *item = NULL;
        CN_TRY(cn__toml_value(t, &item, depth + 1));
        CN_TRY(cn__toml_push(t, a, item));
        CN_TRY(array_ws(t));
        if (t->p < t->end && *t->p == ',') {
            t->p++;
            continue;
        }
        if (t->p < t->end && *t->p == ']')
            break;
        return cn__toml_fail(t, "expected ',' or ']' in an array");
    }
    t->p++;
    return CN_OK;
}

/* { k = v, ... } on one line, no trailing comma; every table in it is
 * immutable afterwards (CN__TT_INLINE). */
static cn_err_t inline_table(cn__tp_t *t, cn_toml_val_t *tab, int depth)
{
    t->p++; /* { */
    cn__toml_ws(t);
    if (t->p < t->end && *t->p == '}') {
        t->p++;
        return CN_OK;
    }
    for (;;) {
        CN_TRY(cn__toml_keyval(t, tab, depth + 1, true));
        cn__toml_ws(t);
        if (t->p < t->end && *t->p == ',') {
            t->p++;
            cn__toml_ws(t);
            if (t->p < t->end && *t->p == '}')
                return cn__toml_fail(t, "an inline table has no trailing comma");
            continue;
        }
        if (t->p < t->end && *t->p == '}') {
            t->p++;
            return CN_OK;
        }
        return cn__toml_fail(t, "expected ',' or '}' in an inline table (on one line, no "
                                "trailing comma)");
    }
}

cn_err_t cn__toml_value(cn__tp_t *t, cn_toml_val_t **out, int depth)
{
    if (t->p == t->end)
        return cn__toml_fail(t, "expected a value");
    char c = *t->p;
    if (c == '"' || c == '\'') {
        cn_toml_val_t *v = cn__toml_new(t, CN_TOML_STRING);
        if (!v)
            return t->rc;
        CN_TRY(cn__toml_string(t, &v->s, &v->slen, false));
        *out = v;
        return CN_OK;
    }
    if (c != '[' && c != '{')
        return cn__toml_scalar(t, out);
    if (depth >= CN__TOML_MAX_DEPTH)
        return cn__toml_fail(t, "arrays and inline tables nested too deeply (more than %d)",
                             CN__TOML_MAX_DEPTH);
    cn_toml_val_t *v = cn__toml_new(t, c == '[' ? CN_TOML_ARRAY : CN_TOML_TABLE);
    if (!v)
        return t->rc;
    v->kind = CN__TT_INLINE;
    CN_TRY(c == '[' ? array(t, v, depth) : inline_table(t, v, depth));
    *out = v;
    return CN_OK;
}
