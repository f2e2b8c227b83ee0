/* `cairn repo create|list|info|clone|status|submit|sync|log|describe`:
 * version control of large files over Scribe protocol 2 (the branch verbs,
 * `branch` and `switch`, are in repo_branch.c).  This file parses the
 * arguments, calls libcairn -- the Scribe client
 * (include/cairn/scribe_client.h) for create, list and info, the workspace
 * module (include/cairn/workspace.h) for the verbs on a workspace -- and
 * prints what they return: results on stdout, failures on stderr as
 * "cairn repo: MESSAGE", the progress bar of a transfer.  exit_for() is
 * the one place a cn_err_t becomes an exit status (docs/cli.md).  No
 * workspace logic lives here. */
#include "cmd.h"
#include "repo_int.h"

#include "cairn/scribe.h"
#include "cairn/scribe_client.h"
#include "cairn/workspace.h"
#include "cairn/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cn__repo_usage[] =
    "usage: cairn repo create NAME [--lz4-storage]     create a repository\n"
    "       cairn repo list                            list repositories\n"
    "       cairn repo info NAME                       show a repository\n"
    "       cairn repo clone NAME DIR [--branch BRANCH[@N]] [--change N] [--path PREFIX]...\n"
    "                                                  [--tag NAME[=VALUE]]...\n"
    "                                                  check a branch (or only PREFIXes) out;\n"
    "                                                  registers the workspace with its tags\n"
    "       cairn repo status [DIR]                    added, modified, deleted, moved files\n"
    "       cairn repo submit [DIR] -m MESSAGE [--keep-locks]\n"
    "                                                  submit DIR's changes atomically\n"
    "       cairn repo mv SRC DST                      move a tracked file (paths from the\n"
    "                                                  workspace root); submitted as a move\n"
    "       cairn repo sync [DIR] [--change N] [--path PREFIX]...\n"
    "                                                  bring DIR to the head (or change N);\n"
    "                                                  --path adds prefixes to a sparse DIR\n"
    "       cairn repo log [DIR] [PATH] [-n N]         history, newest first\n"
    "       cairn repo log [DIR] PATH --follow-merges | --all-branches [--change N]\n"
    "       cairn repo describe [DIR] CHANGE -m TEXT   revise a change's description\n"
    "       cairn repo branch list | info NAME         branches (name, head, origin)\n"
    "       cairn repo branch create NAME [--from BRANCH[@N]]\n"
    "                                                  from the workspace's branch head\n"
    "       cairn repo branch rename OLD NEW           rename a branch\n"
    "       cairn repo switch BRANCH[@N]               follow BRANCH; files updated as sync does\n"
    "       cairn repo merge SOURCE [-m MSG] | --continue [-m MSG] | --abort\n"
    "                                                  merge branch SOURCE into the workspace\n"
    "       cairn repo resolve PATH --ours|--theirs|--file F\n"
    "                                                  resolve a conflicting path of a merge\n"
    "       cairn repo cherry-pick BRANCH@N [-m MSG]   apply change N of BRANCH here\n"
    "                                                  (message: N's, with its origin)\n"
    "       cairn repo cherry-pick --abort             put back the files a rejected pick left\n"
    "       cairn repo lock PATH... | unlock PATH... [--force]\n"
    "                                                  lock paths for this workspace, or release\n"
    "       cairn repo locks [PREFIX] [--mine]         path, principal, workspace, branch, since\n"
    "       cairn repo workspace list [--all]          id, branch, label, tags, created\n"
    "       cairn repo workspace remove [ID]           retire a workspace (default: this one)\n"
    "       cairn repo mounts [--change N]             the mounts declared at the workspace's\n"
    "                                                  change (or N): name, path, ids, pin\n"
    "       cairn repo anchor reset                    trust the server's head again after a\n"
    "                                                  refused rollback (exit 9)\n"
    "       cairn repo edit PATH...                    lock what the lock policy requires, make\n"
    "                                                  PATHs writable\n"
    "       (mv, branch, switch, merge, resolve, cherry-pick, edit, workspace, mounts and\n"
    "       the lock verbs act on the workspace holding . or -C DIR)\n"
    "       cairn repo discover [URL]                  role, authentication, namespaces\n"
    "REPO: [NS/]NAME, HOST:PORT/[NS/]NAME, scribe://HOST[:PORT]/[NS/]NAME or\n"
    "      scribes://HOST:PORT/[NS/]NAME (TLS); NS/ picks a gateway's namespace\n"
    "options: --endpoint HOST:PORT (CAIRN_SCRIBE_ENDPOINT, default 127.0.0.1:7447)\n"
    "         --lz4 (LZ4 transfers)  --author NAME (default $USER)  --quiet\n"
    "         --conns N (data connections for transfers, 0..4, default 4)\n"
    "exit: 0 ok, 1 server error, 2 usage, 3 not found, 5 network, 6 conflict,\n"
    "      7 local file error, 8 checksum mismatch, 9 rollback refused (docs/cli.md)\n";

