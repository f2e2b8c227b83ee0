/* The merge fingerprint is written twice: by the codec
 * (cn_scribe_merge_fingerprint, what a client replays against) and by the
 * repos service (cn_repos_merge_fp, what the server records).  A replayed
 * merge under the same operation id only matches when both agree, so this
 * holds them equal over varied requests, and shows that each field moves
 * both (the test fails for a field one side forgets). */
#include "cn_test.h"
#include "cairn/repos.h"
#include "cairn/scribe.h"

/* A merge request in both forms from one seed; author and message are
 * shared buffers. */
static void both(uint8_t seed, cn_scribe_merge_submit_req_t *q, cn_repos_merge_t *m)
{
    static const char author[] = "ada", message[] = "Merge feature into main";
    memset(q, 0, sizeof *q);
    memset(m, 0, sizeof *m);
    for (int i = 0; i < 16; i++) {
        q->submit.repo.b[i] = (uint8_t)(seed + i);
        q->submit.incarnation.b[i] = (uint8_t)(seed * 3 + i);
        q->submit.operation.b[i] = (uint8_t)(seed * 5 + i + 1);
        q->submit.branch.b[i] = (uint8_t)(seed * 7 + i);
        q->submit.workspace.b[i] = (uint8_t)(seed * 11 + i);
        q->source.b[i] = (uint8_t)(seed * 13 + i + 2);
        q->base_branch.b[i] = (uint8_t)(seed * 17 + i);
    }
    for (int i = 0; i < 32; i++)
        q->submit.changeset.b[i] = (uint8_t)(seed ^ i);
    q->submit.base = 1000u + seed;
    q->submit.keep_locks = seed & 1;
    q->submit.author = cn_scribe_cstr(author);
    q->submit.message = cn_scribe_cstr(message);
    q->target_head = q->submit.base;
    q->source_head = 900u + seed;
    q->base = 10u + seed;

    memcpy(m->submit.repo, q->submit.repo.b, 16);
    memcpy(m->submit.incarnation, q->submit.incarnation.b, 16);
    memcpy(m->submit.operation, q->submit.operation.b, 16);
    memcpy(m->submit.branch, q->submit.branch.b, 16);
    memcpy(m->submit.workspace, q->submit.workspace.b, 16);
    m->submit.base = q->submit.base;
    m->submit.changeset = q->submit.changeset;
    m->submit.keep_locks = q->submit.keep_locks;
    m->submit.author = (const uint8_t *)author;
    m->submit.author_len = (uint16_t)strlen(author);
    m->submit.message = (const uint8_t *)message;
    m->submit.message_len = (uint32_t)strlen(message);
    memcpy(m->source, q->source.b, 16);
    m->source_head = q->source_head;
    memcpy(m->base_branch, q->base_branch.b, 16);
    m->base = q->base;
}

static bool equal(const cn_scribe_merge_submit_req_t *q, const cn_repos_merge_t *m)
{
    cn_digest_t a, b;
    cn_scribe_merge_fingerprint(q, &a);
    cn_repos_merge_fp(m, &b);
    return memcmp(a.b, b.b, CN_DIGEST_LEN) == 0;
}

static void test_equal_over_requests(void)
{
    for (unsigned seed = 0; seed < 64; seed++) {
        cn_scribe_merge_submit_req_t q;
        cn_repos_merge_t m;
        both((uint8_t)seed, &q, &m);
        CN_CHECK(equal(&q, &m));
    }
}

/* Each merge field changes the fingerprint on both sides alike. */
static void test_fields_move_both(void)
{
    cn_scribe_merge_submit_req_t q0;
    cn_repos_merge_t m0;
    both(7, &q0, &m0);
    cn_digest_t ref;
    cn_scribe_merge_fingerprint(&q0, &ref);
    for (int field = 0; field < 5; field++) {
        cn_scribe_merge_submit_req_t q;
        cn_repos_merge_t m;
        both(7, &q, &m);
        switch (field) {
        case 0: q.source.b[3] ^= 1, m.source[3] ^= 1; break;
        case 1: q.source_head++, m.source_head++; break;
        case 2: q.base_branch.b[0] ^= 1, m.base_branch[0] ^= 1; break;
        case 3: q.base++, m.base++; break;
        default: q.submit.base++, q.target_head++, m.submit.base++; break;
        }
        cn_digest_t moved;
        cn_scribe_merge_fingerprint(&q, &moved);
        CN_CHECK(memcmp(moved.b, ref.b, CN_DIGEST_LEN) != 0);
        CN_CHECK(equal(&q, &m));
    }
}

/* The author stays out of both. */
static void test_author_excluded(void)
{
    cn_scribe_merge_submit_req_t q;
    cn_repos_merge_t m;
    both(9, &q, &m);
    cn_digest_t a, b;
    cn_scribe_merge_fingerprint(&q, &a);
    q.submit.author = cn_scribe_cstr("grace");
    m.submit.author = (const uint8_t *)"grace";
    m.submit.author_len = 5;
    cn_scribe_merge_fingerprint(&q, &b);
    CN_CHECK_MEM(a.b, b.b, CN_DIGEST_LEN);
    CN_CHECK(equal(&q, &m));
}

CN_TEST_MAIN(CN_TEST(test_equal_over_requests), CN_TEST(test_fields_move_both),
             CN_TEST(test_author_excluded))
