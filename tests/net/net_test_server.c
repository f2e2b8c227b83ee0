/* net_test_server — a cn_server_t with a tiny "echo" adapter, for the
 * admission and shutdown tests in test_admission.py.  Never part of cairnd.
 *
 * Wire: the client opens with "ECHO" + u8 name_len + name (the principal;
 * empty = none).  The server answers "OKAY" or "BADM" (bad magic, then
 * closes).  A request is u32be length + body; the body memory is reserved
 * from the budget before it is read.  The answer is u32be status (0 ok,
 * 1 busy) + u32be length + body.  A body starting with "SLEEP:<ms>;" is
 * answered after ms milliseconds; "FILE:<n>" is answered with n bytes of
 * "0123456789..." sent from a file by cn_conn_sendfile.  busy() writes "BUSY".
 *
 * The gate, so that tests observe concurrency instead of timing it: a body
 * starting with "HOLD;" keeps its worker until the gate opens (or its I/O
 * deadline passes), then is echoed.  A hello naming "!stat" or "!open" is a
 * control message, served on the handshake pool (so it works while every
 * request worker is held): the answer is u32be requests held now + u32be
 * the most ever held at once, "!open" opening the gate first; then the
 * connection closes.  "!anon" is an anonymous handshake that takes an
 * anonymous-request permit and holds it (and its handshake worker) until
 * the gate opens ("BUSY" and the close when none is left).  "!break1", once answered, breaks event loop 1's epoll
 * set (a test hook: its next wait fails, as an epoll_wait error would).
 * Bodies of 64 KiB and more run on the storage pool, smaller on the query pool. */
#include "cairn/net.h"
#include "cairn/util.h"
#include "net/net_int.h" /* cn__loop_break_poll, the test hook */

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>

typedef struct {
    int unused;
} echo_ctx_t;

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv; /* CLOCK_MONOTONIC, set up in main() */
static bool gate_open;
static cn_server_t *the_srv; /* for "!break1" */
static uint32_t gate_held, gate_max;

/* Waits for the gate to open, at most until deadline (monotonic ms). */
static void gate_wait(int64_t deadline)
{
    pthread_mutex_lock(&gate_mu);
    gate_held++;
    if (gate_held > gate_max)
        gate_max = gate_held;
    struct timespec ts = { deadline / 1000, (deadline % 1000) * 1000000L };
    while (!gate_open && pthread_cond_timedwait(&gate_cv, &gate_mu, &ts) != ETIMEDOUT)
        ;
    gate_held--;
    pthread_mutex_unlock(&gate_mu);
}

/* A control hello ("!stat", "!open"): answers held + max held. */
static cn_err_t gate_control(cn_conn_t *c, const char *name, int64_t dl)
{
    uint8_t reply[8];
    pthread_mutex_lock(&gate_mu);
    if (!strcmp(name, "!open")) {
        gate_open = true;
        pthread_cond_broadcast(&gate_cv);
    }
    cn_store_u32be(reply, gate_held);
    cn_store_u32be(reply + 4, gate_max);
    pthread_mutex_unlock(&gate_mu);
    cn_err_t e = cn_conn_write_all(c, reply, sizeof reply, dl);
    /* After the reply: the stop that follows cuts handshakes in progress,
     * this one among them. */
    if (!strcmp(name, "!break1"))
        cn__loop_break_poll(the_srv, 1);
    return e < 0 ? e : CN_E_CLOSED; /* not a session: close it */
}
typedef struct {
    int principal;
} echo_conn_t;

