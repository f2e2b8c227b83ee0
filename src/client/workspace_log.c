/* The merge-aware log of a workspace's branch (cn_ws_log_merges): the
 * follow-merges and all-branch modes of docs/protocol/scribe.md 7.5 through
 * the Scribe client, on the repository and branch the workspace's state
 * records.  It reads only: it must never change the workspace or its
 * state. */
#include "workspace_int.h"

typedef struct mlog_args {
    const char *path;
    bool all_branches;
    uint64_t change;
    uint32_t limit;
    cn_scribe_client_mlog_fn fn;
    void *ctx;
} mlog_args_t;

static cn_err_t mlog_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    (void)o;
    const mlog_args_t *a = arg;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    /* follow-merges: rows at or below the change; all-branch: its ceiling */
    uint64_t before = !a->all_branches && a->change ? a->change + 1 : 0;
    uint64_t ceiling = a->all_branches ? a->change : 0;
    cn_err_t rc = cn_scribe_client_log_merges(cl, s->repo_id, s->branch, a->path, a->all_branches,
                                              ceiling, before, a->limit, a->fn, a->ctx, &serr);
    return rc < 0 ? cn__ws_fail(err, "log", rc, &serr) : CN_OK;
}

cn_err_t cn_ws_log_merges(const char *dir, const char *path, bool all_branches, uint64_t change,
                          uint32_t limit, const cn_ws_opts_t *opts, cn_scribe_client_mlog_fn fn,
                          void *ctx, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    if (!path || !*path)
        return cn__ws_local(err, CN_E_INVALID, "a merge-aware log needs one PATH");
    mlog_args_t a = { path, all_branches, change, limit, fn, ctx };
    return cn__ws_run(dir, cn__ws_opts(opts), mlog_open, &a, err);
}
