/* cairn http: the HTTP/1.1 framework that carries the S3 face (src/s3), the
 * blob operations (src/blobops), health and metrics.  It authenticates every
 * request with the pieces in cairn/sigv4.h and answers errors in the codes of
 * cairn/s3err.h; cairn/xml.h is the XML writer and reader.
 *
 * The server is an adapter on cairn's network layer (cairn/net.h): the
 * layer's loop accepts and holds idle connections, applies admission (the
 * connection table, pending connections per source, the worker share, the
 * memory budget) and hands a connection whose next request has begun to a
 * worker, which parses it with llhttp and runs every handler callback of
 * that request; handlers see only the types here.  Keep-alive, pipelining
 * (one request at a time), Expect: 100-continue, chunked request bodies and
 * HEAD are the framework's.  Request bodies are streamed to the handler
 * piece by piece and never held whole; responses come from memory, from a
 * file (sendfile on plaintext) or from a producer callback.  Authentication
 * is decided by the framework before a handler runs, and every byte of a
 * signed body is verified before the handler is told the body ended.  This
 * module never touches the store or the metadata database itself: handlers
 * do, through their services; and it never blocks the network layer's loop
 * thread.
 */
#ifndef CAIRN_HTTP_H
#define CAIRN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cairn/err.h"
#include "cairn/net.h"
#include "cairn/util.h"
#include "cairn/s3err.h"
#include "cairn/sigv4.h"
#include "cairn/xml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * The server
 * ====================================================================== */

typedef struct cn_http_server cn_http_server_t;
typedef struct cn_http_req cn_http_req_t;

enum {
    CN_HTTP_GET = 1u << 0,
    CN_HTTP_HEAD = 1u << 1,
    CN_HTTP_PUT = 1u << 2,
    CN_HTTP_POST = 1u << 3,
    CN_HTTP_DELETE = 1u << 4,
    CN_HTTP_OPTIONS = 1u << 5,
    CN_HTTP_PATCH = 1u << 6,
    CN_HTTP_ANY = 0x7fu,
};

/* Route flags. */
enum {
    CN_HTTP_ROUTE_EXACT = 1u << 0, /* path must equal prefix, not start with it */
    /* The handler sees failed credentials itself (req auth error set) instead
     * of the framework answering 403 for it. */
    CN_HTTP_ROUTE_OWN_AUTH_ERRORS = 1u << 1,
    /* on_request may run on the network loop (plaintext GET and HEAD
     * without a body, the whole request already read): there it must not
     * block beyond short locks, one metadata read and a page-cache read of
     * a small body (cn_http_req_on_loop tells), and it calls
     * cn_http_req_decline for whatever it cannot answer so, before any
     * effect a second run would repeat.  The framework sends only a success
     * or 304 from memory there; any other answer is discarded and the
     * request served again by a worker, from the start. */
    CN_HTTP_ROUTE_LOOP = 1u << 2,
};

/* What a handler returns from on_body. */
#define CN_HTTP_PAUSE 1 /* data consumed; suspend until cn_http_req_resume() */

