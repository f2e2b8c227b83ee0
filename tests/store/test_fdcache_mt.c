/* The store's descriptor cache (src/store/fdcache.c) under many threads:
 * readers borrow and give back descriptors of a working set larger than
 * the cache (evictions in every set) while a deleter removes and re-stores
 * part of it (cn__fdc_forget).  Checked: every borrowed descriptor reads its
 * blob's bytes; once the threads are done and the churned blobs deleted,
 * no descriptor of the process refers to a removed file; closing the store
 * leaves as many descriptors open as before it was opened. */
#include "cairn/store.h"
#include "cairn/util.h"
#include "cn_test.h"
#include "store/storetest.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>

enum {
    BLOBS = 400, /* > the 64 slots a 256-descriptor limit gives the cache */
    CHURN = 40,  /* blobs 0..CHURN-1 are deleted and stored again */
    READERS = 6,
    ROUNDS = 4000, /* gets per reader */
    SIZE = 4096,
};

typedef struct {
    cn_store_t *s;
    cn_digest_t d[BLOBS];
    atomic_bool stop;
    atomic_int bad, hits;
} shared_t;

typedef struct {
    shared_t *sh;
    uint32_t seed;
} reader_t;

static void *reader(void *arg)
{
    reader_t *r = arg;
    shared_t *sh = r->sh;
    uint8_t want[SIZE], got[SIZE];
    uint32_t x = r->seed * 2654435761u + 7;
    for (int i = 0; i < ROUNDS; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        uint32_t k = x % BLOBS;
        int fd = -1;
        uint64_t len = 0;
        void *h = NULL;
        cn_err_t e = cn_store_fd_get(sh->s, &sh->d[k], &fd, &len, &h);
        if (e == CN_E_NOT_FOUND && k < CHURN)
            continue; /* deleted just now */
        if (e != CN_OK) {
            atomic_fetch_add(&sh->bad, 1);
            continue;
        }
        fill(want, SIZE, k);
        if (len != SIZE || pread(fd, got, SIZE, 0) != SIZE || memcmp(got, want, SIZE) != 0)
            atomic_fetch_add(&sh->bad, 1);
        atomic_fetch_add(&sh->hits, 1);
        cn_store_fd_put(sh->s, fd, h);
    }
    return NULL;
}

static void *deleter(void *arg)
{
    shared_t *sh = arg;
    uint8_t buf[SIZE];
    for (uint32_t i = 0; !atomic_load(&sh->stop); i = (i + 1) % CHURN) {
        cn_err_t e = cn_store_delete(sh->s, &sh->d[i]);
        if (e != CN_OK && e != CN_E_NOT_FOUND)
            atomic_fetch_add(&sh->bad, 1);
        fill(buf, SIZE, i);
        if (cn_store_put(sh->s, buf, SIZE, NULL, NULL) != CN_OK)
            atomic_fetch_add(&sh->bad, 1);
    }
    return NULL;
}

/* Open descriptors of the process; *deleted: how many name a removed file. */
static int open_fds(int *deleted)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    *deleted = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char p[300], t[512];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t l = readlink(p, t, sizeof t - 1);
        if (l > 0) {
            t[l] = 0;
            *deleted += strstr(t, "(deleted)") != NULL;
        }
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static void test_threads_get_put_evict_forget(void)
{
    /* A small descriptor limit gives the cache its smallest size (64 slots),
     * so 400 blobs evict in every set. */
    struct rlimit old, rl;
    CN_CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    rl = old;
    rl.rlim_cur = 256;
    CN_CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    int deleted = 0;
    int before = open_fds(&deleted);

    char *data = mkdata();
    static shared_t sh;
    cn_store_opts_t o = { .batch_disable = false };
    CN_CHECK_EQ(cn_store_open(data, &o, &sh.s), 0);
    uint8_t buf[SIZE];
    for (uint32_t i = 0; i < BLOBS; i++) {
        fill(buf, SIZE, i);
        CN_CHECK_EQ(cn_store_put(sh.s, buf, SIZE, NULL, &sh.d[i]), 0);
    }
    pthread_t rt[READERS], dt;
    reader_t ra[READERS];
    for (int i = 0; i < READERS; i++) {
        ra[i] = (reader_t){ &sh, (uint32_t)i + 1 };
        CN_CHECK_EQ(pthread_create(&rt[i], NULL, reader, &ra[i]), 0);
    }
    CN_CHECK_EQ(pthread_create(&dt, NULL, deleter, &sh), 0);
    for (int i = 0; i < READERS; i++)
        pthread_join(rt[i], NULL);
    atomic_store(&sh.stop, true);
    pthread_join(dt, NULL);
    CN_CHECK_EQ(atomic_load(&sh.bad), 0);
    CN_CHECK(atomic_load(&sh.hits) > READERS * ROUNDS / 2);

    /* Close-on-unlink: the churned blobs deleted, nothing borrowed, no
     * kept descriptor may still hold a removed file. */
    for (uint32_t i = 0; i < CHURN; i++) {
        cn_err_t e = cn_store_delete(sh.s, &sh.d[i]);
        CN_CHECK(e == CN_OK || e == CN_E_NOT_FOUND);
    }
    open_fds(&deleted);
    CN_CHECK_EQ(deleted, 0);
    cn_store_close(sh.s);
    CN_CHECK_EQ(open_fds(&deleted), before);
    rmdata(data);
    CN_CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* A blob unlinked behind the store's back (not through cn_store_delete) is
 * caught by a hit's check and its kept descriptor closed. */
static void test_unlink_behind_back(void)
{
    char *data = mkdata();
    cn_store_t *s = NULL;
    CN_CHECK_EQ(cn_store_open(data, NULL, &s), 0);
    uint8_t buf[SIZE];
    fill(buf, SIZE, 99);
    cn_digest_t d;
    CN_CHECK_EQ(cn_store_put(s, buf, SIZE, NULL, &d), 0);
    int fd = -1;
    uint64_t len = 0;
    void *h = NULL;
    CN_CHECK_EQ(cn_store_fd_get(s, &d, &fd, &len, &h), 0);
    CN_CHECK(h != NULL); /* kept */
    cn_store_fd_put(s, fd, h);
    char hex[CN_DIGEST_HEX_LEN + 1], path[1024];
    cn_digest_hex(&d, hex);
    snprintf(path, sizeof path, "%s/blobs/%.2s/%.2s/%s", data, hex, hex + 2, hex);
    CN_CHECK_EQ(unlink(path), 0);
    int deleted = 0;
    open_fds(&deleted);
    CN_CHECK_EQ(deleted, 1); /* kept open until the next look */
    CN_CHECK(cn_store_fd_get(s, &d, &fd, &len, &h) != CN_OK);
    open_fds(&deleted);
    CN_CHECK_EQ(deleted, 0);
    cn_store_close(s);
    rmdata(data);
}

CN_TEST_MAIN(CN_TEST(test_threads_get_put_evict_forget), CN_TEST(test_unlink_behind_back))
