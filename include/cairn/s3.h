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
 * cn_identity_t *): sigv4_lookup (token id → secret) and bearer_check
 * ("id:secret").  Thread-safe. */
CN_API int cn_s3_sigv4_lookup(void *identity, const char *access_key, uint8_t *secret, size_t cap,
                              size_t *len);
CN_API int cn_s3_bearer_check(void *identity, const char *token_id, const char *secret);
/* sigv4_lookup_cached: the same from the identity's token cache only
 * (CN_E_AGAIN on a miss), for requests answered on the network loop. */
CN_API int cn_s3_sigv4_lookup_cached(void *identity, const char *access_key, uint8_t *secret,
                                     size_t cap, size_t *len);

/* The S3 error a failed objects-service call answers: err with rq's what
 * and fail.detail looked up in the S3 face's one table (first match wins;
 * InternalError for what it does not list).  Its code string, status and
 * default message are cn_s3_err_code / _status / _message.  Never reads the
 * message.  Pure; any thread.  Other faces that answer in S3 codes (the web
 * console) use it rather than a table of their own. */
CN_API cn_s3_err_t cn_s3_err_from(const cn_objects_req_t *rq, cn_err_t err);

#ifdef __cplusplus
}
#endif
#endif
