/* The SAU2 auth service's costs through cn_sau2_handle, no sockets:
 * authorize-batch over 256 repositories (three requests: a request holds at
 * most 124), p50 and p99 of wall time and CPU per 256, and logins at the
 * argon2id cost chosen (t=3, 64 MiB, p=1: cn_auth_opts_t's defaults), CPU
 * and wall per login.  Prints `name value unit` lines (scripts/bench.sh).
 *
 * usage: bench_sau2 [--dir DIR] [--batches N] [--logins N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "cairn/crypto.h"
#include "cairn/meta.h"
#include "cairn/sau2.h"
#include "cairn/util.h"

#define PW "bench password 1234"
#define REPOS 256
#define PER_REQUEST 124

static cn_auth_t *auth;
static cn_sau2_req_t req;
static char keys[8][200], creds[8][33];
static int slot;

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A new Ed25519 key (hex SPKI) and credential id in the next slot. */
static int fresh(void)
{
    int s = slot++ % 8;
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    unsigned char der[128], *p = der;
    int n = i2d_PUBKEY(k, &p);
    cn_hex_encode(der, (size_t)n, keys[s]);
    EVP_PKEY_free(k);
    uint8_t b[16];
    cn_random_bytes(b, sizeof b);
    cn_hex_encode(b, sizeof b, creds[s]);
    return s;
}

/* Sends req (argv set by the caller) with operation id op; the reply's code,
 * and its first row's first string (a certificate) into pem when asked. */
static int ask(const cn_sau2_caller_t *caller, uint64_t op, const char *secret, char *pem,
               size_t cap)
{
    memset(req.op, 0, sizeof req.op);
    memcpy(req.op, &op, sizeof op);
    req.has_secret = secret != NULL;
    req.secret = (cn_sau2_str_t){ (const uint8_t *)secret, secret ? (uint16_t)strlen(secret) : 0 };
    cn_sau2_reply_t r = { 0 };
    if (cn_sau2_handle(auth, caller, &req, &r) != 0)
        return -1;
    int code = r.code;
    cn_buf_t out = { 0 };
    cn_sau2_reply_view_t v;
    cn_sau2_row_t row;
    size_t off = 0;
    if (pem && code == 0 && cn_sau2_enc_reply(&out, &r) == 0 &&
        cn_sau2_dec_reply(out.data + 8, out.len - 8, &v) == 0 && cn_sau2_row_next(&v, &off, &row))
        snprintf(pem, cap, "%.*s", row.s[0].len, (const char *)row.s[0].p);
    cn_buf_free(&out);
    cn_sau2_reply_free(&r);
    if (code)
        fprintf(stderr, "bench_sau2: %.*s -> %d %s\n", req.argv[0].len, (const char *)req.argv[0].p,
                code, r.message);
    return code;
}

