/* The gateway role of cairnd (docs/protocol/scribe-gateway.md, "Gateway
 * role"): one Scribe listener in front of 1..64 storage servers, speaking
 * protocol 2 in plaintext to plaintext storage (--scribe) or protocol 4 over
 * TLS to scribes:// storage (--scribe-tls), where each client's upstream
 * sessions are delegated ones speaking for its user, so that storage
 * decides what that user may do.  It answers discover from its
 * configuration, resolves `<namespace>/<name>` repository names, keeps a
 * durable repository -> server placement map in its data directory, and
 * forwards every repository operation to the server that owns the
 * repository, relaying object streams frame by frame (never a whole body in
 * memory).
 *
 * It must never answer a repository operation itself (storage decides every
 * outcome and every authorization), never guess a topology when a backend it
 * needs does not answer (an error instead), never let an unknown mutation
 * outcome look like a definitive failure (an upstream transport failure
 * closes the client's connection), and never speak SQL (src/meta/sql/
 * gateway.c holds its statements).
 *
 * Files: gw_config.c (the TOML configuration and the name resolver, pure),
 * gw_up.c (upstream connections and their pool), gw_place.c (placements and
 * the pick rule), gw_inventory.c (the walks of instance_status),
 * gw_relay.c (forwarding and stream relays), gw_list.c (repo_list's merge),
 * gw_server.c (the adapter: handshake, sessions, dispatch).  This header is
 * also the interface src/cmd uses. */
#ifndef CN_SCRIBE_GW_INT_H
#define CN_SCRIBE_GW_INT_H

#include "cairn/err.h"
#include "cairn/net.h"
#include "cairn/scribe.h"
#include "cairn/util.h"
#include "server_int.h" /* the session table and handshake (server_session.c) */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- configuration (gw_config.c) -------------------------------------------------------- */
#define CN_GW_MAX_SERVERS CN_SCRIBE_MAX_STORAGE_SERVERS /* 64 */
#define CN_GW_ADDR_MAX 128

typedef struct cn_gw_server {
    char address[CN_GW_ADDR_MAX];         /* host:port, the scheme stripped */
    char ns[CN_SCRIBE_MAX_NAMESPACE + 1]; /* its label: "" on plaintext storage */
    bool tls;                             /* scribes:// (protocol 4) */
} cn_gw_server_t;

typedef struct cn_gw_config {
    cn_gw_server_t servers[CN_GW_MAX_SERVERS];
    size_t n;         /* 1..64, in configuration order */
    bool tls;         /* every server is scribes:// (never mixed) */
    bool has_default; /* default_namespace was given */
    char default_ns[CN_SCRIBE_MAX_NAMESPACE + 1];
    size_t nns;                        /* distinct labels: the reachable namespaces */
    const char *ns[CN_GW_MAX_SERVERS]; /* each distinct label once, first-seen order
                                          (pointers into servers[]) */
    uint32_t inventory_ms;             /* inventory_interval_ms: between two inventory walks */
    uint32_t reuse_ms;    /* upstream_reuse_ms: a user's upstream session serves later client
                          connections this long after its hello (protocol 4; 0: never) */
    char storage_ca[512]; /* storage_ca: PEM CAs of the scribes:// servers' certificates ("":
                             the trust bundle of --auth-trust) */
} cn_gw_config_t;

/* Parses and checks a gateway configuration (TOML, docs/protocol/
 * scribe-gateway.md): optional default_namespace, then 1..64 [[storage]]
 * tables with address ("host:port" or "scribes://host:port") and namespace
 * (the label, "" on plaintext storage).  Unknown keys, 0 or more than 64
 * servers, a label that is not 1..64 of A-Z a-z 0-9 - _ . on TLS storage or
 * not empty on plaintext storage, a repeated address, a default naming no
 * configured label, and plaintext mixed with TLS are refused: CN_E_INVALID
 * with one line for humans in err.  Pure; any thread. */
cn_err_t cn_gw_config_parse(const char *text, size_t len, cn_gw_config_t *out, char *err,
                            size_t errlen);
