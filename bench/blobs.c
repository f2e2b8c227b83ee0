/* bench_blobs: the blob operation family over HTTP, through libcairn's blob
 * client, against the machine's zero-copy loopback limit measured in the
 * same run.
 *
 *   bench_blobs --cairnd PATH --cairn PATH [--quick] [--conns 1,16,64] [--dir DIR]
 *
 * It starts its own cairnd instances (loopback, ephemeral ports, scratch data
 * dirs under DIR, stopped at the end) and prints "name value unit" lines:
 *   loopback_sendfile      sendfile(2) of a page-cached file over loopback TCP
 *                          to a reader that discards (best of 2): the zero-copy
 *                          limit, MB/s
 *   blobs_put_large        one 1 GiB put, MB/s
 *   blobs_get_large        one 1 GiB verified fetch (the client hashes every
 *                          byte), MB/s, and _ratio to loopback_sendfile
 *   blobs_get_large_unverified  the same fetch by plain libcurl, unhashed:
 *                          the server's zero-copy path alone
 *   blobs_put_16k_cN       16 KiB puts over N connections, blobs/s
 *   blobs_get_16k_cN       16 KiB verified fetches over N connections, blobs/s
 *   blobs_have_10k         one have of 10,000 digests, ms (best of 5)
 *   blobs_sync_10k         `cairn blob sync --all` of the 10,000 small blobs
 *                          between two servers, blobs/s (and seconds)
 * --quick shrinks the sizes (64 MiB, 1,000 blobs) for a smoke run.
 */
#include "cairn/blobs_client.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "bench:bench-secret-0123456789abcdef"
#define NS "bench"             /* the small blobs (what sync copies) */
#define NS_LARGE "bench-large" /* the 1 GiB blob */
#define SMALL 16384

static const char *g_cairnd, *g_cairn, *g_dir = "/var/tmp";
static uint64_t g_big = 1ull << 30;
static size_t g_count = 10000;

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_blobs: %s: %s\n", what, rc < 0 ? cn_strerror(rc) : strerror(errno));
    exit(1);
}

static double now_s(void)
{
    return (double)cn_mono_ns() / 1e9;
}

/* ---- servers ------------------------------------------------------------------ */
typedef struct {
    pid_t pid;
    char dir[512];
    char url[64];
} server_t;

static void server_start(server_t *s, const char *name)
{
    snprintf(s->dir, sizeof s->dir, "%s/bench-blobs-%s-%d", g_dir, name, (int)getpid());
    char log[600];
    snprintf(log, sizeof log, "%s.log", s->dir);
    unlink(log);
    s->pid = fork();
    if (s->pid < 0)
        die("fork", 0);
    if (s->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        setenv("CAIRN_ADMIN_TOKEN", TOKEN, 1);
        execl(g_cairnd, g_cairnd, "--data", s->dir, "--jay", "off", "--scribe", "off", "--http",
              "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 300; i++) {
        FILE *f = fopen(log, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            char *p = strstr(line, "listening http on 127.0.0.1:");
            if (p) {
                snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d",
                         atoi(p + strlen("listening http on 127.0.0.1:")));
                fclose(f);
                return;
            }
        }
        if (f)
            fclose(f);
        usleep(20000);
    }
    die("cairnd did not start", 0);
}

static void server_stop(server_t *s)
{
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.log'", s->dir, s->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_blobs: could not remove %s\n", s->dir);
}

/* ---- the zero-copy loopback limit --------------------------------------------- */
static void *drain_main(void *arg)
{
    int fd = *(int *)arg;
    char *buf = malloc(1 << 20);
    while (recv(fd, buf, 1 << 20, 0) > 0)
        ;
    free(buf);
    return NULL;
}

static double loopback_sendfile(const char *path, uint64_t len)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 1) < 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) < 0)
        die("loopback listen", 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a) < 0)
        die("loopback connect", 0);
    int srv = accept(ls, NULL, NULL);
    pthread_t th;
    pthread_create(&th, NULL, drain_main, &c);
    int fd = open(path, O_RDONLY);
    double t0 = now_s();
    off_t off = 0;
    while ((uint64_t)off < len)
        if (sendfile(srv, fd, &off, (size_t)(len - (uint64_t)off)) <= 0)
            die("sendfile", 0);
    shutdown(srv, SHUT_WR);
    pthread_join(th, NULL);
    double dt = now_s() - t0;
    close(fd);
    close(srv);
    close(c);
    close(ls);
    return (double)len / dt / 1e6;
}

