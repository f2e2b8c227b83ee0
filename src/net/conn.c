/* Connection I/O for the thread that owns a connection: blocking reads and
 * writes bounded by absolute deadlines, over plaintext or TLS, and the
 * non-blocking read the loop uses for request heads.  Sockets stay
 * non-blocking throughout; "blocking" here means poll(2) until the deadline. */
#include "net/net_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

cn_err_t cn__wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - cn_mono_ms();
        if (left <= 0)
            return CN_E_TIMEOUT;
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n > 0)
            return CN_OK; /* ready, or an error the next call will report */
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

static cn_err_t tail_flush(cn_conn_t *c);

static cn_err_t sys_err(int e)
{
    if (e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == ESHUTDOWN)
        return CN_E_CLOSED;
    return -e;
}

/* TLS: map SSL_get_error to "wait for in/out" (> 0) or an error (< 0). */
static cn_err_t tls_want(cn_conn_t *c, int ret, short *events)
{
    int e = SSL_get_error(c->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ: *events = POLLIN; return 1;
    case SSL_ERROR_WANT_WRITE: *events = POLLOUT; return 1;
    case SSL_ERROR_ZERO_RETURN: return CN_E_CLOSED;
    case SSL_ERROR_SYSCALL: {
        int se = errno;
        ERR_clear_error();
        return se && se != EAGAIN ? sys_err(se) : CN_E_CLOSED;
    }
    default: ERR_clear_error(); return CN_E_CLOSED;
    }
}

/* Takes up to n bytes from what the process holds of the stream: the bytes
 * an adapter gave back first, then the read-ahead buffer; returns how many. */
static size_t rbuf_take(cn_conn_t *c, void *buf, size_t n)
{
    if (c->back_len) {
        size_t have = c->back_len - c->back_off;
        if (n > have)
            n = have;
        memcpy(buf, c->back + c->back_off, n);
        c->back_off += n;
        if (c->back_off == c->back_len) {
            free(c->back);
            c->back = NULL;
            c->back_off = c->back_len = c->back_cap = 0;
        }
        return n;
    }
    size_t avail = (size_t)(c->rlen - c->roff);
    if (n > avail)
        n = avail;
    memcpy(buf, c->rbuf + c->roff, n);
    c->roff = (uint16_t)(c->roff + n);
    if (c->roff == c->rlen)
        c->roff = c->rlen = 0;
    return n;
}

cn_err_t cn_conn_read_some(cn_conn_t *c, void *buf, size_t n, size_t *got, int64_t deadline)
{
    *got = 0;
    if (n == 0)
        return CN_OK;
    if (c->rlen || c->back_len) {
        *got = rbuf_take(c, buf, n);
        return CN_OK;
    }
    if (c->on_loop)
        return CN_E_AGAIN; /* the loop never waits for a peer */
    for (;;) {
        short ev = POLLIN;
        if (c->ssl) {
            size_t r = 0;
            ERR_clear_error();
            int ret = SSL_read_ex(c->ssl, buf, n, &r);
            if (ret > 0) {
                *got = r;
                cn_metric_add(c->ls->m.bytes_in, (int64_t)r);
                return CN_OK;
            }
            cn_err_t w = tls_want(c, ret, &ev);
            if (w < 0)
                return w;
        } else {
            ssize_t r = read(c->fd, buf, n);
            if (r > 0) {
                *got = (size_t)r;
                cn_metric_add(c->ls->m.bytes_in, r);
                return CN_OK;
            }
            if (r == 0)
                return CN_E_CLOSED;
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return sys_err(errno);
        }
        CN_TRY(cn__wait_fd(c->fd, ev, deadline));
    }
}

cn_err_t cn_conn_read_full(cn_conn_t *c, void *buf, size_t n, int64_t deadline)
{
    size_t off = 0;
    while (off < n) {
        size_t got;
        CN_TRY(cn_conn_read_some(c, (uint8_t *)buf + off, n - off, &got, deadline));
        off += got;
    }
    return CN_OK;
}

cn_err_t cn_conn_drain(cn_conn_t *c, uint64_t n, int64_t deadline)
{
    uint8_t tmp[16384];
    while (n) {
        size_t got;
        CN_TRY(cn_conn_read_some(c, tmp, n < sizeof tmp ? (size_t)n : sizeof tmp, &got, deadline));
        n -= got;
    }
    return CN_OK;
}

/* Keeps iov[0..iovcnt) from byte skip on for a worker to write (pend),
 * counted in the memory budget like a request body. */
