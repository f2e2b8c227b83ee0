/* Unit tests of the content-addressed store: publish, reads, ranges and
 * slice digests, idempotency, mismatches, abort, concurrency, pins against
 * delete and the sweeper, the LZ4 envelope, and crash recovery (a child
 * killed with SIGKILL in the middle of a staged write). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/util.h"
#include "cn_test.h"
#include "meta/test_target.h"
#include "store/store_int.h" /* cn__store_envix_builds */
#include "store/storetest.h"

/* ---- helpers ------------------------------------------------------------ */

static void blob_path(const char *data, const cn_digest_t *d, const char *suffix, char *out,
                      size_t cap)
{
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(d, hex);
    snprintf(out, cap, "%s/blobs/%.2s/%.2s/%s%s", data, hex, hex + 2, hex, suffix);
}

/* Backdates a blob's mtime so that the sweeper considers it old. */
static void age_blob(const char *data, const cn_digest_t *d, int64_t ms)
{
    char p[1024];
    blob_path(data, d, "", p, sizeof p);
    if (access(p, F_OK) != 0)
        blob_path(data, d, ".lz4", p, sizeof p);
    struct timeval tv[2];
    int64_t t = cn_wall_ms() - ms;
    tv[0].tv_sec = tv[1].tv_sec = t / 1000;
    tv[0].tv_usec = tv[1].tv_usec = (t % 1000) * 1000;
    CN_CHECK(utimes(p, tv) == 0);
}

typedef struct collect {
    cn_buf_t b;
} collect_t;

static cn_err_t collect_sink(void *ctx, const void *p, size_t n)
{
    return cn_buf_append(&((collect_t *)ctx)->b, p, n);
}

static cn_store_t *open_store(const char *data, const cn_store_opts_t *o)
{
    cn_store_t *s = NULL;
    cn_err_t rc = cn_store_open(data, o, &s);
    CN_CHECK_EQ(rc, 0);
    return s;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_publish_read(void)
{
    char *data = mkdata();
    cn_store_t *s = open_store(data, NULL);
    enum {
        N = 300000
    };
    uint8_t *buf = malloc(N);
    fill(buf, N, 1);
    cn_digest_t want, got;
    cn_blake3(buf, N, &want);

    cn_store_writer_t *w;
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, -1, &w), 0);
    /* uneven pieces exercise the write-behind buffer */
    size_t off = 0, step = 1;
    while (off < N) {
        size_t k = step < N - off ? step : N - off;
        CN_CHECK_EQ(cn_store_writer_write(w, buf + off, k), 0);
        off += k;
        step = step * 3 + 7;
    }
    CN_CHECK_EQ(cn_store_writer_len(w), N);
    uint64_t len = 0;
    CN_CHECK_EQ(cn_store_writer_publish(w, &got, &len), 0);
    CN_CHECK_MEM(got.b, want.b, CN_DIGEST_LEN);
    CN_CHECK_EQ(len, N);

    char p[1024];
    blob_path(data, &want, "", p, sizeof p);
    struct stat st;
    CN_CHECK(stat(p, &st) == 0 && st.st_size == N);
    CN_CHECK_EQ(count_in(data, "staging"), 0);

    int fd = -1;
    uint64_t flen = 0;
    CN_CHECK_EQ(cn_store_open_fd(s, &want, &fd, &flen), 0);
    CN_CHECK_EQ(flen, N);
    uint8_t *back = malloc(N);
    CN_CHECK_EQ(cn_read_full(fd, back, N), N);
    CN_CHECK_MEM(back, buf, N);
    close(fd);

    cn_store_stat_t sst;
    CN_CHECK_EQ(cn_store_stat(s, &want, &sst), 0);
    CN_CHECK_EQ(sst.len, N);
    CN_CHECK_EQ(sst.stored_len, N);
    CN_CHECK_EQ(sst.form, CN_STORE_RAW);
    CN_CHECK(sst.mtime_ms > cn_wall_ms() - 60000);

    bool present[2];
    cn_digest_t ds[2] = { want, want };
    ds[1].b[0] ^= 1;
    CN_CHECK_EQ(cn_store_have(s, ds, 2, present), 0);
    CN_CHECK(present[0] && !present[1]);
    CN_CHECK_EQ(cn_store_stat(s, &ds[1], &sst), CN_E_NOT_FOUND);
    CN_CHECK_EQ(cn_store_open_fd(s, &ds[1], &fd, &flen), CN_E_NOT_FOUND);
    CN_CHECK_EQ(cn_store_verify(s, &want), 0);

    free(back);
    free(buf);
    cn_store_close(s);
    rmdata(data);
}

static void check_range(cn_store_t *s, const cn_digest_t *d, const uint8_t *buf, uint64_t size,
                        uint64_t off, uint64_t len)
{
    collect_t c = { { 0 } };
    cn_digest_t slice, want;
    uint64_t served = 0;
    cn_err_t rc = cn_store_read_range(s, d, off, len, collect_sink, &c, &slice, &served);
    if (off > size) {
        CN_CHECK_EQ(rc, CN_E_RANGE);
        cn_buf_free(&c.b);
        return;
    }
    CN_CHECK_EQ(rc, 0);
    uint64_t n = size - off < len ? size - off : len;
    CN_CHECK_EQ(served, n);
    CN_CHECK_EQ(c.b.len, n);
    if (n)
        CN_CHECK_MEM(c.b.data, buf + off, n);
    cn_blake3(buf + off, n, &want);
    CN_CHECK_MEM(slice.b, want.b, CN_DIGEST_LEN);
    cn_buf_free(&c.b);
}

