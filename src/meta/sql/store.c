/* The store's statement file: durable pins, the pack index and the blob rows
 * of a shared tier.  See sql.h.
 * A store_pack row whose indexed_end is -1 names a pack that compaction is
 * retiring (its file is, or is about to be, unlinked; src/store/sweep.c).
 * One text is made at run time: a multi-row PACKED_INSERT, whose length is
 * the number of rows. */
#include "meta/sql/store.h"

#include <stdlib.h>
#include <string.h>

/* The store's usage triggers (docs/store.md, "Usage totals"), one text per
 * engine, not translated: a pack index row inserted or deleted is a packed
 * blob stored or reclaimed.  SQLite (one writer) adds to the base row;
 * PostgreSQL appends a delta row per statement, folded by CN_SQL_STORE_E_USAGE_FOLD (the
 * leased usage-fold job), so concurrent writers share no row.  An INSERT
 * that met an indexed digest inserted nothing and fires none; compaction's
 * move is an UPDATE and fires none. */
#define SQLITE_STORE_USAGE(when, row, sign)                                                   \
    "CREATE TRIGGER store_pack_blob_usage_" when " AFTER " when " ON store_pack_blob"         \
    " FOR EACH ROW BEGIN INSERT INTO store_usage (id, blobs, bytes, walked) VALUES (0, " sign \
    "1, " sign row ".len, 0) ON CONFLICT (id) DO UPDATE SET blobs = blobs + excluded.blobs,"  \
    " bytes = bytes + excluded.bytes; END;"
static const cn_meta_batch_sql_t usage_trigger_sql = {
    .sqlite = SQLITE_STORE_USAGE("INSERT", "NEW", "") SQLITE_STORE_USAGE("DELETE", "OLD", "-"),
    /* Statement triggers with transition tables: one delta row for a
     * multi-row INSERT of a batch (pack.c), not one per row. */
    .pg = "CREATE FUNCTION store_usage_ins() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " INSERT INTO store_usage_delta SELECT COUNT(*), COALESCE(SUM(len), 0) FROM n"
          " HAVING COUNT(*) > 0; RETURN NULL; END $f$;"
          "CREATE FUNCTION store_usage_del() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " INSERT INTO store_usage_delta SELECT -COUNT(*), -COALESCE(SUM(len), 0) FROM o"
          " HAVING COUNT(*) > 0; RETURN NULL; END $f$;"
          "CREATE TRIGGER store_pack_blob_usage_ins AFTER INSERT ON store_pack_blob"
          " REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION store_usage_ins();"
          "CREATE TRIGGER store_pack_blob_usage_del AFTER DELETE ON store_pack_blob"
          " REFERENCING OLD TABLE AS o FOR EACH STATEMENT EXECUTE FUNCTION store_usage_del();",
};

static cn_err_t usage_triggers(cn_meta_txn_t *txn, void *arg)
{
    (void)arg;
    return cn_meta_exec(txn, cn_meta_batch_text(txn, &usage_trigger_sql));
}

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
    /* v3: the store's running totals (docs/store.md, "Usage totals"): blobs
     * and their stored bytes, one base row (id 0) plus deltas, as the
     * objects and blobs services keep theirs.  Packed blobs are counted by
     * triggers on store_pack_blob; blob files have no row, and the store
     * notes their puts and removals itself (src/store/usage.c).  walked = 0
     * until the first open has counted the files already on disk; 2 while
     * one data directory's store has the totals open (USAGE_MARK). */
    { 3,
      "CREATE TABLE store_usage ("
      "  id BIGINT PRIMARY KEY,"
      "  blobs BIGINT NOT NULL,"
      "  bytes BIGINT NOT NULL,"
      "  walked BIGINT NOT NULL);"
      "CREATE TABLE store_usage_delta ("
      "  d_blobs BIGINT NOT NULL,"
      "  d_bytes BIGINT NOT NULL);"
      "INSERT INTO store_usage (id, blobs, bytes, walked)"
      " SELECT 0, COUNT(*), COALESCE(SUM(len), 0), 0 FROM store_pack_blob;",
      usage_triggers, NULL },
    /* v4: the blob rows of a tier shared by a fleet (src/store/sweep.c, S6-S8;
     * docs/fleet.md, "Sweeper"): one row per digest a node put, touched or
     * pinned, with the wall-clock ms of the last such act.  Its row lock is
     * what a put and the sweeper of another node serialise on: the sweeper
     * deletes a backend object only while it holds the row.  Unused by a
     * local store and on a single-writer engine (SQLite). */
    { 4,
      "CREATE TABLE store_blob ("
      "  digest BLOB PRIMARY KEY,"
      "  touched_ms BIGINT NOT NULL);",
      NULL, NULL },
};