static cn_err_t conn_stash(cn_conn_t *c, const struct iovec *iov, int iovcnt, size_t skip)
{
    size_t add = 0;
    for (int i = 0; i < iovcnt; i++)
        add += iov[i].iov_len;
    add -= skip;
    if (!add)
        return CN_OK;
    CN_TRY(cn_conn_budget_reserve(c, add));
    uint8_t *grown = realloc(c->pend, c->pend_len + add);
    if (!grown) {
        cn_conn_budget_release(c, add);
        return -ENOMEM;
    }
    c->pend = grown;
    for (int i = 0; i < iovcnt; i++) {
        size_t n = iov[i].iov_len;
        const uint8_t *p = iov[i].iov_base;
        if (skip >= n) {
            skip -= n;
            continue;
        }
        memcpy(c->pend + c->pend_len, p + skip, n - skip);
        c->pend_len += n - skip;
        skip = 0;
    }
    return CN_OK;
}

/* A write on the loop (c->on_loop, plaintext): one non-blocking sendmsg;
 * whatever the socket does not take now is stashed, and so is everything
 * after a stash, so the stream keeps its order. */
static cn_err_t loop_writev(cn_conn_t *c, const struct iovec *iov, int iovcnt)
{
    if (c->ssl)
        return CN_E_UNSUPPORTED;
    if (c->pend_len)
        return conn_stash(c, iov, iovcnt, 0);
    struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
    ssize_t w;
    do
        w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (w < 0 && errno == EINTR);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        return sys_err(errno);
    cn_metric_add(c->ls->m.bytes_out, w < 0 ? 0 : w);
    return conn_stash(c, iov, iovcnt, w < 0 ? 0 : (size_t)w);
}

cn_err_t cn__conn_flush(cn_conn_t *c)
{
    size_t n = c->pend_len;
    cn_err_t e = cn_conn_write_all(c, c->pend, n, cn_conn_deadline_for(c, n));
    free(c->pend);
    c->pend = NULL;
    c->pend_len = 0;
    cn_conn_budget_release(c, n);
    return e;
}

cn_err_t cn_conn_write_all(cn_conn_t *c, const void *buf, size_t n, int64_t deadline)
{
    if (c->tail.set)
        CN_TRY(tail_flush(c));
    if (c->on_loop) {
        struct iovec v = { (void *)buf, n };
        return loop_writev(c, &v, 1);
    }
    const uint8_t *p = buf;
    while (n) {
        short ev = POLLOUT;
        if (c->ssl) {
            size_t w = 0;
            ERR_clear_error();
            int ret = SSL_write_ex(c->ssl, p, n, &w);
            if (ret > 0) {
                cn_metric_add(c->ls->m.bytes_out, (int64_t)w);
                p += w;
                n -= w;
                continue;
            }
            cn_err_t e = tls_want(c, ret, &ev);
            if (e < 0)
                return e;
        } else {
            ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w > 0) {
                cn_metric_add(c->ls->m.bytes_out, w);
                p += w;
                n -= (size_t)w;
                continue;
            }
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                return sys_err(errno);
        }
        CN_TRY(cn__wait_fd(c->fd, ev, deadline));
    }
    return CN_OK;
}

cn_err_t cn_conn_writev(cn_conn_t *c, const struct iovec *iov, int iovcnt, int64_t deadline)
{
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return CN_E_INVALID;
    if (c->tail.set)
        CN_TRY(tail_flush(c));
    if (c->on_loop)
        return loop_writev(c, iov, iovcnt);
    if (c->ssl) {
        /* Coalesce small pieces so a header and its metadata share a record. */
        uint8_t tmp[16384];
        size_t used = 0;
        for (int i = 0; i < iovcnt; i++) {
            const uint8_t *p = iov[i].iov_base;
            size_t n = iov[i].iov_len;
            if (used + n <= sizeof tmp) {
                memcpy(tmp + used, p, n);
                used += n;
                continue;
            }
            if (used)
                CN_TRY(cn_conn_write_all(c, tmp, used, deadline));
            used = 0;
            CN_TRY(cn_conn_write_all(c, p, n, deadline));
        }
        return used ? cn_conn_write_all(c, tmp, used, deadline) : CN_OK;
    }
    struct iovec local[64];
    int i = 0;
    size_t skip = 0; /* bytes of iov[i] already sent */
    while (i < iovcnt) {
        int cnt = 0;
        for (int j = i; j < iovcnt && cnt < 64; j++, cnt++) {
            local[cnt] = iov[j];
            if (j == i) {
                local[cnt].iov_base = (uint8_t *)iov[j].iov_base + skip;
                local[cnt].iov_len -= skip;
            }
        }
        struct msghdr mh = { .msg_iov = local, .msg_iovlen = (size_t)cnt };
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return sys_err(errno);
            CN_TRY(cn__wait_fd(c->fd, POLLOUT, deadline));
            continue;
        }
        cn_metric_add(c->ls->m.bytes_out, w);
        size_t left = (size_t)w;
        while (i < iovcnt && left >= iov[i].iov_len - skip) {
            left -= iov[i].iov_len - skip;
            skip = 0;
            i++;
        }
        skip += left;
    }
    return CN_OK;
}

