/* libcairn's Scribe client: one control connection with deadline-bound
 * blocking I/O, the hello, every core request, LZ4 transfer blocks both ways,
 * and submits resolved through operation_outcome when a reply is lost.
 * Protocol 2 on plaintext; protocol 4 over TLS for a "scribes://" endpoint
 * (scribe_tls.c: X25519MLKEM768 only, the server verified), anonymous
 * caller, binding secret on data connections, waiting for put_objects'
 * admission before streaming.  Uses the pure codec (cairn/scribe.h) for
 * every layout. */
#include "cairn/scribe_client.h"
#include "cairn/scribe.h"
#include "cairn/util.h"
#include "scribe_tls.h"
#include "scribe_int.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <fcntl.h>
#include <lz4.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct cn_scribe_client {
    char host[256];
    char port[8];
    int codec;
    bool lz4;
    int connect_ms, io_ms;
    int fd;
    bool tls;          /* protocol 4: a scribes:// endpoint */
    SSL_CTX *tls_ctx;  /* owned by the root client, swapped under tlsmu */
    bool direct;       /* protocol 4: tls_ctx presents an access certificate (caller 1) */
    uint64_t renew_at; /* direct: when tls_ctx's certificate is due (scribe_tls.h) */
    pthread_mutex_t tlsmu;
    SSL *ssl;            /* while connected over TLS */
    uint8_t binding[32]; /* protocol 4: the control session's binding secret */
    uint8_t compression; /* accepted by the server */
    uint64_t rid;
    cn_buf_t out, in;
    uint8_t *blk, *blk2; /* LZ4 block buffers */
    uint8_t *rbuf;       /* receive buffer: small reads are served from it */
    size_t rpos, rlen;
    uint64_t sent, received;
    uint64_t session; /* the session hello-ok named */
    uint64_t bind;    /* a data connection: the session it binds to */
    int ndata;        /* data connections transfers may use */
    cn_scribe_client_t *data[CN_SCRIBE_CLIENT_MAX_DATA];
    cn_scribe_client_t *root; /* the control client (itself when it is one) */
    cn_scribe_client_progress_fn progress;
    void *pctx;
    pthread_mutex_t pmu;  /* serializes progress calls (root only) */
    pthread_mutex_t fdmu; /* fd's changes, against another thread's interrupt */
    bool cut;             /* under fdmu: fd was shut down by an interrupt */
};

/* Reports n object bytes moved, through the root's callback. */
static void report(cn_scribe_client_t *cl, uint64_t n)
{
    cn_scribe_client_t *r = cl->root;
    if (!r->progress || !n)
        return;
    pthread_mutex_lock(&r->pmu);
    r->progress(r->pctx, n);
    pthread_mutex_unlock(&r->pmu);
}

static void set_err(cn_scribe_cerr_t *err, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(cn_scribe_cerr_t *err, uint16_t code, const char *fmt, ...)
{
    if (!err)
        return;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static cn_err_t err_for_code(uint16_t code)
{
    switch (code) {
    case CN_SCRIBE_E_REPOSITORY_NOT_FOUND:
    case CN_SCRIBE_E_BRANCH_NOT_FOUND:
    case CN_SCRIBE_E_CHANGE_NOT_FOUND:
    case CN_SCRIBE_E_OBJECT_MISSING: return CN_E_NOT_FOUND;
    case CN_SCRIBE_E_REPOSITORY_EXISTS:
    case CN_SCRIBE_E_BRANCH_EXISTS: return CN_E_EXISTS;
    case CN_SCRIBE_E_NAME_MISMATCH:
    case CN_SCRIBE_E_OPERATION_INTENT_MISMATCH:
    case CN_SCRIBE_E_INCARNATION_MISMATCH:
    case CN_SCRIBE_E_NOTE_REVISION_STALE:
    case CN_SCRIBE_E_WORKSPACE_MISMATCH:
    case CN_SCRIBE_E_INTENT_FINALIZED:
    case CN_SCRIBE_E_BASE_MISMATCH:
    case CN_SCRIBE_E_MERGE_INCOMPLETE:
    case CN_SCRIBE_E_LOCK_HELD:
    case CN_SCRIBE_E_WORKSPACE_RETIRED:
    case CN_SCRIBE_E_LOCK_REQUIRED: return CN_E_CONFLICT;
    case CN_SCRIBE_E_MALFORMED:
    case CN_SCRIBE_E_INVALID_REPOSITORY_CONFIG:
    case CN_SCRIBE_E_CHANGE_NOT_PICKABLE:
    case CN_SCRIBE_E_OBJECT_INVALID: return CN_E_INVALID;
    case CN_SCRIBE_E_BUSY: return CN_E_BUSY;
    case CN_SCRIBE_E_UNSUPPORTED_VERSION:
    case CN_SCRIBE_E_UNSUPPORTED_OPERATION: return CN_E_UNSUPPORTED;
    case CN_SCRIBE_E_FORBIDDEN:
    case CN_SCRIBE_E_UNAUTHENTICATED: return CN_E_DENIED;
    case CN_SCRIBE_E_LIMIT_EXCEEDED: return CN_E_LIMIT;
    default: return -EIO;
    }
}

/* ---- transport ------------------------------------------------------------------- */
static void drop(cn_scribe_client_t *cl)
{
    SSL_free(cl->ssl);
    cl->ssl = NULL;
    pthread_mutex_lock(&cl->fdmu);
    if (cl->fd >= 0)
        close(cl->fd);
    cl->fd = -1;
    cl->cut = false;
    pthread_mutex_unlock(&cl->fdmu);
    cl->rpos = cl->rlen = 0;
}

static cn_err_t send_all(cn_scribe_client_t *cl, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        if (cl->ssl) {
            size_t done = 0;
            cn_err_t e = cn__scribe_tls_write(cl->ssl, b, n, &done);
            if (e < 0) {
                drop(cl);
                return e;
            }
            b += done;
            n -= done;
            cl->sent += done;
            continue;
        }
        ssize_t w = send(cl->fd, b, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            cn_err_t e = errno == EAGAIN || errno == EWOULDBLOCK ? CN_E_TIMEOUT : -errno;
            drop(cl);
            return e;
        }
        b += w;
        n -= (size_t)w;
        cl->sent += (uint64_t)w;
    }
    return CN_OK;
}

/* The receive buffer, and the read size from which reads bypass it: object
 * bytes go straight to their destination, headers cost no syscall each. */
#define CN__RBUF (64u << 10)
#define CN__RDIRECT (8u << 10)

/* One recv into p (direct) or into the receive buffer; 0 bytes is an error. */
static cn_err_t recv_some(cn_scribe_client_t *cl, void *p, size_t n, size_t *got)
{
    if (cl->ssl) {
        cn_err_t e = cn__scribe_tls_read(cl->ssl, p, n, got);
        if (e < 0)
            drop(cl);
        return e;
    }
    for (;;) {
        ssize_t r = recv(cl->fd, p, n, 0);
        if (r > 0) {
            *got = (size_t)r;
            return CN_OK;
        }
        if (r < 0 && errno == EINTR)
            continue;
        cn_err_t e = r == 0                                    ? CN_E_CLOSED
                     : errno == EAGAIN || errno == EWOULDBLOCK ? CN_E_TIMEOUT
                                                               : -errno;
        drop(cl);
        return e;
    }
}

static cn_err_t recv_all(cn_scribe_client_t *cl, void *p, size_t n)
{
    uint8_t *b = p;
    if (!cl->rbuf && !(cl->rbuf = malloc(CN__RBUF)))
        return -ENOMEM;
    while (n) {
        size_t got = 0;
        if (cl->rpos < cl->rlen) {
            got = cl->rlen - cl->rpos < n ? cl->rlen - cl->rpos : n;
            memcpy(b, cl->rbuf + cl->rpos, got);
            cl->rpos += got;
        } else if (n >= CN__RDIRECT) {
            CN_TRY(recv_some(cl, b, n, &got));
        } else {
            CN_TRY(recv_some(cl, cl->rbuf, CN__RBUF, &got));
            cl->rpos = 0;
            cl->rlen = got;
            continue;
        }
        b += got;
        n -= got;
        cl->received += got;
    }
    return CN_OK;
}

static cn_err_t dial(cn_scribe_client_t *cl, cn_scribe_cerr_t *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int g = getaddrinfo(cl->host, cl->port, &hints, &res);
    if (g) {
        set_err(err, 0, "cannot resolve %s: %s", cl->host, gai_strerror(g));
        return CN_E_INVALID;
    }
    cn_err_t last = CN_E_CLOSED;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            last = -errno;
            continue;
        }
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = { fd, POLLOUT, 0 };
            rc = poll(&pfd, 1, cl->connect_ms);
            int so = 0;
            socklen_t sl = sizeof so;
            if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 && so == 0)
                rc = 0;
            else {
                errno = rc == 0 ? ETIMEDOUT : (so ? so : errno);
                rc = -1;
            }
        }
        if (rc < 0) {
            last = -errno;
            close(fd);
            continue;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        struct timeval tv = { cl->io_ms / 1000, (cl->io_ms % 1000) * 1000 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_mutex_lock(&cl->fdmu);
        cl->fd = fd;
        pthread_mutex_unlock(&cl->fdmu);
        freeaddrinfo(res);
        return CN_OK;
    }
    freeaddrinfo(res);
    set_err(err, 0, "cannot connect to %s:%s: %s", cl->host, cl->port, cn_strerror(last));
    return last;
}

static cn_err_t send_frame(cn_scribe_client_t *cl, uint16_t op, uint16_t flags, const cn_buf_t *p)
{
    uint8_t h[CN_SCRIBE_HDR_LEN];
    cn_scribe_hdr_t hdr = { op, flags, ++cl->rid, (uint32_t)p->len };
    cn_scribe_hdr_encode(h, &hdr);
    CN_TRY(send_all(cl, h, sizeof h));
    return p->len ? send_all(cl, p->data, p->len) : CN_OK;
}

/* Reads the reply frame of the last request into cl->in.  An error frame
 * becomes its cn_err_t with err filled. */
static cn_err_t recv_reply(cn_scribe_client_t *cl, uint16_t op, cn_scribe_hdr_t *hdr,
                           cn_scribe_codec_t codec, cn_scribe_cerr_t *err)
{
    uint8_t h[CN_SCRIBE_HDR_LEN];
    CN_TRY(recv_all(cl, h, sizeof h));
    if (cn_scribe_hdr_parse(h, hdr) < 0 || hdr->request_id != cl->rid || hdr->opcode != op) {
        drop(cl);
        set_err(err, 0, "the server broke the frame contract");
        return CN_E_PROTOCOL;
    }
    cn_buf_reset(&cl->in);
    CN_TRY(cn_buf_reserve(&cl->in, hdr->length ? hdr->length : 1));
    CN_TRY(recv_all(cl, cl->in.data, hdr->length));
    cl->in.len = hdr->length;
    if (hdr->flags & CN_SCRIBE_FLAG_ERROR) {
        cn_scribe_error_t e;
        if (cn_scribe_dec_error(cl->in.data, cl->in.len, codec, &e) < 0) {
            drop(cl);
            set_err(err, 0, "undecodable error frame");
            return CN_E_PROTOCOL;
        }
        set_err(err, e.code, "%.*s", (int)e.message.len, (const char *)e.message.p);
        return err_for_code(e.code);
    }
    return CN_OK;
}

/* The root's TLS context for a new connection (reconnect or data
 * connection), referenced for the caller: rebuilt first, with a new access
 * certificate, once the current one has lived half its lifetime by the
 * monotonic clock.  A failed renewal keeps the current context (its
 * certificate stays valid until notAfter; data connections must keep the
 * control's caller mode) and is retried no sooner than 30 s later. */
static SSL_CTX *tls_ctx_ref(cn_scribe_client_t *r)
{
    pthread_mutex_lock(&r->tlsmu);
    if (r->direct && cn__scribe_tls_renew_due(r->renew_at)) {
        SSL_CTX *n = NULL;
        bool direct = false;
        uint64_t at = 0;
        char msg[400] = "";
        cn_err_t e = cn__scribe_tls_ctx(NULL, &n, msg, sizeof msg);
        if (e >= 0)
            e = cn__scribe_tls_identity(n, true, &direct, &at, msg, sizeof msg);
        if (e >= 0 && direct) {
            SSL_CTX_free(r->tls_ctx); /* connections made with it hold their own reference */
            r->tls_ctx = n;
            r->renew_at = at;
        } else {
            SSL_CTX_free(n);
            r->renew_at = cn__scribe_tls_clock() + 30 * UINT64_C(1000000000);
        }
    }
    SSL_CTX *c = r->tls_ctx;
    SSL_CTX_up_ref(c);
    pthread_mutex_unlock(&r->tlsmu);
    return c;
}