static void range_suite(cn_store_form_t form)
{
    char *data = mkdata();
    cn_store_opts_t o = { .default_form = form };
    cn_store_t *s = open_store(data, &o);
    enum {
        N = 200000
    };
    uint8_t *buf = malloc(N);
    fill(buf, N, 2);
    /* make half of it compressible so both block kinds occur */
    memset(buf + 70000, 'a', 70000);
    cn_digest_t d;
    CN_CHECK_EQ(cn_store_put(s, buf, N, NULL, &d), 0);

    check_range(s, &d, buf, N, 0, N);
    check_range(s, &d, buf, N, 0, UINT64_MAX);
    check_range(s, &d, buf, N, 1, 10);
    check_range(s, &d, buf, N, 65535, 2); /* block boundary */
    check_range(s, &d, buf, N, 65536, 65536);
    check_range(s, &d, buf, N, 100000, 150000); /* clamps at the end */
    check_range(s, &d, buf, N, N - 1, 1000);
    check_range(s, &d, buf, N, N, 10);     /* empty at the end */
    check_range(s, &d, buf, N, N + 1, 10); /* past the end */
    check_range(s, &d, buf, N, 12345, 0);

    uint8_t small[100];
    size_t got = 0;
    cn_digest_t slice, want;
    CN_CHECK_EQ(cn_store_read_range_buf(s, &d, N - 40, small, sizeof small, &got, &slice), 0);
    CN_CHECK_EQ(got, 40);
    CN_CHECK_MEM(small, buf + N - 40, 40);
    cn_blake3(buf + N - 40, 40, &want);
    CN_CHECK_MEM(slice.b, want.b, CN_DIGEST_LEN);

    cn_store_stat_t st;
    CN_CHECK_EQ(cn_store_stat(s, &d, &st), 0);
    CN_CHECK_EQ(st.len, N);
    CN_CHECK_EQ(st.form, form);
    CN_CHECK_EQ(cn_store_verify(s, &d), 0);
    free(buf);
    cn_store_close(s);
    rmdata(data);
}

static void test_range_raw(void)
{
    range_suite(CN_STORE_RAW);
}

static void test_lz4_round_trip(void)
{
    range_suite(CN_STORE_LZ4);

    char *data = mkdata();
    cn_store_t *s = open_store(data, NULL);
    /* compressible, several blocks and a short last one */
    enum {
        N = 5 * 65536 + 123
    };
    uint8_t *buf = malloc(N);
    for (size_t i = 0; i < N; i++)
        buf[i] = (uint8_t)("cairn stores bytes once "[i % 24]);
    cn_store_writer_t *w;
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, N, &w), 0);
    CN_CHECK_EQ(cn_store_writer_set_form(w, CN_STORE_LZ4), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 1000), 0);
    CN_CHECK_EQ(cn_store_writer_set_form(w, CN_STORE_RAW), CN_E_INVALID);
    CN_CHECK_EQ(cn_store_writer_write(w, buf + 1000, N - 1000), 0);
    cn_digest_t d, want;
    CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), 0);
    cn_blake3(buf, N, &want);
    CN_CHECK_MEM(d.b, want.b, CN_DIGEST_LEN);

    cn_store_stat_t st;
    CN_CHECK_EQ(cn_store_stat(s, &d, &st), 0);
    CN_CHECK_EQ(st.form, CN_STORE_LZ4);
    CN_CHECK_EQ(st.len, N);
    CN_CHECK(st.stored_len < N / 10);
    int fd;
    uint64_t len;
    CN_CHECK_EQ(cn_store_open_fd(s, &d, &fd, &len), CN_E_UNSUPPORTED);
    char p[1024];
    blob_path(data, &d, ".lz4", p, sizeof p);
    CN_CHECK(access(p, F_OK) == 0);
    check_range(s, &d, buf, N, 65530, 70000);

    /* A raw publish of the same content is idempotent: no second file. */
    cn_digest_t d2;
    CN_CHECK_EQ(cn_store_put(s, buf, N, NULL, &d2), 0);
    CN_CHECK_EQ(count_in(data, "blobs"), 1);

    /* The empty blob enveloped. */
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, 0, &w), 0);
    CN_CHECK_EQ(cn_store_writer_set_form(w, CN_STORE_LZ4), 0);
    CN_CHECK_EQ(cn_store_writer_publish(w, &d2, &len), 0);
    CN_CHECK_EQ(len, 0);
    CN_CHECK_EQ(cn_store_stat(s, &d2, &st), 0);
    CN_CHECK_EQ(st.len, 0);
    CN_CHECK_EQ(cn_store_verify(s, &d2), 0);

    /* Corruption of a stored block is caught by verify and by reads. */
    cn_store_close(s);
    chmod(p, 0644);
    int cfd = open(p, O_RDWR);
    CN_CHECK(cfd >= 0);
    uint8_t junk[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    CN_CHECK(pwrite(cfd, junk, sizeof junk, 20) == (ssize_t)sizeof junk);
    close(cfd);
    s = open_store(data, NULL);
    CN_CHECK(cn_store_verify(s, &d) == CN_E_CORRUPT);
    /* A read either fails to decode or serves bytes whose slice digest
     * differs: block contents are covered by digests, not by the envelope. */
    collect_t c = { { 0 } };
    cn_digest_t slice, want_slice;
    cn_blake3(buf, 100, &want_slice);
    cn_err_t rrc = cn_store_read_range(s, &d, 0, 100, collect_sink, &c, &slice, NULL);
    CN_CHECK(rrc == CN_E_CORRUPT ||
             (rrc == 0 && memcmp(slice.b, want_slice.b, CN_DIGEST_LEN) != 0));
    cn_buf_free(&c.b);
    /* A damaged index is caught by its checksum: by verify, and by the read
     * of a store that has not kept the blob's index (one that read the blob
     * before keeps the index it checked then; blocks are checked as they
     * decode either way). */
    struct stat cst;
    CN_CHECK(stat(p, &cst) == 0);
    cfd = open(p, O_RDWR);
    CN_CHECK(pwrite(cfd, junk, 1, cst.st_size - 32 - 2) == 1);
    close(cfd);
    CN_CHECK(cn_store_verify(s, &d) == CN_E_CORRUPT);
    cn_store_close(s);
    s = open_store(data, NULL);
    CN_CHECK(cn_store_read_range(s, &d, 0, 10, collect_sink, &c, NULL, NULL) == CN_E_CORRUPT);
    cn_buf_free(&c.b);
    /* Truncation breaks the trailer. */
    CN_CHECK(truncate(p, 40) == 0);
    CN_CHECK_EQ(cn_store_stat(s, &d, &st), CN_E_CORRUPT);
    free(buf);
    cn_store_close(s);
    rmdata(data);
}