/* Bodies up to this size are copied into the reply: one pread and one
 * sendmsg cost less than a sendfile's splice set-up for a few pages. */
#define CN__INLINE_BODY (16u * 1024)

cn_err_t cn_conn_sendfile(cn_conn_t *c, int fd, uint64_t off, uint64_t len, int64_t deadline)
{
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return CN_E_INVALID;
    if (c->tail.set)
        CN_TRY(tail_flush(c));
    if (c->on_loop) {
        if (len > CN__INLINE_BODY)
            return CN_E_UNSUPPORTED; /* a large body is a worker's job */
        uint8_t body[CN__INLINE_BODY];
        CN_TRY(cn_pread_full(fd, body, (size_t)len, off, CN_E_LENGTH_MISMATCH));
        struct iovec v = { body, (size_t)len };
        return loop_writev(c, &v, 1);
    }
    if (c->ssl) {
        uint8_t tmp[32768];
        while (len) {
            size_t want = len < sizeof tmp ? (size_t)len : sizeof tmp;
            ssize_t r = pread(fd, tmp, want, (off_t)off);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return -errno;
            }
            if (r == 0)
                return CN_E_LENGTH_MISMATCH;
            CN_TRY(cn_conn_write_all(c, tmp, (size_t)r, deadline));
            off += (uint64_t)r;
            len -= (uint64_t)r;
        }
        return CN_OK;
    }
    off_t o = (off_t)off;
    while (len) {
        size_t chunk = len < (1u << 30) ? (size_t)len : (1u << 30);
        ssize_t w = sendfile(c->fd, fd, &o, chunk);
        if (w > 0) {
            cn_metric_add(c->ls->m.bytes_out, w);
            len -= (uint64_t)w;
            /* Short: the socket's buffer is full, so the next call would
             * only say EAGAIN (a third of the calls per GiB); wait first. */
            if (len && (size_t)w < chunk)
                CN_TRY(cn__wait_fd(c->fd, POLLOUT, deadline));
            continue;
        }
        if (w == 0)
            return CN_E_LENGTH_MISMATCH;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return sys_err(errno);
        CN_TRY(cn__wait_fd(c->fd, POLLOUT, deadline));
    }
    return CN_OK;
}

cn_err_t cn_conn_send_head_file(cn_conn_t *c, const void *head, size_t head_len, int fd,
                                uint64_t off, uint64_t len, int64_t deadline)
{
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return CN_E_INVALID;
    if (c->tail.set) /* a reply's rest goes first (cn_conn_reply) */
        CN_TRY(tail_flush(c));
    if (len <= CN__INLINE_BODY) {
        uint8_t body[CN__INLINE_BODY];
        CN_TRY(cn_pread_full(fd, body, (size_t)len, off, CN_E_LENGTH_MISMATCH));
        struct iovec iov[2] = { { (void *)head, head_len }, { body, (size_t)len } };
        return cn_conn_writev(c, iov, 2, deadline);
    }
    if (c->on_loop)
        return CN_E_UNSUPPORTED; /* a large body is a worker's job */
    if (c->ssl) {
        CN_TRY(cn_conn_write_all(c, head, head_len, deadline));
        return cn_conn_sendfile(c, fd, off, len, deadline);
    }
    const uint8_t *p = head;
    size_t n = head_len;
    while (n) {
        /* MSG_MORE: the head waits for the body's first pages, so a reply
         * does not begin with a segment of a few dozen bytes. */
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_MORE);
        if (w > 0) {
            cn_metric_add(c->ls->m.bytes_out, w);
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return sys_err(errno);
        CN_TRY(cn__wait_fd(c->fd, POLLOUT, deadline));
    }
    return cn_conn_sendfile(c, fd, off, len, deadline);
}

