/* changed_paths: each path with a native event in (min(from, to),
 * max(from, to)] once, in byte order, with its last event in that interval
 * and its state pinned at `to` (absent when the snapshot at `to` has no
 * live file there).  One read snapshot; the page is bounded by limit. */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn_repos_changed_paths(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_changed_q_t *q,
                                cn_repos_changed_fn fn, void *ctx, bool *more)
{
    *more = false;
    if (q->prefix_len && cn_repos_path_check(q->prefix, q->prefix_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "the prefix is not canonical");
    if (q->after && cn_repos_path_check(q->after, q->after_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the continuation token is not one this server issued");
    uint32_t limit = q->limit == 0 ? 1 : q->limit > CN_REPOS_PAGE_MAX ? CN_REPOS_PAGE_MAX : q->limit;
    uint64_t lo = q->from < q->to ? q->from : q->to, hi = q->from < q->to ? q->to : q->from;
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn__repo_t rp;
    uint64_t head = 0;
    cn__ptree_t *t = NULL;
    cn_meta_stmt_t *st = NULL;
    uint8_t *plo = NULL, *phi = NULL;
    cn_digest_t rev, content;
    cn_err_t err = cn__repo_load(r, txn, rq, q->repo, CN__READ, &rp);
    if (err >= 0)
        err = cn__branch_head(txn, rq, q->repo, q->branch, &head, NULL, 0);
    if (err >= 0 && hi > head)
        err = cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_CHANGE_NOT_FOUND,
                        "change %llu is past the branch head %llu", (unsigned long long)hi,
                        (unsigned long long)head);
    if (err >= 0)
        err = cn__snapshot_root(txn, q->repo, q->branch, q->to, &rev, &content);
    if (err >= 0)
        err = cn__ptree_open(txn, q->repo, &rev, &t);
    if (err < 0)
        goto out;
    size_t pn = q->prefix_len;
    if (!(plo = malloc(pn + 1)) || !(phi = malloc(pn + 1))) {
        err = -ENOMEM;
        goto out;
    }
    if (pn) {
        memcpy(plo, q->prefix, pn);
        memcpy(phi, q->prefix, pn);
    }
    plo[pn] = '/';
    phi[pn] = '0';
    err = cn_meta_prepare(txn,
        "SELECT path, MAX(change) FROM repos_event WHERE repo = ? AND branch = ?"
        " AND change > ? AND change <= ? AND path > ?"
        " AND (? = 0 OR path = ? OR (path >= ? AND path < ?))"
        " GROUP BY path ORDER BY path LIMIT ?", &st);
    if (err < 0)
        goto out;
    cn__bind_id(st, 1, q->repo);
    cn__bind_id(st, 2, q->branch);
    cn_meta_bind_int64(st, 3, (int64_t)lo);
    cn_meta_bind_int64(st, 4, (int64_t)hi);
    cn_meta_bind_blob(st, 5, q->after ? q->after : (const uint8_t *)"", q->after ? q->after_len : 0);
    cn_meta_bind_int64(st, 6, (int64_t)pn);
    cn_meta_bind_blob(st, 7, q->prefix ? q->prefix : (const uint8_t *)"", pn);
    cn_meta_bind_blob(st, 8, plo, pn + 1);
    cn_meta_bind_blob(st, 9, phi, pn + 1);
    cn_meta_bind_int64(st, 10, (int64_t)limit + 1);
    uint32_t n = 0;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        if (n == limit) {
            *more = true;
            err = CN_META_DONE;
            break;
        }
        cn_repos_changed_row_t row;
        memset(&row, 0, sizeof row);
        row.path = cn_meta_column_blob(st, 0, &row.path_len);
        row.change = (uint64_t)cn_meta_column_int64(st, 1);
        if (!row.path) {
            err = CN_E_CORRUPT;
            break;
        }
        bool found = false;
        cn_repos_entry_t e;
        if ((err = cn__ptree_get(t, row.path, row.path_len, &found, &e)) < 0)
            break;
        row.present = found && e.state == CN_REPOS_LIVE;
        if (row.present) {
            row.manifest = e.manifest;
            row.size = e.size;
            row.mode = e.mode;
        }
        if ((err = fn(ctx, &row)) != 0)
            break;
        n++;
    }
    cn_meta_finish(st);
out:
    free(plo);
    free(phi);
    cn__ptree_free(t);
    cn_meta_rollback(txn);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}
