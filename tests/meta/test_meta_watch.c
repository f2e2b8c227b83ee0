/* Unit tests of the watcher (src/meta/watch.c, invariants W1-W3).  On
 * SQLite its calls are no-ops that answer true (one process, no other node).
 * On PostgreSQL (meta_watch_pg: tests/fleet/pg.sh) two handles on one
 * database stand for two nodes: a topic bumped through one is seen by both;
 * a lease is held by one of them only; and when the holder's watcher is cut
 * off (its session ended by the server, new connections to the database
 * refused) its topics stop answering within CN_META_TOPIC_FRESH_MS (W2), its
 * lease is dropped (W3) and taken by the other node; let in again, it reads
 * the topics again and does not take the lease back. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "cairn/util.h"
#include "cn_test.h"
#include "meta/test_target.h"

#define JOB "watch-test-job"
#define TOPIC "watch-test"

/* Polls (every 20 ms, at most ms) until m's lease on JOB is as want. */
static bool lease_becomes(cn_meta_t *m, bool want, int ms)
{
    for (int64_t end = cn_mono_ms() + ms;; usleep(20000)) {
        if (cn_meta_lease(m, JOB) == want)
            return true;
        if (cn_mono_ms() > end)
            return false;
    }
}

/* Polls until m's answer for TOPIC is want (its generation in *gen). */
static bool topic_becomes(cn_meta_t *m, bool want, int ms, uint64_t *gen)
{
    for (int64_t end = cn_mono_ms() + ms;; usleep(20000)) {
        if (cn_meta_topic_gen(m, TOPIC, gen) == want)
            return true;
        if (cn_mono_ms() > end)
            return false;
    }
}

static void test_sqlite_noops(void)
{
    if (cn_test_meta_pg()) {
        printf("# PostgreSQL: test_two_nodes\n");
        return;
    }
    char *dir = cn_test_tmpdir("watch");
    cn_meta_t *m = NULL;
    CN_CHECK_EQ(cn_meta_open(dir, NULL, &m), 0);
    CN_CHECK_EQ(cn_meta_watch_start(m), 0);
    uint64_t gen = 7;
    CN_CHECK(cn_meta_topic_gen(m, TOPIC, &gen));
    CN_CHECK_EQ(gen, 0);
    CN_CHECK(cn_meta_lease(m, JOB));
    cn_meta_topic_sync(m, 1000); /* returns at once */
    cn_meta_close(m);
    cn_test_rmtree(dir);
    free(dir);
}

static cn_err_t notify_body(cn_meta_txn_t *txn, void *ctx)
{
    return cn_meta_notify(ctx, txn, TOPIC);
}

static cn_err_t holder_pid(void *arg, const cn_meta_lease_info_t *li)
{
    if (!strcmp(li->job, JOB))
        *(int64_t *)arg = li->pid;
    return CN_OK;
}

/* The database name of a postgres:// target (the path after the
 * authority, up to any '?', whose host= may hold slashes too), into out. */
static void db_name(const char *target, char *out, size_t cap)
{
    const char *auth = strstr(target, "://");
    const char *s = auth ? strchr(auth + 3, '/') : NULL;
    size_t n = s ? strcspn(s + 1, "?") : 0;
    snprintf(out, cap, "%.*s", (int)n, s ? s + 1 : "");
}

static void allow_connections(const char *db, bool on)
{
    char sql[256];
    snprintf(sql, sizeof sql, "ALTER DATABASE \"%s\" ALLOW_CONNECTIONS %s", db,
             on ? "true" : "false");
    CN_CHECK_EQ(cn_test_meta_admin(sql), 0);
}

static void test_two_nodes(void)
{
    if (!cn_test_meta_pg()) {
        printf("# SQLite: no watcher to test\n");
        return;
    }
    char *dir = cn_test_tmpdir("watch"), target[512], db[128];
    CN_CHECK(dir && cn_test_meta_target(dir, target, sizeof target));
    db_name(target, db, sizeof db);
    cn_meta_t *a = NULL, *b = NULL;
    CN_CHECK_EQ(cn_meta_open(target, NULL, &a), 0);
    CN_CHECK_EQ(cn_meta_open(target, NULL, &b), 0);
    CN_CHECK_EQ(cn_meta_watch_start(a), 0);
    CN_CHECK(lease_becomes(a, true, 5000)); /* a asked first: a holds it */
    CN_CHECK_EQ(cn_meta_watch_start(b), 0);
    CN_CHECK(!lease_becomes(b, true, 2500)); /* two of b's rounds: still a's */

    /* A bump through a, seen by a after its sync and by b through the notice. */
    uint64_t g0 = 0, ga = 0, gb = 0;
    CN_CHECK(topic_becomes(a, true, 5000, &g0));
    CN_CHECK_EQ(cn_meta_run(a, CN_META_RUN_WRITE, notify_body, a), 0);
    cn_meta_topic_sync(a, 3000);
    CN_CHECK(cn_meta_topic_gen(a, TOPIC, &ga));
    CN_CHECK(ga > g0);
    for (int64_t end = cn_mono_ms() + 3000; cn_mono_ms() < end; usleep(20000))
        if (cn_meta_topic_gen(b, TOPIC, &gb) && gb == ga)
            break;
    CN_CHECK_EQ(gb, ga);

    /* Cut a's watcher off: no new connection to the database, its session
     * ended (the lease's holder, as the server sees it). */
    int64_t pid = 0;
    const char *jobs[] = { JOB };
    CN_CHECK_EQ(cn_meta_lease_holders(b, jobs, 1, holder_pid, &pid), 0);
    CN_CHECK(pid > 0);
    allow_connections(db, false);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%" PRId64 ")", pid);
    CN_CHECK_EQ(cn_test_meta_admin(sql), 0);
    int64_t t0 = cn_mono_ms();
    uint64_t g = 0;
    CN_CHECK(lease_becomes(a, false, 3500)); /* W3: at once, or at worst LEASE_FRESH_MS */
    CN_CHECK(topic_becomes(a, false, CN_META_TOPIC_FRESH_MS + 500, &g)); /* W2 */
    printf("# cut off: lease gone, topics off %" PRId64 " ms after the session ended\n",
           cn_mono_ms() - t0);
    CN_CHECK(lease_becomes(b, true, 5000)); /* the server freed it: b's now */
    usleep(1000000);
    CN_CHECK(!cn_meta_topic_gen(a, TOPIC, &g)); /* still cut off: still off */
    CN_CHECK(!cn_meta_lease(a, JOB));

    /* Let in again: a reads again, sees the same generation, and the lease
     * stays with b. */
    allow_connections(db, true);
    CN_CHECK(topic_becomes(a, true, 5000, &g));
    CN_CHECK_EQ(g, ga);
    CN_CHECK(!lease_becomes(a, true, 1500));
    CN_CHECK(cn_meta_lease(b, JOB));
    cn_meta_close(a);
    cn_meta_close(b);
    cn_test_rmtree(dir);
    free(dir);
}

CN_TEST_MAIN(CN_TEST(test_sqlite_noops), CN_TEST(test_two_nodes), )
