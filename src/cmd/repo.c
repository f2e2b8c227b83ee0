/* `cairn repo create|list|info|clone|status|submit|sync|log|describe`:
 * version control of large files over Scribe protocol 2
 * (include/cairn/scribe_client.h).  This file parses the arguments and runs
 * the commands; the workspace they work on (DIR/.cairn/state, the scan, the
 * fetch) is the layer in ws.h.
 *
 * `status` compares the directory with the state.  `submit` splits changed
 * files by content-defined chunking, pins every identity under the operation
 * id (persisted before it is sent), uploads only the absent objects in
 * dependency order (chunks, manifests, change set), and submits once; a lost
 * reply is resolved through operation_outcome.  `clone` and `sync` fetch the
 * files that differ from the snapshot, every chunk checked against its id,
 * and remove those it no longer holds.  Exit codes as the object commands
 * (docs/cli.md). */
#include "cmd.h"
#include "ws.h"

#include "cairn/scribe_client.h"
#include "cairn/repos_model.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char repo_usage[] =
    "usage: cairn repo create NAME [--lz4-storage]     create a repository\n"
    "       cairn repo list                            list repositories\n"
    "       cairn repo info NAME                       show a repository\n"
    "       cairn repo clone NAME DIR [--change N] [--path PREFIX]...\n"
    "                                                  check a branch (or only PREFIXes) out\n"
    "       cairn repo status [DIR]                    added, modified, deleted files\n"
    "       cairn repo submit [DIR] -m MESSAGE         submit DIR's changes atomically\n"
    "       cairn repo sync [DIR] [--change N] [--path PREFIX]...\n"
    "                                                  bring DIR to the head (or change N);\n"
    "                                                  --path adds prefixes to a sparse DIR\n"
    "       cairn repo log [DIR] [PATH] [-n N]         history, newest first\n"
    "       cairn repo describe [DIR] CHANGE -m TEXT   revise a change's description\n"
    "REPO: NAME, HOST:PORT/NAME or scribe://HOST[:PORT]/NAME\n"
    "options: --endpoint HOST:PORT (CAIRN_SCRIBE_ENDPOINT, default 127.0.0.1:7447)\n"
    "         --lz4 (LZ4 transfers)  --author NAME (default $USER)  --quiet\n"
    "         --conns N (data connections for transfers, 0..4, default 4)\n"
    "exit: 0 ok, 1 server error, 2 usage, 3 not found, 5 network, 6 conflict,\n"
    "      7 local file error, 8 checksum mismatch (docs/cli.md)\n";

typedef struct ropts {
    const char *endpoint, *message, *author;
    bool lz4, lz4_storage, quiet;
    int conns;                  /* data connections: 0 = 4, -1 = none */
    bool has_change;
    uint64_t change;
    uint32_t limit;
    const char *paths[CN_WS_PATHS_MAX];     /* --path PREFIX (sparse workspaces) */
    int npaths;
    const char *pos[3];
    int npos;
    /* --endpoint as given: a workspace's verbs obey it over the endpoint its
     * state records, which in turn beats CAIRN_SCRIBE_ENDPOINT */
    const char *endpoint_flag;
} ropts_t;

/* Splits a repository argument -- `NAME`, `HOST:PORT/NAME` or
 * `scribe://HOST[:PORT]/NAME` -- into the endpoint it names (left NULL when it
 * names none) and the repository name, which points into `arg`.  The endpoint
 * is copied to `ep`.  Returns EXIT_OK, or EXIT_USAGE with the reason on stderr. */
static int split_repo_url(const char *arg, char *ep, size_t epsz, const char **endpoint,
                          const char **name)
{
    const char *rest = arg, *scheme_end = strstr(arg, "://");
    if (scheme_end) {
        size_t sl = (size_t)(scheme_end - arg);
        if (sl == 7 && !strncmp(arg, "scribes", 7)) {
            fprintf(stderr, "cairn repo: %s: protocol 4 over TLS is not served yet; "
                            "use scribe://HOST:PORT/NAME\n", arg);
            return EXIT_USAGE;
        }
        if (sl != 6 || strncmp(arg, "scribe", 6)) {
            fprintf(stderr, "cairn repo: %s: unknown scheme (want scribe://HOST:PORT/NAME)\n",
                    arg);
            return EXIT_USAGE;
        }
        rest = scheme_end + 3;
    }
    const char *slash = strchr(rest, '/');
    if (!slash && !scheme_end) {
        *name = arg;
        return EXIT_OK;
    }
    size_t hl = slash ? (size_t)(slash - rest) : 0;
    if (!hl || !slash[1] || hl >= epsz || strchr(slash + 1, '/')) {
        fprintf(stderr, "cairn repo: %s: want NAME, HOST:PORT/NAME or scribe://HOST:PORT/NAME\n",
                arg);
        return EXIT_USAGE;
    }
    memcpy(ep, rest, hl);
    ep[hl] = 0;
    *endpoint = ep;
    *name = slash + 1;
    return EXIT_OK;
}

