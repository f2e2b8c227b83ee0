/* Staged writes: bytes stream into an anonymous-named file in DATA/staging
 * while BLAKE3 hashes them; publish makes the file the blob its digest names.
 *
 * Write-path invariants (docs/store.md, "Write path"):
 *  W1. Bytes are written only under DATA/staging, never under a blob name.
 *  W2. A blob's bytes are durable BEFORE it is renamed to its blob name:
 *      the staged file is fdatasynced (large blobs), or its bytes are in a
 *      synced journal record (small blobs, commit.c/journal.c) from which
 *      open rewrites the file if a crash lost or tore it.  So no name a
 *      reader can reach points at bytes a crash can lose.
 *  W3. The rename is atomic and never replaces an existing blob
 *      (RENAME_NOREPLACE, plus the digest's lock in process).
 *  W4. publish returns CN_OK only after the blob will survive a crash: its
 *      directory entry is fsynced (large), or its journal record is synced
 *      (small) — also when the digest already existed, because its publisher
 *      may not have flushed yet.
 *  W5. An expected digest or length that does not match, a limit exceeded or
 *      any I/O error removes the staged file; nothing is renamed.
 *  W6. Whatever a crash leaves in staging was never acknowledged and is
 *      removed at the next open.
 *
 * With packs on, the staged file is created only when bytes outgrow the
 * write buffer or the blob takes a file path at publish: a blob that goes
 * into a pack (pack.c) never costs an inode.  Without packs it is created
 * at open, as before.
 *
 * A large blob's O_DIRECT chunks are written on the store's side pool
 * (s->dio_side) while the caller fills a second aligned buffer (W7, the
 * idempotent publish, is the backend's: docs/store.md):
 *  W8. At most one chunk of a writer is in flight, from the buffer the
 *      caller is not filling (spare), at an offset no other write of the
 *      writer touches; every other use of the file (a synchronous write,
 *      the switch off O_DIRECT, fdatasync at publish, close and unlink)
 *      comes after dio_settle, which waits for it and reports its error.
 *      So W2's fdatasync covers every byte, and a failed chunk fails the
 *      write or the publish that follows it (W5).
 */
#include "store/store_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/util.h"

/* Large files start writeback every chunk and wait for the chunk before, so
 * dirty memory stays bounded and the final fdatasync has little left. */
#define WRITEBACK_CHUNK (8ull << 20)
#define ENV_BLOCK ((size_t)1 << CN__ENV_BLOCK_LOG)
/* A writer of undeclared length asks the reserve for this much more each
 * time its bytes pass what it was let in for. */
#define ROOM_STEP (4ull << 20)

struct cn_store_writer {
    cn_store_t *s;
    int fd;
    char name[48];
    cn_blake3_t h;
    uint64_t len;        /* logical bytes accepted */
    uint64_t stored;     /* bytes handed to the file (incl. out buffer) */
    uint64_t flushed;    /* bytes handed to the file (a chunk may be in flight: W8) */
    uint64_t wb_started; /* writeback started up to here */
    int64_t expect_len;
    uint64_t room_end; /* undeclared length: bytes let in by the reserve */
    bool has_expect;
    cn_digest_t expect;
    cn_store_form_t form;
    cn_err_t err; /* sticky */
    uint8_t *out; /* write-behind buffer of cap bytes (page-aligned once dio) */
    size_t out_len, cap;
    bool dio; /* the staged file is open with O_DIRECT: whole chunks only */
    /* W8: the chunk in flight on the side pool (spare, dj_len bytes at
     * dj_off); its result in dj_rc once settled */
    uint8_t *spare;
    cn_side_set_t ds;
    bool dj_live;
    uint64_t dj_off;
    size_t dj_len;
    cn_err_t dj_rc;
    /* LZ4 form */
    uint8_t *blk; /* logical block being filled */
    size_t blk_len;
    uint8_t *zbuf;
    cn_buf_t index; /* u32le per block */
    uint64_t n_blocks;
};