/* Splits a repository argument -- `[NS/]NAME`, `HOST:PORT/[NS/]NAME`,
 * `scribe://HOST[:PORT]/[NS/]NAME` or `scribes://HOST:PORT/[NS/]NAME` --
 * into the endpoint it names (left NULL when it names none) and the wire
 * name `[NS/]NAME`, which points into `arg`.  The first segment is an
 * endpoint only after a scheme or when it holds ':' (libcairn's
 * cn_scribe_repo_ref_parse decides).  The endpoint is copied to `ep`.
 * Returns EXIT_OK, or EXIT_USAGE with the reason on stderr. */
static int split_repo_url(const char *arg, char *ep, size_t epsz, const char **endpoint,
                          const char **name)
{
    cn_scribe_repo_ref_t r;
    size_t pre = 0;
    const char *scheme = strstr(arg, "://");
    if (scheme && strncmp(arg, "scribe://", 9) && strncmp(arg, "scribes://", 10)) {
        fprintf(stderr, "cairn repo: %s: unknown scheme (want scribe://HOST:PORT/NAME)\n", arg);
        return EXIT_USAGE;
    }
    if (cn_scribe_repo_ref_parse(cn_scribe_cstr(arg), &r) < 0 ||
        (r.has_endpoint && (pre = r.tls ? 10 : 0) + r.endpoint.len >= epsz)) {
        fprintf(stderr,
                "cairn repo: %s: want [NS/]NAME, HOST:PORT/[NS/]NAME or "
                "scribe[s]://HOST:PORT/[NS/]NAME (NS: 1..64 of A-Z a-z 0-9 - _ .; NAME: 1..128 "
                "bytes, no '/')\n",
                arg);
        return EXIT_USAGE;
    }
    *name = (const char *)r.wire.p;
    if (!r.has_endpoint)
        return EXIT_OK;
    /* scribes:// (protocol 4 over TLS) keeps its scheme in the endpoint:
     * the Scribe client reads it there (cn_scribe_client_cfg_t). */
    memcpy(ep, "scribes://", pre);
    memcpy(ep + pre, r.endpoint.p, r.endpoint.len);
    ep[pre + r.endpoint.len] = 0;
    *endpoint = ep;
    return EXIT_OK;
}

/* The exit status for a failure e; local says it happened on this machine
 * (cn_ws_error_t.local; never for the Scribe client's own calls). */
static int exit_for(cn_err_t e, bool local)
{
    if (e == CN_OK)
        return EXIT_OK;
    if (local) {
        switch (e) {
        case CN_E_INVALID: return EXIT_USAGE;     /* a bad --path */
        case CN_E_CONFLICT: return EXIT_CONFLICT; /* local changes in the way */
        case CN_E_DIGEST_MISMATCH: return EXIT_INTEGRITY;
        default: return EXIT_LOCAL; /* -errno, a damaged state */
        }
    }
    switch (e) {
    case CN_E_NOT_FOUND: return EXIT_NOT_FOUND;
    case CN_E_DENIED: return EXIT_DENIED;
    case CN_E_EXISTS:
    case CN_E_CONFLICT: return EXIT_CONFLICT;
    case CN_E_CLOSED:
    case CN_E_TIMEOUT:
    case CN_E_PROTOCOL: return EXIT_NETWORK;
    case CN_E_DIGEST_MISMATCH: return EXIT_INTEGRITY;
    case CN_E_CORRUPT: return EXIT_ROLLBACK; /* verified sync refused the head */
    default: return e < 0 && e > -4096 ? EXIT_NETWORK : EXIT_SERVER;
    }
}

