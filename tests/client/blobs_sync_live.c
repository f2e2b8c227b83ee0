/* cn_blobc_sync (include/cairn/blobs_client.h) between two real cairnd blob
 * servers, driven by tests/client/test_blobs_sync_live.py, which starts both
 * and passes CAIRN_SRC_URL, CAIRN_DST_URL and CAIRN_TOKEN (an operator's).
 * Named digests (some already on the target, one on neither), the whole
 * namespace, idempotence, and a refused have.  Output is TAP. */
#include "cn_test.h"

#include "cairn/blobs_client.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NS "sync/live"
#define N_BLOBS 12

static const char *g_src, *g_dst, *g_token;

static cn_blobc_t *conn(const char *url, const char *cred)
{
    cn_blobc_t *c = NULL;
    if (cn_blobc_new(url, cred, &c) < 0) {
        fprintf(stderr, "# cn_blobc_new %s failed\n", url);
        exit(2);
    }
    return c;
}

typedef struct seen {
    pthread_mutex_t mu; /* the callbacks are serialised; the lock checks that claim */
    size_t ok, missing, failed;
    cn_digest_t last_missing;
} seen_t;

static void on_digest(void *ctx, const cn_digest_t *d, cn_err_t e, const cn_blobc_error_t *detail)
{
    seen_t *s = ctx;
    CN_CHECK(detail != NULL);
    CN_CHECK_EQ(pthread_mutex_trylock(&s->mu), 0);
    if (e == CN_OK)
        s->ok++;
    else if (e == CN_E_NOT_FOUND) {
        s->missing++;
        s->last_missing = *d;
    } else
        s->failed++;
    pthread_mutex_unlock(&s->mu);
}

typedef struct counted {
    size_t n;
} counted_t;

static cn_err_t count_sink(void *ctx, const void *p, size_t n)
{
    (void)p;
    ((counted_t *)ctx)->n += n;
    return CN_OK;
}

static void test_sync(void)
{
    cn_blobc_t *src = conn(g_src, g_token), *dst = conn(g_dst, g_token);
    cn_digest_t want[N_BLOBS + 1];
    size_t lens[N_BLOBS];
    for (size_t i = 0; i < N_BLOBS; i++) {
        lens[i] = 1000 + i * 37000;
        uint8_t *p = malloc(lens[i]);
        for (size_t k = 0; k < lens[i]; k++)
            p[k] = (uint8_t)(k * 31 + i);
        cn_blobc_put_result_t r;
        CN_CHECK_EQ(cn_blobc_put_buf(src, NS, p, lens[i], &r), 0);
        want[i] = r.digest;
        if (i < 2) /* the target holds two already */
            CN_CHECK_EQ(cn_blobc_put_buf(dst, NS, p, lens[i], &r), 0);
        free(p);
    }
    memset(&want[N_BLOBS], 0x11, sizeof want[N_BLOBS]); /* on neither server */

    /* Named digests, three workers. */
    seen_t seen = { .ok = 0 };
    pthread_mutex_init(&seen.mu, NULL);
    cn_blobc_sync_opts_t o = {
        .digests = want, .n_digests = N_BLOBS + 1, .jobs = 3, .on_digest = on_digest, .ctx = &seen
    };
    cn_blobc_sync_stats_t st;
    CN_CHECK_EQ(cn_blobc_sync(src, dst, NS, &o, &st), 0);
    CN_CHECK_EQ(st.digests, N_BLOBS + 1);
    CN_CHECK_EQ(st.present, 2);
    CN_CHECK_EQ(st.copied, N_BLOBS - 2);
    CN_CHECK_EQ(st.missing, 1);
    CN_CHECK_EQ(st.failed, 0);
    CN_CHECK_EQ(st.first_error, 0);
    CN_CHECK_EQ(seen.ok, N_BLOBS - 2);
    CN_CHECK_EQ(seen.missing, 1);
    CN_CHECK_EQ(seen.failed, 0);
    CN_CHECK(memcmp(&seen.last_missing, &want[N_BLOBS], sizeof want[0]) == 0);
    bool present[N_BLOBS];
    CN_CHECK_EQ(cn_blobc_have(dst, NS, want, N_BLOBS, NULL, present), 0);
    for (size_t i = 0; i < N_BLOBS; i++) {
        CN_CHECK(present[i]);
        counted_t got = { 0 };
        CN_CHECK_EQ(cn_blobc_get(dst, NS, &want[i], NULL, count_sink, &got, NULL, NULL, NULL), 0);
        CN_CHECK_EQ(got.n, lens[i]);
    }

    /* The whole namespace, one worker: everything is there already. */
    o = (cn_blobc_sync_opts_t){ .jobs = 1 };
    CN_CHECK_EQ(cn_blobc_sync(src, dst, NS, &o, &st), 0);
    CN_CHECK_EQ(st.digests, N_BLOBS);
    CN_CHECK_EQ(st.present, N_BLOBS);
    CN_CHECK_EQ(st.copied, 0);
    /* ... and a namespace the source does not have: nothing to do. */
    CN_CHECK_EQ(cn_blobc_sync(src, dst, "sync/empty", NULL, &st), 0);
    CN_CHECK_EQ(st.digests, 0);

    /* A target that refuses the credential: the have fails, nothing copied. */
    cn_blobc_t *bad = conn(g_dst, "nope:nope");
    o = (cn_blobc_sync_opts_t){ .digests = want, .n_digests = N_BLOBS };
    CN_CHECK_EQ(cn_blobc_sync(src, bad, NS, &o, &st), CN_E_AUTH);
    CN_CHECK_EQ(st.stage, CN_BLOBC_SYNC_STAGE_HAVE);
    CN_CHECK_EQ(cn_blobc_error(bad)->status, 401);
    cn_blobc_free(bad);
    pthread_mutex_destroy(&seen.mu);
    cn_blobc_free(src);
    cn_blobc_free(dst);
}

int main(void)
{
    static const cn_test_case_t all[] = { CN_TEST(test_sync) };
    g_src = getenv("CAIRN_SRC_URL");
    g_dst = getenv("CAIRN_DST_URL");
    g_token = getenv("CAIRN_TOKEN");
    if (!g_src || !g_dst || !g_token) {
        fprintf(stderr,
                "usage: CAIRN_SRC_URL=.. CAIRN_DST_URL=.. CAIRN_TOKEN=.. blobs_sync_live\n");
        return 2;
    }
    return cn_test_run(all, sizeof all / sizeof all[0]);
}
