/* The write-generation table: how a process knows, without SQL, that no
 * process wrote a bucket since it read an object head of it.
 *
 * DATA/objects.gen holds CN__GEN_SLOTS 64-bit words, mapped MAP_SHARED by
 * every process that writes the data dir's metadata through the objects
 * service (cairnd, objects tools): a word is (generation << 32) | writers in
 * flight, and a bucket's slot is a hash of its name mod CN__GEN_SLOTS.
 *
 * Invariants:
 *   1. Every write run of the service on a bucket (cn__write_run) adds one
 *      in-flight writer to the bucket's slot before its transaction may
 *      commit, and only after cn_meta_run returned (committed durably, or
 *      failed) adds one to the generation and takes the writer away, in one
 *      atomic add.  The reply to the write is sent after that.
 *   2. A head is filed (cn__objhead_offer) only under the word its reader read
 *      before beginning the read transaction that produced it, and only when
 *      that word had no writer in flight.
 *   3. A head is served only while its slot holds exactly the word it was
 *      filed under.
 *   From 1–3: if a head is served at time t, no write run on the bucket
 *   entered between the stamp's read and t (its enter would show as a writer
 *   in flight, or with its leave as a new generation).  So any write
 *   acknowledged before t left, hence committed, before the stamp was read,
 *   before the read transaction began: the head shows it.  Acknowledged
 *   writes are never hidden; a served head is a state that was current at
 *   some instant between the request's arrival and its answer.
 *   4. A process dying between its commit and its leave leaves the slot with
 *      a writer in flight: that bucket's heads are not cached (never stale)
 *      until every process has closed the table and the next opener, alone
 *      with it (an exclusive flock), zeroes it.  No cache outlives its
 *      process, so zeroing with nobody else holding the file loses nothing.
 *   5. A generation wraps after 2^32 writes to one slot: a head filed under a
 *      word that comes back exactly 2^32 writes later would match.  Heads are
 *      bounded and evicted by use; this is the one accepted limit.
 *   6. Settings words.  The file holds a second table of CN__GEN_SLOTS words
 *      after the first, same hash, same layout, same enter/leave discipline,
 *      moved only by *settings* write runs: those that may change a bucket's
 *      existence, its owner or a named setting written through
 *      cn_objects_bucket_attr_set (buckets.c: create, delete, attr_set), which
 *      enter the settings word before their write run enters the write word and
 *      leave it after that run left.  Object writes leave it alone, so it stays
 *      quiet while PUTs stream into the bucket.  What is filed under a settings
 *      word is only what those runs change (a bucket's owner and its lifecycle
 *      rules, lifecycle.c; never its ACL, policy, versioning or object-lock
 *      state, which other runs change), read from the bucket's row and named
 *      settings, and obeys 2 and 3 with the settings word in place of the write
 *      word; by the argument of 1–3, a settings write acknowledged before a
 *      request arrived is seen by that request, on every process of the data
 *      dir.  4 and 5 hold for it as written.  The file doubled in size with
 *      this table: a process of an older release, which would not move it,
 *      finds the file the wrong size and refuses to open it (CN_E_CORRUPT)
 *      while a newer one holds it, and the reverse, so no mix of releases
 *      shares one data dir.  Rows mode has no second table: a settings word is
 *      the bucket slot's row (cn__gen_sload), which every write of the bucket
 *      but a single key's (7) moves, so the argument is the same.
 *
 * Rows (cn__gen_open_rows, PostgreSQL, where a fleet's writers share no
 * memory; docs/fleet.md "The object-head cache on PostgreSQL"): a slot's word
 * is its cn_obj_gen row's gen << 32, and every write run bumps that row as
 * the last statement of its own transaction (cn__gen_bump).  The word thus
 * moves atomically with the commit and never shows a writer in flight, so
 * invariant 1 holds with enter/leave doing nothing, 2 and 3 hold as written
 * (a load is a read of the latest committed row, made before the read
 * transaction begins), 4 has nothing to recover, and a load that fails
 * answers ROW_UNKNOWN, a word with a writer in flight: a miss, never a hit.
 * A miss may instead read the word in the read's own statement, in its
 * snapshot (cn__gen_hstamp_rows; read.c, V_KEY_READ_GEN), and file under
 * that: the head is then exactly the state the word stands for, every write
 * acknowledged before the snapshot is in it, and 3 serves it only while no
 * write has committed on its rows since, so 1-3's conclusion holds with the
 * snapshot in place of the stamp's read.  A key with no head cached at all
 * then costs one round trip, not two (head.c skips the load).
 *
 *   7. Key slots (rows mode only).  A write run that changes the head of one
 *      key alone (put, copy, multipart completion: cn__write_run_key) bumps
 *      that key's slot, one of GEN_KEY_SLOTS rows numbered past the bucket
 *      slots by a hash of bucket and key, instead of the bucket's; every
 *      other write run bumps the bucket's, as before.  A head of (bucket,
 *      key) is filed and served under the sum of both rows' generations,
 *      read in one statement (cn__gen_hload): each only grows, so the sum
 *      moves whenever either does and is equal only when both are, and any
 *      write that changes the head moved one of them.  So 1-3 hold with the
 *      sum as the word.  Writers of different keys then bump different rows
 *      (two keys share one in 2^20) instead of all serializing on the
 *      bucket's (PostgreSQL's SERIALIZABLE failed one of any two such
 *      writers with 40001).  The bucket's row moves only with the bucket's
 *      other writes, settings among them, so the settings word (6) stays
 *      quiet while PUTs stream in.  The file keeps one word per bucket: its
 *      writers share no row, and cn__gen_kslot answers the bucket's slot.
 *
 * This file must never map the file for a metadata engine other than the
 * embedded SQLite one, never leave a rows-mode write run without its bump,
 * and never hand out a word without the atomic load (or the database read)
 * that orders it before later SQL. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/util.h"
#include "meta/sql/objgen.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the table needs lock-free 64-bit atomics");

#define GEN_LEAVE ((UINT64_C(1) << 32) - 1) /* generation + 1, in flight - 1 */

