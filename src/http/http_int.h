/* Internals shared by the files of the http module; never included from
 * another module (the request fuzz harness includes it to drive parse.c).
 *
 * Threads: a connection (cn__hconn_t) and the request it is serving belong
 * to the worker that serves it; every handler callback runs there.  The
 * only fields another thread touches are the resume generation and its
 * mutex (cn_http_req_resume). */
#ifndef CN_HTTP_INT_H
#define CN_HTTP_INT_H

#include "cairn/http.h"
#include "cairn/metrics.h"
#include "cairn/net.h"

#include <llhttp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>

#define CN__MAX_ROUTES 64
#define CN__MAX_RESP_HEADERS 64
#define CN__RHL_KEEP (8u * 1024) /* header-line bytes a spare request keeps */
#define CN__MAX_METRIC_SOURCES 16
#define CN__LAT_BUCKETS 12
#define CN__DRAIN_MAX (64u << 20) /* body bytes read past an error before closing */

/* Limits of a request head, with S3's answers (parse.c). */
#define CN__HEAD_MAX (64u * 1024)  /* request line + headers: RequestHeaderSectionTooLarge */
#define CN__HEADERS_MAX 256        /* header fields: RequestHeaderSectionTooLarge */
#define CN__URI_MAX (16u * 1024)   /* request target: InvalidURI */
#define CN__READ_BUF (16u * 1024)  /* a connection's read buffer while it is served */
#define CN__BODY_BUF (256u * 1024) /* ... grown to this for a body of at least 1 MiB */

typedef struct {
    _Atomic uint64_t status[6]; /* 1xx..5xx, [0] other */
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
    _Atomic uint64_t lat[CN__LAT_BUCKETS + 1]; /* cumulative at render time */
    _Atomic uint64_t lat_sum_us;
    _Atomic uint64_t count;
    _Atomic(cn_metric_t *) duration;      /* cairn_request_duration_seconds{face="http",op=route} */
    _Atomic(cn_metric_t *) loop_answered; /* cairn_http_loop_answered_total{route} */
} cn__route_stats_t;

struct cn_http_server {
    cn_http_config_t cfg;
    char *listen, *log_name, *region, *tls_cert, *tls_key;
    cn_adapter_t adapter; /* name = log_name */
    /* Stand-alone mode (cn_http_server_start): its own network layer. */
    cn_server_t *net;
    pthread_t net_thread;
    bool net_running;
    int port;
    cn_http_route_t routes[CN__MAX_ROUTES];
    char *route_prefix[CN__MAX_ROUTES];
    char *route_name[CN__MAX_ROUTES];
    cn__route_stats_t stats[CN__MAX_ROUTES + 1]; /* last: no route matched */
    size_t n_routes;
    struct {
        void (*fn)(cn_buf_t *, void *);
        void *ctx;
    } metric_src[CN__MAX_METRIC_SOURCES];
    size_t n_metric_src;
    _Atomic uint64_t auth_failures;
    bool started; /* routes are fixed */
};

/* ---- the request head (parse.c) ------------------------------------------
 * llhttp's callbacks copy the request target and the header fields into
 * one arena, each string NUL-terminated; entries hold offsets, because the
 * arena moves as it grows.  Bytes of the body go to on_body as they are
 * parsed; trailer fields after a chunked body are parsed and dropped. */
typedef enum {
    CN__FEED_MORE,  /* every byte used: the message needs more */
    CN__FEED_HEAD,  /* the head is complete (bytes after it not used) */
    CN__FEED_DONE,  /* the message is complete (bytes after it not used) */
    CN__FEED_ERROR, /* refused: err, err_msg; the stream cannot go on */
} cn__feed_t;

typedef struct {
    uint32_t name_off, name_len, val_off, val_len;
} cn__hdr_ent_t;

