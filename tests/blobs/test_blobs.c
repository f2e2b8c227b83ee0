/* blobs service: closed-by-default access, the verified put/fetch round trip,
 * ranged fetch with slice digests and clamping, per-namespace presence,
 * operator-only delete and recovery by re-put, pin tokens (process lifetime
 * and TTL with renewal and expiry), fanout taps (before the commit, mid-put,
 * dropped when slow, aborted, non-blocking waiter) and the late joiner.
 * On SQLite with local blobs, and on PostgreSQL when CAIRN_TEST_META names a
 * server with the blobs on the S3 tier (blobs_pg, tests/fleet/pg.sh
 * --blob-tier; store/test_blob_target.h). */
#include "cn_test.h"
#include "meta/test_target.h"
#include "store/test_blob_target.h"
#include "cairn/blobs.h"
#include "cairn/store.h"
#include "cairn/meta.h"
#include "cairn/identity.h"
#include "cairn/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char dir[512];
    cn_meta_t *meta;
    cn_store_t *store;
    cn_identity_t *id;
    cn_blobs_t *b;
    cn_principal_t admin, alice, bob, reader;
} env_t;

static void principal(env_t *e, const char *account, cn_perms_t perms, cn_principal_t *out)
{
    char cred[CN_CREDENTIAL_MAX];
    cn_err_t rc = cn_identity_account_get(e->id, account, &(cn_account_t){ 0 });
    if (rc == CN_E_NOT_FOUND)
        CN_CHECK_EQ(cn_identity_account_create(e->id, account, NULL, NULL), 0);
    CN_CHECK_EQ(cn_identity_token_create(e->id, account, perms, 0, cred), 0);
    CN_CHECK_EQ(cn_identity_authenticate(e->id, cred, strlen(cred), out), 0);
}

/* The store's pack threshold of the envs opened next (0: packs off). */
static uint64_t g_pack_max;

static void env_open(env_t *e, const cn_blobs_opts_t *opts)
{
    memset(e, 0, sizeof *e);
    cn_log_configure(CN_LOG_ERROR, false);
    const char *tmp = getenv("TMPDIR");
    snprintf(e->dir, sizeof e->dir, "%s/cn-test-blobs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CN_CHECK(mkdtemp(e->dir) != NULL);
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(e->dir), &mo, &e->meta), 0);
    cn_store_opts_t so = { .meta = e->meta, .pack_max_bytes = g_pack_max };
    cn_test_blob_target(e->dir, &so);
    CN_CHECK_EQ(cn_store_open(e->dir, &so, &e->store), 0);
    CN_CHECK_EQ(cn_identity_open(e->meta, e->dir, &e->id), 0);
    CN_CHECK_EQ(cn_blobs_open(e->meta, e->store, e->id, opts, &e->b), 0);
    principal(e, "root", CN_PERM_ALL, &e->admin);
    principal(e, "alice", CN_PERM_DEFAULT, &e->alice);
    principal(e, "bob", CN_PERM_DEFAULT, &e->bob);
    principal(e, "carol", CN_PERM_BLOBS_READ, &e->reader);
    CN_CHECK_EQ(cn_identity_grant(e->id, "ns1", "alice", CN_NS_ALL), 0);
    CN_CHECK_EQ(cn_identity_grant(e->id, "ns2", "bob", CN_NS_ALL), 0);
    CN_CHECK_EQ(cn_identity_grant(e->id, "ns1", "carol", CN_NS_READ), 0);
}

static void env_close(env_t *e)
{
    cn_blobs_close(e->b);
    cn_identity_close(e->id);
    cn_store_close(e->store);
    cn_meta_close(e->meta);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", e->dir);
    CN_CHECK_EQ(system(cmd), 0);
}

static cn_blobs_caller_t as(const cn_principal_t *p)
{
    cn_blobs_caller_t c;
    memset(&c, 0, sizeof c);
    c.principal = p;
    return c;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 131u + seed * 7u) ^ (i >> 8));
}

