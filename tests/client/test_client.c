/* libcairn Jay client against a small in-process fake server (a thread on a
 * loopback listener, speaking the codec's server side).  Covers every
 * handshake status, a torn handshake, request/response round trips with
 * bodies from fd and callback and to fd and callback, error mapping, the
 * pool's one retry on a stale connection (and none with a body), the
 * liveness check before reuse, the idle discard, and the encoder limits.
 * The same client against the real cairnd: client_live.c. */
#include "cn_test.h"

#include "cairn/client.h"
#include "cairn/crypto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKEN "tok1:s3cret:with:colons"

enum {
    HS_NORMAL = -1,
    HS_EOF = -2
};
/* How the fake ends a connection after a response. */
enum {
    REAP_NONE,
    REAP_AFTER,
    REAP_ON_NEXT
};

typedef struct obj {
    char key[64];
    char ctype[64];
    uint8_t *data;
    size_t len;
} obj_t;

typedef struct fake {
    int lfd;
    char endpoint[32];
    int hs_mode; /* HS_NORMAL, HS_EOF, or a forced status */
    int reap;    /* REAP_AFTER: close after each response (seen idle);
                                  * REAP_ON_NEXT: close when the next request arrives */
    atomic_int accepts;
    atomic_bool stop;
    pthread_t th;
    obj_t objs[8];
    size_t n_objs;
    cn_buf_t parts;        /* the multipart upload's bytes so far */
    int complete_delay_ms; /* CompleteMultipartUpload thinks this long first */
} fake_t;

static obj_t *find(fake_t *f, cn_jay_str_t key)
{
    for (size_t i = 0; i < f->n_objs; i++)
        if (cn_jay_str_eq(key, f->objs[i].key))
            return &f->objs[i];
    return NULL;
}

static int send_buf(int fd, const cn_buf_t *b)
{
    return cn_write_full(fd, b->data, b->len) == 0 ? 0 : -1;
}

static void answer_error(int fd, uint8_t status, const char *msg, const char *code)
{
    cn_buf_t b = { 0 };
    cn_jay_error_encode(&b, status, 0, msg, code);
    send_buf(fd, &b);
    cn_buf_free(&b);
}

static void hexdigests(const uint8_t *p, size_t n, char md5[33], char sha[65])
{
    uint8_t d[32];
    cn_md5(p, n, d);
    cn_hex_encode(d, 16, md5);
    cn_sha256(p, n, d);
    cn_hex_encode(d, 32, sha);
}

