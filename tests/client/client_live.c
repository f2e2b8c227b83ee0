/* libcairn's Jay client against the real cairnd (driven by
 * tests/client/test_client_live.py, which starts the server and passes
 * CAIRN_ENDPOINT, CAIRN_TOKEN, and CAIRN_TOKEN_RO, a token holding only
 * object:get).  The first argument picks a scenario:
 *
 *   ops     every operation, streaming bodies from an fd (regular file and
 *           pipe) and a callback, downloads to an fd and a callback, ranges,
 *           multipart, copy, listings, errors as (status, code, message),
 *           connection reuse and concurrent callers;
 *   idle    the pooled-idle discard with a 300 ms window (CAIRN_IDLE_MS);
 *   reaped  the server's idle timeout is 300 ms: pooled connections it closed
 *           are noticed before reuse, with or without a body;
 *   retry   CAIRN_ENDPOINT is a proxy the driver controls: before each step
 *           this program prints "# ARM <what>" and waits for a line on stdin,
 *           then the proxy breaks the step's connection (the one retry, none
 *           for a body, none after a response byte, only one);
 *   restart the driver restarts cairnd on the same port between two calls;
 *   transfer cn_client_put_file (one PutObject, parallel multipart, a stream)
 *           and cn_client_get_to_fd's verified download, with their errors.
 *
 * Output is TAP; the exit status is non-zero if any check failed. */
#include "cn_test.h"

#include "cairn/client.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_endpoint, *g_token, *g_token_ro;

/* ---- helpers ------------------------------------------------------------------ */

static cn_client_t *client(const char *token, int idle_ms)
{
    cn_client_cfg_t cfg = {
        .endpoint = g_endpoint, .token = token, .idle_ms = idle_ms, .io_timeout_ms = 20000
    };
    cn_client_t *c = NULL;
    cn_jay_error_t je;
    cn_err_t e = cn_client_new(&cfg, &c, &je);
    if (e) {
        fprintf(stderr, "# cn_client_new: %s %s\n", cn_strerror(e), je.message);
        exit(2);
    }
    return c;
}

static uint8_t *pattern(size_t n, uint32_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    return p;
}

static void md5_hex(const void *p, size_t n, char out[33])
{
    uint8_t d[16];
    cn_md5(p, n, d);
    cn_hex_encode(d, sizeof d, out);
}

static void sha_hex(const void *p, size_t n, char out[65])
{
    uint8_t d[32];
    cn_sha256(p, n, d);
    cn_hex_encode(d, sizeof d, out);
}

/* A temporary file holding p[0..n), its offset at 0. */
static int temp_with(const void *p, size_t n)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/cn-live-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    unlink(path);
    if (n && cn_write_full(fd, p, n) != 0)
        exit(2);
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* Reads the whole of fd from offset 0. */
static cn_buf_t slurp(int fd)
{
    cn_buf_t b = { 0 };
    uint8_t chunk[65536];
    lseek(fd, 0, SEEK_SET);
    for (;;) {
        long long n = cn_read_full(fd, chunk, sizeof chunk);
        if (n <= 0)
            break;
        cn_buf_append(&b, chunk, (size_t)n);
    }
    return b;
}

/* A callback source that hands out odd-sized pieces, optionally ending early. */
typedef struct src {
    const uint8_t *p;
    size_t len, off, stop_at;
    size_t piece;
} src_t;

static long long src_read(void *ud, void *buf, size_t n)
{
    src_t *s = ud;
    size_t end = s->stop_at ? s->stop_at : s->len;
    if (n > s->piece)
        n = s->piece;
    if (n > end - s->off)
        n = end - s->off;
    memcpy(buf, s->p + s->off, n);
    s->off += n;
    return (long long)n;
}

static cn_err_t buf_write(void *ud, const void *p, size_t n)
{
    return cn_buf_append(ud, p, n);
}

static void note_progress(void *ud, int64_t bytes)
{
    *(int64_t *)ud = bytes;
}

static cn_err_t put_mem(cn_client_t *c, const char *bucket, const char *key, const void *p,
                        size_t n, cn_client_written_t *w, cn_jay_error_t *je)
{
    src_t s = { p, n, 0, 0, 1 << 20 };
    cn_client_body_t body = { .len = (int64_t)n, .fd = -1, .read = src_read, .ud = &s };
    return cn_client_put_object(c, bucket, key, NULL, &body, w, je);
}

static cn_err_t get_mem(cn_client_t *c, const char *bucket, const char *key, cn_buf_t *out,
                        cn_client_object_t *info, cn_jay_error_t *je)
{
    cn_client_sink_t sink = { .fd = -1, .write = buf_write, .ud = out };
    return cn_client_get_object(c, bucket, key, &sink, info, je);
}

static void expect_answer(cn_err_t e, const cn_jay_error_t *je, cn_err_t want, uint8_t status,
                          const char *code, int line)
{
    if (e != want || je->status != status || strcmp(je->code, code) != 0 || !je->message[0] ||
        je->hs_status != 0) {
        fprintf(stderr, "# line %d: want %s status %u %s, got %s status %u '%s' '%s'\n", line,
                cn_strerror(want), status, code, cn_strerror(e), je->status, je->code, je->message);
        cn_test_failures++;
        cn_test_current_failed = 1;
    }
}
#define EXPECT(e, je, want, status, code) \
    expect_answer((e), (je), (want), (status), (code), __LINE__)

static cn_client_stats_t stats(cn_client_t *c)
{
    cn_client_stats_t st;
    cn_client_stats(c, &st);
    return st;
}

/* ---- ops ---------------------------------------------------------------------- */