/* ---- large ---------------------------------------------------------------------- */
static ssize_t fd_source(void *ctx, void *buf, size_t max)
{
    return read(*(int *)ctx, buf, max);
}

static cn_err_t discard(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
    return CN_OK;
}

/* The server's side alone: the same fetch by plain libcurl, bytes discarded
 * unhashed (what the zero-copy path delivers before the consumer's check). */
static size_t curl_discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

static double raw_fetch(const char *url, const cn_digest_t *d, uint64_t len)
{
    char hex[CN_DIGEST_HEX_LEN + 1], body[256], full[128];
    cn_digest_hex(d, hex);
    snprintf(body, sizeof body, "{\"namespace\":\"%s\",\"digest\":\"%s\"}", NS_LARGE, hex);
    snprintf(full, sizeof full, "%s/_cairn/ops/channels/blobs/sub", url);
    CURL *h = curl_easy_init();
    struct curl_slist *hd = curl_slist_append(NULL, "Authorization: Bearer " TOKEN);
    curl_easy_setopt(h, CURLOPT_URL, full);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_discard);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 1L << 20);
    double t0 = now_s();
    CURLcode cc = curl_easy_perform(h);
    double dt = now_s() - t0;
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    if (cc != CURLE_OK)
        die("raw fetch", 0);
    return (double)len / dt / 1e6;
}

/* ---- small, over N connections ------------------------------------------------------ */
typedef struct {
    const char *url;
    cn_digest_t *digests;
    size_t from, to;
    bool get;
    cn_err_t rc;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    cn_blobc_t *c = NULL;
    if ((w->rc = cn_blobc_new(w->url, TOKEN, &c)) < 0)
        return NULL;
    uint8_t *buf = malloc(SMALL);
    for (size_t i = w->from; i < w->to && w->rc >= 0; i++) {
        if (w->get) {
            w->rc = cn_blobc_get(c, NS, &w->digests[i], NULL, discard, NULL, NULL, NULL, NULL);
        } else {
            /* unique, incompressible content per index */
            cn_digest_t seed;
            uint64_t k = i;
            cn_blake3(&k, sizeof k, &seed);
            for (size_t j = 0; j < SMALL; j += CN_DIGEST_LEN) {
                memcpy(buf + j, seed.b, CN_DIGEST_LEN);
                seed.b[0]++;
            }
            cn_blobc_put_result_t res;
            w->rc = cn_blobc_put_buf(c, NS, buf, SMALL, &res);
            w->digests[i] = res.digest;
        }
    }
    free(buf);
    cn_blobc_free(c);
    return NULL;
}

static double run_small(const char *url, cn_digest_t *digests, size_t n, int conns, bool get)
{
    pthread_t th[64];
    worker_t w[64];
    double t0 = now_s();
    for (int i = 0; i < conns; i++) {
        w[i] = (worker_t){
            url, digests, n * (size_t)i / (size_t)conns, n * (size_t)(i + 1) / (size_t)conns, get, 0
        };
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < conns; i++) {
        pthread_join(th[i], NULL);
        if (w[i].rc < 0)
            die(get ? "small get" : "small put", w[i].rc);
    }
    return (double)n / (now_s() - t0);
}