/* Serves one request; returns false when the connection should end. */
static bool serve_one(fake_t *f, int fd)
{
    uint8_t h[CN_JAY_HDR_LEN];
    if (cn_read_full(fd, h, sizeof h) != (long long)sizeof h)
        return false;
    cn_jay_hdr_t hdr;
    if (cn_jay_hdr_decode(h, sizeof h, &hdr) != CN_OK)
        return false;
    uint8_t *meta = malloc(hdr.meta_len + 1);
    uint8_t *body = malloc((size_t)hdr.data_len + 1);
    bool ok = cn_read_full(fd, meta, hdr.meta_len) == (long long)hdr.meta_len &&
              cn_read_full(fd, body, (size_t)hdr.data_len) == (long long)hdr.data_len;
    cn_jay_req_t q;
    cn_buf_t out = { 0 };
    cn_jay_resp_t r = { .size = -1 };
    char md5[33], sha[65];
    if (!ok)
        goto done;
    cn_err_t e = cn_jay_req_decode(hdr.code, meta, hdr.meta_len, &q);
    if (e == CN_E_UNSUPPORTED) {
        answer_error(fd, CN_JAY_ST_BAD_REQUEST, "unknown opcode", "UnknownOp");
        goto done;
    }
    if (e) {
        answer_error(fd, CN_JAY_ST_BAD_REQUEST, "undecodable", "InvalidArgument");
        goto done;
    }
    obj_t *o;
    switch (q.op) {
    case CN_JAY_OP_CREATE_BUCKET:
        if (cn_jay_str_eq(q.bucket, "taken")) {
            answer_error(fd, CN_JAY_ST_CONFLICT, "bucket exists", "BucketAlreadyExists");
            goto done;
        }
        break;
    case CN_JAY_OP_PUT_OBJECT:
        o = find(f, q.key);
        if (!o && f->n_objs < 8)
            o = &f->objs[f->n_objs++];
        if (!o) {
            answer_error(fd, CN_JAY_ST_INTERNAL, "full", "InternalError");
            goto done;
        }
        snprintf(o->key, sizeof o->key, "%.*s", q.key.len, q.key.p);
        snprintf(o->ctype, sizeof o->ctype, "%.*s", q.content_type.len, q.content_type.p);
        free(o->data);
        o->data = body;
        o->len = (size_t)hdr.data_len;
        body = NULL;
        hexdigests(o->data, o->len, md5, sha);
        cn_jay_str_make(md5, &r.etag);
        cn_jay_str_make(sha, &r.checksum);
        break;
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_GET_OBJECT_RANGE:
        o = find(f, q.key);
        if (!o) {
            answer_error(fd, CN_JAY_ST_NOT_FOUND, "no such key", "NoSuchKey");
            goto done;
        }
        hexdigests(o->data, o->len, md5, sha);
        cn_jay_str_make(o->ctype, &r.content_type);
        r.size = (int64_t)o->len;
        cn_jay_str_make(md5, &r.etag);
        cn_jay_str_make(sha, &r.checksum);
        cn_jay_str_make("2026-11-02T10:00:00.000Z", &r.last_modified);
        cn_jay_kv_t kv = { { "owner", 5 }, { "ann", 3 } };
        r.meta_kv = &kv;
        r.n_meta_kv = 1;
        int64_t off = 0, len = q.op == CN_JAY_OP_HEAD_OBJECT ? 0 : (int64_t)o->len;
        if (q.op == CN_JAY_OP_GET_OBJECT_RANGE) {
            if (q.offset >= (int64_t)o->len) {
                answer_error(fd, CN_JAY_ST_BAD_REQUEST, "range", "InvalidRange");
                goto done;
            }
            off = q.offset;
            len = q.length <= 0 || q.length > (int64_t)o->len - off ? (int64_t)o->len - off
                                                                    : q.length;
        }
        cn_jay_resp_encode(&out, q.op, 0, hdr.stream_id, &r, len);
        cn_buf_append(&out, o->data + off, (size_t)len);
        send_buf(fd, &out);
        goto done;
    case CN_JAY_OP_LIST_OBJECTS: {
        cn_jay_obj_entry_t ents[8];
        for (size_t i = 0; i < f->n_objs; i++) {
            memset(&ents[i], 0, sizeof ents[i]);
            cn_jay_str_make(f->objs[i].key, &ents[i].key);
            ents[i].size = (int64_t)f->objs[i].len;
        }
        cn_jay_str_t pre = { "dir/", 4 };
        r.objs = ents;
        r.n_entries = f->n_objs;
        r.prefixes = &pre;
        r.n_prefixes = 1;
        cn_jay_resp_encode(&out, q.op, 0, hdr.stream_id, &r, 0);
        send_buf(fd, &out);
        goto done;
    }
    case CN_JAY_OP_CREATE_MULTIPART:
        cn_buf_reset(&f->parts);
        cn_jay_str_make("u-1", &r.upload_id);
        break;
    case CN_JAY_OP_UPLOAD_PART:
        cn_buf_append(&f->parts, body, (size_t)hdr.data_len);
        cn_jay_str_make("pe", &r.etag);
        cn_jay_str_make("pc", &r.checksum);
        break;
    case CN_JAY_OP_COMPLETE_MULTIPART:
        if (f->complete_delay_ms)
            usleep((useconds_t)f->complete_delay_ms * 1000);
        if (!cn_jay_str_eq(q.upload_id, "u-1")) {
            answer_error(fd, CN_JAY_ST_NOT_FOUND, "no such upload", "NoSuchUpload");
            goto done;
        }
        hexdigests(f->parts.data, f->parts.len, md5, sha);
        cn_jay_str_make("m-2", &r.etag);
        cn_jay_str_make(sha, &r.checksum);
        r.size = (int64_t)f->parts.len;
        break;
    default: break;
    }
    cn_jay_resp_encode(&out, q.op, 0, hdr.stream_id, &r, 0);
    send_buf(fd, &out);
done:
    cn_buf_free(&out);
    free(meta);
    free(body);
    return ok;
}

