/* Documents, tables and the public API of the TOML 1.0.0 parser
 * (include/cairn/toml.h).
 *
 * A recursive-descent parser over the whole text with one cursor; the
 * lexical pieces are in toml_lex.c and the values in toml_value.c.  This
 * file owns the arena, the (table, key) index and TOML's redefinition
 * rules: a key is set once; a [header] defines a table once and never one a
 * dotted key or an inline table made; dotted keys extend tables that dotted
 * keys made or that a header only implied (which then no header may
 * define), never one a header named; inline tables and static arrays are
 * immutable; [[header]] appends only to an array that [[header]] made. */
#include "toml_int.h"
#include "cairn/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors ------------------------------------------------------------------ */
int cn__toml_col(cn__tp_t *t, const char *bol, const char *at)
{
    if (t->col_bol != bol || t->col_at > at) {
        t->col_bol = t->col_at = bol;
        t->col = 1;
    }
    for (; t->col_at < at; t->col_at++)
        if (((unsigned char)*t->col_at & 0xc0) != 0x80)
            t->col++;
    return t->col;
}

cn_err_t cn__toml_fail(cn__tp_t *t, const char *fmt, ...)
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
        snprintf(t->err, t->errlen, "line %d, column %d: %s", t->line,
                 cn__toml_col(t, t->bol, t->p < t->end ? t->p : t->end), msg);
    }
    return t->rc;
}

cn_err_t cn__toml_nomem(cn__tp_t *t)
{
    if (!t->rc) {
        t->rc = -ENOMEM;
        if (t->err && t->errlen)
            snprintf(t->err, t->errlen, "out of memory");
    }
    return t->rc;
}

/* ---- the arena ---------------------------------------------------------------- */
void *cn__toml_alloc(cn__tp_t *t, size_t n)
{
    cn_toml_t *d = t->doc;
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    cn__arena_chunk_t *c = d->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        if (d->arena_bytes + cap > d->arena_limit) {
            cn__toml_fail(t, "the document needs more memory than its size allows");
            return NULL;
        }
        c = malloc(sizeof *c + cap);
        if (!c) {
            cn__toml_nomem(t);
            return NULL;
        }
        c->cap = cap;
        c->used = 0;
        c->next = d->chunks;
        d->chunks = c;
        d->arena_bytes += cap;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

cn_toml_val_t *cn__toml_new(cn__tp_t *t, cn_toml_type_t type)
{
    cn_toml_val_t *v = cn__toml_alloc(t, sizeof *v);
    if (!v)
        return NULL;
    memset(v, 0, sizeof *v);
    v->type = type;
    v->line = t->line;
    v->col = cn__toml_col(t, t->bol, t->p);
    return v;
}

cn_err_t cn__toml_push(cn__tp_t *t, cn_toml_val_t *parent, cn_toml_val_t *kid)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 4;
        cn_toml_val_t **k = cn__toml_alloc(t, cap * sizeof *k);
        if (!k)
            return t->rc;
        if (parent->n)
            memcpy(k, parent->kids, parent->n * sizeof *k);
        parent->kids = k;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    kid->parent = parent;
    return CN_OK;
}

/* ---- the (table, key) index ------------------------------------------------------ */
static size_t key_hash(const cn_toml_val_t *table, const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)table;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
    return (size_t)(h ^ h >> 29);
}

cn_toml_val_t *cn__toml_find(cn__tp_t *t, const cn_toml_val_t *table, const char *key, size_t len)
{
    cn_toml_t *d = t->doc;
    if (!d->map_cap)
        return NULL;
    for (size_t i = key_hash(table, key, len) & (d->map_cap - 1);; i = (i + 1) & (d->map_cap - 1)) {
        cn_toml_val_t *v = d->map[i];
        if (!v)
            return NULL;
        if (v->parent == table && v->keylen == len && memcmp(v->key, key, len) == 0)
            return v;
    }
}

static void map_insert(cn_toml_t *d, cn_toml_val_t *v)
{
    size_t i = key_hash(v->parent, v->key, v->keylen) & (d->map_cap - 1);
    while (d->map[i])
        i = (i + 1) & (d->map_cap - 1);
    d->map[i] = v;
    d->map_n++;
}

