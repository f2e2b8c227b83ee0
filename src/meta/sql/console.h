/* The web console's sessions (src/console/session.c): one row per signed-in
 * browser, shared by every node on the metadata (a fleet), keyed by the
 * SHA-256 of the session cookie (hex) so that the cookie itself is never
 * stored.  See sql.h, docs/console.md "Sessions".
 *
 * SESS_COLS: token_id, account, source, created_ms, last_seen_ms, ends_ms.
 * Every time in a row is the database's clock (CN_SQL_NOW_MS_*), and the
 * statements that compare them read it too, so that nodes whose clocks
 * disagree agree on when a session ends (docs/fleet.md, "Clocks"). */
#ifndef CAIRN_META_SQL_CONSOLE_H
#define CAIRN_META_SQL_CONSOLE_H

#include "meta/sql/sql.h"

enum {
    CN_SQL_CON_SESS_DELETE,      /* (id) */
    CN_SQL_CON_SESS_END_ACCOUNT, /* (account): its sessions go (identity: disable) */
    CN_SQL_CON_SESS_END_TOKEN,   /* (token_id): its sessions go (identity: revoke) */
    CN_SQL_CON_COUNT
};

/* Statements written once per engine (cn_meta_batch_text picks one), each
 * with the database's now in it. */
enum {
    /* (id, token_id, account, source, max_ms): created and seen at now,
     * ending max_ms after it */
    CN_SQL_CON_E_SESS_CREATE,
    CN_SQL_CON_E_SESS_GET,    /* (id) -> SESS_COLS, now */
    CN_SQL_CON_E_SESS_TOUCH,  /* (id): seen at now */
    CN_SQL_CON_E_SESS_LIST,   /* () -> id, SESS_COLS, now by created_ms */
    CN_SQL_CON_E_SESS_EXPIRE, /* (idle_ms): rows ended at now go */
    CN_SQL_CON_E_COUNT
};

extern const char *const cn__sql_console[CN_SQL_CON_COUNT];
extern const cn_meta_batch_sql_t cn__sql_console_engine[CN_SQL_CON_E_COUNT];
extern const cn_sql_set_t cn__sql_console_set;

#endif