/* Puts n bytes into ns as p in chunks; returns the commit's error. */
static cn_err_t put(env_t *e, const cn_principal_t *p, const char *ns, const void *data, size_t n,
                    bool name_digest, cn_blobs_put_result_t *res)
{
    cn_blobs_caller_t c = as(p);
    cn_digest_t d;
    cn_blake3(data, n, &d);
    cn_blobs_put_t *put = NULL;
    cn_err_t rc = cn_blobs_put_begin(e->b, &c, ns, name_digest ? &d : NULL, (int64_t)n, &put);
    if (rc < 0)
        return rc;
    for (size_t off = 0; off < n; off += 4096) {
        size_t k = n - off < 4096 ? n - off : 4096;
        if ((rc = cn_blobs_put_write(put, (const uint8_t *)data + off, k)) < 0) {
            cn_blobs_put_abort(put);
            return rc;
        }
    }
    return cn_blobs_put_commit(put, res);
}

/* Reads a whole fetch through read(); returns bytes read or an error. */
static long long drain(cn_blobs_fetch_t *f, uint8_t *buf, size_t cap)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = cn_blobs_fetch_read(f, buf + got, cap - got > 1000 ? 1000 : cap - got, NULL);
        if (n < 0)
            return n;
        if (n == 0)
            return (long long)got;
        got += (size_t)n;
    }
}

static bool have1(env_t *e, const cn_principal_t *p, const char *ns, const cn_digest_t *d,
                  const char *token)
{
    cn_blobs_caller_t c = as(p);
    bool present = true;
    CN_CHECK_EQ(cn_blobs_have(e->b, &c, ns, d, 1, token, &present), 0);
    return present;
}

static void test_closed_by_default(void)
{
    env_t e;
    env_open(&e, NULL);
    cn_digest_t d;
    cn_blake3("x", 1, &d);
    uint64_t len;
    cn_blobs_caller_t c = as(&e.alice);
    CN_CHECK_EQ(cn_blobs_stat(e.b, &c, "nobody-granted", &d, &len), CN_E_DENIED);
    CN_CHECK_EQ(c.decision.why, CN_WHY_NS_CLOSED);
    c = as(NULL);
    CN_CHECK_EQ(cn_blobs_stat(e.b, &c, "ns1", &d, &len), CN_E_DENIED);
    CN_CHECK_EQ(c.decision.why, CN_WHY_ANONYMOUS);
    /* a read grant is no write grant */
    cn_blobs_put_t *p = NULL;
    c = as(&e.reader);
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", NULL, -1, &p), CN_E_DENIED);
    CN_CHECK(p == NULL);
    /* the operator may do anything anywhere */
    c = as(&e.admin);
    CN_CHECK_EQ(cn_blobs_stat(e.b, &c, "nobody-granted", &d, &len), CN_E_NOT_FOUND);
    CN_CHECK_EQ(c.decision.why, CN_WHY_NS_OPERATOR);
    c = as(&e.alice);
    CN_CHECK_EQ(cn_blobs_stat(e.b, &c, "/bad", &d, &len), CN_E_INVALID);
    env_close(&e);
}

