/* One Jay client connection: dial (with a deadline), optional TLS, the
 * handshake, and one request/response exchange at a time through 64 KiB
 * buffered readers and writers.  Bodies stream: from an fd (sendfile(2) on
 * plaintext) or a callback, and to an fd or a callback. */
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

struct cn__jconn {
    int fd;
    int io_timeout_ms; /* the receive timeout between bytes */
    SSL *ssl;
    bool broken;   /* a failure left the stream in an unknown state */
    uint8_t *rbuf; /* CN__IO_BUF bytes; [rpos, rlen) unread */
    size_t rpos, rlen;
    uint8_t *wbuf; /* CN__IO_BUF bytes; [0, wlen) unsent */
    size_t wlen;
};

void cn__err_set(cn_jay_error_t *err, const char *fmt, ...)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static cn_err_t errno_err(int e)
{
    if (e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT)
        return CN_E_TIMEOUT;
    return -e;
}

/* ---- raw I/O ----------------------------------------------------------------- */

/* TLS writes go through write(2), which raises SIGPIPE on a reset peer.  A
 * library may not change the process's signal disposition, so the signal is
 * blocked on this thread for the write and any pending one is consumed. */
typedef struct {
    sigset_t old;
    bool pending_before;
} sigpipe_guard_t;

static void sigpipe_block(sigpipe_guard_t *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    g->pending_before = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void sigpipe_unblock(sigpipe_guard_t *g)
{
    if (!g->pending_before) {
        sigset_t set, pending;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            struct timespec zero = { 0, 0 };
            while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

static cn_err_t ssl_err(SSL *ssl, int rc)
{
    int e = SSL_get_error(ssl, rc);
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN)
        return CN_E_CLOSED;
    if (e == SSL_ERROR_SYSCALL)
        return errno ? errno_err(errno) : CN_E_CLOSED;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return CN_E_TIMEOUT;
    return CN_E_PROTOCOL;
}

/* Returns bytes read (> 0), CN_E_CLOSED at EOF, or an error. */
static long long raw_read(cn__jconn_t *c, void *buf, size_t n)
{
    for (;;) {
        if (c->ssl) {
            errno = 0;
            int rc = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
            if (rc > 0)
                return rc;
            return ssl_err(c->ssl, rc);
        }
        ssize_t rc = recv(c->fd, buf, n, 0);
        if (rc > 0)
            return rc;
        if (rc == 0)
            return CN_E_CLOSED;
        if (errno == EINTR)
            continue;
        return errno_err(errno);
    }
}

static cn_err_t raw_write(cn__jconn_t *c, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        if (c->ssl) {
            sigpipe_guard_t g;
            sigpipe_block(&g);
            errno = 0;
            int rc = SSL_write(c->ssl, b, n > INT32_MAX ? INT32_MAX : (int)n);
            cn_err_t e = rc > 0 ? CN_OK : ssl_err(c->ssl, rc);
            sigpipe_unblock(&g);
            if (e)
                return e;
            b += rc;
            n -= (size_t)rc;
            continue;
        }
        ssize_t rc = send(c->fd, b, n, MSG_NOSIGNAL);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            return errno_err(errno);
        }
        b += rc;
        n -= (size_t)rc;
    }
    return CN_OK;
}

static cn_err_t flush(cn__jconn_t *c)
{
    cn_err_t e = raw_write(c, c->wbuf, c->wlen);
    c->wlen = 0;
    return e;
}

static cn_err_t put_bytes(cn__jconn_t *c, const void *p, size_t n)
{
    const uint8_t *b = p;
    if (c->wlen + n > CN__IO_BUF) {
        CN_TRY(flush(c));
        if (n >= CN__IO_BUF)
            return raw_write(c, b, n);
    }
    memcpy(c->wbuf + c->wlen, b, n);
    c->wlen += n;
    return CN_OK;
}

