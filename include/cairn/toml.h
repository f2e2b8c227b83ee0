/* cairn toml: a strict subset of TOML 1.0 for configuration files.
 *
 * Accepted: comments, [table] and [dotted.table] headers, bare and quoted
 * keys, basic strings (with every TOML escape) and literal strings, decimal
 * integers (64-bit, optional sign, underscores between digits), booleans, and
 * arrays of those (nested, multi-line, trailing comma).  Everything else that
 * TOML allows - floats, dates and times, multi-line strings, hex/octal/binary
 * integers, inline tables, arrays of tables, dotted keys on the left of '=' -
 * is refused with a message naming the line, never half-understood.  A key
 * defined twice, a table header repeated, a header over a value, invalid
 * UTF-8 or control characters: all errors.
 *
 * The parsed document owns all its memory; values are borrowed from it and
 * live until cn_toml_free().  A document is immutable once parsed, so it may be
 * read from several threads.  Never meant for wire input.
 */
#ifndef CAIRN_TOML_H
#define CAIRN_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_toml cn_toml_t;
typedef struct cn_toml_val cn_toml_val_t;

typedef enum {
    CN_TOML_TABLE,
    CN_TOML_ARRAY,
    CN_TOML_STRING,
    CN_TOML_INT,
    CN_TOML_BOOL
} cn_toml_type_t;

#define CN_TOML_MAX_BYTES (1u << 20) /* cn_toml_load refuses larger files */

/* Parses len bytes of text.  On success *out is the document (free with
 * cn_toml_free).  On failure returns CN_E_INVALID (with "line N: reason" in
 * err, when err is not NULL) or -ENOMEM; *out is NULL. */
CN_API cn_err_t cn_toml_parse(const char *text, size_t len, cn_toml_t **out, char *err,
                              size_t errlen);

/* Reads and parses a file.  Errors as cn_toml_parse, plus -errno from open/read
 * and CN_E_TOO_LARGE past CN_TOML_MAX_BYTES; err then names the problem. */
CN_API cn_err_t cn_toml_load(const char *path, cn_toml_t **out, char *err, size_t errlen);

/* Accepts NULL. */
CN_API void cn_toml_free(cn_toml_t *doc);

/* The root table. */
CN_API const cn_toml_val_t *cn_toml_root(const cn_toml_t *doc);

/* Looks up a dotted path of bare keys ("limits.max_connections") from a
 * table.  NULL when absent or when a step is not a table. */
CN_API const cn_toml_val_t *cn_toml_get(const cn_toml_val_t *table, const char *path);

CN_API cn_toml_type_t cn_toml_type(const cn_toml_val_t *v);
/* The line (1-based) where v was defined, for messages. */
CN_API int cn_toml_line(const cn_toml_val_t *v);
/* The key of a table entry; NULL for array items and the root. */
CN_API const char *cn_toml_key(const cn_toml_val_t *v);

/* Typed reads: CN_E_INVALID when v has another type (or is NULL). */
CN_API cn_err_t cn_toml_int(const cn_toml_val_t *v, int64_t *out);
CN_API cn_err_t cn_toml_bool(const cn_toml_val_t *v, bool *out);
/* The string's bytes, NUL-terminated (a string may not contain NUL); NULL
 * when v is not a string. */
CN_API const char *cn_toml_str(const cn_toml_val_t *v);

/* Entries of a table (in file order) or items of an array; 0 for scalars. */
CN_API size_t cn_toml_len(const cn_toml_val_t *v);
CN_API const cn_toml_val_t *cn_toml_at(const cn_toml_val_t *v, size_t i);

#ifdef __cplusplus
}
#endif
#endif