typedef struct cn__head {
    llhttp_t p;
    cn_buf_t arena;
    uint32_t url_off, url_len;
    cn__hdr_ent_t *ents;
    size_t n, cap;
    cn_http_kv_t *kv;       /* built once the head is complete: n entries */
    int part;               /* 0 none, 1 in a field name, 2 in a value */
    uint64_t head_bytes;    /* bytes of the head seen so far */
    int64_t content_length; /* as declared (llhttp counts its copy down) */
    bool head_done, msg_done, in_trailers;
    cn_s3_err_t err;
    const char *err_msg;
    void (*on_body)(void *ctx, const uint8_t *p, size_t n);
    void *body_ctx;
} cn__head_t;

void cn__head_init(cn__head_t *h, void (*on_body)(void *, const uint8_t *, size_t), void *ctx);
/* Feeds n bytes of the stream; *used is how many were taken (all, unless
 * HEAD, DONE or ERROR).  After HEAD, feed again for the body; after DONE or
 * ERROR, init again for the next message. */
cn__feed_t cn__head_feed(cn__head_t *h, const uint8_t *p, size_t n, size_t *used);
void cn__head_free(cn__head_t *h);
/* After HEAD: the method name, the target (NUL-terminated, in the arena),
 * the version, and the framing llhttp derived. */
const char *cn__head_method(const cn__head_t *h);
const char *cn__head_url(const cn__head_t *h);
bool cn__head_chunked(const cn__head_t *h);
/* Content-Length, or -1 when absent or chunked. */
int64_t cn__head_content_length(const cn__head_t *h);
/* A header's value by name (case-insensitive; the first), or NULL. */
const char *cn__head_header(const cn__head_t *h, const char *name);

/* ---- a connection and its request ------------------------------------------ */
typedef struct cn__hconn {
    cn_http_server_t *srv;
    cn_conn_t *c;
    uint8_t *buf; /* cap bytes while serving; [off, len) unparsed */
    size_t off, len;
    size_t cap;         /* CN__READ_BUF, or CN__BODY_BUF while a large body streams */
    bool filled;        /* the last read filled buf: the client sends faster than we read */
    pthread_mutex_t mu; /* resume_gen, for cn_http_req_resume from any thread */
    pthread_cond_t cv;
    uint64_t resume_gen;
    /* A response in parts (CN_CONN_MORE): its request, kept with buf (and
     * the budget for it) until its last part is written or the connection
     * closes. */
    struct cn_http_req *more;
    bool more_keep;
} cn__hconn_t;

enum {
    CN__RQ_NEW,
    CN__RQ_BODY,
    CN__RQ_DRAIN,
    CN__RQ_DONE
};

typedef enum {
    CN__RB_NONE,
    CN__RB_MEM,    /* mem, mem_len */
    CN__RB_EMPTY,  /* headers only, Content-Length len */
    CN__RB_FD,     /* fd, off, len */
    CN__RB_STREAM, /* read(), len or CN_HTTP_LEN_UNKNOWN */
} cn__rb_kind_t;

typedef struct {
    char *name;
    char *value;
} cn__qparam_t;