static cn_err_t connect_to(const ropts_t *o, cn_scribe_client_t **cl, cn_scribe_cerr_t *err)
{
    cn_scribe_client_cfg_t cfg = {o->endpoint, 1, o->lz4, 0, 0, o->conns, 0};
    return cn_scribe_client_new(&cfg, cl, err);
}

/* ---- commands -------------------------------------------------------------------------------- */
static int print_repo(void *ctx, const cn_scribe_client_repo_t *r)
{
    (void)ctx;
    char id[33];
    cn_ws_hex(r->id, 16, id);
    printf("%s\thead %" PRIu64 "\t%s\n", r->name, r->head, id);
    return 0;
}

static int cmd_create(const ropts_t *o)
{
    if (o->npos != 1) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return cn_ws_fail("connect", e, &err);
    cn_scribe_client_repo_t r;
    e = cn_scribe_client_repo_create(cl, o->pos[0], o->lz4_storage ? 1 : 0, &r, &err);
    cn_scribe_client_free(cl);
    if (e < 0)
        return cn_ws_fail(o->pos[0], e, &err);
    if (!o->quiet)
        print_repo(NULL, &r);
    return EXIT_OK;
}

static int cmd_list_info(const ropts_t *o, bool info)
{
    if (o->npos != (info ? 1 : 0)) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return cn_ws_fail("connect", e, &err);
    if (info) {
        cn_scribe_client_repo_t r;
        e = cn_scribe_client_repo_info(cl, o->pos[0], &r, &err);
        if (e >= 0) {
            char id[33], br[33], inc[33];
            cn_ws_hex(r.id, 16, id);
            cn_ws_hex(r.main_branch, 16, br);
            cn_ws_hex(r.incarnation, 16, inc);
            printf("name %s\nid %s\nmain %s\nhead %" PRIu64 "\nincarnation %s\n"
                   "storage %s\n", r.name, id, br, r.head, inc, r.compression ? "lz4" : "raw");
        }
    } else {
        e = cn_scribe_client_repo_list(cl, print_repo, NULL, &err);
    }
    cn_scribe_client_free(cl);
    return e < 0 ? cn_ws_fail(info ? o->pos[0] : "list", e, &err) : EXIT_OK;
}

/* Brings the workspace to change `target`: fetches every file whose manifest
 * or mode differs, removes files the snapshot does not hold.  Local edits
 * to files the sync touches are overwritten only when unchanged since the
 * last sync; otherwise the sync stops with a conflict. */
typedef struct tree_acc { wstate_t *next; } tree_acc_t;

static int tree_row(void *ctx, const cn_scribe_client_entry_t *e)
{
    tree_acc_t *a = ctx;
    wfile_t *w = cn_ws_state_add(a->next, e->path);
    if (!w)
        return -ENOMEM;
    w->manifest = e->manifest;
    w->mode = e->mode;
    w->size = e->size;
    w->mtime_ns = -1;       /* not on disk yet */
    return 0;
}

