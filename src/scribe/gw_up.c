/* The gateway's upstream connections: a protocol-2 hello to one storage
 * server, blocking frame I/O bounded by the specification's client
 * timeouts (10 s to connect, 300 s per read or write), and a pool of idle
 * connections per server.  A pooled connection that has been silent for
 * half the inactivity timeout its server announced, or whose peer has
 * already closed it, is replaced before anything is sent on it
 * (specification section 1): a request must never be written into a
 * connection the server is about to drop, since its outcome would then be
 * unknown.  Reads ahead of the frame being read (up to CN__GW_UP_RB bytes
 * that have arrived, so that a small reply costs one read, not one per
 * field), but never into another exchange: a connection with unread bytes
 * after a complete exchange is unfit, never reused. */
#include "gw_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Waits until fd is ready for events or the deadline (mono ms) passes. */
static cn_err_t wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - cn_mono_ms();
        if (left <= 0)
            return CN_E_TIMEOUT;
        struct pollfd p = { .fd = fd, .events = events };
        int rc = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (rc > 0)
            return CN_OK;
        if (rc < 0 && errno != EINTR)
            return -errno;
    }
}

/* The deadline of an I/O wait of up that starts now and may last ms: no
 * later than its cap (a hello's deadline), when it has one. */
static int64_t io_deadline(const cn__gw_up_t *up, int64_t ms)
{
    int64_t d = cn_mono_ms() + ms;
    return up->cap_ms && up->cap_ms < d ? up->cap_ms : d;
}

/* What an OpenSSL call that returned r on up->ssl waits for: POLLIN or
 * POLLOUT, or 0 when the connection is done for. */
static short tls_want(cn__gw_up_t *up, int r)
{
    int se = SSL_get_error(up->ssl, r);
    ERR_clear_error();
    return se == SSL_ERROR_WANT_READ ? POLLIN : se == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
}

static cn_err_t tls_write(cn__gw_up_t *up, const uint8_t *b, size_t n, int64_t deadline)
{
    while (n) {
        size_t done = 0;
        int r = SSL_write_ex(up->ssl, b, n, &done);
        if (r == 1) {
            b += done;
            n -= done;
            continue;
        }
        short ev = tls_want(up, r);
        if (!ev)
            return CN_E_CLOSED;
        CN_TRY(wait_fd(up->fd, ev, deadline));
    }
    return CN_OK;
}

cn_err_t cn__gw_up_write(cn__gw_up_t *up, const void *p, size_t n)
{
    const uint8_t *b = p;
    int64_t deadline = io_deadline(up, CN__GW_IO_MS);
    if (up->ssl)
        return tls_write(up, b, n, deadline);
    while (n) {
        ssize_t w = send(up->fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            b += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            CN_TRY(wait_fd(up->fd, POLLOUT, deadline));
            continue;
        }
        return CN_E_CLOSED;
    }
    return CN_OK;
}

/* Reads what has arrived, at least one byte, at most n, into p. */
static cn_err_t read_raw(cn__gw_up_t *up, void *p, size_t n, size_t *got)
{
    int64_t deadline = io_deadline(up, CN__GW_IO_MS);
    while (up->ssl) {
        int r = SSL_read_ex(up->ssl, p, n, got);
        if (r == 1)
            return CN_OK;
        short ev = tls_want(up, r);
        if (!ev)
            return CN_E_CLOSED;
        CN_TRY(wait_fd(up->fd, ev, deadline));
    }
    for (;;) {
        /* plaintext sockets block on reads (up_open): an answer not there
         * yet costs one call, not a failed read, a poll and a read */
        ssize_t r = recv(up->fd, p, n, 0);
        if (r > 0) {
            *got = (size_t)r;
            return CN_OK;
        }
        if (r == 0)
            return CN_E_CLOSED;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return CN_E_CLOSED;
        CN_TRY(wait_fd(up->fd, POLLIN, deadline)); /* SO_RCVTIMEO ran out: past it */
    }
}

cn_err_t cn__gw_up_read_some(cn__gw_up_t *up, void *p, size_t n, size_t *got)
{
    if (up->rpos == up->rlen && n < CN__GW_UP_RB) {
        /* a small read: take whatever has arrived, up to the read-ahead */
        if (!up->rb && !(up->rb = malloc(CN__GW_UP_RB)))
            return -ENOMEM;
        size_t have = 0;
        CN_TRY(read_raw(up, up->rb, CN__GW_UP_RB, &have));
        up->rpos = 0;
        up->rlen = (uint32_t)have;
    }
    if (up->rpos == up->rlen)
        return read_raw(up, p, n, got); /* a large read goes straight to p */
    size_t take = up->rlen - up->rpos < n ? up->rlen - up->rpos : n;
    memcpy(p, up->rb + up->rpos, take);
    up->rpos += (uint32_t)take;
    *got = take;
    return CN_OK;
}