/* ---- replies the loop finishes (a stalled reader holds no worker) ---------------- */
void cn__tail_free(cn_conn_t *c)
{
    cn__tail_t *t = &c->tail;
    if (!t->set)
        return;
    free(t->buf);
    cn_conn_budget_release(c, t->cap);
    if (t->fd >= 0)
        close(t->fd);
    memset(t, 0, sizeof *t);
    t->fd = -1;
}

void cn__tail_from_pend(cn_conn_t *c)
{
    cn__tail_t *t = &c->tail;
    *t = (cn__tail_t){
        .set = true, .buf = c->pend, .len = c->pend_len, .cap = c->pend_len, .fd = -1
    };
    t->deadline = cn_conn_deadline_for(c, c->pend_len);
    c->pend = NULL;
    c->pend_len = 0;
}

/* Writes the tail blocking, with its deadline: a worker that writes to c
 * again after handing over a reply (the stream keeps its order). */
static cn_err_t tail_flush(cn_conn_t *c)
{
    cn__tail_t t = c->tail;
    c->tail.set = false; /* the writes below go to the socket */
    cn_err_t e = CN_OK;
    if (t.off < t.len) /* a tail of a file range alone has no buffer */
        e = cn_conn_write_all(c, t.buf + t.off, t.len - t.off, t.deadline);
    if (!e && t.fd >= 0 && t.flen)
        e = cn_conn_sendfile(c, t.fd, t.foff, t.flen, t.deadline);
    c->tail = t;
    cn__tail_free(c);
    return e;
}

/* A TLS tail's file range goes through buf in pieces of four records:
 * the piece being written stays in buf until SSL_write took it all, as a
 * write that has to wait must be repeated with the same bytes. */
#define CN__TLS_PIECE (64u * 1024)

/* cn__tail_write under TLS. */
static cn_err_t tail_write_tls(cn_conn_t *c)
{
    cn__tail_t *t = &c->tail;
    t->want_read = false;
    for (;;) {
        if (t->off == t->len) {
            if (!t->flen)
                return CN_OK;
            size_t want = t->flen < t->cap ? (size_t)t->flen : t->cap;
            ssize_t r = pread(t->fd, t->buf, want, (off_t)t->foff);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return r < 0 ? -errno : CN_E_LENGTH_MISMATCH;
            t->off = 0;
            t->len = (size_t)r;
            t->foff += (uint64_t)r;
            t->flen -= (uint64_t)r;
        }
        size_t w = 0;
        ERR_clear_error();
        int ret = SSL_write_ex(c->ssl, t->buf + t->off, t->len - t->off, &w);
        if (ret > 0) {
            cn_metric_add(c->ls->m.bytes_out, (int64_t)w);
            t->off += w;
            continue;
        }
        short ev = POLLOUT;
        cn_err_t e = tls_want(c, ret, &ev);
        if (e < 0)
            return e;
        t->want_read = ev == POLLIN;
        return CN_E_AGAIN;
    }
}

cn_err_t cn__tail_write(cn_conn_t *c)
{
    cn__tail_t *t = &c->tail;
    if (c->ssl)
        return tail_write_tls(c);
    while (t->off < t->len) {
        int more = t->flen ? MSG_MORE : 0;
        ssize_t w =
            send(c->fd, t->buf + t->off, t->len - t->off, MSG_NOSIGNAL | MSG_DONTWAIT | more);
        if (w > 0) {
            cn_metric_add(c->ls->m.bytes_out, w);
            t->off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return CN_E_AGAIN;
        return sys_err(errno);
    }
    while (t->flen) {
        size_t chunk = t->flen < (1u << 30) ? (size_t)t->flen : (1u << 30);
        off_t o = (off_t)t->foff;
        ssize_t w = sendfile(c->fd, t->fd, &o, chunk);
        if (w > 0) {
            cn_metric_add(c->ls->m.bytes_out, w);
            t->foff += (uint64_t)w;
            t->flen -= (uint64_t)w;
            if (t->flen && (size_t)w < chunk)
                return CN_E_AGAIN; /* short: the socket is full, the next call would say so */
            continue;
        }
        if (w == 0)
            return CN_E_LENGTH_MISMATCH;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return CN_E_AGAIN;
        return sys_err(errno);
    }
    return CN_OK;
}

/* Hands what is left of a reply to the loop: iov[0..iovcnt) from byte skip
 * on, copied within the memory budget, then len bytes of fd from off (the
 * descriptor duplicated).  false when the budget, memory or a descriptor
 * is refused: the worker then writes the rest itself. */
static bool tail_take(cn_conn_t *c, const struct iovec *iov, int iovcnt, size_t skip, int fd,
                      uint64_t off, uint64_t len, int64_t deadline)
{
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++)
        n += iov[i].iov_len;
    n -= skip;
    size_t cap = c->ssl && len && n < CN__TLS_PIECE ? CN__TLS_PIECE : n;
    uint8_t *buf = NULL;
    if (cap && cn_conn_budget_reserve(c, cap) != CN_OK)
        return false;
    if (cap && !(buf = malloc(cap))) {
        cn_conn_budget_release(c, cap);
        return false;
    }
    int dup = len ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (len && dup < 0) {
        free(buf);
        cn_conn_budget_release(c, cap);
        return false;
    }
    size_t at = 0;
    for (int i = 0; i < iovcnt; i++) {
        size_t k = iov[i].iov_len;
        if (skip >= k) {
            skip -= k;
            continue;
        }
        memcpy(buf + at, (const uint8_t *)iov[i].iov_base + skip, k - skip);
        at += k - skip;
        skip = 0;
    }
    c->tail = (cn__tail_t){ .set = true,
                            .buf = buf,
                            .len = n,
                            .cap = cap,
                            .fd = dup,
                            .foff = off,
                            .flen = len,
                            .deadline = deadline };
    return true;
}

