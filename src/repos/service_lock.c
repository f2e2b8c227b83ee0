/* Locks: exclusive, repository-wide locks on canonical paths, keyed by the
 * path's case fold so that aliases collide (docs/protocol/scribe.md 7.10).
 * A lock is one repos_lock row; acquire and release change every path of a
 * request in one write transaction (all or nothing) that commits before
 * they return, so every listener and connection over the data directory
 * sees the same locks.  This file never decides what a submit releases
 * beyond the paths it is handed (service_submit.c names them). */
#include "service_int.h"
#include "cairn/cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cn_repos_maintainer(const cn_repos_req_t *rq)
{
    /* Protocol 4: the role the adapter found on the repository. */
    if (rq->authed)
        return rq->maintainer;
    if (rq->trusted)
        return true;
    return rq->principal && (rq->principal->perms & CN_PERM_ADMIN);
}

/* MALFORMED unless n is within 1..10,000, the paths are canonical and
 * together at most 8 MiB. */
static cn_err_t lock_paths_check(cn_repos_req_t *rq, const cn_repos_pathv_t *paths, uint32_t n)
{
    size_t bytes = 0;
    if (n < 1 || n > CN_REPOS_LOCK_PATHS_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a lock request names 1..10,000 paths");
    for (uint32_t i = 0; i < n; i++) {
        bytes += paths[i].n;
        if (cn_repos_path_check(paths[i].p, paths[i].n) < 0)
            return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                             "path %u is not a canonical path", i);
    }
    if (bytes > CN_REPOS_LOCK_BYTES_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a lock request names at most 8 MiB of paths");
    return CN_OK;
}

/* Reads a LOCK_COLS row into l (its path borrowed from st until the next step). */
static cn_err_t lock_row(cn_meta_stmt_t *st, cn_repos_lock_t *l)
{
    memset(l, 0, sizeof *l);
    const uint8_t *p = NULL, *who = NULL;
    l->path_len = cn__col_blob(st, 0, &p);
    l->path = (uint8_t *)p;
    size_t wn = cn__col_blob(st, 2, &who);
    if (!cn__col_fixed(st, 1, l->workspace, 16) || !cn__col_fixed(st, 3, l->branch, 16) ||
        wn > CN_REPOS_PRINCIPAL_MAX || !l->path_len)
        return CN_E_CORRUPT;
    memcpy(l->principal, who, wn);
    l->since_ms = cn_meta_column_int64(st, 4);
    return CN_OK;
}

/* The lock on the case fold of path (*found), its holder in *held. */
static cn_err_t lock_find(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t *fold,
                          size_t fold_len, bool *found, cn_repos_lock_t *held, char *path_out,
                          size_t path_cap)
{
    cn_meta_stmt_t *st = NULL;
    *found = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_LOCK_GET], "bb",
                                  CN__ARG_ID(repo), (const void *)fold, fold_len);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        *found = true;
        err = lock_row(st, held);
        if (err >= 0)
            snprintf(path_out, path_cap, "%.*s", (int)held->path_len, (const char *)held->path);
        held->path = NULL; /* the row's bytes end with the statement */
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* LOCK_HELD naming path's holder: its workspace, principal and branch. */
static cn_err_t held_by(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                        const char *path, const cn_repos_lock_t *h)
{
    char ws[33], branch[CN_REPOS_BRANCH_NAME_MAX + 1] = "";
    uint64_t head = 0;
    cn_hex_encode(h->workspace, 16, ws);
    if (cn__branch_head(txn, NULL, repo, h->branch, &head, branch, sizeof branch) < 0)
        cn_hex_encode(h->branch, 16, branch);
    return cn__rfail(rq, CN_E_CONFLICT, CN_REPOS_E_LOCK_HELD,
                     "%.512s is locked by workspace %s (principal %s, branch %s) since %lld ms",
                     path, ws, h->principal[0] ? h->principal : "-", branch,
                     (long long)h->since_ms);
}