/* Reads exactly n bytes through the buffer.  *got is set once any byte arrived. */
static cn_err_t get_bytes(cn__jconn_t *c, void *p, size_t n, bool *got)
{
    uint8_t *b = p;
    while (n > 0) {
        if (c->rpos == c->rlen) {
            long long r = raw_read(c, c->rbuf, CN__IO_BUF);
            if (r < 0)
                return (cn_err_t)r;
            c->rpos = 0;
            c->rlen = (size_t)r;
            if (got)
                *got = true;
        }
        size_t k = c->rlen - c->rpos;
        if (k > n)
            k = n;
        memcpy(b, c->rbuf + c->rpos, k);
        c->rpos += k;
        b += k;
        n -= k;
    }
    return CN_OK;
}

/* ---- dial and handshake ---------------------------------------------------------- */

static void set_rcv_timeout(int fd, int ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static cn_err_t dial(const cn__jcfg_t *cfg, int *out, cn_jay_error_t *err)
{
    struct addrinfo hints = { 0 }, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(cfg->host, cfg->port, &hints, &res);
    if (g != 0) {
        cn__err_set(err, "cannot resolve %s: %s", cfg->host, gai_strerror(g));
        return g == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
    }
    cn_err_t last = -ECONNREFUSED;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd =
            socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            last = -errno;
            continue;
        }
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = { fd, POLLOUT, 0 };
            do {
                rc = poll(&pfd, 1, cfg->connect_timeout_ms);
            } while (rc < 0 && errno == EINTR);
            if (rc == 0) {
                errno = ETIMEDOUT;
                rc = -1;
            } else if (rc > 0) {
                int soerr = 0;
                socklen_t sl = sizeof soerr;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                errno = soerr;
                rc = soerr ? -1 : 0;
            }
        }
        if (rc < 0) {
            last = errno == ETIMEDOUT ? CN_E_TIMEOUT : -errno;
            close(fd);
            continue;
        }
        int fl = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        set_rcv_timeout(fd, cfg->io_timeout_ms);
        struct timeval tv = { cfg->io_timeout_ms / 1000, (cfg->io_timeout_ms % 1000) * 1000 };
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        freeaddrinfo(res);
        *out = fd;
        return CN_OK;
    }
    freeaddrinfo(res);
    cn__err_set(err, "cannot connect to %s:%s: %s", cfg->host, cfg->port, cn_strerror(last));
    return last;
}

static cn_err_t handshake(cn__jconn_t *c, const cn__jcfg_t *cfg, cn_jay_error_t *err)
{
    cn_buf_t hello = { 0 };
    cn_err_t e = cn_jay_hello_encode(&hello, cfg->token, strlen(cfg->token));
    if (e) {
        cn__err_set(err, "the credential cannot be sent (%s)", cn_strerror(e));
        return e == CN_E_LIMIT ? CN_E_LIMIT : CN_E_AUTH;
    }
    e = put_bytes(c, hello.data, hello.len);
    if (!e)
        e = flush(c);
    /* The credential is a secret: do not leave it in freed memory. */
    OPENSSL_cleanse(hello.data, hello.len);
    cn_buf_free(&hello);
    if (e) {
        cn__err_set(err, "sending the handshake failed: %s", cn_strerror(e));
        return e;
    }
    uint8_t reply[CN_JAY_WELCOME_LEN];
    e = get_bytes(c, reply, sizeof reply, NULL);
    if (e == CN_E_CLOSED || e == -ECONNRESET) {
        /* A torn handshake gets no answer: this is the network, not a refusal. */
        cn__err_set(err, "the server closed the connection during the handshake "
                         "(network failure, not a rejection)");
        return CN_E_CLOSED;
    }
    if (e) {
        cn__err_set(err, "reading the handshake reply failed: %s", cn_strerror(e));
        return e;
    }
    cn_jay_welcome_t w;
    if (cn_jay_welcome_decode(reply, sizeof reply, &w) != CN_OK) {
        cn__err_set(err, "the server's handshake reply is not Jay v1");
        return CN_E_PROTOCOL;
    }
    switch (w.status) {
    case CN_JAY_HS_OK: return CN_OK;
    case CN_JAY_HS_AUTH_FAILED:
        cn__err_set(err, "authentication failed: credentials rejected");
        e = CN_E_AUTH;
        break;
    case CN_JAY_HS_VERSION_MISMATCH:
        cn__err_set(err, "the server does not speak Jay version 1 (it answered version %u)",
                    w.version);
        e = CN_E_UNSUPPORTED;
        break;
    case CN_JAY_HS_SERVER_BUSY:
        cn__err_set(err, "server busy: connection limit reached");
        e = CN_E_BUSY;
        break;
    case CN_JAY_HS_MALFORMED:
        cn__err_set(err, "the server rejected the handshake as malformed");
        e = CN_E_PROTOCOL;
        break;
    default:
        cn__err_set(err, "unknown handshake status 0x%02x", w.status);
        e = CN_E_PROTOCOL;
        break;
    }
    if (err)
        err->hs_status = w.status;
    return e;
}

