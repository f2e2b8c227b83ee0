/* cn_ws_merge, cn_ws_merge_continue, cn_ws_merge_abort
 * (include/cairn/workspace.h): a source branch merged into a workspace.
 *
 * Invariants, in the order a merge runs:
 *   1. The plan (every path the source changed since the base, with its
 *      base, ours and theirs states and the decision) is durable in
 *      DIR/.cairn/merge/state, phase "applying", before a workspace file
 *      changes.
 *   2. Ours is copied to .cairn/merge/ours before a conflicting or
 *      line-merged file is overwritten; every file is replaced whole
 *      (temporary file, fsync, rename), so an interrupted apply is redone
 *      from the copies by --continue, or undone by --abort, which fetches
 *      the target snapshot's version of every merged path again.
 *   3. The workspace state (DIR/.cairn/state) keeps describing the target
 *      snapshot until the merge is accepted: the merge result is the
 *      workspace's local changes, submitted as opcode 24 with KEEP for the
 *      source's paths the result leaves as ours; a lost reply is settled
 *      through operation_outcome like any submit's.
 *   4. The merge state is removed only after the workspace state records
 *      the accepted change.
 *   5. --continue and --abort remove the temporary files a killed fetch or
 *      apply left (this client's own names, of writers no longer running),
 *      and never any other file. */
#include "workspace_merge.h"
#include "merge3.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool same(const cn_ws_merge_side_t *a, const cn_ws_merge_side_t *b)
{
    return a->live == b->live &&
           (!a->live || (a->mode == b->mode && !memcmp(a->manifest.b, b->manifest.b, 32)));
}

static int add_path(void *ctx, const char *path)
{
    cn_ws_merge_t *m = ctx;
    return cn__ws_merge_add(m, path) ? 0 : -ENOMEM;
}

/* The paths of m as one array (borrowed strings; the caller frees the
 * array), or NULL with a local -ENOMEM recorded. */
static const char **path_names(const cn__ws_state_t *s, const cn_ws_merge_t *m, cn_ws_error_t *err)
{
    const char **names = malloc((m->n + 1) * sizeof *names);
    if (!names) {
        cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
        return NULL;
    }
    for (size_t i = 0; i < m->n; i++)
        names[i] = m->paths[i].path;
    return names;
}

static int path_cmp(const void *a, const void *b)
{
    return strcmp(((const cn_ws_merge_path_t *)a)->path, ((const cn_ws_merge_path_t *)b)->path);
}

/* Sorts m's paths and drops repeats (a path named on several commits). */
static void unique_paths(cn_ws_merge_t *m)
{
    if (!m->n)
        return;
    qsort(m->paths, m->n, sizeof *m->paths, path_cmp);
    size_t u = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (u && !strcmp(m->paths[u - 1].path, m->paths[i].path)) {
            free(m->paths[i].path);
            continue;
        }
        m->paths[u++] = m->paths[i];
    }
    m->n = u;
}

static void side_from(const cn_scribe_client_fstate_t *f, cn_ws_merge_side_t *s)
{
    memset(s, 0, sizeof *s);
    s->live = f->live;
    s->change = f->change;
    if (f->live)
        s->size = f->size, s->mode = f->mode, s->manifest = f->manifest;
}

/* The three states of every path: which = 0 base, 1 ours, 2 theirs. */
static cn_err_t read_states(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn_ws_merge_t *m,
                            const char **names, cn_scribe_client_fstate_t *fs, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    const uint8_t *br[3] = { m->base_branch, s->branch, m->source };
    const uint64_t rev[3] = { m->base, m->target_head, m->source_head };
    for (int which = 0; which < 3; which++) {
        if (which == 0 && m->base == 0) {
            memset(fs, 0, m->n * sizeof *fs); /* the empty snapshot */
        } else {
            cn_err_t e = cn_scribe_client_merge_states(cl, s->repo_id, br[which], rev[which], names,
                                                       m->n, fs, &serr);
            if (e < 0)
                return cn__ws_fail(err, "reading file states", e, &serr);
        }
        for (size_t i = 0; i < m->n; i++)
            side_from(&fs[i], which == 0   ? &m->paths[i].base
                              : which == 1 ? &m->paths[i].ours
                                           : &m->paths[i].theirs);
    }
    return CN_OK;
}