int main(int argc, char **argv)
{
    const char *conns_arg = "1,16,64";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            g_big = 64ull << 20;
            g_count = 1000;
        } else if (i + 1 < argc && !strcmp(argv[i], "--cairnd")) {
            g_cairnd = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--cairn")) {
            g_cairn = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--conns")) {
            conns_arg = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--dir")) {
            g_dir = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_blobs --cairnd PATH --cairn PATH [--quick] "
                            "[--conns 1,16,64] [--dir DIR]\n");
            return 2;
        }
    }
    if (!g_cairnd || !g_cairn) {
        fprintf(stderr, "bench_blobs: --cairnd and --cairn are required\n");
        return 2;
    }
    cn_log_configure(CN_LOG_WARN, false);
    signal(SIGPIPE, SIG_IGN);

    /* a page-cached file of pseudo-random bytes */
    char path[600];
    snprintf(path, sizeof path, "%s/bench-blobs-%d.bin", g_dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die(path, 0);
    uint8_t *chunk = malloc(1 << 20);
    for (uint64_t off = 0; off < g_big; off += 1 << 20) {
        cn_random_bytes(chunk, 1 << 20);
        if (cn_write_full(fd, chunk, 1 << 20) < 0)
            die("write", 0);
    }
    free(chunk);
    double limit = 0;
    for (int k = 0; k < 2; k++) {
        double mbs = loopback_sendfile(path, g_big);
        limit = mbs > limit ? mbs : limit;
    }
    printf("loopback_sendfile %.1f MB/s\n", limit);

    server_t a, b;
    server_start(&a, "a");
    cn_blobc_t *c = NULL;
    CN_TRY(cn_blobc_new(a.url, TOKEN, &c));
    lseek(fd, 0, SEEK_SET);
    cn_blobc_put_result_t big;
    double t0 = now_s();
    cn_err_t rc = cn_blobc_put(c, NS_LARGE, NULL, (int64_t)g_big, fd_source, &fd, NULL, NULL, &big);
    if (rc < 0)
        die("large put", rc);
    printf("blobs_put_large %.1f MB/s\n", (double)g_big / (now_s() - t0) / 1e6);
    close(fd);
    unlink(path);
    double best = 0;
    for (int k = 0; k < 2; k++) {
        t0 = now_s();
        rc = cn_blobc_get(c, NS_LARGE, &big.digest, NULL, discard, NULL, NULL, NULL, NULL);
        if (rc < 0)
            die("large get", rc);
        double mbs = (double)g_big / (now_s() - t0) / 1e6;
        best = mbs > best ? mbs : best;
    }
    printf("blobs_get_large %.1f MB/s\n", best);
    double raw = 0;
    for (int k = 0; k < 2; k++) {
        double mbs = raw_fetch(a.url, &big.digest, g_big);
        raw = mbs > raw ? mbs : raw;
    }
    printf("blobs_get_large_unverified %.1f MB/s (server path alone; ratio %.2f)\n", raw,
           raw / limit);
    printf("blobs_get_large_ratio %.2f x (target >= 0.85 x loopback_sendfile)\n", best / limit);

    cn_digest_t *digests = calloc(g_count, sizeof *digests);
    char list[64];
    snprintf(list, sizeof list, "%s", conns_arg);
    bool first = true;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int n = atoi(tok);
        if (n < 1 || n > 64)
            continue;
        /* the first round's puts make the blobs; later rounds re-put them (CAS) */
        printf("blobs_put_16k_c%d %.0f blobs/s%s\n", n,
               run_small(a.url, digests, g_count, n, false), first ? "" : " (re-puts)");
        printf("blobs_get_16k_c%d %.0f blobs/s\n", n, run_small(a.url, digests, g_count, n, true));
        first = false;
    }

    /* have of 10,000 digests: the count blobs present, the rest absent */
    size_t nh = 10000;
    cn_digest_t *probe = calloc(nh, sizeof *probe);
    bool *present = calloc(nh, sizeof *present);
    for (size_t i = 0; i < nh; i++) {
        if (i < g_count)
            probe[i] = digests[i];
        else
            cn_blake3(&i, sizeof i, &probe[i]);
    }
    double hbest = 1e9;
    for (int k = 0; k < 5; k++) {
        t0 = now_s();
        if ((rc = cn_blobc_have(c, NS, probe, nh, NULL, present)) < 0)
            die("have", rc);
        double ms = (now_s() - t0) * 1e3;
        hbest = ms < hbest ? ms : hbest;
    }
    printf("blobs_have_10k %.1f ms (target < 50 ms)\n", hbest);
    cn_blobc_free(c);

    server_start(&b, "b");
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "CAIRN_TOKEN=%s '%s' blob sync --from %s --to %s --namespace %s "
             "--all --quiet",
             TOKEN, g_cairn, a.url, b.url, NS);
    t0 = now_s();
    int st = system(cmd);
    double dt = now_s() - t0;
    if (st != 0)
        die("sync", 0);
    printf("blobs_sync_%zuk %.0f blobs/s (%.1f s)\n", g_count / 1000, (double)g_count / dt, dt);
    server_stop(&b);
    server_stop(&a);
    free(probe);
    free(present);
    free(digests);
    return 0;
}
