/* Internals of the Jay client (src/client/): one connection (jay_conn.c) and
 * the pool (jay_pool.c), used by the operations in jay_client.c.  Never
 * included from another module. */
#ifndef CN_CLIENT_INT_H
#define CN_CLIENT_INT_H

#include "cairn/client.h"
#include "cairn/util.h"

#include <openssl/ssl.h>
#include <pthread.h>

#define CN__IO_BUF (64 * 1024) /* the spec's 64 KiB buffered reader and writer */

typedef struct cn__jconn cn__jconn_t;

/* What a connection needs to dial, shared read-only by every connection. */
typedef struct cn__jcfg {
    char host[256];
    char port[8];
    char *token;
    SSL_CTX *ssl_ctx; /* NULL: plaintext */
    int connect_timeout_ms;
    int io_timeout_ms;
} cn__jcfg_t;

/* One request/response exchange. */
typedef struct cn__jcall {
    const uint8_t *frame; /* header + metadata; the header declares data_len */
    size_t frame_len;
    cn_client_body_t *body; /* the data_len body bytes; NULL when data_len is 0 */
    cn_client_sink_t *sink; /* where an OK response's body goes; NULL: none expected */
    int reply_timeout_ms;   /* > 0: how long to await the response once the request
                                  * is sent, when the server works before it answers */
    /* Filled by cn__jconn_call: */
    cn_jay_hdr_t rh; /* the response header */
    cn_buf_t rmeta;  /* its metadata (owned; the caller frees) */
    int64_t served;  /* response body bytes delivered to sink */
    bool got_byte;   /* a response byte was read */
} cn__jcall_t;

/* Dials, (TLS), handshakes.  Errors as documented in client.h, with err filled. */
cn_err_t cn__jconn_open(const cn__jcfg_t *cfg, cn__jconn_t **out, cn_jay_error_t *err);
void cn__jconn_close(cn__jconn_t *c); /* accepts NULL */

/* Sends call->frame and body, reads the response header and metadata, and
 * streams the body to the sink (or drains it).  CN_OK means a whole response
 * was read (whatever its status) and the connection may be reused if
 * cn__jconn_reusable() says so.  Any other result is a transport or protocol
 * failure and the connection must be closed. */
cn_err_t cn__jconn_call(cn__jconn_t *c, cn__jcall_t *call, cn_jay_error_t *err);
bool cn__jconn_reusable(const cn__jconn_t *c);
/* A cheap, non-blocking check of a pooled connection before reuse: false
 * when the server has already closed it (or sent unsolicited bytes). */
bool cn__jconn_alive(cn__jconn_t *c);

/* The pool (jay_pool.c). */
struct cn_client {
    cn__jcfg_t cfg;
    int idle_ms;
    int complete_ms;
    unsigned max_idle;
    pthread_mutex_t mu;
    struct cn__idle {
        cn__jconn_t *conn;
        int64_t since_ms;
    } * idle;
    size_t n_idle;
    cn_client_stats_t stats;
};

/* Borrows a connection: the most recently used idle one that has idled less
 * than idle_ms and that the server has not closed (*reused = true), else a
 * new one; always a new one when fresh (the retry). */
cn_err_t cn__pool_get(cn_client_t *cl, bool fresh, cn__jconn_t **out, bool *reused,
                      cn_jay_error_t *err);
/* Returns a healthy connection to the pool (or closes it when the pool is full). */
void cn__pool_put(cn_client_t *cl, cn__jconn_t *c);
void cn__pool_note_retry(cn_client_t *cl);

/* Sets err's message (printf-style) and clears the rest; err may be NULL. */
void cn__err_set(cn_jay_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