const char *const cn__sql_store[CN_SQL_STORE_COUNT] = {
    [CN_SQL_STORE_PIN_DELETE] = "DELETE FROM store_pin WHERE pin_id = ?",
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
    /* ---- usage totals (step v3) */
    [CN_SQL_STORE_USAGE] =
        "SELECT CAST(COALESCE(SUM(b), 0) AS BIGINT), CAST(COALESCE(SUM(y), 0) AS BIGINT) FROM ("
        "SELECT blobs AS b, bytes AS y FROM store_usage "
        "UNION ALL SELECT d_blobs, d_bytes FROM store_usage_delta) u",
    [CN_SQL_STORE_USAGE_WALKED] = "SELECT walked FROM store_usage WHERE id = 0",
    /* The packed blobs are counted exactly by the index rows; the files by
     * the walk that ran with no writer on this store (first open). */
    [CN_SQL_STORE_USAGE_SET_WALKED] =
        "UPDATE store_usage SET blobs = ? + (SELECT COUNT(*) FROM store_pack_blob),"
        " bytes = ? + (SELECT COALESCE(SUM(len), 0) FROM store_pack_blob), walked = 1"
        " WHERE id = 0 AND walked = 0",
    [CN_SQL_STORE_USAGE_DELTA_CLEAR] = "DELETE FROM store_usage_delta",
    /* As SET_WALKED, but whatever the totals were, and also when the base
     * row is gone (an offline recount with no writer on this store; the
     * deltas are cleared in the same transaction). */
    [CN_SQL_STORE_USAGE_RECOUNT] =
        "INSERT INTO store_usage (id, blobs, bytes, walked) VALUES (0,"
        " ? + (SELECT COUNT(*) FROM store_pack_blob),"
        " ? + (SELECT COALESCE(SUM(len), 0) FROM store_pack_blob), 1)"
        " ON CONFLICT (id) DO UPDATE SET blobs = excluded.blobs, bytes = excluded.bytes,"
        " walked = 1",
    [CN_SQL_STORE_USAGE_MARK] = "UPDATE store_usage SET walked = ? WHERE id = 0 AND walked <> 0",
    /* ---- blob rows (step v4); the touch is an engine statement */
    [CN_SQL_STORE_BLOB_ADD] = "INSERT INTO store_blob (digest, touched_ms) VALUES (?, ?)"
                              " ON CONFLICT (digest) DO NOTHING",
    [CN_SQL_STORE_BLOB_DELETE] = "DELETE FROM store_blob WHERE digest = ?",
};

/* The clock-reading statements, made for each engine's now. */
#define BLOB_TOUCH(now)                                                                     \
    "INSERT INTO store_blob (digest, touched_ms) VALUES (?1, " now ") ON CONFLICT (digest)" \
    " DO UPDATE SET touched_ms = CASE WHEN excluded.touched_ms > store_blob.touched_ms"     \
    " THEN excluded.touched_ms ELSE store_blob.touched_ms END"
#define PIN_FIND_LIVE(now)                                                                    \
    "SELECT pin_id FROM store_pin WHERE digest = ?1 AND (expires_ms = 0 OR expires_ms > " now \
    ") LIMIT 1"