/* A route's callbacks.  All run on the worker thread that serves the
 * connection, one request at a time per connection; they may block (the
 * worker is busy meanwhile), within the connection's deadlines.
 *
 * on_request: headers are in and the credential is decided.  Either respond
 *   now (any cn_http_respond_*; the body, if any, is then discarded, and an
 *   Expect: 100-continue is never answered with 100, so a refused upload
 *   costs no body bytes) or return 0 without responding to receive the body
 *   (100 Continue is sent then).  A negative return is a failure, answered
 *   through err_of (the framework's generic table when NULL).
 * on_body: the next piece of the decoded payload (aws-chunked framing removed).
 *   Return 0, CN_HTTP_PAUSE, or a negative value to fail (the framework then
 *   discards the rest, calls on_end with cn_http_req_body_error() set and
 *   answers the failure through err_of).
 *   Pieces may arrive before their chunk signature or the body hash has been
 *   checked: commit nothing before on_end.
 * on_end: the body has ended.  cn_http_req_body_error(req) is NONE when every
 *   byte was verified (payload hash, chunk signatures, trailer checksum,
 *   decoded length); otherwise the handler must discard what it staged.  It
 *   must respond; if it does not, the framework answers the body error (or
 *   InternalError).  Not called when on_request responded.
 * on_cleanup: always called once per request that reached on_request, after
 *   the response is sent or the connection dropped.  Free per-request state.
 * error: formats framework-generated errors for this route (S3 XML when NULL);
 *   it must respond.  code is the S3 code string, status its HTTP status.
 * err_of: the adapter's own error table for a failure rc < 0 that this
 *   route's on_request or on_body returned (optional): the S3 error the
 *   framework then answers through error, mapped with whatever context the
 *   request's handler state holds.  NULL: the framework's generic table
 *   (cn_s3_err_from_cn), which is otherwise kept for failures of its own.
 *   An adapter whose wire vocabulary is not S3's may instead answer the
 *   failure itself and return CN_S3E_NONE; after on_body, that answer is
 *   sent once the rest of the body is discarded, and on_end is not called.
 *   Runs where the failing callback ran (the loop, for on_request of a
 *   CN_HTTP_ROUTE_LOOP route): pure, or respond only. */
typedef struct cn_http_route {
    const char *name;   /* operation family, for metrics ("s3") */
    unsigned methods;   /* CN_HTTP_* mask */
    const char *prefix; /* on the decoded path */
    unsigned flags;
    bool (*match)(const cn_http_req_t *req, void *ctx); /* optional, after prefix */
    int (*on_request)(cn_http_req_t *req, void *ctx);
    int (*on_body)(cn_http_req_t *req, const uint8_t *p, size_t n, void *ctx);
    void (*on_end)(cn_http_req_t *req, void *ctx);
    void (*on_cleanup)(cn_http_req_t *req, void *ctx);
    void (*error)(cn_http_req_t *req, cn_s3_err_t e, const char *message, void *ctx);
    cn_s3_err_t (*err_of)(cn_http_req_t *req, cn_err_t rc, void *ctx);
    void *ctx;
    uint64_t max_body; /* decoded payload cap; 0: server default */
    /* Optional: true when a request of this route only reads (served on the
     * network layer's query pool), false for a mutation or a body (the
     * storage pool), so that stalled uploads never hold up a GET.  Runs on
     * the network loop before the request is parsed, with its method and its
     * raw path as far as it has arrived (it may be cut short): pure and
     * fast.  NULL: GET, HEAD and OPTIONS read. */
    bool (*reads)(const char *method, const char *raw_path, void *ctx);
} cn_http_route_t;

/* The fields marked (stand-alone) apply to cn_http_server_start only; under
 * cn_http_server_adapter the listener's cn_listen_opts_t decides them. */
typedef struct cn_http_config {
    const char *listen;        /* (stand-alone) "127.0.0.1:0", "[::1]:9000", ":9000" */
    const char *log_name;      /* protocol word in the log line; "http" */
    unsigned threads;          /* (stand-alone) workers of each request pool; 0: 8 */
    unsigned max_connections;  /* (stand-alone) connection table; 0: 4096 */
    unsigned max_per_ip;       /* (stand-alone) pending connections of one source; 0: 16 */
    unsigned idle_timeout_s;   /* (stand-alone) between requests; 0: 60 */
    int64_t head_timeout_ms;   /* a request's head, from its first byte; 0: 10000 */
    uint64_t max_body;         /* default decoded body cap; 0: 5 GiB */
    const char *tls_cert_file; /* (stand-alone) PEM; both set → HTTPS (TLS 1.3) */
    const char *tls_key_file;
    bool trust_proxy_headers; /* JAY_TRUST_PROXY_HEADERS: client IP from X-Forwarded-For */
    const char *region;       /* required SigV4 region; NULL: any */
    int64_t max_skew_ms;      /* 0: 15 minutes */
    cn_http_secret_lookup_fn sigv4_lookup; /* NULL: SigV4 credentials are refused */
    /* The same lookup from memory only, for requests answered on the loop:
     * CN_E_AGAIN when it would have to read (the request then goes to a
     * worker).  NULL: no SigV4 request is answered on the loop. */
    cn_http_secret_lookup_fn sigv4_lookup_cached;
    void *sigv4_ctx;
    /* Bearer tokens "id:secret": 0 when valid (the framework compares nothing
     * itself), CN_E_AUTH / CN_E_NOT_FOUND when not. */
    int (*bearer_check)(void *ctx, const char *token_id, const char *secret);
    void *bearer_ctx;
    int64_t (*clock_ms)(void *ctx); /* NULL: cn_wall_ms(); tests pin time */
    void *clock_ctx;
} cn_http_config_t;