static void test_buckets(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    CN_CHECK_EQ(cn_client_create_bucket(c, "live", &je), 0);
    EXPECT(cn_client_create_bucket(c, "live", &je), &je, CN_E_EXISTS, CN_JAY_ST_CONFLICT,
           "BucketAlreadyExists");
    EXPECT(cn_client_create_bucket(c, "Bad_Name", &je), &je, CN_E_INVALID, CN_JAY_ST_BAD_REQUEST,
           "InvalidBucketName");
    cn_client_bucket_t b;
    CN_CHECK_EQ(cn_client_head_bucket(c, "live", &b, &je), 0);
    CN_CHECK_STR(b.name, "live");
    CN_CHECK(b.bucket_id && b.bucket_id[0]);
    CN_CHECK(b.created_at && strlen(b.created_at) >= 20 && b.created_at[4] == '-');
    CN_CHECK(b.visibility && b.visibility[0]);
    cn_client_bucket_clear(&b);
    EXPECT(cn_client_head_bucket(c, "nothere", &b, &je), &je, CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND,
           "NoSuchBucket");
    CN_CHECK_EQ(cn_client_create_bucket(c, "short-lived", &je), 0);
    cn_client_buckets_t all;
    CN_CHECK_EQ(cn_client_list_buckets(c, &all, &je), 0);
    int seen = 0;
    for (size_t i = 0; i < all.n; i++) {
        if (!strcmp(all.v[i].name, "live") || !strcmp(all.v[i].name, "short-lived")) {
            seen++;
            CN_CHECK(all.v[i].created_at && all.v[i].created_at[0]);
        }
    }
    CN_CHECK_EQ(seen, 2);
    cn_client_buckets_clear(&all);
    CN_CHECK_EQ(cn_client_delete_bucket(c, "short-lived", &je), 0);
    EXPECT(cn_client_delete_bucket(c, "short-lived", &je), &je, CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND,
           "NoSuchBucket");
    /* Every answer, error or not, left the one connection usable. */
    cn_client_stats_t st = stats(c);
    CN_CHECK_EQ(st.dials, 1);
    CN_CHECK_EQ(st.retries, 0);
    cn_client_free(c);
}

static void check_info(const cn_client_object_t *o, const uint8_t *p, size_t n, const char *ctype)
{
    char md5[33], sha[65];
    md5_hex(p, n, md5);
    sha_hex(p, n, sha);
    CN_CHECK_EQ(o->size, (long long)n);
    CN_CHECK_STR(o->checksum, sha);
    CN_CHECK_STR(o->etag, md5);
    CN_CHECK_STR(o->content_type, ctype);
    CN_CHECK(o->last_modified && strlen(o->last_modified) >= 20 && o->last_modified[10] == 'T');
}

/* Upload from a regular file (sendfile on plaintext), from its current offset,
 * and from a pipe; download to an fd. */
