/* The S3 tier's local cache (src/store/cache.c): leftovers of interrupted
 * fills removed and blobs adopted unverified at open, least recently used
 * out by bytes, a reader's descriptor still reading an evicted file, a file
 * whose size changed treated as absent, eviction removing the file. */
#include "cairn/crypto.h"
#include "cairn/store.h"
#include "cairn/util.h"
#include "cn_test.h"
#include "store/backend.h"
#include "store/storetest.h"

#include <fcntl.h>

/* Writes n bytes of fill into a cache temp file and commits it as digest d. */
static void add(cn__cache_t *c, uint8_t fill, size_t n, cn_digest_t *d)
{
    uint8_t buf[256];
    char tmp[48];
    int fd = -1;
    memset(buf, fill, n);
    cn_blake3(buf, n, d);
    CN_CHECK_EQ(cn__cache_tmp(c, tmp, &fd), CN_OK);
    CN_CHECK_EQ(cn_write_full(fd, buf, n), CN_OK);
    close(fd);
    CN_CHECK_EQ(cn__cache_commit(c, -1, tmp, d, CN_STORE_RAW, n), CN_OK);
}

static bool has_file(const char *dir, const cn_digest_t *d)
{
    char hex[CN_DIGEST_HEX_LEN + 1], p[1024];
    struct stat st;
    cn_digest_hex(d, hex);
    snprintf(p, sizeof p, "%s/%s", dir, hex);
    return stat(p, &st) == 0;
}

static bool cached(cn__cache_t *c, const cn_digest_t *d, bool *verified)
{
    int fd;
    cn__be_stat_t st;
    bool v = false;
    if (cn__cache_get(c, d, &fd, &st, &v) != CN_OK)
        return false;
    close(fd);
    if (verified)
        *verified = v;
    return true;
}

static void test_lru_by_bytes(void)
{
    char *dir = mkdata();
    cn__cache_t *c = NULL;
    cn_digest_t a, b, x, y;
    CN_CHECK_EQ(cn__cache_open(dir, 250, &c), CN_OK);
    add(c, 'a', 100, &a);
    add(c, 'b', 100, &b);
    int fd;
    cn__be_stat_t st;
    bool v;
    CN_CHECK_EQ(cn__cache_get(c, &a, &fd, &st, &v), CN_OK); /* a is now the most recent */
    CN_CHECK(v && st.size == 100 && st.form == CN_STORE_RAW);
    add(c, 'x', 100, &x); /* 300 > 250: b, the least recent, goes */
    CN_CHECK(!cached(c, &b, NULL) && !has_file(dir, &b));
    CN_CHECK(cached(c, &x, NULL) && cached(c, &a, NULL));
    add(c, 'y', 100, &y); /* a was used after x: x goes */
    CN_CHECK(!has_file(dir, &x) && has_file(dir, &y) && has_file(dir, &a));
    CN_CHECK(!cached(c, &x, NULL) && cached(c, &a, NULL));
    /* The descriptor taken before a's eviction still reads a's bytes. */
    cn__cache_evict(c, &a);
    CN_CHECK(!has_file(dir, &a));
    uint8_t buf[100];
    CN_CHECK_EQ(pread(fd, buf, sizeof buf, 0), 100);
    CN_CHECK(buf[0] == 'a' && buf[99] == 'a');
    close(fd);
    cn__cache_close(c);
    rmdata(dir);
}

static void test_open_adopts_and_cleans(void)
{
    char *dir = mkdata();
    cn__cache_t *c = NULL;
    cn_digest_t a;
    char p[1024];
    CN_CHECK_EQ(cn__cache_open(dir, 1 << 20, &c), CN_OK);
    add(c, 'a', 200, &a);
    cn__cache_close(c);
    snprintf(p, sizeof p, "%s/tmp-0123456789abcdef0123456789abcdef.part", dir);
    FILE *f = fopen(p, "w");
    CN_CHECK(f != NULL);
    fputs("half a fill", f);
    fclose(f);
    CN_CHECK_EQ(cn__cache_open(dir, 1 << 20, &c), CN_OK);
    CN_CHECK(access(p, F_OK) != 0); /* the interrupted fill is gone */
    bool v = true;
    CN_CHECK(cached(c, &a, &v) && !v); /* adopted, not yet hashed by this process */
    cn__cache_verified(c, &a);
    CN_CHECK(cached(c, &a, &v) && v);
    /* A file whose size changed is absent (and dropped). */
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&a, hex);
    snprintf(p, sizeof p, "%s/%s", dir, hex);
    CN_CHECK_EQ(truncate(p, 10), 0);
    CN_CHECK(!cached(c, &a, NULL) && !has_file(dir, &a));
    cn__cache_close(c);
    rmdata(dir);
}

CN_TEST_MAIN(CN_TEST(test_lru_by_bytes), CN_TEST(test_open_adopts_and_cleans))