/* One acquire or release over a repository's locks. */
typedef struct lock_edit {
    cn_repos_req_t *rq;
    const uint8_t *workspace, *branch;
    const cn_repos_pathv_t *paths;
    uint32_t n;
    bool release, force;
    uint32_t changed;
} lock_edit_t;

/* An edit's paths as the repository's locks hold them, read in one padded
 * batch statement (issue 24: a lock request of 10,000 paths is a handful
 * of statements, not 20,000). */
typedef struct edit_view {
    lock_edit_t *le;
    cn_buf_t folds;
    size_t *off, *len;
    bool *locked, *dup;  /* dup: an earlier path of the request has its fold */
    uint8_t (*ws)[16];   /* the holder's workspace, when locked */
    uint32_t *ins, nins; /* the paths an acquire inserts */
    int64_t now;
    const uint8_t *repo;
} edit_view_t;

static cn_err_t lock_row_at(void *ctx, cn_meta_stmt_t *st, size_t i)
{
    edit_view_t *v = ctx;
    if (v->locked[i] || !cn__col_fixed(st, 1, v->ws[i], 16))
        return CN_E_CORRUPT;
    v->locked[i] = true;
    return CN_OK;
}

/* dup[i] for each path whose fold an earlier path of the request has. */
static cn_err_t mark_dups(edit_view_t *v, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *slot = calloc(cap, sizeof *slot); /* index + 1; 0 free */
    if (!slot)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *f = v->folds.data + v->off[i];
        size_t h = (size_t)cn_cache_hash((const char *)f, v->len[i]) & (cap - 1);
        for (;; h = (h + 1) & (cap - 1)) {
            uint32_t j = slot[h];
            if (!j) {
                slot[h] = (uint32_t)i + 1;
                break;
            }
            if (v->len[j - 1] == v->len[i] &&
                !memcmp(v->folds.data + v->off[j - 1], f, v->len[i])) {
                v->dup[i] = true;
                break;
            }
        }
    }
    free(slot);
    return CN_OK;
}

/* The folds of the edit's paths, their locks and their repeats, into v. */
static cn_err_t edit_read(cn_meta_txn_t *txn, edit_view_t *v)
{
    const lock_edit_t *le = v->le;
    uint8_t fold[CN_REPOS_MAX_PATH];
    for (uint32_t i = 0; i < le->n; i++) {
        long fl = cn_repos_path_fold(le->paths[i].p, le->paths[i].n, fold, sizeof fold);
        if (fl <= 0)
            return cn__rfail(le->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "a path is not UTF-8");
        v->off[i] = v->folds.len;
        v->len[i] = (size_t)fl;
        CN_TRY(cn_buf_append(&v->folds, fold, (size_t)fl));
    }
    cn__keys_t keys = { v->folds.data, v->off, v->len, le->n };
    CN_TRY(
        cn__padded_batch(txn, CN_SQL_REPOS_BATCH_LOCK_GET, &keys, v->repo, NULL, lock_row_at, v));
    return mark_dups(v, le->n);
}

static cn_err_t bind_lock(void *ctx, cn_meta_stmt_t *st, int base, size_t k)
{
    const edit_view_t *v = ctx;
    const lock_edit_t *le = v->le;
    uint32_t i = v->ins[k];
    const cn_principal_t *who = le->rq->principal;
    const char *pn = le->rq->account ? le->rq->account : who ? who->account : "";
    return cn_meta_bindf(st, base, "bbbbbbi", CN__ARG_ID(v->repo),
                         (const void *)(v->folds.data + v->off[i]), v->len[i],
                         (const void *)le->paths[i].p, le->paths[i].n, CN__ARG_ID(le->workspace),
                         (const void *)pn, strlen(pn), CN__ARG_ID(le->branch), v->now);
}