/* iov[0..n) from byte skip on, into out (which may be iov): the count of
 * entries in out. */
static int iov_after(const struct iovec *iov, int n, size_t skip, struct iovec *out)
{
    int i = 0;
    while (i < n && skip >= iov[i].iov_len)
        skip -= iov[i++].iov_len;
    memmove(out, iov + i, (size_t)(n - i) * sizeof *iov);
    if (i < n) {
        out[0].iov_base = (uint8_t *)out[0].iov_base + skip;
        out[0].iov_len -= skip;
    }
    return n - i;
}

/* The blocking reply of a connection the loop cannot finish for (the loop
 * itself, a tail already pending, no room for a tail): as the writes before
 * it did. */
static cn_err_t reply_blocking(cn_conn_t *c, const struct iovec *iov, int iovcnt, int fd,
                               uint64_t off, uint64_t len, int64_t deadline)
{
    if (len && iovcnt == 1)
        return cn_conn_send_head_file(c, iov[0].iov_base, iov[0].iov_len, fd, off, len, deadline);
    CN_TRY(cn_conn_writev(c, iov, iovcnt, deadline));
    return len ? cn_conn_sendfile(c, fd, off, len, deadline) : CN_OK;
}

/* SSL_write of p[0, n) without waiting: *took bytes went; *wait is 0 when
 * they all did, else what the socket must become (POLLOUT, or POLLIN) for
 * the next write, which must start with the bytes at p + *took (SSL_write
 * requires a repeated write to repeat its bytes). */
static cn_err_t tls_write_nb(cn_conn_t *c, const uint8_t *p, size_t n, size_t *took, short *wait)
{
    *took = 0;
    *wait = 0;
    while (*took < n) {
        size_t w = 0;
        ERR_clear_error();
        int ret = SSL_write_ex(c->ssl, p + *took, n - *took, &w);
        if (ret > 0) {
            cn_metric_add(c->ls->m.bytes_out, (int64_t)w);
            *took += w;
            continue;
        }
        *wait = POLLOUT;
        cn_err_t e = tls_want(c, ret, wait);
        return e < 0 ? e : CN_OK;
    }
    return CN_OK;
}

/* cn_conn_reply under TLS: the worker writes what the socket takes; when
 * it is full, the rest becomes the connection's tail (the unwritten bytes
 * copied, the file range after them on a duplicate descriptor) and the
 * loop writes it. */
