/* bench_jay: a load generator over Jay native v1, through libcairn's client.
 *
 *   bench_jay --endpoint HOST:PORT --token ID:SECRET [--pid PID] [--quick]
 *             [--large BYTES] [--huge BYTES] [--small N] [--conns 1,16,64]
 *             [--dir DIR] [--driver events|threads|both] [--threads N]
 *             [--get-rounds R] [--get-keys N]
 *             [--only large,put,get,rss]
 *
 * Against a running cairnd (scripts/bench.sh starts one on ephemeral ports
 * with a scratch data dir), it measures:
 *   jay_put_large / jay_get_large   one object of --large bytes (1 GiB), MB/s
 *   jay_put_large_noetag            the same PUT with skip_etag (no MD5: the
 *                                   one hash no core can split), MB/s
 *   jay_put_4k_cN / jay_get_4k_cN   4 KiB objects over N connections: ops/s,
 *                                   and _p50/_p99 latency in microseconds
 *   jay_*_4k_cN_cpu / _csw          with --pid: the server's CPU time (us) and
 *                                   context switches per request of that phase
 *   jay_rss_*                       with --pid: the server's VmRSS before and
 *                                   at its peak while one --huge (5 GiB)
 *                                   object streams in and back out, in MiB
 * 4 KiB GETs are driven, by default, the way wrk drives nginx: --threads (2)
 * event-loop threads multiplex the connections, one request in flight on
 * each.  --driver threads drives them through libcairn's client instead, one
 * blocking thread per connection; --driver both prints those as
 * jay_get_4k_cN_threads* next to the event driver's.  --only runs a subset
 * of the phases (a GET-only run needs the keys of an earlier PUT run with the
 * same --small and --conns against the same server).  --get-rounds R makes
 * the event driver's GET phase R times longer (2 x R GETs per key) over the
 * same keys, so that a measurement over many requests is not dominated by
 * the first look at each key.  --get-keys N makes the GETs read among the
 * first N keys written (per connection count) instead of all of them: with
 * N = 1,000 the working set is the one nginx and the S3 bench serve (1,000
 * files), which fits the server's caches; the default, every key (10,000),
 * measures a working set beyond the object-head cache.
 * It prints one result per line, "name value unit", like bench_store; the
 * limits and ratios are computed by scripts/bench.sh from the same run.
 * A GET body is read and discarded (a sink that copies nowhere); a large PUT
 * is sent from a page-cached file by sendfile(2), as the client does for a
 * regular file.  Bytes are pseudo-random, so nothing compresses.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/client.h"
#include "cairn/jay.h"
#include "cairn/util.h"

#define MIB (1024.0 * 1024.0)
#define SMALL 4096
#define MAX_CONNS 256

enum {
    PH_LARGE = 1,
    PH_PUT = 2,
    PH_GET = 4,
    PH_RSS = 8,
    PH_ALL = 15
};
enum {
    DRV_EVENTS = 1,
    DRV_THREADS = 2
};

typedef struct {
    const char *endpoint, *token, *dir;
    long pid;
    int64_t large, huge;
    unsigned small_n;
    unsigned get_keys; /* GETs read among the first get_keys keys; 0: small_n */
    unsigned conns[8];
    size_t n_conns;
    unsigned phases;     /* PH_* */
    unsigned driver;     /* 4 KiB GETs: DRV_EVENTS, DRV_THREADS or both */
    unsigned ev_threads; /* the event driver's threads */
    unsigned get_rounds; /* the event driver's GETs: get_rounds x 2 per key */
} opts_t;

static void die(const char *what, cn_err_t e, const cn_jay_error_t *err)
{
    fprintf(stderr, "bench_jay: %s: %s%s%s\n", what, cn_strerror(e),
            err && err->message[0] ? ": " : "", err ? err->message : "");
    exit(1);
}

static double now_s(void)
{
    return (double)cn_mono_ns() / 1e9;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
}

static cn_client_t *client_new(const opts_t *o)
{
    cn_client_cfg_t cfg = {
        .endpoint = o->endpoint, .token = o->token, .max_idle = 4, .io_timeout_ms = 120000
    };
    cn_client_t *c = NULL;
    cn_jay_error_t err;
    cn_err_t e = cn_client_new(&cfg, &c, &err);
    if (e)
        die("client", e, &err);
    /* Dial now, one at a time: the timed phases measure requests, not
     * handshakes, and a burst of dials would meet the per-source cap on
     * pending connections. */
    e = cn_client_ping(c, &err);
    if (e)
        die("ping", e, &err);
    return c;
}

