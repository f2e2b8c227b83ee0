/* Relaying a socket's bytes to a connection without copying them through
 * user space (cn_conn_splice_from): splice(2) from the source socket into a
 * pipe, and from the pipe into the connection's socket.  For a worker
 * relaying another server's bytes (the Scribe gateway's reply streams).
 * It never runs on the loop or under TLS (the bytes would have to pass
 * through OpenSSL), never reads past the n bytes asked for, and never
 * leaves bytes behind in its pipe: what it took from the source has gone to
 * the connection when it returns CN_OK.
 *
 * Each thread keeps its pipe, made and sized on its first call and closed
 * when the thread exits (a pthread key's destructor), so that a relay of
 * many small objects does not pay a pipe's four system calls per object.
 * The pipe is empty whenever cn_conn_splice_from returns: one that an error
 * left bytes in (the connection failed mid-drain) is closed and forgotten,
 * and the thread's next call makes a fresh one. */
#include "net/net_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "cairn/metrics.h"
#include "cairn/util.h"

/* A pipe's capacity asked for: one relay step moves at most this much.
 * Kept pipes count against the user's pipe pages (fs.pipe-user-pages-soft,
 * 64 MiB by default) for as long as their thread lives, so this is no more
 * than a relay buffer: 64 storage workers keep 16 MiB. */
#define SPLICE_PIPE (1u << 18)

/* A thread's kept pipe: its read and write ends, and one step's bytes. */
typedef struct kept_pipe {
    int r, w;
    size_t step;
} kept_pipe_t;

static pthread_key_t pipe_key;
static pthread_once_t pipe_once = PTHREAD_ONCE_INIT;
static bool pipe_key_ok;

static void pipe_close(void *arg)
{
    kept_pipe_t *kp = arg;
    close(kp->r);
    close(kp->w);
    free(kp);
}

static void pipe_key_make(void)
{
    pipe_key_ok = pthread_key_create(&pipe_key, pipe_close) == 0;
}

/* The calling thread's pipe (made and sized the first time), or NULL with
 * *err set.  Without a thread key (never seen in practice) the pipe is not
 * kept: *kept false, the caller closes it. */
static kept_pipe_t *pipe_get(bool *kept, cn_err_t *err)
{
    pthread_once(&pipe_once, pipe_key_make);
    kept_pipe_t *kp = pipe_key_ok ? pthread_getspecific(pipe_key) : NULL;
    *kept = pipe_key_ok;
    if (kp)
        return kp;
    int p[2];
    if (!(kp = malloc(sizeof *kp))) {
        *err = -ENOMEM;
        return NULL;
    }
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        *err = -errno;
        free(kp);
        return NULL;
    }
    long cap = fcntl(p[1], F_SETPIPE_SZ, (int)SPLICE_PIPE);
    if (cap <= 0) /* refused (the user's pipe pages are spent): what it has */
        cap = fcntl(p[1], F_GETPIPE_SZ);
    *kp = (kept_pipe_t){ p[0], p[1], cap > 0 ? (size_t)cap : 4096 };
    if (*kept && pthread_setspecific(pipe_key, kp) != 0)
        *kept = false;
    return kp;
}

/* Lets go of the thread's pipe: closed when it may hold bytes (dirty) or
 * was never kept; else left for the thread's next call. */
static void pipe_put(kept_pipe_t *kp, bool kept, bool dirty)
{
    if (kept && !dirty)
        return;
    if (kept)
        pthread_setspecific(pipe_key, NULL);
    pipe_close(kp);
}

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
    cn_err_t e = CN_OK;
    bool kept = false, dirty = false;
    kept_pipe_t *kp = pipe_get(&kept, &e);
    if (!kp)
        return e;
    while (!e && n) {
        size_t want = n < kp->step ? (size_t)n : kp->step, got = 0;
        e = fill(src, kp->w, want, src_idle_ms, &got); /* fails with nothing in the pipe */
        if (!e) {
            n -= got;
            e = drain(c, kp->r, got, n != 0, deadline);
            dirty = e != CN_OK; /* some of got may still be in the pipe */
        }
    }
    pipe_put(kp, kept, dirty);
    return e;
}
