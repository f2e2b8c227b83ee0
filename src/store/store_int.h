/* Internals shared by the files of the store module.  Never included from
 * another module. */
#ifndef CN_STORE_INT_H
#define CN_STORE_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "cairn/store.h"
#include "cairn/cache.h"
#include "cairn/crypto.h"
#include "cairn/meta.h"
#include "cairn/metrics.h"
#include "cairn/side.h"
#include "cairn/util.h"
#include "store/backend.h"

#define CN__STORE_DSLOTS 64         /* slots of the digest locks (dlock.c) */
#define CN__STORE_STAGING_SHARDS 16 /* staging/0 .. staging/f */
#define CN__STORE_GUARD_BUCKETS 256
#define CN__STORE_MAX_SOURCES 32
#define CN__STORE_IO_CHUNK (256u * 1024) /* bounded read/write buffer */
#define CN__STORE_DIO_THREADS 4          /* the side pool of O_DIRECT chunks */
#define CN__STORE_SWEEP_BATCH 256        /* digests per liveness query */
#define CN__STORE_GUARD_SEEN_BITS 65536  /* digests guarded during a sweep batch */

/* A held digest lock, on its holder's stack (dlock.c). */
typedef struct cn__dheld {
    cn_digest_t d;
    struct cn__dheld *next; /* the slot's other held digests */
} cn__dheld_t;

/* A slot of the digest locks: mu guards held and waiting only. */
typedef struct cn__dslot {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when a digest is released and some wait */
    cn__dheld_t *held;
    unsigned waiting;
} cn__dslot_t;

typedef struct cn__guard_node {
    cn_digest_t d;
    uint64_t refs;
    struct cn__guard_node *next;
} cn__guard_node_t;

typedef struct cn__liveness {
    char name[64];
    cn_store_is_live_fn is_live; /* exactly one of the two is set */
    cn_store_are_live_fn are_live;
    void *ctx;
} cn__liveness_t;

/* One publish waiting for the group committer (lives on the writer's stack). */
typedef struct cn__commit_req {
    char staged_name[48];
    const uint8_t *payload; /* the stored bytes, for the journal */
    size_t payload_len;
    cn_digest_t d;
    cn_store_form_t form;
    bool packed;        /* goes to the open pack (pack.c), not the journal; no staged file */
    uint8_t pack_state; /* pack.c's decision for a packed request */
    uint64_t pack_off;  /* its record's offset in the open pack, when appended */
    /* Compaction (sweep.c): move_pack != 0 asks to copy the packed blob
     * found at (move_pack, move_off) into the open pack and move its index
     * entry there, if it is still there (pack.c, P7). */
    uint32_t move_pack;
    uint64_t move_off;
    /* Migration (sweep.c, cn_store_pack_files): append this file blob's
     * bytes to the open pack although its file exists, unless d is packed
     * already or its file is gone (pack.c, P10). */
    bool adopt;
    bool done;
    bool existed;
    cn_err_t rc;
    /* The waiter to wake when this request is done (commit.c): set on the
     * last request of a queued chain, NULL on the others. */
    sem_t *wake;
    struct cn__commit_req *next;
} cn__commit_req_t;

/* What a batch's first stage hands its second (commit.c, pack.c P11). */
typedef struct cn__pack_step {
    bool any; /* the batch has packed requests left to index */
    long seq; /* its ordinal among packed batches (the crash hook's N) */
    uint32_t pack_id;
    uint64_t end;   /* the pack's end after its records: the new indexed_end */
    int64_t now;    /* wall ms: the rows' mtime */
    uint64_t puts0; /* usage_file_puts when the batch began */
} cn__pack_step_t;

typedef struct cn__commit_stage {
    cn__pack_step_t pack;
    cn_err_t fail;                /* < 0: not indexed, its packed requests fail so (P11) */
    int64_t new_files, new_bytes; /* file blobs the batch added (usage) */
} cn__commit_stage_t;