static void test_round_trip(void)
{
    env_t e;
    env_open(&e, NULL);
    size_t n = 300000;
    uint8_t *data = malloc(n), *back = malloc(n);
    fill(data, n, 1);
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", data, n, false, &res), 0);
    cn_digest_t d;
    cn_blake3(data, n, &d);
    CN_CHECK_MEM(res.digest.b, d.b, 32);
    CN_CHECK_EQ(res.len, n);
    CN_CHECK_EQ(strlen(res.token), CN_BLOBS_TOKEN_LEN);
    CN_CHECK(!strncmp(res.token, "pt_", 3));
    uint64_t len = 0;
    cn_blobs_caller_t c = as(&e.reader);
    CN_CHECK_EQ(cn_blobs_stat(e.b, &c, "ns1", &d, &len), 0);
    CN_CHECK_EQ(len, n);
    CN_CHECK(have1(&e, &e.reader, "ns1", &d, NULL));

    cn_blobs_fetch_t *f = NULL;
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d, NULL, 0, &f), 0);
    const cn_blobs_ack_t *a = cn_blobs_fetch_ack(f);
    CN_CHECK_EQ(a->source, CN_BLOBS_SOURCE_STORE);
    CN_CHECK(a->has_len);
    CN_CHECK_EQ(a->len, n);
    CN_CHECK_EQ(a->nslices, 0);
    CN_CHECK_EQ(drain(f, back, n), (long long)n);
    cn_digest_t got;
    cn_blake3(back, n, &got);
    CN_CHECK_MEM(got.b, d.b, 32); /* the consumer's hash check */
    cn_blobs_fetch_close(f);

    /* the sendfile form */
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d, NULL, 0, &f), 0);
    int fd = -1;
    uint64_t flen = 0;
    CN_CHECK_EQ(cn_blobs_fetch_take_fd(f, &fd, &flen), 0);
    CN_CHECK_EQ(flen, n);
    CN_CHECK_EQ(pread(fd, back, n, 0), (ssize_t)n);
    CN_CHECK_MEM(back, data, n);
    close(fd);
    cn_blobs_fetch_close(f);

    /* a wrong offered digest commits nothing */
    cn_digest_t wrong = d;
    wrong.b[0] ^= 1;
    cn_blobs_put_t *p = NULL;
    c = as(&e.alice);
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", &wrong, -1, &p), 0);
    CN_CHECK_EQ(cn_blobs_put_write(p, "hello", 5), 0);
    CN_CHECK_EQ(cn_blobs_put_commit(p, &res), CN_E_DIGEST_MISMATCH);
    CN_CHECK(!have1(&e, &e.alice, "ns1", &wrong, NULL));
    cn_digest_t hello;
    cn_blake3("hello", 5, &hello);
    CN_CHECK(!have1(&e, &e.alice, "ns1", &hello, NULL));
    /* a wrong length too */
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", NULL, 4, &p), 0);
    CN_CHECK_EQ(cn_blobs_put_write(p, "hello", 5), CN_E_LENGTH_MISMATCH);
    cn_blobs_put_abort(p);
    /* the empty blob */
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", "", 0, true, &res), 0);
    cn_digest_t empty;
    cn_blake3("", 0, &empty);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &empty, NULL, 0, &f), 0);
    CN_CHECK_EQ(drain(f, back, n), 0);
    cn_blobs_fetch_close(f);
    free(data);
    free(back);
    env_close(&e);
}

static void test_ranged(void)
{
    env_t e;
    env_open(&e, NULL);
    size_t n = 100000;
    uint8_t *data = malloc(n), *back = malloc(n + 64);
    fill(data, n, 2);
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", data, n, true, &res), 0);
    cn_blobs_range_t r[4] = { { 10, 1000 }, { n - 50, 500 }, { n + 7, 10 }, { 0, 0 } };
    cn_blobs_caller_t c = as(&e.alice);
    cn_blobs_fetch_t *f = NULL;
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &res.digest, r, 4, &f), 0);
    const cn_blobs_ack_t *a = cn_blobs_fetch_ack(f);
    CN_CHECK_EQ(a->source, CN_BLOBS_SOURCE_STORE);
    CN_CHECK_EQ(a->nslices, 4);
    CN_CHECK_EQ(a->len, n);
    CN_CHECK_EQ(a->total, 1050);
    uint64_t want_len[4] = { 1000, 50, 0, 0 };
    const uint8_t *want_at[4] = { data + 10, data + n - 50, data, data };
    for (int i = 0; i < 4; i++) {
        cn_digest_t d;
        cn_blake3(want_at[i], want_len[i], &d);
        CN_CHECK_MEM(a->slice[i].b, d.b, 32);
        CN_CHECK_EQ(a->slice_len[i], want_len[i]);
    }
    int fd;
    uint64_t fl;
    CN_CHECK_EQ(cn_blobs_fetch_take_fd(f, &fd, &fl), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(drain(f, back, n), 1050);
    CN_CHECK_MEM(back, data + 10, 1000);
    CN_CHECK_MEM(back + 1000, data + n - 50, 50);
    cn_blobs_fetch_close(f);
    cn_blobs_range_t many[CN_BLOBS_RANGES_MAX + 1];
    memset(many, 0, sizeof many);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &res.digest, many, CN_BLOBS_RANGES_MAX + 1, &f),
                CN_E_LIMIT);
    free(data);
    free(back);
    env_close(&e);
}

