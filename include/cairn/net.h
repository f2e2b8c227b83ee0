/* cairn net: listeners, connections, deadlines, admission, worker pools, TLS.
 *
 * Half-sync/half-async.  Event-loop threads (one by default, or one per CPU) hold
 * every idle connection and read request heads without blocking: the first
 * of them also accepts and admits, and hands each connection to the least
 * loaded loop, where it lives until it closes; bounded
 * worker pools by class (handshake, query, storage) run one whole request
 * each, with blocking I/O bounded by deadlines, and hand the connection back.
 * An idle connection holds no worker thread.
 *
 * A protocol plugs in as a cn_adapter_t.  This module knows nothing of what a
 * request means: it never parses a protocol beyond "read head_len bytes", and
 * it never touches storage, metadata or credentials.  It must never block the
 * loop thread on a peer.
 */
#ifndef CAIRN_NET_H
#define CAIRN_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_conn cn_conn_t;     /* opaque: fd, peer, optional TLS, deadlines, budget */
typedef struct cn_server cn_server_t; /* opaque: loop, listeners, pools */

/* Worker pool classes.  Handshakes never run on the request pools, so an
 * unauthenticated peer cannot occupy a request worker. */
enum {
    CN_POOL_HANDSHAKE = 0,
    CN_POOL_QUERY = 1,   /* short metadata reads and writes */
    CN_POOL_STORAGE = 2, /* bodies, blob I/O, durable commits */
    CN_POOL_COUNT = 3
};

#define CN_HEAD_MAX 64   /* largest head_len an adapter may ask for */
#define CN_HELLO_PEEK 64 /* bytes of a hello the loop shows hello_len() */
/* The most of a hello (or of a TLS ClientHello record) the loop waits for
 * before open() runs: a socket's receive buffer holds at least this much. */
#define CN_HELLO_WAIT_MAX 16384
/* The most of a request head the loop holds while it waits for the head's
 * end (cn_adapter_t.head_end). */
#define CN_HEAD_WAIT_MAX 16384

/* ---- the adapter interface ------------------------------------------------
 * All callbacks but busy(), classify(), idle() and fast() run on worker
 * threads; a connection is owned by exactly one thread at a time (its loop
 * while fast() runs), so the per-connection state needs no lock.
 * actx is shared by every connection of the listener: callbacks that touch it
 * must be thread-safe, the loop's included, since with several loops
 * classify(), idle() and fast() run on each of them at once (for different
 * connections); busy() runs on the accepting loop only.  Callbacks must not keep the cn_conn_t pointer past
 * close(). */
