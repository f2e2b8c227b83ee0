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
 * mounts stops there instead of recursing forever. */
#include "workspace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
