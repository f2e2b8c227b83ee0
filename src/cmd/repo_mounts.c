/* `cairn repo mounts [--change N] [-C DIR]` (docs/cli.md): the mounts the
 * `.scribe/config.toml` of the workspace's branch declares at change N
 * (default: the change the workspace has checked out), one per line in
 * name order: NAME, PATH, REPOSITORY, BRANCH, REVISION, tab-separated.
 * Parsing and printing only: the request is libcairn's (cn_ws_mounts);
 * declarations only, nothing is fetched from the mounted repositories. */
#include "cmd.h"
#include "repo_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: cairn repo mounts [--change N] [-C DIR]\n";

static cn_err_t print_mount(void *ctx, const cn_ws_mount_t *m)
{
    unsigned *n = ctx;
    (*n)++;
    printf("%s\t%s\t%s\t%s\t%" PRIu64 "\n", m->name, m->path, m->repository, m->branch,
           m->revision);
    return CN_OK;
}

/* "--change N" taken out of argv[2..argc) into *change; the rest into rest
 * (argv[0..1] kept, so cn__repo_parse_ws_verb reads it from 2). */
static int take_change(int argc, char **argv, char **rest, int *nrest, bool *has, uint64_t *change)
{
    *nrest = 0;
    for (int i = 0; i < argc; i++) {
        if (i >= 2 && !strcmp(argv[i], "--change")) {
            char *end = NULL;
            if (i + 1 >= argc || *has || !*argv[i + 1] || argv[i + 1][0] == '-')
                return EXIT_USAGE;
            *change = strtoull(argv[++i], &end, 10);
            if (*end)
                return EXIT_USAGE;
            *has = true;
            continue;
        }
        rest[(*nrest)++] = argv[i];
    }
    return EXIT_OK;
}

int cn__repo_mounts(int argc, char **argv)
{
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return EXIT_LOCAL;
    bool has = false;
    uint64_t change = 0, at = 0;
    int nrest = 0;
    ropts_t o;
    const char *pos[1];
    uint32_t npos = 0;
    int rc = take_change(argc, argv, rest, &nrest, &has, &change);
    if (!rc)
        rc = cn__repo_parse_ws_verb(nrest, rest, 2, &o, NULL, pos, 1, &npos);
    if (!rc && npos)
        rc = EXIT_USAGE;
    ws_t w;
    if (!rc)
        rc = cn__repo_open_ws(&o, &w);
    cn_ws_error_t err;
    unsigned n = 0;
    if (!rc && cn_ws_mounts(w.dir, has, change, &w.wo, print_mount, &n, &at, &err) < 0)
        rc = cn__repo_report(&err);
    else if (!rc && !n && !o.quiet)
        fprintf(stderr, "no mounts at change %" PRIu64 "\n", at);
    if (rc == EXIT_USAGE)
        fputs(usage, stderr);
    free(rest);
    return rc;
}