static void test_fd_bodies(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    const size_t n = (1 << 20) + 7;
    uint8_t *data = pattern(n, 1);
    int fd = temp_with(data, n);
    int64_t up = 0, down = 0;
    const char *mk[] = { "owner", "Colour" }, *mv[] = { "ann", "blue green" };
    cn_client_put_opts_t po = {
        .content_type = "application/x-test", .meta_keys = mk, .meta_values = mv, .n_meta = 2
    };
    cn_client_body_t body = {
        .len = (int64_t)n, .fd = fd, .progress = note_progress, .progress_ud = &up
    };
    cn_client_written_t w;
    CN_CHECK_EQ(cn_client_put_object(c, "live", "dir/file.bin", &po, &body, &w, &je), 0);
    char md5[33], sha[65];
    md5_hex(data, n, md5);
    sha_hex(data, n, sha);
    CN_CHECK_STR(w.etag, md5);
    CN_CHECK_STR(w.checksum, sha);
    CN_CHECK_EQ(up, (long long)n);
    cn_client_written_clear(&w);

    int out = temp_with(NULL, 0);
    cn_client_sink_t sink = { .fd = out, .progress = note_progress, .progress_ud = &down };
    cn_client_object_t info;
    CN_CHECK_EQ(cn_client_get_object(c, "live", "dir/file.bin", &sink, &info, &je), 0);
    CN_CHECK_EQ(down, (long long)n);
    check_info(&info, data, n, "application/x-test");
    CN_CHECK_EQ(info.n_meta, 2);
    for (size_t i = 0; i < info.n_meta && i < 2; i++) {
        bool k0 = !strcmp(info.meta[i].key, "owner");
        CN_CHECK(k0 || !strcmp(info.meta[i].key, "Colour"));
        CN_CHECK_STR(info.meta[i].value, k0 ? "ann" : "blue green");
    }
    cn_client_object_clear(&info);
    cn_buf_t got = slurp(out);
    CN_CHECK_EQ(got.len, (long long)n);
    CN_CHECK(got.len == n && memcmp(got.data, data, n) == 0);
    cn_buf_free(&got);

    CN_CHECK_EQ(cn_client_head_object(c, "live", "dir/file.bin", &info, &je), 0);
    check_info(&info, data, n, "application/x-test");
    CN_CHECK_EQ(info.n_meta, 2);
    cn_client_object_clear(&info);

    /* From the fd's current offset. */
    lseek(fd, 100, SEEK_SET);
    cn_client_body_t tail = { .len = (int64_t)n - 100, .fd = fd };
    CN_CHECK_EQ(cn_client_put_object(c, "live", "tail", NULL, &tail, &w, &je), 0);
    cn_client_written_clear(&w);
    cn_buf_t t = { 0 };
    CN_CHECK_EQ(get_mem(c, "live", "tail", &t, NULL, &je), 0);
    CN_CHECK(t.len == n - 100 && memcmp(t.data, data + 100, n - 100) == 0);
    cn_buf_free(&t);

    /* From a pipe: not a regular file, so read(2) instead of sendfile. */
    int pp[2];
    CN_CHECK_EQ(pipe(pp), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pp[0]);
        _exit(cn_write_full(pp[1], data, n) == 0 ? 0 : 1);
    }
    close(pp[1]);
    cn_client_body_t piped = { .len = (int64_t)n, .fd = pp[0] };
    CN_CHECK_EQ(cn_client_put_object(c, "live", "piped", NULL, &piped, &w, &je), 0);
    CN_CHECK_STR(w.checksum, sha);
    cn_client_written_clear(&w);
    close(pp[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CN_CHECK_EQ(status, 0);
    t = (cn_buf_t){ 0 };
    CN_CHECK_EQ(get_mem(c, "live", "piped", &t, NULL, &je), 0);
    CN_CHECK(t.len == n && memcmp(t.data, data, n) == 0);
    cn_buf_free(&t);

    close(fd);
    close(out);
    free(data);
    cn_client_free(c);
}

/* Upload from a callback in odd pieces, download to a callback; an empty object;
 * skip_etag. */
static void test_callback_bodies(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    const size_t n = 300001;
    uint8_t *data = pattern(n, 2);
    src_t s = { data, n, 0, 0, 777 };
    cn_client_body_t body = { .len = (int64_t)n, .fd = -1, .read = src_read, .ud = &s };
    cn_client_put_opts_t po = { .content_type = "text/plain" };
    cn_client_written_t w;
    CN_CHECK_EQ(cn_client_put_object(c, "live", "cb", &po, &body, &w, &je), 0);
    cn_client_written_clear(&w);
    cn_buf_t got = { 0 };
    cn_client_object_t info;
    CN_CHECK_EQ(get_mem(c, "live", "cb", &got, &info, &je), 0);
    CN_CHECK(got.len == n && memcmp(got.data, data, n) == 0);
    check_info(&info, data, n, "text/plain");
    CN_CHECK_EQ(info.n_meta, 0);
    cn_client_object_clear(&info);
    cn_buf_free(&got);

    /* Empty: no body at all. */
    cn_client_body_t none = { .len = 0, .fd = -1 };
    CN_CHECK_EQ(cn_client_put_object(c, "live", "empty", NULL, &none, &w, &je), 0);
    CN_CHECK_STR(w.etag, "d41d8cd98f00b204e9800998ecf8427e");
    cn_client_written_clear(&w);
    CN_CHECK_EQ(cn_client_put_object(c, "live", "empty2", NULL, NULL, &w, &je), 0);
    cn_client_written_clear(&w);
    got = (cn_buf_t){ 0 };
    CN_CHECK_EQ(get_mem(c, "live", "empty", &got, &info, &je), 0);
    CN_CHECK_EQ(got.len, 0);
    CN_CHECK_EQ(info.size, 0);
    cn_client_object_clear(&info);

    /* skip_etag: the server does not compute the MD5; the checksum stays. */
    s = (src_t){ data, 1000, 0, 0, 1000 };
    cn_client_body_t small = { .len = 1000, .fd = -1, .read = src_read, .ud = &s };
    cn_client_put_opts_t skip = { .skip_etag = true };
    CN_CHECK_EQ(cn_client_put_object(c, "live", "noetag", &skip, &small, &w, &je), 0);
    char md5[33], sha[65];
    md5_hex(data, 1000, md5);
    sha_hex(data, 1000, sha);
    CN_CHECK(w.etag && strcmp(w.etag, md5) != 0);
    CN_CHECK_STR(w.checksum, sha);
    cn_client_written_clear(&w);
    free(data);
    cn_client_free(c);
}

static void range(cn_client_t *c, const uint8_t *data, int64_t off, int64_t len, int64_t want_off,
                  int64_t want_len, int line)
{
    cn_buf_t got = { 0 };
    cn_client_object_t info;
    int64_t served = -1;
    cn_jay_error_t je;
    cn_client_sink_t sink = { .fd = -1, .write = buf_write, .ud = &got };
    cn_err_t e = cn_client_get_range(c, "live", "ranged", off, len, &sink, &info, &served, &je);
    if (e || served != want_len || (int64_t)got.len != want_len || info.size != 10000 ||
        memcmp(got.data ? got.data : (uint8_t *)"", data + want_off, (size_t)want_len) != 0) {
        fprintf(stderr, "# line %d: range(%lld, %lld): %s served %lld got %zu size %lld\n", line,
                (long long)off, (long long)len, cn_strerror(e), (long long)served, got.len,
                (long long)info.size);
        cn_test_failures++;
        cn_test_current_failed = 1;
    }
    cn_client_object_clear(&info);
    cn_buf_free(&got);
}

static void test_ranges(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    uint8_t *data = pattern(10000, 3);
    cn_client_written_t w;
    CN_CHECK_EQ(put_mem(c, "live", "ranged", data, 10000, &w, &je), 0);
    cn_client_written_clear(&w);
    range(c, data, 0, 10, 0, 10, __LINE__);
    range(c, data, 1234, 4000, 1234, 4000, __LINE__);
    range(c, data, 9990, 100, 9990, 10, __LINE__); /* past the end clamps */
    range(c, data, 500, 0, 500, 9500, __LINE__);   /* <= 0: to the end */
    range(c, data, 500, -7, 500, 9500, __LINE__);
    range(c, data, 9999, 1, 9999, 1, __LINE__);
    /* To an fd as well. */
    int out = temp_with(NULL, 0);
    cn_client_sink_t sink = { .fd = out };
    int64_t served = 0;
    CN_CHECK_EQ(cn_client_get_range(c, "live", "ranged", 2000, 3000, &sink, NULL, &served, &je), 0);
    CN_CHECK_EQ(served, 3000);
    cn_buf_t got = slurp(out);
    CN_CHECK(got.len == 3000 && memcmp(got.data, data + 2000, 3000) == 0);
    cn_buf_free(&got);
    close(out);

    cn_buf_t none = { 0 };
    cn_client_sink_t nsink = { .fd = -1, .write = buf_write, .ud = &none };
    cn_client_object_t info;
    EXPECT(cn_client_get_range(c, "live", "ranged", 10000, 1, &nsink, &info, NULL, &je), &je,
           CN_E_RANGE, CN_JAY_ST_BAD_REQUEST, "InvalidRange");
    EXPECT(cn_client_get_range(c, "live", "ranged", 50000, 0, &nsink, &info, NULL, &je), &je,
           CN_E_RANGE, CN_JAY_ST_BAD_REQUEST, "InvalidRange");
    CN_CHECK_EQ(cn_client_put_object(c, "live", "zero", NULL, NULL, &w, &je), 0);
    cn_client_written_clear(&w);
    EXPECT(cn_client_get_range(c, "live", "zero", 0, 0, &nsink, &info, NULL, &je), &je, CN_E_RANGE,
           CN_JAY_ST_BAD_REQUEST, "InvalidRange");
    EXPECT(cn_client_get_range(c, "live", "missing", 0, 1, &nsink, &info, NULL, &je), &je,
           CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND, "NoSuchKey");
    CN_CHECK_EQ(none.len, 0); /* an error answer writes nothing to the sink */
    CN_CHECK_EQ(stats(c).dials, 1);
    free(data);
    cn_client_free(c);
}

static void test_listing(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_create_bucket(c, "listing", &je), 0);
    static const char *const keys[] = { "a/1", "a/2", "a/b/3", "b/4", "c" };
    for (size_t i = 0; i < 5; i++) {
        cn_client_written_t w;
        CN_CHECK_EQ(put_mem(c, "listing", keys[i], keys[i], strlen(keys[i]), &w, &je), 0);
        cn_client_written_clear(&w);
    }
    cn_client_listing_t l;
    CN_CHECK_EQ(cn_client_list_objects(c, "listing", NULL, &l, &je), 0);
    CN_CHECK_EQ(l.n_objects, 5);
    CN_CHECK_EQ(l.n_prefixes, 0);
    CN_CHECK(!l.is_truncated);
    for (size_t i = 0; i < l.n_objects && i < 5; i++) {
        CN_CHECK_STR(l.objects[i].key, keys[i]);
        CN_CHECK_EQ(l.objects[i].size, (long long)strlen(keys[i]));
        char sha[65];
        sha_hex(keys[i], strlen(keys[i]), sha);
        CN_CHECK_STR(l.objects[i].checksum, sha);
        CN_CHECK(l.objects[i].etag && l.objects[i].etag[0]);
        CN_CHECK(l.objects[i].last_modified && l.objects[i].last_modified[0]);
    }
    cn_client_listing_clear(&l);

    cn_client_list_opts_t o = { .delimiter = "/" };
    CN_CHECK_EQ(cn_client_list_objects(c, "listing", &o, &l, &je), 0);
    CN_CHECK_EQ(l.n_objects, 1);
    if (l.n_objects == 1)
        CN_CHECK_STR(l.objects[0].key, "c");
    CN_CHECK_EQ(l.n_prefixes, 2);
    if (l.n_prefixes == 2) {
        CN_CHECK_STR(l.prefixes[0], "a/");
        CN_CHECK_STR(l.prefixes[1], "b/");
    }
    cn_client_listing_clear(&l);

    o = (cn_client_list_opts_t){ .prefix = "a/", .delimiter = "/" };
    CN_CHECK_EQ(cn_client_list_objects(c, "listing", &o, &l, &je), 0);
    CN_CHECK_EQ(l.n_objects, 2);
    CN_CHECK_EQ(l.n_prefixes, 1);
    if (l.n_prefixes == 1)
        CN_CHECK_STR(l.prefixes[0], "a/b/");
    cn_client_listing_clear(&l);

    /* Pages of two, followed through next_start_after. */
    const char *after = NULL;
    char *hold = NULL;
    size_t total = 0;
    int pages = 0;
    for (;;) {
        o = (cn_client_list_opts_t){ .start_after = after, .max_keys = 2 };
        CN_CHECK_EQ(cn_client_list_objects(c, "listing", &o, &l, &je), 0);
        pages++;
        for (size_t i = 0; i < l.n_objects; i++, total++)
            if (total < 5)
                CN_CHECK_STR(l.objects[i].key, keys[total]);
        bool more = l.is_truncated;
        if (more) {
            CN_CHECK(l.next_start_after && l.next_start_after[0]);
            free(hold);
            hold = strdup(l.next_start_after);
            after = hold;
        }
        cn_client_listing_clear(&l);
        if (!more || pages > 5)
            break;
    }
    free(hold);
    CN_CHECK_EQ(total, 5);
    CN_CHECK_EQ(pages, 3);

    o = (cn_client_list_opts_t){ .start_after = "a/b/3" };
    CN_CHECK_EQ(cn_client_list_objects(c, "listing", &o, &l, &je), 0);
    CN_CHECK_EQ(l.n_objects, 2);
    cn_client_listing_clear(&l);
    o = (cn_client_list_opts_t){ .max_keys = -1 };
    EXPECT(cn_client_list_objects(c, "listing", &o, &l, &je), &je, CN_E_INVALID,
           CN_JAY_ST_BAD_REQUEST, "InvalidArgument");
    EXPECT(cn_client_list_objects(c, "nothere", NULL, &l, &je), &je, CN_E_NOT_FOUND,
           CN_JAY_ST_NOT_FOUND, "NoSuchBucket");
    EXPECT(cn_client_delete_bucket(c, "listing", &je), &je, CN_E_NOT_EMPTY, CN_JAY_ST_CONFLICT,
           "BucketNotEmpty");
    for (size_t i = 0; i < 5; i++)
        CN_CHECK_EQ(cn_client_delete_object(c, "listing", keys[i], &je), 0);
    EXPECT(cn_client_delete_object(c, "listing", "c", &je), &je, CN_E_NOT_FOUND,
           CN_JAY_ST_NOT_FOUND, "NoSuchKey");
    CN_CHECK_EQ(cn_client_delete_bucket(c, "listing", &je), 0);
    cn_client_free(c);
}

