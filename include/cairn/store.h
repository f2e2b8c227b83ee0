/* cairn store: content-addressed blobs named by their BLAKE3-256 digest.
 *
 * The store keeps bytes once: a staged write hashes bytes as they stream in
 * and publishes them durably under DATA/blobs/ab/cd/<hex>; reads hand out a
 * raw fd for sendfile(2) or stream a range together with the BLAKE3 of
 * exactly the bytes served.  Pins (in-process guards and durable pin rows)
 * and registered liveness sources decide what the sweeper may remove.
 *
 * The store must never know namespaces, buckets, repositories or wire
 * formats; it must never expose a partially written blob under a digest
 * name, and never acknowledge a publish before the bytes and their name are
 * durable.  docs/store.md holds the durability design and its invariants.
 *
 * Threads: a cn_store_t is safe to use from any number of threads at once.
 * A cn_store_writer_t belongs to one thread at a time.
 */
#ifndef CAIRN_STORE_H
#define CAIRN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/crypto.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_store cn_store_t;
typedef struct cn_store_writer cn_store_writer_t;
typedef struct cn_store_guard cn_store_guard_t;
typedef struct cn_meta cn_meta_t; /* cairn/meta.h */

/* How a blob's bytes sit on disk.  The digest always names the logical
 * (uncompressed) content, whatever the stored form. */
typedef enum {
    CN_STORE_RAW = 0, /* the bytes themselves: sendfile-able */
    CN_STORE_LZ4 = 1  /* LZ4 envelope of bounded blocks (docs/store.md) */
} cn_store_form_t;

/* The pack threshold cairnd and `cairn admin store` use by default. */
#define CN_STORE_PACK_DEFAULT_MAX (64u * 1024)
/* The zeros cairnd keeps past the open pack's end (pack_zero_ahead): one
 * sync in every 4 MiB of packed records pays the file's growth. */
#define CN_STORE_PACK_ZERO_AHEAD (4u << 20)
/* min_free_bytes: a share of the data file system (cn_store_opts_t). */
#define CN_STORE_MIN_FREE_AUTO UINT64_MAX

typedef struct cn_store_opts {
    /* Metadata handle for durable pins; borrowed, must outlive the store.
     * NULL: durable pins are refused with CN_E_UNSUPPORTED. */
    cn_meta_t *meta;
    /* Largest logical blob accepted (CN_E_TOO_LARGE beyond).  0 = default (1 TiB). */
    uint64_t max_blob_bytes;
    /* Blobs whose stored size is at most this go through the group committer,
     * which makes a whole batch durable with one journal fdatasync.  0 =
     * default and maximum (256 KiB, the writer's buffer); set batch_disable
     * to give every blob its own fsyncs. */
    uint64_t batch_max_bytes;
    bool batch_disable;
    /* Large staged files are written through the page cache, as before
     * O_DIRECT staging (docs/store.md, "Write path"); false = O_DIRECT
     * where the staging file system accepts it. */
    bool page_cache_writes;
    /* Default stored form of new writers (see cn_store_writer_set_form). */
    cn_store_form_t default_form;
    /* Pack files (docs/store.md): raw blobs whose stored size is at most
     * this go into append-only packs indexed in meta instead of one file
     * each (capped at 256 KiB).  0 = off for new blobs (packs already on
     * disk are still served); cairnd's default is CN_STORE_PACK_DEFAULT_MAX.
     * Needs meta. */
    uint64_t pack_max_bytes;
    /* Bytes of zeros kept written past the open pack's end (rounded up to
     * 64 KiB), so that a batch's append overwrites zeros and its fdatasync
     * changes no file size: one write to the disk per sync instead of the
     * data and the inode (docs/store.md, "Pack files").  Extended in the
     * sync of the batch that reaches them; cut when the pack rolls or the
     * store closes, and by recovery after a crash.  0 = none; cairnd's
     * default is CN_STORE_PACK_ZERO_AHEAD. */
    uint64_t pack_zero_ahead;
    /* Free space kept on the data directory's file system for everything
     * but new blob bytes (deletes, metadata, compaction; docs/store.md,
     * "Free space"): a writer opened while less than this (plus its
     * declared length) is free fails -ENOSPC at once, so a full disk never
     * leaves the operator unable to delete.  0 = none; CN_STORE_MIN_FREE_AUTO
     * = 1 % of the file system, at least 8 MiB and at most 256 MiB (cairnd's
     * default).  Not for the blob tier (its local disk holds no blobs). */
    uint64_t min_free_bytes;
    /* Compaction (cn_store_compact, and the end of every cn_store_sweep):
     * a pack other than the open one whose live bytes are under this
     * percentage of its size is rewritten.  0 = default (50); at most 100. */
    unsigned pack_compact_pct;
    /* The blob tier (docs/fleet.md, "Bytes"): where published blobs live.
     * Zeroed = the local directory DATA/blobs.  The strings are read during
     * cn_store_open only; with blob_store set, pack_max_bytes and
     * batch_disable are overridden (no packs, no group committer). */
    struct cn_store_tier {
        /* "s3://BUCKET/PREFIX" (PREFIX may be empty): each blob is the object
         * PREFIX/<lowercase hex digest> of BUCKET.  NULL = local. */
        const char *blob_store;
        const char *endpoint; /* "http[s]://host[:port]", required with blob_store */
        const char *region;   /* NULL = "us-east-1" */
        /* A file holding "KEY_ID:SECRET" (a trailing newline allowed); NULL =
         * AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment. */
        const char *credentials_file;
        bool virtual_host;     /* BUCKET.host instead of host/BUCKET */
        const char *cache_dir; /* NULL = DATA/cache */
        uint64_t cache_bytes;  /* 0 = 4 GiB */
        /* Retry deadline of one backend request (timeouts, 5xx, 429).
         * 0 = 30 s. */
        int64_t deadline_ms;
        /* How long a relay of a blob too big for the cache waits for its
         * reader to come back (s3_fill.c F7).  0 = 10 s. */
        int64_t relay_idle_ms;
    } tier;
} cn_store_opts_t;