/* Fills c with the defaults above (listen "127.0.0.1:0"). */
CN_API void cn_http_config_default(cn_http_config_t *c);

/* Creates a server (not yet listening).  The config's strings are copied.
 * Registers the built-in routes GET /_cairn/health and GET /_cairn/metrics.
 * -ENOMEM, CN_E_INVALID (bad listen address, half a TLS pair). */
CN_API cn_err_t cn_http_server_new(const cn_http_config_t *cfg, cn_http_server_t **out);
/* Adds a route (copied; ctx borrowed).  Routes are tried in registration
 * order after the built-ins; the first match wins.  Only before start.
 * CN_E_LIMIT past 64 routes. */
CN_API cn_err_t cn_http_server_route(cn_http_server_t *s, const cn_http_route_t *r);
/* Adds text to /_cairn/metrics: fn appends Prometheus lines to out. */
CN_API cn_err_t cn_http_server_metrics_source(cn_http_server_t *s,
                                              void (*fn)(cn_buf_t *out, void *ctx), void *ctx);
/* The server as a protocol of a network layer the caller runs (cairnd):
 * *ad and *actx are what cn_server_listen() takes; the listener's options
 * (address, TLS, limits) apply, and the (stand-alone) fields of the config
 * do not.  Routes are fixed from here on.  *ad lives as long as s, which
 * must outlive the network layer's run.  CN_E_INVALID when s was started. */
CN_API cn_err_t cn_http_server_adapter(cn_http_server_t *s, const cn_adapter_t **ad, void **actx);
/* Stand-alone: a network layer of its own (cn_server_t) with this server as
 * its one listener, run on a thread of its own; binds, and logs "listening
 * <log_name> on <host>:<port>".  -errno from bind, CN_E_CORRUPT for an
 * unusable TLS pair, CN_E_INVALID when already started. */
CN_API cn_err_t cn_http_server_start(cn_http_server_t *s);
/* The bound port (after cn_http_server_start). */
CN_API int cn_http_server_port(const cn_http_server_t *s);
/* Stand-alone: stops accepting, lets requests in flight finish (5 s), closes
 * connections, joins the threads.  Idempotent; nothing under
 * cn_http_server_adapter (the caller stops its own network layer). */
CN_API void cn_http_server_stop(cn_http_server_t *s);
/* Stops if needed and frees.  Accepts NULL. */
CN_API void cn_http_server_free(cn_http_server_t *s);

/* ---- request accessors (valid until on_cleanup returns) ----------------- */
CN_API const char *cn_http_req_method(const cn_http_req_t *r);  /* "GET" */
CN_API unsigned cn_http_req_method_bit(const cn_http_req_t *r); /* CN_HTTP_GET ... */
/* The decoded path ("/bucket/key with space"), NUL-terminated; *len when
 * non-NULL (a key may not contain NUL: %00 is refused as InvalidURI). */
CN_API const char *cn_http_req_path(const cn_http_req_t *r, size_t *len);
CN_API const char *cn_http_req_raw_path(const cn_http_req_t *r);  /* as received */
CN_API const char *cn_http_req_raw_query(const cn_http_req_t *r); /* "" when none */
/* Decoded query parameter value ("" for "?acl"); NULL when absent. */
CN_API const char *cn_http_req_query(const cn_http_req_t *r, const char *name);
CN_API bool cn_http_req_has_query(const cn_http_req_t *r, const char *name);
CN_API size_t cn_http_req_query_count(const cn_http_req_t *r);
/* The i-th decoded parameter, in wire order. */
CN_API void cn_http_req_query_at(const cn_http_req_t *r, size_t i, const char **name,
                                 const char **value);
