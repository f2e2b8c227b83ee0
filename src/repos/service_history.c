/* History reads: tree pages of any snapshot and the first-parent log, each
 * from one read snapshot.  Paths sort and compare as raw bytes; a path
 * query selects the path itself and everything under "path/", found by the
 * range [path "/", path "0") ('0' follows '/').  A path log also follows the
 * move sources of the exact path, and of the files moved into the queried
 * directory from outside it, through the walk the merge-aware log uses
 * (service_log_follow.c, without merge sources); it must never follow a
 * merge source, and never let the cursor prune that walk. */
#include "service_log_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The range bounds of "under path/": lo = path "/", hi = path "0". */
static cn_err_t under_bounds(const uint8_t *p, size_t n, uint8_t **lo, uint8_t **hi)
{
    *lo = malloc(n + 1);
    *hi = malloc(n + 1);
    if (!*lo || !*hi) {
        free(*lo);
        free(*hi);
        *lo = *hi = NULL;
        return -ENOMEM;
    }
    memcpy(*lo, p, n);
    memcpy(*hi, p, n);
    (*lo)[n] = '/';
    (*hi)[n] = '0';
    return CN_OK;
}

/* A page of one snapshot's tree, its entries collected into rows (each a
 * tree_rec_t) and handed to the caller's fn after the run, so that a
 * repeated run (CN_META_RETRY) hands each once; more when another follows,
 * and the snapshot's roots. */
typedef struct tree_page {
    cn_repos_req_t *rq;
    const cn_repos_page_q_t *q;
    cn_repos_tree_fn fn;
    void *ctx;
    cn__rows_t rows;
    bool more;
    cn_digest_t content, revision;
} tree_page_t;

/* A collected entry: its path is an offset into the rows' bytes. */
typedef struct tree_rec {
    cn_repos_tree_row_t row;
    size_t path;
} tree_rec_t;

/* Collects an entry of the page into the rows at ctx. */
static cn_err_t tree_keep(void *ctx, const cn_repos_tree_row_t *row)
{
    cn__rows_t *rows = ctx;
    tree_rec_t rec = { .row = *row };
    return cn__rows_add_with(rows, &rec, sizeof rec, &rec.path, row->path, row->path_len);
}

static cn_err_t tree_put(const cn__rows_t *rows, void *rec, void *ctx)
{
    tree_rec_t *tr = rec;
    const tree_page_t *tp = ctx;
    tr->row.path = cn__rows_at(rows, tr->path);
    return tp->fn(tp->ctx, &tr->row);
}

cn_err_t cn__snapshot_open(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                           const uint8_t branch[16], uint64_t upto, uint64_t at,
                           cn_digest_t *revision, cn_digest_t *content, cn__ptree_t **t)
{
    cn_repos_branch_t b;
    cn_err_t err = cn__branch_load(txn, rq, repo, branch, &b);
    if (err >= 0)
        err = cn__branch_within(rq, &b, upto);
    if (err >= 0)
        err = cn__branch_within(rq, &b, at);
    if (err >= 0)
        err = cn__snapshot_root(txn, repo, branch, at, revision, content);
    if (err >= 0)
        err = cn__ptree_open(txn, repo, revision, t);
    return err;
}

static cn_err_t tree_page_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    tree_page_t *tp = ctx;
    const cn_repos_page_q_t *q = tp->q;
    cn__ptree_t *t = NULL;
    (void)repo;
    cn__rows_start(&tp->rows, cn__page_limit(q->limit)); /* an earlier attempt's rows */
    tp->more = false;
    cn_err_t err = cn__snapshot_open(txn, tp->rq, q->repo, q->branch, q->change, q->change,
                                     &tp->revision, &tp->content, &t);
    if (err >= 0)
        err = cn__ptree_page(t, q->prefix, q->prefix_len, q->after, q->after_len,
                             cn__page_limit(q->limit), tp->fn ? tree_keep : NULL, &tp->rows,
                             &tp->more);
    cn__ptree_free(t);
    return err;
}