static void test_isolation_and_delete(void)
{
    env_t e;
    env_open(&e, NULL);
    uint8_t data[5000];
    fill(data, sizeof data, 3);
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", data, sizeof data, true, &res), 0);
    /* ns2 learns nothing of ns1's blob, though the store holds one copy */
    CN_CHECK(!have1(&e, &e.bob, "ns2", &res.digest, NULL));
    cn_blobs_caller_t c = as(&e.bob);
    uint64_t len;
    CN_CHECK_EQ(cn_blobs_stat(e.b, &c, "ns2", &res.digest, &len), CN_E_NOT_FOUND);
    cn_blobs_fetch_t *f = NULL;
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns2", &res.digest, NULL, 0, &f), CN_E_NOT_FOUND);
    /* ... and bob cannot probe ns1 */
    CN_CHECK_EQ(cn_blobs_stat(e.b, &c, "ns1", &res.digest, &len), CN_E_DENIED);
    /* a batch, in order */
    cn_digest_t ds[3];
    ds[0] = res.digest;
    cn_blake3("nope", 4, &ds[1]);
    ds[2] = res.digest;
    bool pres[3];
    c = as(&e.alice);
    CN_CHECK_EQ(cn_blobs_have(e.b, &c, "ns1", ds, 3, NULL, pres), 0);
    CN_CHECK(pres[0] && !pres[1] && pres[2]);
    CN_CHECK_EQ(cn_blobs_have(e.b, &c, "ns1", ds, 3, res.token, pres), CN_E_INVALID);

    /* delete: Internal, operator only — a namespace grant never suffices */
    size_t removed = 99;
    CN_CHECK_EQ(cn_blobs_delete(e.b, &c, "ns1", ds, 1, &removed), CN_E_DENIED);
    CN_CHECK_EQ(c.decision.why, CN_WHY_NS_OPERATOR_ONLY);
    CN_CHECK_EQ(removed, 0);
    CN_CHECK(have1(&e, &e.alice, "ns1", &res.digest, res.token));
    c = as(&e.admin);
    CN_CHECK_EQ(cn_blobs_delete(e.b, &c, "ns1", ds, 2, &removed), 0);
    CN_CHECK_EQ(removed, 1);
    CN_CHECK(!have1(&e, &e.alice, "ns1", &res.digest, NULL));
    CN_CHECK(!have1(&e, &e.alice, "ns1", &res.digest, res.token)); /* its pin ended */
    bool pinned = true;
    CN_CHECK_EQ(cn_store_is_pinned(e.store, &res.digest, &pinned), 0);
    CN_CHECK(!pinned);
    /* the sweeper reclaims what nothing holds */
    cn_store_sweep_stats_t st;
    CN_CHECK_EQ(cn_store_sweep(e.store, 0, &st), 0);
    bool in_store = true;
    CN_CHECK_EQ(cn_store_have(e.store, &res.digest, 1, &in_store), 0);
    CN_CHECK(!in_store);
    /* delete-then-recover: a re-put */
    cn_blobs_put_result_t res2;
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", data, sizeof data, false, &res2), 0);
    CN_CHECK(have1(&e, &e.alice, "ns1", &res.digest, NULL));
    CN_CHECK(have1(&e, &e.alice, "ns1", &res.digest, res2.token));
    CN_CHECK(strcmp(res.token, res2.token) != 0);
    /* membership keeps it through a sweep */
    CN_CHECK_EQ(cn_store_sweep(e.store, 0, &st), 0);
    CN_CHECK_EQ(cn_store_have(e.store, &res.digest, 1, &in_store), 0);
    CN_CHECK(in_store);
    env_close(&e);
}