/* ---- server memory ------------------------------------------------------------ */
static long status_kib(long pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':')
            v = strtol(line + fl + 1, NULL, 10);
    fclose(f);
    return v;
}

typedef struct {
    long pid;
    atomic_bool stop;
    long peak_kib;
} rss_sampler_t;

static void *rss_thread(void *arg)
{
    rss_sampler_t *s = arg;
    while (!atomic_load(&s->stop)) {
        long v = status_kib(s->pid, "VmRSS");
        if (v > s->peak_kib)
            s->peak_kib = v;
        usleep(20000);
    }
    return NULL;
}

/* ---- the server's CPU and context switches per request ------------------------------
 * With --pid, every 4 KiB phase is bracketed by two samples of the server
 * process: its user + system time (/proc/PID/stat, every thread, in clock
 * ticks) and its threads' voluntary + involuntary context switches (the sum
 * over /proc/PID/task/TID/status: a process's own status counts only its
 * first thread).  The difference divided by the requests the phase
 * completed is the server's cost per request, a figure that holds on a
 * loaded machine where the rates do not.  A tick is 1/CLK_TCK s (10 ms),
 * so over N requests the CPU figure is good to 10,000 / N us. */
typedef struct {
    bool ok;
    uint64_t ticks; /* utime + stime */
    uint64_t csw;   /* context switches of the live threads */
} srv_sample_t;

/* utime + stime from the text of /proc/PID/stat: fields 14 and 15, counted
 * after the command name's closing parenthesis (the name may hold spaces
 * and parentheses itself). */
static bool stat_ticks(const char *text, uint64_t *out)
{
    const char *p = strrchr(text, ')');
    if (!p)
        return false;
    p++;
    uint64_t v[2];
    /* After ")": state is field 3; utime is the 12th token from there. */
    for (int field = 3, got = 0; got < 2; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return false;
        char *end;
        unsigned long long x = strtoull(p, &end, 10);
        if (field >= 14) {
            if (end == p)
                return false;
            v[got++] = x;
        }
        p += strcspn(p, " ");
    }
    *out = v[0] + v[1];
    return true;
}

static uint64_t task_switches(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    uint64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char tp[128], line[256];
        snprintf(tp, sizeof tp, "/proc/%ld/task/%.32s/status", pid, e->d_name);
        FILE *f = fopen(tp, "r");
        if (!f)
            continue; /* the thread ended meanwhile */
        while (fgets(line, sizeof line, f)) {
            const char *c = strchr(line, ':');
            if (c && strstr(line, "ctxt_switches:"))
                sum += strtoull(c + 1, NULL, 10);
        }
        fclose(f);
    }
    closedir(d);
    return sum;
}

static srv_sample_t srv_sample(long pid)
{
    srv_sample_t s = { 0 };
    if (pid <= 0)
        return s;
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return s;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    s.ok = stat_ticks(text, &s.ticks);
    s.csw = task_switches(pid);
    return s;
}

/* Prints NAME_cpu (server CPU in us per request) and NAME_csw (server
 * context switches per request) for ops requests between a and b. */
static void report_srv(const char *name, const srv_sample_t *a, const srv_sample_t *b, size_t ops)
{
    if (!a->ok || !b->ok || !ops || b->ticks < a->ticks)
        return;
    double tck = (double)sysconf(_SC_CLK_TCK);
    printf("%s_cpu %.1f us/op\n", name, (double)(b->ticks - a->ticks) / tck * 1e6 / (double)ops);
    if (b->csw >= a->csw)
        printf("%s_csw %.2f switches/op\n", name, (double)(b->csw - a->csw) / (double)ops);
    fflush(stdout);
}

/* ---- bodies ----------------------------------------------------------------------- */
typedef struct {
    const uint8_t *pattern; /* 1 MiB of pseudo-random bytes, repeated */
    int64_t left, pos;
} gen_t;

static long long gen_read(void *ud, void *buf, size_t n)
{
    gen_t *g = ud;
    if (g->left <= 0)
        return 0;
    size_t off = (size_t)(g->pos % (1 << 20));
    size_t k = n;
    if (k > (size_t)(1 << 20) - off)
        k = (size_t)(1 << 20) - off;
    if ((int64_t)k > g->left)
        k = (size_t)g->left;
    memcpy(buf, g->pattern + off, k);
    g->pos += (int64_t)k;
    g->left -= (int64_t)k;
    return (long long)k;
}

