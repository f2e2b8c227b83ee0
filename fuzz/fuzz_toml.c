/* libFuzzer harness: the strict TOML 1.0.0 parser (src/util/toml*.c).
 * Invariants: parsing never crashes or leaks; a refusal always names its
 * line and column; an accepted document can be walked completely, every
 * table entry is found again by its key, positions are 1-based, and every
 * typed read agrees with the value's type. */
#include "cairn/toml.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Tables nest through keys without a depth limit of their own, so the walk
 * is bounded by the input size instead. */
static void walk(const cn_toml_val_t *v, size_t depth, size_t size)
{
    if (depth > size + 2)
        abort();
    if (cn_toml_line(v) < 1 || cn_toml_column(v) < 1)
        abort();
    int64_t i;
    bool b;
    double f;
    cn_toml_datetime_t dt;
    size_t n;
    cn_toml_type_t ty = cn_toml_type(v);
    if ((cn_toml_int(v, &i) == CN_OK) != (ty == CN_TOML_INT) ||
        (cn_toml_bool(v, &b) == CN_OK) != (ty == CN_TOML_BOOL) ||
        (cn_toml_float(v, &f) == CN_OK) != (ty == CN_TOML_FLOAT) ||
        (cn_toml_datetime(v, &dt) == CN_OK) != (ty >= CN_TOML_DATETIME && ty <= CN_TOML_TIME_LOCAL))
        abort();
    switch (ty) {
    case CN_TOML_TABLE:
    case CN_TOML_ARRAY:
        for (size_t k = 0; k < cn_toml_len(v); k++) {
            const cn_toml_val_t *kid = cn_toml_at(v, k);
            if (!kid || (ty == CN_TOML_TABLE && !cn_toml_key(kid)))
                abort();
            const char *key = ty == CN_TOML_TABLE ? cn_toml_keyn(kid, &n) : NULL;
            /* cn_toml_get reads bare dotted paths: keys without '.' or NUL */
            if (key && !memchr(key, '.', n) && strlen(key) == n && n && cn_toml_get(v, key) != kid)
                abort();
            walk(kid, depth + 1, size);
        }
        break;
    case CN_TOML_STRING: {
        const char *s = cn_toml_strn(v, &n);
        if (!s || s != cn_toml_str(v) || s[n] != 0 || strlen(s) > n)
            abort();
        break;
    }
    case CN_TOML_DATETIME:
    case CN_TOML_DATETIME_LOCAL:
    case CN_TOML_DATE_LOCAL:
    case CN_TOML_TIME_LOCAL:
        if (dt.hour > 23 || dt.minute > 59 || dt.second > 59 || dt.nanosecond > 999999999u ||
            dt.month > 12 || dt.day > 31)
            abort();
        break;
    case CN_TOML_INT:
    case CN_TOML_BOOL:
    case CN_TOML_FLOAT: break;
    default: abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cn_toml_t *doc = NULL;
    char err[256];
    cn_err_t e = cn_toml_parse((const char *)data, size, &doc, err, sizeof err);
    if (e == CN_OK) {
        if (!doc)
            abort();
        walk(cn_toml_root(doc), 0, size);
        cn_toml_free(doc);
    } else if (e == CN_E_INVALID) {
        if (doc || strncmp(err, "line ", 5) != 0 || !strstr(err, ", column "))
            abort();
    } else if (e != -12 /* ENOMEM */ && e != CN_E_TOO_LARGE) {
        abort();
    }
    return 0;
}