cn_err_t cn_repos_tree_page(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_page_q_t *q,
                            cn_repos_tree_fn fn, void *ctx, bool *more, cn_digest_t *content_root,
                            cn_digest_t *revision_root)
{
    *more = false;
    if (q->prefix_len && cn_repos_path_check(q->prefix, q->prefix_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the prefix is not a canonical path");
    if (q->after && cn_repos_path_check(q->after, q->after_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the cursor is not a canonical path");
    tree_page_t tp = { .rq = rq, .q = q, .fn = fn, .ctx = ctx };
    cn_err_t err = cn__repo_run(r, rq, q->repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY,
                                tree_page_body, &tp);
    *more = tp.more;
    if (err >= 0) {
        *content_root = tp.content;
        *revision_root = tp.revision;
    }
    return cn__rows_hand(&tp.rows, err, sizeof(tree_rec_t), tree_put, &tp);
}

size_t cn__col_blob(cn_meta_stmt_t *st, int col, const uint8_t **p)
{
    size_t n = 0;
    *p = cn_meta_column_blob(st, col, &n);
    if (!*p) {
        *p = (const uint8_t *)"";
        n = 0;
    }
    return n;
}

/* One page of a branch's log (the first-parent commits, or a path's events
 * when the query names one), collected into rows and handed to the caller's
 * fn after the run, so that a repeated run (CN_META_RETRY) hands each row
 * once.  The log of a branch is its native history, then what it
 * inherited: its origin's log up to the origin change, and so on through
 * origins.  Each branch of that chain is one segment, (lo, hi]: the changes
 * accepted on it that the queried branch holds; segments are disjoint and
 * walked newest first.  A path page is collected into h first: the page's
 * rows at the path and under it, then the exact path's first-parent history
 * with its move sources; cn__hist_page sorts, deduplicates and cuts the
 * union. */
typedef struct log_page {
    cn_repos_req_t *rq;
    const cn_repos_log_q_t *q;
    cn_repos_log_fn fn;
    void *ctx;
    cn__rows_t rows; /* the page */
    cn__hist_t *h;   /* path queries: the rows collected */
    uint32_t left;   /* rows the page may still take */
    uint8_t seg[16]; /* the segment's branch */
    uint64_t lo, hi; /* its changes: (lo, hi] */
    char seg_name[CN_REPOS_BRANCH_NAME_MAX + 1];
} log_page_t;

/* The bound statement of lp's segment: commits or path events before
 * `before` (or tied at it after `after path`), newest first. */
static cn_err_t log_query(cn_meta_txn_t *txn, const log_page_t *lp, cn_meta_stmt_t **st)
{
    const cn_repos_log_q_t *q = lp->q;
    uint64_t before = q->has_before ? q->before : UINT64_MAX;
    /* Without after path, before is exclusive: no row has change = -1; a
     * before past the segment can tie with none of its rows either. */
    int64_t tie = q->after_path && before <= lp->hi ? (int64_t)before : -1;
    if (before > lp->hi + 1)
        before = lp->hi + 1;
    uint8_t *lo = NULL, *hi = NULL;
    cn_err_t err = CN_OK;
    if (!q->path)
        err = cn_meta_queryf(txn, st, cn__sql_repos[CN_SQL_REPOS_LOG_COMMITS], "bbiii",
                             CN__ARG_ID(q->repo), CN__ARG_ID(lp->seg), (int64_t)lp->lo,
                             (int64_t)before, (int64_t)lp->left);
    else if ((err = under_bounds(q->path, q->path_len, &lo, &hi)) >= 0)
        err = cn_meta_queryf(txn, st, cn__sql_repos[CN_SQL_REPOS_LOG_PATH], "bbbbbiiibi",
                             CN__ARG_ID(q->repo), CN__ARG_ID(lp->seg), (const void *)q->path,
                             q->path_len, (const void *)lo, q->path_len + 1, (const void *)hi,
                             q->path_len + 1, (int64_t)lp->lo, (int64_t)before, tie,
                             (const void *)(q->after_path ? q->after_path : (const uint8_t *)""),
                             q->after_path ? q->after_len : 0, (int64_t)lp->left);
    free(lo);
    free(hi);
    return err;
}

/* Keeps a path row of st (path, event, move source) in lp's history. */
static cn_err_t keep_path_row(log_page_t *lp, cn_meta_stmt_t *st)
{
    const uint8_t *path = NULL, *from = NULL;
    size_t pn = cn__col_blob(st, 8, &path), fn = cn__col_blob(st, 10, &from);
    size_t path_off = 0, from_off = 0;
    CN_TRY(cn__hist_keep(lp->h, path, pn, &path_off));
    CN_TRY(cn__hist_keep(lp->h, from, fn, &from_off));
    return cn__hist_row(lp->h, (uint64_t)cn_meta_column_int64(st, 0),
                        (uint8_t)cn_meta_column_int64(st, 9), path_off, (uint32_t)pn, from_off,
                        (uint32_t)fn);
}

/* Collects the rows of lp's current segment into lp->rows (path queries:
 * keeps them in lp->h). */
static cn_err_t log_segment(cn_meta_txn_t *txn, log_page_t *lp)
{
    const cn_repos_log_q_t *q = lp->q;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = log_query(txn, lp, &st);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        if (q->path) {
            lp->left--;
            if ((err = keep_path_row(lp, st)) < 0)
                break;
            continue;
        }
        cn_repos_log_row_t row;
        memset(&row, 0, sizeof row);
        row.change = (uint64_t)cn_meta_column_int64(st, 0);
        if (!cn__col_fixed(st, 1, row.commit.b, CN_DIGEST_LEN)) {
            err = CN_E_CORRUPT;
            break;
        }
        memcpy(row.branch, lp->seg, 16);
        row.branch_name = lp->seg_name;
        row.parent = (uint64_t)cn_meta_column_int64(st, 2);
        row.author_len = cn__col_blob(st, 3, &row.author);
        row.message_len = cn__col_blob(st, 4, &row.message);
        row.time_ms = cn_meta_column_int64(st, 5);
        row.merge_change = (uint64_t)cn_meta_column_int64(st, 6);
        if (row.merge_change && !cn__col_fixed(st, 7, row.merge_branch, 16)) {
            err = CN_E_CORRUPT;
            break;
        }
        err = cn__commit_pick(txn, q->repo, row.change, &row.pick_change, row.pick_branch);
        if (err < 0)
            break;
        row.path = (const uint8_t *)"";
        row.from_path = (const uint8_t *)"";
        lp->left--;
        if ((err = cn__logrows_add(&lp->rows, &row, false)) != 0)
            break;
    }
    cn_meta_finish(st);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}

/* A row of the page to the caller: membership is the all-branch mode's alone. */
static cn_err_t log_row(void *ctx, const cn_repos_log_row_t *row, bool member)
{
    const log_page_t *lp = ctx;
    (void)member;
    return lp->fn(lp->ctx, row);
}

/* The path page: the exact path's first-parent history with its move
 * sources joins the rows the segments kept, and the union is cut by the
 * same cursor and limit (the walk reads every edge, whatever the cursor). */
static cn_err_t path_page(log_page_t *lp, const uint8_t branch[16], uint64_t head)
{
    const cn_repos_log_q_t *q = lp->q;
    cn__hist_t *h = lp->h;
    cn_err_t err = cn__hist_walk(h, branch, head, q->path, q->path_len);
    if (err >= 0) {
        cn_repos_follow_q_t fq = { .path = q->path,
                                   .path_len = q->path_len,
                                   .has_before = q->has_before,
                                   .before = q->before,
                                   .after_path = q->after_path,
                                   .after_len = q->after_len,
                                   .limit = q->limit };
        err = cn__hist_page(h, &fq, false, cn__logrows_add, &lp->rows);
    }
    return err;
}

/* A move into the queried directory from outside it, to walk. */
typedef struct dir_move {
    uint8_t branch[16];
    uint64_t change;
    size_t from_off;
    uint32_t from_len;
} dir_move_t;

typedef struct dir_moves {
    dir_move_t *v;
    size_t n, cap;
    cn_buf_t from; /* their sources (not the history's arena: a walk grows that) */
} dir_moves_t;

/* Reads the moves into [lo, hi) from outside it on segment (clo, chi] of
 * branch into dm; each counts against the history budget. */
static cn_err_t dir_moves_read(log_page_t *lp, cn_meta_txn_t *txn, const uint8_t branch[16],
                               uint64_t clo, uint64_t chi, const uint8_t *lo, const uint8_t *hi,
                               dir_moves_t *dm)
{
    const cn_repos_log_q_t *q = lp->q;
    size_t n = q->path_len + 1;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn__hist_spend(lp->h, 0));
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_DIR_MOVES], "bbbbiibb",
                          CN__ARG_ID(q->repo), CN__ARG_ID(branch), (const void *)lo, n,
                          (const void *)hi, n, (int64_t)clo, (int64_t)chi, (const void *)lo, n,
                          (const void *)hi, n));
    cn_err_t err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        const uint8_t *from = NULL;
        size_t fn = cn__col_blob(st, 2, &from);
        if ((err = cn__hist_spend(lp->h, fn)) < 0 ||
            (err = cn__hist_grow((void **)&dm->v, &dm->cap, dm->n, sizeof *dm->v)) < 0)
            break;
        dir_move_t *m = &dm->v[dm->n++];
        memcpy(m->branch, branch, 16);
        m->change = (uint64_t)cn_meta_column_int64(st, 0);
        m->from_off = dm->from.len;
        m->from_len = (uint32_t)fn;
        if ((err = cn_buf_append(&dm->from, from, fn)) < 0)
            break;
    }
    cn_meta_finish(st);
    return err == CN_META_DONE ? CN_OK : err;
}

