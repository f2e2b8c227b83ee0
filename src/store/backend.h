/* The store's durable-bytes backend: where published blobs live.
 *
 * Staging, hashing, the LZ4 envelope, pins and the sweeper sit above this
 * interface; a backend only keeps named, immutable files.  The one
 * implementation today is the local directory (backend_local.c); a fleet
 * backend (an S3-compatible object store with a local cache) implements the
 * same handful of operations.  A backend never sees namespaces, pins or
 * liveness, and never exposes a name before its bytes are complete.
 */
#ifndef CN_STORE_BACKEND_H
#define CN_STORE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include "cairn/store.h"

typedef struct cn__backend cn__backend_t;

typedef struct cn__be_stat {
    uint64_t size;    /* stored bytes */
    int64_t mtime_ms; /* last put or touch */
    cn_store_form_t form;
} cn__be_stat_t;

/* put flags */
enum {
    /* The name must be durable when put returns (fsync of its directory).
     * Without it the caller issues ops->sync() before acknowledging. */
    CN__BE_PUT_SYNC = 1u << 0,
};

/* Called for each stored blob by list(); a non-zero return stops the walk. */
typedef cn_err_t (*cn__be_list_fn)(void *ctx, const cn_digest_t *d, const cn__be_stat_t *st);

typedef struct cn__backend_ops {
    /* Makes the staged file staging_dirfd/staged_name (complete, and with its
     * data already durable) the blob d in the given form.  If d exists in any
     * form: *existed = true, the staged file is left in place for the caller
     * to remove, the existing blob's mtime is refreshed and (with
     * CN__BE_PUT_SYNC) its name is made durable.  Atomic: a reader sees the
     * whole blob or none. */
    cn_err_t (*put)(cn__backend_t *be, int staging_dirfd, const char *staged_name,
                    const cn_digest_t *d, cn_store_form_t form, unsigned flags, bool *existed);
    /* Opens d for reading: *fd (caller closes) and its stat.  CN_E_NOT_FOUND. */
    cn_err_t (*open)(cn__backend_t *be, const cn_digest_t *d, int *fd, cn__be_stat_t *st);
    cn_err_t (*stat)(cn__backend_t *be, const cn_digest_t *d, cn__be_stat_t *st);
    /* Restarts d's mtime (the sweeper's grace window).  CN_E_NOT_FOUND. */
    cn_err_t (*touch)(cn__backend_t *be, const cn_digest_t *d);
    /* Removes d; *freed (may be NULL) = stored bytes.  CN_E_NOT_FOUND. */
    cn_err_t (*remove)(cn__backend_t *be, const cn_digest_t *d, uint64_t *freed);
    /* Walks every stored blob (order unspecified; names that are not blobs
     * are skipped).  Used by the sweeper and by recovery. */
    cn_err_t (*list)(cn__backend_t *be, cn__be_list_fn fn, void *ctx);
    /* Barrier: every put (and its directories) returned so far is durable. */
    cn_err_t (*sync)(cn__backend_t *be);
    void (*close)(cn__backend_t *be);
} cn__backend_ops_t;

struct cn__backend {
    const cn__backend_ops_t *ops;
};

/* The local directory backend rooted at root (created if missing). */
cn_err_t cn__backend_local_open(const char *root, cn__backend_t **out);

#endif
