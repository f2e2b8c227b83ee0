/* Ranged reads: the logical bytes of [off, off+len), clamped to the blob's
 * end, streamed through a bounded buffer with the BLAKE3 of exactly what was
 * served.  Raw blobs are read with pread; LZ4 envelopes are decoded block by
 * block (lz4env.c); a packed blob's record is read whole and checked
 * against its digest before any byte of it is served (pack.c); a blob the
 * S3 tier is still fetching is served as it lands (backend stream op,
 * s3_fill.c), its final piece only once all of it hashed.  Nothing here
 * holds a lock: published files and pack records are immutable, and an open
 * fd keeps serving even if the sweeper unlinks the name meanwhile.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* h: NULL, or the hash that receives exactly the bytes served. */
static cn_err_t read_raw(int fd, uint64_t off, uint64_t n, cn_store_sink_fn sink, void *ctx,
                         cn_blake3_t *h)
{
    size_t cap = n < CN__STORE_IO_CHUNK ? (size_t)n : CN__STORE_IO_CHUNK;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf)
        return -ENOMEM;
    cn_err_t rc = CN_OK;
    while (n) {
        size_t want = n < cap ? (size_t)n : cap;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        if (r == 0) {
            rc = CN_E_CORRUPT; /* shorter than it was a moment ago: not ours */
            break;
        }
        if (h)
            cn_blake3_update(h, buf, (size_t)r);
        if ((rc = sink(ctx, buf, (size_t)r)) != CN_OK)
            break;
        off += (uint64_t)r;
        n -= (uint64_t)r;
    }
    free(buf);
    return rc;
}

/* The range of a packed blob, from its verified record. */
static cn_err_t read_packed(const cn__pack_loc_t *loc, uint64_t off, uint64_t len,
                            cn_store_sink_fn sink, void *ctx, cn_digest_t *slice, uint64_t *served)
{
    if (off > loc->len)
        return CN_E_RANGE;
    uint8_t *buf = malloc(loc->len ? loc->len : 1);
    if (!buf)
        return -ENOMEM;
    cn_err_t rc = cn__pack_read(loc, buf);
    uint64_t n = loc->len - off < len ? loc->len - off : len;
    if (rc == CN_OK && n)
        rc = sink(ctx, buf + off, (size_t)n);
    if (rc == CN_OK) {
        if (slice)
            cn_blake3(buf + off, (size_t)n, slice);
        if (served)
            *served = n;
    }
    free(buf);
    return rc;
}

/* The backend's stream op (backend.h): *streamed when it served d, then its
 * result, with *slice (if asked) from h, which hashed what it served. */
static cn_err_t read_streamed(cn_store_t *s, const cn_digest_t *d, uint64_t off, uint64_t len,
                              bool hold, cn_store_sink_fn sink, void *ctx, cn_blake3_t *h,
                              cn_digest_t *slice, uint64_t *served, bool *streamed)
{
    *streamed = false;
    if (!s->be->ops->stream)
        return CN_OK;
    cn_err_t rc =
        s->be->ops->stream(s->be, d, off, len, hold, sink, ctx, slice ? h : NULL, served, streamed);
    if (*streamed && rc == CN_OK && slice)
        cn_blake3_final(h, slice);
    return rc;
}

/* cn_store_read_range; hold: the final piece of a blob still being fetched
 * waits for its verdict (backend.h, stream). */
