/* The strict TOML 1.0.0 parser: what it accepts, and that it refuses
 * duplicates, redefinitions and bad syntax with a line and column.  The
 * toml-test corpus and the differential run against tomli are
 * test_toml_corpus.py and test_toml_diff.py. */
#include "cn_test.h"
#include "cairn/toml.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

static cn_toml_t *parse_ok(const char *text)
{
    cn_toml_t *d = NULL;
    char err[256];
    cn_err_t e = cn_toml_parse(text, strlen(text), &d, err, sizeof err);
    if (e != CN_OK)
        fprintf(stderr, "# unexpected error: %s\n# in: %s\n", err, text);
    CN_CHECK_EQ(e, CN_OK);
    return d;
}

/* Parse must fail with CN_E_INVALID, an error on the given line that
 * contains want. */
static void parse_bad(const char *text, int line, const char *want)
{
    cn_toml_t *d = (cn_toml_t *)1;
    char err[256] = "";
    cn_err_t e = cn_toml_parse(text, strlen(text), &d, err, sizeof err);
    CN_CHECK_EQ(e, CN_E_INVALID);
    CN_CHECK(d == NULL);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "line %d, column ", line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, want)) {
        fprintf(stderr, "# input: %s\n# got error: '%s', want line %d and '%s'\n", text, err, line,
                want);
        CN_CHECK(0);
    }
}

static void test_values(void)
{
    cn_toml_t *d = parse_ok("# cairnd configuration\n"
                            "top = 1\n"
                            "\n"
                            "[limits]\n"
                            "max_connections = 1_000   # comment\n"
                            "neg = -42\n"
                            "plus = +7\n"
                            "big = 9223372036854775807\n"
                            "small = -9223372036854775808\n"
                            "on = true\n"
                            "off = false\n"
                            "name = \"a\\tb\\\"c\\\\ \\u00e9 \\U0001F600\"\n"
                            "lit = 'C:\\path\\no\\escapes'\n"
                            "\"quoted key\" = 'x'\n"
                            "list = [ 1, 2,\n"
                            "  3, # three\n"
                            "]\n"
                            "empty = []\n"
                            "nested = [[1], ['a', \"b\"]]\n"
                            "[server.tls]\r\n"
                            "cert = \"/etc/cert.pem\"\r\n");
    if (!d)
        return;
    const cn_toml_val_t *r = cn_toml_root(d);
    int64_t i = 0;
    bool b = false;
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "top"), &i), 0);
    CN_CHECK_EQ(i, 1);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "limits.max_connections"), &i), 0);
    CN_CHECK_EQ(i, 1000);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "limits.neg"), &i), 0);
    CN_CHECK_EQ(i, -42);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "limits.plus"), &i), 0);
    CN_CHECK_EQ(i, 7);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "limits.big"), &i), 0);
    CN_CHECK(i == INT64_MAX);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "limits.small"), &i), 0);
    CN_CHECK(i == INT64_MIN);
    CN_CHECK_EQ(cn_toml_bool(cn_toml_get(r, "limits.on"), &b), 0);
    CN_CHECK(b);
    CN_CHECK_EQ(cn_toml_bool(cn_toml_get(r, "limits.off"), &b), 0);
    CN_CHECK(!b);
    CN_CHECK_STR(cn_toml_str(cn_toml_get(r, "limits.name")), "a\tb\"c\\ \xc3\xa9 \xf0\x9f\x98\x80");
    CN_CHECK_STR(cn_toml_str(cn_toml_get(r, "limits.lit")), "C:\\path\\no\\escapes");
    const cn_toml_val_t *lim = cn_toml_get(r, "limits");
    CN_CHECK_EQ(cn_toml_type(lim), CN_TOML_TABLE);
    CN_CHECK_EQ(cn_toml_line(lim), 4);
    CN_CHECK_STR(cn_toml_str(cn_toml_get(lim, "quoted key")), "x");
    const cn_toml_val_t *list = cn_toml_get(lim, "list");
    CN_CHECK_EQ(cn_toml_type(list), CN_TOML_ARRAY);
    CN_CHECK_EQ(cn_toml_len(list), 3);
    CN_CHECK_EQ(cn_toml_int(cn_toml_at(list, 2), &i), 0);
    CN_CHECK_EQ(i, 3);
    CN_CHECK(cn_toml_at(list, 3) == NULL);
    CN_CHECK_EQ(cn_toml_len(cn_toml_get(lim, "empty")), 0);
    const cn_toml_val_t *nested = cn_toml_get(lim, "nested");
    CN_CHECK_EQ(cn_toml_len(nested), 2);
    CN_CHECK_STR(cn_toml_str(cn_toml_at(cn_toml_at(nested, 1), 1)), "b");
    CN_CHECK_STR(cn_toml_str(cn_toml_get(r, "server.tls.cert")), "/etc/cert.pem");
    /* entries in file order, with keys and lines */
    CN_CHECK_STR(cn_toml_key(cn_toml_at(lim, 0)), "max_connections");
    CN_CHECK_EQ(cn_toml_line(cn_toml_at(lim, 0)), 5);
    /* type mismatches and absent keys */
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "limits.name"), &i), CN_E_INVALID);
    CN_CHECK_EQ(cn_toml_bool(cn_toml_get(r, "limits.big"), &b), CN_E_INVALID);
    CN_CHECK(cn_toml_str(cn_toml_get(r, "limits.on")) == NULL);
    CN_CHECK(cn_toml_get(r, "limits.nope") == NULL);
    CN_CHECK(cn_toml_get(r, "top.x") == NULL);
    CN_CHECK_EQ(cn_toml_int(NULL, &i), CN_E_INVALID);
    cn_toml_free(d);
    cn_toml_free(NULL);
}

