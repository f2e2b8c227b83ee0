/* Blob namespace grants: which account may read or write which namespace.
 * Stored as one row per (namespace, account) with an action bitmask; no
 * row means no access (closed by default). */
#include "identity_int.h"

#include <string.h>
#include <time.h>

#include "cairn/util.h"

/* What grant and revoke check first: a valid namespace, actions that are a
 * non-empty subset of CN_NS_ALL (else CN_E_INVALID), an account that exists
 * (*a); then their write transaction begins (*t). */
static cn_err_t grant_begin(cn_identity_t *id, const char *ns, const char *account,
                            uint32_t actions, cn_account_t *a, cn_meta_txn_t **t)
{
    if (!cn__id_valid_namespace(ns) || !actions || (actions & ~(uint32_t)CN_NS_ALL))
        return CN_E_INVALID;
    CN_TRY(cn_identity_account_get(id, account, a));
    return cn_meta_begin(id->meta, CN_META_WRITE, t);
}

cn_err_t cn_identity_grant(cn_identity_t *id, const char *ns, const char *account,
                           uint32_t actions)
{
    cn_account_t a;
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st;
    CN_TRY(grant_begin(id, ns, account, actions, &a, &t));
    cn_err_t e = cn_meta_prepare(t,
        "INSERT INTO cn_ns_grants (namespace, account_id, actions, created_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (namespace, account_id)"
        " DO UPDATE SET actions = cn_ns_grants.actions | excluded.actions", &st);
    if (e == 0) {
        cn_meta_bind_str(st, 1, ns);
        cn_meta_bind_int64(st, 2, a.id);
        cn_meta_bind_int64(st, 3, actions);
        cn_meta_bind_int64(st, 4, (int64_t)time(NULL));
        e = cn_meta_step(st);
        cn_meta_finish(st);
    }
    e = cn__id_end(t, e);
    if (e == 0)
        cn_info("identity", "namespace %s: granted %s%s%s to %s", ns,
                actions & CN_NS_READ ? "read" : "", actions == CN_NS_ALL ? "+" : "",
                actions & CN_NS_WRITE ? "write" : "", a.name);
    return e;
}

cn_err_t cn_identity_revoke(cn_identity_t *id, const char *ns, const char *account,
                            uint32_t actions)
{
    cn_account_t a;
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st;
    CN_TRY(grant_begin(id, ns, account, actions, &a, &t));
    int64_t held = 0;
    cn_err_t e = cn_meta_prepare(t, "SELECT actions FROM cn_ns_grants"
                                    " WHERE namespace = ? AND account_id = ?", &st);
    if (e == 0) {
        cn_meta_bind_str(st, 1, ns);
        cn_meta_bind_int64(st, 2, a.id);
        e = cn_meta_step(st);
        if (e == CN_META_ROW) {
            held = cn_meta_column_int64(st, 0);
            e = 0;
        }
        cn_meta_finish(st);
    }
    if (e == 0 && !(held & actions))
        e = CN_E_NOT_FOUND;
    if (e == 0) {
        int64_t left = held & ~(int64_t)actions;
        e = cn_meta_prepare(t, left ? "UPDATE cn_ns_grants SET actions = ?"
                                      " WHERE namespace = ? AND account_id = ?"
                                    : "DELETE FROM cn_ns_grants"
                                      " WHERE namespace = ? AND account_id = ?", &st);
        if (e == 0) {
            int i = 1;
            if (left)
                cn_meta_bind_int64(st, i++, left);
            cn_meta_bind_str(st, i++, ns);
            cn_meta_bind_int64(st, i, a.id);
            e = cn_meta_step(st);
            cn_meta_finish(st);
        }
    }
    e = cn__id_end(t, e);
    if (e == 0)
        cn_info("identity", "namespace %s: revoked actions %u from %s", ns, actions, a.name);
    return e;
}

cn_err_t cn_identity_ns_actions(cn_identity_t *id, const char *ns, int64_t account_id,
                                uint32_t *actions)
{
    *actions = 0;
    if (!cn__id_valid_namespace(ns))
        return 0;
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_begin(id->meta, CN_META_READ, &t));
    cn_err_t e = cn_meta_prepare(t, "SELECT g.actions FROM cn_ns_grants g"
                                    " JOIN cn_accounts a ON a.id = g.account_id"
                                    " WHERE g.namespace = ? AND g.account_id = ?"
                                    " AND a.disabled = 0", &st);
    if (e == 0) {
        cn_meta_bind_str(st, 1, ns);
        cn_meta_bind_int64(st, 2, account_id);
        e = cn_meta_step(st);
        if (e == CN_META_ROW) {
            *actions = (uint32_t)cn_meta_column_int64(st, 0) & CN_NS_ALL;
            e = 0;
        }
    }
    cn_meta_finish(st);
    cn_meta_rollback(t);
    return e;
}

cn_err_t cn_identity_grant_list(cn_identity_t *id, const char *ns, cn_ns_grant_fn fn,
                                void *arg)
{
#define GRANT_COLS "SELECT g.namespace, a.name, a.id, g.actions, g.created_at" \
    " FROM cn_ns_grants g JOIN cn_accounts a ON a.id = g.account_id "
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_begin(id->meta, CN_META_READ, &t));
    cn_err_t e = cn_meta_prepare(t, ns ? GRANT_COLS "WHERE g.namespace = ?"
                                         " ORDER BY g.namespace, a.name"
                                       : GRANT_COLS "ORDER BY g.namespace, a.name", &st);
    if (e == 0 && ns)
        e = cn_meta_bind_str(st, 1, ns);
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        cn_ns_grant_t g;
        memset(&g, 0, sizeof g);
        cn__id_col_copy(st, 0, g.ns, CN_NAMESPACE_MAX);
        cn__id_col_copy(st, 1, g.account, CN_ACCOUNT_NAME_MAX);
        g.account_id = cn_meta_column_int64(st, 2);
        g.actions = (uint32_t)cn_meta_column_int64(st, 3) & CN_NS_ALL;
        g.created_at = cn_meta_column_int64(st, 4);
        e = fn(arg, &g);
    }
    cn_meta_finish(st);
    cn_meta_rollback(t);
    return e;
}
