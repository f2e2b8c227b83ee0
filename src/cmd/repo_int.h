/* What `cairn repo`'s two files share: the parsed command line, the one
 * mapping of a workspace failure to an exit status, the workspace options
 * and the progress bar (src/cmd/repo.c), and the branch verbs
 * (src/cmd/repo_branch.c).  Parsing and printing only: the logic is
 * libcairn's (include/cairn/workspace.h).  Never included outside src/cmd. */
#ifndef CN_CMD_REPO_INT_H
#define CN_CMD_REPO_INT_H

#include "cairn/workspace.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct ropts {
    const char *endpoint, *message, *author;
    bool lz4, lz4_storage, quiet;
    int conns; /* data connections: 0 = 4, -1 = none */
    bool has_change;
    uint64_t change;
    uint32_t limit;
    const char *paths[CN_WS_PATHS_MAX]; /* --path PREFIX (sparse workspaces) */
    int npaths;
    const char *pos[3];
    int npos;
    /* --endpoint as given: a workspace's verbs obey it over the endpoint its
     * state records, which in turn beats CAIRN_SCRIBE_ENDPOINT */
    const char *endpoint_flag;
    const char *dir;                  /* -C DIR: where the branch verbs look for their workspace */
    const char *from;                 /* branch create --from BRANCH[@CHANGE] */
    const char *branch;               /* clone --branch BRANCH[@CHANGE] */
    bool follow_merges, all_branches; /* log --follow-merges | --all-branches */
    bool keep_locks;                  /* submit --keep-locks */
    bool abort;                       /* cherry-pick --abort */
    const char *tags[16];             /* clone --tag NAME[=VALUE] (at most 16) */
    int ntags;
} ropts_t;

/* The progress bar of a transfer (drawn by src/cmd/repo.c). */
typedef struct bar {
    bool quiet, on;
    int64_t last_ms;
} bar_t;

extern const char cn__repo_usage[];

/* Reports a workspace call's failure on stderr as "cairn repo: MESSAGE";
 * returns its exit status (docs/cli.md). */
int cn__repo_report(const cn_ws_error_t *err);
/* The workspace options of the command line; clone takes the endpoint from
 * the environment or the URL too, the other verbs only from --endpoint. */
cn_ws_opts_t cn__repo_ws_opts(const ropts_t *o, bool clone, bar_t *bar);
/* "at change N: ..." or "up to date at change N" (nothing with --quiet). */
void cn__repo_print_synced(const ropts_t *o, const cn_ws_sync_result_t *r);
void cn__repo_print_settled(bool settled, uint64_t change);

/* The workspace a verb acting on -C DIR (else the current directory) acts
 * on, and the options for the call. */
typedef struct ws {
    char dir[4096];
    bar_t bar;
    cn_ws_opts_t wo; /* its progress goes to bar */
} ws_t;
/* Finds the workspace holding -C DIR, else the current directory.  EXIT_OK,
 * or the failure reported (src/cmd/repo_branch.c). */
int cn__repo_open_ws(const ropts_t *o, ws_t *w);

/* `cairn repo branch list|info|create|rename ...` and `cairn repo switch`
 * (src/cmd/repo_branch.c), on the workspace holding -C DIR or the current
 * directory. */
int cn__repo_branch(const ropts_t *o);
int cn__repo_switch(const ropts_t *o);

/* `cairn repo merge ...` and `cairn repo resolve ...` (src/cmd/repo_merge.c)
 * from the whole command line (argv[1] is the verb); the merge lines of
 * `status` for workspace dir, EXIT_CONFLICT while paths are unresolved. */
int cn__repo_merge(int argc, char **argv);
int cn__repo_merge_status(const char *dir, bool quiet);

/* `cairn repo cherry-pick BRANCH@CHANGE [-m MSG]` (src/cmd/repo_cherry.c) on
 * the workspace holding -C DIR or the current directory. */
int cn__repo_cherry_pick(const ropts_t *o);

/* `cairn repo lock|unlock|locks ...` (src/cmd/repo_lock.c) from the whole
 * command line (argv[1] is the verb). */
int cn__repo_lock(int argc, char **argv);

/* A switch a verb on a workspace takes besides the common ones: its
 * spelling and the bool it sets. */
typedef struct rswitch {
    const char *name;
    bool *on;
} rswitch_t;
/* Parses argv[from..argc) of a verb acting on a workspace (src/cmd/repo_lock.c):
 * -C DIR, --endpoint ADDR and --quiet/-q into *o (zeroed first; its endpoint
 * starts as CAIRN_SCRIBE_ENDPOINT), the switches of sw (ending with a NULL
 * name), and every other argument, in order, into pos[0..cap) counted in
 * *npos.  EXIT_OK, or EXIT_USAGE for an unknown flag or more than cap
 * arguments. */
int cn__repo_parse_ws_verb(int argc, char **argv, int from, ropts_t *o, const rswitch_t *sw,
                           const char **pos, uint32_t cap, uint32_t *npos);

/* `cairn repo mounts [--change N]` (src/cmd/repo_mounts.c) from the whole
 * command line (argv[1] is "mounts"). */
int cn__repo_mounts(int argc, char **argv);

/* `cairn repo workspace list [--all] | remove [ID]` (src/cmd/repo_workspace.c)
 * from the whole command line (argv[1] is "workspace"). */
int cn__repo_workspace(int argc, char **argv);

/* `cairn repo discover [URL]` (src/cmd/repo_discover.c) from the whole
 * command line (argv[1] is "discover"). */
int cn__repo_discover(int argc, char **argv);

#endif
