/* The gateway's statements (src/scribe/gw_place.c): its placement map, one
 * row per repository a gateway placed or adopted, keyed by (namespace,
 * storage name).  server is the storage server's configured address; id is
 * the repository id once known (NULL while the placement is pending: the
 * repository may not exist yet).  See sql.h. */
#ifndef CAIRN_META_SQL_GATEWAY_H
#define CAIRN_META_SQL_GATEWAY_H

#include "meta/sql/sql.h"

enum {
    CN_SQL_GW_BY_NAME,  /* (ns, name) -> server, id (NULL while pending) */
    CN_SQL_GW_BY_ID,    /* (id) -> server */
    CN_SQL_GW_RESERVE,  /* (ns, name, server, created_ms): pending; kept if present */
    CN_SQL_GW_CONFIRM,  /* (ns, name, server, id, created_ms): upsert with the id */
    CN_SQL_GW_FORGET,   /* (ns, name): a pending placement whose create was refused */
    CN_SQL_GW_COUNT_ON, /* (server) -> COUNT(*) of its placements */
    CN_SQL_GW_COUNT
};

extern const char *const cn__sql_gateway[CN_SQL_GW_COUNT];
extern const cn_sql_set_t cn__sql_gateway_set;

#endif
