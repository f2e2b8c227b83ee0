/* Fetching files into a workspace, and the progress reports of a transfer.
 *
 * Every file to fetch is one job.  Their manifests come in one get_objects
 * stream, then all their chunks in file order in another, each written to a
 * temporary file that is renamed into place when its last chunk arrived and
 * checked against its id.  The chunks come by get_objects, or for an
 * anonymous protocol-4 caller (a public-read repository, no credential) by
 * get_chunks, each chunk with its file's manifest as witness
 * (docs/protocol/scribe.md 16.1): a public-only caller has no raw-object
 * access.  A chunk or manifest the server does not send is an error naming
 * the file.  One syncfs at the end makes the batch durable
 * before the state names it.  It never writes a tracked path except by that
 * rename (or, for a symlink, by creating the link). */
#include "workspace_int.h"
#include "scribe_int.h"

#include <errno.h>
#include <fcntl.h>
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
    uint64_t pos; /* bytes of the current chunk so far */
    cn_blake3_t h;
    uint64_t bytes;
} lane_state_t;

typedef struct fetch_ctx {
    cn__ws_state_t *s;
    cn__ws_job_t *jobs;
    size_t *job_of;                  /* chunk ref index -> job */
    uint32_t *chunk_of;              /* chunk ref index -> chunk index in its manifest */
    uint64_t *off_of;                /* chunk ref index -> offset in its file */
    bool witnessed;                  /* chunks by get_chunks (an anonymous caller) */
    cn_scribe_client_witness_t *wit; /* witnessed: chunk ref index -> (chunk, manifest) */
    lane_state_t lanes[1 + CN_SCRIBE_CLIENT_MAX_DATA];
    pthread_mutex_t mu; /* jobs' created, rc, err (remaining is atomic) */
    int pid;            /* names the temporary files */
    cn_err_t rc;        /* the first local failure of a lane, described in err */
    cn_ws_error_t err;
} fetch_ctx_t;

/* Keeps a lane's failure e (described in le) unless one came first; the
 * lane then stops the stream with CN_E_CLOSED. */
static cn_err_t lane_fail(fetch_ctx_t *f, cn_err_t e, const cn_ws_error_t *le)
{
    pthread_mutex_lock(&f->mu);
    if (!f->rc) {
        f->rc = e;
        f->err = *le;
    }
    pthread_mutex_unlock(&f->mu);
    return CN_E_CLOSED;
}

static cn_err_t manifest_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)last;
    fetch_ctx_t *f = ctx;
    if (!present) {
        cn_ws_error_t le;
        cn__ws_server(&le, CN_E_NOT_FOUND,
                      "%s: the server did not send its manifest (the repository lacks it)",
                      f->jobs[i].w->path);
        lane_fail(f, CN_E_NOT_FOUND, &le);
        return CN_E_NOT_FOUND;
    }
    return cn_buf_append(&f->jobs[i].menc, p, n);
}

/* Chunk ref i came back absent: the file it belongs to cannot be written. */
static cn_err_t chunk_absent(fetch_ctx_t *f, size_t i)
{
    const cn__ws_job_t *j = &f->jobs[f->job_of[i]];
    cn_ws_error_t le;
    cn__ws_server(&le, CN_E_NOT_FOUND, "%s: the server did not send chunk %u of %u (%s)",
                  j->w->path, f->chunk_of[i] + 1, j->m.count,
                  f->witnessed ? "get_chunks refused its witness, the file's manifest, or the "
                                 "repository lacks the chunk"
                               : "the repository lacks it");
    lane_fail(f, CN_E_NOT_FOUND, &le);
    return CN_E_NOT_FOUND;
}

/* Creates the parent directories of full (a path under s->dir). */
static void make_parents(const cn__ws_state_t *s, char *full)
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
static cn_err_t job_finish(cn__ws_state_t *s, cn__ws_job_t *j, int fd, cn_ws_error_t *err)
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
            return cn__ws_file_fail(err, "cannot create link", full, n < 0 ? EIO : errno);
        fd = -1;
    } else if (fd >= 0 && fstat(fd, &st) < 0) {
        return cn__ws_file_fail(err, "cannot stat", j->tmp, errno);
    } else if (rename(j->tmp, full) < 0) {
        int e = errno;
        unlink(j->tmp);
        return cn__ws_file_fail(err, "cannot rename into", full, e);
    }
    if (fd < 0 && lstat(full, &st) < 0)
        return cn__ws_file_fail(err, "cannot stat", full, errno);
    j->w->size = j->m.size;
    j->w->mtime_ns = cn__ws_mtime_ns(&st);
    return CN_OK;
}