static void args(int n, const char *const *v)
{
    req.argc = (uint16_t)n;
    for (int i = 0; i < n; i++)
        req.argv[i] = (cn_sau2_str_t){ (const uint8_t *)v[i], (uint16_t)strlen(v[i]) };
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sign-in (admin or not) with a fresh key; fills caller. */
static int sign_in(bool admin, uint64_t op, cn_sau2_caller_t *caller)
{
    static char pem[4200];
    int s = fresh();
    const char *v[] = { admin ? "admin-login" : "login", "admin", creds[s], keys[s] };
    args(4, v);
    int code = ask(NULL, op, PW, pem, sizeof pem);
    return code ? code : cn_auth_cert_caller(pem, strlen(pem), caller);
}

/* A server "store" for namespace "bench" with a credential; admin a maintainer. */
static int setup(cn_sau2_caller_t *admin, cn_sau2_caller_t *server)
{
    static char pem[4200], exp[24];
    if (sign_in(true, 1, admin))
        return 1;
    const char *srv[] = { "servers-add", "store", "bench", "s-1" };
    const char *gr[] = { "grants-set", "admin", "bench", "maintainer" };
    args(4, srv);
    if (ask(admin, 2, NULL, NULL, 0))
        return 1;
    args(4, gr);
    if (ask(admin, 3, NULL, NULL, 0))
        return 1;
    int s = fresh();
    snprintf(exp, sizeof exp, "%lld", (long long)(cn_wall_ms() + 86400000));
    const char *cred[] = { "credentials-add", "server", "store", creds[s], keys[s], exp, "bench" };
    args(7, cred);
    if (ask(admin, 4, NULL, pem, sizeof pem))
        return 1;
    return cn_auth_cert_caller(pem, strlen(pem), server) != 0;
}

/* n rounds of authorize-batch over 256 repositories for subject (NULL:
 * anonymous, which reads each repository's visibility), printed as label. */
static int bench_batch(const cn_sau2_caller_t *server, const cn_sau2_caller_t *subj, int n,
                       const char *label)
{
    static char names[REPOS][16];
    double *wall = calloc((size_t)n, sizeof *wall), cpu0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < REPOS; i++)
        snprintf(names[i], sizeof names[i], "repo-%03d", i);
    for (int k = 0; wall && k < n; k++) {
        double t0 = now_s(CLOCK_MONOTONIC);
        for (int first = 0; first < REPOS; first += PER_REQUEST) {
            const char *head[] = { "authorize-batch",        "bench", subj ? subj->credential : "",
                                   subj ? subj->key_id : "", "",      "" };
            args(6, head);
            for (int i = first; i < REPOS && i < first + PER_REQUEST; i++)
                req.argv[req.argc++] = (cn_sau2_str_t){ (const uint8_t *)names[i], 8 };
            if (ask(server, 0, NULL, NULL, 0))
                return 1;
        }
        wall[k] = now_s(CLOCK_MONOTONIC) - t0;
    }
    double cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    if (!wall)
        return 1;
    qsort(wall, (size_t)n, sizeof *wall, cmp_double);
    printf("authorize_batch256_%s_p50 %.1f us\n", label, wall[n / 2] * 1e6);
    printf("authorize_batch256_%s_p99 %.1f us\n", label, wall[(n * 99) / 100] * 1e6);
    printf("authorize_batch256_%s_cpu %.1f us\n", label, cpu / n * 1e6);
    free(wall);
    return 0;
}

static int bench_logins(int n)
{
    double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < n; i++) {
        cn_sau2_caller_t c;
        if (sign_in(false, 1000 + (uint64_t)i, &c))
            return 1;
    }
    double wall = now_s(CLOCK_MONOTONIC) - t0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("login_argon2id_t3_m64mib_cpu %.1f ms\n", cpu / n * 1e3);
    printf("login_argon2id_t3_m64mib_wall %.1f ms\n", wall / n * 1e3);
    printf("logins_per_cpu_second %.1f /s\n", n / cpu);
    return 0;
}

int main(int argc, char **argv)
{
    char tmpl[] = "/tmp/bench_sau2_XXXXXX";
    const char *dir = NULL;
    int batches = 200, logins = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--batches"))
            batches = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--logins"))
            logins = atoi(argv[i + 1]);
    }
    if (batches < 1 || logins < 1 || (!dir && !(dir = mkdtemp(tmpl)))) {
        fprintf(stderr, "usage: bench_sau2 [--dir DIR] [--batches N] [--logins N]\n");
        return 2;
    }
    cn_log_configure(CN_LOG_WARN, false);
    cn_meta_t *meta = NULL;
    cn_sau2_caller_t admin, server;
    int rc = 1;
    if (cn_meta_open(dir, NULL, &meta) == 0 && cn_auth_init(meta, dir, NULL, PW, NULL, 0) == 0 &&
        cn_auth_open(meta, dir, NULL, &auth) == 0 && setup(&admin, &server) == 0)
        rc = bench_batch(&server, &admin, batches, "granted") ||
             bench_batch(&server, NULL, batches, "anonymous") || bench_logins(logins);
    cn_auth_close(auth);
    cn_meta_close(meta);
    if (rc) {
        fprintf(stderr, "bench_sau2: failed (data in %s)\n", dir);
    } else if (dir == tmpl) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
        rc = system(cmd) != 0;
    }
    return rc;
}
