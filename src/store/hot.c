/* The store's cache of small blobs' bytes (cn_store_bytes_get): a GET of a
 * hot small object is answered from memory, with no descriptor look-up and
 * no read, whatever face asks.
 *
 * Invariants:
 *  1. Entries are content-addressed and immutable: an entry holds exactly
 *     the logical bytes its digest's blob served when it was filled (a raw
 *     file or pack record read as cn_store_fd_get_at hands it, an envelope
 *     decoded as cn_store_read_range serves it), so it is never stale and
 *     never invalidated; a removed blob's entry only ages out.  Callers ask
 *     for a digest only while they hold what makes it live (a guard, or a
 *     version found current), exactly as for a descriptor.
 *  2. Bounded: at most CN__HOT_SLOTS entries of at most CN_STORE_BYTES_MAX
 *     bytes each, and CN__HOT_BUDGET bytes of them (the cn_cache bounds).
 *  3. A blob's bytes come in only on its second look within a window (the
 *     doorkeeper, s->hot_seen), so a pass over blobs read once (a scan, a
 *     replication) does not push the hot set out.
 *  4. An entry is offered only whole: a fill that read fewer or more bytes
 *     than the caller's length, or failed, offers nothing and answers
 *     CN_E_AGAIN, and the caller's own path (descriptor or ranged read)
 *     meets and reports whatever is wrong.
 *  5. Nothing is held across a fill but the caller's guard; a fill runs on
 *     the calling thread, costing what the read it replaces costs.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/util.h"

typedef struct hot {
    cn_cent_t ent; /* key = the digest's bytes (d below) */
    cn_digest_t d;
    uint64_t len;
    uint8_t bytes[];
} hot_t;

void cn__hot_open(cn_store_t *s)
{
    (void)cn_cache_init(&s->hot, CN__HOT_SLOTS, CN__HOT_BUDGET); /* -ENOMEM: off */
}

void cn__hot_close(cn_store_t *s)
{
    cn_cache_destroy(&s->hot);
}

static void hot_destroy(cn_cent_t *e)
{
    free(e);
}

/* Whether d was looked at since the doorkeeper's last clearing (a second
 * look); marks it when not. */
static bool seen_before(cn_store_t *s, const cn_digest_t *d)
{
    uint32_t bit = cn_load_u32be(d->b + 4) % CN__HOT_SEEN_BITS;
    uint64_t mask = UINT64_C(1) << (bit % 64);
    _Atomic uint64_t *w = &s->hot_seen[bit / 64];
    if (atomic_load_explicit(w, memory_order_relaxed) & mask)
        return true;
    if (atomic_fetch_or_explicit(w, mask, memory_order_relaxed) & mask)
        return true;
    if (atomic_fetch_add_explicit(&s->hot_seen_n, 1, memory_order_relaxed) + 1 >=
        CN__HOT_SEEN_BITS / 2) {
        /* Racing markers may lose a bit: a blob then waits one more look. */
        atomic_store_explicit(&s->hot_seen_n, 0, memory_order_relaxed);
        for (size_t i = 0; i < CN__HOT_SEEN_BITS / 64; i++)
            atomic_store_explicit(&s->hot_seen[i], 0, memory_order_relaxed);
    }
    return false;
}

/* Reads d's len logical bytes into h->bytes (invariant 4). */
static cn_err_t hot_fill(cn_store_t *s, const cn_digest_t *d, hot_t *h)
{
    int fd = -1;
    uint64_t off = 0, blen = 0;
    void *fdh = NULL;
    cn_err_t rc = cn_store_fd_get_at(s, d, &fd, &off, &blen, &fdh);
    if (rc == CN_OK) {
        rc = blen != h->len ? CN_E_CORRUPT
                            : cn_pread_full(fd, h->bytes, (size_t)h->len, (off_t)off, CN_E_CORRUPT);
        cn_store_fd_put(s, fd, fdh);
        return rc;
    }
    if (rc != CN_E_UNSUPPORTED) /* not an envelope, nor a blob being fetched */
        return rc;
    /* One byte more than expected (the entry has room for it): a blob
     * longer than the caller's length fills it, one that long does not. */
    size_t n = 0;
    rc = cn_store_read_range_buf(s, d, 0, h->bytes, (size_t)h->len + 1, &n, NULL);
    return rc == CN_OK && n != h->len ? CN_E_CORRUPT : rc;
}

cn_err_t cn_store_bytes_get(cn_store_t *s, const cn_digest_t *d, uint64_t len, const uint8_t **p,
                            void **handle)
{
    *p = NULL;
    *handle = NULL;
    if (len > CN_STORE_BYTES_MAX || !s->hot.nslots)
        return CN_E_AGAIN;
    hot_t *h = (hot_t *)cn_cache_find(&s->hot, (const char *)d->b, sizeof d->b, 0, 0);
    if (h && h->len != len) { /* never, for a content address: the caller's path decides */
        cn_cent_release(&h->ent);
        return CN_E_AGAIN;
    }
    if (h) {
        cn_metric_add(cn__store_metrics()->hot_hits, 1);
        *p = h->bytes;
        *handle = h;
        return CN_OK;
    }
    if (!seen_before(s, d))
        return CN_E_AGAIN;
    h = malloc(sizeof *h + (size_t)len + 1); /* + 1: hot_fill's probe past the end */
    if (!h)
        return CN_E_AGAIN;
    memset(h, 0, sizeof *h);
    atomic_init(&h->ent.refs, 1);
    h->d = *d;
    h->len = len;
    h->ent.key = (const char *)h->d.b;
    h->ent.klen = sizeof h->d.b;
    h->ent.hash = cn_cache_hash(h->ent.key, h->ent.klen);
    h->ent.cost = sizeof *h + (size_t)len;
    h->ent.destroy = hot_destroy;
    if (hot_fill(s, d, h) != CN_OK) {
        free(h);
        return CN_E_AGAIN;
    }
    cn_cache_offer(&s->hot, &h->ent);
    cn_metric_add(cn__store_metrics()->hot_fills, 1);
    *p = h->bytes;
    *handle = h;
    return CN_OK;
}

void cn_store_bytes_put(void *handle)
{
    if (handle)
        cn_cent_release(&((hot_t *)handle)->ent);
}
