/* cn_blobc_sync (include/cairn/blobs_client.h, "sync"): have/need diffing
 * between two blob-ops servers and parallel streamed copies of what the
 * target lacks.  Each copy pipes the source's verified get into the target's
 * put from a pump thread; each worker holds its own two connections.  Prints
 * nothing; per-digest outcomes go to the caller's callback. */
#include "cairn/blobs_client.h"
#include "cairn/util.h"
#include "blobs_client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FETCH_TRIES 5
#define LIST_PAGE 1000
#define DEFAULT_JOBS 4
#define MAX_JOBS 64

/* ---- one copy ------------------------------------------------------------------------- */

static cn_err_t fd_sink(void *ctx, const void *p, size_t n)
{
    return cn_write_full(*(int *)ctx, p, n);
}

typedef struct pump {
    cn_blobc_t *src;
    const char *ns;
    cn_digest_t d;
    int wfd;
    cn_err_t rc;
} pump_t;

static void *pump_main(void *arg)
{
    pump_t *p = arg;
    p->rc = cn_blobc_get(p->src, p->ns, &p->d, NULL, fd_sink, &p->wfd, NULL, NULL, NULL);
    close(p->wfd);
    return NULL;
}

typedef struct pipe_src {
    int fd;
    uint64_t want, got;
} pipe_src_t;

static ssize_t pipe_source(void *ctx, void *buf, size_t max)
{
    pipe_src_t *s = ctx;
    ssize_t k;
    do {
        k = read(s->fd, buf, max);
    } while (k < 0 && errno == EINTR);
    if (k > 0)
        s->got += (uint64_t)k;
    if (k == 0 && s->got != s->want)
        return -1; /* the fetch ended short: abort the put */
    return k;
}

/* Copies one blob source → target as a stream (no local copy: the target
 * verifies the digest and length before it commits), then holds the token
 * until the target's have confirms it. */
static cn_err_t copy_one(cn_blobc_t *src, cn_blobc_t *dst, const char *ns, const cn_digest_t *d)
{
    uint64_t len = 0;
    CN_TRY(cn_blobc_stat(src, ns, d, &len));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    pump_t pump = { src, ns, *d, fds[1], CN_OK };
    pthread_t th;
    if (pthread_create(&th, NULL, pump_main, &pump) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -EAGAIN;
    }
    pipe_src_t ps = { fds[0], len, 0 };
    cn_blobc_put_result_t res;
    cn_err_t e = cn_blobc_put(dst, ns, d, (int64_t)len, pipe_source, &ps, NULL, NULL, &res);
    close(fds[0]); /* a pump still writing gets EPIPE and stops */
    pthread_join(th, NULL);
    if (pump.rc < 0 && e >= 0)
        e = pump.rc; /* (cannot happen: the target verified the digest) */
    if (e < 0)
        return pump.rc < 0 ? pump.rc : e;
    bool ok = false;
    CN_TRY(cn_blobc_have(dst, ns, d, 1, res.token, &ok));
    if (ok)
        CN_TRY(cn_blobc_have(dst, ns, d, 1, NULL, &ok));
    return ok ? CN_OK : CN_E_CONFLICT;
}

/* ---- the workers ------------------------------------------------------------------------- */

typedef struct job {
    const cn_blobc_t *src, *dst; /* the caller's, only to dup */
    const char *ns;
    const cn_blobc_sync_opts_t *o;
    const cn_digest_t *want;
    const bool *present;
    size_t n;
    pthread_mutex_t mu;
    size_t next;
    cn_blobc_sync_stats_t *st;
    bool stop;
} job_t;

/* Copies want[i] with retries and backoff; the permanent answers end at once. */
static cn_err_t copy_with_retries(cn_blobc_t *src, cn_blobc_t *dst, const char *ns,
                                  const cn_digest_t *d)
{
    cn_err_t e = CN_E_AGAIN;
    for (int attempt = 0; attempt < FETCH_TRIES && e < 0; attempt++) {
        e = copy_one(src, dst, ns, d);
        if (e == CN_E_NOT_FOUND || e == CN_E_DENIED || e == CN_E_AUTH)
            break;
        if (e < 0)
            usleep(100000u << attempt);
    }
    return e;
}

/* Records one outcome and tells the caller; j->mu held. */
static void record(job_t *j, const cn_digest_t *d, cn_err_t e, const cn_blobc_t *dst)
{
    if (e == CN_E_NOT_FOUND) {
        j->st->missing++;
    } else if (e < 0) {
        j->st->failed++;
        if (!j->st->first_error)
            j->st->first_error = e;
        if (e == CN_E_DENIED || e == CN_E_AUTH)
            j->stop = true;
    } else {
        j->st->copied++;
    }
    if (j->o->on_digest)
        j->o->on_digest(j->o->ctx, d, e < 0 ? e : CN_OK, cn_blobc_error(dst));
}

