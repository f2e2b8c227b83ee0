/* Fills of the S3 tier's cache (backend_s3.c): a blob missing from the
 * cache is downloaded once, however many readers ask for it meanwhile, and
 * its bytes are readable while they land, so a large object's first bytes
 * reach a client before its last left the backend (docs/fleet.md "Bytes").
 *
 * Contracts:
 *  F1. At most one fill per digest is in flight (be->fills); a reader that
 *      misses the cache joins it.  A fill leaves the list when it ends, so a
 *      later reader finds the cache entry (or, evicted, starts a new fill).
 *  F2. A fill writes a cache temp file that becomes the entry only once its
 *      bytes hashed to the digest (cache.c K1); a failed fill's file is
 *      removed.  Bytes below `avail` are readable (pread) while it runs.
 *  F3. A streamed read gives its sink the final piece of its range only
 *      after the fill ended well: when the bytes do not hash to their name,
 *      or the backend fails, every reader returns an error before its range
 *      is complete, so no client receives a whole body of unverified bytes.
 *      A caller that serves a body in parts (cn_store_read_part) asks this
 *      hold of its last part only.
 *  F4. A fill started by a lazy open runs on a thread of its own (at most
 *      FILL_THREADS at once; past that the caller runs it to the end, as
 *      open does, and nothing streams); the backend's close stops them and
 *      waits for them.  A reader that goes away leaves its fill running: the
 *      cache is filled for the next one.
 *  F5. A lazy open streams raw blobs of STREAM_MIN bytes or more; smaller
 *      ones, and LZ4 envelopes (decoded from their trailer), are handed out
 *      whole once their fill ended.
 *  F6. A fill makes room on the cache's file system when the backend's
 *      answer tells its size, before it is published to readers (cache.c
 *      K5): one that cannot fit ends with -ENOSPC before any reader got a
 *      byte.  One that meets a full disk anyway (other fills landing
 *      meanwhile) makes room, empties its file and starts over once;
 *      readers wait past the restart as for a resumed GET.
 */
#include "store/s3_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILL_THREADS 64
#define STREAM_MIN (1u << 20)

typedef struct cn__s3_fill {
    s3_be_t *be;
    cn_digest_t d;
    int fd; /* the temp file, then the entry: pread only */
    char tmp[48];
    /* under be->fill_mu: */
    unsigned refs;  /* the runner's and each reader's */
    uint64_t avail; /* bytes written (back to 0 if a resumed GET starts over) */
    uint64_t gen;   /* progress count: a short read waits for the next one */
    bool sized;     /* the backend answered 200: size, form, mtime known */
    bool roomed;    /* F6: room made for it (or found missing: no_room) */
    bool no_room;
    uint64_t need; /* F6: the size the backend announced */
    bool done;
    cn__be_stat_t st;
    cn_err_t rc; /* with done */
    struct cn__s3_fill *next;
} fill_t;

void cn__s3_fills_init(s3_be_t *be)
{
    pthread_mutex_init(&be->fill_mu, NULL);
    pthread_cond_init(&be->fill_cv, NULL);
    atomic_init(&be->closing, false);
}

void cn__s3_fills_shutdown(s3_be_t *be)
{
    atomic_store(&be->closing, true);
    pthread_mutex_lock(&be->fill_mu);
    while (be->fill_threads)
        pthread_cond_wait(&be->fill_cv, &be->fill_mu);
    pthread_mutex_unlock(&be->fill_mu);
    pthread_cond_destroy(&be->fill_cv);
    pthread_mutex_destroy(&be->fill_mu);
}

/* Drops a reference; the last one closes the file.  Under fill_mu. */
static void fill_put_locked(fill_t *f)
{
    if (--f->refs)
        return;
    close(f->fd);
    free(f);
}

static bool on_progress(void *ctx, const s3_req_t *q)
{
    fill_t *f = ctx;
    s3_be_t *be = f->be;
    pthread_mutex_lock(&be->fill_mu);
    if (!f->sized && !f->roomed && q->status == 200 && q->length > 0) {
        f->roomed = true; /* F6: before any reader sees the size */
        f->need = q->length;
        pthread_mutex_unlock(&be->fill_mu);
        bool fits = cn__cache_make_room(be->cache, q->length);
        pthread_mutex_lock(&be->fill_mu);
        f->no_room = !fits;
    }
    if (f->no_room) {
        pthread_mutex_unlock(&be->fill_mu);
        return false;
    }
    if (!f->sized && q->status == 200 && q->length > 0) {
        f->sized = true;
        f->st = (cn__be_stat_t){ q->length, q->last_modified_ms, cn__s3_form_of(q->form) };
    }
    f->avail = q->out_done;
    f->gen++;
    pthread_cond_broadcast(&be->fill_cv);
    pthread_mutex_unlock(&be->fill_mu);
    return !atomic_load(&be->closing);
}

