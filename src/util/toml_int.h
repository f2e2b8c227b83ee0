/* Internals of the TOML 1.0.0 parser (include/cairn/toml.h), shared by
 * toml.c (documents, tables, the redefinition rules, the public API),
 * toml_lex.c (whitespace, comments, strings, keys) and toml_value.c
 * (scalars, arrays, inline tables).  Never included outside src/util.
 *
 * Every byte a document holds comes from its arena, which is bounded by a
 * multiple of the input's size, so no input can make the parser use memory
 * out of proportion to it. */
#ifndef CAIRN_UTIL_TOML_INT_H
#define CAIRN_UTIL_TOML_INT_H

#include "cairn/toml.h"

#include <stdarg.h>

#define CN__TOML_MAX_DEPTH 64 /* nested arrays and inline tables */
#define CN__TOML_MAX_KEYS 64  /* components of one dotted key or header */

/* How a table came to be: it decides what may later add to it. */
typedef enum {
    CN__TT_IMPLICIT, /* an intermediate of a [header]: one header may still define it */
    CN__TT_DEFINED,  /* named by a [header], [[header]] element, or the root */
    CN__TT_DOTTED,   /* created by a dotted key: only dotted keys may extend it */
    CN__TT_INLINE    /* an inline table or inside one: immutable */
} cn__ttkind_t;

struct cn_toml_val {
    cn_toml_type_t type;
    cn__ttkind_t kind; /* tables */
    bool aot;          /* arrays: made by [[header]] (others are immutable) */
    int line, col;
    char *key;
    size_t keylen;
    cn_toml_val_t *parent;
    union {
        int64_t i;
        bool b;
        double f;
        cn_toml_datetime_t dt;
    } u;
    char *s;
    size_t slen;
    cn_toml_val_t **kids; /* table entries or array items */
    size_t n, cap;
};

typedef struct cn__arena_chunk {
    struct cn__arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
} cn__arena_chunk_t;

struct cn_toml {
    cn_toml_val_t *root;
    cn__arena_chunk_t *chunks;
    size_t arena_bytes, arena_limit;
    cn_toml_val_t **map; /* open addressing over (parent, key) */
    size_t map_cap, map_n;
};

typedef struct {
    const char *p, *end, *bol; /* cursor, end, beginning of the cursor's line */
    int line;
    char *err;
    size_t errlen;
    cn_err_t rc;
    cn_toml_t *doc;
    const char *col_bol, *col_at; /* the last column counted, so counting stays linear */
    int col;
} cn__tp_t;

/* A key path being parsed (always on one line): components point into the
 * arena, at[] into the text, for messages. */
typedef struct {
    size_t n;
    char *k[CN__TOML_MAX_KEYS];
    size_t len[CN__TOML_MAX_KEYS];
    const char *at[CN__TOML_MAX_KEYS];
    int col[CN__TOML_MAX_KEYS];
    const char *bol;
    int line;
} cn__tkeys_t;

cn_err_t cn__toml_fail(cn__tp_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cn_err_t cn__toml_nomem(cn__tp_t *t);
void *cn__toml_alloc(cn__tp_t *t, size_t n);
/* The 1-based column of at on the line starting at bol, in characters;
 * amortized constant time while positions only move forward. */
int cn__toml_col(cn__tp_t *t, const char *bol, const char *at);
cn_toml_val_t *cn__toml_new(cn__tp_t *t, cn_toml_type_t type);
cn_err_t cn__toml_push(cn__tp_t *t, cn_toml_val_t *parent, cn_toml_val_t *kid);
/* Finds key in table (NULL when absent); cn__toml_put adds kid under key. */
cn_toml_val_t *cn__toml_find(cn__tp_t *t, const cn_toml_val_t *table, const char *key, size_t len);
cn_err_t cn__toml_put(cn__tp_t *t, cn_toml_val_t *table, cn_toml_val_t *kid, const char *key,
                      size_t len);
/* Adds `keys = value` under table: the dotted-key and redefinition rules. */
cn_err_t cn__toml_assign(cn__tp_t *t, cn_toml_val_t *table, const cn__tkeys_t *keys,
                         cn_toml_val_t *value, bool in_inline);

/* `keys = value` at the cursor (value nested depth deep), added under table. */
cn_err_t cn__toml_keyval(cn__tp_t *t, cn_toml_val_t *table, int depth, bool in_inline);

/* toml_lex.c */
void cn__toml_ws(cn__tp_t *t);
cn_err_t cn__toml_comment(cn__tp_t *t);
bool cn__toml_newline(cn__tp_t *t);
cn_err_t cn__toml_string(cn__tp_t *t, char **out, size_t *len, bool key);
cn_err_t cn__toml_keys(cn__tp_t *t, cn__tkeys_t *keys);

/* toml_value.c */
cn_err_t cn__toml_value(cn__tp_t *t, cn_toml_val_t **out, int depth);
cn_err_t cn__toml_scalar(cn__tp_t *t, cn_toml_val_t **out);

#endif
