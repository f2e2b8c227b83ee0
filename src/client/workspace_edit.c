/* Lock policy in a workspace: main's `.scribe/config.toml` (opcode 29)
 * cached in DIR/.cairn/policy, the modes that follow it (a file under a
 * `required` rule is read-only while the workspace does not hold its
 * lock), `cn_ws_edit` and the lock part of status (cn_ws_lock_status).
 *
 * The server alone decides who holds a lock and enforces the rules at
 * submit; the modes here only tell an artist before they start work.  So
 * this file never caches a lock, never refuses an operation because of a
 * mode, and never changes a file's content or mtime: only its write bits,
 * and never those of a file edited since the state recorded it. */
#include "workspace_int.h"

#include "cairn/repos_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define POLICY_MAGIC "cairn-lock-policy 1"

/* ---- the cached policy --------------------------------------------------------------------- */
void cn__ws_policy_free(cn__ws_policy_t *p)
{
    cn_repo_config_free(&p->cfg);
}

bool cn__ws_policy_requires(const cn__ws_policy_t *p, const char *path)
{
    const cn_repo_lock_rule_t *r = p->cfg.nrules ? cn_repo_config_match(&p->cfg, path) : NULL;
    return r && r->mode == CN_LOCK_MODE_REQUIRED;
}

static bool has_required(const cn_repo_config_t *c)
{
    for (size_t i = 0; i < c->nrules; i++)
        if (c->rules[i].mode == CN_LOCK_MODE_REQUIRED)
            return true;
    return false;
}

/* Reads DIR/.cairn/policy into *change, *head and *text (malloc'd, NUL
 * terminated).  False when there is none or it is damaged: then the
 * policy is fetched as if never cached. */
static bool cache_read(const char *dir, uint64_t *change, uint64_t *head, char **text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.cairn/policy", dir);
    FILE *f = fopen(path, "re");
    *text = NULL;
    if (!f)
        return false;
    char *buf = malloc(CN_REPO_CONFIG_MAX + 256);
    size_t n = buf ? fread(buf, 1, CN_REPO_CONFIG_MAX + 255, f) : 0;
    fclose(f);
    if (!buf)
        return false;
    buf[n] = 0;
    /* the text starts after the header's blank line, byte for byte */
    char *body = strstr(buf, "\n\n");
    if (!body || sscanf(buf, POLICY_MAGIC " change %" SCNu64 " head %" SCNu64, change, head) != 2 ||
        strncmp(buf, POLICY_MAGIC "\n", sizeof POLICY_MAGIC)) {
        free(buf);
        return false;
    }
    body += 2;
    memmove(buf, body, n - (size_t)(body - buf) + 1);
    *text = buf;
    return true;
}

static cn_err_t cache_write(const cn__ws_state_t *s, uint64_t change, uint64_t head,
                            const char *text, cn_ws_error_t *err)
{
    char path[4200], tmp[4300], cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/.cairn", s->dir);
    snprintf(path, sizeof path, "%s/.cairn/policy", s->dir);
    snprintf(tmp, sizeof tmp, "%s/.cairn/policy.tmp", s->dir);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return cn__ws_file_fail(err, "cannot write", tmp, errno);
    bool ok = fprintf(f, POLICY_MAGIC "\nchange %" PRIu64 "\nhead %" PRIu64 "\n\n%s", change, head,
                      text) > 0;
    return cn__ws_file_publish(f, ok, tmp, path, cdir, err);
}

/* Parses text into p->cfg; a text that does not parse (only a server
 * older than the schema could send one) counts as no rules. */
static void policy_parse(cn__ws_policy_t *p, const char *text)
{
    char why[256];
    if (cn_repo_config_parse(text, strlen(text), &p->cfg, why, sizeof why) < 0)
        memset(&p->cfg, 0, sizeof p->cfg);
}