/* One worker: its own connections to both servers; takes the next needed
 * digest until none is left. */
static void *worker(void *arg)
{
    job_t *j = arg;
    cn_blobc_t *src = NULL, *dst = NULL;
    cn_err_t e = cn__blobc_dup(j->src, &src);
    if (e >= 0)
        e = cn__blobc_dup(j->dst, &dst);
    if (e < 0) {
        cn_blobc_free(src);
        pthread_mutex_lock(&j->mu);
        if (!j->st->first_error) {
            j->st->first_error = e;
            j->st->setup_failed = true;
        }
        pthread_mutex_unlock(&j->mu);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&j->mu);
        while (j->next < j->n && j->present[j->next])
            j->next++;
        size_t i = j->next++;
        bool stop = j->stop || i >= j->n;
        pthread_mutex_unlock(&j->mu);
        if (stop)
            break;
        e = copy_with_retries(src, dst, j->ns, &j->want[i]);
        pthread_mutex_lock(&j->mu);
        record(j, &j->want[i], e, dst);
        pthread_mutex_unlock(&j->mu);
    }
    cn_blobc_free(src);
    cn_blobc_free(dst);
    return NULL;
}

/* ---- the diff ------------------------------------------------------------------------------ */

/* Every digest of ns on src, in the source's order. */
static cn_err_t list_all(cn_blobc_t *src, const char *ns, cn_digest_t **out, size_t *n_out)
{
    cn_digest_t *want = NULL;
    size_t n = 0, cap = 0;
    bool more = true;
    cn_err_t e = CN_OK;
    while (more && e >= 0) {
        if (n + LIST_PAGE > cap) {
            cap = cap ? cap * 2 : 4096;
            cn_digest_t *nw = realloc(want, cap * sizeof *want);
            if (!nw) {
                e = -ENOMEM;
                break;
            }
            want = nw;
        }
        size_t k = 0;
        e = cn_blobc_list(src, ns, n ? &want[n - 1] : NULL, LIST_PAGE, want + n, &k, &more);
        n += k;
        more = more && k;
    }
    if (e < 0) {
        free(want);
        return e;
    }
    *out = want;
    *n_out = n;
    return CN_OK;
}

/* Runs the workers over want[0, n) minus present. */
static void copy_needed(cn_blobc_t *src, cn_blobc_t *dst, const char *ns,
                        const cn_blobc_sync_opts_t *o, const cn_digest_t *want, const bool *present,
                        size_t n, cn_blobc_sync_stats_t *st)
{
    job_t job = {
        .src = src, .dst = dst, .ns = ns, .o = o, .want = want, .present = present, .n = n, .st = st
    };
    pthread_mutex_init(&job.mu, NULL);
    int jobs = o->jobs > 0 ? o->jobs : DEFAULT_JOBS;
    pthread_t th[MAX_JOBS];
    int started = 0;
    for (int i = 0; i < jobs && i < MAX_JOBS; i++)
        if (pthread_create(&th[started], NULL, worker, &job) == 0)
            started++;
    if (!started)
        worker(&job);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&job.mu);
}

cn_err_t cn_blobc_sync(cn_blobc_t *src, cn_blobc_t *dst, const char *ns,
                       const cn_blobc_sync_opts_t *opts, cn_blobc_sync_stats_t *stats)
{
    memset(stats, 0, sizeof *stats);
    cn_blobc_sync_opts_t o = opts ? *opts : (cn_blobc_sync_opts_t){ 0 };
    cn_digest_t *listed = NULL;
    const cn_digest_t *want = o.digests;
    size_t n = o.n_digests;
    bool *present = NULL;
    cn_err_t e = CN_OK;
    if (!want) {
        e = list_all(src, ns, &listed, &n);
        if (e < 0) {
            stats->stage = CN_BLOBC_SYNC_STAGE_LIST;
            goto out;
        }
        want = listed;
    }
    stats->digests = n;
    present = calloc(n ? n : 1, sizeof *present);
    if (!present) {
        stats->stage = CN_BLOBC_SYNC_STAGE_MEMORY;
        e = -ENOMEM;
        goto out;
    }
    e = cn_blobc_have(dst, ns, want, n, NULL, present);
    if (e < 0) {
        stats->stage = CN_BLOBC_SYNC_STAGE_HAVE;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        stats->present += present[i];
    copy_needed(src, dst, ns, &o, want, present, n, stats);
    e = CN_OK;
out:
    free(present);
    free(listed);
    return e;
}
