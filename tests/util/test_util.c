/* util: buffers, the bounds-checked reader, RFC 3339, error names, files
 * replaced only once complete. */
#include "cn_test.h"
#include "cairn/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void test_file_tmp(void)
{
    char dir[] = "/tmp/cn-utiltest-XXXXXX";
    CN_CHECK(mkdtemp(dir) != NULL);
    char target[64], tmp[128], small[8];
    snprintf(target, sizeof target, "%s/out", dir);
    CN_CHECK_EQ(cn_file_tmp_beside(target, small, sizeof small), CN_E_INVALID);
    /* published: the target has the bytes and the mode, no temporary is left */
    int fd = cn_file_tmp_beside(target, tmp, sizeof tmp);
    CN_CHECK(fd >= 0);
    CN_CHECK(strncmp(tmp, target, strlen(target)) == 0 && strcmp(tmp, target) != 0);
    CN_CHECK_EQ(access(target, F_OK), -1);
    CN_CHECK_EQ(cn_write_full(fd, "bytes", 5), 0);
    CN_CHECK_EQ(cn_file_tmp_publish(fd, tmp, target, 0640), 0);
    struct stat st;
    CN_CHECK_EQ(stat(target, &st), 0);
    CN_CHECK_EQ(st.st_size, 5);
    CN_CHECK_EQ(st.st_mode & 0777, 0640);
    CN_CHECK_EQ(count_entries(dir), 1);
    /* discarded: the old target stays as it was */
    fd = cn_file_tmp_beside(target, tmp, sizeof tmp);
    CN_CHECK(fd >= 0);
    CN_CHECK_EQ(cn_write_full(fd, "partial", 7), 0);
    cn_file_tmp_discard(fd, tmp);
    CN_CHECK_EQ(stat(target, &st), 0);
    CN_CHECK_EQ(st.st_size, 5);
    CN_CHECK_EQ(count_entries(dir), 1);
    /* a rename that fails removes the temporary */
    char blocked[80];
    snprintf(blocked, sizeof blocked, "%s/sub", dir);
    CN_CHECK_EQ(mkdir(blocked, 0755), 0);
    char inner[sizeof blocked + 3];
    snprintf(inner, sizeof inner, "%s/x", blocked);
    CN_CHECK_EQ(mkdir(inner, 0755), 0);
    fd = cn_file_tmp_beside(blocked, tmp, sizeof tmp);
    CN_CHECK(fd >= 0);
    CN_CHECK(cn_file_tmp_publish(fd, tmp, blocked, 0644) < 0);
    CN_CHECK_EQ(count_entries(dir), 2);
    rmdir(inner);
    rmdir(blocked);
    unlink(target);
    CN_CHECK_EQ(rmdir(dir), 0);
}

/* cn_remove_tree removes a tree with files, nested directories and a
 * symbolic link out of it (the link goes, its target stays), and a missing
 * path is no error. */
static void test_remove_tree(void)
{
    char dir[] = "/tmp/cn-utiltest-XXXXXX", outside[] = "/tmp/cn-utiltest-XXXXXX";
    CN_CHECK(mkdtemp(dir) != NULL && mkdtemp(outside) != NULL);
    char p[160];
    snprintf(p, sizeof p, "%s/a/b/c", dir);
    CN_CHECK_EQ(cn_mkdir_p(p, 0755), CN_OK);
    snprintf(p, sizeof p, "%s/a/b/c/f", dir);
    FILE *f = fopen(p, "w");
    CN_CHECK(f != NULL);
    fclose(f);
    snprintf(p, sizeof p, "%s/a/link", dir);
    CN_CHECK_EQ(symlink(outside, p), 0);
    CN_CHECK_EQ(cn_remove_tree(dir), CN_OK);
    CN_CHECK_EQ(access(dir, F_OK), -1);
    CN_CHECK_EQ(access(outside, F_OK), 0);
    CN_CHECK_EQ(cn_remove_tree(dir), CN_OK);
    CN_CHECK_EQ(rmdir(outside), 0);
}

/* cn_pread_full reads exactly n bytes at an offset; a file that ends first
 * gives the caller's error, not a short count. */
static void test_pread_full(void)
{
    char path[] = "/tmp/cn-utiltest-XXXXXX";
    int fd = mkstemp(path);
    CN_CHECK(fd >= 0);
    CN_CHECK_EQ(cn_write_full(fd, "0123456789", 10), 0);
    char buf[16] = { 0 };
    CN_CHECK_EQ(cn_pread_full(fd, buf, 4, 3, CN_E_CORRUPT), CN_OK);
    CN_CHECK(memcmp(buf, "3456", 4) == 0);
    CN_CHECK_EQ(cn_pread_full(fd, buf, 0, 10, CN_E_CORRUPT), CN_OK);
    CN_CHECK_EQ(cn_pread_full(fd, buf, 8, 5, CN_E_CORRUPT), CN_E_CORRUPT);
    CN_CHECK_EQ(cn_pread_full(fd, buf, 1, 10, CN_E_LENGTH_MISMATCH), CN_E_LENGTH_MISMATCH);
    CN_CHECK_EQ(cn_pread_full(-1, buf, 1, 0, CN_E_CORRUPT), -EBADF);
    close(fd);
    unlink(path);
}