cn_err_t cn__jconn_open(const cn__jcfg_t *cfg, cn__jconn_t **out, cn_jay_error_t *err)
{
    cn_err_t e;
    cn__jconn_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->fd = -1;
    c->rbuf = malloc(CN__IO_BUF);
    c->wbuf = malloc(CN__IO_BUF);
    if (!c->rbuf || !c->wbuf) {
        e = -ENOMEM;
        goto fail;
    }
    c->io_timeout_ms = cfg->io_timeout_ms;
    e = dial(cfg, &c->fd, err);
    if (e)
        goto fail;
    if (cfg->ssl_ctx) {
        c->ssl = SSL_new(cfg->ssl_ctx);
        if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
            cn__err_set(err, "TLS set-up failed");
            e = CN_E_PROTOCOL;
            goto fail;
        }
        SSL_set_tlsext_host_name(c->ssl, cfg->host);
        if (SSL_get_verify_mode(c->ssl) != SSL_VERIFY_NONE)
            SSL_set1_host(c->ssl, cfg->host);
        sigpipe_guard_t g;
        sigpipe_block(&g);
        int rc = SSL_connect(c->ssl);
        sigpipe_unblock(&g);
        if (rc != 1) {
            unsigned long le = ERR_peek_last_error();
            char why[256] = "";
            if (le)
                ERR_error_string_n(le, why, sizeof why);
            long vr = SSL_get_verify_result(c->ssl);
            cn__err_set(err, "TLS handshake with %s failed: %s", cfg->host,
                        vr != X509_V_OK ? X509_verify_cert_error_string(vr)
                                        : (why[0] ? why : "connection closed"));
            ERR_clear_error();
            e = CN_E_PROTOCOL;
            goto fail;
        }
    }
    e = handshake(c, cfg, err);
    if (e)
        goto fail;
    *out = c;
    return CN_OK;
fail:
    cn__jconn_close(c);
    return e;
}

void cn__jconn_close(cn__jconn_t *c)
{
    if (!c)
        return;
    if (c->ssl) {
        if (!c->broken) {
            sigpipe_guard_t g;
            sigpipe_block(&g);
            SSL_shutdown(c->ssl);
            sigpipe_unblock(&g);
        }
        SSL_free(c->ssl);
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c->rbuf);
    free(c->wbuf);
    free(c);
}

bool cn__jconn_reusable(const cn__jconn_t *c)
{
    return !c->broken;
}

/* Between exchanges the server sends nothing: a readable socket is its close
 * (idle reaping, a restart) or bytes that would desynchronise the stream.
 * Over TLS a readable record may be a late session ticket, which is harmless;
 * only a clean EOF or an error condemns the connection there. */