static void test_tables(void)
{
    /* a super-table may be defined after its sub-table, once */
    cn_toml_t *d = parse_ok("[a.b]\nx = 1\n[a]\ny = 2\n");
    if (d) {
        int64_t i;
        CN_CHECK_EQ(cn_toml_int(cn_toml_get(cn_toml_root(d), "a.b.x"), &i), 0);
        CN_CHECK_EQ(cn_toml_int(cn_toml_get(cn_toml_root(d), "a.y"), &i), 0);
        CN_CHECK_EQ(i, 2);
        cn_toml_free(d);
    }
    cn_toml_free(parse_ok(""));
    cn_toml_free(parse_ok("\n\n# only a comment\n"));
    cn_toml_free(parse_ok("\xef\xbb\xbfk = 1"));
    cn_toml_free(parse_ok("[ a . \"b c\" ]\nk='v'"));
}

static void test_duplicates(void)
{
    parse_bad("a = 1\na = 2\n", 2, "defined twice");
    parse_bad("[t]\na = 1\n[t]\nb = 2\n", 3, "defined twice");
    parse_bad("a = 1\n[a]\n", 2, "already a value");
    parse_bad("[a.b]\n[a]\nb = 1\n", 3, "defined twice");
    parse_bad("[a]\n[a.b]\n[a.b]\n", 3, "defined twice");
    parse_bad("\"a\" = 1\na = 2\n", 2, "defined twice");
}

static void test_bad_syntax(void)
{
    parse_bad("a = \n", 1, "value");
    parse_bad("a 1\n", 1, "expected '='");
    parse_bad("= 1\n", 1, "expected a key");
    parse_bad("a = 1 2\n", 1, "after the value");
    parse_bad("a = \"open\n", 1, "unterminated");
    parse_bad("a = 'open\n", 1, "unterminated");
    parse_bad("a = \"\\q\"\n", 1, "unknown escape");
    parse_bad("a = \"\\u00\"\n", 1, "hex digit");
    parse_bad("a = \"\\uD800\"\n", 1, "Unicode scalar");
    parse_bad("a = \"tab\x01\"\n", 1, "control character");
    parse_bad("a = bare\n", 1, "strings need quotes");
    parse_bad("a = 012\n", 1, "leading zeros");
    parse_bad("a = 1__0\n", 1, "underscore");
    parse_bad("a = _1\n", 1, "invalid value");
    parse_bad("a = 1_\n", 1, "underscore");
    parse_bad("a = 9223372036854775808\n", 1, "out of range");
    parse_bad("a = -9223372036854775809\n", 1, "out of range");
    parse_bad("a = 99999999999999999999999\n", 1, "out of range");
    parse_bad("a = [1, 2\n", 2, "expected ',' or ']'");
    parse_bad("a = [1 2]\n", 1, "expected ','");
    parse_bad("[a\n", 1, "table header");
    parse_bad("[]\n", 1, "expected a key");
    parse_bad("[a] x = 1\n", 1, "after the value");
    parse_bad("x = 1\n\n# c\n y = \"\n", 4, "unterminated");
    parse_bad("a = 1 # bell\x07\n", 1, "control character");
    parse_bad("a = \"\xff\"\n", 1, "UTF-8");
    parse_bad("a = \"\xc0\x80\"\n", 1, "UTF-8");     /* overlong NUL */
    parse_bad("a = \"\xed\xa0\x80\"\n", 1, "UTF-8"); /* surrogate */
    const char nul[] = "a = 1\0";
    cn_toml_t *d = NULL;
    char err[128];
    CN_CHECK_EQ(cn_toml_parse(nul, sizeof nul - 1, &d, err, sizeof err), CN_E_INVALID);
    CN_CHECK(strstr(err, "NUL") != NULL);
    char deep[200] = "a = ";
    for (int i = 0; i < 70; i++)
        strcat(deep, "[");
    parse_bad(deep, 1, "nested too deeply");
    char hdr[200] = "[a";
    for (int i = 0; i < 70; i++)
        strcat(hdr, ".a");
    strcat(hdr, "]\n");
    parse_bad(hdr, 1, "nested too deeply");
}