/* Paths the source added (live, no base file): several recorded base files
 * force a manual choice, one is lined up with it (MergeRead 4; renames
 * come only from lineage: workspace_merge_moves.c). */
static cn_err_t read_origins(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn_ws_merge_t *m,
                             const char **names, cn_ws_error_t *err)
{
    if (m->base == 0 || !m->n)
        return CN_OK;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_origin_t *og = calloc(m->n, sizeof *og);
    if (!og)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    cn_err_t e = cn_scribe_client_merge_origins(cl, s->repo_id, m->source, m->source_head,
                                                m->base_branch, m->base, names, m->n, og, &serr);
    for (size_t i = 0; e >= 0 && i < m->n; i++)
        if (og[i].kind == CN_SCRIBE_CLIENT_ORIGIN_SEVERAL && m->paths[i].theirs.live &&
            !same(&m->paths[i].theirs, &m->paths[i].ours))
            m->paths[i].state = CN_WS_MERGE_CONFLICT, m->paths[i].why = CN_WS_WHY_ORIGINS;
    size_t n = m->n; /* line_up adds paths */
    cn_err_t rc = e < 0 ? cn__ws_fail(err, "reading file origins", e, &serr)
                        : cn__ws_merge_line_up(cl, s, m, og, err);
    for (size_t i = 0; i < n; i++)
        free(og[i].base_path);
    free(og);
    return rc;
}

/* The decision for one path whose states are known (origins decided first). */
static void decide(cn_ws_merge_path_t *p)
{
    if (p->state) /* a conflict of origins or moves, or a path a move lined up */
        return;
    if (same(&p->theirs, &p->base) || same(&p->theirs, &p->ours))
        p->state = CN_WS_MERGE_KEPT;
    else if (same(&p->ours, &p->base))
        p->state = CN_WS_MERGE_THEIRS;
    else if (!p->ours.live || !p->theirs.live)
        p->state = CN_WS_MERGE_CONFLICT, p->why = CN_WS_WHY_DELETED;
    else if (p->ours.mode == CN_REPOS_MODE_SYMLINK || p->theirs.mode == CN_REPOS_MODE_SYMLINK ||
             p->ours.size > CN_MERGE3_TEXT_MAX || p->theirs.size > CN_MERGE3_TEXT_MAX ||
             p->base.size > CN_MERGE3_TEXT_MAX)
        p->state = CN_WS_MERGE_CONFLICT, p->why = CN_WS_WHY_BINARY;
    else
        p->state = CN_WS_MERGE_CONFLICT, p->why = CN_WS_WHY_LINES; /* tried at apply */
}

typedef struct author_find {
    uint64_t change;
    char *out;
} author_find_t;

static int author_row(void *ctx, const cn_scribe_client_logrow_t *r)
{
    author_find_t *a = ctx;
    if (r->change > a->change)
        return 0;
    if (r->change == a->change)
        snprintf(a->out, CN_WS_BRANCH_NAME_MAX + 1, "%s", r->author);
    return 1;
}

/* The author of each conflicting side's change, from its branch's log. */
static void read_authors(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn_ws_merge_t *m)
{
    cn_scribe_cerr_t serr;
    for (size_t i = 0; i < m->n; i++) {
        cn_ws_merge_path_t *p = &m->paths[i];
        if (p->state != CN_WS_MERGE_CONFLICT)
            continue;
        cn_ws_merge_side_t *sides[3] = { &p->base, &p->ours, &p->theirs };
        const uint8_t *br[3] = { m->base_branch, s->branch, m->source };
        for (int k = 0; k < 3; k++) {
            author_find_t a = { sides[k]->change, sides[k]->author };
            if (sides[k]->change)
                cn_scribe_client_log(cl, s->repo_id, br[k], p->path, 0, author_row, &a, &serr);
        }
    }
}