static cn_err_t connect_hello(cn_scribe_client_t *cl, cn_scribe_cerr_t *err)
{
    CN_TRY(dial(cl, err));
    if (cl->tls) {
        char msg[400] = "";
        SSL_CTX *ctx = tls_ctx_ref(cl->root);
        cn_err_t te = cn__scribe_tls_connect(ctx, cl->fd, cl->host, &cl->ssl, msg, sizeof msg);
        SSL_CTX_free(ctx);
        if (te < 0) {
            set_err(err, 0, "%s", msg);
            drop(cl);
            return te;
        }
    }
    cn_scribe_hello_t h;
    memset(&h, 0, sizeof h);
    h.version = cl->tls ? 4 : 2;
    h.caller = cl->root->direct ? CN_SCRIBE_CALLER_DIRECT : CN_SCRIBE_CALLER_ANONYMOUS;
    if (cl->tls && cl->bind)
        memcpy(h.binding, cl->root->binding, sizeof h.binding);
    h.codec = (uint8_t)cl->codec;
    h.caps = cl->lz4 ? CN_SCRIBE_CAP_LZ4 : 0;
    h.bind_session = cl->bind;
    h.client = cn_scribe_cstr("cairn-client/1");
    /* Not in cl->out: a reconnect happens inside call(), after the caller
     * encoded its request there. */
    cn_buf_t hb = { 0 };
    cn_err_t e = cn_scribe_enc_hello(&hb, &h);
    cn_scribe_hdr_t hdr;
    if (e >= 0)
        e = send_frame(cl, CN_SCRIBE_OP_HELLO, 0, &hb);
    cn_buf_free(&hb);
    if (e >= 0)
        e = recv_reply(cl, CN_SCRIBE_OP_HELLO, &hdr, CN_SCRIBE_CODEC_LE, err);
    cn_scribe_hello_ok_t ok;
    bool control4 = cl->tls && !cl->bind;
    if (e >= 0 && cn_scribe_dec_hello_ok(cl->in.data, cl->in.len, control4, &ok) < 0)
        e = CN_E_PROTOCOL;
    if (e >= 0 && (ok.version != h.version || (cl->bind && ok.session != cl->bind)))
        e = CN_E_PROTOCOL;
    if (e >= 0 && (ok.codec != cl->codec || ok.compression != (cl->lz4 ? 1 : 0)))
        e = CN_E_PROTOCOL; /* a client refuses another codec or compression */
    if (e < 0) {
        if (e == CN_E_PROTOCOL)
            set_err(err, 0, "the server's hello-ok is not acceptable");
        drop(cl);
        return e;
    }
    cl->compression = ok.compression;
    cl->session = ok.session;
    if (control4)
        memcpy(cl->binding, ok.binding, sizeof cl->binding);
    OPENSSL_cleanse(ok.binding, sizeof ok.binding);
    return CN_OK;
}

static cn_err_t ensure(cn_scribe_client_t *cl, cn_scribe_cerr_t *err)
{
    pthread_mutex_lock(&cl->fdmu);
    bool cut = cl->cut;
    pthread_mutex_unlock(&cl->fdmu);
    if (cut)
        drop(cl); /* an interrupt shut it down: a new connection */
    return cl->fd >= 0 ? CN_OK : connect_hello(cl, err);
}

/* One request whose payload is cl->out; the reply payload lands in cl->in. */
static cn_err_t call(cn_scribe_client_t *cl, uint16_t op, cn_scribe_cerr_t *err)
{
    CN_TRY(ensure(cl, err));
    cn_scribe_hdr_t hdr;
    cn_err_t e = send_frame(cl, op, 0, &cl->out);
    if (e >= 0)
        e = recv_reply(cl, op, &hdr, (cn_scribe_codec_t)cl->codec, err);
    if (e < 0 && err && !err->code && !err->message[0])
        set_err(err, 0, "%s: %s", cn_scribe_op_name(op), cn_strerror(e));
    return e;
}

#define CODEC(cl) ((cn_scribe_codec_t)(cl)->codec)

/* A client; parent NULL for a control client, else the control client a
 * data connection belongs to (its TLS context and binding secret). */
static cn_err_t client_new(const cn_scribe_client_cfg_t *cfg, cn_scribe_client_t *parent,
                           cn_scribe_client_t **out, cn_scribe_cerr_t *err)
{
    *out = NULL;
    if (err)
        memset(err, 0, sizeof *err);
    cn_scribe_client_t *cl = calloc(1, sizeof *cl);
    if (!cl)
        return -ENOMEM;
    cl->fd = -1;
    const char *ep = cfg && cfg->endpoint ? cfg->endpoint : CN_SCRIBE_CLIENT_DEFAULT_ENDPOINT;
    if (!strncmp(ep, "scribes://", 10)) {
        cl->tls = true;
        ep += 10;
    }
    const char *colon = strrchr(ep, ':');
    const char *h = ep;
    size_t hl = colon ? (size_t)(colon - ep) : strlen(ep);
    if (hl && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (!hl || hl >= sizeof cl->host || (colon && strlen(colon + 1) >= sizeof cl->port)) {
        free(cl);
        set_err(err, 0, "bad endpoint '%s' (want host:port)", ep);
        return CN_E_INVALID;
    }
    memcpy(cl->host, h, hl);
    snprintf(cl->port, sizeof cl->port, "%s", colon ? colon + 1 : "7447");
    cl->codec = cfg && cfg->codec == 2 ? 2 : 1;
    cl->lz4 = cfg && cfg->lz4;
    cl->connect_ms = cfg && cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000;
    cl->io_ms = cfg && cfg->io_timeout_ms ? cfg->io_timeout_ms : 300000;
    cl->bind = cfg ? cfg->bind_session : 0;
    cl->ndata = !cfg || !cfg->data_conns                      ? CN_SCRIBE_CLIENT_MAX_DATA
                : cfg->data_conns < 0                         ? 0
                : cfg->data_conns > CN_SCRIBE_CLIENT_MAX_DATA ? CN_SCRIBE_CLIENT_MAX_DATA
                                                              : cfg->data_conns;
    if (cl->bind)
        cl->ndata = 0; /* a data connection opens no data connections */
    cl->root = parent ? parent : cl;
    cl->tls = parent ? parent->tls : cl->tls;
    pthread_mutex_init(&cl->pmu, NULL);
    pthread_mutex_init(&cl->tlsmu, NULL);
    pthread_mutex_init(&cl->fdmu, NULL);
    cn_err_t e = CN_OK;
    if (cl->tls && !parent) {
        char msg[400] = "";
        e = cn__scribe_tls_ctx(NULL, &cl->tls_ctx, msg, sizeof msg);
        /* Signed in (`cairn repo login`): the access certificate. */
        if (e >= 0)
            e = cn__scribe_tls_identity(cl->tls_ctx, false, &cl->direct, &cl->renew_at, msg,
                                        sizeof msg);
        if (e < 0)
            set_err(err, 0, "%s", msg);
    }
    if (e >= 0)
        e = connect_hello(cl, err);
    if (e < 0) {
        cn_scribe_client_free(cl);
        return e;
    }
    *out = cl;
    return CN_OK;
}

cn_err_t cn_scribe_client_new(const cn_scribe_client_cfg_t *cfg, cn_scribe_client_t **out,
                              cn_scribe_cerr_t *err)
{
    return client_new(cfg, NULL, out, err);
}

void cn_scribe_client_free(cn_scribe_client_t *cl)
{
    if (!cl)
        return;
    for (int k = 0; k < CN_SCRIBE_CLIENT_MAX_DATA; k++)
        cn_scribe_client_free(cl->data[k]);
    drop(cl);
    pthread_mutex_destroy(&cl->pmu);
    pthread_mutex_destroy(&cl->tlsmu);
    pthread_mutex_destroy(&cl->fdmu);
    cn_buf_free(&cl->out);
    cn_buf_free(&cl->in);
    free(cl->blk);
    free(cl->blk2);
    free(cl->rbuf);
    SSL_CTX_free(cl->tls_ctx); /* only the control client holds one */
    OPENSSL_cleanse(cl->binding, sizeof cl->binding);
    free(cl);
}

void cn_scribe_client_bytes(const cn_scribe_client_t *cl, uint64_t *sent, uint64_t *received)
{
    *sent = cl->sent;
    *received = cl->received;
    for (int k = 0; k < CN_SCRIBE_CLIENT_MAX_DATA; k++)
        if (cl->data[k]) {
            *sent += cl->data[k]->sent;
            *received += cl->data[k]->received;
        }
}

void cn_scribe_client_set_progress(cn_scribe_client_t *cl, cn_scribe_client_progress_fn fn,
                                   void *ctx)
{
    cl->progress = fn;
    cl->pctx = ctx;
}

/* Data connection k of the control client (opened on first use, bound to
 * the current session; re-opened when the control connection reconnected). */
static cn_err_t data_conn(cn_scribe_client_t *cl, int k, cn_scribe_client_t **out,
                          cn_scribe_cerr_t *err)
{
    CN_TRY(ensure(cl, err));
    cn_scribe_client_t *d = cl->data[k];
    if (d && d->bind != cl->session) {
        cn_scribe_client_free(d);
        d = cl->data[k] = NULL;
    }
    if (!d) {
        char ep[300];
        snprintf(ep, sizeof ep, "[%s]:%s", cl->host, cl->port);
        cn_scribe_client_cfg_t cfg = { ep,        cl->codec, cl->lz4,    cl->connect_ms,
                                       cl->io_ms, -1,        cl->session };
        CN_TRY(client_new(&cfg, cl, &d, err));
        cl->data[k] = d;
    }
    *out = d;
    return CN_OK;
}

int cn__scribe_client_ndata(const cn_scribe_client_t *cl)
{
    return cl->root == cl ? cl->ndata : 0;
}

cn_err_t cn__scribe_client_data_conn(cn_scribe_client_t *cl, int k, cn_scribe_client_t **out,
                                     cn_scribe_cerr_t *err)
{
    *out = NULL;
    if (k < 0 || k >= cl->ndata || cl->root != cl)
        return CN_E_INVALID;
    return data_conn(cl, k, out, err);
}

/* ---- repositories ------------------------------------------------------------------ */
static void repo_from(const cn_scribe_repo_info_t *ri, cn_scribe_client_repo_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->id, ri->id.b, 16);
    size_t n = ri->name.len < sizeof out->name - 1 ? ri->name.len : sizeof out->name - 1;
    memcpy(out->name, ri->name.p, n);
    memcpy(out->main_branch, ri->main_branch.b, 16);
    out->head = ri->head;
    memcpy(out->incarnation, ri->incarnation.b, 16);
    out->created_ms = ri->created_ms;
    out->compression = ri->compression;
}

static cn_err_t info_reply(cn_scribe_client_t *cl, cn_scribe_client_repo_t *out)
{
    cn_scribe_repo_info_t ri;
    if (cn_scribe_dec_repo_info_resp(cl->in.data, cl->in.len, CODEC(cl), &ri) < 0)
        return CN_E_PROTOCOL;
    repo_from(&ri, out);
    return CN_OK;
}

cn_err_t cn_scribe_client_repo_create(cn_scribe_client_t *cl, const char *name, uint8_t compression,
                                      cn_scribe_client_repo_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_repo_create_req_t q = { cn_scribe_cstr(name), compression };
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_repo_create_req(&cl->out, CODEC(cl), &q) < 0) {
        set_err(err, 0, "a repository name is 1..193 bytes of UTF-8");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_REPO_CREATE, err));
    return info_reply(cl, out);
}

cn_err_t cn_scribe_client_repo_info(cn_scribe_client_t *cl, const char *name,
                                    cn_scribe_client_repo_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_repo_info_req_t q;
    memset(&q, 0, sizeof q);
    q.by = CN_SCRIBE_REPO_BY_NAME;
    q.name = cn_scribe_cstr(name);
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_repo_info_req(&cl->out, CODEC(cl), &q) < 0) {
        set_err(err, 0, "bad repository name");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_REPO_INFO, err));
    return info_reply(cl, out);
}

cn_err_t cn_scribe_client_repo_list(cn_scribe_client_t *cl, cn_scribe_client_repo_fn fn, void *ctx,
                                    cn_scribe_cerr_t *err)
{
    uint8_t token[CN_SCRIBE_MAX_TOKEN];
    size_t tlen = 0;
    bool has = false;
    for (;;) {
        cn_scribe_repo_list_req_t q = { CN_SCRIBE_MAX_PAGE, has, { token, (uint32_t)tlen } };
        cn_buf_reset(&cl->out);
        CN_TRY(cn_scribe_enc_repo_list_req(&cl->out, CODEC(cl), &q));
        CN_TRY(call(cl, CN_SCRIBE_OP_REPO_LIST, err));
        cn_scribe_repo_list_resp_t r;
        if (cn_scribe_dec_repo_list_resp(cl->in.data, cl->in.len, CODEC(cl), &r) < 0)
            return CN_E_PROTOCOL;
        cn_scribe_repo_info_t ri;
        while (cn_scribe_next_repo_info(&r.rows, &ri)) {
            cn_scribe_client_repo_t cr;
            repo_from(&ri, &cr);
            int rc = fn(ctx, &cr);
            if (rc)
                return rc;
        }
        if (!r.has_token)
            return CN_OK;
        tlen = r.token.len;
        memcpy(token, r.token.p, tlen);
        has = true;
    }
}