typedef struct cn_adapter {
    const char *name; /* "jay", "scribe", ... (for logs) */

    /* Bytes of a request head the loop reads before dispatch (17 for Jay).
     * 0 = dispatch as soon as the connection is readable; serve() then reads
     * everything itself.  At most CN_HEAD_MAX. */
    size_t head_len;

    /* Connection refused by admission (global cap, or the source holds its
     * share of pending connections): write a short refusal on the raw,
     * non-blocking fd BEFORE anything is read, without blocking; the loop
     * closes fd afterwards.  Runs on the loop thread.  May be NULL (close
     * without a word).  Not called on TLS listeners: no TLS session exists
     * yet, so the connection is closed. */
    void (*busy)(void *actx, int fd);

    /* A new connection's protocol handshake, on the handshake pool, after the
     * TLS handshake (if any).  Bound all I/O by cn_conn_handshake_deadline(c).
     * May call cn_conn_set_principal().  On success *cstate is the
     * per-connection state handed to every later callback.  An error closes
     * the connection (close() is NOT called: free what you allocated). */
    cn_err_t (*open)(void *actx, cn_conn_t *c, void **cstate);

    /* Optional, for a protocol whose client speaks first: how many bytes
     * from the start of the stream open() reads before it can answer, judged
     * from the first `have` of them (1 to CN_HELLO_PEEK).  Return a number
     * <= have when those bytes decide the answer already (a refusal), else
     * the total open() will read (a lower bound while have is too short to
     * tell).  On a plaintext listener the loop hands the connection to the
     * handshake pool only once that many bytes have arrived (or
     * CN_HELLO_WAIT_MAX, or the peer is gone), so a peer that dribbles its
     * hello holds no worker, only its slot until the handshake deadline.
     * Under TLS the bytes are encrypted: the loop waits for each of the
     * peer's TLS flights a whole record at a time (any listener), and with
     * hello_len set, once TLS is up, for the record that carries the hello
     * before open() runs.  Runs on the loop thread: pure, fast.  NULL:
     * open() runs as soon as the first byte (or, under TLS, TLS) is here. */
    size_t (*hello_len)(const uint8_t *p, size_t have);

    /* Optional, for an adapter that reads its own requests (head_len 0):
     * the length of the request head that begins p[0..n), or 0 while its
     * end has not arrived.  The loop reads a request's bytes (plaintext or
     * TLS, at most CN_HEAD_WAIT_MAX) until this finds the end, and only
     * then hands it to a worker, so a client that dribbles its head holds
     * no worker.  A head that is longer, or not whole head_wait_ms after its
     * first byte arrived, goes to a worker as it is (which answers it: see
     * cn_conn_request_start_ms).  Runs on the loop thread: pure, fast. */
    size_t (*head_end)(const uint8_t *p, size_t n);
    int64_t head_wait_ms; /* with head_end: > 0 */

    /* Picks the pool for a request from its head: CN_POOL_QUERY or
     * CN_POOL_STORAGE.  Runs on the loop thread: pure, fast, no I/O.  When
     * head_len is 0, head is the first bytes of the request that have
     * arrived (at least 1, at most CN_HEAD_MAX - 1), NUL-terminated and not
     * taken from the stream (serve() reads them again), or NULL under TLS.
     * Any other value means CN_POOL_STORAGE; a NULL classify sends every
     * request to the storage pool. */
    int (*classify)(void *cstate, const uint8_t *head);

    /* One whole request on a worker: read the rest of it, answer it.  head
     * holds head_len bytes (NULL when head_len is 0), valid for this call.
     * Returns 0 to keep the connection (it goes back to the loop, which
     * waits for the next head), or < 0 to close it.  Use the cn_conn_* I/O
     * helpers with deadlines; reserve body memory with
     * cn_conn_budget_reserve() before allocating it. */
    cn_err_t (*serve)(void *cstate, cn_conn_t *c, const uint8_t *head);

    /* Optional: the next part of a reply written in parts.  serve() (or
     * resume()) may return CN_CONN_MORE instead of 0 after a cn_conn_reply
     * whose rest went to the loop (cn_conn_reply_pending): the worker goes
     * back to the pool, the loop writes that rest as the client reads, and
     * then (not reading a next request) hands the connection to a worker of
     * the same pool, through the same shares, which calls resume().  When
     * the reply was all written at once, resume() is called on the same
     * worker straight away.  Returns as serve() does.  A connection closed
     * meanwhile (deadline, stop, peer gone) gets close() only, so cstate
     * must own whatever the next part needs. */
    cn_err_t (*resume)(void *cstate, cn_conn_t *c);

    /* The connection is going away (peer closed, idle timeout, error,
     * eviction, shutdown).  Free cstate.  Runs on whichever thread owns the
     * connection; the socket may already be unusable. */
    void (*close)(void *cstate);

    /* An idle connection reached its idle deadline (now_ms, cn_mono_ms):
     * return a later monotonic deadline to keep it waiting, or 0 to close it
     * as usual.  Lets an adapter count inactivity over a group of
     * connections (a Scribe session).  Runs on the loop thread: fast, no
     * I/O, no blocking beyond a short mutex.  May be NULL (close). */
    int64_t (*idle)(void *cstate, int64_t now_ms);

    /* Optional, plaintext only: a request the loop answers itself, so that
     * a short read costs no hand-off to a worker and back.  With head_len 0
     * it is offered only whole heads, so head_end must be set too.  Runs on the loop
     * thread with head complete; the bytes after it that are already read
     * are seen with cn_conn_peek().  Return 0 to decline (nothing consumed,
     * nothing written: the request goes to a worker as usual), 1 when the
     * request was consumed and answered, < 0 to close the connection.
     * While it runs, cn_conn_read_* take only buffered bytes (CN_E_AGAIN
     * past them), writes never wait (what the socket does not take is kept,
     * within the memory budget, and written out by a worker with the usual
     * deadline), and bodies over 16 KiB are refused (CN_E_UNSUPPORTED).  It
     * must not block beyond short locks, a metadata read and a page-cache
     * read of a small file.  May be NULL. */
    int (*fast)(void *cstate, cn_conn_t *c, const uint8_t *head);

    /* An idle connection (between requests, after the first) counts as
     * pending again: against its source's pending share, and evictable as
     * the oldest pending one when the table is full (the SAU2 listener:
     * docs/protocol/sau2.md section 11).  false: pending only until its
     * first request. */
    bool idle_pending;
} cn_adapter_t;