static bool idle_socket_ok(cn__jconn_t *c)
{
    if (c->rpos != c->rlen || (c->ssl && SSL_pending(c->ssl) > 0))
        return false;
    uint8_t b;
    ssize_t n;
    do {
        n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK;
    return n > 0 && c->ssl != NULL;
}

bool cn__jconn_alive(cn__jconn_t *c)
{
    if (!c->broken && !idle_socket_ok(c))
        c->broken = true; /* nothing more may be written on it, not even a TLS close */
    return !c->broken;
}

/* ---- one exchange ------------------------------------------------------------------ */

static cn_err_t send_body(cn__jconn_t *c, cn_client_body_t *b, int64_t len)
{
    int64_t sent = 0;
    uint8_t *chunk = NULL;
    cn_err_t e = CN_OK;
    /* Plaintext from a regular file: hand the copy to the kernel. */
    if (!c->ssl && b->fd >= 0) {
        struct stat st;
        if (fstat(b->fd, &st) == 0 && S_ISREG(st.st_mode)) {
            CN_TRY(flush(c));
            while (sent < len) {
                size_t want = (size_t)(len - sent > (1 << 30) ? (1 << 30) : len - sent);
                ssize_t n = sendfile(c->fd, b->fd, NULL, want);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n < 0 && (errno == EINVAL || errno == ENOSYS) && sent == 0)
                    break; /* this pair cannot sendfile: fall back to copying */
                if (n < 0)
                    return errno_err(errno);
                if (n == 0)
                    return CN_E_LENGTH_MISMATCH;
                sent += n;
                if (b->progress)
                    b->progress(b->progress_ud, sent);
            }
            if (sent == len)
                return CN_OK;
        }
    }
    chunk = malloc(CN__IO_BUF);
    if (!chunk)
        return -ENOMEM;
    while (sent < len) {
        size_t want = (size_t)(len - sent > CN__IO_BUF ? CN__IO_BUF : len - sent);
        long long n;
        if (b->fd >= 0) {
            n = read(b->fd, chunk, want);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                n = -errno;
        } else {
            n = b->read(b->ud, chunk, want);
        }
        if (n < 0) {
            e = (cn_err_t)n;
            goto out;
        }
        if (n == 0) {
            e = CN_E_LENGTH_MISMATCH;
            goto out;
        }
        e = put_bytes(c, chunk, (size_t)n);
        if (e)
            goto out;
        sent += n;
        if (b->progress)
            b->progress(b->progress_ud, sent);
    }
out:
    free(chunk);
    return e;
}

static cn_err_t sink_write(cn_client_sink_t *s, const void *p, size_t n)
{
    if (s->fd >= 0)
        return cn_write_full(s->fd, p, n);
    return s->write(s->ud, p, n);
}

/* A body this large is read in pieces of up to BIG_PIECE bytes straight
 * from the socket, never past its end (what follows is the next frame's):
 * a sixteenth of the system calls and wake-ups of 64 KiB reads. */
#define BIG_PIECE ((size_t)1 << 20)
static cn_err_t recv_big(cn__jconn_t *c, cn_client_sink_t *s, int64_t len, int64_t *served)
{
    uint8_t *big = malloc(BIG_PIECE);
    cn_err_t e = big ? CN_OK : -ENOMEM;
    while (e == CN_OK && len - *served >= (int64_t)CN__IO_BUF) {
        size_t want = len - *served < (int64_t)BIG_PIECE ? (size_t)(len - *served) : BIG_PIECE;
        long long r = raw_read(c, big, want);
        if (r < 0)
            e = (cn_err_t)r;
        else if (s && (e = sink_write(s, big, (size_t)r)) == CN_OK && s->progress)
            s->progress(s->progress_ud, *served + r);
        if (r > 0)
            *served += r;
    }
    free(big);
    return e;
}

