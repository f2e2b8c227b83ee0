/* Merge reads and the merge checks of a merge submit: the merge base over the
 * repository's commits (the model's rule, cn_repos_merge_base), the chains
 * of two first-parent histories until they meet (merge_read 1), file states
 * at a snapshot (2), whether paths stayed unchanged between two revisions of
 * a branch (5), and for merge_submit (24) the recomputed base and the paths
 * the source changed since it, which the change set must cover.
 *
 * Every read runs in one read transaction and visits at most the history
 * budget of commit and event rows; past it the answer is limit_exceeded,
 * never a shorter one.  Nothing here writes. */
#include "service_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- commits ----------------------------------------------------------------------- */
/* The parents of commit change and the branch that accepted it: *found. */
static cn_err_t commit_row(cn_meta_txn_t *txn, const uint8_t repo[16], uint64_t change, bool *found,
                           uint64_t *first, uint64_t *merge, uint8_t branch[16])
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_COMMIT_PARENTS], "bi",
                          CN__ARG_ID(repo), (int64_t)change));
    cn_err_t err = cn_meta_step(st);
    *found = err == CN_META_ROW;
    if (err == CN_META_ROW) {
        *first = (uint64_t)cn_meta_column_int64(st, 0);
        *merge = (uint64_t)cn_meta_column_int64(st, 1);
        if (!cn__col_fixed(st, 2, branch, 16))
            err = CN_E_CORRUPT;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* The model's parents() over the commit rows. */
typedef struct graph {
    cn_meta_txn_t *txn;
    const uint8_t *repo;
} graph_t;

static cn_err_t graph_parents(void *ctx, uint64_t change, uint64_t *first, uint64_t *merge)
{
    graph_t *g = ctx;
    uint8_t branch[16];
    bool found = false;
    CN_TRY(commit_row(g->txn, g->repo, change, &found, first, merge, branch));
    return found ? CN_OK : CN_E_CORRUPT; /* a parent is always a commit */
}

static cn_err_t over_budget(cn_repos_req_t *rq)
{
    return cn__rfail(rq, CN_E_LIMIT, CN_REPOS_E_LIMIT_EXCEEDED,
                     "the history read passed its budget of %u metadata visits",
                     CN_REPOS_HISTORY_BUDGET);
}

cn_err_t cn__schema_check(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16])
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(
        cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_REPO_SCHEMA], "b", CN__ARG_ID(repo)));
    cn_err_t err = cn_meta_step(st);
    int64_t schema = err == CN_META_ROW ? cn_meta_column_int64(st, 0) : 0;
    cn_meta_finish(st);
    if (err < 0)
        return err;
    if (schema >= CN_REPOS_SCHEMA)
        return CN_OK;
    return cn__rfail(rq, CN_E_UNSUPPORTED, CN_REPOS_E_SCHEMA_OUTDATED,
                     "the repository records schema %lld; merges need %d", (long long)schema,
                     CN_REPOS_SCHEMA);
}

/* The merge base of source at srev into target at trev (both inside their
 * lifetimes): its branch and change, and the commit of the source's
 * snapshot at srev (its change and id). */
typedef struct merge_base {
    uint8_t branch[16];
    uint64_t base;
    uint64_t source_commit;
    cn_digest_t source_id;
} merge_base_t;

static cn_err_t base_of(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        const cn_repos_branch_t *target, uint64_t trev,
                        const cn_repos_branch_t *source, uint64_t srev, merge_base_t *out)
{
    const uint8_t *id = repo->info.id;
    uint64_t tc = 0, first = 0, merge = 0;
    cn_digest_t rev, content, tid;
    graph_t g = { txn, id };
    bool found = false;
    CN_TRY(cn__snapshot_at(txn, id, target->id, trev, &tc, &tid, &rev, &content));
    CN_TRY(cn__snapshot_at(txn, id, source->id, srev, &out->source_commit, &out->source_id, &rev,
                           &content));
    cn_err_t err = cn_repos_merge_base(tc, out->source_commit, graph_parents, &g,
                                       CN_REPOS_HISTORY_BUDGET, &out->base);
    if (err == CN_E_LIMIT)
        return over_budget(rq);
    CN_TRY(err);
    memcpy(out->branch, repo->info.main_branch, 16);
    if (out->base &&
        (err = commit_row(txn, id, out->base, &found, &first, &merge, out->branch)) >= 0 && !found)
        err = CN_E_CORRUPT;
    return err < 0 ? err : CN_OK;
}

