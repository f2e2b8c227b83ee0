/* `cairn repo workspace list [--all]` and `cairn repo workspace remove [ID]`
 * (docs/workspace.md, "Registration"), on the workspace holding -C DIR or
 * the current directory.  Parsing and printing only: the requests are
 * libcairn's (cn_ws_workspaces, cn_ws_remove).  A workspace that holds
 * locks cannot be removed: exit 6 (conflict). */
#include "cmd.h"
#include "repo_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: cairn repo workspace list [--all] [-C DIR]\n"
                            "       cairn repo workspace remove [ID] [-C DIR]\n";

typedef struct ws_cmd {
    ropts_t o;
    const char *verb, *id;
    bool all;
} ws_cmd_t;

/* Parses argv[3..] into c.  EXIT_OK or EXIT_USAGE. */
static int parse(int argc, char **argv, ws_cmd_t *c)
{
    memset(c, 0, sizeof *c);
    c->verb = argc > 2 ? argv[2] : "";
    const rswitch_t sw[] = { { "--all", &c->all }, { NULL, NULL } };
    uint32_t n = 0;
    if (cn__repo_parse_ws_verb(argc, argv, 3, &c->o, sw, &c->id, 1, &n))
        return EXIT_USAGE;
    bool list = !strcmp(c->verb, "list"), remove = !strcmp(c->verb, "remove");
    return (list && !c->id) || (remove && !c->all) ? EXIT_OK : EXIT_USAGE;
}

static cn_err_t print_row(void *ctx, const cn_ws_row_t *r)
{
    (void)ctx;
    printf("%s\t%s\t%s\t", r->workspace, r->branch, r->label[0] ? r->label : "-");
    for (uint16_t i = 0; i < r->ntags; i++)
        printf("%s%s", i ? "," : "", r->tags[i]);
    /* the owner: 16 of its 32 hex digits, as a name would not fit the row */
    printf("%s\t%.16s\t%" PRIu64 "%s%s\n", r->ntags ? "" : "-", r->owner[0] ? r->owner : "-",
           r->created_ms, r->has_locks ? "\tlocks" : "", r->mine ? "\t(this workspace)" : "");
    return CN_OK;
}

int cn__repo_workspace(int argc, char **argv)
{
    ws_cmd_t c;
    if (parse(argc, argv, &c)) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    ws_t w;
    int rc = cn__repo_open_ws(&c.o, &w);
    if (rc)
        return rc;
    cn_ws_error_t err;
    if (!strcmp(c.verb, "list"))
        return cn_ws_workspaces(w.dir, c.all, &w.wo, print_row, NULL, &err) < 0
                   ? cn__repo_report(&err)
                   : EXIT_OK;
    uint64_t retired = 0;
    if (cn_ws_remove(w.dir, c.id, &w.wo, &retired, &err) < 0)
        return cn__repo_report(&err);
    if (!c.o.quiet)
        printf("workspace %s removed (retired at %" PRIu64 " ms)%s\n", c.id ? c.id : w.dir, retired,
               c.id ? "" : "; this directory is no longer a workspace");
    return EXIT_OK;
}