/* Ranged reads of an enveloped blob read and check its index once: every
 * later range of it is served from the store's cache of indexes, and each
 * range is still the right bytes. */
static void test_lz4_index_kept(void)
{
    char *data = mkdata();
    cn_store_opts_t o = { .default_form = CN_STORE_LZ4 };
    cn_store_t *s = open_store(data, &o);
    enum {
        N = 20 * 65536 + 77
    };
    uint8_t *buf = malloc(N);
    fill(buf, N, 7);
    memset(buf + 3 * 65536, 'z', 5 * 65536); /* both block kinds */
    cn_digest_t d, d2;
    CN_CHECK_EQ(cn_store_put(s, buf, N, NULL, &d), 0);
    CN_CHECK_EQ(cn_store_put(s, buf, N / 2, NULL, &d2), 0);
    uint64_t builds = cn__store_envix_builds(s);
    for (uint64_t off = 0; off < N; off += 50000)
        check_range(s, &d, buf, N, off, 70000);
    CN_CHECK_EQ(cn__store_envix_builds(s), builds + 1);
    check_range(s, &d2, buf, N / 2, 100, 200000);
    check_range(s, &d, buf, N, N - 10, 100);
    CN_CHECK_EQ(cn__store_envix_builds(s), builds + 2);
    CN_CHECK_EQ(cn_store_verify(s, &d), 0);
    free(buf);
    cn_store_close(s);
    rmdata(data);
}

static void test_idempotent(void)
{
    char *data = mkdata();
    for (int batch = 0; batch < 2; batch++) {
        cn_store_opts_t o = { .batch_disable = batch == 0 };
        cn_store_t *s = open_store(data, &o);
        uint8_t buf[5000];
        fill(buf, sizeof buf, 3);
        cn_digest_t a, b;
        CN_CHECK_EQ(cn_store_put(s, buf, sizeof buf, NULL, &a), 0);
        age_blob(data, &a, 3600 * 1000);
        cn_store_stat_t st1, st2;
        CN_CHECK_EQ(cn_store_stat(s, &a, &st1), 0);
        CN_CHECK_EQ(cn_store_put(s, buf, sizeof buf, &a, &b), 0);
        CN_CHECK_MEM(a.b, b.b, CN_DIGEST_LEN);
        CN_CHECK_EQ(count_in(data, "blobs"), 1);
        CN_CHECK_EQ(count_in(data, "staging"), 0);
        /* the repeat publish refreshed the grace window */
        CN_CHECK_EQ(cn_store_stat(s, &a, &st2), 0);
        CN_CHECK(st2.mtime_ms > st1.mtime_ms + 3000 * 1000);
        CN_CHECK_EQ(cn_store_delete(s, &a), 0);
        cn_store_close(s);
    }
    rmdata(data);
}