/* Whether the store keeps its blobs in an S3-compatible tier, and a probe
 * of that backend for readiness: CN_OK when it answers (local: always),
 * else CN_E_UNAVAILABLE after one bounded attempt (a few seconds). */
CN_API bool cn_store_is_tiered(const cn_store_t *s);
CN_API cn_err_t cn_store_ping(cn_store_t *s);
/* The bytes still free for an unprivileged writer on the file system of
 * the data directory (statvfs), a sample taken now.  CN_E_UNSUPPORTED for a
 * tiered store (its blobs live in the tier, not on that disk); -errno. */
CN_API cn_err_t cn_store_space(cn_store_t *s, uint64_t *available);

/* Opens (creating if needed) the store rooted at data_dir: blobs live in
 * data_dir/blobs, uploads in data_dir/staging.  Startup recovery: every
 * leftover in staging is removed (an upload interrupted by a crash was never
 * published, so nothing visible is lost).  opts NULL = defaults; opts is
 * copied.  One process per data dir: DATA/store.lock is flock()ed, and a
 * second open (in any process) fails with CN_E_BUSY until the first closes.
 * On success *out owns the handle; free with cn_store_close().
 * Errors: CN_E_BUSY, CN_E_INVALID, -errno from the file system, the meta
 * migration's error. */
CN_API cn_err_t cn_store_open(const char *data_dir, const cn_store_opts_t *opts, cn_store_t **out);
/* Stops the group committer and frees the handle.  Accepts NULL.  Writers
 * and guards must be finished before; the meta handle is not closed. */
CN_API void cn_store_close(cn_store_t *s);

/* ---- staged writes -------------------------------------------------------
 * open → write* → publish | abort.  expect (may be NULL) is the digest the
 * caller promises; expect_len (-1 = unknown) the length.  A writer holds an
 * anonymous file in staging; nothing is visible under a digest until publish.
 * Errors from open: CN_E_TOO_LARGE (expect_len over the limit), CN_E_INVALID,
 * -errno. */
CN_API cn_err_t cn_store_writer_open(cn_store_t *s, const cn_digest_t *expect, int64_t expect_len,
                                     cn_store_writer_t **out);
/* Chooses the stored form; only before the first byte (CN_E_INVALID after). */
CN_API cn_err_t cn_store_writer_set_form(cn_store_writer_t *w, cn_store_form_t form);
/* Appends n bytes, hashing them.  CN_E_TOO_LARGE past the store limit,
 * CN_E_LENGTH_MISMATCH past expect_len, both as soon as known; after any
 * error the writer only accepts abort (publish returns the same error). */
