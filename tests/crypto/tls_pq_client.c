/* A TLS client made by cn_tls_client_ctx_new, for the integration tests: it
 * connects to HOST PORT with the group rule named (pq-only or hybrid-first),
 * sends one HTTP/1.1 GET of PATH, and prints "group NAME" and then the
 * response, so a test can assert the key exchange from the client's end.
 * It does not verify the server's certificate: the tests' are self-signed.
 * usage: tls_pq_client pq-only|hybrid-first HOST PORT PATH; exit 1 on failure. */
#include "cairn/crypto.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: tls_pq_client pq-only|hybrid-first HOST PORT PATH\n");
        return 2;
    }
    cn_tls_groups_t g =
        strcmp(argv[1], "pq-only") == 0 ? CN_TLS_GROUPS_PQ_ONLY : CN_TLS_GROUPS_HYBRID_FIRST;
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    int fd = -1, rc = 1;
    if (cn_tls_client_ctx_new(g, &ctx) != CN_OK || (fd = dial(argv[2], argv[3])) < 0)
        goto out;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1)
        goto out;
    printf("group %s\n", cn_tls_negotiated_group(ssl));
    char req[512], buf[4096];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                     argv[4], argv[2]);
    if (SSL_write(ssl, req, n) != n)
        goto out;
    while ((n = SSL_read(ssl, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, stdout);
    rc = 0;
out:
    ERR_print_errors_fp(stderr);
    SSL_free(ssl);
    if (fd >= 0)
        close(fd);
    SSL_CTX_free(ctx);
    return rc;
}
