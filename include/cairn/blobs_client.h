/* cairn blobs client: libcairn's client side of the blob operation family
 * over HTTP (docs/protocol/blobs.md) — stat, have (with token renewal),
 * delete, list, streaming put, and verified get (whole or ranged).
 *
 * Downloads are verified here: a whole get hashes every byte and fails with
 * CN_E_DIGEST_MISMATCH unless the bytes are the digest asked for; a ranged
 * get checks the acked slice digest.  The sink sees bytes before the verdict,
 * so a caller that must never expose unverified bytes writes them somewhere
 * private (a temporary file) and publishes only on success.
 *
 * Threads: a cn_blobc_t is one connection's worth of state (libcurl easy
 * handle, kept alive between calls): one thread at a time.  Use one per thread.
 */
#ifndef CAIRN_BLOBS_CLIENT_H
#define CAIRN_BLOBS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cairn/err.h"
#include "cairn/crypto.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_blobc cn_blobc_t;

/* What the server said about the last failed call (status 0: no answer). */
typedef struct cn_blobc_error {
    int status;
    char code[64];
    char reason[64];
    char message[256];
} cn_blobc_error_t;

/* url: "http://host:port" (https too); cred: "token_id:secret" sent as a
 * Bearer credential, or NULL for anonymous.  Both copied.  -ENOMEM,
 * CN_E_INVALID.  Free with cn_blobc_free (accepts NULL). */
CN_API cn_err_t cn_blobc_new(const char *url, const char *cred, cn_blobc_t **out);
CN_API void cn_blobc_free(cn_blobc_t *c);
/* The last failure's details; valid until the next call on c. */
CN_API const cn_blobc_error_t *cn_blobc_error(const cn_blobc_t *c);

/* Errors of every call: CN_E_NOT_FOUND (BLOB_MISSING), CN_E_AUTH (401),
 * CN_E_DENIED (403), CN_E_INVALID (400), CN_E_DIGEST_MISMATCH /
 * CN_E_LENGTH_MISMATCH (verification), CN_E_TOO_LARGE, CN_E_UNSUPPORTED
 * (409), CN_E_BUSY (503), CN_E_CLOSED (no connection, or cut short),
 * CN_E_PROTOCOL (an answer that breaks the contract, or another 5xx). */
CN_API cn_err_t cn_blobc_stat(cn_blobc_t *c, const char *ns, const cn_digest_t *d, uint64_t *len);
/* present[i] for d[i]; any n (sent in batches of the server's limit).
 * token non-NULL: the renewal form (n must be 1). */
CN_API cn_err_t cn_blobc_have(cn_blobc_t *c, const char *ns, const cn_digest_t *d, size_t n,
                              const char *token, bool *present);
/* Operator only. *removed (may be NULL) = how many were members. */
CN_API cn_err_t cn_blobc_delete(cn_blobc_t *c, const char *ns, const cn_digest_t *d, size_t n,
                                size_t *removed);
/* One page of blobs/list: after NULL = from the first; max ≤ 10000. */
CN_API cn_err_t cn_blobc_list(cn_blobc_t *c, const char *ns, const cn_digest_t *after, size_t max,
                              cn_digest_t *out, size_t *n, bool *more);

/* Progress: done bytes of total (0 = unknown). */
typedef void (*cn_blobc_progress_fn)(void *ctx, uint64_t done, uint64_t total);
/* A put's bytes: > 0 bytes written into buf, 0 at the end, < 0 to abort. */
typedef ssize_t (*cn_blobc_source_fn)(void *ctx, void *buf, size_t max);
/* A get's bytes; a non-zero return aborts the get and is returned. */
typedef cn_err_t (*cn_blobc_sink_fn)(void *ctx, const void *p, size_t n);

#define CN_BLOBC_TOKEN_MAX 256
typedef struct cn_blobc_put_result {
    char token[CN_BLOBC_TOKEN_MAX + 1];
    cn_digest_t digest;
} cn_blobc_put_result_t;

/* blobs/put: len ≥ 0 sends a Content-Length, -1 streams chunked; expect
 * (may be NULL) offers the digest (the server then also lets fetches tap the
 * put while it streams).  progress may be NULL. */
CN_API cn_err_t cn_blobc_put(cn_blobc_t *c, const char *ns, const cn_digest_t *expect, int64_t len,
                             cn_blobc_source_fn src, void *src_ctx, cn_blobc_progress_fn progress,
                             void *progress_ctx, cn_blobc_put_result_t *out);