/* serve()/resume(): the reply continues (cn_adapter_t.resume). */
#define CN_CONN_MORE 1
/* How long a reply in parts waits for a client to take a part before it
 * hands the rest to the loop (cn_conn_reply_settle): a fast client empties
 * a socket buffer well within it. */
#define CN_CONN_PART_WAIT_MS 2

/* ---- limits -----------------------------------------------------------------
 * Admission and deadlines, per listener.  cn_limits_default() fills the values
 * of the Jay/Scribe contracts; 0 in a count or byte field means "no limit"
 * except where noted. */
typedef struct cn_limits {
    unsigned max_conns;               /* 1000: connection table size; at the cap the
                                           oldest pending connection is evicted, or, when
                                           none is pending, the newcomer gets busy() */
    unsigned max_pending_per_source;  /* 16: pending connections one source may hold
                                           (an IPv6 /64 is one source); more -> busy() */
    unsigned max_conns_per_principal; /* 0 (off): connections one principal may hold,
                                           enforced only by an adapter that binds with
                                           cn_conn_claim_principal() (Scribe protocol 4:
                                           64); cn_conn_set_principal() never refuses */
    uint64_t budget_bytes;            /* 128 MiB: request-body memory, whole listener */
    uint64_t budget_per_conn;         /* 16 MiB: one connection's share */
    uint64_t budget_per_principal;    /* 32 MiB: all connections of one principal */
    uint64_t budget_anonymous;        /* 0 (off): all connections without a principal
                                           together (Scribe protocol 4: 64 MiB) */
    int64_t handshake_ms;             /* 10000: accept -> TLS + open() done (must be > 0) */
    int64_t idle_ms;                  /* 60000: between requests (must be > 0) */
    int64_t io_floor_ms;              /* 30000: cn_conn_deadline_for() floor */
    uint64_t io_rate_bps;             /* 1000000: allowance per byte of transfer */
    unsigned worker_share_pct;        /* 50: the worker share — the requests one principal
                                           (or, before one is bound, one source) may have on
                                           the query pool and on the storage pool at once, in
                                           percent of that pool's workers (at least 1); its
                                           further requests wait in the loop, unread and
                                           holding no worker, until one of its own finishes.
                                           0 or 100: no share (a key may take every worker).
                                           At most 100. */
} cn_limits_t;

CN_API void cn_limits_default(cn_limits_t *l);

/* ---- server ---------------------------------------------------------------- */
typedef struct cn_server_config {
    unsigned workers[CN_POOL_COUNT];   /* threads per pool: 8, 16, 16 */
    unsigned queue_len[CN_POOL_COUNT]; /* bounded queue per pool: 256 each; when full, the
                                           connection waits in the loop (not read further) */
    int64_t grace_ms;                  /* 5000: in-flight requests get this long at shutdown */
    unsigned loops;                    /* event loops: 1 (default) = one loop, which accepts
                                           and serves; 0 = the online CPUs, at most
                                           CN_NET_LOOPS_AUTO_MAX; at most CN_NET_LOOPS_MAX
                                           (cairnd sets 0: docs/performance.md).  Admission,
                                           budgets, the worker share and the metrics are the
                                           same whatever the count: they are per listener */
    bool handle_signals;               /* SIGTERM/SIGINT -> graceful stop (signalfd), and
                                           SIGPIPE ignored process-wide.  Blocks SIGTERM and
                                           SIGINT in the calling thread, so create the server
                                           before starting other threads. */
} cn_server_config_t;

#define CN_NET_LOOPS_AUTO_MAX 8
#define CN_NET_LOOPS_MAX 64

CN_API void cn_server_config_default(cn_server_config_t *cfg);

/* Creates a server and starts its worker pools.  *out owned by the caller
 * (cn_server_destroy).  Errors: CN_E_INVALID, -errno. */
CN_API cn_err_t cn_server_create(const cn_server_config_t *cfg, cn_server_t **out);