/* ---- objects ------------------------------------------------------------------------ */
static cn_err_t bits_call(cn_scribe_client_t *cl, uint16_t op, const uint8_t repo[16],
                          const uint8_t *ws, const uint8_t *intent,
                          const cn_scribe_client_ref_t *refs, size_t n, bool *present,
                          cn_scribe_cerr_t *err)
{
    cn_scribe_objref_t *r = malloc(CN_SCRIBE_MAX_BATCH * sizeof *r);
    if (!r)
        return -ENOMEM;
    cn_err_t e = CN_OK;
    for (size_t at = 0; at < n && e >= 0; at += CN_SCRIBE_MAX_BATCH) {
        uint32_t m = (uint32_t)(n - at < CN_SCRIBE_MAX_BATCH ? n - at : CN_SCRIBE_MAX_BATCH);
        for (uint32_t i = 0; i < m; i++) {
            r[i].kind = refs[at + i].kind;
            r[i].id = refs[at + i].id;
        }
        cn_scribe_objs_req_t q;
        memset(&q, 0, sizeof q);
        memcpy(q.repo.b, repo, 16);
        if (ws)
            memcpy(q.workspace.b, ws, 16);
        if (intent)
            memcpy(q.intent.b, intent, 16);
        q.count = m;
        cn_buf_reset(&cl->out);
        if ((e = cn_scribe_enc_objs_req(&cl->out, CODEC(cl), op, &q, r)) < 0 ||
            (e = call(cl, op, err)) < 0)
            break;
        const uint8_t *bits;
        if (cn_scribe_dec_bits_resp(cl->in.data, cl->in.len, CODEC(cl), m, &bits) < 0) {
            e = CN_E_PROTOCOL;
            break;
        }
        for (uint32_t i = 0; i < m; i++)
            present[at + i] = cn_scribe_bit(bits, i);
    }
    free(r);
    return e;
}

cn_err_t cn_scribe_client_presence(cn_scribe_client_t *cl, const uint8_t repo[16],
                                   const cn_scribe_client_ref_t *refs, size_t n, bool *present,
                                   cn_scribe_cerr_t *err)
{
    return bits_call(cl, CN_SCRIBE_OP_PRESENCE, repo, NULL, NULL, refs, n, present, err);
}

cn_err_t cn_scribe_client_pin(cn_scribe_client_t *cl, const uint8_t repo[16],
                              const uint8_t workspace[16], const uint8_t intent[16],
                              const cn_scribe_client_ref_t *refs, size_t n, bool *present,
                              cn_scribe_cerr_t *err)
{
    return bits_call(cl, CN_SCRIBE_OP_PIN_OBJECTS, repo, workspace, intent, refs, n, present, err);
}

static cn_err_t blk_buffers(cn_scribe_client_t *cl)
{
    if (!cl->blk && !(cl->blk = malloc(CN_SCRIBE_BLOCK_MAX)))
        return -ENOMEM;
    if (!cl->blk2 && !(cl->blk2 = malloc((size_t)LZ4_compressBound(CN_SCRIBE_BLOCK_MAX))))
        return -ENOMEM;
    return CN_OK;
}

static cn_err_t send_object(cn_scribe_client_t *cl, const uint8_t *p, size_t n)
{
    if (!cl->compression)
        return send_all(cl, p, n);
    while (n) {
        size_t m = n < CN_SCRIBE_BLOCK_MAX ? n : CN_SCRIBE_BLOCK_MAX;
        uint8_t h[CN_SCRIBE_BLOCK_HDR_LEN];
        const uint8_t *data;
        size_t stored = cn_scribe_pack_block(p, m, cl->blk2, h, &data);
        CN_TRY(send_all(cl, h, sizeof h));
        CN_TRY(send_all(cl, data, stored));
        p += m;
        n -= m;
    }
    return CN_OK;
}

/* A put batch carries at most this many object bytes: each batch is
 * published (and so resumable) on its own. */
#define PUT_BATCH_BYTES (16u << 20)
/* A kind's run of objects goes over data connections only above this. */
#define LANE_MIN_BYTES (8u << 20)

/* Protocol 4: waits for put_objects' admission response (an empty reply:
 * stream now) before any object byte; a refusal is an error frame, after
 * which the connection stays usable (nothing was streamed). */
static cn_err_t put_admitted(cn_scribe_client_t *cl, cn_scribe_cerr_t *err)
{
    cn_scribe_hdr_t hdr;
    CN_TRY(recv_reply(cl, CN_SCRIBE_OP_PUT_OBJECTS, &hdr, CODEC(cl), err));
    if (hdr.length || (hdr.flags & CN_SCRIBE_FLAG_STREAM)) {
        set_err(err, 0, "put_objects: the admission response is not empty");
        drop(cl);
        return CN_E_PROTOCOL;
    }
    return CN_OK;
}

static cn_err_t put_serial(cn_scribe_client_t *cl, const uint8_t repo[16],
                           const cn_scribe_client_obj_t *objs, size_t n, cn_scribe_cerr_t *err)
{
    CN_TRY(blk_buffers(cl));
    cn_scribe_put_item_t *items = malloc(CN_SCRIBE_MAX_BATCH * sizeof *items);
    if (!items)
        return -ENOMEM;
    cn_err_t e = CN_OK;
    size_t at = 0;
    cn_scribe_id_t rid;
    memcpy(rid.b, repo, 16);
    while (at < n && e >= 0) {
        uint32_t m = 0;
        uint64_t total = 0;
        while (at + m < n && m < CN_SCRIBE_MAX_BATCH &&
               total + objs[at + m].len <= PUT_BATCH_BYTES) {
            items[m] =
                (cn_scribe_put_item_t){ objs[at + m].kind, objs[at + m].id, objs[at + m].len };
            total += objs[at + m].len;
            m++;
        }
        if (!m) {
            items[0] = (cn_scribe_put_item_t){ objs[at].kind, objs[at].id, objs[at].len };
            m = 1;
        }
        if ((e = ensure(cl, err)) < 0)
            break;
        cn_buf_reset(&cl->out);
        if ((e = cn_scribe_enc_put_req(&cl->out, CODEC(cl), &rid, items, m)) < 0) {
            set_err(err, 0, "an object is outside the protocol's limits");
            break;
        }
        if ((e = send_frame(cl, CN_SCRIBE_OP_PUT_OBJECTS, CN_SCRIBE_FLAG_STREAM, &cl->out)) < 0)
            break;
        if (cl->tls && (e = put_admitted(cl, err)) < 0)
            break;
        for (uint32_t i = 0; i < m && e >= 0; i++)
            if ((e = send_object(cl, objs[at + i].data, objs[at + i].len)) >= 0)
                report(cl, objs[at + i].len);
        cn_scribe_hdr_t hdr;
        if (e < 0 || (e = recv_reply(cl, CN_SCRIBE_OP_PUT_OBJECTS, &hdr, CODEC(cl), err)) < 0) {
            /* the server closes after an error it answered before the end */
            if (err && err->code)
                drop(cl);
            break;
        }
        uint32_t cnt;
        const uint8_t *stored;
        if (cn_scribe_dec_put_resp(cl->in.data, cl->in.len, CODEC(cl), &cnt, &stored) < 0 ||
            cnt != m) {
            e = CN_E_PROTOCOL;
            break;
        }
        at += m;
    }
    free(items);
    return e;
}

/* ---- transfers over data connections ------------------------------------------------
 * A lane is one connection (the control connection or a data connection)
 * working through a contiguous slice of a request, on its own thread. */
typedef struct lane {
    cn_scribe_client_t *cl;
    const uint8_t *repo;
    const cn_scribe_client_obj_t *objs;  /* put */
    const cn_scribe_client_ref_t *refs;  /* get_objects */
    const cn_scribe_client_witness_t *w; /* get_chunks */
    size_t off, n;
    unsigned index;
    cn_scribe_client_lane_sink_fn sink;
    void *ctx;
    cn_scribe_cerr_t err;
    cn_err_t e;
    pthread_t t;
} lane_t;

static void *put_lane(void *arg)
{
    lane_t *l = arg;
    l->e = put_serial(l->cl, l->repo, l->objs + l->off, l->n, &l->err);
    return NULL;
}

/* Opens the lanes' connections: lane 0 is the control connection. */
static int lanes_open(cn_scribe_client_t *cl, lane_t *ls, int want, cn_scribe_cerr_t *err)
{
    int k = 1;
    ls[0].cl = cl;
    for (; k < want && k <= cl->ndata; k++)
        if (data_conn(cl, k - 1, &ls[k].cl, err) < 0)
            break; /* fewer lanes: the server may refuse more data connections */
    if (err)
        memset(err, 0, sizeof *err);
    return k;
}

static cn_err_t lanes_run(lane_t *ls, int nl, void *(*fn)(void *), cn_scribe_cerr_t *err)
{
    int started = 1;
    for (int k = 1; k < nl; k++, started++)
        if (pthread_create(&ls[k].t, NULL, fn, &ls[k]) != 0) {
            /* run the rest on this thread */
            for (int j = k; j < nl; j++)
                fn(&ls[j]);
            break;
        }
    fn(&ls[0]);
    for (int k = 1; k < started; k++)
        pthread_join(ls[k].t, NULL);
    for (int k = 0; k < nl; k++)
        if (ls[k].e < 0) {
            if (err)
                *err = ls[k].err;
            return ls[k].e;
        }
    return CN_OK;
}

cn_err_t cn_scribe_client_put(cn_scribe_client_t *cl, const uint8_t repo[16],
                              const cn_scribe_client_obj_t *objs, size_t n, cn_scribe_cerr_t *err)
{
    /* Kinds go in order (a manifest's chunks must be published first); a
     * large run of one kind is split over up to five connections. */
    for (size_t a = 0; a < n;) {
        size_t b = a;
        uint64_t total = 0;
        while (b < n && objs[b].kind == objs[a].kind)
            total += objs[b++].len;
        int want = (int)(total / LANE_MIN_BYTES);
        if (want > 1 + CN_SCRIBE_CLIENT_MAX_DATA)
            want = 1 + CN_SCRIBE_CLIENT_MAX_DATA;
        if (want <= 1 || !cl->ndata) {
            CN_TRY(put_serial(cl, repo, objs + a, b - a, err));
            a = b;
            continue;
        }
        lane_t ls[1 + CN_SCRIBE_CLIENT_MAX_DATA];
        memset(ls, 0, sizeof ls);
        int nl = lanes_open(cl, ls, want, err);
        /* contiguous slices of about equal bytes */
        uint64_t per = total / (uint64_t)nl + 1, acc = 0;
        size_t at = a;
        for (int k = 0; k < nl; k++) {
            ls[k].repo = repo;
            ls[k].objs = objs;
            ls[k].off = at;
            uint64_t goal = per * (uint64_t)(k + 1);
            while (at < b && (k == nl - 1 || acc < goal))
                acc += objs[at++].len;
            ls[k].n = at - ls[k].off;
        }
        CN_TRY(lanes_run(ls, nl, put_lane, err));
        a = b;
    }
    return CN_OK;
}

/* What one stream fetches: objects by reference (get_objects, refs) or
 * chunks against their witnesses (get_chunks, w); exactly one is set. */
typedef struct get_what {
    const cn_scribe_client_ref_t *refs;
    const cn_scribe_client_witness_t *w;
} get_what_t;

static cn_err_t get_serial(cn_scribe_client_t *cl, const uint8_t repo[16], get_what_t what,
                           size_t n, size_t base, unsigned lane, cn_scribe_client_sink_fn sink,
                           cn_scribe_client_lane_sink_fn lsink, void *ctx, cn_scribe_cerr_t *err);

static void *get_lane(void *arg)
{
    lane_t *l = arg;
    get_what_t what = { l->refs ? l->refs + l->off : NULL, l->w ? l->w + l->off : NULL };
    l->e = get_serial(l->cl, l->repo, what, l->n, l->off, l->index, NULL, l->sink, l->ctx, &l->err);
    return NULL;
}

#define GET_LANE_MIN 64 /* objects per lane before more lanes are opened */

/* Fetches what's n items over up to five connections, contiguous slices. */
static cn_err_t get_lanes(cn_scribe_client_t *cl, const uint8_t repo[16], get_what_t what, size_t n,
                          cn_scribe_client_lane_sink_fn sink, void *ctx, cn_scribe_cerr_t *err)
{
    int want = (int)(n / GET_LANE_MIN);
    if (want > 1 + CN_SCRIBE_CLIENT_MAX_DATA)
        want = 1 + CN_SCRIBE_CLIENT_MAX_DATA;
    if (want <= 1 || !cl->ndata)
        return get_serial(cl, repo, what, n, 0, 0, NULL, sink, ctx, err);
    lane_t ls[1 + CN_SCRIBE_CLIENT_MAX_DATA];
    memset(ls, 0, sizeof ls);
    int nl = lanes_open(cl, ls, want, err);
    size_t per = n / (size_t)nl, at = 0;
    for (int k = 0; k < nl; k++) {
        ls[k].repo = repo;
        ls[k].refs = what.refs;
        ls[k].w = what.w;
        ls[k].off = at;
        ls[k].n = k == nl - 1 ? n - at : per;
        ls[k].index = (unsigned)k;
        ls[k].sink = sink;
        ls[k].ctx = ctx;
        at += ls[k].n;
    }
    return lanes_run(ls, nl, get_lane, err);
}

