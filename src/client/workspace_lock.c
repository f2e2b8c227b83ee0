/* Workspace locks: acquire, release and list the repository's locks for a
 * workspace (cn_ws_lock, cn_ws_locks) over the Scribe client's lock
 * requests.  The workspace's id and branch name the holder; the server
 * decides who holds what, so this file never caches a lock locally.  A
 * path locked becomes writable, a path released read-only when a rule
 * requires its lock (cn__ws_mark, workspace_edit.c). */
#include "workspace_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lock_args {
    const char *const *paths;
    uint32_t n;
    bool release, force;
    uint32_t *changed;
} lock_args_t;

cn_err_t cn__ws_lock_send(cn_scribe_client_t *cl, const cn__ws_state_t *s, const char *const *paths,
                          uint32_t n, bool release, bool force, uint32_t *changed,
                          cn_ws_error_t *err)
{
    cn_scribe_client_lock_t l;
    memset(&l, 0, sizeof l);
    memcpy(l.repo, s->repo_id, 16);
    memcpy(l.workspace, s->workspace, 16);
    memcpy(l.branch, s->branch, 16);
    l.release = release;
    l.force = force;
    l.paths = paths;
    l.count = n;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_lock_edit(cl, &l, changed, &serr);
    return e < 0 ? cn__ws_fail(err, release ? "unlock" : "lock", e, &serr) : CN_OK;
}

static cn_err_t lock_verb(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    lock_args_t *a = arg;
    CN_TRY(cn__ws_lock_send(cl, s, a->paths, a->n, a->release, a->force, a->changed, err));
    /* locked: writable; released: read-only where a rule requires the lock */
    return cn__ws_mark(cl, s, a->paths, a->n, !a->release, o, err);
}

cn_err_t cn_ws_lock(const char *dir, const char *const *paths, uint32_t n, bool release, bool force,
                    const cn_ws_opts_t *opts, uint32_t *changed, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    uint32_t cscratch;
    err = cn__ws_begin(err, &scratch);
    changed = changed ? changed : &cscratch;
    *changed = 0;
    for (uint32_t i = 0; i < n; i++)
        if (cn_repos_path_check((const uint8_t *)paths[i], strlen(paths[i])) < 0)
            return cn__ws_local(err, CN_E_INVALID, "'%s' is not a repository path", paths[i]);
    lock_args_t a = { paths, n, release, force, changed };
    return cn__ws_run(dir, cn__ws_opts(opts), lock_verb, &a, err);
}

/* The repository's branches, to name a lock's branch. */
typedef struct branch_names {
    cn_scribe_client_branch_t *b;
    size_t n, cap;
} branch_names_t;

static int keep_branch(void *ctx, const cn_scribe_client_branch_t *b)
{
    branch_names_t *bn = ctx;
    if (bn->n == bn->cap) {
        size_t cap = bn->cap ? bn->cap * 2 : 16;
        cn_scribe_client_branch_t *nb = realloc(bn->b, cap * sizeof *nb);
        if (!nb)
            return -ENOMEM;
        bn->b = nb;
        bn->cap = cap;
    }
    bn->b[bn->n++] = *b;
    return 0;
}

typedef struct list_args {
    const char *prefix;
    bool mine;
    cn_ws_lock_fn fn;
    void *ctx;
    const cn__ws_state_t *s;
    branch_names_t names;
} list_args_t;

static cn_err_t list_row(void *ctx, const cn_scribe_client_lock_row_t *r)
{
    list_args_t *a = ctx;
    cn_ws_lock_row_t row;
    memset(&row, 0, sizeof row);
    row.path = r->path;
    cn_hex_encode(r->workspace, 16, row.workspace);
    row.principal = r->principal;
    cn_hex_encode(r->branch, 16, row.branch);
    for (size_t i = 0; i < a->names.n; i++)
        if (!memcmp(a->names.b[i].id, r->branch, 16))
            snprintf(row.branch, sizeof row.branch, "%s", a->names.b[i].name);
    row.since_ms = r->since_ms;
    row.mine = !memcmp(r->workspace, a->s->workspace, 16);
    return a->fn(a->ctx, &row);
}

static cn_err_t locks_verb(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                           void *arg, cn_ws_error_t *err)
{
    (void)o;
    list_args_t *a = arg;
    a->s = s;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_branch_list(cl, s->repo_id, keep_branch, &a->names, &serr);
    if (e >= 0)
        e = cn_scribe_client_locks(cl, s->repo_id, a->prefix, a->mine ? s->workspace : NULL,
                                   list_row, a, &serr);
    free(a->names.b);
    return e < 0 ? cn__ws_fail(err, "locks", e, &serr) : CN_OK;
}

cn_err_t cn_ws_locks(const char *dir, const char *prefix, bool mine, const cn_ws_opts_t *opts,
                     cn_ws_lock_fn fn, void *ctx, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    if (prefix && *prefix && cn_repos_path_check((const uint8_t *)prefix, strlen(prefix)) < 0)
        return cn__ws_local(err, CN_E_INVALID, "'%s' is not a repository path", prefix);
    list_args_t a = { prefix, mine, fn, ctx, NULL, { NULL, 0, 0 } };
    return cn__ws_run(dir, cn__ws_opts(opts), locks_verb, &a, err);
}
