/* A strict TOML subset for configuration (include/cairn/toml.h).
 *
 * A recursive-descent parser over the whole text with one cursor.  Anything
 * outside the subset is an error naming its line: a configuration file that
 * is half understood is worse than one refused. */
#include "cairn/toml.h"
#include "cairn/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CN__TOML_MAX_DEPTH 32

struct cn_toml_val {
    cn_toml_type_t type;
    char *key;
    int line;
    bool header; /* a table named by a [header] (or the root) */
    int64_t i;
    bool b;
    char *s;
    cn_toml_val_t **kids; /* table entries or array items */
    size_t n, cap;
};

struct cn_toml {
    cn_toml_val_t *root;
};

typedef struct {
    const char *p, *end;
    int line;
    char *err;
    size_t errlen;
    cn_err_t rc;
} cn__tp_t;

static cn_err_t tfail(cn__tp_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cn_err_t tfail(cn__tp_t *t, const char *fmt, ...)
{
    if (t->rc)
        return t->rc;
    t->rc = CN_E_INVALID;
    if (t->err && t->errlen) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(t->err, t->errlen, "line %d: %s", t->line, msg);
    }
    return t->rc;
}

static cn_err_t tnomem(cn__tp_t *t)
{
    if (!t->rc) {
        t->rc = -ENOMEM;
        if (t->err && t->errlen)
            snprintf(t->err, t->errlen, "out of memory");
    }
    return t->rc;
}

/* ---- values ------------------------------------------------------------------ */
static void tval_free(cn_toml_val_t *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++)
        tval_free(v->kids[i]);
    free(v->kids);
    free(v->key);
    free(v->s);
    free(v);
}

static cn_toml_val_t *tval_new(cn__tp_t *t, cn_toml_type_t type)
{
    cn_toml_val_t *v = calloc(1, sizeof *v);
    if (!v) {
        tnomem(t);
        return NULL;
    }
    v->type = type;
    v->line = t->line;
    return v;
}

static cn_err_t tval_add(cn__tp_t *t, cn_toml_val_t *parent, cn_toml_val_t *kid)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 4;
        cn_toml_val_t **k = realloc(parent->kids, cap * sizeof *k);
        if (!k)
            return tnomem(t);
        parent->kids = k;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return CN_OK;
}

static cn_toml_val_t *tfind(const cn_toml_val_t *table, const char *key)
{
    for (size_t i = 0; i < table->n; i++)
        if (strcmp(table->kids[i]->key, key) == 0)
            return table->kids[i];
    return NULL;
}

/* ---- lexing ------------------------------------------------------------------ */
static void tws(cn__tp_t *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t'))
        t->p++;
}

/* A comment runs to the end of the line; control characters other than tab
 * are not allowed in it. */
static cn_err_t tcomment(cn__tp_t *t)
{
    if (t->p < t->end && *t->p == '#') {
        while (t->p < t->end && *t->p != '\n') {
            unsigned char c = (unsigned char)*t->p;
            if ((c < 0x20 && c != '\t' && !(c == '\r' && t->p + 1 < t->end && t->p[1] == '\n')) ||
                c == 0x7f)
                return tfail(t, "control character in a comment");
            t->p++;
        }
    }
    return CN_OK;
}

/* Consumes a newline (\n or \r\n).  Returns false when none is here. */
static bool tnewline(cn__tp_t *t)
{
    if (t->p < t->end && *t->p == '\n') {
        t->p++;
        t->line++;
        return true;
    }
    if (t->end - t->p >= 2 && t->p[0] == '\r' && t->p[1] == '\n') {
        t->p += 2;
        t->line++;
        return true;
    }
    return false;
}

/* After an expression: spaces, an optional comment, then end of line or file. */
static cn_err_t tline_end(cn__tp_t *t)
{
    tws(t);
    CN_TRY(tcomment(t));
    if (t->p == t->end || tnewline(t))
        return CN_OK;
    return tfail(t, "unexpected '%c' after the value", *t->p);
}

static void tput_utf8(cn_buf_t *b, uint32_t cp)
{
    uint8_t o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        o[0] = (uint8_t)(0xf0 | cp >> 18);
        o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
        o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[3] = (uint8_t)(0x80 | (cp & 0x3f));
        n = 4;
    }
    cn_buf_append(b, o, n);
}