struct cn_http_req {
    cn_http_server_t *srv;
    cn__hconn_t *hc;
    cn__head_t head;
    int route; /* index, or -1 */
    char *uri; /* raw URI as received; split at '?' */
    const char *raw_path, *raw_query;
    cn_buf_t path; /* decoded, NUL-terminated */
    cn__qparam_t *q;
    size_t nq;
    const char *method;
    unsigned method_bit;
    int64_t content_length, payload_length;
    uint64_t received; /* decoded payload bytes */
    uint64_t wire_received;
    uint64_t drained;
    uint64_t max_body;
    bool has_body, tls, http10, keep_alive, expect_continue, sent_continue, close_after;
    char *content_encoding;
    /* credential */
    cn_http_auth_kind_t auth_kind;
    cn_s3_err_t auth_err;
    cn_sigv4_payload_t payload;
    /* body */
    int stage;
    int64_t body_start_ms, body_deadline;
    cn_awschunk_t *chunk;
    void *body_sha;     /* EVP_MD_CTX for HASH / DEFERRED */
    bool sha_delegated; /* the handler hashes: body_sha is not updated */
    bool sha_reported;  /* ... and reported sha_report */
    cn_http_cksum_t cksum;
    cn_http_cksum_alg_t cksum_alg;
    bool cksum_trailer;
    cn_s3_err_t body_err;
    bool handler_started;
    uint64_t wait_gen; /* resume_gen when the handler paused or suspended */
    /* response */
    size_t nhdrs;
    bool responded;
    unsigned status;
    uint32_t ctype_off, ctype_len; /* the Content-Type line in rhl; len 0: none */
    struct {
        cn__rb_kind_t kind;
        const uint8_t *mem; /* owned, unless borrowed: then done(ctx) releases it */
        size_t mem_len;
        int fd;
        uint64_t off, len;
        ssize_t (*read)(void *ctx, uint64_t pos, char *buf, size_t max);
        void (*done)(void *ctx);
        void *ctx;
    } rb;
    /* a producer's body in progress (response.c stream_run) */
    struct {
        cn_buf_t head; /* the response head, until it is written */
        char *buf;
        uint64_t pos;
        int64_t start;
        bool chunked;
    } stream;
    uint64_t resp_len;
    void *data;
    int64_t start_ns;
    /* Answered on the network loop (cn__serve_fast): declined when it
     * cannot be answered there without waiting; a worker then serves it
     * from its first byte. */
    bool on_loop, declined;
    /* ---- not cleared for a new request (cn__req_alloc): below here, each
     * field is written before it is read, or its first byte (a string's NUL)
     * or the named member is set by cn__req_alloc.  Clearing them all was
     * 2.4 KiB of memset a request. */
    char peer[64];                     /* [0] = 0; set_client_ip */
    char client_ip[64];                /* [0] = 0; set_client_ip */
    char id[17];                       /* req_new */
    char host_id[48];                  /* req_new */
    char access_key[CN_SIGV4_MAX_KEY]; /* [0] = 0 */
    char auth_detail[160];             /* [0] = 0 */
    cn_sigv4_t sig;                    /* .deferred cleared; cn_sigv4_verify clears the rest */
    uint8_t sha_report[32];            /* read once sha_reported */
    char cksum_expected[CN_CKSUM_B64_LEN + 16]; /* [0] = 0 */
    char cksum_b64[CN_CKSUM_B64_LEN];           /* written by the checksum's final */
    /* The response's header lines, [0, nhdrs): each at rhl + off, len bytes
     * ("Name: value\r\n"; the name name_len bytes).  A name set again keeps
     * its first place and points at its new line (the old one's bytes stay
     * in rhl, unreferenced, until the response is discarded). */
    struct {
        uint32_t off, name_len, len;
    } hdrs[CN__MAX_RESP_HEADERS];
    /* Their bytes; kept with the thread's spare request (cn__req_alloc), so
     * a request's headers cost no allocation once one of its size was seen. */
    cn_buf_t rhl;
};
/* The part of a request that cn__req_alloc clears. */
#define CN__REQ_CLEARED offsetof(cn_http_req_t, peer)

/* request.c */
cn_err_t cn__req_parse_target(cn_http_req_t *r);
/* A new request, cleared as the struct's comment says (NULL: no memory): the
 * thread's spare when it has one, else the heap.  A request struct is about
 * 3 KiB, past malloc's per-thread cache, so a calloc and a free of it each
 * went through the arena's bins (4.5 k instructions of a 4 KiB GET).  The
 * caller owns it; cn__req_free ends it. */
cn_http_req_t *cn__req_alloc(void);
/* Frees what r holds; r itself becomes the calling thread's spare when it
 * has none (each thread keeps one, freed when the thread ends), else is
 * freed.  Accepts NULL. */
