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
    [CN_SQL_BLOBS_MEMBER_IN_NS] = "SELECT 1 FROM blobs_member WHERE ns = ? AND digest = ?",
    [CN_SQL_BLOBS_MEMBER_ANY_NS] = "SELECT 1 FROM blobs_member WHERE digest = ? LIMIT 1",
    [CN_SQL_BLOBS_MEMBER_INSERT] = "INSERT INTO blobs_member (ns, digest, len, created_ms)"
                                   " VALUES (?, ?, ?, ?) ON CONFLICT (ns, digest) DO NOTHING",
    [CN_SQL_BLOBS_MEMBER_DELETE] = "DELETE FROM blobs_member WHERE ns = ? AND digest = ?",
    [CN_SQL_BLOBS_MEMBERS_PAGE] = "SELECT digest FROM blobs_member WHERE ns = ?"
                                  " AND digest > ? ORDER BY digest LIMIT ?",
};

const cn_sql_set_t cn__sql_blobs_set = {
    "blobs", schema, sizeof schema / sizeof schema[0], cn__sql_blobs, CN_SQL_BLOBS_COUNT,
};