/* ---- the merge base (tag 6) ------------------------------------------------------- */
typedef struct base_query {
    cn_repos_req_t *rq;
    const uint8_t *target, *source;
    uint64_t trev, srev;
    merge_base_t out;
} base_query_t;

static cn_err_t base_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    base_query_t *bq = ctx;
    cn_repos_branch_t t, s;
    CN_TRY(cn__branch_load(txn, bq->rq, repo->info.id, bq->target, &t));
    CN_TRY(cn__branch_load(txn, bq->rq, repo->info.id, bq->source, &s));
    CN_TRY(cn__schema_check(txn, bq->rq, repo->info.id));
    CN_TRY(cn__branch_within(bq->rq, &t, bq->trev));
    CN_TRY(cn__branch_within(bq->rq, &s, bq->srev));
    return base_of(txn, bq->rq, repo, &t, bq->trev, &s, bq->srev, &bq->out);
}

cn_err_t cn_repos_find_merge_base(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                  const uint8_t target[16], uint64_t target_rev,
                                  const uint8_t source[16], uint64_t source_rev,
                                  uint8_t base_branch[16], uint64_t *base)
{
    base_query_t bq = {
        .rq = rq, .target = target, .source = source, .trev = target_rev, .srev = source_rev
    };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, base_body, &bq);
    if (err >= 0) {
        memcpy(base_branch, bq.out.branch, 16);
        *base = bq.out.base;
    }
    return err;
}

/* ---- sorted path sets ------------------------------------------------------------ */
static int pathv_cmp(const void *a, const void *b)
{
    const cn_repos_pathv_t *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int d = m ? memcmp(x->p, y->p, m) : 0;
    return d ? d : (x->n > y->n) - (x->n < y->n);
}

/* The first index of the sorted set v[0..n) whose path is >= (p, len);
 * *hit when it is equal. */