static cn_err_t discard(void *ud, const void *buf, size_t n)
{
    (void)buf;
    *(int64_t *)ud += (int64_t)n;
    return CN_OK;
}

/* ---- large objects ------------------------------------------------------------------ */
static void bench_large(const opts_t *o, cn_client_t *c, const char *bucket)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_jay_large.XXXXXX", o->dir);
    int fd = mkstemp(path);
    if (fd < 0)
        die("mkstemp", -errno, NULL);
    unlink(path);
    uint8_t *buf = malloc(1 << 20);
    if (!buf)
        die("malloc", -ENOMEM, NULL);
    for (int64_t off = 0; off < o->large; off += 1 << 20) {
        size_t k = (size_t)(o->large - off < (1 << 20) ? o->large - off : (1 << 20));
        fill(buf, k, (uint64_t)off + 7);
        if (cn_write_full(fd, buf, k))
            die("write", -errno, NULL);
    }
    free(buf);
    double best_put = 0, best_get = 0, best_noetag = 0;
    for (int round = 0; round < 4; round++) {
        if (lseek(fd, 0, SEEK_SET) < 0)
            die("lseek", -errno, NULL);
        /* Rounds 0 and 2 with the MD5 ETag (then a GET), 1 and 3 without. */
        cn_client_put_opts_t po = { .skip_etag = round % 2 == 1 };
        cn_client_body_t body = { .len = o->large, .fd = fd };
        cn_client_written_t w;
        cn_jay_error_t err;
        double t0 = now_s();
        cn_err_t e = cn_client_put_object(c, bucket, "large", &po, &body, &w, &err);
        double t1 = now_s();
        if (e)
            die("put large", e, &err);
        cn_client_written_clear(&w);
        double mbps = (double)o->large / MIB / (t1 - t0);
        double *best = po.skip_etag ? &best_noetag : &best_put;
        if (mbps > *best)
            *best = mbps;
        if (po.skip_etag)
            continue;

        int64_t got = 0;
        cn_client_sink_t sink = { .fd = -1, .write = discard, .ud = &got };
        cn_client_object_t info;
        t0 = now_s();
        e = cn_client_get_object(c, bucket, "large", &sink, &info, &err);
        t1 = now_s();
        if (e)
            die("get large", e, &err);
        cn_client_object_clear(&info);
        if (got != o->large)
            die("get large: short body", CN_E_LENGTH_MISMATCH, NULL);
        mbps = (double)o->large / MIB / (t1 - t0);
        if (mbps > best_get)
            best_get = mbps;
    }
    close(fd);
    printf("jay_large_bytes %lld bytes\n", (long long)o->large);
    printf("jay_put_large %.1f MiB/s\n", best_put);
    printf("jay_put_large_noetag %.1f MiB/s\n", best_noetag);
    printf("jay_get_large %.1f MiB/s\n", best_get);
    fflush(stdout);
    cn_client_delete_object(c, bucket, "large", NULL);
}

/* ---- small objects ------------------------------------------------------------------ */
typedef struct {
    const opts_t *o;
    cn_client_t *c;
    const char *bucket;
    unsigned idx, nconn, conn_tag;
    bool get;
    unsigned ops;
    uint64_t *lat_ns; /* ops entries */
    uint64_t seed;
    cn_err_t err;
    cn_jay_error_t jerr;
} worker_t;

/* How many of the written keys the GET phases read among. */
static unsigned get_set(const opts_t *o)
{
    return o->get_keys ? o->get_keys : o->small_n;
}

