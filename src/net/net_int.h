/* Internals shared by the files of src/net.  Never included from another module.
 *
 * Ownership: a connection belongs to exactly one thread at a time, its loop
 * or one worker; it changes hands only through a pool queue (loop -> worker)
 * or its loop's return list (worker -> loop, and acceptor -> loop for a new
 * connection), both mutex-guarded, which also orders every field write
 * before the other thread reads it.  A connection lives on one loop (c->loop)
 * for its whole life.  The admission tables, the all-connections list and the
 * budget counters of every listener are guarded by the one server mutex
 * srv->mu; a loop may shutdown(2) the socket of a connection it does not own
 * while holding mu (the owner closes the fd, and only after unlinking under
 * mu, so the fd cannot be reused under it).  The worker share (the busy
 * counts and wait lists of cn__count_ent_t, and every loop's ready list) is
 * guarded by srv->share_mu, taken after mu when both are held.
 */
#ifndef CN_NET_INT_H
#define CN_NET_INT_H

#include "cairn/crypto.h"
#include "cairn/metrics.h"
#include "cairn/net.h"
#include "cairn/util.h"

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

/* ---- event backend (loop_epoll.c), after redis ae's aeApi* -------------- */
enum {
    CN__EV_READ = 1,
    CN__EV_WRITE = 2,
    CN__EV_ERROR = 4,
    CN__EV_ONESHOT = 8, /* add/mod only: disarmed once an event is reported */
    CN__EV_EDGE = 16    /* add/mod only: reported as bytes arrive, not while they wait */
};
typedef struct cn__poll cn__poll_t;
typedef struct cn__poll_event {
    void *ptr;
    int mask;
} cn__poll_event_t;
cn_err_t cn__poll_create(int max_events, cn__poll_t **out);
void cn__poll_free(cn__poll_t *p);
cn_err_t cn__poll_add(cn__poll_t *p, int fd, int mask, void *ptr);
cn_err_t cn__poll_mod(cn__poll_t *p, int fd, int mask, void *ptr);
void cn__poll_del(cn__poll_t *p, int fd);
/* Waits up to timeout_ms (-1 = forever); returns the number of events (>= 0)
 * written to ev, or -errno (never -EINTR). */
int cn__poll_wait(cn__poll_t *p, cn__poll_event_t *ev, int max, int timeout_ms);
/* Test hook: p's every later wait fails (its descriptor is replaced by one
 * that is not an epoll set; a wait in progress ends normally).  Tests only. */
void cn__poll_break(cn__poll_t *p);

/* ---- counting table (admit.c): source -> pending count, principal -> conns ---- */
typedef struct cn__count_ent {
    struct cn__count_ent *next;
    uint64_t hash;
    unsigned count; /* (mu) */
    unsigned conns; /* connections bound to it as their principal (mu) */
    uint64_t bytes; /* principal budget in use (mu) */
    /* Worker share (share_mu): requests of this principal (or anonymous
     * source) on each request pool, and the connections (of any loop) whose
     * next request waits in their loop for one of them to finish.  While
     * busy is non-zero a connection holding the entry is in flight, so the
     * entry cannot be freed under a loop. */
    unsigned busy[CN_POOL_COUNT];
    cn_conn_t *wait_head[CN_POOL_COUNT], *wait_tail[CN_POOL_COUNT];
    size_t klen;
    uint8_t key[];
} cn__count_ent_t;

#define CN__COUNT_BUCKETS 256
typedef struct cn__count_tab {
    cn__count_ent_t *b[CN__COUNT_BUCKETS];
} cn__count_tab_t;

cn__count_ent_t *cn__count_get(cn__count_tab_t *t, const void *key, size_t klen, bool create);
void cn__count_put(cn__count_tab_t *t, cn__count_ent_t *e); /* frees e when unused */
void cn__count_clear(cn__count_tab_t *t);

/* ---- bounded FIFO of pointers (pool.c) -------------------------------------- */
/* A worker with nothing to do: pushed on the queue's idle stack, it sleeps on
 * its own semaphore until an item is handed to it directly. */
typedef struct cn__idle {
    struct cn__idle *next;
    void *item; /* set under mu by the pusher; NULL = closed */
    sem_t sem;
} cn__idle_t;

typedef struct cn__queue {
    pthread_mutex_t mu;
    void **ring;
    size_t cap, head, len;
    cn__idle_t *idle; /* LIFO: the most recently idle worker is warmest */
    bool closed;
} cn__queue_t;