cn_err_t cn_scribe_client_get_lanes(cn_scribe_client_t *cl, const uint8_t repo[16],
                                    const cn_scribe_client_ref_t *refs, size_t n,
                                    cn_scribe_client_lane_sink_fn sink, void *ctx,
                                    cn_scribe_cerr_t *err)
{
    return get_lanes(cl, repo, (get_what_t){ refs, NULL }, n, sink, ctx, err);
}

cn_err_t cn__scribe_client_get_chunks_lanes(cn_scribe_client_t *cl, const uint8_t repo[16],
                                            const cn_scribe_client_witness_t *w, size_t n,
                                            cn_scribe_client_lane_sink_fn sink, void *ctx,
                                            cn_scribe_cerr_t *err)
{
    return get_lanes(cl, repo, (get_what_t){ NULL, w }, n, sink, ctx, err);
}

bool cn__scribe_client_anonymous(const cn_scribe_client_t *cl)
{
    return cl->tls && !cl->root->direct;
}

cn_err_t cn_scribe_client_get(cn_scribe_client_t *cl, const uint8_t repo[16],
                              const cn_scribe_client_ref_t *refs, size_t n,
                              cn_scribe_client_sink_fn sink, void *ctx, cn_scribe_cerr_t *err)
{
    return get_serial(cl, repo, (get_what_t){ refs, NULL }, n, 0, 0, sink, NULL, ctx, err);
}

/* Receives the streamed reply of get_objects or get_chunks to a request of
 * m objects, just answered: each item to sink or lsink as index first + i.
 * A broken stream drops the connection. */
static cn_err_t get_items(cn_scribe_client_t *cl, uint32_t m, size_t first, unsigned lane,
                          cn_scribe_client_sink_fn sink, cn_scribe_client_lane_sink_fn lsink,
                          void *ctx)
{
    uint32_t cnt;
    cn_err_t e = CN_OK;
    if (cn_scribe_dec_count_resp(cl->in.data, cl->in.len, CODEC(cl), &cnt) < 0 || cnt != m) {
        drop(cl);
        return CN_E_PROTOCOL;
    }
    for (uint32_t i = 0; i < m && e >= 0; i++) {
        uint8_t h[CN_SCRIBE_GET_ITEM_HDR_MAX];
        cn_scribe_get_item_t it;
        if ((e = recv_all(cl, h, 34)) < 0)
            break;
        long hl = cn_scribe_dec_get_item(h, 34, CODEC(cl), &it);
        if (hl == CN_E_AGAIN) {
            if ((e = recv_all(cl, h + 34, 8)) < 0)
                break;
            hl = cn_scribe_dec_get_item(h, 42, CODEC(cl), &it);
        }
        if (hl < 0) {
            e = CN_E_PROTOCOL;
            drop(cl);
            break;
        }
        size_t idx = first + i;
        if (!it.present) {
            e = sink ? sink(ctx, idx, false, NULL, 0, true)
                     : lsink(ctx, lane, idx, false, NULL, 0, true);
            if (e < 0 && i + 1 < m)
                drop(cl); /* the later items are not consumed */
            continue;
        }
        uint64_t left = it.length;
        if (!left)
            e = sink ? sink(ctx, idx, true, NULL, 0, true)
                     : lsink(ctx, lane, idx, true, NULL, 0, true);
        while (left && e >= 0) {
            size_t got;
            if (!cl->compression) {
                got = left < CN_SCRIBE_BLOCK_MAX ? (size_t)left : CN_SCRIBE_BLOCK_MAX;
                e = recv_all(cl, cl->blk, got);
            } else {
                uint8_t bh[CN_SCRIBE_BLOCK_HDR_LEN];
                cn_scribe_block_t b;
                if ((e = recv_all(cl, bh, sizeof bh)) < 0)
                    break;
                if (cn_scribe_dec_block(bh, left, &b) < 0) {
                    e = CN_E_PROTOCOL;
                    drop(cl);
                    break;
                }
                got = b.original;
                if (b.raw) {
                    e = recv_all(cl, cl->blk, got);
                } else if ((e = recv_all(cl, cl->blk2, b.stored)) >= 0) {
                    int d = LZ4_decompress_safe((const char *)cl->blk2, (char *)cl->blk,
                                                (int)b.stored, (int)b.original);
                    if (d < 0 || (uint32_t)d != b.original) {
                        e = CN_E_PROTOCOL;
                        drop(cl);
                    }
                }
            }
            if (e < 0)
                break;
            left -= got;
            report(cl, got);
            e = sink ? sink(ctx, idx, true, cl->blk, got, left == 0)
                     : lsink(ctx, lane, idx, true, cl->blk, got, left == 0);
            if (e < 0)
                drop(cl); /* the rest of the stream is not consumed */
        }
    }
    return e;
}

/* Encodes what's items [at, at + m) as one request into cl->out: a
 * get_objects or a get_chunks (scratch holds the wire rows). */
static cn_err_t get_request(cn_scribe_client_t *cl, const uint8_t repo[16], get_what_t what,
                            size_t at, uint32_t m, void *scratch)
{
    cn_buf_reset(&cl->out);
    if (what.w) {
        cn_scribe_witness_t *v = scratch;
        cn_scribe_id_t id;
        memcpy(id.b, repo, 16);
        for (uint32_t i = 0; i < m; i++)
            v[i] = (cn_scribe_witness_t){ what.w[at + i].chunk, what.w[at + i].manifest };
        return cn_scribe_enc_chunks_req(&cl->out, CODEC(cl), &id, v, m);
    }
    cn_scribe_objref_t *r = scratch;
    for (uint32_t i = 0; i < m; i++) {
        r[i].kind = what.refs[at + i].kind;
        r[i].id = what.refs[at + i].id;
    }
    cn_scribe_objs_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    q.count = m;
    return cn_scribe_enc_objs_req(&cl->out, CODEC(cl), CN_SCRIBE_OP_GET_OBJECTS, &q, r);
}

/* Fetches what's items [0, n) (indices reported as base + i) on one
 * connection, in requests of at most 8,192 objects or 1,024 witnesses. */
static cn_err_t get_serial(cn_scribe_client_t *cl, const uint8_t repo[16], get_what_t what,
                           size_t n, size_t base, unsigned lane, cn_scribe_client_sink_fn sink,
                           cn_scribe_client_lane_sink_fn lsink, void *ctx, cn_scribe_cerr_t *err)
{
    CN_TRY(blk_buffers(cl));
    size_t batch = what.w ? CN_SCRIBE_MAX_WITNESSES : CN_SCRIBE_MAX_BATCH;
    uint16_t op = what.w ? CN_SCRIBE_OP_GET_CHUNKS : CN_SCRIBE_OP_GET_OBJECTS;
    void *scratch =
        malloc(what.w ? batch * sizeof(cn_scribe_witness_t) : batch * sizeof(cn_scribe_objref_t));
    if (!scratch)
        return -ENOMEM;
    cn_err_t e = CN_OK;
    for (size_t at = 0; at < n && e >= 0; at += batch) {
        uint32_t m = (uint32_t)(n - at < batch ? n - at : batch);
        if ((e = get_request(cl, repo, what, at, m, scratch)) < 0 || (e = call(cl, op, err)) < 0)
            break;
        e = get_items(cl, m, base + at, lane, sink, lsink, ctx);
    }
    free(scratch);
    return e;
}

/* ---- public reads and mounts (30, 31) -------------------------------------------------- */
cn_err_t cn_scribe_client_get_chunks(cn_scribe_client_t *cl, const uint8_t repo[16],
                                     const cn_scribe_client_witness_t *w, size_t n,
                                     cn_scribe_client_sink_fn sink, void *ctx,
                                     cn_scribe_cerr_t *err)
{
    return get_serial(cl, repo, (get_what_t){ NULL, w }, n, 0, 0, sink, NULL, ctx, err);
}

static void mount_from(const cn_scribe_mount_t *m, cn_scribe_client_mount_t *out)
{
    memcpy(out->name, m->name.p, m->name.len);
    out->name[m->name.len] = 0;
    memcpy(out->path, m->path.p, m->path.len);
    out->path[m->path.len] = 0;
    /* the decoder checked every field's grammar */
    cn_scribe_mount_id(m->repository, out->repository);
    cn_scribe_mount_id(m->branch, out->branch);
    cn_scribe_mount_revision(m->revision, &out->revision);
}

cn_err_t cn_scribe_client_mounts(cn_scribe_client_t *cl, const uint8_t repo[16],
                                 const uint8_t branch[16], uint64_t change,
                                 cn_scribe_client_mount_t **rows, uint32_t *count,
                                 cn_scribe_cerr_t *err)
{
    *rows = NULL;
    *count = 0;
    cn_scribe_mounts_req_t q;
    memcpy(q.repo.b, repo, 16);
    memcpy(q.branch.b, branch, 16);
    q.change = change;
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_mounts_req(&cl->out, CODEC(cl), &q));
    CN_TRY(call(cl, CN_SCRIBE_OP_REPOSITORY_MOUNTS, err));
    cn_scribe_rows_t it;
    uint32_t n;
    if (cn_scribe_dec_mounts_resp(cl->in.data, cl->in.len, CODEC(cl), &it, &n) < 0)
        return CN_E_PROTOCOL;
    if (n && !(*rows = calloc(n, sizeof **rows)))
        return -ENOMEM;
    cn_scribe_mount_t m;
    for (uint32_t i = 0; i < n && cn_scribe_next_mount(&it, &m); i++)
        mount_from(&m, &(*rows)[i]);
    *count = n;
    return CN_OK;
}

/* ---- the gateway wire --------------------------------------------------------------- */
cn_err_t cn_scribe_client_discover(cn_scribe_client_t *cl, cn_scribe_client_discover_t *out,
                                   cn_scribe_cerr_t *err)
{
    memset(out, 0, sizeof *out);
    cn_buf_reset(&cl->out);
    CN_TRY(call(cl, CN_SCRIBE_OP_DISCOVER, err));
    cn_scribe_discover_t d;
    if (cn_scribe_dec_discover(cl->in.data, cl->in.len, CODEC(cl), &d) < 0)
        return CN_E_PROTOCOL;
    out->role = d.role;
    out->authentication = d.authentication;
    out->count = d.count;
    for (uint32_t i = 0; i < d.count; i++) {
        cn_scribe_str_t l = cn_scribe_discover_label(&d, CODEC(cl), i);
        memcpy(out->labels[i], l.p, l.len); /* <= 64: the decoder checked */
        out->labels[i][l.len] = 0;
    }
    return CN_OK;
}

cn_err_t cn_scribe_client_instance_status(cn_scribe_client_t *cl, const uint8_t *after,
                                          cn_scribe_client_instance_t *head,
                                          cn_scribe_client_inventory_fn fn, void *ctx,
                                          cn_scribe_cerr_t *err)
{
    /* after may point into *head (the previous page's cursor): copied first */
    cn_scribe_instance_req_t q = { after != NULL, { { 0 } } };
    if (after)
        memcpy(q.after.b, after, 16);
    memset(head, 0, sizeof *head);
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_instance_req(&cl->out, CODEC(cl), &q));
    CN_TRY(call(cl, CN_SCRIBE_OP_INSTANCE_STATUS, err));
    cn_scribe_instance_resp_t h;
    if (cn_scribe_dec_instance_resp(cl->in.data, cl->in.len, CODEC(cl), &h) < 0)
        return CN_E_PROTOCOL;
    memcpy(head->incarnation, h.incarnation.b, 16);
    head->total_repositories = h.total_repositories;
    head->used_bytes = h.used_bytes;
    head->has_available = h.has_available;
    head->available_bytes = h.available_bytes;
    head->count = h.count;
    head->has_next = h.has_next;
    memcpy(head->next, h.next.b, 16);
    cn_scribe_instance_row_t row;
    while (fn && cn_scribe_next_instance_row(&h.rows, &row)) {
        cn_scribe_client_repo_t r;
        repo_from(&row.info, &r);
        int rc = fn(ctx, &r, row.bytes);
        if (rc)
            return rc;
    }
    return CN_OK;
}

/* A preflight: the request in cl->out, an empty reply. */
static cn_err_t preflight(cn_scribe_client_t *cl, uint16_t op, cn_scribe_cerr_t *err)
{
    CN_TRY(call(cl, op, err));
    return cn_scribe_dec_empty_resp(cl->in.data, cl->in.len, CODEC(cl));
}

cn_err_t cn_scribe_client_authorize_upload(cn_scribe_client_t *cl, const uint8_t repo[16],
                                           cn_scribe_cerr_t *err)
{
    cn_scribe_id_t id;
    memcpy(id.b, repo, 16);
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_repo_id_req(&cl->out, CODEC(cl), &id));
    return preflight(cl, CN_SCRIBE_OP_AUTHORIZE_UPLOAD, err);
}

cn_err_t cn_scribe_client_authorize_repo_create(cn_scribe_client_t *cl, const char *ns,
                                                cn_scribe_cerr_t *err)
{
    cn_scribe_authorize_create_req_t q = { ns != NULL, cn_scribe_cstr(ns ? ns : "") };
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_authorize_create_req(&cl->out, CODEC(cl), &q) < 0) {
        set_err(err, 0, "a namespace is 1..64 ASCII letters, digits, '-', '_' or '.'");
        return CN_E_INVALID;
    }
    return preflight(cl, CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE, err);
}