static void *small_worker(void *arg)
{
    worker_t *w = arg;
    uint8_t data[SMALL];
    char key[64];
    for (unsigned i = 0; i < w->ops; i++) {
        unsigned n;
        if (w->get) {
            w->seed = w->seed * 6364136223846793005ull + 1442695040888963407ull;
            n = (unsigned)((w->seed >> 33) % get_set(w->o));
        } else {
            n = w->idx + i * w->nconn;
        }
        snprintf(key, sizeof key, "small/%u/%08u", w->conn_tag, n);
        int64_t t0 = cn_mono_ns();
        cn_err_t e;
        if (w->get) {
            int64_t got = 0;
            cn_client_sink_t sink = { .fd = -1, .write = discard, .ud = &got };
            e = cn_client_get_object(w->c, w->bucket, key, &sink, NULL, &w->jerr);
            if (!e && got != SMALL)
                e = CN_E_LENGTH_MISMATCH;
        } else {
            fill(data, sizeof data, n + 1);
            cn_client_body_t body = { .len = SMALL, .fd = -1, .read = gen_read };
            gen_t g = { .pattern = data, .left = SMALL };
            body.ud = &g;
            /* gen_read wraps at 1 MiB; 4 KiB never reaches the wrap. */
            cn_client_written_t wr;
            e = cn_client_put_object(w->c, w->bucket, key, NULL, &body, &wr, &w->jerr);
            if (!e)
                cn_client_written_clear(&wr);
        }
        w->lat_ns[i] = (uint64_t)(cn_mono_ns() - t0);
        if (e) {
            w->err = e;
            return NULL;
        }
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- 4 KiB GETs by an event-driven driver ----------------------------------------------
 * The way wrk drives nginx: a few threads, each multiplexing its share of the
 * connections over epoll, one request in flight per connection (Jay v1 has no
 * pipelining), so the load generator costs the shared CPUs little.  It speaks
 * the frames itself with libcairn's codec: GetObject, then the whole response
 * (header, metadata, body) read and discarded. */
typedef struct {
    int fd;
    cn_buf_t out; /* the request being sent */
    uint8_t hdr[CN_JAY_HDR_LEN];
    size_t got;    /* bytes of the current response read */
    uint64_t need; /* its total, once the header is in (0 before) */
    int64_t t0;
    uint64_t seed;
} evconn_t;

typedef struct {
    const opts_t *o;
    const char *bucket;
    unsigned tag;
    evconn_t *cs;
    unsigned ncs;
    unsigned quota, issued, done;
    uint64_t *lat_ns;
    cn_err_t err;
    char why[160];
} evthr_t;

static int ev_dial(const opts_t *o)
{
    char host[256];
    uint16_t port;
    if (cn_client_parse_endpoint(o->endpoint, host, sizeof host, &port))
        die("endpoint", CN_E_INVALID, NULL);
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    /* A numeric host (or localhost), as scripts/bench.sh passes. */
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, !strcmp(host, "localhost") ? "127.0.0.1" : host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        sl = sizeof *s4;
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        sl = sizeof *s6;
    } else {
        die("endpoint: not a numeric address", CN_E_INVALID, NULL);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl) < 0)
        die("connect", -errno, NULL);
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    cn_buf_t hello = { 0 };
    if (cn_jay_hello_encode(&hello, o->token, strlen(o->token)) ||
        cn_write_full(fd, hello.data, hello.len))
        die("handshake", CN_E_PROTOCOL, NULL);
    cn_buf_free(&hello);
    uint8_t w[CN_JAY_WELCOME_LEN];
    cn_jay_welcome_t wd;
    if (cn_read_full(fd, w, sizeof w) != (long long)sizeof w ||
        cn_jay_welcome_decode(w, sizeof w, &wd) || wd.status != CN_JAY_HS_OK)
        die("handshake refused", CN_E_AUTH, NULL);
    /* One request now, as client_new does: a connection is "pending" for the
     * server's per-source cap until it has sent a request. */
    cn_jay_req_t ping;
    memset(&ping, 0, sizeof ping);
    ping.op = CN_JAY_OP_PING;
    cn_buf_t f = { 0 };
    uint8_t h[CN_JAY_HDR_LEN];
    cn_jay_hdr_t hd;
    if (cn_jay_req_encode(&f, &ping, 0) || cn_write_full(fd, f.data, f.len) ||
        cn_read_full(fd, h, sizeof h) != (long long)sizeof h ||
        cn_jay_hdr_decode(h, sizeof h, &hd) || hd.code != CN_JAY_ST_OK || hd.meta_len ||
        hd.data_len)
        die("ping", CN_E_PROTOCOL, NULL);
    cn_buf_free(&f);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
        die("fcntl", -errno, NULL);
    return fd;
}

