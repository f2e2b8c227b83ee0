/* A plaintext-to-TLS relay for tests/scribe/test_scribe_v4.py: Python's ssl
 * cannot offer X25519MLKEM768, so the tests speak raw SCR1 frames to this
 * relay, which carries each connection into a TLS 1.3 session made by
 * cn_tls_client_ctx_new (pq-only) to HOST PORT.  A closed TLS side closes
 * the plaintext side, so "the server closed" stays observable.  It does not
 * verify the server's certificate (the tests' are throwaway).
 * usage: scribe_tls_proxy IPV4 PORT [CERT KEY]; prints "port N" once
 * listening.  CERT and KEY: a client certificate every session presents.
 * SCRIBE_TLS_PROXY_SOURCE=IPV4 in the environment: the address the TLS
 * side connects from (another source for the server's admission, e.g.
 * 127.0.0.2; tests/sau2/test_sau2_admission.py).  The relay carries any
 * framing, SAU2's too. */
#include "cairn/crypto.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *g_host, *g_port;
static SSL_CTX *g_ctx;

/* The server is an IPv4 literal (the tests' 127.0.0.1). */
static int dial(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(g_port)) };
    if (inet_pton(AF_INET, g_host, &sa.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    const char *from = getenv("SCRIBE_TLS_PROXY_SOURCE");
    struct sockaddr_in src = { .sin_family = AF_INET };
    if (fd >= 0 && from && *from &&
        (inet_pton(AF_INET, from, &src.sin_addr) != 1 ||
         bind(fd, (struct sockaddr *)&src, sizeof src) != 0)) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Relays one accepted connection until either side closes. */
static void *relay(void *arg)
{
    int pfd = (int)(intptr_t)arg, tfd = dial();
    SSL *ssl = tfd >= 0 ? SSL_new(g_ctx) : NULL;
    char buf[65536];
    if (!ssl || SSL_set_fd(ssl, tfd) != 1 || SSL_connect(ssl) != 1)
        goto out;
    for (;;) {
        struct pollfd p[2] = { { pfd, POLLIN, 0 }, { tfd, POLLIN, 0 } };
        if (SSL_pending(ssl) == 0 && poll(p, 2, -1) < 0)
            break;
        if (SSL_pending(ssl) > 0 || (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            int n = SSL_read(ssl, buf, sizeof buf);
            if (n <= 0 && SSL_get_error(ssl, n) == SSL_ERROR_WANT_READ)
                continue; /* a post-handshake record (a session ticket) only */
            if (n <= 0 || send(pfd, buf, (size_t)n, MSG_NOSIGNAL) != n)
                break;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(pfd, buf, sizeof buf, 0);
            if (n <= 0 || SSL_write(ssl, buf, (int)n) != (int)n)
                break;
        }
    }
out:
    ERR_clear_error();
    SSL_free(ssl);
    if (tfd >= 0)
        close(tfd);
    shutdown(pfd, SHUT_RDWR);
    close(pfd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 5) {
        fprintf(stderr, "usage: scribe_tls_proxy HOST PORT [CERT KEY]\n");
        return 2;
    }
    g_host = argv[1];
    g_port = argv[2];
    /* A server that closes before or during the TLS handshake (a refusal at
     * accept) must end that relay alone, not the process. */
    signal(SIGPIPE, SIG_IGN);
    if (cn_tls_client_ctx_new(CN_TLS_GROUPS_PQ_ONLY, &g_ctx) != CN_OK)
        return 1;
    /* SSL_read returns after a record without application data instead of
     * blocking for the next one: the relay must get back to poll(). */
    SSL_CTX_clear_mode(g_ctx, SSL_MODE_AUTO_RETRY);
    if (argc == 5 && (SSL_CTX_use_certificate_file(g_ctx, argv[3], SSL_FILETYPE_PEM) != 1 ||
                      SSL_CTX_use_PrivateKey_file(g_ctx, argv[4], SSL_FILETYPE_PEM) != 1))
        return 1;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
        return 1;
    printf("port %u\n", ntohs(sa.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_t t;
        if (pthread_create(&t, NULL, relay, (void *)(intptr_t)fd) != 0)
            close(fd);
        else
            pthread_detach(t);
    }
}