cn_err_t cn__queue_init(cn__queue_t *q, size_t cap);
void cn__queue_destroy(cn__queue_t *q);
/* Hands item to an idle worker, else queues it.  CN_E_BUSY when the ring is
 * full, CN_E_SHUTDOWN when closed. */
cn_err_t cn__queue_push(cn__queue_t *q, void *item);
/* Blocks until an item or close; NULL once closed and empty.  self is the
 * calling worker's idle record (its semaphore initialised), used only while
 * the call sleeps. */
void *cn__queue_pop(cn__queue_t *q, cn__idle_t *self);
void cn__queue_close(cn__queue_t *q);
/* Items waiting in the ring now (handed-over ones excluded); takes mu. */
size_t cn__queue_len(cn__queue_t *q);

typedef struct cn__pool {
    cn__queue_t q;
    pthread_t *threads;
    unsigned nthreads;
    void (*run)(void *arg, void *item);
    void *arg;
    char name[16];
} cn__pool_t;

cn_err_t cn__pool_start(cn__pool_t *p, const char *name, unsigned nthreads, size_t qcap,
                        void (*run)(void *arg, void *item), void *arg);
/* Closes the queue (workers finish what is queued), joins, frees.  Idempotent. */
void cn__pool_stop(cn__pool_t *p);

/* ---- metrics (server.c): one set per listener, labelled listener=<adapter
 * name>, so every face is counted here the same way ---------------------------- */
typedef enum {
    CN__REFUSE_LIMIT,      /* connection table full: refused or evicted */
    CN__REFUSE_PER_SOURCE, /* the source holds its share of pending connections */
    CN__REFUSE_MEMORY,     /* a body reservation over the memory budget */
    CN__REFUSE_DEADLINE,   /* no handshake / first request before its deadline */
    CN__REFUSE_COUNT
} cn__refuse_t;

typedef struct cn__net_metrics {
    cn_metric_t *open, *accepted, *bytes_in, *bytes_out;
    cn_metric_t *loop_answered; /* requests the loop answered itself (fast()) */
    cn_metric_t *refused[CN__REFUSE_COUNT];
} cn__net_metrics_t;

/* Registers the listener's series in the process registry (NULL handles on
 * failure: the listener then simply is not counted). */
void cn__net_metrics_init(cn__net_metrics_t *m, const char *listener);

/* ---- listeners, connections ------------------------------------------------ */
enum {
    CN__SRC_LISTENER = 1,
    CN__SRC_CONN,
    CN__SRC_WAKE,
    CN__SRC_SIGNAL
};

typedef struct cn__listener {
    int kind; /* CN__SRC_LISTENER */
    int fd;
    cn_server_t *srv;
    const cn_adapter_t *ad;
    void *actx;
    SSL_CTX *tls;
    cn_limits_t lim;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    /* guarded by srv->mu */
    unsigned nconns; /* connections holding a slot */
    uint64_t budget_used;
    uint64_t budget_anon;    /* the part of budget_used held by connections without a principal */
    unsigned anon_permits;   /* anonymous-request permits taken (cn_conn_anon_permit_take) */
    cn__count_tab_t sources; /* pending connections per source */
    cn__count_tab_t principals;
    cn__count_tab_t anon;             /* worker-share keys of connections without a principal */
    unsigned share[CN_POOL_COUNT];    /* requests one key may have on each pool; 0 = any */
    cn_conn_t *pend_head, *pend_tail; /* pending, oldest first */
    /* acceptor (loop 0) only: accept(2) found no descriptor (EMFILE,
     * ENFILE...).  The listener is then out of epoll (paused) until a
     * connection closes or s->accept_retry passes; starved_ms is when the
     * episode began (0 = none), so that it is logged once when it begins
     * and once when it ends. */
    bool paused;
    int64_t starved_ms;
    cn__net_metrics_t m; /* set before the listener is used; updates lock-free */
} cn__listener_t;

#define CN__RBUF 256

typedef enum {
    CN__ST_HELLO,  /* loop: accepted, waiting for the first readable byte */
    CN__ST_IDLE,   /* loop: waiting for / reading a request head */
    CN__ST_PARKED, /* loop: the target pool's queue is full */
    CN__ST_HELD,   /* loop: its principal holds its share of the target pool */
    CN__ST_WORKER, /* queued on or running on a worker */
    CN__ST_TAIL    /* loop: writing the rest of a reply a worker handed over (c->tail) */
} cn__state_t;