/* Encodes and starts sending the next GetObject of c. */
static cn_err_t ev_issue(evthr_t *t, evconn_t *c)
{
    char key[64];
    c->seed = c->seed * 6364136223846793005ull + 1442695040888963407ull;
    unsigned n = (unsigned)((c->seed >> 33) % get_set(t->o));
    snprintf(key, sizeof key, "small/%u/%08u", t->tag, n);
    cn_jay_req_t rq;
    memset(&rq, 0, sizeof rq);
    rq.op = CN_JAY_OP_GET_OBJECT;
    cn_jay_str_make(t->bucket, &rq.bucket);
    cn_jay_str_make(key, &rq.key);
    cn_buf_reset(&c->out);
    CN_TRY(cn_jay_req_encode(&c->out, &rq, 0));
    c->got = 0;
    c->need = 0;
    c->t0 = cn_mono_ns();
    t->issued++;
    /* A request of a few dozen bytes into an idle connection's socket buffer:
     * it goes at once (the server has read the previous one). */
    for (size_t off = 0; off < c->out.len;) {
        ssize_t w = send(c->fd, c->out.data + off, c->out.len - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        struct pollfd pf = { .fd = c->fd, .events = POLLOUT };
        (void)poll(&pf, 1, 1000);
    }
    return 0;
}

/* Reads what is there of c's response; 1 when it is complete.  One recv
 * takes the header and the body together (the client must not cost more
 * system calls per request than wrk does, or it understates the server):
 * with one request in flight nothing past this response can arrive, so the
 * header is copied out of the sink buffer and the rest discarded there. */
static int ev_read(evthr_t *t, evconn_t *c, uint8_t *buf, size_t cap)
{
    for (;;) {
        size_t want = cap;
        if (c->need && c->need - c->got < want)
            want = (size_t)(c->need - c->got);
        ssize_t r = recv(c->fd, buf, want, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (r <= 0) {
            t->err = r == 0 ? CN_E_CLOSED : -errno;
            snprintf(t->why, sizeof t->why, "connection lost mid-response");
            return -1;
        }
        if (c->got < CN_JAY_HDR_LEN) {
            size_t h = CN_JAY_HDR_LEN - c->got < (size_t)r ? CN_JAY_HDR_LEN - c->got : (size_t)r;
            memcpy(c->hdr + c->got, buf, h);
        }
        c->got += (size_t)r;
        if (c->got >= CN_JAY_HDR_LEN && !c->need) {
            cn_jay_hdr_t h;
            if (cn_jay_hdr_decode(c->hdr, CN_JAY_HDR_LEN, &h) || h.code != CN_JAY_ST_OK) {
                t->err = CN_E_PROTOCOL;
                snprintf(t->why, sizeof t->why, "GetObject answered status 0x%02x", h.code);
                return -1;
            }
            if (h.data_len != SMALL) {
                t->err = CN_E_LENGTH_MISMATCH;
                snprintf(t->why, sizeof t->why, "a body of %lld bytes", (long long)h.data_len);
                return -1;
            }
            c->need = CN_JAY_HDR_LEN + (uint64_t)h.meta_len + (uint64_t)h.data_len;
        }
        if (c->need && c->got > c->need) {
            t->err = CN_E_PROTOCOL;
            snprintf(t->why, sizeof t->why, "bytes past the end of a response");
            return -1;
        }
        if (c->need && c->got == c->need)
            return 1;
    }
}

static void *ev_thread(void *arg)
{
    evthr_t *t = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    uint8_t *buf = malloc(65536);
    if (ep < 0 || !buf) {
        t->err = -ENOMEM;
        goto out;
    }
    for (unsigned i = 0; i < t->ncs; i++) {
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &t->cs[i] };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, t->cs[i].fd, &ev) < 0) {
            t->err = -errno;
            goto out;
        }
    }
    for (unsigned i = 0; i < t->ncs && t->issued < t->quota; i++) {
        cn_err_t e = ev_issue(t, &t->cs[i]);
        if (e < 0) {
            t->err = e;
            goto out;
        }
    }
    struct epoll_event evs[64];
    while (t->done < t->quota) {
        int n = epoll_wait(ep, evs, 64, 10000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            t->err = n == 0 ? CN_E_TIMEOUT : -errno;
            snprintf(t->why, sizeof t->why, "no answer within 10 s");
            goto out;
        }
        for (int i = 0; i < n; i++) {
            evconn_t *c = evs[i].data.ptr;
            int r = ev_read(t, c, buf, 65536);
            if (r < 0)
                goto out;
            if (r == 0)
                continue;
            t->lat_ns[t->done++] = (uint64_t)(cn_mono_ns() - c->t0);
            if (t->issued < t->quota) {
                cn_err_t e = ev_issue(t, c);
                if (e < 0) {
                    t->err = e;
                    goto out;
                }
            }
        }
    }
out:
    if (ep >= 0)
        close(ep);
    free(buf);
    return NULL;
}