int cn__repo_report(const cn_ws_error_t *err)
{
    fprintf(stderr, "cairn repo: %s\n", err->message[0] ? err->message : cn_strerror(err->err));
    return exit_for(err->err, err->local);
}

/* Reports a Scribe client call's failure: "WHAT: reason" (the server's
 * message when there is one); returns its exit status. */
static int fail(const char *what, cn_err_t e, const cn_scribe_cerr_t *err)
{
    fprintf(stderr, "cairn repo: %s: %s\n", what, err->message[0] ? err->message : cn_strerror(e));
    return exit_for(e, false);
}

/* Writes n bytes as 2n hex digits and a NUL to out. */
static void hex(const void *p, size_t n, char *out)
{
    cn_hex_encode(p, n, out);
    out[2 * n] = 0;
}

static cn_err_t connect_to(const ropts_t *o, cn_scribe_client_t **cl, cn_scribe_cerr_t *err)
{
    memset(err, 0, sizeof *err);
    cn_scribe_client_cfg_t cfg = { o->endpoint, 1, o->lz4, 0, 0, o->conns, 0 };
    return cn_scribe_client_new(&cfg, cl, err);
}

/* ---- commands -------------------------------------------------------------------------------- */
static int print_repo(void *ctx, const cn_scribe_client_repo_t *r)
{
    (void)ctx;
    char id[33];
    hex(r->id, 16, id);
    printf("%s\thead %" PRIu64 "\t%s\n", r->name, r->head, id);
    return 0;
}

static int cmd_create(const ropts_t *o)
{
    if (o->npos != 1) {
        fputs(cn__repo_usage, stderr);
        return EXIT_USAGE;
    }
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return fail("connect", e, &err);
    cn_scribe_client_repo_t r;
    e = cn_scribe_client_repo_create(cl, o->pos[0], o->lz4_storage ? 1 : 0, &r, &err);
    cn_scribe_client_free(cl);
    if (e < 0)
        return fail(o->pos[0], e, &err);
    if (!o->quiet)
        print_repo(NULL, &r);
    return EXIT_OK;
}

static int cmd_list_info(const ropts_t *o, bool info)
{
    if (o->npos != (info ? 1 : 0)) {
        fputs(cn__repo_usage, stderr);
        return EXIT_USAGE;
    }
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return fail("connect", e, &err);
    if (info) {
        cn_scribe_client_repo_t r;
        e = cn_scribe_client_repo_info(cl, o->pos[0], &r, &err);
        if (e >= 0) {
            char id[33], br[33], inc[33];
            hex(r.id, 16, id);
            hex(r.main_branch, 16, br);
            hex(r.incarnation, 16, inc);
            printf("name %s\nid %s\nmain %s\nhead %" PRIu64 "\nincarnation %s\n"
                   "storage %s\n",
                   r.name, id, br, r.head, inc, r.compression ? "lz4" : "raw");
        }
    } else {
        e = cn_scribe_client_repo_list(cl, print_repo, NULL, &err);
    }
    cn_scribe_client_free(cl);
    return e < 0 ? fail(info ? o->pos[0] : "list", e, &err) : EXIT_OK;
}

/* ---- the workspace verbs ------------------------------------------------------------------ */
/* The progress bar (bar_t): drawn on stderr when it is a terminal, the
 * transfer is 8 MiB or more and --quiet was not given; at most every 100 ms. */
