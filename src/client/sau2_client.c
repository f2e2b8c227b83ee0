/* libcairn's SAU2 client: one blocking TLS connection per call in flight,
 * and a pool of at most four (include/cairn/sau2_client.h).  TLS 1.3 with
 * X25519MLKEM768 alone (cn_tls_client_ctx_new); the server is verified
 * against the caller's trust file; the credential certificate and device
 * key are presented when given.
 *
 * Never: retry a request more than once, or on anything but a connection
 * the service closed before answering (operation ids make a retry of a
 * mutation safe, but only once is promised); leave a request's bytes (a
 * password) in a freed buffer. */
#include "cairn/sau2_client.h"

#include "cairn/crypto.h"
#include "cairn/util.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

struct cn_sau2_conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    int64_t last_ms; /* the end of its last reply (pool) */
};

/* ---- a socket BIO that never raises SIGPIPE ----------------------------------------
 * OpenSSL's socket BIO writes with write(2), which raises SIGPIPE when the
 * service has closed the connection; a library may not change the process's
 * signal disposition, so its writes are send(MSG_NOSIGNAL) instead. */
static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static int nosig_write(BIO *b, const char *p, int n)
{
    ssize_t w = send(BIO_get_fd(b, NULL), p, (size_t)n, MSG_NOSIGNAL);
    return w < 0 ? -1 : (int)w;
}

static int nosig_read(BIO *b, char *p, int n)
{
    ssize_t r = recv(BIO_get_fd(b, NULL), p, (size_t)n, 0);
    return r < 0 ? -1 : (int)r;
}

static long nosig_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    switch (cmd) {
    case BIO_C_SET_FD:
        BIO_set_data(b, (void *)(intptr_t) * (int *)ptr);
        BIO_set_init(b, 1);
        (void)num;
        return 1;
    case BIO_C_GET_FD: {
        int fd = (int)(intptr_t)BIO_get_data(b);
        if (ptr)
            *(int *)ptr = fd;
        return fd;
    }
    case BIO_CTRL_FLUSH: return 1;
    default: return 0;
    }
}

static void nosig_init(void)
{
    nosig_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "cairn sau2 socket");
    if (nosig_method) {
        BIO_meth_set_write(nosig_method, nosig_write);
        BIO_meth_set_read(nosig_method, nosig_read);
        BIO_meth_set_ctrl(nosig_method, nosig_ctrl);
    }
}

/* Attaches fd to ssl through the no-SIGPIPE BIO (the fd stays the caller's). */
static cn_err_t attach_fd(SSL *ssl, int fd)
{
    pthread_once(&nosig_once, nosig_init);
    BIO *b = nosig_method ? BIO_new(nosig_method) : NULL;
    if (!b)
        return -ENOMEM;
    BIO_set_fd(b, fd, BIO_NOCLOSE);
    SSL_set_bio(ssl, b, b);
    return CN_OK;
}

/* Splits "host:port" / "[v6]:port" into host and port. */
static cn_err_t split_addr(const char *addr, char *host, size_t cap, const char **port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1])
        return CN_E_INVALID;
    const char *h = addr;
    size_t n = (size_t)(colon - addr);
    if (h[0] == '[' && n >= 2 && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    if (n == 0 || n >= cap)
        return CN_E_INVALID;
    memcpy(host, h, n);
    host[n] = 0;
    *port = colon + 1;
    return CN_OK;
}

static cn_err_t dial(const char *addr, int64_t timeout_ms, int *out)
{
    char host[256];
    const char *port;
    CN_TRY(split_addr(addr, host, sizeof host, &port));
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
        return CN_E_INVALID;
    cn_err_t e = -ECONNREFUSED;
    int fd = -1;
    for (struct addrinfo *p = ai; p && fd < 0; p = p->ai_next) {
        fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = -errno;
            continue;
        }
        /* Blocking I/O bounded by the socket's own timeouts: one call at a
         * time per connection, so nothing here needs a poll loop. */
        struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, p->ai_addr, p->ai_addrlen) != 0) {
            e = errno == EINPROGRESS || errno == EAGAIN ? CN_E_TIMEOUT : -errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return e;
    *out = fd;
    return CN_OK;
}

