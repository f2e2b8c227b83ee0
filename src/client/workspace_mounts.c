/* Mounts materialised by clone and sync (docs/workspace.md, "Mounts"):
 * after a workspace reached its change, each `[mounts.NAME]` its
 * `.scribe/config.toml` declares at that change (repository_mounts, 31)
 * becomes a nested workspace at DIR/PATH, checked out at the pinned
 * revision of the pinned branch: cloned when absent, synced (to exactly
 * that revision) when present.  Each nested workspace is an ordinary one:
 * its own state, its own history anchor, its tree proved like any other,
 * read under the caller's own endpoint and credential (nothing is
 * inherited from the parent); a mount that credential cannot find or
 * read is skipped and told to opts->notice.  Scans of the parent skip it
 * (workspace_scan.c).  Nesting is bounded (CN_WS_MOUNT_DEPTH): a cycle of
 * mounts stops there instead of recursing forever.  A mount the config no
 * longer declares after a sync or a submit (its path gone from the list;
 * the workspace's own submit that drops it prunes it at once) has its nested
 * workspace retired and removed when it is clean; one with local changes,
 * locks or nested workspaces of its own is kept and told to opts->notice.
 * It never deletes a file a status would report. */
#include "workspace_int.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CN_WS_MOUNT_DEPTH 8

static _Thread_local int mount_depth;

typedef struct find_repo {
    const uint8_t *id;
    char name[200];
    bool found;
} find_repo_t;

static int match_repo(void *ctx, const cn_scribe_client_repo_t *r)
{
    find_repo_t *f = ctx;
    if (memcmp(r->id, f->id, 16) != 0)
        return 0;
    snprintf(f->name, sizeof f->name, "%s", r->name);
    f->found = true;
    return 1;
}

/* The clone of mount m into dir: its repository and branch names from
 * their ids (a name the caller cannot list is not found). */
static cn_err_t mount_clone(cn_scribe_client_t *cl, const cn_scribe_client_mount_t *m,
                            const char *dir, cn_ws_opts_t *o2, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    find_repo_t f = { m->repository, "", false };
    cn_err_t e = cn_scribe_client_repo_list(cl, match_repo, &f, &serr);
    if (e < 0)
        return cn__ws_fail(err, "mounts: listing repositories", e, &serr);
    if (!f.found)
        return cn__ws_server(err, CN_E_NOT_FOUND,
                             "mount %s: its repository is not found or not readable", m->name);
    cn_scribe_client_branch_t b;
    if ((e = cn_scribe_client_branch_info(cl, m->repository, m->branch, NULL, &b, &serr)) < 0)
        return cn__ws_fail(err, "mounts: the pinned branch", e, &serr);
    char ref[CN_WS_BRANCH_NAME_MAX + 32];
    snprintf(ref, sizeof ref, "%s@%" PRIu64, b.name, m->revision);
    o2->branch = ref;
    o2->has_change = false;
    cn_ws_sync_result_t r2;
    return cn_ws_clone(f.name, dir, o2, &r2, err);
}

/* One mount: clone or sync DIR/PATH at its pin. */
static cn_err_t mount_one(cn_scribe_client_t *cl, const cn__ws_state_t *s,
                          const cn_scribe_client_mount_t *m, const cn_ws_opts_t *o,
                          cn_ws_error_t *err)
{
    char dir[sizeof s->dir + sizeof m->path + 1];
    snprintf(dir, sizeof dir, "%s/%s", s->dir, m->path);
    cn_ws_opts_t o2 = *o;
    o2.endpoint = o->endpoint ? o->endpoint : s->endpoint;
    o2.paths = NULL;
    o2.npaths = 0;
    o2.branch = NULL;
    if (!cn_ws_exists(dir))
        return mount_clone(cl, m, dir, &o2, err);
    o2.has_change = true;
    o2.change = m->revision;
    cn_ws_sync_result_t r2;
    return cn_ws_sync(dir, &o2, &r2, err);
}

