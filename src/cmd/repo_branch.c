/* `cairn repo branch list|info|create|rename` and `cairn repo switch`
 * (docs/branches.md, docs/cli.md): parse, call libcairn's workspace module
 * (cn_ws_branch_*, cn_ws_switch) on the workspace holding -C DIR or the
 * current directory, print.  Exit statuses come from cn__repo_report's one
 * mapping (src/cmd/repo.c).  No branch logic lives here. */
#include "cmd.h"
#include "repo_int.h"

#include "cairn/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int cn__repo_open_ws(const ropts_t *o, ws_t *w)
{
    const char *start = o->dir ? o->dir : ".";
    cn_err_t e = cn_ws_find(start, w->dir, sizeof w->dir);
    memset(&w->bar, 0, sizeof w->bar);
    w->wo = cn__repo_ws_opts(o, false, &w->bar);
    if (e == CN_OK)
        return EXIT_OK;
    if (e == -ENOENT)
        fprintf(stderr, "cairn repo: %s is not inside a workspace (no .cairn/state); use -C DIR\n",
                start);
    else
        fprintf(stderr, "cairn repo: %s: %s\n", start, cn_strerror(e));
    return EXIT_LOCAL;
}

/* "NAME<TAB>head N<TAB>from ORIGIN@CHANGE" ("-" for main), and a fourth
 * column "current" for the workspace's branch: the line of `branch list`. */
static void print_line(const cn_ws_branch_t *b)
{
    printf("%s\thead %" PRIu64 "\t", b->info.name, b->info.head);
    if (b->info.has_origin)
        printf("from %s@%" PRIu64, b->origin_name[0] ? b->origin_name : "?", b->info.origin_change);
    else
        putchar('-');
    puts(b->current ? "\tcurrent" : "");
}

static void print_info(const cn_ws_branch_t *b)
{
    char id[33], when[CN_RFC3339_LEN];
    cn_hex_encode(b->info.id, 16, id);
    id[32] = 0;
    cn_rfc3339((int64_t)b->info.created_ms, when);
    printf("name %s\nid %s\nhead %" PRIu64 "\n", b->info.name, id, b->info.head);
    if (b->info.has_origin)
        printf("origin %s@%" PRIu64 "\n", b->origin_name, b->info.origin_change);
    else
        puts("origin -");
    printf("created %s\ncurrent %s\n", when, b->current ? "yes" : "no");
}

static int usage(void)
{
    fputs(cn__repo_usage, stderr);
    return EXIT_USAGE;
}

/* `branch list`, `branch info NAME`. */
static int branch_read(const ropts_t *o, const char *dir, const cn_ws_opts_t *wo)
{
    cn_ws_error_t err;
    bool list = !strcmp(o->pos[0], "list");
    if (o->npos != (list ? 1 : 2))
        return usage();
    if (!list) {
        cn_ws_branch_t b;
        if (cn_ws_branch_info(dir, o->pos[1], wo, &b, &err))
            return cn__repo_report(&err);
        print_info(&b);
        return EXIT_OK;
    }
    cn_ws_branch_t *v = NULL;
    size_t n = 0;
    if (cn_ws_branch_list(dir, wo, &v, &n, &err))
        return cn__repo_report(&err);
    for (size_t i = 0; i < n; i++)
        print_line(&v[i]);
    cn_ws_branch_list_free(v);
    return EXIT_OK;
}

int cn__repo_branch(const ropts_t *o)
{
    if (o->npos < 1)
        return usage();
    const char *sub = o->pos[0];
    bool create = !strcmp(sub, "create"), rename = !strcmp(sub, "rename");
    if (!create && !rename && strcmp(sub, "list") && strcmp(sub, "info")) {
        fprintf(stderr, "cairn repo branch: unknown command '%s'\n", sub);
        return usage();
    }
    if ((create && o->npos != 2) || (rename && o->npos != 3) || (o->from && !create))
        return usage();
    ws_t w;
    int rc = cn__repo_open_ws(o, &w);
    if (rc)
        return rc;
    if (!create && !rename)
        return branch_read(o, w.dir, &w.wo);
    cn_ws_branch_t b;
    cn_ws_error_t err;
    cn_err_t e = create ? cn_ws_branch_create(w.dir, o->pos[1], o->from, &w.wo, &b, &err)
                        : cn_ws_branch_rename(w.dir, o->pos[1], o->pos[2], &w.wo, &b, &err);
    if (e)
        return cn__repo_report(&err);
    if (o->quiet)
        return EXIT_OK;
    if (rename)
        printf("renamed %s to %s\n", o->pos[1], b.info.name);
    else
        printf("created %s from %s@%" PRIu64 "\n", b.info.name, b.origin_name,
               b.info.origin_change);
    return EXIT_OK;
}

int cn__repo_switch(const ropts_t *o)
{
    if (o->npos != 1)
        return usage();
    ws_t w;
    int rc = cn__repo_open_ws(o, &w);
    if (rc)
        return rc;
    cn_ws_sync_result_t res;
    cn_ws_error_t err;
    cn_err_t e = cn_ws_switch(w.dir, o->pos[0], &w.wo, &res, &err);
    cn__repo_print_settled(res.settled, res.settled_change);
    if (e)
        return cn__repo_report(&err);
    if (!o->quiet)
        printf("on branch %.*s at change %" PRIu64 ": %" PRIu64 " file(s) fetched (%" PRIu64
               " bytes), %" PRIu64 " removed\n",
               (int)strcspn(o->pos[0], "@"), o->pos[0], res.change, res.fetched, res.bytes,
               res.removed);
    return EXIT_OK;
}