/* ---- submit ------------------------------------------------------------------------- */
static void outcome_from(const cn_scribe_submit_outcome_t *o, cn_scribe_codec_t c,
                         cn_scribe_client_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    out->accepted = o->outcome == CN_SCRIBE_OUTCOME_ACCEPTED;
    out->change = o->change;
    out->commit = o->commit;
    out->code = o->code;
    out->head = o->head;
    snprintf(out->detail, sizeof out->detail, "%.*s", (int)o->detail.len,
             (const char *)o->detail.p);
    out->npaths = o->path_count;
    size_t used = 0, cap = sizeof out->paths - 32; /* room for " and N more" */
    for (uint32_t i = 0; i < o->path_count; i++) {
        cn_scribe_str_t p = cn_scribe_outcome_path(o, c, i);
        if (used + 2 + p.len > cap) {
            snprintf(out->paths + used, sizeof out->paths - used, " and %u more",
                     (unsigned)(o->path_count - i));
            break;
        }
        used += (size_t)snprintf(out->paths + used, sizeof out->paths - used, "%s%.*s",
                                 i ? ", " : "", (int)p.len, (const char *)p.p);
    }
}

cn_err_t cn_scribe_client_outcome(cn_scribe_client_t *cl, const uint8_t repo[16],
                                  const uint8_t op[16], bool *known,
                                  cn_scribe_client_outcome_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_outcome_req_t q;
    memcpy(q.repo.b, repo, 16);
    memcpy(q.operation.b, op, 16);
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_outcome_req(&cl->out, CODEC(cl), &q));
    CN_TRY(call(cl, CN_SCRIBE_OP_OPERATION_OUTCOME, err));
    cn_scribe_outcome_resp_t r;
    if (cn_scribe_dec_outcome_resp(cl->in.data, cl->in.len, CODEC(cl), &r) < 0)
        return CN_E_PROTOCOL;
    *known = r.kind == CN_SCRIBE_OUTCOME_KIND_SUBMIT;
    if (*known)
        outcome_from(&r.submit, CODEC(cl), out);
    return CN_OK;
}

static bool transport(cn_err_t e)
{
    return e == CN_E_CLOSED || e == CN_E_TIMEOUT || e == CN_E_PROTOCOL || (e < 0 && e > -4096);
}

/* A recorded operation (submit, branch mutation) made safe to retry: send
 * sends it once; when its reply is lost (a transport failure, no wire
 * code), resolve asks what the server recorded under its operation id
 * (*known), and only when nothing was recorded is it sent again, up to 3
 * attempts in all.  Both fill the caller's outcome. */
typedef cn_err_t (*op_send_fn)(cn_scribe_client_t *cl, const void *req, void *out,
                               cn_scribe_cerr_t *err);
typedef cn_err_t (*op_resolve_fn)(cn_scribe_client_t *cl, const void *req, bool *known, void *out,
                                  cn_scribe_cerr_t *err);

static cn_err_t with_retries(cn_scribe_client_t *cl, op_send_fn send, op_resolve_fn resolve,
                             const void *req, void *out, cn_scribe_cerr_t *err)
{
    cn_err_t e = CN_OK;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt) {
            /* The reply was lost: ask what happened before sending again. */
            bool known = false;
            if (err)
                memset(err, 0, sizeof *err);
            e = resolve(cl, req, &known, out, err);
            if (e >= 0 && known)
                return CN_OK;
            if (e < 0 && transport(e))
                continue;
            if (e < 0)
                return e;
        }
        e = send(cl, req, out, err);
        if (e >= 0 || !transport(e) || (err && err->code))
            return e;
    }
    return e;
}

/* Sends the submit-shaped request just encoded into cl->out (enc: its
 * encoder's result; why: what an encoding failure means) as op and decodes
 * the ordinary Submit outcome every submit opcode answers into *out. */
static cn_err_t submit_call(cn_scribe_client_t *cl, cn_err_t enc, const char *why, uint16_t op,
                            void *out, cn_scribe_cerr_t *err)
{
    if (enc < 0) {
        set_err(err, 0, "%s", why);
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, op, err));
    cn_scribe_submit_outcome_t o;
    if (cn_scribe_dec_submit_resp(cl->in.data, cl->in.len, CODEC(cl), &o) < 0)
        return CN_E_PROTOCOL;
    outcome_from(&o, CODEC(cl), out);
    return CN_OK;
}

static cn_err_t submit_send(cn_scribe_client_t *cl, const void *req, void *out,
                            cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    return submit_call(cl, cn_scribe_enc_submit_req(&cl->out, CODEC(cl), req),
                       "author or message over its limit", CN_SCRIBE_OP_SUBMIT, out, err);
}

/* Resolves any submit-shaped request: an ordinary one, or a merge or
 * cherry-pick request, whose first member is the ordinary submit (so req
 * points at it, C17 6.7.2.1). */
static cn_err_t submit_resolve(cn_scribe_client_t *cl, const void *req, bool *known, void *out,
                               cn_scribe_cerr_t *err)
{
    const cn_scribe_submit_req_t *q = req;
    return cn_scribe_client_outcome(cl, q->repo.b, q->operation.b, known, out, err);
}
_Static_assert(offsetof(cn_scribe_merge_submit_req_t, submit) == 0, "submit_resolve");
_Static_assert(offsetof(cn_scribe_pick_submit_req_t, submit) == 0, "submit_resolve");

/* The wire form of an ordinary submit (strings borrowed from s). */
static void submit_req_from(const cn_scribe_client_submit_t *s, cn_scribe_submit_req_t *q)
{
    memset(q, 0, sizeof *q);
    memcpy(q->repo.b, s->repo, 16);
    memcpy(q->incarnation.b, s->incarnation, 16);
    memcpy(q->operation.b, s->operation, 16);
    memcpy(q->branch.b, s->branch, 16);
    memcpy(q->workspace.b, s->workspace, 16);
    q->base = s->base;
    q->changeset = s->changeset;
    q->keep_locks = s->keep_locks;
    q->author = cn_scribe_cstr(s->author ? s->author : "");
    q->message = cn_scribe_cstr(s->message ? s->message : "");
}

cn_err_t cn_scribe_client_submit(cn_scribe_client_t *cl, const cn_scribe_client_submit_t *s,
                                 cn_scribe_client_outcome_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_submit_req_t q;
    submit_req_from(s, &q);
    return with_retries(cl, submit_send, submit_resolve, &q, out, err);
}

/* ---- branches ------------------------------------------------------------------------- */
bool cn_scribe_client_branch_name_ok(const char *name)
{
    return name && strlen(name) <= CN_SCRIBE_MAX_BRANCH_NAME &&
           cn_scribe_branch_name_valid(cn_scribe_cstr(name));
}

static void branch_from(const cn_scribe_branch_info_t *bi, cn_scribe_client_branch_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->id, bi->id.b, 16);
    memcpy(out->name, bi->name.p, bi->name.len); /* valid: at most 256 bytes */
    out->head = bi->head;
    out->has_origin = bi->has_origin;
    memcpy(out->origin, bi->origin_branch.b, 16);
    out->origin_change = bi->origin_change;
    out->created_ms = bi->created_ms;
}

cn_err_t cn_scribe_client_branch_list(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      cn_scribe_client_branch_fn fn, void *ctx,
                                      cn_scribe_cerr_t *err)
{
    char after[CN_SCRIBE_MAX_BRANCH_NAME + 1] = "";
    for (;;) {
        cn_scribe_branch_list_req_t q;
        memset(&q, 0, sizeof q);
        memcpy(q.repo.b, repo, 16);
        q.limit = CN_SCRIBE_MAX_PAGE;
        q.has_after = after[0] != 0;
        q.after = cn_scribe_cstr(after);
        cn_buf_reset(&cl->out);
        CN_TRY(cn_scribe_enc_branch_list_req(&cl->out, CODEC(cl), &q));
        CN_TRY(call(cl, CN_SCRIBE_OP_BRANCH_LIST, err));
        cn_scribe_branch_list_resp_t r;
        if (cn_scribe_dec_branch_list_resp(cl->in.data, cl->in.len, CODEC(cl), &r) < 0)
            return CN_E_PROTOCOL;
        cn_scribe_branch_info_t bi;
        cn_scribe_client_branch_t b;
        memset(&b, 0, sizeof b);
        while (cn_scribe_next_branch_info(&r.rows, &bi)) {
            branch_from(&bi, &b);
            int rc = fn(ctx, &b);
            if (rc)
                return rc;
        }
        /* A server must move forward: a page's names ascend past `after`. */
        if (!r.more)
            return CN_OK;
        if (after[0] && strcmp(b.name, after) <= 0) {
            set_err(err, 0, "branch_list did not advance past '%s'", after);
            return CN_E_PROTOCOL;
        }
        memcpy(after, b.name, sizeof after);
    }
}

cn_err_t cn_scribe_client_branch_info(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      const uint8_t *id, const char *name,
                                      cn_scribe_client_branch_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_branch_info_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    q.by = id ? CN_SCRIBE_BRANCH_BY_ID : CN_SCRIBE_BRANCH_BY_NAME;
    if (id)
        memcpy(q.id.b, id, 16);
    else
        q.name = cn_scribe_cstr(name ? name : "");
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_branch_info_req(&cl->out, CODEC(cl), &q) < 0) {
        set_err(err, 0, "'%s' is not a valid branch name", name ? name : "");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_BRANCH_INFO, err));
    cn_scribe_branch_info_t bi;
    if (cn_scribe_dec_branch_info_resp(cl->in.data, cl->in.len, CODEC(cl), &bi) < 0)
        return CN_E_PROTOCOL;
    branch_from(&bi, out);
    return CN_OK;
}

static void branch_req(const cn_scribe_client_branch_op_t *op, cn_scribe_branch_mutate_req_t *q)
{
    memset(q, 0, sizeof *q);
    memcpy(q->repo.b, op->repo, 16);
    memcpy(q->incarnation.b, op->incarnation, 16);
    memcpy(q->operation.b, op->operation, 16);
    memcpy(q->branch.b, op->branch, 16);
    q->name = cn_scribe_cstr(op->name ? op->name : "");
    q->action = op->action;
    memcpy(q->source.b, op->source, 16);
    q->source_change = op->source_change;
    q->expected = cn_scribe_cstr(op->expected ? op->expected : "");
}

cn_err_t cn_scribe_client_branch_intent(const cn_scribe_client_branch_op_t *op, cn_digest_t *fp)
{
    cn_scribe_branch_mutate_req_t q;
    branch_req(op, &q);
    cn_buf_t b = { 0 };
    cn_err_t e = cn_scribe_enc_branch_mutate_req(&b, CN_SCRIBE_CODEC_LE, &q);
    cn_buf_free(&b);
    if (e < 0)
        return CN_E_INVALID;
    cn_scribe_branch_fingerprint(&q, fp);
    return CN_OK;
}

static void branch_outcome_from(const cn_scribe_branch_outcome_t *o,
                                cn_scribe_client_branch_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    out->accepted = o->outcome == CN_SCRIBE_OUTCOME_ACCEPTED;
    if (out->accepted)
        branch_from(&o->branch, &out->branch);
    out->code = o->code;
    snprintf(out->detail, sizeof out->detail, "%.*s", (int)o->detail.len,
             (const char *)o->detail.p);
}

static cn_err_t branch_send(cn_scribe_client_t *cl, const void *req, void *out,
                            cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_branch_mutate_req(&cl->out, CODEC(cl), req) < 0) {
        set_err(err, 0, "not a valid branch mutation (names, ids or action)");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_BRANCH_MUTATE, err));
    cn_scribe_branch_outcome_t o;
    if (cn_scribe_dec_branch_mutate_resp(cl->in.data, cl->in.len, CODEC(cl), &o) < 0)
        return CN_E_PROTOCOL;
    branch_outcome_from(&o, out);
    return CN_OK;
}

static cn_err_t branch_resolve(cn_scribe_client_t *cl, const void *req, bool *known, void *out,
                               cn_scribe_cerr_t *err)
{
    const cn_scribe_branch_mutate_req_t *q = req;
    return cn_scribe_client_branch_outcome(cl, q->repo.b, q->operation.b, known, out, err);
}

cn_err_t cn_scribe_client_branch_mutate(cn_scribe_client_t *cl,
                                        const cn_scribe_client_branch_op_t *op,
                                        cn_scribe_client_branch_outcome_t *out,
                                        cn_scribe_cerr_t *err)
{
    cn_scribe_branch_mutate_req_t q;
    branch_req(op, &q);
    return with_retries(cl, branch_send, branch_resolve, &q, out, err);
}