static void bar_draw(const char *what, uint64_t done, uint64_t total, bool final)
{
    unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
    if (pct > 100)
        pct = 100;
    char bar[31];
    memset(bar, '#', pct * 30 / 100);
    memset(bar + pct * 30 / 100, '.', 30 - pct * 30 / 100);
    bar[30] = 0;
    fprintf(stderr, "\r%s [%s] %3u%% %" PRIu64 "/%" PRIu64 " MiB%s", what, bar, pct, done >> 20,
            total >> 20, final ? "\n" : "");
    fflush(stderr);
}

static void bar_progress(void *ctx, const char *what, uint64_t done, uint64_t total, bool end)
{
    bar_t *b = ctx;
    if (!done && !end) { /* a transfer begins */
        b->on = !b->quiet && total >= (8u << 20) && isatty(2);
        b->last_ms = 0;
        return;
    }
    int64_t now = cn_mono_ms();
    if (!b->on || (!end && now - b->last_ms < 100))
        return;
    b->last_ms = now;
    bar_draw(what, done, total, end);
}

static void print_notice(void *ctx, const char *path, const char *why)
{
    (void)ctx;
    fprintf(stderr, "cairn repo: skipping %s: %s\n", path, why);
}

cn_ws_opts_t cn__repo_ws_opts(const ropts_t *o, bool clone, bar_t *bar)
{
    bar->quiet = o->quiet;
    return (cn_ws_opts_t){
        .endpoint = clone ? o->endpoint : o->endpoint_flag,
        .lz4 = o->lz4,
        .data_conns = o->conns,
        .has_change = o->has_change,
        .change = o->change,
        .branch = clone ? o->branch : NULL,
        .paths = o->paths,
        .npaths = (size_t)o->npaths,
        .author = o->author,
        .keep_locks = o->keep_locks,
        .progress = bar_progress,
        .progress_ctx = bar,
        .notice = print_notice,
    };
}

void cn__repo_print_settled(bool settled, uint64_t change)
{
    if (settled)
        printf("the previous submit was accepted as change %" PRIu64 "\n", change);
}

void cn__repo_print_synced(const ropts_t *o, const cn_ws_sync_result_t *r)
{
    if (r->first_contact) /* a trust decision: said even with --quiet */
        fprintf(stderr,
                "cairn repo: first contact with this branch: trusting the server's head (change "
                "%" PRIu64 ") as the history anchor\n",
                r->anchor_change);
    if (o->quiet)
        return;
    if (r->up_to_date)
        printf("up to date at change %" PRIu64 "\n", r->change);
    else
        printf("at change %" PRIu64 ": %" PRIu64 " file(s) fetched (%" PRIu64 " bytes), %" PRIu64
               " removed\n",
               r->change, r->fetched, r->bytes, r->removed);
}

static int cmd_clone(const ropts_t *o)
{
    if (o->npos != 1 && o->npos != 2) {
        fputs(cn__repo_usage, stderr);
        return EXIT_USAGE;
    }
    bar_t bar = { 0 };
    cn_ws_opts_t wo = cn__repo_ws_opts(o, true, &bar);
    wo.tags = o->tags;
    wo.ntags = (size_t)o->ntags;
    cn_ws_sync_result_t res;
    cn_ws_error_t err;
    /* one positional: the workspace is named after the storage name (NS/ dropped) */
    const char *base = strrchr(o->pos[0], '/') ? strrchr(o->pos[0], '/') + 1 : o->pos[0];
    if (cn_ws_clone(o->pos[0], o->npos == 2 ? o->pos[1] : base, &wo, &res, &err))
        return cn__repo_report(&err);
    cn__repo_print_synced(o, &res);
    return EXIT_OK;
}

static int cmd_sync(const ropts_t *o)
{
    bar_t bar = { 0 };
    cn_ws_opts_t wo = cn__repo_ws_opts(o, false, &bar);
    cn_ws_sync_result_t res;
    cn_ws_error_t err;
    cn_err_t e = cn_ws_sync(o->npos ? o->pos[0] : ".", &wo, &res, &err);
    cn__repo_print_settled(res.settled, res.settled_change);
    if (e)
        return cn__repo_report(&err);
    cn__repo_print_synced(o, &res);
    return EXIT_OK;
}

