/* Relaying a socket's bytes to a connection without copying them through
 * user space (cn_conn_splice_from): splice(2) from the source socket into a
 * pipe, and from the pipe into the connection's socket.  For a worker
 * relaying another server's bytes (the Scribe gateway's reply streams).
 * It never runs on the loop or under TLS (the bytes would have to pass
 * through OpenSSL), never reads past the n bytes asked for, and never
 * leaves bytes behind in its pipe: what it took from the source has gone to
 * the connection when it returns CN_OK. */
#include "net/net_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "cairn/metrics.h"
#include "cairn/util.h"

/* A pipe's capacity asked for: one relay step moves at most this much. */
#define SPLICE_PIPE (1u << 20)

/* Moves up to want bytes from src into the pipe's write end w: *got > 0, or
 * an error.  A wait for src is bounded by src_idle_ms. */
static cn_err_t fill(int src, int w, size_t want, int src_idle_ms, size_t *got)
{
    for (;;) {
        ssize_t r = splice(src, NULL, w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (r > 0) {
            *got = (size_t)r;
            return CN_OK;
        }
        if (r == 0)
            return CN_E_CLOSED; /* the source ended early */
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return CN_E_CLOSED;
        /* The pipe is empty here, so EAGAIN is the source's: nothing yet. */
        CN_TRY(cn__wait_fd(src, POLLIN, cn_mono_ms() + src_idle_ms));
    }
}

/* Moves all n bytes in the pipe's read end r to c, by deadline. */
static cn_err_t drain(cn_conn_t *c, int r, size_t n, bool more, int64_t deadline)
{
    unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | (more ? SPLICE_F_MORE : 0);
    while (n) {
        ssize_t w = splice(r, NULL, c->fd, NULL, n, flags);
        if (w > 0) {
            cn_metric_add(c->ls->m.bytes_out, w);
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return errno == EPIPE || errno == ECONNRESET ? CN_E_CLOSED : -errno;
        CN_TRY(cn__wait_fd(c->fd, POLLOUT, deadline));
    }
    return CN_OK;
}

cn_err_t cn_conn_splice_from(cn_conn_t *c, int src, uint64_t n, int src_idle_ms, int64_t deadline)
{
    if (c->ssl || c->on_loop)
        return CN_E_UNSUPPORTED;
    if (!n)
        return CN_OK;
    CN_TRY(cn_conn_write_all(c, NULL, 0, deadline)); /* a pending reply's rest goes first */
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    long cap = fcntl(p[1], F_SETPIPE_SZ, (int)SPLICE_PIPE);
    size_t step = cap > 0 ? (size_t)cap : 65536; /* a refused size leaves the default */
    cn_err_t e = CN_OK;
    while (!e && n) {
        size_t want = n < step ? (size_t)n : step, got = 0;
        e = fill(src, p[1], want, src_idle_ms, &got);
        if (!e) {
            n -= got;
            e = drain(c, p[0], got, n != 0, deadline);
        }
    }
    close(p[0]);
    close(p[1]);
    return e;
}