cn_err_t cn_scribe_client_branch_outcome(cn_scribe_client_t *cl, const uint8_t repo[16],
                                         const uint8_t op[16], bool *known,
                                         cn_scribe_client_branch_outcome_t *out,
                                         cn_scribe_cerr_t *err)
{
    cn_scribe_outcome_req_t q;
    memcpy(q.repo.b, repo, 16);
    memcpy(q.operation.b, op, 16);
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_outcome_req(&cl->out, CODEC(cl), &q));
    CN_TRY(call(cl, CN_SCRIBE_OP_BRANCH_OUTCOME, err));
    cn_scribe_outcome_resp_t r;
    if (cn_scribe_dec_branch_outcome_resp(cl->in.data, cl->in.len, CODEC(cl), &r) < 0)
        return CN_E_PROTOCOL;
    *known = r.kind == CN_SCRIBE_OUTCOME_KIND_BRANCH;
    if (*known)
        branch_outcome_from(&r.branch, out);
    return CN_OK;
}

/* ---- history -------------------------------------------------------------------------- */
cn_err_t cn_scribe_client_tree(cn_scribe_client_t *cl, const uint8_t repo[16],
                               const uint8_t branch[16], uint64_t change, const char *prefix,
                               cn_scribe_client_entry_fn fn, void *ctx, cn_digest_t *content_root,
                               cn_digest_t *revision_root, cn_scribe_cerr_t *err)
{
    char *after = malloc(CN_SCRIBE_MAX_PATH + 1), *path = malloc(CN_SCRIBE_MAX_PATH + 1);
    cn_err_t e = after && path ? CN_OK : -ENOMEM;
    bool has_after = false, more = true;
    while (e >= 0 && more) {
        cn_scribe_tree_page_req_t q;
        cn__scribe_tree_page_fill(&q, repo, branch, change, prefix, has_after, after);
        cn_buf_reset(&cl->out);
        if ((e = cn_scribe_enc_tree_page_req(&cl->out, CODEC(cl), &q)) < 0 ||
            (e = call(cl, CN_SCRIBE_OP_TREE_PAGE, err)) < 0)
            break;
        cn_scribe_tree_page_resp_t r;
        if (cn_scribe_dec_tree_page_resp(cl->in.data, cl->in.len, CODEC(cl), &r) < 0) {
            e = CN_E_PROTOCOL;
            break;
        }
        if (content_root)
            *content_root = r.content_root;
        if (revision_root)
            *revision_root = r.revision_root;
        more = r.more;
        cn_scribe_tree_entry_t te;
        while (e >= 0 && cn_scribe_next_tree_entry(&r.rows, &te)) {
            memcpy(path, te.path.p, te.path.len);
            path[te.path.len] = 0;
            cn_scribe_client_entry_t ce = { path,    te.path.len, te.manifest,
                                            te.size, te.mode,     te.last_change };
            int rc = fn ? fn(ctx, &ce) : 0;
            if (rc) {
                e = rc;
                more = false;
                break;
            }
            memcpy(after, path, te.path.len + 1);
            has_after = true;
        }
    }
    free(after);
    free(path);
    return e;
}

/* The log of path (NULL: none) from below change before (0: the head). */
static cn_err_t log_from(cn_scribe_client_t *cl, const uint8_t repo[16], const uint8_t branch[16],
                         const char *path, uint64_t before, uint32_t limit,
                         cn_scribe_client_log_fn fn, void *ctx, cn_scribe_cerr_t *err)
{
    bool has_before = before != 0;
    char *after = malloc(CN_SCRIBE_MAX_PATH + 1);
    char *strs = malloc(3 * (CN_SCRIBE_MAX_PATH + 1) + CN_SCRIBE_MAX_MESSAGE + 1);
    cn_err_t e = after && strs ? CN_OK : -ENOMEM;
    bool has_after = false;
    uint32_t seen = 0;
    while (e >= 0) {
        cn_scribe_log_req_t q;
        memset(&q, 0, sizeof q);
        memcpy(q.repo.b, repo, 16);
        memcpy(q.branch.b, branch, 16);
        q.has_path = path != NULL;
        q.path = cn_scribe_cstr(path ? path : "");
        q.has_before = has_before;
        q.before = before;
        q.has_after_path = has_after;
        q.after_path = cn_scribe_cstr(after);
        q.limit = limit && limit - seen < CN_SCRIBE_MAX_PAGE ? limit - seen : CN_SCRIBE_MAX_PAGE;
        cn_buf_reset(&cl->out);
        if ((e = cn_scribe_enc_log_req(&cl->out, CODEC(cl), &q)) < 0 ||
            (e = call(cl, CN_SCRIBE_OP_LOG, err)) < 0)
            break;
        cn_scribe_log_resp_t r;
        if (cn_scribe_dec_log_resp(cl->in.data, cl->in.len, CODEC(cl), false, &r) < 0) {
            e = CN_E_PROTOCOL;
            break;
        }
        if (!r.count)
            break;
        cn_scribe_log_row_t row;
        while (cn_scribe_next_log_row(&r.rows, false, &row)) {
            char *p = strs, *a = p + CN_SCRIBE_MAX_PATH + 1, *m = a + CN_SCRIBE_MAX_PATH + 1;
            snprintf(p, CN_SCRIBE_MAX_PATH + 1, "%.*s", (int)row.path.len,
                     (const char *)row.path.p);
            snprintf(a, CN_SCRIBE_MAX_PATH + 1, "%.*s", (int)row.author.len,
                     (const char *)row.author.p);
            snprintf(m, CN_SCRIBE_MAX_MESSAGE + 1, "%.*s", (int)row.message.len,
                     (const char *)row.message.p);
            cn_scribe_client_logrow_t lr = { row.change, row.commit,     row.parent,
                                             p,          row.event,      a,
                                             m,          row.time_ms,    row.has_pick,
                                             { 0 },      row.pick_change };
            memcpy(lr.pick_branch, row.pick_branch.b, 16);
            int rc = fn(ctx, &lr);
            if (rc)
                goto out;
            has_before = true;
            before = row.change;
            if (path) {
                memcpy(after, p, strlen(p) + 1);
                has_after = true;
            }
            if (limit && ++seen == limit)
                goto out;
        }
    }
out:
    free(after);
    free(strs);
    return e;
}

cn_err_t cn_scribe_client_log(cn_scribe_client_t *cl, const uint8_t repo[16],
                              const uint8_t branch[16], const char *path, uint32_t limit,
                              cn_scribe_client_log_fn fn, void *ctx, cn_scribe_cerr_t *err)
{
    return log_from(cl, repo, branch, path, 0, limit, fn, ctx, err);
}

cn_err_t cn__scribe_client_log_before(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      const uint8_t branch[16], uint64_t before, uint32_t limit,
                                      cn_scribe_client_log_fn fn, void *ctx, cn_scribe_cerr_t *err)
{
    return log_from(cl, repo, branch, NULL, before, limit, fn, ctx, err);
}

/* Where a merge-aware log page ended: its rows, the last one's change,
 * path (in path) and ceiling, and whether fn stopped the walk. */
typedef struct mlog_end {
    uint32_t count;
    uint64_t change, ceiling;
    char *path;
    bool stopped;
} mlog_end_t;

/* One page of the merge-aware log: the request for q, its rows each to fn
 * (strs: scratch for the row's strings), where it ended in *end. */
static cn_err_t mlog_page(cn_scribe_client_t *cl, const cn_scribe_log_req_t *q, char *strs,
                          cn_scribe_client_mlog_fn fn, void *ctx, mlog_end_t *end,
                          cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_log_req(&cl->out, CODEC(cl), q));
    CN_TRY(call(cl, CN_SCRIBE_OP_LOG, err));
    cn_scribe_log_resp_t r;
    if (cn_scribe_dec_log_resp(cl->in.data, cl->in.len, CODEC(cl), q->all_branches, &r) < 0)
        return CN_E_PROTOCOL;
    cn_scribe_log_row_t row;
    const size_t pm = CN_SCRIBE_MAX_PATH + 1;
    char *p = strs, *from = p + pm, *a = from + pm, *name = a + pm, *m = name + pm;
    end->count = r.count;
    while (cn_scribe_next_log_row(&r.rows, q->all_branches, &row)) {
        cn_scribe_client_mlogrow_t mr;
        memset(&mr, 0, sizeof mr);
        snprintf(p, pm, "%.*s", (int)row.path.len, (const char *)row.path.p);
        snprintf(from, pm, "%.*s", (int)row.from_path.len, (const char *)row.from_path.p);
        snprintf(a, pm, "%.*s", (int)row.author.len, (const char *)row.author.p);
        snprintf(name, pm, "%.*s", (int)row.branch_name.len, (const char *)row.branch_name.p);
        snprintf(m, CN_SCRIBE_MAX_MESSAGE + 1, "%.*s", (int)row.message.len,
                 (const char *)row.message.p);
        mr.row = (cn_scribe_client_logrow_t){ row.change, row.commit,     row.parent,
                                              p,          row.event,      a,
                                              m,          row.time_ms,    row.has_pick,
                                              { 0 },      row.pick_change };
        memcpy(mr.row.pick_branch, row.pick_branch.b, 16);
        mr.from_path = from;
        memcpy(mr.branch, row.branch.b, 16);
        mr.branch_name = name;
        mr.has_merge = row.has_merge;
        memcpy(mr.merge_branch, row.merge_branch.b, 16);
        mr.merge_change = row.merge_change;
        mr.ceiling = row.ceiling;
        mr.member = row.member;
        end->change = row.change;
        end->ceiling = row.ceiling;
        memcpy(end->path, p, strlen(p) + 1);
        if (fn(ctx, &mr)) {
            end->stopped = true;
            break;
        }
    }
    return CN_OK;
}

cn_err_t cn_scribe_client_log_merges(cn_scribe_client_t *cl, const uint8_t repo[16],
                                     const uint8_t branch[16], const char *path, bool all_branches,
                                     uint64_t ceiling, uint64_t before, uint32_t limit,
                                     cn_scribe_client_mlog_fn fn, void *ctx, cn_scribe_cerr_t *err)
{
    char *after = malloc(CN_SCRIBE_MAX_PATH + 1);
    char *strs = malloc(4 * (CN_SCRIBE_MAX_PATH + 1) + CN_SCRIBE_MAX_MESSAGE + 1);
    cn_err_t e = after && strs ? CN_OK : -ENOMEM;
    cn_scribe_log_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    memcpy(q.branch.b, branch, 16);
    q.has_path = true;
    q.path = cn_scribe_cstr(path);
    q.follow_merges = true;
    q.all_branches = all_branches;
    q.has_before = before != 0;
    q.before = before;
    q.has_ceiling = all_branches && ceiling;
    q.ceiling = ceiling;
    uint32_t seen = 0;
    mlog_end_t end = { 1, 0, 0, after, false };
    while (e >= 0 && end.count && !end.stopped && (!limit || seen < limit)) {
        q.limit = limit && limit - seen < CN_SCRIBE_MAX_PAGE ? limit - seen : CN_SCRIBE_MAX_PAGE;
        if ((e = mlog_page(cl, &q, strs, fn, ctx, &end, err)) < 0 || !end.count)
            break;
        seen += end.count;
        /* the next page: at the last row's change past its path, and, in
         * all-branch mode, at the ceiling the first page pinned */
        q.has_before = true;
        q.before = end.change;
        q.has_after_path = true;
        q.after_path = cn_scribe_cstr(after);
        q.has_ceiling = all_branches;
        q.ceiling = all_branches ? end.ceiling : 0;
    }
    free(after);
    free(strs);
    return e;
}

/* ---- change notes ---------------------------------------------------------------------- */
cn_err_t cn_scribe_client_note(cn_scribe_client_t *cl, const uint8_t repo[16], uint64_t change,
                               uint32_t *revision, char *text, size_t cap, cn_scribe_cerr_t *err)
{
    cn_scribe_id_t id;
    memcpy(id.b, repo, 16);
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_notes_req(&cl->out, CODEC(cl), &id, &change, 1));
    CN_TRY(call(cl, CN_SCRIBE_OP_CHANGE_NOTES, err));
    cn_scribe_rows_t rows;
    uint32_t count;
    bool present;
    cn_scribe_note_t nt;
    if (cn_scribe_dec_notes_resp(cl->in.data, cl->in.len, CODEC(cl), &rows, &count) < 0 ||
        count != 1 || !cn_scribe_next_note_opt(&rows, &present, &nt))
        return CN_E_PROTOCOL;
    *revision = present ? nt.revision : 0;
    if (cap)
        snprintf(text, cap, "%.*s", present ? (int)nt.text.len : 0,
                 present ? (const char *)nt.text.p : "");
    return CN_OK;
}

cn_err_t cn_scribe_client_describe(cn_scribe_client_t *cl, const uint8_t repo[16], uint64_t change,
                                   uint32_t expected, const char *author, const char *text,
                                   uint32_t *revision, cn_scribe_cerr_t *err)
{
    cn_scribe_describe_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    q.change = change;
    q.expected_revision = expected;
    q.author = cn_scribe_cstr(author ? author : "");
    q.text = cn_scribe_cstr(text ? text : "");
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_describe_req(&cl->out, CODEC(cl), &q) < 0) {
        set_err(err, 0, "a description is 1..65,536 bytes of UTF-8");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_DESCRIBE_CHANGE, err));
    cn_scribe_note_t nt;
    if (cn_scribe_dec_note_resp(cl->in.data, cl->in.len, CODEC(cl), &nt) < 0)
        return CN_E_PROTOCOL;
    *revision = nt.revision;
    return CN_OK;
}

