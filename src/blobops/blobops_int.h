/* Shared by the blob operation adapter's files (ops.c,
 * fetch.c, put.c); never included from another module.  These
 * files decode a request, call one cn_blobs_* function and encode the
 * answer; they never touch the store or SQL. */
#ifndef CN_BLOBS_HTTP_H
#define CN_BLOBS_HTTP_H

#include "cairn/blobops.h"
#include "cairn/http.h"
#include "cairn/identity.h"

#include <jansson.h>

#define CN__BH_JSON_MAX (2u << 20) /* a call op's params body */
#define CN__BH_OFFER_MAX 4096      /* the Cairn-Offer header */

typedef struct cn_blobs_http {
    cn_blobs_t *b;
    cn_identity_t *id;
    json_t *discovery_ext; /* the discovery document: External ops */
    json_t *discovery_all; /* every op, for an operator */
} cn__bh_t;                /* = cn_blobs_http_t */

/* The decoded params of any op (fields not in the op's schema stay unset). */
typedef struct cn__bh_params {
    const char *ns; /* borrowed from the JSON value */
    bool has_digest;
    cn_digest_t digest;
    size_t ndigests;
    cn_digest_t *digests; /* malloc'd */
    const char *token;    /* NULL: absent */
    size_t nranges;
    bool has_ranges;
    cn_blobs_range_t ranges[CN_BLOBS_RANGES_MAX];
    int64_t len; /* -1: absent */
    bool has_after;
    cn_digest_t after;
    int64_t limit; /* -1: absent */
} cn__bh_params_t;

typedef enum {
    CN__BH_STAT = 0,
    CN__BH_HAVE,
    CN__BH_DELETE,
    CN__BH_SUB,
    CN__BH_PUT,
    CN__BH_LIST,
    CN__BH_NOPS
} cn__bh_op_t;

/* Per-request state. */
typedef struct cn__bh_req {
    cn__bh_t *h;
    int op; /* cn__bh_op_t, or -1 for discovery */
    cn_principal_t principal;
    bool anonymous;
    cn_buf_t body;
    json_t *json; /* the parsed params (owns the strings) */
    cn__bh_params_t params;
    cn_blobs_put_t *put;
    cn_err_t put_err;
} cn__bh_req_t;

/* Responds {"error":{"code","reason","message"}} with status. */
void cn__bh_error(cn_http_req_t *r, int status, const char *code, const char *reason,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A row of the one error table (ops.c): a failure of class cls (for a
 * denial, with the decision's why; -1 any) answers status, code (NULL: the
 * operation's BLOB_MISSING code), reason and message (NULL: the decision's
 * reason or cn_strerror; else a format with one %s, the subject or subject
 * when the call names none). */
typedef struct cn__bh_err_row {
    cn_err_t cls;
    int why;
    int status;
    const char *code;
    const char *reason;
    const char *message;
    const char *subject;
} cn__bh_err_row_t;
/* The row for a failed blobs call e (c, may be NULL, carries the decision);
 * the 500 internal row for what the table does not list.  Never NULL. */
const cn__bh_err_row_t *cn__bh_err_of(cn_err_t e, const cn_blobs_caller_t *c);
/* Maps a service error onto the wire vocabulary through cn__bh_err_of and
 * responds.  c (may be NULL) carries the authorization decision; miss_code
 * is the code of this op's BLOB_MISSING shape; subject (may be NULL) the
 * digest hex. */
void cn__bh_error_cn(cn_http_req_t *r, cn_err_t e, const cn_blobs_caller_t *c,
                     const char *miss_code, const char *subject);
#define CN__BH_REASON_MAX 32
#define CN__BH_MSG_MAX 256
/* Validates obj against op's params schema and fills p (strings borrowed from
 * obj; free p with cn__bh_params_free).  CN_E_INVALID with the reason code
 * and a message, or -ENOMEM.  Pure: no request, no allocation but p's. */
cn_err_t cn__bh_validate(cn__bh_op_t op, json_t *obj, cn__bh_params_t *p,
                         char reason[CN__BH_REASON_MAX], char msg[CN__BH_MSG_MAX]);
/* Validates obj against op's params schema and fills p.  On failure responds
 * the typed validation error (400) and returns CN_E_INVALID. */
cn_err_t cn__bh_params(cn_http_req_t *r, cn__bh_op_t op, json_t *obj, cn__bh_params_t *p);
void cn__bh_params_free(cn__bh_params_t *p);
/* Responds a JSON value with status 200 (and decrefs it). */
void cn__bh_json(cn_http_req_t *r, json_t *v);
/* The caller struct for q's principal. */
void cn__bh_caller(cn__bh_req_t *q, cn_blobs_caller_t *c);

/* fetch.c: answers channels/blobs/sub once its params are decoded. */
void cn__bh_sub(cn_http_req_t *r, cn__bh_req_t *q);
/* put.c: the put op's three phases (on_request, on_body, on_end). */
int cn__bh_put_request(cn_http_req_t *r, cn__bh_req_t *q);
int cn__bh_put_body(cn_http_req_t *r, cn__bh_req_t *q, const uint8_t *p, size_t n);
void cn__bh_put_end(cn_http_req_t *r, cn__bh_req_t *q);

#endif