cn_err_t cn__toml_put(cn__tp_t *t, cn_toml_val_t *table, cn_toml_val_t *kid, const char *key,
                      size_t len)
{
    cn_toml_t *d = t->doc;
    if ((d->map_n + 1) * 2 > d->map_cap) {
        size_t cap = d->map_cap ? d->map_cap * 2 : 64;
        cn_toml_val_t **old = d->map;
        size_t oldcap = d->map_cap;
        d->map = calloc(cap, sizeof *d->map);
        if (!d->map) {
            d->map = old;
            return cn__toml_nomem(t);
        }
        d->map_cap = cap;
        d->map_n = 0;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i])
                map_insert(d, old[i]);
        free(old);
    }
    kid->key = (char *)key;
    kid->keylen = len;
    CN_TRY(cn__toml_push(t, table, kid));
    map_insert(d, kid);
    return CN_OK;
}

/* ---- tables and the redefinition rules ------------------------------------------------ */
static cn_err_t refuse_key(cn__tp_t *t, const cn__tkeys_t *keys, size_t i, const cn_toml_val_t *old,
                           const char *why)
{
    t->p = keys->at[i]; /* the message names the key's own position */
    t->bol = keys->bol;
    t->line = keys->line;
    size_t n = keys->len[i] > 60 ? 60 : keys->len[i];
    while (n < keys->len[i] && n > 0 && ((unsigned char)keys->k[i][n] & 0xc0) == 0x80)
        n--; /* the message stays UTF-8 */
    return cn__toml_fail(t, "key '%.*s' %s (line %d)", (int)n, keys->k[i], why, old->line);
}

cn_err_t cn__toml_assign(cn__tp_t *t, cn_toml_val_t *table, const cn__tkeys_t *keys,
                         cn_toml_val_t *value, bool in_inline)
{
    for (size_t i = 0; i + 1 < keys->n; i++) {
        cn_toml_val_t *next = cn__toml_find(t, table, keys->k[i], keys->len[i]);
        if (next) {
            if (next->type != CN_TOML_TABLE)
                return refuse_key(t, keys, i, next, "is already a value, not a table");
            if (next->kind == CN__TT_DEFINED || (next->kind == CN__TT_INLINE) != in_inline)
                return refuse_key(t, keys, i, next, "names a table defined elsewhere");
            next->kind =
                in_inline ? CN__TT_INLINE : CN__TT_DOTTED; /* no header may define it now */
        } else {
            next = cn__toml_new(t, CN_TOML_TABLE);
            if (!next)
                return t->rc;
            next->kind = in_inline ? CN__TT_INLINE : CN__TT_DOTTED;
            next->line = keys->line;
            next->col = keys->col[i];
            CN_TRY(cn__toml_put(t, table, next, keys->k[i], keys->len[i]));
        }
        table = next;
    }
    size_t last = keys->n - 1;
    cn_toml_val_t *old = cn__toml_find(t, table, keys->k[last], keys->len[last]);
    if (old)
        return refuse_key(t, keys, last, old, "is defined twice, first");
    value->line = keys->line;
    value->col = keys->col[0];
    return cn__toml_put(t, table, value, keys->k[last], keys->len[last]);
}

/* Walks a header's key path but its last component, creating implicit
 * tables; an array of tables stands for its last element. */
static cn_err_t header_walk(cn__tp_t *t, const cn__tkeys_t *keys, cn_toml_val_t **out)
{
    cn_toml_val_t *tab = t->doc->root;
    for (size_t i = 0; i + 1 < keys->n; i++) {
        cn_toml_val_t *next = cn__toml_find(t, tab, keys->k[i], keys->len[i]);
        if (!next) {
            next = cn__toml_new(t, CN_TOML_TABLE);
            if (!next)
                return t->rc;
            next->kind = CN__TT_IMPLICIT;
            next->line = keys->line;
            next->col = keys->col[i];
            CN_TRY(cn__toml_put(t, tab, next, keys->k[i], keys->len[i]));
        } else if (next->type == CN_TOML_ARRAY && next->aot) {
            next = next->kids[next->n - 1];
        } else if (next->type != CN_TOML_TABLE) {
            return refuse_key(t, keys, i, next, "is already a value, not a table");
        } else if (next->kind == CN__TT_INLINE) {
            return refuse_key(t, keys, i, next, "is an inline table, which cannot be extended");
        }
        tab = next;
    }
    *out = tab;
    return CN_OK;
}