CN_API cn_err_t cn_store_writer_write(cn_store_writer_t *w, const void *p, size_t n);
/* Appends exactly n bytes read from fd (a file, pipe or socket, blocking or
 * not: CN_E_AGAIN if a non-blocking fd has nothing; the bytes read so far are
 * kept and the caller may call again with the rest).  EOF before n bytes is
 * CN_E_CLOSED.  Same limits and errors as cn_store_writer_write. */
CN_API cn_err_t cn_store_writer_write_fd(cn_store_writer_t *w, int fd, uint64_t n, uint64_t *done);
/* Bytes accepted so far. */
CN_API uint64_t cn_store_writer_len(const cn_store_writer_t *w);
/* Publishes: on CN_OK the blob is durable (its bytes and its name survive a
 * crash) and readable, *out (may be NULL) is its digest, *len_out (may be
 * NULL) its logical length.  If the digest already exists nothing is stored
 * twice and the existing blob is refreshed (its mtime restarts the sweeper's
 * grace window).  CN_E_DIGEST_MISMATCH / CN_E_LENGTH_MISMATCH publish
 * nothing.  Frees w in every case. */
CN_API cn_err_t cn_store_writer_publish(cn_store_writer_t *w, cn_digest_t *out, uint64_t *len_out);
/* Discards the upload and frees w.  Accepts NULL. */
CN_API void cn_store_writer_abort(cn_store_writer_t *w);

/* Convenience: one whole buffer through a writer (expect may be NULL). */
CN_API cn_err_t cn_store_put(cn_store_t *s, const void *p, size_t n, const cn_digest_t *expect,
                             cn_digest_t *out);

/* ---- reads ---------------------------------------------------------------- */

/* A raw blob's file, for sendfile(2).  *fd is the caller's to close; *len is
 * the blob length.  Nothing is verified (scrubbing is cn_store_verify),
 * except for a packed blob, whose verified bytes come in a private memory
 * file (CN_E_CORRUPT if they do not hash to d).
 * CN_E_NOT_FOUND; CN_E_UNSUPPORTED for an LZ4-enveloped blob, whose bytes
 * are served by cn_store_read_range instead. */
CN_API cn_err_t cn_store_open_fd(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *len);

/* As cn_store_open_fd, but a small blob's file may come from (and stay in) a
 * cache of open files: the descriptor is borrowed, read it with pread only
 * (or sendfile with an offset pointer), never close it; give it back with
 * cn_store_fd_put(s, fd, handle).  Hold a guard on d while reading.
 * Also CN_E_UNSUPPORTED for a large raw blob the S3 tier is still fetching
 * into its cache (it exists): cn_store_read_range serves it as it lands.
 * The same holds for cn_store_fd_get_at and cn_store_open_fd_at;
 * cn_store_open_fd waits for the whole blob. */
CN_API cn_err_t cn_store_fd_get(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *len,
                                void **handle);
CN_API void cn_store_fd_put(cn_store_t *s, int fd, void *handle);
/* As cn_store_fd_get, but *off receives where the blob's bytes start in *fd:
 * a packed blob is served from its pack's own descriptor, borrowed, at its
 * payload's offset (pread / sendfile with an offset pointer only; never
 * write it), a file at 0.  The descriptor reads the blob's bytes until
 * cn_store_fd_put, through any compaction.  A packed record is hashed on its
 * first such read in the process (CN_E_CORRUPT, reported, if it fails),
 * not after; a file is not (as cn_store_open_fd).  Give it back with
 * cn_store_fd_put.  CN_E_NOT_FOUND, CN_E_UNSUPPORTED (LZ4), CN_E_CORRUPT,
 * -errno. */
CN_API cn_err_t cn_store_fd_get_at(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *off,
                                   uint64_t *len, void **handle);