/* The same from a file (at most CN_TOML_MAX_BYTES). */
cn_err_t cn_gw_config_load(const char *path, cn_gw_config_t *out, char *err, size_t errlen);

/* True when s (n bytes) is a namespace label: 1..64 ASCII letters, digits,
 * '-', '_' or '.'. */
bool cn_gw_label_valid(const char *s, size_t n);

/* Resolves a wire repository name (1..193 bytes) into its namespace and the
 * storage name: `<namespace>/<name>` names a served namespace; a bare name
 * resolves in the only namespace or the configured default.  On success
 * *ns is one of cfg->ns[] and *sname / *slen view the storage name inside
 * name.  Otherwise CN_E_INVALID (answered malformed) with the reason in msg,
 * which names the accepted form `<namespace>/<name>` for a bare name that
 * cannot resolve.  The storage server judges the rest of the storage name. */
cn_err_t cn_gw_name_resolve(const cn_gw_config_t *cfg, const char *name, size_t len,
                            const char **ns, const char **sname, size_t *slen, char *msg,
                            size_t cap);

/* ---- the adapter (gw_server.c) ---------------------------------------------------------- */
struct cn_meta;
struct ssl_ctx_st;
struct ssl_st;
/* Protocol 4 (scribes:// storage): makes the gateway's TLS client context
 * (TLS 1.3, X25519MLKEM768 only, storage certificates verified against
 * ca_file) holding the gateway's own access certificate, and the
 * CLOCK_MONOTONIC millisecond at which it must be made again (half the
 * certificate's lifetime).  src/cmd supplies it (the SAU2 client lives in
 * src/client, above this module). */
typedef cn_err_t (*cn_gw_tls_fn)(void *arg, const char *ca_file, struct ssl_ctx_st **ctx,
                                 int64_t *renew_at_ms, char *msg, size_t cap);
typedef struct cn_gw_opts {
    uint32_t inactivity_s; /* announced to clients; 0 = 300 */
    cn_gw_tls_fn tls;      /* required when the configuration is scribes:// */
    void *tls_arg;
} cn_gw_opts_t;

/* Builds the gateway adapter over cfg (copied) with its placements in meta
 * (borrowed; must outlive the listener; the schema is migrated here).  *ad
 * is static, *actx freed by cn_gw_adapter_destroy.  A scribes://
 * configuration serves protocol 4 (the --scribe-tls listener) and needs
 * opts->tls; its first context is made here, so a credential auth refuses
 * stops cairnd at start.  Errors: CN_E_INVALID, CN_E_AUTH, the metadata's,
 * -ENOMEM. */
cn_err_t cn_gw_adapter_create(const cn_gw_config_t *cfg, struct cn_meta *meta,
                              const cn_gw_opts_t *opts, const cn_adapter_t **ad, void **actx);
void cn_gw_adapter_destroy(void *actx); /* NULL is a no-op */

/* ---- internals ------------------------------------------------------------------------------ */
#define CN__GW_IO 262144 /* relay buffer per client connection: a stream moves this much per read */
/* An object (or LZ4 block) with at least this much still to come is
 * spliced, not copied (with its header, peeked, when the relay reached it
 * at storage's socket; gw_relay.c): measured, a splice of 16 KiB and more
 * costs the gateway less CPU than copying it in and out (a clone's chunks
 * are 16-256 KiB, 64 KiB on average). */
#define CN__GW_SPLICE 16384
#define CN__GW_POOL_IDLE 16     /* idle upstream connections kept per server */
#define CN__GW_CONNECT_MS 10000 /* the specification's client connect timeout */
#define CN__GW_IO_MS 300000     /* and its read/write timeout */
#define CN__GW_LIST_CURSORS 4   /* open repo_list cursors per client connection */
#define CN__GW_UP_RB 16384      /* an upstream connection's read-ahead */
#define CN__GW_USER_IDLE 16     /* idle users' upstream sessions kept per server (protocol 4) */
#define CN__GW_REUSE_DEFAULT_MS 30000 /* upstream_reuse_ms: storage's default auth_cache_ms */
/* A worker that has answered a client whose requests come back to back
 * waits this long for the next one on the same connection (gw_server.c),
 * at most CN__GW_LINGER_RUN requests in a row, with at most
 * CN__GW_LINGER_MAX workers waiting at once (half the storage pool's 16). */