static void serve_conn(fake_t *f, int fd)
{
    uint8_t buf[1024];
    size_t have = 0;
    cn_jay_hello_t h;
    for (;;) {
        cn_err_t e = cn_jay_hello_decode(buf, have, &h);
        if (e == CN_OK)
            break;
        ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
        if (n <= 0)
            return;
        have += (size_t)n;
    }
    if (f->hs_mode == HS_EOF)
        return;
    uint8_t status = h.verdict;
    if (f->hs_mode >= 0)
        status = (uint8_t)f->hs_mode;
    else if (status == CN_JAY_HS_OK && !cn_jay_str_eq(h.auth, TOKEN))
        status = CN_JAY_HS_AUTH_FAILED;
    uint8_t w[CN_JAY_WELCOME_LEN];
    cn_jay_welcome_encode(w, status);
    cn_write_full(fd, w, sizeof w);
    if (status != CN_JAY_HS_OK)
        return;
    while (serve_one(f, fd)) {
        if (f->reap == REAP_AFTER)
            return;
        if (f->reap == REAP_ON_NEXT) {
            /* The request is in flight when the close comes: the client saw
             * a healthy idle connection and only its call fails. */
            struct pollfd p = { fd, POLLIN, 0 };
            poll(&p, 1, 5000);
            return;
        }
    }
}

static void *fake_main(void *arg)
{
    fake_t *f = arg;
    while (!atomic_load(&f->stop)) {
        struct pollfd p = { f->lfd, POLLIN, 0 };
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&f->accepts, 1);
        serve_conn(f, fd);
        close(fd);
    }
    return NULL;
}

static fake_t *fake_start(int hs_mode, int reap)
{
    fake_t *f = calloc(1, sizeof *f);
    f->hs_mode = hs_mode;
    f->reap = reap;
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (bind(f->lfd, (struct sockaddr *)&a, sizeof a) || listen(f->lfd, 16) ||
        getsockname(f->lfd, (struct sockaddr *)&a, &al))
        abort();
    snprintf(f->endpoint, sizeof f->endpoint, "127.0.0.1:%u", ntohs(a.sin_port));
    pthread_create(&f->th, NULL, fake_main, f);
    return f;
}

static void fake_stop(fake_t *f)
{
    atomic_store(&f->stop, true);
    pthread_join(f->th, NULL);
    close(f->lfd);
    for (size_t i = 0; i < f->n_objs; i++)
        free(f->objs[i].data);
    cn_buf_free(&f->parts);
    free(f);
}

static cn_client_t *client_for(fake_t *f, const char *token, int idle_ms)
{
    cn_client_cfg_t cfg = {
        .endpoint = f->endpoint, .token = token, .idle_ms = idle_ms, .io_timeout_ms = 5000
    };
    cn_client_t *c = NULL;
    CN_CHECK_EQ(cn_client_new(&cfg, &c, NULL), 0);
    return c;
}

/* ---- bodies --------------------------------------------------------------------- */

typedef struct memsrc {
    const uint8_t *p;
    size_t len, off;
} memsrc_t;
static long long mem_read(void *ud, void *buf, size_t n)
{
    memsrc_t *m = ud;
    if (n > m->len - m->off)
        n = m->len - m->off;
    memcpy(buf, m->p + m->off, n);
    m->off += n;
    return (long long)n;
}