/* One section of status's lock lines (none when empty). */
static void print_paths(const char *title, const char *const *v, size_t n)
{
    if (n)
        printf("%s\n", title);
    for (size_t i = 0; i < n; i++)
        printf("  %s\n", v[i]);
}

/* Status's lock sections, after every other line: the workspace's locks,
 * the changed files that need one it lacks, the files made writable by
 * hand.  They need the server: when it cannot be asked, a note on stderr
 * and the status stands. */
static void status_locks(const char *dir, const cn_ws_opts_t *wo)
{
    cn_ws_lock_status_t *ls = NULL;
    cn_ws_error_t err;
    if (cn_ws_lock_status(dir, wo, &ls, &err)) {
        fprintf(stderr, "cairn repo: locks not shown: %s\n", err.message);
        return;
    }
    print_paths("locked by this workspace:", ls->held, ls->nheld);
    print_paths("changed without the lock they need (cairn repo edit PATH):", ls->need, ls->nneed);
    print_paths("writable without their lock (made writable by hand):", ls->writable,
                ls->nwritable);
    cn_ws_lock_status_free(ls);
}

static int cmd_status(const ropts_t *o)
{
    bar_t bar = { 0 };
    cn_ws_opts_t wo = cn__repo_ws_opts(o, false, &bar);
    cn_ws_status_t *st = NULL;
    cn_ws_error_t err;
    const char *dir = o->npos ? o->pos[0] : ".";
    if (cn_ws_status(dir, &wo, &st, &err))
        return cn__repo_report(&err);
    for (size_t i = 0; i < st->n; i++)
        if (st->entries[i].kind == 'R')
            printf("R %s -> %s\n", st->entries[i].from, st->entries[i].path);
        else
            printf("%c %s\n", st->entries[i].kind, st->entries[i].path);
    if (!st->n && !o->quiet)
        printf("clean at change %" PRIu64 " on branch %s\n", st->change, st->branch);
    cn_ws_status_free(st);
    int rc;
    if (cn_ws_cherry_pick_pending(dir)) {
        printf("a rejected cherry-pick left its files: cairn repo cherry-pick --abort\n");
        rc = EXIT_CONFLICT;
    } else {
        rc = cn__repo_merge_status(dir, o->quiet);
    }
    status_locks(dir, &wo);
    return rc;
}

static int cmd_mv(const ropts_t *o)
{
    if (o->npos != 2) {
        fputs("usage: cairn repo mv SRC DST [-C DIR]\n", stderr);
        return EXIT_USAGE;
    }
    ws_t w;
    int rc = cn__repo_open_ws(o, &w);
    if (rc)
        return rc;
    cn_ws_error_t err;
    if (cn_ws_move(w.dir, o->pos[0], o->pos[1], &err))
        return cn__repo_report(&err);
    if (!o->quiet)
        printf("moved %s -> %s\n", o->pos[0], o->pos[1]);
    return EXIT_OK;
}

static int cmd_submit(const ropts_t *o)
{
    if (!o->message) {
        fputs("cairn repo submit: -m MESSAGE is required\n", stderr);
        return EXIT_USAGE;
    }
    bar_t bar = { 0 };
    cn_ws_opts_t wo = cn__repo_ws_opts(o, false, &bar);
    cn_ws_submit_result_t res;
    cn_ws_error_t err;
    cn_err_t e = cn_ws_submit(o->npos ? o->pos[0] : ".", o->message, &wo, &res, &err);
    cn__repo_print_settled(res.settled, res.settled_change);
    if (e)
        return cn__repo_report(&err);
    if (o->quiet)
        return EXIT_OK;
    if (res.nothing)
        printf("nothing to submit at change %" PRIu64 "\n", res.change);
    else
        printf("change %" PRIu64 ": %zu path(s), %zu object(s) uploaded (%" PRIu64
               " bytes), %" PRIu64 " bytes sent\n",
               res.change, res.paths, res.objects, res.object_bytes, res.bytes_sent);
    return EXIT_OK;
}