static size_t pathv_lower(const cn_repos_pathv_t *v, size_t n, const uint8_t *p, size_t len,
                          bool *hit)
{
    cn_repos_pathv_t key = { p, len };
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pathv_cmp(&v[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hit = lo < n && pathv_cmp(&v[lo], &key) == 0;
    return lo;
}

/* A set of paths owned as heap copies. */
typedef struct pathset {
    cn_repos_pathv_t *v;
    size_t n, cap;
} pathset_t;

static void pathset_free(pathset_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free((void *)s->v[i].p);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* Appends a copy of (p, n), unsorted. */
static cn_err_t pathset_push(pathset_t *s, const uint8_t *p, size_t n)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        cn_repos_pathv_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        return -ENOMEM;
    if (n)
        memcpy(copy, p, n);
    s->v[s->n++] = (cn_repos_pathv_t){ copy, n };
    return CN_OK;
}

/* Inserts a copy of (p, n) in sorted order unless present: *added. */
static cn_err_t pathset_insert(pathset_t *s, const uint8_t *p, size_t n, bool *added)
{
    bool hit = false;
    size_t at = pathv_lower(s->v, s->n, p, n, &hit);
    *added = !hit;
    if (hit)
        return CN_OK;
    CN_TRY(pathset_push(s, p, n));
    cn_repos_pathv_t last = s->v[s->n - 1];
    memmove(&s->v[at + 1], &s->v[at], (s->n - 1 - at) * sizeof *s->v);
    s->v[at] = last;
    return CN_OK;
}

static void pathset_sort(pathset_t *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, pathv_cmp);
}

/* ---- chains (tag 1) ----------------------------------------------------------------- */
/* A page of two chains: the revisions and cursor asked for, where the walk
 * is, the cursor out, the paths met (each once a page) and the caller's fn.
 * The paths are collected into rows (cn__rows_bytes_add) and handed to fn
 * after the run, so that a repeated run (CN_META_RETRY) hands each once. */
typedef struct chains {
    cn_repos_req_t *rq;
    uint64_t from_left, from_right;
    const uint8_t *from_cursor;
    uint64_t left, right;
    const uint8_t *cursor;
    size_t cursor_len;
    cn_buf_t *next;
    bool has_next;
    cn_repos_path_fn fn;
    void *ctx;
    pathset_t seen;
    cn__rows_t rows;
} chains_t;

/* Collects the paths of commit c (accepted on branch) after the cursor; *cut
 * when they did not all fit, the cursor then the last one of c collected. */
static cn_err_t chains_commit(cn_meta_txn_t *txn, const uint8_t repo[16], chains_t *ch,
                              const uint8_t branch[16], uint64_t c, bool *cut)
{
    cn_meta_stmt_t *st = NULL;
    *cut = false;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_EVENT_PATHS], "bbibi",
                          CN__ARG_ID(repo), CN__ARG_ID(branch), (int64_t)c,
                          (const void *)(ch->cursor ? ch->cursor : (const uint8_t *)""),
                          ch->cursor ? ch->cursor_len : 0, (int64_t)INT64_MAX));
    cn_err_t err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const uint8_t *p = cn_meta_column_blob(st, 0, &n);
        bool hit = false, added = false;
        if (!p) {
            err = CN_E_CORRUPT;
            break;
        }
        pathv_lower(ch->seen.v, ch->seen.n, p, n, &hit);
        if (!hit && ch->seen.n == CN_REPOS_MERGE_PATHS_MAX) {
            *cut = true;
            break;
        }
        if ((err = pathset_insert(&ch->seen, p, n, &added)) < 0 ||
            (added && (err = cn__rows_bytes_add(&ch->rows, p, n)) != 0))
            break;
        cn_buf_reset(ch->next);
        if ((err = cn_buf_append(ch->next, p, n)) < 0)
            break;
    }
    cn_meta_finish(st);
    return err == CN_META_ROW || err == CN_META_DONE ? CN_OK : err;
}

static cn_err_t chains_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    chains_t *ch = ctx;
    const uint8_t *id = repo->info.id;
    /* an earlier attempt's walk and page */
    ch->left = ch->from_left;
    ch->right = ch->from_right;
    ch->cursor = ch->from_cursor;
    ch->has_next = false;
    cn_buf_reset(ch->next);
    pathset_free(&ch->seen);
    cn__rows_start(&ch->rows, CN_REPOS_MERGE_PATHS_MAX);
    CN_TRY(cn__schema_check(txn, ch->rq, id));
    cn_err_t err = CN_OK;
    for (uint32_t commits = 0;
         err >= 0 && ch->left != ch->right && commits < CN_REPOS_MERGE_COMMITS_MAX &&
         ch->seen.n < CN_REPOS_MERGE_PATHS_MAX;
         commits++) {
        uint64_t c = ch->left > ch->right ? ch->left : ch->right, first = 0, merge = 0;
        uint8_t branch[16];
        bool found = false, cut = false;
        if ((err = commit_row(txn, id, c, &found, &first, &merge, branch)) < 0)
            break;
        if (!found) {
            err = cn__rfail(ch->rq, CN_E_NOT_FOUND, CN_REPOS_E_CHANGE_NOT_FOUND,
                            "change %llu is not a commit of the repository", (unsigned long long)c);
            break;
        }
        if ((err = chains_commit(txn, id, ch, branch, c, &cut)) != 0)
            break;
        if (cut) {
            ch->has_next = true;
            break;
        }
        ch->cursor = NULL;
        if (ch->left == c)
            ch->left = first;
        else
            ch->right = first;
    }
    return err;
}

