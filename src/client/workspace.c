/* The workspace verbs (include/cairn/workspace.h) other than submit
 * (workspace_submit.c) and the branch verbs (workspace_branch.c): clone,
 * sync, status, log, describe, and the steps
 * they share -- recording a failure, opening a workspace and connecting to
 * its endpoint, settling a submit whose reply was lost.
 *
 * `clone` and `sync` fetch the files that differ from the snapshot, every
 * chunk checked against its id (workspace_fetch.c), and remove those it no
 * longer holds; a file edited since the last sync is never overwritten.
 * The state is saved only after the files it names are durable. */
#include "workspace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors -------------------------------------------------------------------------------- */
cn_err_t cn__ws_fail(cn_ws_error_t *err, const char *what, cn_err_t e, const cn_scribe_cerr_t *serr)
{
    err->err = e;
    err->local = false;
    err->code = serr ? serr->code : 0;
    snprintf(err->message, sizeof err->message, "%s: %s", what,
             serr && serr->message[0] ? serr->message : cn_strerror(e));
    return e;
}

static cn_err_t vrecord(cn_ws_error_t *err, cn_err_t e, bool local, const char *fmt, va_list ap)
{
    err->err = e;
    err->local = local;
    err->code = 0;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    return e;
}

cn_err_t cn__ws_local(cn_ws_error_t *err, cn_err_t e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrecord(err, e, true, fmt, ap);
    va_end(ap);
    return e;
}

cn_err_t cn__ws_server(cn_ws_error_t *err, cn_err_t e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrecord(err, e, false, fmt, ap);
    va_end(ap);
    return e;
}

cn_err_t cn__ws_file_fail(cn_ws_error_t *err, const char *what, const char *path, int errnum)
{
    return cn__ws_local(err, -errnum, "%s %s: %s", what, path, strerror(errnum));
}

cn_ws_error_t *cn__ws_begin(cn_ws_error_t *err, cn_ws_error_t *scratch)
{
    if (!err)
        err = scratch;
    err->err = CN_OK;
    err->local = false;
    err->code = 0;
    err->message[0] = 0;
    return err;
}

const cn_ws_opts_t *cn__ws_opts(const cn_ws_opts_t *opts)
{
    static const cn_ws_opts_t defaults;
    return opts ? opts : &defaults;
}

/* ---- opening ------------------------------------------------------------------------------- */
cn_err_t cn__ws_connect(const char *endpoint, const cn_ws_opts_t *o, cn_scribe_client_t **cl,
                        cn_ws_error_t *err)
{
    cn_scribe_client_cfg_t cfg = { endpoint, 1, o->lz4, 0, 0, o->data_conns, 0 };
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_new(&cfg, cl, &serr);
    return e < 0 ? cn__ws_fail(err, "connect", e, &serr) : CN_OK;
}

cn_err_t cn__ws_run(const char *dir, const cn_ws_opts_t *o, cn__ws_verb_fn fn, void *arg,
                    cn_ws_error_t *err)
{
    cn_scribe_client_t *cl = NULL;
    cn__ws_state_t *s = calloc(1, sizeof *s); /* over 4 KiB: not on the stack */
    cn_err_t rc = !s ? cn__ws_file_fail(err, "out of memory for", dir, ENOMEM)
                     : cn__ws_state_load(dir, s, err);
    if (rc == CN_OK)
        rc = cn__ws_connect(o->endpoint ? o->endpoint : s->endpoint, o, &cl, err);
    if (rc == CN_OK)
        rc = cn__ws_contact(cl, s, o, err);
    if (rc == CN_OK)
        rc = fn(cl, s, o, arg, err);
    if (s)
        cn__ws_state_free(s);
    free(s);
    cn_scribe_client_free(cl);
    return rc;
}

bool cn_ws_exists(const char *dir)
{
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.cairn/state", dir);
    return access(probe, F_OK) == 0;
}

/* ---- the tree of a change ------------------------------------------------------------------- */
static int tree_row(void *ctx, const cn_scribe_client_entry_t *e)
{
    cn__ws_state_t *next = ctx;
    cn__ws_file_t *w = cn__ws_state_add(next, e->path);
    if (!w)
        return -ENOMEM;
    w->manifest = e->manifest;
    w->mode = e->mode;
    w->size = e->size;
    w->mtime_ns = -1; /* not on disk yet */
    return 0;
}

/* The files of change `target` within s's prefixes, into next (zeroed by
 * the caller, sorted by path on return; the caller frees it either way). */