/* The bytes of blob d, len long (its logical length, as the caller's
 * metadata says), from the store's memory when d is small (len at most
 * CN_STORE_BYTES_MAX) and hot: *p stays valid until
 * cn_store_bytes_put(*handle), whatever becomes of the blob.  A blob's bytes
 * come into memory on its second look in a while, read on the calling
 * thread as cn_store_fd_get_at or cn_store_read_range would.  CN_E_AGAIN
 * (nothing held) when they are not in memory and do not come in now, or d
 * is larger, missing, or not len long: read it the other ways, which
 * report what is wrong.  Hold what keeps d live, as for a descriptor. */
#define CN_STORE_BYTES_MAX (16u * 1024)
CN_API cn_err_t cn_store_bytes_get(cn_store_t *s, const cn_digest_t *d, uint64_t len,
                                   const uint8_t **p, void **handle);
CN_API void cn_store_bytes_put(void *handle); /* NULL is a no-op */
/* As cn_store_open_fd, with the same offset rule as cn_store_fd_get_at:
 * *fd is the caller's to close (read it by offset only: a packed blob's is
 * a duplicate of the pack's); *len (may be NULL) the blob's length. */
CN_API cn_err_t cn_store_open_fd_at(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *off,
                                    uint64_t *len);

/* Receives served bytes in order; a non-zero return stops the read and is
 * returned from cn_store_read_range: a positive one after taking the bytes
 * (a face's "more later"), a negative one without (a relay of the S3 tier
 * serves them again to the next read from the same offset). */
typedef cn_err_t (*cn_store_sink_fn)(void *ctx, const void *p, size_t n);

/* Streams the logical bytes [off, off+len) of blob d to sink, clamped to the
 * blob's end, decoding an LZ4 envelope transparently.  *slice (may be NULL)
 * receives the BLAKE3 of exactly the bytes served, *served (may be NULL) their
 * count.  off > blob length: CN_E_RANGE; off == length serves 0 bytes.
 * At most a bounded buffer (a few hundred KiB) is held, whatever len is.
 * CN_E_NOT_FOUND, CN_E_CORRUPT (an envelope does not decode), -errno. */
CN_API cn_err_t cn_store_read_range(cn_store_t *s, const cn_digest_t *d, uint64_t off, uint64_t len,
                                    cn_store_sink_fn sink, void *ctx, cn_digest_t *slice,
                                    uint64_t *served);
/* The same into buf (at most cap bytes are served; *n = bytes served). */
CN_API cn_err_t cn_store_read_range_buf(cn_store_t *s, const cn_digest_t *d, uint64_t off,
                                        void *buf, size_t cap, size_t *n, cn_digest_t *slice);
/* One part of what a caller serves in parts (a body made piece by piece),
 * into buf as cn_store_read_range_buf.  A blob that the S3 tier is still
 * fetching serves a part that is not the caller's last (last false) as its
 * bytes land; the last part waits until the whole blob hashed to d, so a
 * caller that ends with it never completes unverified bytes. */
CN_API cn_err_t cn_store_read_part(cn_store_t *s, const cn_digest_t *d, uint64_t off, void *buf,
                                   size_t cap, size_t *n, bool last);

typedef struct cn_store_stat {
    uint64_t len;        /* logical length */
    uint64_t stored_len; /* bytes on disk */
    cn_store_form_t form;
    int64_t mtime_ms; /* last publish or refresh, Unix ms */
} cn_store_stat_t;

/* CN_E_NOT_FOUND, CN_E_CORRUPT (unreadable envelope trailer), -errno. */
CN_API cn_err_t cn_store_stat(cn_store_t *s, const cn_digest_t *d, cn_store_stat_t *st);
/* present[i] = whether d[i] is published.  Errors other than absence fail the call. */
CN_API cn_err_t cn_store_have(cn_store_t *s, const cn_digest_t *d, size_t n, bool *present);
/* Re-hashes the stored logical bytes: CN_OK, CN_E_CORRUPT, CN_E_NOT_FOUND. */
CN_API cn_err_t cn_store_verify(cn_store_t *s, const cn_digest_t *d);
/* Restarts d's sweeper grace window.  A service that records a new reference
 * to a blob it did not just publish (e.g. after a "have" said it exists) must
 * touch it, or hold a guard, before committing that reference; if touch says
 * CN_E_NOT_FOUND the blob is gone and must be uploaded again. */
CN_API cn_err_t cn_store_touch(cn_store_t *s, const cn_digest_t *d);
/* Removes blob d now, unless a guard or an unexpired durable pin protects it
 * (CN_E_PINNED).  Liveness sources are not consulted: the caller decided.
 * CN_E_NOT_FOUND if absent. */
