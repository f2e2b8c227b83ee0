/* Pack files: small blobs appended to one open pack and indexed in meta, so
 * a batch of them costs one fdatasync and no inode (docs/store.md, "Pack
 * files").  This file owns the record format, the memory copy of the index,
 * the committer's pack step and the recovery scan.  It must never let an
 * index entry (in meta or in memory) exist without its synced bytes, never
 * rewrite a record in place, and never hand out bytes that do not hash to
 * their digest (cn__pack_read).
 *
 * Pack invariants:
 *  P1. A batch's records are appended with one pwrite at the pack's synced
 *      end and made durable with ONE fdatasync before anything about them is
 *      written to meta or shown to a reader.
 *  P2. The batch's index rows and the pack's new indexed_end are written in
 *      ONE meta transaction, committed after P1 WITHOUT waiting for meta's
 *      sync (cn_meta_commit_nowait); only then are the entries put in the
 *      memory index and the writers woken.  So no index entry lacks its
 *      bytes, and a batch costs one sync, the pack's: the pack is the
 *      journal.  Proof that an acknowledged blob survives a crash: its
 *      record is synced (P1); if the commit's frames did not survive, meta
 *      lost a suffix of commits (they become durable in order, and every
 *      later durable commit covers this one), so indexed_end is the one of
 *      an earlier batch and recovery (P5) re-indexes every complete record
 *      past it, this one included.  What else the commit held is harmless
 *      to lose with it: an mtime refresh (PS_REFRESH_PACK) matters only to
 *      a reference some service committed later, durably, which covers
 *      it; a compaction move (P7) leaves the row at its old location,
 *      whose pack is retired only after a durable commit (sweep.c, C4).
 *  P3. A failed append or sync fails every packed request of the batch and
 *      cuts the pack back to its synced end (best effort: recovery drops a
 *      torn tail anyway); a failed meta commit fails them too, and their
 *      synced records become dead space, never indexed nor acknowledged.
 *  P4. Existence is decided under the digest's lock: a digest already
 *      in the index or in the file tree is refreshed, not written again (the
 *      tree is probed only where the backend cannot rule d out: may_have).  A
 *      file visible under that lock is durable (a large publish fsyncs its
 *      directory before unlocking; a journalled one is renamed only after
 *      its journal sync), so the refresh needs no sync (W4).
 *  P5. Recovery, before anything is served: index entries past a pack's end
 *      are dropped (logged: the disk lied); records from indexed_end on are
 *      decoded, CRC- and digest-checked and re-indexed in order; the first
 *      one that fails and all after it were never acknowledged and are
 *      truncated away, after the re-indexing transaction commits.
 *  P6. Deleting a packed blob removes its index row, then its memory entry;
 *      the record stays until compaction retires its pack and, lying before
 *      indexed_end, is never re-indexed by a later recovery.
 *  P7. A compaction move (a request with move_pack set) is decided under the
 *      digest's lock like P4: it is appended only if the memory index
 *      still points at (move_pack, move_off), and it rides a committer batch,
 *      so P1-P3 cover its bytes.  Its index row moves with a conditional
 *      UPDATE (same digest, same old location) in the batch's transaction,
 *      and its memory entry moves afterwards only if still at the old place:
 *      a delete, touch or re-put racing the move wins, and the copy becomes
 *      dead space.  If recovery re-indexes a copy whose move was not
 *      committed, the insert keeps the existing row (ON CONFLICT DO NOTHING).
 *  P8. A store_pack row with indexed_end = -1 names a pack being retired
 *      (sweep.c, C4): at open its file, if still there, is unlinked and the
 *      row dropped; such a pack is never loaded.
 *  P9. A zero-copy read gets the pack's descriptor and the payload's
 *      offset, taken under pack_mu while its entry names that live pack:
 *      borrowed through the pack's reference count (cn__pack_borrow,
 *      cn_store_fd_get_at: the store's own reference is dropped only by the
 *      pass after the pack's retirement, and the last reference closes the
 *      descriptor), or duplicated (cn__pack_dup, cn_store_open_fd_at: the
 *      duplicate keeps the inode).  P1/P3/P5 never change bytes before
 *      indexed_end, so either serves the blob's bytes for as long as it is
 *      held, through any compaction.  Each record is hashed on its first
 *      such read in the process (then marked), so a record damaged before
 *      that read is reported and never sent.
 * P10. Migration of a file blob into a pack (an adopt request, sweep.c
 *      cn_store_pack_files) is decided under its digest lock: appended only
 *      if d is not packed and its file is still there, so it rides a batch
 *      like a new blob (P1-P3).  The file is removed afterwards, under the
 *      digest lock and only if the memory index holds d: by then the record
 *      is synced (P1) and indexed, and a crash that loses the index commit
 *      (P2) is repaired by recovery re-indexing it (P5).  Both copies hold
 *      the same verified bytes, and reads look in the pack first.  The
 *      usage totals uncount the file in the rows' transaction (a digest
 *      counts once, usage.c), so its removal notes nothing.
 * P11. A batch runs in two stages on two threads (commit.c): its decisions,
 *      append and sync (P4, P1) on the committer, its index transaction,
 *      memory entries and wake-ups (P2) on the indexer, so the next batch's
 *      sync overlaps this one's transaction.  At most one batch is between
 *      the stages, and index transactions commit in batch order, so a
 *      pack's indexed_end only grows and P2's proof holds as it stands (a
 *      crash between the stages is point 2 of one batch).  A batch that
 *      would pack a digest the batch in flight packs waits for that one's
 *      index first, so P4 never takes a record in flight for an absent
 *      one; and the pack rolls only once nothing is in flight, so a pack
 *      that is no longer the open one (and may be compacted, C1-C5) has
 *      every record it will ever have indexed, or failed for good (P3).
 *      A batch that waited behind one whose index transaction failed on a
 *      lock timeout is failed with it, not indexed (P3 again): so a writer
 *      waits at most two lock deadlines, as with one committer thread.
 * P12. The open pack's file may run past its end with zeros
 *      (opts.pack_zero_ahead): a batch that would reach past them writes
 *      the next zeros beyond its records before its pwrite, and its one
 *      fdatasync (P1) makes both durable, so the syncs between grow no
 *      file.  Zeros are never a record (a zero header fails its magic), so
 *      recovery (P5) ends at them as at a torn tail and cuts them; a roll
 *      and a clean close cut them too (best effort: a crash leaves them to
 *      recovery).  A failed zero write is not the batch's failure: the
 *      batch appends as without zeros, and P3's cut takes the zeros too.
 *
 * Lock order: a digest lock, then pack_mu.  No I/O under pack_mu (P9's
 * descriptor duplicate is the one system call made under it).  Pack
 * descriptors stay open until the store closes, or, for a pack compaction
 * retired, until the next compaction pass (sweep.c, C5) and the last
 * borrower's cn_store_fd_put, so a reader may pread one after dropping the
 * lock.
 */
#include "store/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "cairn/util.h"
#include "meta/sql/store.h"

struct cn__pack_ent {
    cn_digest_t d;
    uint32_t pack_id;
    uint32_t len : 31;
    /* The record at (pack_id, off) was read back and hashed by a zero-copy
     * read (cn__pack_dup) of this process: later ones send it unhashed.
     * Cleared by a move (P7); never set by an append. */
    uint32_t verified : 1;
    uint64_t off; /* of the record (its header) */
    int64_t mtime_ms;
    struct cn__pack_ent *next;
};