static bool disk_full(cn_err_t rc)
{
    return rc == -ENOSPC || rc == -EDQUOT;
}

/* The download of f's blob into its file: F6's room, and its one start
 * over on a full disk. */
static cn_err_t fill_fetch(fill_t *f, cn__be_stat_t *st)
{
    s3_be_t *be = f->be;
    cn_err_t rc = cn__s3_fetch(be, &f->d, f->fd, on_progress, f, st);
    pthread_mutex_lock(&be->fill_mu);
    bool no_room = f->no_room;
    uint64_t size = f->sized ? f->st.size : 0;
    pthread_mutex_unlock(&be->fill_mu);
    /* Size not known yet (the first bytes did not land): room for the
     * reserve, and the restart's answer makes room for the rest. */
    if (!no_room && disk_full(rc) && cn__cache_make_room(be->cache, size) &&
        ftruncate(f->fd, 0) == 0)
        rc = cn__s3_fetch(be, &f->d, f->fd, on_progress, f, st);
    pthread_mutex_lock(&be->fill_mu);
    no_room = f->no_room;
    size = f->need;
    pthread_mutex_unlock(&be->fill_mu);
    if (no_room || disk_full(rc)) {
        char hex[CN_DIGEST_HEX_LEN + 1];
        cn_digest_hex(&f->d, hex);
        cn_warn("store",
                "s3: blob %s (%" PRIu64 " bytes) does not fit the cache's file system: "
                "not served",
                hex, size);
        rc = -ENOSPC;
    }
    return rc;
}