static void writeback(cn_store_writer_t *w)
{
    if (w->dio)
        return; /* nothing of the file is in the page cache */
    /* Advisory: failures here only lose the optimisation; fdatasync at
     * publish reports real errors. */
    while (w->flushed - w->wb_started >= WRITEBACK_CHUNK) {
        uint64_t off = w->wb_started;
        sync_file_range(w->fd, (off64_t)off, (off64_t)WRITEBACK_CHUNK, SYNC_FILE_RANGE_WRITE);
        if (off >= WRITEBACK_CHUNK)
            sync_file_range(w->fd, (off64_t)(off - WRITEBACK_CHUNK), (off64_t)WRITEBACK_CHUNK,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER);
        w->wb_started += WRITEBACK_CHUNK;
    }
}

/* Creates the staged file (W1: under staging, a name no blob has). */
static cn_err_t stage_create(cn_store_writer_t *w)
{
    if (w->fd >= 0)
        return CN_OK;
    for (int tries = 0; tries < 8; tries++) {
        CN_TRY(cn__store_staging_name(w->name));
        w->fd = openat(w->s->staging_fd, w->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        if (w->fd >= 0 || errno != EEXIST)
            break;
    }
    if (w->fd < 0) {
        cn_err_t rc = -errno;
        w->name[0] = '\0';
        return rc;
    }
    return CN_OK;
}

/* The staged file of a large blob bypasses the page cache (O_DIRECT) from
 * its first write on: whole pages go from a page-aligned write-behind buffer
 * of DIO_CHUNK bytes to the disk, without the kernel's copy into the page
 * cache (the largest CPU cost of a large PUT) or its writeback; each such
 * write waits for the disk, so the buffer is larger than the small path's.
 * Called when the first buffer is full: the buffer a small blob never
 * outgrows stays a plain malloc (an aligned one for every writer cost a
 * mapping per small PUT).  Where the file system refuses O_DIRECT, or
 * memory is short, the blob is written through the page cache as before.
 * W2 is unchanged: publish still fdatasyncs the file before its rename. */
#define DIO_CHUNK ((size_t)1 << 20)
static cn_err_t dio_begin(cn_store_writer_t *w)
{
    uint8_t *big;
    if (w->flushed || !cn__store_dio_ok(w->s) || posix_memalign((void **)&big, 4096, DIO_CHUNK))
        return CN_OK;
    memcpy(big, w->out, w->out_len);
    free(w->out);
    w->out = big;
    w->cap = DIO_CHUNK;
    CN_TRY(stage_create(w));
    int fl = fcntl(w->fd, F_GETFL);
    if (fl >= 0 && fcntl(w->fd, F_SETFL, fl | O_DIRECT) == 0)
        w->dio = true;
    else
        cn__store_dio_refused(w->s);
    return CN_OK;
}

/* Back to the page cache, for a write that is not whole pages of the buffer (the tail). */
static cn_err_t dio_end(cn_store_writer_t *w)
{
    if (!w->dio)
        return CN_OK;
    int fl = fcntl(w->fd, F_GETFL);
    if (fl < 0 || fcntl(w->fd, F_SETFL, fl & ~O_DIRECT) < 0)
        return -errno;
    w->dio = false;
    return CN_OK;
}

/* Writes n bytes of p at off (O_DIRECT when on): a write refused at write
 * though accepted at fcntl (an alignment this device does not take) goes
 * again, whole, through the page cache. */
static cn_err_t chunk_write(cn_store_writer_t *w, const void *p, size_t n, uint64_t off)
{
    cn_err_t rc = cn_pwrite_full(w->fd, p, n, off);
    if (rc == -EINVAL && w->dio) {
        cn__store_dio_refused(w->s);
        CN_TRY(dio_end(w));
        rc = cn_pwrite_full(w->fd, p, n, off);
    }
    return rc;
}

static void dio_job(void *h, const void *p, size_t n)
{
    cn_store_writer_t *w = h;
    w->dj_rc = cn_pwrite_full(w->fd, p, n, w->dj_off);
}

/* W8: waits for the chunk in flight, if any, and returns its result; a
 * chunk refused for its alignment is written again here. */
static cn_err_t dio_settle(cn_store_writer_t *w)
{
    if (!w->dj_live)
        return CN_OK;
    cn_side_wait(w->s->dio_side, &w->ds);
    w->dj_live = false;
    if (w->dj_rc == -EINVAL && w->dio)
        return chunk_write(w, w->spare, w->dj_len, w->dj_off);
    return w->dj_rc;
}

static cn_err_t file_write(cn_store_writer_t *w, const void *p, size_t n)
{
    CN_TRY(stage_create(w));
    CN_TRY(dio_settle(w));
    if (w->dio && !(p == w->out && n % 4096 == 0))
        CN_TRY(dio_end(w));
    CN_TRY(chunk_write(w, p, n, w->flushed));
    w->flushed += n;
    writeback(w);
    return CN_OK;
}

/* The full aligned buffer goes to the side pool (W8) and the caller goes on
 * filling the spare; written here when no pool thread is idle, no spare
 * can be had, or O_DIRECT was just refused. */
static cn_err_t dio_post(cn_store_writer_t *w)
{
    CN_TRY(dio_settle(w));
    if (!w->spare && posix_memalign((void **)&w->spare, 4096, DIO_CHUNK))
        w->spare = NULL;
    if (!w->spare || !w->dio)
        return file_write(w, w->out, w->out_len);
    uint8_t *full = w->out;
    w->out = w->spare;
    w->spare = full;
    w->dj_off = w->flushed;
    w->dj_len = w->out_len;
    w->dj_rc = CN_OK;
    w->dj_live = true;
    w->flushed += w->dj_len;
    if (!cn_side_run(w->s->dio_side, &w->ds, dio_job, w, full, w->dj_len, true))
        return dio_settle(w); /* ran here: its result now */
    return CN_OK;
}

static cn_err_t out_flush(cn_store_writer_t *w)
{
    if (!w->out_len)
        return CN_OK;
    if (w->out_len == w->cap)
        CN_TRY(dio_begin(w));
    if (w->dio && w->out_len == w->cap)
        CN_TRY(dio_post(w));
    else
        CN_TRY(file_write(w, w->out, w->out_len));
    w->out_len = 0;
    return CN_OK;
}

/* Appends stored bytes through the write-behind buffer.  A large piece
 * bypasses an empty buffer: always at a whole chunk, and from DIRECT_MIN
 * once the blob has reached its file (a flushed blob never takes the small
 * path, which needs the whole stored form in the buffer), so a large body
 * streamed in 64 KiB reads is not copied once more on its way to the file. */
#define DIRECT_MIN ((size_t)32 << 10)
static cn_err_t out_put(cn_store_writer_t *w, const void *p, size_t n)
{
    const uint8_t *b = p;
    w->stored += n;
    /* With O_DIRECT every byte goes through the aligned buffer. */
    if (w->out_len == 0 && !cn__store_dio_ok(w->s) &&
        (n >= CN__STORE_IO_CHUNK || (n >= DIRECT_MIN && w->flushed > 0)))
        return file_write(w, b, n);
    while (n) {
        size_t room = w->cap - w->out_len;
        size_t k = n < room ? n : room;
        memcpy(w->out + w->out_len, b, k);
        w->out_len += k;
        b += k;
        n -= k;
        if (w->out_len == w->cap)
            CN_TRY(out_flush(w));
    }
    /* Every stored byte is in the file or in the buffer, which is never left
     * full: so a writer that never flushed holds its whole stored form. */
    assert(w->stored == w->flushed + w->out_len && w->out_len < w->cap);
    return CN_OK;
}

static cn_err_t env_flush_block(cn_store_writer_t *w)
{
    if (!w->blk_len)
        return CN_OK;
    int bound = LZ4_compressBound((int)ENV_BLOCK);
    int z = LZ4_compress_default((const char *)w->blk, (char *)w->zbuf, (int)w->blk_len, bound);
    uint32_t entry;
    if (z > 0 && (size_t)z < w->blk_len) {
        CN_TRY(out_put(w, w->zbuf, (size_t)z));
        entry = (uint32_t)z;
    } else {
        /* Incompressible: keep the block as is rather than grow it. */
        CN_TRY(out_put(w, w->blk, w->blk_len));
        entry = CN__ENV_RAW_FLAG | (uint32_t)w->blk_len;
    }
    CN_TRY(cn_buf_put_u32le(&w->index, entry));
    w->n_blocks++;
    w->blk_len = 0;
    return CN_OK;
}

static cn_err_t env_begin(cn_store_writer_t *w)
{
    w->blk = malloc(ENV_BLOCK);
    w->zbuf = malloc((size_t)LZ4_compressBound((int)ENV_BLOCK));
    if (!w->blk || !w->zbuf)
        return -ENOMEM;
    uint8_t hdr[CN__ENV_HEADER_LEN];
    cn__env_header(hdr);
    return out_put(w, hdr, sizeof hdr);
}

static cn_err_t env_finish(cn_store_writer_t *w)
{
    CN_TRY(env_flush_block(w));
    uint32_t crc = cn_crc32c(0, w->index.data, w->index.len);
    CN_TRY(out_put(w, w->index.data, w->index.len));
    uint8_t tr[CN__ENV_TRAILER_LEN];
    cn__env_trailer(w->len, w->n_blocks, crc, tr);
    return out_put(w, tr, sizeof tr);
}

cn_err_t cn_store_writer_open(cn_store_t *s, const cn_digest_t *expect, int64_t expect_len,
                              cn_store_writer_t **out)
{
    *out = NULL;
    if (expect_len < -1)
        return CN_E_INVALID;
    if (expect_len >= 0 && (uint64_t)expect_len > s->opts.max_blob_bytes)
        return CN_E_TOO_LARGE;
    CN_TRY(cn__store_room(s, expect_len)); /* the reserve stays for deletes */
    cn_store_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    cn_err_t rc;
    w->s = s;
    w->fd = -1;
    cn_side_set_init(&w->ds);
    w->expect_len = expect_len;
    w->form = s->opts.default_form;
    if (expect) {
        w->has_expect = true;
        w->expect = *expect;
    }
    cn_blake3_init(&w->h);
    w->cap = CN__STORE_IO_CHUNK;
    w->out = malloc(w->cap);
    if (!w->out) {
        rc = -ENOMEM;
        goto fail;
    }
    /* Without packs every blob ends as a file: stage it now, so an open
     * error shows at open as it always did.  With packs, only when needed. */
    if (!s->pack_on && (rc = stage_create(w)) < 0)
        goto fail;
    *out = w;
    return CN_OK;
fail:
    cn_store_writer_abort(w);
    return rc;
}

cn_err_t cn_store_writer_set_form(cn_store_writer_t *w, cn_store_form_t form)
{
    if (w->len || w->stored || (form != CN_STORE_RAW && form != CN_STORE_LZ4))
        return CN_E_INVALID;
    w->form = form;
    return CN_OK;
}

uint64_t cn_store_writer_len(const cn_store_writer_t *w)
{
    return w->len;
}

/* Checks that n more logical bytes are allowed. */
static cn_err_t admit(cn_store_writer_t *w, uint64_t n)
{
    if (w->err)
        return w->err;
    if (w->len == 0 && w->form == CN_STORE_LZ4 && !w->blk && (w->err = env_begin(w)) < 0)
        return w->err;
    if (n > w->s->opts.max_blob_bytes - w->len)
        return w->err = CN_E_TOO_LARGE;
    if (w->expect_len >= 0 && n > (uint64_t)w->expect_len - w->len)
        return w->err = CN_E_LENGTH_MISMATCH;
    /* A declared length was let in whole at open; an undeclared one stops
     * at the reserve as it grows, as a declared one would have (W5). */
    if (w->expect_len < 0 && n > w->room_end - w->len) {
        cn_err_t rc = cn__store_room(w->s, (int64_t)(n + ROOM_STEP));
        if (rc < 0)
            return w->err = rc;
        w->room_end = w->len + n + ROOM_STEP;
    }
    return CN_OK;
}

static cn_err_t accept_bytes(cn_store_writer_t *w, const uint8_t *p, size_t n)
{
    cn_blake3_update(&w->h, p, n);
    w->len += n;
    if (w->form == CN_STORE_RAW)
        return out_put(w, p, n);
    while (n) {
        size_t k = ENV_BLOCK - w->blk_len;
        if (k > n)
            k = n;
        memcpy(w->blk + w->blk_len, p, k);
        w->blk_len += k;
        p += k;
        n -= k;
        if (w->blk_len == ENV_BLOCK)
            CN_TRY(env_flush_block(w));
    }
    return CN_OK;
}

cn_err_t cn_store_writer_write(cn_store_writer_t *w, const void *p, size_t n)
{
    CN_TRY(admit(w, n));
    cn_err_t rc = accept_bytes(w, p, n);
    if (rc < 0)
        w->err = rc;
    return rc;
}

cn_err_t cn_store_writer_write_fd(cn_store_writer_t *w, int fd, uint64_t n, uint64_t *done)
{
    uint64_t got = 0;
    cn_err_t rc = admit(w, n);
    uint8_t *tmp = NULL;
    if (rc < 0)
        goto out;
    if (w->form != CN_STORE_RAW && !(tmp = malloc(CN__STORE_IO_CHUNK))) {
        rc = -ENOMEM;
        goto out;
    }
    while (got < n) {
        /* Raw: read straight into the write-behind buffer and hash in place. */
        uint8_t *dst = tmp ? tmp : w->out + w->out_len;
        size_t room = tmp ? CN__STORE_IO_CHUNK : w->cap - w->out_len;
        if (room > n - got)
            room = (size_t)(n - got);
        ssize_t r = read(fd, dst, room);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = (errno == EAGAIN || errno == EWOULDBLOCK) ? CN_E_AGAIN : -errno;
            break;
        }
        if (r == 0) {
            rc = CN_E_CLOSED;
            break;
        }
        got += (uint64_t)r;
        if (tmp) {
            if ((rc = accept_bytes(w, tmp, (size_t)r)) < 0)
                break;
            continue;
        }
        cn_blake3_update(&w->h, dst, (size_t)r);
        w->len += (uint64_t)r;
        w->stored += (uint64_t)r;
        w->out_len += (size_t)r;
        if (w->out_len == w->cap && (rc = out_flush(w)) < 0)
            break;
    }
out:
    free(tmp);
    if (done)
        *done = got;
    /* "Again" is not an error of the upload: the caller resumes. */
    if (rc < 0 && rc != CN_E_AGAIN && !w->err)
        w->err = rc;
    return rc;
}

