/* The identity write-generation: how a process knows, without SQL, that no
 * process changed a token, a key, an account or a grant since it cached a
 * token's state.
 *
 * DATA/identity.gen holds one 64-bit word, mapped MAP_SHARED by every process
 * that opens identity on the data dir (cairnd, cairn admin, tools): its high
 * 32 bits are a generation, its low 32 bits the writers in flight.
 *
 * Invariants (the objects' write-generation table, src/objects/gen.c, has the
 * same rules per bucket):
 *   1. Every write transaction of this module (cn__id_write_run) adds one
 *      writer in flight before it may commit, and only after cn_meta_run
 *      returned (committed, or not) adds one to the generation and takes the
 *      writer away, in one atomic add; the caller answers after that.
 *   2. A token's state is cached only under the word read before the read
 *      transaction that produced it began, and only when that word had no
 *      writer in flight.
 *   3. A cached state is served only while the word is exactly the one it was
 *      cached under.
 *   From 1–3: a change acknowledged before a lookup began — a revocation, a
 *   disabled account, a new secret — is never hidden by the cache, whichever
 *   process made it.
 *   4. A process dying between its commit and its leave leaves a writer in
 *      flight: nothing is cached (every lookup reads the database, never
 *      stale) until every process has closed the file and the next opener,
 *      alone with it (an exclusive flock), zeroes it.
 *   5. The generation wraps after 2^32 writes: a state cached under a word
 *      that comes back exactly 2^32 writes later would match.  The age bound
 *      (cn_identity_set_cache_ttl) makes that unreachable in practice.
 *
 * Nodes of a fleet share no memory: across them the word is paired with the
 * metadata's "identity" topic (cn_meta_topic_gen, src/meta/watch.c), which
 * every write run here bumps inside its own transaction.  A state is cached
 * and served only while the topic's value is usable and the same as before
 * its read (identity.c), so a change made through another node is honoured
 * within CN_META_TOPIC_FRESH_MS (watch.c, W2) instead of the age bound.
 *
 * This file must never let a write run commit without its topic bump, and
 * never hand out the word without the atomic load that orders it before
 * later SQL. */
#include "identity_int.h"

#include <errno.h>
#include <stdio.h>

#include "cairn/util.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the word needs lock-free 64-bit atomics");

#define GEN_LEAVE ((UINT64_C(1) << 32) - 1) /* generation + 1, in flight - 1 */
#define SYNC_MS 250 /* at most, for the watcher's read after a write (PostgreSQL) */

cn_err_t cn__id_gen_open(cn_identity_t *id, const char *data_dir)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/identity.gen", data_dir) >= sizeof path)
        return -ENAMETOOLONG;
    void *m = NULL;
    /* Zeroed by a process alone with it: invariant 4. */
    cn_err_t err = cn_shared_words_open(path, 1, &id->gen_fd, &m);
    id->gen = m;
    return err;
}

void cn__id_gen_close(cn_identity_t *id)
{
    cn_shared_words_close(id->gen_fd, (void *)id->gen, 1);
    id->gen = NULL;
    id->gen_fd = -1;
}

uint64_t cn__id_gen_load(const cn_identity_t *id)
{
    return id->gen ? atomic_load(id->gen) : 0; /* no file: nothing is cached (ttl 0) */
}

typedef struct id_run {
    cn_identity_t *id;
    cn_meta_body_fn body;
    cn_meta_landed_fn landed;
    void *ctx;
} id_run_t;

/* The body, then the topic's bump last (it holds the topic row's lock only
 * until the commit), unless the body ends without a commit. */
static cn_err_t notify_body(cn_meta_txn_t *txn, void *ctx)
{
    const id_run_t *r = ctx;
    cn_err_t e = r->body(txn, r->ctx);
    if (e < 0 || cn_meta_discarded(txn))
        return e;
    cn_err_t n = cn_meta_notify(r->id->meta, txn, CN__ID_TOPIC);
    return n < 0 ? n : e;
}

static cn_err_t landed_body(cn_meta_txn_t *txn, void *ctx, bool *found)
{
    const id_run_t *r = ctx;
    return r->landed(txn, r->ctx, found);
}

cn_err_t cn__id_write_run(cn_identity_t *id, unsigned flags, cn_meta_body_fn body, void *ctx)
{
    return cn__id_write_run_keyed(id, flags, body, NULL, ctx);
}

cn_err_t cn__id_write_run_keyed(cn_identity_t *id, unsigned flags, cn_meta_body_fn body,
                                cn_meta_landed_fn landed, void *ctx)
{
    id_run_t r = { id, body, landed, ctx };
    if (id->gen)
        atomic_fetch_add(id->gen, 1);
    cn_err_t err = landed ? cn_meta_run_keyed(id->meta, flags, notify_body, landed_body, &r)
                          : cn_meta_run(id->meta, flags, notify_body, &r);
    if (id->gen)
        atomic_fetch_add(id->gen, GEN_LEAVE);
    /* This node's own caches see its bump before the caller answers, so a
     * state read next is filed under it (not dropped as stale at once). */
    if (err >= 0)
        cn_meta_topic_sync(id->meta, SYNC_MS);
    return err;
}
