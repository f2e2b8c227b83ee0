/* The identity service's statement file: its schema steps and its
 * statements (identity.h names them).  See sql.h. */
#include "meta/sql/identity.h"

static const cn_meta_migration_t schema[] = {
    { 1,
      "CREATE TABLE cn_accounts ("
      " id BIGINT PRIMARY KEY,"
      " name TEXT NOT NULL UNIQUE,"
      " email TEXT UNIQUE,"
      " disabled BIGINT NOT NULL DEFAULT 0,"
      " created_at BIGINT NOT NULL);"
      "CREATE TABLE cn_tokens ("
      " id TEXT PRIMARY KEY,"
      " account_id BIGINT NOT NULL REFERENCES cn_accounts (id),"
      " secret_box TEXT NOT NULL,"
      " perms BIGINT NOT NULL,"
      " created_at BIGINT NOT NULL,"
      " revoked_at BIGINT,"
      " expires_at BIGINT);"
      "CREATE INDEX cn_tokens_account ON cn_tokens (account_id);"
      "CREATE TABLE cn_ns_grants ("
      " namespace TEXT NOT NULL,"
      " account_id BIGINT NOT NULL REFERENCES cn_accounts (id),"
      " actions BIGINT NOT NULL,"
      " created_at BIGINT NOT NULL,"
      " PRIMARY KEY (namespace, account_id));"
      "CREATE INDEX cn_ns_grants_account ON cn_ns_grants (account_id)",
      NULL, NULL },
    /* The key check value of the identity key that seals token secrets
     * (one row, id 1): a node holding another key refuses to start
     * (docs/fleet.md, "One identity key"). */
    { 2,
      "CREATE TABLE cn_identity_key ("
      " id BIGINT PRIMARY KEY,"
      " kcv TEXT NOT NULL,"
      " created_at BIGINT NOT NULL)",
      NULL, NULL },
    /* The random key of the create that wrote the row (NULL: written by a
     * bootstrap or before this step), which a create whose COMMIT was lost
     * with its server looks for (cn_meta_run_keyed). */
    { 3, "ALTER TABLE cn_accounts ADD COLUMN create_key TEXT", NULL, NULL },
    /* Requests each node admitted per token, for limits that hold across a
     * fleet (src/identity/ratesync.c): one row per token and node process,
     * only ever added to; rows idle for ten minutes are deleted. */
    { 4,
      "CREATE TABLE cn_rate_use ("
      " token_id TEXT NOT NULL,"
      " node_key TEXT NOT NULL,"
      " used BIGINT NOT NULL,"
      " updated_ms BIGINT NOT NULL,"
      " PRIMARY KEY (token_id, node_key))",
      NULL, NULL },
};

#define ACCOUNT_COLS "SELECT id, name, email, disabled, created_at FROM cn_accounts "
#define TOKEN_COLS                                                    \
    "SELECT t.id, a.name, a.id, t.perms, t.created_at, t.revoked_at," \
    " t.expires_at FROM cn_tokens t JOIN cn_accounts a ON a.id = t.account_id "
#define GRANT_COLS                                              \
    "SELECT g.namespace, a.name, a.id, g.actions, g.created_at" \
    " FROM cn_ns_grants g JOIN cn_accounts a ON a.id = g.account_id "

