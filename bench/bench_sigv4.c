/* bench_sigv4: the cost of verifying one SigV4-signed request, in the
 * process, with no sockets (the HTTP layer's share is measured by bench/s3.py).
 *
 *   bench_sigv4 [--iterations N] [--threads T] [--form presigned|header]
 *               [--count-allocs]
 *
 * Two realistic S3 GETs of a 4 KiB object, each verified N times per thread
 * through cn_sigv4_verify with a credential store that answers from memory:
 *   presigned_get   a presigned URL as boto3 writes it (SignedHeaders=host),
 *                   with the headers curl or a browser send beside it
 *   header_get      an Authorization-header GET as boto3 sends it
 *                   (host;x-amz-content-sha256;x-amz-date)
 * Prints "name value unit" lines: verifications per second of CPU time (per
 * core, whatever else the machine runs: the thread's own CPU clock), the same
 * per second of wall time over all threads, and the mean CPU time of one
 * verification.  --count-allocs instead counts the heap allocations OpenSSL
 * makes per verification (its allocator hooks, installed before its first
 * call; one warm-up verification first, so one-time fetches are excluded).
 * Every verification must succeed, or the program stops: a
 * benchmark of refusals would measure the wrong path.  Not a timed test.
 */
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cairn/crypto.h"
#include "cairn/sigv4.h"
#include "cairn/util.h"

#define ACCESS_KEY "CN3TQ7ZK5XW2M4HBENCH"
#define SECRET "q4Vd8rWmZp2LxT7nYc3KsB9fHj6GuE1aNoQiRl5S"
#define HOST "127.0.0.1:7448"
#define PATH "/bench/objects/4k/0000137.bin"
#define AMZ_DATE "20261203T181500Z"
#define SCOPE "20261203/us-east-1/s3/aws4_request"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct {
    const char *name;
    char query[1024];
    cn_http_kv_t headers[8];
    size_t n_headers;
    char authz[512];
} req_t;

static void die(const char *what)
{
    fprintf(stderr, "bench_sigv4: %s\n", what);
    exit(1);
}

static int lookup(void *ctx, const char *key, uint8_t *secret, size_t cap, size_t *len,
                  uint8_t tag[CN_SIGV4_TAG_LEN])
{
    (void)ctx;
    (void)tag; /* left zero: the verifier fingerprints the secret */
    if (strcmp(key, ACCESS_KEY) != 0)
        return CN_E_NOT_FOUND;
    *len = sizeof SECRET - 1;
    if (*len > cap)
        return CN_E_INVALID;
    memcpy(secret, SECRET, *len);
    return 0;
}

static void kv(req_t *r, const char *name, const char *value)
{
    r->headers[r->n_headers++] = (cn_http_kv_t){ name, strlen(name), value, strlen(value) };
}

/* The signature a client computes, through the module's own building blocks. */
static void sign(const char *query, const req_t *r, const char *signed_headers, const char *payload,
                 char sig[65])
{
    uint8_t key[32];
    cn_buf_t canon = { 0 };
    if (cn_sigv4_canonical_request(&canon, "GET", PATH, strlen(PATH), query, strlen(query),
                                   r->headers, r->n_headers, signed_headers, strlen(signed_headers),
                                   payload) != CN_OK)
        die("cannot build the canonical request");
    cn_sigv4_signing_key((const uint8_t *)SECRET, sizeof SECRET - 1, "20261203", "us-east-1", "s3",
                         key);
    cn_sigv4_sign(key, AMZ_DATE, SCOPE, (const char *)canon.data, canon.len, sig);
    cn_buf_free(&canon);
}

static void make_presigned(req_t *r)
{
    char sig[65];
    r->name = "presigned_get";
    kv(r, "Host", HOST);
    kv(r, "User-Agent", "curl/7.88.1");
    kv(r, "Accept", "*/*");
    int n = snprintf(r->query, sizeof r->query,
                     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" ACCESS_KEY
                     "%%2F20261203%%2Fus-east-1%%2Fs3%%2Faws4_request&X-Amz-Date=" AMZ_DATE
                     "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host");
    sign(r->query, r, "host", "UNSIGNED-PAYLOAD", sig);
    snprintf(r->query + n, sizeof r->query - (size_t)n, "&X-Amz-Signature=%s", sig);
}

static void make_header_signed(req_t *r)
{
    char sig[65];
    r->name = "header_get";
    kv(r, "Host", HOST);
    kv(r, "Accept-Encoding", "identity");
    kv(r, "User-Agent", "Boto3/1.26.27 Python/3.11.2 Linux/6.1 Botocore/1.29.27");
    kv(r, "X-Amz-Date", AMZ_DATE);
    kv(r, "X-Amz-Content-SHA256", EMPTY_SHA);
    kv(r, "amz-sdk-invocation-id", "7c0f3f2e-46a1-4c55-9a0e-8e8f9a6b7d21");
    kv(r, "amz-sdk-request", "attempt=1");
    sign("", r, "host;x-amz-content-sha256;x-amz-date", EMPTY_SHA, sig);
    snprintf(r->authz, sizeof r->authz,
             "AWS4-HMAC-SHA256 Credential=" ACCESS_KEY "/" SCOPE
             ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s",
             sig);
    kv(r, "Authorization", r->authz);
}