/* Opens job k's temporary file for writing (the first opener creates it).
 * It lives beside its target, so the final rename stays in one directory
 * (a rename across directories takes the file system's rename lock);
 * scans skip the CN_WS_TMP_PREFIX names a crash may leave. */
static cn_err_t job_open(fetch_ctx_t *f, size_t k, int *fd, cn_ws_error_t *err)
{
    cn__ws_job_t *j = &f->jobs[k];
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
    return *fd < 0 ? cn__ws_file_fail(err, "cannot create", j->tmp, e) : CN_OK;
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
        return chunk_absent(f, i);
    size_t k = f->job_of[i];
    cn__ws_job_t *j = &f->jobs[k];
    cn_ws_error_t le;
    cn_err_t rc;
    if (l->fd < 0 || l->job != k) {
        lane_close(l);
        if ((rc = job_open(f, k, &l->fd, &le)))
            return lane_fail(f, rc, &le);
        l->job = k;
    }
    if (n) {
        cn_blake3_update(&l->h, p, n);
        if ((rc = cn_pwrite_full(l->fd, p, n, f->off_of[i] + l->pos)) < 0) {
            rc = cn__ws_file_fail(&le, "cannot write", j->tmp, (int)-rc);
            return lane_fail(f, rc, &le);
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
        rc = cn__ws_local(&le, CN_E_DIGEST_MISMATCH, "a fetched chunk does not match its id");
        lane_fail(f, rc, &le);
        return CN_E_DIGEST_MISMATCH;
    }
    bool done = __atomic_sub_fetch(&j->remaining, 1, __ATOMIC_ACQ_REL) == 0;
    if (done) {
        rc = job_finish(f->s, j, l->fd, &le);
        lane_close(l);
        if (rc)
            return lane_fail(f, rc, &le);
    }
    return CN_OK;
}

static void progress_cb(void *ctx, uint64_t bytes)
{
    cn__ws_progress_t *pg = ctx;
    if (!bytes)
        return; /* done 0 is how a transfer's start is told */
    pg->done += bytes;
    pg->o->progress(pg->o->progress_ctx, pg->what, pg->done, pg->total, false);
}

void cn__ws_progress_start(cn__ws_progress_t *pg, cn_scribe_client_t *cl, const cn_ws_opts_t *o,
                           const char *what, uint64_t total)
{
    *pg = (cn__ws_progress_t){ o, cl, what, total, 0 };
    if (!o->progress)
        return;
    o->progress(o->progress_ctx, what, 0, total, false);
    cn_scribe_client_set_progress(cl, progress_cb, pg);
}

void cn__ws_progress_end(cn__ws_progress_t *pg)
{
    if (!pg->o->progress)
        return;
    cn_scribe_client_set_progress(pg->cl, NULL, NULL);
    pg->o->progress(pg->o->progress_ctx, pg->what, pg->done, pg->total, true);
}

/* Fetches and checks the jobs' manifests, then lists every chunk they name
 * in file order in refs (f's maps filled alongside); empty files are
 * written at once.  *total is the number of chunks, *total_bytes their
 * bytes.  Allocates refs and f's maps, which the caller frees either way. */
static cn_err_t plan_chunks(cn_scribe_client_t *cl, fetch_ctx_t *f, size_t nj,
                            cn_scribe_client_ref_t **refsp, size_t *total, uint64_t *total_bytes,
                            cn_ws_error_t *err)
{
    cn__ws_job_t *jobs = f->jobs;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_ref_t *refs = malloc((nj ? nj : 1) * sizeof *refs);
    if (!refs)
        return cn__ws_file_fail(err, "out of memory fetching", f->s->dir, ENOMEM);
    for (size_t k = 0; k < nj; k++)
        refs[k] = (cn_scribe_client_ref_t){ CN_REPOS_MANIFEST, jobs[k].w->manifest };
    cn_err_t e =
        nj ? cn_scribe_client_get(cl, f->s->repo_id, refs, nj, manifest_sink, f, &serr) : CN_OK;
    free(refs);
    if (f->rc) { /* a manifest the server did not send: named */
        *err = f->err;
        return f->rc;
    }
    if (e < 0)
        return cn__ws_fail(err, "fetching manifests", e, &serr);
    *total = 0;
    *total_bytes = 0;
    for (size_t k = 0; k < nj; k++) {
        cn_digest_t got;
        cn_repos_object_id(CN_REPOS_MANIFEST, jobs[k].menc.data, jobs[k].menc.len, &got);
        if (memcmp(got.b, jobs[k].w->manifest.b, 32) != 0 ||
            cn_repos_manifest_parse(jobs[k].menc.data, jobs[k].menc.len, &jobs[k].m) < 0)
            return cn__ws_local(err, CN_E_DIGEST_MISMATCH,
                                "the manifest of %s does not match its id", jobs[k].w->path);
        *total += jobs[k].m.count;
        *total_bytes += jobs[k].m.size;
    }
    size_t n = *total ? *total : 1;
    *refsp = refs = malloc(n * sizeof *refs);
    f->job_of = malloc(n * sizeof *f->job_of);
    f->chunk_of = malloc(n * sizeof *f->chunk_of);
    f->off_of = malloc(n * sizeof *f->off_of);
    bool wit_ok = !f->witnessed || (f->wit = malloc(n * sizeof *f->wit)) != NULL;
    if (!refs || !f->job_of || !f->chunk_of || !f->off_of || !wit_ok)
        return cn__ws_file_fail(err, "out of memory fetching", f->s->dir, ENOMEM);
    size_t at = 0;
    for (size_t k = 0; k < nj; k++) {
        jobs[k].remaining = jobs[k].m.count;
        if (!jobs[k].m.count) { /* an empty file has no chunks */
            int fd;
            if ((e = job_open(f, k, &fd, err)) == CN_OK) {
                e = job_finish(f->s, &jobs[k], fd, err);
                close(fd);
            }
            if (e)
                return e;
            continue;
        }
        uint64_t off = 0;
        for (uint32_t c = 0; c < jobs[k].m.count; c++, at++) {
            cn_repos_chunk_ref_t ref;
            cn_repos_manifest_chunk(&jobs[k].m, c, &ref);
            refs[at] = (cn_scribe_client_ref_t){ CN_REPOS_CHUNK, ref.id };
            f->job_of[at] = k;
            f->chunk_of[at] = c;
            f->off_of[at] = off;
            if (f->witnessed)
                f->wit[at] = (cn_scribe_client_witness_t){ ref.id, jobs[k].w->manifest };
            off += ref.len;
        }
    }
    return CN_OK;
}

cn_err_t cn__ws_fetch_all(cn_scribe_client_t *cl, cn__ws_state_t *s, cn__ws_job_t *jobs, size_t nj,
                          uint64_t *bytes, const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    fetch_ctx_t *f = calloc(1, sizeof *f); /* holds an error message: not on the stack */
    if (!f)
        return cn__ws_file_fail(err, "out of memory fetching", s->dir, ENOMEM);
    f->s = s;
    f->jobs = jobs;
    f->pid = (int)getpid();
    f->witnessed = cn__scribe_client_anonymous(cl);
    pthread_mutex_init(&f->mu, NULL);
    for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++) {
        f->lanes[k].fd = -1;
        cn_blake3_init(&f->lanes[k].h);
    }
    cn_scribe_client_ref_t *refs = NULL;
    size_t total = 0;
    uint64_t total_bytes = 0;
    cn_err_t rc = plan_chunks(cl, f, nj, &refs, &total, &total_bytes, err);
    if (rc)
        goto out;
    cn__ws_progress_t pg;
    cn__ws_progress_start(&pg, cl, o, "fetching", total_bytes);
    cn_err_t e = !total         ? CN_OK
                 : f->witnessed ? cn__scribe_client_get_chunks_lanes(cl, s->repo_id, f->wit, total,
                                                                     chunk_sink, f, &serr)
                                : cn_scribe_client_get_lanes(cl, s->repo_id, refs, total,
                                                             chunk_sink, f, &serr);
    cn__ws_progress_end(&pg);
    if (f->rc) {
        rc = f->rc;
        *err = f->err;
    } else if (e < 0) {
        rc = cn__ws_fail(err, "fetching chunks", e, &serr);
    } else {
        /* one flush for the whole batch before the state names it */
        int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            syncfs(dfd);
            close(dfd);
        }
        for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++)
            *bytes += f->lanes[k].bytes;
    }
out:
    for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++)
        lane_close(&f->lanes[k]);
    for (size_t k = 0; k < nj; k++)
        if (jobs[k].created && jobs[k].remaining)
            unlink(jobs[k].tmp);
    free(refs);
    free(f->job_of);
    free(f->chunk_of);
    free(f->off_of);
    free(f->wit);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return rc;
}
