/* The console sessions' statement file: its schema step and its statements
 * (console.h names them).  See sql.h. */
#include "meta/sql/console.h"

static const cn_meta_migration_t schema[] = {
    { 1,
      "CREATE TABLE console_sessions ("
      " id TEXT PRIMARY KEY,"
      " token_id TEXT NOT NULL,"
      " account TEXT NOT NULL,"
      " source TEXT NOT NULL,"
      " created_ms BIGINT NOT NULL,"
      " last_seen_ms BIGINT NOT NULL,"
      " ends_ms BIGINT NOT NULL)",
      NULL, NULL },
};

const char *const cn__sql_console[CN_SQL_CON_COUNT] = {
    [CN_SQL_CON_SESS_CREATE] =
        "INSERT INTO console_sessions (id, token_id, account, source, created_ms,"
        " last_seen_ms, ends_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
    [CN_SQL_CON_SESS_GET] = "SELECT token_id, account, source, created_ms, last_seen_ms, ends_ms"
                            " FROM console_sessions WHERE id = ?",
    [CN_SQL_CON_SESS_TOUCH] = "UPDATE console_sessions SET last_seen_ms = ? WHERE id = ?",
    [CN_SQL_CON_SESS_DELETE] = "DELETE FROM console_sessions WHERE id = ?",
    [CN_SQL_CON_SESS_LIST] = "SELECT id, token_id, account, source, created_ms, last_seen_ms,"
                             " ends_ms FROM console_sessions ORDER BY created_ms, id",
    [CN_SQL_CON_SESS_EXPIRE] = "DELETE FROM console_sessions WHERE ends_ms <= ?1"
                               " OR last_seen_ms <= ?2",
    [CN_SQL_CON_SESS_END_ACCOUNT] = "DELETE FROM console_sessions WHERE account = ?",
    [CN_SQL_CON_SESS_END_TOKEN] = "DELETE FROM console_sessions WHERE token_id = ?",
};

const cn_sql_set_t cn__sql_console_set = {
    "console", schema, sizeof schema / sizeof schema[0], cn__sql_console, CN_SQL_CON_COUNT, NULL,
};