static void test_copy(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_create_bucket(c, "copies", &je), 0);
    cn_client_written_t w;
    /* dir/file.bin from test_fd_bodies carries a content type and metadata. */
    CN_CHECK_EQ(cn_client_copy_object(c, "live", "dir/file.bin", "copies", "x/y", &w, &je), 0);
    cn_client_object_t src, dst;
    CN_CHECK_EQ(cn_client_head_object(c, "live", "dir/file.bin", &src, &je), 0);
    CN_CHECK_STR(w.etag, src.etag);
    CN_CHECK_STR(w.checksum, src.checksum);
    CN_CHECK_EQ(w.size, src.size);
    CN_CHECK(w.last_modified && w.last_modified[0]);
    cn_client_written_clear(&w);
    CN_CHECK_EQ(cn_client_head_object(c, "copies", "x/y", &dst, &je), 0);
    CN_CHECK_STR(dst.content_type, "application/x-test");
    CN_CHECK_STR(dst.checksum, src.checksum);
    CN_CHECK_EQ(dst.n_meta, 2);
    cn_client_object_clear(&src);
    cn_client_object_clear(&dst);

    EXPECT(cn_client_copy_object(c, "live", "missing", "copies", "z", &w, &je), &je, CN_E_NOT_FOUND,
           CN_JAY_ST_NOT_FOUND, "NoSuchKey");
    CN_CHECK(!strncmp(je.message, "source:", 7));
    EXPECT(cn_client_copy_object(c, "live", "cb", "nobucket", "z", &w, &je), &je, CN_E_NOT_FOUND,
           CN_JAY_ST_NOT_FOUND, "NoSuchBucket");
    CN_CHECK(!strncmp(je.message, "destination:", 12));
    cn_client_t *ro = client(g_token_ro, 0);
    EXPECT(cn_client_copy_object(ro, "live", "cb", "copies", "z", &w, &je), &je, CN_E_DENIED,
           CN_JAY_ST_FORBIDDEN, "AccessDenied");
    CN_CHECK(!strncmp(je.message, "destination:", 12));
    cn_client_free(ro);
    cn_client_free(c);
}