/* Convenience: a buffer. */
CN_API cn_err_t cn_blobc_put_buf(cn_blobc_t *c, const char *ns, const void *p, size_t n,
                                 cn_blobc_put_result_t *out);

typedef struct cn_blobc_get_info {
    bool fanout; /* served by tapping a put in flight */
    bool has_len;
    uint64_t len;      /* the blob's length (store) */
    uint64_t received; /* bytes handed to the sink */
} cn_blobc_get_info_t;

/* Verified fetch.  range NULL: the whole blob, checked against d; else the
 * bytes [off, off+len) clamped to the blob, checked against the acked slice
 * digest.  A failed check is CN_E_DIGEST_MISMATCH (after the sink saw the
 * bytes): a fanout tap that missed the prefix ends so; re-fetch.  info may
 * be NULL. */
CN_API cn_err_t cn_blobc_get(cn_blobc_t *c, const char *ns, const cn_digest_t *d,
                             const uint64_t range[2], cn_blobc_sink_fn sink, void *sink_ctx,
                             cn_blobc_progress_fn progress, void *progress_ctx,
                             cn_blobc_get_info_t *info);

/* ---- sync (src/client/blobs_sync.c) ---------------------------------------------
 * The replicator behind `cairn blob sync`: have/need diffing between two
 * servers, copying only what the target lacks, each blob streamed from the
 * source's verified get into the target's put (no local copy; the target
 * verifies digest and length before it commits), and each put's pin token
 * held until the target's have confirms the blob.  Idempotent and resumable:
 * every run starts from the target's answers. */

/* Called once per digest the target lacked, after its copy ended: e is
 * CN_OK (copied), CN_E_NOT_FOUND (not in the source), or the failure after
 * up to 5 tries (detail: the target connection's last error, never NULL).
 * Calls are serialised (under the sync's lock) but come from its worker
 * threads; the callback must not call back into the sync. */
typedef void (*cn_blobc_sync_fn)(void *ctx, const cn_digest_t *d, cn_err_t e,
                                 const cn_blobc_error_t *detail);

typedef struct cn_blobc_sync_opts {
    const cn_digest_t *digests; /* the digests to sync; NULL: every blob the source lists */
    size_t n_digests;
    int jobs;                   /* parallel copies, each with its own two connections;
                                 * 0: 4; at most 64 */
    cn_blobc_sync_fn on_digest; /* may be NULL */
    void *ctx;
} cn_blobc_sync_opts_t;

/* The step that failed when cn_blobc_sync returns an error. */
typedef enum cn_blobc_sync_stage {
    CN_BLOBC_SYNC_STAGE_LIST = 1, /* listing the source (detail: cn_blobc_error(src)) */
    CN_BLOBC_SYNC_STAGE_HAVE,     /* have on the target (detail: cn_blobc_error(dst)) */
    CN_BLOBC_SYNC_STAGE_MEMORY    /* -ENOMEM outside the listing */
} cn_blobc_sync_stage_t;

typedef struct cn_blobc_sync_stats {
    size_t digests;              /* digests considered (given, or listed) */
    size_t present;              /* already on the target */
    size_t copied;               /* copied and confirmed */
    size_t missing;              /* needed but not in the source */
    size_t failed;               /* copies that failed */
    cn_err_t first_error;        /* the first failed copy's error, or a worker's
                           * connection set-up error; 0 when none */
    bool setup_failed;           /* first_error is a worker's set-up failure */
    cn_blobc_sync_stage_t stage; /* when cn_blobc_sync returns an error */
} cn_blobc_sync_stats_t;

/* Copies to dst every digest of opts (or the source's whole namespace ns)
 * that dst lacks.  src and dst are used by the calling thread for the list
 * and the have; each worker opens its own connections with the same URLs and
 * credentials.  A copy that fails is retried up to 5 times with backoff
 * (never for CN_E_NOT_FOUND, CN_E_DENIED, CN_E_AUTH); CN_E_DENIED or
 * CN_E_AUTH stops the workers from starting further copies.
 *
 * Returns CN_OK once the diff ran, even if copies failed or were missing
 * (see stats), or the error of the list / have / memory with stats->stage
 * (the detail is then cn_blobc_error of src or dst).  stats is zeroed first
 * and required.  Call from one thread; src and dst must not be used by any
 * other thread meanwhile. */
CN_API cn_err_t cn_blobc_sync(cn_blobc_t *src, cn_blobc_t *dst, const char *ns,
                              const cn_blobc_sync_opts_t *opts, cn_blobc_sync_stats_t *stats);

#ifdef __cplusplus
}
#endif
#endif