/* The rest of a reply that a worker handed to the loop (cn_conn_reply):
 * bytes (owned, counted in the memory budget), then a file range (its own
 * descriptor, a dup).  The loop writes it without blocking as the socket
 * drains, by deadline, then reads the next request (or closes). */
typedef struct cn__tail {
    bool set;
    bool close_after; /* serve() failed or ended the stream: close once written */
    bool want_read;   /* TLS: the last write waits for the socket to be readable */
    uint8_t *buf;
    size_t off, len; /* buf[off, len) still to write */
    size_t cap;      /* buf's size, what the budget holds (TLS: a file range's
                      * pieces are read into buf once its bytes are written) */
    int fd;          /* -1: no file range */
    uint64_t foff, flen;
    int64_t deadline;
} cn__tail_t;

struct cn_conn {
    int kind; /* CN__SRC_CONN */
    int fd;
    SSL *ssl;
    cn__listener_t *ls;
    cn_server_t *srv;
    struct cn__loop *loop; /* the loop it lives on, set before it is handed there */
    uint64_t id;
    struct sockaddr_storage peer;
    socklen_t peerlen;
    char peer_text[INET6_ADDRSTRLEN];
    uint8_t src_key[16]; /* IPv4 address, or the IPv6 /64 prefix */
    size_t src_klen;
    int64_t accepted_ms;

    /* owner-thread fields */
    cn__state_t st;
    int pool; /* target pool of the next dispatch */
    void *cstate;
    bool opened;
    uint8_t head[CN_HEAD_MAX];
    size_t head_got;
    /* Read-ahead (plaintext): the loop reads up to CN__RBUF bytes where it
     * wants a head, so a request's metadata usually arrives with it and the
     * worker takes it from here without a system call.  Every read of the
     * connection drains this first, so the stream order is unchanged. */
    uint16_t roff, rlen;
    uint8_t rbuf[CN__RBUF];
    /* Bytes the adapter read past the end of its request and gave back
     * (cn_conn_unread): read before rbuf, so the stream order is unchanged. */
    uint8_t *back;
    size_t back_off, back_len, back_cap; /* back_cap: 0, or what back holds room for */
    int64_t deadline;                    /* loop states: when the loop closes it */
    bool in_poll;
    bool armed;     /* registered and able to report: persistent, or one-shot not yet fired */
    bool persist;   /* registered level-triggered, not one-shot (loop.c, watch) */
    bool to_worker; /* its last request went to a worker, not answered by the loop (watch) */
    bool more;      /* after its tail, resume() on a worker (CN_CONN_MORE), not a next request */
    int poll_mask;
    bool closing;     /* the worker failed it: the loop closes it */
    bool hello_again; /* the handshake worker gave it back to wait for the peer (hello.c) */
    /* A request head the loop holds while it waits for its end (head_end):
     * when its first byte came (0: none held), and whether its time is up
     * (it goes to a worker as it is). */
    int64_t req_start_ms;
    bool head_late;
    /* The loop is answering a request itself (cn_adapter_t.fast): reads
     * take only what rbuf holds and writes never wait; what the socket does
     * not take goes to pend (counted in the memory budget), which a worker
     * then writes out with the usual deadline (cn__conn_flush). */
    bool on_loop;
    uint8_t *pend;
    size_t pend_len;
    cn__tail_t tail;              /* its owner's: the worker that sets it, then its loop */
    cn__count_ent_t *fair;        /* worker-share key (principal or anon source; mu to set) */
    bool fair_anon;               /* fair is counted in ls->anon */
    int busy_pool;                /* pool counted in fair->busy, or -1 (share_mu to set
                                     while held) */
    cn_conn_t *lo_prev, *lo_next; /* the loop's list of loop-owned conns */
    cn_conn_t *park_next;         /* parked or held FIFO, ready list, or the return list */
    bool ready;                   /* held, and given a share slot by another loop: on
                                     its loop's ready list (share_mu) */

    /* guarded by srv->mu (pending also read by its loop without it: only
     * its loop settles it, an eviction by the acceptor clears it) */
    atomic_bool pending; /* in ls->pend list and counted per source */
    bool repended;       /* pending again while idle (adapter idle_pending): a
                            deadline then ends it as idle, not as a refusal */
    bool holds_slot;     /* counted in ls->nconns */
    atomic_bool evicted; /* set by the loop under mu; read by the owner */
    cn_conn_t *pend_prev, *pend_next;
    cn_conn_t *all_prev, *all_next;
    cn__count_ent_t *principal;
    uint64_t reserved;
    bool anon_permit; /* holds one of ls->anon_permits (mu) */
};

