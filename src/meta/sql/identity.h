/* The identity service's statements (src/identity): accounts, tokens
 * and blob namespace grants.  See sql.h.
 *
 * ACCOUNT_COLS below: id, name, email, disabled, created_at.
 * TOKEN_COLS: t.id, a.name, a.id, t.perms, t.created_at, t.revoked_at,
 * t.expires_at.  GRANT_COLS: g.namespace, a.name, a.id, g.actions,
 * g.created_at. */
#ifndef CAIRN_META_SQL_IDENTITY_H
#define CAIRN_META_SQL_IDENTITY_H

#include "meta/sql/sql.h"

enum {
    /* accounts */
    CN_SQL_ID_ACCOUNT_NEXT_ID,      /* () -> MAX(id) + 1, 1 without accounts */
    CN_SQL_ID_ACCOUNT_INSERT,       /* (id, name, email or NULL, created_at, create key or
                                       NULL), enabled */
    CN_SQL_ID_ACCOUNT_CREATED,      /* (name, create key) -> id, when that create wrote it */
    CN_SQL_ID_ACCOUNT_BY_NAME,      /* (name) -> ACCOUNT_COLS */
    CN_SQL_ID_ACCOUNT_BY_EMAIL,     /* (email) -> ACCOUNT_COLS */
    CN_SQL_ID_ACCOUNT_BY_ID,        /* (id) -> ACCOUNT_COLS */
    CN_SQL_ID_ACCOUNT_LIST,         /* () -> ACCOUNT_COLS by name */
    CN_SQL_ID_ACCOUNT_SET_DISABLED, /* (disabled, name) */
    CN_SQL_ID_ACCOUNT_COUNT,        /* () -> COUNT(*) */
    CN_SQL_ID_ACCOUNT_ID_BY_NAME,   /* (name) -> id */
    /* tokens */
    CN_SQL_ID_TOKEN_STATE,        /* (token id) -> t.account_id, a.name, t.perms, t.revoked_at,
                                     t.expires_at, a.disabled, t.secret_box */
    CN_SQL_ID_TOKEN_PUT,          /* (id, account_id, secret_box, perms, created_at,
                                     expires_at or NULL): inserts or replaces, unrevoked */
    CN_SQL_ID_TOKEN_REVOKE,       /* (revoked_at, id): kept if already revoked */
    CN_SQL_ID_TOKEN_REVOKED,      /* (id) -> 1 when revoked, else 0 */
    CN_SQL_ID_TOKEN_LIST,         /* () -> TOKEN_COLS by account name, token id */
    CN_SQL_ID_TOKEN_LIST_ACCOUNT, /* (account name) -> TOKEN_COLS by token id */
    /* fleet-wide rate limits: (token id, node key) -> the other nodes'
     * admitted requests, summed */
    CN_SQL_ID_RATE_OTHERS,
    /* namespace grants */
    CN_SQL_ID_GRANT_ADD,             /* (namespace, account_id, actions, created_at): ORs
                                        actions into an existing grant */
    CN_SQL_ID_GRANT_ACTIONS,         /* (namespace, account_id) -> actions */
    CN_SQL_ID_GRANT_ACTIONS_ENABLED, /* (namespace, account_id) -> actions, when the account
                                        is not disabled */
    CN_SQL_ID_GRANT_SET_ACTIONS,     /* (actions, namespace, account_id) */
    CN_SQL_ID_GRANT_DELETE,          /* (namespace, account_id) */
    CN_SQL_ID_GRANT_LIST,            /* () -> GRANT_COLS by namespace, account name */
    CN_SQL_ID_GRANT_LIST_NS,         /* (namespace) -> GRANT_COLS by account name */
    /* the identity key's check value */
    CN_SQL_ID_KEYCHECK_GET,    /* () -> kcv (hex), when recorded */
    CN_SQL_ID_KEYCHECK_PUT,    /* (kcv, created_at): kept if one is recorded already */
    CN_SQL_ID_TOKEN_FIRST_BOX, /* () -> id, secret_box of the first 64 tokens by id */
    /* a rotation of the identity key */
    CN_SQL_ID_TOKEN_BOX_AFTER, /* (after id, limit) -> id, secret_box by id */
    CN_SQL_ID_TOKEN_SET_BOX,   /* (secret_box, id) */
    CN_SQL_ID_KEYCHECK_SET,    /* (kcv, created_at): recorded, replacing any */
    CN_SQL_ID_COUNT
};

/* Statements written once per engine (cn_meta_batch_text picks one), with
 * the database's now in them. */
enum {
    /* (token id, node key, n): the node's row grows by n, touched at now */
    CN_SQL_ID_E_RATE_ADD,
    /* (age ms): rows not touched for that long go */
    CN_SQL_ID_E_RATE_EXPIRE,
    CN_SQL_ID_E_COUNT
};

extern const char *const cn__sql_id[CN_SQL_ID_COUNT];
extern const cn_meta_batch_sql_t cn__sql_id_engine[CN_SQL_ID_E_COUNT];
extern const cn_sql_set_t cn__sql_id_set;

#endif