/* A request header by name, case-insensitive; the first when repeated. */
CN_API const char *cn_http_req_header(const cn_http_req_t *r, const char *name);
/* Iterates headers in wire order: fn returns false to stop. */
CN_API void cn_http_req_headers(const cn_http_req_t *r,
                                bool (*fn)(void *ctx, const char *name, const char *value),
                                void *ctx);
/* The TCP peer ("127.0.0.1") and the client IP (the rightmost
 * X-Forwarded-For entry, the one the trusted proxy appended, when the server
 * trusts proxy headers and it is an address; else the peer). */
CN_API const char *cn_http_req_peer(const cn_http_req_t *r);
CN_API const char *cn_http_req_client_ip(const cn_http_req_t *r);
CN_API const char *cn_http_req_id(const cn_http_req_t *r);      /* x-amz-request-id */
CN_API const char *cn_http_req_host_id(const cn_http_req_t *r); /* x-amz-id-2 */
/* Content-Length of the wire body, or -1 when chunked/absent. */
CN_API int64_t cn_http_req_content_length(const cn_http_req_t *r);
/* The payload length the client declared: x-amz-decoded-content-length for
 * aws-chunked bodies, else Content-Length; -1 when unknown. */
CN_API int64_t cn_http_req_payload_length(const cn_http_req_t *r);
/* Payload bytes delivered so far. */
CN_API uint64_t cn_http_req_body_received(const cn_http_req_t *r);
/* Content-Encoding with "aws-chunked" removed (what to store); NULL if none. */
CN_API const char *cn_http_req_content_encoding(const cn_http_req_t *r);
CN_API bool cn_http_req_is_tls(const cn_http_req_t *r);

/* The credential: kind ANONYMOUS when none was presented.  access_key is the
 * token id.  auth_error is NONE unless verification failed (only visible to
 * CN_HTTP_ROUTE_OWN_AUTH_ERRORS routes; others never run). */
CN_API cn_http_auth_kind_t cn_http_req_auth(const cn_http_req_t *r);
CN_API const char *cn_http_req_access_key(const cn_http_req_t *r);
CN_API cn_s3_err_t cn_http_req_auth_error(const cn_http_req_t *r);
CN_API cn_sigv4_payload_t cn_http_req_payload_mode(const cn_http_req_t *r);
/* The body's SHA-256 that a signature covers (x-amz-content-sha256 as a
 * hex value, or a deferred signature's) becomes the handler's to compute, so
 * a handler that hashes the body anyway does not hash it twice: from this
 * call the framework no longer hashes the body, and at its end it checks
 * the digest reported with cn_http_req_body_sha_report instead (none
 * reported: the check fails, as for a wrong digest).  The handler must hash
 * exactly the bytes on_body received.  false, and nothing changes, when
 * the request has no such digest, no body of declared length, or its body
 * has begun.  On the request's worker, from on_request. */
CN_API bool cn_http_req_body_sha_delegate(cn_http_req_t *r);
/* After a delegation: the SHA-256 of every body byte (once all are in). */
CN_API void cn_http_req_body_sha_report(cn_http_req_t *r, const uint8_t sha[32]);

/* After on_end: NONE, or why the body failed verification or decoding. */
CN_API cn_s3_err_t cn_http_req_body_error(const cn_http_req_t *r);
/* The x-amz-checksum-* value the client sent (header or trailer), checked by
 * the framework against the bytes received: alg NONE when none was sent.
 * b64 is the verified value, valid after on_end. */
CN_API cn_http_cksum_alg_t cn_http_req_checksum(const cn_http_req_t *r, const char **b64);

/* Per-request handler state. */
CN_API void cn_http_req_set_data(cn_http_req_t *r, void *data);
CN_API void *cn_http_req_data(const cn_http_req_t *r);
/* Resumes a request whose on_body returned CN_HTTP_PAUSE (its worker waits,
 * within the body's deadline, until then), or whose producer suspended.
 * Any thread, even before the handler has returned. */
CN_API void cn_http_req_resume(cn_http_req_t *r);