#define CN__GW_LINGER_MS 2
#define CN__GW_LINGER_RUN 64
#define CN__GW_LINGER_MAX 8
#define CN__GW_LINGER_TAKE 4096 /* what a lingering worker reads at once */

/* One upstream connection: a protocol-2 control session to one storage
 * server, in the codec and transfer compression of the client connections
 * it serves (so that payloads and object streams relay byte for byte). */
typedef struct cn__gw_up {
    int fd;
    size_t server;
    uint8_t codec, compression;
    uint64_t session;
    uint32_t timeout_s;  /* the inactivity timeout the server announced */
    int64_t last_ms;     /* cn_mono_ms when it last carried a request */
    int64_t cap_ms;      /* nonzero: no wait of its I/O goes past this cn_mono_ms (a hello's) */
    uint64_t bound;      /* a data connection of this upstream session; 0: control */
    struct ssl_st *ssl;  /* scribes:// storage: TLS on fd */
    uint8_t binding[32]; /* protocol 4: the upstream session's binding secret */
    /* protocol 4: whom the session speaks for (cn__gw_user_t's caller and
     * key), when its hello was answered, and the wall second after which
     * the user's certificate is no longer valid (0: anonymous) */
    uint8_t *rb; /* read-ahead (CN__GW_UP_RB bytes, made on first use): rb[rpos..rlen) */
    uint32_t rpos, rlen;
    uint8_t caller;
    uint8_t user_key[32];
    int64_t born_ms;
    int64_t until_s;
    struct cn__gw_up *next;
} cn__gw_up_t;

/* Who an upstream protocol-4 session speaks for: the gateway itself
 * (caller 1, its own access certificate), or a client of the gateway —
 * caller 0 for an anonymous one, caller 2 carrying the user's access
 * certificate (PEM) for a signed-in one, so that storage sees the user. */
typedef struct cn__gw_user {
    uint8_t caller;
    const uint8_t *pem;
    size_t pem_len;
    uint8_t key[32]; /* the SHA-256 of the certificate (zero: anonymous): who a pooled
                        session may serve */
    int64_t until_s; /* the certificate's notAfter, wall seconds (0: anonymous) */
} cn__gw_user_t;

typedef struct cn__gw {
    cn_gw_config_t cfg;
    struct cn_meta *meta;
    uint32_t inactivity_s;
    pthread_mutex_t mu;             /* sessions and the pool */
    cn__scribe_sessions_t sessions; /* server_session.c's table, guarded by mu */
    cn__gw_up_t *idle[CN_GW_MAX_SERVERS];
    unsigned nidle[CN_GW_MAX_SERVERS];
    /* protocol 4: users' upstream sessions left by closed client
     * connections, newest first, for the same user's next (gw_up.c) */
    cn__gw_up_t *uidle[CN_GW_MAX_SERVERS];
    unsigned nuidle[CN_GW_MAX_SERVERS];
    /* per server and (codec, compression): the control connection upstream
     * data connections bind to (never lent out) */
    pthread_mutex_t anchor_mu;
    cn__gw_up_t *anchor[CN_GW_MAX_SERVERS][4];
    /* protocol 4: per server, the users' sessions their upstream data
     * connections bind to, one per (certificate, codec, compression) */
    cn__gw_up_t *uanchor[CN_GW_MAX_SERVERS];
    unsigned nuanchor[CN_GW_MAX_SERVERS];
    bool kill_after_placement;  /* test hook CAIRN_TEST_KILL_AFTER_GW_PLACEMENT */
    struct cn__gw_inv *inv;     /* the inventory (gw_inventory.c) */
    struct cn__gw_idcache *idc; /* confirmed placements by id (gw_place.c) */
    /* protocol 4: the TLS client context with the gateway's own access
     * certificate, made again at renew_ms (gw_up.c) */
    pthread_mutex_t tls_mu;
    struct ssl_ctx_st *tls_ctx;
    int64_t tls_renew_ms;
    cn_gw_tls_fn tls_fn;
    void *tls_arg;
    atomic_uint lingering; /* workers waiting for a client's next request (gw_server.c) */
} cn__gw_t;