static void writer_free(cn_store_writer_t *w, bool unlink_staged)
{
    dio_settle(w); /* W8: nothing in flight past here; its error no longer matters */
    cn_side_set_destroy(&w->ds);
    free(w->spare);
    if (w->fd >= 0)
        close(w->fd);
    if (unlink_staged && w->name[0])
        unlinkat(w->s->staging_fd, w->name, 0);
    free(w->out);
    free(w->blk);
    free(w->zbuf);
    cn_buf_free(&w->index);
    free(w);
}

void cn_store_writer_abort(cn_store_writer_t *w)
{
    if (w)
        writer_free(w, true);
}

/* Direct path (large blobs): W2 by fdatasync, W3+W4 in the backend put. */
static cn_err_t publish_direct(cn_store_writer_t *w, const cn_digest_t *d, bool *existed)
{
    cn_store_t *s = w->s;
    CN_TRY(stage_create(w)); /* the empty blob wrote nothing yet */
    CN_TRY(dio_settle(w));   /* W8 */
    int64_t t0 = cn_mono_ns();
    if (fdatasync(w->fd) < 0)
        return -errno;
    cn_metric_observe_ns(cn__store_metrics()->fsync_blob, cn_mono_ns() - t0);
    /* A shared tier: d's row first, so that no other node's sweeper deletes
     * d after the backend answered this put (sweep.c, S7). */
    CN_TRY(cn__store_blob_row_touch(s, d));
    cn__dheld_t dl;
    cn__dlock(s, d, &dl);
    cn_err_t rc =
        s->be->ops->put(s->be, s->staging_fd, w->name, d, w->form, CN__BE_PUT_SYNC, existed);
    bool counts = rc == CN_OK && !*existed && cn__store_usage_file_new(s, d);
    cn__dunlock(s, &dl);
    if (counts)
        cn__store_usage_note(s, 1, (int64_t)w->stored);
    return rc;
}