/* The TLS context of o: pq-only, the trust file verified, the credential
 * presented. */
static cn_err_t make_ctx(const cn_sau2_client_opts_t *o, SSL_CTX **out)
{
    SSL_CTX *ctx = NULL;
    CN_TRY(cn_tls_client_ctx_new(CN_TLS_GROUPS_PQ_ONLY, &ctx));
    cn_err_t e = CN_OK;
    if (o->trust_file) {
        if (SSL_CTX_load_verify_locations(ctx, o->trust_file, NULL) != 1)
            e = CN_E_INVALID;
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    if (e == 0 && (o->cert_file || o->key_file) &&
        (!o->cert_file || !o->key_file ||
         SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(ctx) != 1))
        e = CN_E_INVALID;
    ERR_clear_error();
    if (e < 0) {
        SSL_CTX_free(ctx);
        return e;
    }
    *out = ctx;
    return CN_OK;
}

static int64_t timeout_of(const cn_sau2_client_opts_t *o)
{
    return o->timeout_ms > 0 ? o->timeout_ms : 30000;
}

/* Connects with a context made already (the pool's, shared: SSL_CTX is
 * reference counted). */
static cn_err_t conn_open_ctx(const cn_sau2_client_opts_t *o, SSL_CTX *ctx, cn_sau2_conn_t **out)
{
    *out = NULL;
    cn_sau2_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->fd = -1;
    SSL_CTX_up_ref(ctx);
    c->ctx = ctx;
    cn_err_t e = dial(o->addr, timeout_of(o), &c->fd);
    if (e == 0 && !(c->ssl = SSL_new(ctx)))
        e = -ENOMEM;
    if (e == 0)
        e = attach_fd(c->ssl, c->fd);
    if (e == 0 && SSL_connect(c->ssl) != 1)
        e = errno == EAGAIN ? CN_E_TIMEOUT : CN_E_AUTH;
    ERR_clear_error();
    if (e < 0) {
        cn_sau2_conn_close(c);
        return e;
    }
    c->last_ms = cn_mono_ms();
    *out = c;
    return CN_OK;
}

cn_err_t cn_sau2_conn_open(const cn_sau2_client_opts_t *o, cn_sau2_conn_t **out)
{
    *out = NULL;
    SSL_CTX *ctx = NULL;
    CN_TRY(make_ctx(o, &ctx));
    cn_err_t e = conn_open_ctx(o, ctx, out);
    SSL_CTX_free(ctx); /* the connection holds its own reference */
    return e;
}

/* Reads exactly n bytes; CN_E_CLOSED at end of stream. */
static cn_err_t read_full(cn_sau2_conn_t *c, uint8_t *p, size_t n)
{
    while (n) {
        size_t got = 0;
        if (SSL_read_ex(c->ssl, p, n, &got) != 1) {
            int err = SSL_get_error(c->ssl, 0);
            ERR_clear_error();
            if (err == SSL_ERROR_ZERO_RETURN)
                return CN_E_CLOSED;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return CN_E_TIMEOUT;
            return CN_E_CLOSED; /* reset, or closed without close_notify */
        }
        p += got;
        n -= got;
    }
    return CN_OK;
}

cn_err_t cn_sau2_conn_call(cn_sau2_conn_t *c, const cn_sau2_req_t *req, cn_buf_t *payload,
                           cn_sau2_reply_view_t *v)
{
    cn_buf_t out = { 0 };
    cn_err_t e = cn_sau2_enc_request(&out, req);
    size_t w = 0;
    if (e == 0 && SSL_write_ex(c->ssl, out.data, out.len, &w) != 1) {
        e = errno == EAGAIN ? CN_E_TIMEOUT : CN_E_CLOSED;
        ERR_clear_error();
    }
    if (out.data)
        OPENSSL_cleanse(out.data, out.len); /* it may hold a password */
    cn_buf_free(&out);
    if (e < 0)
        return e;
    uint8_t head[CN_SAU2_HDR_LEN];
    uint32_t len = 0;
    CN_TRY(read_full(c, head, sizeof head));
    CN_TRY(cn_sau2_frame_parse(head, &len));
    payload->len = 0;
    CN_TRY(cn_buf_reserve(payload, len ? len : 1));
    e = read_full(c, payload->data, len);
    if (e == CN_E_CLOSED)
        e = CN_E_PROTOCOL; /* a reply cut short is not "closed before answering" */
    if (e < 0)
        return e;
    payload->len = len;
    CN_TRY(cn_sau2_dec_reply(payload->data, len, v));
    c->last_ms = cn_mono_ms();
    return CN_OK;
}

const char *cn_sau2_conn_group(cn_sau2_conn_t *c)
{
    return cn_tls_negotiated_group(c->ssl);
}

void cn_sau2_conn_close(cn_sau2_conn_t *c)
{
    if (!c)
        return;
    if (c->ssl) {
        (void)SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    if (c->fd >= 0)
        close(c->fd);
    SSL_CTX_free(c->ctx);
    ERR_clear_error();
    free(c);
}

/* ---- the pool ------------------------------------------------------------------- */

struct cn_sau2_client {
    cn_sau2_client_opts_t o;
    char *addr, *trust, *cert, *key;
    SSL_CTX *ctx;     /* made at the first connection */
    int64_t reuse_ms; /* CN_SAU2_POOL_REUSE_MS, or shorter (reuse_window) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned open; /* connections that exist, idle or in a call */
    cn_sau2_conn_t *idle[CN_SAU2_POOL_MAX];
    unsigned nidle;
};

static char *dup_or_null(const char *s, bool *fail)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *fail = true;
    return d;
}

/* The pool's reuse window: CAIRN_SAU2_REUSE_MS when it is a whole number
 * from 1 to CN_SAU2_POOL_REUSE_MS (tests shorten the 50 s this way), else
 * CN_SAU2_POOL_REUSE_MS; never longer, which the listener's idle close
 * (60 s) relies on. */
static int64_t reuse_window(void)
{
    const char *s = getenv("CAIRN_SAU2_REUSE_MS");
    char *end = NULL;
    long long v = s && *s ? strtoll(s, &end, 10) : 0;
    return end && !*end && v >= 1 && v <= CN_SAU2_POOL_REUSE_MS ? (int64_t)v
                                                                : CN_SAU2_POOL_REUSE_MS;
}

cn_err_t cn_sau2_client_new(const cn_sau2_client_opts_t *o, cn_sau2_client_t **out)
{
    *out = NULL;
    cn_sau2_client_t *cl = calloc(1, sizeof *cl);
    if (!cl)
        return -ENOMEM;
    bool fail = false;
    cl->addr = dup_or_null(o->addr, &fail);
    cl->trust = dup_or_null(o->trust_file, &fail);
    cl->cert = dup_or_null(o->cert_file, &fail);
    cl->key = dup_or_null(o->key_file, &fail);
    cl->o = (cn_sau2_client_opts_t){ cl->addr, cl->trust, cl->cert, cl->key, o->timeout_ms };
    cl->reuse_ms = reuse_window();
    pthread_mutex_init(&cl->mu, NULL);
    pthread_cond_init(&cl->cv, NULL);
    if (fail || !o->addr) {
        cn_sau2_client_free(cl);
        return fail ? -ENOMEM : CN_E_INVALID;
    }
    *out = cl;
    return CN_OK;
}

/* Closes the oldest idle connection (the pool's lock held; one is idle). */
static void pool_drop_oldest_locked(cn_sau2_client_t *cl)
{
    cn_sau2_conn_t *c = cl->idle[0];
    memmove(&cl->idle[0], &cl->idle[1], (cl->nidle - 1) * sizeof cl->idle[0]);
    cl->nidle--;
    cl->open--;
    cn_sau2_conn_close(c);
}

/* Takes a connection: an idle one used within the reuse window (*reused),
 * else a new one once fewer than the maximum exist.  fresh: always a new
 * one (the retry), an idle one closed to make room when the pool is full. */
static cn_err_t pool_take(cn_sau2_client_t *cl, bool fresh, cn_sau2_conn_t **out, bool *reused)
{
    cn_err_t e = CN_OK;
    pthread_mutex_lock(&cl->mu);
    for (;;) {
        while (cl->nidle && !fresh) {
            cn_sau2_conn_t *c = cl->idle[--cl->nidle];
            if (cn_mono_ms() - c->last_ms <= cl->reuse_ms) {
                *out = c;
                *reused = true;
                goto out;
            }
            cl->open--;
            cn_sau2_conn_close(c); /* the listener may have closed it by now */
        }
        if (cl->open >= CN_SAU2_POOL_MAX && cl->nidle)
            pool_drop_oldest_locked(cl); /* fresh: idle ones are as suspect */
        if (cl->open < CN_SAU2_POOL_MAX)
            break;
        pthread_cond_wait(&cl->cv, &cl->mu);
    }
    cl->open++;
    if (!cl->ctx)
        e = make_ctx(&cl->o, &cl->ctx);
    SSL_CTX *ctx = cl->ctx;
    pthread_mutex_unlock(&cl->mu);
    *reused = false;
    if (e == 0)
        e = conn_open_ctx(&cl->o, ctx, out);
    pthread_mutex_lock(&cl->mu);
    if (e < 0) {
        cl->open--;
        pthread_cond_signal(&cl->cv);
    }
out:
    pthread_mutex_unlock(&cl->mu);
    return e;
}

/* Gives c back (ok) or closes it. */
static void pool_give(cn_sau2_client_t *cl, cn_sau2_conn_t *c, bool ok)
{
    pthread_mutex_lock(&cl->mu);
    if (ok && cl->nidle < CN_SAU2_POOL_MAX) {
        cl->idle[cl->nidle++] = c;
        c = NULL;
    } else {
        cl->open--;
    }
    pthread_cond_signal(&cl->cv);
    pthread_mutex_unlock(&cl->mu);
    cn_sau2_conn_close(c);
}

cn_err_t cn_sau2_client_call(cn_sau2_client_t *cl, const cn_sau2_req_t *req, cn_buf_t *payload,
                             cn_sau2_reply_view_t *v)
{
    for (int attempt = 0;; attempt++) {
        cn_sau2_conn_t *c = NULL;
        bool reused = false;
        /* The retry goes on a new connection: the other idle ones are older
         * than the one the service closed, so likely closed as well. */
        CN_TRY(pool_take(cl, attempt > 0, &c, &reused));
        cn_err_t e = cn_sau2_conn_call(c, req, payload, v);
        pool_give(cl, c, e == 0);
        /* Only a pooled connection the service closed is worth a second try. */
        if (e == CN_E_CLOSED && reused && attempt == 0)
            continue;
        return e;
    }
}

void cn_sau2_client_free(cn_sau2_client_t *cl)
{
    if (!cl)
        return;
    for (unsigned i = 0; i < cl->nidle; i++)
        cn_sau2_conn_close(cl->idle[i]);
    SSL_CTX_free(cl->ctx);
    pthread_mutex_destroy(&cl->mu);
    pthread_cond_destroy(&cl->cv);
    free(cl->addr);
    free(cl->trust);
    free(cl->cert);
    free(cl->key);
    free(cl);
}
