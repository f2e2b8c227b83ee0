/* The objects service's fleet write generations: its schema step and its
 * statements (objgen.h names them).  A component of its own ("objgen"), so
 * the table lands without a step in the objects schema.  See sql.h. */
#include "meta/sql/objgen.h"

static const cn_meta_migration_t schema[] = {
    { 1, "CREATE TABLE cn_obj_gen (slot BIGINT PRIMARY KEY, gen BIGINT NOT NULL)", NULL, NULL },
};

const char *const cn__sql_objgen[CN_SQL_OBJGEN_COUNT] = {
    [CN_SQL_OBJGEN_HLOAD] = "SELECT CAST(COALESCE(SUM(gen), 0) AS BIGINT),"
                            " CAST(COALESCE(MAX(CASE WHEN slot = ?1 THEN gen END), 0) AS BIGINT)"
                            " FROM cn_obj_gen WHERE slot IN (?1, ?2)",
    [CN_SQL_OBJGEN_BUMP] = "INSERT INTO cn_obj_gen (slot, gen) VALUES (?, 1)"
                           " ON CONFLICT (slot) DO UPDATE SET gen = cn_obj_gen.gen + 1",
};

const cn_sql_set_t cn__sql_objgen_set = {
    "objgen", schema, sizeof schema / sizeof schema[0], cn__sql_objgen, CN_SQL_OBJGEN_COUNT, NULL,
};