/* The open-descriptor cache (fdcache.c). */
#define CN__FDC_MIN 64               /* slots, whatever the descriptor limit */
#define CN__FDC_MAX 16384            /* slots at most (64 B each) */
#define CN__FDC_WAYS 8               /* slots a digest may sit in */
#define CN__FDC_MAX_LEN (64u * 1024) /* larger blobs are not kept open */
#define CN__FDC_LOCKS 64             /* lock stripes; a set's is set index % CN__FDC_LOCKS */

/* The envelope-index cache (lz4env.c, cn__envix_get). */
#define CN__ENVIX_SLOTS 64                   /* indexes kept at most (of CN_CACHE_WAYS) */
#define CN__ENVIX_BUDGET (16u * 1024 * 1024) /* and their bytes at most */
/* The cache of small blobs' bytes (hot.c, cn_store_bytes_get). */
#define CN__HOT_SLOTS 16384                /* entries at most (of CN_CACHE_WAYS) */
#define CN__HOT_BUDGET (64u * 1024 * 1024) /* and their bytes at most */
#define CN__HOT_SEEN_BITS 65536            /* the doorkeeper's bits */
/* Blocks an index keeps at most (8 MiB of offsets: a 64 GiB blob). */
#define CN__ENVIX_MAX_BLOCKS (UINT64_C(1) << 20)

typedef struct cn__fdc_ent {
    cn_digest_t d;
    int fd; /* -1: empty */
    uint64_t len;
    unsigned refs; /* borrowers; closed only at 0 */
    bool stale;    /* unlinked: close at refs 0 */
    uint64_t used; /* its stripe's tick when last kept or found */
} cn__fdc_ent_t;

/* One lock stripe of the descriptor cache, alone on its cache line(s) so
 * that loops taking different stripes do not share a line. */
typedef struct cn__fdc_lock {
    pthread_mutex_t mu;
    uint64_t tick; /* recency clock of the sets under mu */
    char pad[64 - (sizeof(pthread_mutex_t) + sizeof(uint64_t)) % 64];
} cn__fdc_lock_t;

struct cn_store {
    cn_store_opts_t opts;
    char *data_dir;
    int data_fd; /* DATA */
    /* space.c: the reserve (0: none), the last sample of the free bytes,
     * the bytes writers were let in for since, when it was taken
     * (cn_mono_ns), and the refusals' log line (one a minute). */
    uint64_t min_free;
    _Atomic int64_t free_sample, free_granted, free_at;
    cn_log_limit_t refused_log;
    int staging_fd; /* DATA/staging */
    int lock_fd;    /* DATA/store.lock, flock()ed */
    cn__backend_t *be;
    cn_meta_t *meta;
    /* A tier shared by a fleet (the S3 tier on an engine that is not single
     * writer): puts, touches and pins take the digest's store_blob row, and
     * the sweeper deletes only while holding it (sweep.c, S6-S8). */
    bool blob_rows;
    char *sweep_hold; /* test hook CAIRN_TEST_SWEEP_HOLD=FILE (sweep.c), or NULL */

    /* The digest locks (dlock.c): everything that decides a digest's
     * existence holds its digest's. */
    cn__dslot_t dslots[CN__STORE_DSLOTS];

    pthread_mutex_t guard_mu; /* after a digest lock, never before */
    cn__guard_node_t *guards[CN__STORE_GUARD_BUCKETS];
    /* While a sweep batch is being decided, every guard taken or released
     * sets its digest's bit: a guard that covered a commit the batch's
     * liveness answer may have missed is seen even after its release. */
    bool guard_watch;
    uint64_t guard_seen[CN__STORE_GUARD_SEEN_BITS / 64];

    pthread_mutex_t live_mu;
    cn__liveness_t sources[CN__STORE_MAX_SOURCES];
    size_t n_sources;

    pthread_mutex_t sweep_mu; /* one sweep at a time */

