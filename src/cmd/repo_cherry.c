/* `cairn repo cherry-pick BRANCH@CHANGE [-m MSG] [-C DIR]` (and `--abort`,
 * which puts back the files a rejected pick could not restore): applies one
 * change of another branch to the workspace's branch and submits it with
 * its provenance (docs/branches.md, "Cherry-picks").  Parsing and printing
 * only: the pick is libcairn's (cn_ws_cherry_pick); exit statuses are
 * docs/cli.md's (6 for a conflict or a change already on the branch). */
#include "cmd.h"
#include "repo_int.h"

#include <inttypes.h>
#include <stdio.h>

int cn__repo_cherry_pick(const ropts_t *o)
{
    if (o->npos != (o->abort ? 0 : 1)) {
        fputs("usage: cairn repo cherry-pick BRANCH@CHANGE [-m MESSAGE] [-C DIR]\n"
              "       cairn repo cherry-pick --abort [-C DIR]\n",
              stderr);
        return EXIT_USAGE;
    }
    ws_t w;
    int rc = cn__repo_open_ws(o, &w);
    if (rc)
        return rc;
    if (o->abort) {
        cn_ws_error_t aerr;
        if (cn_ws_cherry_pick_abort(w.dir, &w.wo, &aerr))
            return cn__repo_report(&aerr);
        if (!o->quiet)
            puts("the picked files are back as the branch head has them");
        return EXIT_OK;
    }
    cn_ws_pick_result_t res;
    cn_ws_error_t err;
    cn_err_t e = cn_ws_cherry_pick(w.dir, o->pos[0], o->message, &w.wo, &res, &err);
    cn__repo_print_settled(res.settled, res.settled_change);
    if (e)
        return cn__repo_report(&err);
    if (!o->quiet)
        printf("change %" PRIu64 ": picked %s (%zu path%s applied)\n", res.change, o->pos[0],
               res.applied, res.applied == 1 ? "" : "s");
    return EXIT_OK;
}