/* A pack descriptor's owners (P9): the store, one reference while the pack
 * is live, let go by the pass after its retirement (C5) or at close; and
 * each cn_store_fd_get_at borrower.  The last one closes it. */
struct cn__pack_ref {
    int fd;
    atomic_uint refs;
};

static void ref_put(struct cn__pack_ref *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        close(r->fd);
        free(r);
    }
}

void cn__pack_ref_put(void *ref)
{
    ref_put(ref);
}

struct cn__pack_file {
    uint32_t id;
    int fd;                   /* -1 once retired (its ref waits in pack_dead_fds) */
    struct cn__pack_ref *ref; /* owns fd */
    uint64_t end;             /* synced end (the committer appends here) */
    uint64_t zeroed;          /* P12: the file's size, zeros past end (open pack) */
    uint64_t indexed_end;     /* what meta's store_pack row says */
    bool retiring;            /* store_pack says -1: finish the retirement at open */
};

/* A packed request's fate, decided in the committer (P4). */
enum {
    PS_NEW,
    PS_DUP,
    PS_REFRESH_PACK,
    PS_REFRESH_FILE,
    PS_MOVE, /* compaction: copy the record, move its entry (P7) */
    PS_SKIP  /* compaction: the entry is no longer where the move saw it */
};

static const uint8_t rec_magic[4] = { 'C', 'N', 'P', '1' };

static void pack_name(uint32_t id, char name[32])
{
    snprintf(name, 32, "%08" PRIx32 ".pack", id);
}

/* ---- record format ------------------------------------------------------- */

static uint32_t rec_crc(const uint8_t *hdr, const uint8_t *p, uint32_t n)
{
    return cn_crc32c(cn_crc32c(0, hdr, 44), p, n);
}

void cn__pack_rec_header(const cn_digest_t *d, cn_store_form_t form, const uint8_t *p, uint32_t n,
                         uint8_t out[CN__PACK_REC_HDR])
{
    memset(out, 0, CN__PACK_REC_HDR);
    memcpy(out, rec_magic, 4);
    cn__le32_put(out + 4, n);
    out[8] = (uint8_t)form;
    memcpy(out + 12, d->b, CN_DIGEST_LEN);
    cn__le32_put(out + 44, rec_crc(out, p, n));
}

cn_err_t cn__pack_rec_decode(const uint8_t *p, size_t avail, uint32_t max_len, cn__pack_rec_t *out,
                             size_t *used)
{
    *used = 0;
    if (avail < CN__PACK_REC_HDR)
        return CN_E_AGAIN;
    if (memcmp(p, rec_magic, 4) != 0 || p[8] != CN_STORE_RAW || p[9] || p[10] || p[11])
        return CN_E_CORRUPT;
    uint32_t n = cn__le32_get(p + 4);
    if (n > max_len)
        return CN_E_CORRUPT;
    if (n > avail - CN__PACK_REC_HDR)
        return CN_E_AGAIN;
    if (cn__le32_get(p + 44) != rec_crc(p, p + CN__PACK_REC_HDR, n))
        return CN_E_CORRUPT;
    memcpy(out->d.b, p + 12, CN_DIGEST_LEN);
    out->form = (cn_store_form_t)p[8];
    out->len = n;
    out->payload = p + CN__PACK_REC_HDR;
    *used = CN__PACK_REC_HDR + (size_t)n;
    return CN_OK;
}

static bool digest_ok(const cn_digest_t *d, const uint8_t *p, size_t n)
{
    cn_digest_t got;
    cn_blake3(p, n, &got);
    return memcmp(got.b, d->b, CN_DIGEST_LEN) == 0;
}

/* ---- memory index (pack_mu held) ------------------------------------------ */

static struct cn__pack_ent **find_locked(cn_store_t *s, const cn_digest_t *d)
{
    struct cn__pack_ent **pp = &s->pidx[cn__le32_get(d->b + 4) % CN__PACK_BUCKETS];
    while (*pp && memcmp((*pp)->d.b, d->b, CN_DIGEST_LEN) != 0)
        pp = &(*pp)->next;
    return pp;
}

/* Adds an entry unless d is indexed already (the first record wins). */
static cn_err_t index_add_locked(cn_store_t *s, const cn_digest_t *d, uint32_t pack_id,
                                 uint64_t off, uint32_t len, int64_t mtime_ms)
{
    struct cn__pack_ent **pp = find_locked(s, d);
    if (*pp)
        return CN_OK;
    struct cn__pack_ent *e = malloc(sizeof *e);
    if (!e)
        return -ENOMEM;
    *e = (struct cn__pack_ent){ *d, pack_id, len, 0, off, mtime_ms, NULL };
    *pp = e;
    s->pidx_count++;
    return CN_OK;
}

static struct cn__pack_file *pack_by_id_locked(cn_store_t *s, uint32_t id)
{
    for (size_t i = 0; i < s->n_packs; i++)
        if (s->packs[i].id == id && s->packs[i].fd >= 0)
            return &s->packs[i];
    return NULL;
}

bool cn__pack_find(cn_store_t *s, const cn_digest_t *d, cn__pack_loc_t *loc)
{
    if (!s->pack_on)
        return false;
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_ent *e = *find_locked(s, d);
    struct cn__pack_file *pf = e ? pack_by_id_locked(s, e->pack_id) : NULL;
    if (CN_ALWAYS(!e || pf)) {
        if (e)
            *loc = (cn__pack_loc_t){ *d, pf->fd, e->off + CN__PACK_REC_HDR, e->len, e->mtime_ms };
    }
    pthread_mutex_unlock(&s->pack_mu);
    return e && pf;
}

/* P9 (zero-copy reads): the descriptor is duplicated under pack_mu while
 * the entry names a live pack, so it is open then (a retired pack's
 * descriptor is closed only by a later pass, C5) and the duplicate keeps the
 * inode; the record's bytes never change (P1: append-only, never rewritten;
 * P3 and P5 cut only past indexed_end).  So the duplicate serves d's bytes
 * at that offset for as long as it is held, whatever compaction does. */
static cn_err_t dup_locked(cn_store_t *s, const cn_digest_t *d, cn__pack_loc_t *loc,
                           uint32_t *pack_id, bool *verified)
{
    struct cn__pack_ent *e = *find_locked(s, d);
    struct cn__pack_file *pf = e ? pack_by_id_locked(s, e->pack_id) : NULL;
    if (!e || !CN_ALWAYS(pf))
        return CN_E_NOT_FOUND;
    int f = fcntl(pf->fd, F_DUPFD_CLOEXEC, 0);
    if (f < 0)
        return -errno;
    *loc = (cn__pack_loc_t){ *d, f, e->off + CN__PACK_REC_HDR, e->len, e->mtime_ms };
    *pack_id = e->pack_id;
    *verified = e->verified;
    return CN_OK;
}

/* The first zero-copy read of a record: hash it once (a flipped byte is
 * reported, never sent), then mark it if it is still the same record. */
static cn_err_t check_first(cn_store_t *s, const cn__pack_loc_t *loc, uint32_t id)
{
    uint8_t *buf = malloc(loc->len ? loc->len : 1);
    cn_err_t rc = buf ? cn__pack_read(loc, buf) : -ENOMEM;
    free(buf);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_ent *e = *find_locked(s, &loc->d);
    if (e && e->pack_id == id && e->off + CN__PACK_REC_HDR == loc->off)
        e->verified = 1;
    pthread_mutex_unlock(&s->pack_mu);
    return CN_OK;
}

