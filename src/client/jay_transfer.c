/* Whole-file transfers over the Jay client (include/cairn/client.h,
 * "whole-file transfers"): cn_client_put_file picks one PutObject or a
 * multipart upload by size and sends the parts of a sized file from several
 * threads at once, each on its own pooled connection; cn_client_get_to_fd
 * hashes a download and checks it against the server's SHA-256.
 *
 * Nothing here prints or exits: every failure is a cn_err_t, the step that
 * failed, and the server's answer in the cn_jay_error_t. */
#include "cairn/client.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- progress: the sum of every concurrent call's bytes ----------------------------- */

typedef struct total {
    _Atomic int64_t done;
    cn_client_progress_fn fn;
    void *ud;
} total_t;

/* One call's tap: the client reports that call's cumulative bytes; the total
 * adds the deltas of every concurrent call. */
typedef struct tap {
    total_t *t;
    int64_t seen;
} tap_t;

static void on_progress(void *ud, int64_t bytes)
{
    tap_t *tp = ud;
    int64_t now = atomic_fetch_add(&tp->t->done, bytes - tp->seen) + (bytes - tp->seen);
    tp->seen = bytes;
    if (tp->t->fn)
        tp->t->fn(tp->t->ud, now);
}

/* ---- bodies --------------------------------------------------------------------------- */

/* A body read with pread(2) from [off, end) of a shared fd: thread-safe. */
typedef struct pread_src {
    int fd;
    int64_t off, end;
} pread_src_t;