CN_API cn_err_t cn_store_delete(cn_store_t *s, const cn_digest_t *d);

/* ---- pins ----------------------------------------------------------------- */

/* In-process guard: while held, neither the sweeper nor cn_store_delete
 * removes d (which need not exist yet: a guard taken before a publish
 * protects the result).  Refcounted per digest; release accepts NULL.
 * -ENOMEM only. */
CN_API cn_err_t cn_store_guard_acquire(cn_store_t *s, const cn_digest_t *d, cn_store_guard_t **out);
CN_API void cn_store_guard_release(cn_store_guard_t *g);

/* Durable pin row (needs opts.meta): protects d until unpinned or until
 * expires_unix_ms (0 = never), a time on this process's clock (cn_wall_ms)
 * that the row keeps as the time left on the metadata's clock, so the
 * sweepers of nodes whose clocks disagree all see it expire at the same
 * moment (docs/fleet.md, "Clocks").  owner_tag (may be NULL, ≤ 255 bytes) is the
 * caller's label, e.g. a namespace's pin token id.  *pin_id identifies the
 * row.  Committed before return.  CN_E_UNSUPPORTED without meta, CN_E_DB. */
CN_API cn_err_t cn_store_pin(cn_store_t *s, const cn_digest_t *d, const char *owner_tag,
                             int64_t expires_unix_ms, uint64_t *pin_id);
/* CN_E_NOT_FOUND if no such pin. */
CN_API cn_err_t cn_store_unpin(cn_store_t *s, uint64_t pin_id);
/* *pinned = d has an unexpired durable pin or a guard. */
CN_API cn_err_t cn_store_is_pinned(cn_store_t *s, const cn_digest_t *d, bool *pinned);

/* ---- liveness and the sweeper -------------------------------------------- */

/* A liveness source answers, for each digest, whether something it owns
 * still refers to it (an object version, a manifest, a namespace member).
 * The batch form answers n digests at once (n ≤ 256): live[i] for d[i].
 * Called from the sweeping thread, without store locks held; a non-zero
 * return aborts the sweep (nothing further is deleted). */
typedef cn_err_t (*cn_store_is_live_fn)(void *ctx, const cn_digest_t *d, bool *live);
typedef cn_err_t (*cn_store_are_live_fn)(void *ctx, const cn_digest_t *d, size_t n, bool *live);

/* Registers a source under a unique name (CN_E_EXISTS otherwise); ctx is
 * borrowed until the store is closed.  Register before the first sweep. */
CN_API cn_err_t cn_store_register_liveness(cn_store_t *s, const char *name,
                                           cn_store_is_live_fn is_live, void *ctx);
CN_API cn_err_t cn_store_register_liveness_batch(cn_store_t *s, const char *name,
                                                 cn_store_are_live_fn are_live, void *ctx);

typedef struct cn_store_sweep_stats {
    uint64_t scanned; /* blobs looked at */
    uint64_t young;   /* kept: inside the grace window */
    uint64_t live;    /* kept: a liveness source holds it */
    uint64_t pinned;  /* kept: a guard or durable pin */
    uint64_t deleted;
    uint64_t bytes_deleted; /* stored bytes */
    uint64_t pins_expired;  /* expired durable pin rows removed */
} cn_store_sweep_stats_t;

/* Removes every blob older than grace_ms (by mtime) that no liveness source
 * holds and no guard or unexpired durable pin protects, and drops expired
 * pin rows; then runs one compaction pass (cn_store_compact).  A publish racing with the sweep is safe: see docs/store.md
 * ("sweeper invariants").  One sweep at a time (a second caller waits).
 * st may be NULL. */
CN_API cn_err_t cn_store_sweep(cn_store_t *s, int64_t grace_ms, cn_store_sweep_stats_t *st);

typedef struct cn_store_compact_stats {
    uint64_t packs;         /* packs looked at (all but the open one) */
    uint64_t packs_retired; /* packs deleted */
    uint64_t records_moved; /* live records copied into the open pack */
    uint64_t bytes_moved;   /* their bytes, headers included */
    uint64_t bytes_freed;   /* size of the packs deleted */
    uint64_t packs_kept;    /* candidates kept (a record failed its check, or raced) */
} cn_store_compact_stats_t;