/* ---- locks (14, 16, 17) ------------------------------------------------------------------ */
cn_err_t cn_scribe_client_lock_edit(cn_scribe_client_t *cl, const cn_scribe_client_lock_t *l,
                                    uint32_t *changed, cn_scribe_cerr_t *err)
{
    uint16_t op = l->release ? CN_SCRIBE_OP_LOCK_RELEASE : CN_SCRIBE_OP_LOCK_ACQUIRE;
    cn_scribe_lock_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, l->repo, 16);
    memcpy(q.workspace.b, l->workspace, 16);
    memcpy(q.branch.b, l->branch, 16);
    q.force = l->force;
    q.count = l->count;
    cn_scribe_str_t *v = l->count ? calloc(l->count, sizeof *v) : NULL;
    if (l->count && !v)
        return -ENOMEM;
    for (uint32_t i = 0; i < l->count; i++)
        v[i] = cn_scribe_cstr(l->paths[i]);
    cn_buf_reset(&cl->out);
    cn_err_t e = cn_scribe_enc_lock_req(&cl->out, CODEC(cl), op, &q, v);
    free(v);
    if (e < 0) {
        set_err(err, 0, "a lock request names 1..10,000 paths of together at most 8 MiB");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, op, err));
    return cn_scribe_dec_u32_resp(cl->in.data, cl->in.len, CODEC(cl), changed) < 0 ? CN_E_PROTOCOL
                                                                                   : CN_OK;
}

/* One page of lock_list after the cursor in *after (updated). */
static cn_err_t locks_page(cn_scribe_client_t *cl, cn_scribe_lock_list_req_t *q, char *after,
                           cn_scribe_client_lock_fn fn, void *ctx, bool *more,
                           cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_lock_list_req(&cl->out, CODEC(cl), q) < 0) {
        set_err(err, 0, "a lock listing's prefix is a path of at most 8,192 bytes");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_LOCK_LIST, err));
    cn_scribe_rows_t rows;
    uint32_t count;
    if (cn_scribe_dec_lock_list_resp(cl->in.data, cl->in.len, CODEC(cl), &rows, &count, more) < 0)
        return CN_E_PROTOCOL;
    cn_scribe_lock_row_t r;
    while (cn_scribe_next_lock_row(&rows, &r)) {
        cn_scribe_client_lock_row_t row;
        memset(&row, 0, sizeof row);
        snprintf(row.path, sizeof row.path, "%.*s", (int)r.path.len, (const char *)r.path.p);
        snprintf(row.principal, sizeof row.principal, "%.*s", (int)r.principal.len,
                 (const char *)r.principal.p);
        memcpy(row.workspace, r.workspace.b, 16);
        memcpy(row.branch, r.branch.b, 16);
        row.since_ms = r.since_ms;
        memcpy(after, row.path, strlen(row.path) + 1);
        CN_TRY(fn(ctx, &row));
    }
    return CN_OK;
}

cn_err_t cn_scribe_client_locks(cn_scribe_client_t *cl, const uint8_t repo[16], const char *prefix,
                                const uint8_t *owner, cn_scribe_client_lock_fn fn, void *ctx,
                                cn_scribe_cerr_t *err)
{
    char *after = malloc(CN_SCRIBE_MAX_PATH + 1);
    if (!after)
        return -ENOMEM;
    cn_scribe_lock_list_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    q.prefix = cn_scribe_cstr(prefix ? prefix : "");
    q.has_owner = owner != NULL;
    if (owner)
        memcpy(q.owner.b, owner, 16);
    q.limit = CN_SCRIBE_MAX_PAGE;
    bool more = true;
    cn_err_t e = CN_OK;
    while (more && e >= 0) {
        e = locks_page(cl, &q, after, fn, ctx, &more, err);
        q.has_after = true;
        q.after = cn_scribe_cstr(after);
    }
    free(after);
    return e;
}

cn_err_t cn_scribe_client_lock_policy(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      uint64_t *change, char **text, size_t *len,
                                      cn_scribe_cerr_t *err)
{
    *text = NULL;
    cn_scribe_id_t id;
    memcpy(id.b, repo, 16);
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_repo_id_req(&cl->out, CODEC(cl), &id));
    CN_TRY(call(cl, CN_SCRIBE_OP_LOCK_POLICY, err));
    cn_scribe_str_t t;
    if (cn_scribe_dec_lock_policy_resp(cl->in.data, cl->in.len, CODEC(cl), change, &t) < 0)
        return CN_E_PROTOCOL;
    if (!(*text = malloc(t.len + 1)))
        return -ENOMEM;
    memcpy(*text, t.p, t.len);
    (*text)[t.len] = 0;
    *len = t.len;
    return CN_OK;
}

/* ---- merges (24, 25) --------------------------------------------------------------------- */
static cn_err_t merge_send(cn_scribe_client_t *cl, const void *req, void *out,
                           cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    return submit_call(cl, cn_scribe_enc_merge_submit_req(&cl->out, CODEC(cl), req),
                       "author or message over its limit, or an invalid merge plan",
                       CN_SCRIBE_OP_MERGE_SUBMIT, out, err);
}

cn_err_t cn_scribe_client_merge_submit(cn_scribe_client_t *cl, const cn_scribe_client_merge_t *m,
                                       cn_scribe_client_outcome_t *out, cn_scribe_cerr_t *err)
{
    const cn_scribe_client_submit_t *s = &m->submit;
    cn_scribe_merge_submit_req_t q;
    memset(&q, 0, sizeof q);
    submit_req_from(s, &q.submit);
    q.target_head = s->base;
    memcpy(q.source.b, m->source, 16);
    q.source_head = m->source_head;
    memcpy(q.base_branch.b, m->base_branch, 16);
    q.base = m->base;
    return with_retries(cl, merge_send, submit_resolve, &q, out, err);
}

/* ---- cherry-picks (32, 33) ------------------------------------------------------------ */
cn_err_t cn_scribe_client_pick_info(cn_scribe_client_t *cl, const uint8_t repo[16],
                                    const uint8_t target[16], const uint8_t source[16],
                                    uint64_t change, cn_scribe_client_pick_info_t *out,
                                    cn_scribe_cerr_t *err)
{
    cn_scribe_pick_info_req_t q;
    memcpy(q.repo.b, repo, 16);
    memcpy(q.target.b, target, 16);
    memcpy(q.source.b, source, 16);
    q.change = change;
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_pick_info_req(&cl->out, CODEC(cl), &q));
    CN_TRY(call(cl, CN_SCRIBE_OP_CHERRY_PICK_INFO, err));
    cn_scribe_pick_info_t v;
    if (cn_scribe_dec_pick_info_resp(cl->in.data, cl->in.len, CODEC(cl), &v) < 0)
        return CN_E_PROTOCOL;
    memset(out, 0, sizeof *out);
    branch_from(&v.target, &out->target);
    branch_from(&v.source, &out->source);
    memcpy(out->parent_branch, v.parent_branch.b, 16);
    out->parent = v.parent;
    out->already_applied = v.already_applied;
    return CN_OK;
}

static cn_err_t pick_send(cn_scribe_client_t *cl, const void *req, void *out, cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    return submit_call(cl, cn_scribe_enc_pick_submit_req(&cl->out, CODEC(cl), req),
                       "author or message over its limit", CN_SCRIBE_OP_CHERRY_PICK_SUBMIT, out,
                       err);
}

cn_err_t cn_scribe_client_pick_submit(cn_scribe_client_t *cl, const cn_scribe_client_pick_t *p,
                                      cn_scribe_client_outcome_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_pick_submit_req_t q;
    memset(&q, 0, sizeof q);
    submit_req_from(&p->submit, &q.submit);
    q.target_head = p->submit.base;
    memcpy(q.source.b, p->source, 16);
    q.source_change = p->change;
    return with_retries(cl, pick_send, submit_resolve, &q, out, err);
}

/* A merge_read request of tag on repo: branch (NULL: none) at revision, the
 * tag's other fields zero for the caller to fill. */
static cn_scribe_merge_read_req_t mr_req(const uint8_t repo[16], uint8_t tag, const uint8_t *branch,
                                         uint64_t revision)
{
    cn_scribe_merge_read_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    q.tag = tag;
    if (branch)
        memcpy(q.branch.b, branch, 16);
    q.revision = revision;
    return q;
}

/* One merge_read whose request is q (paths: q->count views); the reply is
 * decoded into *r (borrowing cl->in) and must carry q's tag. */
static cn_err_t merge_read(cn_scribe_client_t *cl, const cn_scribe_merge_read_req_t *q,
                           const cn_scribe_str_t *paths, cn_scribe_merge_read_resp_t *r,
                           cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_merge_read_req(&cl->out, CODEC(cl), q, paths) < 0) {
        set_err(err, 0, "merge_read: a path over its limit");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_MERGE_READ, err));
    if (cn_scribe_dec_merge_read_resp(cl->in.data, cl->in.len, CODEC(cl), r) < 0 ||
        r->tag != q->tag || (q->count && r->tag != CN_SCRIBE_MR_UNCHANGED && r->count != q->count))
        return CN_E_PROTOCOL;
    return CN_OK;
}

cn_err_t cn_scribe_client_merge_base(cn_scribe_client_t *cl, const uint8_t repo[16],
                                     const uint8_t target[16], uint64_t target_rev,
                                     const uint8_t source[16], uint64_t source_rev,
                                     uint8_t base_branch[16], uint64_t *base, cn_scribe_cerr_t *err)
{
    cn_scribe_merge_read_req_t q = mr_req(repo, CN_SCRIBE_MR_BASE, target, target_rev);
    memcpy(q.other.b, source, 16);
    q.other_revision = source_rev;
    cn_scribe_merge_read_resp_t r;
    CN_TRY(merge_read(cl, &q, NULL, &r, err));
    memcpy(base_branch, r.base_branch.b, 16);
    *base = r.base;
    return CN_OK;
}

cn_err_t cn_scribe_client_merge_chains(cn_scribe_client_t *cl, const uint8_t repo[16],
                                       uint64_t left, uint64_t right, cn_scribe_client_path_fn fn,
                                       void *ctx, cn_scribe_cerr_t *err)
{
    char *cursor = malloc(CN_SCRIBE_MAX_PATH + 1), *path = malloc(CN_SCRIBE_MAX_PATH + 1);
    cn_err_t e = cursor && path ? CN_OK : -ENOMEM;
    bool has_cursor = false;
    while (e >= 0 && (left != right || has_cursor)) {
        cn_scribe_merge_read_req_t q = mr_req(repo, CN_SCRIBE_MR_CHAINS, NULL, 0);
        q.left = left;
        q.right = right;
        q.has_cursor = has_cursor;
        q.cursor = cn_scribe_cstr(has_cursor ? cursor : "");
        cn_scribe_merge_read_resp_t r;
        if ((e = merge_read(cl, &q, NULL, &r, err)) < 0)
            break;
        cn_scribe_str_t p;
        while (e >= 0 && cn_scribe_next_path(&r.rows, &p)) {
            snprintf(path, CN_SCRIBE_MAX_PATH + 1, "%.*s", (int)p.len, (const char *)p.p);
            if (fn(ctx, path) != 0)
                e = -ECANCELED;
        }
        if (r.left == left && r.right == right && !r.has_cursor && left != right) {
            e = CN_E_PROTOCOL; /* no progress: the walk would never end */
            break;
        }
        left = r.left, right = r.right, has_cursor = r.has_cursor;
        if (has_cursor)
            snprintf(cursor, CN_SCRIBE_MAX_PATH + 1, "%.*s", (int)r.cursor.len,
                     (const char *)r.cursor.p);
    }
    free(cursor);
    free(path);
    return e;
}

/* A merge_read over paths[0..n) in batches of at most 1,024: q is the
 * request without its paths (count set per batch); fn(ctx, at, k, r)
 * takes each batch's reply (paths at..at+k) and may stop with an error. */
typedef cn_err_t (*batch_fn)(void *ctx, size_t at, size_t k, cn_scribe_merge_read_resp_t *r);
static cn_err_t merge_batches(cn_scribe_client_t *cl, cn_scribe_merge_read_req_t *q,
                              const char *const *paths, size_t n, batch_fn fn, void *ctx,
                              cn_scribe_cerr_t *err)
{
    cn_scribe_str_t *views = malloc(CN_SCRIBE_MAX_MERGE_PATHS * sizeof *views);
    if (!views)
        return -ENOMEM;
    cn_err_t e = CN_OK;
    for (size_t at = 0; at < n && e >= 0; at += CN_SCRIBE_MAX_MERGE_PATHS) {
        size_t k = n - at < CN_SCRIBE_MAX_MERGE_PATHS ? n - at : CN_SCRIBE_MAX_MERGE_PATHS;
        for (size_t i = 0; i < k; i++)
            views[i] = cn_scribe_cstr(paths[at + i]);
        q->count = (uint32_t)k;
        cn_scribe_merge_read_resp_t r;
        if ((e = merge_read(cl, q, views, &r, err)) >= 0)
            e = fn(ctx, at, k, &r);
    }
    free(views);
    return e;
}