struct cn__gw_cursor;
typedef struct cn__gw_conn {
    cn__gw_t *g;
    cn_scribe_codec_t codec;
    uint8_t compression;
    uint64_t session;
    cn__scribe_session_t *ss;
    bool data;
    cn_buf_t in, out;
    uint8_t *io; /* CN__GW_IO bytes */
    struct cn__gw_cursor *cursors[CN__GW_LIST_CURSORS];
    uint64_t cursor_ids[CN__GW_LIST_CURSORS];
    /* protocol 4: the client (anonymous, or its access certificate as PEM)
     * and this connection's own upstream sessions for it, per server and
     * transfer compression, left at its close to the users' pool (gw_up.c:
     * only the same certificate's next connection takes them) */
    cn__gw_user_t user;
    uint8_t *pem;
    cn__gw_up_t *ups[CN_GW_MAX_SERVERS][2];
    struct cn__gw_refusal *refusal; /* storage refused this client's upstream session:
                                       answered by cn__gw_unavailable */
    int64_t answered_ms; /* cn_mono_ms when its last request was answered (0: none yet) */
    bool linger;         /* its requests come back to back: the worker waits for the next one */
} cn__gw_conn_t;

/* One client request being served. */
typedef struct cn__gw_call {
    cn__gw_conn_t *gc;
    cn_conn_t *c;
    cn_scribe_hdr_t hdr;
    const uint8_t *payload;
    size_t len;
} cn__gw_call_t;

