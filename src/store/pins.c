/* Pins: what protects a blob from the sweeper and from cn_store_delete.
 *
 * Guards are in-process, refcounted per digest, and gone with the process.
 * Durable pins are rows in the metadata store (component "store"), with an
 * optional expiry.  Both are taken under the digest's lock, the same
 * lock under which the sweeper and delete make their final check, so a pin
 * either exists before that check (and is seen) or is taken after the
 * removal (and protects whatever is published next).  On a tier shared by
 * a fleet a pin's transaction also takes the digest's store_blob row, the
 * lock another node's sweeper holds for its final check (sweep.c, S6-S7).
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/meta.h"
#include "cairn/util.h"
#include "meta/sql/store.h"

struct cn_store_guard {
    cn_store_t *s;
    cn_digest_t d;
};

static size_t guard_bucket(const cn_digest_t *d)
{
    return d->b[1] % CN__STORE_GUARD_BUCKETS;
}

static cn__guard_node_t **guard_find_locked(cn_store_t *s, const cn_digest_t *d)
{
    cn__guard_node_t **pp = &s->guards[guard_bucket(d)];
    while (*pp && memcmp((*pp)->d.b, d->b, CN_DIGEST_LEN) != 0)
        pp = &(*pp)->next;
    return pp;
}

static size_t guard_seen_bit(const cn_digest_t *d)
{
    return ((size_t)d->b[2] << 8 | d->b[3]) % CN__STORE_GUARD_SEEN_BITS;
}

static void guard_note_locked(cn_store_t *s, const cn_digest_t *d)
{
    if (s->guard_watch) {
        size_t bit = guard_seen_bit(d);
        s->guard_seen[bit / 64] |= UINT64_C(1) << (bit % 64);
    }
}

void cn__store_guard_watch(cn_store_t *s, bool on)
{
    pthread_mutex_lock(&s->guard_mu);
    memset(s->guard_seen, 0, sizeof s->guard_seen);
    s->guard_watch = on;
    pthread_mutex_unlock(&s->guard_mu);
}

bool cn__store_guarded_since_watch(cn_store_t *s, const cn_digest_t *d)
{
    size_t bit = guard_seen_bit(d);
    pthread_mutex_lock(&s->guard_mu);
    bool seen = *guard_find_locked(s, d) != NULL || (s->guard_seen[bit / 64] >> (bit % 64) & 1);
    pthread_mutex_unlock(&s->guard_mu);
    return seen;
}

bool cn__store_guarded(cn_store_t *s, const cn_digest_t *d)
{
    pthread_mutex_lock(&s->guard_mu);
    bool held = *guard_find_locked(s, d) != NULL;
    pthread_mutex_unlock(&s->guard_mu);
    return held;
}

cn_err_t cn_store_guard_acquire(cn_store_t *s, const cn_digest_t *d, cn_store_guard_t **out)
{
    *out = NULL;
    cn_store_guard_t *g = malloc(sizeof *g);
    if (!g)
        return -ENOMEM;
    g->s = s;
    g->d = *d;
    cn__dheld_t dl;
    cn__dlock(s, d, &dl);
    pthread_mutex_lock(&s->guard_mu);
    cn__guard_node_t **pp = guard_find_locked(s, d);
    if (!*pp) {
        cn__guard_node_t *n = calloc(1, sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&s->guard_mu);
            cn__dunlock(s, &dl);
            free(g);
            return -ENOMEM;
        }
        n->d = *d;
        *pp = n;
    }
    (*pp)->refs++;
    guard_note_locked(s, d);
    pthread_mutex_unlock(&s->guard_mu);
    cn__dunlock(s, &dl);
    *out = g;
    return CN_OK;
}

void cn_store_guard_release(cn_store_guard_t *g)
{
    if (!g)
        return;
    cn_store_t *s = g->s;
    pthread_mutex_lock(&s->guard_mu);
    cn__guard_node_t **pp = guard_find_locked(s, &g->d);
    if (CN_ALWAYS(*pp) && --(*pp)->refs == 0) {
        cn__guard_node_t *n = *pp;
        *pp = n->next;
        free(n);
    }
    guard_note_locked(s, &g->d);
    pthread_mutex_unlock(&s->guard_mu);
    free(g);
}

/* ---- blob rows (sweep.c, S6-S8) ------------------------------------------------ */

cn_err_t cn__store_blob_row_upsert(cn_meta_txn_t *txn, const cn_digest_t *d)
{
    cn_err_t rc = cn_meta_execf(
        txn, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_BLOB_TOUCH]), "b", d->b,
        (size_t)CN_DIGEST_LEN);
    return rc < 0 ? rc : CN_OK;
}

static cn_err_t row_touch_body(cn_meta_txn_t *txn, void *ctx)
{
    return cn__store_blob_row_upsert(txn, ctx);
}

cn_err_t cn__store_blob_row_touch(cn_store_t *s, const cn_digest_t *d)
{
    if (!s->blob_rows)
        return CN_OK;
    /* S8: each attempt waits for the row at most lock_timeout (the busy
     * timeout); a sweeper's commit or a lock timeout is a CN_E_DB_LOCKED
     * that the retry repeats, within twice the busy timeout. */
    return cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, row_touch_body, (void *)d);
}