static long long pread_cb(void *ud, void *buf, size_t n)
{
    pread_src_t *s = ud;
    if ((int64_t)n > s->end - s->off)
        n = (size_t)(s->end - s->off);
    if (n == 0)
        return 0;
    ssize_t r;
    do {
        r = pread(s->fd, buf, n, s->off);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    s->off += r;
    return r;
}

/* A body from memory. */
typedef struct mem_src {
    const uint8_t *p;
    size_t len, off;
} mem_src_t;

static long long mem_cb(void *ud, void *buf, size_t n)
{
    mem_src_t *m = ud;
    if (n > m->len - m->off)
        n = m->len - m->off;
    memcpy(buf, m->p + m->off, n);
    m->off += n;
    return (long long)n;
}

/* ---- parallel multipart upload of a sized file ------------------------------------------ */

typedef struct mp {
    cn_client_t *cl;
    const char *bucket, *key, *upload_id;
    int fd;
    int64_t size, part_size;
    int32_t n_parts;
    _Atomic int32_t next;
    _Atomic bool failed;
    pthread_mutex_t mu;
    cn_err_t err;
    cn_jay_error_t jerr;
    total_t *total;
} mp_t;

static void *mp_worker(void *arg)
{
    mp_t *m = arg;
    for (;;) {
        if (atomic_load(&m->failed))
            break;
        int32_t part = atomic_fetch_add(&m->next, 1);
        if (part > m->n_parts)
            break;
        int64_t off = (int64_t)(part - 1) * m->part_size;
        int64_t len = m->size - off < m->part_size ? m->size - off : m->part_size;
        pread_src_t src = { m->fd, off, off + len };
        tap_t tap = { m->total, 0 };
        cn_client_body_t body = { .len = len,
                                  .fd = -1,
                                  .read = pread_cb,
                                  .ud = &src,
                                  .progress = on_progress,
                                  .progress_ud = &tap };
        cn_client_written_t w;
        cn_jay_error_t je;
        memset(&je, 0, sizeof je);
        cn_err_t e =
            cn_client_upload_part(m->cl, m->bucket, m->key, m->upload_id, part, &body, &w, &je);
        cn_client_written_clear(&w);
        if (e) {
            pthread_mutex_lock(&m->mu);
            if (!atomic_load(&m->failed)) {
                m->err = e;
                m->jerr = je;
                atomic_store(&m->failed, true);
            }
            pthread_mutex_unlock(&m->mu);
            break;
        }
    }
    return NULL;
}

/* Sends every part of m with up to jobs threads; the first failure wins. */
static cn_err_t run_parts(mp_t *m, int jobs, cn_jay_error_t *err)
{
    if (jobs > m->n_parts)
        jobs = m->n_parts;
    pthread_t th[CN_CLIENT_MAX_JOBS];
    int started = 0;
    for (; started < jobs; started++)
        if (pthread_create(&th[started], NULL, mp_worker, m) != 0)
            break;
    if (started == 0)
        mp_worker(m);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (!atomic_load(&m->failed))
        return CN_OK;
    if (err)
        *err = m->jerr;
    return m->err;
}

static cn_err_t put_multipart(cn_client_t *cl, const char *bucket, const char *key, int fd,
                              int64_t size, int64_t ps, int jobs, const char *ctype, total_t *total,
                              cn_client_put_result_t *out, cn_jay_error_t *err)
{
    /* The part list is an int list: at most 65535 parts. */
    if ((size + ps - 1) / ps > CN_JAY_MAX_COUNT)
        ps = ((size / CN_JAY_MAX_COUNT) | ((1 << 20) - 1)) + 1;
    char *upload_id = NULL;
    int32_t *parts = NULL;
    out->multipart = true;
    out->stage = CN_CLIENT_PUT_STAGE_CREATE;
    cn_err_t e = cn_client_create_multipart(cl, bucket, key, ctype, &upload_id, err);
    if (e)
        return e;
    mp_t m = { .cl = cl,
               .bucket = bucket,
               .key = key,
               .upload_id = upload_id,
               .fd = fd,
               .size = size,
               .part_size = ps,
               .n_parts = (int32_t)((size + ps - 1) / ps),
               .total = total };
    atomic_store(&m.next, 1);
    atomic_store(&m.failed, false);
    pthread_mutex_init(&m.mu, NULL);
    out->stage = CN_CLIENT_PUT_STAGE_PART;
    e = run_parts(&m, jobs, err);
    pthread_mutex_destroy(&m.mu);
    if (e)
        goto fail;
    parts = malloc((size_t)m.n_parts * sizeof *parts);
    if (!parts) {
        out->stage = CN_CLIENT_PUT_STAGE_PUT;
        e = -ENOMEM;
        goto fail;
    }
    for (int32_t i = 0; i < m.n_parts; i++)
        parts[i] = i + 1;
    out->stage = CN_CLIENT_PUT_STAGE_COMPLETE;
    e = cn_client_complete_multipart(cl, bucket, key, upload_id, parts, (size_t)m.n_parts,
                                     &out->written, err);
    if (e)
        goto fail;
    out->n_parts = m.n_parts;
    goto out;
fail:
    cn_client_abort_multipart(cl, bucket, key, upload_id, NULL);
out:
    free(parts);
    free(upload_id);
    return e;
}

/* ---- a stream without a usable size -------------------------------------------------------- */

typedef struct stream {
    cn_client_t *cl;
    const char *bucket, *key;
    const cn_client_put_opts_t *po;
    total_t *total;
    char *upload_id;
    int32_t *parts;
    int32_t n_parts;
} stream_t;

/* Sends buf[0, n) as the stream's next part (creating the upload first). */
static cn_err_t stream_part(stream_t *s, const uint8_t *buf, long long n,
                            cn_client_put_result_t *out, cn_jay_error_t *err)
{
    if (!s->upload_id) {
        out->multipart = true;
        out->stage = CN_CLIENT_PUT_STAGE_CREATE;
        const char *ctype = s->po ? s->po->content_type : NULL;
        CN_TRY(cn_client_create_multipart(s->cl, s->bucket, s->key, ctype, &s->upload_id, err));
    }
    out->stage = CN_CLIENT_PUT_STAGE_PART;
    if (n == 0 && s->n_parts > 0)
        return CN_OK;
    if (s->n_parts >= (int32_t)CN_JAY_MAX_COUNT) {
        out->stage = CN_CLIENT_PUT_STAGE_PARTS;
        return CN_E_LIMIT;
    }
    int32_t *np = realloc(s->parts, (size_t)(s->n_parts + 1) * sizeof *np);
    if (!np) {
        out->stage = CN_CLIENT_PUT_STAGE_PUT;
        return -ENOMEM;
    }
    s->parts = np;
    s->parts[s->n_parts] = s->n_parts + 1;
    mem_src_t src = { buf, (size_t)n, 0 };
    tap_t tap = { s->total, 0 };
    cn_client_body_t body = {
        .len = n, .fd = -1, .read = mem_cb, .ud = &src, .progress = on_progress, .progress_ud = &tap
    };
    cn_client_written_t w;
    CN_TRY(cn_client_upload_part(s->cl, s->bucket, s->key, s->upload_id, s->n_parts + 1, &body, &w,
                                 err));
    cn_client_written_clear(&w);
    s->n_parts++;
    return CN_OK;
}

/* Reads fd a part at a time: one part (or less) is a single PutObject, more
 * go up as sequential multipart parts. */
static cn_err_t put_stream(stream_t *s, int fd, size_t cap, cn_client_put_result_t *out,
                           cn_jay_error_t *err)
{
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    cn_err_t e;
    for (;;) {
        long long n = cn_read_full(fd, buf, cap);
        if (n < 0) {
            out->stage = CN_CLIENT_PUT_STAGE_READ;
            e = (cn_err_t)n;
            goto fail;
        }
        bool last = (size_t)n < cap;
        if (!s->upload_id && last) {
            mem_src_t src = { buf, (size_t)n, 0 };
            tap_t tap = { s->total, 0 };
            cn_client_body_t body = { .len = n,
                                      .fd = -1,
                                      .read = mem_cb,
                                      .ud = &src,
                                      .progress = on_progress,
                                      .progress_ud = &tap };
            out->stage = CN_CLIENT_PUT_STAGE_PUT;
            e = cn_client_put_object(s->cl, s->bucket, s->key, s->po, &body, &out->written, err);
            if (!e)
                out->written.size = n;
            goto out;
        }
        e = stream_part(s, buf, n, out, err);
        if (e)
            goto fail;
        if (last)
            break;
    }
    out->stage = CN_CLIENT_PUT_STAGE_COMPLETE;
    e = cn_client_complete_multipart(s->cl, s->bucket, s->key, s->upload_id, s->parts,
                                     (size_t)s->n_parts, &out->written, err);
    if (e)
        goto fail;
    out->n_parts = s->n_parts;
    goto out;
fail:
    if (s->upload_id)
        cn_client_abort_multipart(s->cl, s->bucket, s->key, s->upload_id, NULL);
out:
    free(buf);
    return e;
}

/* ---- the public calls -------------------------------------------------------------------- */

void cn_client_put_result_clear(cn_client_put_result_t *r)
{
    if (r)
        cn_client_written_clear(&r->written);
}

void cn_client_download_clear(cn_client_download_t *d)
{
    if (d)
        cn_client_object_clear(&d->info);
}

cn_err_t cn_client_put_file(cn_client_t *c, const char *bucket, const char *key, int fd,
                            int64_t size, const cn_client_transfer_opts_t *opts,
                            cn_client_put_result_t *out, cn_jay_error_t *err)
{
    memset(out, 0, sizeof *out);
    out->written.size = -1;
    if (err)
        memset(err, 0, sizeof *err);
    cn_client_transfer_opts_t o = opts ? *opts : (cn_client_transfer_opts_t){ 0 };
    int64_t ps = o.part_size ? o.part_size : CN_CLIENT_DEFAULT_PART_SIZE;
    int jobs = o.jobs ? o.jobs : CN_CLIENT_DEFAULT_JOBS;
    if (ps < CN_CLIENT_MIN_PART_SIZE || (uint64_t)ps > SIZE_MAX || jobs < 1 ||
        jobs > CN_CLIENT_MAX_JOBS || fd < 0)
        return CN_E_INVALID;
    total_t total = { 0, o.progress, o.progress_ud };
    atomic_store(&total.done, 0);
    if (size < 0) {
        stream_t s = { .cl = c, .bucket = bucket, .key = key, .po = o.put, .total = &total };
        cn_err_t e = put_stream(&s, fd, (size_t)ps, out, err);
        free(s.upload_id);
        free(s.parts);
        return e;
    }
    if (size > ps)
        return put_multipart(c, bucket, key, fd, size, ps, jobs, o.put ? o.put->content_type : NULL,
                             &total, out, err);
    pread_src_t src = { fd, 0, size };
    tap_t tap = { &total, 0 };
    cn_client_body_t body = { .len = size,
                              .fd = -1,
                              .read = pread_cb,
                              .ud = &src,
                              .progress = on_progress,
                              .progress_ud = &tap };
    out->stage = CN_CLIENT_PUT_STAGE_PUT;
    cn_err_t e = cn_client_put_object(c, bucket, key, o.put, &body, &out->written, err);
    if (!e)
        out->written.size = size;
    return e;
}

typedef struct hash_sink {
    int fd;
    cn_sha256_t *h;
    int64_t bytes;
    cn_err_t err; /* a local write failure, told apart from the network's */
} hash_sink_t;

static cn_err_t hash_write(void *ud, const void *p, size_t n)
{
    hash_sink_t *s = ud;
    cn_sha256_update(s->h, p, n);
    s->err = cn_write_full(s->fd, p, n);
    if (!s->err)
        s->bytes += (int64_t)n;
    return s->err;
}

cn_err_t cn_client_get_to_fd(cn_client_t *c, const char *bucket, const char *key, int fd,
                             const cn_client_transfer_opts_t *opts, cn_client_download_t *out,
                             cn_jay_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (err)
        memset(err, 0, sizeof *err);
    hash_sink_t hs = { fd, NULL, 0, CN_OK };
    if (cn_sha256_new(&hs.h)) {
        out->local = true;
        return -ENOMEM;
    }
    total_t total = { 0, opts ? opts->progress : NULL, opts ? opts->progress_ud : NULL };
    atomic_store(&total.done, 0);
    tap_t tap = { &total, 0 };
    cn_client_sink_t sink = {
        .fd = -1, .write = hash_write, .ud = &hs, .progress = on_progress, .progress_ud = &tap
    };
    cn_err_t e = cn_client_get_object(c, bucket, key, &sink, &out->info, err);
    uint8_t d[CN_DIGEST_LEN];
    cn_sha256_final(hs.h, d);
    cn_hex_encode(d, sizeof d, out->sha256);
    out->bytes = hs.bytes;
    if (hs.err) {
        out->local = true;
        return hs.err;
    }
    if (e)
        return e;
    if (out->info.checksum && out->info.checksum[0] &&
        strcasecmp(out->sha256, out->info.checksum) != 0)
        return CN_E_DIGEST_MISMATCH;
    return CN_OK;
}