static void test_multipart(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    const size_t n1 = 5 << 20, n2 = 1234;
    uint8_t *data = pattern(n1 + n2, 4);
    char *uid = NULL;
    CN_CHECK_EQ(cn_client_create_multipart(c, "live", "mp", "video/mp4", &uid, &je), 0);
    CN_CHECK(uid && uid[0]);
    if (!uid)
        goto done;
    /* Part 2 first: parts may arrive in any order. */
    src_t s = { data + n1, n2, 0, 0, 100 };
    cn_client_body_t b2 = { .len = (int64_t)n2, .fd = -1, .read = src_read, .ud = &s };
    cn_client_written_t w;
    CN_CHECK_EQ(cn_client_upload_part(c, "live", "mp", uid, 2, &b2, &w, &je), 0);
    char md5[2][33], sha[65];
    md5_hex(data + n1, n2, md5[1]);
    CN_CHECK_STR(w.etag, md5[1]);
    cn_client_written_clear(&w);
    int fd = temp_with(data, n1);
    cn_client_body_t b1 = { .len = (int64_t)n1, .fd = fd };
    CN_CHECK_EQ(cn_client_upload_part(c, "live", "mp", uid, 1, &b1, &w, &je), 0);
    md5_hex(data, n1, md5[0]);
    CN_CHECK_STR(w.etag, md5[0]);
    sha_hex(data, n1, sha);
    CN_CHECK_STR(w.checksum, sha);
    cn_client_written_clear(&w);
    close(fd);

    cn_client_parts_t parts;
    CN_CHECK_EQ(cn_client_list_parts(c, "live", "mp", uid, &parts, &je), 0);
    CN_CHECK_EQ(parts.n, 2);
    for (size_t i = 0; i < parts.n && i < 2; i++) {
        CN_CHECK_EQ(parts.v[i].part_number, (int)i + 1);
        CN_CHECK_EQ(parts.v[i].size, (long long)(i ? n2 : n1));
        CN_CHECK_STR(parts.v[i].etag, md5[i]);
    }
    cn_client_parts_clear(&parts);
    EXPECT(cn_client_head_object(c, "live", "mp", &(cn_client_object_t){ 0 }, &je), &je,
           CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND, "NoSuchKey"); /* not visible yet */

    int32_t list[] = { 1, 2 };
    CN_CHECK_EQ(cn_client_complete_multipart(c, "live", "mp", uid, list, 2, &w, &je), 0);
    /* The etag as S3 computes it: the MD5 of the parts' binary MD5s, "-2". */
    uint8_t cat[32];
    cn_hex_decode(md5[0], 32, cat, 16);
    cn_hex_decode(md5[1], 32, cat + 16, 16);
    char want[40];
    md5_hex(cat, 32, want);
    strcat(want, "-2");
    CN_CHECK_STR(w.etag, want);
    sha_hex(data, n1 + n2, sha);
    CN_CHECK_STR(w.checksum, sha);
    CN_CHECK_EQ(w.size, (long long)(n1 + n2));
    cn_client_written_clear(&w);
    cn_buf_t got = { 0 };
    cn_client_object_t info;
    CN_CHECK_EQ(get_mem(c, "live", "mp", &got, &info, &je), 0);
    CN_CHECK(got.len == n1 + n2 && memcmp(got.data, data, n1 + n2) == 0);
    CN_CHECK_STR(info.etag, want);
    CN_CHECK_STR(info.content_type, "video/mp4");
    cn_client_object_clear(&info);
    cn_buf_free(&got);
    /* A completed upload is gone. */
    EXPECT(cn_client_complete_multipart(c, "live", "mp", uid, list, 2, &w, &je), &je,
           CN_E_NO_UPLOAD, CN_JAY_ST_NOT_FOUND, "NoSuchUpload");
    free(uid);

    /* Abort: nothing becomes visible and the upload is gone. */
    CN_CHECK_EQ(cn_client_create_multipart(c, "live", "mp-abort", NULL, &uid, &je), 0);
    s = (src_t){ data, 1000, 0, 0, 1000 };
    cn_client_body_t b3 = { .len = 1000, .fd = -1, .read = src_read, .ud = &s };
    CN_CHECK_EQ(cn_client_upload_part(c, "live", "mp-abort", uid, 1, &b3, &w, &je), 0);
    cn_client_written_clear(&w);
    CN_CHECK_EQ(cn_client_abort_multipart(c, "live", "mp-abort", uid, &je), 0);
    EXPECT(cn_client_list_parts(c, "live", "mp-abort", uid, &parts, &je), &je, CN_E_NO_UPLOAD,
           CN_JAY_ST_NOT_FOUND, "NoSuchUpload");
    s.off = 0;
    EXPECT(cn_client_upload_part(c, "live", "mp-abort", uid, 2, &b3, &w, &je), &je, CN_E_NO_UPLOAD,
           CN_JAY_ST_NOT_FOUND, "NoSuchUpload");
    EXPECT(cn_client_abort_multipart(c, "live", "mp-abort", uid, &je), &je, CN_E_NO_UPLOAD,
           CN_JAY_ST_NOT_FOUND, "NoSuchUpload");
    EXPECT(cn_client_head_object(c, "live", "mp-abort", &(cn_client_object_t){ 0 }, &je), &je,
           CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND, "NoSuchKey");
    free(uid);
    EXPECT(cn_client_list_parts(c, "live", "mp", "0123456789abcdef0123456789abcdef", &parts, &je),
           &je, CN_E_NO_UPLOAD, CN_JAY_ST_NOT_FOUND, "NoSuchUpload");
done:
    free(data);
    cn_client_free(c);
}

