/* The .scribe/config.toml schema layer (src/repos/config.c,
 * docs/repo-config.md): what it accepts, every rule it refuses with a
 * position, the glob grammar and matcher, and the rules comparison. */
#include "cn_test.h"
#include "cairn/repos_config.h"

#include <stdlib.h>

static bool parse_ok(const char *text, cn_repo_config_t *c)
{
    char err[256];
    cn_err_t e = cn_repo_config_parse(text, strlen(text), c, err, sizeof err);
    if (e != CN_OK)
        fprintf(stderr, "# unexpected error: %s\n# in: %s\n", err, text);
    CN_CHECK_EQ(e, CN_OK);
    return e == CN_OK;
}

/* Refused with CN_E_INVALID, the position "line L, column C" and want. */
static void parse_bad(const char *text, int line, int col, const char *want)
{
    cn_repo_config_t c;
    char err[256] = "";
    CN_CHECK_EQ(cn_repo_config_parse(text, strlen(text), &c, err, sizeof err), CN_E_INVALID);
    CN_CHECK(c.rules == NULL && c.mounts == NULL && c.nrules == 0 && c.nmounts == 0);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "line %d, column %d: ", line, col);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, want)) {
        fprintf(stderr, "# input: %s\n# got '%s', want '%s' and '%s'\n", text, err, prefix, want);
        CN_CHECK(0);
    }
}

static void test_accepts(void)
{
    cn_repo_config_t c;
    if (parse_ok(CN_REPO_CONFIG_DEFAULT, &c)) {
        CN_CHECK_EQ(c.version, 1);
        CN_CHECK_EQ(c.nrules, 0);
        CN_CHECK_EQ(c.nmounts, 0);
        cn_repo_config_free(&c);
    }
    const char *full = "version = 1\n"
                       "[locks]\n"
                       "rules = [\n"
                       "  { pattern = \"**/*.psd\", mode = \"required\" },\n"
                       "  { pattern = \"art/**\", mode = \"none\" },\n"
                       "]\n"
                       "[profiles.artist]\n"
                       "anything = [1, 'two', 3.0, 2026-01-01]\n"
                       "nested.deep = { x = true }\n"
                       "[mounts.zeta]\n"
                       "path = \"third_party/zeta\"\n"
                       "repository = \"0123456789abcdef0123456789abcdef\"\n"
                       "branch = \"fedcba9876543210fedcba9876543210\"\n"
                       "revision = \"18446744073709551615\"\n"
                       "[mounts.alpha]\n"
                       "path = \"libs/alpha\"\n"
                       "repository = \"00000000000000000000000000000001\"\n"
                       "branch = \"00000000000000000000000000000002\"\n"
                       "revision = \"0\"\n";
    if (parse_ok(full, &c)) {
        CN_CHECK_EQ(c.nrules, 2);
        CN_CHECK_STR(c.rules[0].pattern, "**/*.psd");
        CN_CHECK_EQ(c.rules[0].mode, CN_LOCK_MODE_REQUIRED);
        CN_CHECK_EQ(c.rules[1].mode, CN_LOCK_MODE_NONE);
        CN_CHECK_EQ(c.nmounts, 2);
        CN_CHECK_STR(c.mounts[0].name, "alpha"); /* sorted by name */
        CN_CHECK_STR(c.mounts[1].path, "third_party/zeta");
        CN_CHECK(c.mounts[1].revision == UINT64_MAX);
        CN_CHECK(c.mounts[1].repository[0] == 0x01 && c.mounts[1].repository[15] == 0xef);
        CN_CHECK(c.mounts[1].branch[0] == 0xfe);
        CN_CHECK(c.mounts[0].revision == 0 && c.mounts[0].repository[15] == 1);
        /* first match wins */
        const cn_repo_lock_rule_t *r = cn_repo_config_match(&c, "art/x.psd");
        CN_CHECK(r == &c.rules[0]);
        CN_CHECK(cn_repo_config_match(&c, "art/x.png") == &c.rules[1]);
        CN_CHECK(cn_repo_config_match(&c, "docs/x.png") == NULL);
        cn_repo_config_free(&c);
    }
    /* the same rules as an array of tables; no [locks] at all */
    if (parse_ok("version = 1\n[[locks.rules]]\npattern = '*.uasset'\nmode = 'required'\n", &c)) {
        CN_CHECK_EQ(c.nrules, 1);
        cn_repo_config_free(&c);
    }
    cn_repo_config_free(NULL);
}

