/* The workspace side of repository mounts (docs/protocol/scribe.md 16):
 * cn_ws_mounts (include/cairn/workspace.h) reads the mounts declared at the
 * workspace's branch revision through repository_mounts (31) and hands them
 * out in name order.  It never contacts the mounted repositories and never
 * writes the workspace: materializing mounts in clone and sync is later. */
#include "workspace_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct mounts_args {
    bool has_change;
    uint64_t change;
    cn_ws_mount_fn fn;
    void *ctx;
    uint64_t *at;
} mounts_args_t;

static cn_err_t mounts_verb(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            void *arg, cn_ws_error_t *err)
{
    (void)o;
    mounts_args_t *a = arg;
    uint64_t change = a->has_change ? a->change : s->change;
    cn_scribe_client_mount_t *rows = NULL;
    uint32_t n = 0;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_mounts(cl, s->repo_id, s->branch, change, &rows, &n, &serr);
    if (e < 0)
        return cn__ws_fail(err, "mounts", e, &serr);
    if (a->at)
        *a->at = change;
    for (uint32_t i = 0; i < n && e >= 0; i++) {
        cn_ws_mount_t m = { rows[i].name, rows[i].path, "", "", rows[i].revision };
        cn__ws_hex(rows[i].repository, 16, m.repository);
        cn__ws_hex(rows[i].branch, 16, m.branch);
        e = a->fn(a->ctx, &m);
    }
    free(rows);
    return e < 0 ? cn__ws_local(err, e, "mounts: the listing stopped") : CN_OK;
}

cn_err_t cn_ws_mounts(const char *dir, bool has_change, uint64_t change, const cn_ws_opts_t *opts,
                      cn_ws_mount_fn fn, void *ctx, uint64_t *at, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    mounts_args_t a = { has_change, change, fn, ctx, at };
    return cn__ws_run(dir, cn__ws_opts(opts), mounts_verb, &a, err);
}