/* Writes c->pend out (blocking, with a deadline) and frees it; a worker. */
cn_err_t cn__conn_flush(cn_conn_t *c);
/* The loop: writes what the socket takes of c->tail without blocking.
 * CN_OK once all of it is written, CN_E_AGAIN when the socket is full (wait
 * for it to be writable, or under TLS readable when c->tail.want_read), else
 * an error (close). */
cn_err_t cn__tail_write(cn_conn_t *c);
/* Makes c->pend (the part of a loop answer the socket did not take) the
 * tail, its budget with it; the loop. */
void cn__tail_from_pend(cn_conn_t *c);
/* Frees c->tail (its buffer and budget, its descriptor); idempotent. */
void cn__tail_free(cn_conn_t *c);

/* One event loop: a thread with its own epoll set, holding the connections
 * handed to it for their whole life.  Loop 0 also accepts (the acceptor):
 * it alone holds the listeners and the signalfd. */
typedef struct cn__loop {
    cn_server_t *srv;
    unsigned idx;
    cn__poll_t *poll;
    int wake_fd; /* eventfd: returns, new connections, evictions, stop */
    struct {
        int kind;
    } wake_src;

    pthread_mutex_t ret_mu;             /* workers and the acceptor -> this loop */
    cn_conn_t *ret_head, *ret_tail;     /* returns; new connections are in CN__ST_HELLO */
    cn_conn_t *ready_head, *ready_tail; /* (srv->share_mu) held conns given a slot */
    atomic_bool evictions;              /* the acceptor evicted one of ours: scan */
    atomic_uint nconns;                 /* connections living here (least-loaded pick) */
    cn_metric_t *gauge;                 /* cairn_net_loop_connections{loop="idx"} */

    /* this loop's thread only */
    cn_conn_t *lo_head;
    cn_conn_t *park_head[CN_POOL_COUNT], *park_tail[CN_POOL_COUNT];
    int64_t next_timer;
    struct cn__batch *batch;
    int fast_batch;   /* the most events of one wait that still leave fast() on (loop.c) */
    bool persist_ok;  /* connections may stay registered between requests (loop.c, watch) */
    bool poll_broken; /* the epoll set failed: the loop drains on its eventfd alone */
    pthread_t thread;
    bool started;
    cn_err_t result;
} cn__loop_t;

struct cn_server {
    cn_server_config_t cfg;
    pthread_mutex_t mu;
    pthread_mutex_t share_mu; /* the worker share; after mu */
    cn_conn_t *all_head;      /* every live connection (mu) */
    unsigned nlive;           /* (mu) */
    uint64_t next_id;         /* (mu) */

    cn__listener_t **ls;
    size_t nls;

    cn__loop_t *loops;
    unsigned nloops;
    int sig_fd; /* signalfd in loop 0, or -1 */
    struct {
        int kind;
    } sig_src;
    atomic_bool stopping;
    atomic_bool stop_requested;
    atomic_bool accept_paused; /* a listener is out of epoll for want of a descriptor */
    atomic_bool fd_freed;      /* another loop closed a connection meanwhile */
    atomic_bool accept_closed; /* stopping: the acceptor closed the listeners */
    bool ran;

    cn__pool_t pools[CN_POOL_COUNT];
    bool pools_started[CN_POOL_COUNT];

    /* acceptor (loop 0) only */
    int64_t accept_retry; /* when paused listeners are re-armed; INT64_MAX = none */
    unsigned next_loop;   /* where the least-loaded search starts (round robin on ties) */
};

/* Wakes every loop (any thread; async-signal-safe). */
void cn__loops_wake(cn_server_t *s);
/* Wakes one loop (any thread). */
void cn__loop_wake(cn__loop_t *l);
/* The loop count a configuration asks for: loops, or when 0 the online CPUs
 * capped at CN_NET_LOOPS_AUTO_MAX. */
unsigned cn__loops_wanted(const cn_server_config_t *cfg);

/* admit.c (all take srv->mu themselves unless _locked) */
void cn__source_key(const struct sockaddr *sa, uint8_t key[16], size_t *klen);
typedef enum {
    CN__ADMIT_OK,
    CN__ADMIT_BUSY
} cn__admit_t;
/* Admits c into ls's table (slot, pending, per-source count, all list).  When
 * the table is full, evicts the oldest pending connection: a loop-owned victim
 * is returned in *victim for the loop to destroy; a worker-owned one has its
 * socket shut down.  */
