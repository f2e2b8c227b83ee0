/* The store's cache of open descriptors of small raw blobs
 * (cn_store_fd_get / cn_store_fd_put): a GET of a small object costs one
 * fstat instead of a path walk, an open, an fstat and a close.
 *
 * Sized at start from the process's descriptor limit (a quarter of
 * RLIMIT_NOFILE, between CN__FDC_MIN and CN__FDC_MAX slots), so that a working
 * set of thousands of keys stays open without starving the listeners of
 * descriptors.  Set-associative (CN__FDC_WAYS slots per set), least recently
 * used out within a set: a look-up is a few compares.
 *
 * Invariants:
 *  1. A set's slots, their recency and their borrow counts are read and
 *     written only under the set's stripe lock (fdc_lock[set %
 *     CN__FDC_LOCKS]), held for compares and stores only: no system call
 *     runs under it except the close of an unborrowed entry.  Every loop
 *     and worker takes these locks on every small GET; with one lock (and
 *     the fstat under it) two loops met on it about 1.4 times per GET, each
 *     a futex pair (docs/performance.md, issue 16).
 *  2. Entries are content-addressed, so a kept descriptor always reads the
 *     right bytes.
 *  3. A kept descriptor never holds a removed blob's space for longer than
 *     its borrowers need it: the store's delete and the sweeper drop the
 *     entry when they remove the file (cn__fdc_forget), and a hit's fstat
 *     (on the borrowed descriptor, after the lock) catches any other unlink
 *     and drops it.  A dropped entry is closed by its last borrower
 *     (refs 0), never while borrowed, so a borrower's descriptor number is
 *     never reused under it.
 *  4. Lock order: a store stripe lock, then a descriptor-cache stripe; one
 *     descriptor-cache stripe at a time; nothing is opened under one.
 *
 * Packed blobs (pack.c) are not kept here: their packs' descriptors stay
 * open anyway.  cn_store_fd_get hands out a private copy of their verified
 * bytes; cn_store_fd_get_at the pack's own descriptor, borrowed through its
 * reference count (the handle; cn_store_fd_put gives it back), and
 * cn_store_open_fd_at a duplicate, each with the payload's offset (pack.c,
 * P9: either reads the right bytes through any compaction, so a GET racing a
 * pass that retires the pack still sends what it looked up).
 */
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/util.h"

void cn__fdc_init(cn_store_t *s)
{
    for (size_t i = 0; i < CN__FDC_LOCKS; i++) {
        pthread_mutex_init(&s->fdc_lock[i].mu, NULL);
        s->fdc_lock[i].tick = 0;
    }
    size_t n = CN__FDC_MIN;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        n = (size_t)(rl.rlim_cur / 4);
    else if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        n = CN__FDC_MAX;
    if (n < CN__FDC_MIN)
        n = CN__FDC_MIN;
    if (n > CN__FDC_MAX)
        n = CN__FDC_MAX;
    n -= n % CN__FDC_WAYS;
    /* Without memory the cache is off: every get opens, every put closes. */
    s->fdc = calloc(n, sizeof *s->fdc);
    s->fdc_n = s->fdc ? n : 0;
    for (size_t i = 0; i < s->fdc_n; i++)
        s->fdc[i].fd = -1;
}

void cn__fdc_close(cn_store_t *s)
{
    for (size_t i = 0; i < s->fdc_n; i++)
        if (s->fdc[i].fd >= 0)
            close(s->fdc[i].fd);
    free(s->fdc);
    s->fdc = NULL;
    s->fdc_n = 0;
    for (size_t i = 0; i < CN__FDC_LOCKS; i++)
        pthread_mutex_destroy(&s->fdc_lock[i].mu);
}

/* d's set: its first slot, and its stripe. */
static size_t fdc_set(cn_store_t *s, const cn_digest_t *d, cn__fdc_lock_t **lk)
{
    size_t set = cn_load_u32be(d->b) % (s->fdc_n / CN__FDC_WAYS);
    *lk = &s->fdc_lock[set % CN__FDC_LOCKS];
    return set * CN__FDC_WAYS;
}

/* Closes e now, or marks it for its last borrower to close.  Stripe held. */
static void drop_locked(cn__fdc_ent_t *e)
{
    e->stale = true;
    if (!e->refs) {
        close(e->fd);
        e->fd = -1;
        e->stale = false;
    }
}

void cn__fdc_forget(cn_store_t *s, const cn_digest_t *d)
{
    if (!s->fdc_n)
        return;
    cn__fdc_lock_t *lk;
    size_t base = fdc_set(s, d, &lk);
    pthread_mutex_lock(&lk->mu);
    for (size_t i = base; i < base + CN__FDC_WAYS; i++) {
        cn__fdc_ent_t *e = &s->fdc[i];
        if (e->fd >= 0 && !e->stale && memcmp(e->d.b, d->b, CN_DIGEST_LEN) == 0)
            drop_locked(e);
    }
    pthread_mutex_unlock(&lk->mu);
}

/* A kept descriptor of d, borrowed (not yet checked against unlink); NULL
 * on a miss.  Stripe held. */
static cn__fdc_ent_t *lookup_locked(cn_store_t *s, cn__fdc_lock_t *lk, size_t base,
                                    const cn_digest_t *d)
{
    for (size_t i = base; i < base + CN__FDC_WAYS; i++) {
        cn__fdc_ent_t *e = &s->fdc[i];
        if (e->fd < 0 || e->stale || memcmp(e->d.b, d->b, CN_DIGEST_LEN) != 0)
            continue;
        e->refs++;
        e->used = ++lk->tick;
        return e;
    }
    return NULL;
}