static cn_err_t read_tree(cn_scribe_client_t *cl, const cn__ws_state_t *s, uint64_t target,
                          cn__ws_state_t *next, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = CN_OK;
    for (size_t p = 0; p < (s->npaths ? s->npaths : 1) && e >= 0; p++)
        e = cn_scribe_client_tree(cl, s->repo_id, s->branch, target, s->npaths ? s->paths[p] : "",
                                  tree_row, next, NULL, NULL, &serr);
    if (e < 0)
        return cn__ws_fail(err, "reading the tree", e, &serr);
    cn__ws_state_sort(next);
    return CN_OK;
}

/* read_tree's verified form (sync): every page proved against the roots v
 * authenticated (workspace_verify.c); nothing unverified is read. */
static cn_err_t read_tree_verified(cn_scribe_client_t *cl, const cn__ws_state_t *s, uint64_t target,
                                   const cn__ws_verified_t *v, cn__ws_state_t *next,
                                   cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = CN_OK;
    for (size_t p = 0; p < (s->npaths ? s->npaths : 1) && e >= 0; p++)
        e = cn_scribe_client_tree_verified(cl, s->repo_id, s->branch, target,
                                           s->npaths ? s->paths[p] : "", &v->content, &v->revision,
                                           tree_row, next, NULL, &serr);
    if ((e == CN_E_DIGEST_MISMATCH || e == CN_E_INVALID) && !serr.code) /* not an error frame */
        return cn__ws_server(err, CN_E_DIGEST_MISMATCH,
                             "the tree of change %" PRIu64 " failed its proof against the "
                             "authenticated commit (%s); nothing was applied",
                             target, serr.message[0] ? serr.message : "a page");
    if (e < 0)
        return cn__ws_fail(err, "reading the tree (verified)", e, &serr);
    cn__ws_state_sort(next);
    return CN_OK;
}

/* s's files become next's (taken over), at change. */
static void adopt_files(cn__ws_state_t *s, cn__ws_state_t *next, uint64_t change)
{
    cn__ws_files_free(s);
    s->files = next->files;
    s->n = next->n;
    s->cap = next->cap;
    s->change = change;
    next->files = NULL;
    next->n = next->cap = 0;
}

cn_err_t cn__ws_settle_pending(cn_scribe_client_t *cl, cn__ws_state_t *s, bool *settled,
                               uint64_t *change, cn_ws_error_t *err)
{
    if (!s->has_pending)
        return CN_OK;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    bool known = false;
    cn_scribe_client_outcome_t out;
    cn_err_t e = cn_scribe_client_outcome(cl, s->repo_id, s->pending, &known, &out, &serr);
    if (e < 0)
        return cn__ws_fail(err, "resolving the previous submit", e, &serr);
    s->has_pending = false;
    if (!known || !out.accepted)
        return cn__ws_state_save(s, err);
    /* It was accepted: the workspace is at that change; files are
     * re-recorded from its tree (their mtimes force one rehash). */
    *settled = true;
    *change = out.change;
    cn__ws_state_t next;
    memset(&next, 0, sizeof next);
    e = read_tree(cl, s, out.change, &next, err);
    if (e == CN_OK) {
        adopt_files(s, &next, out.change);
        e = cn__ws_state_save(s, err);
    }
    cn__ws_state_free(&next);
    return e;
}

/* ---- clone and sync --------------------------------------------------------------------------- */
/* Which files of next (the target change's, sorted) to fetch into jobs
 * (*nj of them): those whose manifest or mode differ from s's record or
 * that are missing on disk.  A file on disk that differs from its record
 * (or has none) is a local CN_E_CONFLICT. */
static cn_err_t plan_fetch(cn__ws_state_t *s, cn__ws_state_t *next, cn__ws_job_t *jobs, size_t *nj,
                           cn_ws_error_t *err)
{
    *nj = 0;
    for (size_t i = 0; i < next->n; i++) {
        cn__ws_file_t *w = &next->files[i], *old = cn__ws_state_find(s, w->path, s->n);
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, w->path);
        struct stat st;
        bool exists = lstat(full, &st) == 0;
        if (old && exists && !memcmp(old->manifest.b, w->manifest.b, 32) && old->mode == w->mode) {
            w->mtime_ns = old->mtime_ns;
            continue;
        }
        if (exists &&
            (!old || old->mtime_ns != cn__ws_mtime_ns(&st) || old->size != (uint64_t)st.st_size))
            return cn__ws_local(err, CN_E_CONFLICT,
                                "%s has local changes; submit or remove them first", w->path);
        jobs[(*nj)++].w = w;
    }
    return CN_OK;
}

