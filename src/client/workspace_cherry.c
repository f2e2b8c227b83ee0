/* Cherry-pick in a workspace (docs/branches.md, "Cherry-picks"): one change
 * of another branch applied to the workspace's branch and submitted as
 * opcode 33, so the new change records where it was picked from.
 *
 * The picked change is compared with its own parent: for each path it
 * names, the parent's state is the base and the change's state is theirs;
 * ours is the workspace (clean, at its branch head).  A path is applied when
 * ours still equals the base, skipped when ours already equals theirs, and
 * otherwise conflicts.  Any conflict stops the pick before a file is written
 * (local CN_E_CONFLICT naming the first path), so the workspace is never
 * left half-picked.  Applied files are fetched as sync fetches them
 * (workspace_fetch.c) but the state keeps its records, so the submit's scan
 * sees them as local changes, and a pick the server rejects puts them back
 * from those records (the target head's versions).
 *
 * The applied paths are named in DIR/.cairn/pick (written atomically before
 * the first file changes, removed once the pick is accepted or undone), so
 * a restore that failed (the connection lost after the rejection, say) or a
 * killed pick is finished by cn_ws_cherry_pick_abort or by the next pick:
 * both first settle a submit whose reply was lost (an accepted pick is
 * never undone). */
#include "workspace_int.h"
#include "cairn/scribe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The sorted, distinct paths the picked change names. */
typedef struct pick_paths {
    char **v;
    size_t n, cap;
} pick_paths_t;

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_path(void *ctx, const char *path)
{
    pick_paths_t *pp = ctx;
    if (pp->n == pp->cap) {
        size_t cap = pp->cap ? pp->cap * 2 : 64;
        char **v = realloc(pp->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        pp->v = v;
        pp->cap = cap;
    }
    if (!(pp->v[pp->n] = strdup(path)))
        return -ENOMEM;
    pp->n++;
    return 0;
}

static void paths_free(pick_paths_t *pp)
{
    for (size_t i = 0; i < pp->n; i++)
        free(pp->v[i]);
    free(pp->v);
}

/* Sorts pp and drops repeats (a path may come more than once across pages). */
static void paths_unique(pick_paths_t *pp)
{
    size_t k = 0;
    qsort(pp->v, pp->n, sizeof *pp->v, str_cmp);
    for (size_t i = 0; i < pp->n; i++) {
        if (k && strcmp(pp->v[k - 1], pp->v[i]) == 0)
            free(pp->v[i]);
        else
            pp->v[k++] = pp->v[i];
    }
    pp->n = k;
}

/* Whether two states hold the same file (or both none). */
static bool same(const cn_scribe_client_fstate_t *a, const cn_scribe_client_fstate_t *b)
{
    if (!a->live || !b->live)
        return a->live == b->live;
    return a->mode == b->mode && memcmp(a->manifest.b, b->manifest.b, CN_DIGEST_LEN) == 0;
}

/* The workspace's own state of path: its record, which a clean workspace at
 * its branch head has on disk. */
static cn_scribe_client_fstate_t ours_of(cn__ws_state_t *s, const char *path)
{
    cn_scribe_client_fstate_t o;
    memset(&o, 0, sizeof o);
    cn__ws_file_t *w = cn__ws_state_find(s, path, s->n);
    if (w) {
        o.live = true;
        o.manifest = w->manifest;
        o.mode = w->mode;
        o.size = w->size;
    }
    return o;
}

/* What the pick asks of the server before it writes: the source branch, the
 * change's qualification and parent, its message (for the default). */
typedef struct pick_plan {
    char name[CN_WS_BRANCH_NAME_MAX + 1];
    uint64_t change;
    cn_scribe_client_branch_t source;
    cn_scribe_client_pick_info_t info;
    char *message; /* the picked change's */
    pick_paths_t paths;
    cn_scribe_client_fstate_t *base, *theirs;
} pick_plan_t;

static void plan_free(pick_plan_t *p)
{
    free(p->message);
    paths_free(&p->paths);
    free(p->base);
    free(p->theirs);
}

static int message_of(void *ctx, const cn_scribe_client_logrow_t *row)
{
    pick_plan_t *p = ctx;
    if (row->change > p->change)
        return 0;
    if (row->change == p->change)
        p->message = strdup(row->message);
    return 1;
}

static cn_err_t plan_pick(cn_scribe_client_t *cl, cn__ws_state_t *s, pick_plan_t *p,
                          cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_branch_info(cl, s->repo_id, NULL, p->name, &p->source, &serr);
    if (e == CN_OK)
        e = cn_scribe_client_pick_info(cl, s->repo_id, s->branch, p->source.id, p->change, &p->info,
                                       &serr);
    if (e < 0)
        return cn__ws_fail(err, "cherry-pick", e, &serr);
    if (p->info.already_applied) {
        cn__ws_server(err, CN_E_CONFLICT, "change %" PRIu64 " of %s is already on %s", p->change,
                      p->name, s->branch_name);
        err->code = CN_SCRIBE_E_ALREADY_APPLIED;
        return CN_E_CONFLICT;
    }
    if ((e = cn_scribe_client_log(cl, s->repo_id, p->source.id, NULL, 0, message_of, p, &serr)) < 0)
        return cn__ws_fail(err, "log", e, &serr);
    /* the change's own paths: its chain down to its first parent */
    if ((e = cn_scribe_client_merge_chains(cl, s->repo_id, p->change, p->info.parent, add_path,
                                           &p->paths, &serr)) < 0)
        return cn__ws_fail(err, "the change's paths", e, &serr);
    paths_unique(&p->paths);
    size_t n = p->paths.n ? p->paths.n : 1;
    p->base = calloc(n, sizeof *p->base);
    p->theirs = calloc(n, sizeof *p->theirs);
    if (!p->base || !p->theirs)
        return cn__ws_local(err, -ENOMEM, "out of memory for %zu paths", p->paths.n);
    const char *const *v = (const char *const *)p->paths.v;
    if ((e = cn_scribe_client_merge_states(cl, s->repo_id, p->info.parent_branch, p->info.parent, v,
                                           p->paths.n, p->base, &serr)) < 0 ||
        (e = cn_scribe_client_merge_states(cl, s->repo_id, p->source.id, p->change, v, p->paths.n,
                                           p->theirs, &serr)) < 0)
        return cn__ws_fail(err, "the change's files", e, &serr);
    return CN_OK;
}

/* Judges every path (ours against base and theirs); res->conflicts counts
 * those changed on both sides, *napply those to write or remove. */
static cn_err_t judge_paths(cn__ws_state_t *s, const pick_plan_t *p, bool *apply, size_t *napply,
                            cn_ws_pick_result_t *res, cn_ws_error_t *err)
{
    *napply = 0;
    for (size_t i = 0; i < p->paths.n; i++) {
        const char *path = p->paths.v[i];
        cn_scribe_client_fstate_t ours = ours_of(s, path);
        apply[i] = !same(&ours, &p->theirs[i]) && same(&ours, &p->base[i]);
        if (apply[i] && !cn__ws_in_scope(s, path))
            return cn__ws_local(err, CN_E_INVALID,
                                "%s is outside the workspace's paths: pick in a full workspace",
                                path);
        if (!same(&ours, &p->theirs[i]) && !same(&ours, &p->base[i]) && !res->conflicts++)
            snprintf(res->conflict, sizeof res->conflict, "%s", path);
        *napply += apply[i];
    }
    if (res->conflicts)
        return cn__ws_local(err, CN_E_CONFLICT,
                            "%zu path%s changed on both sides (first: %s); nothing was applied",
                            res->conflicts, res->conflicts == 1 ? "" : "s", res->conflict);
    return CN_OK;
}

/* Writes theirs of every applied path into the workspace (fetched, or
 * removed), leaving the state's records as they were. */
static cn_err_t apply_paths(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            const pick_plan_t *p, const bool *apply, size_t napply,
                            cn_ws_pick_result_t *res, cn_ws_error_t *err)
{
    cn__ws_file_t *tmp = calloc(napply ? napply : 1, sizeof *tmp);
    cn__ws_job_t *jobs = calloc(napply ? napply : 1, sizeof *jobs);
    cn_err_t rc = tmp && jobs ? CN_OK : cn__ws_local(err, -ENOMEM, "out of memory");
    size_t nj = 0;
    char full[4300];
    for (size_t i = 0; rc == CN_OK && i < p->paths.n; i++) {
        if (!apply[i])
            continue;
        res->applied++;
        if (p->theirs[i].live) {
            tmp[nj] = (cn__ws_file_t){ .path = p->paths.v[i],
                                       .mode = p->theirs[i].mode,
                                       .manifest = p->theirs[i].manifest };
            jobs[nj].w = &tmp[nj];
            nj++;
            continue;
        }
        snprintf(full, sizeof full, "%s/%s", s->dir, p->paths.v[i]);
        if (unlink(full) < 0 && errno != ENOENT)
            rc = cn__ws_file_fail(err, "remove", full, errno);
    }
    uint64_t bytes = 0;
    if (rc == CN_OK && nj)
        rc = cn__ws_fetch_all(cl, s, jobs, nj, &bytes, o, err);
    for (size_t k = 0; jobs && k < nj; k++)
        cn_buf_free(&jobs[k].menc);
    free(jobs);
    free(tmp);
    return rc;
}

/* ---- the undo record, DIR/.cairn/pick --------------------------------------------------- */
static void undo_file(const char *dir, char *out, size_t cap, bool tmp)
{
    snprintf(out, cap, "%s/.cairn/pick%s", dir, tmp ? ".tmp" : "");
}

/* Writes the undo record naming paths[0..n) (temporary file, fsync,
 * rename, directory fsync). */
static cn_err_t undo_save(const char *dir, const char *const *paths, size_t n, cn_ws_error_t *err)
{
    char tmp[4300], path[4300], cdir[4200];
    undo_file(dir, tmp, sizeof tmp, true);
    undo_file(dir, path, sizeof path, false);
    snprintf(cdir, sizeof cdir, "%s/.cairn", dir);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return cn__ws_file_fail(err, "cannot write", tmp, errno);
    fputs("cairn-pick-undo 1\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "p %s\n", paths[i]); /* canonical paths hold no newline */
    return cn__ws_file_publish(f, true, tmp, path, cdir, err);
}

/* Reads the undo record into pp (empty when there is none: *found false). */
static cn_err_t undo_load(const char *dir, pick_paths_t *pp, bool *found, cn_ws_error_t *err)
{
    char path[4300];
    undo_file(dir, path, sizeof path, false);
    *found = false;
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? CN_OK : cn__ws_file_fail(err, "cannot read", path, errno);
    *found = true;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    cn_err_t rc = CN_OK;
    while (rc == CN_OK && (len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = 0;
        if (!strncmp(line, "p ", 2) && add_path(pp, line + 2) < 0)
            rc = cn__ws_file_fail(err, "out of memory reading", path, ENOMEM);
        else if (strncmp(line, "p ", 2) && strcmp(line, "cairn-pick-undo 1"))
            rc = cn__ws_local(err, CN_E_CORRUPT, "%s is damaged", path);
    }
    free(line);
    fclose(f);
    return rc;
}

static cn_err_t undo_remove(const char *dir, cn_ws_error_t *err)
{
    char path[4300];
    undo_file(dir, path, sizeof path, false);
    return unlink(path) < 0 && errno != ENOENT ? cn__ws_file_fail(err, "cannot remove", path, errno)
                                               : CN_OK;
}

/* Finishes what an earlier pick left (the undo record): settles a lost
 * submit, and unless that pick was accepted puts its paths back.  *found
 * false when there was nothing to finish. */
static cn_err_t undo_resume(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            bool *found, cn_ws_error_t *err)
{
    pick_paths_t pp = { 0 };
    bool settled = false;
    uint64_t change = 0;
    cn_err_t rc = undo_load(s->dir, &pp, found, err);
    if (rc == CN_OK && *found)
        rc = cn__ws_settle_pending(cl, s, &settled, &change, err);
    cn__ws_state_sort(s);
    if (rc == CN_OK && *found && !settled)
        rc = cn__ws_restore_paths(cl, s, (const char *const *)pp.v, pp.n, o, err);
    if (rc == CN_OK && *found)
        rc = undo_remove(s->dir, err);
    for (size_t i = 0; i < pp.n; i++)
        free(pp.v[i]);
    free(pp.v);
    return rc;
}

/* After the server rejected the pick (a not-local CN_E_CONFLICT with no
 * submit pending: base_conflict, already_applied), puts every applied path
 * back to the target head's version the state still records, so the
 * workspace is as it was before the pick.  Returns the rejection, or the
 * failure that kept the workspace from being restored. */
static cn_err_t undo_pick(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          const pick_plan_t *p, const bool *apply, cn_ws_error_t *err)
{
    const char **paths = calloc(p->paths.n + 1, sizeof *paths);
    size_t n = 0;
    if (!paths)
        return cn__ws_local(err, -ENOMEM, "out of memory: the picked files stay in %s", s->dir);
    for (size_t i = 0; i < p->paths.n; i++)
        if (apply[i])
            paths[n++] = p->paths.v[i];
    cn_ws_error_t rejection = *err;
    cn_err_t rc = cn__ws_restore_paths(cl, s, paths, n, o, err);
    free(paths);
    if (rc == CN_OK)
        rc = undo_remove(s->dir, err);
    if (rc < 0) {
        /* the rejection first, then what is left to do; the undo record
         * stays for --abort or the next pick */
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        *err = rejection;
        size_t used = strlen(err->message);
        snprintf(err->message + used, sizeof err->message - used,
                 "; the picked files could not be put back (%s): run `cairn repo cherry-pick "
                 "--abort` to restore the workspace",
                 why);
        return CN_E_CONFLICT;
    }
    *err = rejection;
    return CN_E_CONFLICT;
}

/* The undo record of the paths the pick is about to apply. */
static cn_err_t save_applied(const cn__ws_state_t *s, const pick_plan_t *p, const bool *apply,
                             cn_ws_error_t *err)
{
    const char **paths = calloc(p->paths.n + 1, sizeof *paths);
    size_t n = 0;
    if (!paths)
        return cn__ws_local(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < p->paths.n; i++)
        if (apply[i])
            paths[n++] = p->paths.v[i];
    cn_err_t rc = undo_save(s->dir, paths, n, err);
    free(paths);
    return rc;
}

/* The picked change's message and its origin (malloc'd; NULL without memory). */
static char *default_message(const pick_plan_t *p)
{
    const char *m = p->message ? p->message : "";
    size_t n = strlen(m) + strlen(p->name) + 64;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s(cherry picked from %s@%" PRIu64 ")", m, *m ? "\n\n" : "", p->name,
                 p->change);
    return out;
}

typedef struct pick_args {
    const char *ref, *message;
    cn_ws_pick_result_t *res;
} pick_args_t;

static cn_err_t pick_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    pick_args_t *a = arg;
    pick_plan_t p;
    memset(&p, 0, sizeof p);
    bool has = false;
    bool *apply = NULL;
    size_t napply = 0;
    char *msg = NULL;
    cn_err_t rc = cn_ws_branch_ref_parse(a->ref, p.name, &has, &p.change);
    if (rc < 0 || !has)
        return cn__ws_local(err, CN_E_INVALID, "'%s' is not BRANCH@CHANGE", a->ref);
    bool resumed = false;
    if ((rc = undo_resume(cl, s, o, &resumed, err)) ||
        (rc = cn__ws_check_clean(cl, s, o, "a cherry-pick", &a->res->settled,
                                 &a->res->settled_change, err)) ||
        (rc = plan_pick(cl, s, &p, err)))
        goto out;
    if (!(apply = calloc(p.paths.n ? p.paths.n : 1, sizeof *apply))) {
        rc = cn__ws_local(err, -ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = judge_paths(s, &p, apply, &napply, a->res, err)) ||
        (rc = save_applied(s, &p, apply, err)) ||
        (rc = apply_paths(cl, s, o, &p, apply, napply, a->res, err)))
        goto out;
    if (!a->message && !(msg = default_message(&p))) {
        rc = cn__ws_local(err, -ENOMEM, "out of memory");
        goto out;
    }
    cn__ws_merge_submit_t ms = { .pick = true, .source_head = p.change };
    memcpy(ms.source, p.source.id, 16);
    cn_ws_submit_result_t sr;
    memset(&sr, 0, sizeof sr);
    rc = cn__ws_submit_open(cl, s, o, a->message ? a->message : msg, &ms, &sr, err);
    a->res->change = sr.change;
    if (rc == CN_E_CONFLICT && !err->local && !s->has_pending)
        rc = undo_pick(cl, s, o, &p, apply, err);
    else if (rc == CN_OK)
        rc = undo_remove(s->dir, err); /* accepted: nothing to undo */
out:
    free(msg);
    free(apply);
    plan_free(&p);
    return rc;
}

cn_err_t cn_ws_cherry_pick(const char *dir, const char *ref, const char *message,
                           const cn_ws_opts_t *opts, cn_ws_pick_result_t *res, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    cn_ws_pick_result_t rscratch;
    err = cn__ws_begin(err, &scratch);
    res = res ? res : &rscratch;
    memset(res, 0, sizeof *res);
    pick_args_t a = { ref, message, res };
    return cn__ws_run(dir, cn__ws_opts(opts), pick_open, &a, err);
}

static cn_err_t pick_abort_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                                void *arg, cn_ws_error_t *err)
{
    (void)arg;
    bool found = false;
    CN_TRY(undo_resume(cl, s, o, &found, err));
    return found ? CN_OK : cn__ws_local(err, -ENOENT, "no cherry-pick to undo in %s", s->dir);
}

cn_err_t cn_ws_cherry_pick_abort(const char *dir, const cn_ws_opts_t *opts, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    return cn__ws_run(dir, cn__ws_opts(opts), pick_abort_open, NULL, err);
}

bool cn_ws_cherry_pick_pending(const char *dir)
{
    char path[4300];
    undo_file(dir, path, sizeof path, false);
    return access(path, F_OK) == 0;
}