static int sync_to(cn_scribe_client_t *cl, wstate_t *s, uint64_t target, bool quiet)
{
    cn_scribe_cerr_t err;
    memset(&err, 0, sizeof err);
    wstate_t next;
    memset(&next, 0, sizeof next);
    tree_acc_t a = {&next};
    cn_err_t e = CN_OK;
    for (size_t p = 0; p < (s->npaths ? s->npaths : 1) && e >= 0; p++)
        e = cn_scribe_client_tree(cl, s->repo_id, s->branch, target,
                                  s->npaths ? s->paths[p] : "", tree_row, &a, NULL, NULL, &err);
    if (e < 0) {
        cn_ws_state_free(&next);
        return cn_ws_fail("reading the tree", e, &err);
    }
    qsort(next.files, next.n, sizeof *next.files, cn_ws_by_path);
    int rc = EXIT_OK;
    uint64_t bytes = 0, fetched = 0, removed = 0;
    job_t *jobs = calloc(next.n ? next.n : 1, sizeof *jobs);
    size_t nj = 0;
    if (!jobs)
        rc = cn_ws_local_fail("out of memory for", s->dir, ENOMEM);
    for (size_t i = 0; i < next.n && rc == EXIT_OK; i++) {
        wfile_t *w = &next.files[i], *old = cn_ws_state_find(s, w->path);
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, w->path);
        struct stat st;
        bool exists = lstat(full, &st) == 0;
        if (old && exists && !memcmp(old->manifest.b, w->manifest.b, 32) && old->mode == w->mode) {
            w->mtime_ns = old->mtime_ns;
            continue;
        }
        if (exists && (!old || old->mtime_ns != cn_ws_mtime_ns(&st) ||
                       old->size != (uint64_t)st.st_size)) {
            fprintf(stderr, "cairn repo: %s has local changes; submit or remove them first\n",
                    w->path);
            rc = EXIT_CONFLICT;
            break;
        }
        jobs[nj].w = w;
        nj++;
    }
    if (rc == EXIT_OK)
        rc = cn_ws_fetch_all(cl, s, jobs, nj, &bytes, quiet);
    fetched = nj;
    for (size_t k = 0; jobs && k < nj; k++)
        cn_buf_free(&jobs[k].menc);
    free(jobs);
    for (size_t i = 0; i < s->n && rc == EXIT_OK; i++) {
        if (cn_ws_state_find(&next, s->files[i].path))
            continue;
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, s->files[i].path);
        struct stat st;
        if (lstat(full, &st) == 0 && cn_ws_mtime_ns(&st) == s->files[i].mtime_ns)
            unlink(full);
        removed++;
    }
    if (rc == EXIT_OK) {
        cn_ws_files_free(s);
        s->files = next.files;
        s->n = next.n;
        s->cap = next.cap;
        s->change = target;
        rc = cn_ws_state_save(s);
        if (!quiet && rc == EXIT_OK)
            printf("at change %" PRIu64 ": %" PRIu64 " file(s) fetched (%" PRIu64
                   " bytes), %" PRIu64 " removed\n", target, fetched, bytes, removed);
    } else {
        cn_ws_state_free(&next);
    }
    return rc;
}

static int cmd_clone(const ropts_t *o)
{
    if (o->npos != 1 && o->npos != 2) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *name = o->pos[0], *dir = o->npos == 2 ? o->pos[1] : o->pos[0];
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return cn_ws_fail("connect", e, &err);
    cn_scribe_client_repo_t r;
    if ((e = cn_scribe_client_repo_info(cl, name, &r, &err)) < 0) {
        cn_scribe_client_free(cl);
        return cn_ws_fail(name, e, &err);
    }
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/.cairn", dir);
    if (cn_mkdir_p(dir, 0755) < 0 || mkdir(cdir, 0700) < 0) {
        cn_scribe_client_free(cl);
        return cn_ws_local_fail("cannot create", errno == EEXIST ? cdir : dir,
                                errno ? errno : EEXIST);
    }
    wstate_t s;
    memset(&s, 0, sizeof s);
    snprintf(s.dir, sizeof s.dir, "%s", dir);
    snprintf(s.endpoint, sizeof s.endpoint, "%s",
             o->endpoint ? o->endpoint : CN_SCRIBE_CLIENT_DEFAULT_ENDPOINT);
    snprintf(s.repo, sizeof s.repo, "%s", name);
    memcpy(s.repo_id, r.id, 16);
    memcpy(s.branch, r.main_branch, 16);
    memcpy(s.incarnation, r.incarnation, 16);
    cn_random_bytes(s.workspace, 16);
    int rc = EXIT_OK;
    for (int i = 0; i < o->npaths && rc == EXIT_OK; i++)
        rc = cn_ws_scope_add(&s, o->paths[i]);
    if (rc == EXIT_OK)
        rc = cn_ws_state_save(&s);
    if (rc == EXIT_OK)
        rc = sync_to(cl, &s, o->has_change ? o->change : r.head, o->quiet);
    cn_ws_state_free(&s);
    cn_scribe_client_free(cl);
    return rc;
}