static void test_mismatch_and_limits(void)
{
    char *data = mkdata();
    cn_store_opts_t o = { .max_blob_bytes = 1000 };
    cn_store_t *s = open_store(data, &o);
    uint8_t buf[2000];
    fill(buf, sizeof buf, 4);
    cn_digest_t wrong, d;
    cn_blake3("other", 5, &wrong);

    /* expected digest mismatch: nothing published, staging clean */
    cn_store_writer_t *w;
    CN_CHECK_EQ(cn_store_writer_open(s, &wrong, -1, &w), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 500), 0);
    CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), CN_E_DIGEST_MISMATCH);
    CN_CHECK_EQ(count_in(data, "blobs"), 0);
    CN_CHECK_EQ(count_in(data, "staging"), 0);
    cn_digest_t real;
    cn_blake3(buf, 500, &real);
    bool have;
    CN_CHECK_EQ(cn_store_have(s, &real, 1, &have), 0);
    CN_CHECK(!have);

    /* length: too many bytes is reported by the write that overflows */
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, 100, &w), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 60), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 60), CN_E_LENGTH_MISMATCH);
    CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), CN_E_LENGTH_MISMATCH);
    /* too few bytes is reported by publish */
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, 100, &w), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 99), 0);
    CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), CN_E_LENGTH_MISMATCH);
    /* the store's limit */
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, 1001, &w), CN_E_TOO_LARGE);
    CN_CHECK(w == NULL);
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, -1, &w), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 1000), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 1), CN_E_TOO_LARGE);
    CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), CN_E_TOO_LARGE);
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, -2, &w), CN_E_INVALID);
    CN_CHECK_EQ(count_in(data, "blobs"), 0);
    CN_CHECK_EQ(count_in(data, "staging"), 0);

    /* abort */
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, -1, &w), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, buf, 10), 0);
    CN_CHECK_EQ(count_in(data, "staging"), 1);
    cn_store_writer_abort(w);
    cn_store_writer_abort(NULL);
    CN_CHECK_EQ(count_in(data, "staging"), 0);
    CN_CHECK_EQ(count_in(data, "blobs"), 0);
    cn_store_close(s);
    cn_store_close(NULL);
    rmdata(data);
}

static void test_write_fd(void)
{
    char *data = mkdata();
    cn_store_t *s = open_store(data, NULL);
    enum {
        N = 700001
    };
    uint8_t *buf = malloc(N);
    fill(buf, N, 5);
    char src[1024];
    snprintf(src, sizeof src, "%s/src", data);
    int fd = open(src, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CN_CHECK(fd >= 0);
    CN_CHECK_EQ(cn_write_full(fd, buf, N), 0);
    for (int form = 0; form < 2; form++) {
        /* the file holds one byte less than asked for */
        lseek(fd, 2, SEEK_SET);
        cn_store_writer_t *w;
        cn_digest_t d, want;
        uint64_t done = 0;
        CN_CHECK_EQ(cn_store_writer_open(s, NULL, N, &w), 0);
        CN_CHECK_EQ(cn_store_writer_set_form(w, (cn_store_form_t)form), 0);
        CN_CHECK_EQ(cn_store_writer_write(w, buf, 1), 0);
        CN_CHECK_EQ(cn_store_writer_write_fd(w, fd, N - 1, &done), CN_E_CLOSED);
        CN_CHECK_EQ(done, N - 2);
        CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), CN_E_CLOSED);

        lseek(fd, 0, SEEK_SET);
        CN_CHECK_EQ(cn_store_writer_open(s, NULL, N, &w), 0);
        CN_CHECK_EQ(cn_store_writer_set_form(w, (cn_store_form_t)form), 0);
        CN_CHECK_EQ(cn_store_writer_write_fd(w, fd, N, &done), 0);
        CN_CHECK_EQ(done, N);
        CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), 0);
        cn_blake3(buf, N, &want);
        CN_CHECK_MEM(d.b, want.b, CN_DIGEST_LEN);
        CN_CHECK_EQ(cn_store_verify(s, &d), 0);
    }
    /* a pipe that is short: EOF before n */
    int p[2];
    CN_CHECK(pipe(p) == 0);
    CN_CHECK(write(p[1], buf, 100) == 100);
    close(p[1]);
    cn_store_writer_t *w;
    uint64_t done = 0;
    CN_CHECK_EQ(cn_store_writer_open(s, NULL, -1, &w), 0);
    CN_CHECK_EQ(cn_store_writer_write_fd(w, p[0], 200, &done), CN_E_CLOSED);
    CN_CHECK_EQ(done, 100);
    cn_store_writer_abort(w);
    close(p[0]);
    close(fd);
    free(buf);
    cn_store_close(s);
    rmdata(data);
}

/* Pages of the first n bytes of path that are in the page cache. */
static size_t cached_pages(const char *path, size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), pages = (n + pg - 1) / pg, in = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CN_CHECK(fd >= 0);
    void *map = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
    CN_CHECK(map != MAP_FAILED);
    unsigned char *vec = malloc(pages);
    CN_CHECK(mincore(map, n, vec) == 0);
    for (size_t i = 0; i < pages; i++)
        in += vec[i] & 1;
    free(vec);
    munmap(map, n);
    close(fd);
    return in;
}

/* A large blob's whole chunks bypass the page cache (O_DIRECT staging,
 * docs/store.md "Write path"), its tail does not, and its bytes read back
 * whole; with page_cache_writes (cairnd's [store] direct_io = false) every
 * page it wrote stays cached, as before. */