/* Downloads f's blob, names it or removes it, and tells its readers. */
static void fill_run(fill_t *f)
{
    s3_be_t *be = f->be;
    cn__be_stat_t st = { 0 };
    cn_err_t rc = fill_fetch(f, &st);
    if (rc == CN_OK)
        rc = cn__cache_commit(be->cache, -1, f->tmp, &f->d, st.form, st.size);
    if (rc != CN_OK)
        cn__cache_discard(be->cache, f->tmp);
    pthread_mutex_lock(&be->fill_mu);
    for (fill_t **pp = &be->fills; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    f->done = true;
    f->rc = rc;
    if (rc == CN_OK) {
        f->sized = true;
        f->st = st;
        f->avail = st.size;
    }
    pthread_cond_broadcast(&be->fill_cv);
    pthread_mutex_unlock(&be->fill_mu);
}

static void *fill_main(void *arg)
{
    fill_t *f = arg;
    s3_be_t *be = f->be;
    fill_run(f);
    pthread_mutex_lock(&be->fill_mu);
    be->fill_threads--;
    fill_put_locked(f);
    pthread_cond_broadcast(&be->fill_cv);
    pthread_mutex_unlock(&be->fill_mu);
    return NULL;
}

/* Runs the new fill f, holding the runner's reference: on a thread of its
 * own when lazy and one is free (F4), else here, to its end. */
static void fill_start(fill_t *f, bool lazy)
{
    s3_be_t *be = f->be;
    pthread_mutex_lock(&be->fill_mu);
    bool threaded = lazy && be->fill_threads < FILL_THREADS && !atomic_load(&be->closing);
    be->fill_threads += threaded;
    pthread_mutex_unlock(&be->fill_mu);
    if (threaded) {
        pthread_attr_t a;
        pthread_t t;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int e = pthread_create(&t, &a, fill_main, f);
        pthread_attr_destroy(&a);
        if (e == 0)
            return;
        pthread_mutex_lock(&be->fill_mu);
        be->fill_threads--;
        pthread_cond_broadcast(&be->fill_cv);
        pthread_mutex_unlock(&be->fill_mu);
    }
    fill_run(f);
    pthread_mutex_lock(&be->fill_mu);
    fill_put_locked(f);
    pthread_mutex_unlock(&be->fill_mu);
}

static fill_t *find_locked(s3_be_t *be, const cn_digest_t *d)
{
    for (fill_t *f = be->fills; f; f = f->next)
        if (memcmp(f->d.b, d->b, CN_DIGEST_LEN) == 0)
            return f;
    return NULL;
}

/* d's fill in flight, joined, or a new one (*fresh: the caller starts it
 * with fill_start).  The caller's reference is dropped with fill_put_locked. */
static cn_err_t fill_get(s3_be_t *be, const cn_digest_t *d, fill_t **out, bool *fresh)
{
    cn_err_t rc = CN_OK;
    pthread_mutex_lock(&be->fill_mu);
    fill_t *f = find_locked(be, d);
    *fresh = !f;
    if (f) {
        f->refs++;
    } else if (!(f = calloc(1, sizeof *f))) {
        rc = -ENOMEM;
    } else if ((rc = cn__cache_tmp(be->cache, f->tmp, &f->fd)) < 0) {
        free(f);
        f = NULL;
    } else {
        f->be = be;
        f->d = *d;
        f->refs = 2; /* the runner's and the caller's */
        f->next = be->fills;
        be->fills = f;
    }
    pthread_mutex_unlock(&be->fill_mu);
    *out = f;
    return rc;
}

static bool streamable(const fill_t *f)
{
    return f->sized && f->st.form == CN_STORE_RAW && f->st.size >= STREAM_MIN;
}

cn_err_t cn__s3_fill_open(s3_be_t *be, const cn_digest_t *d, bool lazy, int *fd, cn__be_stat_t *st)
{
    fill_t *f;
    bool fresh;
    CN_TRY(fill_get(be, d, &f, &fresh));
    if (fresh)
        fill_start(f, lazy);
    cn_err_t rc;
    pthread_mutex_lock(&be->fill_mu);
    while (!f->done && !(lazy && streamable(f)))
        pthread_cond_wait(&be->fill_cv, &be->fill_mu);
    if (!f->done) { /* there, and better read as it lands (F5) */
        *st = f->st;
        rc = CN_E_UNSUPPORTED;
    } else if ((rc = f->rc) == CN_OK) {
        int g = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
        rc = g < 0 ? -errno : CN_OK;
        *fd = g;
        *st = f->st;
    }
    fill_put_locked(f);
    pthread_mutex_unlock(&be->fill_mu);
    return rc;
}

/* Waits until f's bytes below need landed, or, for the final piece of a
 * read (last), until f ended well (F3); with stale, until f made progress
 * past that count too.  *gen = the progress seen, *ended = f ended.  CN_OK
 * or the fill's failure. */
static cn_err_t fill_wait(fill_t *f, uint64_t need, bool last, uint64_t stale, uint64_t *gen,
                          bool *ended)
{
    s3_be_t *be = f->be;
    pthread_mutex_lock(&be->fill_mu);
    while (!f->done && (last || f->avail < need || f->gen == stale))
        pthread_cond_wait(&be->fill_cv, &be->fill_mu);
    cn_err_t rc = f->done ? f->rc : CN_OK;
    *gen = f->gen;
    *ended = f->done;
    pthread_mutex_unlock(&be->fill_mu);
    return rc;
}

/* Serves [off, end) of f, as its bytes land, through a bounded buffer. */
static cn_err_t fill_read(fill_t *f, uint64_t off, uint64_t end, bool hold, cn_store_sink_fn sink,
                          void *ctx, cn_blake3_t *h)
{
    size_t cap = end - off < CN__STORE_IO_CHUNK ? (size_t)(end - off) : CN__STORE_IO_CHUNK;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf)
        return -ENOMEM;
    cn_err_t rc = CN_OK;
    uint64_t gen = 0, stale = UINT64_MAX; /* UINT64_MAX: no short read to wait past */
    bool ended = false;
    while (off < end && rc == CN_OK) {
        size_t want = end - off < cap ? (size_t)(end - off) : cap;
        if ((rc = fill_wait(f, off + want, hold && off + want == end, stale, &gen, &ended)) < 0)
            break;
        ssize_t r = pread(f->fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
        } else if ((size_t)r < want) { /* a GET started over: wait for its next bytes */
            rc = ended ? CN_E_CORRUPT : CN_OK;
            stale = gen;
        } else {
            stale = UINT64_MAX;
            if (h)
                cn_blake3_update(h, buf, want);
            rc = sink(ctx, buf, want);
            off += want;
        }
    }
    free(buf);
    return rc;
}

cn_err_t cn__s3_fill_stream(s3_be_t *be, const cn_digest_t *d, uint64_t off, uint64_t len,
                            bool hold, cn_store_sink_fn sink, void *ctx, cn_blake3_t *h,
                            uint64_t *served, bool *streamed)
{
    *streamed = false;
    pthread_mutex_lock(&be->fill_mu);
    fill_t *f = find_locked(be, d);
    if (f)
        f->refs++;
    while (f && !f->done && !f->sized)
        pthread_cond_wait(&be->fill_cv, &be->fill_mu);
    /* An ended fill is read through the cache; an envelope once whole. */
    bool live = f && !f->done && f->st.form == CN_STORE_RAW;
    cn__be_stat_t st = live ? f->st : (cn__be_stat_t){ 0 };
    if (f && !live)
        fill_put_locked(f);
    pthread_mutex_unlock(&be->fill_mu);
    if (!live)
        return CN_OK;
    *streamed = true;
    cn_err_t rc = CN_E_RANGE;
    if (off <= st.size) {
        uint64_t n = st.size - off < len ? st.size - off : len;
        rc = fill_read(f, off, off + n, hold, sink, ctx, h);
        if (rc == CN_OK && served)
            *served = n;
    }
    pthread_mutex_lock(&be->fill_mu);
    fill_put_locked(f);
    pthread_mutex_unlock(&be->fill_mu);
    return rc;
}
