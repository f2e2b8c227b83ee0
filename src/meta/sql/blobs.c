/* The blobs service's statement file: namespace membership.  See sql.h and
 * blobs.h. */
#include "meta/sql/blobs.h"

/* The usage triggers, one text per engine (not translated): SQLite (one
 * writer) adds to the base row; PostgreSQL appends a delta row, folded
 * later by CN_SQL_BLOBS_E_USAGE_FOLD, so concurrent writers share no row.
 * An INSERT that met an existing member inserted nothing and fires none. */
#define SQLITE_NS_USAGE(when, row, sign)                                                           \
    "CREATE TRIGGER blobs_member_usage_" when " AFTER " when " ON blobs_member FOR EACH ROW"       \
    " BEGIN INSERT INTO blobs_usage (ns, members, bytes) VALUES (" row ".ns, " sign "1, " sign row \
    ".len) ON CONFLICT (ns) DO UPDATE SET members = members + excluded.members,"                   \
    " bytes = bytes + excluded.bytes; END;"
static const cn_meta_batch_sql_t usage_trigger_sql = {
    .sqlite = SQLITE_NS_USAGE("INSERT", "NEW", "") SQLITE_NS_USAGE("DELETE", "OLD", "-"),
    .pg = "CREATE FUNCTION blobs_usage_track() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " IF TG_OP = 'INSERT' THEN INSERT INTO blobs_usage_delta"
          " VALUES (NEW.ns, 1, NEW.len); RETURN NEW; END IF;"
          " INSERT INTO blobs_usage_delta VALUES (OLD.ns, -1, -OLD.len); RETURN OLD; END $f$;"
          "CREATE TRIGGER blobs_member_usage AFTER INSERT OR DELETE ON blobs_member"
          " FOR EACH ROW EXECUTE FUNCTION blobs_usage_track();",
};

static cn_err_t usage_triggers(cn_meta_txn_t *txn, void *arg)
{
    (void)arg;
    return cn_meta_exec(txn, cn_meta_batch_text(txn, &usage_trigger_sql));
}

static const cn_meta_migration_t schema[] = {
    { .version = 1,
      .sql = "CREATE TABLE blobs_member ("
             "  ns TEXT NOT NULL,"
             "  digest BLOB NOT NULL,"
             "  len BIGINT NOT NULL,"
             "  created_ms BIGINT NOT NULL,"
             "  PRIMARY KEY (ns, digest));"
             "CREATE INDEX blobs_member_digest ON blobs_member (digest);" },
    /* v2: members and bytes per namespace, kept as the objects service keeps
     * its bucket totals (objects.c, step v5; docs/architecture.md, "Usage
     * totals"): a base row per namespace plus deltas, maintained by
     * triggers on blobs_member in the transaction of the change; backfilled
     * here from the rows, one row per namespace. */
    { .version = 2,
      .sql = "CREATE TABLE blobs_usage ("
             "  ns TEXT PRIMARY KEY,"
             "  members BIGINT NOT NULL,"
             "  bytes BIGINT NOT NULL);"
             "CREATE TABLE blobs_usage_delta ("
             "  ns TEXT NOT NULL,"
             "  d_members BIGINT NOT NULL,"
             "  d_bytes BIGINT NOT NULL);"
             "CREATE INDEX blobs_usage_delta_ns ON blobs_usage_delta (ns);"
             "INSERT INTO blobs_usage (ns, members, bytes)"
             " SELECT ns, COUNT(*), COALESCE(SUM(len), 0) FROM blobs_member GROUP BY ns;",
      .apply = usage_triggers },
};

