/* The web console's sessions (src/console/session.c): one row per signed-in
 * browser, shared by every node on the metadata (a fleet), keyed by the
 * SHA-256 of the session cookie (hex) so that the cookie itself is never
 * stored.  See sql.h, docs/console.md "Sessions".
 *
 * SESS_COLS: token_id, account, source, created_ms, last_seen_ms, ends_ms. */
#ifndef CAIRN_META_SQL_CONSOLE_H
#define CAIRN_META_SQL_CONSOLE_H

#include "meta/sql/sql.h"

enum {
    CN_SQL_CON_SESS_CREATE,      /* (id, token_id, account, source, now_ms, ends_ms) */
    CN_SQL_CON_SESS_GET,         /* (id) -> SESS_COLS */
    CN_SQL_CON_SESS_TOUCH,       /* (now_ms, id) */
    CN_SQL_CON_SESS_DELETE,      /* (id) */
    CN_SQL_CON_SESS_LIST,        /* () -> id, SESS_COLS by created_ms */
    CN_SQL_CON_SESS_EXPIRE,      /* (now_ms, idle_before_ms): ended rows go */
    CN_SQL_CON_SESS_END_ACCOUNT, /* (account): its sessions go (identity: disable) */
    CN_SQL_CON_SESS_END_TOKEN,   /* (token_id): its sessions go (identity: revoke) */
    CN_SQL_CON_COUNT
};

extern const char *const cn__sql_console[CN_SQL_CON_COUNT];
extern const cn_sql_set_t cn__sql_console_set;

#endif
