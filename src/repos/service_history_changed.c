/* changed_paths: each path with a native event in (min(from, to),
 * max(from, to)] once, in byte order, with its last event in that interval
 * and its state pinned at `to` (absent when the snapshot at `to` has no
 * live file there).  One read snapshot; the page is bounded by limit. */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One page of the paths changed in (lo, hi], each with its state at q->to:
 * at most limit, collected into rows (each a changed_rec_t) and handed to
 * the caller's fn after the run, so that a repeated run (CN_META_RETRY)
 * hands each once; more when another follows. */
typedef struct changed_page {
    cn_repos_req_t *rq;
    const cn_repos_changed_q_t *q;
    uint32_t limit;
    uint64_t lo, hi;
    cn_repos_changed_fn fn;
    void *ctx;
    cn__rows_t rows;
    bool more;
} changed_page_t;

/* A collected row: its path is an offset into the rows' bytes. */
typedef struct changed_rec {
    cn_repos_changed_row_t row;
    size_t path;
} changed_rec_t;

/* Collects row into cp's page. */
static cn_err_t changed_keep(changed_page_t *cp, const cn_repos_changed_row_t *row)
{
    changed_rec_t rec = { .row = *row };
    return cn__rows_add_with(&cp->rows, &rec, sizeof rec, &rec.path, row->path, row->path_len);
}

static cn_err_t changed_put(const cn__rows_t *rows, void *rec, void *ctx)
{
    changed_rec_t *cr = rec;
    const changed_page_t *cp = ctx;
    cr->row.path = cn__rows_at(rows, cr->path);
    return cp->fn(cp->ctx, &cr->row);
}

/* The bound statement of cp's query: each path with an event in (lo, hi]
 * under the prefix and after the cursor, with its last change. */
static cn_err_t changed_query(cn_meta_txn_t *txn, const changed_page_t *cp, cn_meta_stmt_t **st)
{
    const cn_repos_changed_q_t *q = cp->q;
    size_t pn = q->prefix_len;
    uint8_t *plo = malloc(pn + 1), *phi = malloc(pn + 1);
    cn_err_t err = plo && phi ? CN_OK : -ENOMEM;
    if (err >= 0) {
        if (pn) {
            memcpy(plo, q->prefix, pn);
            memcpy(phi, q->prefix, pn);
        }
        plo[pn] = '/';
        phi[pn] = '0';
        err = cn_meta_queryf(
            txn, st, cn__sql_repos[CN_SQL_REPOS_CHANGED_PATHS], "bbiibibbbi", CN__ARG_ID(q->repo),
            CN__ARG_ID(q->branch), (int64_t)cp->lo, (int64_t)cp->hi,
            (const void *)(q->after ? q->after : (const uint8_t *)""), q->after ? q->after_len : 0,
            (int64_t)pn, (const void *)(q->prefix ? q->prefix : (const uint8_t *)""), pn,
            (const void *)plo, pn + 1, (const void *)phi, pn + 1, (int64_t)cp->limit + 1);
    }
    free(plo);
    free(phi);
    return err;
}

static cn_err_t changed_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    changed_page_t *cp = ctx;
    const cn_repos_changed_q_t *q = cp->q;
    cn__ptree_t *t = NULL;
    cn_meta_stmt_t *st = NULL;
    cn_digest_t rev, content;
    (void)repo;
    cn__rows_start(&cp->rows, cp->limit); /* an earlier attempt's rows */
    cp->more = false;
    cn_err_t err =
        cn__snapshot_open(txn, cp->rq, q->repo, q->branch, cp->hi, q->to, &rev, &content, &t);
    if (err >= 0)
        err = changed_query(txn, cp, &st);
    for (uint32_t n = 0; err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW; n++) {
        if (n == cp->limit) {
            cp->more = true;
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
        if ((err = changed_keep(cp, &row)) < 0)
            break;
    }
    cn_meta_finish(st);
    cn__ptree_free(t);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}

cn_err_t cn_repos_changed_paths(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_changed_q_t *q,
                                cn_repos_changed_fn fn, void *ctx, bool *more)
{
    *more = false;
    if (q->prefix_len && cn_repos_path_check(q->prefix, q->prefix_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "the prefix is not canonical");
    if (q->after && cn_repos_path_check(q->after, q->after_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the continuation token is not one this server issued");
    changed_page_t cp = {
        .rq = rq, .q = q, .limit = cn__page_limit(q->limit), .fn = fn, .ctx = ctx
    };
    cp.lo = q->from < q->to ? q->from : q->to;
    cp.hi = q->from < q->to ? q->to : q->from;
    cn_err_t err =
        cn__repo_run(r, rq, q->repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, changed_body, &cp);
    *more = cp.more;
    return cn__rows_hand(&cp.rows, err, sizeof(changed_rec_t), changed_put, &cp);
}
