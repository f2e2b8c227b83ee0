/* Internals shared by the Jay server's files (server.c: framing, errors and
 * the adapter table; server_auth.c: the handshake; server_ops.c: one handler
 * per opcode).  Never included from another module. */
#ifndef CN_JAY_SERVER_INT_H
#define CN_JAY_SERVER_INT_H

#include "cairn/jay.h"
#include "cairn/jay_server.h"
#include "cairn/net.h"
#include "cairn/objects.h"
#include "cairn/identity.h"

#define CN_JAY_IO_BUF (64u * 1024) /* the 64 KiB buffered reader/writer of the spec */
#define CN_JAY_META_INLINE 512u    /* metadata up to this size needs no reservation */

typedef struct cn__jay_srv {
    cn_jay_config_t cfg;
    cn_objects_t *objs;
    cn_identity_t *id;
} cn__jay_srv_t;

typedef struct cn__jay_conn {
    cn__jay_srv_t *srv;
    cn_principal_t principal;
    cn_authz_ip_t peer;
    bool tls;
    cn_buf_t out; /* the response being written */
    uint8_t *io;  /* CN_JAY_IO_BUF bytes, for bodies */
    /* A small metadata block (most requests: a bucket and a key) is read
     * here, without a budget reservation or an allocation: it is part of
     * the connection's fixed cost, like the head the loop reads. */
    uint8_t meta_small[CN_JAY_META_INLINE];
    /* An object body sent in parts (CN_CONN_MORE): its reader and how much
     * of it went out; the next part is sent by cn__jay_resume. */
    struct {
        cn_objects_reader_t *rd;
        uint64_t sent;
        int64_t deadline;
    } more;
} cn__jay_conn_t;

#define CN_JAY_MAX_STRS 8

/* One request in progress. */
typedef struct cn__jay_call {
    cn__jay_conn_t *jc;
    cn_conn_t *c;
    cn_jay_hdr_t hdr;
    cn_jay_req_t req;
    cn_objects_req_t rq;
    uint64_t body_left;          /* request body bytes not read yet */
    int64_t body_deadline;       /* for reading the whole body */
    bool close;                  /* close after answering */
    char *strs[CN_JAY_MAX_STRS]; /* NUL-terminated copies of wire strings */
    size_t nstrs;
    cn_jay_code_t code; /* the error answered (metrics); CN_JAY_CODE_NONE: none */
} cn__jay_call_t;

/* The handshake (server_auth.c): the adapter's hello_len() and open(). */
size_t cn__jay_hello_len(const uint8_t *p, size_t have);
cn_err_t cn__jay_open(void *actx, cn_conn_t *c, void **cstate);
/* Writes the ServerBusy reply on a raw non-blocking fd (busy()). */
void cn__jay_busy(void *actx, int fd);

/* A NUL-terminated copy of s owned by the call (freed when it ends), or NULL
 * on ENOMEM / too many strings. */
const char *cn__jay_cstr(cn__jay_call_t *k, cn_jay_str_t s);

/* Writes an OK response with resp (may be NULL for an empty one) declaring
 * data_len body bytes the caller sends next.  0 or an I/O error (close). */
cn_err_t cn__jay_reply(cn__jay_call_t *k, const cn_jay_resp_t *resp, int64_t data_len);
/* Encodes that OK response into jc->out without sending it (a GET sends it
 * with the first body bytes).  0, or CN_E_LIMIT / -ENOMEM with nothing
 * encoded (k->rq.fail.message says why). */
cn_err_t cn__jay_reply_encode(cn__jay_call_t *k, const cn_jay_resp_t *resp, int64_t data_len);
/* The one error table: the v1 code for a failed objects call (err, with
 * rq's what and fail.detail); INTERNAL_ERROR for what it does not list. */
cn_jay_code_t cn__jay_code_of(const cn_objects_req_t *rq, cn_err_t err);
/* Maps err (with k->rq's what/side/message) through the one error table and
 * writes the error response.  0 or an I/O error (close). */
cn_err_t cn__jay_fail(cn__jay_call_t *k, cn_err_t err);
/* The same with an explicit code and message. */
cn_err_t cn__jay_fail_code(cn__jay_call_t *k, cn_jay_code_t code, const char *msg);

/* Reads up to n bytes of the request body into buf; *got = bytes read.
 * I/O errors (close). */
cn_err_t cn__jay_body_read(cn__jay_call_t *k, void *buf, size_t n, size_t *got);

/* One handler per opcode group (server_ops.c).  Each writes exactly one
 * response and returns 0 to keep the connection or < 0 to close it. */
cn_err_t cn__jay_op(cn__jay_call_t *k);
/* The loop's fast path for GetObject / HeadObject / GetObjectRange (k set up
 * as by cn_jay_serve, req decoded from the buffered metadata, nothing
 * consumed): 0 = declined (nothing consumed or written), 1 = answered,
 * < 0 = close.  Declines a body over max_body. */
int cn__jay_get_fast(cn__jay_call_t *k, uint64_t max_body);
/* The adapter's resume(): the next part of an object body (jc->more). */
cn_err_t cn__jay_resume(void *cstate, cn_conn_t *c);

/* "2026-12-02T14:44:49.123Z" for Unix ms. */
void cn__jay_time(int64_t ms, char out[CN_RFC3339_LEN]);

#endif
