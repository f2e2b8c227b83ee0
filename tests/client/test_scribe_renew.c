/* The Scribe client's access-certificate renewal (src/client/scribe_tls.c,
 * issue 21): a long-lived client renews its access certificate once half
 * its lifetime has passed by monotonic elapsed time.  A clock injected
 * through cn__scribe_tls_clock stands in for CLOCK_MONOTONIC; the sign-in
 * state is written by hand (a P-256 device key and certificates made
 * here), and the "auth server" is a loopback listener that counts the
 * connections a renewal opens and closes them (so a renewal then fails,
 * which the client reports). */
#include "cn_test.h"

#include "client/scribe_tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NS UINT64_C(1000000000)
#define T0 (UINT64_C(5000) * NS)

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
    return fake_now;
}

/* The fake auth server: accepts, counts, closes. */
static int lfd = -1;
static atomic_int accepted;
static void *auth_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            return NULL;
        atomic_fetch_add(&accepted, 1);
        close(c);
    }
}

/* A certificate for k, valid from now + nb_off seconds for life seconds. */
static void write_cert(const char *path, EVP_PKEY *k, long nb_off, long life)
{
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), nb_off);
    X509_gmtime_adj(X509_getm_notAfter(x), nb_off + life);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"renew", -1, -1, 0);
    X509_set_issuer_name(x, n);
    X509_sign(x, k, EVP_sha256());
    FILE *f = fopen(path, "w");
    PEM_write_X509(f, x);
    fclose(f);
    X509_free(x);
}

static char dir[256], cdir[300];
static EVP_PKEY *key;

/* The sign-in state of `cairn repo login` with a cached access certificate
 * aged age seconds of a life-second lifetime. */
static void signin(int port, long age, long life)
{
    char p[400];
    snprintf(p, sizeof p, "%s/auth.key", cdir);
    FILE *f = fopen(p, "w");
    PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    snprintf(p, sizeof p, "%s/auth.cert", cdir);
    write_cert(p, key, -60, 86400);
    snprintf(p, sizeof p, "%s/auth.access", cdir);
    write_cert(p, key, -age, life);
    snprintf(p, sizeof p, "%s/auth.session", cdir);
    f = fopen(p, "w");
    fprintf(f, "server 127.0.0.1:%d\ntrust %s/auth.cert\nstate signed-in\n", port, cdir);
    fclose(f);
}

/* One identity call on a fresh context. */
static cn_err_t identity(bool renew, bool *direct, uint64_t *at)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char msg[400] = "";
    cn_err_t e = cn__scribe_tls_identity(ctx, renew, direct, at, msg, sizeof msg);
    SSL_CTX_free(ctx);
    return e;
}

static bool near(uint64_t v, uint64_t want)
{
    return v <= want && v + 10 * NS >= want; /* the wall clock moves during the test */
}

static void test_renewal(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    CN_CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 8) == 0);
    CN_CHECK(getsockname(lfd, (struct sockaddr *)&a, &al) == 0);
    int port = ntohs(a.sin_port);
    pthread_t th;
    pthread_create(&th, NULL, auth_thread, NULL);
    char *t = cn_test_tmpdir("renew");
    snprintf(dir, sizeof dir, "%s", t ? t : "");
    free(t);
    snprintf(cdir, sizeof cdir, "%s/cairn", dir);
    mkdir(cdir, 0700);
    setenv("XDG_CONFIG_HOME", dir, 1);
    unsetenv("CAIRN_AUTH_CREDENTIAL");
    unsetenv("CAIRN_SCRIBE_ANONYMOUS");
    key = EVP_EC_gen("P-256");
    cn__scribe_tls_clock = fake_clock;
    fake_now = T0;
    bool direct = false;
    uint64_t at = 0;

    /* A fresh cached certificate (one hour, just issued): used without a
     * round trip, due at half its lifetime from now on the monotonic clock. */
    signin(port, 0, 3600);
    CN_CHECK_EQ(identity(false, &direct, &at), CN_OK);
    CN_CHECK(direct);
    CN_CHECK(near(at, T0 + 1800 * NS));
    CN_CHECK_EQ(atomic_load(&accepted), 0);
    fake_now = at - 1;
    CN_CHECK(!cn__scribe_tls_renew_due(at));
    fake_now = at;
    CN_CHECK(cn__scribe_tls_renew_due(at));
    CN_CHECK(!cn__scribe_tls_renew_due(0)); /* anonymous: never */

    /* Due: the renewal asks auth even though the cached certificate looks
     * fresh by the wall clock (the fake closes, so it fails). */
    CN_CHECK(identity(true, &direct, &at) < 0);
    CN_CHECK(!direct && at == 0);
    CN_CHECK_EQ(atomic_load(&accepted), 1);

    /* A certificate cached 1,000 s ago by another process: due 800 s from
     * now (what is left of its first half-life). */
    fake_now = T0;
    signin(port, 1000, 3600);
    CN_CHECK_EQ(identity(false, &direct, &at), CN_OK);
    CN_CHECK(direct && near(at, T0 + 800 * NS));
    CN_CHECK_EQ(atomic_load(&accepted), 1);

    /* Past half its lifetime by the wall clock: fetched anew. */
    signin(port, 2000, 3600);
    CN_CHECK(identity(false, &direct, &at) < 0);
    CN_CHECK_EQ(atomic_load(&accepted), 2);

    /* An anonymous caller has nothing to renew. */
    setenv("CAIRN_SCRIBE_ANONYMOUS", "1", 1);
    CN_CHECK_EQ(identity(false, &direct, &at), CN_OK);
    CN_CHECK(!direct && at == 0);
    unsetenv("CAIRN_SCRIBE_ANONYMOUS");

    shutdown(lfd, SHUT_RDWR);
    pthread_join(th, NULL);
    close(lfd);
    EVP_PKEY_free(key);
    cn_test_rmtree(dir);
}

CN_TEST_MAIN(CN_TEST(test_renewal))