/* Requests waiting now in each worker pool's queue (not yet taken by a
 * worker), summed over every server of the process: depth[CN_POOL_HANDSHAKE
 * .. CN_POOL_STORAGE].  Takes each queue's mutex in turn: for a sampler
 * (the console's metrics ring), never a request path.  Any thread. */
CN_API void cn_net_queued(uint64_t depth[CN_POOL_COUNT]);
/* "handshake", "query", "storage"; "unknown" out of range. */
CN_API const char *cn_net_pool_name(int pool);

typedef struct cn_listen_opts {
    const char *addr;            /* "host:port", "[v6]:port"; port 0 = ephemeral */
    const char *tls_cert;        /* PEM certificate chain; with tls_key enables TLS 1.3 */
    const char *tls_key;         /* PEM private key */
    bool allow_plaintext_public; /* permit plaintext on a non-loopback address */
    cn_limits_t limits;
    /* TLS listeners only.  tls_pq_only: X25519MLKEM768 alone (SAU2, Scribe
     * protocol 4 always; Jay and HTTP when cairnd's --tls-groups says pq-only),
     * else the classical groups with the hybrid one first.  tls_client_cert: ask
     * for an optional client certificate; the handshake accepts any one whose
     * key the peer proves, and the adapter judges it (cn_conn_peer_cert), so
     * that a refusal can be the protocol's answer rather than a TLS alert. */
    bool tls_pq_only;
    bool tls_client_cert;
} cn_listen_opts_t;

/* Binds a listener that speaks adapter ad (borrowed; must outlive the server)
 * with context actx (borrowed).  Logs "listening <ad->name> on <host>:<port>"
 * with the bound port (IPv6 hosts in brackets) at info level.  Errors:
 * CN_E_INVALID (bad address, bad adapter, bad limits), CN_E_DENIED (plaintext
 * on a non-loopback address without allow_plaintext_public), CN_E_CORRUPT
 * (certificate/key unusable), -errno (bind, listen).  A message naming the
 * reason is logged.  Call before cn_server_run(), from the creating thread. */
CN_API cn_err_t cn_server_listen(cn_server_t *s, const cn_adapter_t *ad, void *actx,
                                 const cn_listen_opts_t *o);

/* Bound address of the i-th listener (in cn_server_listen order), for tests
 * and logs.  Returns CN_E_NOT_FOUND past the end. */
CN_API cn_err_t cn_server_listener_addr(const cn_server_t *s, size_t i, struct sockaddr_storage *ss,
                                        socklen_t *len);

/* Runs the event loop on the calling thread until cn_server_stop() (or a
 * signal with handle_signals).  Then shuts down gracefully: listeners closed
 * (new connections refused), idle connections closed, in-flight requests get
 * grace_ms to finish, then their sockets are shut down; returns once every
 * connection is closed and the workers have stopped.  Returns 0, or -errno if
 * the loop itself failed.  Call once. */
CN_API cn_err_t cn_server_run(cn_server_t *s);

/* Asks the loop to stop.  Any thread; async-signal-safe. */
CN_API void cn_server_stop(cn_server_t *s);

/* True once a stop was requested.  Any thread. */
CN_API bool cn_server_stopping(const cn_server_t *s);

/* Frees a server that is not running (never run, or cn_server_run returned).
 * Accepts NULL. */
CN_API void cn_server_destroy(cn_server_t *s);

/* ---- addresses ----------------------------------------------------------------
 * Parses "host:port" / "[v6]:port" where host is a numeric IPv4 or IPv6
 * address or "localhost" (127.0.0.1); port 0..65535.  Errors: CN_E_INVALID.
 * No name resolution, so it is usable to validate a flag. */
CN_API cn_err_t cn_net_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* Formats as "1.2.3.4:5" or "[::1]:5" into out (at least CN_NET_ADDR_LEN). */
#define CN_NET_ADDR_LEN 64
CN_API void cn_net_addr_format(const struct sockaddr *sa, char out[CN_NET_ADDR_LEN]);
/* True for 127.0.0.0/8, ::1 and v4-mapped loopback. */
CN_API bool cn_net_addr_is_loopback(const struct sockaddr *sa);

/* ---- deadlines ----------------------------------------------------------------
 * Deadlines are absolute CLOCK_MONOTONIC milliseconds (cn_mono_ms()). */

