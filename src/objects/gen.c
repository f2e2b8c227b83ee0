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
 *
 * This file must never be used with a metadata engine other than the
 * embedded SQLite one (the fleet's writers share no memory), and never hand
 * out a word without the atomic load that orders it before later SQL. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/util.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the table needs lock-free 64-bit atomics");

#define GEN_LEAVE ((UINT64_C(1) << 32) - 1) /* generation + 1, in flight - 1 */

struct cn__gen {
    int fd; /* holds the shared lock */
    _Atomic uint64_t *w;
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
    cn_err_t err = cn_shared_words_open(path, CN__GEN_SLOTS, &g->fd, &m);
    if (err < 0) {
        free(g);
        return err;
    }
    g->w = m;
    *out = g;
    return 0;
}

void cn__gen_close(cn__gen_t *g)
{
    if (!g)
        return;
    cn_shared_words_close(g->fd, (void *)g->w, CN__GEN_SLOTS);
    free(g);
}

size_t cn__gen_slot(const char *bucket)
{
    return bucket ? (size_t)(cn__cache_hash(bucket, strlen(bucket)) % CN__GEN_SLOTS) : 0;
}

uint64_t cn__gen_load(const cn__gen_t *g, size_t slot)
{
    return g ? atomic_load(&g->w[slot]) : 0;
}

void cn__gen_enter(cn__gen_t *g, size_t slot)
{
    if (g)
        atomic_fetch_add(&g->w[slot], 1);
}

void cn__gen_leave(cn__gen_t *g, size_t slot)
{
    if (g)
        atomic_fetch_add(&g->w[slot], GEN_LEAVE);
}