static cn_err_t read_range(cn_store_t *s, const cn_digest_t *d, uint64_t off, uint64_t len,
                           cn_store_sink_fn sink, void *ctx, cn_digest_t *slice, uint64_t *served,
                           bool hold)
{
    cn__be_stat_t st;
    cn__env_t env;
    cn__pack_loc_t loc;
    int fd;
    cn_blake3_t h;
    if (!sink)
        return CN_E_INVALID;
    if (cn__pack_find(s, d, &loc))
        return read_packed(&loc, off, len, sink, ctx, slice, served);
    bool streamed = false;
    cn_blake3_init(&h);
    /* Hashed only for a slice digest: BLAKE3 costs about what the copies do. */
    cn_blake3_t *hp = slice ? &h : NULL;
    /* A blob the backend is fetching: served as it lands. */
    cn_err_t rc = read_streamed(s, d, off, len, hold, sink, ctx, &h, slice, served, &streamed);
    if (streamed)
        return rc;
    rc = s->be->ops->open(s->be, d, &fd, &st);
    /* A blob too big to stage whole is relayed by the stream op (s3_fill.c
     * F7), which now knows it. */
    if (rc == -ENOSPC) {
        rc = read_streamed(s, d, off, len, hold, sink, ctx, &h, slice, served, &streamed);
        return streamed ? rc : -ENOSPC;
    }
    CN_TRY(rc);
    uint64_t size = st.size;
    if (st.form == CN_STORE_LZ4) {
        if ((rc = cn__env_open(fd, st.size, &env)) < 0)
            goto out;
        size = env.raw_len;
    }
    if (off > size) {
        rc = CN_E_RANGE;
        goto out;
    }
    uint64_t n = size - off < len ? size - off : len;
    if (st.form == CN_STORE_LZ4) {
        cn__envix_t *ix = NULL;
        rc = cn__envix_get(s, d, fd, st.size, &env, off, n, &ix);
        if (rc == CN_OK)
            rc = cn__env_read(fd, ix, off, n, sink, ctx, hp);
        cn__envix_put(ix);
    } else {
        rc = read_raw(fd, off, n, sink, ctx, hp);
    }
    if (rc == CN_OK) {
        if (slice)
            cn_blake3_final(&h, slice);
        if (served)
            *served = n;
    }
out:
    close(fd);
    return rc;
}

static cn_err_t discard(void *ctx, const void *p, size_t n)
{
    (void)ctx, (void)p, (void)n;
    return CN_OK;
}

cn_err_t cn__store_hash_fd(int fd, uint64_t size, cn_store_form_t form, cn_digest_t *out)
{
    cn_blake3_t h;
    cn_blake3_init(&h);
    if (form == CN_STORE_LZ4) { /* checked afresh, not through the cache */
        cn__env_t e;
        CN_TRY(cn__env_open(fd, size, &e));
        uint64_t bsz = 1ull << e.block_log;
        /* Once at least: an empty envelope's index is checked too. */
        for (uint64_t b = 0; b == 0 || b < e.n_blocks; b += CN__ENVIX_MAX_BLOCKS) {
            uint64_t k =
                e.n_blocks - b < CN__ENVIX_MAX_BLOCKS ? e.n_blocks - b : CN__ENVIX_MAX_BLOCKS;
            uint64_t end = b + k == e.n_blocks ? e.raw_len : (b + k) * bsz;
            cn__envix_t *ix = NULL;
            cn_err_t rc = cn__env_index(fd, &e, b, k, &ix);
            if (rc == CN_OK)
                rc = cn__env_read(fd, ix, b * bsz, end - b * bsz, discard, NULL, &h);
            cn__envix_put(ix);
            CN_TRY(rc);
        }
    } else {
        CN_TRY(read_raw(fd, 0, size, discard, NULL, &h));
    }
    cn_blake3_final(&h, out);
    return CN_OK;
}

cn_err_t cn_store_read_range(cn_store_t *s, const cn_digest_t *d, uint64_t off, uint64_t len,
                             cn_store_sink_fn sink, void *ctx, cn_digest_t *slice, uint64_t *served)
{
    return read_range(s, d, off, len, sink, ctx, slice, served, true);
}

typedef struct buf_sink {
    uint8_t *p;
    size_t n;
} buf_sink_t;

static cn_err_t to_buf(void *ctx, const void *p, size_t n)
{
    buf_sink_t *b = ctx;
    memcpy(b->p + b->n, p, n);
    b->n += n;
    return CN_OK;
}

cn_err_t cn_store_read_range_buf(cn_store_t *s, const cn_digest_t *d, uint64_t off, void *buf,
                                 size_t cap, size_t *n, cn_digest_t *slice)
{
    buf_sink_t b = { buf, 0 };
    cn_err_t rc = cn_store_read_range(s, d, off, cap, to_buf, &b, slice, NULL);
    if (n)
        *n = rc == CN_OK ? b.n : 0;
    return rc;
}

cn_err_t cn_store_read_part(cn_store_t *s, const cn_digest_t *d, uint64_t off, void *buf,
                            size_t cap, size_t *n, bool last)
{
    buf_sink_t b = { buf, 0 };
    cn_err_t rc = read_range(s, d, off, cap, to_buf, &b, NULL, NULL, last);
    *n = rc == CN_OK ? b.n : 0;
    return rc;
}