    /* group committer */
    pthread_mutex_t q_mu;
    pthread_cond_t q_cv; /* work arrived, or stop */
    cn__commit_req_t *q_head, *q_tail;
    bool q_stop;
    bool committer_running;
    pthread_t committer;
    uint64_t batches, batched_blobs; /* statistics, under q_mu */
    /* the committer's second stage, the indexer (commit.c; pack.c P11) */
    pthread_mutex_t ix_mu;
    pthread_cond_t ix_cv;       /* a batch handed over or finished, or stop */
    cn__commit_req_t *ix_batch; /* the batch between the stages, or NULL */
    cn__commit_stage_t ix_stage;
    /* A lock timeout the indexer's last transaction ended with: the batch
     * handed over behind it fails with it (P11) */
    cn_err_t ix_lock_err;
    bool ix_stop;
    bool indexer_running;
    pthread_t indexer;

    /* Open files of small raw blobs (cn_store_fd_get): a GET of a small
     * object then costs an fstat instead of a path walk, open and close. */
    cn__fdc_lock_t fdc_lock[CN__FDC_LOCKS];
    cn__fdc_ent_t *fdc; /* fdc_n slots, CN__FDC_WAYS per set; NULL: off */
    size_t fdc_n;

    /* Envelope indexes (lz4env.c), cn__envix_t by file shape; an index's
     * own contents never change. */
    cn_cache_t envix;
    _Atomic uint64_t envix_builds;

    /* Small blobs' bytes (hot.c), by digest; hot_seen is the doorkeeper: a
     * blob's bit is set on its first look, its bytes come in on the next,
     * and the bits are cleared after CN__HOT_SEEN_BITS / 2 first looks. */
    cn_cache_t hot;
    _Atomic uint64_t hot_seen[CN__HOT_SEEN_BITS / 64];
    _Atomic uint32_t hot_seen_n;

    /* Pack files (pack.c).  pack_mu guards the memory index and the packs
     * array (after a digest lock, never before); the open pack's tail and
     * pack_buf belong to the committer thread. */
    _Atomic bool dio_off; /* large staged files use the page cache (writer.c) */
    cn_side_t *dio_side;  /* their O_DIRECT chunks are written here (writer.c, W7) */
    bool pack_on;
    uint32_t pack_max; /* stored bytes at most, when pack_on */
    int packs_fd;      /* DATA/packs */
    pthread_mutex_t pack_mu;
    struct cn__pack_ent **pidx; /* CN__PACK_BUCKETS chains */
    uint64_t pidx_count;
    struct cn__pack_file *packs;
    size_t n_packs, cap_packs;
    size_t cur_pack; /* index into packs of the pack appended to */
    cn_buf_t pack_buf;
    int pack_crash_at;       /* test hook (CAIRN_TEST_PACK_CRASH "P:N"): 0 off, 1..3 */
    long pack_crash_n;       /* ... at the Nth batch */
    long pack_batches;       /* packed batches so far (committer thread) */
    int pack_index_delay_ms; /* test hook (CAIRN_TEST_PACK_INDEX_DELAY_MS): a slow stage 2 */
    int compact_crash_at;    /* test hook (CAIRN_TEST_COMPACT_CRASH "P"): 0 off, 1..4 */
    uint64_t pack_file_max;  /* roll size: CN__PACK_FILE_MAX (tests: CAIRN_TEST_PACK_FILE_MAX) */
    /* Descriptors of packs retired by the last compaction pass: let go by
     * the next pass (or close), so a reader that looked a location up before
     * the retirement still preads the old, unchanged bytes (sweep.c, C5);
     * closed once no cn_store_fd_get_at borrower holds them (pack.c, P9). */
    struct cn__pack_ref **pack_dead_fds;
    size_t n_pack_dead;

