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
    [CN_SQL_CON_SESS_DELETE] = "DELETE FROM console_sessions WHERE id = ?",
    [CN_SQL_CON_SESS_END_ACCOUNT] = "DELETE FROM console_sessions WHERE account = ?",
    [CN_SQL_CON_SESS_END_TOKEN] = "DELETE FROM console_sessions WHERE token_id = ?",
};

#define SESS_CREATE(NOW)                                                                     \
    "INSERT INTO console_sessions (id, token_id, account, source, created_ms, last_seen_ms," \
    " ends_ms) VALUES (?1, ?2, ?3, ?4, " NOW ", " NOW ", " NOW " + ?5)"
#define SESS_GET(NOW)                                                                   \
    "SELECT token_id, account, source, created_ms, last_seen_ms, ends_ms, " NOW " FROM" \
    " console_sessions WHERE id = ?"
#define SESS_TOUCH(NOW) "UPDATE console_sessions SET last_seen_ms = " NOW " WHERE id = ?"
#define SESS_LIST(NOW)                                                              \
    "SELECT id, token_id, account, source, created_ms, last_seen_ms, ends_ms, " NOW \
    " FROM console_sessions ORDER BY created_ms, id"
#define SESS_EXPIRE(NOW) \
    "DELETE FROM console_sessions WHERE ends_ms <= " NOW " OR last_seen_ms <= " NOW " - ?1"

const cn_meta_batch_sql_t cn__sql_console_engine[CN_SQL_CON_E_COUNT] = {
    [CN_SQL_CON_E_SESS_CREATE] = {
        .sqlite = SESS_CREATE(CN_SQL_NOW_MS_SQLITE),
        .pg = SESS_CREATE(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_CON_E_SESS_GET] = {
        .sqlite = SESS_GET(CN_SQL_NOW_MS_SQLITE),
        .pg = SESS_GET(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_CON_E_SESS_TOUCH] = {
        .sqlite = SESS_TOUCH(CN_SQL_NOW_MS_SQLITE),
        .pg = SESS_TOUCH(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_CON_E_SESS_LIST] = {
        .sqlite = SESS_LIST(CN_SQL_NOW_MS_SQLITE),
        .pg = SESS_LIST(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_CON_E_SESS_EXPIRE] = {
        .sqlite = SESS_EXPIRE(CN_SQL_NOW_MS_SQLITE),
        .pg = SESS_EXPIRE(CN_SQL_NOW_MS_PG),
    },
};

const cn_sql_set_t cn__sql_console_set = {
    "console", schema, sizeof schema / sizeof schema[0], cn__sql_console, CN_SQL_CON_COUNT, NULL,
};