/* Delivers (or, with no sink, discards) len body bytes. */
static cn_err_t recv_body(cn__jconn_t *c, cn_client_sink_t *s, int64_t len, int64_t *served)
{
    *served = 0;
    while (*served < len) {
        if (c->rpos == c->rlen && len - *served >= (int64_t)BIG_PIECE) {
            CN_TRY(recv_big(c, s, len, served));
            continue;
        }
        if (c->rpos == c->rlen) {
            long long r = raw_read(c, c->rbuf, CN__IO_BUF);
            if (r < 0)
                return (cn_err_t)r;
            c->rpos = 0;
            c->rlen = (size_t)r;
        }
        size_t k = c->rlen - c->rpos;
        if ((int64_t)k > len - *served)
            k = (size_t)(len - *served);
        if (s)
            CN_TRY(sink_write(s, c->rbuf + c->rpos, k));
        c->rpos += k;
        *served += (int64_t)k;
        if (s && s->progress)
            s->progress(s->progress_ud, *served);
    }
    return CN_OK;
}

static cn_err_t read_response(cn__jconn_t *c, cn__jcall_t *call, cn_jay_error_t *err)
{
    uint8_t h[CN_JAY_HDR_LEN];
    cn_err_t e = get_bytes(c, h, sizeof h, &call->got_byte);
    if (e) {
        cn__err_set(err, "reading the response failed: %s", cn_strerror(e));
        return e;
    }
    e = cn_jay_hdr_decode(h, sizeof h, &call->rh);
    if (e) {
        cn__err_set(err, "the server sent a bad frame header (%s)",
                    e == CN_E_LIMIT ? "meta_len over 1 MiB" : "negative data_len");
        return CN_E_PROTOCOL;
    }
    cn_buf_reset(&call->rmeta);
    CN_TRY(cn_buf_reserve(&call->rmeta, call->rh.meta_len));
    e = get_bytes(c, call->rmeta.data, call->rh.meta_len, NULL);
    if (e) {
        cn__err_set(err, "reading the response metadata failed: %s", cn_strerror(e));
        return e;
    }
    call->rmeta.len = call->rh.meta_len;
    cn_client_sink_t *sink = call->rh.code == CN_JAY_ST_OK ? call->sink : NULL;
    e = recv_body(c, sink, call->rh.data_len, &call->served);
    if (e)
        cn__err_set(err, "receiving the response body failed: %s", cn_strerror(e));
    return e;
}

cn_err_t cn__jconn_call(cn__jconn_t *c, cn__jcall_t *call, cn_jay_error_t *err)
{
    call->got_byte = false;
    call->served = 0;
    cn_jay_hdr_t req;
    if (c->broken || cn_jay_hdr_decode(call->frame, call->frame_len, &req) != CN_OK) {
        cn__err_set(err, "internal: unusable connection or frame");
        return CN_E_INVALID;
    }
    cn_err_t e = put_bytes(c, call->frame, call->frame_len);
    if (!e && req.data_len > 0)
        e = send_body(c, call->body, req.data_len);
    if (!e)
        e = flush(c);
    if (e) {
        c->broken = true;
        if (e == CN_E_LENGTH_MISMATCH) {
            cn__err_set(err, "the upload source ended before its declared %lld bytes",
                        (long long)req.data_len);
            return e;
        }
        /* The server may have answered (e.g. EntityTooLarge) and closed before
         * taking the whole body: prefer its answer to our write error. */
        if (e != CN_E_TIMEOUT && read_response(c, call, NULL) == CN_OK)
            return CN_OK;
        cn__err_set(err, "sending the request failed: %s", cn_strerror(e));
        return e;
    }
    bool longer = call->reply_timeout_ms > c->io_timeout_ms;
    if (longer)
        set_rcv_timeout(c->fd, call->reply_timeout_ms);
    e = read_response(c, call, err);
    if (longer)
        set_rcv_timeout(c->fd, c->io_timeout_ms);
    if (e)
        c->broken = true;
    return e;
}