cn_err_t cn_repos_merge_chains(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                               uint64_t *left, uint64_t *right, const uint8_t *cursor,
                               size_t cursor_len, cn_buf_t *next_cursor, bool *has_cursor,
                               cn_repos_path_fn fn, void *ctx)
{
    *has_cursor = false;
    cn_buf_reset(next_cursor);
    if (cursor && cn_repos_path_check(cursor, cursor_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "the cursor is not a path");
    chains_t ch = { .rq = rq,
                    .from_left = *left,
                    .from_right = *right,
                    .from_cursor = cursor,
                    .cursor_len = cursor_len,
                    .next = next_cursor,
                    .fn = fn,
                    .ctx = ctx };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, chains_body, &ch);
    err = cn__rows_bytes_hand(&ch.rows, err, fn, ctx);
    pathset_free(&ch.seen);
    if (err >= 0) {
        *left = ch.left;
        *right = ch.right;
        *has_cursor = ch.has_next;
    }
    return err;
}

/* ---- file states (tag 2) and unchanged paths (tag 5) ------------------------------------ */
cn_err_t cn__paths_check(cn_repos_req_t *rq, const cn_repos_pathv_t *paths, uint32_t n)
{
    if (n > CN_REPOS_MERGE_PATHS_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "at most 1,024 paths a read");
    for (uint32_t i = 0; i < n; i++)
        if (cn_repos_path_check(paths[i].p, paths[i].n) < 0)
            return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                             "path %u is not a canonical path", i);
    return CN_OK;
}

/* A read of some paths on one branch: the revisions, the paths and what
 * was found. */
typedef struct path_read {
    cn_repos_req_t *rq;
    const uint8_t *branch;
    uint64_t from, to; /* tag 2: to is the revision */
    const cn_repos_pathv_t *paths;
    uint32_t n;
    bool *present;
    cn_repos_entry_t *out;
    bool unchanged;
} path_read_t;

static cn_err_t states_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    path_read_t *pr = ctx;
    const uint8_t *id = repo->info.id;
    cn_repos_branch_t b;
    cn__ptree_t *t = NULL;
    cn_digest_t rev, content;
    CN_TRY(cn__branch_load(txn, pr->rq, id, pr->branch, &b));
    CN_TRY(cn__schema_check(txn, pr->rq, id));
    cn_err_t err =
        cn__snapshot_open(txn, pr->rq, id, pr->branch, pr->to, pr->to, &rev, &content, &t);
    for (uint32_t i = 0; err >= 0 && i < pr->n; i++)
        err = cn__ptree_get(t, pr->paths[i].p, pr->paths[i].n, &pr->present[i], &pr->out[i]);
    cn__ptree_free(t);
    return err;
}

cn_err_t cn_repos_file_states(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                              const uint8_t branch[16], uint64_t revision,
                              const cn_repos_pathv_t *paths, uint32_t n, bool *present,
                              cn_repos_entry_t *out)
{
    CN_TRY(cn__paths_check(rq, paths, n));
    path_read_t pr = { .rq = rq,
                       .branch = branch,
                       .to = revision,
                       .paths = paths,
                       .n = n,
                       .present = present,
                       .out = out };
    return cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, states_body, &pr);
}

/* The paths with an event on branch in (from, to], and their case folds,
 * each set sorted; at most the history budget of events. */
static cn_err_t events_between(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                               const uint8_t branch[16], uint64_t from, uint64_t to,
                               pathset_t *paths, pathset_t *folds)
{
    cn_meta_stmt_t *st = NULL;
    uint8_t *fold = malloc(CN_REPOS_MAX_PATH);
    cn_err_t err = fold ? CN_OK : -ENOMEM;
    if (err >= 0)
        err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_EVENTS_BETWEEN], "bbiii",
                             CN__ARG_ID(repo), CN__ARG_ID(branch), (int64_t)from, (int64_t)to,
                             (int64_t)CN_REPOS_HISTORY_BUDGET + 1);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const uint8_t *p = cn_meta_column_blob(st, 0, &n);
        long fn = p ? cn_repos_path_fold(p, n, fold, CN_REPOS_MAX_PATH) : -1;
        if (fn < 0)
            err = CN_E_CORRUPT;
        else if (paths->n == CN_REPOS_HISTORY_BUDGET)
            err = over_budget(rq);
        else if ((err = pathset_push(paths, p, n)) >= 0)
            err = pathset_push(folds, fold, (size_t)fn);
    }
    cn_meta_finish(st);
    free(fold);
    pathset_sort(paths);
    pathset_sort(folds);
    return err == CN_META_DONE ? CN_OK : err;
}