/* What the log printers share: the workspace, and the branches a pick's
 * source id is printed as, listed once on the first picked row (none when
 * that fails: the id is printed then). */
typedef struct log_ctx {
    const ropts_t *o;
    const char *dir;
    const cn_ws_opts_t *wo;
    cn_ws_branch_t *branches;
    size_t n;
    bool listed;
} log_ctx_t;

/* The current name of branch id, or NULL when it cannot be resolved. */
static const char *branch_name(log_ctx_t *c, const uint8_t id[16])
{
    if (!c->listed) {
        cn_ws_error_t err;
        c->listed = true;
        if (cn_ws_branch_list(c->dir, c->wo, &c->branches, &c->n, &err) < 0) {
            c->branches = NULL;
            c->n = 0;
        }
    }
    for (size_t i = 0; i < c->n; i++)
        if (memcmp(c->branches[i].info.id, id, 16) == 0)
            return c->branches[i].info.name;
    return NULL;
}

static int print_log(void *ctx, const cn_scribe_client_logrow_t *r)
{
    char when[CN_RFC3339_LEN], id[65];
    cn_rfc3339((int64_t)r->time_ms, when);
    hex(r->commit.b, 12, id);
    static const char *const ev[] = { "", "add", "modify", "delete", "move", "keep" };
    printf("change %" PRIu64 "  %s  %s  %s", r->change, id, r->author, when);
    if (r->path[0])
        printf("  %s %s", r->event < 6 ? ev[r->event] : "?", r->path);
    printf("\n    %s\n", r->message);
    if (r->has_pick) {
        const char *name = branch_name(ctx, r->pick_branch);
        hex(r->pick_branch, 16, id);
        printf("    picked from change %" PRIu64 " of branch %s\n", r->pick_change,
               name ? name : id);
    }
    return 0;
}

/* A merge-aware row: the ordinary line, then the branch that accepted it,
 * a move's source, a merge's parent and, all-branch, the membership. */
static int print_mlog(void *ctx, const cn_scribe_client_mlogrow_t *r)
{
    const log_ctx_t *c = ctx;
    print_log(ctx, &r->row);
    printf("    branch %s", r->branch_name);
    if (r->from_path[0])
        printf("; moved from %s", r->from_path);
    if (r->has_merge)
        printf("; merge of change %" PRIu64, r->merge_change);
    if (c->o->all_branches)
        printf("; %s the branch at change %" PRIu64, r->member ? "in" : "not in", r->ceiling);
    printf("\n");
    return 0;
}

static int cmd_log(const ropts_t *o)
{
    const char *dir = ".", *path = NULL;
    if (o->npos >= 1) {
        if (cn_ws_exists(o->pos[0])) {
            dir = o->pos[0];
            path = o->npos > 1 ? o->pos[1] : NULL;
        } else {
            path = o->pos[0];
        }
    }
    bar_t bar = { 0 };
    cn_ws_opts_t wo = cn__repo_ws_opts(o, false, &bar);
    cn_ws_error_t err;
    log_ctx_t c = { .o = o, .dir = dir, .wo = &wo };
    cn_err_t e;
    if (o->follow_merges || o->all_branches) {
        if (!path) {
            fprintf(stderr, "cairn repo log: --follow-merges and --all-branches need one PATH\n");
            return EXIT_USAGE;
        }
        e = cn_ws_log_merges(dir, path, o->all_branches, o->has_change ? o->change : 0, o->limit,
                             &wo, print_mlog, &c, &err);
    } else {
        e = cn_ws_log(dir, path, o->limit, &wo, print_log, &c, &err);
    }
    cn_ws_branch_list_free(c.branches);
    return e ? cn__repo_report(&err) : EXIT_OK;
}

/* Appends a description revision over the latest one (a change's message
 * never changes; the note overlays it). */