static void test_large_blob_bypasses_page_cache(void)
{
    char *data = mkdata();
    struct statfs sf;
    CN_CHECK(statfs(data, &sf) == 0);
    if (sf.f_type == 0x01021994 /* TMPFS_MAGIC: its pages are the file */) {
        rmdata(data);
        CN_SKIP("the data directory is on tmpfs, which has no page cache to bypass");
        return;
    }
    /* 4 MiB are whole chunks of the writer's buffer (256 KiB, then 1 MiB). */
    enum {
        CHUNK = 256 * 1024,
        WHOLE = 4 << 20,
        N = WHOLE + (1 << 20) + 777
    };
    uint8_t *buf = malloc(N);
    for (int cached = 0; cached < 2; cached++) {
        cn_store_opts_t o = { .page_cache_writes = cached };
        cn_store_t *s = open_store(data, &o);
        fill(buf, N, 40 + (uint32_t)cached);
        cn_store_writer_t *w;
        CN_CHECK_EQ(cn_store_writer_open(s, NULL, N, &w), 0);
        /* a piece past a whole chunk, then odd ones */
        size_t off = 0, step = CHUNK + 5;
        while (off < N) {
            size_t k = step < N - off ? step : N - off;
            CN_CHECK_EQ(cn_store_writer_write(w, buf + off, k), 0);
            off += k;
            step = 65536 + 13;
        }
        cn_digest_t d, want;
        CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), 0);
        cn_blake3(buf, N, &want);
        CN_CHECK_MEM(d.b, want.b, CN_DIGEST_LEN);
        char p[1024];
        blob_path(data, &d, "", p, sizeof p);
        size_t whole = cached_pages(p, WHOLE), pages = WHOLE / (size_t)sysconf(_SC_PAGESIZE);
        if (cached)
            CN_CHECK(whole > pages / 2);
        else
            CN_CHECK_EQ(whole, 0);
        CN_CHECK_EQ(cn_store_verify(s, &d), 0);
        cn_store_close(s);
    }
    free(buf);
    rmdata(data);
}

typedef struct conc {
    cn_store_t *s;
    int id;
    int n;
    cn_digest_t *out;
    int failures;
} conc_t;

static void *conc_main(void *arg)
{
    conc_t *c = arg;
    for (int i = 0; i < c->n; i++) {
        uint8_t buf[4096];
        fill(buf, sizeof buf, (uint32_t)(c->id * 100000 + i));
        /* every tenth blob is shared by all threads: concurrent idempotent publishes */
        if (i % 10 == 0)
            fill(buf, sizeof buf, (uint32_t)(777 + i));
        if (cn_store_put(c->s, buf, sizeof buf, NULL, &c->out[i]) != 0)
            c->failures++;
    }
    return NULL;
}

static void test_concurrency(void)
{
    char *data = mkdata();
    cn_store_t *s = open_store(data, NULL);
    enum {
        T = 16,
        PER = 40
    };
    pthread_t th[T];
    conc_t c[T];
    cn_digest_t *digs = calloc(T * PER, sizeof *digs);
    for (int t = 0; t < T; t++) {
        c[t] = (conc_t){ s, t, PER, digs + t * PER, 0 };
        pthread_create(&th[t], NULL, conc_main, &c[t]);
    }
    int failures = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        failures += c[t].failures;
    }
    CN_CHECK_EQ(failures, 0);
    cn_store_close(s);

    /* Reopen: everything acknowledged is there and reads back intact. */
    s = open_store(data, NULL);
    size_t distinct = T * (PER - PER / 10) + PER / 10;
    CN_CHECK_EQ(count_in(data, "blobs"), distinct);
    CN_CHECK_EQ(count_in(data, "staging"), 0);
    for (int i = 0; i < T * PER; i++)
        CN_CHECK_EQ(cn_store_verify(s, &digs[i]), 0);
    free(digs);
    cn_store_close(s);
    rmdata(data);
}

typedef struct live_set {
    cn_digest_t d[8];
    size_t n;
    int calls;
    cn_err_t fail;
} live_set_t;

static cn_err_t live_one(void *ctx, const cn_digest_t *d, bool *live)
{
    live_set_t *ls = ctx;
    ls->calls++;
    *live = false;
    for (size_t i = 0; i < ls->n; i++)
        if (!memcmp(ls->d[i].b, d->b, CN_DIGEST_LEN))
            *live = true;
    return ls->fail;
}

static cn_err_t live_many(void *ctx, const cn_digest_t *d, size_t n, bool *live)
{
    live_set_t *ls = ctx;
    ls->calls++;
    for (size_t k = 0; k < n; k++) {
        live[k] = false;
        for (size_t i = 0; i < ls->n; i++)
            if (!memcmp(ls->d[i].b, d[k].b, CN_DIGEST_LEN))
                live[k] = true;
    }
    return CN_OK;
}