static void echo_busy(void *actx, int fd)
{
    (void)actx;
    ssize_t w = send(fd, "BUSY", 4, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
}

static cn_err_t echo_open(void *actx, cn_conn_t *c, void **cstate)
{
    (void)actx;
    int64_t dl = cn_conn_handshake_deadline(c);
    uint8_t hello[5];
    CN_TRY(cn_conn_read_full(c, hello, 5, dl));
    if (memcmp(hello, "ECHO", 4) != 0) {
        (void)cn_conn_write_all(c, "BADM", 4, dl);
        return CN_E_PROTOCOL;
    }
    char name[256];
    CN_TRY(cn_conn_read_full(c, name, hello[4], dl));
    name[hello[4]] = 0;
    if (!strcmp(name, "!anon")) {
        /* An anonymous handshake that holds its anonymous-request permit
         * until the gate opens, then goes on as an anonymous session; none
         * left: "BUSY", then the close. */
        if (cn_conn_anon_permit_take(c) == CN_E_BUSY) {
            (void)cn_conn_write_all(c, "BUSY", 4, dl);
            return CN_E_BUSY;
        }
        gate_wait(dl);
        cn_conn_anon_permit_release(c);
        name[0] = 0;
    }
    if (name[0] == '!')
        return gate_control(c, name, dl);
    if (hello[4])
        CN_TRY(cn_conn_set_principal(c, name));
    echo_conn_t *st = calloc(1, sizeof *st);
    if (!st)
        return -ENOMEM;
    cn_err_t e = cn_conn_write_all(c, "OKAY", 4, dl);
    if (e < 0) {
        free(st);
        return e;
    }
    *cstate = st;
    return CN_OK;
}

static int echo_classify(void *cstate, const uint8_t *head)
{
    (void)cstate;
    return cn_load_u32be(head) >= 65536 ? CN_POOL_STORAGE : CN_POOL_QUERY;
}

/* Answers with n pattern bytes from a temporary file, through sendfile(2) on
 * plaintext (and read + TLS write under TLS). */
static cn_err_t send_file(cn_conn_t *c, unsigned long n)
{
    int fd = memfd_create("echo-file", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    cn_err_t e = CN_OK;
    char chunk[4000];
    for (size_t i = 0; i < sizeof chunk; i++)
        chunk[i] = (char)('0' + i % 10);
    for (unsigned long off = 0; off < n && e == CN_OK; off += sizeof chunk)
        e = cn_write_full(fd, chunk, n - off < sizeof chunk ? n - off : sizeof chunk);
    uint8_t reply[8];
    cn_store_u32be(reply, 0);
    cn_store_u32be(reply + 4, (uint32_t)n);
    int64_t dl = cn_conn_deadline_for(c, n);
    if (e == CN_OK)
        e = cn_conn_write_all(c, reply, 8, dl);
    if (e == CN_OK)
        e = cn_conn_sendfile(c, fd, 0, n, dl);
    /* A file shorter than asked for is reported, not padded. */
    if (e == CN_OK && cn_conn_sendfile(c, fd, n, 1, dl) != CN_E_LENGTH_MISMATCH)
        e = CN_E_INVALID;
    close(fd);
    return e;
}

static cn_err_t echo_serve(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    (void)cstate;
    uint32_t len = cn_load_u32be(head);
    int64_t dl = cn_conn_deadline_for(c, len);
    uint8_t reply[8];
    if (cn_conn_budget_reserve(c, len) < 0) {
        /* The body was never read, so the stream cannot continue: answer and close. */
        cn_store_u32be(reply, 1);
        cn_store_u32be(reply + 4, 0);
        (void)cn_conn_write_all(c, reply, 8, dl);
        return CN_E_BUSY;
    }
    cn_err_t e = -ENOMEM;
    uint8_t *body = malloc(len ? len : 1);
    if (!body)
        goto out;
    if ((e = cn_conn_read_full(c, body, len, dl)) < 0)
        goto out;
    if (len > 6 && memcmp(body, "SLEEP:", 6) == 0) {
        long ms = strtol((char *)body + 6, NULL, 10);
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (len >= 5 && memcmp(body, "HOLD;", 5) == 0)
        gate_wait(dl);
    if (len > 5 && len < 32 && memcmp(body, "FILE:", 5) == 0) {
        e = send_file(c, strtoul((char *)body + 5, NULL, 10));
        goto out;
    }
    cn_store_u32be(reply, 0);
    cn_store_u32be(reply + 4, len);
    struct iovec iov[2] = { { reply, 8 }, { body, len } };
    e = cn_conn_writev(c, iov, 2, dl);
out:
    free(body);
    cn_conn_budget_release(c, len);
    return e;
}

/* The same protocol with head_len 0: the loop dispatches on readable and
 * serve() reads the length itself (as an HTTP adapter does). */
static cn_err_t echo_serve_raw(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    (void)head;
    uint8_t len[4];
    CN_TRY(cn_conn_read_full(c, len, 4, cn_conn_deadline_for(c, 4)));
    return echo_serve(cstate, c, len);
}

static void echo_close(void *cstate)
{
    free(cstate);
}

static const cn_adapter_t echo_adapter = {
    .name = "echo",
    .head_len = 4,
    .busy = echo_busy,
    .open = echo_open,
    .classify = echo_classify,
    .serve = echo_serve,
    .close = echo_close,
};

static const cn_adapter_t echo_raw_adapter = {
    .name = "echo",
    .head_len = 0,
    .busy = echo_busy,
    .open = echo_open,
    .serve = echo_serve_raw,
    .close = echo_close,
};

static int usage(void)
{
    fputs("usage: net_test_server [--listen ADDR]... [--max-conns N] [--max-pending-per-source N]\n"
          "  [--max-conns-per-principal N] [--budget BYTES] [--budget-per-conn BYTES]\n"
          "  [--budget-anonymous BYTES]\n"
          "  [--handshake-ms MS] [--idle-ms MS] [--grace-ms MS] [--workers N] [--queue-len N]\n"
          "  [--tls-cert FILE --tls-key FILE] [--allow-plaintext-public] [--log-level L]\n"
          "  [--worker-share PCT]\n"
          "  [--head0]   (the adapter reads its own heads: head_len 0)\n",
          stderr);
    return 2;
}

static int num(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "listen", required_argument, 0, 'l' },
        { "max-conns", required_argument, 0, 'c' },
        { "max-pending-per-source", required_argument, 0, 'p' },
        { "max-conns-per-principal", required_argument, 0, 'P' },
        { "budget", required_argument, 0, 'b' },
        { "budget-per-conn", required_argument, 0, 'B' },
        { "budget-anonymous", required_argument, 0, 'n' },
        { "handshake-ms", required_argument, 0, 'h' },
        { "idle-ms", required_argument, 0, 'i' },
        { "grace-ms", required_argument, 0, 'g' },
        { "workers", required_argument, 0, 'w' },
        { "queue-len", required_argument, 0, 'q' },
        { "tls-cert", required_argument, 0, 'C' },
        { "tls-key", required_argument, 0, 'K' },
        { "allow-plaintext-public", no_argument, 0, 'A' },
        { "log-level", required_argument, 0, 'L' },
        { "head0", no_argument, 0, '0' },
        { "worker-share", required_argument, 0, 'S' },
        { "loops", required_argument, 0, 'N' },
        { 0, 0, 0, 0 },
    };
    cn_server_config_t cfg;
    cn_server_config_default(&cfg);
    cfg.handle_signals = true;
    /* CAIRN_NET_LOOPS, as cairnd reads it, so that a whole suite runs with
     * one loop count; --loops overrides it. */
    const char *env_loops = getenv("CAIRN_NET_LOOPS");
    if (env_loops && *env_loops)
        cfg.loops = (unsigned)atoi(env_loops);
    cn_listen_opts_t lo = { 0 };
    cn_limits_default(&lo.limits);
    const char *addrs[8];
    int naddrs = 0;
    const cn_adapter_t *ad = &echo_adapter;
    cn_log_level_t level = CN_LOG_INFO;
    int ch;
    long long v = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch != 'l' && ch != 'C' && ch != 'K' && ch != 'A' && ch != 'L' && ch != '0' &&
            (!optarg || num(optarg, &v) < 0))
            return usage();
        switch (ch) {
        case 'l':
            if (naddrs == 8)
                return usage();
            addrs[naddrs++] = optarg;
            break;
        case 'c': lo.limits.max_conns = (unsigned)v; break;
        case 'p': lo.limits.max_pending_per_source = (unsigned)v; break;
        case 'P': lo.limits.max_conns_per_principal = (unsigned)v; break;
        case 'b': lo.limits.budget_bytes = (uint64_t)v; break;
        case 'B': lo.limits.budget_per_conn = (uint64_t)v; break;
        case 'n': lo.limits.budget_anonymous = (uint64_t)v; break;
        case 'h': lo.limits.handshake_ms = v; break;
        case 'i': lo.limits.idle_ms = v; break;
        case 'S': lo.limits.worker_share_pct = (unsigned)v; break;
        case 'N': cfg.loops = (unsigned)v; break;
        case 'g': cfg.grace_ms = v; break;
        case 'w':
            for (int p = 0; p < CN_POOL_COUNT; p++)
                cfg.workers[p] = (unsigned)v;
            break;
        case 'q':
            for (int p = 0; p < CN_POOL_COUNT; p++)
                cfg.queue_len[p] = (unsigned)v;
            break;
        case 'C': lo.tls_cert = optarg; break;
        case 'K': lo.tls_key = optarg; break;
        case 'A': lo.allow_plaintext_public = true; break;
        case '0': ad = &echo_raw_adapter; break;
        case 'L':
            if (cn_log_level_parse(optarg, &level) < 0)
                return usage();
            break;
        default: return usage();
        }
    }
    if (optind < argc)
        return usage();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&gate_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (naddrs == 0)
        addrs[naddrs++] = "127.0.0.1:0";
    cn_log_configure(level, false);
    echo_ctx_t ctx = { 0 };
    cn_server_t *s = NULL;
    cn_err_t e = cn_server_create(&cfg, &s);
    if (e < 0) {
        fprintf(stderr, "net_test_server: %s\n", cn_strerror(e));
        return 1;
    }
    for (int i = 0; i < naddrs; i++) {
        lo.addr = addrs[i];
        if ((e = cn_server_listen(s, ad, &ctx, &lo)) < 0) {
            cn_server_destroy(s);
            return 1;
        }
    }
    the_srv = s;
    e = cn_server_run(s);
    cn_server_destroy(s);
    return e < 0 ? 1 : 0;
}