/* now + the listener's floor (30 s) + bytes at its rate (1 MB/s); saturates.
 * Any thread that owns c. */
CN_API int64_t cn_conn_deadline_for(const cn_conn_t *c, uint64_t bytes);
/* The deadline open() must finish by (accept time + handshake_ms). */
CN_API int64_t cn_conn_handshake_deadline(const cn_conn_t *c);
/* When the loop saw the first byte of the request being served (cn_mono_ms),
 * for an adapter with head_end; else now. */
CN_API int64_t cn_conn_request_start_ms(const cn_conn_t *c);

/* ---- blocking I/O for the worker that owns c -------------------------------------
 * All return 0 or: CN_E_TIMEOUT (deadline passed; the stream is now
 * desynchronised, close it), CN_E_CLOSED (peer closed or reset, or the
 * connection was evicted / shut down), -errno.  Under TLS they go through
 * the TLS session. */

/* Reads exactly n bytes.  CN_E_CLOSED on EOF before n. */
CN_API cn_err_t cn_conn_read_full(cn_conn_t *c, void *buf, size_t n, int64_t deadline);
/* Reads at least 1 and at most n bytes into buf; *got = bytes read. */
CN_API cn_err_t cn_conn_read_some(cn_conn_t *c, void *buf, size_t n, size_t *got, int64_t deadline);
/* Reads and discards n bytes (a body the adapter will not consume). */
CN_API cn_err_t cn_conn_drain(cn_conn_t *c, uint64_t n, int64_t deadline);
CN_API cn_err_t cn_conn_write_all(cn_conn_t *c, const void *buf, size_t n, int64_t deadline);
/* Writes every byte of iov[0..iovcnt) (iovcnt <= IOV_MAX); iov is not modified. */
CN_API cn_err_t cn_conn_writev(cn_conn_t *c, const struct iovec *iov, int iovcnt, int64_t deadline);
/* Sends len bytes of fd from offset off: sendfile(2) on plaintext (no copy
 * through the process; after a short send it waits for the socket before the
 * next call), pread + TLS write under TLS.  CN_E_LENGTH_MISMATCH
 * when the file ends before len bytes (some bytes may have been sent: close). */
CN_API cn_err_t cn_conn_sendfile(cn_conn_t *c, int fd, uint64_t off, uint64_t len,
                                 int64_t deadline);
/* Moves exactly n bytes from the stream socket src (another server's, read
 * by no one else meanwhile) to c, without copying them through user space
 * (splice(2) through a pipe), in pieces as they arrive: a wait for src is
 * bounded by src_idle_ms, a wait for c by deadline.  A worker's plaintext
 * connection only: CN_E_UNSUPPORTED, nothing moved, under TLS or on the
 * loop.  CN_E_CLOSED when src ends or fails first; else as
 * cn_conn_sendfile.  On any error some bytes may have moved. */
CN_API cn_err_t cn_conn_splice_from(cn_conn_t *c, int src, uint64_t n, int src_idle_ms,
                                    int64_t deadline);
/* A relay to c through the calling thread's pipe (cn_conn_splice_from's),
 * for a stream whose bytes come partly from a socket by splice(2) and
 * partly from user space: both go into the pipe in order, and the pipe goes
 * to c in one splice when it fills, when the source has no more for now, or
 * on cn_conn_relay_flush, so that an object's head and body (or several
 * objects) leave in one call.  Bytes held in the pipe have not been sent.
 * begin, then any writes and splices, flush, end; a worker's plaintext
 * connection only (as cn_conn_splice_from); the thread relays nothing else
 * in between.  Errors as cn_conn_splice_from; after one, end the relay and
 * close c (some bytes may have moved, some may be lost). */
typedef struct cn_conn_relay {
    cn_conn_t *c;
    void *pipe;  /* the thread's pipe */
    size_t held; /* bytes in it, not yet sent */
    bool kept;   /* the pipe is the thread's kept one */
} cn_conn_relay_t;
/* Starts a relay to c (a pending reply's rest is sent first).
 * CN_E_UNSUPPORTED under TLS or on the loop, nothing done. */