cn_err_t cn__ws_policy_get(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn__ws_policy_t *p,
                           cn_ws_error_t *err)
{
    memset(p, 0, sizeof *p);
    uint64_t cchange = 0, chead = 0;
    char *ctext = NULL, *text = NULL;
    bool cached = cache_read(s->dir, &cchange, &chead, &ctext);
    if (cached) {
        policy_parse(p, ctext);
        p->had_required = has_required(&p->cfg);
    }
    /* Staleness: the config can only change with a change on main, so
     * while main's head is the one the cache was read at, the cache is
     * current and 29 is not sent (repo_info's small reply instead). */
    cn_scribe_client_repo_t r;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_repo_info(cl, s->repo, &r, &serr);
    if (e < 0) {
        free(ctext);
        return cn__ws_fail(err, "lock policy", e, &serr);
    }
    bool same_repo = !memcmp(r.incarnation, s->incarnation, 16);
    if (cached && same_repo && r.head == chead) {
        p->change = cchange;
        free(ctext);
        return CN_OK;
    }
    uint64_t change = 0;
    size_t len = 0;
    e = cn_scribe_client_lock_policy(cl, s->repo_id, &change, &text, &len, &serr);
    if (e == CN_E_UNSUPPORTED) { /* a server before locks: no rules */
        e = CN_OK;
        change = 0;
        free(text);
        text = strdup(CN_REPO_CONFIG_DEFAULT);
        e = text ? CN_OK : -ENOMEM;
    }
    if (e < 0) {
        free(ctext);
        return cn__ws_fail(err, "lock policy", e, &serr);
    }
    p->changed = !cached || change != cchange || strcmp(text, ctext);
    if (p->changed) {
        cn_repo_config_free(&p->cfg);
        policy_parse(p, text);
    }
    p->change = change;
    e = cache_write(s, change, r.head, text, err);
    free(text);
    free(ctext);
    return e;
}

/* ---- the workspace's own locks ------------------------------------------------------------- */
typedef struct held {
    char **v; /* ascending by bytes, as lock_list sends them */
    size_t n, cap;
} held_t;

static void held_free(held_t *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i]);
    free(h->v);
    memset(h, 0, sizeof *h);
}

