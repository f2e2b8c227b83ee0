/* Rollback protection, the storage side (docs/protocol/sau2.md section 8):
 * the highest auth revision seen per incarnation, kept in this server's own
 * metadata (cn_auth_highwater).  A reply from a lower revision of a known
 * incarnation is refused; a new incarnation (after an auth restore or
 * migrate) is accepted, logged at warning, and starts its own mark.  It must
 * never lower a mark, and never let a reply be acted on before its mark is
 * committed. */
#include "auth_int.h"

#include "cairn/crypto.h"
#include "cairn/util.h"

typedef struct hw {
    const uint8_t *inc;
    uint64_t revision, seen;
    bool known;
} hw_t;

static cn_err_t hw_body(cn_meta_txn_t *t, void *arg)
{
    hw_t *h = arg;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_HIGHWATER_GET], "b", h->inc,
                                (size_t)CN_SAU2_ID_LEN);
    if (e == 0)
        e = cn_meta_step(st);
    h->known = e == CN_META_ROW;
    h->seen = h->known ? (uint64_t)cn_meta_column_int64(st, 0) : 0;
    cn_meta_finish(st);
    if (e < 0)
        return e;
    if (h->known && h->revision < h->seen)
        return 0; /* refused: nothing to write */
    if (h->known && h->revision == h->seen)
        return 0;
    return cn_meta_execf(t, cn__sql_au[CN_SQL_AU_HIGHWATER_PUT], "bi", h->inc,
                         (size_t)CN_SAU2_ID_LEN, (int64_t)h->revision);
}

cn_err_t cn_auth_rollback_prepare(cn_meta_t *meta)
{
    return cn__sql_migrate(meta, &cn__sql_au_set);
}

cn_err_t cn_auth_rollback_check(cn_meta_t *meta, const uint8_t incarnation[CN_SAU2_ID_LEN],
                                uint64_t revision)
{
    if (revision > INT64_MAX)
        return CN_E_INVALID;
    hw_t h = { .inc = incarnation, .revision = revision };
    CN_TRY(cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, hw_body, &h));
    char hex[CN_SAU2_ID_LEN * 2 + 1];
    cn_hex_encode(incarnation, CN_SAU2_ID_LEN, hex);
    if (h.known && revision < h.seen) {
        cn_warn("auth", "auth incarnation %s answered revision %llu, below %llu seen: refused", hex,
                (unsigned long long)revision, (unsigned long long)h.seen);
        return CN_E_CONFLICT;
    }
    if (!h.known)
        cn_warn("auth", "new auth incarnation %s at revision %llu accepted", hex,
                (unsigned long long)revision);
    return 0;
}