cn_err_t cn__pack_dup(cn_store_t *s, const cn_digest_t *d, cn__pack_loc_t *loc)
{
    if (!s->pack_on)
        return CN_E_NOT_FOUND;
    uint32_t id = 0;
    bool verified = false;
    pthread_mutex_lock(&s->pack_mu);
    cn_err_t rc = dup_locked(s, d, loc, &id, &verified);
    pthread_mutex_unlock(&s->pack_mu);
    if (rc < 0 || verified)
        return rc;
    if ((rc = check_first(s, loc, id)) < 0) {
        close(loc->fd);
        loc->fd = -1;
    }
    return rc;
}

cn_err_t cn__pack_borrow(cn_store_t *s, const cn_digest_t *d, cn__pack_loc_t *loc, void **ref)
{
    *ref = NULL;
    if (!s->pack_on)
        return CN_E_NOT_FOUND;
    uint32_t id = 0;
    bool verified = false;
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_ent *e = *find_locked(s, d);
    struct cn__pack_file *pf = e ? pack_by_id_locked(s, e->pack_id) : NULL;
    if (e && CN_ALWAYS(pf)) {
        /* The store's own reference is held while the pack is live, so the
         * count is at least 1 here and the descriptor open (P9). */
        atomic_fetch_add(&pf->ref->refs, 1);
        *ref = pf->ref;
        *loc = (cn__pack_loc_t){ *d, pf->fd, e->off + CN__PACK_REC_HDR, e->len, e->mtime_ms };
        id = e->pack_id;
        verified = e->verified;
    }
    pthread_mutex_unlock(&s->pack_mu);
    if (!*ref)
        return CN_E_NOT_FOUND;
    cn_err_t rc = verified ? CN_OK : check_first(s, loc, id);
    if (rc < 0) {
        ref_put(*ref);
        *ref = NULL;
    }
    return rc;
}

cn_err_t cn__pack_read(const cn__pack_loc_t *loc, uint8_t *buf)
{
    cn_err_t rc = cn_pread_full(loc->fd, buf, loc->len, loc->off, CN_E_CORRUPT);
    if (rc < 0 && rc != CN_E_CORRUPT)
        return rc;
    if (rc == CN_OK && digest_ok(&loc->d, buf, loc->len))
        return CN_OK;
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&loc->d, hex);
    cn_error("store", "packed blob %s fails its digest (not served)", hex);
    return CN_E_CORRUPT;
}

/* ---- meta ------------------------------------------------------------------ */

/* One index transaction: a batch's rows (committer) or a recovery's. */
typedef struct idx_txn {
    cn__commit_req_t *batch;
    const struct cn__pack_ent *rows; /* recovery: n_rows re-indexed records */
    size_t n_rows;
    uint32_t pack_id;
    uint64_t end; /* the pack's new indexed_end */
    bool drop_past;
    bool orphan; /* the pack file is gone: drop its rows and its store_pack row */
    int64_t now;
    /* The files of the batch's adopt requests (P10), uncounted from the
     * usage totals with their rows' insert: a digest counts once (usage.c). */
    int64_t unfile_blobs, unfile_bytes;
} idx_txn_t;

/* One pack index row to insert (a batch's new record or a recovered one). */
typedef struct idx_row {
    const cn_digest_t *d;
    uint64_t off;
    uint32_t len;
} idx_row_t;

/* Inserts the n rows (1 <= n <= CN_SQL_STORE_PACKED_ROWS_MAX) with one
 * statement; a digest already indexed keeps its row (P7). */
static cn_err_t insert_rows(cn_meta_txn_t *txn, const idx_txn_t *t, const idx_row_t *rows,
                            uint32_t n)
{
    char *sql = cn__sql_store_packed_insert_rows(n);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = sql ? cn_meta_prepare(txn, sql, &st) : -ENOMEM;
    free(sql);
    for (uint32_t i = 0; i < n && err >= 0; i++) {
        int b = (int)i * 6;
        if ((err = cn_meta_bind_blob(st, b + 1, rows[i].d->b, CN_DIGEST_LEN)) >= 0 &&
            (err = cn_meta_bind_int64(st, b + 2, (int64_t)t->pack_id)) >= 0 &&
            (err = cn_meta_bind_int64(st, b + 3, (int64_t)rows[i].off)) >= 0 &&
            (err = cn_meta_bind_int64(st, b + 4, (int64_t)rows[i].len)) >= 0 &&
            (err = cn_meta_bind_int64(st, b + 5, (int64_t)CN_STORE_RAW)) >= 0)
            err = cn_meta_bind_int64(st, b + 6, t->now);
    }
    if (err >= 0)
        err = cn_meta_push(st);
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* Every index row of t (the batch's new records, then the recovered ones),
 * as multi-row INSERTs of up to CN_SQL_STORE_PACKED_ROWS_MAX rows, a power
 * of two each so that few texts are ever prepared (issue 24: a statement is
 * a round trip on PostgreSQL, and SQLite's cost is per statement too). */
static cn_err_t insert_all(cn_meta_txn_t *txn, const idx_txn_t *t)
{
    size_t cap = t->n_rows, n = 0;
    for (cn__commit_req_t *r = t->batch; r; r = r->next)
        cap += r->packed && r->rc >= 0 && r->pack_state == PS_NEW;
    if (!cap)
        return CN_OK;
    idx_row_t *rows = malloc(cap * sizeof *rows);
    if (!rows)
        return -ENOMEM;
    for (cn__commit_req_t *r = t->batch; r; r = r->next)
        if (r->packed && r->rc >= 0 && r->pack_state == PS_NEW)
            rows[n++] = (idx_row_t){ &r->d, r->pack_off, (uint32_t)r->payload_len };
    for (size_t i = 0; i < t->n_rows; i++)
        rows[n++] = (idx_row_t){ &t->rows[i].d, t->rows[i].off, t->rows[i].len };
    cn_err_t err = CN_OK;
    for (size_t from = 0; from < n && err >= 0;) {
        uint32_t c = CN_SQL_STORE_PACKED_ROWS_MAX;
        while (c > n - from)
            c /= 2;
        err = insert_rows(txn, t, rows + from, c);
        from += c;
    }
    free(rows);
    return err;
}

/* The index transaction of a batch: every statement pushed, as nothing
 * here tells one error from another (on PostgreSQL their answers then come
 * in one round trip before the COMMIT's). */
static cn_err_t idx_body(cn_meta_txn_t *txn, void *ctx)
{
    const idx_txn_t *t = ctx;
    cn_err_t rc = CN_OK;
    if (t->drop_past)
        rc = cn_meta_pushf(txn, cn__sql_store[CN_SQL_STORE_PACKED_DROP_PAST], "ii",
                           (int64_t)t->pack_id, (int64_t)t->end);
    if (rc >= 0)
        rc = insert_all(txn, t);
    if (rc >= 0 && t->unfile_blobs)
        rc = cn_meta_pushf(
            txn, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_USAGE_NOTE]), "ii",
            -t->unfile_blobs, -t->unfile_bytes);
    for (cn__commit_req_t *r = t->batch; r && rc >= 0; r = r->next) {
        if (!r->packed || r->rc < 0)
            continue;
        if (r->pack_state == PS_MOVE)
            rc = cn_meta_pushf(txn, cn__sql_store[CN_SQL_STORE_PACKED_MOVE], "iibii",
                               (int64_t)t->pack_id, (int64_t)r->pack_off, r->d.b,
                               (size_t)CN_DIGEST_LEN, (int64_t)r->move_pack, (int64_t)r->move_off);
        else if (r->pack_state == PS_REFRESH_PACK)
            rc = cn_meta_pushf(txn, cn__sql_store[CN_SQL_STORE_PACKED_TOUCH], "ib", t->now, r->d.b,
                               (size_t)CN_DIGEST_LEN);
    }
    if (rc >= 0 && !t->orphan)
        rc = cn_meta_pushf(txn, cn__sql_store[CN_SQL_STORE_PACK_SET_END], "ii", (int64_t)t->pack_id,
                           (int64_t)t->end);
    else if (rc >= 0)
        rc = cn_meta_pushf(txn, cn__sql_store[CN_SQL_STORE_PACK_DELETE], "i", (int64_t)t->pack_id);
    return rc < 0 ? rc : CN_OK;
}

static cn_err_t idx_commit(cn_store_t *s, idx_txn_t *t)
{
    /* A batch's commit need not wait for meta's sync (P2); recovery's and
     * a retirement's must (they change what recovery would start from). */
    unsigned nowait = t->batch ? CN_META_RUN_NOWAIT : 0;
    return cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY | nowait, idx_body, t);
}