static cn_err_t held_row(void *ctx, const cn_scribe_client_lock_row_t *r)
{
    held_t *h = ctx;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        char **v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    if (!(h->v[h->n] = strdup(r->path)))
        return -ENOMEM;
    h->n++;
    return CN_OK;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool held_has(const held_t *h, const char *path)
{
    return h->n && bsearch(&path, h->v, h->n, sizeof *h->v, str_cmp);
}

/* Every lock workspace s holds, from the server (lock_list by owner). */
static cn_err_t held_get(cn_scribe_client_t *cl, const cn__ws_state_t *s, held_t *h,
                         cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_locks(cl, s->repo_id, NULL, s->workspace, held_row, h, &serr);
    if (e < 0)
        return cn__ws_fail(err, "listing this workspace's locks", e, &serr);
    if (h->n) /* cheap when sorted already; never trust an order */
        qsort(h->v, h->n, sizeof *h->v, str_cmp);
    return CN_OK;
}

/* ---- modes ------------------------------------------------------------------------------------ */
/* Whether the file at full (st its lstat) is as the state recorded it
 * (w may be NULL: an untracked file never is). */
static bool unedited(const cn__ws_file_t *w, const struct stat *st)
{
    return w && w->mtime_ns >= 0 && w->size == (uint64_t)st->st_size &&
           w->mtime_ns == cn__ws_mtime_ns(st);
}

/* Gives path its mode: read-only (no write bit) when ro, else writable by
 * its owner.  Only regular files; a file to make read-only is left alone
 * when it was edited since recorded (w) -- status names it.  Modes only
 * change the ctime, so the state's records stay valid. */
static cn_err_t set_mode(const cn__ws_state_t *s, const char *path, const cn__ws_file_t *w, bool ro,
                         cn_ws_error_t *err)
{
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", s->dir, path);
    struct stat st;
    if (lstat(full, &st) < 0 || !S_ISREG(st.st_mode))
        return CN_OK;
    mode_t m = st.st_mode & 07777;
    if (ro && (m & 0222) && unedited(w, &st))
        m &= ~(mode_t)0222;
    else if (!ro)
        m |= S_IWUSR;
    if (m != (st.st_mode & 07777) && chmod(full, m) < 0)
        return cn__ws_file_fail(err, "cannot change the mode of", full, errno);
    return CN_OK;
}

/* Every tracked file of s gets the mode its rule and lock say. */
static cn_err_t mark_all(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn__ws_policy_t *p,
                         cn_ws_error_t *err)
{
    bool req = has_required(&p->cfg);
    if (!req && !p->had_required)
        return CN_OK; /* no rule made a file read-only, none will */
    held_t h = { 0 };
    cn_err_t e = req ? held_get(cl, s, &h, err) : CN_OK;
    for (size_t i = 0; i < s->n && e == CN_OK; i++) {
        const cn__ws_file_t *w = &s->files[i];
        if (w->mode == CN_REPOS_MODE_SYMLINK || w->mtime_ns < 0)
            continue;
        bool ro = req && cn__ws_policy_requires(p, w->path) && !held_has(&h, w->path);
        e = set_mode(s, w->path, w, ro, err);
    }
    held_free(&h);
    return e;
}

/* How mark() learns whether the workspace holds the paths it is given. */
typedef enum {
    MARK_HELD,
    MARK_RELEASED,
    MARK_ASK
} mark_how_t;

/* Gives paths[0..n) the mode p and the workspace's locks on the server
 * say: under a required rule and not held, read-only; else writable. */
static cn_err_t mark_asked(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn__ws_policy_t *p,
                           const char *const *paths, size_t n, cn_ws_error_t *err)
{
    if (!has_required(&p->cfg))
        return CN_OK; /* no rule: the files were written writable */
    held_t h = { 0 };
    cn_err_t e = held_get(cl, s, &h, err);
    for (size_t i = 0; i < n && e == CN_OK; i++) {
        const cn__ws_file_t *w = cn__ws_state_find(s, paths[i], s->n);
        bool ro = cn__ws_policy_requires(p, paths[i]) && !held_has(&h, paths[i]);
        if (!w || w->mode != CN_REPOS_MODE_SYMLINK)
            e = set_mode(s, paths[i], w, ro, err);
    }
    held_free(&h);
    return e;
}

static cn_err_t mark(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *const *paths, size_t n,
                     mark_how_t how, const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    cn_ws_error_t mine;
    cn__ws_begin(&mine, &mine);
    cn__ws_policy_t p;
    memset(&p, 0, sizeof p);
    cn_err_t e = CN_OK;
    if (paths && how == MARK_HELD) { /* now held: writable whatever the rules say */
        for (size_t i = 0; i < n && e == CN_OK; i++)
            e = set_mode(s, paths[i], NULL, false, &mine);
        goto out;
    }
    if ((e = cn__ws_policy_get(cl, s, &p, &mine)))
        goto out;
    cn__ws_state_sort(s);
    if (!paths || p.changed) {
        e = mark_all(cl, s, &p, &mine);
        goto out;
    }
    if (how == MARK_ASK) {
        e = mark_asked(cl, s, &p, paths, n, &mine);
        goto out;
    }
    for (size_t i = 0; i < n && e == CN_OK; i++)
        if (cn__ws_policy_requires(&p, paths[i]))
            e = set_mode(s, paths[i], cn__ws_state_find(s, paths[i], s->n), true, &mine);
out:
    cn__ws_policy_free(&p);
    if (e && o->notice) { /* the call itself succeeded: say what was left */
        char why[sizeof mine.message + 64];
        snprintf(why, sizeof why, "file modes not updated: %s", mine.message);
        o->notice(o->notice_ctx, s->dir, why);
        return CN_OK;
    }
    if (e && err)
        *err = mine;
    return e;
}

cn_err_t cn__ws_mark(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *const *paths, size_t n,
                     bool held, const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    return mark(cl, s, paths, n, held ? MARK_HELD : MARK_RELEASED, o, err);
}

cn_err_t cn__ws_mark_restored(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *const *paths,
                              size_t n, const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    return mark(cl, s, paths, n, MARK_ASK, o, err);
}

/* ---- cn_ws_edit -------------------------------------------------------------------------------- */
typedef struct edit_args {
    const char *const *paths;
    uint32_t n;
    cn_ws_edit_result_t *res;
} edit_args_t;

static cn_err_t edit_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    (void)o;
    edit_args_t *a = arg;
    cn__ws_policy_t p;
    cn_err_t e = cn__ws_policy_get(cl, s, &p, err);
    const char **req = e ? NULL : calloc(a->n ? a->n : 1, sizeof *req);
    if (!e && !req)
        e = cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    uint32_t nreq = 0;
    for (uint32_t i = 0; !e && i < a->n; i++)
        if (cn__ws_policy_requires(&p, a->paths[i]))
            req[nreq++] = a->paths[i];
    a->res->policy_change = p.change;
    a->res->required = nreq;
    if (!e && nreq) /* all or nothing, as cairn repo lock */
        e = cn__ws_lock_send(cl, s, req, nreq, false, false, &a->res->locked, err);
    if (!e && p.changed) /* a new policy: every file follows it, as sync would */
        e = mark_all(cl, s, &p, err);
    for (uint32_t i = 0; !e && i < a->n; i++)
        e = set_mode(s, a->paths[i], NULL, false, err);
    free(req);
    cn__ws_policy_free(&p);
    return e;
}

