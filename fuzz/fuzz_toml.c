/* libFuzzer harness: the strict TOML subset (src/util/toml.c).  Invariants:
 * parsing never crashes or leaks; a refusal always names its line; an
 * accepted document can be walked completely, and every string in it is
 * valid NUL-terminated text. */
#include "cairn/toml.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const cn_toml_val_t *v, int depth)
{
    if (depth > 2 * 32 + 2) /* header depth + array depth limits */
        abort();
    switch (cn_toml_type(v)) {
    case CN_TOML_TABLE:
    case CN_TOML_ARRAY:
        for (size_t i = 0; i < cn_toml_len(v); i++) {
            const cn_toml_val_t *k = cn_toml_at(v, i);
            if (!k || (cn_toml_type(v) == CN_TOML_TABLE && !cn_toml_key(k)))
                abort();
            if (cn_toml_type(v) == CN_TOML_TABLE && cn_toml_get(v, cn_toml_key(k)) == NULL &&
                !strchr(cn_toml_key(k), '.'))
                abort();
            walk(k, depth + 1);
        }
        break;
    case CN_TOML_STRING:
        if (!cn_toml_str(v))
            abort();
        (void)strlen(cn_toml_str(v));
        break;
    case CN_TOML_INT: {
        int64_t i;
        if (cn_toml_int(v, &i) != CN_OK)
            abort();
        break;
    }
    case CN_TOML_BOOL: {
        bool b;
        if (cn_toml_bool(v, &b) != CN_OK)
            abort();
        break;
    }
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
        walk(cn_toml_root(doc), 0);
        cn_toml_free(doc);
    } else if (e == CN_E_INVALID) {
        if (doc || strncmp(err, "line ", 5) != 0)
            abort();
    } else if (e != -12 /* ENOMEM */) {
        abort();
    }
    return 0;
}