static void test_token_ttl(void)
{
    env_t e;
    cn_blobs_opts_t o = { .pin_ttl_ms = 600 };
    env_open(&e, &o);
    uint8_t data[3000];
    fill(data, sizeof data, 4);
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", data, sizeof data, true, &res), 0);
    bool pinned = false;
    CN_CHECK_EQ(cn_store_is_pinned(e.store, &res.digest, &pinned), 0);
    CN_CHECK(pinned);
    /* renewal within the TTL keeps it going past the first expiry */
    for (int i = 0; i < 3; i++) {
        usleep(300 * 1000);
        CN_CHECK(have1(&e, &e.alice, "ns1", &res.digest, res.token));
    }
    /* foreign, other digest, other namespace: false, never an error */
    CN_CHECK(!have1(&e, &e.alice, "ns1", &res.digest, "pt_00000000000000000000000000000000"));
    CN_CHECK(!have1(&e, &e.alice, "ns1", &res.digest, "somebody-elses-token"));
    cn_digest_t other;
    cn_blake3("other", 5, &other);
    CN_CHECK(!have1(&e, &e.alice, "ns1", &other, res.token));
    CN_CHECK(!have1(&e, &e.admin, "ns2", &res.digest, res.token));
    /* pause past the TTL: the row expires, the renewal answers false */
    usleep(750 * 1000);
    CN_CHECK(!have1(&e, &e.alice, "ns1", &res.digest, res.token));
    CN_CHECK_EQ(cn_store_is_pinned(e.store, &res.digest, &pinned), 0);
    CN_CHECK(!pinned);
    CN_CHECK(have1(&e, &e.alice, "ns1", &res.digest, NULL)); /* still a member */
    /* the backstop: re-put, a fresh token */
    cn_blobs_put_result_t res2;
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", data, sizeof data, true, &res2), 0);
    CN_CHECK(have1(&e, &e.alice, "ns1", &res.digest, res2.token));
    cn_blobs_counters_t k;
    cn_blobs_counters(e.b, &k);
    CN_CHECK_EQ(k.tokens, 1);
    CN_CHECK_EQ(k.puts, 2);
    env_close(&e);
}

static void test_token_bound(void)
{
    env_t e;
    cn_blobs_opts_t o = { .max_tokens = 3 };
    env_open(&e, &o);
    cn_blobs_put_result_t res[5];
    for (int i = 0; i < 5; i++) {
        uint8_t b = (uint8_t)i;
        CN_CHECK_EQ(put(&e, &e.alice, "ns1", &b, 1, false, &res[i]), 0);
    }
    cn_blobs_counters_t k;
    cn_blobs_counters(e.b, &k);
    CN_CHECK_EQ(k.tokens, 3);
    CN_CHECK(!have1(&e, &e.alice, "ns1", &res[0].digest, res[0].token));
    CN_CHECK(have1(&e, &e.alice, "ns1", &res[0].digest, NULL));
    CN_CHECK(have1(&e, &e.alice, "ns1", &res[4].digest, res[4].token));
    env_close(&e);
}

typedef struct {
    _Atomic int suspends, resumes;
} waitlog_t;
static void on_suspend(void *ctx)
{
    ((waitlog_t *)ctx)->suspends++;
}
static void on_resume(void *ctx)
{
    ((waitlog_t *)ctx)->resumes++;
}

typedef struct {
    cn_blobs_fetch_t *f;
    waitlog_t *wl;
    ssize_t result;
} reader_t;

static void *reader_main(void *arg)
{
    reader_t *rd = arg;
    while (!atomic_load(&rd->wl->resumes))
        usleep(1000);
    uint8_t buf[16];
    rd->result = cn_blobs_fetch_read(rd->f, buf, sizeof buf, NULL);
    return NULL;
}