/* A directory log follows the files moved into the directory from outside
 * it (13.7): on every segment of the branch's log, each such move's source
 * is walked below the move as the exact path's move sources are, so a
 * moved-in file shows its history before the move under its old path.  The
 * moves read and the walks count against the one history budget. */
static cn_err_t dir_moves(log_page_t *lp, cn_meta_txn_t *txn, const uint8_t branch[16])
{
    const cn_repos_log_q_t *q = lp->q;
    uint8_t *lo = NULL, *hi = NULL;
    dir_moves_t dm = { 0 };
    cn_repos_branch_t b;
    cn_err_t err = under_bounds(q->path, q->path_len, &lo, &hi);
    if (err >= 0)
        err = cn__branch_load(txn, lp->rq, q->repo, branch, &b);
    uint64_t top = err >= 0 ? b.head : 0;
    for (uint32_t hop = 0; err >= 0; hop++) {
        if (top > b.origin_change &&
            (err = dir_moves_read(lp, txn, b.id, b.origin_change, top, lo, hi, &dm)) < 0)
            break;
        if (!b.has_origin)
            break;
        top = b.origin_change;
        err = cn__branch_load(txn, lp->rq, q->repo, b.origin, &b);
        if (err == CN_E_NOT_FOUND || hop + 1 == 100000)
            err = CN_E_CORRUPT; /* an origin the table lacks, or origins that loop */
    }
    for (size_t i = 0; err >= 0 && i < dm.n; i++)
        err = cn__hist_walk(lp->h, dm.v[i].branch, dm.v[i].change - 1,
                            dm.from.data + dm.v[i].from_off, dm.v[i].from_len);
    free(lo);
    free(hi);
    free(dm.v);
    cn_buf_free(&dm.from);
    return err;
}

