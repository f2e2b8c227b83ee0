/* The blobs service's statement file: namespace membership.  See sql.h and
 * blobs.h. */
#include "meta/sql/blobs.h"

static const cn_meta_migration_t schema[] = {
    { .version = 1,
      .sql = "CREATE TABLE blobs_member ("
             "  ns TEXT NOT NULL,"
             "  digest BLOB NOT NULL,"
             "  len BIGINT NOT NULL,"
             "  created_ms BIGINT NOT NULL,"
             "  PRIMARY KEY (ns, digest));"
             "CREATE INDEX blobs_member_digest ON blobs_member (digest);" },
};

const char *const cn__sql_blobs[CN_SQL_BLOBS_COUNT] = {
    [CN_SQL_BLOBS_MEMBER_INSERT] = "INSERT INTO blobs_member (ns, digest, len, created_ms)"
                                   " VALUES (?, ?, ?, ?) ON CONFLICT (ns, digest) DO NOTHING",
    [CN_SQL_BLOBS_MEMBER_DELETE] = "DELETE FROM blobs_member WHERE ns = ? AND digest = ?",
    [CN_SQL_BLOBS_MEMBERS_PAGE] = "SELECT digest FROM blobs_member WHERE ns = ?"
                                  " AND digest > ? ORDER BY digest LIMIT ?",
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
    "blobs", schema, sizeof schema / sizeof schema[0], cn__sql_blobs, CN_SQL_BLOBS_COUNT,
};