/* Each path of an edit in order: acquire (insert unless the workspace holds
 * it) or release (delete when the workspace holds it, or any holder's with
 * force); a path held by another workspace fails the edit, named with its
 * holder.  The writes are pushed; an acquire's inserts are multi-row. */
static cn_err_t edit_apply(cn_meta_txn_t *txn, edit_view_t *v)
{
    lock_edit_t *le = v->le;
    for (uint32_t i = 0; i < le->n; i++) {
        if (v->dup[i])
            continue; /* the earlier path with this fold did what this one would */
        bool mine = v->locked[i] && memcmp(v->ws[i], le->workspace, 16) == 0;
        if (v->locked[i] && !mine && !(le->release && le->force)) {
            bool found = false;
            cn_repos_lock_t h;
            char path[CN_REPOS_MAX_PATH + 1];
            CN_TRY(lock_find(txn, v->repo, v->folds.data + v->off[i], v->len[i], &found, &h, path,
                             sizeof path));
            return found ? held_by(txn, le->rq, v->repo, path, &h) : CN_E_CORRUPT;
        }
        if (le->release && v->locked[i]) {
            le->changed++;
            CN_TRY(cn_meta_pushf(txn, cn__sql_repos[CN_SQL_REPOS_LOCK_DELETE], "bb",
                                 CN__ARG_ID(v->repo), (const void *)(v->folds.data + v->off[i]),
                                 v->len[i]));
        } else if (!le->release && !mine) {
            le->changed++;
            v->ins[v->nins++] = i;
        }
    }
    return cn__push_rows(txn, CN_SQL_REPOS_ROWS_LOCK, v->nins, bind_lock, v);
}

static cn_err_t edit_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    lock_edit_t *le = ctx;
    const uint8_t *id = repo->info.id;
    le->changed = 0;
    CN_TRY(cn__ws_check(txn, le->rq, id, le->workspace));
    if (!le->release) {
        cn_repos_branch_t b;
        CN_TRY(cn__branch_load(txn, le->rq, id, le->branch, &b));
    }
    size_t n = le->n ? le->n : 1;
    edit_view_t v = { .le = le, .now = cn__repos_now_ms(), .repo = id };
    v.off = calloc(n, sizeof *v.off);
    v.len = calloc(n, sizeof *v.len);
    v.locked = calloc(n, sizeof *v.locked);
    v.dup = calloc(n, sizeof *v.dup);
    v.ws = calloc(n, sizeof *v.ws);
    v.ins = calloc(n, sizeof *v.ins);
    cn_err_t err = v.off && v.len && v.locked && v.dup && v.ws && v.ins ? CN_OK : -ENOMEM;
    if (err >= 0)
        err = edit_read(txn, &v);
    if (err >= 0)
        err = edit_apply(txn, &v);
    if (err >= 0 && !le->changed)
        cn_meta_discard(txn); /* nothing written: no commit, no fsync */
    cn_buf_free(&v.folds);
    free(v.off);
    free(v.len);
    free(v.locked);
    free(v.dup);
    free(v.ws);
    free(v.ins);
    return err;
}

cn_err_t cn_repos_lock_acquire(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                               const uint8_t workspace[16], const uint8_t branch[16],
                               const cn_repos_pathv_t *paths, uint32_t n, uint32_t *acquired)
{
    *acquired = 0;
    CN_TRY(lock_paths_check(rq, paths, n));
    lock_edit_t le = { rq, workspace, branch, paths, n, false, false, 0 };
    CN_TRY(cn__repo_run(r, rq, repo, CN__WRITE, CN_META_RUN_WRITE | CN_META_RETRY, edit_body, &le));
    *acquired = le.changed;
    return CN_OK;
}

