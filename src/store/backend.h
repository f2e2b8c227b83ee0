/* The store's durable-bytes backend: where published blobs live.
 *
 * Staging, hashing, the LZ4 envelope, pins and the sweeper sit above this
 * interface; a backend only keeps named, immutable files.  Two implement it:
 * the local directory (backend_local.c) and the S3 tier (backend_s3.c, an
 * S3-compatible object store behind the local cache of cache.c).  A backend
 * never sees namespaces, pins or liveness, never exposes a name before its
 * bytes are complete, and never reports a fault as absence.
 */
#ifndef CN_STORE_BACKEND_H
#define CN_STORE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include "cairn/crypto.h"
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
    /* Optional (NULL: open is used): as open, except that a blob the backend
     * is still fetching and that is better read as it arrives (raw, large)
     * gives CN_E_UNSUPPORTED with *st filled (it exists): read it with
     * stream, which serves its bytes while they land. */
    cn_err_t (*open_lazy)(cn__backend_t *be, const cn_digest_t *d, int *fd, cn__be_stat_t *st);
    /* Optional: serves the stored bytes [off, off+len) of d (clamped to its
     * end; off past the end is CN_E_RANGE) to sink while a fetch of d is in
     * flight, h (unless NULL: no digest of the range wanted) receiving
     * exactly the served bytes, and *served their count.
     * With hold, the final piece of the range goes to sink only once all of
     * d's bytes hashed to d, so a failed fetch always ends a read before its
     * range is complete (a caller serving in parts holds only its last).
     * *streamed = false (and nothing served) when no fetch of a raw d is in
     * flight: read it through open. */
    cn_err_t (*stream)(cn__backend_t *be, const cn_digest_t *d, uint64_t off, uint64_t len,
                       bool hold, cn_store_sink_fn sink, void *ctx, cn_blake3_t *h,
                       uint64_t *served, bool *streamed);
    /* Cheap, no I/O: false only if d is certainly absent (a blob another
     * process adds meanwhile may be missed).  The caller holds d's digest
     * lock.  NULL: always "maybe" (probe with stat or touch). */
    bool (*may_have)(cn__backend_t *be, const cn_digest_t *d);
    /* Barrier: every put (and its directories) returned so far is durable. */
    cn_err_t (*sync)(cn__backend_t *be);
    void (*close)(cn__backend_t *be);
} cn__backend_ops_t;

struct cn__backend {
    const cn__backend_ops_t *ops;
};

/* The local directory backend rooted at root (created if missing). */
cn_err_t cn__backend_local_open(const char *root, cn__backend_t **out);

/* The S3 tier (backend_s3.c, docs/fleet.md "Bytes"): blobs are objects of an
 * S3-compatible store, read through the bounded local cache below.  tier is
 * copied; cache_dir is the resolved cache directory.  CN_E_INVALID for a
 * malformed URL or missing credentials (logged). */
cn_err_t cn__backend_s3_open(const struct cn_store_tier *tier, const char *cache_dir,
                             cn__backend_t **out);
/* One bounded request to the bucket (readiness): CN_OK or CN_E_UNAVAILABLE. */
cn_err_t cn__backend_s3_ping(cn__backend_t *be);

/* One header of a request to sign: name lower case; a list is sorted by name. */
typedef struct cn__s3_hdr {
    const char *name;
    const char *value;
} cn__s3_hdr_t;
/* The SigV4 Authorization value of a request (service "s3") over the
 * canonical-request pieces of cairn/sigv4.h: path and query already
 * URI-encoded, every header in h signed.  CN_E_LIMIT when out (cap bytes) is
 * too small. */
cn_err_t cn__s3_authorization(const char *key_id, const char *secret, const char *region,
                              const char *method, const char *path, const char *query,
                              const cn__s3_hdr_t *h, size_t n, const char *payload_hash,
                              const char *amz_date, char *out, size_t cap);

/* ---- the tier's local cache (cache.c) ----------------------------------------
 * Whole blobs in their stored form, named <hex> or <hex>.lz4 in one
 * directory, least recently used out past a byte budget.  A reader's open
 * descriptor keeps an evicted file's inode (and bytes) alive until it closes:
 * Linux semantics are the pin of in-flight reads.  Thread-safe. */
typedef struct cn__cache cn__cache_t;

/* Opens (creating) dir: leftovers of interrupted fills are removed, the
 * files present are adopted, unverified (hashed at their first use). */
cn_err_t cn__cache_open(const char *dir, uint64_t cap, cn__cache_t **out);
void cn__cache_close(cn__cache_t *c);
/* The cached file of d: *fd (caller closes) and its stat.  *verified tells
 * whether this process already hashed it; the caller hashes an unverified
 * one and calls cn__cache_verified or cn__cache_evict.  CN_E_NOT_FOUND. */
cn_err_t cn__cache_get(cn__cache_t *c, const cn_digest_t *d, int *fd, cn__be_stat_t *st,
                       bool *verified);
void cn__cache_verified(cn__cache_t *c, const cn_digest_t *d);
/* A fresh temporary file in the cache directory for a fill. */
cn_err_t cn__cache_tmp(cn__cache_t *c, char name[48], int *fd);
void cn__cache_discard(cn__cache_t *c, const char *tmp);
/* Makes the complete, verified file tmp (or, with src_dirfd >= 0, the file
 * src_dirfd/tmp from elsewhere: -EXDEV when on another file system) the
 * cache entry of d, then evicts past the budget. */
cn_err_t cn__cache_commit(cn__cache_t *c, int src_dirfd, const char *tmp, const cn_digest_t *d,
                          cn_store_form_t form, uint64_t size);
/* Drops d's entry and file (a no-op when absent). */
void cn__cache_evict(cn__cache_t *c, const cn_digest_t *d);
/* Room for a fill of need bytes on the cache's file system, which the
 * budget alone does not promise (a budget past the file system's size, the
 * data directory growing beside it): evicts least recently used files until
 * need bytes and a reserve (1/64 of the file system, at most 256 MiB) are
 * free, or nothing is left to evict.  False when need bytes are still not
 * free (nothing is evicted when even an emptied cache would not free them). */
bool cn__cache_make_room(cn__cache_t *c, uint64_t need);
/* The size of the cache's file system in bytes (0: not known). */
uint64_t cn__cache_fs_bytes(cn__cache_t *c);

#endif
