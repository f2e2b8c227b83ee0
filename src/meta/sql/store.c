/* The store's statement file: durable pins.  See sql.h. */
#include "meta/sql/store.h"

static const cn_meta_migration_t schema[] = {
    { 1,
      "CREATE TABLE store_pin ("
      "  pin_id BIGINT PRIMARY KEY,"
      "  digest BLOB NOT NULL,"
      "  owner_tag TEXT,"
      "  expires_ms BIGINT NOT NULL,"
      "  created_ms BIGINT NOT NULL);"
      "CREATE INDEX store_pin_digest ON store_pin (digest);"
      "CREATE INDEX store_pin_expires ON store_pin (expires_ms);",
      NULL, NULL },
};

const char *const cn__sql_store[CN_SQL_STORE_COUNT] = {
    [CN_SQL_STORE_PIN_FIND_LIVE] =
        "SELECT pin_id FROM store_pin WHERE digest = ? AND (expires_ms = 0 OR expires_ms > ?)"
        " LIMIT 1",
    [CN_SQL_STORE_PIN_INSERT] =
        "INSERT INTO store_pin (pin_id, digest, owner_tag, expires_ms, created_ms)"
        " VALUES (?, ?, ?, ?, ?)",
    [CN_SQL_STORE_PIN_DELETE] = "DELETE FROM store_pin WHERE pin_id = ?",
    [CN_SQL_STORE_PIN_EXPIRE] = "DELETE FROM store_pin WHERE expires_ms > 0 AND expires_ms <= ?",
};

const cn_sql_set_t cn__sql_store_set = {
    "store", schema, sizeof schema / sizeof schema[0], cn__sql_store, CN_SQL_STORE_COUNT,
};