    /* usage totals (usage.c): until usage_ready (the end of open), notes
     * are summed here instead of written (the journal replays before the
     * store's tables are migrated). */
    bool usage_ready;
    bool usage_off;    /* CAIRN_TEST_STORE_USAGE_OFF (the A/B of docs/performance.md) */
    bool usage_marked; /* this open marked the totals open (walked 2): close marks them 1 */
    int64_t usage_open_blobs, usage_open_bytes;
    long usage_crash_n;               /* CAIRN_TEST_STORE_USAGE_CRASH: SIGKILL at that note */
    _Atomic long usage_crash_seen;    /* file-put notes so far, when the hook is set */
    _Atomic uint64_t usage_file_puts; /* large publishes that noted a file (pack.c, P4) */

    /* small-blob journal (journal.c): committer thread only */
    int journal_fd;
    uint64_t journal_len;
    uint64_t checkpoints;
    cn_buf_t journal_buf;
};

/* Digest locks (dlock.c; its invariants D1-D3).  cn__dlock waits until no
 * other thread holds d's lock (a holder of another digest is never waited
 * for), then holds it through h, which the caller keeps (its stack) until
 * cn__dunlock(s, h).  Not recursive.  "Under d's digest lock" in this
 * module means between cn__dlock and cn__dunlock of d. */
void cn__dlock_init(cn_store_t *s);
void cn__dlock_destroy(cn_store_t *s); /* no lock may be held */
void cn__dlock(cn_store_t *s, const cn_digest_t *d, cn__dheld_t *h);
void cn__dunlock(cn_store_t *s, cn__dheld_t *h);