#define ROW_UNKNOWN UINT64_C(1) /* a load that failed: never quiet */

#define GEN_WORDS (2 * CN__GEN_SLOTS) /* write words, then settings words (6) */

#define GEN_KEY_SLOTS (UINT64_C(1) << 20) /* rows mode's key slots (7) */

struct cn__gen {
    int fd; /* holds the shared lock (-1 in rows mode) */
    _Atomic uint64_t *w;
    cn_meta_t *meta; /* rows mode: the words are cn_obj_gen rows; NULL: the file */
};

cn_err_t cn__gen_open(const char *data_dir, cn__gen_t **out)
{
    *out = NULL;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/objects.gen", data_dir) >= sizeof path)
        return -ENAMETOOLONG;
    cn__gen_t *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    void *m = NULL;
    /* Zeroed by a process alone with it: invariant 4. */
    cn_err_t err = cn_shared_words_open(path, GEN_WORDS, &g->fd, &m);
    if (err < 0) {
        free(g);
        return err;
    }
    g->w = m;
    *out = g;
    return 0;
}

cn_err_t cn__gen_open_rows(cn_meta_t *meta, cn__gen_t **out)
{
    *out = NULL;
    CN_TRY(cn__sql_migrate(meta, &cn__sql_objgen_set));
    cn__gen_t *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->fd = -1;
    g->meta = meta;
    *out = g;
    return 0;
}

void cn__gen_close(cn__gen_t *g)
{
    if (!g)
        return;
    if (!g->meta)
        cn_shared_words_close(g->fd, (void *)g->w, GEN_WORDS);
    free(g);
}

typedef struct hload {
    int64_t slot, kslot, sum, bgen;
} hload_t;

static cn_err_t hload_body(cn_meta_txn_t *txn, void *ctx)
{
    hload_t *r = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_objgen[CN_SQL_OBJGEN_HLOAD], "ii", r->slot, r->kslot);
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        r->sum = cn_meta_column_int64(st, 0);
        r->bgen = cn_meta_column_int64(st, 1);
    }
    cn_meta_finish(st);
    return err < 0 ? err : err == CN_META_ROW ? 0 : CN_E_DB;
}