typedef struct digest_op {
    const char *sql;
    const cn_digest_t *d;
    int64_t now;
} digest_op_t;

static cn_err_t digest_op_body(cn_meta_txn_t *txn, void *ctx)
{
    const digest_op_t *op = ctx;
    cn_err_t rc = op->now
                      ? cn_meta_execf(txn, op->sql, "ib", op->now, op->d->b, (size_t)CN_DIGEST_LEN)
                      : cn_meta_execf(txn, op->sql, "b", op->d->b, (size_t)CN_DIGEST_LEN);
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn__pack_touch_locked(cn_store_t *s, const cn_digest_t *d)
{
    if (!s->pack_on)
        return CN_E_NOT_FOUND;
    int64_t now = cn_wall_ms();
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_ent *e = *find_locked(s, d);
    if (e)
        e->mtime_ms = now;
    pthread_mutex_unlock(&s->pack_mu);
    if (!e)
        return CN_E_NOT_FOUND;
    /* Persisted: a client told "have" before a restart may reference the
     * blob after it, and the grace window must count from this touch. */
    digest_op_t op = { cn__sql_store[CN_SQL_STORE_PACKED_TOUCH], d, now };
    return cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, digest_op_body, &op);
}

cn_err_t cn__pack_remove_locked(cn_store_t *s, const cn_digest_t *d, uint64_t *freed)
{
    if (!s->pack_on)
        return CN_E_NOT_FOUND;
    pthread_mutex_lock(&s->pack_mu);
    bool found = *find_locked(s, d) != NULL;
    pthread_mutex_unlock(&s->pack_mu);
    if (!found)
        return CN_E_NOT_FOUND;
    /* P6: the row goes first; a failure leaves both. */
    digest_op_t op = { cn__sql_store[CN_SQL_STORE_PACKED_DELETE], d, 0 };
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, digest_op_body, &op));
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_ent **pp = find_locked(s, d);
    struct cn__pack_ent *e = *pp;
    if (CN_ALWAYS(e)) {
        if (freed)
            *freed = CN__PACK_REC_HDR + (uint64_t)e->len;
        *pp = e->next;
        free(e);
        s->pidx_count--;
    }
    pthread_mutex_unlock(&s->pack_mu);
    return CN_OK;
}

cn_err_t cn__pack_list(cn_store_t *s, cn__be_list_fn fn, void *ctx)
{
    if (!s->pack_on)
        return CN_OK;
    pthread_mutex_lock(&s->pack_mu);
    size_t n = 0, cap = (size_t)s->pidx_count;
    struct cn__pack_ent *snap = malloc((cap ? cap : 1) * sizeof *snap);
    for (size_t b = 0; snap && b < CN__PACK_BUCKETS; b++)
        for (struct cn__pack_ent *e = s->pidx[b]; e && n < cap; e = e->next)
            snap[n++] = *e;
    pthread_mutex_unlock(&s->pack_mu);
    if (!snap)
        return -ENOMEM;
    cn_err_t rc = CN_OK;
    for (size_t i = 0; i < n && rc == CN_OK; i++) {
        cn__be_stat_t st = { snap[i].len, snap[i].mtime_ms, CN_STORE_RAW };
        rc = fn(ctx, &snap[i].d, &st);
    }
    free(snap);
    return rc;
}

bool cn__pack_wants(const cn_store_t *s, cn_store_form_t form, uint64_t stored)
{
    return s->pack_on && s->opts.pack_max_bytes && form == CN_STORE_RAW && stored <= s->pack_max;
}

/* ---- compaction support (the pass is sweep.c) ------------------------------ */

cn_err_t cn__pack_usage(cn_store_t *s, cn__pack_usage_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s->pack_on)
        return CN_OK;
    pthread_mutex_lock(&s->pack_mu);
    cn__pack_usage_t *u = calloc(s->n_packs ? s->n_packs : 1, sizeof *u);
    size_t k = 0;
    for (size_t i = 0; u && i < s->n_packs; i++)
        if (i != s->cur_pack && s->packs[i].fd >= 0)
            u[k++] = (cn__pack_usage_t){ s->packs[i].id, s->packs[i].end, 0, 0 };
    /* One walk of the index under pack_mu: readers wait for it (~ms per
     * 100,000 entries), writers do not (they take it per request). */
    for (size_t b = 0; u && k && b < CN__PACK_BUCKETS; b++)
        for (struct cn__pack_ent *e = s->pidx[b]; e; e = e->next)
            for (size_t i = 0; i < k; i++)
                if (u[i].id == e->pack_id) {
                    u[i].live += CN__PACK_REC_HDR + (uint64_t)e->len;
                    u[i].n_live++;
                    break;
                }
    pthread_mutex_unlock(&s->pack_mu);
    if (!u)
        return -ENOMEM;
    *out = u;
    *n = k;
    return CN_OK;
}

