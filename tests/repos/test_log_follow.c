/* Unit tests of the merge-aware log's pure part and of its argument rules
 * over a real meta + store: the key set the walk remembers segments and
 * revisions in (every key found again with its value across growth), the
 * follow-merges log of a moved file read through the service API, and the
 * refusals that come before any read (a missing or non-canonical path, a
 * cursor without before, a ceiling outside the all-branch mode, a
 * descendants cursor outside the queried path). */
#include "cn_test.h"
#include "service_env.h"
#include "repos/service_log_int.h"

static void test_key_set(void)
{
    cn__hset_t s;
    memset(&s, 0, sizeof s);
    char key[64];
    for (unsigned i = 0; i < 3000; i++) {
        int n = snprintf(key, sizeof key, "key-%u-%.*s", i, (int)(i % 40),
                         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        bool added = false;
        uint64_t *v = NULL;
        CN_CHECK_EQ(cn__hset_put(&s, (const uint8_t *)key, (size_t)n, &added, &v), 0);
        CN_CHECK(added);
        *v = i + 1;
    }
    for (unsigned i = 0; i < 3000; i += 7) {
        int n = snprintf(key, sizeof key, "key-%u-%.*s", i, (int)(i % 40),
                         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        uint64_t v = 0;
        CN_CHECK(cn__hset_get(&s, (const uint8_t *)key, (size_t)n, &v));
        CN_CHECK_EQ(v, i + 1);
        bool added = true;
        uint64_t *pv = NULL;
        CN_CHECK_EQ(cn__hset_put(&s, (const uint8_t *)key, (size_t)n, &added, &pv), 0);
        CN_CHECK(!added);
        CN_CHECK_EQ(*pv, i + 1);
    }
    uint64_t v = 0;
    CN_CHECK(!cn__hset_get(&s, (const uint8_t *)"key-1-", 6, &v)); /* a prefix of a key */
    free(s.slots);
    cn_buf_free(&s.keys);
}

typedef struct rows {
    uint64_t change[8];
    char path[8][16];
    unsigned n;
} rows_t;

static cn_err_t follow_row(void *ctx, const cn_repos_log_row_t *row, bool member)
{
    rows_t *r = ctx;
    CN_CHECK(!member); /* follow-merges rows carry no membership */
    if (r->n < 8) {
        r->change[r->n] = row->change;
        snprintf(r->path[r->n++], 16, "%.*s", (int)row->path_len, (const char *)row->path);
    }
    return CN_OK;
}

static cn_err_t no_entry(void *ctx, const uint8_t *p, size_t n, const cn_repos_entry_t *e)
{
    (void)ctx;
    (void)p;
    (void)n;
    (void)e;
    return CN_OK;
}

static void test_service_reads_and_refusals(void)
{
    env_t e;
    env_open(&e);
    cn_digest_t m1 = put_file(&e, "one");
    cn_repos_change_t add = ch(CN_REPOS_ADD, "a", &m1);
    cn_repos_change_t mv = ch(CN_REPOS_MOVE, "b", &m1);
    mv.from = (const uint8_t *)"a";
    mv.from_len = 1;
    cn_repos_outcome_t o;
    CN_CHECK_EQ(submit_on(&e, e.repo.main_branch, 1, 0, &add, 1, &o), 1);
    cn_repos_outcome_free(&o);
    CN_CHECK_EQ(submit_on(&e, e.repo.main_branch, 2, 1, &mv, 1, &o), 2);
    cn_repos_outcome_free(&o);

    cn_repos_follow_q_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo, e.repo.id, 16);
    memcpy(q.branch, e.repo.main_branch, 16);
    q.path = (const uint8_t *)"b";
    q.path_len = 1;
    q.limit = 10;
    rows_t rows = { 0 };
    uint64_t ceiling = 9;
    cn_repos_req_t rq = trusted();
    CN_CHECK_EQ(cn_repos_log_follow(e.r, &rq, &q, &ceiling, follow_row, &rows), 0);
    CN_CHECK_EQ(rows.n, 2);
    CN_CHECK_EQ(rows.change[0], 2);
    CN_CHECK_STR(rows.path[0], "b");
    CN_CHECK_EQ(rows.change[1], 1);
    CN_CHECK_STR(rows.path[1], "a");
    CN_CHECK_EQ(ceiling, 0); /* follow-merges pins none */

    cn_repos_follow_q_t bad = q;
    bad.path = NULL;
    rq = trusted();
    CN_CHECK_EQ(cn_repos_log_follow(e.r, &rq, &bad, &ceiling, follow_row, &rows), CN_E_INVALID);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_MALFORMED);
    bad = q;
    bad.path = (const uint8_t *)"b/";
    bad.path_len = 2;
    rq = trusted();
    CN_CHECK_EQ(cn_repos_log_follow(e.r, &rq, &bad, &ceiling, follow_row, &rows), CN_E_INVALID);
    bad = q;
    bad.after_path = (const uint8_t *)"b";
    bad.after_len = 1;
    rq = trusted();
    CN_CHECK_EQ(cn_repos_log_follow(e.r, &rq, &bad, &ceiling, follow_row, &rows), CN_E_INVALID);
    bad = q;
    bad.has_ceiling = true;
    bad.ceiling = 1;
    rq = trusted();
    CN_CHECK_EQ(cn_repos_log_follow(e.r, &rq, &bad, &ceiling, follow_row, &rows), CN_E_INVALID);

    cn_buf_t next = { 0 };
    bool has = true;
    rq = trusted();
    CN_CHECK_EQ(cn_repos_descendants(e.r, &rq, e.repo.id, e.repo.main_branch, 2,
                                     (const uint8_t *)"d", 1, (const uint8_t *)"e/x", 3, no_entry,
                                     NULL, &next, &has),
                CN_E_INVALID);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_MALFORMED);
    CN_CHECK(!has);
    rq = trusted();
    CN_CHECK_EQ(cn_repos_descendants(e.r, &rq, e.repo.id, e.repo.main_branch, 2,
                                     (const uint8_t *)"d", 1, (const uint8_t *)"d/", 2, no_entry,
                                     NULL, &next, &has),
                CN_E_INVALID);
    cn_buf_free(&next);
    env_close(&e);
}

CN_TEST_MAIN(CN_TEST(test_key_set), CN_TEST(test_service_reads_and_refusals))
