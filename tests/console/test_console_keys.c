/* console: the failed sign-in limiter's source key (cn__console_fail_key):
 * an IPv4 address as itself, an IPv4-mapped IPv6 address as the IPv4 one,
 * an IPv6 address by its /64, anything else as given.  The loopback offers
 * one IPv6 source (::1), so the /64 sharing is tested here and, through a
 * trusted X-Forwarded-For, in test_console_session.py. */
#include "cn_test.h"
#include "console_int.h"

static void key_is(const char *ip, const char *want)
{
    char key[CN__CONSOLE_FAIL_KEY_MAX];
    memset(key, 'x', sizeof key);
    cn__console_fail_key(ip, key);
    CN_CHECK_STR(key, want);
}

static void test_ipv4(void)
{
    key_is("203.0.113.9", "203.0.113.9");
    key_is("::ffff:203.0.113.9", "203.0.113.9");
    key_is("::FFFF:cb00:7109", "203.0.113.9");
}

static void test_ipv6_by_64(void)
{
    key_is("2001:db8:1:2::1", "2001:db8:1:2::/64");
    key_is("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64");
    key_is("2001:0db8:0001:0002:0000:0000:0000:0001", "2001:db8:1:2::/64");
    key_is("2001:db8:1:3::1", "2001:db8:1:3::/64");
    key_is("::1", "::/64");
    key_is("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff::/64");
}

static void test_other(void)
{
    key_is("", "");
    key_is(NULL, "");
    key_is("not-an-address", "not-an-address");
    char long_text[200];
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = 0;
    char key[CN__CONSOLE_FAIL_KEY_MAX];
    cn__console_fail_key(long_text, key);
    CN_CHECK_EQ(strlen(key), (size_t)CN__CONSOLE_FAIL_KEY_MAX - 1);
}

CN_TEST_MAIN(CN_TEST(test_ipv4), CN_TEST(test_ipv6_by_64), CN_TEST(test_other))