/* A basic "..." or literal '...' string at the cursor; *out is malloc'd. */
static cn_err_t tstring(cn__tp_t *t, char **out)
{
    char q = *t->p;
    if (t->end - t->p >= 3 && t->p[1] == q && t->p[2] == q)
        return tfail(t, "multi-line strings are not supported");
    t->p++;
    cn_buf_t b = { 0 };
    cn_err_t e = CN_OK;
    for (;;) {
        if (t->p == t->end || *t->p == '\n' || *t->p == '\r') {
            e = tfail(t, "unterminated string");
            goto out;
        }
        unsigned char c = (unsigned char)*t->p;
        if (c == (unsigned char)q) {
            t->p++;
            break;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            e = tfail(t, "control character in a string (use an escape)");
            goto out;
        }
        if (c == '\\' && q == '"') {
            t->p++;
            if (t->p == t->end) {
                e = tfail(t, "unterminated string");
                goto out;
            }
            char x = *t->p++;
            const char *map = "b\bt\tn\nf\fr\r\"\"\\\\";
            const char *m = strchr(map, x);
            if (m && (m - map) % 2 == 0 && x) {
                cn_buf_put_u8(&b, (uint8_t)m[1]);
                continue;
            }
            if (x != 'u' && x != 'U') {
                e = tfail(t, "unknown escape '\\%c'", x);
                goto out;
            }
            int nd = x == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int i = 0; i < nd; i++) {
                if (t->p == t->end) {
                    e = tfail(t, "short \\%c escape", x);
                    goto out;
                }
                char h = *t->p++;
                int v = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
                if (v < 0) {
                    e = tfail(t, "bad hex digit in \\%c escape", x);
                    goto out;
                }
                cp = cp << 4 | (uint32_t)v;
            }
            if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
                e = tfail(t, "escape is not an allowed Unicode scalar value");
                goto out;
            }
            tput_utf8(&b, cp);
            continue;
        }
        cn_buf_put_u8(&b, c);
        t->p++;
    }
    if (cn_buf_put_u8(&b, 0) < 0) {
        e = tnomem(t);
        goto out;
    }
    *out = (char *)b.data;
    return CN_OK;
out:
    cn_buf_free(&b);
    return e;
}