cn_err_t cn__ws_sync_to(cn_scribe_client_t *cl, cn__ws_state_t *s, uint64_t target,
                        const cn_ws_opts_t *o, cn_ws_sync_result_t *res, cn_ws_error_t *err)
{
    cn__ws_state_t next;
    memset(&next, 0, sizeof next);
    cn__ws_job_t *jobs = NULL;
    size_t nj = 0;
    cn__ws_verified_t v;
    cn_err_t rc = cn__ws_verify(cl, s, target, &v, err);
    if (rc == CN_OK)
        rc = read_tree_verified(cl, s, target, &v, &next, err);
    if (rc)
        goto out;
    if (!(jobs = calloc(next.n ? next.n : 1, sizeof *jobs))) {
        rc = cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
        goto out;
    }
    if ((rc = plan_fetch(s, &next, jobs, &nj, err)) ||
        (rc = cn__ws_fetch_all(cl, s, jobs, nj, &res->bytes, o, err)))
        goto out;
    res->fetched = nj;
    for (size_t i = 0; i < s->n; i++) {
        if (cn__ws_state_find(&next, s->files[i].path, next.n))
            continue;
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, s->files[i].path);
        struct stat st;
        if (lstat(full, &st) == 0 && cn__ws_mtime_ns(&st) == s->files[i].mtime_ns)
            unlink(full);
        res->removed++;
    }
    adopt_files(s, &next, target);
    /* the anchor moves with the files it verified: one atomic state write */
    if (v.has_head && cn__ws_anchor_set(s, &v.head) < 0)
        rc = cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    if (rc == CN_OK && (rc = cn__ws_state_save(s, err)) == CN_OK) {
        res->change = target;
        res->first_contact = v.first_contact;
        res->anchor_change = v.head.change;
    }
    if (rc == CN_OK) /* read-only files (workspace_edit.c) */
        rc = cn__ws_mark(cl, s, NULL, 0, false, o, err);
out:
    for (size_t k = 0; jobs && k < nj; k++)
        cn_buf_free(&jobs[k].menc);
    free(jobs);
    cn__ws_state_free(&next);
    return rc;
}

/* Creates dir and dir/.cairn, which must not exist yet. */
static cn_err_t make_workspace_dir(const char *dir, cn_ws_error_t *err)
{
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/.cairn", dir);
    errno = 0;
    if (cn_mkdir_p(dir, 0755) < 0 || mkdir(cdir, 0700) < 0)
        return cn__ws_file_fail(err, "cannot create", errno == EEXIST ? cdir : dir,
                                errno ? errno : EEXIST);
    return CN_OK;
}

cn_err_t cn_ws_clone(const char *repo, const char *dir, const cn_ws_opts_t *opts,
                     cn_ws_sync_result_t *res, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    cn_ws_sync_result_t rscratch;
    const cn_ws_opts_t *o = cn__ws_opts(opts);
    err = cn__ws_begin(err, &scratch);
    res = res ? res : &rscratch;
    memset(res, 0, sizeof *res);
    const char *endpoint = o->endpoint ? o->endpoint : CN_SCRIBE_CLIENT_DEFAULT_ENDPOINT;
    cn_scribe_client_t *cl = NULL;
    cn__ws_state_t *s = calloc(1, sizeof *s);
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_repo_t r;
    cn_err_t rc = !s ? cn__ws_file_fail(err, "out of memory for", dir, ENOMEM)
                     : cn__ws_connect(endpoint, o, &cl, err);
    if (rc)
        goto out;
    uint64_t target = 0;
    if ((rc = cn_scribe_client_repo_info(cl, repo, &r, &serr)) < 0) {
        rc = cn__ws_fail(err, repo, rc, &serr);
        goto out;
    }
    memcpy(s->repo_id, r.id, 16);
    /* the branch is known before anything is created */
    if ((rc = cn__ws_clone_branch(cl, s, &r, o, &target, err)) ||
        (rc = make_workspace_dir(dir, err)))
        goto out;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->endpoint, sizeof s->endpoint, "%s", endpoint);
    snprintf(s->repo, sizeof s->repo, "%s", repo);
    memcpy(s->incarnation, r.incarnation, 16);
    cn_random_bytes(s->workspace, 16);
    for (size_t i = 0; i < o->npaths && rc == CN_OK; i++)
        rc = cn__ws_scope_add(s, o->paths[i], err);
    if (rc == CN_OK)
        rc = cn__ws_state_save(s, err);
    if (rc == CN_OK)
        rc = cn__ws_register(cl, s, o, err);
    if (rc == CN_OK)
        rc = cn__ws_sync_to(cl, s, target, o, res, err);
    if (rc == CN_OK)
        rc = cn__ws_mounts_apply(cl, s, o, res, err);