static void check_float(const cn_toml_val_t *r, const char *key, double want)
{
    double f = 0;
    CN_CHECK_EQ(cn_toml_float(cn_toml_get(r, key), &f), 0);
    CN_CHECK(f == want || (f != f && want != want));
}

/* What the old subset refused and TOML 1.0.0 has. */
static void test_full_toml(void)
{
    cn_toml_t *d = parse_ok("f = 1.5\ne = -1e3\ng = 6.626e-34\nu = 1_000.5\npi = +inf\nn = nan\n"
                            "h = 0xdead_BEEF\no = 0o755\nb = 0b1101\nhmax = 0x7fffffffffffffff\n"
                            "odt = 1979-05-27T07:32:00.999999-07:00\nldt = 1979-05-27 07:32:00\n"
                            "ld = 2000-02-29\nlt = 00:32:00.5\n"
                            "ml = \"\"\"\nline one\\\n    still one\nline \"two\"\"\"\"\n"
                            "ll = '''\nraw \\n ''quoted''\n'''\n"
                            "it = { x = 1, y.z = 'p' }\n"
                            "a.b.c = 1\na.b.d = 2\n"
                            "nul = \"x\\u0000y\"\n"
                            "mixed = [1, 'a', 2.5, [], {}]\n"
                            "[[fruit]]\nname = 'apple'\n[fruit.physical]\ncolor = 'red'\n"
                            "[[fruit.variety]]\nname = 'red delicious'\n"
                            "[[fruit]]\nname = 'banana'\n");
    if (!d)
        return;
    const cn_toml_val_t *r = cn_toml_root(d);
    check_float(r, "f", 1.5);
    check_float(r, "e", -1000);
    check_float(r, "g", 6.626e-34);
    check_float(r, "u", 1000.5);
    check_float(r, "pi", 1.0 / 0.0);
    check_float(r, "n", 0.0 / 0.0);
    int64_t i = 0;
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "h"), &i), 0);
    CN_CHECK(i == 0xdeadbeef);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "o"), &i), 0);
    CN_CHECK_EQ(i, 0755);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "b"), &i), 0);
    CN_CHECK_EQ(i, 13);
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "hmax"), &i), 0);
    CN_CHECK(i == INT64_MAX);
    cn_toml_datetime_t dt;
    CN_CHECK_EQ(cn_toml_type(cn_toml_get(r, "odt")), CN_TOML_DATETIME);
    CN_CHECK_EQ(cn_toml_datetime(cn_toml_get(r, "odt"), &dt), 0);
    CN_CHECK(dt.year == 1979 && dt.month == 5 && dt.day == 27 && dt.hour == 7 && dt.second == 0);
    CN_CHECK(dt.nanosecond == 999999000 && dt.frac_digits == 6 && dt.offset_minutes == -420);
    CN_CHECK_EQ(cn_toml_type(cn_toml_get(r, "ldt")), CN_TOML_DATETIME_LOCAL);
    CN_CHECK_EQ(cn_toml_type(cn_toml_get(r, "ld")), CN_TOML_DATE_LOCAL);
    CN_CHECK_EQ(cn_toml_datetime(cn_toml_get(r, "lt"), &dt), 0);
    CN_CHECK(dt.minute == 32 && dt.nanosecond == 500000000);
    CN_CHECK_EQ(cn_toml_datetime(cn_toml_get(r, "f"), &dt), CN_E_INVALID);
    CN_CHECK_STR(cn_toml_str(cn_toml_get(r, "ml")), "line onestill one\nline \"two\"");
    CN_CHECK_STR(cn_toml_str(cn_toml_get(r, "ll")), "raw \\n ''quoted''\n");
    CN_CHECK_STR(cn_toml_str(cn_toml_get(r, "it.y.z")), "p");
    CN_CHECK_EQ(cn_toml_int(cn_toml_get(r, "a.b.d"), &i), 0);
    size_t n = 0;
    CN_CHECK(memcmp(cn_toml_strn(cn_toml_get(r, "nul"), &n), "x\0y", 3) == 0 && n == 3);
    CN_CHECK_EQ(cn_toml_len(cn_toml_get(r, "mixed")), 5);
    const cn_toml_val_t *fruit = cn_toml_get(r, "fruit");
    CN_CHECK_EQ(cn_toml_type(fruit), CN_TOML_ARRAY);
    CN_CHECK_EQ(cn_toml_len(fruit), 2);
    CN_CHECK_STR(cn_toml_str(cn_toml_get(cn_toml_at(fruit, 0), "physical.color")), "red");
    CN_CHECK_STR(cn_toml_str(cn_toml_get(cn_toml_at(fruit, 1), "name")), "banana");
    CN_CHECK_EQ(cn_toml_line(cn_toml_get(r, "e")), 2);
    CN_CHECK_EQ(cn_toml_column(cn_toml_get(r, "a.b.d")), 1);
    cn_toml_free(d);
}

