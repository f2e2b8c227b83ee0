/* The fleet's node registry (src/cmd/fleet_node.c): one row per cairnd node
 * id, written at its start, on every heartbeat and at a clean stop, and
 * listed by `cairn admin fleet status`.  See sql.h, docs/fleet.md "The node
 * registry".
 *
 * NODE_COLS: id, advertise (NULL: none), version, started_ms, heartbeat_ms,
 * every_ms, stopped_ms (NULL while it runs), console (the console's own base
 * URL when it has a listener of its own, else NULL; NODE_UP clears it).
 *
 * Also the change topics' generations (src/meta/watch.c, cn_meta_notify):
 * one row per topic, bumped by the writer's own transaction, read by every
 * node's watcher. */
#ifndef CAIRN_META_SQL_FLEET_H
#define CAIRN_META_SQL_FLEET_H

#include "meta/sql/sql.h"

enum {
    CN_SQL_FLEET_NODE_UP,        /* (id, advertise, version, now_ms, every_ms): upsert, running */
    CN_SQL_FLEET_NODE_BEAT,      /* (now_ms, id) */
    CN_SQL_FLEET_NODE_DOWN,      /* (now_ms, id): stopped cleanly */
    CN_SQL_FLEET_NODE_LIST,      /* () -> NODE_COLS by id */
    CN_SQL_FLEET_NODE_ADVERTISE, /* (id) -> advertise */
    CN_SQL_FLEET_NODE_CONSOLE,   /* (console, id) */
    CN_SQL_FLEET_TOPIC_BUMP,     /* (topic): its generation + 1 (1 when new) */
    CN_SQL_FLEET_TOPIC_LIST,     /* () -> topic, gen */
    CN_SQL_FLEET_COUNT
};

extern const char *const cn__sql_fleet[CN_SQL_FLEET_COUNT];
extern const cn_sql_set_t cn__sql_fleet_set;

#endif