const char *const cn__sql_id[CN_SQL_ID_COUNT] = {
    [CN_SQL_ID_ACCOUNT_NEXT_ID] = "SELECT COALESCE(MAX(id), 0) + 1 FROM cn_accounts",
    [CN_SQL_ID_ACCOUNT_INSERT] = "INSERT INTO cn_accounts (id, name, email, disabled, created_at,"
                                 " create_key) VALUES (?, ?, ?, 0, ?, ?)",
    [CN_SQL_ID_ACCOUNT_CREATED] = "SELECT id FROM cn_accounts WHERE name = ? AND create_key = ?",
    [CN_SQL_ID_ACCOUNT_BY_NAME] = ACCOUNT_COLS "WHERE name = ?",
    [CN_SQL_ID_ACCOUNT_BY_EMAIL] = ACCOUNT_COLS "WHERE email = ?",
    [CN_SQL_ID_ACCOUNT_BY_ID] = ACCOUNT_COLS "WHERE id = ?",
    [CN_SQL_ID_ACCOUNT_LIST] = ACCOUNT_COLS "ORDER BY name",
    [CN_SQL_ID_ACCOUNT_SET_DISABLED] = "UPDATE cn_accounts SET disabled = ? WHERE name = ?",
    [CN_SQL_ID_ACCOUNT_COUNT] = "SELECT COUNT(*) FROM cn_accounts",
    [CN_SQL_ID_ACCOUNT_ID_BY_NAME] = "SELECT id FROM cn_accounts WHERE name = ?",

    [CN_SQL_ID_TOKEN_STATE] =
        "SELECT t.account_id, a.name, t.perms, t.revoked_at, t.expires_at, a.disabled,"
        " t.secret_box FROM cn_tokens t JOIN cn_accounts a ON a.id = t.account_id"
        " WHERE t.id = ?",
    [CN_SQL_ID_TOKEN_PUT] =
        "INSERT INTO cn_tokens (id, account_id, secret_box, perms, created_at, revoked_at,"
        " expires_at) VALUES (?, ?, ?, ?, ?, NULL, ?)"
        " ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id,"
        " secret_box = excluded.secret_box, perms = excluded.perms, revoked_at = NULL,"
        " expires_at = excluded.expires_at",
    [CN_SQL_ID_TOKEN_REVOKE] = "UPDATE cn_tokens SET revoked_at = COALESCE(revoked_at, ?)"
                               " WHERE id = ?",
    [CN_SQL_ID_TOKEN_REVOKED] = "SELECT CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END"
                                " FROM cn_tokens WHERE id = ?",
    [CN_SQL_ID_TOKEN_LIST] = TOKEN_COLS "ORDER BY a.name, t.id",
    [CN_SQL_ID_TOKEN_LIST_ACCOUNT] = TOKEN_COLS "WHERE a.name = ? ORDER BY a.name, t.id",

    [CN_SQL_ID_RATE_OTHERS] = "SELECT COALESCE(SUM(used), 0) FROM cn_rate_use"
                              " WHERE token_id = ? AND node_key <> ?",

    [CN_SQL_ID_GRANT_ADD] = "INSERT INTO cn_ns_grants (namespace, account_id, actions, created_at)"
                            " VALUES (?, ?, ?, ?) ON CONFLICT (namespace, account_id)"
                            " DO UPDATE SET actions = cn_ns_grants.actions | excluded.actions",
    [CN_SQL_ID_GRANT_ACTIONS] = "SELECT actions FROM cn_ns_grants"
                                " WHERE namespace = ? AND account_id = ?",
    [CN_SQL_ID_GRANT_ACTIONS_ENABLED] = "SELECT g.actions FROM cn_ns_grants g"
                                        " JOIN cn_accounts a ON a.id = g.account_id"
                                        " WHERE g.namespace = ? AND g.account_id = ?"
                                        " AND a.disabled = 0",
    [CN_SQL_ID_GRANT_SET_ACTIONS] = "UPDATE cn_ns_grants SET actions = ?"
                                    " WHERE namespace = ? AND account_id = ?",
    [CN_SQL_ID_GRANT_DELETE] = "DELETE FROM cn_ns_grants WHERE namespace = ? AND account_id = ?",
    [CN_SQL_ID_GRANT_LIST] = GRANT_COLS "ORDER BY g.namespace, a.name",
    [CN_SQL_ID_GRANT_LIST_NS] = GRANT_COLS "WHERE g.namespace = ?"
                                           " ORDER BY g.namespace, a.name",

    [CN_SQL_ID_KEYCHECK_GET] = "SELECT kcv FROM cn_identity_key WHERE id = 1",
    [CN_SQL_ID_KEYCHECK_PUT] = "INSERT INTO cn_identity_key (id, kcv, created_at) VALUES (1, ?, ?)"
                               " ON CONFLICT (id) DO NOTHING",
    [CN_SQL_ID_TOKEN_FIRST_BOX] = "SELECT id, secret_box FROM cn_tokens ORDER BY id LIMIT 64",
    [CN_SQL_ID_TOKEN_BOX_AFTER] = "SELECT id, secret_box FROM cn_tokens WHERE id > ?"
                                  " ORDER BY id LIMIT ?",
    [CN_SQL_ID_TOKEN_SET_BOX] = "UPDATE cn_tokens SET secret_box = ? WHERE id = ?",
    [CN_SQL_ID_KEYCHECK_SET] = "INSERT INTO cn_identity_key (id, kcv, created_at) VALUES (1, ?, ?)"
                               " ON CONFLICT (id) DO UPDATE SET kcv = excluded.kcv,"
                               " created_at = excluded.created_at",
};

#define RATE_ADD(NOW)                                                                           \
    "INSERT INTO cn_rate_use (token_id, node_key, used, updated_ms) VALUES (?1, ?2, ?3, " NOW   \
    ") ON CONFLICT (token_id, node_key) DO UPDATE SET used = cn_rate_use.used + excluded.used," \
    " updated_ms = excluded.updated_ms"
#define RATE_EXPIRE(NOW) "DELETE FROM cn_rate_use WHERE updated_ms < " NOW " - ?"

const cn_meta_batch_sql_t cn__sql_id_engine[CN_SQL_ID_E_COUNT] = {
    [CN_SQL_ID_E_RATE_ADD] = {
        .sqlite = RATE_ADD(CN_SQL_NOW_MS_SQLITE),
        .pg = RATE_ADD(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_ID_E_RATE_EXPIRE] = {
        .sqlite = RATE_EXPIRE(CN_SQL_NOW_MS_SQLITE),
        .pg = RATE_EXPIRE(CN_SQL_NOW_MS_PG),
    },
};

const cn_sql_set_t cn__sql_id_set = {
    "identity", schema, sizeof schema / sizeof schema[0], cn__sql_id, CN_SQL_ID_COUNT, NULL,
};