/* The redefinition rules and the refusals TOML 1.0.0 asks for. */
static void test_full_refusals(void)
{
    parse_bad("a = {b = 1}\na.c = 2\n", 2, "defined elsewhere");
    parse_bad("a = {b = 1}\n[a.c]\n", 2, "inline table");
    parse_bad("a = [1]\n[[a]]\n", 2, "not as an array of tables");
    parse_bad("[a]\nb.c = 1\n[a.b]\n", 3, "defined twice");
    parse_bad("[a.b]\nx = 1\n[a]\nb.y = 2\n", 4, "defined elsewhere");
    parse_bad("[[a]]\n[a]\n", 2, "not a table");
    /* dotted keys may extend a table a header only implied, which no header
     * may define afterwards */
    cn_toml_free(parse_ok("[a.b.c]\n[a]\nb.d = 1\n"));
    parse_bad("[a.b.c]\n[a]\nb.d = 1\n[a.b]\n", 4, "defined twice");
    parse_bad("a = {b = 1,}\n", 1, "no trailing comma");
    parse_bad("a = {b = 1\n}\n", 1, "on one line");
    parse_bad("a = +0x10\n", 1, "no sign");
    parse_bad("a = 0x8000000000000000\n", 1, "out of range");
    parse_bad("a = 1.\n", 1, "float");
    parse_bad("a = .5\n", 1, "invalid value");
    parse_bad("a = 1e\n", 1, "exponent");
    parse_bad("a = 01.5\n", 1, "integer part");
    parse_bad("a = 2001-02-29\n", 1, "real day");
    parse_bad("a = 1979-05-27T25:00:00\n", 1, "date-time");
    parse_bad("a = 07:32\n", 1, "local time");
    parse_bad("a = 1979-05-27T07:32:00+7:00\n", 1, "offset");
    parse_bad("a = \"\"\"x\"\"\"\"\"\"\n", 1, "too many quotes");
    parse_bad("a = \"\\e\"\n", 1, "unknown escape");
    parse_bad("a = 'x\ry'\n", 1, "control character");
    parse_bad("a = 1\r\n\r\nb = 2\rc = 3\n", 3, "after the value");
    parse_bad("\n\nkey = \"\"\"\n\n\n", 6, "unterminated");
    cn_toml_t *d = NULL;
    char err[128];
    CN_CHECK_EQ(cn_toml_parse("", (size_t)CN_TOML_MAX_BYTES + 1, &d, err, sizeof err),
                CN_E_TOO_LARGE);
}

static void test_load(void)
{
    char path[] = "/tmp/cn-toml-XXXXXX";
    int fd = mkstemp(path);
    CN_CHECK(fd >= 0);
    const char *text = "[x]\nk = 'v'\nk = 'w'\n";
    CN_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    cn_toml_t *d = NULL;
    char err[512];
    CN_CHECK_EQ(cn_toml_load(path, &d, err, sizeof err), CN_E_INVALID);
    CN_CHECK(strstr(err, path) && strstr(err, "line 3"));
    unlink(path);
    CN_CHECK_EQ(cn_toml_load(path, &d, err, sizeof err), -ENOENT);
    CN_CHECK(strstr(err, path) != NULL);
}

CN_TEST_MAIN(CN_TEST(test_values), CN_TEST(test_tables), CN_TEST(test_duplicates),
             CN_TEST(test_bad_syntax), CN_TEST(test_full_toml), CN_TEST(test_full_refusals),
             CN_TEST(test_load))
