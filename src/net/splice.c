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
 * and the thread's next call makes a fresh one.
 *
 * cn_conn_relay_* is the same pipe used for a stream of several parts:
 * bytes written from user space and bytes spliced from a socket go into it
 * in order and leave in one splice per pipe-full (or whenever the source
 * has no more for now), so that a relay of many objects costs about one
 * splice in per object and one out per pipe-full, not a write and two
 * splices per object. */
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

/* Moves all r->held bytes in the pipe to c, by deadline (more: further
 * bytes follow at once).  On an error the pipe may still hold some:
 * r->held stays set, and cn_conn_relay_end closes the pipe. */
static cn_err_t relay_send(cn_conn_relay_t *r, bool more, int64_t deadline)
{
    kept_pipe_t *kp = r->pipe;
    unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | (more ? SPLICE_F_MORE : 0);
    while (r->held) {
        ssize_t w = splice(kp->r, NULL, r->c->fd, NULL, r->held, flags);
        if (w > 0) {
            cn_metric_add(r->c->ls->m.bytes_out, w);
            r->held -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return errno == EPIPE || errno == ECONNRESET ? CN_E_CLOSED : -errno;
        CN_TRY(cn__wait_fd(r->c->fd, POLLOUT, deadline));
    }
    return CN_OK;
}

cn_err_t cn_conn_relay_begin(cn_conn_t *c, cn_conn_relay_t *r, int64_t deadline)
{
    *r = (cn_conn_relay_t){ .c = c };
    if (c->ssl || c->on_loop)
        return CN_E_UNSUPPORTED;
    CN_TRY(cn_conn_write_all(c, NULL, 0, deadline)); /* a pending reply's rest goes first */
    cn_err_t e = CN_OK;
    r->pipe = pipe_get(&r->kept, &e);
    return r->pipe ? CN_OK : e;
}

cn_err_t cn_conn_relay_write(cn_conn_relay_t *r, const void *p, size_t n, int64_t deadline)
{
    kept_pipe_t *kp = r->pipe;
    const uint8_t *b = p;
    while (n) {
        size_t room = kp->step - r->held;
        ssize_t w = room ? write(kp->w, b, n < room ? n : room) : 0;
        if (w > 0) {
            r->held += (size_t)w;
            b += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN)
            return -errno;
        if (!r->held) /* an empty pipe refused the bytes: never seen */
            return -EAGAIN;
        CN_TRY(relay_send(r, true, deadline)); /* the pipe is full: what it holds goes first */
    }
    return CN_OK;
}

cn_err_t cn_conn_relay_splice(cn_conn_relay_t *r, int src, uint64_t n, int src_idle_ms,
                              int64_t deadline)
{
    kept_pipe_t *kp = r->pipe;
    while (n) {
        if (r->held >= kp->step)
            CN_TRY(relay_send(r, true, deadline));
        size_t room = kp->step - r->held, want = n < room ? (size_t)n : room;
        ssize_t got = splice(src, NULL, kp->w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (got > 0) {
            r->held += (size_t)got;
            n -= (size_t)got;
            /* short: src has no more for now (or the pipe's slots ran out),
             * so what the pipe holds goes before the next call may wait */
            if ((size_t)got < want)
                CN_TRY(relay_send(r, false, deadline));
            continue;
        }
        if (got == 0)
            return CN_E_CLOSED; /* the source ended early */
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return CN_E_CLOSED;
        if (r->held) { /* the pipe is full, or src has nothing yet: send first */
            CN_TRY(relay_send(r, false, deadline));
            continue;
        }
        /* The pipe is empty here, so EAGAIN is the source's: nothing yet. */
        CN_TRY(cn__wait_fd(src, POLLIN, cn_mono_ms() + src_idle_ms));
    }
    return CN_OK;
}

cn_err_t cn_conn_relay_flush(cn_conn_relay_t *r, int64_t deadline)
{
    return relay_send(r, false, deadline);
}

void cn_conn_relay_end(cn_conn_relay_t *r)
{
    if (r->pipe)
        pipe_put(r->pipe, r->kept, r->held != 0);
    r->pipe = NULL;
    r->held = 0;
}

cn_err_t cn_conn_splice_from(cn_conn_t *c, int src, uint64_t n, int src_idle_ms, int64_t deadline)
{
    if (c->ssl || c->on_loop)
        return CN_E_UNSUPPORTED;
    if (!n)
        return CN_OK;
    cn_conn_relay_t r;
    cn_err_t e = cn_conn_relay_begin(c, &r, deadline);
    if (!e)
        e = cn_conn_relay_splice(&r, src, n, src_idle_ms, deadline);
    if (!e)
        e = cn_conn_relay_flush(&r, deadline);
    cn_conn_relay_end(&r);
    return e;
}
