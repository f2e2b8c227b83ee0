/* The free space of the store's data directory: for Scribe's
 * instance_status (available_bytes), which a gateway's placement reads, and
 * the reserve that new blob bytes may not take (opts.min_free_bytes).
 * Samples, never reservations: nothing here holds space for one writer; the
 * reserve keeps the last of the disk for deletes, metadata and compaction,
 * which never ask here, so an operator can always free space. */
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>

cn_err_t cn_store_space(cn_store_t *s, uint64_t *available)
{
    *available = 0;
    /* A tiered store keeps its blobs in the S3 tier: the local disk holds
     * staging and the cache only, and its free space says nothing of the
     * room left for repositories. */
    if (cn_store_is_tiered(s))
        return CN_E_UNSUPPORTED;
    return cn_fs_space(s->data_fd, available, NULL);
}

#define SAMPLE_NS 50000000LL /* free space re-read at most this often */
#define REFUSED_LOG_MS 60000 /* one warning a minute while refusing */
#define AUTO_MIN (8ull << 20)
#define AUTO_MAX (256ull << 20)

void cn__store_space_init(cn_store_t *s)
{
    uint64_t want = s->opts.min_free_bytes, avail = 0, total = 0;
    s->min_free = 0;
    if (!want || cn_store_is_tiered(s))
        return;
    if (want == CN_STORE_MIN_FREE_AUTO) {
        if (cn_fs_space(s->data_fd, &avail, &total) < 0)
            return;
        want = total / 100 < AUTO_MIN ? AUTO_MIN : total / 100 > AUTO_MAX ? AUTO_MAX : total / 100;
    }
    s->min_free = want;
    atomic_init(&s->free_at, INT64_MIN / 2);
    s->refused_log.period_ms = REFUSED_LOG_MS; /* the rest zeroed with s */
    s->refused_log.burst = 1;
}

/* Takes a new sample of the free bytes at now. */
static void resample(cn_store_t *s, int64_t now)
{
    uint64_t avail = 0;
    if (cn_fs_space(s->data_fd, &avail, NULL) < 0)
        avail = UINT64_MAX; /* not known: the write will tell */
    atomic_store(&s->free_sample, avail > INT64_MAX ? INT64_MAX : (int64_t)avail);
    atomic_store(&s->free_granted, 0);
    atomic_store(&s->free_at, now);
}

/* Whether len more bytes leave the reserve free, by the sample less what
 * writers were let in for since it was taken (counted in when they do). */
static bool fits(cn_store_t *s, int64_t n, uint64_t *avail)
{
    int64_t est = atomic_load(&s->free_sample) - atomic_fetch_add(&s->free_granted, n) - n;
    *avail = est > 0 ? (uint64_t)est : 0;
    if (*avail >= s->min_free)
        return true;
    atomic_fetch_sub(&s->free_granted, n);
    return false;
}

cn_err_t cn__store_room(cn_store_t *s, int64_t len)
{
    if (!s->min_free)
        return CN_OK;
    int64_t now = cn_mono_ns(), n = len > 0 ? len : 0;
    uint64_t avail = 0;
    if (now - atomic_load(&s->free_at) > SAMPLE_NS)
        resample(s, now);
    if (fits(s, n, &avail))
        return CN_OK;
    resample(s, now); /* a refusal is never taken on an old sample */
    if (fits(s, n, &avail))
        return CN_OK;
    cn_warn_limited(&s->refused_log, "store",
                    "%" PRIu64
                    " byte(s) free on the data file system, under the reserve of %" PRIu64
                    ": new blobs refused until space is freed (deletes still work)",
                    avail, s->min_free);
    return -ENOSPC;
}
