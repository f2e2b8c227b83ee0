/* `cairn repo merge SOURCE [-m MSG] | --continue [-m MSG] | --abort`,
 * `cairn repo resolve PATH --ours|--theirs|--file F`, and the merge lines
 * of `cairn repo status` (docs/branches.md, docs/cli.md): parse, call
 * libcairn's workspace module (cn_ws_merge*) on the workspace holding
 * -C DIR or the current directory, print.  Exit statuses come from
 * cn__repo_report's one mapping (src/cmd/repo.c): a merge stopped by
 * conflicts, and a status while paths are unresolved, exit 6.  No merge
 * logic lives here. */
#include "cmd.h"
#include "repo_int.h"

#include "cairn/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct margs {
    ropts_t o;
    bool cont, abort;
    char how; /* resolve: 'o', 't', 'f' */
    const char *file;
} margs_t;

static int usage(void)
{
    fputs("usage: cairn repo merge SOURCE [-m MESSAGE]   merge branch SOURCE into the workspace\n"
          "       cairn repo merge --continue [-m MESSAGE]  submit once conflicts are resolved\n"
          "       cairn repo merge --abort                  restore the workspace\n"
          "       cairn repo resolve PATH --ours|--theirs|--file F\n"
          "       (on the workspace holding . or -C DIR; --endpoint, --author, --conns, --quiet)\n",
          stderr);
    return EXIT_USAGE;
}

/* The command line after the verb.  EXIT_OK or EXIT_USAGE. */
static int parse(int argc, char **argv, margs_t *a)
{
    memset(a, 0, sizeof *a);
    a->o.endpoint = getenv("CAIRN_SCRIBE_ENDPOINT");
    a->o.author = getenv("USER") ? getenv("USER") : "cairn";
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(s, "--endpoint") && more)
            a->o.endpoint = a->o.endpoint_flag = argv[++i];
        else if ((!strcmp(s, "-m") || !strcmp(s, "--message")) && more)
            a->o.message = argv[++i];
        else if (!strcmp(s, "--author") && more)
            a->o.author = argv[++i];
        else if (!strcmp(s, "-C") && more)
            a->o.dir = argv[++i];
        else if (!strcmp(s, "--conns") && more)
            a->o.conns = atoi(argv[++i]) ? atoi(argv[i]) : -1;
        else if (!strcmp(s, "--quiet") || !strcmp(s, "-q"))
            a->o.quiet = true;
        else if (!strcmp(s, "--continue"))
            a->cont = true;
        else if (!strcmp(s, "--abort"))
            a->abort = true;
        else if (!strcmp(s, "--ours") || !strcmp(s, "--theirs"))
            a->how = a->how ? '?' : s[2];
        else if (!strcmp(s, "--file") && more)
            a->how = a->how ? '?' : 'f', a->file = argv[++i];
        else if (s[0] == '-' && s[1])
            return usage();
        else if (a->o.npos < 1)
            a->o.pos[a->o.npos++] = s;
        else
            return usage();
    }
    return EXIT_OK;
}

static const char *why_name(char why)
{
    switch (why) {
    case CN_WS_WHY_BINARY: return "binary";
    case CN_WS_WHY_LINES: return "text";
    case CN_WS_WHY_DELETED: return "deleted on one side";
    case CN_WS_WHY_ORIGINS: return "several origins: choose by hand";
    case CN_WS_WHY_MOVED: return "moved to different paths";
    default: return "conflict";
    }
}

static void print_side(const char *name, const cn_ws_merge_side_t *s)
{
    if (!s->change)
        printf("  %-6s none\n", name);
    else if (!s->live)
        printf("  %-6s change %" PRIu64 " by %s: deleted\n", name, s->change,
               s->author[0] ? s->author : "?");
    else
        printf("  %-6s change %" PRIu64 " by %s: %" PRIu64 " bytes\n", name, s->change,
               s->author[0] ? s->author : "?", s->size);
}

/* The conflicts of m, with their three sides. */
static void print_conflicts(const cn_ws_merge_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        const cn_ws_merge_path_t *p = &m->paths[i];
        if (p->state != CN_WS_MERGE_CONFLICT)
            continue;
        printf("CONFLICT (%s) %s\n", why_name(p->why), p->path);
        if (p->from)
            printf("  moved from %s%s%s\n", p->from, p->other ? "; ours moved it to " : "",
                   p->other ? p->other : "");
        print_side("base", &p->base);
        print_side("ours", &p->ours);
        print_side("theirs", &p->theirs);
    }
}