void cn__req_free(cn_http_req_t *r);
/* auth.c: the credential and the body's verification set-up */
void cn__auth_decide(cn_http_req_t *r);
cn_s3_err_t cn__body_setup(cn_http_req_t *r);
/* response.c */
cn_err_t cn__framework_error(cn_http_req_t *r, cn_s3_err_t e, const char *message);
/* serve.c: the answer to a failure rc < 0 that the route's on_request or
 * on_body returned: the route's err_of (its adapter's table), else the
 * framework's generic one; CN_S3E_NONE when err_of answered it itself.  A
 * 500 is logged with its cause, which would otherwise be lost. */
cn_s3_err_t cn__handler_err(cn_http_req_t *r, cn_err_t rc);
/* Forgets a response that was built but not sent (its fd closed, its
 * producer's done called) and its headers. */
void cn__resp_discard(cn_http_req_t *r);
/* Sends r's response on its connection; keep is false when the connection
 * closes after it.  A failure leaves the stream unusable: close. */
cn_err_t cn__resp_send(cn_http_req_t *r, bool keep);
/* The next part of a response cn__resp_send (or this) left with
 * CN_CONN_MORE; the same returns. */
cn_err_t cn__resp_resume(cn_http_req_t *r);
/* Ends a response left in parts without writing more (the connection is
 * closing): its producer released. */
void cn__resp_abandon(cn_http_req_t *r);
/* Waits, on the worker, until cn_http_req_resume was called after r's
 * wait_gen was taken, or until deadline (CN_E_TIMEOUT), or the peer is gone
 * (CN_E_CLOSED). */
cn_err_t cn__req_wait_resume(cn_http_req_t *r, int64_t deadline);
/* A transfer that began at start_ms must have moved bytes by this: the
 * listener's I/O floor plus bytes at its rate, from the start (so a body of
 * unknown length keeps the rate on average). */
int64_t cn__rolling_deadline(cn_conn_t *c, int64_t start_ms, uint64_t bytes);
/* "Sun, 06 Nov 1994 08:49:37 GMT" for now, formatted once per second per
 * thread. */
const char *cn__http_date(void);
/* serve.c: the adapter's serve() */
cn_err_t cn__serve(void *cstate, cn_conn_t *c, const uint8_t *head);
/* The adapter's resume(): the next part of the response cn__serve left. */
cn_err_t cn__serve_resume(void *cstate, cn_conn_t *c);
/* At close: a response left in parts is ended and its request freed. */
void cn__serve_abandon(cn__hconn_t *hc);
/* serve.c: the adapter's fast(): a bodiless GET or HEAD whose whole request
 * the loop already holds, offered to a CN_HTTP_ROUTE_LOOP route on the loop
 * thread; 1 answered, 0 declined (nothing consumed, nothing written), < 0
 * close.  Counts cairn_http_loop_answered_total. */
int cn__serve_fast(void *cstate, cn_conn_t *c, const uint8_t *head);
/* CN_HTTP_GET... for a method name, 0 for one the server does not know. */
unsigned cn__method_bit(const char *m);
/* The index of the first route serving method_bit on path, or -1; with r,
 * the route's match(r) must hold too (without it, the answer is a hint:
 * the loop's pool choice before the request is parsed). */
int cn__route_find(const cn_http_server_t *s, unsigned method_bit, const char *path,
                   cn_http_req_t *r);
/* server.c: S3's 503 SlowDown (Retry-After, Connection: close) into out,
 * NUL-terminated; returns its length (cut short below CN__SLOW_DOWN_MAX). */
#define CN__SLOW_DOWN_MAX 512
size_t cn__slow_down(char *out, size_t n);
/* metrics.c */
void cn__metrics_register_builtin(cn_http_server_t *s);
void cn__metrics_record(cn_http_server_t *s, cn_http_req_t *r);

#endif