/* Largest body answered from memory, with the headers in one writev,
 * rather than by sendfile: past a few pages the copy costs more than the
 * second system call saves.  cn_http_respond_fd reads bodies up to this. */
#define CN_HTTP_INLINE_BODY_MAX (16u * 1024)

/* ---- responses: exactly one respond call per request ------------------- */
/* Sets a response header (copied): one of the same name (any case) set
 * before is replaced, so a handler that starts its answer over does not
 * repeat a field.  x-amz-request-id, x-amz-id-2, Server, Date and the
 * framing (Content-Length, Transfer-Encoding, Connection) are the
 * framework's alone.  -ENOMEM, CN_E_INVALID (one of those, a name with a
 * separator, a value with a line break), CN_E_LIMIT past 64 headers. */
CN_API cn_err_t cn_http_resp_header(cn_http_req_t *r, const char *name, const char *value);
/* Body from memory (copied). */
CN_API cn_err_t cn_http_respond(cn_http_req_t *r, int status, const char *content_type,
                                const void *body, size_t len);
CN_API cn_err_t cn_http_respond_buf(cn_http_req_t *r, int status, const char *content_type,
                                    const cn_buf_t *body);
/* Body from memory the caller lends (len bytes at body, not copied): done(ctx)
 * is called once, when the response is released, and the bytes must stay as
 * they are until then.  On an error nothing is taken (done is not called). */
CN_API cn_err_t cn_http_respond_borrowed(cn_http_req_t *r, int status, const char *content_type,
                                         const void *body, size_t len, void (*done)(void *),
                                         void *ctx);
/* Headers only, with a Content-Length of len (HEAD, or an empty 204/304). */
CN_API cn_err_t cn_http_respond_empty(cn_http_req_t *r, int status, uint64_t len);
/* len bytes of fd from off (sendfile on plaintext).  Takes fd: it is closed
 * when the response is done, on success or failure. */
CN_API cn_err_t cn_http_respond_fd(cn_http_req_t *r, int status, const char *content_type, int fd,
                                   uint64_t off, uint64_t len);
/* A producer: read(ctx, pos, buf, max) returns bytes written (> 0), 0 at the
 * end, or a negative error (the connection is then closed).  len UINT64_MAX
 * sends chunked.  done(ctx) is called once when the response is released. */
#define CN_HTTP_LEN_UNKNOWN UINT64_MAX
CN_API cn_err_t cn_http_respond_stream(cn_http_req_t *r, int status, const char *content_type,
                                       uint64_t len,
                                       ssize_t (*read)(void *ctx, uint64_t pos, char *buf,
                                                       size_t max),
                                       void (*done)(void *ctx), void *ctx);
/* A producer with nothing to send yet (a live feed) calls cn_http_req_suspend
 * and returns CN_HTTP_STREAM_WAIT: the worker then waits until
 * cn_http_req_resume (any thread, strictly after the suspend; it may come
 * before read returns), and read is called again.  A wait gives up, closing
 * the connection, after the listener's I/O floor (30 s) without a resume or
 * once the peer is gone.  Suspend only from inside a producer's read. */
#define CN_HTTP_STREAM_WAIT ((ssize_t)CN_E_AGAIN)
CN_API void cn_http_req_suspend(cn_http_req_t *r);
/* An S3 XML error for e (message NULL: the default), Resource = the path. */
CN_API cn_err_t cn_http_respond_s3_error(cn_http_req_t *r, cn_s3_err_t e, const char *message);
/* True once a respond call succeeded. */
CN_API bool cn_http_req_responded(const cn_http_req_t *r);
/* The status of the response set so far, 0 when none. */
CN_API unsigned cn_http_req_status(const cn_http_req_t *r);
/* True while a CN_HTTP_ROUTE_LOOP route's on_request runs on the network
 * loop. */
CN_API bool cn_http_req_on_loop(const cn_http_req_t *r);
/* On the loop: leave the request to a worker (whatever was answered is
 * discarded; on_cleanup still runs).  Elsewhere a no-op. */
CN_API void cn_http_req_decline(cn_http_req_t *r);

#ifdef __cplusplus
}
#endif
#endif
