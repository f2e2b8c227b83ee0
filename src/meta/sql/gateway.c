/* The gateway's statement file: placements.  See sql.h and gateway.h. */
#include "meta/sql/gateway.h"

static const cn_meta_migration_t schema[] = {
    { 1,
      "CREATE TABLE gw_placement ("
      "  ns TEXT NOT NULL,"
      "  name TEXT NOT NULL,"
      "  server TEXT NOT NULL,"
      "  repo_id BLOB,"
      "  created_ms BIGINT NOT NULL,"
      "  PRIMARY KEY (ns, name));"
      "CREATE UNIQUE INDEX gw_placement_id ON gw_placement (repo_id);"
      "CREATE INDEX gw_placement_server ON gw_placement (server);",
      NULL, NULL },
};

const char *const cn__sql_gateway[CN_SQL_GW_COUNT] = {
    [CN_SQL_GW_BY_NAME] = "SELECT server, repo_id FROM gw_placement WHERE ns = ? AND name = ?",
    [CN_SQL_GW_BY_ID] = "SELECT server FROM gw_placement WHERE repo_id = ?",
    [CN_SQL_GW_RESERVE] = "INSERT INTO gw_placement (ns, name, server, repo_id, created_ms)"
                          " VALUES (?, ?, ?, NULL, ?) ON CONFLICT (ns, name) DO NOTHING",
    [CN_SQL_GW_CONFIRM] = "INSERT INTO gw_placement (ns, name, server, repo_id, created_ms)"
                          " VALUES (?, ?, ?, ?, ?) ON CONFLICT (ns, name) DO UPDATE"
                          " SET server = excluded.server, repo_id = excluded.repo_id",
    [CN_SQL_GW_FORGET] = "DELETE FROM gw_placement WHERE ns = ? AND name = ? AND repo_id IS NULL",
    [CN_SQL_GW_COUNT_ON] = "SELECT COUNT(*) FROM gw_placement WHERE server = ?",
};

const cn_sql_set_t cn__sql_gateway_set = {
    "gateway", schema, sizeof schema / sizeof schema[0], cn__sql_gateway, CN_SQL_GW_COUNT, NULL,
};
