/* Internals shared by the Scribe server adapter's files (server.c,
 * server_ops.c, server_branch.c, server_merge.c, server_cherry.c,
 * server_lock.c, ...) and, for the session table and the handshake of
 * server_session.c, the gateway's adapter (through gw_int.h); never
 * included outside src/scribe and the gateway's users. */
#ifndef CN_SCRIBE_SERVER_INT_H
#define CN_SCRIBE_SERVER_INT_H

#include "cairn/scribe.h"
#include "cairn/scribe_auth.h"
#include "cairn/scribe_server.h"
#include "cairn/repos.h"
#include "cairn/net.h"

#include <pthread.h>
#include <stdarg.h>

/* Compile-time switch of test builds: codec 2 (big-endian) is accepted
 * only when this is 1.  Never configuration. */
#ifndef CN_SCRIBE_TEST_CODEC
#define CN_SCRIBE_TEST_CODEC 0
#endif

#define CN_SCRIBE_DATA_CONNS 4
#define CN_SCRIBE_DRAIN_MAX (16u << 20)  /* unknown opcodes: bodies drained up to this */
#define CN_SCRIBE_REPLY_SOFT (16u << 20) /* paged replies are cut to stay under this */
#define CN_SCRIBE_IO 65536               /* raw stream reads */
#define CN_SCRIBE_ROLE_CACHE 16          /* repositories whose role a session keeps */

/* A control connection and its data connections.  Inactivity is counted
 * per session: it is active while any of its connections serves a request,
 * and idle since the last request of any of them ended (the net layer asks
 * through the adapter's idle hook before closing an idle connection).
 * Freed when its last connection closes, so a connection may keep a
 * pointer to its session; the fields are guarded by its table's mu
 * (cn__scribe_sessions_t). */
typedef struct cn__scribe_session {
    uint64_t id;
    uint16_t version;          /* the protocol its control connection spoke */
    uint8_t caller;            /* protocol 4: the control hello's caller tag */
    uint8_t binding[32];       /* protocol 4: the secret its data connections present */
    cn_scribe_principal_t who; /* protocol 4 with auth: the control hello's principal */
    struct {
        uint8_t repo[16];
        int role;
        int64_t until_ms; /* wall ms: the lease auth gave; 0 = empty */
    } roles[CN_SCRIBE_ROLE_CACHE];
    unsigned roles_next;
    unsigned data_conns;
    bool control_open;
    unsigned busy;   /* requests being served */
    int64_t last_ms; /* cn_mono_ms of the last activity */
    struct cn__scribe_session *next;
} cn__scribe_session_t;

/* A listener's sessions: a list guarded by a mutex its owner chooses (the
 * storage adapter's mu, the gateway's), which also guards every session's
 * fields. */
typedef struct cn__scribe_sessions {
    pthread_mutex_t *mu;
    cn__scribe_session_t *head;
} cn__scribe_sessions_t;

typedef struct cn__scribe_srv {
    cn_scribe_config_t cfg;
    cn_repos_t *repos;
    cn_scribe_auth_t *auth; /* protocol 4: the auth provider (owned), or NULL */
    pthread_mutex_t mu;     /* guards sessions and their fields */
    cn__scribe_sessions_t sessions;
} cn__scribe_srv_t;

typedef struct cn__scribe_conn {
    cn__scribe_srv_t *srv;
    cn_scribe_codec_t codec;
    uint8_t compression; /* 0 raw, 1 LZ4 */
    uint64_t session;
    cn__scribe_session_t *ss; /* the session (lives while sc does) */
    bool data;                /* a data connection bound to session */
    uint16_t version;         /* 2 plaintext, 4 TLS */
    cn_buf_t in, out;
    uint8_t *io;  /* CN_SCRIBE_BLOCK_MAX bytes */
    uint8_t *io2; /* LZ4 bound of a block */
    /* Protocol 4's repo_list cursor (scribe.md 15.6): the opaque token last
     * answered on this connection and the candidate name it stands for.
     * Any other request ends it. */
    bool list_live;
    char list_token[33];
    char list_after[CN_REPOS_NAME_MAX + 1];
    /* A reply stream sent in parts (CN_CONN_MORE): the items still to send,
     * owned here, from objs[next] of which at bytes (and its header) were
     * already sent; cn__scribe_resume sends them. */
    struct {
        cn_repos_obj_t *objs;
        uint64_t at;
        uint32_t next, count;
        uint16_t opcode;
    } more;
} cn__scribe_conn_t;