#define PIN_INSERT(now)                                                         \
    "INSERT INTO store_pin (pin_id, digest, owner_tag, expires_ms, created_ms)" \
    " VALUES (?1, ?2, ?3, CASE WHEN CAST(?4 AS BIGINT) = 0 THEN 0"              \
    " WHEN CAST(?4 AS BIGINT) <= CAST(?5 AS BIGINT) THEN 1"                     \
    " ELSE CAST(?4 AS BIGINT) - CAST(?5 AS BIGINT) + " now " END, " now ")"
#define PIN_EXPIRE(now) "DELETE FROM store_pin WHERE expires_ms > 0 AND expires_ms <= " now

const cn_meta_batch_sql_t cn__sql_store_engine[CN_SQL_STORE_E_COUNT] = {
    /* A blob file put or removed: (blobs, bytes) added to the totals. */
    [CN_SQL_STORE_E_USAGE_NOTE] = {
        .sqlite = "INSERT INTO store_usage (id, blobs, bytes, walked) VALUES (0, ?, ?, 0)"
                  " ON CONFLICT (id) DO UPDATE SET blobs = blobs + excluded.blobs,"
                  " bytes = bytes + excluded.bytes",
        .pg = "INSERT INTO store_usage_delta (d_blobs, d_bytes) VALUES (?, ?)",
    },
    /* As the objects service's fold (objects.c): SQLite keeps no deltas. */
    [CN_SQL_STORE_E_USAGE_FOLD] = {
        .sqlite = "DELETE FROM store_usage_delta WHERE 0 = 1",
        .pg = "WITH d AS (DELETE FROM store_usage_delta RETURNING d_blobs, d_bytes) "
              "UPDATE store_usage SET blobs = store_usage.blobs + s.b, "
              "bytes = store_usage.bytes + s.y FROM (SELECT COALESCE(SUM(d_blobs), 0) AS b, "
              "COALESCE(SUM(d_bytes), 0) AS y FROM d) s WHERE store_usage.id = 0",
    },
    /* The sweeper's lock of a blob row: FOR UPDATE on PostgreSQL; SQLite has
     * no row locks (its write transaction holds the whole database). */
    [CN_SQL_STORE_E_BLOB_LOCK] = {
        .sqlite = "SELECT touched_ms, " CN_SQL_NOW_MS_SQLITE " FROM store_blob WHERE digest = ?",
        .pg = "SELECT touched_ms, " CN_SQL_NOW_MS_PG " FROM store_blob WHERE digest = ? FOR UPDATE",
    },
    /* The upsert always updates, so it takes the row's lock on PostgreSQL
     * (and waits for a sweeper holding it); the time never moves back. */
    [CN_SQL_STORE_E_BLOB_TOUCH] = {
        .sqlite = BLOB_TOUCH(CN_SQL_NOW_MS_SQLITE),
        .pg = BLOB_TOUCH(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_STORE_E_PIN_FIND_LIVE] = {
        .sqlite = PIN_FIND_LIVE(CN_SQL_NOW_MS_SQLITE),
        .pg = PIN_FIND_LIVE(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_STORE_E_PIN_INSERT] = {
        .sqlite = PIN_INSERT(CN_SQL_NOW_MS_SQLITE),
        .pg = PIN_INSERT(CN_SQL_NOW_MS_PG),
    },
    [CN_SQL_STORE_E_PIN_EXPIRE] = {
        .sqlite = PIN_EXPIRE(CN_SQL_NOW_MS_SQLITE),
        .pg = PIN_EXPIRE(CN_SQL_NOW_MS_PG),
    },
};

char *cn__sql_store_packed_insert_rows(uint32_t rows)
{
    return cn__sql_rows_text(
        "INSERT INTO store_pack_blob (digest, pack_id, off, len, form, mtime_ms) VALUES ",
        ", (?, ?, ?, ?, ?, ?)", " ON CONFLICT (digest) DO NOTHING", rows,
        CN_SQL_STORE_PACKED_ROWS_MAX);
}

const cn_sql_set_t cn__sql_store_set = {
    "store", schema, sizeof schema / sizeof schema[0], cn__sql_store, CN_SQL_STORE_COUNT, NULL,
};
