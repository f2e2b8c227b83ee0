/* The objects service's fleet write generations (src/objects/gen.c on
 * PostgreSQL): one row per bucket slot, bumped inside every write run's own
 * transaction and read by the head cache.  See sql.h, and docs/fleet.md
 * "The object-head cache on PostgreSQL". */
#ifndef CAIRN_META_SQL_OBJGEN_H
#define CAIRN_META_SQL_OBJGEN_H

#include "meta/sql/sql.h"

enum {
    CN_SQL_OBJGEN_BUMP, /* (slot): gen + 1, the row made at 1 when missing */
    /* (bucket slot, key slot) -> the sum of both gens, the bucket slot's gen */
    CN_SQL_OBJGEN_HLOAD,
    CN_SQL_OBJGEN_COUNT
};

extern const char *const cn__sql_objgen[CN_SQL_OBJGEN_COUNT];
extern const cn_sql_set_t cn__sql_objgen_set;

#endif
