/* Namespace usage: members and their bytes per namespace, read at O(1) cost
 * per namespace instead of by walking its digests (docs/architecture.md,
 * "Usage totals").  Triggers on blobs_member (src/meta/sql/blobs.c, step
 * v2) keep the totals in the transaction of every membership change; this
 * file reads them and, on a fleet, folds the pending deltas.
 *
 * Must never: count by walking members, or hand a caller the figures of a
 * namespace it may not read. */
#include "blobs_int.h"
#include "cairn/util.h"
#include "meta/sql/blobs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct ns_usage {
    char ns[CN_NAMESPACE_MAX + 1];
    int64_t members, bytes;
} ns_usage_t;

typedef struct usage_rows {
    ns_usage_t *v;
    size_t n, cap;
} usage_rows_t;

static cn_err_t usage_push(usage_rows_t *r, const char *ns, size_t len, int64_t m, int64_t b)
{
    if (len > CN_NAMESPACE_MAX)
        return CN_E_CORRUPT;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        ns_usage_t *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    ns_usage_t *u = &r->v[r->n++];
    memcpy(u->ns, ns, len);
    u->ns[len] = 0;
    u->members = m;
    u->bytes = b;
    return 0;
}

static cn_err_t usage_body(cn_meta_txn_t *txn, void *ctx)
{
    usage_rows_t *r = ctx;
    r->n = 0; /* a retried run starts over */
    cn_meta_stmt_t *st = NULL;
    cn_err_t rc = cn_meta_queryf(txn, &st, cn__sql_blobs[CN_SQL_BLOBS_USAGE], "");
    while (rc >= 0 && (rc = cn_meta_step(st)) == CN_META_ROW) {
        size_t len = 0;
        const char *ns = cn_meta_column_text(st, 0, &len);
        rc = usage_push(r, ns ? ns : "", ns ? len : 0, cn_meta_column_int64(st, 1),
                        cn_meta_column_int64(st, 2));
    }
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn_blobs_usage(cn_blobs_t *b, cn_blobs_caller_t *c, cn_blobs_usage_fn fn, void *arg)
{
    usage_rows_t r = { 0 };
    cn_err_t rc = cn_meta_run(b->meta, CN_META_RUN_READ | CN_META_RETRY, usage_body, &r);
    for (size_t i = 0; rc >= 0 && i < r.n; i++) {
        cn_blobs_caller_t who = { .principal = c->principal };
        cn_err_t a = cn__blobs_authorize(b, &who, r.v[i].ns, CN_NS_READ);
        if (a == CN_E_DENIED)
            continue;
        rc = a < 0 ? a : fn(arg, r.v[i].ns, r.v[i].members, r.v[i].bytes);
    }
    free(r.v);
    return rc;
}

cn_err_t cn_blobs_usage_fold(cn_blobs_t *b)
{
    return cn_meta_run_shared(b->meta, &cn__sql_blobs_engine[CN_SQL_BLOBS_E_USAGE_FOLD]);
}