static void report(const char *op, unsigned nconn, const char *suffix, uint64_t *lat, size_t used,
                   double dt)
{
    qsort(lat, used, sizeof *lat, cmp_u64);
    printf("jay_%s_4k_c%u%s %.1f ops/s\n", op, nconn, suffix, (double)used / dt);
    printf("jay_%s_4k_c%u%s_p50 %.1f us\n", op, nconn, suffix, (double)lat[used / 2] / 1e3);
    printf("jay_%s_4k_c%u%s_p99 %.1f us\n", op, nconn, suffix,
           (double)lat[(used * 99) / 100] / 1e3);
    fflush(stdout);
}

static void ev_phase(const opts_t *o, unsigned nconn, const char *bucket, unsigned tag,
                     unsigned total)
{
    unsigned nt = o->ev_threads < nconn ? o->ev_threads : nconn;
    evconn_t *cs = calloc(nconn, sizeof *cs);
    evthr_t *ts = calloc(nt, sizeof *ts);
    pthread_t *th = calloc(nt, sizeof *th);
    uint64_t *lat = calloc(total + 1, sizeof *lat);
    if (!cs || !ts || !th || !lat)
        die("calloc", -ENOMEM, NULL);
    for (unsigned i = 0; i < nconn; i++) {
        cs[i].fd = ev_dial(o);
        cs[i].seed = 0x1234567ull + i;
    }
    unsigned first = 0, used = 0;
    for (unsigned k = 0; k < nt; k++) {
        unsigned n = nconn / nt + (k < nconn % nt);
        unsigned q = (unsigned)((uint64_t)total * (first + n) / nconn) -
                     (unsigned)((uint64_t)total * first / nconn);
        ts[k] = (evthr_t){ .o = o,
                           .bucket = bucket,
                           .tag = tag,
                           .cs = cs + first,
                           .ncs = n,
                           .quota = q,
                           .lat_ns = lat + used };
        first += n;
        used += q;
    }
    srv_sample_t s0 = srv_sample(o->pid);
    double t0 = now_s();
    for (unsigned k = 0; k < nt; k++)
        if (pthread_create(&th[k], NULL, ev_thread, &ts[k]))
            die("pthread_create", -errno, NULL);
    for (unsigned k = 0; k < nt; k++)
        pthread_join(th[k], NULL);
    double dt = now_s() - t0;
    srv_sample_t s1 = srv_sample(o->pid);
    for (unsigned k = 0; k < nt; k++)
        if (ts[k].err) {
            fprintf(stderr, "bench_jay: get 4k (events): %s\n", ts[k].why);
            die("get 4k", ts[k].err, NULL);
        }
    report("get", nconn, "", lat, used, dt);
    char name[64];
    snprintf(name, sizeof name, "jay_get_4k_c%u", nconn);
    report_srv(name, &s0, &s1, used);
    for (unsigned i = 0; i < nconn; i++) {
        close(cs[i].fd);
        cn_buf_free(&cs[i].out);
    }
    free(cs);
    free(ts);
    free(th);
    free(lat);
}

static void small_phase(const opts_t *o, cn_client_t **cl, unsigned nconn, bool get,
                        const char *bucket, unsigned tag, unsigned total)
{
    worker_t ws[MAX_CONNS];
    pthread_t th[MAX_CONNS];
    uint64_t *lat = calloc(total + nconn, sizeof *lat);
    if (!lat)
        die("calloc", -ENOMEM, NULL);
    size_t used = 0;
    for (unsigned i = 0; i < nconn; i++) {
        unsigned ops = total / nconn + (i < total % nconn);
        ws[i] = (worker_t){ .o = o,
                            .c = cl[i],
                            .bucket = bucket,
                            .idx = i,
                            .nconn = nconn,
                            .conn_tag = tag,
                            .get = get,
                            .ops = ops,
                            .lat_ns = lat + used,
                            .seed = 0x1234567ull + i };
        used += ops;
    }
    srv_sample_t s0 = srv_sample(o->pid);
    double t0 = now_s();
    for (unsigned i = 0; i < nconn; i++)
        if (pthread_create(&th[i], NULL, small_worker, &ws[i]))
            die("pthread_create", -errno, NULL);
    for (unsigned i = 0; i < nconn; i++)
        pthread_join(th[i], NULL);
    double dt = now_s() - t0;
    srv_sample_t s1 = srv_sample(o->pid);
    for (unsigned i = 0; i < nconn; i++)
        if (ws[i].err)
            die(get ? "get 4k" : "put 4k", ws[i].err, &ws[i].jerr);
    /* The threaded GET figures carry a suffix when the event driver gives
     * the main ones (--driver both). */
    const char *suffix = get && (o->driver & DRV_EVENTS) ? "_threads" : "";
    report(get ? "get" : "put", nconn, suffix, lat, used, dt);
    char name[64];
    snprintf(name, sizeof name, "jay_%s_4k_c%u%s", get ? "get" : "put", nconn, suffix);
    report_srv(name, &s0, &s1, used);
    free(lat);
}

