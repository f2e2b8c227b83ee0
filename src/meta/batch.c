/* meta batch lookups: one statement for a whole list of keys, in the form
 * each engine reads a list best (cairn/meta.h, "batch lookups").  A service
 * asking about thousands of digests pays one round trip on PostgreSQL and
 * one statement on SQLite instead of one per key.
 *
 * It must never build SQL at run time (the two texts are constants of a
 * statement file) nor trust a row's position before checking it against
 * the list it was asked about.
 */
#include "cairn/meta.h"
#include "engine.h"

#include <stdarg.h>
#include <string.h>

#define KEY_WIDTH_MAX 8192

const char *cn_meta_batch_text(const cn_meta_txn_t *txn, const cn_meta_batch_sql_t *sql)
{
    return cn_meta_round_trips(txn) ? sql->pg : sql->sqlite;
}

bool cn_meta_round_trips(const cn_meta_txn_t *txn)
{
    return cn__meta_txn_engine(txn) == &cn__meta_engine_pg;
}

static cn_err_t batch_vquery(cn_meta_txn_t *txn, cn_meta_stmt_t **out,
                             const cn_meta_batch_sql_t *sql, const void *keys, size_t width,
                             size_t n, const char *types, va_list ap)
{
    *out = NULL;
    if (n > CN_META_BATCH_MAX)
        return CN_E_LIMIT;
    if (!n || !width || width > KEY_WIDTH_MAX || !keys)
        return CN_E_INVALID;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, cn_meta_batch_text(txn, sql), &st);
    if (err < 0)
        return err;
    err = cn__meta_bind_list(st, 1, keys, width, n);
    if (err >= 0)
        err = cn__meta_bind_args(st, 2, types, ap);
    if (err < 0) {
        cn_meta_finish(st);
        return err;
    }
    *out = st;
    return CN_OK;
}

cn_err_t cn_meta_batch_query(cn_meta_txn_t *txn, cn_meta_stmt_t **out,
                             const cn_meta_batch_sql_t *sql, const void *keys, size_t width,
                             size_t n, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    cn_err_t err = batch_vquery(txn, out, sql, keys, width, n, types, ap);
    va_end(ap);
    return err;
}

/* One statement's worth (n <= CN_META_BATCH_MAX) of cn_meta_batch_found. */
static cn_err_t found_chunk(cn_meta_txn_t *txn, const cn_meta_batch_sql_t *sql,
                            const unsigned char *keys, size_t width, size_t n, bool *found,
                            size_t *nfound, const char *types, va_list ap)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = batch_vquery(txn, &st, sql, keys, width, n, types, ap);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        int64_t at = cn_meta_column_int64(st, 0);
        if (cn_meta_column_is_null(st, 0) || at < 0 || (uint64_t)at >= n) {
            err = CN_E_CORRUPT; /* the statement does not answer positions */
            break;
        }
        *nfound += !found[at];
        found[at] = true;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_meta_batch_found(cn_meta_txn_t *txn, const cn_meta_batch_sql_t *sql, const void *keys,
                             size_t width, size_t n, bool *found, size_t *nfound, const char *types,
                             ...)
{
    size_t count = 0;
    cn_err_t err = CN_OK;
    if (n)
        memset(found, 0, n * sizeof *found);
    for (size_t at = 0; at < n && err >= 0; at += CN_META_BATCH_MAX) {
        size_t k = n - at < CN_META_BATCH_MAX ? n - at : CN_META_BATCH_MAX;
        va_list ap;
        va_start(ap, types);
        err = found_chunk(txn, sql, (const unsigned char *)keys + at * width, width, k, found + at,
                          &count, types, ap);
        va_end(ap);
    }
    if (nfound)
        *nfound = err < 0 ? 0 : count;
    return err;
}