/* The whole plan: source head, base, changed paths, states, decisions. */
static cn_err_t plan(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *source,
                     cn_ws_merge_t *m, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_branch_t b;
    cn_err_t e = cn_scribe_client_branch_info(cl, s->repo_id, NULL, source, &b, &serr);
    if (e < 0)
        return cn__ws_fail(err, source, e, &serr);
    if (!memcmp(b.id, s->branch, 16))
        return cn__ws_local(err, CN_E_INVALID, "cannot merge %s into itself", source);
    memcpy(m->source, b.id, 16);
    snprintf(m->source_name, sizeof m->source_name, "%s", b.name);
    snprintf(m->target_name, sizeof m->target_name, "%s", s->branch_name);
    m->source_head = b.head;
    m->target_head = s->change;
    if ((e = cn_scribe_client_merge_base(cl, s->repo_id, s->branch, s->change, m->source,
                                         m->source_head, m->base_branch, &m->base, &serr)) < 0)
        return cn__ws_fail(err, "merge base", e, &serr);
    if ((e = cn_scribe_client_merge_chains(cl, s->repo_id, m->base, m->source_head, add_path, m,
                                           &serr)) < 0)
        return cn__ws_fail(err, "paths the source changed", e, &serr);
    unique_paths(m);
    for (size_t i = 0; i < m->n; i++)
        if (!cn__ws_in_scope(s, m->paths[i].path))
            return cn__ws_local(err, CN_E_INVALID,
                                "%s changed %s, outside this sparse workspace's prefixes", source,
                                m->paths[i].path);
    const char **names = path_names(s, m, err);
    cn_scribe_client_fstate_t *fs = calloc(m->n + 1, sizeof *fs);
    cn_err_t rc = !names ? err->err
                  : fs   ? CN_OK
                         : cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    if (rc == CN_OK && (rc = read_states(cl, s, m, names, fs, err)) == CN_OK &&
        (rc = read_origins(cl, s, m, names, err)) == CN_OK) {
        for (size_t i = 0; i < m->n; i++)
            decide(&m->paths[i]);
        read_authors(cl, s, m);
    }
    free(names);
    free(fs);
    return rc;
}

/* Submits the merge result (invariants 3-4): the workspace's local changes
 * plus KEEP for the rest of the source's paths, with the merge fields. */
static cn_err_t submit_merge(cn_scribe_client_t *cl, cn__ws_state_t *s, cn_ws_merge_t *m,
                             const char *message, const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    char dflt[2 * CN_WS_BRANCH_NAME_MAX + 32];
    snprintf(dflt, sizeof dflt, "Merge %s into %s", m->source_name, m->target_name);
    const char **keep = path_names(s, m, err);
    if (!keep)
        return err->err;
    cn__ws_merge_submit_t ms = {
        .keep = keep, .nkeep = m->n, .source_head = m->source_head, .base = m->base
    };
    memcpy(ms.source, m->source, 16);
    memcpy(ms.base_branch, m->base_branch, 16);
    cn_ws_submit_result_t res;
    memset(&res, 0, sizeof res);
    cn_err_t rc = cn__ws_submit_open(cl, s, o, message ? message : dflt, &ms, &res, err);
    free(keep);
    if (rc)
        return rc;
    m->submitted = true;
    m->change = res.change;
    return cn__ws_merge_remove(s->dir, err);
}

typedef struct merge_args {
    const char *source, *message;
    cn_ws_merge_t *m;
} merge_args_t;

static cn_err_t unresolved(const cn_ws_merge_t *m, cn_ws_error_t *err)
{
    return cn__ws_local(err, CN_E_CONFLICT, "merging %s: %zu unresolved path%s", m->source_name,
                        m->unresolved, m->unresolved == 1 ? "" : "s");
}

