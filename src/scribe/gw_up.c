/* The gateway's upstream connections: a protocol-2 hello to one storage
 * server, blocking frame I/O bounded by the specification's client
 * timeouts (10 s to connect, 300 s per read or write), and a pool of idle
 * connections per server.  A pooled connection that has been silent for
 * half the inactivity timeout its server announced, or whose peer has
 * already closed it, is replaced before anything is sent on it
 * (specification section 1): a request must never be written into a
 * connection the server is about to drop, since its outcome would then be
 * unknown.  Never reads past the frame it was asked for. */
#include "gw_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

cn_err_t cn__gw_up_write(cn__gw_up_t *up, const void *p, size_t n)
{
    const uint8_t *b = p;
    int64_t deadline = cn_mono_ms() + CN__GW_IO_MS;
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

cn_err_t cn__gw_up_read_some(cn__gw_up_t *up, void *p, size_t n, size_t *got)
{
    int64_t deadline = cn_mono_ms() + CN__GW_IO_MS;
    for (;;) {
        ssize_t r = recv(up->fd, p, n, MSG_DONTWAIT);
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
        CN_TRY(wait_fd(up->fd, POLLIN, deadline));
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

static cn_err_t dial(const char *address, int *out)
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
        e = errno == EINPROGRESS ? wait_fd(fd, POLLOUT, cn_mono_ms() + CN__GW_CONNECT_MS) : -errno;
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

/* The hello exchange: a new control session, or (bind nonzero) a data
 * connection of upstream session bind. */
static cn_err_t hello(cn__gw_up_t *up, uint64_t bind)
{
    cn_scribe_hello_t h;
    memset(&h, 0, sizeof h);
    h.version = 2;
    h.codec = up->codec;
    h.caps = up->compression ? CN_SCRIBE_CAP_LZ4 : 0;
    h.bind_session = bind;
    h.client = cn_scribe_cstr("cairnd-gateway");
    cn_buf_t b = { 0 }, reply = { 0 };
    cn_scribe_hdr_t rh;
    cn_err_t e = cn_scribe_enc_hello(&b, &h);
    if (e >= 0)
        e = cn__gw_up_call(up, CN_SCRIBE_OP_HELLO, 1, &b, 4096, &rh, &reply);
    cn_scribe_hello_ok_t ok;
    if (e >= 0 && (rh.flags & CN_SCRIBE_FLAG_ERROR))
        e = CN_E_UNAVAILABLE;
    if (e >= 0)
        e = cn_scribe_dec_hello_ok(reply.data, reply.len, false, &ok);
    if (e >= 0 && (ok.version != 2 || ok.codec != up->codec || ok.compression != up->compression ||
                   (bind && ok.session != bind)))
        e = CN_E_PROTOCOL;
    if (e >= 0) {
        up->session = ok.session;
        up->timeout_s = ok.timeout_s;
    }
    cn_buf_free(&b);
    cn_buf_free(&reply);
    return e;
}

static cn_err_t up_open(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                        uint64_t bind, cn__gw_up_t **out)
{
    cn__gw_up_t *up = calloc(1, sizeof *up);
    if (!up)
        return -ENOMEM;
    up->fd = -1;
    up->server = server;
    up->codec = codec;
    up->compression = compression;
    cn_err_t e = dial(g->cfg.servers[server].address, &up->fd);
    if (e >= 0)
        e = hello(up, bind);
    if (e < 0) {
        cn_debug("gateway", "storage server %zu (%s): %s", server, g->cfg.servers[server].address,
                 cn_strerror(e));
        cn__gw_up_close(up);
        return e == -ENOMEM ? e : CN_E_UNAVAILABLE;
    }
    up->last_ms = cn_mono_ms();
    up->bound = bind;
    *out = up;
    return CN_OK;
}

void cn__gw_up_close(cn__gw_up_t *up)
{
    if (!up)
        return;
    if (up->fd >= 0)
        close(up->fd);
    free(up);
}

/* Why a pooled connection cannot carry a request, or NULL when it can:
 * silent for half its server's announced timeout, or something (an EOF, a
 * reset, a stray byte) waiting on it. */
static const char *unfit(const cn__gw_up_t *up, int64_t now)
{
    if ((now - up->last_ms) * 2 >= (int64_t)up->timeout_s * 1000)
        return "silent for half its server's timeout";
    uint8_t b;
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
        const char *why = up ? unfit(up, cn_mono_ms()) : NULL;
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
    return *out ? CN_OK : up_open(g, server, codec, compression, 0, out);
}

/* The control session upstream data connections of (server, codec,
 * compression) bind to: an anchor connection the gateway keeps open and
 * never lends, replaced (with its data connections' future binds) when it
 * is no longer fit.  Returns its session id, 0 when none can be had. */
static uint64_t anchor_session(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression)
{
    unsigned slot = (unsigned)(codec - 1) * 2 + compression;
    if (slot >= 4)
        return 0;
    pthread_mutex_lock(&g->anchor_mu);
    cn__gw_up_t *a = g->anchor[server][slot];
    if (a && unfit(a, cn_mono_ms())) {
        cn__gw_up_close(a);
        a = g->anchor[server][slot] = NULL;
    }
    if (!a && up_open(g, server, codec, compression, 0, &a) >= 0)
        g->anchor[server][slot] = a;
    uint64_t id = a ? a->session : 0;
    pthread_mutex_unlock(&g->anchor_mu);
    return id;
}

cn_err_t cn__gw_up_get_data(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                            cn__gw_up_t **out)
{
    pool_take(g, server, codec, compression, true, out);
    if (*out)
        return CN_OK;
    uint64_t sid = anchor_session(g, server, codec, compression);
    if (sid && up_open(g, server, codec, compression, sid, out) >= 0) {
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