static void test_fanout(void)
{
    env_t e;
    env_open(&e, NULL);
    size_t n = 20000;
    uint8_t *data = malloc(n), *back = malloc(n);
    fill(data, n, 5);
    cn_digest_t d;
    cn_blake3(data, n, &d);
    cn_blobs_caller_t c = as(&e.alice);
    cn_blobs_put_t *p = NULL;
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", &d, (int64_t)n, &p), 0);
    /* a tap before the first byte */
    cn_blobs_fetch_t *f = NULL, *other_ns = NULL, *ranged = NULL;
    cn_blobs_caller_t r = as(&e.reader);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &r, "ns1", &d, NULL, 0, &f), 0);
    const cn_blobs_ack_t *a = cn_blobs_fetch_ack(f);
    CN_CHECK_EQ(a->source, CN_BLOBS_SOURCE_FANOUT);
    CN_CHECK(!a->has_len);
    /* another namespace sees no broadcast of ns1 */
    cn_blobs_caller_t bc = as(&e.bob);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &bc, "ns2", &d, NULL, 0, &other_ns), CN_E_NOT_FOUND);
    /* a ranged fetch of bytes only in flight cannot be verified */
    cn_blobs_range_t rg = { 0, 10 };
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &r, "ns1", &d, &rg, 1, &ranged), CN_E_UNSUPPORTED);
    /* nothing yet: the waiter is suspended, and resumed once by the next push */
    waitlog_t wl = { 0, 0 };
    cn_blobs_waiter_t w = { on_suspend, on_resume, &wl };
    uint8_t tmp[64];
    CN_CHECK_EQ(cn_blobs_fetch_read(f, tmp, sizeof tmp, &w), CN_E_AGAIN);
    CN_CHECK_EQ(wl.suspends, 1);
    CN_CHECK_EQ(wl.resumes, 0);
    CN_CHECK_EQ(cn_blobs_put_write(p, data, 5000), 0);
    CN_CHECK_EQ(wl.resumes, 1);
    CN_CHECK_EQ(cn_blobs_put_write(p, data + 5000, 5000), 0);
    CN_CHECK_EQ(wl.resumes, 1);
    /* the tap is served before the put commits */
    size_t got = 0;
    while (got < 10000) {
        ssize_t k = cn_blobs_fetch_read(f, back + got, n - got, &w);
        CN_CHECK(k > 0);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    CN_CHECK_MEM(back, data, 10000);
    CN_CHECK(!have1(&e, &e.reader, "ns1", &d, NULL)); /* not committed yet */
    /* a tap that joins now misses the prefix */
    cn_blobs_fetch_t *late_tap = NULL;
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &r, "ns1", &d, NULL, 0, &late_tap), 0);
    CN_CHECK_EQ(cn_blobs_put_write(p, data + 10000, n - 10000), 0);
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(cn_blobs_put_commit(p, &res), 0);
    CN_CHECK_EQ(drain(f, back + got, n - got), (long long)(n - got));
    cn_digest_t check;
    cn_blake3(back, n, &check);
    CN_CHECK_MEM(check.b, d.b, 32);
    cn_blobs_fetch_close(f);
    long long tail = drain(late_tap, back, n);
    CN_CHECK_EQ(tail, (long long)(n - 10000));
    cn_blake3(back, (size_t)tail, &check);
    CN_CHECK(memcmp(check.b, d.b, 32) != 0); /* its hash check fails */
    cn_blobs_fetch_close(late_tap);
    /* the late joiner: the store */
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &r, "ns1", &d, NULL, 0, &f), 0);
    CN_CHECK_EQ(cn_blobs_fetch_ack(f)->source, CN_BLOBS_SOURCE_STORE);
    CN_CHECK_EQ(drain(f, back, n), (long long)n);
    CN_CHECK_MEM(back, data, n);
    cn_blobs_fetch_close(f);
    cn_blobs_counters_t k;
    cn_blobs_counters(e.b, &k);
    CN_CHECK_EQ(k.fetches_fanout, 2);
    CN_CHECK_EQ(k.broadcasts, 1);
    free(data);
    free(back);
    env_close(&e);
}