static int cmd_status(const ropts_t *o)
{
    wstate_t s;
    int rc = cn_ws_state_load(o->npos ? o->pos[0] : ".", &s);
    scan_t sc = {0};
    if (rc == EXIT_OK)
        rc = cn_ws_diff(&s, &sc);
    if (rc == EXIT_OK) {
        qsort(s.files, s.n, sizeof *s.files, cn_ws_by_path);
        size_t n = 0;
        for (size_t i = 0; i < s.n; i++) {
            const wfile_t *w = &s.files[i];
            char c = !w->on_disk ? 'D' : w->mtime_ns == -2 ? 'A' : w->changed ? 'M' : 0;
            if (c) {
                printf("%c %s\n", c, w->path);
                n++;
            }
        }
        if (!n && !o->quiet)
            printf("clean at change %" PRIu64 "\n", s.change);
    }
    cn_ws_scan_free(&sc);
    cn_ws_state_free(&s);
    return rc;
}

static int ref_cmp(const void *a, const void *b)
{
    const cn_scribe_client_obj_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return memcmp(x->id.b, y->id.b, 32);
}

/* A previous submit whose reply was lost: settle it before anything else. */
static int settle_pending(cn_scribe_client_t *cl, wstate_t *s)
{
    if (!s->has_pending)
        return EXIT_OK;
    cn_scribe_cerr_t err;
    bool known = false;
    cn_scribe_client_outcome_t out;
    cn_err_t e = cn_scribe_client_outcome(cl, s->repo_id, s->pending, &known, &out, &err);
    if (e < 0)
        return cn_ws_fail("resolving the previous submit", e, &err);
    s->has_pending = false;
    if (!known || !out.accepted)
        return cn_ws_state_save(s);
    /* It was accepted: the workspace is at that change; files are
     * re-recorded from its tree (their mtimes force one rehash). */
    printf("the previous submit was accepted as change %" PRIu64 "\n", out.change);
    wstate_t next;
    memset(&next, 0, sizeof next);
    tree_acc_t a = {&next};
    for (size_t p = 0; p < (s->npaths ? s->npaths : 1) && e >= 0; p++)
        e = cn_scribe_client_tree(cl, s->repo_id, s->branch, out.change,
                                  s->npaths ? s->paths[p] : "", tree_row, &a, NULL, NULL, &err);
    if (e < 0) {
        cn_ws_state_free(&next);
        return cn_ws_fail("reading the tree", e, &err);
    }
    cn_ws_files_free(s);
    s->files = next.files;
    s->n = next.n;
    s->cap = next.cap;
    s->change = out.change;
    qsort(s->files, s->n, sizeof *s->files, cn_ws_by_path);
    return cn_ws_state_save(s);
}

