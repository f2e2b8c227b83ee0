/* Internals shared by the Scribe server adapter's files (server.c,
 * server_ops.c, server_branch.c, server_merge.c, server_cherry.c,
 * server_lock.c); never
 * included outside src/scribe. */
#ifndef CN_SCRIBE_SERVER_INT_H
#define CN_SCRIBE_SERVER_INT_H

#include "cairn/scribe.h"
#include "cairn/scribe_auth.h"
#include "cairn/scribe_server.h"
#include "cairn/repos.h"
#include "cairn/net.h"

#include <pthread.h>

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
 * pointer to its session; the fields are guarded by the server's mu. */
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

typedef struct cn__scribe_srv {
    cn_scribe_config_t cfg;
    cn_repos_t *repos;
    cn_scribe_auth_t *auth; /* protocol 4: the auth provider (owned), or NULL */
    pthread_mutex_t mu;     /* guards sessions */
    cn__scribe_session_t *sessions;
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
} cn__scribe_conn_t;

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

#endif