static void test_fanout_drop_and_abort(void)
{
    env_t e;
    cn_blobs_opts_t o = { .tap_queue_bytes = 8192 };
    env_open(&e, &o);
    uint8_t data[20000];
    fill(data, sizeof data, 6);
    cn_digest_t d;
    cn_blake3(data, sizeof data, &d);
    cn_blobs_caller_t c = as(&e.alice);
    cn_blobs_put_t *p = NULL;
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", &d, -1, &p), 0);
    cn_blobs_fetch_t *slow = NULL, *fast = NULL;
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d, NULL, 0, &slow), 0);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d, NULL, 0, &fast), 0);
    uint8_t back[20000];
    size_t got = 0;
    for (size_t off = 0; off < sizeof data; off += 4000) {
        size_t k = sizeof data - off < 4000 ? sizeof data - off : 4000;
        CN_CHECK_EQ(cn_blobs_put_write(p, data + off, k), 0); /* never waits */
        while (got < off + k) {
            ssize_t r = cn_blobs_fetch_read(fast, back + got, sizeof back - got, NULL);
            CN_CHECK(r > 0);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
    }
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(cn_blobs_put_commit(p, &res), 0);
    CN_CHECK_EQ(drain(fast, back + got, sizeof back - got), 0);
    CN_CHECK_MEM(back, data, sizeof data);
    /* the slow one was dropped once it fell 8 KiB behind */
    long long r = drain(slow, back, sizeof back);
    CN_CHECK_EQ(r, CN_E_CLOSED);
    cn_blobs_fetch_close(slow);
    cn_blobs_fetch_close(fast);
    cn_blobs_counters_t k;
    cn_blobs_counters(e.b, &k);
    CN_CHECK_EQ(k.taps_dropped, 1);

    /* an aborted put ends its taps with an error, and leaves no member */
    cn_digest_t d2;
    cn_blake3("abc", 3, &d2);
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", &d2, 3, &p), 0);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d2, NULL, 0, &slow), 0);
    CN_CHECK_EQ(cn_blobs_put_write(p, "ab", 2), 0);
    cn_blobs_put_abort(p);
    CN_CHECK_EQ(drain(slow, back, sizeof back), CN_E_CLOSED);
    cn_blobs_fetch_close(slow);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d2, NULL, 0, &slow), CN_E_NOT_FOUND);
    /* a put that fails verification ends its taps with an error too */
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", &d2, -1, &p), 0);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d2, NULL, 0, &slow), 0);
    CN_CHECK_EQ(cn_blobs_put_write(p, "abd", 3), 0);
    CN_CHECK_EQ(cn_blobs_put_commit(p, &res), CN_E_DIGEST_MISMATCH);
    CN_CHECK_EQ(drain(slow, back, sizeof back), CN_E_CLOSED);
    cn_blobs_fetch_close(slow);
    /* shutdown wakes a suspended tap, and waits for its reader to run again */
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", &d2, -1, &p), 0);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d2, NULL, 0, &slow), 0);
    waitlog_t wl = { 0, 0 };
    cn_blobs_waiter_t w = { on_suspend, on_resume, &wl };
    CN_CHECK_EQ(cn_blobs_fetch_read(slow, back, 10, &w), CN_E_AGAIN);
    reader_t rd = { slow, &wl, 1 };
    pthread_t th;
    CN_CHECK_EQ(pthread_create(&th, NULL, reader_main, &rd), 0);
    int64_t t0 = cn_mono_ms();
    cn_blobs_shutdown(e.b);
    CN_CHECK(cn_mono_ms() - t0 < 1500);
    pthread_join(th, NULL);
    CN_CHECK_EQ(wl.resumes, 1);
    CN_CHECK_EQ(rd.result, CN_E_SHUTDOWN);
    cn_blobs_fetch_close(slow);
    CN_CHECK_EQ(cn_blobs_put_write(p, "abc", 3), 0);
    CN_CHECK_EQ(cn_blobs_put_commit(p, &res), 0); /* puts still work, just untapped */
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d2, NULL, 0, &slow), 0);
    CN_CHECK_EQ(cn_blobs_fetch_ack(slow)->source, CN_BLOBS_SOURCE_STORE);
    cn_blobs_fetch_close(slow);
    env_close(&e);
}

static void test_fanout_budget(void)
{
    env_t e;
    cn_blobs_opts_t o = { .tap_queue_bytes = 1 << 20, .fanout_budget_bytes = 10000 };
    env_open(&e, &o);
    uint8_t data[6000];
    fill(data, sizeof data, 7);
    cn_digest_t d;
    cn_blake3(data, sizeof data, &d);
    cn_blobs_caller_t c = as(&e.alice);
    cn_blobs_put_t *p = NULL;
    CN_CHECK_EQ(cn_blobs_put_begin(e.b, &c, "ns1", &d, -1, &p), 0);
    cn_blobs_fetch_t *t1 = NULL, *t2 = NULL;
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d, NULL, 0, &t1), 0);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &d, NULL, 0, &t2), 0);
    /* 6000 bytes for each of two taps: 12000 > the 10000 budget, one goes */
    CN_CHECK_EQ(cn_blobs_put_write(p, data, sizeof data), 0);
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(cn_blobs_put_commit(p, &res), 0);
    uint8_t back[6000];
    long long r1 = drain(t1, back, sizeof back), r2 = drain(t2, back, sizeof back);
    CN_CHECK((r1 == CN_E_CLOSED) != (r2 == CN_E_CLOSED));
    CN_CHECK(r1 == 6000 || r2 == 6000);
    cn_blobs_fetch_close(t1);
    cn_blobs_fetch_close(t2);
    env_close(&e);
}