static int by_off(const void *a, const void *b)
{
    const cn__pack_live_t *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

cn_err_t cn__pack_live_list(cn_store_t *s, uint32_t id, cn__pack_live_t **out, size_t *n)
{
    cn_buf_t b = { 0 };
    cn_err_t rc = CN_OK;
    pthread_mutex_lock(&s->pack_mu);
    for (size_t k = 0; rc == CN_OK && k < CN__PACK_BUCKETS; k++)
        for (struct cn__pack_ent *e = s->pidx[k]; e && rc == CN_OK; e = e->next)
            if (e->pack_id == id) {
                cn__pack_live_t l = { e->d, e->off, e->len };
                rc = cn_buf_append(&b, &l, sizeof l);
            }
    pthread_mutex_unlock(&s->pack_mu);
    if (rc < 0) {
        cn_buf_free(&b);
        return rc;
    }
    *n = b.len / sizeof(cn__pack_live_t);
    *out = (cn__pack_live_t *)b.data; /* the buffer's memory, freed with free() */
    if (*n)
        qsort(*out, *n, sizeof **out, by_off);
    return CN_OK;
}

cn_err_t cn__pack_read_record(cn_store_t *s, uint32_t id, const cn__pack_live_t *e, uint8_t *buf)
{
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_file *pf = pack_by_id_locked(s, id);
    int fd = pf ? pf->fd : -1;
    pthread_mutex_unlock(&s->pack_mu);
    if (fd < 0)
        return CN_E_NOT_FOUND;
    size_t want = CN__PACK_REC_HDR + (size_t)e->len;
    cn__pack_loc_t loc = { e->d, fd, e->off, (uint32_t)want, 0 };
    CN_TRY(cn_pread_full(loc.fd, buf, want, loc.off, CN_E_CORRUPT));
    cn__pack_rec_t rec;
    size_t used;
    if (cn__pack_rec_decode(buf, want, CN__STORE_IO_CHUNK, &rec, &used) < 0 || used != want ||
        memcmp(rec.d.b, e->d.b, CN_DIGEST_LEN) != 0 || !digest_ok(&e->d, rec.payload, rec.len)) {
        char hex[CN_DIGEST_HEX_LEN + 1];
        cn_digest_hex(&e->d, hex);
        cn_error("store", "compaction: packed blob %s in pack %08" PRIx32 " fails its check", hex,
                 id);
        return CN_E_CORRUPT;
    }
    return CN_OK;
}

typedef struct retire_txn {
    uint32_t id;
    bool busy;
} retire_txn_t;

/* C4: nothing may still be indexed in the pack when its row says -1. */
static cn_err_t retire_body(cn_meta_txn_t *txn, void *ctx)
{
    retire_txn_t *t = ctx;
    cn_meta_stmt_t *st;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_PACK_ROWS], "i", (int64_t)t->id));
    cn_err_t rc = cn_meta_step(st);
    int64_t rows = rc == CN_META_ROW ? cn_meta_column_int64(st, 0) : -1;
    cn_meta_finish(st);
    if (rc < 0)
        return rc;
    t->busy = rows != 0;
    if (t->busy) {
        cn_meta_discard(txn);
        return CN_OK;
    }
    rc = cn_meta_execf(txn, cn__sql_store[CN_SQL_STORE_PACK_SET_END], "ii", (int64_t)t->id,
                       (int64_t)-1);
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn__pack_retire(cn_store_t *s, uint32_t id, uint64_t *freed)
{
    *freed = 0;
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_file *pf = pack_by_id_locked(s, id);
    bool ok = pf && pf != &s->packs[s->cur_pack];
    uint64_t size = ok ? pf->end : 0;
    /* The slot its descriptor will wait in (C5), taken before anything. */
    struct cn__pack_ref **dead =
        ok ? realloc(s->pack_dead_fds, (s->n_pack_dead + 1) * sizeof *dead) : NULL;
    if (dead)
        s->pack_dead_fds = dead;
    pthread_mutex_unlock(&s->pack_mu);
    if (!ok)
        return CN_E_INVALID;
    if (!dead)
        return -ENOMEM;
    /* Durable (a synced commit) before the unlink: a row must never point
     * into a file a crash could find gone. */
    retire_txn_t rt = { id, false };
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, retire_body, &rt));
    if (rt.busy)
        return CN_E_BUSY;
    cn__pack_compact_crash(s, 4);
    char name[32];
    pack_name(id, name);
    if (unlinkat(s->packs_fd, name, 0) < 0)
        return -errno;
    if (fsync(s->packs_fd) < 0)
        return -errno;
    idx_txn_t t = { .pack_id = id, .drop_past = true, .orphan = true };
    cn_err_t rc = idx_commit(s, &t);
    if (rc < 0)
        cn_warn("store", "pack %08" PRIx32 " unlinked; its row stays until the next open: %s", id,
                cn_strerror(rc));
    /* C5: the descriptor outlives this pass (readers may hold a location). */
    pthread_mutex_lock(&s->pack_mu);
    if (CN_ALWAYS((pf = pack_by_id_locked(s, id)) != NULL)) {
        s->pack_dead_fds[s->n_pack_dead++] = pf->ref;
        pf->ref = NULL;
        pf->fd = -1;
    }
    pthread_mutex_unlock(&s->pack_mu);
    *freed = size;
    return CN_OK;
}

void cn__pack_reap(cn_store_t *s)
{
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_ref **refs = s->pack_dead_fds;
    size_t n = s->n_pack_dead;
    s->pack_dead_fds = NULL;
    s->n_pack_dead = 0;
    pthread_mutex_unlock(&s->pack_mu);
    for (size_t i = 0; i < n; i++)
        ref_put(refs[i]); /* closed now, or by its last borrower */
    free(refs);
}

/* ---- the committer's step -------------------------------------------------- */

/* Test hook: CAIRN_TEST_PACK_CRASH="P:N" kills the process at point P
 * (1: appended, not synced; 2: synced, not indexed; 3: indexed, not
 * acknowledged) of the Nth packed batch, for the crash tests. */
static void crash_point(cn_store_t *s, cn__commit_req_t *batch, long seq, int point)
{
    if (s->pack_crash_at == point && seq == s->pack_crash_n)
        raise(SIGKILL);
    if (s->compact_crash_at == point)
        for (cn__commit_req_t *r = batch; r; r = r->next)
            if (r->pack_state == PS_MOVE)
                raise(SIGKILL);
}

void cn__pack_compact_crash(cn_store_t *s, int point)
{
    if (s->compact_crash_at == point)
        raise(SIGKILL);
}

/* Whether a request's record goes into this batch's append. */
static bool appends(const cn__commit_req_t *r)
{
    return r->packed && r->rc == CN_OK && (r->pack_state == PS_NEW || r->pack_state == PS_MOVE);
}

/* P4 for one request, under its digest lock: is d there already?  P7 for a
 * compaction move: is d still where the move found it? */
static cn_err_t decide_locked(cn_store_t *s, cn__commit_req_t *r, int64_t now)
{
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_ent *e = *find_locked(s, &r->d);
    if (r->move_pack) {
        bool there = e && e->pack_id == r->move_pack && e->off == r->move_off;
        pthread_mutex_unlock(&s->pack_mu);
        r->pack_state = there ? PS_MOVE : PS_SKIP;
        return CN_OK;
    }
    if (r->adopt) { /* P10 */
        pthread_mutex_unlock(&s->pack_mu);
        cn__be_stat_t st;
        cn_err_t rc = e ? CN_E_EXISTS : s->be->ops->stat(s->be, &r->d, &st);
        r->pack_state = rc == CN_OK ? PS_NEW : PS_SKIP;
        return rc == CN_OK || rc == CN_E_EXISTS || rc == CN_E_NOT_FOUND ? CN_OK : rc;
    }
    if (e)
        e->mtime_ms = now;
    pthread_mutex_unlock(&s->pack_mu);
    if (e) {
        r->pack_state = PS_REFRESH_PACK;
        return CN_OK;
    }
    /* No file of d can be there: new, without probing the tree. */
    if (s->be->ops->may_have && !s->be->ops->may_have(s->be, &r->d))
        return CN_OK;
    cn_err_t rc = s->be->ops->touch(s->be, &r->d);
    if (rc == CN_OK)
        r->pack_state = PS_REFRESH_FILE;
    return rc == CN_E_NOT_FOUND ? CN_OK : rc;
}

/* A second request for a digest already new in this batch shares its record. */
static bool dup_in_batch(cn__commit_req_t *batch, cn__commit_req_t *r)
{
    for (cn__commit_req_t *q = batch; q != r; q = q->next)
        if (q->packed && q->pack_state == PS_NEW && q->rc == CN_OK &&
            memcmp(q->d.b, r->d.b, CN_DIGEST_LEN) == 0)
            return true;
    return false;
}