static cn_err_t log_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    log_page_t *lp = ctx;
    const cn_repos_log_q_t *q = lp->q;
    cn_repos_branch_t b;
    (void)repo;
    lp->left = cn__page_limit(q->limit);
    /* a retried transaction starts the collected rows afresh */
    cn__rows_start(&lp->rows, lp->left);
    cn__hist_free(lp->h);
    *lp->h = (cn__hist_t){ .txn = txn, .rq = lp->rq, .repo = q->repo, .first_parent = true };
    cn_err_t err = cn__branch_load(txn, lp->rq, q->repo, q->branch, &b);
    uint8_t queried[16] = { 0 };
    uint64_t head = 0;
    if (err >= 0) {
        memcpy(queried, b.id, 16);
        head = b.head;
    }
    for (uint32_t hop = 0; err >= 0 && lp->left; hop++) {
        memcpy(lp->seg, b.id, 16);
        snprintf(lp->seg_name, sizeof lp->seg_name, "%s", b.name);
        lp->lo = b.origin_change;
        if (hop == 0)
            lp->hi = b.head;
        if ((err = log_segment(txn, lp)) != 0 || !b.has_origin)
            break;
        lp->hi = b.origin_change;
        err = cn__branch_load(txn, lp->rq, q->repo, b.origin, &b);
        if (err == CN_E_NOT_FOUND || hop + 1 == 100000)
            err = CN_E_CORRUPT; /* an origin the table lacks, or origins that loop */
    }
    if (err >= 0 && q->path)
        err = dir_moves(lp, txn, queried);
    if (err >= 0 && q->path)
        err = path_page(lp, queried, head);
    return err;
}

cn_err_t cn_repos_log(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_log_q_t *q,
                      cn_repos_log_fn fn, void *ctx)
{
    if (q->path && cn_repos_path_check(q->path, q->path_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "the path is not canonical");
    if (q->after_path &&
        (!q->path || !q->has_before || cn_repos_path_check(q->after_path, q->after_len) < 0))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "after path needs a path query and before");
    cn__hist_t h = { 0 };
    log_page_t lp = { .rq = rq, .q = q, .fn = fn, .ctx = ctx, .h = &h };
    cn_err_t err =
        cn__repo_run(r, rq, q->repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, log_body, &lp);
    cn__hist_free(&h);
    return cn__logrows_hand(&lp.rows, err, log_row, &lp);
}