static void test_pins_sweeper(void)
{
    char *data = mkdata();
    cn_meta_t *meta = NULL;
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(data), &mo, &meta), 0);
    cn_store_opts_t o = { .meta = meta };
    cn_store_t *s = open_store(data, &o);

    enum {
        K = 8
    };
    cn_digest_t d[K];
    for (int i = 0; i < K; i++) {
        uint8_t buf[1000];
        fill(buf, sizeof buf, (uint32_t)(50 + i));
        CN_CHECK_EQ(cn_store_put(s, buf, sizeof buf, NULL, &d[i]), 0);
    }
    /* d0 young; d1 guarded; d2 durable pin; d3 expired durable pin;
     * d4 live (one-at-a-time source); d5 live (batch source); d6, d7 dead */
    for (int i = 1; i < K; i++)
        age_blob(data, &d[i], 7200 * 1000);
    cn_store_guard_t *g, *g2;
    CN_CHECK_EQ(cn_store_guard_acquire(s, &d[1], &g), 0);
    CN_CHECK_EQ(cn_store_guard_acquire(s, &d[1], &g2), 0);
    uint64_t pin2, pin3, pin7;
    CN_CHECK_EQ(cn_store_pin(s, &d[2], "ns:test", 0, &pin2), 0);
    CN_CHECK_EQ(cn_store_pin(s, &d[3], NULL, cn_wall_ms() - 1, &pin3), 0);
    CN_CHECK_EQ(cn_store_pin(s, &d[7], "later", cn_wall_ms() + 3600 * 1000, &pin7), 0);
    CN_CHECK(pin2 != pin3 && pin2 != 0);
    bool pinned;
    CN_CHECK_EQ(cn_store_is_pinned(s, &d[2], &pinned), 0);
    CN_CHECK(pinned);
    CN_CHECK_EQ(cn_store_is_pinned(s, &d[3], &pinned), 0);
    CN_CHECK(!pinned);
    CN_CHECK_EQ(cn_store_is_pinned(s, &d[1], &pinned), 0);
    CN_CHECK(pinned);
    CN_CHECK_EQ(cn_store_unpin(s, pin7), 0);
    CN_CHECK_EQ(cn_store_unpin(s, pin7), CN_E_NOT_FOUND);

    live_set_t a = { .n = 1 }, b = { .n = 1 };
    a.d[0] = d[4];
    b.d[0] = d[5];
    CN_CHECK_EQ(cn_store_register_liveness(s, "objects", live_one, &a), 0);
    CN_CHECK_EQ(cn_store_register_liveness_batch(s, "blobs", live_many, &b), 0);
    CN_CHECK_EQ(cn_store_register_liveness(s, "objects", live_one, &a), CN_E_EXISTS);

    /* delete honours pins but not liveness */
    CN_CHECK_EQ(cn_store_delete(s, &d[1]), CN_E_PINNED);
    CN_CHECK_EQ(cn_store_delete(s, &d[2]), CN_E_PINNED);

    cn_store_sweep_stats_t st;
    CN_CHECK_EQ(cn_store_sweep(s, 3600 * 1000, &st), 0);
    CN_CHECK_EQ(st.scanned, K);
    CN_CHECK_EQ(st.young, 1);
    CN_CHECK_EQ(st.pinned, 2);
    CN_CHECK_EQ(st.live, 2);
    CN_CHECK_EQ(st.deleted, 3); /* d3 (pin expired), d6, d7 */
    CN_CHECK_EQ(st.pins_expired, 1);
    CN_CHECK_EQ(st.bytes_deleted, 3000);
    bool have[K];
    CN_CHECK_EQ(cn_store_have(s, d, K, have), 0);
    CN_CHECK(have[0] && have[1] && have[2] && !have[3] && have[4] && have[5] && !have[6] &&
             !have[7]);
    CN_CHECK(b.calls >= 1);

    /* Releasing one guard keeps the other; the last release exposes it. */
    cn_store_guard_release(g);
    CN_CHECK_EQ(cn_store_sweep(s, 3600 * 1000, &st), 0);
    CN_CHECK_EQ(cn_store_have(s, &d[1], 1, have), 0);
    CN_CHECK(have[0]);
    cn_store_guard_release(g2);
    cn_store_guard_release(NULL);
    CN_CHECK_EQ(cn_store_sweep(s, 3600 * 1000, &st), 0);
    CN_CHECK_EQ(st.deleted, 1);
    CN_CHECK_EQ(cn_store_have(s, &d[1], 1, have), 0);
    CN_CHECK(!have[0]);

    /* The durable pin survives a reopen; unpinned, delete succeeds. */
    cn_store_close(s);
    s = open_store(data, &o);
    CN_CHECK_EQ(cn_store_delete(s, &d[2]), CN_E_PINNED);
    CN_CHECK_EQ(cn_store_unpin(s, pin2), 0);
    CN_CHECK_EQ(cn_store_delete(s, &d[2]), 0);
    CN_CHECK_EQ(cn_store_delete(s, &d[2]), CN_E_NOT_FOUND);

    /* A guard taken before the blob exists protects what is published. */
    uint8_t nb[300];
    fill(nb, sizeof nb, 99);
    cn_digest_t nd;
    cn_blake3(nb, sizeof nb, &nd);
    CN_CHECK_EQ(cn_store_guard_acquire(s, &nd, &g), 0);
    CN_CHECK_EQ(cn_store_put(s, nb, sizeof nb, &nd, NULL), 0);
    age_blob(data, &nd, 7200 * 1000);
    CN_CHECK_EQ(cn_store_sweep(s, 0, &st), 0);
    CN_CHECK_EQ(cn_store_have(s, &nd, 1, have), 0);
    CN_CHECK(have[0]);
    cn_store_guard_release(g);

    /* touch restarts the grace window */
    CN_CHECK_EQ(cn_store_touch(s, &nd), 0);
    CN_CHECK_EQ(cn_store_sweep(s, 3600 * 1000, &st), 0);
    CN_CHECK_EQ(cn_store_have(s, &nd, 1, have), 0);
    CN_CHECK(have[0]);

    /* A failing liveness source stops the sweep: nothing more is deleted. */
    cn_store_close(s);
    s = open_store(data, &o);
    live_set_t bad = { .fail = CN_E_DB };
    CN_CHECK_EQ(cn_store_register_liveness(s, "broken", live_one, &bad), 0);
    age_blob(data, &nd, 7200 * 1000);
    CN_CHECK_EQ(cn_store_sweep(s, 1000, &st), CN_E_DB);
    CN_CHECK_EQ(cn_store_have(s, &nd, 1, have), 0);
    CN_CHECK(have[0]);
    CN_CHECK_EQ(cn_store_touch(s, &d[6]), CN_E_NOT_FOUND);
    cn_store_close(s);
    cn_meta_close(meta);

    /* Without meta, durable pins are refused and guards still work. */
    s = open_store(data, NULL);
    uint64_t id;
    CN_CHECK_EQ(cn_store_pin(s, &nd, NULL, 0, &id), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(cn_store_sweep(s, -1, &st), CN_E_INVALID);
    CN_CHECK_EQ(cn_store_sweep(s, 0, &st), 0);
    CN_CHECK_EQ(cn_store_have(s, &nd, 1, have), 0);
    CN_CHECK(!have[0]);
    cn_store_close(s);
    rmdata(data);
}