static cn_err_t reply_tls(cn_conn_t *c, const struct iovec *iov, int iovcnt, int fd, uint64_t off,
                          uint64_t len, int64_t deadline)
{
    size_t sent = 0, took;
    short wait = 0;
    for (int i = 0; i < iovcnt && !wait; i++) {
        CN_TRY(tls_write_nb(c, iov[i].iov_base, iov[i].iov_len, &took, &wait));
        sent += took;
    }
    uint8_t piece[CN__TLS_PIECE];
    struct iovec rest = { piece, 0 };
    while (!wait && len) {
        size_t want = len < sizeof piece ? (size_t)len : sizeof piece;
        CN_TRY(cn_pread_full(fd, piece, want, off, CN_E_LENGTH_MISMATCH));
        off += want;
        len -= want;
        CN_TRY(tls_write_nb(c, piece, want, &took, &wait));
        rest = (struct iovec){ piece + took, want - took };
    }
    if (!wait)
        return CN_OK;
    bool kept = rest.iov_len ? tail_take(c, &rest, 1, 0, fd, off, len, deadline)
                             : tail_take(c, iov, iovcnt, sent, fd, off, len, deadline);
    if (kept) {
        c->tail.want_read = wait == POLLIN;
        return CN_OK; /* pending: cn_conn_reply_pending */
    }
    /* No room to keep the rest: write it here (its first bytes first). */
    if (rest.iov_len)
        return reply_blocking(c, &rest, 1, fd, off, len, deadline);
    struct iovec v[CN_CONN_REPLY_IOV];
    return reply_blocking(c, v, iov_after(iov, iovcnt, sent, v), fd, off, len, deadline);
}

/* Writes iov without waiting: the bytes written; *full when the socket
 * took less than all of them. */
static cn_err_t reply_iov_nb(cn_conn_t *c, struct iovec *iov, int iovcnt, bool more, size_t *sent,
                             bool *full)
{
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    *sent = 0;
    *full = false;
    while (*sent < total) {
        struct iovec local[CN_CONN_REPLY_IOV + 1];
        int cnt = 0;
        size_t skip = *sent;
        for (int i = 0; i < iovcnt; i++) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            local[cnt].iov_base = (uint8_t *)iov[i].iov_base + skip;
            local[cnt++].iov_len = iov[i].iov_len - skip;
            skip = 0;
        }
        struct msghdr mh = { .msg_iov = local, .msg_iovlen = (size_t)cnt };
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
        if (w > 0) {
            cn_metric_add(c->ls->m.bytes_out, w);
            *sent += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return sys_err(errno);
        *full = true;
        return CN_OK;
    }
    return CN_OK;
}

/* The file part of a reply without waiting: *full when the socket is. */
static cn_err_t reply_file_nb(cn_conn_t *c, int fd, uint64_t *off, uint64_t *len, bool *full)
{
    *full = false;
    while (*len) {
        size_t chunk = *len < (1u << 30) ? (size_t)*len : (1u << 30);
        off_t o = (off_t)*off;
        ssize_t w = sendfile(c->fd, fd, &o, chunk);
        if (w > 0) {
            cn_metric_add(c->ls->m.bytes_out, w);
            *off += (uint64_t)w;
            *len -= (uint64_t)w;
            if (*len && (size_t)w < chunk) {
                *full = true;
                return CN_OK;
            }
            continue;
        }
        if (w == 0)
            return CN_E_LENGTH_MISMATCH;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return sys_err(errno);
        *full = true;
        return CN_OK;
    }
    return CN_OK;
}

cn_err_t cn_conn_reply(cn_conn_t *c, const struct iovec *iov, int iovcnt, int fd, uint64_t off,
                       uint64_t len, int64_t deadline)
{
    if (iovcnt < 0 || iovcnt > CN_CONN_REPLY_IOV || (len && fd < 0) || off > (uint64_t)INT64_MAX ||
        len > (uint64_t)INT64_MAX - off)
        return CN_E_INVALID;
    if (c->on_loop || c->tail.set)
        return reply_blocking(c, iov, iovcnt, fd, off, len, deadline);
    if (c->ssl)
        return reply_tls(c, iov, iovcnt, fd, off, len, deadline);
    /* A small file body goes with the head in one call, as in
     * cn_conn_send_head_file. */
    struct iovec v[CN_CONN_REPLY_IOV + 1];
    uint8_t body[CN__INLINE_BODY];
    memcpy(v, iov, (size_t)iovcnt * sizeof *iov);
    int n = iovcnt;
    if (len && len <= CN__INLINE_BODY) {
        CN_TRY(cn_pread_full(fd, body, (size_t)len, off, CN_E_LENGTH_MISMATCH));
        v[n++] = (struct iovec){ body, (size_t)len };
        len = 0;
    }
    size_t sent;
    bool full;
    CN_TRY(reply_iov_nb(c, v, n, len != 0, &sent, &full));
    if (!full)
        CN_TRY(reply_file_nb(c, fd, &off, &len, &full));
    if (!full)
        return CN_OK; /* the socket took it all: the usual case, no hand-over */
    if (tail_take(c, v, n, sent, fd, off, len, deadline))
        return CN_OK;
    /* No room to keep the rest: write it here, as before. */
    return reply_blocking(c, v, iov_after(v, n, sent, v), fd, off, len, deadline);
}