/* ---- durable pins ------------------------------------------------------------ */

cn_err_t cn__store_pins_migrate(cn_store_t *s)
{
    return cn__sql_migrate(s->meta, &cn__sql_store_set);
}

/* One durable pin: what a lookup asks and finds, or a row to insert. */
typedef struct pin_row {
    const cn_digest_t *d;
    const char *owner_tag;
    int64_t expires;
    uint64_t id;
    bool pinned;
    bool blob_row; /* S7: take d's store_blob row first */
} pin_row_t;

cn_err_t cn__store_pin_find_live(cn_meta_txn_t *txn, const cn_digest_t *d)
{
    return cn_meta_execf(
        txn, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_PIN_FIND_LIVE]), "b",
        d->b, (size_t)CN_DIGEST_LEN);
}

static cn_err_t pinned_body(cn_meta_txn_t *txn, void *ctx)
{
    pin_row_t *pr = ctx;
    cn_err_t rc = cn__store_pin_find_live(txn, pr->d);
    pr->pinned = rc == CN_META_ROW;
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn__store_pinned_durable(cn_store_t *s, const cn_digest_t *d, bool *pinned)
{
    *pinned = false;
    if (!s->meta)
        return CN_OK;
    pin_row_t pr = { .d = d };
    cn_err_t rc = cn_meta_run(s->meta, CN_META_RUN_READ | CN_META_RETRY, pinned_body, &pr);
    *pinned = rc >= 0 && pr.pinned;
    return rc;
}

cn_err_t cn_store_is_pinned(cn_store_t *s, const cn_digest_t *d, bool *pinned)
{
    if (cn__store_guarded(s, d)) {
        *pinned = true;
        return CN_OK;
    }
    return cn__store_pinned_durable(s, d, pinned);
}

static cn_err_t pin_insert(cn_meta_txn_t *txn, void *ctx)
{
    const pin_row_t *pr = ctx;
    if (pr->blob_row)
        CN_TRY(cn__store_blob_row_upsert(txn, pr->d));
    cn_err_t rc = cn_meta_execf(
        txn, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_PIN_INSERT]), "ibsii",
        (int64_t)pr->id, pr->d->b, (size_t)CN_DIGEST_LEN, pr->owner_tag, pr->expires, cn_wall_ms());
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn_store_pin(cn_store_t *s, const cn_digest_t *d, const char *owner_tag,
                      int64_t expires_unix_ms, uint64_t *pin_id)
{
    if (!s->meta)
        return CN_E_UNSUPPORTED;
    if (expires_unix_ms < 0 || (owner_tag && strlen(owner_tag) > 255))
        return CN_E_INVALID;
    cn__dheld_t dl;
    cn_err_t rc = CN_E_EXISTS;
    pin_row_t pr = {
        .d = d, .owner_tag = owner_tag, .expires = expires_unix_ms, .blob_row = s->blob_rows
    };
    /* Held across the commit: see the file comment. */
    cn__dlock(s, d, &dl);
    for (int tries = 0; tries < 4 && rc == CN_E_EXISTS; tries++) {
        if ((rc = cn_random_bytes(&pr.id, sizeof pr.id)) < 0)
            break;
        pr.id = (pr.id >> 2) | 1; /* positive in a signed BIGINT, never 0 */
        rc = cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, pin_insert, &pr);
    }
    cn__dunlock(s, &dl);
    if (rc == CN_OK && pin_id)
        *pin_id = pr.id;
    return rc;
}

/* A delete of the pins sql selects by its one integer parameter (or, when
 * expired is set, of the expired pins), and the rows it removed. */
typedef struct pin_delete {
    const char *sql;
    int64_t arg;
    bool expired;
    int64_t removed;
} pin_delete_t;

static cn_err_t delete_body(cn_meta_txn_t *txn, void *ctx)
{
    pin_delete_t *pd = ctx;
    cn_err_t rc =
        pd->expired
            ? cn_meta_execf(
                  txn, cn_meta_batch_text(txn, &cn__sql_store_engine[CN_SQL_STORE_E_PIN_EXPIRE]),
                  "")
            : cn_meta_execf(txn, pd->sql, "i", pd->arg);
    pd->removed = rc < 0 ? 0 : cn_meta_changes(txn);
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn_store_unpin(cn_store_t *s, uint64_t pin_id)
{
    if (!s->meta)
        return CN_E_UNSUPPORTED;
    if (pin_id == 0 || pin_id > INT64_MAX)
        return CN_E_NOT_FOUND;
    pin_delete_t pd = { .sql = cn__sql_store[CN_SQL_STORE_PIN_DELETE], .arg = (int64_t)pin_id };
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, delete_body, &pd));
    return pd.removed ? CN_OK : CN_E_NOT_FOUND;
}

cn_err_t cn__store_pins_expire(cn_store_t *s, uint64_t *removed)
{
    *removed = 0;
    if (!s->meta)
        return CN_OK;
    pin_delete_t pd = { .expired = true };
    CN_TRY(cn_meta_run(s->meta, CN_META_RUN_WRITE | CN_META_RETRY, delete_body, &pd));
    *removed = (uint64_t)pd.removed;
    return CN_OK;
}