static void test_errors(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    cn_client_written_t w;
    cn_buf_t got = { 0 };
    EXPECT(get_mem(c, "live", "nokey", &got, NULL, &je), &je, CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND,
           "NoSuchKey");
    EXPECT(get_mem(c, "nobucket", "k", &got, NULL, &je), &je, CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND,
           "NoSuchBucket");
    EXPECT(put_mem(c, "live", "", "x", 1, &w, &je), &je, CN_E_INVALID, CN_JAY_ST_BAD_REQUEST,
           "InvalidArgument");
    /* CAIRN_TEST_MAX_OBJECT is the server's JAY_MAX_OBJECT_SIZE. */
    const char *maxs = getenv("CAIRN_TEST_MAX_OBJECT");
    if (maxs) {
        size_t max = (size_t)strtoull(maxs, NULL, 10);
        uint8_t *big = pattern(max + 1, 5);
        EXPECT(put_mem(c, "live", "toobig", big, max + 1, &w, &je), &je, CN_E_TOO_LARGE,
               CN_JAY_ST_BAD_REQUEST, "EntityTooLarge");
        free(big);
        CN_CHECK_EQ(cn_client_ping(c, &je), 0);
        EXPECT(cn_client_head_object(c, "live", "toobig", &(cn_client_object_t){ 0 }, &je), &je,
               CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND, "NoSuchKey");
    }
    /* A source that ends early fails the call, costs the connection, and
     * leaves no object behind. */
    uint8_t *data = pattern(100000, 6);
    src_t s = { data, 100000, 0, 50000, 4096 };
    cn_client_body_t body = { .len = 100000, .fd = -1, .read = src_read, .ud = &s };
    cn_client_stats_t before = stats(c);
    CN_CHECK_EQ(cn_client_put_object(c, "live", "short", NULL, &body, &w, &je),
                CN_E_LENGTH_MISMATCH);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    CN_CHECK_EQ(stats(c).dials, before.dials + 1);
    usleep(200000);
    EXPECT(cn_client_head_object(c, "live", "short", &(cn_client_object_t){ 0 }, &je), &je,
           CN_E_NOT_FOUND, CN_JAY_ST_NOT_FOUND, "NoSuchKey");
    /* Refused by the encoder before anything is sent. */
    char *huge = malloc(70000);
    memset(huge, 'k', 69999);
    huge[69999] = '\0';
    before = stats(c);
    CN_CHECK_EQ(cn_client_head_object(c, "live", huge, &(cn_client_object_t){ 0 }, &je),
                CN_E_LIMIT);
    CN_CHECK_EQ(stats(c).dials + stats(c).reuses, before.dials + before.reuses);
    free(huge);
    free(data);
    cn_client_free(c);

    /* A token with object:get only. */
    cn_client_t *ro = client(g_token_ro, 0);
    CN_CHECK_EQ(get_mem(ro, "live", "cb", &got, NULL, &je), 0);
    CN_CHECK_EQ(got.len, 300001);
    cn_buf_free(&got);
    EXPECT(put_mem(ro, "live", "k", "x", 1, &w, &je), &je, CN_E_DENIED, CN_JAY_ST_FORBIDDEN,
           "AccessDenied");
    EXPECT(cn_client_delete_object(ro, "live", "cb", &je), &je, CN_E_DENIED, CN_JAY_ST_FORBIDDEN,
           "AccessDenied");
    EXPECT(cn_client_create_bucket(ro, "rofail", &je), &je, CN_E_DENIED, CN_JAY_ST_FORBIDDEN,
           "AccessDenied");
    EXPECT(cn_client_list_objects(ro, "live", NULL, &(cn_client_listing_t){ 0 }, &je), &je,
           CN_E_DENIED, CN_JAY_ST_FORBIDDEN, "AccessDenied");
    CN_CHECK_EQ(stats(ro).dials, 1);
    cn_client_free(ro);

    /* The handshake refuses a wrong secret: status 0, hs_status AuthFailed. */
    char bad[256];
    snprintf(bad, sizeof bad, "%.*s:wrong-secret", (int)strcspn(g_token, ":"), g_token);
    cn_client_t *b = client(bad, 0);
    CN_CHECK_EQ(cn_client_ping(b, &je), CN_E_AUTH);
    CN_CHECK_EQ(je.hs_status, CN_JAY_HS_AUTH_FAILED);
    CN_CHECK_EQ(je.status, 0);
    CN_CHECK(strstr(je.message, "wrong-secret") == NULL);
    cn_client_free(b);
    b = client("not-shaped-like-a-token", 0);
    CN_CHECK_EQ(cn_client_ping(b, &je), CN_E_AUTH);
    CN_CHECK_EQ(je.hs_status, CN_JAY_HS_AUTH_FAILED);
    cn_client_free(b);

    /* Nothing listens: a transport error, not a server answer. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    bind(lfd, (struct sockaddr *)&a, sizeof a);
    getsockname(lfd, (struct sockaddr *)&a, &al);
    close(lfd);
    char ep[64];
    snprintf(ep, sizeof ep, "127.0.0.1:%u", ntohs(a.sin_port));
    cn_client_cfg_t cfg = { .endpoint = ep, .token = g_token };
    CN_CHECK_EQ(cn_client_new(&cfg, &b, &je), 0);
    CN_CHECK_EQ(cn_client_ping(b, &je), -ECONNREFUSED);
    CN_CHECK_EQ(je.status, 0);
    CN_CHECK_EQ(je.hs_status, 0);
    CN_CHECK(strstr(je.message, ep) != NULL);
    cn_client_free(b);
}

/* Sequential calls share one connection. */
static void test_reuse(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    for (int i = 0; i < 20; i++) {
        cn_client_object_t info;
        CN_CHECK_EQ(cn_client_head_object(c, "live", "cb", &info, &je), 0);
        cn_client_object_clear(&info);
    }
    cn_client_stats_t st = stats(c);
    CN_CHECK_EQ(st.dials, 1);
    CN_CHECK_EQ(st.reuses, 19);
    CN_CHECK_EQ(st.retries + st.idle_discards + st.dead_discards, 0);
    cn_client_free(c);
}

typedef struct worker {
    cn_client_t *c;
    int id;
    int failures;
} worker_t;

static void *work(void *arg)
{
    worker_t *wk = arg;
    uint8_t *data = pattern(20000, 100 + (uint32_t)wk->id);
    for (int i = 0; i < 10; i++) {
        char key[32];
        snprintf(key, sizeof key, "conc/%d/%d", wk->id, i);
        cn_jay_error_t je;
        cn_client_written_t w;
        cn_buf_t got = { 0 };
        if (put_mem(wk->c, "live", key, data, 20000, &w, &je) != 0)
            wk->failures++;
        cn_client_written_clear(&w);
        if (get_mem(wk->c, "live", key, &got, NULL, &je) != 0 || got.len != 20000 ||
            memcmp(got.data, data, 20000) != 0)
            wk->failures++;
        cn_buf_free(&got);
    }
    free(data);
    return NULL;
}

static void test_concurrent(void)
{
    cn_client_t *c = client(g_token, 0);
    worker_t wk[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        wk[i] = (worker_t){ c, i, 0 };
        pthread_create(&th[i], NULL, work, &wk[i]);
    }
    int failures = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        failures += wk[i].failures;
    }
    CN_CHECK_EQ(failures, 0);
    cn_client_stats_t st = stats(c);
    CN_CHECK(st.dials >= 1 && st.dials <= 8);
    CN_CHECK_EQ(st.dials + st.reuses, 160);
    cn_client_free(c);
}

/* ---- the pool against the server's lifecycle ------------------------------------ */

static void test_idle_discard(void)
{
    cn_client_t *c = client(g_token, 300);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0); /* within the window: reused */
    usleep(450000);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0); /* idled out: discarded, redialled */
    cn_client_stats_t st = stats(c);
    CN_CHECK_EQ(st.dials, 2);
    CN_CHECK_EQ(st.reuses, 1);
    CN_CHECK_EQ(st.idle_discards, 1);
    CN_CHECK_EQ(st.retries, 0);
    cn_client_free(c);

    /* The default window is the contract's 45 s. */
    c = client(g_token, 0);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    usleep(450000);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    CN_CHECK_EQ(stats(c).idle_discards, 0);
    CN_CHECK_EQ(stats(c).reuses, 1);
    cn_client_free(c);
}

