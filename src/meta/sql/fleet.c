/* The node registry's statement file: its schema step and its statements
 * (fleet.h names them).  See sql.h. */
#include "meta/sql/fleet.h"

static const cn_meta_migration_t schema[] = {
    { 1,
      "CREATE TABLE cn_nodes ("
      " id TEXT PRIMARY KEY,"
      " advertise TEXT,"
      " version TEXT NOT NULL,"
      " started_ms BIGINT NOT NULL,"
      " heartbeat_ms BIGINT NOT NULL,"
      " every_ms BIGINT NOT NULL,"
      " stopped_ms BIGINT)",
      NULL, NULL },
    { 2, "CREATE TABLE cn_topics (topic TEXT PRIMARY KEY, gen BIGINT NOT NULL)", NULL, NULL },
    /* the console's own base URL when it has a listener of its own
     * (cairnd --console ADDR with --advertise), else NULL */
    { 3, "ALTER TABLE cn_nodes ADD COLUMN console TEXT", NULL, NULL },
};

const char *const cn__sql_fleet[CN_SQL_FLEET_COUNT] = {
    [CN_SQL_FLEET_NODE_UP] =
        "INSERT INTO cn_nodes (id, advertise, version, started_ms, heartbeat_ms, every_ms,"
        " stopped_ms) VALUES (?1, ?2, ?3, ?4, ?4, ?5, NULL)"
        " ON CONFLICT (id) DO UPDATE SET advertise = excluded.advertise,"
        " version = excluded.version, started_ms = excluded.started_ms,"
        " heartbeat_ms = excluded.heartbeat_ms, every_ms = excluded.every_ms, stopped_ms = NULL,"
        " console = NULL",
    [CN_SQL_FLEET_NODE_BEAT] = "UPDATE cn_nodes SET heartbeat_ms = ? WHERE id = ?",
    [CN_SQL_FLEET_NODE_DOWN] = "UPDATE cn_nodes SET stopped_ms = ?1, heartbeat_ms = ?1"
                               " WHERE id = ?2",
    [CN_SQL_FLEET_NODE_LIST] = "SELECT id, advertise, version, started_ms, heartbeat_ms, every_ms,"
                               " stopped_ms, console FROM cn_nodes ORDER BY id",
    [CN_SQL_FLEET_NODE_ADVERTISE] = "SELECT advertise FROM cn_nodes WHERE id = ?",
    [CN_SQL_FLEET_NODE_CONSOLE] = "UPDATE cn_nodes SET console = ? WHERE id = ?",
    [CN_SQL_FLEET_TOPIC_BUMP] = "INSERT INTO cn_topics (topic, gen) VALUES (?, 1)"
                                " ON CONFLICT (topic) DO UPDATE SET gen = cn_topics.gen + 1",
    [CN_SQL_FLEET_TOPIC_LIST] = "SELECT topic, gen FROM cn_topics",
};

const cn_sql_set_t cn__sql_fleet_set = {
    "fleet", schema, sizeof schema / sizeof schema[0], cn__sql_fleet, CN_SQL_FLEET_COUNT, NULL,
};