cn_err_t cn__gw_up_ahead(cn__gw_up_t *up, size_t n)
{
    if (n > CN__GW_UP_RB)
        return CN_E_INVALID;
    if (!up->rb && !(up->rb = malloc(CN__GW_UP_RB)))
        return -ENOMEM;
    while (up->rlen - up->rpos < n) {
        if (CN__GW_UP_RB - up->rpos < n) { /* make room: the unread bytes to the front */
            memmove(up->rb, up->rb + up->rpos, up->rlen - up->rpos);
            up->rlen -= up->rpos;
            up->rpos = 0;
        }
        size_t got = 0;
        CN_TRY(read_raw(up, up->rb + up->rlen, CN__GW_UP_RB - up->rlen, &got));
        up->rlen += (uint32_t)got;
    }
    return CN_OK;
}

cn_err_t cn__gw_up_peek(cn__gw_up_t *up, void *p, size_t n, bool wait)
{
    for (;;) {
        ssize_t r = recv(up->fd, p, n, MSG_PEEK | (wait ? MSG_WAITALL : MSG_DONTWAIT));
        if (r == (ssize_t)n)
            return CN_OK;
        if (r < 0 && errno == EINTR)
            continue;
        if (!wait && (r > 0 || errno == EAGAIN || errno == EWOULDBLOCK))
            return CN_E_AGAIN;
        /* a wait cut short: the stream ended or failed, or SO_RCVTIMEO
         * (CN__GW_IO_MS) ran out */
        return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? CN_E_TIMEOUT : CN_E_CLOSED;
    }
}

cn_err_t cn__gw_up_recv(cn__gw_up_t *up, void *p, size_t n, bool wait, size_t *got)
{
    if (wait)
        return read_raw(up, p, n, got);
    for (;;) {
        ssize_t r = recv(up->fd, p, n, MSG_DONTWAIT);
        if (r > 0) {
            *got = (size_t)r;
            return CN_OK;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return CN_E_AGAIN;
        return CN_E_CLOSED;
    }
}

cn_err_t cn__gw_up_read(cn__gw_up_t *up, void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        size_t got = 0;
        CN_TRY(cn__gw_up_read_some(up, b, n, &got));
        b += got;
        n -= got;
    }
    return CN_OK;
}

/* A connected socket to address in *out; the connect waits until deadline
 * (mono ms) at most. */
static cn_err_t dial(const char *address, int64_t deadline, int *out)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    CN_TRY(cn_net_addr_parse(address, &ss, &sl));
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    cn_err_t e = CN_OK;
    if (connect(fd, (struct sockaddr *)&ss, sl) < 0) {
        e = errno == EINPROGRESS ? wait_fd(fd, POLLOUT, deadline) : -errno;
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (e >= 0 && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr))
            e = soerr ? -soerr : -errno;
    }
    if (e < 0) {
        close(fd);
        return e;
    }
    *out = fd;
    return CN_OK;
}

/* A plaintext upstream socket blocks (its reads for CN__GW_IO_MS at most,
 * SO_RCVTIMEO) once connected, so that a worker waiting for storage's
 * answer sleeps in its read; writes and the fitness peek still pass
 * MSG_DONTWAIT and wait by poll.  TLS sockets stay non-blocking (OpenSSL
 * reads them, and the peek of cn__gw_up_unfit must not wait). */
static cn_err_t block_reads(int fd)
{
    struct timeval tv = { .tv_sec = CN__GW_IO_MS / 1000, .tv_usec = 0 };
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        return -errno;
    return CN_OK;
}

/* The gateway's TLS client context, made again (a new access certificate)
 * once its renewal time has come; a reference for the caller. */
static cn_err_t tls_ctx(cn__gw_t *g, SSL_CTX **out)
{
    cn_err_t e = CN_OK;
    pthread_mutex_lock(&g->tls_mu);
    if (!g->tls_ctx || cn_mono_ms() >= g->tls_renew_ms) {
        SSL_CTX *ctx = NULL;
        int64_t renew = 0;
        char msg[512] = "";
        e = g->tls_fn ? g->tls_fn(g->tls_arg, g->cfg.storage_ca, &ctx, &renew, msg, sizeof msg)
                      : CN_E_INVALID;
        if (e >= 0) {
            SSL_CTX_free(g->tls_ctx); /* connections made with it keep their reference */
            g->tls_ctx = ctx;
            g->tls_renew_ms = renew;
        } else {
            cn_warn("gateway", "cannot renew the gateway's access certificate: %s",
                    msg[0] ? msg : cn_strerror(e));
        }
        /* an older context still serves until it is replaced */
        e = g->tls_ctx ? CN_OK : e;
    }
    if (g->tls_ctx)
        SSL_CTX_up_ref(g->tls_ctx);
    *out = g->tls_ctx;
    pthread_mutex_unlock(&g->tls_mu);
    return e;
}

cn_err_t cn__gw_tls_start(cn__gw_t *g, char *msg, size_t cap)
{
    int64_t renew = 0;
    CN_TRY(g->tls_fn ? g->tls_fn(g->tls_arg, g->cfg.storage_ca, &g->tls_ctx, &renew, msg, cap)
                     : CN_E_INVALID);
    g->tls_renew_ms = renew;
    return CN_OK;
}