CN_API cn_err_t cn_conn_relay_begin(cn_conn_t *c, cn_conn_relay_t *r, int64_t deadline);
/* Adds n bytes at p (copied into the pipe) after what it holds. */
CN_API cn_err_t cn_conn_relay_write(cn_conn_relay_t *r, const void *p, size_t n, int64_t deadline);
/* Adds exactly n bytes from the stream socket src, as cn_conn_splice_from
 * takes them, after what the pipe holds: never a wait for src while the
 * pipe holds bytes (they are sent first). */
CN_API cn_err_t cn_conn_relay_splice(cn_conn_relay_t *r, int src, uint64_t n, int src_idle_ms,
                                     int64_t deadline);
/* Sends what the pipe holds to c. */
CN_API cn_err_t cn_conn_relay_flush(cn_conn_relay_t *r, int64_t deadline);
/* Lets go of the pipe: one still holding bytes (after an error) is closed,
 * the thread's next relay makes a fresh one.  Begun or not, once. */
CN_API void cn_conn_relay_end(cn_conn_relay_t *r);
/* Sends head (a response header, head_len bytes) and then len bytes of fd
 * from off, as one stream: a small body (up to 16 KiB) is read and written
 * with the head in one call, a larger one follows the head by sendfile(2)
 * with the head held back (MSG_MORE) so that they leave in full segments.
 * Errors as cn_conn_sendfile; on any error some bytes may have been sent. */
CN_API cn_err_t cn_conn_send_head_file(cn_conn_t *c, const void *head, size_t head_len, int fd,
                                       uint64_t off, uint64_t len, int64_t deadline);

/* The last bytes of a reply, which a client that stops reading must not hold
 * a worker for: iov[0..iovcnt) (iovcnt <= CN_CONN_REPLY_IOV; not modified),
 * then len bytes of fd from off (none when len is 0; fd is only borrowed).
 * What the socket takes now is written at once, so a reply that fits the
 * socket buffer costs what cn_conn_writev / cn_conn_send_head_file cost
 * (a small file body is read and written with the head in one call).
 * When the socket is full, what is left is handed to the connection's
 * event loop: the unsent bytes copied (counted in the listener's memory
 * budget until written), the file range on a duplicate of fd.  The call
 * then returns 0 at once; the loop writes the rest as the peer reads, by
 * deadline (past it the connection is closed), after serve() returns, and
 * only then reads the next request, or closes the connection when serve()
 * returned < 0.  So nothing else may be written to c after it (a later
 * write first finishes the rest, blocking, to keep the stream in order).
 * Under TLS the same holds: the rest starts with the bytes of the write that
 * had to wait, and the loop reads a file range in 64 KiB pieces.  On
 * the loop (fast()), or when the budget or a descriptor is refused, the
 * worker writes it all itself, with the deadline, as before.
 * Errors as cn_conn_sendfile; on any error some bytes may have been sent. */
#define CN_CONN_REPLY_IOV 8
CN_API cn_err_t cn_conn_reply(cn_conn_t *c, const struct iovec *iov, int iovcnt, int fd,
                              uint64_t off, uint64_t len, int64_t deadline);
/* True when a reply's rest was handed to the loop (cn_conn_reply) and is not
 * written yet.  The owner of c. */
CN_API bool cn_conn_reply_pending(const cn_conn_t *c);
/* Gives a pending reply's rest wait_ms to go: the worker writes what the
 * client takes meanwhile, and when it took it all, nothing is pending any
 * more.  So a reply in parts (CN_CONN_MORE) to a client that reads as fast
 * as it is written costs no hand-off to the loop and back per part, and a
 * stalled one holds the worker wait_ms per part.  CN_OK (pending or not:
 * see cn_conn_reply_pending), or the write's error. */
CN_API cn_err_t cn_conn_reply_settle(cn_conn_t *c, int wait_ms);

/* The bytes already read past the request head (plaintext read-ahead): their
 * count, *p pointing at them; valid until the next read.  For fast(). */
CN_API size_t cn_conn_peek(const cn_conn_t *c, const uint8_t **p);
/* Gives back n bytes of p that the adapter read past the end of its request
 * (a pipelined next request): they are read again, before anything else of
 * the stream, by the next read of c, and the loop dispatches the next
 * request at once, without waiting for the socket.  Copied.  The owner of c
 * (a worker), before serve() returns.  Errors: -ENOMEM, CN_E_INVALID. */