/* [a.b] or [[a.b]] at the cursor; *cur becomes the table that follows. */
static cn_err_t header(cn__tp_t *t, cn_toml_val_t **cur)
{
    bool aot = t->end - t->p >= 2 && t->p[1] == '[';
    t->p += aot ? 2 : 1;
    cn__toml_ws(t);
    cn__tkeys_t keys;
    CN_TRY(cn__toml_keys(t, &keys));
    if (t->p == t->end || *t->p != ']' || (aot && (t->end - t->p < 2 || t->p[1] != ']')))
        return cn__toml_fail(t, aot ? "expected ']]' to end the header"
                                    : "expected '.' or ']' in a "
                                      "table header");
    t->p += aot ? 2 : 1;
    cn_toml_val_t *parent = NULL;
    CN_TRY(header_walk(t, &keys, &parent));
    size_t last = keys.n - 1;
    cn_toml_val_t *old = cn__toml_find(t, parent, keys.k[last], keys.len[last]);
    cn_toml_val_t *tab = cn__toml_new(t, CN_TOML_TABLE);
    if (!tab)
        return t->rc;
    tab->kind = CN__TT_DEFINED;
    tab->line = keys.line;
    tab->col = keys.col[last];
    if (aot) {
        if (old && !(old->type == CN_TOML_ARRAY && old->aot))
            return refuse_key(t, &keys, last, old, "is already defined, not as an array of tables");
        if (!old) {
            old = cn__toml_new(t, CN_TOML_ARRAY);
            if (!old)
                return t->rc;
            old->aot = true;
            old->line = tab->line;
            old->col = tab->col;
            CN_TRY(cn__toml_put(t, parent, old, keys.k[last], keys.len[last]));
        }
        CN_TRY(cn__toml_push(t, old, tab));
    } else if (old) {
        if (old->type != CN_TOML_TABLE)
            return refuse_key(t, &keys, last, old, "is already a value, not a table");
        if (old->kind != CN__TT_IMPLICIT)
            return refuse_key(t, &keys, last, old, "is defined twice, first");
        old->kind = CN__TT_DEFINED;
        tab = old;
    } else {
        CN_TRY(cn__toml_put(t, parent, tab, keys.k[last], keys.len[last]));
    }
    *cur = tab;
    return CN_OK;
}

/* After an expression: spaces, an optional comment, then end of line or file. */
static cn_err_t line_end(cn__tp_t *t)
{
    cn__toml_ws(t);
    CN_TRY(cn__toml_comment(t));
    if (t->p == t->end || cn__toml_newline(t))
        return CN_OK;
    unsigned char c = (unsigned char)*t->p;
    if (c > 0x20 && c < 0x7f)
        return cn__toml_fail(t, "unexpected '%c' after the value (one expression a line)", c);
    return cn__toml_fail(t, "unexpected character 0x%02x after the value (one expression a line)",
                         c);
}

cn_err_t cn__toml_keyval(cn__tp_t *t, cn_toml_val_t *table, int depth, bool in_inline)
{
    cn__tkeys_t keys;
    CN_TRY(cn__toml_keys(t, &keys));
    if (t->p == t->end || *t->p != '=')
        return cn__toml_fail(t, "expected '=' after the key");
    t->p++;
    cn__toml_ws(t);
    cn_toml_val_t *v = NULL;
    CN_TRY(cn__toml_value(t, &v, depth));
    return cn__toml_assign(t, table, &keys, v, in_inline);
}

static cn_err_t parse_body(cn__tp_t *t)
{
    cn_toml_val_t *cur = t->doc->root;
    if (t->end - t->p >= 3 && memcmp(t->p, "\xef\xbb\xbf", 3) == 0)
        t->p += 3; /* a UTF-8 byte order mark */
    while (t->p < t->end) {
        cn__toml_ws(t);
        CN_TRY(cn__toml_comment(t));
        if (cn__toml_newline(t) || t->p == t->end)
            continue;
        if (*t->p == '[')
            CN_TRY(header(t, &cur));
        else
            CN_TRY(cn__toml_keyval(t, cur, 0, false));
        CN_TRY(line_end(t));
    }
    return CN_OK;
}