static void test_have_many(void)
{
    env_t e;
    env_open(&e, NULL);
    size_t n = 10000;
    cn_digest_t *ds = malloc(n * sizeof *ds);
    bool *pres = malloc(n * sizeof *pres);
    cn_blobs_put_result_t res;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)i;
        cn_blake3(&v, sizeof v, &ds[i]);
        if (i % 1000 == 0)
            CN_CHECK_EQ(put(&e, &e.alice, "ns1", &v, sizeof v, false, &res), 0);
    }
    cn_blobs_caller_t c = as(&e.alice);
    int64_t t0 = cn_mono_ms();
    CN_CHECK_EQ(cn_blobs_have(e.b, &c, "ns1", ds, n, NULL, pres), 0);
    printf("# have of %zu digests: %lld ms\n", n, (long long)(cn_mono_ms() - t0));
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        count += pres[i];
        if (pres[i] != (i % 1000 == 0))
            CN_CHECK(!"wrong presence");
    }
    CN_CHECK_EQ(count, 10);
    CN_CHECK_EQ(cn_blobs_have(e.b, &c, "ns1", ds, CN_BLOBS_HAVE_MAX + 1, NULL, pres), CN_E_LIMIT);
    free(ds);
    free(pres);
    env_close(&e);
}

/* A packed blob: fetched whole, ranged (slice digests) and by its pack's
 * descriptor at its offset (take_fd_at: no copy), byte-exact; take_fd, whose
 * callers send from 0, declines it. */
static void test_packed_fetch(void)
{
    if (cn_test_blobs_tiered()) {
        CN_SKIP("pack files are a layout of the local store; the S3 tier keeps one object per "
                "blob (its fetches are every other case here)");
        return;
    }
    env_t e;
    g_pack_max = 64 * 1024;
    env_open(&e, NULL);
    g_pack_max = 0;
    size_t n = 30000;
    uint8_t *data = malloc(n), *back = malloc(n + 64);
    fill(data, n, 5);
    cn_blobs_put_result_t res;
    CN_CHECK_EQ(put(&e, &e.alice, "ns1", data, n, false, &res), 0);
    char pp[600];
    snprintf(pp, sizeof pp, "%s/packs/00000001.pack", e.dir);
    struct stat pst, fst;
    CN_CHECK_EQ(stat(pp, &pst), 0);
    CN_CHECK(pst.st_size >= (off_t)n + 48);
    cn_blobs_caller_t c = as(&e.alice);
    cn_blobs_fetch_t *f = NULL;
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &res.digest, NULL, 0, &f), 0);
    CN_CHECK_EQ(drain(f, back, n), (long long)n);
    CN_CHECK_MEM(back, data, n);
    cn_blobs_fetch_close(f);
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &res.digest, NULL, 0, &f), 0);
    int fd = -1;
    uint64_t off = 0, fl = 0;
    CN_CHECK_EQ(cn_blobs_fetch_take_fd(f, &fd, &fl), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(cn_blobs_fetch_take_fd_at(f, &fd, &off, &fl), 0);
    cn_blobs_fetch_close(f);
    CN_CHECK_EQ(fl, n);
    CN_CHECK(off >= 48);
    CN_CHECK(fstat(fd, &fst) == 0 && fst.st_ino == pst.st_ino);
    CN_CHECK_EQ(pread(fd, back, n, (off_t)off), (ssize_t)n);
    CN_CHECK_MEM(back, data, n);
    close(fd);
    cn_blobs_range_t r[2] = { { 10, 1000 }, { n - 50, 500 } };
    CN_CHECK_EQ(cn_blobs_fetch_open(e.b, &c, "ns1", &res.digest, r, 2, &f), 0);
    const cn_blobs_ack_t *a = cn_blobs_fetch_ack(f);
    cn_digest_t d;
    cn_blake3(data + 10, 1000, &d);
    CN_CHECK_MEM(a->slice[0].b, d.b, 32);
    CN_CHECK_EQ(drain(f, back, n), 1050);
    CN_CHECK_MEM(back, data + 10, 1000);
    CN_CHECK_MEM(back + 1000, data + n - 50, 50);
    cn_blobs_fetch_close(f);
    free(data);
    free(back);
    env_close(&e);
}

CN_TEST_MAIN(CN_TEST(test_closed_by_default), CN_TEST(test_round_trip), CN_TEST(test_ranged),
             CN_TEST(test_isolation_and_delete), CN_TEST(test_token_ttl), CN_TEST(test_token_bound),
             CN_TEST(test_fanout), CN_TEST(test_fanout_drop_and_abort), CN_TEST(test_fanout_budget),
             CN_TEST(test_have_many), CN_TEST(test_packed_fetch))