/* The workspace at its branch head, without local changes. */
cn_err_t cn__ws_check_clean(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            const char *before, bool *settled, uint64_t *settled_change,
                            cn_ws_error_t *err)
{
    cn_scribe_client_repo_t r;
    uint64_t head = 0;
    cn__ws_scan_t scan = { 0 };
    cn_err_t rc;
    if ((rc = cn__ws_settle_pending(cl, s, settled, settled_change, err)) ||
        (rc = cn__ws_repo(cl, s, &r, err)) || (rc = cn__ws_branch_head(cl, s, &r, &head, err)))
        return rc;
    if (head != s->change)
        return cn__ws_local(err, CN_E_CONFLICT,
                            "the workspace is at change %" PRIu64 ", %s's head is %" PRIu64
                            ": sync first",
                            s->change, s->branch_name, head);
    rc = cn__ws_diff(s, &scan, o, err);
    cn__ws_scan_free(&scan);
    for (size_t i = 0; rc == CN_OK && i < s->n; i++)
        if (!s->files[i].on_disk || s->files[i].changed)
            rc = cn__ws_local(err, CN_E_CONFLICT,
                              "%s has local changes: submit or revert them before %s",
                              s->files[i].path, before);
    cn__ws_state_sort(s);
    /* A scan only ever sets these: the submit's own scan starts afresh. */
    for (size_t i = 0; i < s->n; i++)
        s->files[i].on_disk = s->files[i].changed = false;
    return rc;
}

static cn_err_t merge_body(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                           merge_args_t *a, cn_ws_error_t *err)
{
    cn_ws_merge_t *m = a->m;
    cn_ws_merge_t *prior = NULL;
    CN_TRY(cn__ws_merge_load(s->dir, &prior, err));
    if (prior) {
        cn_ws_merge_free(prior);
        return cn__ws_local(err, CN_E_CONFLICT,
                            "a merge is in progress: merge --continue or merge --abort");
    }
    bool settled = false;
    uint64_t settled_change = 0;
    CN_TRY(cn__ws_check_clean(cl, s, o, "merging", &settled, &settled_change, err));
    CN_TRY(plan(cl, s, a->source, m, err));
    if (m->base == m->source_head)
        return CN_OK; /* already merged: nothing to do */
    m->applying = true;
    CN_TRY(cn__ws_merge_save(s->dir, m, err)); /* invariant 1 */
    CN_TRY(cn__ws_merge_apply(cl, s, m, o, err));
    if (m->unresolved)
        return unresolved(m, err);
    return submit_merge(cl, s, m, a->message, o, err);
}

static cn_err_t merge_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                           void *arg, cn_ws_error_t *err)
{
    merge_args_t *a = arg;
    cn_err_t rc = merge_body(cl, s, o, a, err);
    cn_scribe_client_bytes(cl, &a->m->bytes_sent, &a->m->bytes_received);
    return rc;
}

/* Runs fn on workspace dir with a; the merge it leaves in a->m goes to
 * *out (when out is non-NULL) or is freed. */
static cn_err_t run_merge_verb(const char *dir, const cn_ws_opts_t *opts, cn__ws_verb_fn fn,
                               merge_args_t *a, cn_ws_merge_t **out, cn_ws_error_t *err)
{
    cn_err_t rc = cn__ws_run(dir, cn__ws_opts(opts), fn, a, err);
    if (out)
        *out = a->m;
    else
        cn_ws_merge_free(a->m);
    return rc;
}

cn_err_t cn_ws_merge(const char *dir, const char *source, const char *message,
                     const cn_ws_opts_t *opts, cn_ws_merge_t **out, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    if (out)
        *out = NULL;
    merge_args_t a = { source, message, calloc(1, sizeof(cn_ws_merge_t)) };
    if (!a.m)
        return cn__ws_file_fail(err, "out of memory for", dir, ENOMEM);
    return run_merge_verb(dir, opts, merge_open, &a, out, err);
}

/* The merge's paths changed on the target since the plan (MergeRead 5)? */
static cn_err_t recheck(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_merge_t *m,
                        cn_ws_error_t *err)
{
    cn_scribe_client_repo_t r;
    uint64_t head = 0;
    CN_TRY(cn__ws_repo(cl, s, &r, err));
    CN_TRY(cn__ws_branch_head(cl, s, &r, &head, err));
    if (head == m->target_head || !m->n)
        return CN_OK;
    const char **names = path_names(s, m, err);
    if (!names)
        return err->err;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    bool same = false;
    cn_err_t e = cn_scribe_client_merge_unchanged(cl, s->repo_id, s->branch, m->target_head, head,
                                                  names, m->n, &same, &serr);
    free(names);
    if (e < 0)
        return cn__ws_fail(err, "re-checking the merged paths", e, &serr);
    return same ? CN_OK
                : cn__ws_server(err, CN_E_CONFLICT,
                                "%s changed merged paths since the merge began: merge --abort, "
                                "sync, and merge again",
                                s->branch_name);
}