/* TLS 1.3 (the context's pq-only group) to a storage server, whose
 * certificate must name host (an IP literal or a DNS name). */
static cn_err_t tls_open(cn__gw_t *g, cn__gw_up_t *up, const char *address, bool anonymous)
{
    char host[CN_GW_ADDR_MAX];
    const char *colon = strrchr(address, ':');
    size_t hl = colon ? (size_t)(colon - address) : strlen(address);
    if (hl && address[0] == '[' && address[hl - 1] == ']') {
        address++;
        hl -= 2;
    }
    memcpy(host, address, hl);
    host[hl] = 0;
    SSL_CTX *ctx = NULL;
    CN_TRY(tls_ctx(g, &ctx));
    up->ssl = SSL_new(ctx);
    SSL_CTX_free(ctx); /* the SSL holds its own reference */
    if (!up->ssl || SSL_set_fd(up->ssl, up->fd) != 1)
        return -ENOMEM;
    if (anonymous)
        SSL_certs_clear(up->ssl); /* an anonymous client's session shows no certificate */
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    X509_VERIFY_PARAM *vp = SSL_get0_param(up->ssl);
    if ((literal ? X509_VERIFY_PARAM_set1_ip_asc(vp, host)
                 : SSL_set_tlsext_host_name(up->ssl, host) == 1 &&
                       SSL_set1_host(up->ssl, host) == 1) != 1)
        return CN_E_INVALID;
    int64_t deadline = io_deadline(up, CN__GW_CONNECT_MS);
    for (;;) {
        int r = SSL_connect(up->ssl);
        if (r == 1)
            return CN_OK;
        long v = SSL_get_verify_result(up->ssl);
        short ev = tls_want(up, r);
        if (!ev) {
            cn_warn("gateway", "TLS handshake with storage %s failed%s%s", address,
                    v != X509_V_OK ? ": " : "",
                    v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
            return CN_E_DENIED;
        }
        CN_TRY(wait_fd(up->fd, ev, deadline));
    }
}

/* The hello exchange: a new control session, or (bind nonzero) a data
 * connection of upstream session bind; protocol 4 over TLS speaking for u
 * (NULL: the gateway itself). */
static cn_err_t hello(cn__gw_up_t *up, uint64_t bind, const cn__gw_user_t *u, cn__gw_refusal_t *rf)
{
    cn_scribe_hello_t h;
    memset(&h, 0, sizeof h);
    h.version = up->ssl ? 4 : 2;
    h.codec = up->codec;
    h.caps = up->compression ? CN_SCRIBE_CAP_LZ4 : 0;
    h.bind_session = bind;
    h.client = cn_scribe_cstr("cairnd-gateway");
    if (up->ssl) {
        h.caller = u ? u->caller : CN_SCRIBE_CALLER_DIRECT;
        if (h.caller == CN_SCRIBE_CALLER_DELEGATED)
            h.delegated_cert = (cn_scribe_str_t){ u->pem, (uint32_t)u->pem_len };
        memcpy(h.binding, up->binding, sizeof h.binding);
    }
    cn_buf_t b = { 0 }, reply = { 0 };
    cn_scribe_hdr_t rh;
    cn_err_t e = cn_scribe_enc_hello(&b, &h);
    if (e >= 0)
        e = cn__gw_up_call(up, CN_SCRIBE_OP_HELLO, 1, &b, 4096, &rh, &reply);
    cn_scribe_hello_ok_t ok;
    memset(&ok, 0, sizeof ok);
    cn_scribe_error_t er;
    if (e >= 0 && (rh.flags & CN_SCRIBE_FLAG_ERROR)) {
        /* storage refused the session: its answer is the client's to see */
        if (rf && cn_scribe_dec_error(reply.data, reply.len, CN_SCRIBE_CODEC_LE, &er) >= 0) {
            rf->code = er.code;
            snprintf(rf->msg, sizeof rf->msg, "%.*s", (int)er.message.len,
                     (const char *)er.message.p);
        }
        e = CN_E_UNAVAILABLE;
    } else if (e >= 0) {
        e = cn_scribe_dec_hello_ok(reply.data, reply.len, h.version == 4 && !bind, &ok);
    }
    if (e >= 0 && (ok.version != h.version || ok.codec != up->codec ||
                   ok.compression != up->compression || (bind && ok.session != bind)))
        e = CN_E_PROTOCOL;
    if (e >= 0) {
        up->session = ok.session;
        up->timeout_s = ok.timeout_s;
        if (ok.has_binding)
            memcpy(up->binding, ok.binding, sizeof up->binding);
    }
    OPENSSL_cleanse(ok.binding, sizeof ok.binding);
    cn_buf_free(&b);
    cn_buf_free(&reply);
    return e;
}

/* A new upstream connection to server: a control session, or (bind
 * nonzero) a data connection of upstream session bind, whose binding
 * secret is secret on protocol 4; speaking for u (NULL: the gateway). */
static cn_err_t up_open_capped(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                               uint64_t bind, const uint8_t *secret, const cn__gw_user_t *u,
                               cn__gw_refusal_t *rf, int64_t cap_ms, cn__gw_up_t **out)
{
    cn__gw_up_t *up = calloc(1, sizeof *up);
    if (!up)
        return -ENOMEM;
    up->cap_ms = cap_ms;
    if (secret)
        memcpy(up->binding, secret, sizeof up->binding);
    up->fd = -1;
    up->server = server;
    up->codec = codec;
    up->compression = compression;
    cn_err_t e = dial(g->cfg.servers[server].address, io_deadline(up, CN__GW_CONNECT_MS), &up->fd);
    if (e >= 0 && !g->cfg.tls)
        e = block_reads(up->fd);
    if (e >= 0 && g->cfg.tls)
        e = tls_open(g, up, g->cfg.servers[server].address,
                     u && u->caller == CN_SCRIBE_CALLER_ANONYMOUS);
    if (e >= 0)
        e = hello(up, bind, u, rf);
    if (e < 0) {
        cn_debug("gateway", "storage server %zu (%s): %s", server, g->cfg.servers[server].address,
                 cn_strerror(e));
        cn__gw_up_close(up);
        return e == -ENOMEM ? e : CN_E_UNAVAILABLE;
    }
    up->born_ms = up->last_ms = cn_mono_ms();
    up->bound = bind;
    if (u) {
        up->caller = u->caller;
        memcpy(up->user_key, u->key, sizeof up->user_key);
        up->until_s = u->until_s;
    }
    *out = up;
    return CN_OK;
}

static cn_err_t up_open(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                        uint64_t bind, const uint8_t *secret, const cn__gw_user_t *u,
                        cn__gw_refusal_t *rf, cn__gw_up_t **out)
{
    return up_open_capped(g, server, codec, compression, bind, secret, u, rf, 0, out);
}

void cn__gw_up_close(cn__gw_up_t *up)
{
    if (!up)
        return;
    SSL_free(up->ssl); /* no close_notify: the peer sees the TCP close */
    free(up->rb);
    if (up->fd >= 0)
        close(up->fd);
    OPENSSL_cleanse(up->binding, sizeof up->binding);
    free(up);
}

cn_err_t cn__gw_up_open_as(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                           const cn__gw_user_t *u, cn__gw_refusal_t *rf, cn__gw_up_t **out)
{
    return up_open(g, server, codec, compression, 0, NULL, u, rf, out);
}

/* Why a pooled connection cannot carry a request, or NULL when it can:
 * silent for half its server's announced timeout, or something (an EOF, a
 * reset, a stray byte) waiting on it. */
const char *cn__gw_up_unfit(const cn__gw_up_t *up, int64_t now)
{
    if ((now - up->last_ms) * 2 >= (int64_t)up->timeout_s * 1000)
        return "silent for half its server's timeout";
    if (up->rpos != up->rlen)
        return "holding bytes past its last answer";
    uint8_t b;
    if (up->ssl) {
        /* a peek reads TLS records (a session ticket is not data): nothing
         * readable is fit, data or an alert or an EOF is not */
        size_t got = 0;
        int r = SSL_peek_ex(up->ssl, &b, 1, &got);
        int se = r == 1 ? SSL_ERROR_NONE : SSL_get_error(up->ssl, r);
        ERR_clear_error();
        return se == SSL_ERROR_WANT_READ ? NULL : "closed by its server";
    }
    ssize_t r = recv(up->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? NULL : "closed by its server";
}

/* A pooled connection of the kind asked (data: bound to an upstream
 * session), fit for a request; *out NULL when the pool has none. */
static void pool_take(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression, bool data,
                      cn__gw_up_t **out)
{
    for (;;) {
        cn__gw_up_t *up = NULL;
        pthread_mutex_lock(&g->mu);
        for (cn__gw_up_t **pp = &g->idle[server]; *pp; pp = &(*pp)->next) {
            if ((*pp)->codec == codec && (*pp)->compression == compression &&
                !(*pp)->bound == !data) {
                up = *pp;
                *pp = up->next;
                g->nidle[server]--;
                break;
            }
        }
        pthread_mutex_unlock(&g->mu);
        const char *why = up ? cn__gw_up_unfit(up, cn_mono_ms()) : NULL;
        if (!why) {
            if (up)
                up->next = NULL;
            *out = up;
            return;
        }
        cn_debug("gateway",
                 "storage server %zu: replacing an upstream connection %s (idle %lld ms)",
                 server + 1, why, (long long)(cn_mono_ms() - up->last_ms));
        cn__gw_up_close(up);
    }
}

cn_err_t cn__gw_up_get(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                       cn__gw_up_t **out)
{
    pool_take(g, server, codec, compression, false, out);
    return *out ? CN_OK : up_open(g, server, codec, compression, 0, NULL, NULL, NULL, out);
}

/* The control session upstream data connections of (server, codec,
 * compression) bind to: an anchor connection the gateway keeps open and
 * never lends, replaced (with its data connections' future binds) when it
 * is no longer fit.  Returns its session id, 0 when none can be had.  An
 * anchor is opened outside anchor_mu, so a storage server that is slow to
 * answer delays the binds to it alone; of two opened at once, the first
 * installed stays and the other is closed. */
static uint64_t anchor_session(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression)
{
    unsigned slot = (unsigned)(codec - 1) * 2 + compression;
    if (slot >= 4 || g->cfg.tls)
        return 0; /* protocol 4: clients' calls use their own sessions (cn__gw_up_for) */
    cn__gw_up_t *drop = NULL, *fresh = NULL;
    pthread_mutex_lock(&g->anchor_mu);
    cn__gw_up_t *a = g->anchor[server][slot];
    if (a && cn__gw_up_unfit(a, cn_mono_ms())) {
        drop = a;
        a = g->anchor[server][slot] = NULL;
    }
    uint64_t id = a ? a->session : 0;
    pthread_mutex_unlock(&g->anchor_mu);
    cn__gw_up_close(drop);
    if (id || up_open(g, server, codec, compression, 0, NULL, NULL, NULL, &fresh) < 0)
        return id;
    pthread_mutex_lock(&g->anchor_mu);
    if (!g->anchor[server][slot]) {
        g->anchor[server][slot] = fresh;
        fresh = NULL;
    }
    id = g->anchor[server][slot]->session;
    pthread_mutex_unlock(&g->anchor_mu);
    cn__gw_up_close(fresh); /* another request's anchor was installed first */
    return id;
}

cn_err_t cn__gw_up_get_data(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                            cn__gw_up_t **out)
{
    pool_take(g, server, codec, compression, true, out);
    if (*out)
        return CN_OK;
    uint64_t sid = anchor_session(g, server, codec, compression);
    if (sid && up_open(g, server, codec, compression, sid, NULL, NULL, NULL, out) >= 0) {
        cn_debug("gateway", "storage server %zu: upstream data connection bound to its session",
                 server + 1);
        return CN_OK;
    }
    /* no anchor, or its session holds four data connections already */
    return cn__gw_up_get(g, server, codec, compression, out);
}

void cn__gw_up_put(cn__gw_t *g, cn__gw_up_t *up)
{
    up->last_ms = cn_mono_ms();
    pthread_mutex_lock(&g->mu);
    bool keep = g->nidle[up->server] < CN__GW_POOL_IDLE;
    if (keep) {
        up->next = g->idle[up->server];
        g->idle[up->server] = up;
        g->nidle[up->server]++;
    }
    pthread_mutex_unlock(&g->mu);
    if (!keep)
        cn__gw_up_close(up);
}

static void close_list(cn__gw_up_t **l)
{
    while (*l) {
        cn__gw_up_t *n = (*l)->next;
        cn__gw_up_close(*l);
        *l = n;
    }
}

void cn__gw_pool_free(cn__gw_t *g)
{
    for (size_t i = 0; i < CN_GW_MAX_SERVERS; i++) {
        for (size_t j = 0; j < 4; j++) {
            cn__gw_up_close(g->anchor[i][j]);
            g->anchor[i][j] = NULL;
        }
        while (g->idle[i]) {
            cn__gw_up_t *n = g->idle[i]->next;
            cn__gw_up_close(g->idle[i]);
            g->idle[i] = n;
        }
        g->nidle[i] = 0;
        close_list(&g->uidle[i]);
        close_list(&g->uanchor[i]);
        g->nuidle[i] = g->nuanchor[i] = 0;
    }
}

cn_err_t cn__gw_up_call(cn__gw_up_t *up, uint16_t opcode, uint64_t rid, const cn_buf_t *payload,
                        size_t max, cn_scribe_hdr_t *h, cn_buf_t *reply)
{
    uint8_t head[CN_SCRIBE_HDR_LEN];
    cn_scribe_hdr_t q = { opcode, 0, rid, (uint32_t)payload->len };
    cn_scribe_hdr_encode(head, &q);
    CN_TRY(cn__gw_up_write(up, head, sizeof head));
    if (payload->len)
        CN_TRY(cn__gw_up_write(up, payload->data, payload->len));
    CN_TRY(cn__gw_up_read(up, head, sizeof head));
    if (cn_scribe_hdr_parse(head, h) < 0 || h->opcode != opcode || h->request_id != rid ||
        (h->flags & CN_SCRIBE_FLAG_STREAM) || h->length > max)
        return CN_E_PROTOCOL;
    cn_buf_reset(reply);
    CN_TRY(cn_buf_reserve(reply, h->length ? h->length : 1));
    CN_TRY(cn__gw_up_read(up, reply->data, h->length));
    reply->len = h->length;
    return CN_OK;
}

cn_err_t cn__gw_ask(cn__gw_t *g, size_t server, uint8_t codec, uint16_t opcode,
                    const cn_buf_t *payload, size_t max, cn_scribe_hdr_t *h, cn_buf_t *reply)
{
    /* Every caller asks something without side effects (26, 28, repo_info,
     * repo_list), so a broken exchange is tried once more on a new
     * connection: a pooled one may have been closed under it. */
    for (int attempt = 0;; attempt++) {
        cn__gw_up_t *up = NULL;
        cn_err_t e = cn__gw_up_get(g, server, codec, 0, &up);
        if (e < 0)
            return e;
        e = cn__gw_up_call(up, opcode, 2, payload, max, h, reply);
        if (e >= 0) {
            cn__gw_up_put(g, up);
            return CN_OK;
        }
        cn__gw_up_close(up);
        if (e == -ENOMEM || attempt == 1)
            return e == -ENOMEM ? e : CN_E_UNAVAILABLE;
    }
}

/* ---- users' upstream sessions across client connections (protocol 4) ------------------------ */
/* A user's upstream session outlives the client connection that opened it
 * and serves the next connection presenting the same certificate (its
 * SHA-256, not the user's name: only the holder of that certificate's key
 * gets it), or the next anonymous one for caller 0; never another user's.
 * It is not reused upstream_reuse_ms after its hello (by default storage's
 * own auth_cache_ms: no staler than a confirmation storage reuses for a
 * new session, so a revoked grant or credential takes effect as soon as a
 * direct connection's would), nor past the certificate's notAfter, nor when
 * unfit (cn__gw_up_unfit).  One per (server, user, codec, compression), at
 * most CN__GW_USER_IDLE per server, the oldest evicted: each holds one of
 * the user's connection places at storage. */

static bool same_user(const cn__gw_up_t *a, uint8_t caller, const uint8_t key[32], uint8_t codec,
                      uint8_t compression)
{
    return a->caller == caller && !memcmp(a->user_key, key, sizeof a->user_key) &&
           a->codec == codec && a->compression == compression;
}

/* Why a user's session may not serve another client connection (NULL: it
 * may). */
static const char *user_stale(const cn__gw_t *g, const cn__gw_up_t *up, int64_t now)
{
    if (now - up->born_ms >= (int64_t)g->cfg.reuse_ms)
        return "older than upstream_reuse_ms";
    if (up->until_s && cn_wall_ms() / 1000 >= up->until_s)
        return "past its user's certificate";
    return cn__gw_up_unfit(up, now);
}

/* The session kept for u's next connection to server, fit, or NULL. */
static cn__gw_up_t *user_take(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                              const cn__gw_user_t *u)
{
    cn__gw_up_t *up = NULL;
    pthread_mutex_lock(&g->mu);
    for (cn__gw_up_t **pp = &g->uidle[server]; *pp; pp = &(*pp)->next)
        if (same_user(*pp, u->caller, u->key, codec, compression)) {
            up = *pp;
            *pp = up->next;
            g->nuidle[server]--;
            break;
        }
    pthread_mutex_unlock(&g->mu);
    if (!up)
        return NULL;
    up->next = NULL;
    const char *why = user_stale(g, up, cn_mono_ms());
    if (why) {
        cn_debug("gateway", "storage server %zu: not reusing a user's upstream session %s",
                 server + 1, why);
        cn__gw_up_close(up);
        return NULL;
    }
    cn_debug("gateway",
             "storage server %zu: a user's upstream session reused by their next "
             "connection",
             server + 1);
    return up;
}

/* Keeps a closing client connection's session up (a complete exchange
 * done on it) for its user's next connection, replacing an older one of
 * the same user and evicting the oldest of a full pool; else closes it. */
static void user_keep(cn__gw_t *g, cn__gw_up_t *up)
{
    if (user_stale(g, up, cn_mono_ms())) {
        cn__gw_up_close(up);
        return;
    }
    size_t server = up->server;
    cn__gw_up_t *drop = NULL, **pp;
    pthread_mutex_lock(&g->mu);
    for (pp = &g->uidle[server]; *pp; pp = &(*pp)->next)
        if (same_user(*pp, up->caller, up->user_key, up->codec, up->compression)) {
            drop = *pp;
            *pp = drop->next;
            g->nuidle[server]--;
            break;
        }
    up->next = g->uidle[server];
    g->uidle[server] = up;
    g->nuidle[server]++;
    if (!drop && g->nuidle[server] > CN__GW_USER_IDLE) {
        for (pp = &g->uidle[server]; (*pp)->next; pp = &(*pp)->next)
            ;
        drop = *pp;
        *pp = NULL;
        g->nuidle[server]--;
    }
    pthread_mutex_unlock(&g->mu);
    cn__gw_up_close(drop);
    cn_debug("gateway",
             "storage server %zu: a user's upstream session kept for their next "
             "connection",
             server + 1);
}

/* ---- users' upstream data connections (protocol 4) ----------------------------------------- */
/* u's anchor with server in its list, unlinked into *stale when it could no
 * longer be reused; NULL when none.  Under anchor_mu. */
static cn__gw_up_t *user_find_locked(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                                     const cn__gw_user_t *u, cn__gw_up_t **stale)
{
    for (cn__gw_up_t **pp = &g->uanchor[server]; *pp; pp = &(*pp)->next) {
        if (!same_user(*pp, u->caller, u->key, codec, compression))
            continue;
        cn__gw_up_t *a = *pp;
        if (!user_stale(g, a, cn_mono_ms()))
            return a;
        *pp = a->next;
        g->nuanchor[server]--;
        *stale = a;
        return NULL;
    }
    return NULL;
}

/* Adds a to server's list of user anchors; the oldest beyond
 * CN__GW_USER_IDLE is unlinked into *dropped.  Under anchor_mu. */
static void user_add_locked(cn__gw_t *g, size_t server, cn__gw_up_t *a, cn__gw_up_t **dropped)
{
    a->next = g->uanchor[server];
    g->uanchor[server] = a;
    if (++g->nuanchor[server] > CN__GW_USER_IDLE) {
        cn__gw_up_t **pp;
        for (pp = &g->uanchor[server]; (*pp)->next; pp = &(*pp)->next)
            ;
        *dropped = *pp;
        *pp = NULL;
        g->nuanchor[server]--;
    }
}

/* The session a user's upstream data connections to server bind to: an
 * anchor per (certificate, codec, compression), a control session speaking
 * for u that the gateway keeps open and never lends (storage binds data
 * connections only while their control connection is open), replaced when
 * it could no longer be reused (user_stale), at most CN__GW_USER_IDLE per
 * server (the oldest closed).  Opened outside anchor_mu, as anchor_session's.
 * Its id and binding secret in *sid and secret; false when none can be had. */
static bool user_anchor(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                        const cn__gw_user_t *u, uint64_t *sid, uint8_t secret[32])
{
    cn__gw_up_t *drop[3] = { NULL, NULL, NULL }, *fresh = NULL;
    pthread_mutex_lock(&g->anchor_mu);
    cn__gw_up_t *a = user_find_locked(g, server, codec, compression, u, &drop[0]);
    if (a) {
        *sid = a->session;
        memcpy(secret, a->binding, 32);
    }
    pthread_mutex_unlock(&g->anchor_mu);
    if (!a && up_open(g, server, codec, compression, 0, NULL, u, NULL, &fresh) >= 0) {
        pthread_mutex_lock(&g->anchor_mu);
        a = user_find_locked(g, server, codec, compression, u, &drop[1]);
        if (!a) { /* else another request's anchor was installed first */
            user_add_locked(g, server, fresh, &drop[2]);
            a = fresh;
            fresh = NULL;
        }
        *sid = a->session;
        memcpy(secret, a->binding, 32);
        pthread_mutex_unlock(&g->anchor_mu);
    }
    for (size_t i = 0; i < 3; i++)
        cn__gw_up_close(drop[i]);
    cn__gw_up_close(fresh);
    return a != NULL;
}

/* An upstream data connection for a request from a client's data
 * connection: bound to its user's anchor session with server.  Fails when
 * reuse is off (upstream_reuse_ms 0), no anchor can be had, or the anchor's
 * session holds four data connections: the caller then uses a control
 * session. */
static cn_err_t user_bind(cn__gw_t *g, size_t server, cn__gw_conn_t *gc, uint8_t compression,
                          cn__gw_up_t **out)
{
    uint64_t sid = 0;
    uint8_t secret[32];
    if (!g->cfg.reuse_ms ||
        !user_anchor(g, server, gc->codec, compression, &gc->user, &sid, secret))
        return CN_E_UNAVAILABLE;
    cn_err_t e = up_open(g, server, gc->codec, compression, sid, secret, &gc->user, NULL, out);
    OPENSSL_cleanse(secret, sizeof secret);
    if (e >= 0)
        cn_debug("gateway",
                 "storage server %zu: a user's upstream data connection bound to "
                 "their session",
                 server + 1);
    return e;
}

/* ---- a user's hello (protocol 4) ------------------------------------------------------------ */
/* One request on a new session: a connection stays pending at storage until
 * it has delivered a complete request frame (specification, "Handshake
 * admission"), and storage holds at most max_pending_per_source such
 * connections of one source, which the gateway is for all its users.
 * discover is the cheapest request every session may make. */
static cn_err_t unpend(cn__gw_up_t *up)
{
    cn_buf_t none = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h;
    cn_err_t e = cn__gw_up_call(up, CN_SCRIBE_OP_DISCOVER, 2, &none, 32768, &h, &reply);
    if (e >= 0 && (h.flags & CN_SCRIBE_FLAG_ERROR))
        e = CN_E_PROTOCOL;
    cn_buf_free(&reply);
    return e;
}

cn_err_t cn__gw_up_hello(cn__gw_conn_t *gc, int64_t deadline_ms, cn__gw_refusal_t *rf,
                         size_t *refused_by)
{
    cn__gw_t *g = gc->g;
    memset(rf, 0, sizeof *rf);
    for (size_t i = 0; i < g->cfg.n && cn_mono_ms() < deadline_ms; i++) {
        cn__gw_up_t *up = user_take(g, i, gc->codec, 0, &gc->user);
        cn__gw_refusal_t seen = { 0 };
        if (!up) {
            if (up_open_capped(g, i, gc->codec, 0, 0, NULL, &gc->user, &seen, deadline_ms, &up) ==
                -ENOMEM)
                return -ENOMEM;
            if (up && unpend(up) < 0) { /* it broke: as if it never answered */
                cn__gw_up_close(up);
                up = NULL;
            }
            if (up)
                up->cap_ms = 0; /* its requests keep the usual timeouts */
        }
        if (up) {
            gc->ups[i][0] = up; /* the connection's first control session with i */
            return CN_OK;
        }
        if (seen.code && !rf->code) {
            *rf = seen;
            *refused_by = i;
        }
    }
    return CN_E_UNAVAILABLE;
}

/* ---- a client's upstream sessions ----------------------------------------------------------- */
cn_err_t cn__gw_up_for(cn__gw_call_t *k, size_t server, uint8_t compression, bool data,
                       cn__gw_up_t **out)
{
    cn__gw_conn_t *gc = k->gc;
    cn__gw_t *g = gc->g;
    *out = NULL;
    if (!g->cfg.tls)
        return data && gc->data ? cn__gw_up_get_data(g, server, gc->codec, compression, out)
                                : cn__gw_up_get(g, server, gc->codec, compression, out);
    cn__gw_up_t **slot = &gc->ups[server][compression ? 1 : 0];
    if (*slot) {
        const char *why = cn__gw_up_unfit(*slot, cn_mono_ms());
        if (!why) {
            *out = *slot;
            *slot = NULL;
            return CN_OK;
        }
        cn_debug("gateway", "storage server %zu: replacing a client's upstream session %s",
                 server + 1, why);
        cn__gw_up_close(*slot);
        *slot = NULL;
    }
    if (data && gc->data && user_bind(g, server, gc, compression, out) >= 0)
        return CN_OK;
    if ((*out = user_take(g, server, gc->codec, compression, &gc->user)))
        return CN_OK;
    if (!gc->refusal && !(gc->refusal = calloc(1, sizeof *gc->refusal)))
        return -ENOMEM;
    gc->refusal->code = 0;
    return cn__gw_up_open_as(g, server, gc->codec, compression, &gc->user, gc->refusal, out);
}

void cn__gw_up_done(cn__gw_call_t *k, cn__gw_up_t *up)
{
    if (!k->gc->g->cfg.tls) {
        cn__gw_up_put(k->gc->g, up);
        return;
    }
    up->last_ms = cn_mono_ms();
    cn__gw_up_t **slot = &k->gc->ups[up->server][up->compression ? 1 : 0];
    cn__gw_up_close(*slot);
    *slot = up;
}

void cn__gw_up_return(cn__gw_conn_t *gc, cn__gw_up_t *up)
{
    if (!up)
        return;
    up->last_ms = cn_mono_ms();
    cn__gw_up_t **slot = &gc->ups[up->server][up->compression ? 1 : 0];
    if (!*slot)
        *slot = up;
    else /* the connection made another while up was lent: up may serve the user later */
        user_keep(gc->g, up);
}

void cn__gw_up_drop(cn__gw_call_t *k, cn__gw_up_t *up)
{
    (void)k;
    cn__gw_up_close(up);
}

cn_err_t cn__gw_ask_for(cn__gw_call_t *k, size_t server, uint16_t opcode, const cn_buf_t *payload,
                        size_t max, cn_scribe_hdr_t *h, cn_buf_t *reply)
{
    if (!k->gc->g->cfg.tls)
        return cn__gw_ask(k->gc->g, server, k->gc->codec, opcode, payload, max, h, reply);
    /* as cn__gw_ask: a read without side effects, tried once more on a new
     * session when the kept one broke under it */
    for (int attempt = 0;; attempt++) {
        cn__gw_up_t *up = NULL;
        cn_err_t e = cn__gw_up_for(k, server, 0, false, &up);
        if (e < 0)
            return e;
        e = cn__gw_up_call(up, opcode, 2, payload, max, h, reply);
        if (e >= 0) {
            cn__gw_up_done(k, up);
            return CN_OK;
        }
        cn__gw_up_close(up);
        if (e == -ENOMEM || attempt == 1)
            return e == -ENOMEM ? e : CN_E_UNAVAILABLE;
    }
}

void cn__gw_conn_ups_free(cn__gw_conn_t *gc)
{
    for (size_t i = 0; i < CN_GW_MAX_SERVERS; i++)
        for (size_t j = 0; j < 2; j++) {
            if (gc->ups[i][j] && !gc->ups[i][j]->bound)
                user_keep(gc->g, gc->ups[i][j]);
            else
                cn__gw_up_close(gc->ups[i][j]); /* a data connection: its anchor stays */
            gc->ups[i][j] = NULL;
        }
    free(gc->refusal);
    gc->refusal = NULL;
}