/* Appends a pack (fd owned by s on success).  pack_mu held, or open. */
static cn_err_t packs_push_locked(cn_store_t *s, uint32_t id, int fd, uint64_t size)
{
    if (s->n_packs == s->cap_packs) {
        size_t cap = s->cap_packs ? 2 * s->cap_packs : 8;
        struct cn__pack_file *p = realloc(s->packs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->packs = p;
        s->cap_packs = cap;
    }
    struct cn__pack_ref *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    r->fd = fd;
    atomic_init(&r->refs, 1);
    s->packs[s->n_packs++] = (struct cn__pack_file){ id, fd, r, size, size, 0, false };
    return CN_OK;
}

/* Opens a new, empty pack after the last one and makes it current. */
static cn_err_t pack_roll(cn_store_t *s)
{
    uint32_t id = 1;
    for (size_t i = 0; i < s->n_packs; i++)
        if (s->packs[i].id >= id)
            id = s->packs[i].id + 1;
    char name[32];
    pack_name(id, name);
    int fd = openat(s->packs_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    /* The name must survive before any record in it is acknowledged. */
    if (fsync(s->packs_fd) < 0) {
        cn_err_t rc = -errno;
        close(fd);
        unlinkat(s->packs_fd, name, 0);
        return rc;
    }
    pthread_mutex_lock(&s->pack_mu);
    cn_err_t rc = packs_push_locked(s, id, fd, 0);
    if (rc == CN_OK)
        s->cur_pack = s->n_packs - 1;
    pthread_mutex_unlock(&s->pack_mu);
    if (rc < 0)
        close(fd);
    return rc;
}

/* P12: zeros written from past `upto` (the batch's records' end) to
 * opts.pack_zero_ahead beyond it, when upto passes the zeros there are;
 * a failure leaves the pack as it was (the batch appends without them). */
static void zero_ahead(cn_store_t *s, struct cn__pack_file *pf, uint64_t upto)
{
    static const uint8_t zeros[64 * 1024];
    if (!s->opts.pack_zero_ahead || upto <= pf->zeroed)
        return;
    uint64_t to = (upto + s->opts.pack_zero_ahead + sizeof zeros - 1) / sizeof zeros * sizeof zeros;
    cn_err_t rc = CN_OK;
    for (uint64_t at = upto; rc == CN_OK && at < to; at += sizeof zeros - at % sizeof zeros) {
        size_t n = sizeof zeros - at % sizeof zeros;
        rc = cn_pwrite_full(pf->fd, zeros, n, at);
    }
    if (rc == CN_OK)
        pf->zeroed = to;
    else
        cn_info("store", "pack %08" PRIx32 ": zeros ahead not written: %s", pf->id,
                cn_strerror(rc));
}

/* P12: the zeros past pf's end cut (best effort; recovery cuts them too). */
static void zero_cut(struct cn__pack_file *pf)
{
    if (pf->fd >= 0 && pf->zeroed > pf->end && ftruncate(pf->fd, (off_t)pf->end) == 0)
        pf->zeroed = pf->end;
}

/* P1: the batch's new records, appended and synced; *pfo = the pack. */
static cn_err_t append_batch(cn_store_t *s, cn__commit_req_t *batch, long seq,
                             struct cn__pack_file **pfo)
{
    uint64_t need = 0;
    cn_buf_reset(&s->pack_buf);
    for (cn__commit_req_t *r = batch; r; r = r->next)
        if (appends(r))
            need += CN__PACK_REC_HDR + r->payload_len;
    if (!need)
        return CN_OK;
    /* The open pack belongs to this thread: its fields are read unlocked. */
    struct cn__pack_file *pf = &s->packs[s->cur_pack];
    if (pf->end && pf->end + need > s->pack_file_max) {
        cn__committer_drain(s); /* P11: every record of the old pack indexed */
        zero_cut(pf);
        CN_TRY(pack_roll(s));
        pf = &s->packs[s->cur_pack];
    }
    for (cn__commit_req_t *r = batch; r; r = r->next) {
        if (!appends(r))
            continue;
        uint8_t h[CN__PACK_REC_HDR];
        r->pack_off = pf->end + s->pack_buf.len;
        cn__pack_rec_header(&r->d, r->form, r->payload, (uint32_t)r->payload_len, h);
        CN_TRY(cn_buf_append(&s->pack_buf, h, sizeof h));
        CN_TRY(cn_buf_append(&s->pack_buf, r->payload, r->payload_len));
    }
    zero_ahead(s, pf, pf->end + s->pack_buf.len);
    cn_err_t rc = cn_pwrite_full(pf->fd, s->pack_buf.data, s->pack_buf.len, pf->end);
    crash_point(s, batch, seq, 1);
    int64_t t0 = cn_mono_ns();
    if (rc == CN_OK && fdatasync(pf->fd) < 0)
        rc = -errno;
    if (rc < 0) {
        /* P3: whatever reached the file is cut; recovery would drop it too. */
        if (ftruncate(pf->fd, (off_t)pf->end) < 0)
            cn_warn("store", "pack truncate after a failed append: %s", cn_strerror(-errno));
        pf->zeroed = pf->end;
        return rc;
    }
    /* The pack is the group commit's journal: same series. */
    cn_metric_observe_ns(cn__store_metrics()->fsync_journal, cn_mono_ns() - t0);
    crash_point(s, batch, seq, 2);
    pf->end += s->pack_buf.len;
    if (pf->zeroed < pf->end)
        pf->zeroed = pf->end;
    *pfo = pf;
    return CN_OK;
}

/* Sets rc on every packed request the batch failed (new ones and theirs). */
static void fail_new(cn__commit_req_t *batch, cn_err_t rc)
{
    for (cn__commit_req_t *r = batch; r; r = r->next)
        if (r->packed &&
            (r->pack_state == PS_NEW || r->pack_state == PS_DUP || r->pack_state == PS_MOVE))
            r->rc = rc;
}

/* P2's usage side: the adopted files the batch's transaction uncounts. */
static void unfile_adopted(const cn_store_t *s, idx_txn_t *t)
{
    if (!s->usage_ready || s->usage_off)
        return;
    for (cn__commit_req_t *r = t->batch; r; r = r->next)
        if (r->packed && r->adopt && r->rc == CN_OK && r->pack_state == PS_NEW) {
            t->unfile_blobs++;
            t->unfile_bytes += (int64_t)r->payload_len;
        }
}

/* Under d's digest lock, once a new record of d is indexed: a file of d
 * that a large publish landed while the record was in flight (it found d
 * neither packed nor a file, as P4 did) was noted by it; its row counts d
 * now, so the file is uncounted (*blobs, *bytes).  Probed only when some
 * file put was noted since the batch began (puts0). */
static void unfile_raced(cn_store_t *s, const cn_digest_t *d, uint64_t puts0, int64_t *blobs,
                         int64_t *bytes)
{
    cn__be_stat_t st;
    if (atomic_load(&s->usage_file_puts) == puts0 ||
        (s->be->ops->may_have && !s->be->ops->may_have(s->be, d)))
        return;
    if (s->be->ops->stat(s->be, d, &st) == CN_OK) {
        (*blobs)--;
        *bytes -= (int64_t)st.size;
    }
}

void cn__pack_append(cn_store_t *s, cn__commit_req_t *batch, cn__pack_step_t *st)
{
    *st = (cn__pack_step_t){ .now = cn_wall_ms(), .puts0 = atomic_load(&s->usage_file_puts) };
    for (cn__commit_req_t *r = batch; r; r = r->next) {
        if (!r->packed)
            continue;
        st->any = true;
        r->pack_state = PS_NEW;
        cn__dheld_t dl;
        cn__dlock(s, &r->d, &dl);
        r->rc = decide_locked(s, r, st->now);
        cn__dunlock(s, &dl);
        if (r->rc == CN_OK && r->pack_state == PS_NEW && dup_in_batch(batch, r))
            r->pack_state = PS_DUP;
        r->existed = r->pack_state != PS_NEW && r->pack_state != PS_MOVE;
    }
    if (!st->any)
        return;
    st->seq = ++s->pack_batches;
    struct cn__pack_file *pf = NULL;
    cn_err_t rc = append_batch(s, batch, st->seq, &pf);
    if (rc < 0) {
        cn_error("store", "group commit: pack append failed: %s", cn_strerror(rc));
        fail_new(batch, rc);
        st->any = false; /* nothing to index: P3 */
        return;
    }
    if (!pf)
        pf = &s->packs[s->cur_pack];
    st->pack_id = pf->id;
    st->end = pf->end;
}

void cn__pack_fail(cn__commit_req_t *batch, cn_err_t rc)
{
    fail_new(batch, rc);
}

cn_err_t cn__pack_index(cn_store_t *s, cn__commit_req_t *batch, const cn__pack_step_t *st)
{
    if (!st->any)
        return CN_OK;
    int64_t raced_blobs = 0, raced_bytes = 0;
    /* P2: rows and the pack's end in one transaction, after the sync. */
    idx_txn_t t = { .batch = batch, .pack_id = st->pack_id, .end = st->end, .now = st->now };
    unfile_adopted(s, &t);
    if (s->pack_index_delay_ms > 0) /* test hook: a slow index transaction (P11) */
        usleep((useconds_t)s->pack_index_delay_ms * 1000u);
    cn_err_t rc = idx_commit(s, &t);
    if (rc < 0) {
        cn_error("store", "group commit: pack index failed: %s", cn_strerror(rc));
        fail_new(batch, rc);
        return rc;
    }
    pthread_mutex_lock(&s->pack_mu);
    struct cn__pack_file *pf = pack_by_id_locked(s, st->pack_id);
    if (CN_ALWAYS(pf != NULL)) /* P11: the pack rolls only once nothing is in flight */
        pf->indexed_end = st->end;
    pthread_mutex_unlock(&s->pack_mu);
    crash_point(s, batch, st->seq, 3);
    for (cn__commit_req_t *r = batch; r; r = r->next) {
        if (!appends(r))
            continue;
        cn__dheld_t dl;
        cn__dlock(s, &r->d, &dl);
        pthread_mutex_lock(&s->pack_mu);
        if (r->pack_state == PS_NEW) {
            r->rc = index_add_locked(s, &r->d, st->pack_id, r->pack_off, (uint32_t)r->payload_len,
                                     st->now);
        } else {
            /* P7: only if nothing moved it (a delete, a re-put) meanwhile. */
            struct cn__pack_ent *e = *find_locked(s, &r->d);
            if (e && e->pack_id == r->move_pack && e->off == r->move_off) {
                e->pack_id = st->pack_id;
                e->off = r->pack_off;
                e->verified = 0; /* a new record: its first zero-copy read checks it */
            }
        }
        pthread_mutex_unlock(&s->pack_mu);
        if (r->pack_state == PS_NEW && !r->adopt) /* still under the digest lock */
            unfile_raced(s, &r->d, st->puts0, &raced_blobs, &raced_bytes);
        cn__dunlock(s, &dl);
    }
    if (raced_blobs)
        cn__store_usage_note(s, raced_blobs, raced_bytes);
    return CN_OK;
}

void cn__pack_commit(cn_store_t *s, cn__commit_req_t *batch)
{
    cn__pack_step_t st;
    cn__pack_append(s, batch, &st);
    (void)cn__pack_index(s, batch, &st); /* each request's rc says it */
}

/* ---- open, recovery, close ------------------------------------------------- */

/* Reads every store_pack row into the matching pack's indexed_end; rows
 * without a file are reported in *orphans (ids, for dropping). */
typedef struct load_ctx {
    cn_store_t *s;
    uint32_t orphans[64];
    bool orphan_retiring[64]; /* its row said -1: a retirement that finished */
    size_t n_orphans;
} load_ctx_t;

static cn_err_t load_packs_body(cn_meta_txn_t *txn, void *ctx)
{
    load_ctx_t *lc = ctx;
    cn_meta_stmt_t *st;
    lc->n_orphans = 0;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_PACK_LIST], ""));
    cn_err_t rc;
    while ((rc = cn_meta_step(st)) == CN_META_ROW) {
        uint32_t id = (uint32_t)cn_meta_column_int64(st, 0);
        int64_t end = cn_meta_column_int64(st, 1);
        struct cn__pack_file *pf = pack_by_id_locked(lc->s, id);
        if (end < 0 && pf)
            pf->retiring = true; /* P8 */
        else if (pf)
            pf->indexed_end = (uint64_t)end;
        else if (lc->n_orphans < sizeof lc->orphans / sizeof lc->orphans[0]) {
            lc->orphan_retiring[lc->n_orphans] = end < 0;
            lc->orphans[lc->n_orphans++] = id;
        }
    }
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

