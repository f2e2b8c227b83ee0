/* The auth service's statement file: its schema steps and its statements
 * (auth.h names them).  See sql.h; the tables are described in
 * docs/protocol/sau2.md section 8.  No key material is ever stored here:
 * CA and TLS private keys are files in the data directory. */
#include "meta/sql/auth.h"

static const cn_meta_migration_t schema[] = {
    { 1,
      "CREATE TABLE cn_auth_state ("
      " one BIGINT PRIMARY KEY CHECK (one = 1),"
      " incarnation BLOB NOT NULL,"
      " revision BIGINT NOT NULL,"
      " created_ms BIGINT NOT NULL,"
      " domain TEXT NOT NULL);"
      "CREATE TABLE cn_auth_cas ("
      " name TEXT PRIMARY KEY,"
      " certificate TEXT NOT NULL);"
      "CREATE TABLE cn_auth_users ("
      " id TEXT PRIMARY KEY,"
      " name TEXT NOT NULL UNIQUE,"
      " kind TEXT NOT NULL,"
      " administrator BIGINT NOT NULL,"
      " disabled BIGINT NOT NULL DEFAULT 0,"
      " pw_hash TEXT,"
      " generation BIGINT NOT NULL DEFAULT 1);"
      "CREATE TABLE cn_auth_servers ("
      " id TEXT PRIMARY KEY,"
      " name TEXT NOT NULL UNIQUE,"
      " namespace TEXT NOT NULL,"
      " disabled BIGINT NOT NULL DEFAULT 0);"
      "CREATE TABLE cn_auth_credentials ("
      " id TEXT PRIMARY KEY,"
      " kind TEXT NOT NULL,"
      " account TEXT NOT NULL,"
      " key_id TEXT NOT NULL,"
      " public_key BLOB NOT NULL,"
      " certificate TEXT NOT NULL,"
      " created_ms BIGINT NOT NULL,"
      " expires_ms BIGINT NOT NULL,"
      " parent TEXT,"
      " revoked_ms BIGINT,"
      " label TEXT NOT NULL);"
      "CREATE INDEX cn_auth_credentials_account ON cn_auth_credentials (account, id);"
      "CREATE INDEX cn_auth_credentials_parent ON cn_auth_credentials (parent);"
      "CREATE TABLE cn_auth_keys_seen ("
      " key_id TEXT PRIMARY KEY,"
      " credential TEXT NOT NULL);"
      "CREATE TABLE cn_auth_grants ("
      " user_id TEXT NOT NULL,"
      " namespace TEXT NOT NULL,"
      " role TEXT NOT NULL,"
      " PRIMARY KEY (namespace, user_id));"
      "CREATE TABLE cn_auth_ns_admins ("
      " user_id TEXT NOT NULL, namespace TEXT NOT NULL, PRIMARY KEY (namespace, user_id));"
      "CREATE TABLE cn_auth_ns_readers ("
      " user_id TEXT NOT NULL, namespace TEXT NOT NULL, PRIMARY KEY (namespace, user_id));"
      "CREATE TABLE cn_auth_delegates ("
      " user_id TEXT NOT NULL, namespace TEXT NOT NULL, PRIMARY KEY (namespace, user_id));"
      "CREATE TABLE cn_auth_visibility ("
      " namespace TEXT NOT NULL,"
      " repository TEXT NOT NULL,"
      " visibility TEXT NOT NULL,"
      " PRIMARY KEY (namespace, repository));"
      "CREATE TABLE cn_auth_operations ("
      " id BLOB PRIMARY KEY,"
      " actor TEXT NOT NULL,"
      " intent BLOB NOT NULL,"
      " code BIGINT NOT NULL,"
      " rows BLOB NOT NULL,"
      " revision BIGINT NOT NULL);"
      "CREATE TABLE cn_auth_audit ("
      " seq INTEGER PRIMARY KEY,"
      " at_ms BIGINT NOT NULL,"
      " actor TEXT NOT NULL,"
      " verb TEXT NOT NULL,"
      " arguments TEXT NOT NULL,"
      " code BIGINT NOT NULL,"
      " revision BIGINT NOT NULL);"
      "CREATE TABLE cn_auth_highwater ("
      " incarnation BLOB PRIMARY KEY,"
      " revision BIGINT NOT NULL)",
      NULL, NULL },
};

