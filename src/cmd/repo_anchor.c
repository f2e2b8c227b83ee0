/* `cairn repo anchor reset [-C DIR]` (docs/cli.md, docs/workspace.md
 * "Verified sync"): forgets the history anchor of the workspace's branch
 * and anchors the server's current head, trusted as at first contact --
 * what a user runs after deciding a rollback that sync refused (exit 9)
 * was intended, e.g. a restore from a backup.  Parsing and printing only:
 * the logic is libcairn's (cn_ws_anchor_reset); files are not touched. */
#include "cmd.h"
#include "repo_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char usage[] = "usage: cairn repo anchor reset [-C DIR]\n";

int cn__repo_anchor(int argc, char **argv); /* the verb table of repo.c */

int cn__repo_anchor(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[2], "reset") != 0) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    ropts_t o;
    const char *pos[1];
    uint32_t npos = 0;
    int rc = cn__repo_parse_ws_verb(argc, argv, 3, &o, NULL, pos, 1, &npos);
    if (!rc && npos)
        rc = EXIT_USAGE;
    if (rc == EXIT_USAGE)
        fputs(usage, stderr);
    ws_t w;
    if (!rc)
        rc = cn__repo_open_ws(&o, &w);
    if (rc)
        return rc;
    cn_ws_anchor_t a;
    cn_ws_error_t err;
    if (cn_ws_anchor_reset(w.dir, &w.wo, &a, &err) < 0)
        return cn__repo_report(&err);
    /* a trust decision: said on stderr even with --quiet */
    fprintf(stderr,
            "cairn repo: anchor reset: trusting the server's head, change %" PRIu64
            " (commit %.16s...), as this workspace's history anchor\n",
            a.change, a.commit);
    return EXIT_OK;
}
