/* The blobs service: opening, namespace membership (the root of record each
 * namespace holds, and the store's "blobs" liveness source), authorization,
 * and the control operations stat, have and delete.  Its schema and SQL text
 * are in src/meta/sql/blobs.c.
 *
 * Membership invariants:
 *  1. A row (ns, digest) is inserted only after the digest's bytes are
 *     durable in the store (put.c publishes first), and while a guard on the
 *     digest is held, so the sweeper can never reclaim a blob between its
 *     publish and the commit of the row that keeps it.
 *  2. A digest is present in ns iff ns has its row (or a live pin token of a
 *     put into ns, which always comes with a row) and the store holds it.
 *  3. delete removes rows and ends ns's tokens on them; the bytes are left
 *     to the sweeper, which reclaims them once no liveness source and no pin
 *     holds them and the delete window has passed.
 */
#include "blobs_int.h"
#include "cairn/util.h"
#include "meta/sql/blobs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool cn_blobs_ns_valid(const char *ns, size_t len)
{
    if (!ns || len == 0 || len > CN_NAMESPACE_MAX || ns[0] == '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = ns[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '/' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

static bool ns_ok(const char *ns)
{
    return ns && cn_blobs_ns_valid(ns, strnlen(ns, CN_NAMESPACE_MAX + 1));
}

/* Digests of namespace ns (NULL: of any namespace) and, per body, what
 * became of their rows: found[i] says d[i] has one, members counts the rows
 * found or removed. */
typedef struct ns_digests {
    const char *ns; /* NULL: any namespace */
    const cn_digest_t *d;
    size_t n;
    bool *found;
    size_t members;
} ns_digests_t;

_Static_assert(sizeof(cn_digest_t) == CN_DIGEST_LEN, "digests pack as the batch key list");

/* One batch statement per CN_META_BATCH_MAX digests, not one per digest
 * (issue 24: a `have` of 10,000 digests is one round trip on PostgreSQL). */
static cn_err_t members_body(cn_meta_txn_t *txn, void *ctx)
{
    ns_digests_t *q = ctx;
    q->members = 0;
    return q->ns
               ? cn_meta_batch_found(txn, &cn__sql_blobs_batch[CN_SQL_BLOBS_BATCH_IN_NS], q->d,
                                     (size_t)CN_DIGEST_LEN, q->n, q->found, &q->members, "s", q->ns)
               : cn_meta_batch_found(txn, &cn__sql_blobs_batch[CN_SQL_BLOBS_BATCH_ANY_NS], q->d,
                                     (size_t)CN_DIGEST_LEN, q->n, q->found, &q->members, "");
}

/* The liveness source: a digest is live while any namespace holds it. */
static cn_err_t are_live(void *ctx, const cn_digest_t *d, size_t n, bool *live)
{
    cn_blobs_t *b = ctx;
    ns_digests_t q = { .d = d, .n = n, .found = live };
    return cn_meta_run(b->meta, CN_META_RUN_READ | CN_META_RETRY, members_body, &q);
}

cn_err_t cn_blobs_open(cn_meta_t *meta, cn_store_t *store, cn_identity_t *id,
                       const cn_blobs_opts_t *opts, cn_blobs_t **out)
{
    *out = NULL;
    if (!meta || !store || !id || (opts && opts->pin_ttl_ms < 0))
        return CN_E_INVALID;
    cn_err_t rc = cn__sql_migrate(meta, &cn__sql_blobs_set);
    if (rc < 0)
        return rc;
    cn_blobs_t *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    b->meta = meta;
    b->store = store;
    b->id = id;
    if (opts)
        b->opts = *opts;
    if (!b->opts.max_tokens)
        b->opts.max_tokens = 1u << 20;
    if (!b->opts.tap_queue_bytes)
        b->opts.tap_queue_bytes = 8u << 20;
    if (!b->opts.fanout_budget_bytes)
        b->opts.fanout_budget_bytes = 256u << 20;
    if ((rc = cn__tok_init(&b->tok)) < 0) {
        free(b);
        return rc;
    }
    pthread_mutex_init(&b->fan_mu, NULL);
    pthread_cond_init(&b->fan_cv, NULL);
    rc = cn_store_register_liveness_batch(store, "blobs", are_live, b);
    if (rc < 0) {
        cn_blobs_close(b);
        return rc;
    }
    *out = b;
    return CN_OK;
}

void cn_blobs_shutdown(cn_blobs_t *b)
{
    if (b)
        cn__fan_shutdown(b);
}

void cn_blobs_close(cn_blobs_t *b)
{
    if (!b)
        return;
    cn__fan_shutdown(b);
    cn__tok_fini(b);
    pthread_cond_destroy(&b->fan_cv);
    pthread_mutex_destroy(&b->fan_mu);
    free(b);
}

cn_err_t cn__blobs_authorize(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns, uint32_t action)
{
    memset(&c->decision, 0, sizeof c->decision);
    const cn_principal_t *p = c->principal;
    uint32_t held = 0;
    if (p && !(p->perms & CN_PERM_ADMIN) && action != CN_AUTHZ_NS_DELETE) {
        cn_err_t rc = cn_identity_ns_actions(b->id, ns, p->account_id, &held);
        if (rc < 0)
            return rc;
    }
    return cn_authz_namespace_decide_held(held, p ? p->account : NULL, p ? p->perms : 0, action,
                                          &c->decision);
}

static cn_err_t have_rows(cn_blobs_t *b, const char *ns, const cn_digest_t *d, size_t n,
                          bool *present);

cn_err_t cn__blobs_is_member(cn_blobs_t *b, const char *ns, const cn_digest_t *d, bool *member)
{
    *member = false;
    return have_rows(b, ns, d, 1, member);
}

/* A row to insert into ns's membership. */
typedef struct member_row {
    const char *ns;
    const cn_digest_t *d;
    uint64_t len;
} member_row_t;

static cn_err_t add_member_body(cn_meta_txn_t *txn, void *ctx)
{
    const member_row_t *m = ctx;
    cn_err_t rc = cn_meta_execf(txn, cn__sql_blobs[CN_SQL_BLOBS_MEMBER_INSERT], "sbii", m->ns,
                                m->d->b, (size_t)CN_DIGEST_LEN, (int64_t)m->len, cn_wall_ms());
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn__blobs_add_member(cn_blobs_t *b, const char *ns, const cn_digest_t *d, uint64_t len)
{
    member_row_t m = { ns, d, len };
    return cn_meta_run(b->meta, CN_META_RUN_WRITE | CN_META_RETRY, add_member_body, &m);
}

cn_err_t cn_blobs_stat(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns, const cn_digest_t *d,
                       uint64_t *len)
{
    if (!ns_ok(ns))
        return CN_E_INVALID;
    CN_TRY(cn__blobs_authorize(b, c, ns, CN_NS_READ));
    bool member = false;
    CN_TRY(cn__blobs_is_member(b, ns, d, &member));
    if (!member)
        return CN_E_NOT_FOUND;
    cn_store_stat_t st;
    CN_TRY(cn_store_stat(b->store, d, &st));
    *len = st.len;
    return CN_OK;
}

cn_err_t cn_blobs_have(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns, const cn_digest_t *d,
                       size_t n, const char *token, bool *present)
{
    if (!ns_ok(ns))
        return CN_E_INVALID;
    if (n > CN_BLOBS_HAVE_MAX)
        return CN_E_LIMIT;
    if (token && n != 1)
        return CN_E_INVALID;
    CN_TRY(cn__blobs_authorize(b, c, ns, CN_NS_READ));
    memset(present, 0, n * sizeof *present);
    if (n == 0)
        return CN_OK;
    if (token) {
        bool ok = false;
        CN_TRY(cn__tok_renew(b, ns, d, token, &ok));
        if (!ok)
            return CN_OK;
    }
    return have_rows(b, ns, d, n, present);
}

/* present[i] = ns has a row for d[i] and the store holds its bytes. */
static cn_err_t have_rows(cn_blobs_t *b, const char *ns, const cn_digest_t *d, size_t n,
                          bool *present)
{
    ns_digests_t q = { .ns = ns, .d = d, .n = n, .found = present };
    cn_err_t rc = cn_meta_run(b->meta, CN_META_RUN_READ | CN_META_RETRY, members_body, &q);
    size_t members = q.members;
    if (rc < 0 || members == 0)
        return rc < 0 ? rc : CN_OK;
    /* A row without bytes (a store scrubbed or damaged underneath) is not
     * present: the need for a re-put must show. */
    cn_digest_t *sub = malloc(members * sizeof *sub);
    bool *in_store = malloc(members * sizeof *in_store);
    if (!sub || !in_store) {
        free(sub);
        free(in_store);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (present[i])
            sub[k++] = d[i];
    rc = cn_store_have(b->store, sub, members, in_store);
    k = 0;
    for (size_t i = 0; rc >= 0 && i < n; i++)
        if (present[i])
            present[i] = in_store[k++];
    free(sub);
    free(in_store);
    return rc < 0 ? rc : CN_OK;
}

static cn_err_t delete_body(cn_meta_txn_t *txn, void *ctx)
{
    ns_digests_t *q = ctx;
    cn_err_t rc = CN_OK;
    q->members = 0;
    for (size_t i = 0; rc >= 0 && i < q->n; i++) {
        rc = cn_meta_execf(txn, cn__sql_blobs[CN_SQL_BLOBS_MEMBER_DELETE], "sb", q->ns, q->d[i].b,
                           (size_t)CN_DIGEST_LEN);
        if (rc >= 0)
            q->members += (size_t)cn_meta_changes(txn);
    }
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn_blobs_delete(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns, const cn_digest_t *d,
                         size_t n, size_t *removed)
{
    if (removed)
        *removed = 0;
    if (!ns_ok(ns))
        return CN_E_INVALID;
    if (n > CN_BLOBS_DELETE_MAX)
        return CN_E_LIMIT;
    CN_TRY(cn__blobs_authorize(b, c, ns, CN_AUTHZ_NS_DELETE));
    ns_digests_t q = { .ns = ns, .d = d, .n = n };
    CN_TRY(cn_meta_run(b->meta, CN_META_RUN_WRITE | CN_META_RETRY, delete_body, &q));
    size_t count = q.members;
    cn__tok_end(b, ns, d, n);
    if (removed)
        *removed = count;
    cn_info(CN__MOD, "delete in %s by %s: %zu of %zu digests were members", ns,
            c->principal ? c->principal->account : "?", count, n);
    return CN_OK;
}

/* One page of ns's digests after `after` (NULL: from the first): at most max
 * of them into out[0..n), more when another follows. */
typedef struct digest_page {
    const char *ns;
    const cn_digest_t *after;
    size_t max;
    cn_digest_t *out;
    size_t n;
    bool more;
} digest_page_t;

static cn_err_t list_body(cn_meta_txn_t *txn, void *ctx)
{
    digest_page_t *pg = ctx;
    static const uint8_t none[1] = { 0 };
    cn_meta_stmt_t *st = NULL;
    pg->n = 0;
    pg->more = false;
    /* Every digest is 32 bytes, so the empty blob sorts before all of them;
     * "after nothing" compares against a zero-length value. */
    cn_err_t rc = cn_meta_queryf(txn, &st, cn__sql_blobs[CN_SQL_BLOBS_MEMBERS_PAGE], "sbi", pg->ns,
                                 pg->after ? pg->after->b : none,
                                 (size_t)(pg->after ? CN_DIGEST_LEN : 0), (int64_t)pg->max + 1);
    while (rc >= 0 && (rc = cn_meta_step(st)) == CN_META_ROW) {
        size_t len = 0;
        const void *v = cn_meta_column_blob(st, 0, &len);
        if (!v || len != CN_DIGEST_LEN)
            continue;
        if (pg->n == pg->max) {
            pg->more = true;
            break;
        }
        memcpy(pg->out[pg->n++].b, v, CN_DIGEST_LEN);
    }
    cn_meta_finish(st);
    return rc < 0 ? rc : CN_OK;
}

cn_err_t cn_blobs_list(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                       const cn_digest_t *after, size_t max, cn_digest_t *out, size_t *n,
                       bool *more)
{
    *n = 0;
    *more = false;
    if (!ns_ok(ns) || max == 0 || max > CN_BLOBS_LIST_MAX)
        return CN_E_INVALID;
    CN_TRY(cn__blobs_authorize(b, c, ns, CN_NS_READ));
    digest_page_t pg = { ns, after, max, out, 0, false };
    cn_err_t rc = cn_meta_run(b->meta, CN_META_RUN_READ | CN_META_RETRY, list_body, &pg);
    if (rc >= 0) {
        *n = pg.n;
        *more = pg.more;
    }
    return rc;
}

void cn_blobs_counters(cn_blobs_t *b, cn_blobs_counters_t *out)
{
    memset(out, 0, sizeof *out);
    if (!b)
        return;
    out->puts = atomic_load(&b->n.puts);
    out->put_bytes = atomic_load(&b->n.put_bytes);
    out->fetches_store = atomic_load(&b->n.fetches_store);
    out->fetches_fanout = atomic_load(&b->n.fetches_fanout);
    out->misses = atomic_load(&b->n.misses);
    out->taps_dropped = atomic_load(&b->n.taps_dropped);
    out->broadcasts = atomic_load(&b->n.broadcasts);
    out->tokens = cn__tok_count(b);
}