static void test_buf_codec_roundtrip(void)
{
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_buf_put_u8(&b, 0xAB), 0);
    CN_CHECK_EQ(cn_buf_put_u16be(&b, 0x1234), 0);
    CN_CHECK_EQ(cn_buf_put_u32be(&b, 0x4A415900), 0);
    CN_CHECK_EQ(cn_buf_put_u64be(&b, 0x0102030405060708ull), 0);
    CN_CHECK_EQ(cn_buf_put_u32le(&b, 0xDEADBEEF), 0);
    CN_CHECK_EQ(b.len, 1 + 2 + 4 + 8 + 4);
    static const uint8_t expect[] = { 0xAB, 0x12, 0x34, 0x4A, 0x41, 0x59, 0x00, 1,    2,   3,
                                      4,    5,    6,    7,    8,    0xEF, 0xBE, 0xAD, 0xDE };
    CN_CHECK_MEM(b.data, expect, sizeof expect);

    cn_rd_t r = cn_rd_init(b.data, b.len);
    CN_CHECK_EQ(cn_rd_u8(&r), 0xAB);
    CN_CHECK_EQ(cn_rd_u16be(&r), 0x1234);
    CN_CHECK_EQ(cn_rd_u32be(&r), 0x4A415900);
    CN_CHECK(cn_rd_u64be(&r) == 0x0102030405060708ull);
    CN_CHECK_EQ(cn_rd_u32le(&r), 0xDEADBEEF);
    CN_CHECK_EQ(r.err, 0);
    CN_CHECK_EQ(cn_rd_left(&r), 0);
    /* Reading past the end is a sticky error, never an over-read. */
    CN_CHECK_EQ(cn_rd_u8(&r), 0);
    CN_CHECK_EQ(r.err, CN_E_PROTOCOL);
    CN_CHECK(cn_rd_bytes(&r, 0) == NULL);
    cn_buf_free(&b);
    cn_buf_free(&b);
}

static void test_reader_huge_length(void)
{
    uint8_t x[4] = { 0 };
    cn_rd_t r = cn_rd_init(x, sizeof x);
    CN_CHECK(cn_rd_bytes(&r, SIZE_MAX) == NULL);
    CN_CHECK_EQ(r.err, CN_E_PROTOCOL);
}

static void test_rfc3339(void)
{
    char s[CN_RFC3339_LEN];
    cn_rfc3339(0, s);
    CN_CHECK_STR(s, "1970-01-01T00:00:00.000Z");
    cn_rfc3339(1796222689123LL, s);
    CN_CHECK_STR(s, "2026-12-02T14:44:49.123Z");
    cn_rfc3339(-1, s);
    CN_CHECK_STR(s, "1969-12-31T23:59:59.999Z");
    cn_rfc3339(951782400123LL, s);
    CN_CHECK_STR(s, "2000-02-29T00:00:00.123Z");
    cn_rfc3339(1798761599999LL, s);
    CN_CHECK_STR(s, "2026-12-31T23:59:59.999Z");
    cn_rfc3339(-62135596800000LL, s);
    CN_CHECK_STR(s, "0001-01-01T00:00:00.000Z");
    cn_rfc3339(253402300799999LL, s);
    CN_CHECK_STR(s, "9999-12-31T23:59:59.999Z");
    cn_rfc3339(253402300800000LL, s); /* past 9999: snprintf's width */
    CN_CHECK_STR(s, "10000-01-01T00:00:00.000Z");
}

static void test_errors(void)
{
    CN_CHECK_STR(cn_errname(CN_E_NOT_FOUND), "CN_E_NOT_FOUND");
    CN_CHECK_STR(cn_errname(-ENOSPC), "ENOSPC");
    CN_CHECK_STR(cn_strerror(CN_E_DIGEST_MISMATCH), "content does not match the expected digest");
    for (int e = CN_E_BASE + 1; e < CN_E_END; e++)
        CN_CHECK(strcmp(cn_errname(e), "CN_E_UNKNOWN") != 0);
}

/* A site's limit: CN_LOG_LIMIT_BURST lines a second, the rest counted and
 * handed to the first line of a later second. */
static void test_log_allow(void)
{
    static cn_log_limit_t lim;
    uint64_t left = 7;
    unsigned allowed = 0;
    for (unsigned i = 0; i < CN_LOG_LIMIT_BURST + 5; i++) {
        allowed += cn_log_allow(&lim, &left);
        CN_CHECK_EQ(left, 0);
    }
    CN_CHECK_EQ(allowed, CN_LOG_LIMIT_BURST);
    cn_sleep_ms(1050);
    CN_CHECK(cn_log_allow(&lim, &left));
    CN_CHECK_EQ(left, 5);
    CN_CHECK(cn_log_allow(&lim, &left));
    CN_CHECK_EQ(left, 0);
    /* its own period and burst: one line per 200 ms */
    cn_log_limit_t slow = { .period_ms = 200, .burst = 1 };
    CN_CHECK(cn_log_allow(&slow, &left));
    CN_CHECK(!cn_log_allow(&slow, &left));
    CN_CHECK(!cn_log_allow(&slow, &left));
    cn_sleep_ms(250);
    CN_CHECK(cn_log_allow(&slow, &left));
    CN_CHECK_EQ(left, 2);
}

CN_TEST_MAIN(CN_TEST(test_buf_codec_roundtrip), CN_TEST(test_reader_huge_length),
             CN_TEST(test_rfc3339), CN_TEST(test_errors), CN_TEST(test_file_tmp),
             CN_TEST(test_pread_full), CN_TEST(test_remove_tree), CN_TEST(test_log_allow))
