/* The loop's wait for a new connection's hello: a connection goes to the
 * handshake pool only once the bytes its open() reads first have arrived
 * (cn_adapter_t.hello_len), so a peer that dribbles its hello, or sends
 * nothing after a byte, holds a slot of the connection table until the
 * handshake deadline but never a worker.  Under TLS, each of the peer's
 * flights waits so, a whole record at a time (the ClientHello's first
 * record; then what the worker's SSL_accept asked for; then, once TLS is up,
 * the record that carries the protocol's hello), and the worker gives the
 * connection back to the loop whenever the handshake needs more.
 *
 * It never takes a byte from the stream: it looks with MSG_PEEK and counts
 * with FIONREAD, and the loop is told as each part arrives (CN__EV_EDGE), so
 * the hello waits in the kernel's socket buffer and not in ours. */
#include "net/net_int.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#define TLS_RECORD_HDR 5
#define TLS_HANDSHAKE 22

bool cn__hello_waits(const cn_conn_t *c)
{
    return c->ls->tls || c->ls->ad->hello_len;
}

/* The next TLS record whole; for the connection's first, what was seen
 * already if it is not a handshake record (OpenSSL answers that). */
static size_t tls_record_len(const uint8_t *p, size_t have, bool first)
{
    if (have < TLS_RECORD_HDR)
        return TLS_RECORD_HDR;
    if (first && p[0] != TLS_HANDSHAKE)
        return have;
    return TLS_RECORD_HDR + ((size_t)p[3] << 8 | p[4]);
}

bool cn__hello_here(cn_conn_t *c, int mask)
{
    if (!cn__hello_waits(c) || (mask & CN__EV_ERROR))
        return true; /* open() finds the peer gone, or reads what came before */
    if (c->ssl && SSL_has_pending(c->ssl))
        return true; /* OpenSSL read it already */
    uint8_t p[CN_HELLO_PEEK];
    ssize_t r = recv(c->fd, p, sizeof p, MSG_PEEK | MSG_DONTWAIT);
    if (r <= 0)
        return r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    size_t have = (size_t)r;
    size_t need = c->ls->tls ? tls_record_len(p, have, !c->ssl) : c->ls->ad->hello_len(p, have);
    if (need > CN_HELLO_WAIT_MAX)
        need = CN_HELLO_WAIT_MAX;
    if (need <= have)
        return true;
    int avail = 0;
    return ioctl(c->fd, FIONREAD, &avail) < 0 || avail < 0 || (size_t)avail >= need;
}
