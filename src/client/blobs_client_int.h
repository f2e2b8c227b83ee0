/* Internals shared by the blob-ops client's files (blobs_client.c,
 * blobs_sync.c).  Not part of libcairn's public API. */
#ifndef CAIRN_BLOBS_CLIENT_INT_H
#define CAIRN_BLOBS_CLIENT_INT_H

#include "cairn/blobs_client.h"

/* A new handle to c's server with c's credential (a connection of its own,
 * for another thread).  -ENOMEM.  Free with cn_blobc_free. */
cn_err_t cn__blobc_dup(const cn_blobc_t *c, cn_blobc_t **out);

#endif