static int cmd_describe(const ropts_t *o)
{
    if (!o->message || o->npos < 1 || o->npos > 2) {
        fputs(cn__repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *dir = o->npos == 2 ? o->pos[0] : ".", *num = o->pos[o->npos - 1];
    char *end;
    uint64_t change = strtoull(num, &end, 10);
    if (*end || !*num) {
        fprintf(stderr, "cairn repo describe: CHANGE is a number\n");
        return EXIT_USAGE;
    }
    bar_t bar = { 0 };
    cn_ws_opts_t wo = cn__repo_ws_opts(o, false, &bar);
    cn_ws_error_t err;
    uint32_t rev = 0;
    if (cn_ws_describe(dir, change, o->message, &wo, &rev, &err))
        return cn__repo_report(&err);
    if (!o->quiet)
        printf("change %" PRIu64 ": description revision %u\n", change, rev);
    return EXIT_OK;
}

int cn__repo_auth(int argc, char **argv);   /* repo_auth.c */
int cn__repo_anchor(int argc, char **argv); /* repo_anchor.c */

typedef int (*verb_fn)(int argc, char **argv);

/* The verbs that parse their own options, in their own files: the whole
 * command line goes to them (argv[1] is the verb).  NULL for the others. */
static verb_fn own_options(const char *verb)
{
    static const struct {
        const char *name;
        verb_fn fn;
    } verbs[] = {
        { "merge", cn__repo_merge },         { "resolve", cn__repo_merge },   /* repo_merge.c */
        { "lock", cn__repo_lock },           { "unlock", cn__repo_lock },     /* repo_lock.c */
        { "locks", cn__repo_lock },          { "edit", cn__repo_lock },       /* repo_lock.c */
        { "workspace", cn__repo_workspace }, { "mounts", cn__repo_mounts },   /* their files */
        { "discover", cn__repo_discover },                                    /* repo_discover.c */
        { "login", cn__repo_auth },          { "whoami", cn__repo_auth },     /* SAU2 sign-in: */
        { "logout", cn__repo_auth },         { "automation", cn__repo_auth }, /* repo_auth.c */
        { "auth", cn__repo_auth },           { "anchor", cn__repo_anchor },   /* repo_anchor.c */
    };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(verb, verbs[i].name))
            return verbs[i].fn;
    return NULL;
}

int cn_cmd_repo(int argc, char **argv)
{
    ropts_t o;
    memset(&o, 0, sizeof o);
    o.endpoint = getenv("CAIRN_SCRIBE_ENDPOINT");
    o.author = getenv("USER") ? getenv("USER") : "cairn";
    if (argc < 2) {
        fputs(cn__repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *verb = argv[1];
    verb_fn own = own_options(verb);
    if (own)
        return own(argc, argv);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--endpoint") && more)
            o.endpoint = o.endpoint_flag = argv[++i];
        else if ((!strcmp(a, "-m") || !strcmp(a, "--message")) && more)
            o.message = argv[++i];
        else if (!strcmp(a, "--author") && more)
            o.author = argv[++i];
        else if (!strcmp(a, "-C") && more)
            o.dir = argv[++i];
        else if (!strcmp(a, "--from") && more)
            o.from = argv[++i];
        else if (!strcmp(a, "--branch") && more)
            o.branch = argv[++i];
        else if (!strcmp(a, "--follow-merges"))
            o.follow_merges = true;
        else if (!strcmp(a, "--abort"))
            o.abort = true;
        else if (!strcmp(a, "--all-branches"))
            o.all_branches = true;
        else if (!strcmp(a, "--keep-locks"))
            o.keep_locks = true;
        else if (!strcmp(a, "--tag") && more) {
            if (o.ntags == 16) {
                fprintf(stderr, "cairn repo: at most 16 --tag\n");
                return EXIT_USAGE;
            }
            o.tags[o.ntags++] = argv[++i];
        } else if (!strcmp(a, "--lz4"))
            o.lz4 = true;
        else if (!strcmp(a, "--lz4-storage"))
            o.lz4_storage = true;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
            o.quiet = true;
        else if (!strcmp(a, "--change") && more) {
            char *end;
            o.change = strtoull(argv[++i], &end, 10);
            o.has_change = true;
            if (*end) {
                fprintf(stderr, "cairn repo: --change wants a number\n");
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--path") && more) {
            if (o.npaths == CN_WS_PATHS_MAX) {
                fprintf(stderr, "cairn repo: at most %d --path prefixes\n", CN_WS_PATHS_MAX);
                return EXIT_USAGE;
            }
            o.paths[o.npaths++] = argv[++i];
        } else if (!strcmp(a, "--conns") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > CN_SCRIBE_CLIENT_MAX_DATA) {
                fprintf(stderr, "cairn repo: --conns wants 0..%d\n", CN_SCRIBE_CLIENT_MAX_DATA);
                return EXIT_USAGE;
            }
            o.conns = v ? (int)v : -1;
        } else if (!strcmp(a, "-n") && more)
            o.limit = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(cn__repo_usage, stdout);
            return EXIT_OK;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "cairn repo: unknown option '%s'\n%s", a, cn__repo_usage);
            return EXIT_USAGE;
        } else if (o.npos < 3)
            o.pos[o.npos++] = a;
        else {
            fputs(cn__repo_usage, stderr);
            return EXIT_USAGE;
        }
    }
    bool clone = !strcmp(verb, "clone") || !strcmp(verb, "checkout");
    bool branchy = !strcmp(verb, "branch") || !strcmp(verb, "switch") ||
                   !strcmp(verb, "cherry-pick") || !strcmp(verb, "mv");
    const char *misplaced = o.branch && !clone                 ? "--branch is for clone"
                            : o.ntags && !clone                ? "--tag is for clone"
                            : o.from && strcmp(verb, "branch") ? "--from is for branch create"
                            : o.dir && !branchy
                                ? "-C is for the branch verbs and cherry-pick; others take DIR"
                                : NULL;
    if (misplaced) {
        fprintf(stderr, "cairn repo: %s\n", misplaced);
        return EXIT_USAGE;
    }
    /* the verbs that name a repository also take it as a URL */
    char url_ep[256];
    if (o.npos && (!strcmp(verb, "create") || !strcmp(verb, "info") || clone)) {
        const char *url_endpoint = NULL;
        int rc = split_repo_url(o.pos[0], url_ep, sizeof url_ep, &url_endpoint, &o.pos[0]);
        if (rc)
            return rc;
        if (url_endpoint && o.endpoint_flag && strcmp(url_endpoint, o.endpoint_flag)) {
            fprintf(stderr, "cairn repo: --endpoint %s and the URL's %s differ\n", o.endpoint_flag,
                    url_endpoint);
            return EXIT_USAGE;
        }
        if (url_endpoint)
            o.endpoint = url_endpoint;
    }
    if (!strcmp(verb, "create"))
        return cmd_create(&o);
    if (!strcmp(verb, "list"))
        return cmd_list_info(&o, false);
    if (!strcmp(verb, "info"))
        return cmd_list_info(&o, true);
    if (clone)
        return cmd_clone(&o);
    if (!strcmp(verb, "status"))
        return cmd_status(&o);
    if (!strcmp(verb, "submit"))
        return cmd_submit(&o);
    if (!strcmp(verb, "mv"))
        return cmd_mv(&o);
    if (!strcmp(verb, "sync"))
        return cmd_sync(&o);
    if (!strcmp(verb, "log"))
        return cmd_log(&o);
    if (!strcmp(verb, "describe"))
        return cmd_describe(&o);
    if (!strcmp(verb, "branch"))
        return cn__repo_branch(&o);
    if (!strcmp(verb, "switch"))
        return cn__repo_switch(&o);
    if (!strcmp(verb, "cherry-pick"))
        return cn__repo_cherry_pick(&o);
    fprintf(stderr, "cairn repo: unknown command '%s'\n%s", verb, cn__repo_usage);
    return EXIT_USAGE;
}