cn_err_t cn_ws_edit(const char *dir, const char *const *paths, uint32_t n, const cn_ws_opts_t *opts,
                    cn_ws_edit_result_t *res, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    cn_ws_edit_result_t rscratch;
    err = cn__ws_begin(err, &scratch);
    res = res ? res : &rscratch;
    memset(res, 0, sizeof *res);
    for (uint32_t i = 0; i < n; i++)
        if (cn_repos_path_check((const uint8_t *)paths[i], strlen(paths[i])) < 0)
            return cn__ws_local(err, CN_E_INVALID, "'%s' is not a repository path", paths[i]);
    edit_args_t a = { paths, n, res };
    return cn__ws_run(dir, cn__ws_opts(opts), edit_open, &a, err);
}

/* ---- the lock part of status ------------------------------------------------------------------ */
/* The status a caller holds: the public part, then the strings. */
typedef struct lock_status_impl {
    cn_ws_lock_status_t pub;
    held_t held, need, writable;
} lock_status_impl_t;

static cn_err_t list_add(held_t *l, const char *path)
{
    cn_scribe_client_lock_row_t row; /* held_row takes a row; only its path is read */
    snprintf(row.path, sizeof row.path, "%s", path);
    return held_row(l, &row);
}

/* Sorts s's files into st->need (changed, under a required rule, not
 * held) and st->writable (unchanged, required, not held, yet writable). */
static cn_err_t lock_status_collect(const cn__ws_state_t *s, const cn__ws_policy_t *p,
                                    lock_status_impl_t *st)
{
    cn_err_t e = CN_OK;
    for (size_t i = 0; i < s->n && e == CN_OK; i++) {
        const cn__ws_file_t *w = &s->files[i];
        if (!cn__ws_policy_requires(p, w->path) || held_has(&st->held, w->path))
            continue;
        if (!w->on_disk || w->changed) {
            e = list_add(&st->need, w->path);
            continue;
        }
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, w->path);
        struct stat sb;
        if (w->mode != CN_REPOS_MODE_SYMLINK && lstat(full, &sb) == 0 && S_ISREG(sb.st_mode) &&
            (sb.st_mode & 0222))
            e = list_add(&st->writable, w->path);
    }
    return e;
}

static cn_err_t lock_status_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                                 void *arg, cn_ws_error_t *err)
{
    lock_status_impl_t *st = arg;
    cn__ws_scan_t sc = { 0 };
    cn__ws_policy_t p;
    cn_err_t e = cn__ws_policy_get(cl, s, &p, err);
    if (!e)
        e = held_get(cl, s, &st->held, err);
    if (!e)
        e = cn__ws_diff(s, &sc, o, err);
    if (!e) {
        cn__ws_state_sort(s);
        if (lock_status_collect(s, &p, st) < 0)
            e = cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    }
    st->pub = (cn_ws_lock_status_t){ p.change,
                                     st->held.n,
                                     (const char *const *)st->held.v,
                                     st->need.n,
                                     (const char *const *)st->need.v,
                                     st->writable.n,
                                     (const char *const *)st->writable.v };
    cn__ws_scan_free(&sc);
    cn__ws_policy_free(&p);
    return e;
}

cn_err_t cn_ws_lock_status(const char *dir, const cn_ws_opts_t *opts, cn_ws_lock_status_t **out,
                           cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    *out = NULL;
    lock_status_impl_t *st = calloc(1, sizeof *st);
    if (!st)
        return cn__ws_file_fail(err, "out of memory for", dir, ENOMEM);
    cn_err_t e = cn__ws_run(dir, cn__ws_opts(opts), lock_status_open, st, err);
    if (e) {
        cn_ws_lock_status_free(&st->pub);
        return e;
    }
    *out = &st->pub;
    return CN_OK;
}

void cn_ws_lock_status_free(cn_ws_lock_status_t *pub)
{
    if (!pub)
        return;
    lock_status_impl_t *st = (lock_status_impl_t *)pub; /* pub is its first member */
    held_free(&st->held);
    held_free(&st->need);
    held_free(&st->writable);
    free(st);
}