static bool tbare(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* One simple key (bare or quoted); *out is malloc'd. */
static cn_err_t tkey(cn__tp_t *t, char **out)
{
    if (t->p < t->end && (*t->p == '"' || *t->p == '\''))
        return tstring(t, out);
    const char *s = t->p;
    while (t->p < t->end && tbare(*t->p))
        t->p++;
    if (t->p == s)
        return tfail(t, "expected a key");
    *out = strndup(s, (size_t)(t->p - s));
    return *out ? CN_OK : tnomem(t);
}

/* ---- values ------------------------------------------------------------------- */
static cn_err_t tvalue(cn__tp_t *t, cn_toml_val_t **out, int depth);

static cn_err_t tinteger(cn__tp_t *t, cn_toml_val_t **out)
{
    const char *s = t->p;
    while (t->p < t->end && (tbare(*t->p) || *t->p == '+' || *t->p == '.' || *t->p == ':'))
        t->p++;
    size_t n = (size_t)(t->p - s);
    char tok[64];
    if (n >= sizeof tok)
        return tfail(t, "value too long");
    memcpy(tok, s, n);
    tok[n] = 0;
    if (!strcmp(tok, "true") || !strcmp(tok, "false")) {
        cn_toml_val_t *v = tval_new(t, CN_TOML_BOOL);
        if (!v)
            return t->rc;
        v->b = tok[0] == 't';
        *out = v;
        return CN_OK;
    }
    const char *d = tok;
    bool neg = false;
    if (*d == '+' || *d == '-')
        neg = *d++ == '-';
    if (d[0] == '0' && (d[1] == 'x' || d[1] == 'o' || d[1] == 'b'))
        return tfail(t, "hexadecimal, octal and binary integers are not supported");
    if (strpbrk(tok, ".:") || (d[0] >= '0' && d[0] <= '9' && strchr(d, '-')) ||
        strstr(tok, "inf") || strstr(tok, "nan") ||
        ((strchr(tok, 'e') || strchr(tok, 'E')) && d[0] >= '0' && d[0] <= '9'))
        return tfail(t, "floats, dates and times are not supported");
    if (!*d)
        return tfail(t, "expected a value");
    if (d[0] == '0' && d[1])
        return tfail(t, "leading zeros are not allowed in an integer");
    uint64_t mag = 0;
    bool prev_digit = false;
    for (const char *c = d; *c; c++) {
        if (*c == '_') {
            if (!prev_digit || !c[1])
                return tfail(t, "an underscore must sit between digits");
            prev_digit = false;
            continue;
        }
        if (*c < '0' || *c > '9')
            return tfail(t, "invalid value '%s' (strings need quotes)", tok);
        unsigned dg = (unsigned)(*c - '0');
        if (mag > (UINT64_MAX - dg) / 10)
            return tfail(t, "integer out of range");
        mag = mag * 10 + dg;
        prev_digit = true;
    }
    if (!prev_digit)
        return tfail(t, "an underscore must sit between digits");
    if ((!neg && mag > (uint64_t)INT64_MAX) || (neg && mag > (uint64_t)INT64_MAX + 1))
        return tfail(t, "integer out of range");
    cn_toml_val_t *v = tval_new(t, CN_TOML_INT);
    if (!v)
        return t->rc;
    v->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    *out = v;
    return CN_OK;
}

/* Whitespace, newlines and comments inside an array. */
static cn_err_t tarray_ws(cn__tp_t *t)
{
    for (;;) {
        tws(t);
        CN_TRY(tcomment(t));
        if (!tnewline(t))
            return CN_OK;
    }
}

static cn_err_t tarray(cn__tp_t *t, cn_toml_val_t **out, int depth)
{
    if (depth >= CN__TOML_MAX_DEPTH)
        return tfail(t, "arrays nested too deeply");
    cn_toml_val_t *a = tval_new(t, CN_TOML_ARRAY);
    if (!a)
        return t->rc;
    t->p++; /* [ */
    for (;;) {
        if (tarray_ws(t) < 0)
            goto fail;
        if (t->p < t->end && *t->p == ']') {
            t->p++;
            break;
        }
        cn_toml_val_t *item = NULL;
        if (tvalue(t, &item, depth + 1) < 0)
            goto fail;
        if (tval_add(t, a, item) < 0) {
            tval_free(item);
            goto fail;
        }
        if (tarray_ws(t) < 0)
            goto fail;
        if (t->p < t->end && *t->p == ',') {
            t->p++;
            continue;
        }
        if (t->p < t->end && *t->p == ']') {
            t->p++;
            break;
        }
        tfail(t, "expected ',' or ']' in an array");
        goto fail;
    }
    *out = a;
    return CN_OK;
fail:
    tval_free(a);
    return t->rc;
}

static cn_err_t tvalue(cn__tp_t *t, cn_toml_val_t **out, int depth)
{
    if (t->p == t->end)
        return tfail(t, "expected a value");
    char c = *t->p;
    if (c == '"' || c == '\'') {
        cn_toml_val_t *v = tval_new(t, CN_TOML_STRING);
        if (!v)
            return t->rc;
        if (tstring(t, &v->s) < 0) {
            tval_free(v);
            return t->rc;
        }
        *out = v;
        return CN_OK;
    }
    if (c == '[')
        return tarray(t, out, depth);
    if (c == '{')
        return tfail(t, "inline tables are not supported; use a [table] header");
    return tinteger(t, out);
}

/* ---- expressions ---------------------------------------------------------------- */
static cn_err_t theader(cn__tp_t *t, cn_toml_val_t *root, cn_toml_val_t **cur)
{
    t->p++; /* [ */
    if (t->p < t->end && *t->p == '[')
        return tfail(t, "arrays of tables are not supported");
    cn_toml_val_t *tab = root;
    for (int depth = 0;; depth++) {
        if (depth == CN__TOML_MAX_DEPTH)
            return tfail(t, "table header nested too deeply");
        tws(t);
        char *k = NULL;
        CN_TRY(tkey(t, &k));
        cn_toml_val_t *next = tfind(tab, k);
        if (next && next->type != CN_TOML_TABLE) {
            tfail(t, "'%s' is already a value (line %d), not a table", k, next->line);
            free(k);
            return t->rc;
        }
        if (!next) {
            next = tval_new(t, CN_TOML_TABLE);
            if (!next || tval_add(t, tab, next) < 0) {
                free(k);
                free(next);
                return tnomem(t);
            }
            next->key = k;
        } else {
            free(k);
        }
        tab = next;
        tws(t);
        if (t->p < t->end && *t->p == '.') {
            t->p++;
            continue;
        }
        if (t->p < t->end && *t->p == ']') {
            t->p++;
            break;
        }
        return tfail(t, "expected '.' or ']' in a table header");
    }
    if (tab->header)
        return tfail(t, "table '%s' is defined twice (first at line %d)", tab->key, tab->line);
    tab->header = true;
    tab->line = t->line;
    *cur = tab;
    return tline_end(t);
}

static cn_err_t tkeyval(cn__tp_t *t, cn_toml_val_t *cur)
{
    int line = t->line;
    char *k = NULL;
    CN_TRY(tkey(t, &k));
    tws(t);
    if (t->p < t->end && *t->p == '.') {
        free(k);
        return tfail(t, "dotted keys are not supported; use a [table] header");
    }
    if (t->p == t->end || *t->p != '=') {
        free(k);
        return tfail(t, "expected '=' after the key");
    }
    t->p++;
    tws(t);
    cn_toml_val_t *old = tfind(cur, k);
    if (old) {
        tfail(t, "key '%s' is defined twice (first at line %d)", k, old->line);
        free(k);
        return t->rc;
    }
    cn_toml_val_t *v = NULL;
    if (tvalue(t, &v, 0) < 0) {
        free(k);
        return t->rc;
    }
    v->key = k;
    v->line = line;
    if (tval_add(t, cur, v) < 0) {
        tval_free(v);
        return t->rc;
    }
    return tline_end(t);
}

cn_err_t cn_toml_parse(const char *text, size_t len, cn_toml_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = 0;
    cn__tp_t t = { .p = text, .end = text + len, .line = 1, .err = err, .errlen = errlen };
    if (memchr(text, 0, len))
        return tfail(&t, "NUL byte in the file");
    if (!cn_utf8_valid((const unsigned char *)text, len))
        return tfail(&t, "the file is not valid UTF-8");
    cn_toml_t *doc = calloc(1, sizeof *doc);
    if (!doc || !(doc->root = tval_new(&t, CN_TOML_TABLE))) {
        free(doc);
        return tnomem(&t);
    }
    doc->root->header = true;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        t.p += 3; /* a UTF-8 byte order mark */
    cn_toml_val_t *cur = doc->root;
    while (t.p < t.end) {
        tws(&t);
        if (tcomment(&t) < 0)
            break;
        if (tnewline(&t) || t.p == t.end)
            continue;
        if (*t.p == '[') {
            if (theader(&t, doc->root, &cur) < 0)
                break;
        } else if (tkeyval(&t, cur) < 0) {
            break;
        }
    }
    if (t.rc) {
        cn_toml_free(doc);
        return t.rc;
    }
    *out = doc;
    return CN_OK;
}

cn_err_t cn_toml_load(const char *path, cn_toml_t **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cn_err_t e = -errno;
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(-e));
        return e;
    }
    struct stat st;
    cn_err_t e = CN_OK;
    char *buf = NULL;
    if (fstat(fd, &st) < 0) {
        e = -errno;
        goto out_errno;
    }
    if (st.st_size > (off_t)CN_TOML_MAX_BYTES) {
        e = CN_E_TOO_LARGE;
        if (err && errlen)
            snprintf(err, errlen, "%s: larger than %u bytes", path, CN_TOML_MAX_BYTES);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        e = -ENOMEM;
        goto out_errno;
    }
    long long n = cn_read_full(fd, buf, (size_t)st.st_size);
    if (n < 0) {
        e = (cn_err_t)n;
        goto out_errno;
    }
    e = cn_toml_parse(buf, (size_t)n, out, err, errlen);
    if (e < 0 && err && errlen) {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "%s: %s", path, tmp);
    }
    goto out;