cn_err_t cn_repos_lock_release(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                               const uint8_t workspace[16], bool force,
                               const cn_repos_pathv_t *paths, uint32_t n, uint32_t *released)
{
    *released = 0;
    CN_TRY(lock_paths_check(rq, paths, n));
    if (force && !cn_repos_maintainer(rq))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "breaking another workspace's lock needs the Maintainer role");
    lock_edit_t le = { rq, workspace, NULL, paths, n, true, force, 0 };
    CN_TRY(cn__repo_run(r, rq, repo, CN__WRITE, CN_META_RUN_WRITE | CN_META_RETRY, edit_body, &le));
    *released = le.changed;
    return CN_OK;
}

/* A page of locks: the selection, its rows (each a lock_rec_t) handed to
 * the caller's fn after the run, so that a repeated run (CN_META_RETRY)
 * hands each once, and whether more follow. */
typedef struct lock_page {
    const uint8_t *prefix, *owner, *after;
    size_t prefix_len, after_len;
    uint32_t limit;
    cn_repos_lock_fn fn;
    void *ctx;
    cn__rows_t rows;
    bool more;
} lock_page_t;

/* A collected lock: its path is an offset into the rows' bytes. */
typedef struct lock_rec {
    cn_repos_lock_t l;
    size_t path;
} lock_rec_t;

static cn_err_t page_put(const cn__rows_t *rows, void *rec, void *ctx)
{
    lock_rec_t *lr = rec;
    const lock_page_t *lp = ctx;
    lr->l.path = (uint8_t *)cn__rows_at(rows, lr->path);
    return lp->fn(lp->ctx, &lr->l);
}

static cn_err_t page_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    lock_page_t *lp = ctx;
    uint8_t lo[CN_REPOS_MAX_PATH + 1], hi[CN_REPOS_MAX_PATH + 1];
    size_t pl = lp->prefix_len;
    memcpy(lo, lp->prefix, pl);
    memcpy(hi, lp->prefix, pl);
    lo[pl] = '/';
    hi[pl] = '/' + 1; /* the paths under "prefix/" sort in [prefix/, prefix0) */
    static const uint8_t zero[16];
    cn_meta_stmt_t *st = NULL;
    cn__rows_start(&lp->rows, lp->limit); /* an earlier attempt's rows */
    lp->more = false;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn__sql_repos[CN_SQL_REPOS_LOCK_PAGE], "bbibbbibi", CN__ARG_ID(repo->info.id),
        (const void *)(lp->after ? lp->after : (const uint8_t *)""), lp->after_len,
        (int64_t)(pl != 0), (const void *)lp->prefix, pl, (const void *)lo, pl + 1,
        (const void *)hi, pl + 1, (int64_t)(lp->owner != NULL),
        CN__ARG_ID(lp->owner ? lp->owner : zero), (int64_t)lp->limit + 1);
    for (uint32_t k = 0; err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW; k++) {
        if (k == lp->limit) {
            lp->more = true;
            err = CN_META_DONE;
            break;
        }
        lock_rec_t rec;
        if ((err = lock_row(st, &rec.l)) < 0 ||
            (err = cn__rows_add_with(&lp->rows, &rec, sizeof rec, &rec.path, rec.l.path,
                                     rec.l.path_len)) < 0)
            break;
    }
    cn_meta_finish(st);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}

cn_err_t cn_repos_lock_list(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                            const uint8_t *prefix, size_t prefix_len, const uint8_t *owner,
                            const uint8_t *after, size_t after_len, uint32_t limit,
                            cn_repos_lock_fn fn, void *ctx, bool *more)
{
    *more = false;
    if ((prefix_len && cn_repos_path_check(prefix, prefix_len) < 0) ||
        (after && cn_repos_path_check(after, after_len) < 0))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a lock listing's prefix and cursor are canonical paths");
    limit = limit == 0 ? 1 : limit > CN_REPOS_PAGE_MAX ? CN_REPOS_PAGE_MAX : limit;
    lock_page_t lp = { .prefix = prefix_len ? prefix : (const uint8_t *)"",
                       .owner = owner,
                       .after = after,
                       .prefix_len = prefix_len,
                       .after_len = after ? after_len : 0,
                       .limit = limit,
                       .fn = fn,
                       .ctx = ctx };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, page_body, &lp);
    *more = lp.more;
    return cn__rows_hand(&lp.rows, err, sizeof(lock_rec_t), page_put, &lp);
}

