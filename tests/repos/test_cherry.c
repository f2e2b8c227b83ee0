/* The cherry-pick fingerprint is written twice: by the codec
 * (cn_scribe_pick_fingerprint, what a client replays against) and by the
 * repos service (cn_repos_pick_fp, what the server records).  A replay under
 * the same operation id matches only when both agree, so this holds the
 * service's to the documented fixture (docs/protocol/scribe.md 9.6) and to
 * the codec's for the request decoded from either codec, and shows that each
 * pick field moves it while the author does not. */
#include "cn_test.h"
#include "cairn/crypto.h"
#include "cairn/repos.h"
#include "cairn/scribe.h"

#include <string.h>

#define CHANGESET "d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c"
#define PICK_FP "c4d7e557b8423842fcc64dea2dcb7d7d16db8bb13c55e80577d966e8491eb9b0"

static cn_scribe_id_t id_from(uint8_t first)
{
    cn_scribe_id_t id;
    for (int i = 0; i < 16; i++)
        id.b[i] = (uint8_t)(first + i);
    return id;
}

/* The document's pick: change 8 of `feature` (50..5f) onto main (10..1f) at
 * 7, operation 70..7f, message "fix". */
static cn_scribe_pick_submit_req_t fixture(void)
{
    cn_scribe_pick_submit_req_t q;
    memset(&q, 0, sizeof q);
    q.submit.repo = id_from(0);
    q.submit.incarnation = id_from(0x20);
    q.submit.operation = id_from(0x70);
    q.submit.branch = id_from(0x10);
    q.submit.workspace = id_from(0x40);
    q.submit.base = 7;
    CN_CHECK_EQ(cn_hex_decode(CHANGESET, 64, q.submit.changeset.b, 32), CN_OK);
    q.submit.author = cn_scribe_cstr("ann");
    q.submit.message = cn_scribe_cstr("fix");
    q.target_head = 7;
    q.source = id_from(0x50);
    q.source_change = 8;
    return q;
}

/* The service's view of a decoded request (strings borrowed from q). */
static cn_repos_pick_t service_view(const cn_scribe_pick_submit_req_t *q)
{
    cn_repos_pick_t p;
    memset(&p, 0, sizeof p);
    memcpy(p.submit.repo, q->submit.repo.b, 16);
    memcpy(p.submit.incarnation, q->submit.incarnation.b, 16);
    memcpy(p.submit.operation, q->submit.operation.b, 16);
    memcpy(p.submit.branch, q->submit.branch.b, 16);
    memcpy(p.submit.workspace, q->submit.workspace.b, 16);
    p.submit.base = q->submit.base;
    p.submit.changeset = q->submit.changeset;
    p.submit.keep_locks = q->submit.keep_locks;
    p.submit.author = q->submit.author.p;
    p.submit.author_len = (uint16_t)q->submit.author.len;
    p.submit.message = q->submit.message.p;
    p.submit.message_len = q->submit.message.len;
    memcpy(p.source, q->source.b, 16);
    p.change = q->source_change;
    return p;
}

static bool agree(const cn_scribe_pick_submit_req_t *q, cn_digest_t *out)
{
    cn_digest_t a;
    cn_repos_pick_t p = service_view(q);
    cn_scribe_pick_fingerprint(q, &a);
    cn_repos_pick_fp(&p, out);
    return memcmp(a.b, out->b, CN_DIGEST_LEN) == 0;
}

static void test_fixture_and_codecs(void)
{
    cn_scribe_pick_submit_req_t q = fixture();
    cn_digest_t fp, want, z;
    CN_CHECK_EQ(cn_hex_decode(PICK_FP, 64, want.b, 32), CN_OK);
    CN_CHECK(agree(&q, &fp));
    CN_CHECK_MEM(fp.b, want.b, CN_DIGEST_LEN);
    /* the same request through either codec: one intent */
    for (int codec = CN_SCRIBE_CODEC_LE; codec <= CN_SCRIBE_CODEC_BE; codec++) {
        cn_buf_t b = { 0 };
        cn_scribe_pick_submit_req_t d;
        CN_CHECK_EQ(cn_scribe_enc_pick_submit_req(&b, (cn_scribe_codec_t)codec, &q), CN_OK);
        CN_CHECK_EQ(cn_scribe_dec_pick_submit_req(b.data, b.len, (cn_scribe_codec_t)codec, &d),
                    CN_OK);
        CN_CHECK(agree(&d, &z));
        CN_CHECK_MEM(z.b, want.b, CN_DIGEST_LEN);
        cn_buf_free(&b);
    }
}

static void test_fields(void)
{
    cn_digest_t base, z;
    cn_scribe_pick_submit_req_t q = fixture();
    CN_CHECK(agree(&q, &base));
    q.submit.author = cn_scribe_cstr("bob"); /* attribution is not intent */
    CN_CHECK(agree(&q, &z));
    CN_CHECK_MEM(z.b, base.b, CN_DIGEST_LEN);
    for (int i = 0; i < 4; i++) { /* every pick field is */
        q = fixture();
        if (i == 0)
            q.source_change = 9;
        else if (i == 1)
            q.source = id_from(0x51);
        else if (i == 2)
            q.target_head = q.submit.base = 6;
        else
            q.submit.message = cn_scribe_cstr("fix (picked)");
        CN_CHECK(agree(&q, &z));
        CN_CHECK(memcmp(z.b, base.b, CN_DIGEST_LEN) != 0);
    }
}

CN_TEST_MAIN(CN_TEST(test_fixture_and_codecs), CN_TEST(test_fields))