/* Races a sweeper against idempotent re-publishes of the same old blobs:
 * every publish that returned OK must leave its blob readable. */
typedef struct race {
    cn_store_t *s;
    const char *data;
    volatile int stop;
    int lost;
} race_t;

static void *race_sweeper(void *arg)
{
    race_t *r = arg;
    while (!r->stop) {
        cn_store_sweep_stats_t st;
        cn_store_sweep(r->s, 2000, &st);
    }
    return NULL;
}

static void test_sweep_publish_race(void)
{
    char *data = mkdata();
    cn_store_t *s = open_store(data, NULL);
    race_t r = { s, data, 0, 0 };
    pthread_t th;
    pthread_create(&th, NULL, race_sweeper, &r);
    for (int i = 0; i < 200; i++) {
        uint8_t buf[512];
        fill(buf, sizeof buf, (uint32_t)(i % 7));
        cn_digest_t d;
        cn_store_guard_t *g;
        if (cn_store_put(s, buf, sizeof buf, NULL, &d) != 0) {
            r.lost++;
            continue;
        }
        /* between publish and the reference, the grace window protects it */
        CN_CHECK_EQ(cn_store_guard_acquire(s, &d, &g), 0);
        if (cn_store_verify(s, &d) != 0)
            r.lost++;
        cn_store_guard_release(g);
        if (i % 3 == 0)
            age_blob(data, &d, 10000);
    }
    r.stop = 1;
    pthread_join(th, NULL);
    CN_CHECK_EQ(r.lost, 0);
    cn_store_close(s);
    rmdata(data);
}

/* A writer guards its blob from publish to commit.  When the commit lands
 * after the sweeper asked "is it live?" (answer: no) and the guard is gone
 * before the sweeper's final check, the blob must still stay. */
typedef struct late_commit {
    cn_store_guard_t *g;
    int asked;
} late_commit_t;

static cn_err_t live_commits_late(void *ctx, const cn_digest_t *d, bool *live)
{
    late_commit_t *lc = ctx;
    (void)d;
    *live = false; /* the reference is not committed yet */
    if (lc->g) {
        cn_store_guard_release(lc->g); /* ...and now it is, and the writer is done */
        lc->g = NULL;
    }
    lc->asked++;
    return CN_OK;
}

static void test_sweep_guard_released_mid_batch(void)
{
    char *data = mkdata();
    cn_store_t *s = open_store(data, NULL);
    uint8_t buf[700];
    fill(buf, sizeof buf, 77);
    cn_digest_t d;
    CN_CHECK_EQ(cn_store_put(s, buf, sizeof buf, NULL, &d), 0);
    age_blob(data, &d, 10000);
    late_commit_t lc = { NULL, 0 };
    CN_CHECK_EQ(cn_store_guard_acquire(s, &d, &lc.g), 0);
    CN_CHECK_EQ(cn_store_register_liveness(s, "late", live_commits_late, &lc), 0);
    cn_store_sweep_stats_t st;
    CN_CHECK_EQ(cn_store_sweep(s, 0, &st), 0);
    CN_CHECK_EQ(lc.asked, 1);
    CN_CHECK_EQ(st.deleted, 0);
    CN_CHECK_EQ(cn_store_verify(s, &d), 0);
    /* the next sweep, with no guard in play, removes what nothing holds */
    CN_CHECK_EQ(cn_store_sweep(s, 0, &st), 0);
    CN_CHECK_EQ(st.deleted, 1);
    cn_store_close(s);
    rmdata(data);
}