CN_API cn_err_t cn_conn_unread(cn_conn_t *c, const void *p, size_t n);
/* True when the socket was reset or closed both ways (by the peer, or by the
 * server at the end of its grace period), or the connection was evicted.
 * Never blocks: for a worker that waits on something other than its peer (a
 * live feed) and must give up once nobody can be answered. */
CN_API bool cn_conn_hung_up(const cn_conn_t *c);
/* True while fast() runs on the loop thread for c. */
CN_API bool cn_conn_on_loop(const cn_conn_t *c);

/* ---- identity of the peer -------------------------------------------------------- */
/* The TCP peer as text ("192.0.2.1", "2001:db8::1"; no port), valid while c
 * lives.  This is the address for policy by source IP: no proxy header. */
CN_API const char *cn_conn_peer(const cn_conn_t *c);
/* The TCP peer as a sockaddr (with port); valid while c lives. */
CN_API const struct sockaddr *cn_conn_peer_sa(const cn_conn_t *c, socklen_t *len);
/* True when the connection runs over TLS. */
CN_API bool cn_conn_is_tls(const cn_conn_t *c);
/* The client certificate the TLS peer presented and proved the key of (only
 * on a listener with tls_client_cert), NOT verified against any CA: the
 * adapter must.  Borrowed, valid while c lives; NULL when none. */
struct x509_st;
CN_API struct x509_st *cn_conn_peer_cert(const cn_conn_t *c);
/* A process-unique connection number, for logs. */
CN_API uint64_t cn_conn_id(const cn_conn_t *c);

/* Binds the connection to a principal (an account or token id: never a
 * secret): its requests then count against the principal's worker share and
 * its budget reservations against budget_per_principal.  It never refuses a
 * connection for the number the principal already holds: a refusal decided
 * after authentication cannot be the "busy" a protocol answers before it
 * (Jay's ServerBusy means no credential was examined).  A protocol that
 * authenticates once calls it from open(); one that authenticates each
 * request (HTTP) calls it from serve() with the request's verified
 * principal, or NULL / "" for an anonymous one (then the connection counts
 * per source again).  Rebinding moves the connection's reservations at
 * once; the worker share follows from the connection's next request (the
 * request in progress stays counted where it was dispatched).  The same
 * key again is a no-op that takes no lock.  The owning worker, in open()
 * or serve().  Errors: -ENOMEM (nothing changed). */
CN_API cn_err_t cn_conn_set_principal(cn_conn_t *c, const char *key);
/* cn_conn_set_principal() for a protocol whose contract has a busy answered
 * before authentication completes (Scribe protocol 4's "too many concurrent
 * connections for this identity"): CN_E_BUSY, nothing changed, when key
 * already holds the listener's max_conns_per_principal connections (c
 * itself not counted; 0 = no cap).  Errors: CN_E_BUSY, -ENOMEM. */
CN_API cn_err_t cn_conn_claim_principal(cn_conn_t *c, const char *key);

/* Anonymous-request permits (Scribe protocol 4's handshake admission): an
 * adapter takes one for an anonymous caller's handshake work, so that
 * anonymous callers together occupy at most half the handshake pool's
 * workers (at least 1) of a listener and signed-in ones always find one.
 * CN_E_BUSY when none is left (nothing taken); taking a second one on c is
 * a no-op.  Released by cn_conn_anon_permit_release, or at the close.
 * Thread: the owner of c. */
CN_API cn_err_t cn_conn_anon_permit_take(cn_conn_t *c);
CN_API void cn_conn_anon_permit_release(cn_conn_t *c);

/* ---- request-body memory budget ----------------------------------------------------
 * Reserve BEFORE allocating; release when the request completes or is
 * cancelled.  Whatever is still reserved when the connection closes is
 * released then.  Thread: the owner of c.  Errors: CN_E_BUSY when the
 * connection's, the principal's, the listener's or (for a connection with
 * no principal) the anonymous share would be exceeded (nothing reserved;
 * refuse the request, do not wait). */
CN_API cn_err_t cn_conn_budget_reserve(cn_conn_t *c, uint64_t n);
/* Releases n bytes (clamped to what c holds). */
CN_API void cn_conn_budget_release(cn_conn_t *c, uint64_t n);

/* True once the server is shutting down: long streaming loops may stop
 * taking more work; the request in progress should still finish. */
CN_API bool cn_conn_stopping(const cn_conn_t *c);

#ifdef __cplusplus
}
#endif
#endif