/* Little-endian field helpers of the on-disk records (journal, packs). */
static inline void cn__le32_put(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t cn__le32_get(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* staging name helpers (store.c) */
cn_err_t cn__store_staging_name(char out[48]);
/* Whether large staged files may bypass the page cache (O_DIRECT), and
 * the writer's report that the staging file system refused it. */
bool cn__store_dio_ok(const cn_store_t *s);
void cn__store_dio_refused(cn_store_t *s);
/* cn_store_open_fd; lazy: a blob the backend is still fetching may be
 * CN_E_UNSUPPORTED (read it with cn_store_read_range, which streams it),
 * as the faces' descriptor paths allow (store.h). */
cn_err_t cn__store_open_fd(cn_store_t *s, const cn_digest_t *d, bool lazy, int *fd, uint64_t *len);
/* name has the form cn__store_staging_name gives: "<shard>/<32 hex>.part",
 * which no blob name has (W1: only such names are ever written). */
static inline bool cn__store_is_staged_name(const char *name)
{
    return name[0] && name[1] == '/' && strlen(name) == 39 && !strcmp(name + 34, ".part");
}

/* guards (pins.c) */
bool cn__store_guarded(cn_store_t *s, const cn_digest_t *d);
/* Starts (clearing what an earlier batch saw) or ends the watch above. */
void cn__store_guard_watch(cn_store_t *s, bool on);
/* d is guarded now, or a guard on it was taken or released since the watch
 * began (or shares its bit: a false "yes" only keeps a blob one sweep
 * longer). */
bool cn__store_guarded_since_watch(cn_store_t *s, const cn_digest_t *d);
/* durable pins: *pinned = an unexpired row protects d (false without meta). */
cn_err_t cn__store_pinned_durable(cn_store_t *s, const cn_digest_t *d, bool *pinned);
/* S7 (sweep.c): with blob_rows, upserts d's store_blob row with touched_ms =
 * now in a committed write transaction of its own (waiting for a sweeper
 * that holds the row, bounded, repeated on contention); call it before the
 * backend put or touch of d, without d's digest lock.  A no-op otherwise.
 * Errors: meta's (the caller then acknowledges nothing). */
cn_err_t cn__store_blob_row_touch(cn_store_t *s, const cn_digest_t *d);
/* The same statement inside the caller's write transaction (a pin's). */
cn_err_t cn__store_blob_row_upsert(cn_meta_txn_t *txn, const cn_digest_t *d);
/* Whether a pin of d is live on the metadata's clock: CN_META_ROW if one
 * is, CN_OK if none, or meta's error. */
cn_err_t cn__store_pin_find_live(cn_meta_txn_t *txn, const cn_digest_t *d);

/* fdcache.c.  init never fails (without memory the cache is off); forget
 * closes, or marks for its last borrower to close, d's kept descriptor once
 * d's file was removed (called under d's digest lock). */
void cn__fdc_init(cn_store_t *s);
void cn__fdc_close(cn_store_t *s);
void cn__fdc_forget(cn_store_t *s, const cn_digest_t *d);
/* hot.c.  open never fails (without memory the cache is off). */
void cn__hot_open(cn_store_t *s);
void cn__hot_close(cn_store_t *s);
cn_err_t cn__store_pins_migrate(cn_store_t *s);
/* Drops the pins expired on the metadata's clock; *removed their count. */
cn_err_t cn__store_pins_expire(cn_store_t *s, uint64_t *removed);

/* group committer (commit.c) */
cn_err_t cn__committer_start(cn_store_t *s);
void cn__committer_stop(cn_store_t *s);
/* Queues req and waits until the batch that holds it is durable. */
cn_err_t cn__committer_submit(cn_store_t *s, cn__commit_req_t *req);
/* Returns once no batch is between the committer's stages (P11): every
 * batch appended so far is indexed (or failed).  Committer thread, or a
 * store without one (then at once). */
void cn__committer_drain(cn_store_t *s);
/* Queues the n packed requests of reqs[] as one chain and waits for all of
 * them (compaction); without a committer thread (batch_disable) runs the
 * pack step on the calling thread.  Each request's rc says its fate. */
void cn__committer_submit_packed(cn_store_t *s, cn__commit_req_t *reqs, size_t n);

/* Metrics of every store in the process (commit.c), registered on first use:
 * blobs newly stored and their stored bytes by form (index cn_store_form_t),
 * fsync latency of the journal and of large blobs, group-commit batch sizes,
 * sweeps and the bytes they freed, small blobs' bytes served from memory and
 * read into it. */
typedef struct cn__store_metrics {
    cn_metric_t *blobs[2], *bytes[2];
    cn_metric_t *fsync_journal, *fsync_blob;
    cn_metric_t *batch_blobs;
    cn_metric_t *sweeps, *sweep_freed;
    cn_metric_t *hot_hits, *hot_fills;
} cn__store_metrics_t;
const cn__store_metrics_t *cn__store_metrics(void);

/* usage totals (usage.c; docs/store.md "Usage totals").  note adds blobs
 * and their stored bytes (negative: removed) for blob files, which have no
 * meta row; packed blobs are counted by their index rows' triggers, after
 * which a note of (0, 0) only sets the gauges from the totals.  Never
 * fails (logs); a no-op without meta.  Any thread, any lock held.  open
 * runs at the end of cn_store_open: the first count of the files, once per
 * database, or the replay's notes. */
void cn__store_usage_note(cn_store_t *s, int64_t blobs, int64_t bytes);
cn_err_t cn__store_usage_open(cn_store_t *s);
/* At cn_store_close, after the last note: marks the totals closed (one
 * durable meta commit, which also makes every earlier note durable), so
 * the next open needs no recount.  Logs a failure (that open recounts). */
void cn__store_usage_close(cn_store_t *s);
/* Under d's digest lock, after the backend put a new file of d: whether
 * the caller notes it (false when d is packed: its row counts it).  Counts
 * the put in usage_file_puts, which the committer's index step reads. */
bool cn__store_usage_file_new(cn_store_t *s, const cn_digest_t *d);
/* Moves the gauges alone by (blobs, bytes): packed blobs a batch indexed,
 * which their rows' triggers counted (no read of the totals per batch; the
 * next note or cn_store_usage sets the gauges from the totals again). */
void cn__store_usage_gauges_add(cn_store_t *s, int64_t blobs, int64_t bytes);

/* small-blob journal (journal.c) */
cn_err_t cn__journal_open(cn_store_t *s); /* replays, then empties */
void cn__journal_close(cn_store_t *s);    /* checkpoints */
/* Appends the batch's records and fdatasyncs the journal. */
cn_err_t cn__journal_commit(cn_store_t *s, cn__commit_req_t *batch);
cn_err_t cn__journal_maybe_checkpoint(cn_store_t *s);
cn_err_t cn__journal_checkpoint(cn_store_t *s);

/* ---- pack files (pack.c; docs/store.md "Pack files") ---- */
#define CN__PACK_REC_HDR 48
#define CN__PACK_BUCKETS 65536u
#define CN__PACK_FILE_MAX (1ull << 30) /* a new pack once the open one would pass it */

/* One decoded record: payload points into the caller's buffer. */
typedef struct cn__pack_rec {
    cn_digest_t d;
    cn_store_form_t form;
    uint32_t len;
    const uint8_t *payload;
} cn__pack_rec_t;

/* Writes the 48-byte header of a record of payload p[0..n). */
void cn__pack_rec_header(const cn_digest_t *d, cn_store_form_t form, const uint8_t *p, uint32_t n,
                         uint8_t out[CN__PACK_REC_HDR]);
/* Decodes the record at p (avail bytes): CN_OK with *used = its size;
 * CN_E_AGAIN when the header or the payload is cut short (a torn tail);
 * CN_E_CORRUPT for a bad magic, flags, form, a length over max_len or a CRC
 * mismatch.  Never reads past avail; does not check the digest. */
cn_err_t cn__pack_rec_decode(const uint8_t *p, size_t avail, uint32_t max_len, cn__pack_rec_t *out,
                             size_t *used);

/* Where a packed blob's bytes are: fd is the pack's (kept open while the
 * store is open: never close it), off the payload's offset in it. */
typedef struct cn__pack_loc {
    cn_digest_t d;
    int fd;
    uint64_t off;
    uint32_t len;
    int64_t mtime_ms;
} cn__pack_loc_t;

/* Opens DATA/packs, loads the index and recovers every pack (P5).  Does
 * nothing without meta, or when opts.pack_max_bytes is 0 and DATA/packs does
 * not exist (packs on disk are served whatever the setting). */
cn_err_t cn__pack_open(cn_store_t *s);
void cn__pack_close(cn_store_t *s);
/* Whether a finished blob of this form and stored size goes to a pack. */
bool cn__pack_wants(const cn_store_t *s, cn_store_form_t form, uint64_t stored);
/* The committer's step for the batch's packed requests (P1-P4): sets each
 * one's rc and existed.  Both stages below, one after the other. */
void cn__pack_commit(cn_store_t *s, cn__commit_req_t *batch);
/* Stage 1 (P1, P4): decides each packed request, appends and syncs the new
 * records; *st is what stage 2 needs.  A failed append fails the requests
 * it covers and leaves nothing for stage 2.  Committer thread. */
void cn__pack_append(cn_store_t *s, cn__commit_req_t *batch, cn__pack_step_t *st);
/* Stage 2 (P2, P7): the batch's index transaction, then its memory entries;
 * sets rc of the requests it fails and returns the transaction's error.  In
 * batch order, one thread (P11). */
cn_err_t cn__pack_index(cn_store_t *s, cn__commit_req_t *batch, const cn__pack_step_t *st);
/* Stage 2 instead, for a batch that is not to be indexed (P3, P11): fails
 * every packed request stage 1 appended or shared with rc. */
void cn__pack_fail(cn__commit_req_t *batch, cn_err_t rc);
/* true and *loc when d is packed (a snapshot: the entry may go after). */
bool cn__pack_find(cn_store_t *s, const cn_digest_t *d, cn__pack_loc_t *loc);
/* Zero-copy read of d (P9): *loc with loc->fd a duplicate of its pack's
 * descriptor (the caller closes it) and loc->off the payload's offset.  The
 * record is hashed on its first such read in this process (CN_E_CORRUPT,
 * reported, when it fails; nothing handed out).  CN_E_NOT_FOUND when d is
 * not packed, -errno. */
cn_err_t cn__pack_dup(cn_store_t *s, const cn_digest_t *d, cn__pack_loc_t *loc);
/* The same without a duplicate: loc->fd is the pack's own descriptor,
 * borrowed (*ref counts it: give it back with cn__pack_ref_put, never close
 * it).  A borrow costs no system call once the record is checked. */
cn_err_t cn__pack_borrow(cn_store_t *s, const cn_digest_t *d, cn__pack_loc_t *loc, void **ref);
void cn__pack_ref_put(void *ref);
/* The verified payload of loc into buf (loc->len bytes): CN_E_CORRUPT when
 * the bytes do not hash to the digest (reported, never served). */
cn_err_t cn__pack_read(const cn__pack_loc_t *loc, uint8_t *buf);
/* Under d's digest lock: CN_E_NOT_FOUND when d is not packed. */
cn_err_t cn__pack_touch_locked(cn_store_t *s, const cn_digest_t *d);
cn_err_t cn__pack_remove_locked(cn_store_t *s, const cn_digest_t *d, uint64_t *freed);
/* Calls fn for every packed blob (a snapshot taken first: fn may lock). */
cn_err_t cn__pack_list(cn_store_t *s, cn__be_list_fn fn, void *ctx);

/* Compaction's view of the packs (pack.c; the pass itself is sweep.c). */
typedef struct cn__pack_usage {
    uint32_t id;
    uint64_t size; /* synced end */
    uint64_t live; /* bytes of indexed records (header included) */
    uint64_t n_live;
} cn__pack_usage_t;
/* The packs other than the open one, with their live bytes: *out (malloc'd,
 * the caller frees) holds *n entries. */
cn_err_t cn__pack_usage(cn_store_t *s, cn__pack_usage_t **out, size_t *n);
/* One live record of a pack, as the memory index has it. */
typedef struct cn__pack_live {
    cn_digest_t d;
    uint64_t off; /* of the record */
    uint32_t len;
} cn__pack_live_t;
/* The records of pack id that the index still points at, by offset. */
cn_err_t cn__pack_live_list(cn_store_t *s, uint32_t id, cn__pack_live_t **out, size_t *n);
/* Reads and checks (CRC, digest) the record at off of pack id into buf
 * (CN__PACK_REC_HDR + len bytes); CN_E_CORRUPT if it does not check out. */
cn_err_t cn__pack_read_record(cn_store_t *s, uint32_t id, const cn__pack_live_t *e, uint8_t *buf);
/* Retires pack id once nothing is indexed in it (C4-C5 in sweep.c):
 * CN_E_BUSY (kept) if an index row still names it; *freed = its size. */
cn_err_t cn__pack_retire(cn_store_t *s, uint32_t id, uint64_t *freed);
/* Closes the descriptors the previous pass retired. */
void cn__pack_reap(cn_store_t *s);
/* Test hook of compaction (CAIRN_TEST_COMPACT_CRASH): SIGKILL at point. */
void cn__pack_compact_crash(cn_store_t *s, int point);

/* Blob-level queries over packs then files (store.c).  Under d's digest lock:
 * remove from both; CN_E_NOT_FOUND if in neither. */
cn_err_t cn__store_remove_locked(cn_store_t *s, const cn_digest_t *d, uint64_t *freed);
/* stat of d, packed or file. */
cn_err_t cn__store_stat_any(cn_store_t *s, const cn_digest_t *d, cn__be_stat_t *st);

/* BLAKE3 of the logical bytes of a stored file (read.c). */
cn_err_t cn__store_hash_fd(int fd, uint64_t size, cn_store_form_t form, cn_digest_t *out);

/* LZ4 envelope (lz4env.c) */
#define CN__ENV_HEADER_LEN 16
#define CN__ENV_TRAILER_LEN 32
#define CN__ENV_BLOCK_LOG 16 /* 64 KiB logical blocks */
#define CN__ENV_RAW_FLAG 0x80000000u

void cn__env_header(uint8_t out[CN__ENV_HEADER_LEN]);
void cn__env_trailer(uint64_t raw_len, uint64_t n_blocks, uint32_t index_crc,
                     uint8_t out[CN__ENV_TRAILER_LEN]);
/* Parsed, validated shape of an enveloped file. */
typedef struct cn__env {
    uint64_t raw_len;
    uint64_t n_blocks;
    uint32_t block_log;
    uint32_t index_crc;
    uint64_t index_off; /* file offset of the index */
} cn__env_t;
/* Reads header and trailer of fd (size bytes): CN_E_CORRUPT if malformed. */
cn_err_t cn__env_open(int fd, uint64_t size, cn__env_t *e);

/* What names a cached index: the file's shape, digest | size u64 |
 * index_crc u32 | n_blocks u64 | raw_len u64 (little-endian). */
#define CN__ENVIX_KEY_LEN (CN_DIGEST_LEN + 8 + 4 + 8 + 8)

/* An envelope's index, validated (checksum, every stored size, their sum):
 * the file offset of each stored block (off[n_blocks] is the index's own)
 * and which are stored raw.  Immutable once built; shared by reference. */
typedef struct cn__envix {
    cn_cent_t ent; /* key = kbuf when cached (else none); version (0, 0) */
    uint8_t kbuf[CN__ENVIX_KEY_LEN];
    cn__env_t e;
    uint64_t first, count; /* the blocks whose offsets it keeps */
    uint64_t *off;         /* n_blocks + 1 */
    uint8_t *raw;          /* bit i: block i stored raw */
} cn__envix_t;
/* Reads and validates all of e's index from fd: a new index (refs 1, no
 * key) for cn__envix_put, keeping the offsets of blocks [first, first +
 * count) (count at most CN__ENVIX_MAX_BLOCKS).  CN_E_CORRUPT, CN_E_INVALID
 * (blocks out of range), -ENOMEM, I/O errors. */
cn_err_t cn__env_index(int fd, const cn__env_t *e, uint64_t first, uint64_t count,
                       cn__envix_t **out);
void cn__envix_put(cn__envix_t *ix); /* drops a reference; NULL is a no-op */
/* Streams logical [off, off+n) (already clamped, and within the blocks ix
 * keeps: else CN_E_INVALID) of the envelope to sink, hashing into h (unless
 * NULL), by ix (fd's index): each block is checked as it decodes.  Decodes through
 * buffers its thread keeps (lz4env.c): after a thread's first read, no
 * allocation per call for blocks of CN__ENV_BLOCK_LOG or smaller. */
cn_err_t cn__env_read(int fd, const cn__envix_t *ix, uint64_t off, uint64_t n,
                      cn_store_sink_fn sink, void *ctx, cn_blake3_t *h);

/* The store's cache of envelope indexes (lz4env.c), so that ranged reads of
 * one enveloped blob read and check its index once, not once per range: d's
 * index for fd (size bytes, shape e), held (cn__envix_put), from the cache
 * when one was built for the same digest, file size and index checksum,
 * else built and offered to it.  An envelope of more than
 * CN__ENVIX_MAX_BLOCKS blocks is not kept: its index is read for the
 * blocks of logical [off, off+n) only.  cn__env_index's errors. */
cn_err_t cn__envix_get(cn_store_t *s, const cn_digest_t *d, int fd, uint64_t size,
                       const cn__env_t *e, uint64_t off, uint64_t n, cn__envix_t **out);
/* The cache's life, with the store's: without memory for it at open it is
 * off, and every ranged read builds its index. */
void cn__envix_open(cn_store_t *s);
void cn__envix_close(cn_store_t *s);
/* Indexes cn__envix_get has built (read and checked) in s (tests). */
uint64_t cn__store_envix_builds(cn_store_t *s);

/* space.c: the free-space reserve (opts.min_free_bytes), taken at open;
 * and its check, at every writer's open: -ENOSPC while the data file
 * system has less than the reserve plus len (when >= 0) free. */
void cn__store_space_init(cn_store_t *s);
cn_err_t cn__store_room(cn_store_t *s, int64_t len);

#endif