static void test_recovery_kill9(void)
{
    char *data = mkdata();
    int ready[2];
    CN_CHECK(pipe(ready) == 0);
    cn_digest_t d;
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        cn_store_t *s = NULL;
        if (cn_store_open(data, NULL, &s) != 0)
            _exit(3);
        cn_store_writer_t *w;
        if (cn_store_writer_open(s, NULL, -1, &w) != 0)
            _exit(4);
        uint8_t buf[65536];
        fill(buf, sizeof buf, 7);
        for (int i = 0; i < 64; i++)
            if (cn_store_writer_write(w, buf, sizeof buf) != 0)
                _exit(5);
        /* a second, small upload that never reaches publish either */
        cn_store_writer_t *w2;
        if (cn_store_writer_open(s, NULL, -1, &w2) != 0 || cn_store_writer_write(w2, buf, 100) != 0)
            _exit(6);
        if (write(ready[1], "x", 1) != 1)
            _exit(7);
        for (;;) {
            if (cn_store_writer_write(w, buf, sizeof buf) != 0)
                _exit(8);
            usleep(1000);
        }
    }
    close(ready[1]);
    char c;
    CN_CHECK(read(ready[0], &c, 1) == 1);
    close(ready[0]);
    usleep(20000);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    CN_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* The dead writer left partial uploads in staging and nothing visible. */
    CN_CHECK(count_in(data, "staging") >= 2);
    CN_CHECK_EQ(count_in(data, "blobs"), 0);
    uint8_t buf[65536];
    fill(buf, sizeof buf, 7);
    cn_blake3(buf, 100, &d);

    cn_store_t *s = open_store(data, NULL);
    CN_CHECK_EQ(count_in(data, "staging"), 0);
    bool have = true;
    CN_CHECK_EQ(cn_store_have(s, &d, 1, &have), 0);
    CN_CHECK(!have);
    /* a second open of the same data dir is refused while the first holds it */
    cn_store_t *s2 = NULL;
    CN_CHECK_EQ(cn_store_open(data, NULL, &s2), CN_E_BUSY);
    CN_CHECK(s2 == NULL);
    cn_store_close(s);
    rmdata(data);
}

/* A child publishes small blobs (acknowledged through the journal) and is
 * killed before any checkpoint; the blob files are then damaged as a crash
 * could leave them.  Reopening replays the journal and repairs them all. */
static void test_recovery_journal(void)
{
    char *data = mkdata();
    enum {
        K = 20
    };
    int ready[2];
    CN_CHECK(pipe(ready) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        cn_store_t *s = NULL;
        if (cn_store_open(data, NULL, &s) != 0)
            _exit(3);
        for (int i = 0; i < K; i++) {
            uint8_t buf[4096];
            fill(buf, sizeof buf, (uint32_t)(1000 + i));
            if (cn_store_put(s, buf, sizeof buf, NULL, NULL) != 0)
                _exit(4);
        }
        if (write(ready[1], "x", 1) != 1)
            _exit(5);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    CN_CHECK(read(ready[0], &c, 1) == 1);
    close(ready[0]);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);

    char jp[1024];
    snprintf(jp, sizeof jp, "%s/store.journal", data);
    struct stat st;
    CN_CHECK(stat(jp, &st) == 0 && st.st_size >= K * 4096);
    cn_digest_t d[K];
    for (int i = 0; i < K; i++) {
        uint8_t buf[4096];
        fill(buf, sizeof buf, (uint32_t)(1000 + i));
        cn_blake3(buf, sizeof buf, &d[i]);
        char p[1024];
        blob_path(data, &d[i], "", p, sizeof p);
        if (i < 5) {
            CN_CHECK(truncate(p, 0) == 0); /* lost data */
        } else if (i < 10) {
            CN_CHECK(unlink(p) == 0); /* lost name */
        } else if (i == 10) {
            chmod(p, 0644);
            int fd = open(p, O_WRONLY);
            CN_CHECK(fd >= 0 && pwrite(fd, "torn", 4, 100) == 4);
            close(fd);
        }
    }
    /* an unacknowledged, torn record at the tail is ignored */
    int jfd = open(jp, O_WRONLY | O_APPEND);
    CN_CHECK(jfd >= 0 && write(jfd, "CNJ1garbage", 11) == 11);
    close(jfd);

    cn_store_t *s = open_store(data, NULL);
    for (int i = 0; i < K; i++)
        CN_CHECK_EQ(cn_store_verify(s, &d[i]), 0);
    CN_CHECK(stat(jp, &st) == 0 && st.st_size == 0);
    CN_CHECK_EQ(count_in(data, "blobs"), K);
    CN_CHECK_EQ(count_in(data, "staging"), 0);
    cn_store_close(s);
    rmdata(data);
}

static void skip_no_meta(void)
{
    CN_SKIP("opens no meta, so no engine is involved: the meson test store runs it");
}

int main(void)
{
    static cn_test_case_t cases[] = {
        CN_TEST(test_publish_read),
        CN_TEST(test_range_raw),
        CN_TEST(test_lz4_round_trip),
        CN_TEST(test_lz4_index_kept),
        CN_TEST(test_idempotent),
        CN_TEST(test_mismatch_and_limits),
        CN_TEST(test_write_fd),
        CN_TEST(test_concurrency),
        CN_TEST(test_pins_sweeper),
        CN_TEST(test_sweep_publish_race),
        CN_TEST(test_sweep_guard_released_mid_batch),
        CN_TEST(test_recovery_kill9),
        CN_TEST(test_recovery_journal),
        CN_TEST(test_large_blob_bypasses_page_cache),
    };
    const size_t n = sizeof cases / sizeof cases[0];
    /* On PostgreSQL (store_pg) only the pins, whose rows are meta's, run:
     * every other case opens its store without meta. */
    if (cn_test_meta_pg())
        for (size_t i = 0; i < n; i++)
            if (cases[i].fn != test_pins_sweeper)
                cases[i].fn = skip_no_meta;
    return cn_test_run(cases, n);
}
