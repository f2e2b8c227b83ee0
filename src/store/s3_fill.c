/* Fills of the S3 tier's cache (backend_s3.c): a blob missing from the
 * cache is downloaded once, however many readers ask for it meanwhile, and
 * its bytes are readable while they land, so a large object's first bytes
 * reach a client before its last left the backend (docs/fleet.md "Bytes").
 *
 * Contracts:
 *  F1. At most one fill per digest is in flight (be->fills), relays (F7)
 *      aside; a reader that misses the cache joins it.  A fill leaves the list when it ends, so a
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
 *  F7. A raw blob of STREAM_MIN bytes or more that cannot fit even in an
 *      emptied cache, fetched by a threaded fill, is relayed instead: its
 *      file holds a window of at most RELAY_WINDOW bytes past its reader
 *      (at most 1/16 of the file system, and halved, down to
 *      RELAY_WINDOW_MIN, until the file system has room for it beside the
 *      windows of the relays already running, be->relay_held)
 *      (the bytes below are hole-punched as they are passed), the download
 *      stops when the window is full and goes on by a ranged GET from where
 *      it stopped once the reader drained half of it, every byte is hashed
 *      as it lands (F3 holds as for a fill), and nothing is cached.  A relay
 *      serves one reader at a time, one that goes on from where the last
 *      read ended (a face's next part) or, before any read, from anywhere:
 *      any other reader starts a relay of its own (the digest is remembered
 *      as too big, be->oversize).  A relay no reader touched for
 *      be->relay_idle_ms (RELAY_UNUSED_MS if none ever read it) ends; a
 *      reader that comes back later starts a new one.
 *      So a blob larger than the cache's file system is served, at the cost
 *      of one backend download per reader; a caller that needs the whole
 *      file (cn_store_open_fd) still gets -ENOSPC.
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
#define RELAY_WINDOW (8ull << 20)
#define RELAY_WINDOW_MIN (512ull << 10)
#define RELAY_PUNCH (256ull << 10) /* holes are punched in steps of this */
#define RELAY_UNUSED_MS 5000       /* a relay its opener never read, at most */

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
    cn_err_t rc;   /* with done */
    bool threaded; /* F4: runs on a thread of its own, so it may relay */
    /* F7, a relay: */
    bool relay;
    uint64_t window;    /* bytes it holds past its reader at most */
    bool attached;      /* a reader reads it now */
    bool used;          /* a reader read it: pos is where that reader is */
    bool paused;        /* the download stopped for the window */
    uint64_t pos;       /* bytes below are needed by no one (UINT64_MAX: none are) */
    int64_t touched_ms; /* a reader's last attach or detach */
    uint64_t punched;   /* the runner's own: holes made up to here */
    struct cn__s3_fill *next;
} fill_t;

