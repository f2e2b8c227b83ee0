/* Shared by the console's data and admin API files (api_*.c, presign.c,
 * ring.c); never included from another module.  The helpers here turn a
 * console call into a service request (the session's principal, the peer,
 * TLS) and a service failure into the console's JSON error, with the same
 * (class, what, detail) table discipline as the S3 adapter, so a refusal
 * reads the same on both faces.  Nothing here decides an access. */
#ifndef CN_CONSOLE_DATA_H
#define CN_CONSOLE_DATA_H

#include "console_int.h"
#include "cairn/objects.h"
#include "cairn/s3err.h"

#include <stdint.h>

/* A service request for the call: the session's principal, the client's
 * address and whether the connection is TLS. */
void cn__console_orq(cn_console_call_t *c, cn_objects_req_t *rq);
/* The S3 error an objects-service failure e of rq answers (one table). */
cn_s3_err_t cn__console_obj_code(const cn_objects_req_t *rq, cn_err_t e);
/* Answers an objects-service failure e of rq in S3's code and status
 * (NoSuchBucket, BucketNotEmpty, MalformedPolicy with the service's
 * message, ...).  Internal details stay in the log.  Returns 0. */
int cn__console_obj_fail(cn_console_call_t *c, const cn_objects_req_t *rq, cn_err_t e);
/* The answer of an objects-service change that returned e with no body:
 * 204 when e >= 0, else cn__console_obj_fail.  Returns 0. */
int cn__console_obj_done(cn_console_call_t *c, const cn_objects_req_t *rq, cn_err_t e);
/* The bucket segment (seg[1]) of a buckets/B/... call, after answering 404
 * when the node serves no objects; NULL then. */
const char *cn__console_bucket(cn_console_call_t *c);
/* A new JSON string of unix_ms in RFC 3339 (UTC, milliseconds). */
json_t *cn__console_time(int64_t unix_ms);
/* The string member name of the call's body, or NULL when absent / not a
 * string. */
const char *cn__console_body_str(const cn_console_call_t *c, const char *name);

/* api_bucket_config.c: PUT buckets/B/visibility; GET / PUT / DELETE
 * buckets/B/lifecycle and buckets/B/cors; GET / PUT buckets/B/object-lock
 * (the configuration kind is the call's third segment; docs/console.md). */
int cn__console_visibility_put(cn_console_call_t *c);
int cn__console_conf_get(cn_console_call_t *c);
int cn__console_conf_put(cn_console_call_t *c);
int cn__console_conf_delete(cn_console_call_t *c);

/* presign.c: POST buckets/B/presign, uploads, uploads/complete,
 * uploads/abort (see docs/console.md). */
int cn__console_presign(cn_console_call_t *c);
int cn__console_upload_create(cn_console_call_t *c);
int cn__console_upload_complete(cn_console_call_t *c);
int cn__console_upload_abort(cn_console_call_t *c);

/* ring.c: the metrics sampler of a console (started by
 * cn_console_register, stopped by cn_console_free) and its samples as the
 * "samples" array of GET metrics (a new JSON array, or NULL on -ENOMEM). */
cn_err_t cn__console_ring_start(cn_console_t *con);
void cn__console_ring_stop(cn_console_t *con);
json_t *cn__console_ring_samples(cn_console_t *con);
/* The sampling interval in seconds (5, or the test knob's). */
double cn__console_ring_interval_s(void);

#endif