static void test_reaped(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_create_bucket(c, "reaped", &je), 0);
    usleep(800000); /* the server's 300 ms idle timeout closes it */
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    cn_client_stats_t st = stats(c);
    CN_CHECK_EQ(st.dials, 2);
    CN_CHECK_EQ(st.dead_discards, 1);
    CN_CHECK_EQ(st.retries, 0);
    usleep(800000);
    /* A request with a body is never retried, so it matters most that a dead
     * pooled connection is noticed before anything is sent. */
    cn_client_written_t w;
    CN_CHECK_EQ(put_mem(c, "reaped", "k", "hello", 5, &w, &je), 0);
    cn_client_written_clear(&w);
    st = stats(c);
    CN_CHECK_EQ(st.dials, 3);
    CN_CHECK_EQ(st.dead_discards, 2);
    CN_CHECK_EQ(st.retries, 0);
    cn_client_free(c);
}

/* ---- whole-file transfers (cn_client_put_file, cn_client_get_to_fd) ------------- */

static _Atomic int64_t g_xfer_max;

static void xfer_progress(void *ud, int64_t bytes)
{
    (void)ud;
    int64_t cur = atomic_load(&g_xfer_max);
    while (bytes > cur && !atomic_compare_exchange_weak(&g_xfer_max, &cur, bytes))
        ;
}

/* Downloads bucket/key with cn_client_get_to_fd and compares it with p[0, n). */
static void verified_get(cn_client_t *c, const char *key, const uint8_t *p, size_t n)
{
    int fd = temp_with(NULL, 0);
    cn_client_download_t dl;
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_get_to_fd(c, "xfer", key, fd, NULL, &dl, &je), 0);
    char sha[65];
    sha_hex(p, n, sha);
    CN_CHECK_STR(dl.sha256, sha);
    CN_CHECK_STR(dl.info.checksum, sha);
    CN_CHECK_EQ(dl.bytes, (int64_t)n);
    CN_CHECK(!dl.local);
    cn_client_download_clear(&dl);
    cn_buf_t b = slurp(fd);
    CN_CHECK_EQ(b.len, n);
    CN_CHECK(b.len == n && (n == 0 || memcmp(b.data, p, n) == 0));
    cn_buf_free(&b);
    close(fd);
}

/* Uploads p[0, n) from a temporary file (size < 0: as a stream) and checks
 * the answer; returns the part count. */
static int32_t put_file(cn_client_t *c, const char *key, const uint8_t *p, size_t n, int64_t size,
                        int64_t part_size, int jobs)
{
    int fd = temp_with(p, n);
    atomic_store(&g_xfer_max, 0);
    cn_client_transfer_opts_t to = { .part_size = part_size,
                                     .jobs = jobs,
                                     .progress = xfer_progress };
    cn_client_put_result_t r;
    cn_jay_error_t je;
    cn_err_t e = cn_client_put_file(c, "xfer", key, fd, size, &to, &r, &je);
    CN_CHECK_EQ(e, 0);
    if (e)
        fprintf(stderr, "# put_file %s: %s %s %s\n", key, cn_strerror(e), je.code, je.message);
    char sha[65];
    sha_hex(p, n, sha);
    CN_CHECK_STR(r.written.checksum, sha);
    CN_CHECK_EQ(r.written.size, (int64_t)n);
    CN_CHECK_EQ(atomic_load(&g_xfer_max), (int64_t)n);
    CN_CHECK_EQ(r.multipart, r.n_parts > 0);
    int32_t parts = r.n_parts;
    cn_client_put_result_clear(&r);
    close(fd);
    verified_get(c, key, p, n);
    return parts;
}

static void test_transfer(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_create_bucket(c, "xfer", &je), 0);
    const int64_t ps = CN_CLIENT_MIN_PART_SIZE;
    const size_t big = (size_t)(2 * ps + 12345), small = 1000;
    uint8_t *data = pattern(big, 7);

    /* Sized: above the part size, parallel parts; up to it, one PutObject. */
    CN_CHECK_EQ(put_file(c, "big", data, big, (int64_t)big, ps, 3), 3);
    CN_CHECK_EQ(put_file(c, "one-job", data, big, (int64_t)big, ps, 1), 3);
    CN_CHECK_EQ(put_file(c, "small", data, small, (int64_t)small, ps, 0), 0);
    CN_CHECK_EQ(put_file(c, "exact", data, (size_t)ps, ps, ps, 4), 0);
    /* A stream: sequential parts, or one PutObject when it fits one part. */
    CN_CHECK_EQ(put_file(c, "stream", data, big, -1, ps, 0), 3);
    CN_CHECK_EQ(put_file(c, "stream-small", data, small, -1, 0, 0), 0);
    CN_CHECK_EQ(put_file(c, "stream-exact", data, (size_t)ps, -1, ps, 0), 1);
    CN_CHECK_EQ(put_file(c, "empty", data, 0, -1, 0, 0), 0);

    /* Bad options, before anything is sent. */
    cn_client_put_result_t r;
    cn_client_transfer_opts_t bad = { .part_size = ps - 1 };
    CN_CHECK_EQ(cn_client_put_file(c, "xfer", "bad", 0, 10, &bad, &r, &je), CN_E_INVALID);
    bad = (cn_client_transfer_opts_t){ .jobs = CN_CLIENT_MAX_JOBS + 1 };
    CN_CHECK_EQ(cn_client_put_file(c, "xfer", "bad", 0, 10, &bad, &r, &je), CN_E_INVALID);

    /* A missing bucket fails at the step that met it. */
    int fd = temp_with(data, big);
    cn_client_transfer_opts_t to = { .part_size = ps };
    CN_CHECK_EQ(cn_client_put_file(c, "no-such-bucket", "k", fd, (int64_t)big, &to, &r, &je),
                CN_E_NOT_FOUND);
    CN_CHECK(r.multipart);
    CN_CHECK_EQ(r.stage, CN_CLIENT_PUT_STAGE_CREATE);
    CN_CHECK_STR(je.code, "NoSuchBucket");
    CN_CHECK_EQ(cn_client_put_file(c, "no-such-bucket", "k", fd, 10, &to, &r, &je), CN_E_NOT_FOUND);
    CN_CHECK(!r.multipart);
    CN_CHECK_EQ(r.stage, CN_CLIENT_PUT_STAGE_PUT);
    /* A file shorter than its stated size. */
    CN_CHECK_EQ(cn_client_put_file(c, "xfer", "short", fd, (int64_t)big + 10, &to, &r, &je),
                CN_E_LENGTH_MISMATCH);
    CN_CHECK_EQ(r.stage, CN_CLIENT_PUT_STAGE_PART);
    close(fd);

    /* Verified get: a missing key; a sink that cannot be written. */
    cn_client_download_t dl;
    CN_CHECK_EQ(cn_client_get_to_fd(c, "xfer", "nope", 1, NULL, &dl, &je), CN_E_NOT_FOUND);
    CN_CHECK(!dl.local);
    CN_CHECK_STR(je.code, "NoSuchKey");
    cn_client_download_clear(&dl);
    int ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CN_CHECK_EQ(cn_client_get_to_fd(c, "xfer", "small", ro, NULL, &dl, &je), -EBADF);
    CN_CHECK(dl.local);
    cn_client_download_clear(&dl);
    close(ro);
    free(data);
    cn_client_free(c);
}

