/* The store's cache of open descriptors of small raw blobs
 * (cn_store_fd_get / cn_store_fd_put): a GET of a small object costs one
 * fstat instead of a path walk, an open, an fstat and a close.
 *
 * Sized at start from the process's descriptor limit (a quarter of
 * RLIMIT_NOFILE, between CN__FDC_MIN and CN__FDC_MAX slots), so that a working
 * set of thousands of keys stays open without starving the listeners of
 * descriptors.  Set-associative (CN__FDC_WAYS slots per set), least recently
 * used out within a set, one mutex: a look-up is a few compares.
 *
 * Entries are content-addressed, so a kept descriptor always reads the right
 * bytes.  What it must never do is hold a removed blob's space: the store's
 * delete and the sweeper drop the entry when they remove the file
 * (cn__fdc_forget), and the fstat on a hit catches any other unlink.  A
 * borrowed entry is closed by its last borrower.  Lock order: a stripe lock,
 * then fdc_mu; nothing is opened while fdc_mu is held.
 *
 * Packed blobs (pack.c) are not kept here: their packs' descriptors stay
 * open anyway.  cn_store_fd_get hands out a private copy of their verified
 * bytes; cn_store_fd_get_at a duplicate of the pack's descriptor and the
 * record's offset.
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
    pthread_mutex_init(&s->fdc_mu, NULL);
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
    pthread_mutex_destroy(&s->fdc_mu);
}

static size_t fdc_set(const cn_store_t *s, const cn_digest_t *d)
{
    return (size_t)(cn_load_u32be(d->b) % (s->fdc_n / CN__FDC_WAYS)) * CN__FDC_WAYS;
}

/* Closes e now, or marks it for its last borrower to close.  fdc_mu held. */
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
    size_t base = fdc_set(s, d);
    pthread_mutex_lock(&s->fdc_mu);
    for (size_t i = base; i < base + CN__FDC_WAYS; i++) {
        cn__fdc_ent_t *e = &s->fdc[i];
        if (e->fd >= 0 && !e->stale && memcmp(e->d.b, d->b, CN_DIGEST_LEN) == 0)
            drop_locked(e);
    }
    pthread_mutex_unlock(&s->fdc_mu);
}

/* A kept, live descriptor of d, borrowed; NULL on a miss.  fdc_mu held. */
static cn__fdc_ent_t *lookup_locked(cn_store_t *s, size_t base, const cn_digest_t *d)
{
    for (size_t i = base; i < base + CN__FDC_WAYS; i++) {
        cn__fdc_ent_t *e = &s->fdc[i];
        if (e->fd < 0 || e->stale || memcmp(e->d.b, d->b, CN_DIGEST_LEN) != 0)
            continue;
        struct stat st;
        if (fstat(e->fd, &st) < 0 || st.st_nlink == 0) {
            drop_locked(e);
            return NULL;
        }
        e->refs++;
        e->used = ++s->fdc_tick;
        return e;
    }
    return NULL;
}

/* Keeps fd (of d, n bytes) in d's set, borrowed once, unless another thread
 * kept d meanwhile or every slot is borrowed; NULL when not kept. */
static cn__fdc_ent_t *keep_locked(cn_store_t *s, size_t base, const cn_digest_t *d, int fd,
                                  uint64_t n)
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
    *victim = (cn__fdc_ent_t){ .d = *d, .fd = fd, .len = n, .refs = 1, .used = ++s->fdc_tick };
    return victim;
}

cn_err_t cn_store_fd_get(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *len, void **handle)
{
    *handle = NULL;
    size_t base = s->fdc_n ? fdc_set(s, d) : 0;
    if (s->fdc_n) {
        pthread_mutex_lock(&s->fdc_mu);
        cn__fdc_ent_t *e = lookup_locked(s, base, d);
        if (e) {
            *fd = e->fd;
            *len = e->len;
            *handle = e;
        }
        pthread_mutex_unlock(&s->fdc_mu);
        if (e)
            return CN_OK;
    }
    int f = -1;
    uint64_t n = 0;
    cn__pack_loc_t loc;
    bool packed = cn__pack_find(s, d, &loc);
    CN_TRY(cn_store_open_fd(s, d, &f, &n));
    *fd = f;
    *len = n;
    if (packed || n > CN__FDC_MAX_LEN || !s->fdc_n)
        return CN_OK;
    pthread_mutex_lock(&s->fdc_mu);
    *handle = keep_locked(s, base, d, f, n);
    pthread_mutex_unlock(&s->fdc_mu);
    return CN_OK;
}

cn_err_t cn_store_fd_get_at(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *off,
                            uint64_t *len, void **handle)
{
    cn__pack_loc_t loc;
    *handle = NULL;
    if (!cn__pack_find(s, d, &loc)) {
        *off = 0;
        return cn_store_fd_get(s, d, fd, len, handle);
    }
    /* A duplicate, closed by cn_store_fd_put: the pack's own descriptor
     * stays the store's. */
    int f = fcntl(loc.fd, F_DUPFD_CLOEXEC, 0);
    if (f < 0)
        return -errno;
    *fd = f;
    *off = loc.off;
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
    pthread_mutex_lock(&s->fdc_mu);
    if (--e->refs == 0 && e->stale)
        drop_locked(e);
    pthread_mutex_unlock(&s->fdc_mu);
}