void cn__s3_fills_init(s3_be_t *be)
{
    pthread_mutex_init(&be->fill_mu, NULL);
    cn_cond_init_mono(&be->fill_cv);
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

static bool oversize_has_locked(const s3_be_t *be, const cn_digest_t *d)
{
    for (size_t i = 0; i < S3_OVERSIZE_MEMO; i++)
        if (memcmp(be->oversize[i].b, d->b, CN_DIGEST_LEN) == 0)
            return true;
    return false;
}

static void oversize_add_locked(s3_be_t *be, const cn_digest_t *d)
{
    if (!oversize_has_locked(be, d))
        be->oversize[be->oversize_next++ % S3_OVERSIZE_MEMO] = *d;
}

/* The most a relay with this window holds on disk: the window, what is below
 * its reader but not yet punched, and the piece being written. */
static uint64_t relay_disk(uint64_t window)
{
    return window + RELAY_PUNCH + S3_FILL_RECV_BUF;
}

/* F6 and F7, once the backend's answer told the size: room in the cache,
 * else a relay when f may be one, else no room.  Under fill_mu. */
static void fill_room_locked(fill_t *f, const s3_req_t *q)
{
    s3_be_t *be = f->be;
    f->roomed = true;
    f->need = q->length;
    bool may_relay =
        f->threaded && q->length >= STREAM_MIN && cn__s3_form_of(q->form) == CN_STORE_RAW;
    /* Held for the largest window meanwhile: relays sized at once see each
     * other. */
    uint64_t held = be->relay_held, tentative = may_relay ? relay_disk(RELAY_WINDOW) : 0;
    be->relay_held += tentative;
    pthread_mutex_unlock(&be->fill_mu);
    bool fits = cn__cache_make_room(be->cache, q->length);
    uint64_t window = RELAY_WINDOW, fs = cn__cache_fs_bytes(be->cache);
    while (fs && window > fs / 16 && window > RELAY_WINDOW_MIN)
        window /= 2;
    bool relay = !fits && may_relay;
    while (relay && !cn__cache_make_room(be->cache, held + relay_disk(window)))
        relay = (window /= 2) >= RELAY_WINDOW_MIN;
    pthread_mutex_lock(&be->fill_mu);
    if (!fits)
        oversize_add_locked(be, &f->d);
    f->no_room = !fits && !relay;
    f->relay = relay;
    f->window = window;
    be->relay_held += (relay ? relay_disk(window) : 0) - tentative;
    f->touched_ms = cn_mono_ms();
    if (relay) {
        char hex[CN_DIGEST_HEX_LEN + 1];
        cn_digest_hex(&f->d, hex);
        cn_info("store",
                "s3: blob %s (%" PRIu64 " bytes) does not fit the cache's file system: "
                "relayed, not cached (a window of %" PRIu64 " KiB)",
                hex, q->length, window >> 10);
    }
}

/* A relay's window holds more than slack bytes past its reader.  Under
 * fill_mu. */
static bool relay_full_locked(const fill_t *f, uint64_t slack)
{
    return f->pos != UINT64_MAX && f->avail > f->pos + slack;
}

/* Below this no one needs the relay's bytes: its reader's position, or
 * what landed when that is less (a GET started over).  Under fill_mu. */
static uint64_t relay_floor_locked(const fill_t *f)
{
    return f->pos < f->avail ? f->pos : f->avail;
}

/* Punches the relay's bytes below upto (rounded down to RELAY_PUNCH) out of
 * its file.  The runner's only. */
static bool relay_punch(fill_t *f, uint64_t upto)
{
    upto -= upto % RELAY_PUNCH;
    if (upto <= f->punched)
        return true;
    if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)f->punched,
                  (off_t)(upto - f->punched)) < 0) {
        cn_warn("store", "s3: a relay's file cannot be hole-punched: %s", strerror(errno));
        return false;
    }
    f->punched = upto;
    return true;
}

static bool on_progress(void *ctx, const s3_req_t *q)
{
    fill_t *f = ctx;
    s3_be_t *be = f->be;
    pthread_mutex_lock(&be->fill_mu);
    if (!f->sized && !f->roomed && q->status == 200 && q->length > 0)
        fill_room_locked(f, q); /* F6, F7: before any reader sees the size */
    if (f->no_room) {
        pthread_mutex_unlock(&be->fill_mu);
        return false;
    }
    if (!f->sized && q->status == 200 && q->length > 0) {
        f->sized = true;
        f->st = (cn__be_stat_t){ q->length, q->last_modified_ms, cn__s3_form_of(q->form) };
    }
    if (q->out_done < f->avail)
        f->punched = 0; /* a GET started over: its file was emptied */
    f->avail = q->out_done;
    f->gen++;
    bool relay = f->relay, go = true;
    uint64_t floor = relay_floor_locked(f);
    if (relay && relay_full_locked(f, f->window))
        go = false, f->paused = true;
    pthread_cond_broadcast(&be->fill_cv);
    pthread_mutex_unlock(&be->fill_mu);
    if (relay && !relay_punch(f, floor))
        go = false, f->paused = false;
    return go && !atomic_load(&be->closing);
}