/* ---- the temporary files a killed client leaves ------------------------------------------- */
/* Reads decimal digits at p: false when there are none; *end past them. */
static bool digits_at(const char *p, long *value, const char **end)
{
    char *e = NULL;
    errno = 0;
    *value = (*p >= '0' && *p <= '9') ? strtol(p, &e, 10) : -1;
    *end = e ? e : p;
    return *value >= 0 && errno == 0;
}

/* The process that wrote name, when name is one of this client's own
 * temporary names: CN_WS_TMP_PREFIX, then "<pid>-<job>" (a fetched file,
 * job_open in workspace_fetch.c) or "merge-<pid>" (a merged file,
 * workspace_merge_state.c).  0 for any other name, which is never touched. */
static long tmp_writer(const char *name)
{
    if (strncmp(name, CN_WS_TMP_PREFIX, sizeof CN_WS_TMP_PREFIX - 1) != 0)
        return 0;
    const char *p = name + sizeof CN_WS_TMP_PREFIX - 1, *end = NULL;
    long pid = 0, job = 0;
    if (!strncmp(p, "merge-", 6))
        return digits_at(p + 6, &pid, &end) && !*end ? pid : 0;
    if (!digits_at(p, &pid, &end) || *end != '-' || !digits_at(end + 1, &job, &end) || *end)
        return 0;
    return pid;
}

/* Removes the temporary files of dead writers in the directory open at dfd
 * (taken over and closed), whose path is path[0..len) (path has cap bytes).
 * A writer that is still running (another cairn in this workspace, or this
 * one) keeps its files: its rename is still to come. */
static cn_err_t sweep_dir(int dfd, char *path, size_t len, size_t cap, bool root,
                          cn_ws_error_t *err)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return cn__ws_file_fail(err, "cannot read", path, e);
    }
    struct dirent *de;
    cn_err_t rc = CN_OK;
    while (rc == CN_OK && (de = readdir(d))) {
        const char *name = de->d_name;
        size_t nl = strlen(name);
        if (!strcmp(name, ".") || !strcmp(name, "..") || (root && !strcmp(name, ".cairn")) ||
            len + 1 + nl >= cap)
            continue; /* a name too long to hold is none this client wrote */
        path[len] = '/';
        memcpy(path + len + 1, name, nl + 1);
        struct stat st;
        if (de->d_type == DT_DIR)
            st.st_mode = S_IFDIR;
        else if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            st.st_mode = 0; /* gone meanwhile */
        long pid = S_ISREG(st.st_mode) ? tmp_writer(name) : 0;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = sub < 0 ? cn__ws_file_fail(err, "cannot read", path, errno)
                         : sweep_dir(sub, path, len + 1 + nl, cap, false, err);
        } else if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
                   unlinkat(dirfd(d), name, 0) < 0 && errno != ENOENT) {
            rc = cn__ws_file_fail(err, "cannot remove", path, errno);
        }
        path[len] = 0;
    }
    closedir(d);
    return rc;
}

/* Removes what a killed fetch or apply left in the workspace (--abort and
 * --continue): only this client's temporary names, never .cairn. */
static cn_err_t sweep_tmp(const char *dir, cn_ws_error_t *err)
{
    char path[8600];
    size_t len = strlen(dir);
    if (len >= sizeof path)
        return cn__ws_file_fail(err, "cannot read", dir, ENAMETOOLONG);
    memcpy(path, dir, len + 1);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return cn__ws_file_fail(err, "cannot read", dir, errno);
    return sweep_dir(dfd, path, len, sizeof path, true, err);
}