/* gw_server.c: answers an error frame (code, message) for the call. */
cn_err_t cn__gw_fail(cn__gw_call_t *k, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends a reply frame whose payload is gc->out. */
cn_err_t cn__gw_reply(cn__gw_call_t *k);
/* The error a client sees when a storage server it needs does not answer
 * (storage_failure, naming the server by its place in the configuration,
 * never by address). */
cn_err_t cn__gw_unavailable(cn__gw_call_t *k, size_t server);
/* Answers storage's error frame payload (the client's codec) to the client
 * with storage's own code and message: a refusal is never an outage. */
cn_err_t cn__gw_relay_error(cn__gw_call_t *k, const cn_buf_t *payload);

/* gw_up.c.  Borrows an upstream connection to server in (codec,
 * compression): a pooled one unless it has been silent for half the
 * inactivity timeout its server announced, or its peer has closed it (then
 * it is replaced), else a new one.  CN_E_UNAVAILABLE when the server cannot
 * be reached or refuses the hello. */
cn_err_t cn__gw_up_get(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                       cn__gw_up_t **out);
/* Gives a connection back after a complete exchange (kept unless the pool
 * is full). */
void cn__gw_up_put(cn__gw_t *g, cn__gw_up_t *up);
/* The same for a request that came on a client's data connection: an
 * upstream data connection bound to the gateway's upstream session of that
 * server (opened on demand), else, when that session holds four, a control
 * connection as cn__gw_up_get. */
cn_err_t cn__gw_up_get_data(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                            cn__gw_up_t **out);
/* Protocol 4: a new upstream control session to server speaking for u
 * (never pooled).  When storage refuses the hello, *rf (if given) holds
 * its code and message, and the result is CN_E_UNAVAILABLE. */
typedef struct cn__gw_refusal {
    uint16_t code; /* 0: no refusal (the server did not answer) */
    char msg[256];
} cn__gw_refusal_t;
cn_err_t cn__gw_up_open_as(cn__gw_t *g, size_t server, uint8_t codec, uint8_t compression,
                           const cn__gw_user_t *u, cn__gw_refusal_t *rf, cn__gw_up_t **out);
/* Protocol 4, a user's client hello, on the handshake pool (specification,
 * "Handshake admission": the round trip to a backend is the handshake's,
 * never a request worker's): storage confirms the user's certificate before
 * the client's session exists.  A session of the same certificate kept
 * from an earlier connection confirms it (it is younger than
 * upstream_reuse_ms), else a new upstream session with each storage server
 * in configuration order until one accepts; the accepting one is kept in gc
 * for the connection's requests.  A refusal may be the server's alone (the
 * gateway's delegate grant is per namespace), so the next server is asked.
 * CN_OK; else CN_E_UNAVAILABLE with *rf the first refusal and *refused_by
 * its server, or rf->code 0 when no server answered; -ENOMEM.  Every
 * upstream wait ends by deadline_ms (mono ms: the client's handshake
 * deadline), so a server that never answers holds a handshake worker no
 * longer than a client's handshake may last. */
cn_err_t cn__gw_up_hello(cn__gw_conn_t *gc, int64_t deadline_ms, cn__gw_refusal_t *rf,
                         size_t *refused_by);
/* Makes the gateway's first TLS context (protocol 4), msg saying why not. */
cn_err_t cn__gw_tls_start(cn__gw_t *g, char *msg, size_t cap);
/* Why a connection taken from a pool cannot carry a request (NULL: it
 * can). */
const char *cn__gw_up_unfit(const cn__gw_up_t *up, int64_t now);
/* The client's upstream connection to server for a call: on protocol 2
 * the pool's (a data connection's bound upstream when the client's is a
 * data connection and data is set), on protocol 4 the client connection's
 * own session speaking for its user (when data is set on a client data
 * connection, an upstream data connection bound to the user's anchor
 * session), else one its user left in the users' pool, else a new one.  Given back with cn__gw_up_done
 * after a complete exchange, else closed (cn__gw_up_drop). */
cn_err_t cn__gw_up_for(cn__gw_call_t *k, size_t server, uint8_t compression, bool data,
                       cn__gw_up_t **out);
void cn__gw_up_done(cn__gw_call_t *k, cn__gw_up_t *up);
/* Protocol 4: gives back a session of gc's user lent out longer than one
 * exchange (a listing's, gw_list.c), after a complete exchange: into the
 * connection's slot when that is empty, else to the users' pool (NULL is a
 * no-op).  Call it before cn__gw_conn_ups_free. */
void cn__gw_up_return(cn__gw_conn_t *gc, cn__gw_up_t *up);
void cn__gw_up_drop(cn__gw_call_t *k, cn__gw_up_t *up);
/* cn__gw_ask for a client's call: as the client on protocol 4 (so that
 * storage decides what this user may see), as the gateway on 2. */
cn_err_t cn__gw_ask_for(cn__gw_call_t *k, size_t server, uint16_t opcode, const cn_buf_t *payload,
                        size_t max, cn_scribe_hdr_t *h, cn_buf_t *reply);
void cn__gw_conn_ups_free(cn__gw_conn_t *gc);
/* Closes a connection whose stream is in an unknown state.  NULL is a no-op. */
void cn__gw_up_close(cn__gw_up_t *up);
void cn__gw_pool_free(cn__gw_t *g);
cn_err_t cn__gw_up_write(cn__gw_up_t *up, const void *p, size_t n);
cn_err_t cn__gw_up_read(cn__gw_up_t *up, void *p, size_t n);
cn_err_t cn__gw_up_read_some(cn__gw_up_t *up, void *p, size_t n, size_t *got);
/* Makes up hold at least n (<= CN__GW_UP_RB) unread bytes in its
 * read-ahead, up->rb[rpos..rlen), reading as they arrive (never past the
 * exchange: storage sends nothing after an answer).  CN_E_INVALID when n
 * is larger; else the transport's error. */
cn_err_t cn__gw_up_ahead(cn__gw_up_t *up, size_t n);
/* A plaintext connection's socket, its read-ahead empty (the relay's
 * splice path).  peek: copies the next n bytes (all due: never past the
 * exchange) to p without consuming them; CN_E_AGAIN, when !wait, if not all
 * have arrived; when wait, they are waited for.  recv: consumes what has
 * arrived, at least one byte and at most n, into p (*got); CN_E_AGAIN,
 * when !wait, if nothing has.  Else the transport's error (CN_E_CLOSED:
 * the stream ended or failed first). */
cn_err_t cn__gw_up_peek(cn__gw_up_t *up, void *p, size_t n, bool wait);
cn_err_t cn__gw_up_recv(cn__gw_up_t *up, void *p, size_t n, bool wait, size_t *got);
/* Sends one frame (opcode, no stream) and reads its answer: the header in
 * *h and the payload (at most max bytes, else CN_E_PROTOCOL) in *reply.
 * An error frame is a success here (h->flags has ERROR).  Any other failure
 * leaves the connection unusable: close it. */
cn_err_t cn__gw_up_call(cn__gw_up_t *up, uint16_t opcode, uint64_t rid, const cn_buf_t *payload,
                        size_t max, cn_scribe_hdr_t *h, cn_buf_t *reply);
/* One whole exchange with a pooled connection to server (get, call, put or
 * close), for requests without side effects only: a broken exchange is
 * repeated once on a new connection.  CN_E_UNAVAILABLE when the server
 * cannot be reached or the exchange broke twice. */
cn_err_t cn__gw_ask(cn__gw_t *g, size_t server, uint8_t codec, uint16_t opcode,
                    const cn_buf_t *payload, size_t max, cn_scribe_hdr_t *h, cn_buf_t *reply);

/* gw_place.c.  Placements: (namespace, storage name) -> server address,
 * pending until the repository id is known. */
typedef struct cn__gw_place {
    size_t server;
    bool confirmed;
    uint8_t id[16];
} cn__gw_place_t;
cn_err_t cn__gw_place_migrate(struct cn_meta *meta);
/* The placements' id cache and the inventory (started here), and their end
 * (no-op for what was not started). */
cn_err_t cn__gw_place_start(cn__gw_t *g);
void cn__gw_place_stop(cn__gw_t *g);
/* CN_E_NOT_FOUND when none; CN_E_CONFLICT when the placement names a server
 * no longer configured. */
cn_err_t cn__gw_place_by_name(cn__gw_t *g, const char *ns, const char *name, size_t nlen,
                              cn__gw_place_t *out);
cn_err_t cn__gw_place_by_id(cn__gw_t *g, const uint8_t id[16], cn__gw_place_t *out);
/* Records a pending placement durably unless one exists; *out is the one
 * that holds afterwards (the earlier one when there was). */
cn_err_t cn__gw_place_reserve(cn__gw_t *g, const char *ns, const char *name, size_t nlen,
                              size_t server, cn__gw_place_t *out);
/* Records the repository id of a placement (inserting it confirmed when
 * absent: a repository found on storage, adopted). */
cn_err_t cn__gw_place_confirm(cn__gw_t *g, const char *ns, const char *name, size_t nlen,
                              size_t server, const uint8_t id[16]);
cn_err_t cn__gw_place_forget(cn__gw_t *g, const char *ns, const char *name, size_t nlen);
/* For each of n repository ids, whether a placement records it on server
 * (one read transaction). */
cn_err_t cn__gw_place_known(cn__gw_t *g, size_t server, uint8_t (*ids)[16], size_t n, bool *known);
/* The server of ns's pool a new repository goes to: most available bytes
 * (within 1/64 of the most counts as the most), then fewest repositories,
 * then fewest placements, then configuration order — the numbers of the
 * inventory's fresh snapshot (the server then answers a discover first), or
 * else of instance_status's first page asked now; servers that do not
 * answer are skipped.  CN_E_UNAVAILABLE when none answers. */
cn_err_t cn__gw_pick(cn__gw_t *g, const char *ns, uint8_t codec, size_t *server);
/* One candidate of the pick rule, and the rule itself: sorts c best first
 * (pure; gw_place.c). */
typedef struct cn__gw_cand {
    size_t server;
    bool has_avail, cached; /* cached: the numbers are the inventory's */
    uint64_t avail, repos;
    int64_t placements;
} cn__gw_cand_t;
void cn__gw_rank(cn__gw_cand_t *c, size_t n);

/* gw_inventory.c.  A thread walks every server's instance_status (26)
 * pages (the cursor, at most 128 a page), starting a server's walk again
 * when its incarnation or repository count changes between pages, every
 * inventory_ms; a complete walk leaves a snapshot the pick rule reads, and
 * adopts every repository the placement map does not know.  Placement
 * only: never an answer to a client, never a mutation's acknowledgement. */
#define CN__GW_INV_DEFAULT_MS 60000
#define CN__GW_WALK_RESTARTS 4 /* a server's walk restarts at most this often */
typedef struct cn__gw_walk {
    bool has_after; /* the next request names a cursor */
    uint8_t after[16];
    uint8_t incarnation[16]; /* the first page's */
    uint64_t total, used;    /* the first page's */
    bool has_available;
    uint64_t available; /* the latest page's */
    uint32_t pages, restarts;
    uint64_t rows;
} cn__gw_walk_t;
enum {
    CN__GW_WALK_NEXT,
    CN__GW_WALK_DONE,
    CN__GW_WALK_RESTART,
    CN__GW_WALK_GIVE_UP
};
void cn__gw_walk_init(cn__gw_walk_t *w);
/* Takes the answer to the walk's last request (pure): NEXT (ask the page
 * after w->after), RESTART (ask the first page again: the incarnation or
 * the total changed), DONE, or GIVE_UP (restarted too often, or a cursor
 * that does not advance, or more pages than the total allows). */
int cn__gw_walk_page(cn__gw_walk_t *w, const cn_scribe_instance_resp_t *r);
typedef struct cn__gw_snap {
    bool valid; /* a complete walk, and the server answered since */
    uint8_t incarnation[16];
    uint64_t total, used, available;
    bool has_available;
    uint32_t pages, restarts;
    int64_t at_ms;      /* cn_mono_ms when the walk completed */
    uint64_t placed_at; /* the server's placement count when the walk began */
} cn__gw_snap_t;
cn_err_t cn__gw_inv_start(cn__gw_t *g);
void cn__gw_inv_stop(cn__gw_t *g); /* joins the thread; no-op when not started */
/* The server's snapshot, its total counting the placements made since its
 * walk began; true when it is fresh (complete, at most three intervals
 * old). */
bool cn__gw_inv_fresh(cn__gw_t *g, size_t server, cn__gw_snap_t *out);
void cn__gw_inv_placed(cn__gw_t *g, size_t server); /* a placement reserved there */
void cn__gw_inv_stale(cn__gw_t *g, size_t server);  /* it did not answer: ask it directly */

/* gw_relay.c.  Forwards the call (its payload read) to server and relays
 * the answer, object streams included; on protocol 4 a put_objects is
 * preceded by authorize_upload (27) as the user, whose refusal is the
 * answer.  A failure of either side once the call went upstream closes the
 * client connection (the return is < 0). */
cn_err_t cn__gw_forward(cn__gw_call_t *k, size_t server);
/* The owning server of a request naming a repository by id; answers the
 * failure itself (*answered) when there is none. */
cn_err_t cn__gw_owner_by_id(cn__gw_call_t *k, const uint8_t id[16], size_t *server, bool *answered);
/* repo_create, repo_info (gw_relay.c) and repo_list (gw_list.c). */
cn_err_t cn__gw_op_create(cn__gw_call_t *k);
cn_err_t cn__gw_op_info(cn__gw_call_t *k);
cn_err_t cn__gw_op_list(cn__gw_call_t *k);
void cn__gw_cursors_free(cn__gw_conn_t *gc);
/* The wire name of a storage name in namespace ns: `<ns>/<name>` when the
 * gateway serves several namespaces, else the name itself.  cap >= 194. */
size_t cn__gw_wire_name(const cn__gw_t *g, const char *ns, const char *name, size_t nlen, char *out,
                        size_t cap);
/* The namespace of a server and the index of a label in cfg->ns[]. */
const char *cn__gw_server_ns(const cn__gw_t *g, size_t server);

#endif