static int cmd_submit(const ropts_t *o)
{
    if (!o->message) {
        fputs("cairn repo submit: -m MESSAGE is required\n", stderr);
        return EXIT_USAGE;
    }
    wstate_t s;
    int rc = cn_ws_state_load(o->npos ? o->pos[0] : ".", &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    oo.endpoint = o->endpoint_flag ? o->endpoint_flag : s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    memset(&err, 0, sizeof err);
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e < 0) {
        cn_ws_state_free(&s);
        return cn_ws_fail("connect", e, &err);
    }
    scan_t sc = {0};
    fcontent_t *cont = NULL;
    cn_repos_change_t *changes = NULL;
    cn_scribe_client_obj_t *objs = NULL;
    cn_scribe_client_ref_t *refs = NULL;
    bool *present = NULL;
    size_t nch = 0, nobj = 0;
    cn_buf_t csenc = {0};
    if ((rc = settle_pending(cl, &s)) || (rc = cn_ws_diff(&s, &sc)))
        goto out;
    qsort(s.files, s.n, sizeof *s.files, cn_ws_by_path);
    cont = calloc(s.n ? s.n : 1, sizeof *cont);
    changes = calloc(s.n ? s.n : 1, sizeof *changes);
    if (!cont || !changes) {
        rc = cn_ws_local_fail("out of memory for", s.dir, ENOMEM);
        goto out;
    }
    size_t total_chunks = 0;
    for (size_t i = 0; i < s.n && rc == EXIT_OK; i++) {
        wfile_t *w = &s.files[i];
        if (w->on_disk && !w->changed)
            continue;
        cn_repos_change_t *c = &changes[nch++];
        c->path = (const uint8_t *)w->path;
        c->path_len = (uint16_t)strlen(w->path);
        if (!w->on_disk) {
            c->kind = CN_REPOS_DELETE;
            continue;
        }
        c->kind = w->mtime_ns == -2 ? CN_REPOS_ADD : CN_REPOS_MODIFY;
        struct stat st;
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s.dir, w->path);
        if (lstat(full, &st) < 0) {
            rc = cn_ws_local_fail("cannot stat", full, errno);
            break;
        }
        if ((rc = cn_ws_content_load(s.dir, w->path, &st, &cont[i])) != EXIT_OK)
            break;
        c->manifest = cont[i].mid;
        c->mode = w->disk_mode;
        total_chunks += cont[i].nchunks;
    }
    if (rc)
        goto out;
    if (!nch) {
        if (!o->quiet)
            printf("nothing to submit at change %" PRIu64 "\n", s.change);
        rc = cn_ws_state_save(&s);    /* refreshed mtimes */
        goto out;
    }
    if (cn_repos_changeset_encode(&csenc, changes, (uint32_t)nch) < 0) {
        fprintf(stderr, "cairn repo: the changes are not a valid change set (a file and a "
                        "directory of the same name, or case-only aliases)\n");
        rc = EXIT_CONFLICT;
        goto out;
    }
    cn_digest_t csid;
    cn_repos_object_id(CN_REPOS_CHANGESET, csenc.data, csenc.len, &csid);
    /* Every identity, in dependency order, without repeats. */
    objs = malloc((total_chunks + s.n + 1) * sizeof *objs);
    if (!objs) {
        rc = cn_ws_local_fail("out of memory for", s.dir, ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < s.n; i++)
        for (uint32_t k = 0; k < cont[i].nchunks; k++)
            objs[nobj++] = (cn_scribe_client_obj_t){CN_REPOS_CHUNK, cont[i].chunks[k].id,
                                                    cont[i].map + cont[i].offs[k],
                                                    cont[i].chunks[k].len};
    for (size_t i = 0; i < s.n; i++)
        if (cont[i].manifest.len)
            objs[nobj++] = (cn_scribe_client_obj_t){CN_REPOS_MANIFEST, cont[i].mid,
                                                    cont[i].manifest.data, cont[i].manifest.len};
    objs[nobj++] = (cn_scribe_client_obj_t){CN_REPOS_CHANGESET, csid, csenc.data, csenc.len};
    qsort(objs, nobj, sizeof *objs, ref_cmp);   /* kinds 1, 2, 3 stay in dependency order */
    size_t u = 0;
    for (size_t i = 0; i < nobj; i++)
        if (!u || ref_cmp(&objs[u - 1], &objs[i]) != 0)
            objs[u++] = objs[i];
    nobj = u;
    refs = malloc(nobj * sizeof *refs);
    present = malloc(nobj * sizeof *present);
    if (!refs || !present) {
        rc = cn_ws_local_fail("out of memory for", s.dir, ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < nobj; i++)
        refs[i] = (cn_scribe_client_ref_t){objs[i].kind, objs[i].id};
    /* The operation id is persisted before anything names it. */
    cn_random_bytes(s.pending, 16);
    s.has_pending = true;
    if ((rc = cn_ws_state_save(&s)))
        goto out;
    if ((e = cn_scribe_client_pin(cl, s.repo_id, s.workspace, s.pending, refs, nobj, present,
                                  &err)) < 0) {
        rc = cn_ws_fail("pinning", e, &err);
        goto out;
    }
    size_t send = 0;
    uint64_t send_bytes = 0;
    for (size_t i = 0; i < nobj; i++)
        if (!present[i]) {
            send_bytes += objs[i].len;
            objs[send++] = objs[i];
        }
    progress_t pg;
    cn_ws_progress_start(&pg, cl, "uploading", send_bytes, o->quiet);
    e = send ? cn_scribe_client_put(cl, s.repo_id, objs, send, &err) : CN_OK;
    cn_ws_progress_end(&pg, cl);
    if (e < 0) {
        rc = cn_ws_fail("uploading", e, &err);
        goto out;
    }
    cn_scribe_client_submit_t sub;
    memset(&sub, 0, sizeof sub);
    memcpy(sub.repo, s.repo_id, 16);
    memcpy(sub.incarnation, s.incarnation, 16);
    memcpy(sub.operation, s.pending, 16);
    memcpy(sub.branch, s.branch, 16);
    memcpy(sub.workspace, s.workspace, 16);
    sub.base = s.change;
    sub.changeset = csid;
    sub.author = o->author;
    sub.message = o->message;
    cn_scribe_client_outcome_t out;
    if ((e = cn_scribe_client_submit(cl, &sub, &out, &err)) < 0) {
        rc = cn_ws_fail("submit", e, &err);
        goto out;
    }
    s.has_pending = false;
    if (!out.accepted) {
        fprintf(stderr, "cairn repo: submit rejected (code %u, head %" PRIu64 "): %s%s%s\n",
                out.code, out.head, out.detail, out.npaths ? ": " : "", out.first_path);
        cn_ws_state_save(&s);
        rc = EXIT_CONFLICT;
        goto out;
    }
    /* Record the new state: the submitted files as they are on disk. */
    size_t keep = 0;
    for (size_t i = 0; i < s.n; i++) {
        wfile_t *w = &s.files[i];
        if (!w->on_disk) {
            free(w->path);
            continue;
        }
        if (w->changed) {
            w->manifest = cont[i].mid;
            w->mode = w->disk_mode;
            w->size = w->disk_size;
            w->mtime_ns = w->disk_mtime;
        }
        s.files[keep++] = *w;
    }
    s.n = keep;
    s.change = out.change;
    if ((rc = cn_ws_state_save(&s)) == EXIT_OK && !o->quiet) {
        uint64_t sent = 0, recv = 0;
        cn_scribe_client_bytes(cl, &sent, &recv);
        printf("change %" PRIu64 ": %zu path(s), %zu object(s) uploaded (%" PRIu64
               " bytes), %" PRIu64 " bytes sent\n", out.change, nch, send, send_bytes, sent);
    }
out:
    if (cont)
        for (size_t i = 0; i < s.n; i++)
            cn_ws_content_free(&cont[i]);
    free(cont);
    free(changes);
    free(objs);
    free(refs);
    free(present);
    cn_buf_free(&csenc);
    cn_ws_scan_free(&sc);
    cn_ws_state_free(&s);
    cn_scribe_client_free(cl);
    return rc;
}

static int cmd_sync(const ropts_t *o)
{
    wstate_t s;
    int rc = cn_ws_state_load(o->npos ? o->pos[0] : ".", &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    oo.endpoint = o->endpoint_flag ? o->endpoint_flag : s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e < 0) {
        cn_ws_state_free(&s);
        return cn_ws_fail("connect", e, &err);
    }
    cn_scribe_client_repo_t r;
    bool widened = false;
    if (o->npaths && !s.npaths) {
        fprintf(stderr, "cairn repo: %s syncs every path already (--path is for workspaces "
                        "cloned with --path)\n", s.dir);
        rc = EXIT_USAGE;
    }
    for (int i = 0; i < o->npaths && rc == EXIT_OK; i++) {
        size_t had = s.npaths;
        rc = cn_ws_scope_add(&s, o->paths[i]);
        widened = widened || s.npaths != had;
    }
    if (rc == EXIT_OK && (rc = settle_pending(cl, &s)) == EXIT_OK) {
        e = cn_scribe_client_repo_info(cl, s.repo, &r, &err);
        if (e < 0)
            rc = cn_ws_fail(s.repo, e, &err);
        else if (memcmp(r.incarnation, s.incarnation, 16) != 0) {
            fprintf(stderr, "cairn repo: the repository was restored (new incarnation); "
                            "clone it again\n");
            rc = EXIT_CONFLICT;
        } else if (!o->has_change && r.head == s.change && !widened) {
            if (!o->quiet)
                printf("up to date at change %" PRIu64 "\n", s.change);
        } else {
            rc = sync_to(cl, &s, o->has_change ? o->change : r.head, o->quiet);
        }
    }
    cn_ws_state_free(&s);
    cn_scribe_client_free(cl);
    return rc;
}

static int print_log(void *ctx, const cn_scribe_client_logrow_t *r)
{
    (void)ctx;
    char when[CN_RFC3339_LEN], id[65];
    cn_rfc3339((int64_t)r->time_ms, when);
    cn_ws_hex(r->commit.b, 12, id);
    static const char *const ev[] = {"", "add", "modify", "delete", "move", "keep"};
    printf("change %" PRIu64 "  %s  %s  %s", r->change, id, r->author, when);
    if (r->path[0])
        printf("  %s %s", r->event < 6 ? ev[r->event] : "?", r->path);
    printf("\n    %s\n", r->message);
    return 0;
}

static int cmd_log(const ropts_t *o)
{
    const char *dir = ".", *path = NULL;
    if (o->npos >= 1) {
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/.cairn/state", o->pos[0]);
        if (access(probe, F_OK) == 0) {
            dir = o->pos[0];
            path = o->npos > 1 ? o->pos[1] : NULL;
        } else {
            path = o->pos[0];
        }
    }
    wstate_t s;
    int rc = cn_ws_state_load(dir, &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    oo.endpoint = o->endpoint_flag ? o->endpoint_flag : s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e >= 0)
        e = cn_scribe_client_log(cl, s.repo_id, s.branch, path, o->limit, print_log, NULL, &err);
    cn_scribe_client_free(cl);
    cn_ws_state_free(&s);
    return e < 0 ? cn_ws_fail("log", e, &err) : EXIT_OK;
}

/* Appends a description revision over the latest one (a change's message
 * never changes; the note overlays it). */
static int cmd_describe(const ropts_t *o)
{
    if (!o->message || o->npos < 1 || o->npos > 2) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *dir = o->npos == 2 ? o->pos[0] : ".", *num = o->pos[o->npos - 1];
    char *end;
    uint64_t change = strtoull(num, &end, 10);
    if (*end || !*num) {
        fprintf(stderr, "cairn repo describe: CHANGE is a number\n");
        return EXIT_USAGE;
    }
    wstate_t s;
    int rc = cn_ws_state_load(dir, &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    oo.endpoint = o->endpoint_flag ? o->endpoint_flag : s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    uint32_t rev = 0, now = 0;
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e >= 0)
        e = cn_scribe_client_note(cl, s.repo_id, change, &rev, NULL, 0, &err);
    if (e >= 0)
        e = cn_scribe_client_describe(cl, s.repo_id, change, rev, o->author, o->message, &now, &err);
    cn_scribe_client_free(cl);
    cn_ws_state_free(&s);
    if (e < 0)
        return cn_ws_fail("describe", e, &err);
    if (!o->quiet)
        printf("change %" PRIu64 ": description revision %u\n", change, now);
    return EXIT_OK;
}

int cn_cmd_repo(int argc, char **argv)
{
    ropts_t o;
    memset(&o, 0, sizeof o);
    o.endpoint = getenv("CAIRN_SCRIBE_ENDPOINT");
    o.author = getenv("USER") ? getenv("USER") : "cairn";
    if (argc < 2) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *verb = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--endpoint") && more)
            o.endpoint = o.endpoint_flag = argv[++i];
        else if ((!strcmp(a, "-m") || !strcmp(a, "--message")) && more)
            o.message = argv[++i];
        else if (!strcmp(a, "--author") && more)
            o.author = argv[++i];
        else if (!strcmp(a, "--lz4"))
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
            fputs(repo_usage, stdout);
            return EXIT_OK;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "cairn repo: unknown option '%s'\n%s", a, repo_usage);
            return EXIT_USAGE;
        } else if (o.npos < 3)
            o.pos[o.npos++] = a;
        else {
            fputs(repo_usage, stderr);
            return EXIT_USAGE;
        }
    }
    /* the verbs that name a repository also take it as a URL */
    char url_ep[256];
    if (o.npos && (!strcmp(verb, "create") || !strcmp(verb, "info") || !strcmp(verb, "clone") ||
                   !strcmp(verb, "checkout"))) {
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
    if (!strcmp(verb, "clone") || !strcmp(verb, "checkout"))
        return cmd_clone(&o);
    if (!strcmp(verb, "status"))
        return cmd_status(&o);
    if (!strcmp(verb, "submit"))
        return cmd_submit(&o);
    if (!strcmp(verb, "sync"))
        return cmd_sync(&o);
    if (!strcmp(verb, "log"))
        return cmd_log(&o);
    if (!strcmp(verb, "describe"))
        return cmd_describe(&o);
    fprintf(stderr, "cairn repo: unknown command '%s'\n%s", verb, repo_usage);
    return EXIT_USAGE;
}