cn_err_t cn__ws_mounts_apply(cn_scribe_client_t *cl, const cn__ws_state_t *s, const cn_ws_opts_t *o,
                             cn_ws_sync_result_t *res, cn_ws_error_t *err)
{
    cn_scribe_client_mount_t *rows = NULL;
    uint32_t n = 0;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_mounts(cl, s->repo_id, s->branch, s->change, &rows, &n, &serr);
    if (e == CN_E_UNSUPPORTED)
        return CN_OK; /* a server without mounts */
    if (e < 0)
        return cn__ws_fail(err, "mounts", e, &serr);
    if (n && mount_depth >= CN_WS_MOUNT_DEPTH)
        e = cn__ws_local(err, CN_E_LIMIT, "mounts nest deeper than %d (a cycle?)",
                         CN_WS_MOUNT_DEPTH);
    mount_depth++;
    for (uint32_t i = 0; i < n && e >= 0; i++) {
        if (!cn__ws_in_scope(s, rows[i].path))
            continue;
        cn_ws_error_t sub;
        e = mount_one(cl, s, &rows[i], o, &sub);
        if ((e == CN_E_NOT_FOUND || e == CN_E_DENIED) && !sub.local) {
            /* what this credential cannot read (absent and private look
             * alike): skipped and said, the parent's checkout stands */
            if (o->notice)
                o->notice(o->notice_ctx, rows[i].path, sub.message);
            e = CN_OK;
            continue;
        }
        if (e < 0) {
            *err = sub;
            snprintf(err->message, sizeof err->message, "mount %.64s (%.100s): %.800s",
                     rows[i].name, rows[i].path, sub.message);
        } else {
            res->mounts++;
        }
    }
    mount_depth--;
    free(rows);
    return e;
}

/* ---- mounts no longer declared ---------------------------------------------------------- */
static _Thread_local const char *walk_root;
static _Thread_local bool walk_nested;

static int find_nested(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    size_t n = strlen(path), r = strlen(walk_root);
    /* a .cairn/state below the root's own: another workspace inside */
    if (n > r + 13 && !strcmp(path + n - 13, "/.cairn/state") && f->level > 2)
        walk_nested = true;
    return walk_nested;
}

/* Why the nested workspace at dir must stay (NULL: it may go): local
 * changes, a workspace inside it, locks it holds (its retirement refused). */
static const char *must_keep(const char *dir, const cn_ws_opts_t *o2)
{
    cn_ws_status_t *st = NULL;
    cn_ws_error_t e;
    if (cn_ws_status(dir, o2, &st, &e) < 0)
        return "its status cannot be read";
    bool dirty = st->n > 0;
    cn_ws_status_free(st);
    if (dirty)
        return "it has local changes";
    walk_root = dir;
    walk_nested = false;
    nftw(dir, find_nested, 16, FTW_PHYS);
    if (walk_nested)
        return "it holds workspaces of its own";
    uint64_t retired;
    /* its row on the server is retired first (a failure other than held
     * locks, an anonymous caller's for one, leaves only a stale row) */
    if (cn_ws_remove(dir, NULL, o2, &retired, &e) == CN_E_CONFLICT)
        return "it holds locks";
    return NULL;
}

/* Removes the nested workspace at s->dir/PATH (then its empty parents up to
 * s->dir), or keeps it and says why. */
static void prune_one(const cn__ws_state_t *s, const cn_scribe_client_mount_t *m,
                      const cn_ws_opts_t *o)
{
    char dir[sizeof s->dir + sizeof m->path + 1], why[256];
    snprintf(dir, sizeof dir, "%s/%s", s->dir, m->path);
    if (!cn_ws_exists(dir))
        return;
    cn_ws_opts_t o2 = *o;
    o2.endpoint = o->endpoint ? o->endpoint : s->endpoint;
    o2.paths = NULL;
    o2.npaths = 0;
    const char *keep = must_keep(dir, &o2);
    if (!keep && cn_remove_tree(dir) < 0)
        keep = "it could not be removed";
    for (char *slash = strrchr(dir, '/'); !keep && slash && slash > dir + strlen(s->dir);
         slash = strrchr(dir, '/')) {
        *slash = 0;
        if (rmdir(dir) < 0)
            break; /* not empty: it holds other files */
    }
    snprintf(why, sizeof why, "mount %s is no longer declared: %s%s", m->name,
             keep ? "kept, " : "removed", keep ? keep : "");
    if (o->notice)
        o->notice(o->notice_ctx, m->path, why);
}

static bool declared(const cn_scribe_client_mount_t *rows, uint32_t n, const char *path)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(rows[i].path, path))
            return true;
    return false;
}

cn_err_t cn__ws_mounts_prune(cn_scribe_client_t *cl, const cn__ws_state_t *s, uint64_t was,
                             const cn_ws_opts_t *o)
{
    if (was == 0 || was == s->change)
        return CN_OK;
    cn_scribe_client_mount_t *old = NULL, *now = NULL;
    uint32_t nold = 0, nnow = 0;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_mounts(cl, s->repo_id, s->branch, was, &old, &nold, &serr);
    if (e >= 0 && nold)
        e = cn_scribe_client_mounts(cl, s->repo_id, s->branch, s->change, &now, &nnow, &serr);
    for (uint32_t i = 0; e >= 0 && i < nold; i++)
        if (cn__ws_in_scope(s, old[i].path) && !declared(now, nnow, old[i].path))
            prune_one(s, &old[i], o);
    free(old);
    free(now);
    /* the sync itself succeeded: a listing that failed leaves mounts in place */
    return CN_OK;
}
