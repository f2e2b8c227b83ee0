/* cairn blobops: the blob operation family's adapter over the HTTP framework
 * (src/blobops).  It decodes a call, calls one cn_blobs_* function and
 * encodes the answer; it never touches the store, SQL or another service.
 */
#ifndef CAIRN_BLOBOPS_H
#define CAIRN_BLOBOPS_H

#include "cairn/blobs.h"
#include "cairn/identity.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the blob operation family on an HTTP server (before it starts):
 * GET /_cairn/ops (discovery), POST /_cairn/ops/blobs/{stat,have,delete},
 * POST /_cairn/ops/channels/blobs/sub (fetch) and POST /_cairn/ops/blobs/put,
 * as docs/protocol/blobs.md specifies.  b and id are borrowed and must
 * outlive the server.  Stopping: cn_blobs_shutdown(b), then stop the server,
 * then cn_blobs_http_free(*out).  Errors: CN_E_LIMIT (route table full),
 * -ENOMEM. */
typedef struct cn_http_server cn_http_server_t; /* cairn/http.h */
typedef struct cn_blobs_http cn_blobs_http_t;
CN_API cn_err_t cn_blobs_http_register(cn_http_server_t *srv, cn_blobs_t *b, cn_identity_t *id,
                                       cn_blobs_http_t **out);
/* Frees what register allocated; only once the server has stopped.  NULL ok. */
CN_API void cn_blobs_http_free(cn_blobs_http_t *h);

#ifdef __cplusplus
}
#endif
#endif
