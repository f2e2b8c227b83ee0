/* The gateway's configuration parser and name resolver (src/scribe/
 * gw_config.c), against docs/protocol/scribe-gateway.md: the accepted
 * shapes, every refusal, and how bare and prefixed names resolve with one
 * namespace, several, and a default. */
#include "cn_test.h"
#include "scribe/gw_int.h"

#include <stdio.h>
#include <string.h>

static cn_err_t parse(const char *text, cn_gw_config_t *c, char *err)
{
    return cn_gw_config_parse(text, strlen(text), c, err, 256);
}

static const char two[] =
    "[[storage]]\naddress = \"scribes://127.0.0.1:7001\"\nnamespace = \"studio\"\n"
    "[[storage]]\naddress = \"scribes://127.0.0.1:7002\"\nnamespace = \"publishing\"\n"
    "[[storage]]\naddress = \"scribes://127.0.0.1:7003\"\nnamespace = \"studio\"\n";

static void test_plaintext(void)
{
    cn_gw_config_t c;
    char err[256];
    CN_CHECK_EQ(parse("[[storage]]\naddress = \"127.0.0.1:7447\"\nnamespace = \"\"\n"
                      "[[storage]]\naddress = \"[::1]:7448\"\n",
                      &c, err),
                0);
    CN_CHECK_EQ(c.n, 2);
    CN_CHECK(!c.tls);
    CN_CHECK_EQ(c.nns, 1);
    CN_CHECK_STR(c.servers[1].address, "[::1]:7448");
    CN_CHECK_STR(c.ns[0], "");
    CN_CHECK_EQ(c.reuse_ms, CN__GW_REUSE_DEFAULT_MS);
    CN_CHECK_EQ(parse("upstream_reuse_ms = 0\n[[storage]]\naddress = \"127.0.0.1:1\"\n", &c, err),
                0);
    CN_CHECK_EQ(c.reuse_ms, 0);
}

static void test_namespaces(void)
{
    cn_gw_config_t c;
    char err[256];
    CN_CHECK_EQ(parse(two, &c, err), 0);
    CN_CHECK(c.tls);
    CN_CHECK_EQ(c.nns, 2);
    CN_CHECK_STR(c.ns[0], "studio");
    CN_CHECK_STR(c.ns[1], "publishing");
    CN_CHECK_STR(c.servers[0].address, "127.0.0.1:7001");
    CN_CHECK(!c.has_default);
}

static void test_refusals(void)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        { "", "not 0" },
        { "[[storage]]\naddress = \"127.0.0.1:1\"\nnamespace = \"x\"\n", "label must be" },
        { "[[storage]]\naddress = \"scribes://127.0.0.1:1\"\nnamespace = \"\"\n",
          "namespace must" },
        { "[[storage]]\naddress = \"scribes://127.0.0.1:1\"\nnamespace = \"a/b\"\n",
          "namespace must" },
        { "[[storage]]\naddress = \"scribes://127.0.0.1:1\"\nnamespace = "
          "\"aaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n",
          "namespace must" },
        { "[[storage]]\naddress = \"127.0.0.1:1\"\n[[storage]]\naddress = "
          "\"scribes://127.0.0.1:2\"\n"
          "namespace = \"s\"\n",
          "mix plaintext" },
        { "[[storage]]\naddress = \"host.example:1\"\n", "not host:port" },
        { "[[storage]]\nnamespace = \"\"\n", "needs an address" },
        { "[[storage]]\naddress = 7447\n", "must be a string" },
        { "gateway = 1\n[[storage]]\naddress = \"127.0.0.1:1\"\n", "unknown key 'gateway'" },
        { "default_namespace = \"nope\"\n"
          "[[storage]]\naddress = \"scribes://127.0.0.1:1\"\n"
          "namespace = \"s\"\n",
          "is not the namespace" },
        { "default_namespace = \"\"\n[[storage]]\naddress = \"127.0.0.1:1\"\n",
          "default_namespace" },
        { "[storage]\naddress = \"127.0.0.1:1\"\n", "array of tables" },
        /* upstream_reuse_ms: an integer 0..3600000 */
        { "upstream_reuse_ms = -1\n[[storage]]\naddress = \"127.0.0.1:1\"\n",
          "upstream_reuse_ms must be" },
        { "upstream_reuse_ms = 3600001\n[[storage]]\naddress = \"127.0.0.1:1\"\n",
          "upstream_reuse_ms must be" },
        { "upstream_reuse_ms = \"30s\"\n[[storage]]\naddress = \"127.0.0.1:1\"\n",
          "upstream_reuse_ms must be" },
        /* storage_ca: for scribes:// storage only, a path */
        { "storage_ca = \"ca.pem\"\n[[storage]]\naddress = \"127.0.0.1:1\"\n",
          "storage_ca is for scribes://" },
        { "storage_ca = \"\"\n[[storage]]\naddress = \"scribes://127.0.0.1:1\"\n"
          "namespace = \"s\"\n",
          "storage_ca must name a file" },
        { "storage_ca = 1\n[[storage]]\naddress = \"scribes://127.0.0.1:1\"\n"
          "namespace = \"s\"\n",
          "must be a string" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cn_gw_config_t c;
        char err[256] = "";
        cn_err_t e = parse(bad[i].text, &c, err);
        CN_CHECK_EQ(e, CN_E_INVALID);
        CN_CHECK_EQ(c.n, 0);
        if (!strstr(err, bad[i].why)) {
            printf("# case %zu: '%s' lacks '%s'\n", i, err, bad[i].why);
            CN_CHECK(0);
        }
    }
    {
        cn_gw_config_t t;
        char terr[256] = "";
        CN_CHECK_EQ(parse("storage_ca = \"ca.pem\"\n[[storage]]\naddress = "
                          "\"scribes://127.0.0.1:1\"\nnamespace = \"s\"\n",
                          &t, terr),
                    CN_OK);
        CN_CHECK(t.tls && !strcmp(t.storage_ca, "ca.pem"));
    }
    /* 64 servers are accepted, 65 are not */
    char text[8192];
    size_t off = 0;
    for (int i = 0; i < 65; i++)
        off += (size_t)snprintf(text + off, sizeof text - off,
                                "[[storage]]\naddress = \"127.0.0.1:%d\"\n", 1000 + i);
    cn_gw_config_t c;
    char err[256];
    CN_CHECK_EQ(parse(text, &c, err), CN_E_INVALID);
    CN_CHECK(strstr(err, "not 65") != NULL);
    text[strstr(text, "[[storage]]\naddress = \"127.0.0.1:1064\"") - text] = 0;
    CN_CHECK_EQ(parse(text, &c, err), 0);
    CN_CHECK_EQ(c.n, 64);
}