const char *const cn__sql_blobs[CN_SQL_BLOBS_COUNT] = {
    [CN_SQL_BLOBS_MEMBER_INSERT] = "INSERT INTO blobs_member (ns, digest, len, created_ms)"
                                   " VALUES (?, ?, ?, ?) ON CONFLICT (ns, digest) DO NOTHING",
    [CN_SQL_BLOBS_MEMBER_DELETE] = "DELETE FROM blobs_member WHERE ns = ? AND digest = ?",
    [CN_SQL_BLOBS_MEMBERS_PAGE] = "SELECT digest FROM blobs_member WHERE ns = ?"
                                  " AND digest > ? ORDER BY digest LIMIT ?",
    [CN_SQL_BLOBS_USAGE] = "SELECT ns, CAST(SUM(m) AS BIGINT), CAST(SUM(b) AS BIGINT) FROM ("
                           "SELECT ns, members AS m, bytes AS b FROM blobs_usage "
                           "UNION ALL SELECT ns, d_members, d_bytes FROM blobs_usage_delta) u "
                           "GROUP BY ns HAVING SUM(m) > 0 ORDER BY ns",
};

const cn_meta_batch_sql_t cn__sql_blobs_engine[CN_SQL_BLOBS_E_COUNT] = {
    /* As the objects service's fold (objects.c): SQLite keeps no deltas. */
    [CN_SQL_BLOBS_E_USAGE_FOLD] = {
        .sqlite = "DELETE FROM blobs_usage_delta WHERE 0 = 1",
        .pg = "WITH d AS (DELETE FROM blobs_usage_delta RETURNING ns, d_members, d_bytes), "
              "s AS (SELECT ns, SUM(d_members) AS m, SUM(d_bytes) AS b FROM d GROUP BY ns) "
              "INSERT INTO blobs_usage (ns, members, bytes) SELECT ns, m, b FROM s "
              "ON CONFLICT (ns) DO UPDATE SET members = blobs_usage.members + excluded.members, "
              "bytes = blobs_usage.bytes + excluded.bytes",
    },
};

/* SQLite walks the packed digests (?1, 32 bytes each) with a recursive CTE
 * whose row i is position i, and looks each one up through the primary key
 * (unique: one row per position at most) or, in any namespace, the digest
 * index under EXISTS (one row per position however many namespaces hold
 * it); PostgreSQL unnests the bytea[] with its 1-based ordinality.
 * Measured against the alternatives in docs/performance.md, "Batch lookups
 * (stop 22)". */
#define WALK_DIGESTS                                          \
    "WITH RECURSIVE k(i) AS (SELECT 0 WHERE length(?1) >= 32" \
    " UNION ALL SELECT i + 1 FROM k WHERE (i + 2) * 32 <= length(?1)) "

const cn_meta_batch_sql_t cn__sql_blobs_batch[CN_SQL_BLOBS_BATCH_COUNT] = {
    [CN_SQL_BLOBS_BATCH_IN_NS] = {
        .sqlite = WALK_DIGESTS "SELECT k.i FROM k JOIN blobs_member m ON m.ns = ?2"
                               " AND m.digest = substr(?1, k.i * 32 + 1, 32)",
        .pg = "SELECT k.i - 1 FROM unnest(?1::bytea[]) WITH ORDINALITY AS k(d, i)"
              " WHERE EXISTS (SELECT 1 FROM blobs_member m WHERE m.ns = ?2 AND m.digest = k.d)",
    },
    [CN_SQL_BLOBS_BATCH_ANY_NS] = {
        .sqlite = WALK_DIGESTS "SELECT k.i FROM k WHERE EXISTS (SELECT 1 FROM blobs_member m"
                               " WHERE m.digest = substr(?1, k.i * 32 + 1, 32))",
        .pg = "SELECT k.i - 1 FROM unnest(?1::bytea[]) WITH ORDINALITY AS k(d, i)"
              " WHERE EXISTS (SELECT 1 FROM blobs_member m WHERE m.digest = k.d)",
    },
};

const cn_sql_set_t cn__sql_blobs_set = {
    "blobs", schema, sizeof schema / sizeof schema[0], cn__sql_blobs, CN_SQL_BLOBS_COUNT, NULL,
};