static void print_done(const cn_ws_merge_t *m)
{
    size_t n[128] = { 0 };
    for (size_t i = 0; i < m->n; i++)
        n[(unsigned char)m->paths[i].state & 127]++;
    if (m->settled)
        printf("the previous merge submit was accepted as change %" PRIu64 "\n", m->change);
    else
        printf("merged %s@%" PRIu64 " into %s as change %" PRIu64 ": %zu paths (%zu taken, %zu "
               "merged by lines, %zu resolved, %zu kept)\n",
               m->source_name, m->source_head, m->target_name, m->change, m->n,
               n[CN_WS_MERGE_THEIRS], n[CN_WS_MERGE_LINES], n[CN_WS_MERGE_RESOLVED],
               n[CN_WS_MERGE_KEPT]);
    if (m->bytes_sent || m->bytes_received)
        printf("%" PRIu64 " bytes sent, %" PRIu64 " bytes received\n", m->bytes_sent,
               m->bytes_received);
}

static int run_merge(const margs_t *a, ws_t *w)
{
    const char *dir = w->dir;
    const cn_ws_opts_t *wo = &w->wo;
    cn_ws_error_t err;
    cn_ws_merge_t *m = NULL;
    cn_err_t rc;
    if (a->abort) {
        if ((rc = cn_ws_merge_abort(dir, wo, &err)))
            return cn__repo_report(&err);
        if (!a->o.quiet)
            puts("merge aborted: the workspace is back at its change");
        return EXIT_OK;
    }
    rc = a->cont ? cn_ws_merge_continue(dir, a->o.message, wo, &m, &err)
                 : cn_ws_merge(dir, a->o.pos[0], a->o.message, wo, &m, &err);
    if (rc && m && m->unresolved)
        print_conflicts(m);
    if (rc) {
        cn_ws_merge_free(m);
        return cn__repo_report(&err);
    }
    if (!a->o.quiet && m && m->submitted)
        print_done(m);
    else if (!a->o.quiet && m)
        printf("already up to date: %s@%" PRIu64 " is merged\n", m->source_name, m->source_head);
    cn_ws_merge_free(m);
    return EXIT_OK;
}

int cn__repo_merge(int argc, char **argv)
{
    margs_t a;
    ws_t w;
    int rc = parse(argc, argv, &a);
    bool resolve = !strcmp(argv[1], "resolve");
    if (rc)
        return rc;
    if (resolve ? (a.o.npos != 1 || !a.how || a.how == '?' || a.cont || a.abort)
                : (a.how || (a.cont && a.abort) || (a.cont || a.abort) == (a.o.npos == 1) ||
                   (a.abort && a.o.message)))
        return usage();
    if ((rc = cn__repo_open_ws(&a.o, &w)))
        return rc;
    if (!resolve)
        return run_merge(&a, &w);
    cn_ws_error_t err;
    if (cn_ws_merge_resolve(w.dir, a.o.pos[0], a.how, a.file, &err))
        return cn__repo_report(&err);
    if (!a.o.quiet)
        printf("resolved %s\n", a.o.pos[0]);
    return EXIT_OK;
}

int cn__repo_merge_status(const char *dir, bool quiet)
{
    cn_ws_merge_t *m = NULL;
    cn_ws_error_t err;
    if (cn_ws_merge_status(dir, &m, &err))
        return cn__repo_report(&err);
    if (!m)
        return EXIT_OK;
    printf("merging %s@%" PRIu64 " into %s%s: %zu unresolved\n", m->source_name, m->source_head,
           m->target_name, m->applying ? " (interrupted: merge --continue or --abort)" : "",
           m->unresolved);
    for (size_t i = 0; i < m->n && !quiet; i++)
        if (m->paths[i].state == CN_WS_MERGE_CONFLICT || m->paths[i].state == CN_WS_MERGE_RESOLVED)
            printf("%s %s (%s)\n", m->paths[i].state == CN_WS_MERGE_CONFLICT ? "U" : "R",
                   m->paths[i].path, why_name(m->paths[i].why));
    int code = m->unresolved || m->applying ? EXIT_CONFLICT : EXIT_OK;
    cn_ws_merge_free(m);
    return code;
}