/* Whether p, an ancestor of it, a path under it or a case-fold alias of it
 * is in the sorted sets of changed paths and folds (fold: scratch of
 * CN_REPOS_MAX_PATH + 1 bytes). */
static cn_err_t touched(const pathset_t *paths, const pathset_t *folds, const cn_repos_pathv_t *p,
                        uint8_t *fold, bool *hit)
{
    pathv_lower(paths->v, paths->n, p->p, p->n, hit);
    for (size_t k = 0; k < p->n && !*hit; k++)
        if (p->p[k] == '/')
            pathv_lower(paths->v, paths->n, p->p, k, hit);
    if (!*hit) {
        /* the paths under p start with p "/": the first is the lower bound */
        bool eq = false;
        memcpy(fold, p->p, p->n);
        fold[p->n] = '/';
        size_t at = pathv_lower(paths->v, paths->n, fold, p->n + 1, &eq);
        const cn_repos_pathv_t *q = at < paths->n ? &paths->v[at] : NULL;
        *hit = q && q->n > p->n + 1 && memcmp(q->p, fold, p->n + 1) == 0;
    }
    long fn = cn_repos_path_fold(p->p, p->n, fold, CN_REPOS_MAX_PATH);
    if (fn < 0)
        return CN_E_CORRUPT;
    if (!*hit)
        pathv_lower(folds->v, folds->n, fold, (size_t)fn, hit);
    return CN_OK;
}

static cn_err_t unchanged_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    path_read_t *pr = ctx;
    const uint8_t *id = repo->info.id;
    cn_repos_branch_t b;
    pathset_t paths = { 0 }, folds = { 0 };
    CN_TRY(cn__branch_load(txn, pr->rq, id, pr->branch, &b));
    CN_TRY(cn__schema_check(txn, pr->rq, id));
    CN_TRY(cn__branch_within(pr->rq, &b, pr->from));
    CN_TRY(cn__branch_within(pr->rq, &b, pr->to));
    /* on one branch an earlier revision is in a later one's ancestry */
    pr->unchanged = pr->from <= pr->to;
    if (!pr->unchanged)
        return CN_OK;
    uint8_t *fold = malloc(CN_REPOS_MAX_PATH + 1);
    cn_err_t err =
        fold ? events_between(txn, pr->rq, id, pr->branch, pr->from, pr->to, &paths, &folds)
             : -ENOMEM;
    for (uint32_t i = 0; err >= 0 && i < pr->n && pr->unchanged; i++) {
        bool hit = false;
        err = touched(&paths, &folds, &pr->paths[i], fold, &hit);
        pr->unchanged = !hit;
    }
    free(fold);
    pathset_free(&paths);
    pathset_free(&folds);
    return err;
}

cn_err_t cn_repos_paths_unchanged(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                  const uint8_t branch[16], uint64_t from, uint64_t to,
                                  const cn_repos_pathv_t *paths, uint32_t n, bool *unchanged)
{
    *unchanged = false;
    CN_TRY(cn__paths_check(rq, paths, n));
    path_read_t pr = { .rq = rq, .branch = branch, .from = from, .to = to, .paths = paths, .n = n };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, unchanged_body, &pr);
    *unchanged = err >= 0 && pr.unchanged;
    return err;
}