static cn_err_t load_entries_body(cn_meta_txn_t *txn, void *ctx)
{
    cn_store_t *s = ctx;
    cn_meta_stmt_t *st;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_PACKED_LIST], ""));
    cn_err_t rc;
    while ((rc = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const void *d = cn_meta_column_blob(st, 0, &n);
        uint32_t id = (uint32_t)cn_meta_column_int64(st, 1);
        if (n != CN_DIGEST_LEN || !pack_by_id_locked(s, id))
            continue; /* not ours to serve: P5 dropped or will drop it */
        cn_digest_t dg;
        memcpy(dg.b, d, CN_DIGEST_LEN);
        if ((rc = index_add_locked(s, &dg, id, (uint64_t)cn_meta_column_int64(st, 2),
                                   (uint32_t)cn_meta_column_int64(st, 3),
                                   cn_meta_column_int64(st, 5))) < 0)
            break;
    }
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

/* Opens every DATA/packs/<8 hex>.pack into s->packs. */
static cn_err_t scan_dir(cn_store_t *s)
{
    int dfd = openat(s->packs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *dir = fdopendir(dfd);
    if (!dir) {
        close(dfd);
        return -errno;
    }
    cn_err_t rc = CN_OK;
    struct dirent *de;
    while (rc == CN_OK && (de = readdir(dir)) != NULL) {
        unsigned id;
        char tail[8];
        if (strlen(de->d_name) != 13 || sscanf(de->d_name, "%8x%7s", &id, tail) != 2 ||
            strcmp(tail, ".pack") != 0 || id == 0)
            continue;
        int fd = openat(s->packs_fd, de->d_name, O_RDWR | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) < 0) {
            rc = -errno;
            if (fd >= 0)
                close(fd);
            break;
        }
        if ((rc = packs_push_locked(s, id, fd, (uint64_t)sb.st_size)) < 0)
            close(fd);
    }
    closedir(dir);
    return rc;
}

/* P5 for one pack: re-index the complete records past indexed_end, then cut
 * the torn tail.  buf holds one record at most. */
static cn_err_t recover_pack(cn_store_t *s, struct cn__pack_file *pf, uint8_t *buf, size_t cap)
{
    idx_txn_t t = { .pack_id = pf->id, .end = pf->indexed_end, .now = cn_wall_ms() };
    if (pf->end < pf->indexed_end) {
        cn_error("store",
                 "pack %08" PRIx32 " is shorter (%" PRIu64 ") than its index (%" PRIu64
                 "): entries past its end dropped",
                 pf->id, pf->end, pf->indexed_end);
        t.drop_past = true;
        t.end = pf->end;
    }
    cn_buf_t rows = { 0 };
    cn_err_t rc = CN_OK;
    for (;;) {
        ssize_t r = pread(pf->fd, buf, cap, (off_t)t.end);
        if (r < 0) {
            rc = -errno;
            break;
        }
        cn__pack_rec_t rec;
        size_t used;
        if (cn__pack_rec_decode(buf, (size_t)r, (uint32_t)(cap - CN__PACK_REC_HDR), &rec, &used) <
                0 ||
            !digest_ok(&rec.d, rec.payload, rec.len))
            break; /* the first record that fails ends what was acknowledged */
        struct cn__pack_ent e = { rec.d, pf->id, rec.len, 0, t.end, 0, NULL };
        if ((rc = cn_buf_append(&rows, &e, sizeof e)) < 0)
            break;
        t.end += used;
    }
    t.rows = (const struct cn__pack_ent *)rows.data;
    t.n_rows = rows.len / sizeof(struct cn__pack_ent);
    if (rc == CN_OK && (t.n_rows || t.drop_past || t.end != pf->indexed_end))
        rc = idx_commit(s, &t);
    if (rc == CN_OK && t.end < pf->end) {
        cn_info("store",
                "recovery: pack %08" PRIx32 ": %" PRIu64
                " byte(s) past its last record cut (a torn tail or zeros ahead)",
                pf->id, pf->end - t.end);
        if (ftruncate(pf->fd, (off_t)t.end) < 0 || fdatasync(pf->fd) < 0)
            rc = -errno;
    }
    if (rc == CN_OK) {
        if (t.n_rows)
            cn_info("store", "recovery: pack %08" PRIx32 ": %zu record(s) re-indexed", pf->id,
                    t.n_rows);
        pf->end = pf->zeroed = pf->indexed_end = t.end;
    }
    cn_buf_free(&rows);
    return rc;
}

static cn_err_t drop_orphans(cn_store_t *s, const load_ctx_t *lc)
{
    for (size_t i = 0; i < lc->n_orphans; i++) {
        cn_log(lc->orphan_retiring[i] ? CN_LOG_INFO : CN_LOG_ERROR, "store",
               "pack %08" PRIx32 " %s: its entries dropped", lc->orphans[i],
               lc->orphan_retiring[i] ? "was retired by compaction" : "is indexed but missing");
        idx_txn_t t = { .pack_id = lc->orphans[i], .drop_past = true, .orphan = true };
        CN_TRY(idx_commit(s, &t));
    }
    return CN_OK;
}

/* P8: a pack whose retirement a crash interrupted after its row said -1
 * (every entry had moved, durably) is unlinked now, then its row dropped. */
static cn_err_t finish_retiring(cn_store_t *s)
{
    for (size_t i = 0; i < s->n_packs; i++) {
        struct cn__pack_file *pf = &s->packs[i];
        if (!pf->retiring || pf->fd < 0)
            continue;
        char name[32];
        pack_name(pf->id, name);
        ref_put(pf->ref); /* nobody borrows before open returns */
        pf->ref = NULL;
        pf->fd = -1;
        if (unlinkat(s->packs_fd, name, 0) < 0 && errno != ENOENT)
            return -errno;
        if (fsync(s->packs_fd) < 0)
            return -errno;
        cn_info("store", "recovery: pack %08" PRIx32 " retired (compaction finished)", pf->id);
        idx_txn_t t = { .pack_id = pf->id, .drop_past = true, .orphan = true };
        CN_TRY(idx_commit(s, &t));
    }
    return CN_OK;
}

static cn_err_t recover_all(cn_store_t *s)
{
    load_ctx_t lc = { .s = s };
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, load_packs_body, &lc));
    CN_TRY(drop_orphans(s, &lc));
    CN_TRY(finish_retiring(s));
    size_t cap = CN__PACK_REC_HDR + CN__STORE_IO_CHUNK;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    cn_err_t rc = CN_OK;
    for (size_t i = 0; i < s->n_packs && rc == CN_OK; i++)
        if (s->packs[i].fd >= 0)
            rc = recover_pack(s, &s->packs[i], buf, cap);
    free(buf);
    return rc;
}