static cn_err_t states_batch(void *ctx, size_t at, size_t k, cn_scribe_merge_read_resp_t *r)
{
    cn_scribe_client_fstate_t *out = ctx;
    for (size_t i = 0; i < k; i++) {
        cn_scribe_file_state_t fs;
        bool present;
        if (!cn_scribe_next_file_state(&r->rows, &present, &fs))
            return CN_E_PROTOCOL;
        cn_scribe_client_fstate_t *o = &out[at + i];
        memset(o, 0, sizeof *o);
        o->live = present && fs.kind == CN_SCRIBE_FILE_LIVE;
        o->change = present ? fs.change : 0;
        if (o->live)
            o->manifest = fs.manifest, o->size = fs.size, o->mode = fs.mode;
    }
    return CN_OK;
}

cn_err_t cn_scribe_client_merge_states(cn_scribe_client_t *cl, const uint8_t repo[16],
                                       const uint8_t branch[16], uint64_t revision,
                                       const char *const *paths, size_t n,
                                       cn_scribe_client_fstate_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_merge_read_req_t q = mr_req(repo, CN_SCRIBE_MR_STATES, branch, revision);
    return merge_batches(cl, &q, paths, n, states_batch, out, err);
}

static cn_err_t origins_batch(void *ctx, size_t at, size_t k, cn_scribe_merge_read_resp_t *r)
{
    cn_scribe_client_origin_t *out = ctx;
    for (size_t i = 0; i < k; i++) {
        cn_scribe_origin_t og;
        if (!cn_scribe_next_origin(&r->rows, &og))
            return CN_E_PROTOCOL;
        out[at + i].kind = og.kind;
        if (og.kind == CN_SCRIBE_ORIGIN_UNIQUE &&
            !(out[at + i].base_path = strndup((const char *)og.base_path.p, og.base_path.len)))
            return -ENOMEM;
    }
    return CN_OK;
}

cn_err_t cn_scribe_client_merge_origins(cn_scribe_client_t *cl, const uint8_t repo[16],
                                        const uint8_t branch[16], uint64_t revision,
                                        const uint8_t base_branch[16], uint64_t base,
                                        const char *const *paths, size_t n,
                                        cn_scribe_client_origin_t *out, cn_scribe_cerr_t *err)
{
    memset(out, 0, n * sizeof *out);
    cn_scribe_merge_read_req_t q = mr_req(repo, CN_SCRIBE_MR_ORIGINS, branch, revision);
    memcpy(q.other.b, base_branch, 16);
    q.other_revision = base;
    return merge_batches(cl, &q, paths, n, origins_batch, out, err);
}

static cn_err_t unchanged_batch(void *ctx, size_t at, size_t k, cn_scribe_merge_read_resp_t *r)
{
    bool *unchanged = ctx;
    (void)at, (void)k;
    *unchanged = *unchanged && r->unchanged;
    return CN_OK;
}

cn_err_t cn_scribe_client_merge_unchanged(cn_scribe_client_t *cl, const uint8_t repo[16],
                                          const uint8_t branch[16], uint64_t from, uint64_t to,
                                          const char *const *paths, size_t n, bool *unchanged,
                                          cn_scribe_cerr_t *err)
{
    *unchanged = true;
    cn_scribe_merge_read_req_t q = mr_req(repo, CN_SCRIBE_MR_UNCHANGED, branch, 0);
    q.from = from;
    q.to = to;
    return merge_batches(cl, &q, paths, n, unchanged_batch, unchanged, err);
}

/* ---- workspaces (12, 34-36) ------------------------------------------------------------- */
static void ws_from(const cn_scribe_ws_row_t *r, cn_scribe_client_ws_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->workspace, r->workspace.b, 16);
    memcpy(out->branch, r->branch.b, 16);
    out->has_owner = r->has_owner;
    memcpy(out->owner, r->owner.b, 16);
    snprintf(out->label, sizeof out->label, "%.*s", (int)r->label.len, (const char *)r->label.p);
    out->tag_count = r->tag_count;
    for (uint16_t i = 0; i < r->tag_count; i++)
        snprintf(out->tags[i], sizeof out->tags[i], "%.*s", (int)r->tags[i].len,
                 (const char *)r->tags[i].p);
    out->created_ms = r->created_ms;
    out->has_locks = r->has_locks;
}

cn_err_t cn_scribe_client_ws_register(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      const uint8_t workspace[16], const uint8_t branch[16],
                                      const char *label, const char *const *tags, uint16_t ntags,
                                      cn_scribe_client_ws_t *out, cn_scribe_cerr_t *err)
{
    cn_scribe_ws_register_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    memcpy(q.workspace.b, workspace, 16);
    memcpy(q.branch.b, branch, 16);
    q.label = cn_scribe_cstr(label ? label : "");
    q.tag_count = ntags;
    for (uint16_t i = 0; i < ntags && i < CN_SCRIBE_MAX_WS_TAGS; i++)
        q.tags[i] = cn_scribe_cstr(tags[i]);
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_ws_register_req(&cl->out, CODEC(cl), &q) < 0) {
        set_err(err, 0,
                "a workspace has a label of at most 256 bytes and at most 16 tags, each "
                "name or name=value (name: a-z 0-9 . _ -, unique; value: printable, no spaces)");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_WORKSPACE_REGISTER, err));
    cn_scribe_ws_row_t r;
    if (cn_scribe_dec_ws_row_resp(cl->in.data, cl->in.len, CODEC(cl), &r) < 0)
        return CN_E_PROTOCOL;
    if (out)
        ws_from(&r, out);
    return CN_OK;
}

cn_err_t cn_scribe_client_ws_list(cn_scribe_client_t *cl, const uint8_t repo[16], bool all,
                                  cn_scribe_client_ws_fn fn, void *ctx, cn_scribe_cerr_t *err)
{
    cn_scribe_ws_list_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, repo, 16);
    q.scope = all ? 1 : 0;
    q.limit = CN_SCRIBE_MAX_WS_PAGE;
    cn_scribe_client_ws_t *w = malloc(sizeof *w);
    cn_err_t e = w ? CN_OK : -ENOMEM;
    for (bool more = true; more && e >= 0;) {
        cn_buf_reset(&cl->out);
        cn_scribe_rows_t rows;
        uint32_t count = 0;
        if ((e = cn_scribe_enc_ws_list_req(&cl->out, CODEC(cl), &q)) < 0 ||
            (e = call(cl, CN_SCRIBE_OP_WORKSPACE_LIST, err)) < 0)
            break;
        if (cn_scribe_dec_ws_list_resp(cl->in.data, cl->in.len, CODEC(cl), &rows, &count, &more) <
            0) {
            e = CN_E_PROTOCOL;
            break;
        }
        cn_scribe_ws_row_t r;
        while (e >= 0 && cn_scribe_next_ws_row(&rows, &r)) {
            ws_from(&r, w);
            q.has_cursor = true;
            q.cursor = r.workspace;
            e = fn(ctx, w);
        }
    }
    free(w);
    return e;
}

static void removal_from(const cn_scribe_ws_removal_t *o, cn_scribe_client_ws_removal_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->operation, o->operation.b, 16);
    out->code = o->code;
    out->retired_ms = o->retired_ms;
    snprintf(out->detail, sizeof out->detail, "%.*s", (int)o->detail.len,
             (const char *)o->detail.p);
}

/* Decodes the removal outcome that 35 and 36 answer into *out. */
static cn_err_t removal_reply(cn_scribe_client_t *cl, void *out)
{
    cn_scribe_ws_removal_t o;
    if (cn_scribe_dec_ws_removal(cl->in.data, cl->in.len, CODEC(cl), &o) < 0)
        return CN_E_PROTOCOL;
    removal_from(&o, out);
    return CN_OK;
}

static cn_err_t ws_remove_send(cn_scribe_client_t *cl, const void *req, void *out,
                               cn_scribe_cerr_t *err)
{
    cn_buf_reset(&cl->out);
    if (cn_scribe_enc_ws_remove_req(&cl->out, CODEC(cl), req) < 0) {
        set_err(err, 0, "the operation and workspace ids are nonzero");
        return CN_E_INVALID;
    }
    CN_TRY(call(cl, CN_SCRIBE_OP_WORKSPACE_REMOVE, err));
    return removal_reply(cl, out);
}

static cn_err_t ws_remove_resolve(cn_scribe_client_t *cl, const void *req, bool *known, void *out,
                                  cn_scribe_cerr_t *err)
{
    const cn_scribe_ws_remove_req_t *q = req;
    return cn_scribe_client_ws_removal_outcome(cl, q->repo.b, q->operation.b, known, out, err);
}

cn_err_t cn_scribe_client_ws_remove(cn_scribe_client_t *cl, const uint8_t repo[16],
                                    const uint8_t incarnation[16], const uint8_t operation[16],
                                    const uint8_t workspace[16], cn_scribe_client_ws_removal_t *out,
                                    cn_scribe_cerr_t *err)
{
    cn_scribe_ws_remove_req_t q;
    memcpy(q.repo.b, repo, 16);
    memcpy(q.incarnation.b, incarnation, 16);
    memcpy(q.operation.b, operation, 16);
    memcpy(q.workspace.b, workspace, 16);
    return with_retries(cl, ws_remove_send, ws_remove_resolve, &q, out, err);
}

cn_err_t cn_scribe_client_ws_removal_outcome(cn_scribe_client_t *cl, const uint8_t repo[16],
                                             const uint8_t operation[16], bool *known,
                                             cn_scribe_client_ws_removal_t *out,
                                             cn_scribe_cerr_t *err)
{
    cn_scribe_outcome_req_t q;
    memcpy(q.repo.b, repo, 16);
    memcpy(q.operation.b, operation, 16);
    *known = false;
    cn_buf_reset(&cl->out);
    CN_TRY(cn_scribe_enc_outcome_req(&cl->out, CODEC(cl), &q));
    cn_scribe_cerr_t local = { 0 };
    cn_err_t e = call(cl, CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME, &local);
    if (e < 0 && local.code == CN_SCRIBE_E_CHANGE_NOT_FOUND)
        return CN_OK; /* nothing recorded under that operation */
    if (e < 0) {
        if (err)
            *err = local;
        return e;
    }
    CN_TRY(removal_reply(cl, out));
    *known = true;
    return CN_OK;
}

/* ---- tree_proof (43): one fragment; the verifier lives in scribe_proof.c ---------------- */
int cn_scribe_client_codec(const cn_scribe_client_t *cl)
{
    return cl->codec;
}

cn_err_t cn__scribe_client_tree_proof_send(cn_scribe_client_t *cl, const uint8_t *req, size_t len,
                                           cn_scribe_cerr_t *err)
{
    if (len > CN_SCRIBE_MAX_PROOF_REQ)
        return CN_E_INVALID;
    CN_TRY(ensure(cl, err));
    cn_buf_reset(&cl->out);
    CN_TRY(cn_buf_append(&cl->out, req, len));
    cn_err_t e = send_frame(cl, CN_SCRIBE_OP_TREE_PROOF, 0, &cl->out);
    if (e < 0 && err && !err->code && !err->message[0])
        set_err(err, 0, "tree_proof: %s", cn_strerror(e));
    return e;
}

cn_err_t cn__scribe_client_tree_proof_recv(cn_scribe_client_t *cl, cn_buf_t *reply,
                                           cn_scribe_cerr_t *err)
{
    cn_scribe_hdr_t hdr;
    cn_err_t e =
        cl->fd >= 0 ? recv_reply(cl, CN_SCRIBE_OP_TREE_PROOF, &hdr, CODEC(cl), err) : CN_E_CLOSED;
    if (e < 0 && err && !err->code && !err->message[0])
        set_err(err, 0, "tree_proof: %s", cn_strerror(e));
    return e < 0 ? e : cn_buf_append(reply, cl->in.data, cl->in.len);
}

void cn__scribe_client_interrupt(cn_scribe_client_t *cl)
{
    pthread_mutex_lock(&cl->fdmu);
    if (cl->fd >= 0 && !shutdown(cl->fd, SHUT_RDWR))
        cl->cut = true;
    pthread_mutex_unlock(&cl->fdmu);
}

void cn__scribe_client_tree_proof_drain(cn_scribe_client_t *cl)
{
    cn_scribe_hdr_t hdr;
    cn_scribe_cerr_t local = { 0 };
    cn_err_t e =
        cl->fd >= 0 ? recv_reply(cl, CN_SCRIBE_OP_TREE_PROOF, &hdr, CODEC(cl), &local) : CN_OK;
    if (e < 0 && !local.code)
        drop(cl); /* not an error frame: the stream's state is unknown */
}

cn_err_t cn_scribe_client_tree_proof(cn_scribe_client_t *cl, const uint8_t *req, size_t len,
                                     cn_buf_t *reply, cn_scribe_cerr_t *err)
{
    if (len > CN_SCRIBE_MAX_PROOF_REQ)
        return CN_E_INVALID;
    cn_buf_reset(&cl->out);
    CN_TRY(cn_buf_append(&cl->out, req, len));
    CN_TRY(call(cl, CN_SCRIBE_OP_TREE_PROOF, err));
    return cn_buf_append(reply, cl->in.data, cl->in.len);
}