/* Waits on fill_cv, in steps of at most a second, until reached(f): true;
 * false once the relay is idle (no reader attached, none touched it for
 * RELAY_IDLE_MS) or the backend closes.  Under fill_mu. */
static bool relay_wait_locked(fill_t *f, bool (*reached)(const fill_t *))
{
    s3_be_t *be = f->be;
    while (!reached(f)) {
        int64_t now = cn_mono_ms();
        int64_t idle =
            f->used || be->relay_idle_ms < RELAY_UNUSED_MS ? be->relay_idle_ms : RELAY_UNUSED_MS;
        int64_t left = f->touched_ms + idle - now;
        if (atomic_load(&be->closing) || (!f->attached && left <= 0))
            return false;
        int64_t until = now + (left > 0 && left < 1000 ? left : 1000);
        struct timespec ts = { (time_t)(until / 1000), (long)(until % 1000) * 1000000 };
        pthread_cond_timedwait(&be->fill_cv, &be->fill_mu, &ts);
    }
    return true;
}

static bool relay_drained(const fill_t *f)
{
    return !relay_full_locked(f, f->window / 2);
}

/* F7: a relay's download stopped for its window goes on once its reader
 * drained half of it (true); false when it is idle, or the backend closes,
 * or it did not stop for its window. */
static bool relay_resume(void *ctx)
{
    fill_t *f = ctx;
    s3_be_t *be = f->be;
    pthread_mutex_lock(&be->fill_mu);
    bool go = f->paused && relay_wait_locked(f, relay_drained);
    f->paused = false;
    uint64_t floor = relay_floor_locked(f);
    pthread_mutex_unlock(&be->fill_mu);
    return go && relay_punch(f, floor);
}