bool cn_conn_reply_pending(const cn_conn_t *c)
{
    return c->tail.set;
}

cn_err_t cn_conn_reply_settle(cn_conn_t *c, int wait_ms)
{
    int64_t until = cn_mono_ms() + wait_ms;
    while (c->tail.set) {
        cn_err_t e = cn__tail_write(c);
        if (e == CN_OK)
            cn__tail_free(c);
        else if (e != CN_E_AGAIN)
            return e;
        int64_t left = until - cn_mono_ms();
        if (!c->tail.set || left <= 0)
            break;
        struct pollfd p = { c->fd, c->tail.want_read ? POLLIN : POLLOUT, 0 };
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return -errno;
    }
    return CN_OK;
}

long cn__conn_read_nb(cn_conn_t *c, void *buf, size_t n, bool *want_write)
{
    *want_write = false;
    if (c->back_len)
        return (long)rbuf_take(c, buf, n);
    if (c->ssl) {
        size_t r = 0;
        ERR_clear_error();
        int ret = SSL_read_ex(c->ssl, buf, n, &r);
        if (ret > 0) {
            cn_metric_add(c->ls->m.bytes_in, (int64_t)r);
            return (long)r;
        }
        short ev = 0;
        cn_err_t w = tls_want(c, ret, &ev);
        if (w < 0)
            return w;
        *want_write = ev == POLLOUT;
        return 0;
    }
    if (c->rlen)
        return (long)rbuf_take(c, buf, n);
    /* A short read (a head) reads ahead into rbuf, whatever follows it. */
    bool ahead = n < CN__RBUF;
    for (;;) {
        ssize_t r = ahead ? read(c->fd, c->rbuf, CN__RBUF) : read(c->fd, buf, n);
        if (r > 0) {
            cn_metric_add(c->ls->m.bytes_in, r);
            if (!ahead)
                return (long)r;
            c->rlen = (uint16_t)r;
            return (long)rbuf_take(c, buf, n);
        }
        if (r == 0)
            return CN_E_CLOSED;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return sys_err(errno);
    }
}

/* Appends n bytes to what c holds (back, then rbuf), all into back, which
 * grows by doubling (a head that arrives a byte at a time is not copied
 * whole for each byte). */
static cn_err_t hold_append(cn_conn_t *c, const uint8_t *p, size_t n)
{
    size_t b = c->back_len - c->back_off, rb = (size_t)(c->rlen - c->roff);
    size_t need = b + rb + n;
    if (c->back_off || rb || need > c->back_cap) {
        size_t cap = need > 2 * c->back_cap ? need : 2 * c->back_cap;
        uint8_t *nb = malloc(cap ? cap : 1);
        if (!nb)
            return -ENOMEM;
        if (b)
            memcpy(nb, c->back + c->back_off, b);
        memcpy(nb + b, c->rbuf + c->roff, rb);
        free(c->back);
        c->back = nb;
        c->back_off = 0;
        c->back_len = b + rb;
        c->back_cap = cap;
        c->roff = c->rlen = 0;
    }
    if (n)
        memcpy(c->back + c->back_len, p, n);
    c->back_len += n;
    return CN_OK;
}

long cn__conn_hold_more(cn_conn_t *c, size_t max, bool *want_write)
{
    *want_write = false;
    size_t held = c->back_len - c->back_off + (size_t)(c->rlen - c->roff);
    if (c->rlen != c->roff && c->back_len && hold_append(c, NULL, 0) < 0)
        return -ENOMEM; /* one run, for cn_conn_peek */
    uint8_t tmp[4096];
    size_t want = max > held ? max - held : 0;
    if (want > sizeof tmp)
        want = sizeof tmp;
    if (want == 0)
        return 0;
    size_t got = 0;
    if (c->ssl) {
        ERR_clear_error();
        int ret = SSL_read_ex(c->ssl, tmp, want, &got);
        if (ret <= 0) {
            short ev = 0;
            cn_err_t w = tls_want(c, ret, &ev);
            if (w < 0)
                return w;
            *want_write = ev == POLLOUT;
            return 0;
        }
    } else {
        ssize_t r;
        do
            r = read(c->fd, tmp, want);
        while (r < 0 && errno == EINTR);
        if (r == 0)
            return CN_E_CLOSED;
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : sys_err(errno);
        got = (size_t)r;
    }
    cn_metric_add(c->ls->m.bytes_in, (int64_t)got);
    cn_err_t e = hold_append(c, tmp, got);
    return e < 0 ? e : (long)got;
}