static void test_refuses(void)
{
    parse_bad("", 1, 1, "version = 1 is required");
    parse_bad("version = 2\n", 1, 1, "integer 1");
    parse_bad("version = '1'\n", 1, 1, "integer 1");
    parse_bad("version = 1\nname = 'x'\n", 2, 1, "unknown top-level key 'name'");
    parse_bad("version = 1\nversion = 1\n", 2, 1, "defined twice");
    parse_bad("version = 1\n[locks\n", 2, 7, "table header");
    parse_bad("version = 1\nlocks = 3\n", 2, 1, "locks is a table");
    parse_bad("version = 1\n[locks]\nrule = []\n", 3, 1, "only rules");
    parse_bad("version = 1\n[locks]\nrules = 'x'\n", 3, 1, "array of tables");
    parse_bad("version = 1\n[locks]\nrules = [1]\n", 3, 10, "is a table");
    parse_bad("version = 1\n[locks]\nrules = [{mode = 'none'}]\n", 3, 10, "needs pattern");
    parse_bad("version = 1\n[locks]\nrules = [{pattern = 'a'}]\n", 3, 10, "needs mode");
    parse_bad("version = 1\n[locks]\nrules = [{pattern = 'a', mode = 'all'}]\n", 3, 26,
              "\"required\" or \"none\"");
    parse_bad("version = 1\n[locks]\nrules = [{pattern = 'a', mode = 'none', x = 1}]\n", 3, 41,
              "not 'x'");
    const char *bad_globs[] = { "",      "/a",    "a/",   "a//b",  "./a",    "a/..", "a**",
                                "**b/c", "a/***", "[ab]", "{a,b}", "a\\\\b", "a\\tb" };
    for (size_t i = 0; i < sizeof bad_globs / sizeof *bad_globs; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "version = 1\n[locks]\nrules = [{pattern = \"%s\", mode = "
                 "'none'}]\n",
                 bad_globs[i]);
        parse_bad(text, 3, 11, "invalid pattern");
    }
    parse_bad("version = 1\nprofiles = 1\n", 2, 1, "profiles is a table");
    parse_bad("version = 1\n[mounts]\nm = 1\n", 3, 1, "is a table");
    const char *mount = "version = 1\n[mounts.m]\npath = 'lib'\nrepository = "
                        "'0123456789abcdef0123456789abcdef'\nbranch = "
                        "'0123456789abcdef0123456789abcdef'\nrevision = '%s'\n%s";
    char text[512];
    snprintf(text, sizeof text, mount, "01", "");
    parse_bad(text, 6, 1, "canonical decimal u64");
    snprintf(text, sizeof text, mount, "18446744073709551616", "");
    parse_bad(text, 6, 1, "canonical decimal u64");
    snprintf(text, sizeof text, mount, "1", "extra = 1\n");
    parse_bad(text, 7, 1, "not 'extra'");
    snprintf(text, sizeof text, mount, "1", "[mounts.n]\npath = 'lib'\n");
    parse_bad(text, 7, 9, "needs repository");
    parse_bad("version = 1\n[mounts.m]\npath = '/abs'\nrepository = "
              "'0123456789abcdef0123456789abcdef'\nbranch = "
              "'0123456789abcdef0123456789abcdef'\nrevision = '1'\n",
              3, 1, "canonical repository path");
    parse_bad("version = 1\n[mounts.m]\npath = 'a'\nrepository = "
              "'0123456789ABCDEF0123456789abcdef'\nbranch = "
              "'0123456789abcdef0123456789abcdef'\nrevision = '1'\n",
              4, 1, "32 lowercase hex");
    /* too large, invalid UTF-8, invalid TOML */
    size_t big = CN_REPO_CONFIG_MAX + 1;
    char *huge = malloc(big);
    memset(huge, '#', big);
    cn_repo_config_t c;
    char err[128];
    CN_CHECK_EQ(cn_repo_config_parse(huge, big, &c, err, sizeof err), CN_E_INVALID);
    CN_CHECK(strstr(err, "larger than 65536") != NULL);
    free(huge);
    parse_bad("version = 1\nx = \"\xff\"\n", 1, 1, "UTF-8");
    parse_bad("version = 1\n[profiles.p]\nk = {a = 1,}\n", 3, 12, "trailing comma");
}

static void test_glob(void)
{
    struct {
        const char *pattern, *path;
        bool match;
    } cases[] = {
        { "*.psd", "a.psd", true },
        { "*.psd", "art/a.psd", false },
        { "**/*.psd", "a.psd", true },
        { "**/*.psd", "art/x/a.psd", true },
        { "art/**", "art/x/y", true },
        { "art/**", "art", true },
        { "art/**", "arts/x", false },
        { "a/**/b", "a/b", true },
        { "a/**/b", "a/x/y/b", true },
        { "a/**/b", "a/x/y/c", false },
        { "?.md", "é.md", true },
        { "?.md", "ab.md", false },
        { "a?c", "a/c", false },
        { "*", "", true },
        { "a*b*c", "axxbyyc", true },
        { "a*b*c", "axxbyy", false },
        { "**", "any/depth/at/all", true },
        { "docs/*/x", "docs/a/b/x", false },
        { "**/b/**/d", "a/b/c/d", true },
        { "**/b/**/d", "a/c/d", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cn_repo_glob_match(cases[i].pattern, cases[i].path) != cases[i].match) {
            fprintf(stderr, "# %s vs %s\n", cases[i].pattern, cases[i].path);
            CN_CHECK(0);
        }
    }
}

static void test_rules_equal(void)
{
    cn_repo_config_t a, b, c, d;
    if (!parse_ok("version = 1\nlocks.rules = [{pattern = '*.psd', mode = 'required'}]\n", &a) ||
        !parse_ok("# reformatted, with a profile\nversion = 1\n[profiles.x]\ny = 1\n"
                  "[[locks.rules]]\nmode = \"required\"\npattern = \"*.psd\"\n",
                  &b) ||
        !parse_ok("version = 1\nlocks.rules = [{pattern = '*.psd', mode = 'none'}]\n", &c) ||
        !parse_ok("version = 1\n", &d))
        return;
    CN_CHECK(cn_repo_config_rules_equal(&a, &b));
    CN_CHECK(!cn_repo_config_rules_equal(&a, &c));
    CN_CHECK(!cn_repo_config_rules_equal(&a, &d));
    CN_CHECK(cn_repo_config_rules_equal(&d, NULL));
    CN_CHECK(cn_repo_config_rules_equal(NULL, NULL));
    cn_repo_config_free(&a);
    cn_repo_config_free(&b);
    cn_repo_config_free(&c);
    cn_repo_config_free(&d);
}

CN_TEST_MAIN(CN_TEST(test_accepts), CN_TEST(test_refuses), CN_TEST(test_glob),
             CN_TEST(test_rules_equal))