/* The adapter's resume(): the rest of a reply stream (sc->more). */
cn_err_t cn__scribe_resume(void *cstate, cn_conn_t *c);
/* Drops a reply stream left in parts (the connection is closing). */
void cn__scribe_more_free(cn__scribe_conn_t *sc);

/* One request being served. */
typedef struct cn__scribe_call {
    cn__scribe_conn_t *sc;
    cn_conn_t *c;
    cn_scribe_hdr_t hdr;
    const uint8_t *payload;
    size_t len;
    cn_repos_req_t rq;
    bool close;    /* close after the reply */
    uint16_t code; /* the error answered (metrics); 0: none */
} cn__scribe_call_t;

/* Sends an error frame for the call (the code and a message).  Returns the
 * write's error, 0 once sent. */
cn_err_t cn__scribe_fail_code(cn__scribe_call_t *k, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The one error table: a repos detail (cn_repos_code_t) → its Scribe code,
 * 0 when the detail has none (0 itself included). */
uint16_t cn__scribe_detail_code(uint16_t detail);
/* The Scribe code for a failed service call: f's detail through the table,
 * else err's class.  Never 0. */
uint16_t cn__scribe_code_for(const cn_fail_t *f, cn_err_t err);
/* Maps a service failure (k->rq.fail, or err) onto the wire and sends it. */
cn_err_t cn__scribe_fail(cn__scribe_call_t *k, cn_err_t err);
/* Answers malformed for a payload the opcode's decoder refused. */
cn_err_t cn__scribe_malformed(cn__scribe_call_t *k);
/* Sends a reply frame whose payload is sc->out (flags: 0 or STREAM). */
cn_err_t cn__scribe_reply(cn__scribe_call_t *k, uint16_t flags);
/* The operation table: decode, call the service, encode. */
cn_err_t cn__scribe_op(cn__scribe_call_t *k);
/* The branch operations, 20..23 (server_branch.c). */
cn_err_t cn__scribe_op_branch(cn__scribe_call_t *k);
/* The wire view of a branch mutation's outcome (its strings borrowed from o). */
void cn__scribe_branch_outcome_view(const cn_repos_branch_outcome_t *o,
                                    cn_scribe_branch_outcome_t *v);
/* merge_submit and merge_read, 24 and 25 (server_merge.c). */
cn_err_t cn__scribe_op_merge(cn__scribe_call_t *k);
/* cherry_pick_info and cherry_pick_submit, 32 and 33 (server_cherry.c). */
cn_err_t cn__scribe_op_cherry(cn__scribe_call_t *k);
/* lock_acquire, lock_release, lock_list, lock_policy: 14, 16, 17, 29 (server_lock.c). */
cn_err_t cn__scribe_op_lock(cn__scribe_call_t *k);
/* workspace_register, workspace_list, workspace_remove,
 * workspace_remove_outcome: 12, 34-36 (server_workspace.c). */
cn_err_t cn__scribe_op_workspace(cn__scribe_call_t *k);
/* tree_proof, 43 (server_proof.c). */
cn_err_t cn__scribe_op_proof(cn__scribe_call_t *k);
/* The gateway preflights authorize_upload and authorize_repo_create, 27
 * and 28 (server_gw.c). */
cn_err_t cn__scribe_op_gw(cn__scribe_call_t *k);
/* True when the call's session is a gateway acting for a user (protocol 4,
 * caller 2): instance_status answers direct callers only. */
bool cn__scribe_gw_delegated(const cn__scribe_call_t *k);
/* The wire view of a branch record (its strings borrowed from b). */
void cn__scribe_branch_view(const cn_repos_branch_t *b, cn_scribe_branch_info_t *v);
/* The service view of a decoded submit (its strings borrowed from q). */
void cn__scribe_submit_view(const cn_scribe_submit_req_t *q, cn_repos_submit_t *s);
/* Answers the Submit outcome o (and frees it). */
cn_err_t cn__scribe_reply_outcome(cn__scribe_call_t *k, cn_repos_outcome_t *o);
/* Protocol 4's principals and role table (server_auth.c).  Resolves the
 * hello's client certificate into *who (anonymous without one): 0, or the
 * code to refuse the hello with and why (cap bytes). */
uint16_t cn__scribe_resolve(cn__scribe_srv_t *s, cn_conn_t *c, const cn_scribe_hello_t *h,
                            cn_scribe_principal_t *who, char *why, size_t cap);
/* The dispatch-level check of every request on a listener with auth: the
 * opcode's role (15.6) on the request's repository.  *answered true when the
 * refusal was sent (the handler must not run); the return is the send's. */
cn_err_t cn__scribe_authorize(cn__scribe_call_t *k, bool *answered);
/* repo_list: drops the rows of repositories the caller cannot read (rows
 * compacted, *n lowered); *answered when a failure was sent instead. */
cn_err_t cn__scribe_auth_filter(cn__scribe_call_t *k, cn_repos_info_t *rows, uint32_t *n,
                                bool *answered);
/* Answers get_objects' streamed reply for count looked-up objects: the
 * count, then each item header and, when present, its bytes (get_objects,
 * get_chunks).  Any failure once the reply started closes (CN_E_CLOSED). */
cn_err_t cn__scribe_send_objects(cn__scribe_call_t *k, const cn_repos_obj_t *objs, uint32_t count);
/* get_chunks and repository_mounts, 30 and 31 (server_public.c). */
cn_err_t cn__scribe_op_public(cn__scribe_call_t *k);
/* Writes n stream bytes with a deadline sized for them. */
cn_err_t cn__scribe_write(cn__scribe_call_t *k, const void *p, size_t n);

/* ---- sessions and the handshake (server_session.c), shared with the
 * gateway's adapter (gw_server.c) ------------------------------------------- */
/* The largest hello of either protocol: 16,692 bytes (protocol 4 with a
 * delegated certificate); the handshake reads it into a buffer this size. */
#define CN_SCRIBE_HELLO_BOUND 16692

/* A listener's handshake. */
typedef struct cn__scribe_hs {
    uint16_t version;        /* the protocol it speaks: 2 plaintext, 4 TLS */
    bool test_codec;         /* codec 2 accepted (CN_SCRIBE_TEST_CODEC of the caller) */
    bool budget;             /* the hello's bytes are reserved in the memory budget */
    uint32_t inactivity_s;   /* announced in hello-ok */
    const char *unsupported; /* the message of unsupported_version */
} cn__scribe_hs_t;

/* Sends one frame (header and payload) with a deadline sized for the
 * payload and stream_hint more bytes. */
cn_err_t cn__scribe_send_frame(cn_conn_t *c, uint16_t opcode, uint16_t flags, uint64_t id,
                               const cn_buf_t *payload, uint64_t stream_hint);
/* Sends a request's last frame, a reply (no flags) whose payload a client
 * that stops reading must not hold a worker for: what the socket does not
 * take goes to the connection's loop (cn_conn_reply), which writes it before
 * it reads the next request.  Never in open(): the hello's frames go by
 * cn__scribe_send_frame. */
cn_err_t cn__scribe_send_last(cn_conn_t *c, uint16_t opcode, uint64_t id, const cn_buf_t *payload);
/* Formats an error message (cap bytes) with every non-ASCII byte replaced
 * by '?': a message is for humans, a name may hold invalid UTF-8. */
void cn__scribe_vmsg(char *msg, size_t cap, const char *fmt, va_list ap);
/* Answers the request hd with an error frame (code, msg) in codec, encoded
 * into o (reset first). */
cn_err_t cn__scribe_send_error(cn_conn_t *c, cn_buf_t *o, cn_scribe_codec_t codec,
                               const cn_scribe_hdr_t *hd, uint16_t code, const char *msg);
/* The net layer's busy hook: a little-endian busy error for the hello not
 * yet read, written best effort on the raw socket. */
void cn__scribe_busy_send(int fd, const char *msg);

/* A new control session for a connection that spoke `version`, of the
 * hello's caller and principal who (NULL: none); protocol 4 gives it 256
 * random bits of binding secret (anonymous sessions too). */
cn_err_t cn__scribe_session_new(cn__scribe_sessions_t *t, uint16_t version, uint8_t caller,
                                const cn_scribe_principal_t *who, cn__scribe_session_t **out);
/* Binds a data connection to the live control session h->bind_session.
 * Protocol 4 also needs the session's binding secret (compared in constant
 * time), its caller mode, its subject (the credential and key of its
 * access certificate), its delegate and its protocol version.  Returns 0,
 * or the Scribe code to refuse with (docs/protocol/scribe.md 15.4):
 * session_not_found-like refusals are malformed on protocol 2 and
 * unauthenticated on protocol 4; busy for a fifth data connection.  A bind
 * is activity. */
uint16_t cn__scribe_session_bind(cn__scribe_sessions_t *t, const cn_scribe_hello_t *h,
                                 const cn_scribe_principal_t *who, cn__scribe_session_t **out,
                                 const char **why);
/* A connection of session id closes (data: a data connection); the session
 * is freed with its last connection. */
void cn__scribe_session_release(cn__scribe_sessions_t *t, uint64_t id, bool data);
/* Frees every session (the listener is gone). */
void cn__scribe_sessions_free(cn__scribe_sessions_t *t);
/* A request of the session starts (true) or ends (false). */
void cn__scribe_session_activity(cn__scribe_sessions_t *t, cn__scribe_session_t *ss, bool start);
/* The net layer's idle hook: a connection stays while its session serves a
 * request on any connection, or until inactivity_s has passed since the
 * session's last activity.  Returns when to ask again, or 0: close. */
int64_t cn__scribe_session_idle(cn__scribe_sessions_t *t, cn__scribe_session_t *ss,
                                uint32_t inactivity_s, int64_t now_ms);

/* A handshake error: a little-endian error frame; returns CN_E_PROTOCOL
 * (the caller closes). */
cn_err_t cn__scribe_hello_fail(cn_conn_t *c, uint64_t id, uint16_t code, const char *msg);
/* A hello frame whole, or what was seen when its header already refuses it
 * (cn_adapter_t.hello_len of every Scribe listener and the gateway's). */
size_t cn__scribe_hello_len(const uint8_t *p, size_t have);
/* Reads and decodes the first frame, the hello, by the handshake deadline.
 * Returns 0 with *h decoded from body (CN_SCRIBE_HELLO_BOUND bytes, the
 * caller's: h's views point into it), or a negative error once the refusal
 * (if any) has been sent: the caller closes. */
cn_err_t cn__scribe_read_hello(cn_conn_t *c, const cn__scribe_hs_t *hs, uint8_t *body,
                               cn_scribe_hdr_t *hd, cn_scribe_hello_t *h);
/* Opens the control session of a decoded hello, or binds its data
 * connection, and answers hello-ok (with the binding secret on a protocol-4
 * control connection).  Reads only h's numbers.  *out is the session on
 * success; else the refusal (if any) was sent and the caller closes. */
cn_err_t cn__scribe_hello_answer(cn__scribe_sessions_t *t, cn_conn_t *c, const cn__scribe_hs_t *hs,
                                 uint64_t request_id, const cn_scribe_hello_t *h,
                                 const cn_scribe_principal_t *who, cn__scribe_session_t **out);

/* What cn__scribe_frame_admit made of a request header. */
enum {
    CN__SCRIBE_FRAME_READ = 0,    /* admitted: its length is reserved in the budget */
    CN__SCRIBE_FRAME_DRAINED = 1, /* reserved, unknown or a second hello: the body
                                     was drained; the caller answers */
    CN__SCRIBE_FRAME_BUSY = 2     /* the budget refused it, unread: the caller
                                     answers busy and closes */
};
/* Admits the request frame after its header (v4: the listener speaks
 * protocol 4): the opcode's exact bound, STREAM on put_objects alone, no
 * ERROR, the memory budget.  Returns one of the above, or < 0 to close
 * without an answer (the stream position is lost). */
cn_err_t cn__scribe_frame_admit(cn_conn_t *c, const cn_scribe_hdr_t *hd, bool v4);
/* Reads an admitted frame's payload into in (reset first). */
cn_err_t cn__scribe_frame_body(cn_conn_t *c, const cn_scribe_hdr_t *hd, cn_buf_t *in);
/* An admitted frame was served: its reservation released, large buffers
 * given back. */
void cn__scribe_frame_done(cn_conn_t *c, const cn_scribe_hdr_t *hd, cn_buf_t *in, cn_buf_t *out);

#endif