/* Keeps fd (of d, n bytes) in d's set, borrowed once, unless another thread
 * kept d meanwhile or every slot is borrowed; NULL when not kept.  Stripe
 * held. */
static cn__fdc_ent_t *keep_locked(cn_store_t *s, cn__fdc_lock_t *lk, size_t base,
                                  const cn_digest_t *d, int fd, uint64_t n)
{
    cn__fdc_ent_t *victim = NULL;
    for (size_t i = base; i < base + CN__FDC_WAYS; i++) {
        cn__fdc_ent_t *e = &s->fdc[i];
        if (e->fd >= 0 && !e->stale && memcmp(e->d.b, d->b, CN_DIGEST_LEN) == 0)
            return NULL;
        if (e->refs)
            continue;
        if (!victim || e->fd < 0 || (victim->fd >= 0 && e->used < victim->used))
            victim = e;
    }
    if (!victim)
        return NULL;
    if (victim->fd >= 0)
        close(victim->fd);
    *victim = (cn__fdc_ent_t){ .d = *d, .fd = fd, .len = n, .refs = 1, .used = ++lk->tick };
    return victim;
}

/* A borrowed entry's release (refs 1 → 0 closes a dropped one); when
 * unlinked, the entry is dropped first (invariant 3). */
static void release(cn__fdc_lock_t *lk, cn__fdc_ent_t *e, bool unlinked)
{
    pthread_mutex_lock(&lk->mu);
    if (unlinked)
        e->stale = true;
    if (--e->refs == 0 && e->stale)
        drop_locked(e);
    pthread_mutex_unlock(&lk->mu);
}

/* d's kept descriptor, borrowed and checked (invariant 3): true on a hit. */
static bool fdc_hit(cn_store_t *s, cn__fdc_lock_t *lk, size_t base, const cn_digest_t *d, int *fd,
                    uint64_t *len, void **handle)
{
    pthread_mutex_lock(&lk->mu);
    cn__fdc_ent_t *e = lookup_locked(s, lk, base, d);
    int f = e ? e->fd : -1;
    uint64_t n = e ? e->len : 0;
    pthread_mutex_unlock(&lk->mu);
    if (!e)
        return false;
    /* Borrowed, so f stays open (and f's number ours) while we look. */
    struct stat st;
    if (fstat(f, &st) < 0 || st.st_nlink == 0) {
        release(lk, e, true);
        return false;
    }
    *fd = f;
    *len = n;
    *handle = e;
    return true;
}

cn_err_t cn_store_fd_get(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *len, void **handle)
{
    *handle = NULL;
    cn__fdc_lock_t *lk = NULL;
    size_t base = s->fdc_n ? fdc_set(s, d, &lk) : 0;
    if (s->fdc_n && fdc_hit(s, lk, base, d, fd, len, handle))
        return CN_OK;
    int f = -1;
    uint64_t n = 0;
    cn__pack_loc_t loc;
    bool packed = cn__pack_find(s, d, &loc);
    CN_TRY(cn__store_open_fd(s, d, true, &f, &n));
    *fd = f;
    *len = n;
    if (packed || n > CN__FDC_MAX_LEN || !s->fdc_n)
        return CN_OK;
    pthread_mutex_lock(&lk->mu);
    *handle = keep_locked(s, lk, base, d, f, n);
    pthread_mutex_unlock(&lk->mu);
    return CN_OK;
}

cn_err_t cn_store_fd_get_at(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *off,
                            uint64_t *len, void **handle)
{
    cn__pack_loc_t loc;
    *handle = NULL;
    cn_err_t rc = cn__pack_borrow(s, d, &loc, handle);
    if (rc == CN_E_NOT_FOUND) {
        *off = 0;
        return cn_store_fd_get(s, d, fd, len, handle);
    }
    if (rc < 0)
        return rc;
    /* The pack's own descriptor, borrowed (P9 in pack.c): no system call,
     * and open until cn_store_fd_put, whatever compaction does. */
    *fd = loc.fd;
    *off = loc.off;
    *len = loc.len;
    return CN_OK;
}

cn_err_t cn_store_open_fd_at(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *off,
                             uint64_t *len)
{
    cn__pack_loc_t loc;
    cn_err_t rc = cn__pack_dup(s, d, &loc);
    if (rc == CN_E_NOT_FOUND) {
        *off = 0;
        return cn__store_open_fd(s, d, true, fd, len);
    }
    if (rc < 0)
        return rc;
    *fd = loc.fd;
    *off = loc.off;
    if (len)
        *len = loc.len;
    return CN_OK;
}

void cn_store_fd_put(cn_store_t *s, int fd, void *handle)
{
    cn__fdc_ent_t *e = handle;
    if (!e) {
        if (fd >= 0)
            close(fd);
        return;
    }
    /* A handle is a slot of this cache, or else a pack's borrow. */
    uintptr_t h = (uintptr_t)handle, lo = (uintptr_t)s->fdc;
    if (!s->fdc || h < lo || h >= (uintptr_t)(s->fdc + s->fdc_n)) {
        cn__pack_ref_put(handle);
        return;
    }
    size_t set = (size_t)(e - s->fdc) / CN__FDC_WAYS;
    release(&s->fdc_lock[set % CN__FDC_LOCKS], e, false);
}