#define USER_COLS                                                              \
    "SELECT id, name, kind, administrator, disabled, pw_hash, generation FROM" \
    " cn_auth_users "
#define CRED_COLS                                                                        \
    "SELECT id, kind, account, key_id, public_key, certificate, created_ms, expires_ms," \
    " parent, revoked_ms, label FROM cn_auth_credentials "

#define PAIR_LIST(table, extra)                                                 \
    "SELECT t.namespace, u.name" extra " FROM " table " t JOIN cn_auth_users u" \
    " ON u.id = t.user_id WHERE t.namespace || '/' || u.name > ?"
#define PAIR_ORDER " ORDER BY t.namespace, u.name LIMIT 256"
#define PAIR_STMTS(table)                                            \
    "INSERT INTO " table " (user_id, namespace) VALUES (?, ?)"       \
    " ON CONFLICT (namespace, user_id) DO NOTHING",                  \
        "DELETE FROM " table " WHERE namespace = ? AND user_id = ?", \
        PAIR_LIST(table, "") PAIR_ORDER, PAIR_LIST(table, "") " AND t.namespace = ?" PAIR_ORDER

const char *const cn__sql_au[CN_SQL_AU_COUNT] = {
    [CN_SQL_AU_STATE_GET] = "SELECT incarnation, revision, domain FROM cn_auth_state",
    [CN_SQL_AU_STATE_PUT] =
        "INSERT INTO cn_auth_state (one, incarnation, revision, created_ms, domain)"
        " VALUES (1, ?, ?, ?, ?) ON CONFLICT (one) DO UPDATE SET"
        " incarnation = excluded.incarnation, revision = excluded.revision,"
        " created_ms = excluded.created_ms, domain = excluded.domain",
    [CN_SQL_AU_REVISION_BUMP] = "UPDATE cn_auth_state SET revision = revision + 1",
    [CN_SQL_AU_CA_PUT] = "INSERT INTO cn_auth_cas (name, certificate) VALUES (?, ?)"
                         " ON CONFLICT (name) DO UPDATE SET certificate = excluded.certificate",
    [CN_SQL_AU_CA_GET] = "SELECT certificate FROM cn_auth_cas WHERE name = ?",
    [CN_SQL_AU_CA_LIST] = "SELECT name, certificate FROM cn_auth_cas ORDER BY name",

    [CN_SQL_AU_USER_INSERT] =
        "INSERT INTO cn_auth_users (id, name, kind, administrator, disabled, pw_hash, generation)"
        " VALUES (?, ?, ?, ?, 0, ?, ?)",
    [CN_SQL_AU_USER_TAKEN] = "SELECT 1 FROM cn_auth_users WHERE name = ? OR id = ?",
    [CN_SQL_AU_USER_BY_NAME] = USER_COLS "WHERE name = ?",
    [CN_SQL_AU_USER_BY_ID] = USER_COLS "WHERE id = ?",
    [CN_SQL_AU_USER_LIST] = USER_COLS "WHERE name > ? ORDER BY name LIMIT 256",
    [CN_SQL_AU_USER_SET_DISABLED] = "UPDATE cn_auth_users SET disabled = ? WHERE name = ?",
    [CN_SQL_AU_USER_SET_PASSWORD] =
        "UPDATE cn_auth_users SET pw_hash = ?, generation = ? WHERE name = ?",

    [CN_SQL_AU_SERVER_INSERT] = "INSERT INTO cn_auth_servers (id, name, namespace, disabled)"
                                " VALUES (?, ?, ?, 0)",
    [CN_SQL_AU_SERVER_LIST] = "SELECT name, namespace, id, disabled FROM cn_auth_servers"
                              " WHERE name > ? ORDER BY name LIMIT 256",
    [CN_SQL_AU_SERVER_SET_DISABLED] = "UPDATE cn_auth_servers SET disabled = ? WHERE name = ?",
    [CN_SQL_AU_SERVER_TAKEN] = "SELECT 1 FROM cn_auth_servers WHERE name = ? OR id = ?",
    [CN_SQL_AU_SERVER_BY_NAME] = "SELECT id, namespace, disabled FROM cn_auth_servers"
                                 " WHERE name = ?",

    [CN_SQL_AU_KEY_SEEN] = "SELECT 1 FROM cn_auth_keys_seen WHERE key_id = ? OR credential = ?",
    [CN_SQL_AU_KEY_REGISTER] = "INSERT INTO cn_auth_keys_seen (key_id, credential) VALUES (?, ?)",
    [CN_SQL_AU_CRED_INSERT] =
        "INSERT INTO cn_auth_credentials (id, kind, account, key_id, public_key, certificate,"
        " created_ms, expires_ms, parent, revoked_ms, label)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
    [CN_SQL_AU_CRED_GET] = CRED_COLS "WHERE id = ?",
    [CN_SQL_AU_CRED_REVOKE] = "UPDATE cn_auth_credentials SET revoked_ms = COALESCE(revoked_ms, ?)"
                              " WHERE id = ? OR parent = ?",
    [CN_SQL_AU_CRED_LIST] = CRED_COLS "WHERE id > ? ORDER BY id LIMIT 256",
    [CN_SQL_AU_CRED_LIST_USER] = CRED_COLS "WHERE id > ? AND account = ? ORDER BY id LIMIT 256",

    [CN_SQL_AU_GRANT_SET] = "INSERT INTO cn_auth_grants (user_id, namespace, role) VALUES (?, ?, ?)"
                            " ON CONFLICT (namespace, user_id) DO UPDATE SET role = excluded.role",
    [CN_SQL_AU_GRANT_REVOKE] = "DELETE FROM cn_auth_grants WHERE namespace = ? AND user_id = ?",
    [CN_SQL_AU_GRANT_LIST] = PAIR_LIST("cn_auth_grants", ", t.role") PAIR_ORDER,
    [CN_SQL_AU_GRANT_LIST_NS] =
        PAIR_LIST("cn_auth_grants", ", t.role") " AND t.namespace = ?" PAIR_ORDER,
    [CN_SQL_AU_NSADMIN_SET] = PAIR_STMTS("cn_auth_ns_admins"),
    [CN_SQL_AU_NSREADER_SET] = PAIR_STMTS("cn_auth_ns_readers"),
    [CN_SQL_AU_DELEGATE_SET] = PAIR_STMTS("cn_auth_delegates"),
    [CN_SQL_AU_VISIBILITY_GET] = "SELECT visibility FROM cn_auth_visibility"
                                 " WHERE namespace = ? AND repository = ?",
    [CN_SQL_AU_VISIBILITY_SET] =
        "INSERT INTO cn_auth_visibility (namespace, repository, visibility) VALUES (?, ?, ?)"
        " ON CONFLICT (namespace, repository) DO UPDATE SET visibility = excluded.visibility",

    [CN_SQL_AU_OP_GET] = "SELECT actor, intent, code, rows FROM cn_auth_operations WHERE id = ?",
    [CN_SQL_AU_OP_PUT] = "INSERT INTO cn_auth_operations (id, actor, intent, code, rows, revision)"
                         " VALUES (?, ?, ?, ?, ?, ?)",

    [CN_SQL_AU_AUDIT_ADD] = "INSERT INTO cn_auth_audit (at_ms, actor, verb, arguments, code,"
                            " revision) VALUES (?, ?, ?, ?, ?, ?)",
    [CN_SQL_AU_AUDIT_LIST] = "SELECT seq, at_ms, actor, verb, arguments, code, revision"
                             " FROM cn_auth_audit WHERE seq > ? ORDER BY seq LIMIT 256",

    [CN_SQL_AU_HIGHWATER_GET] = "SELECT revision FROM cn_auth_highwater WHERE incarnation = ?",
    [CN_SQL_AU_HIGHWATER_PUT] =
        "INSERT INTO cn_auth_highwater (incarnation, revision) VALUES (?, ?)"
        " ON CONFLICT (incarnation) DO UPDATE SET"
        " revision = CASE WHEN excluded.revision > cn_auth_highwater.revision"
        " THEN excluded.revision ELSE cn_auth_highwater.revision END",

    [CN_SQL_AU_SERVER_BY_ID] = "SELECT name, namespace, disabled FROM cn_auth_servers WHERE id = ?",
    [CN_SQL_AU_GRANT_GET] = "SELECT role FROM cn_auth_grants WHERE namespace = ? AND user_id = ?",
    [CN_SQL_AU_NSADMIN_HAS] = "SELECT 1 FROM cn_auth_ns_admins WHERE namespace = ? AND user_id = ?",
    [CN_SQL_AU_DELEGATE_HAS] =
        "SELECT 1 FROM cn_auth_delegates WHERE namespace = ? AND user_id = ?",
    [CN_SQL_AU_NSREADER_HAS] =
        "SELECT 1 FROM cn_auth_ns_readers WHERE namespace = ? AND user_id = ?",
    [CN_SQL_AU_STATE_RENEW] = "UPDATE cn_auth_state SET incarnation = ?",
};