/* ---- merge submits (24) ------------------------------------------------------------------- */
void cn__fp_open(cn_blake3_t *h, const char *domain, size_t len, const cn_repos_submit_t *s)
{
    cn_digest_t ordinary;
    cn_repos_submit_fp(s, &ordinary);
    cn_blake3_init(h);
    cn_blake3_update(h, domain, len);
    cn_blake3_update(h, ordinary.b, CN_DIGEST_LEN);
}

void cn__fp_le64(cn_blake3_t *h, uint64_t v)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    cn_blake3_update(h, le, 8);
}

void cn_repos_merge_fp(const cn_repos_merge_t *m, cn_digest_t *out)
{
    static const char domain[] = "scribe:merge-operation:v1";
    cn_blake3_t h;
    cn__fp_open(&h, domain, sizeof domain, &m->submit); /* the domain's NUL included */
    cn__fp_le64(&h, m->submit.base);
    cn_blake3_update(&h, m->source, 16);
    cn__fp_le64(&h, m->source_head);
    cn_blake3_update(&h, m->base_branch, 16);
    cn__fp_le64(&h, m->base);
    cn_blake3_final(&h, out);
}

cn_err_t cn__merge_plan(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        const cn_repos_branch_t *target, const cn_repos_merge_t *m,
                        uint64_t *source_commit, cn_digest_t *source_id)
{
    const uint8_t *id = repo->info.id;
    cn_repos_branch_t source, base_branch;
    merge_base_t mb;
    CN_TRY(cn__branch_load(txn, rq, id, m->source, &source));
    CN_TRY(cn__branch_load(txn, rq, id, m->base_branch, &base_branch));
    CN_TRY(cn__schema_check(txn, rq, id));
    CN_TRY(cn__branch_within(rq, target, m->submit.base));
    CN_TRY(cn__branch_within(rq, &source, m->source_head));
    CN_TRY(base_of(txn, rq, repo, target, m->submit.base, &source, m->source_head, &mb));
    if (mb.base != m->base || memcmp(mb.branch, m->base_branch, 16) != 0) {
        char hex[33];
        cn_hex_encode(mb.branch, 16, hex);
        return cn__rfail(rq, CN_E_CONFLICT, CN_REPOS_E_BASE_MISMATCH,
                         "the merge base is change %llu of branch %s", (unsigned long long)mb.base,
                         hex);
    }
    *source_commit = mb.source_commit;
    *source_id = mb.source_id;
    return CN_OK;
}

/* The paths a change set names (destinations and move sources), sorted:
 * *n of them. */
static cn_err_t named_paths(const cn_repos_changeset_t *cs, cn_repos_pathv_t **out, size_t *count)
{
    cn_repos_pathv_t *v = malloc(((size_t)cs->count * 2 + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    cn_repos_changeset_iter(cs, &it);
    while (cn_repos_changeset_next(&it, &e)) {
        v[n++] = (cn_repos_pathv_t){ e.path, e.path_len };
        if (e.kind == CN_REPOS_MOVE)
            v[n++] = (cn_repos_pathv_t){ e.from, e.from_len };
    }
    qsort(v, n, sizeof *v, pathv_cmp);
    *out = v;
    *count = n;
    return CN_OK;
}

/* The missing paths of a merge: how many, and a message naming those that
 * fit in it. */
typedef struct missing {
    pathset_t seen;
    char msg[CN_FAIL_MESSAGE_MAX];
    size_t len;
} missing_t;

static cn_err_t note_missing(missing_t *ms, const uint8_t *p, size_t n)
{
    bool added = false;
    CN_TRY(pathset_insert(&ms->seen, p, n, &added));
    if (added && ms->len + n + 2 < sizeof ms->msg - 16) {
        ms->len += (size_t)snprintf(ms->msg + ms->len, sizeof ms->msg - ms->len, "%s%.*s",
                                    ms->seen.n > 1 ? ", " : "", (int)n, (const char *)p);
    }
    return CN_OK;
}

/* Checks the events of commit c (accepted on branch) against the named
 * paths; *visits counts the rows read. */
static cn_err_t cover_commit(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                             const uint8_t branch[16], uint64_t c, const cn_repos_pathv_t *named,
                             size_t nnamed, missing_t *ms, uint64_t *visits)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_EVENT_PATHS], "bbibi",
                          CN__ARG_ID(repo), CN__ARG_ID(branch), (int64_t)c, (const void *)"",
                          (size_t)0, (int64_t)INT64_MAX));
    cn_err_t err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const uint8_t *p = cn_meta_column_blob(st, 0, &n);
        bool hit = false;
        if (++*visits > CN_REPOS_HISTORY_BUDGET) {
            err = over_budget(rq);
            break;
        }
        if (!p) {
            err = CN_E_CORRUPT;
            break;
        }
        pathv_lower(named, nnamed, p, n, &hit);
        if (!hit && (err = note_missing(ms, p, n)) < 0)
            break;
    }
    cn_meta_finish(st);
    return err == CN_META_DONE ? CN_OK : err;
}

