/* Scribe protocol-4 handshakes per second (bench/scribe.py part (i)): each
 * connection is a fresh TCP connect, a full TLS 1.3 handshake with
 * X25519MLKEM768 (no session resumption), a protocol-4 control hello and
 * its hello-ok, then the close — what a `cairn repo` command costs the
 * server before its first request.  With an access certificate the hello
 * is caller 1 (direct), so the server resolves the principal: from its
 * authorization lease when cached, or by asking auth when cold (cairnd's
 * [scribe-tls] auth_cache_ms decides which; bench/scribe.py runs both).
 *
 * usage: bench_scribe_handshake HOST PORT CA SECONDS THREADS [CERT KEY]
 * Prints "handshakes N", "seconds S", "refused R" (hellos answered with an
 * error frame) and "failed F" (connect or TLS failures), one a line.  Exit 1
 * when no handshake completed, 2 on usage. */
#include "cairn/crypto.h"
#include "cairn/scribe.h"
#include "cairn/util.h"

#include <netdb.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct bench {
    const char *host, *port;
    SSL_CTX *ctx;
    bool direct;
    double until;
    atomic_ulong done, refused, failed;
} bench_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(const char *host, const char *port)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static bool read_all(SSL *ssl, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t r = 0;
        if (SSL_read_ex(ssl, p + got, n - got, &r) != 1)
            return false;
        got += r;
    }
    return true;
}

/* One connection: 1 hello-ok, 0 an error frame, -1 a failure. */
static int one(bench_t *b, const uint8_t *hello, size_t hlen)
{
    int fd = dial(b->host, b->port), rc = -1;
    SSL *ssl = fd >= 0 ? SSL_new(b->ctx) : NULL;
    uint8_t hdr[CN_SCRIBE_HDR_LEN], body[256];
    cn_scribe_hdr_t h;
    if (ssl && SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1 &&
        SSL_write(ssl, hello, (int)hlen) == (int)hlen && read_all(ssl, hdr, sizeof hdr) &&
        cn_scribe_hdr_parse(hdr, &h) == CN_OK && h.length <= sizeof body &&
        read_all(ssl, body, h.length))
        rc = (h.flags & CN_SCRIBE_FLAG_ERROR) ? 0 : 1;
    SSL_free(ssl);
    if (fd >= 0)
        close(fd);
    return rc;
}

static void *worker(void *arg)
{
    bench_t *b = arg;
    cn_buf_t payload = { 0 };
    cn_scribe_hello_t h = { .version = 4, .codec = 1, .client = cn_scribe_cstr("bench/hs") };
    h.caller = b->direct ? CN_SCRIBE_CALLER_DIRECT : CN_SCRIBE_CALLER_ANONYMOUS;
    if (cn_scribe_enc_hello(&payload, &h) != CN_OK)
        return NULL;
    size_t n = CN_SCRIBE_HDR_LEN + payload.len;
    uint8_t *frame = malloc(n);
    cn_scribe_hdr_t hdr = { CN_SCRIBE_OP_HELLO, 0, 1, (uint32_t)payload.len };
    if (frame) {
        cn_scribe_hdr_encode(frame, &hdr);
        memcpy(frame + CN_SCRIBE_HDR_LEN, payload.data, payload.len);
    }
    while (frame && now_s() < b->until) {
        int r = one(b, frame, n);
        atomic_fetch_add(r > 0 ? &b->done : r == 0 ? &b->refused : &b->failed, 1);
    }
    free(frame);
    cn_buf_free(&payload);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 8) {
        fputs("usage: bench_scribe_handshake HOST PORT CA SECONDS THREADS [CERT KEY]\n", stderr);
        return 2;
    }
    int threads = atoi(argv[5]);
    double secs = atof(argv[4]);
    if (threads < 1 || threads > 64 || secs <= 0) {
        fputs("bench_scribe_handshake: THREADS 1..64, SECONDS > 0\n", stderr);
        return 2;
    }
    bench_t b = { .host = argv[1], .port = argv[2], .direct = argc == 8 };
    if (cn_tls_client_ctx_new(CN_TLS_GROUPS_PQ_ONLY, &b.ctx) != CN_OK ||
        SSL_CTX_load_verify_locations(b.ctx, argv[3], NULL) != 1 ||
        (b.direct && (SSL_CTX_use_certificate_file(b.ctx, argv[6], SSL_FILETYPE_PEM) != 1 ||
                      SSL_CTX_use_PrivateKey_file(b.ctx, argv[7], SSL_FILETYPE_PEM) != 1))) {
        fputs("bench_scribe_handshake: cannot make the TLS context\n", stderr);
        SSL_CTX_free(b.ctx);
        return 1;
    }
    SSL_CTX_set_verify(b.ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(b.ctx, SSL_SESS_CACHE_OFF); /* every handshake full */
    pthread_t t[64];
    double t0 = now_s();
    b.until = t0 + secs;
    int started = 0;
    while (started < threads && pthread_create(&t[started], NULL, worker, &b) == 0)
        started++;
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    double took = now_s() - t0;
    unsigned long done = atomic_load(&b.done);
    printf("handshakes %lu\nseconds %.3f\nrefused %lu\nfailed %lu\n", done, took,
           atomic_load(&b.refused), atomic_load(&b.failed));
    SSL_CTX_free(b.ctx);
    return done ? 0 : 1;
}
