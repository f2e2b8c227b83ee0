/* cairn toml: a strict TOML 1.0.0 parser, for configuration files (cairnd's
 * own, and a repository's .scribe/config.toml through cairn/repos_config.h).
 *
 * The whole of TOML 1.0.0: bare, quoted and dotted keys; basic, literal and
 * multi-line strings with every escape; integers (decimal, hex, octal,
 * binary; 64-bit, overflow refused); floats (inf, nan); booleans; offset and
 * local date-times, local dates and local times; arrays (of mixed types);
 * inline tables (immutable once written); tables and arrays of tables with
 * the specification's redefinition rules; comments; LF and CRLF.  Anything
 * else is refused with "line N, column C: reason": a file that is half
 * understood is worse than one refused.  Never a TOML 1.1 extension.
 *
 * Bounds: CN_TOML_MAX_BYTES of input, 64 levels of nested arrays and inline
 * tables, 64 components in one key, and an arena bounded by a multiple of
 * the input size; past any of them the text is refused, never truncated.
 *
 * The parsed document owns all its memory; values are borrowed from it and
 * live until cn_toml_free().  A document is immutable once parsed, so it may be
 * read from several threads.  Never meant for wire input beyond the bounds
 * above.
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
    CN_TOML_BOOL,
    CN_TOML_FLOAT,
    CN_TOML_DATETIME,       /* offset date-time: 1979-05-27T07:32:00Z */
    CN_TOML_DATETIME_LOCAL, /* 1979-05-27T07:32:00 */
    CN_TOML_DATE_LOCAL,     /* 1979-05-27 */
    CN_TOML_TIME_LOCAL      /* 07:32:00 */
} cn_toml_type_t;

/* The fields of a date, time or date-time value; those its type lacks are 0.
 * frac_digits is the number of fraction digits written (kept up to 9, as
 * nanoseconds; further digits are truncated). */
typedef struct {
    int year, month, day;
    int hour, minute, second;
    uint32_t nanosecond;
    int frac_digits;
    int offset_minutes; /* CN_TOML_DATETIME only: east of UTC; "Z" is 0 */
} cn_toml_datetime_t;

#define CN_TOML_MAX_BYTES (1u << 20) /* cn_toml_load refuses larger files */

/* Parses len bytes of text.  On success *out is the document (free with
 * cn_toml_free).  On failure returns CN_E_INVALID (with "line N, column C:
 * reason" in err, when err is not NULL; columns count characters from 1),
 * CN_E_TOO_LARGE past CN_TOML_MAX_BYTES, or -ENOMEM; *out is NULL. */
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
/* The line and column (1-based) where v was defined, for messages: a table
 * entry's key, an array item's first character, a header's table name. */
CN_API int cn_toml_line(const cn_toml_val_t *v);
CN_API int cn_toml_column(const cn_toml_val_t *v);
/* The key of a table entry; NULL for array items and the root.  A quoted
 * key may hold NUL through an escape: cn_toml_keyn gives its length. */
CN_API const char *cn_toml_key(const cn_toml_val_t *v);
CN_API const char *cn_toml_keyn(const cn_toml_val_t *v, size_t *len);

/* Typed reads: CN_E_INVALID when v has another type (or is NULL). */
CN_API cn_err_t cn_toml_int(const cn_toml_val_t *v, int64_t *out);
CN_API cn_err_t cn_toml_bool(const cn_toml_val_t *v, bool *out);
CN_API cn_err_t cn_toml_float(const cn_toml_val_t *v, double *out);
/* Any of the four date and time types. */
CN_API cn_err_t cn_toml_datetime(const cn_toml_val_t *v, cn_toml_datetime_t *out);
/* The string's bytes, NUL-terminated; NULL when v is not a string.  A string
 * may hold NUL through "\u0000": cn_toml_strn gives the whole length. */
CN_API const char *cn_toml_str(const cn_toml_val_t *v);
CN_API const char *cn_toml_strn(const cn_toml_val_t *v, size_t *len);

/* Entries of a table (in file order) or items of an array; 0 for scalars. */
CN_API size_t cn_toml_len(const cn_toml_val_t *v);
CN_API const cn_toml_val_t *cn_toml_at(const cn_toml_val_t *v, size_t i);

#ifdef __cplusplus
}
#endif
#endif
