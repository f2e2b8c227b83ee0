/* `cairn repo lock PATH...`, `cairn repo unlock PATH... [--force]`,
 * `cairn repo locks [PREFIX] [--mine]` (docs/branches.md, "Locks") and
 * `cairn repo edit PATH...` (docs/workspace.md, "Read-only files"), on the
 * workspace holding -C DIR or the current directory.  Parsing and printing
 * only: the requests are libcairn's (cn_ws_lock, cn_ws_locks, cn_ws_edit);
 * a path held by another workspace exits 6 (conflict) naming the holder. */
#include "cmd.h"
#include "repo_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: cairn repo lock PATH... [-C DIR]\n"
                            "       cairn repo edit PATH... [-C DIR]\n"
                            "       cairn repo unlock PATH... [--force] [-C DIR]\n"
                            "       cairn repo locks [PREFIX] [--mine] [-C DIR]\n";

typedef struct lock_cmd {
    ropts_t o;
    const char **paths;
    uint32_t n;
    bool force, mine;
} lock_cmd_t;

int cn__repo_parse_ws_verb(int argc, char **argv, int from, ropts_t *o, const rswitch_t *sw,
                           const char **pos, uint32_t cap, uint32_t *npos)
{
    memset(o, 0, sizeof *o);
    o->endpoint = getenv("CAIRN_SCRIBE_ENDPOINT");
    *npos = 0;
    for (int i = from; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc, known = false;
        for (const rswitch_t *k = sw; k && k->name && !known; k++)
            if (!strcmp(a, k->name))
                known = *k->on = true;
        if (known)
            continue;
        if (!strcmp(a, "-C") && more)
            o->dir = argv[++i];
        else if (!strcmp(a, "--endpoint") && more)
            o->endpoint = o->endpoint_flag = argv[++i];
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
            o->quiet = true;
        else if ((a[0] == '-' && a[1]) || *npos == cap)
            return EXIT_USAGE;
        else
            pos[(*npos)++] = a;
    }
    return EXIT_OK;
}

/* Parses argv[2..] into c (c->paths: free()).  EXIT_OK, EXIT_USAGE or
 * EXIT_LOCAL. */
static int parse(int argc, char **argv, lock_cmd_t *c)
{
    memset(c, 0, sizeof *c);
    if (!(c->paths = calloc((size_t)argc, sizeof *c->paths)))
        return EXIT_LOCAL;
    const rswitch_t sw[] = { { "--force", &c->force }, { "--mine", &c->mine }, { NULL, NULL } };
    return cn__repo_parse_ws_verb(argc, argv, 2, &c->o, sw, c->paths, (uint32_t)argc, &c->n);
}

static cn_err_t print_lock(void *ctx, const cn_ws_lock_row_t *r)
{
    (void)ctx;
    printf("%s\t%s\t%s\t%s\t%" PRIu64 "%s\n", r->path, r->principal[0] ? r->principal : "-",
           r->workspace, r->branch, r->since_ms, r->mine ? "\t(mine)" : "");
    return CN_OK;
}

/* `cairn repo edit`: lock what the policy requires, make the paths writable. */
static int edit(const lock_cmd_t *c, const ws_t *w)
{
    cn_ws_error_t err;
    cn_ws_edit_result_t res;
    if (cn_ws_edit(w->dir, c->paths, c->n, &w->wo, &res, &err) < 0)
        return cn__repo_report(&err);
    if (!c->o.quiet)
        printf("editing %" PRIu32 " path%s: %" PRIu32 " need%s a lock (%" PRIu32 " newly locked)\n",
               c->n, c->n == 1 ? "" : "s", res.required, res.required == 1 ? "s" : "", res.locked);
    return EXIT_OK;
}

int cn__repo_lock(int argc, char **argv)
{
    const char *verb = argv[1];
    bool list = !strcmp(verb, "locks"), release = !strcmp(verb, "unlock");
    bool is_edit = !strcmp(verb, "edit");
    lock_cmd_t c;
    int rc = parse(argc, argv, &c);
    if (!rc &&
        ((list && (c.n > 1 || c.force)) || (!list && (!c.n || c.mine)) || (c.force && !release)))
        rc = EXIT_USAGE;
    ws_t w;
    if (!rc)
        rc = cn__repo_open_ws(&c.o, &w);
    cn_ws_error_t err;
    uint32_t changed = 0;
    if (!rc && is_edit)
        rc = edit(&c, &w);
    else if (!rc && list &&
             cn_ws_locks(w.dir, c.n ? c.paths[0] : NULL, c.mine, &w.wo, print_lock, NULL, &err) < 0)
        rc = cn__repo_report(&err);
    else if (!rc && !list &&
             cn_ws_lock(w.dir, c.paths, c.n, release, c.force, &w.wo, &changed, &err) < 0)
        rc = cn__repo_report(&err);
    else if (!rc && !list && !c.o.quiet)
        printf("%s %" PRIu32 " path%s\n", release ? "unlocked" : "locked", changed,
               changed == 1 ? "" : "s");
    if (rc == EXIT_USAGE)
        fputs(usage, stderr);
    free(c.paths);
    return rc;
}