/* ---- submit disposition (service_submit.c) -------------------------------------- */
/* One submitted path of an accepted submit: released when the workspace
 * holds it; with keep locks, a move's destination acquired when it is free
 * and the workspace holds the source (src). */
static cn_err_t dispose_path(cn_meta_txn_t *txn, const cn__lock_disposition_t *d, const uint8_t *p,
                             size_t n, const uint8_t *src, size_t src_n, uint8_t *fold)
{
    long fl = cn_repos_path_fold(p, n, fold, CN_REPOS_MAX_PATH);
    if (fl < 0)
        return CN_E_CORRUPT; /* an accepted change set holds canonical paths */
    if (!d->keep_locks)      /* pushed: the submit's flush or COMMIT reads its answer */
        return cn_meta_pushf(txn, cn__sql_repos[CN_SQL_REPOS_LOCK_DELETE_OWNED], "bbb",
                             CN__ARG_ID(d->repo), (const void *)fold, (size_t)fl,
                             CN__ARG_ID(d->workspace));
    if (!src)
        return CN_OK;
    char path[CN_REPOS_MAX_PATH + 1];
    uint8_t sfold[CN_REPOS_MAX_PATH];
    long sl = cn_repos_path_fold(src, src_n, sfold, sizeof sfold);
    bool found = false;
    cn_repos_lock_t h;
    if (sl < 0)
        return CN_E_CORRUPT;
    CN_TRY(lock_find(txn, d->repo, sfold, (size_t)sl, &found, &h, path, sizeof path));
    if (!found || memcmp(h.workspace, d->workspace, 16) != 0)
        return CN_OK; /* the source lock is not the workspace's: nothing follows */
    CN_TRY(lock_find(txn, d->repo, fold, (size_t)fl, &found, &h, path, sizeof path));
    if (found)
        return CN_OK; /* the destination is held (by anyone): it stays so */
    return cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_LOCK_INSERT], "bbbbbbi",
                         CN__ARG_ID(d->repo), (const void *)fold, (size_t)fl, (const void *)p, n,
                         CN__ARG_ID(d->workspace), (const void *)h.principal, strlen(h.principal),
                         CN__ARG_ID(h.branch), d->now_ms);
}

/* *any = the workspace holds a lock in the repository. */
static cn_err_t holds_any(cn_meta_txn_t *txn, const cn__lock_disposition_t *d, bool *any)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_LOCK_OWNED_ANY], "bb",
                                  CN__ARG_ID(d->repo), CN__ARG_ID(d->workspace));
    if (err >= 0)
        err = cn_meta_step(st);
    *any = err == CN_META_ROW;
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn__locks_dispose(cn_meta_txn_t *txn, const cn__lock_disposition_t *d,
                           const cn_repos_changeset_t *cs)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    bool any = false;
    /* A workspace without locks has none to release and none whose path
     * a move carries: one look instead of a statement per path. */
    CN_TRY(holds_any(txn, d, &any));
    if (!any)
        return CN_OK;
    cn_repos_changeset_iter(cs, &it);
    uint8_t *fold = malloc(CN_REPOS_MAX_PATH);
    cn_err_t err = fold ? CN_OK : -ENOMEM;
    while (err >= 0 && cn_repos_changeset_next(&it, &e)) {
        bool move = e.kind == CN_REPOS_MOVE;
        err = dispose_path(txn, d, e.path, e.path_len, move ? e.from : NULL, e.from_len, fold);
        if (err >= 0 && move && !d->keep_locks)
            err = dispose_path(txn, d, e.from, e.from_len, NULL, 0, fold);
    }
    free(fold);
    return err < 0 ? err : CN_OK;
}