cn__admit_t cn__admit(cn_conn_t *c, cn_conn_t **victim);
/* The connection delivered its first request: no longer pending. */
void cn__admit_settle(cn_conn_t *c);
/* c (loop-owned, idle after a request) counts as pending again, the
 * youngest: its adapter's idle_pending.  No-op when c is pending already or
 * was evicted.  Its loop only. */
void cn__admit_repend(cn_conn_t *c);
/* The worker-share key of c (its principal, else its source in ls->anon),
 * bound on first use.  NULL only on ENOMEM (then c is not held back). */
cn__count_ent_t *cn__admit_fair_key(cn_conn_t *c);
/* The loop took c back: when a worker rebound c's principal while it was
 * served, c's worker-share key is let go, so that c's next request counts
 * on the new key (bound then).  The loop, after share_release. */
void cn__admit_fair_refresh(cn_conn_t *c);
/* Releases everything c holds in the tables; unlinks it.  Idempotent. */
void cn__admit_release(cn_conn_t *c);
/* shutdown(2) every live connection of loop l owned by a worker (end of
 * grace); handshakes_only: only those in a TLS handshake / open().  Loop l. */
void cn__admit_shutdown_all(cn__loop_t *l, bool handshakes_only);

/* conn.c */
void cn__conn_destroy(cn_conn_t *c); /* the owner closes c */
/* Non-blocking read for the loop: > 0 bytes, 0 = would block, CN_E_CLOSED, -errno.
 * *want_write is set when TLS needs the socket writable first. */
long cn__conn_read_nb(cn_conn_t *c, void *buf, size_t n, bool *want_write);
/* True when bytes of the stream are held in the process, not yet read: in
 * the read-ahead buffer, or decrypted in a TLS session. */
bool cn__conn_buffered(cn_conn_t *c);
/* Reads what the socket (or TLS) has, up to max bytes held in all, into the
 * given-back bytes, after what is held already (so that they are one run,
 * seen with cn_conn_peek): > 0 bytes read, 0 when none came (*want_write:
 * TLS must write first), < 0 when the peer is gone or failed. */
long cn__conn_hold_more(cn_conn_t *c, size_t max, bool *want_write);

/* hello.c: whether the loop waits for c's hello before its handshake runs,
 * and whether it has come (or the peer is gone: mask holds CN__EV_ERROR). */
bool cn__hello_waits(const cn_conn_t *c);
bool cn__hello_here(cn_conn_t *c, int mask);

/* tls.c: the one place server TLS contexts are made (client ones:
 * cn_tls_client_ctx_new in cairn/crypto.h).  TLS 1.3 only, the X25519MLKEM768
 * provider loaded.  cn__tls_ctx_new is the Jay and HTTP listeners' default:
 * classical groups with the hybrid one first.  cn__tls_ctx_new_groups takes
 * the rule from its caller: a listener with tls_pq_only (Scribe protocol 4,
 * SAU2, and Jay and HTTP under cairnd --tls-groups pq-only) passes
 * CN_TLS_GROUPS_PQ_ONLY.  *out is the caller's to SSL_CTX_free. */
cn_err_t cn__tls_ctx_new(const char *cert, const char *key, SSL_CTX **out);
cn_err_t cn__tls_ctx_new_groups(const char *cert, const char *key, cn_tls_groups_t groups,
                                SSL_CTX **out);
/* The server side TLS handshake on c's non-blocking socket, or as much of
 * it as the bytes that have arrived allow: CN_OK once done, CN_E_AGAIN when
 * it waits for the peer's next flight (call again when it is here: the
 * loop waits for it, hello.c), another error when it failed.  Waits only
 * for the socket to take what it writes, by deadline. */
cn_err_t cn__tls_accept(cn_conn_t *c, int64_t deadline);
/* Waits until fd is ready for events (POLLIN/POLLOUT) or deadline. */
cn_err_t cn__wait_fd(int fd, short events, int64_t deadline);

/* loop.c */
void cn__loop_give_back(cn_conn_t *c); /* worker -> loop */
void cn__worker_run(void *arg, void *item);
/* Runs loop l until the server has stopped and every connection closed. */
cn_err_t cn__loop_run(cn__loop_t *l);
/* Test hook: loop idx's epoll set fails from its next wait on (as an
 * epoll_wait error would), and the loop is woken to find out.  Any thread;
 * tests only (tests/net/net_test_server.c). */
void cn__loop_break_poll(cn_server_t *s, unsigned idx);

#endif