#define TABLE(name, cols, marks, types)                                                     \
    {                                                                                       \
        "SELECT " cols " FROM " name, "INSERT INTO " name " (" cols ") VALUES (" marks ")", \
            "DELETE FROM " name, types                                                      \
    }
const cn__sql_au_table_t cn__sql_au_tables[CN_SQL_AU_NTABLES] = {
    TABLE("cn_auth_state", "one, incarnation, revision, created_ms, domain", "?, ?, ?, ?, ?",
          "ibiit"),
    TABLE("cn_auth_cas", "name, certificate", "?, ?", "tt"),
    TABLE("cn_auth_users", "id, name, kind, administrator, disabled, pw_hash, generation",
          "?, ?, ?, ?, ?, ?, ?", "tttiiti"),
    TABLE("cn_auth_servers", "id, name, namespace, disabled", "?, ?, ?, ?", "ttti"),
    TABLE("cn_auth_credentials",
          "id, kind, account, key_id, public_key, certificate, created_ms, expires_ms, parent,"
          " revoked_ms, label",
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?", "ttttbtiitit"),
    TABLE("cn_auth_keys_seen", "key_id, credential", "?, ?", "tt"),
    TABLE("cn_auth_grants", "user_id, namespace, role", "?, ?, ?", "ttt"),
    TABLE("cn_auth_ns_admins", "user_id, namespace", "?, ?", "tt"),
    TABLE("cn_auth_ns_readers", "user_id, namespace", "?, ?", "tt"),
    TABLE("cn_auth_delegates", "user_id, namespace", "?, ?", "tt"),
    TABLE("cn_auth_visibility", "namespace, repository, visibility", "?, ?, ?", "ttt"),
    TABLE("cn_auth_operations", "id, actor, intent, code, rows, revision", "?, ?, ?, ?, ?, ?",
          "btbibi"),
    TABLE("cn_auth_audit", "seq, at_ms, actor, verb, arguments, code, revision",
          "?, ?, ?, ?, ?, ?, ?", "iitttii"),
};

const cn_sql_set_t cn__sql_au_set = {
    "auth", schema, sizeof schema / sizeof schema[0], cn__sql_au, CN_SQL_AU_COUNT, NULL,
};
