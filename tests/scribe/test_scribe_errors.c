/* The Scribe adapter's one error table: every repos detail code has a Scribe
 * code (the test fails for a detail added without one), the numbers the
 * contract fixed stay paired, and a failure without a detail maps by class. */
#include "cn_test.h"
#include "cairn/repos.h"
#include "cairn/scribe.h"
#include "scribe/server_int.h"

/* Walks every value up to the largest detail; each that names a detail must
 * map to a Scribe code, and only INTERNAL to the internal-error code. */
static void test_every_detail_maps(void)
{
    unsigned named = 0;
    for (unsigned d = 1; d <= CN_REPOS_E_LAST; d++) {
        const char *name = cn_repos_code_name(d);
        if (!name) {
            CN_CHECK_EQ(cn__scribe_detail_code((uint16_t)d), 0);
            continue;
        }
        named++;
        uint16_t code = cn__scribe_detail_code((uint16_t)d);
        if (!code)
            fprintf(stderr, "# repos detail %s (%u) has no Scribe code\n", name, d);
        CN_CHECK(code != 0);
        cn_fail_t f = { .cls = CN_E_DB, .detail = (uint16_t)d };
        uint16_t via = cn__scribe_code_for(&f, CN_E_DB);
        CN_CHECK_EQ(via, code);
        if (d != CN_REPOS_E_INTERNAL)
            CN_CHECK(via != CN_SCRIBE_E_INTERNAL);
    }
#define COUNT(name, value) +1
    CN_CHECK_EQ(named, 0 CN_REPOS_DETAILS(COUNT));
#undef COUNT
}

/* The contract gave details and wire codes the same numbers; persisted
 * outcomes rely on it. */
static void test_contract_pairs(void)
{
    CN_CHECK_EQ(cn__scribe_detail_code(CN_REPOS_E_BASE_CONFLICT), CN_SCRIBE_E_BASE_CONFLICT);
    CN_CHECK_EQ(cn__scribe_detail_code(CN_REPOS_E_PATH_CONFLICT), CN_SCRIBE_E_PATH_CONFLICT);
    CN_CHECK_EQ(cn__scribe_detail_code(CN_REPOS_E_REPOSITORY_NOT_FOUND),
                CN_SCRIBE_E_REPOSITORY_NOT_FOUND);
    CN_CHECK_EQ(cn__scribe_detail_code(CN_REPOS_E_NOTE_REVISION_STALE),
                CN_SCRIBE_E_NOTE_REVISION_STALE);
    CN_CHECK_EQ(cn__scribe_detail_code(0), 0);
    CN_CHECK_STR(cn_repos_code_name(0), "NONE");
    CN_CHECK_STR(cn_repos_code_name(CN_REPOS_E_BASE_CONFLICT), "BASE_CONFLICT");
    CN_CHECK(cn_repos_code_name(2) == NULL);
}

/* No detail: the class decides. */
static void test_class_fallback(void)
{
    cn_fail_t f = { 0 };
    CN_CHECK_EQ(cn__scribe_code_for(&f, CN_E_INVALID), CN_SCRIBE_E_MALFORMED);
    CN_CHECK_EQ(cn__scribe_code_for(&f, CN_E_AUTH), CN_SCRIBE_E_UNAUTHENTICATED);
    CN_CHECK_EQ(cn__scribe_code_for(&f, CN_E_DB_LOCKED), CN_SCRIBE_E_BUSY);
    CN_CHECK_EQ(cn__scribe_code_for(&f, CN_E_SHUTDOWN), CN_SCRIBE_E_SHUTTING_DOWN);
    CN_CHECK_EQ(cn__scribe_code_for(&f, CN_E_NOT_FOUND), CN_SCRIBE_E_INTERNAL);
}

CN_TEST_MAIN(CN_TEST(test_every_detail_maps), CN_TEST(test_contract_pairs),
             CN_TEST(test_class_fallback))
