/* History reads: tree pages of any snapshot and the first-parent log, each
 * from one read snapshot.  Paths sort and compare as raw bytes; a path
 * query selects the path itself and everything under "path/", found by the
 * range [path "/", path "0") ('0' follows '/'). */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t clamp_limit(uint32_t limit)
{
    return limit == 0 ? 1 : limit > CN_REPOS_PAGE_MAX ? CN_REPOS_PAGE_MAX : limit;
}

/* The range bounds of "under path/": lo = path "/", hi = path "0". */
static cn_err_t under_bounds(const uint8_t *p, size_t n, uint8_t **lo, uint8_t **hi)
{
    *lo = malloc(n + 1);
    *hi = malloc(n + 1);
    if (!*lo || !*hi) {
        free(*lo);
        free(*hi);
        return -ENOMEM;
    }
    memcpy(*lo, p, n);
    memcpy(*hi, p, n);
    (*lo)[n] = '/';
    (*hi)[n] = '0';
    return CN_OK;
}

cn_err_t cn_repos_tree_page(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_page_q_t *q,
                            cn_repos_tree_fn fn, void *ctx, bool *more,
                            cn_digest_t *content_root, cn_digest_t *revision_root)
{
    *more = false;
    if (q->prefix_len && cn_repos_path_check(q->prefix, q->prefix_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the prefix is not a canonical path");
    if (q->after && cn_repos_path_check(q->after, q->after_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the cursor is not a canonical path");
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn__repo_t rp;
    uint64_t head = 0;
    cn__ptree_t *t = NULL;
    cn_digest_t rev, content;
    cn_err_t err = cn__repo_load(r, txn, rq, q->repo, CN__READ, &rp);
    if (err >= 0)
        err = cn__branch_head(txn, rq, q->repo, q->branch, &head, NULL, 0);
    if (err >= 0 && q->change > head)
        err = cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_CHANGE_NOT_FOUND,
                        "change %llu is past the branch head %llu",
                        (unsigned long long)q->change, (unsigned long long)head);
    if (err >= 0)
        err = cn__snapshot_root(txn, q->repo, q->branch, q->change, &rev, &content);
    if (err >= 0)
        err = cn__ptree_open(txn, q->repo, &rev, &t);
    if (err >= 0)
        err = cn__ptree_page(t, q->prefix, q->prefix_len, q->after, q->after_len,
                            clamp_limit(q->limit), fn, ctx, more);
    cn__ptree_free(t);
    cn_meta_rollback(txn);
    if (err >= 0) {
        *content_root = content;
        *revision_root = rev;
    }
    return err;
}

static size_t blob_len(cn_meta_stmt_t *st, int col, const uint8_t **p)
{
    size_t n = 0;
    *p = cn_meta_column_blob(st, col, &n);
    if (!*p) {
        *p = (const uint8_t *)"";
        n = 0;
    }
    return n;
}

cn_err_t cn_repos_log(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_log_q_t *q,
                      cn_repos_log_fn fn, void *ctx)
{
    if (q->path && cn_repos_path_check(q->path, q->path_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "the path is not canonical");
    if (q->after_path && (!q->path || !q->has_before ||
                          cn_repos_path_check(q->after_path, q->after_len) < 0))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "after path needs a path query and before");
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn__repo_t rp;
    uint64_t head = 0;
    char bname[257];
    uint8_t *lo = NULL, *hi = NULL;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn__repo_load(r, txn, rq, q->repo, CN__READ, &rp);
    if (err >= 0)
        err = cn__branch_head(txn, rq, q->repo, q->branch, &head, bname, sizeof bname);
    uint64_t before = q->has_before ? q->before : UINT64_MAX;
    if (before > (uint64_t)INT64_MAX)
        before = (uint64_t)INT64_MAX;
    if (err < 0)
        goto out;
    if (!q->path) {
        err = cn_meta_prepare(txn, "SELECT change, commit_id, parent, author, message, time_ms"
                              " FROM repos_commit WHERE repo = ? AND branch = ? AND change < ?"
                              " ORDER BY change DESC LIMIT ?", &st);
        if (err < 0)
            goto out;
        cn__bind_id(st, 1, q->repo);
        cn__bind_id(st, 2, q->branch);
        cn_meta_bind_int64(st, 3, (int64_t)before);
        cn_meta_bind_int64(st, 4, clamp_limit(q->limit));
    } else {
        if ((err = under_bounds(q->path, q->path_len, &lo, &hi)) < 0)
            goto out;
        err = cn_meta_prepare(txn,
            "SELECT e.change, c.commit_id, c.parent, c.author, c.message, c.time_ms, e.path,"
            " e.event, e.from_path FROM repos_event e JOIN repos_commit c"
            " ON c.repo = e.repo AND c.change = e.change"
            " WHERE e.repo = ? AND e.branch = ? AND (e.path = ? OR (e.path >= ? AND e.path < ?))"
            " AND (e.change < ? OR (e.change = ? AND e.path > ?))"
            " ORDER BY e.change DESC, e.path ASC LIMIT ?", &st);
        if (err < 0)
            goto out;
        cn__bind_id(st, 1, q->repo);
        cn__bind_id(st, 2, q->branch);
        cn_meta_bind_blob(st, 3, q->path, q->path_len);
        cn_meta_bind_blob(st, 4, lo, q->path_len + 1);
        cn_meta_bind_blob(st, 5, hi, q->path_len + 1);
        cn_meta_bind_int64(st, 6, (int64_t)before);
        /* Without after path, before is exclusive: no row has change = -1. */
        cn_meta_bind_int64(st, 7, q->after_path ? (int64_t)before : -1);
        if (q->after_path)
            cn_meta_bind_blob(st, 8, q->after_path, q->after_len);
        else
            cn_meta_bind_blob(st, 8, "", 0);
        cn_meta_bind_int64(st, 9, clamp_limit(q->limit));
    }
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        cn_repos_log_row_t row;
        memset(&row, 0, sizeof row);
        row.change = (uint64_t)cn_meta_column_int64(st, 0);
        if (!cn__col_fixed(st, 1, row.commit.b, CN_DIGEST_LEN)) {
            err = CN_E_CORRUPT;
            break;
        }
        memcpy(row.branch, q->branch, 16);
        row.branch_name = bname;
        row.parent = (uint64_t)cn_meta_column_int64(st, 2);
        row.author_len = blob_len(st, 3, &row.author);
        row.message_len = blob_len(st, 4, &row.message);
        row.time_ms = cn_meta_column_int64(st, 5);
        row.path = (const uint8_t *)"";
        row.from_path = (const uint8_t *)"";
        if (q->path) {
            row.path_len = blob_len(st, 6, &row.path);
            row.event = (uint8_t)cn_meta_column_int64(st, 7);
            row.from_len = blob_len(st, 8, &row.from_path);
        }
        if ((err = fn(ctx, &row)) != 0)
            break;
    }
    cn_meta_finish(st);
out:
    free(lo);
    free(hi);
    cn_meta_rollback(txn);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}