/* One compaction pass now: every pack (but the open one) whose live bytes
 * are under live_pct percent of its size (0 = the store's
 * opts.pack_compact_pct) has its live records copied into the open pack and
 * is deleted.  Safe beside reads, writes, deletes and sweeps; one pass or
 * sweep at a time.  A record that fails its check is never copied and keeps
 * its pack (counted in packs_kept, reported in the log).  st may be NULL.
 * Errors: meta's, -errno (e.g. -ENOSPC: the pass stops, nothing is lost). */
CN_API cn_err_t cn_store_compact(cn_store_t *s, unsigned live_pct, cn_store_compact_stats_t *st);

typedef struct cn_store_pack_stats {
    uint64_t files;       /* blob files looked at */
    uint64_t candidates;  /* raw ones of at most max_bytes */
    uint64_t moved;       /* now packed, their file removed */
    uint64_t bytes_moved; /* their bytes */
    uint64_t kept;        /* candidates left as files (failed their digest, or raced) */
} cn_store_pack_stats_t;

/* Migration: every raw blob file of at most max_bytes (0 = the default
 * threshold; at most 256 KiB) is read, checked against its digest, appended
 * to the open pack through the group committer and indexed, then its file
 * removed (docs/store.md, "Upgrade").  Never drops a blob (a file goes only
 * once the pack holds it, durably) and touches no mtime-based decision but
 * restarting the grace window of what it moves.  Resumable: a second run
 * finishes what a crash or error left.  Needs the pack index (meta, and
 * packs on or already on disk; CN_E_UNSUPPORTED otherwise);
 * one pass, sweep or compaction at a time.  st may be NULL.  Errors: meta's,
 * -errno (the run stops; what moved is packed, the rest stays files). */
CN_API cn_err_t cn_store_pack_files(cn_store_t *s, uint64_t max_bytes, cn_store_pack_stats_t *st);

/* ---- usage totals (docs/store.md "Usage totals") --------------------------- */

/* The blobs the store holds and their stored bytes (an LZ4 blob counts its
 * compressed size), exact and read without a walk: a digest counts once
 * however often it was put; on a fleet every node reads the same totals.
 * Also sets the gauges cairn_store_blobs and cairn_store_bytes.  Any
 * thread.  Errors: CN_E_UNSUPPORTED (a store opened without meta), meta's. */
CN_API cn_err_t cn_store_usage(cn_store_t *s, uint64_t *blobs, uint64_t *bytes);
/* Folds the committed deltas into the base row (PostgreSQL; a no-op on
 * SQLite and without meta).  Part of the fleet's leased job "usage-fold". */
CN_API cn_err_t cn_store_usage_fold(cn_store_t *s);

/* The totals before and after a recount (cn_store_usage_recount); signed:
 * totals a fault or a hand left below zero are shown as they were. */
typedef struct cn_store_recount {
    int64_t blobs_before, bytes_before;
    int64_t blobs, bytes;
} cn_store_recount_t;

/* Sets the totals to a fresh count of what the store holds: one walk of the
 * backend's blob files plus the pack index rows, written with the deltas
 * cleared in one transaction; *out says what they were and are (also after
 * a failure, as far as it got).  Repairs what a crash between a publish and
 * its note left (docs/store.md "Usage totals").  The caller holds the store
 * alone and nothing else writes its meta (`cairn admin store recount`, with
 * cairnd stopped; never a fleet's shared tier and totals).  Errors:
 * CN_E_UNSUPPORTED (no meta), the backend's, meta's. */
CN_API cn_err_t cn_store_usage_recount(cn_store_t *s, cn_store_recount_t *out);

/* ---- counters ------------------------------------------------------------- */

typedef struct cn_store_counters {
    uint64_t commit_batches; /* group-commit batches flushed */
    uint64_t commit_blobs;   /* publishes they carried */
    uint64_t checkpoints;    /* journal checkpoints (approximate while running) */
} cn_store_counters_t;

/* A snapshot of the store's counters (for metrics). */
CN_API void cn_store_counters(cn_store_t *s, cn_store_counters_t *out);

#ifdef __cplusplus
}
#endif
#endif
