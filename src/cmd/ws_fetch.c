/* Fetching files into a workspace, and the progress bar of a transfer.
 *
 * Every file to fetch is one job.  Their manifests come in one get_objects
 * stream, then all their chunks in file order in another, each written to a
 * temporary file that is renamed into place when its last chunk arrived and
 * checked against its id.  One syncfs at the end makes the batch durable
 * before the state names it.  It never writes a tracked path except by that
 * rename (or, for a symlink, by creating the link). */
#include "ws.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One lane's position: the file it writes and the chunk it hashes. */
typedef struct lane_state {
    int fd;
    size_t job;
    uint64_t pos;               /* bytes of the current chunk so far */
    cn_blake3_t h;
    uint64_t bytes;
} lane_state_t;

typedef struct fetch_ctx {
    wstate_t *s;
    job_t *jobs;
    size_t *job_of;             /* chunk ref index -> job */
    uint32_t *chunk_of;         /* chunk ref index -> chunk index in its manifest */
    uint64_t *off_of;           /* chunk ref index -> offset in its file */
    lane_state_t lanes[1 + CN_SCRIBE_CLIENT_MAX_DATA];
    pthread_mutex_t mu;         /* jobs' created, rc, bad (remaining is atomic) */
    int pid;                    /* names the temporary files */
    bool bad;
    int rc;
} fetch_ctx_t;

static cn_err_t manifest_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)last;
    fetch_ctx_t *f = ctx;
    if (!present)
        return CN_E_NOT_FOUND;
    return cn_buf_append(&f->jobs[i].menc, p, n);
}