typedef struct {
    const req_t *req;
    long iterations;
    int64_t now_ms;
    double seconds, cpu_seconds;
} job_t;

/* OpenSSL's allocations, counted through CRYPTO_set_mem_functions. */
static atomic_long ossl_allocs;

static void *count_malloc(size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    atomic_fetch_add(&ossl_allocs, 1);
    return malloc(n);
}

static void *count_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    atomic_fetch_add(&ossl_allocs, 1);
    return realloc(p, n);
}

static void count_free(void *p, const char *file, int line)
{
    (void)file;
    (void)line;
    free(p);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
    job_t *j = arg;
    const req_t *r = j->req;
    cn_sigv4_input_t in = {
        .method = "GET",
        .path = PATH,
        .path_len = strlen(PATH),
        .query = r->query,
        .query_len = strlen(r->query),
        .headers = r->headers,
        .n_headers = r->n_headers,
        .now_ms = j->now_ms,
        .service = "s3",
        .region = "us-east-1",
    };
    int64_t t0 = cn_mono_ns();
    double c0 = cpu_now();
    for (long i = 0; i < j->iterations; i++) {
        cn_sigv4_t v;
        if (cn_sigv4_verify(&in, lookup, NULL, &v) != CN_OK) {
            fprintf(stderr, "bench_sigv4: %s refused: %s\n", r->name, v.detail);
            exit(1);
        }
        cn_sigv4_clear(&v);
    }
    j->cpu_seconds = cpu_now() - c0;
    j->seconds = (double)(cn_mono_ns() - t0) / 1e9;
    return NULL;
}

static void count_allocs(const req_t *r, long iterations, int64_t now_ms)
{
    job_t warm = { .req = r, .iterations = 1, .now_ms = now_ms };
    run(&warm);
    long before = atomic_load(&ossl_allocs);
    job_t j = { .req = r, .iterations = iterations, .now_ms = now_ms };
    run(&j);
    long n = atomic_load(&ossl_allocs) - before;
    printf("%s_openssl_allocs %.2f per_verification\n", r->name, (double)n / (double)iterations);
}

static void measure(const req_t *r, long iterations, int threads, int64_t now_ms)
{
    pthread_t tid[64];
    job_t jobs[64];
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job_t){ .req = r, .iterations = iterations, .now_ms = now_ms };
        if (pthread_create(&tid[t], NULL, run, &jobs[t]) != 0)
            die("pthread_create failed");
    }
    double wall = 0, cpu = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        if (jobs[t].seconds > wall)
            wall = jobs[t].seconds;
        cpu += jobs[t].cpu_seconds;
    }
    double total = (double)iterations * threads;
    printf("%s_verify %.0f ops_per_cpu_s\n", r->name, total / cpu);
    printf("%s_verify_wall %.0f ops_per_s threads=%d\n", r->name, total / wall, threads);
    printf("%s_verify_mean %.2f us_cpu\n", r->name, 1e6 * cpu / total);
}

int main(int argc, char **argv)
{
    long iterations = 200000;
    int threads = 1;
    const char *form = NULL; /* both */
    bool allocs = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--form") == 0 && i + 1 < argc) {
            form = argv[++i];
        } else if (strcmp(argv[i], "--count-allocs") == 0) {
            allocs = true;
        } else {
            fprintf(stderr, "usage: bench_sigv4 [--iterations N] [--threads T] "
                            "[--form presigned|header] [--count-allocs]\n");
            return 2;
        }
    }
    if (iterations < 1 || threads < 1 || threads > 64)
        die("iterations must be >= 1 and threads 1..64");
    if (allocs && !CRYPTO_set_mem_functions(count_malloc, count_realloc, count_free))
        die("OpenSSL allocated before its allocator could be counted");
    int64_t now_ms;
    if (cn_sigv4_parse_date(AMZ_DATE, 16, &now_ms) != CN_OK)
        die("bad date");
    now_ms += 60 * 1000; /* a minute after signing: inside both windows */
    static req_t presigned, header;
    make_presigned(&presigned);
    make_header_signed(&header);
    if (!form || strcmp(form, "presigned") == 0) {
        if (allocs)
            count_allocs(&presigned, iterations, now_ms);
        else
            measure(&presigned, iterations, threads, now_ms);
    }
    if (!form || strcmp(form, "header") == 0) {
        if (allocs)
            count_allocs(&header, iterations, now_ms);
        else
            measure(&header, iterations, threads, now_ms);
    }
    return 0;
}