static void resolve_ok(const cn_gw_config_t *c, const char *name, const char *ns, const char *sn)
{
    const char *gns, *gs;
    size_t gl;
    char msg[256] = "";
    cn_err_t e = cn_gw_name_resolve(c, name, strlen(name), &gns, &gs, &gl, msg, sizeof msg);
    CN_CHECK_EQ(e, 0);
    if (e == 0) {
        CN_CHECK_STR(gns, ns);
        CN_CHECK(gl == strlen(sn) && !memcmp(gs, sn, gl));
    }
}

static void resolve_bad(const cn_gw_config_t *c, const char *name, const char *why)
{
    const char *gns, *gs;
    size_t gl;
    char msg[256] = "";
    CN_CHECK_EQ(cn_gw_name_resolve(c, name, strlen(name), &gns, &gs, &gl, msg, sizeof msg),
                CN_E_INVALID);
    if (!strstr(msg, why)) {
        printf("# '%s': '%s' lacks '%s'\n", name, msg, why);
        CN_CHECK(0);
    }
}

static void test_names(void)
{
    cn_gw_config_t c;
    char err[256];
    CN_CHECK_EQ(parse(two, &c, err), 0);
    resolve_ok(&c, "studio/art", "studio", "art");
    resolve_ok(&c, "publishing/book.v2", "publishing", "book.v2");
    resolve_bad(&c, "art", "several namespaces: name the repository as <namespace>/<name>");
    resolve_bad(&c, "games/art", "'games' is not a namespace of this gateway");
    resolve_bad(&c, "studio/a/b", "not a repository name");
    resolve_bad(&c, "/art", "not a repository name");
    resolve_bad(&c, "studio/", "not a repository name");
    resolve_bad(&c, "", "not a repository name");
    CN_CHECK_EQ(parse("default_namespace = \"publishing\"\n", &c, err), CN_E_INVALID);
    char withdef[1024];
    snprintf(withdef, sizeof withdef, "default_namespace = \"publishing\"\n%s", two);
    CN_CHECK_EQ(parse(withdef, &c, err), 0);
    resolve_ok(&c, "art", "publishing", "art");
    resolve_ok(&c, "studio/art", "studio", "art");
    /* one namespace (plaintext: the empty one): bare names only */
    CN_CHECK_EQ(parse("[[storage]]\naddress = \"127.0.0.1:1\"\n", &c, err), 0);
    resolve_ok(&c, "art", "", "art");
    resolve_bad(&c, "studio/art", "<namespace>/<name>");
    char long_name[200];
    memset(long_name, 'a', 129);
    long_name[129] = 0;
    resolve_bad(&c, long_name, "not a repository name");
    long_name[128] = 0;
    resolve_ok(&c, long_name, "", long_name);
}

CN_TEST_MAIN(CN_TEST(test_plaintext), CN_TEST(test_namespaces), CN_TEST(test_refusals),
             CN_TEST(test_names))