static bool relay_read_out(const fill_t *f)
{
    return f->pos >= f->st.size;
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
    cn_err_t rc = cn__s3_fetch(be, &f->d, f->fd, on_progress, relay_resume, f, st);
    pthread_mutex_lock(&be->fill_mu);
    bool no_room = f->no_room;
    uint64_t size = f->sized ? f->st.size : 0;
    pthread_mutex_unlock(&be->fill_mu);
    /* Size not known yet (the first bytes did not land): room for the
     * reserve, and the restart's answer makes room for the rest. */
    if (!no_room && disk_full(rc) && cn__cache_make_room(be->cache, size) &&
        ftruncate(f->fd, 0) == 0)
        rc = cn__s3_fetch(be, &f->d, f->fd, on_progress, relay_resume, f, st);
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
    pthread_mutex_lock(&be->fill_mu);
    bool relay = f->relay;
    pthread_mutex_unlock(&be->fill_mu);
    if (rc == CN_OK && !relay) /* F7: a relay's file is holes below its window */
        rc = cn__cache_commit(be->cache, -1, f->tmp, &f->d, st.form, st.size);
    if (rc != CN_OK || relay)
        cn__cache_discard(be->cache, f->tmp);
    pthread_mutex_lock(&be->fill_mu);
    f->done = true;
    f->rc = rc;
    if (rc == CN_OK) {
        f->sized = true;
        f->st = st;
        f->avail = st.size;
    }
    pthread_cond_broadcast(&be->fill_cv);
    /* F7: a relay stays findable until its reader read it out or left. */
    if (relay && rc == CN_OK)
        (void)relay_wait_locked(f, relay_read_out);
    be->relay_held -= relay ? relay_disk(f->window) : 0;
    for (fill_t **pp = &be->fills; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
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
    f->threaded = threaded;
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
        f->threaded = false;
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

/* A new fill of d, in be->fills, with the runner's reference and the
 * caller's (dropped with fill_put_locked); the caller starts it with
 * fill_start.  Under fill_mu. */
static cn_err_t fill_new_locked(s3_be_t *be, const cn_digest_t *d, fill_t **out)
{
    fill_t *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    cn_err_t rc = cn__cache_tmp(be->cache, f->tmp, &f->fd);
    if (rc < 0) {
        free(f);
        return rc;
    }
    f->be = be;
    f->d = *d;
    f->refs = 2; /* the runner's and the caller's */
    f->next = be->fills;
    be->fills = f;
    *out = f;
    return CN_OK;
}

/* d's fill in flight, joined, or a new one (*fresh: the caller starts it
 * with fill_start).  The caller's reference is dropped with fill_put_locked. */
static cn_err_t fill_get(s3_be_t *be, const cn_digest_t *d, fill_t **out, bool *fresh)
{
    cn_err_t rc = CN_OK;
    pthread_mutex_lock(&be->fill_mu);
    fill_t *f = find_locked(be, d);
    *fresh = !f;
    if (f)
        f->refs++;
    else
        rc = fill_new_locked(be, d, &f);
    pthread_mutex_unlock(&be->fill_mu);
    *out = rc == CN_OK ? f : NULL;
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
    while (!f->done && !(lazy && streamable(f)) && !f->relay)
        pthread_cond_wait(&be->fill_cv, &be->fill_mu);
    if (f->relay && !lazy) { /* F7: never a whole file */
        rc = -ENOSPC;
    } else if (!f->done || f->relay) { /* there, and better read as it lands (F5, F7) */
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

/* F7: whether a read from off can go on with relay f.  Under fill_mu. */
static bool relay_attachable(const fill_t *f, uint64_t off)
{
    return !f->attached && (!f->done || f->rc == CN_OK) && (!f->used || f->pos == off);
}

/* Attaches a read from off to relay f if it can go on with it (F7): true.
 * Under fill_mu. */
static bool relay_attach_locked(fill_t *f, uint64_t off)
{
    if (!relay_attachable(f, off))
        return false;
    f->attached = true;
    if (!f->used)
        f->pos = off; /* the bytes before are hashed, then punched */
    f->used = true;
    f->touched_ms = cn_mono_ms();
    pthread_cond_broadcast(&f->be->fill_cv);
    return true;
}

/* The relay's reader has what lies below upto: the window moves on.  For
 * the final piece of a held read (fin), nothing more is needed, and it
 * waits for the verdict (F3): CN_OK or the relay's failure. */
static cn_err_t relay_passed(fill_t *f, uint64_t upto, bool fin)
{
    s3_be_t *be = f->be;
    pthread_mutex_lock(&be->fill_mu);
    f->pos = fin ? UINT64_MAX : upto;
    pthread_cond_broadcast(&be->fill_cv);
    while (fin && !f->done)
        pthread_cond_wait(&be->fill_cv, &be->fill_mu);
    cn_err_t rc = f->done ? f->rc : CN_OK;
    pthread_mutex_unlock(&be->fill_mu);
    return rc;
}

/* Serves [off, end) of f, as its bytes land, through a bounded buffer; a
 * relay (F7) takes its final piece before it waits for the verdict, since
 * the download needs its window to move on. */
static cn_err_t fill_read(fill_t *f, bool relay, uint64_t off, uint64_t end, bool hold,
                          cn_store_sink_fn sink, void *ctx, cn_blake3_t *h)
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
        bool fin = hold && off + want == end;
        if ((rc = fill_wait(f, off + want, fin && !relay, stale, &gen, &ended)) < 0)
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
            if (relay && fin)
                rc = relay_passed(f, off + want, true);
            if (rc == CN_OK && h)
                cn_blake3_update(h, buf, want);
            if (rc == CN_OK)
                rc = sink(ctx, buf, want);
            /* Only what the sink took is passed (cn_store_sink_fn): a face
             * that gives up on its first piece, to serve in parts, reads it
             * again from the same relay. */
            if (rc >= 0 && relay && !fin) {
                cn_err_t e = relay_passed(f, off + want, false);
                rc = e < 0 ? e : rc;
            }
            off += want;
        }
    }
    free(buf);
    return rc;
}

/* A fill of d that a read from off can be served by, referenced, or NULL:
 * one in flight that is not a relay, else a relay the read can go on with
 * (F7), the one where the last read ended first.  Under fill_mu. */
static fill_t *find_for_read_locked(s3_be_t *be, const cn_digest_t *d, uint64_t off)
{
    fill_t *r = NULL;
    for (fill_t *g = be->fills; g; g = g->next) {
        if (memcmp(g->d.b, d->b, CN_DIGEST_LEN) != 0 || g->attached)
            continue; /* attached: another read's own (fill_for_read) */
        if (!g->relay) {
            r = g;
            break;
        }
        if (relay_attachable(g, off) && (!r || g->pos == off))
            r = g;
    }
    if (r)
        r->refs++;
    return r;
}

/* The fill a read of d from off streams from, referenced (*f NULL: none):
 * one in flight, or, for a blob known not to fit (F7), a relay of its own,
 * attached to this read from the start (*own) so that no other read takes
 * it. */
static cn_err_t fill_for_read(s3_be_t *be, const cn_digest_t *d, uint64_t off, fill_t **f,
                              bool *own)
{
    cn_err_t rc = CN_OK;
    bool fresh = false;
    pthread_mutex_lock(&be->fill_mu);
    *f = find_for_read_locked(be, d, off);
    if (!*f && oversize_has_locked(be, d) && !atomic_load(&be->closing))
        fresh = (rc = fill_new_locked(be, d, f)) == CN_OK;
    if (fresh) {
        (*f)->attached = (*f)->used = true;
        (*f)->pos = off;
        (*f)->touched_ms = cn_mono_ms();
    }
    *own = fresh;
    pthread_mutex_unlock(&be->fill_mu);
    if (fresh)
        fill_start(*f, true);
    return rc;
}

cn_err_t cn__s3_fill_stream(s3_be_t *be, const cn_digest_t *d, uint64_t off, uint64_t len,
                            bool hold, cn_store_sink_fn sink, void *ctx, cn_blake3_t *h,
                            uint64_t *served, bool *streamed)
{
    *streamed = false;
    fill_t *f;
    bool own;
    CN_TRY(fill_for_read(be, d, off, &f, &own));
    if (!f)
        return CN_OK;
    pthread_mutex_lock(&be->fill_mu);
    while (!f->done && !f->sized)
        pthread_cond_wait(&be->fill_cv, &be->fill_mu);
    /* An ended fill is read through the cache; an envelope once whole. */
    bool relay = f->relay && (own || relay_attach_locked(f, off));
    if (own && !relay)
        f->attached = false; /* an ordinary fill after all: anyone's */
    bool live = relay || (!f->relay && !f->done && f->st.form == CN_STORE_RAW);
    cn__be_stat_t st = live ? f->st : (cn__be_stat_t){ 0 };
    if (!live)
        fill_put_locked(f);
    pthread_mutex_unlock(&be->fill_mu);
    if (!live)
        return CN_OK;
    *streamed = true;
    cn_err_t rc = CN_E_RANGE;
    if (off <= st.size) {
        uint64_t n = st.size - off < len ? st.size - off : len;
        rc = fill_read(f, relay, off, off + n, hold, sink, ctx, h);
        if (rc == CN_OK && served)
            *served = n;
    }
    pthread_mutex_lock(&be->fill_mu);
    if (relay) {
        f->attached = false;
        f->touched_ms = cn_mono_ms();
        pthread_cond_broadcast(&be->fill_cv);
    }
    fill_put_locked(f);
    pthread_mutex_unlock(&be->fill_mu);
    return rc;
}
