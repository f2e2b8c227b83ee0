/* toml2json: the TOML parser's documents in toml-test's JSON encoding
 * (tables as objects, arrays as arrays, every scalar as {"type", "value"}),
 * for the conformance and differential tests (test_toml_corpus.py,
 * test_toml_diff.py).
 *
 *   toml2json FILE     prints the JSON; on refusal prints the error on
 *                      stderr and exits 1
 *   toml2json --batch  reads records "LEN\n" + LEN bytes from stdin and
 *                      prints one line per record: {"ok": JSON} or
 *                      {"error": "message"}
 */
#include "cairn/toml.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_str(FILE *o, const char *s, size_t n)
{
    fputc('"', o);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(o, "\\u%04x", c);
        else
            fputc(c, o);
    }
    fputc('"', o);
}

static void put_datetime(FILE *o, const cn_toml_val_t *v)
{
    cn_toml_datetime_t d;
    cn_toml_datetime(v, &d);
    cn_toml_type_t ty = cn_toml_type(v);
    char b[80];
    size_t n = 0;
    if (ty != CN_TOML_TIME_LOCAL)
        n += (size_t)snprintf(b + n, sizeof b - n, "%04d-%02d-%02d", d.year, d.month, d.day);
    if (ty == CN_TOML_DATETIME || ty == CN_TOML_DATETIME_LOCAL)
        b[n++] = 'T';
    if (ty != CN_TOML_DATE_LOCAL) {
        n += (size_t)snprintf(b + n, sizeof b - n, "%02d:%02d:%02d", d.hour, d.minute, d.second);
        if (d.frac_digits) {
            uint32_t f = d.nanosecond;
            for (int i = d.frac_digits; i < 9; i++)
                f /= 10;
            n += (size_t)snprintf(b + n, sizeof b - n, ".%0*" PRIu32, d.frac_digits, f);
        }
    }
    if (ty == CN_TOML_DATETIME) {
        int m = d.offset_minutes < 0 ? -d.offset_minutes : d.offset_minutes;
        if (m == 0)
            n += (size_t)snprintf(b + n, sizeof b - n, "Z");
        else
            n += (size_t)snprintf(b + n, sizeof b - n, "%c%02d:%02d",
                                  d.offset_minutes < 0 ? '-' : '+', m / 60, m % 60);
    }
    static const char *names[] = { [CN_TOML_DATETIME] = "datetime",
                                   [CN_TOML_DATETIME_LOCAL] = "datetime-local",
                                   [CN_TOML_DATE_LOCAL] = "date-local",
                                   [CN_TOML_TIME_LOCAL] = "time-local" };
    fprintf(o, "{\"type\": \"%s\", \"value\": \"%.*s\"}", names[ty], (int)n, b);
}

static void put_val(FILE *o, const cn_toml_val_t *v)
{
    size_t n;
    switch (cn_toml_type(v)) {
    case CN_TOML_TABLE:
    case CN_TOML_ARRAY: {
        bool tab = cn_toml_type(v) == CN_TOML_TABLE;
        fputc(tab ? '{' : '[', o);
        for (size_t i = 0; i < cn_toml_len(v); i++) {
            const cn_toml_val_t *k = cn_toml_at(v, i);
            if (i)
                fputs(", ", o);
            if (tab) {
                const char *key = cn_toml_keyn(k, &n);
                put_str(o, key, n);
                fputs(": ", o);
            }
            put_val(o, k);
        }
        fputc(tab ? '}' : ']', o);
        break;
    }
    case CN_TOML_STRING: {
        const char *s = cn_toml_strn(v, &n);
        fputs("{\"type\": \"string\", \"value\": ", o);
        put_str(o, s, n);
        fputc('}', o);
        break;
    }
    case CN_TOML_INT: {
        int64_t i = 0;
        cn_toml_int(v, &i);
        fprintf(o, "{\"type\": \"integer\", \"value\": \"%" PRId64 "\"}", i);
        break;
    }
    case CN_TOML_BOOL: {
        bool b = false;
        cn_toml_bool(v, &b);
        fprintf(o, "{\"type\": \"bool\", \"value\": \"%s\"}", b ? "true" : "false");
        break;
    }
    case CN_TOML_FLOAT: {
        double f = 0;
        cn_toml_float(v, &f);
        if (isnan(f))
            fputs("{\"type\": \"float\", \"value\": \"nan\"}", o);
        else if (isinf(f))
            fprintf(o, "{\"type\": \"float\", \"value\": \"%sinf\"}", f < 0 ? "-" : "");
        else
            fprintf(o, "{\"type\": \"float\", \"value\": \"%.17g\"}", f);
        break;
    }
    default: put_datetime(o, v); break;
    }
}

static int batch(void)
{
    size_t len;
    while (scanf("%zu", &len) == 1 && getchar() == '\n') {
        char *buf = malloc(len + 1);
        if (!buf || fread(buf, 1, len, stdin) != len)
            return 2;
        cn_toml_t *doc = NULL;
        char err[256];
        if (cn_toml_parse(buf, len, &doc, err, sizeof err) == CN_OK) {
            fputs("{\"ok\": ", stdout);
            put_val(stdout, cn_toml_root(doc));
            fputs("}\n", stdout);
        } else {
            fputs("{\"error\": ", stdout);
            put_str(stdout, err, strlen(err));
            fputs("}\n", stdout);
        }
        fflush(stdout);
        cn_toml_free(doc);
        free(buf);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--batch") == 0)
        return batch();
    if (argc != 2) {
        fprintf(stderr, "usage: toml2json FILE | --batch\n");
        return 2;
    }
    cn_toml_t *doc = NULL;
    char err[512];
    cn_err_t e = cn_toml_load(argv[1], &doc, err, sizeof err);
    if (e != CN_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    put_val(stdout, cn_toml_root(doc));
    fputc('\n', stdout);
    cn_toml_free(doc);
    return 0;
}
