/* The store's statement file: durable pins and the pack index.  See sql.h.
 * A store_pack row whose indexed_end is -1 names a pack that compaction is
 * retiring (its file is, or is about to be, unlinked; src/store/sweep.c). */
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
    { 2,
      "CREATE TABLE store_pack ("
      "  pack_id BIGINT PRIMARY KEY,"
      "  indexed_end BIGINT NOT NULL);"
      "CREATE TABLE store_pack_blob ("
      "  digest BLOB PRIMARY KEY,"
      "  pack_id BIGINT NOT NULL,"
      "  off BIGINT NOT NULL,"
      "  len BIGINT NOT NULL,"
      "  form INTEGER NOT NULL,"
      "  mtime_ms BIGINT NOT NULL);"
      "CREATE INDEX store_pack_blob_pack ON store_pack_blob (pack_id, off);",
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
    [CN_SQL_STORE_PACK_LIST] = "SELECT pack_id, indexed_end FROM store_pack",
    [CN_SQL_STORE_PACK_SET_END] =
        "INSERT INTO store_pack (pack_id, indexed_end) VALUES (?, ?)"
        " ON CONFLICT (pack_id) DO UPDATE SET indexed_end = excluded.indexed_end",
    [CN_SQL_STORE_PACKED_LIST] =
        "SELECT digest, pack_id, off, len, form, mtime_ms FROM store_pack_blob",
    [CN_SQL_STORE_PACKED_INSERT] =
        "INSERT INTO store_pack_blob (digest, pack_id, off, len, form, mtime_ms)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING",
    [CN_SQL_STORE_PACKED_TOUCH] = "UPDATE store_pack_blob SET mtime_ms = ? WHERE digest = ?",
    [CN_SQL_STORE_PACKED_DELETE] = "DELETE FROM store_pack_blob WHERE digest = ?",
    [CN_SQL_STORE_PACKED_DROP_PAST] =
        "DELETE FROM store_pack_blob WHERE pack_id = ? AND off + 48 + len > ?",
    [CN_SQL_STORE_PACKED_MOVE] = "UPDATE store_pack_blob SET pack_id = ?, off = ?"
                                 " WHERE digest = ? AND pack_id = ? AND off = ?",
    [CN_SQL_STORE_PACK_ROWS] = "SELECT count(*) FROM store_pack_blob WHERE pack_id = ?",
    [CN_SQL_STORE_PACK_DELETE] = "DELETE FROM store_pack WHERE pack_id = ?",
};

const cn_sql_set_t cn__sql_store_set = {
    "store", schema, sizeof schema / sizeof schema[0], cn__sql_store, CN_SQL_STORE_COUNT,
};