out:
    if (s)
        cn__ws_state_free(s);
    free(s);
    cn_scribe_client_free(cl);
    return rc;
}

/* Adds o's prefixes to s's (only for a sparse workspace); *widened when
 * one was new. */
static cn_err_t widen_scope(cn__ws_state_t *s, const cn_ws_opts_t *o, bool *widened,
                            cn_ws_error_t *err)
{
    *widened = false;
    if (o->npaths && !s->npaths)
        return cn__ws_local(err, CN_E_INVALID,
                            "%s syncs every path already (--path is for workspaces cloned "
                            "with --path)",
                            s->dir);
    for (size_t i = 0; i < o->npaths; i++) {
        size_t had = s->npaths;
        CN_TRY(cn__ws_scope_add(s, o->paths[i], err));
        *widened = *widened || s->npaths != had;
    }
    return CN_OK;
}

cn_err_t cn__ws_repo(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn_scribe_client_repo_t *r,
                     cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t rc = cn_scribe_client_repo_info(cl, s->repo, r, &serr);
    if (rc < 0)
        return cn__ws_fail(err, s->repo, rc, &serr);
    if (memcmp(r->incarnation, s->incarnation, 16) != 0)
        return cn__ws_server(err, CN_E_CONFLICT,
                             "the repository was restored (new "
                             "incarnation); clone it again");
    return CN_OK;
}

/* The sync once the workspace is open (arg: the result). */
static cn_err_t sync_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    cn_ws_sync_result_t *res = arg;
    cn_scribe_client_repo_t r;
    bool widened = false;
    uint64_t head = 0;
    char was[sizeof s->branch_name];
    memcpy(was, s->branch_name, sizeof was);
    cn_err_t rc;
    if ((rc = widen_scope(s, o, &widened, err)) ||
        (rc = cn__ws_settle_pending(cl, s, &res->settled, &res->settled_change, err)) ||
        (rc = cn__ws_repo(cl, s, &r, err)) || (rc = cn__ws_branch_head(cl, s, &r, &head, err)))
        return rc;
    if (!o->has_change && head == s->change && !widened) {
        /* the head is the anchor (or reaches it): a fork at the same change fails */
        cn__ws_verified_t v;
        if ((rc = cn__ws_verify(cl, s, head, &v, err)))
            return rc;
        res->up_to_date = true;
        res->change = s->change;
        res->first_contact = v.first_contact;
        res->anchor_change = v.head.change;
        bool moved = v.has_head &&
                     (v.first_contact || cn__ws_anchor_find(s, s->branch)->change != v.head.change);
        if (moved && cn__ws_anchor_set(s, &v.head) < 0)
            return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
        /* a branch renamed meanwhile: record its new name */
        if ((rc = moved || strcmp(was, s->branch_name) ? cn__ws_state_save(s, err) : CN_OK))
            return rc;
        return cn__ws_mark(cl, s, NULL, 0, false, o, err); /* a new policy on main */
    }
    return cn__ws_sync_to(cl, s, o->has_change ? o->change : head, o, res, err);
}

/* The sync, then the mounts at the change it reached. */
static cn_err_t sync_verb(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    uint64_t was = s->change;
    CN_TRY(sync_open(cl, s, o, arg, err));
    CN_TRY(cn__ws_mounts_apply(cl, s, o, arg, err));
    return cn__ws_mounts_prune(cl, s, was, o);
}

cn_err_t cn_ws_sync(const char *dir, const cn_ws_opts_t *opts, cn_ws_sync_result_t *res,
                    cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    cn_ws_sync_result_t rscratch;
    err = cn__ws_begin(err, &scratch);
    res = res ? res : &rscratch;
    memset(res, 0, sizeof *res);
    return cn__ws_run(dir, cn__ws_opts(opts), sync_verb, res, err);
}

/* ---- status ------------------------------------------------------------------------------------ */
/* The status a caller holds: the public part first, then the state its
 * entries' paths point into. */
typedef struct status_impl {
    cn_ws_status_t pub;
    cn__ws_state_t s;
    cn_ws_entry_t entries[];
} status_impl_t;

