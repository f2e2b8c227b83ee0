/* blobs/fetch: verified reads.
 *
 * The consult is store-first: a member of the namespace is served from the
 * store; otherwise a live put of the digest into the namespace is tapped;
 * otherwise the membership is asked once more (a put may have committed and
 * ended its broadcast in between: fanout.c ends broadcasts only after the
 * membership row commits), and only then is it the miss.
 *
 * Verification: the consumer checks the whole blob against the digest it
 * asked for.  Ranged reads ack one slice digest per range, computed by the
 * store over exactly the bytes that will be served (clamped to the blob);
 * the bytes then streamed are hashed again and a range whose bytes do not
 * match its acked digest stops the stream with CN_E_CORRUPT instead of
 * completing it.  Served through read(), a whole blob is checked the same
 * way against its own digest; the sendfile path (take_fd_at: a whole blob,
 * or one range, whose slice digest the store computed from the same
 * immutable bytes) is left to the consumer's check.
 *
 * A raw blob is read from a descriptor and a base offset
 * (cn_store_open_fd_at): its file at 0, or, packed, a duplicate of its pack
 * at its payload, so a packed blob goes out by sendfile too (take_fd_at)
 * and compaction cannot change what the descriptor reads (store P9).
 */
#include "blobs_int.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cn_blobs_fetch {
    cn_blobs_t *b;
    cn_digest_t d;
    cn_blobs_ack_t ack;
    cn__tap_t *tap;
    int fd;        /* raw blob, or -1 (LZ4 form: read_range) */
    uint64_t base; /* where its bytes start in fd (a packed blob's pack offset) */
    size_t nr;
    cn_blobs_range_t *r; /* clamped */
    cn_digest_t *expect; /* per range: what the served bytes must hash to */
    uint64_t *slen;
    size_t cur;
    uint64_t done; /* bytes of r[cur] served */
    cn_blake3_t h;
};

static cn_err_t discard(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
    return CN_OK;
}

static cn_err_t open_store(cn_blobs_fetch_t *f, const cn_blobs_range_t *ranges, size_t n)
{
    cn_blobs_t *b = f->b;
    cn_store_stat_t st;
    CN_TRY(cn_store_stat(b->store, &f->d, &st));
    size_t nr = n ? n : 1;
    f->r = calloc(nr, sizeof *f->r);
    f->expect = calloc(nr, sizeof *f->expect);
    f->slen = calloc(nr, sizeof *f->slen);
    if (!f->r || !f->expect || !f->slen)
        return -ENOMEM;
    f->nr = nr;
    uint64_t total = 0;
    if (!n) {
        f->r[0].off = 0;
        f->r[0].len = st.len;
        f->expect[0] = f->d;
        f->slen[0] = st.len;
        total = st.len;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t off = ranges[i].off < st.len ? ranges[i].off : st.len;
        uint64_t len = st.len - off < ranges[i].len ? st.len - off : ranges[i].len;
        f->r[i].off = off;
        f->r[i].len = len;
        cn_digest_t slice;
        uint64_t served = 0;
        if (len == 0) {
            cn_blake3("", 0, &slice);
        } else {
            CN_TRY(cn_store_read_range(b->store, &f->d, off, len, discard, NULL, &slice, &served));
            if (served != len)
                return CN_E_CORRUPT;
        }
        f->expect[i] = slice;
        f->slen[i] = len;
        total += len;
    }
    if (st.form == CN_STORE_RAW) {
        uint64_t flen = 0;
        cn_err_t rc = cn_store_open_fd_at(b->store, &f->d, &f->fd, &f->base, &flen);
        if (rc < 0 && rc != CN_E_UNSUPPORTED)
            return rc;
        if (rc >= 0 && flen != st.len)
            return CN_E_CORRUPT;
    }
    f->ack.source = CN_BLOBS_SOURCE_STORE;
    f->ack.has_len = true;
    f->ack.len = st.len;
    f->ack.total = total;
    if (n) {
        f->ack.nslices = n;
        f->ack.slice = f->expect;
        f->ack.slice_len = f->slen;
    }
    cn_blake3_init(&f->h);
    return CN_OK;
}