out_errno:
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", path, strerror(-e));
out:
    free(buf);
    close(fd);
    return e;
}

void cn_toml_free(cn_toml_t *doc)
{
    if (!doc)
        return;
    tval_free(doc->root);
    free(doc);
}

const cn_toml_val_t *cn_toml_root(const cn_toml_t *doc)
{
    return doc->root;
}

const cn_toml_val_t *cn_toml_get(const cn_toml_val_t *table, const char *path)
{
    const cn_toml_val_t *v = table;
    while (v && *path) {
        if (v->type != CN_TOML_TABLE)
            return NULL;
        /* Compared in place: a key of any length the parser took is found. */
        size_t n = strcspn(path, ".");
        const cn_toml_val_t *hit = NULL;
        for (size_t i = 0; i < v->n && !hit; i++)
            if (strncmp(v->kids[i]->key, path, n) == 0 && v->kids[i]->key[n] == 0)
                hit = v->kids[i];
        v = hit;
        path += n;
        if (*path == '.')
            path++;
    }
    return v;
}

cn_toml_type_t cn_toml_type(const cn_toml_val_t *v)
{
    return v->type;
}
int cn_toml_line(const cn_toml_val_t *v)
{
    return v->line;
}
const char *cn_toml_key(const cn_toml_val_t *v)
{
    return v->key;
}

cn_err_t cn_toml_int(const cn_toml_val_t *v, int64_t *out)
{
    if (!v || v->type != CN_TOML_INT)
        return CN_E_INVALID;
    *out = v->i;
    return CN_OK;
}

cn_err_t cn_toml_bool(const cn_toml_val_t *v, bool *out)
{
    if (!v || v->type != CN_TOML_BOOL)
        return CN_E_INVALID;
    *out = v->b;
    return CN_OK;
}

const char *cn_toml_str(const cn_toml_val_t *v)
{
    return v && v->type == CN_TOML_STRING ? v->s : NULL;
}

size_t cn_toml_len(const cn_toml_val_t *v)
{
    return v && (v->type == CN_TOML_TABLE || v->type == CN_TOML_ARRAY) ? v->n : 0;
}

const cn_toml_val_t *cn_toml_at(const cn_toml_val_t *v, size_t i)
{
    return i < cn_toml_len(v) ? v->kids[i] : NULL;
}