/* Lists s's differences (s sorted by path, scanned) into a new status. */
static cn_err_t status_collect(cn__ws_state_t *s, status_impl_t **out, cn_ws_error_t *err)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->files[i].on_disk || s->files[i].changed)
            n++;
    status_impl_t *st = malloc(sizeof *st + n * sizeof st->entries[0]);
    if (!st)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    st->s = *s; /* takes s's allocations over */
    memset(s, 0, sizeof *s);
    n = 0;
    for (size_t i = 0; i < st->s.n; i++) {
        const cn__ws_file_t *w = &st->s.files[i];
        char c = !w->on_disk ? 'D' : w->mtime_ns == -2 ? 'A' : w->changed ? 'M' : 0;
        const cn__ws_move_t *mv = c && st->s.nmoves ? cn__ws_move_live(&st->s, w->path) : NULL;
        if (mv && c == 'D')
            continue; /* listed at its destination */
        if (c)
            st->entries[n++] = (cn_ws_entry_t){ mv ? 'R' : c, w->path, mv ? mv->from : NULL };
    }
    st->pub = (cn_ws_status_t){ st->s.change, st->s.branch_name, n, st->entries };
    *out = st;
    return CN_OK;
}

cn_err_t cn_ws_status(const char *dir, const cn_ws_opts_t *opts, cn_ws_status_t **out,
                      cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    const cn_ws_opts_t *o = cn__ws_opts(opts);
    err = cn__ws_begin(err, &scratch);
    *out = NULL;
    cn__ws_scan_t sc = { 0 };
    status_impl_t *st = NULL;
    cn__ws_state_t *s = calloc(1, sizeof *s);
    if (!s)
        return cn__ws_file_fail(err, "out of memory for", dir, ENOMEM);
    cn_err_t rc = cn__ws_state_load(dir, s, err);
    if (rc == CN_OK)
        rc = cn__ws_diff(s, &sc, o, err);
    if (rc == CN_OK) {
        cn__ws_state_sort(s);
        rc = status_collect(s, &st, err);
    }
    if (rc == CN_OK)
        *out = &st->pub;
    cn__ws_scan_free(&sc);
    cn__ws_state_free(s);
    free(s);
    return rc;
}

void cn_ws_status_free(cn_ws_status_t *pub)
{
    if (!pub)
        return;
    status_impl_t *st = (status_impl_t *)pub; /* pub is its first member */
    cn__ws_state_free(&st->s);
    free(st);
}

/* ---- log and describe ---------------------------------------------------------------------------- */
typedef struct log_args {
    const char *path;
    uint32_t limit;
    cn_scribe_client_log_fn fn;
    void *ctx;
} log_args_t;

static cn_err_t log_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                         void *arg, cn_ws_error_t *err)
{
    (void)o;
    const log_args_t *a = arg;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t rc =
        cn_scribe_client_log(cl, s->repo_id, s->branch, a->path, a->limit, a->fn, a->ctx, &serr);
    return rc < 0 ? cn__ws_fail(err, "log", rc, &serr) : CN_OK;
}

cn_err_t cn_ws_log(const char *dir, const char *path, uint32_t limit, const cn_ws_opts_t *opts,
                   cn_scribe_client_log_fn fn, void *ctx, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    log_args_t a = { path, limit, fn, ctx };
    return cn__ws_run(dir, cn__ws_opts(opts), log_open, &a, err);
}

typedef struct describe_args {
    uint64_t change;
    const char *text;
    uint32_t revision;
} describe_args_t;

static cn_err_t describe_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                              void *arg, cn_ws_error_t *err)
{
    describe_args_t *a = arg;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    uint32_t rev = 0;
    cn_err_t rc = cn_scribe_client_note(cl, s->repo_id, a->change, &rev, NULL, 0, &serr);
    if (rc >= 0)
        rc = cn_scribe_client_describe(cl, s->repo_id, a->change, rev,
                                       o->author ? o->author : "cairn", a->text, &a->revision,
                                       &serr);
    return rc < 0 ? cn__ws_fail(err, "describe", rc, &serr) : CN_OK;
}

cn_err_t cn_ws_describe(const char *dir, uint64_t change, const char *text,
                        const cn_ws_opts_t *opts, uint32_t *revision, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    describe_args_t a = { change, text, 0 };
    cn_err_t rc = cn__ws_run(dir, cn__ws_opts(opts), describe_open, &a, err);
    if (rc == CN_OK && revision)
        *revision = a.revision;
    return rc;
}