static cn_err_t mem_write(void *ud, const void *p, size_t n)
{
    return cn_buf_append(ud, p, n);
}

static int tmpfile_with(const void *p, size_t n)
{
    char path[] = "/tmp/cn-client-test-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    if (n)
        cn_write_full(fd, p, n);
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_roundtrip(void)
{
    fake_t *f = fake_start(HS_NORMAL, REAP_NONE);
    cn_client_t *c = client_for(f, TOKEN, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);

    /* A 300 KiB object from a file (sendfile path), back to a file. */
    size_t n = 300 * 1024;
    uint8_t *data = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    int fd = tmpfile_with(data, n);
    cn_client_body_t body = { .len = (int64_t)n, .fd = fd };
    cn_client_written_t w;
    const char *mk[] = { "owner" }, *mv[] = { "ann" };
    cn_client_put_opts_t po = {
        .content_type = "application/x-test", .meta_keys = mk, .meta_values = mv, .n_meta = 1
    };
    CN_CHECK_EQ(cn_client_put_object(c, "b", "big", &po, &body, &w, &je), 0);
    char md5[33], sha[65];
    hexdigests(data, n, md5, sha);
    CN_CHECK_STR(w.etag, md5);
    CN_CHECK_STR(w.checksum, sha);
    cn_client_written_clear(&w);
    close(fd);

    int out = tmpfile_with(NULL, 0);
    cn_client_sink_t sink = { .fd = out };
    cn_client_object_t info;
    CN_CHECK_EQ(cn_client_get_object(c, "b", "big", &sink, &info, &je), 0);
    CN_CHECK_EQ(info.size, (long long)n);
    CN_CHECK_STR(info.content_type, "application/x-test");
    CN_CHECK_STR(info.checksum, sha);
    CN_CHECK_EQ(info.n_meta, 1);
    if (info.n_meta == 1) {
        CN_CHECK_STR(info.meta[0].key, "owner");
        CN_CHECK_STR(info.meta[0].value, "ann");
    }
    cn_client_object_clear(&info);
    CN_CHECK_EQ(lseek(out, 0, SEEK_END), (off_t)n);
    uint8_t *back = malloc(n);
    CN_CHECK_EQ(pread(out, back, n, 0), (ssize_t)n);
    CN_CHECK_MEM(back, data, n);
    free(back);
    close(out);

    /* From a callback, to a callback; a range. */
    memsrc_t src = { (const uint8_t *)"hello", 5, 0 };
    cn_client_body_t cb = { .len = 5, .fd = -1, .read = mem_read, .ud = &src };
    CN_CHECK_EQ(cn_client_put_object(c, "b", "small", NULL, &cb, &w, &je), 0);
    CN_CHECK_STR(w.etag, "5d41402abc4b2a76b9719d911017c592");
    cn_client_written_clear(&w);
    cn_buf_t got = { 0 };
    cn_client_sink_t ms = { .fd = -1, .write = mem_write, .ud = &got };
    int64_t served = 0;
    CN_CHECK_EQ(cn_client_get_range(c, "b", "small", 1, 3, &ms, &info, &served, &je), 0);
    CN_CHECK_EQ(served, 3);
    CN_CHECK_EQ(info.size, 5);
    CN_CHECK(got.len == 3 && memcmp(got.data, "ell", 3) == 0);
    cn_client_object_clear(&info);
    CN_CHECK_EQ(cn_client_get_range(c, "b", "small", 9, 0, &ms, &info, &served, &je), CN_E_RANGE);
    CN_CHECK_STR(je.code, "InvalidRange");
    cn_buf_free(&got);

    /* Errors: (status, code, message) and the cn_err_t. */
    CN_CHECK_EQ(cn_client_head_object(c, "b", "nope", &info, &je), CN_E_NOT_FOUND);
    CN_CHECK_EQ(je.status, CN_JAY_ST_NOT_FOUND);
    CN_CHECK_STR(je.code, "NoSuchKey");
    CN_CHECK_STR(je.message, "no such key");
    CN_CHECK_EQ(cn_client_create_bucket(c, "taken", &je), CN_E_EXISTS);
    CN_CHECK_EQ(je.status, CN_JAY_ST_CONFLICT);
    CN_CHECK_EQ(cn_client_create_bucket(c, "fresh", &je), 0);
    CN_CHECK_EQ(je.status, 0);

    cn_client_listing_t l;
    CN_CHECK_EQ(cn_client_list_objects(c, "b", NULL, &l, &je), 0);
    CN_CHECK_EQ(l.n_objects, 2);
    CN_CHECK_EQ(l.n_prefixes, 1);
    if (l.n_objects == 2 && l.n_prefixes == 1) {
        CN_CHECK_STR(l.objects[0].key, "big");
        CN_CHECK_EQ(l.objects[1].size, 5);
        CN_CHECK_STR(l.prefixes[0], "dir/");
    }
    cn_client_listing_clear(&l);

    /* Multipart. */
    char *uid = NULL;
    CN_CHECK_EQ(cn_client_create_multipart(c, "b", "mp", "text/plain", &uid, &je), 0);
    CN_CHECK_STR(uid, "u-1");
    for (int32_t p = 1; p <= 2; p++) {
        memsrc_t ps = { (const uint8_t *)"abcdef" + (p - 1) * 3, 3, 0 };
        cn_client_body_t pb = { .len = 3, .fd = -1, .read = mem_read, .ud = &ps };
        CN_CHECK_EQ(cn_client_upload_part(c, "b", "mp", uid, p, &pb, &w, &je), 0);
        CN_CHECK_STR(w.etag, "pe");
        cn_client_written_clear(&w);
    }
    int32_t parts[] = { 1, 2 };
    CN_CHECK_EQ(cn_client_complete_multipart(c, "b", "mp", uid, parts, 2, &w, &je), 0);
    CN_CHECK_EQ(w.size, 6);
    hexdigests((const uint8_t *)"abcdef", 6, md5, sha);
    CN_CHECK_STR(w.checksum, sha);
    cn_client_written_clear(&w);
    CN_CHECK_EQ(cn_client_complete_multipart(c, "b", "mp", "u-x", parts, 2, &w, &je),
                CN_E_NO_UPLOAD);
    free(uid);

    /* Everything above went over one pooled connection. */
    cn_client_stats_t st;
    cn_client_stats(c, &st);
    CN_CHECK_EQ(st.dials, 1);
    CN_CHECK_EQ(st.retries, 0);
    CN_CHECK_EQ(atomic_load(&f->accepts), 1);
    cn_client_free(c);
    fake_stop(f);
    free(data);
}

static void test_handshake_statuses(void)
{
    static const struct {
        int mode;
        cn_err_t want;
        uint8_t hs;
    } cases[] = {
        { CN_JAY_HS_AUTH_FAILED, CN_E_AUTH, CN_JAY_HS_AUTH_FAILED },
        { CN_JAY_HS_VERSION_MISMATCH, CN_E_UNSUPPORTED, CN_JAY_HS_VERSION_MISMATCH },
        { CN_JAY_HS_SERVER_BUSY, CN_E_BUSY, CN_JAY_HS_SERVER_BUSY },
        { CN_JAY_HS_MALFORMED, CN_E_PROTOCOL, CN_JAY_HS_MALFORMED },
        { HS_EOF, CN_E_CLOSED, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_t *f = fake_start(cases[i].mode, REAP_NONE);
        cn_client_t *c = client_for(f, TOKEN, 0);
        cn_jay_error_t je;
        CN_CHECK_EQ(cn_client_ping(c, &je), cases[i].want);
        CN_CHECK_EQ(je.hs_status, cases[i].hs);
        CN_CHECK(je.message[0] != '\0');
        cn_client_free(c);
        fake_stop(f);
    }
    /* A real rejection: the wrong secret. */
    fake_t *f = fake_start(HS_NORMAL, REAP_NONE);
    cn_client_t *c = client_for(f, "tok1:wrong", 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), CN_E_AUTH);
    CN_CHECK_EQ(je.hs_status, CN_JAY_HS_AUTH_FAILED);
    CN_CHECK(strstr(je.message, "wrong") == NULL); /* never echo the secret */
    cn_client_free(c);
    fake_stop(f);
}

static void test_retry_stale(void)
{
    fake_t *f = fake_start(HS_NORMAL, REAP_ON_NEXT);
    cn_client_t *c = client_for(f, TOKEN, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    usleep(20000);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0); /* stale pooled conn → one retry */
    cn_client_stats_t st;
    cn_client_stats(c, &st);
    CN_CHECK_EQ(st.retries, 1);
    CN_CHECK_EQ(st.dials, 2);
    CN_CHECK_EQ(atomic_load(&f->accepts), 2);

    /* A request with a body is never retried. */
    usleep(20000);
    memsrc_t src = { (const uint8_t *)"hello", 5, 0 };
    cn_client_body_t cb = { .len = 5, .fd = -1, .read = mem_read, .ud = &src };
    cn_client_written_t w;
    cn_err_t e = cn_client_put_object(c, "b", "k", NULL, &cb, &w, &je);
    CN_CHECK(e != 0);
    cn_client_stats(c, &st);
    CN_CHECK_EQ(st.retries, 1);
    CN_CHECK_EQ(atomic_load(&f->accepts), 2);
    cn_client_free(c);
    fake_stop(f);
}

/* A pooled connection the server closed while it idled is noticed before
 * reuse and replaced: no retry is needed, so even a request with a body goes. */
static void test_dead_pooled(void)
{
    fake_t *f = fake_start(HS_NORMAL, REAP_AFTER);
    cn_client_t *c = client_for(f, TOKEN, 0);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    usleep(20000);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    usleep(20000);
    memsrc_t src = { (const uint8_t *)"hello", 5, 0 };
    cn_client_body_t cb = { .len = 5, .fd = -1, .read = mem_read, .ud = &src };
    cn_client_written_t w;
    CN_CHECK_EQ(cn_client_put_object(c, "b", "k", NULL, &cb, &w, &je), 0);
    cn_client_written_clear(&w);
    cn_client_stats_t st;
    cn_client_stats(c, &st);
    CN_CHECK_EQ(st.dials, 3);
    CN_CHECK_EQ(st.dead_discards, 2);
    CN_CHECK_EQ(st.reuses, 0);
    CN_CHECK_EQ(st.retries, 0);
    cn_client_free(c);
    fake_stop(f);
}

/* The server answers CompleteMultipartUpload only once it has hashed every
 * part: that wait has its own deadline, longer than the inactivity one. */
static void test_complete_waits_longer(void)
{
    fake_t *f = fake_start(HS_NORMAL, REAP_NONE);
    f->complete_delay_ms = 600;
    cn_client_cfg_t cfg = { .endpoint = f->endpoint, .token = TOKEN, .io_timeout_ms = 200 };
    cn_client_t *c = NULL;
    CN_CHECK_EQ(cn_client_new(&cfg, &c, NULL), 0);
    cn_jay_error_t je;
    char *uid = NULL;
    CN_CHECK_EQ(cn_client_create_multipart(c, "b", "k", NULL, &uid, &je), 0);
    int32_t parts[] = { 1 };
    cn_client_written_t w;
    CN_CHECK_EQ(cn_client_complete_multipart(c, "b", "k", uid, parts, 1, &w, &je), 0);
    cn_client_written_clear(&w);
    cn_client_free(c);
    cfg.complete_timeout_ms = 250;
    CN_CHECK_EQ(cn_client_new(&cfg, &c, NULL), 0);
    CN_CHECK_EQ(cn_client_complete_multipart(c, "b", "k", uid, parts, 1, &w, &je), CN_E_TIMEOUT);
    cn_client_free(c);
    free(uid);
    fake_stop(f);
}

static void test_idle_discard(void)
{
    fake_t *f = fake_start(HS_NORMAL, REAP_NONE);
    cn_client_t *c = client_for(f, TOKEN, 50);
    cn_jay_error_t je;
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    usleep(120000);
    CN_CHECK_EQ(cn_client_ping(c, &je), 0);
    cn_client_stats_t st;
    cn_client_stats(c, &st);
    CN_CHECK_EQ(st.idle_discards, 1);
    CN_CHECK_EQ(st.dials, 2);
    CN_CHECK_EQ(st.reuses, 1);
    CN_CHECK_EQ(st.retries, 0);
    cn_client_free(c);
    fake_stop(f);
}

static void test_limits(void)
{
    fake_t *f = fake_start(HS_NORMAL, REAP_NONE);
    cn_client_t *c = client_for(f, TOKEN, 0);
    cn_jay_error_t je;
    char *big = malloc(70001);
    memset(big, 'k', 70000);
    big[70000] = '\0';
    cn_client_object_t info;
    CN_CHECK_EQ(cn_client_head_object(c, "b", big, &info, &je), CN_E_LIMIT);
    cn_client_stats_t st;
    cn_client_stats(c, &st);
    CN_CHECK_EQ(st.dials, 0); /* refused before anything was sent */
    free(big);

    /* A source that ends before its declared length. */
    memsrc_t src = { (const uint8_t *)"hey", 3, 0 };
    cn_client_body_t cb = { .len = 10, .fd = -1, .read = mem_read, .ud = &src };
    cn_client_written_t w;
    CN_CHECK_EQ(cn_client_put_object(c, "b", "k", NULL, &cb, &w, &je), CN_E_LENGTH_MISMATCH);
    cn_client_free(c);
    fake_stop(f);
}

static void test_endpoint(void)
{
    char host[64];
    uint16_t port;
    CN_CHECK_EQ(cn_client_parse_endpoint("example.org:9000", host, sizeof host, &port), 0);
    CN_CHECK_STR(host, "example.org");
    CN_CHECK_EQ(port, 9000);
    CN_CHECK_EQ(cn_client_parse_endpoint("10.0.0.1", host, sizeof host, &port), 0);
    CN_CHECK_EQ(port, 7446);
    CN_CHECK_EQ(cn_client_parse_endpoint("[::1]:8000", host, sizeof host, &port), 0);
    CN_CHECK_STR(host, "::1");
    CN_CHECK_EQ(port, 8000);
    CN_CHECK_EQ(cn_client_parse_endpoint(NULL, host, sizeof host, &port), 0);
    CN_CHECK_STR(host, "127.0.0.1");
    CN_CHECK_EQ(cn_client_parse_endpoint("::1", host, sizeof host, &port), CN_E_INVALID);
    CN_CHECK_EQ(cn_client_parse_endpoint("h:0", host, sizeof host, &port), CN_E_INVALID);
    CN_CHECK_EQ(cn_client_parse_endpoint("h:99999", host, sizeof host, &port), CN_E_INVALID);
    CN_CHECK_EQ(cn_client_parse_endpoint("h:", host, sizeof host, &port), CN_E_INVALID);
    CN_CHECK_EQ(cn_client_parse_endpoint(":80", host, sizeof host, &port), CN_E_INVALID);
    cn_client_cfg_t cfg = { .endpoint = "x:1" };
    cn_client_t *c;
    CN_CHECK_EQ(cn_client_new(&cfg, &c, NULL), CN_E_INVALID); /* no token */
}

CN_TEST_MAIN(CN_TEST(test_roundtrip), CN_TEST(test_handshake_statuses), CN_TEST(test_retry_stale),
             CN_TEST(test_dead_pooled), CN_TEST(test_idle_discard),
             CN_TEST(test_complete_waits_longer), CN_TEST(test_limits), CN_TEST(test_endpoint))