cn_err_t cn__pack_open(cn_store_t *s)
{
    if (!s->meta)
        return CN_OK;
    /* Packs already on disk are always served (and compacted), even when
     * new blobs no longer go to packs: turning the setting off must not
     * hide a blob. */
    if (!s->opts.pack_max_bytes && faccessat(s->data_fd, "packs", F_OK, 0) < 0)
        return CN_OK;
    s->pack_max = s->opts.pack_max_bytes < CN__STORE_IO_CHUNK ? (uint32_t)s->opts.pack_max_bytes
                                                              : CN__STORE_IO_CHUNK;
    if (mkdirat(s->data_fd, "packs", 0700) == 0) {
        if (fsync(s->data_fd) < 0)
            return -errno;
    } else if (errno != EEXIST) {
        return -errno;
    }
    s->packs_fd = openat(s->data_fd, "packs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->packs_fd < 0)
        return -errno;
    s->pidx = calloc(CN__PACK_BUCKETS, sizeof *s->pidx);
    if (!s->pidx)
        return -ENOMEM;
    CN_TRY(scan_dir(s));
    CN_TRY(recover_all(s));
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, load_entries_body, s));
    /* The open pack is the newest live one; a retired pack is never the
     * newest (compaction skips the open pack), so ids are never reused. */
    size_t last = SIZE_MAX;
    for (size_t i = 0; i < s->n_packs; i++)
        if (s->packs[i].fd >= 0 && (last == SIZE_MAX || s->packs[i].id > s->packs[last].id))
            last = i;
    if (last != SIZE_MAX)
        s->cur_pack = last;
    else
        CN_TRY(pack_roll(s));
    /* Test hook: small packs, so tests see several without writing GiBs. */
    const char *fmax = getenv("CAIRN_TEST_PACK_FILE_MAX");
    s->pack_file_max = fmax && atoll(fmax) > 0 ? (uint64_t)atoll(fmax) : CN__PACK_FILE_MAX;
    const char *chook = getenv("CAIRN_TEST_COMPACT_CRASH");
    if (chook && sscanf(chook, "%d", &s->compact_crash_at) != 1)
        s->compact_crash_at = 0;
    const char *delay = getenv("CAIRN_TEST_PACK_INDEX_DELAY_MS");
    s->pack_index_delay_ms = delay ? atoi(delay) : 0;
    const char *hook = getenv("CAIRN_TEST_PACK_CRASH");
    if (hook && sscanf(hook, "%d:%ld", &s->pack_crash_at, &s->pack_crash_n) != 2)
        s->pack_crash_at = 0;
    s->pack_on = true;
    return CN_OK;
}

void cn__pack_close(cn_store_t *s)
{
    cn__pack_reap(s);
    if (s->packs && s->cur_pack < s->n_packs)
        zero_cut(&s->packs[s->cur_pack]);
    for (size_t i = 0; i < s->n_packs; i++)
        if (s->packs[i].fd >= 0)
            ref_put(s->packs[i].ref);
    free(s->packs);
    s->packs = NULL;
    s->n_packs = s->cap_packs = 0;
    if (s->pidx) {
        for (size_t b = 0; b < CN__PACK_BUCKETS; b++) {
            for (struct cn__pack_ent *e = s->pidx[b], *next; e; e = next) {
                next = e->next;
                free(e);
            }
        }
        free(s->pidx);
        s->pidx = NULL;
    }
    if (s->packs_fd >= 0)
        close(s->packs_fd);
    s->packs_fd = -1;
    cn_buf_free(&s->pack_buf);
    s->pack_on = false;
}