/* Creates the parent directories of full (a path under s->dir). */
static void make_parents(const wstate_t *s, char *full)
{
    for (char *p = strchr(full + strlen(s->dir) + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = 0;
        mkdir(full, 0755);
        *p = '/';
    }
}

/* Renames a finished temporary file into place and records it; fd, when
 * not -1, is open on the temporary file and gives its mtime (rename keeps
 * it). */
static int job_finish(wstate_t *s, job_t *j, int fd)
{
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", s->dir, j->w->path);
    struct stat st;
    if (j->w->mode == CN_REPOS_MODE_SYMLINK) {
        /* the manifest holds the link target */
        char target[4097];
        int tfd = open(j->tmp, O_RDONLY | O_CLOEXEC);
        long long n = tfd >= 0 ? cn_read_full(tfd, target, sizeof target - 1) : -1;
        if (tfd >= 0)
            close(tfd);
        unlink(j->tmp);
        make_parents(s, full);
        unlink(full);
        if (n < 0 || (target[n] = 0, symlink(target, full) < 0))
            return cn_ws_local_fail("cannot create link", full, errno);
        fd = -1;
    } else if (fd >= 0 && fstat(fd, &st) < 0) {
        return cn_ws_local_fail("cannot stat", j->tmp, errno);
    } else if (rename(j->tmp, full) < 0) {
        int e = errno;
        unlink(j->tmp);
        return cn_ws_local_fail("cannot rename into", full, e);
    }
    if (fd < 0 && lstat(full, &st) < 0)
        return cn_ws_local_fail("cannot stat", full, errno);
    j->w->size = j->m.size;
    j->w->mtime_ns = cn_ws_mtime_ns(&st);
    return EXIT_OK;
}

/* Opens job k's temporary file for writing (the first opener creates it).
 * It lives beside its target, so the final rename stays in one directory
 * (a rename across directories takes the file system's rename lock);
 * scans skip the CN_WS_TMP_PREFIX names a crash may leave. */
static int job_open(fetch_ctx_t *f, size_t k, int *fd)
{
    job_t *j = &f->jobs[k];
    pthread_mutex_lock(&f->mu);
    if (!j->created) {
        const char *slash = strrchr(j->w->path, '/');
        int dl = slash ? (int)(slash - j->w->path) : 0;
        snprintf(j->tmp, sizeof j->tmp, "%s/%.*s%s" CN_WS_TMP_PREFIX "%d-%zu", f->s->dir, dl,
                 j->w->path, slash ? "/" : "", f->pid, k);
    }
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (j->created ? 0 : O_TRUNC);
    mode_t mode = j->w->mode == CN_REPOS_MODE_EXEC ? 0755 : 0644;
    *fd = open(j->tmp, flags, mode);
    if (*fd < 0 && errno == ENOENT) {
        make_parents(f->s, j->tmp);
        *fd = open(j->tmp, flags, mode);
    }
    int e = errno;
    if (*fd >= 0)
        j->created = true;
    pthread_mutex_unlock(&f->mu);
    return *fd < 0 ? cn_ws_local_fail("cannot create", j->tmp, e) : EXIT_OK;
}

static void lane_close(lane_state_t *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

/* Chunks arrive on up to five lanes at once; each writes its pieces at
 * their offsets, hashes the chunk it is on, and the lane that writes a
 * file's last missing chunk renames it into place. */
static cn_err_t chunk_sink(void *ctx, unsigned lane, size_t i, bool present, const void *p,
                           size_t n, bool last)
{
    fetch_ctx_t *f = ctx;
    lane_state_t *l = &f->lanes[lane];
    if (!present)
        return CN_E_NOT_FOUND;
    size_t k = f->job_of[i];
    job_t *j = &f->jobs[k];
    if (l->fd < 0 || l->job != k) {
        lane_close(l);
        int rc = job_open(f, k, &l->fd);
        if (rc) {
            pthread_mutex_lock(&f->mu);
            f->rc = rc;
            pthread_mutex_unlock(&f->mu);
            return CN_E_CLOSED;
        }
        l->job = k;
    }
    if (n) {
        cn_blake3_update(&l->h, p, n);
        const uint8_t *b = p;
        for (size_t done = 0; done < n;) {
            ssize_t w = pwrite(l->fd, b + done, n - done, (off_t)(f->off_of[i] + l->pos + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                int rc = cn_ws_local_fail("cannot write", j->tmp, w < 0 ? errno : ENOSPC);
                pthread_mutex_lock(&f->mu);
                f->rc = rc;
                pthread_mutex_unlock(&f->mu);
                return CN_E_CLOSED;
            }
            done += (size_t)w;
        }
        l->pos += n;
        l->bytes += n;
    }
    if (!last)
        return CN_OK;
    cn_digest_t got;
    cn_repos_chunk_ref_t ref;
    cn_blake3_final(&l->h, &got);
    cn_blake3_init(&l->h);
    l->pos = 0;
    cn_repos_manifest_chunk(&j->m, f->chunk_of[i], &ref);
    if (memcmp(got.b, ref.id.b, 32) != 0) {
        pthread_mutex_lock(&f->mu);
        f->bad = true;
        pthread_mutex_unlock(&f->mu);
        return CN_E_DIGEST_MISMATCH;
    }
    bool done = __atomic_sub_fetch(&j->remaining, 1, __ATOMIC_ACQ_REL) == 0;
    if (done) {
        int rc = job_finish(f->s, j, l->fd);
        lane_close(l);
        if (rc) {
            pthread_mutex_lock(&f->mu);
            f->rc = rc;
            pthread_mutex_unlock(&f->mu);
            return CN_E_CLOSED;
        }
    }
    return CN_OK;
}

static void progress_draw(progress_t *pg, bool final)
{
    int64_t now = cn_mono_ms();
    if (!pg->on || (!final && now - pg->last_ms < 100))
        return;
    pg->last_ms = now;
    unsigned pct = pg->total ? (unsigned)(pg->done * 100 / pg->total) : 100;
    if (pct > 100)
        pct = 100;
    char bar[31];
    memset(bar, '#', pct * 30 / 100);
    memset(bar + pct * 30 / 100, '.', 30 - pct * 30 / 100);
    bar[30] = 0;
    fprintf(stderr, "\r%s [%s] %3u%% %" PRIu64 "/%" PRIu64 " MiB%s", pg->what, bar, pct,
            pg->done >> 20, pg->total >> 20, final ? "\n" : "");
    fflush(stderr);
}

static void progress_cb(void *ctx, uint64_t bytes)
{
    progress_t *pg = ctx;
    pg->done += bytes;
    progress_draw(pg, false);
}

void cn_ws_progress_start(progress_t *pg, cn_scribe_client_t *cl, const char *what,
                          uint64_t total, bool quiet)
{
    memset(pg, 0, sizeof *pg);
    pg->what = what;
    pg->total = total;
    pg->on = !quiet && total >= (8u << 20) && isatty(2);
    if (pg->on)
        cn_scribe_client_set_progress(cl, progress_cb, pg);
}

void cn_ws_progress_end(progress_t *pg, cn_scribe_client_t *cl)
{
    if (!pg->on)
        return;
    cn_scribe_client_set_progress(cl, NULL, NULL);
    progress_draw(pg, true);
}

int cn_ws_fetch_all(cn_scribe_client_t *cl, wstate_t *s, job_t *jobs, size_t nj, uint64_t *bytes,
                    bool quiet)
{
    cn_scribe_cerr_t err;
    memset(&err, 0, sizeof err);
    fetch_ctx_t f;
    memset(&f, 0, sizeof f);
    f.s = s;
    f.jobs = jobs;
    f.pid = (int)getpid();
    pthread_mutex_init(&f.mu, NULL);
    for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++) {
        f.lanes[k].fd = -1;
        cn_blake3_init(&f.lanes[k].h);
    }
    int rc = EXIT_OK;
    cn_scribe_client_ref_t *refs = malloc((nj ? nj : 1) * sizeof *refs);
    if (!refs) {
        pthread_mutex_destroy(&f.mu);
        return cn_ws_local_fail("out of memory fetching", s->dir, ENOMEM);
    }
    for (size_t k = 0; k < nj; k++)
        refs[k] = (cn_scribe_client_ref_t){CN_REPOS_MANIFEST, jobs[k].w->manifest};
    cn_err_t e = nj ? cn_scribe_client_get(cl, s->repo_id, refs, nj, manifest_sink, &f, &err) : 0;
    free(refs);
    refs = NULL;
    if (e < 0) {
        pthread_mutex_destroy(&f.mu);
        return cn_ws_fail("fetching manifests", e, &err);
    }
    size_t total = 0;
    uint64_t total_bytes = 0;
    for (size_t k = 0; k < nj; k++) {
        cn_digest_t got;
        cn_repos_object_id(CN_REPOS_MANIFEST, jobs[k].menc.data, jobs[k].menc.len, &got);
        if (memcmp(got.b, jobs[k].w->manifest.b, 32) != 0 ||
            cn_repos_manifest_parse(jobs[k].menc.data, jobs[k].menc.len, &jobs[k].m) < 0) {
            fprintf(stderr, "cairn repo: the manifest of %s does not match its id\n",
                    jobs[k].w->path);
            pthread_mutex_destroy(&f.mu);
            return EXIT_INTEGRITY;
        }
        total += jobs[k].m.count;
        total_bytes += jobs[k].m.size;
    }
    refs = malloc((total ? total : 1) * sizeof *refs);
    f.job_of = malloc((total ? total : 1) * sizeof *f.job_of);
    f.chunk_of = malloc((total ? total : 1) * sizeof *f.chunk_of);
    f.off_of = malloc((total ? total : 1) * sizeof *f.off_of);
    if (!refs || !f.job_of || !f.chunk_of || !f.off_of) {
        rc = cn_ws_local_fail("out of memory fetching", s->dir, ENOMEM);
        goto out;
    }
    size_t at = 0;
    for (size_t k = 0; k < nj && rc == EXIT_OK; k++) {
        jobs[k].remaining = jobs[k].m.count;
        if (!jobs[k].m.count) {         /* an empty file has no chunks */
            int fd;
            if ((rc = job_open(&f, k, &fd)) == EXIT_OK) {
                rc = job_finish(s, &jobs[k], fd);
                close(fd);
            }
            continue;
        }
        uint64_t off = 0;
        for (uint32_t c = 0; c < jobs[k].m.count; c++, at++) {
            cn_repos_chunk_ref_t ref;
            cn_repos_manifest_chunk(&jobs[k].m, c, &ref);
            refs[at] = (cn_scribe_client_ref_t){CN_REPOS_CHUNK, ref.id};
            f.job_of[at] = k;
            f.chunk_of[at] = c;
            f.off_of[at] = off;
            off += ref.len;
        }
    }
    if (rc)
        goto out;
    progress_t pg;
    cn_ws_progress_start(&pg, cl, "fetching", total_bytes, quiet);
    e = total ? cn_scribe_client_get_lanes(cl, s->repo_id, refs, total, chunk_sink, &f, &err) : 0;
    cn_ws_progress_end(&pg, cl);
    if (f.rc) {
        rc = f.rc;
    } else if (f.bad) {
        fprintf(stderr, "cairn repo: a fetched chunk does not match its id\n");
        rc = EXIT_INTEGRITY;
    } else if (e < 0) {
        rc = cn_ws_fail("fetching chunks", e, &err);
    } else {
        /* one flush for the whole batch before the state names it */
        int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            syncfs(dfd);
            close(dfd);
        }
        for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++)
            *bytes += f.lanes[k].bytes;
    }
out:
    for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++)
        lane_close(&f.lanes[k]);
    for (size_t k = 0; k < nj; k++)
        if (jobs[k].created && jobs[k].remaining)
            unlink(jobs[k].tmp);
    free(refs);
    free(f.job_of);
    free(f.chunk_of);
    free(f.off_of);
    pthread_mutex_destroy(&f.mu);
    return rc;
}