cn__hstamp_t cn__gen_hload(const cn__gen_t *g, size_t slot, size_t kslot)
{
    if (!g)
        return (cn__hstamp_t){ 0, 0 };
    if (!g->meta) {
        uint64_t w = atomic_load(&g->w[slot]);
        return (cn__hstamp_t){ w, w };
    }
    hload_t r = { (int64_t)slot, (int64_t)kslot, 0, 0 };
    cn_err_t err =
        cn_meta_run(g->meta, CN_META_RUN_READ | CN_META_RUN_ONE | CN_META_RETRY, hload_body, &r);
    return cn__gen_hstamp_rows(err < 0 ? -1 : r.sum, err < 0 ? -1 : r.bgen);
}

cn__hstamp_t cn__gen_hstamp_rows(int64_t sum, int64_t bgen)
{
    if (sum < 0 || bgen < 0)
        return (cn__hstamp_t){ ROW_UNKNOWN, ROW_UNKNOWN };
    return (cn__hstamp_t){ (uint64_t)sum << 32, (uint64_t)bgen << 32 };
}

/* The slot's row as a word (rows mode), read in a transaction of its own:
 * cn__gen_hload's bucket half, the key slot being the slot itself. */
static uint64_t row_load(const cn__gen_t *g, size_t slot)
{
    return cn__gen_hload(g, slot, slot).b;
}

size_t cn__gen_kslot(const cn__gen_t *g, const char *bucket, const char *key)
{
    if (!g || !g->meta || !bucket || !key)
        return cn__gen_slot(bucket);
    uint64_t h = cn_cache_hash(bucket, strlen(bucket)) * UINT64_C(0x9E3779B97F4A7C15) ^
                 cn_cache_hash(key, strlen(key));
    return CN__GEN_SLOTS + (size_t)(h % GEN_KEY_SLOTS);
}

cn_err_t cn__gen_bump(const cn__gen_t *g, cn_meta_txn_t *txn, size_t slot)
{
    if (!g || !g->meta)
        return 0;
    /* The last statement (objects.c, gen_run_body): its answer comes with
     * the commit's round trip. */
    cn_err_t err = cn_meta_pushf(txn, cn__sql_objgen[CN_SQL_OBJGEN_BUMP], "i", (int64_t)slot);
    return err < 0 ? err : 0;
}

bool cn__gen_local(const cn__gen_t *g)
{
    return g && !g->meta;
}

size_t cn__gen_slot(const char *bucket)
{
    return bucket ? (size_t)(cn_cache_hash(bucket, strlen(bucket)) % CN__GEN_SLOTS) : 0;
}

uint64_t cn__gen_load(const cn__gen_t *g, size_t slot)
{
    if (g && g->meta)
        return row_load(g, slot);
    return g ? atomic_load(&g->w[slot]) : 0;
}

void cn__gen_enter(cn__gen_t *g, size_t slot)
{
    if (g && !g->meta)
        atomic_fetch_add(&g->w[slot], 1);
}

void cn__gen_leave(cn__gen_t *g, size_t slot)
{
    if (g && !g->meta)
        atomic_fetch_add(&g->w[slot], GEN_LEAVE);
}

uint64_t cn__gen_sload(const cn__gen_t *g, size_t slot)
{
    if (g && g->meta)
        return row_load(g, slot); /* rows mode: every write moves it (6) */
    return g ? atomic_load(&g->w[CN__GEN_SLOTS + slot]) : 0;
}

void cn__gen_senter(cn__gen_t *g, size_t slot)
{
    if (g && !g->meta)
        atomic_fetch_add(&g->w[CN__GEN_SLOTS + slot], 1);
}

void cn__gen_sleave(cn__gen_t *g, size_t slot)
{
    if (g && !g->meta)
        atomic_fetch_add(&g->w[CN__GEN_SLOTS + slot], GEN_LEAVE);
}