static void bench_small(const opts_t *o, const char *bucket)
{
    cn_client_t *cl[MAX_CONNS];
    for (size_t k = 0; k < o->n_conns; k++) {
        unsigned n = o->conns[k];
        bool clients = (o->phases & PH_PUT) || (o->driver & DRV_THREADS);
        for (unsigned i = 0; clients && i < n; i++)
            cl[i] = client_new(o);
        /* Each connection count writes its own key set, so no PUT replaces
         * an existing version, then reads back from it at random. */
        if (o->phases & PH_PUT)
            small_phase(o, cl, n, false, bucket, n, o->small_n);
        if ((o->phases & PH_GET) && (o->driver & DRV_THREADS))
            small_phase(o, cl, n, true, bucket, n, o->small_n * 2);
        if ((o->phases & PH_GET) && (o->driver & DRV_EVENTS))
            ev_phase(o, n, bucket, n, o->small_n * 2 * o->get_rounds);
        for (unsigned i = 0; clients && i < n; i++)
            cn_client_free(cl[i]);
    }
}

/* ---- the server's memory while one huge object streams -------------------------------- */
static void bench_rss(const opts_t *o, cn_client_t *c, const char *bucket)
{
    uint8_t *pattern = malloc(1 << 20);
    if (!pattern)
        die("malloc", -ENOMEM, NULL);
    fill(pattern, 1 << 20, 99);
    long before = status_kib(o->pid, "VmRSS");
    long hwm_before = status_kib(o->pid, "VmHWM");
    rss_sampler_t s = { .pid = o->pid, .peak_kib = before };
    atomic_init(&s.stop, false);
    pthread_t th;
    if (pthread_create(&th, NULL, rss_thread, &s))
        die("pthread_create", -errno, NULL);

    gen_t g = { .pattern = pattern, .left = o->huge };
    cn_client_body_t body = { .len = o->huge, .fd = -1, .read = gen_read, .ud = &g };
    cn_client_written_t w;
    cn_jay_error_t err;
    double t0 = now_s();
    cn_err_t e = cn_client_put_object(c, bucket, "huge", NULL, &body, &w, &err);
    double t1 = now_s();
    if (e)
        die("put huge", e, &err);
    cn_client_written_clear(&w);
    long after_put = s.peak_kib;
    int64_t got = 0;
    cn_client_sink_t sink = { .fd = -1, .write = discard, .ud = &got };
    double t2 = now_s();
    e = cn_client_get_object(c, bucket, "huge", &sink, NULL, &err);
    double t3 = now_s();
    if (e)
        die("get huge", e, &err);
    if (got != o->huge)
        die("get huge: short body", CN_E_LENGTH_MISMATCH, NULL);
    atomic_store(&s.stop, true);
    pthread_join(th, NULL);
    long hwm_after = status_kib(o->pid, "VmHWM");
    free(pattern);
    printf("jay_huge_bytes %lld bytes\n", (long long)o->huge);
    printf("jay_put_huge %.1f MiB/s\n", (double)o->huge / MIB / (t1 - t0));
    printf("jay_get_huge %.1f MiB/s\n", (double)o->huge / MIB / (t3 - t2));
    printf("jay_rss_before %.1f MiB\n", before / 1024.0);
    printf("jay_rss_peak_put %.1f MiB\n", after_put / 1024.0);
    printf("jay_rss_peak %.1f MiB\n", s.peak_kib / 1024.0);
    printf("jay_rss_growth %.1f MiB\n", (s.peak_kib - before) / 1024.0);
    printf("jay_hwm_growth %.1f MiB\n",
           hwm_after > hwm_before ? (hwm_after - hwm_before) / 1024.0 : 0.0);
    fflush(stdout);
    cn_client_delete_object(c, bucket, "huge", NULL);
}