cn_err_t cn__merge_covers(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                          const cn_repos_changeset_t *cs, uint64_t source_commit, uint64_t base)
{
    cn_repos_pathv_t *named = NULL;
    missing_t ms;
    memset(&ms, 0, sizeof ms);
    uint64_t visits = 0;
    size_t nnamed = 0;
    cn_err_t err = named_paths(cs, &named, &nnamed);
    /* the source's first-parent chain above the base */
    for (uint64_t c = source_commit; err >= 0 && c > base;) {
        uint64_t first = 0, merge = 0;
        uint8_t branch[16];
        bool found = false;
        if ((err = commit_row(txn, repo, c, &found, &first, &merge, branch)) < 0)
            break;
        if (!found || ++visits > CN_REPOS_HISTORY_BUDGET) {
            err = found ? over_budget(rq) : CN_E_CORRUPT;
            break;
        }
        err = cover_commit(txn, rq, repo, branch, c, named, nnamed, &ms, &visits);
        c = first;
    }
    free(named);
    if (err >= 0 && ms.seen.n)
        err = cn__rfail(rq, CN_E_CONFLICT, CN_REPOS_E_MERGE_INCOMPLETE,
                        "the change set misses %zu path(s) the source changed since the base: %s",
                        ms.seen.n, ms.msg);
    pathset_free(&ms.seen);
    return err;
}

/* ---- for cherry-picks (service_cherry.c) --------------------------------------------- */
cn_err_t cn__commit_parents(cn_meta_txn_t *txn, const uint8_t repo[16], uint64_t change,
                            bool *found, uint64_t *first, uint64_t *merge, uint8_t branch[16])
{
    return commit_row(txn, repo, change, found, first, merge, branch);
}

cn_err_t cn__in_ancestry(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         uint64_t tip, uint64_t c, bool *in)
{
    /* c is in tip's ancestry exactly when the merge base of c's chain into
     * tip is c itself: the rule's first candidate is c. */
    graph_t g = { txn, repo };
    uint64_t base = 0;
    cn_err_t err = cn_repos_merge_base(tip, c, graph_parents, &g, CN_REPOS_HISTORY_BUDGET, &base);
    if (err == CN_E_LIMIT)
        return over_budget(rq);
    *in = err >= 0 && c != 0 && base == c;
    return err < 0 ? err : CN_OK;
}

cn_err_t cn__paths_touched(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                           const uint8_t branch[16], uint64_t from, uint64_t to,
                           const cn_repos_pathv_t *paths, size_t n, bool *hit)
{
    pathset_t changed = { 0 }, folds = { 0 };
    uint8_t *fold = malloc(CN_REPOS_MAX_PATH + 1);
    cn_err_t err =
        fold ? events_between(txn, rq, repo, branch, from, to, &changed, &folds) : -ENOMEM;
    for (size_t i = 0; err >= 0 && i < n; i++)
        err = touched(&changed, &folds, &paths[i], fold, &hit[i]);
    free(fold);
    pathset_free(&changed);
    pathset_free(&folds);
    return err;
}
