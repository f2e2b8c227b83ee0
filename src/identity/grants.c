/* Blob namespace grants: which account may read or write which namespace.
 * Stored as one row per (namespace, account) with an action bitmask; no
 * row means no access (closed by default). */
#include "identity_int.h"

#include <string.h>
#include <time.h>

#include "cairn/util.h"

/* One (namespace, account) grant and its actions: those to add, to remove,
 * or (ns_actions) those found. */
typedef struct grant_row {
    const char *ns;
    int64_t account_id;
    uint32_t actions;
} grant_row_t;

/* What grant and revoke share: a valid namespace, actions that are a
 * non-empty subset of CN_NS_ALL (else CN_E_INVALID) and an account that
 * exists (*a), then body on their grant row in a write transaction.  Both
 * set a state, so landed, which a write whose COMMIT was lost with its
 * server asks (cn_meta_run_keyed), looks for that state: held by this
 * write or by another that asked the same, it answers the request. */
static cn_err_t grant_apply(cn_identity_t *id, const char *ns, const char *account,
                            uint32_t actions, cn_meta_body_fn body, cn_meta_landed_fn landed,
                            cn_account_t *a)
{
    cn_err_t e = CN_E_INVALID;
    if (cn__id_valid_namespace(ns) && actions && !(actions & ~(uint32_t)CN_NS_ALL))
        e = cn_identity_account_get(id, account, a);
    grant_row_t g = { ns, e == 0 ? a->id : 0, actions };
    if (e == 0)
        e = cn__id_write_run_keyed(id, CN_META_RUN_WRITE | CN_META_RETRY, body, landed, &g);
    return e;
}

/* The actions held by (g->ns, g->account_id) in *held (0 without a row). */
static cn_err_t held_actions(cn_meta_txn_t *t, const grant_row_t *g, const char *sql, int64_t *held)
{
    cn_meta_stmt_t *st = NULL;
    *held = 0;
    cn_err_t e = cn_meta_queryf(t, &st, sql, "si", g->ns, g->account_id);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        *held = cn_meta_column_int64(st, 0);
        e = 0;
    }
    cn_meta_finish(st);
    return e;
}

static cn_err_t grant_body(cn_meta_txn_t *t, void *ctx)
{
    const grant_row_t *g = ctx;
    return cn_meta_execf(t, cn__sql_id[CN_SQL_ID_GRANT_ADD], "siii", g->ns, g->account_id,
                         (int64_t)g->actions, (int64_t)time(NULL));
}

/* A landed function (cn_meta_run_keyed): whether g's actions are all held
 * (all) or none of them is (!all). */
static cn_err_t held_as(cn_meta_txn_t *t, const grant_row_t *g, bool all, bool *found)
{
    int64_t held = 0;
    cn_err_t e = held_actions(t, g, cn__sql_id[CN_SQL_ID_GRANT_ACTIONS], &held);
    held &= g->actions;
    *found = e == 0 && (all ? held == g->actions : held == 0);
    return e;
}

static cn_err_t granted(cn_meta_txn_t *t, void *ctx, bool *found)
{
    return held_as(t, ctx, true, found);
}

cn_err_t cn_identity_grant(cn_identity_t *id, const char *ns, const char *account, uint32_t actions)
{
    cn_account_t a;
    cn_err_t e = grant_apply(id, ns, account, actions, grant_body, granted, &a);
    if (e == 0)
        cn_info("identity", "namespace %s: granted %s%s%s to %s", ns,
                actions & CN_NS_READ ? "read" : "", actions == CN_NS_ALL ? "+" : "",
                actions & CN_NS_WRITE ? "write" : "", a.name);
    return e;
}

static cn_err_t revoke_body(cn_meta_txn_t *t, void *ctx)
{
    const grant_row_t *g = ctx;
    int64_t held = 0;
    cn_err_t e = held_actions(t, g, cn__sql_id[CN_SQL_ID_GRANT_ACTIONS], &held);
    if (e == 0 && !(held & g->actions))
        e = CN_E_NOT_FOUND;
    int64_t left = held & ~(int64_t)g->actions;
    if (e == 0 && left)
        e = cn_meta_execf(t, cn__sql_id[CN_SQL_ID_GRANT_SET_ACTIONS], "isi", left, g->ns,
                          g->account_id);
    else if (e == 0)
        e = cn_meta_execf(t, cn__sql_id[CN_SQL_ID_GRANT_DELETE], "si", g->ns, g->account_id);
    return e;
}

static cn_err_t revoked(cn_meta_txn_t *t, void *ctx, bool *found)
{
    return held_as(t, ctx, false, found);
}

cn_err_t cn_identity_revoke(cn_identity_t *id, const char *ns, const char *account,
                            uint32_t actions)
{
    cn_account_t a;
    cn_err_t e = grant_apply(id, ns, account, actions, revoke_body, revoked, &a);
    if (e == 0)
        cn_info("identity", "namespace %s: revoked actions %u from %s", ns, actions, a.name);
    return e;
}

static cn_err_t ns_actions_body(cn_meta_txn_t *t, void *ctx)
{
    grant_row_t *g = ctx;
    int64_t held = 0;
    cn_err_t e = held_actions(t, g, cn__sql_id[CN_SQL_ID_GRANT_ACTIONS_ENABLED], &held);
    g->actions = (uint32_t)held & CN_NS_ALL;
    return e;
}

cn_err_t cn_identity_ns_actions(cn_identity_t *id, const char *ns, int64_t account_id,
                                uint32_t *actions)
{
    *actions = 0;
    if (!cn__id_valid_namespace(ns))
        return 0;
    grant_row_t g = { ns, account_id, 0 };
    cn_err_t e = cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, ns_actions_body, &g);
    if (e == 0)
        *actions = g.actions;
    return e;
}

/* The grants of ns (NULL: of every namespace), read into rows (each a
 * cn_ns_grant_t) and handed to the caller's callback after the run, so that
 * a repeated run (CN_META_RETRY) hands each row once. */
typedef struct grant_walk {
    const char *ns;
    cn_buf_t rows;
} grant_walk_t;

static cn_err_t grants_body(cn_meta_txn_t *t, void *ctx)
{
    grant_walk_t *w = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&w->rows); /* an earlier attempt's rows */
    cn_err_t e = w->ns ? cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_GRANT_LIST_NS], "s", w->ns)
                       : cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_GRANT_LIST], "");
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        cn_ns_grant_t g;
        memset(&g, 0, sizeof g);
        cn__id_col_copy(st, 0, g.ns, CN_NAMESPACE_MAX);
        cn__id_col_copy(st, 1, g.account, CN_ACCOUNT_NAME_MAX);
        g.account_id = cn_meta_column_int64(st, 2);
        g.actions = (uint32_t)cn_meta_column_int64(st, 3) & CN_NS_ALL;
        g.created_at = cn_meta_column_int64(st, 4);
        e = cn_buf_append(&w->rows, &g, sizeof g);
    }
    cn_meta_finish(st);
    return e;
}

cn_err_t cn_identity_grant_list(cn_identity_t *id, const char *ns, cn_ns_grant_fn fn, void *arg)
{
    grant_walk_t w = { ns, { 0 } };
    cn_err_t e = cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, grants_body, &w);
    for (size_t off = 0; e == 0 && off < w.rows.len; off += sizeof(cn_ns_grant_t)) {
        cn_ns_grant_t g;
        memcpy(&g, w.rows.data + off, sizeof g);
        e = fn(arg, &g);
    }
    cn_buf_free(&w.rows);
    return e;
}