/* Asks the driver to arm the proxy and waits for its go-ahead. */
static void arm(const char *what)
{
    printf("# ARM %s\n", what);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) {
        fprintf(stderr, "# the driver went away\n");
        exit(2);
    }
}

static void test_retry(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_create_bucket(c, "retry", &je), 0);

    /* The pooled connection dies with the request in flight, before any
     * response byte: one retry on a new connection, and it succeeds. */
    arm("drop 1");
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    cn_client_stats_t st = stats(c);
    CN_CHECK_EQ(st.retries, 1);
    CN_CHECK_EQ(st.dials, 2);
    cn_client_object_t info;
    cn_client_bucket_t bk;
    arm("drop 1");
    CN_CHECK_EQ(cn_client_head_bucket(c, "retry", &bk, &je), 0);
    CN_CHECK_STR(bk.name, "retry");
    cn_client_bucket_clear(&bk);
    CN_CHECK_EQ(stats(c).retries, 2);

    /* Only one retry: the retried request is dropped too, and the call fails. */
    arm("drop 2");
    cn_err_t e = cn_client_ping(c, &je);
    CN_CHECK(e == CN_E_CLOSED || e == -ECONNRESET || e == -EPIPE);
    CN_CHECK_EQ(je.status, 0);
    CN_CHECK_EQ(stats(c).retries, 3);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);

    /* A request with a body is never retried. */
    arm("drop 1");
    st = stats(c);
    cn_client_written_t w;
    e = put_mem(c, "retry", "body", "0123456789", 10, &w, &je);
    CN_CHECK(e == CN_E_CLOSED || e == -ECONNRESET || e == -EPIPE);
    CN_CHECK_EQ(stats(c).retries, st.retries);
    CN_CHECK_EQ(stats(c).dials, st.dials);
    EXPECT(cn_client_head_object(c, "retry", "body", &info, &je), &je, CN_E_NOT_FOUND,
           CN_JAY_ST_NOT_FOUND, "NoSuchKey");

    /* A failure after a response byte was read is not retried either. */
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    arm("cut 1");
    st = stats(c);
    e = cn_client_head_bucket(c, "retry", &bk, &je);
    CN_CHECK(e == CN_E_CLOSED || e == -ECONNRESET);
    CN_CHECK_EQ(stats(c).retries, st.retries);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    cn_client_free(c);
}

/* Bodies of whole 1 MiB pieces and over: the client reads them straight from
 * the socket in 1 MiB reads, never past the body's end, so the frame after
 * it (here a HEAD's, then a ping's) reads as before. */
static void test_large_bodies_in_pieces(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    const size_t sizes[] = { 2u << 20, (3u << 20) + 65535, (1u << 20) + 65536 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        uint8_t *data = pattern(n, 20 + (uint32_t)i);
        cn_client_written_t w;
        CN_CHECK_EQ(put_mem(c, "live", "pieces", data, n, &w, &je), 0);
        cn_client_written_clear(&w);
        cn_buf_t got = { 0 };
        cn_client_object_t info;
        CN_CHECK_EQ(get_mem(c, "live", "pieces", &got, &info, &je), 0);
        CN_CHECK(got.len == n && memcmp(got.data, data, n) == 0);
        cn_client_object_clear(&info);
        cn_buf_free(&got);
        CN_CHECK_EQ(cn_client_head_object(c, "live", "pieces", &info, &je), 0);
        CN_CHECK_EQ(info.size, (long long)n);
        cn_client_object_clear(&info);
        CN_CHECK_EQ(cn_client_ping(c, &je), 0);
        free(data);
    }
    cn_client_stats_t st = stats(c);
    CN_CHECK_EQ(st.dials, 1); /* one connection throughout: never out of step */
    cn_client_free(c);
}

static void test_restart(void)
{
    cn_client_t *c = client(g_token, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    arm("restart");
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    cn_client_stats_t st = stats(c);
    CN_CHECK_EQ(st.dials, 2);
    CN_CHECK_EQ(st.dead_discards + st.retries, 1);
    cn_client_free(c);
}

int main(int argc, char **argv)
{
    static const cn_test_case_t ops[] = {
        CN_TEST(test_buckets),
        CN_TEST(test_fd_bodies),
        CN_TEST(test_callback_bodies),
        CN_TEST(test_ranges),
        CN_TEST(test_listing),
        CN_TEST(test_copy),
        CN_TEST(test_multipart),
        CN_TEST(test_errors),
        CN_TEST(test_reuse),
        CN_TEST(test_concurrent),
        CN_TEST(test_large_bodies_in_pieces),
    };
    static const cn_test_case_t idle[] = { CN_TEST(test_idle_discard) };
    static const cn_test_case_t reaped[] = { CN_TEST(test_reaped) };
    static const cn_test_case_t retry[] = { CN_TEST(test_retry) };
    static const cn_test_case_t restart[] = { CN_TEST(test_restart) };
    static const cn_test_case_t transfer[] = { CN_TEST(test_transfer) };
    g_endpoint = getenv("CAIRN_ENDPOINT");
    g_token = getenv("CAIRN_TOKEN");
    g_token_ro = getenv("CAIRN_TOKEN_RO");
    const char *mode = argc > 1 ? argv[1] : "ops";
    if (!g_endpoint || !g_token || (!strcmp(mode, "ops") && !g_token_ro)) {
        fprintf(stderr, "usage: CAIRN_ENDPOINT=H:P CAIRN_TOKEN=ID:SECRET CAIRN_TOKEN_RO=... "
                        "client_live [ops|idle|reaped|retry|restart|transfer]\n");
        return 2;
    }
#define RUN(name)             \
    if (!strcmp(mode, #name)) \
    return cn_test_run(name, sizeof name / sizeof name[0])
    RUN(ops);
    RUN(idle);
    RUN(reaped);
    RUN(retry);
    RUN(restart);
    RUN(transfer);
#undef RUN
    fprintf(stderr, "client_live: unknown scenario '%s'\n", mode);
    return 2;
}
