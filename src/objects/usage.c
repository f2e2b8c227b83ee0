/* Usage totals: a bucket's object count, version count and stored bytes,
 * read at O(1) cost instead of by listing (docs/architecture.md, "Usage
 * totals").  The totals are kept by triggers of the objects schema (src/meta
 * /sql/objects.c, step v5) in the transaction of every version row change,
 * whichever path makes it (put, copy, multipart completion, delete, delete
 * marker, lifecycle expiry), so they are exact after any crash; this file
 * only reads them and, on a fleet, folds the pending deltas.
 *
 * Must never: count by walking rows, or change a total outside the row
 * change it counts. */
#include "objects_int.h"

static cn_err_t usage_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *ctx)
{
    (void)rq;
    cn_objects_usage_t *out = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_USAGE], "i", b->id);
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        out->objects = cn_meta_column_int64(st, 0);
        out->versions = cn_meta_column_int64(st, 1);
        out->bytes = cn_meta_column_int64(st, 2);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_bucket_usage(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                 cn_objects_usage_t *out)
{
    *out = (cn_objects_usage_t){ 0 };
    return cn__bkt_run(o, rq, bucket, CN_ACT_LIST_BUCKET, CN_META_RUN_READ | CN_META_RETRY,
                       usage_body, out);
}

cn_err_t cn_objects_usage_fold(cn_objects_t *o)
{
    return cn_meta_run_shared(o->meta, &cn__sql_obj_engine[CN_SQL_OBJ_E_USAGE_FOLD]);
}