/* Finds where the first NUL byte sits, for the message. */
static cn_err_t refuse_nul(cn__tp_t *t, const char *nul)
{
    for (; t->p < nul; t->p++)
        if (*t->p == '\n') {
            t->line++;
            t->bol = t->p + 1;
        }
    return cn__toml_fail(t, "NUL byte in the file");
}

cn_err_t cn_toml_parse(const char *text, size_t len, cn_toml_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = 0;
    cn__tp_t t = {
        .p = text, .end = text + len, .bol = text, .line = 1, .err = err, .errlen = errlen
    };
    if (len > CN_TOML_MAX_BYTES) {
        if (err && errlen)
            snprintf(err, errlen, "larger than %u bytes", CN_TOML_MAX_BYTES);
        return CN_E_TOO_LARGE;
    }
    const char *nul = memchr(text, 0, len);
    if (nul)
        return refuse_nul(&t, nul);
    if (!cn_utf8_valid((const unsigned char *)text, len))
        return cn__toml_fail(&t, "the file is not valid UTF-8");
    cn_toml_t *doc = calloc(1, sizeof *doc);
    if (!doc)
        return cn__toml_nomem(&t);
    doc->arena_limit = 128 * len + (1u << 20);
    t.doc = doc;
    doc->root = cn__toml_new(&t, CN_TOML_TABLE);
    if (doc->root)
        doc->root->kind = CN__TT_DEFINED;
    if (!t.rc)
        parse_body(&t);
    free(doc->map); /* lookups after parsing walk the tables */
    doc->map = NULL;
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
    for (cn__arena_chunk_t *c = doc->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(doc->map);
    free(doc);
}

/* ---- reading ---------------------------------------------------------------------- */
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
            if (v->kids[i]->keylen == n && memcmp(v->kids[i]->key, path, n) == 0)
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
int cn_toml_column(const cn_toml_val_t *v)
{
    return v->col;
}
const char *cn_toml_key(const cn_toml_val_t *v)
{
    return v->key;
}
const char *cn_toml_keyn(const cn_toml_val_t *v, size_t *len)
{
    *len = v->keylen;
    return v->key;
}

cn_err_t cn_toml_int(const cn_toml_val_t *v, int64_t *out)
{
    if (!v || v->type != CN_TOML_INT)
        return CN_E_INVALID;
    *out = v->u.i;
    return CN_OK;
}

cn_err_t cn_toml_bool(const cn_toml_val_t *v, bool *out)
{
    if (!v || v->type != CN_TOML_BOOL)
        return CN_E_INVALID;
    *out = v->u.b;
    return CN_OK;
}

cn_err_t cn_toml_float(const cn_toml_val_t *v, double *out)
{
    if (!v || v->type != CN_TOML_FLOAT)
        return CN_E_INVALID;
    *out = v->u.f;
    return CN_OK;
}

cn_err_t cn_toml_datetime(const cn_toml_val_t *v, cn_toml_datetime_t *out)
{
    if (!v || v->type < CN_TOML_DATETIME || v->type > CN_TOML_TIME_LOCAL)
        return CN_E_INVALID;
    *out = v->u.dt;
    return CN_OK;
}

const char *cn_toml_str(const cn_toml_val_t *v)
{
    return v && v->type == CN_TOML_STRING ? v->s : NULL;
}

const char *cn_toml_strn(const cn_toml_val_t *v, size_t *len)
{
    if (!v || v->type != CN_TOML_STRING)
        return NULL;
    *len = v->slen;
    return v->s;
}

size_t cn_toml_len(const cn_toml_val_t *v)
{
    return v && (v->type == CN_TOML_TABLE || v->type == CN_TOML_ARRAY) ? v->n : 0;
}

const cn_toml_val_t *cn_toml_at(const cn_toml_val_t *v, size_t i)
{
    return i < cn_toml_len(v) ? v->kids[i] : NULL;
}