static cn_err_t continue_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                              void *arg, cn_ws_error_t *err)
{
    merge_args_t *a = arg;
    cn_ws_merge_t *m = NULL;
    CN_TRY(cn__ws_merge_load(s->dir, &m, err));
    if (!m)
        return cn__ws_local(err, -ENOENT, "no merge in progress in %s", s->dir);
    cn_ws_merge_free(a->m);
    a->m = m;
    uint64_t change = 0;
    CN_TRY(sweep_tmp(s->dir, err));
    CN_TRY(cn__ws_settle_pending(cl, s, &m->settled, &change, err));
    if (s->change != m->target_head) {
        if (!m->settled)
            return cn__ws_local(err, CN_E_CONFLICT,
                                "the workspace moved off change %" PRIu64
                                " the merge began from: merge --abort",
                                m->target_head);
        m->submitted = true; /* the merge's lost reply: it was accepted */
        m->change = change;
        return cn__ws_merge_remove(s->dir, err);
    }
    if (m->applying)
        CN_TRY(cn__ws_merge_apply(cl, s, m, o, err));
    if (m->unresolved)
        return unresolved(m, err);
    CN_TRY(recheck(cl, s, m, err));
    return submit_merge(cl, s, m, a->message, o, err);
}

cn_err_t cn_ws_merge_continue(const char *dir, const char *message, const cn_ws_opts_t *opts,
                              cn_ws_merge_t **out, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    if (out)
        *out = NULL;
    merge_args_t a = { NULL, message, NULL };
    return run_merge_verb(dir, opts, continue_open, &a, out, err);
}

cn_err_t cn__ws_restore_paths(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *const *paths,
                              size_t n, const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    cn__ws_job_t *jobs = calloc(n + 1, sizeof *jobs);
    size_t nj = 0;
    cn_err_t rc = jobs ? CN_OK : cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    for (size_t i = 0; rc == CN_OK && i < n; i++) {
        cn__ws_file_t *w = cn__ws_state_find(s, paths[i], s->n);
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, paths[i]);
        /* a record a scan added (mtime -2) is a new file, not recorded */
        if (w && w->mtime_ns != -2)
            jobs[nj++].w = w;
        else if (unlink(full) < 0 && errno != ENOENT)
            rc = cn__ws_file_fail(err, "cannot remove", full, errno);
    }
    uint64_t bytes = 0;
    if (rc == CN_OK && (rc = cn__ws_fetch_all(cl, s, jobs, nj, &bytes, o, err)) == CN_OK)
        rc = cn__ws_state_save(s, err);
    /* fetched files are written writable: a required rule's file the
     * workspace does not hold goes back to read-only */
    if (rc == CN_OK)
        rc = cn__ws_mark_restored(cl, s, paths, n, o, err);
    for (size_t k = 0; jobs && k < nj; k++)
        cn_buf_free(&jobs[k].menc);
    free(jobs);
    return rc;
}

/* Every merged path back to the target snapshot's version: fetched again
 * when the snapshot holds it, removed otherwise. */
static cn_err_t abort_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                           void *arg, cn_ws_error_t *err)
{
    (void)arg;
    cn_ws_merge_t *m = NULL;
    CN_TRY(cn__ws_merge_load(s->dir, &m, err));
    if (!m)
        return cn__ws_local(err, -ENOENT, "no merge in progress in %s", s->dir);
    bool settled = false;
    uint64_t change = 0;
    const char **paths = calloc(m->n + 1, sizeof *paths);
    cn_err_t rc =
        paths ? sweep_tmp(s->dir, err) : cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    if (rc == CN_OK)
        rc = cn__ws_settle_pending(cl, s, &settled, &change, err);
    if (rc == CN_OK && settled && s->change != m->target_head)
        rc = cn__ws_local(err, CN_E_CONFLICT, "the merge was already accepted as change %" PRIu64,
                          change);
    for (size_t i = 0; rc == CN_OK && i < m->n; i++)
        paths[i] = m->paths[i].path;
    cn__ws_moves_clear(s); /* the workspace was clean: every move is the merge's */
    if (rc == CN_OK && (rc = cn__ws_restore_paths(cl, s, paths, m->n, o, err)) == CN_OK)
        rc = cn__ws_merge_remove(s->dir, err);
    free(paths);
    cn_ws_merge_free(m);
    return rc;
}

cn_err_t cn_ws_merge_abort(const char *dir, const cn_ws_opts_t *opts, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    return cn__ws_run(dir, cn__ws_opts(opts), abort_open, NULL, err);
}
