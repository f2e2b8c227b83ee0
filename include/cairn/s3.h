/* cairn s3: the S3 REST face of the objects service, served on the HTTP
 * listener (cairn/http.h).
 *
 * It decodes an S3 request (path-style always, virtual-host style when a
 * domain is configured), turns the verified credential into a principal,
 * calls one objects-service function and encodes the S3 answer (XML bodies
 * with the 2006-03-01 namespace, quoted ETags, S3 error codes with request
 * ids).  Every access decision is the objects service's, made through
 * cn_authz_decide; this face never decides one itself and never touches the
 * store or SQL.  Bodies stream both ways: PUT bodies go straight into an
 * objects put session, GET bodies leave by sendfile where the blob is a raw
 * file.  docs/s3.md has the compatibility table.
 *
 * Threads: a cn_s3_t is shared by every server thread; it holds no mutable
 * state of its own.
 */
#ifndef CAIRN_S3_H
#define CAIRN_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/http.h"
#include "cairn/identity.h"
#include "cairn/objects.h"
#include "cairn/s3err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_s3 cn_s3_t;

#define CN_S3_MIN_PART_SIZE (5ull << 20) /* S3's least part but the last */

typedef struct cn_s3_config {
    cn_objects_t *objects;   /* required; borrowed, must outlive the face */
    cn_identity_t *identity; /* required; borrowed */
    /* Virtual-host base domain ("s3.example.test"): a Host of
     * "BUCKET.s3.example.test" names BUCKET.  NULL = path style only. */
    const char *domain;
    /* What GetBucketLocation answers; NULL or "us-east-1" = the empty
     * LocationConstraint S3 gives for us-east-1. */
    const char *region;
    /* The least size of every part but the last on CompleteMultipartUpload
     * (EntityTooSmall below it); 0 = S3's 5 MiB.  As Ceph RGW's
     * rgw_multipart_min_part_size, for test rigs and small-object stores. */
    uint64_t min_part_size;
} cn_s3_config_t;

/* Creates the face (strings copied).  -ENOMEM, CN_E_INVALID (a required
 * service missing). */
CN_API cn_err_t cn_s3_new(const cn_s3_config_t *cfg, cn_s3_t **out);
/* Frees it; the server it was registered on must be stopped first.  NULL is
 * a no-op. */
CN_API void cn_s3_free(cn_s3_t *s3);

/* Registers the S3 route on srv (before cn_http_server_start).  It serves
 * every path not under "/_" (no bucket name starts with '_', so /_cairn/ and
 * other reserved prefixes stay free), so register more specific routes first.
 * Errors from cn_http_server_route. */
CN_API cn_err_t cn_s3_register(cn_s3_t *s3, cn_http_server_t *srv);

/* Callbacks for cn_http_config_t over an identity handle (ctx = the
 * cn_identity_t *): sigv4_lookup (token id → secret and the identity's tag
 * of it) and bearer_check
 * ("id:secret").  Thread-safe. */
CN_API int cn_s3_sigv4_lookup(void *identity, const char *access_key, uint8_t *secret, size_t cap,
                              size_t *len, uint8_t tag[CN_SIGV4_TAG_LEN]);
CN_API int cn_s3_bearer_check(void *identity, const char *token_id, const char *secret);
/* sigv4_lookup_cached: the same from the identity's token cache only
 * (CN_E_AGAIN on a miss), for requests answered on the network loop. */
CN_API int cn_s3_sigv4_lookup_cached(void *identity, const char *access_key, uint8_t *secret,
                                     size_t cap, size_t *len, uint8_t tag[CN_SIGV4_TAG_LEN]);

/* The S3 error a failed objects-service call answers: err with rq's what
 * and fail.detail looked up in the S3 face's one table (first match wins;
 * InternalError for what it does not list).  Its code string, status and
 * default message are cn_s3_err_code / _status / _message.  Never reads the
 * message.  Pure; any thread.  Other faces that answer in S3 codes (the web
 * console) use it rather than a table of their own. */
CN_API cn_s3_err_t cn_s3_err_from(const cn_objects_req_t *rq, cn_err_t err);

/* ---- bucket configuration documents, for other faces (the web console) ----
 * Lifecycle, CORS and object-lock configurations as their S3 XML documents,
 * validated and stored exactly as this face's PUT does, so both faces share
 * one validation and one stored form.  Any thread; blocking (metadata). */
typedef enum cn_s3_conf {
    CN_S3_CONF_LIFECYCLE,  /* LifecycleConfiguration (?lifecycle) */
    CN_S3_CONF_CORS,       /* CORSConfiguration (?cors) */
    CN_S3_CONF_OBJECT_LOCK /* ObjectLockConfiguration (?object-lock) */
} cn_s3_conf_t;

/* Validates xml (len bytes) as S3's PUT of kind does and stores it with the
 * one objects-service call that PUT makes, as rq.  Returns the S3 error of
 * a document S3 refuses (MalformedXML, InvalidArgument, InvalidRequest,
 * InvalidTag, InvalidRetentionPeriod, NotImplemented; why: the reason, ""
 * when S3 gives none) with *err = CN_E_INVALID; or CN_S3E_NONE with *err
 * the service's result (< 0: a failure of rq, for cn_s3_err_from). */
CN_API cn_s3_err_t cn_s3_conf_put(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                  cn_s3_conf_t kind, const void *xml, size_t len, char *why,
                                  size_t why_len, cn_err_t *err);
/* The stored document of kind appended to doc (the caller frees it), read
 * with S3's GET call.  CN_E_NOT_FOUND with rq->what = ARG when none is set;
 * the service's other errors. */
CN_API cn_err_t cn_s3_conf_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               cn_s3_conf_t kind, cn_buf_t *doc);
/* S3's DELETE of kind (none set is success); CN_E_UNSUPPORTED for object
 * lock, which is never turned off. */
CN_API cn_err_t cn_s3_conf_delete(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                  cn_s3_conf_t kind);
/* The ObjectLockConfiguration a bucket created with object lock starts
 * with (CreateBucket with x-amz-bucket-object-lock-enabled), into out. */
CN_API cn_err_t cn_s3_conf_lock_initial(cn_buf_t *out);

#ifdef __cplusplus
}
#endif
#endif