cn_err_t cn_blobs_fetch_open(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                             const cn_digest_t *d, const cn_blobs_range_t *ranges, size_t n,
                             cn_blobs_fetch_t **out)
{
    *out = NULL;
    if (!ns || !cn_blobs_ns_valid(ns, strnlen(ns, CN_NAMESPACE_MAX + 1)))
        return CN_E_INVALID;
    if (n > CN_BLOBS_RANGES_MAX)
        return CN_E_LIMIT;
    CN_TRY(cn__blobs_authorize(b, c, ns, CN_NS_READ));
    cn_blobs_fetch_t *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->b = b;
    f->d = *d;
    f->fd = -1;
    bool member = false;
    cn_err_t rc = cn__blobs_is_member(b, ns, d, &member);
    if (rc >= 0 && !member) {
        rc = cn__tap_open(b, ns, d, &f->tap);
        if (rc == CN_E_NOT_FOUND && (rc = cn__blobs_is_member(b, ns, d, &member)) >= 0 && !member)
            rc = CN_E_NOT_FOUND;
    }
    if (rc >= 0 && f->tap && n) {
        /* Slice digests of bytes not yet received cannot be acked. */
        rc = CN_E_UNSUPPORTED;
    } else if (rc >= 0 && f->tap) {
        f->ack.source = CN_BLOBS_SOURCE_FANOUT;
        atomic_fetch_add(&b->n.fetches_fanout, 1);
    } else if (rc >= 0) {
        rc = open_store(f, ranges, n);
        if (rc == CN_E_NOT_FOUND)
            cn_warn(CN__MOD, "%s holds a digest the store lacks", ns);
        if (rc >= 0)
            atomic_fetch_add(&b->n.fetches_store, 1);
    }
    if (rc == CN_E_NOT_FOUND)
        atomic_fetch_add(&b->n.misses, 1);
    if (rc < 0) {
        cn_blobs_fetch_close(f);
        return rc;
    }
    *out = f;
    return CN_OK;
}

const cn_blobs_ack_t *cn_blobs_fetch_ack(const cn_blobs_fetch_t *f)
{
    return &f->ack;
}

cn_err_t cn_blobs_fetch_take_fd_at(cn_blobs_fetch_t *f, int *fd, uint64_t *off, uint64_t *len)
{
    /* One range at most: a body of several would be several runs of fd. */
    if (f->tap || f->nr != 1 || f->fd < 0 || f->done || f->cur)
        return CN_E_UNSUPPORTED;
    *fd = f->fd;
    *off = f->base + f->r[0].off;
    *len = f->r[0].len;
    f->fd = -1;
    f->cur = f->nr; /* read() has nothing left */
    return CN_OK;
}

cn_err_t cn_blobs_fetch_take_fd(cn_blobs_fetch_t *f, int *fd, uint64_t *len)
{
    /* Its callers send from offset 0: a packed blob, or a range, is read()
     * instead. */
    if (f->base || f->ack.nslices)
        return CN_E_UNSUPPORTED;
    uint64_t off;
    return cn_blobs_fetch_take_fd_at(f, fd, &off, len);
}

ssize_t cn_blobs_fetch_read(cn_blobs_fetch_t *f, void *buf, size_t max, const cn_blobs_waiter_t *w)
{
    if (f->tap)
        return cn__tap_read(f->b, f->tap, buf, max, w);
    while (f->cur < f->nr && f->done == f->r[f->cur].len) {
        cn_digest_t got;
        cn_blake3_final(&f->h, &got);
        if (memcmp(got.b, f->expect[f->cur].b, CN_DIGEST_LEN) != 0) {
            cn_error(CN__MOD, "served bytes of a blob do not match their digest");
            return CN_E_CORRUPT;
        }
        f->cur++;
        f->done = 0;
        cn_blake3_init(&f->h);
    }
    if (f->cur >= f->nr || max == 0)
        return 0;
    const cn_blobs_range_t *r = &f->r[f->cur];
    uint64_t left = r->len - f->done;
    size_t want = left < max ? (size_t)left : max;
    size_t got = 0;
    if (f->fd >= 0) {
        ssize_t k;
        do
            k = pread(f->fd, buf, want, (off_t)(f->base + r->off + f->done));
        while (k < 0 && errno == EINTR);
        if (k < 0)
            return -errno;
        if (k == 0)
            return CN_E_CORRUPT; /* shorter than its length */
        got = (size_t)k;
    } else {
        /* Only a range's last piece waits for a blob still being fetched to
         * verify whole: the others are checked against the range's digest
         * below before that piece is handed out. */
        cn_err_t rc =
            cn_store_read_part(f->b->store, &f->d, r->off + f->done, buf, want, &got, want == left);
        if (rc < 0)
            return rc;
        if (got == 0)
            return CN_E_CORRUPT;
    }
    cn_blake3_update(&f->h, buf, got);
    f->done += got;
    /* Check a finished range now, so its last byte is never handed out
     * before its digest held. */
    if (f->done == r->len) {
        cn_digest_t dg;
        cn_blake3_final(&f->h, &dg);
        if (memcmp(dg.b, f->expect[f->cur].b, CN_DIGEST_LEN) != 0) {
            cn_error(CN__MOD, "served bytes of a blob do not match their digest");
            return CN_E_CORRUPT;
        }
        f->cur++;
        f->done = 0;
        cn_blake3_init(&f->h);
    }
    return (ssize_t)got;
}

void cn_blobs_fetch_close(cn_blobs_fetch_t *f)
{
    if (!f)
        return;
    cn__tap_close(f->b, f->tap);
    if (f->fd >= 0)
        close(f->fd);
    free(f->r);
    free(f->expect);
    free(f->slen);
    free(f);
}