size_t cn_conn_peek(const cn_conn_t *c, const uint8_t **p)
{
    if (c->back_len) {
        *p = c->back + c->back_off;
        return c->back_len - c->back_off;
    }
    *p = c->rbuf + c->roff;
    return (size_t)(c->rlen - c->roff);
}

cn_err_t cn_conn_unread(cn_conn_t *c, const void *p, size_t n)
{
    if (n == 0)
        return CN_OK;
    size_t have = c->back_len - c->back_off;
    if (n > SIZE_MAX - have)
        return CN_E_INVALID;
    uint8_t *nb = malloc(n + have);
    if (!nb)
        return -ENOMEM;
    memcpy(nb, p, n);
    if (have)
        memcpy(nb + n, c->back + c->back_off, have);
    free(c->back);
    c->back = nb;
    c->back_off = 0;
    c->back_len = c->back_cap = n + have;
    return CN_OK;
}

bool cn_conn_hung_up(const cn_conn_t *c)
{
    if (atomic_load(&c->evicted))
        return true;
    struct pollfd p = { .fd = c->fd, .events = 0 };
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

bool cn_conn_on_loop(const cn_conn_t *c)
{
    return c->on_loop;
}

bool cn__conn_buffered(cn_conn_t *c)
{
    return c->back_len || c->rlen || (c->ssl && SSL_pending(c->ssl) > 0);
}

void cn__conn_destroy(cn_conn_t *c)
{
    if (!c)
        return;
    if (c->opened && c->ls->ad->close)
        c->ls->ad->close(c->cstate);
    c->opened = false;
    if (c->ssl) {
        if (!atomic_load(&c->evicted)) {
            ERR_clear_error();
            (void)SSL_shutdown(c->ssl); /* best effort close_notify, never waits */
        }
        ERR_clear_error();
        SSL_free(c->ssl);
    }
    cn_server_t *s = c->srv;
    /* Unlink under mu first: after this nobody can shutdown(2) our fd, so
     * closing it cannot hit a reused descriptor. */
    cn__admit_release(c);
    if (c->fd >= 0)
        close(c->fd);
    if (c->loop) {
        atomic_fetch_sub(&c->loop->nconns, 1);
        cn_metric_add(c->loop->gauge, -1);
    }
    free(c->pend);
    free(c->tail.buf);
    if (c->tail.set && c->tail.fd >= 0)
        close(c->tail.fd);
    free(c->back);
    free(c);
    if (atomic_load(&s->stopping))
        cn__loops_wake(s); /* every loop waits for the live count to reach 0 */
}

/* ---- small accessors ------------------------------------------------------------ */
int64_t cn_conn_deadline_for(const cn_conn_t *c, uint64_t bytes)
{
    const cn_limits_t *l = &c->ls->lim;
    uint64_t extra = l->io_rate_bps ? bytes / l->io_rate_bps * 1000 +
                                          (bytes % l->io_rate_bps) * 1000 / l->io_rate_bps
                                    : 0;
    int64_t now = cn_mono_ms();
    int64_t room = INT64_MAX - now - l->io_floor_ms;
    if (extra > (uint64_t)room)
        return INT64_MAX;
    return now + l->io_floor_ms + (int64_t)extra;
}

int64_t cn_conn_request_start_ms(const cn_conn_t *c)
{
    return c->req_start_ms ? c->req_start_ms : cn_mono_ms();
}

int64_t cn_conn_handshake_deadline(const cn_conn_t *c)
{
    return c->accepted_ms + c->ls->lim.handshake_ms;
}

const char *cn_conn_peer(const cn_conn_t *c)
{
    return c->peer_text;
}

const struct sockaddr *cn_conn_peer_sa(const cn_conn_t *c, socklen_t *len)
{
    if (len)
        *len = c->peerlen;
    return (const struct sockaddr *)&c->peer;
}

bool cn_conn_is_tls(const cn_conn_t *c)
{
    return c->ssl != NULL;
}

struct x509_st *cn_conn_peer_cert(const cn_conn_t *c)
{
    return c->ssl ? SSL_get0_peer_certificate(c->ssl) : NULL;
}

uint64_t cn_conn_id(const cn_conn_t *c)
{
    return c->id;
}

bool cn_conn_stopping(const cn_conn_t *c)
{
    return atomic_load(&c->srv->stopping);
}