cn_err_t cn_store_writer_publish(cn_store_writer_t *w, cn_digest_t *out, uint64_t *len_out)
{
    cn_store_t *s = w->s;
    cn_digest_t d;
    bool existed = false, renamed = false;
    cn_err_t rc = w->err;
    if (rc < 0)
        goto out;
    if (w->form == CN_STORE_LZ4) {
        if (!w->blk && (rc = env_begin(w)) < 0)
            goto out;
        if ((rc = env_finish(w)) < 0)
            goto out;
        assert(w->blk_len == 0);
    }
    /* W1: the bytes went only to a staging name; admit() kept the limits. */
    assert(w->fd < 0 || cn__store_is_staged_name(w->name));
    assert(w->len <= s->opts.max_blob_bytes &&
           (w->expect_len < 0 || w->len <= (uint64_t)w->expect_len));
    if (w->expect_len >= 0 && w->len != (uint64_t)w->expect_len) {
        rc = CN_E_LENGTH_MISMATCH;
        goto out;
    }
    cn_blake3_final(&w->h, &d);
    if (w->has_expect && !cn_ct_equal(d.b, w->expect.b, CN_DIGEST_LEN)) {
        rc = CN_E_DIGEST_MISMATCH;
        goto out;
    }
    /* Small: the whole stored form is still in the write buffer, which the
     * journal record copies; the staged file is written but not synced. */
    if (!s->opts.batch_disable && w->flushed == 0 && w->stored <= s->opts.batch_max_bytes) {
        cn__commit_req_t req;
        memset(&req, 0, sizeof req);
        /* W2: the journal record carries the whole stored form, and replay
         * accepts a record no larger than one I/O chunk. */
        assert(w->out_len == w->stored && w->out_len <= CN__STORE_IO_CHUNK);
        req.packed = cn__pack_wants(s, w->form, w->stored);
        if (!req.packed &&
            ((rc = stage_create(w)) < 0 || (rc = cn_write_full(w->fd, w->out, w->out_len)) < 0))
            goto out;
        memcpy(req.staged_name, w->name, sizeof req.staged_name);
        req.payload = w->out;
        req.payload_len = w->out_len;
        req.d = d;
        req.form = w->form;
        if (w->fd >= 0)
            close(w->fd);
        w->fd = -1;
        rc = cn__committer_submit(s, &req);
        existed = req.existed;
        if (req.packed)
            w->name[0] = '\0'; /* nothing staged to remove */
    } else {
        if ((rc = out_flush(w)) < 0)
            goto out;
        rc = publish_direct(w, &d, &existed);
    }
    renamed = rc == CN_OK && !existed; /* or appended to a pack */
    if (renamed) {
        const cn__store_metrics_t *m = cn__store_metrics();
        cn_metric_add(m->blobs[w->form], 1);
        cn_metric_add(m->bytes[w->form], (int64_t)w->stored);
    }
    if (rc == CN_OK) {
        if (out)
            *out = d;
        if (len_out)
            *len_out = w->len;
    }
out:
    /* W5: a failed publish renamed nothing.  A renamed staged name no longer
     * exists; anything else is removed (a writer that staged nothing has an
     * empty name). */
    assert(rc == CN_OK || !renamed);
    writer_free(w, !renamed);
    return rc;
}

cn_err_t cn_store_put(cn_store_t *s, const void *p, size_t n, const cn_digest_t *expect,
                      cn_digest_t *out)
{
    cn_store_writer_t *w;
    CN_TRY(cn_store_writer_open(s, expect, (int64_t)n, &w));
    cn_err_t rc = cn_store_writer_write(w, p, n);
    if (rc < 0) {
        cn_store_writer_abort(w);
        return rc;
    }
    return cn_store_writer_publish(w, out, NULL);
}