static int64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'G':
    case 'g': v *= 1024.0 * 1024 * 1024; break;
    case 'M':
    case 'm': v *= 1024.0 * 1024; break;
    case 'K':
    case 'k': v *= 1024.0; break;
    default: break;
    }
    return (int64_t)v;
}

int main(int argc, char **argv)
{
    opts_t o = { .dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 .large = 1ll << 30,
                 .huge = 5ll << 30,
                 .small_n = 10000,
                 .conns = { 1, 16, 64 },
                 .n_conns = 3,
                 .phases = PH_ALL,
                 .driver = DRV_EVENTS,
                 .ev_threads = 2,
                 .get_rounds = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            o.large = 64ll << 20;
            o.huge = 256ll << 20;
            o.small_n = 1000;
            continue;
        }
        if (!v)
            goto usage;
        i++;
        if (!strcmp(a, "--endpoint"))
            o.endpoint = v;
        else if (!strcmp(a, "--token"))
            o.token = v;
        else if (!strcmp(a, "--pid"))
            o.pid = strtol(v, NULL, 10);
        else if (!strcmp(a, "--large"))
            o.large = parse_size(v);
        else if (!strcmp(a, "--huge"))
            o.huge = parse_size(v);
        else if (!strcmp(a, "--small"))
            o.small_n = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--get-keys"))
            o.get_keys = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--get-rounds")) {
            o.get_rounds = (unsigned)strtoul(v, NULL, 10);
            if (o.get_rounds < 1 || o.get_rounds > 1000)
                goto usage;
        } else if (!strcmp(a, "--dir"))
            o.dir = v;
        else if (!strcmp(a, "--driver")) {
            o.driver = !strcmp(v, "events")    ? DRV_EVENTS
                       : !strcmp(v, "threads") ? DRV_THREADS
                       : !strcmp(v, "both")    ? DRV_EVENTS | DRV_THREADS
                                               : 0;
            if (!o.driver)
                goto usage;
        } else if (!strcmp(a, "--threads")) {
            o.ev_threads = (unsigned)strtoul(v, NULL, 10);
            if (o.ev_threads < 1 || o.ev_threads > 64)
                goto usage;
        } else if (!strcmp(a, "--only")) {
            o.phases = 0;
            for (const char *p = v; *p;) {
                size_t l = strcspn(p, ",");
                unsigned ph = !strncmp(p, "large", l) && l == 5 ? PH_LARGE
                              : !strncmp(p, "put", l) && l == 3 ? PH_PUT
                              : !strncmp(p, "get", l) && l == 3 ? PH_GET
                              : !strncmp(p, "rss", l) && l == 3 ? PH_RSS
                                                                : 0;
                if (!ph)
                    goto usage;
                o.phases |= ph;
                p += l + (p[l] == ',');
            }
        } else if (!strcmp(a, "--conns")) {
            o.n_conns = 0;
            for (char *p = (char *)v; *p && o.n_conns < 8;) {
                unsigned long n = strtoul(p, &p, 10);
                if (n < 1 || n > MAX_CONNS)
                    goto usage;
                o.conns[o.n_conns++] = (unsigned)n;
                if (*p == ',')
                    p++;
                else if (*p)
                    goto usage;
            }
        } else
            goto usage;
    }
    if (!o.endpoint || !o.token || o.small_n == 0 || o.get_keys > o.small_n || o.large <= 0 ||
        o.huge < 0)
        goto usage;

    cn_client_t *c = client_new(&o);
    cn_jay_error_t err;
    const char *bucket = "bench";
    cn_err_t e = cn_client_create_bucket(c, bucket, &err);
    if (e && e != CN_E_EXISTS)
        die("create bucket", e, &err);
    if (o.phases & PH_LARGE)
        bench_large(&o, c, bucket);
    if (o.phases & (PH_PUT | PH_GET))
        bench_small(&o, bucket);
    if ((o.phases & PH_RSS) && o.pid > 0 && o.huge > 0)
        bench_rss(&o, c, bucket);
    cn_client_free(c);
    return 0;
usage:
    fprintf(stderr,
            "usage: bench_jay --endpoint HOST:PORT --token ID:SECRET [--pid PID]\n"
            "                 [--quick] [--large BYTES] [--huge BYTES] [--small N]\n"
            "                 [--conns 1,16,64] [--dir DIR] [--driver events|threads|both]\n"
            "                 [--threads N] [--get-rounds R] [--get-keys N]\n"
            "                 [--only large,put,get,rss]\n");
    return 2;
}
