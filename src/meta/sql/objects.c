/* The objects service's statement file: its schema steps and statements.
 * See sql.h and objects.h. */
#include "meta/sql/objects.h"

/* ---- schema ----------------------------------------------------------------
 * Keys are BLOBs so that ordering is byte order on every engine (S3 lists in
 * UTF-8 binary order).  Append-only: never edit a shipped step. */
static const char schema_v1[] =
    "CREATE TABLE obj_seq (name TEXT PRIMARY KEY, value BIGINT NOT NULL);"
    "INSERT INTO obj_seq (name, value) VALUES ('bucket', 0);"
    "INSERT INTO obj_seq (name, value) VALUES ('version', 0);"
    "CREATE TABLE obj_bucket ("
    "  bucket_id BIGINT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  owner TEXT NOT NULL,"
    "  created_ms BIGINT NOT NULL,"
    "  acl TEXT,"
    "  policy TEXT,"
    "  pab BIGINT);"
    "CREATE INDEX obj_bucket_owner ON obj_bucket (owner, name);"
    "CREATE TABLE obj_bucket_attr ("
    "  bucket_id BIGINT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  value BLOB,"
    "  PRIMARY KEY (bucket_id, name));"
    "CREATE TABLE obj_version ("
    "  version_id BIGINT PRIMARY KEY,"
    "  bucket_id BIGINT NOT NULL,"
    "  okey BLOB NOT NULL,"
    "  size BIGINT NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  umeta BLOB,"
    "  mtime_ms BIGINT NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  acl TEXT,"
    "  nparts BIGINT NOT NULL,"
    "  UNIQUE (bucket_id, okey));"
    "CREATE TABLE obj_segment ("
    "  version_id BIGINT NOT NULL,"
    "  seq BIGINT NOT NULL,"
    "  digest BLOB NOT NULL,"
    "  size BIGINT NOT NULL,"
    "  part_number BIGINT NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  PRIMARY KEY (version_id, seq));"
    "CREATE INDEX obj_segment_digest ON obj_segment (digest);"
    "CREATE TABLE obj_upload ("
    "  upload_id TEXT PRIMARY KEY,"
    "  bucket_id BIGINT NOT NULL,"
    "  okey BLOB NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  umeta BLOB,"
    "  owner TEXT NOT NULL,"
    "  acl TEXT,"
    "  created_ms BIGINT NOT NULL);"
    "CREATE INDEX obj_upload_key ON obj_upload (bucket_id, okey, created_ms);"
    "CREATE INDEX obj_upload_created ON obj_upload (created_ms);"
    "CREATE TABLE obj_part ("
    "  upload_id TEXT NOT NULL,"
    "  part_number BIGINT NOT NULL,"
    "  digest BLOB NOT NULL,"
    "  size BIGINT NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  md5 BLOB NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  mtime_ms BIGINT NOT NULL,"
    "  PRIMARY KEY (upload_id, part_number));"
    "CREATE INDEX obj_part_digest ON obj_part (digest);";

/* v2: S3 additional checksums of multipart uploads (the upload's algorithm,
 * each part's and segment's checksum, the object's composite checksum), and
 * completed uploads kept for a bounded time (done_*) so that a retried
 * CompleteMultipartUpload is answered with the first completion's result. */
static const char schema_v2[] = "ALTER TABLE obj_upload ADD COLUMN cksum_alg TEXT;"
                                "ALTER TABLE obj_upload ADD COLUMN done_ms BIGINT;"
                                "ALTER TABLE obj_upload ADD COLUMN done_etag TEXT;"
                                "ALTER TABLE obj_upload ADD COLUMN done_cksum TEXT;"
                                "ALTER TABLE obj_upload ADD COLUMN done_sha256 TEXT;"
                                "ALTER TABLE obj_upload ADD COLUMN done_version BIGINT;"
                                "CREATE INDEX obj_upload_done ON obj_upload (done_ms);"
                                "ALTER TABLE obj_part ADD COLUMN cksum TEXT;"
                                "ALTER TABLE obj_segment ADD COLUMN cksum TEXT;"
                                "ALTER TABLE obj_version ADD COLUMN cksum_alg TEXT;"
                                "ALTER TABLE obj_version ADD COLUMN cksum TEXT;";

/* v3: a generation per bucket, bumped in the same write transaction as any
 * change of its settings (acl, policy, pab, its obj_bucket_attr rows), so
 * that a reader, in this process or another, validates the settings it
 * compiled and cached (src/objects/cache.c) with one look at
 * (bucket_id, gen). */
static const char schema_v3[] = "ALTER TABLE obj_bucket ADD COLUMN gen BIGINT NOT NULL DEFAULT 0;";

/* v4: S3 versioning, object lock and tagging (issue 25).
 *  - obj_version stays the table of current versions, one row per live key,
 *    so a current-version read is still one indexed lookup and a listing
 *    never meets a delete marker.  vnull = 1 marks a key's null version
 *    (every row written before v4, or while versioning is off or suspended).
 *  - obj_history holds noncurrent versions and delete markers (marker = 1,
 *    no segments).  A version moves there with its version_id unchanged when
 *    a newer version or a marker takes its key; its obj_segment rows stay,
 *    so its blobs stay live.  noncurrent_ms: when it stopped being current
 *    (lifecycle's noncurrent age); a marker's own write time is mtime_ms.
 *  - obj_version_tag, obj_version_lock: a version's tags and its retention
 *    and legal hold, keyed by version_id in whichever table it is.
 *  - obj_upload carries the tags and retention CreateMultipartUpload asked
 *    for, applied by the completion.
 *  - obj_lifecycle: the lifecycle worker's persisted cursor per bucket. */
static const char schema_v4[] =
    "ALTER TABLE obj_version ADD COLUMN vnull BIGINT NOT NULL DEFAULT 1;"
    "CREATE TABLE obj_history ("
    "  version_id BIGINT PRIMARY KEY,"
    "  bucket_id BIGINT NOT NULL,"
    "  okey BLOB NOT NULL,"
    "  marker BIGINT NOT NULL,"
    "  vnull BIGINT NOT NULL,"
    "  size BIGINT NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  umeta BLOB,"
    "  mtime_ms BIGINT NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  acl TEXT,"
    "  nparts BIGINT NOT NULL,"
    "  cksum_alg TEXT,"
    "  cksum TEXT,"
    "  noncurrent_ms BIGINT NOT NULL);"
    "CREATE INDEX obj_history_key ON obj_history (bucket_id, okey, version_id);"
    "CREATE TABLE obj_version_tag ("
    "  version_id BIGINT NOT NULL,"
    "  tkey BLOB NOT NULL,"
    "  tvalue BLOB NOT NULL,"
    "  PRIMARY KEY (version_id, tkey));"
    "CREATE TABLE obj_version_lock ("
    "  version_id BIGINT PRIMARY KEY,"
    "  mode TEXT,"
    "  retain_until_ms BIGINT,"
    "  legal_hold BIGINT NOT NULL DEFAULT 0);"
    "ALTER TABLE obj_upload ADD COLUMN tags BLOB;"
    "ALTER TABLE obj_upload ADD COLUMN lock_mode TEXT;"
    "ALTER TABLE obj_upload ADD COLUMN lock_until_ms BIGINT;"
    "ALTER TABLE obj_upload ADD COLUMN legal_hold BIGINT;"
    "CREATE TABLE obj_lifecycle ("
    "  bucket_id BIGINT PRIMARY KEY,"
    "  pass_ms BIGINT NOT NULL,"
    "  cursor BLOB);";

/* v5: usage totals per bucket (docs/architecture.md, "Usage totals").
 *  - obj_usage: one base row per bucket: objects (rows of obj_version:
 *    current versions, never a marker), versions (every stored version,
 *    current or noncurrent, markers not counted) and bytes (the sizes of
 *    those versions: what the bucket stores).
 *  - obj_usage_delta: changes not yet folded into the base, one row per
 *    changed version row; a total is its base plus the sum of its deltas.
 *  Triggers on obj_version and obj_history (usage_triggers below) keep them
 *  in the transaction of the row change itself, whatever path made it.  The
 *  step backfills the base from the rows, one row per bucket. */
static const char schema_v5[] =
    "CREATE TABLE obj_usage ("
    "  bucket_id BIGINT PRIMARY KEY,"
    "  objects BIGINT NOT NULL,"
    "  versions BIGINT NOT NULL,"
    "  bytes BIGINT NOT NULL);"
    "CREATE TABLE obj_usage_delta ("
    "  bucket_id BIGINT NOT NULL,"
    "  d_objects BIGINT NOT NULL,"
    "  d_versions BIGINT NOT NULL,"
    "  d_bytes BIGINT NOT NULL);"
    "CREATE INDEX obj_usage_delta_bucket ON obj_usage_delta (bucket_id);"
    "INSERT INTO obj_usage (bucket_id, objects, versions, bytes) "
    "SELECT b.bucket_id,"
    " (SELECT COUNT(*) FROM obj_version v WHERE v.bucket_id = b.bucket_id),"
    " (SELECT COUNT(*) FROM obj_version v WHERE v.bucket_id = b.bucket_id)"
    " + (SELECT COUNT(*) FROM obj_history h WHERE h.bucket_id = b.bucket_id AND h.marker = 0),"
    " (SELECT COALESCE(SUM(v.size), 0) FROM obj_version v WHERE v.bucket_id = b.bucket_id)"
    " + (SELECT COALESCE(SUM(h.size), 0) FROM obj_history h WHERE h.bucket_id = b.bucket_id"
    " AND h.marker = 0) FROM obj_bucket b;";

/* The usage triggers, one text per engine (run by usage_triggers, not
 * translated).  SQLite has one writer at a time, so its triggers add to the
 * base row directly and obj_usage_delta stays empty there.  PostgreSQL's
 * writers run side by side: every change appends a delta row instead, so no
 * two writers ever wait on (or fail serializing over) one counter row; the
 * leased usage-fold job (CN_SQL_OBJ_E_USAGE_FOLD) moves deltas into the
 * base.  A marker (obj_history.marker = 1) counts nowhere. */
#define SQLITE_USAGE_ADD(tbl, when, cond, row, o, sign)                                   \
    "CREATE TRIGGER " tbl "_usage_" when " AFTER " when " ON " tbl " FOR EACH ROW" cond   \
    " BEGIN INSERT INTO obj_usage (bucket_id, objects, versions, bytes) VALUES (" row     \
    ".bucket_id, " o ", " sign "1, " sign row ".size) ON CONFLICT (bucket_id) DO UPDATE"  \
    " SET objects = objects + excluded.objects, versions = versions + excluded.versions," \
    " bytes = bytes + excluded.bytes; END;"
#define PG_USAGE_FN(name, o)                                                       \
    "CREATE FUNCTION " name "() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"     \
    " IF TG_OP = 'INSERT' THEN IF NEW.marker = 0 THEN INSERT INTO obj_usage_delta" \
    " VALUES (NEW.bucket_id, " o ", 1, NEW.size); END IF; RETURN NEW; END IF;"     \
    " IF OLD.marker = 0 THEN INSERT INTO obj_usage_delta"                          \
    " VALUES (OLD.bucket_id, -" o ", -1, -OLD.size); END IF; RETURN OLD; END $f$;"
/* obj_version has no marker column: its rows are never markers. */
static const cn_meta_batch_sql_t usage_trigger_sql = {
    .sqlite = SQLITE_USAGE_ADD("obj_version", "INSERT", "", "NEW", "1", "")
        SQLITE_USAGE_ADD("obj_version", "DELETE", "", "OLD", "-1", "-")
            SQLITE_USAGE_ADD("obj_history", "INSERT", " WHEN NEW.marker = 0", "NEW", "0", "")
                SQLITE_USAGE_ADD("obj_history", "DELETE", " WHEN OLD.marker = 0", "OLD", "0", "-"),
    .pg = "CREATE FUNCTION obj_usage_cur() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " IF TG_OP = 'INSERT' THEN INSERT INTO obj_usage_delta"
          " VALUES (NEW.bucket_id, 1, 1, NEW.size); RETURN NEW; END IF;"
          " INSERT INTO obj_usage_delta VALUES (OLD.bucket_id, -1, -1, -OLD.size);"
          " RETURN OLD; END $f$;" PG_USAGE_FN(
              "obj_usage_hist",
              "0") "CREATE TRIGGER obj_version_usage AFTER INSERT OR DELETE ON obj_version"
                   " FOR EACH ROW EXECUTE FUNCTION obj_usage_cur();"
                   "CREATE TRIGGER obj_history_usage AFTER INSERT OR DELETE ON obj_history"
                   " FOR EACH ROW EXECUTE FUNCTION obj_usage_hist();",
};

static cn_err_t usage_triggers(cn_meta_txn_t *txn, void *arg)
{
    (void)arg;
    return cn_meta_exec(txn, cn_meta_batch_text(txn, &usage_trigger_sql));
}

/* v6: version ids on PostgreSQL from a sequence, obj_version_id, started
 * past the counter row (obj_seq 'version') it replaces there.  Every object
 * write took the next id by updating that one row, so any two writes, of any
 * buckets, serialized on it and one of them failed 40001 (1,730 of 1,730
 * serialization failures of 16 writers of 4 KiB PUTs, bench/fleet.py --part
 * commit).  A sequence hands out ids without a row lock and outside the
 * transaction: ids are unique and never reused but may have gaps (a rolled
 * back write spends one), and two writes of one key still conflict on the
 * key's own rows, so a key's later version always has the larger id.  SQLite
 * (one writer) keeps the counter row. */
static const cn_meta_batch_sql_t version_seq_sql = {
    .sqlite = "DELETE FROM obj_seq WHERE 0 = 1",
    .pg = "CREATE SEQUENCE obj_version_id AS BIGINT MINVALUE 1;"
          "SELECT setval('obj_version_id', "
          "(SELECT value FROM obj_seq WHERE name = 'version') + 1, false);",
};

static cn_err_t version_seq(cn_meta_txn_t *txn, void *arg)
{
    (void)arg;
    return cn_meta_exec(txn, cn_meta_batch_text(txn, &version_seq_sql));
}

static const cn_meta_migration_t schema[] = {
    { 1, schema_v1, NULL, NULL },           { 2, schema_v2, NULL, NULL },
    { 3, schema_v3, NULL, NULL },           { 4, schema_v4, NULL, NULL },
    { 5, schema_v5, usage_triggers, NULL }, { 6, NULL, version_seq, NULL },
};

/* V_KEY_READ's columns and the rest of it (?1 the key, ?2 the bucket). */
#define KEY_READ_COLS                                                                         \
    "SELECT b.bucket_id, b.gen, v.version_id, v.size, v.etag, v.sha256, v.content_type, "     \
    "v.umeta, v.mtime_ms, v.owner, v.acl, v.nparts, v.cksum_alg, v.cksum, s.digest, s.size, " \
    "v.vnull, l.mode, l.retain_until_ms, l.legal_hold, "                                      \
    "(SELECT COUNT(*) FROM obj_version_tag t WHERE t.version_id = v.version_id)"
#define KEY_READ_FROM                                                       \
    " FROM obj_bucket b "                                                   \
    "LEFT JOIN obj_version v ON v.bucket_id = b.bucket_id AND v.okey = ?1 " \
    "LEFT JOIN obj_segment s ON s.version_id = v.version_id "               \
    "LEFT JOIN obj_version_lock l ON l.version_id = v.version_id "          \
    "WHERE b.name = ?2 ORDER BY s.seq"

const char *const cn__sql_obj[CN_SQL_OBJ_COUNT] = {
    /* ---- counters and liveness */
    [CN_SQL_OBJ_SEQ_BUMP] = "UPDATE obj_seq SET value = value + 1 WHERE name = ?",
    [CN_SQL_OBJ_SEQ_VALUE] = "SELECT value FROM obj_seq WHERE name = ?",
    [CN_SQL_OBJ_SEGMENT_DIGEST_LIVE] = "SELECT 1 FROM obj_segment WHERE digest = ? LIMIT 1",
    [CN_SQL_OBJ_PART_DIGEST_LIVE] = "SELECT 1 FROM obj_part WHERE digest = ? LIMIT 1",
    /* ---- buckets */
    [CN_SQL_OBJ_BUCKET_GEN] = "SELECT bucket_id, gen FROM obj_bucket WHERE name = ?",
    /* The same with, in the same snapshot, the bucket slot's cn_obj_gen row
     * (?2: its settings word in rows mode, objects/gen.c 6) and whether key
     * ?3 has a current version (a put's pre-read, objects_int.h). */
    [CN_SQL_OBJ_BUCKET_PEEK] =
        "SELECT b.bucket_id, b.gen, (SELECT CAST(COALESCE(MAX(g.gen), 0) AS BIGINT) "
        "FROM cn_obj_gen g WHERE g.slot = ?2), "
        "(SELECT COUNT(*) FROM obj_version v WHERE v.bucket_id = b.bucket_id AND v.okey = ?3) "
        "FROM obj_bucket b WHERE b.name = ?1",
    [CN_SQL_OBJ_BUCKET_SETTINGS] =
        "SELECT owner, created_ms, acl, policy, pab FROM obj_bucket WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_ATTRS] =
        "SELECT name, value FROM obj_bucket_attr WHERE bucket_id = ? ORDER BY name",
    [CN_SQL_OBJ_BUCKET_GEN_BUMP] = "UPDATE obj_bucket SET gen = gen + 1 WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_NAME_TAKEN] = "SELECT 1 FROM obj_bucket WHERE name = ?",
    [CN_SQL_OBJ_BUCKET_INSERT] =
        "INSERT INTO obj_bucket (bucket_id, name, owner, created_ms, acl, policy, pab) "
        "VALUES (?, ?, ?, ?, ?, NULL, NULL)",
    [CN_SQL_OBJ_BUCKET_HAS_VERSION] = "SELECT 1 FROM obj_version WHERE bucket_id = ? LIMIT 1",
    [CN_SQL_OBJ_BUCKET_PARTS_DELETE] = "DELETE FROM obj_part WHERE upload_id IN "
                                       "(SELECT upload_id FROM obj_upload WHERE bucket_id = ?)",
    [CN_SQL_OBJ_BUCKET_UPLOADS_DELETE] = "DELETE FROM obj_upload WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_ATTRS_DELETE] = "DELETE FROM obj_bucket_attr WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_DELETE] = "DELETE FROM obj_bucket WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKETS_OF_OWNER] =
        "SELECT bucket_id, name, created_ms, gen, acl, policy, pab FROM obj_bucket "
        "WHERE owner = ? ORDER BY name",
    [CN_SQL_OBJ_BUCKET_SET_ACL] =
        "UPDATE obj_bucket SET acl = ?, gen = gen + 1 WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_POLICY] = "SELECT policy FROM obj_bucket WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_SET_POLICY] =
        "UPDATE obj_bucket SET policy = ?, gen = gen + 1 WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_SET_PAB] =
        "UPDATE obj_bucket SET pab = ?, gen = gen + 1 WHERE bucket_id = ?",
    [CN_SQL_OBJ_BUCKET_ATTR] = "SELECT value FROM obj_bucket_attr WHERE bucket_id = ? AND name = ?",
    [CN_SQL_OBJ_BUCKET_ATTR_DELETE] =
        "DELETE FROM obj_bucket_attr WHERE bucket_id = ? AND name = ?",
    [CN_SQL_OBJ_BUCKET_ATTR_UPSERT] =
        "INSERT INTO obj_bucket_attr (bucket_id, name, value) VALUES (?, ?, ?) "
        "ON CONFLICT (bucket_id, name) DO UPDATE SET value = excluded.value",
    /* ---- versions and segments */
    [CN_SQL_OBJ_VERSION_ROW] =
        "SELECT version_id, size, etag, sha256, content_type, umeta, mtime_ms, owner, acl, nparts, "
        "cksum_alg, cksum FROM obj_version WHERE bucket_id = ? AND okey = ?",
    [CN_SQL_OBJ_KEY_READ] =
        "SELECT b.bucket_id, b.gen, v.version_id, v.size, v.etag, v.sha256, v.content_type, "
        "v.umeta, v.mtime_ms, v.owner, v.acl, v.nparts, v.cksum_alg, v.cksum, s.digest, s.size "
        "FROM obj_bucket b "
        "LEFT JOIN obj_version v ON v.bucket_id = b.bucket_id AND v.okey = ? "
        "LEFT JOIN obj_segment s ON s.version_id = v.version_id "
        "WHERE b.name = ? ORDER BY s.seq",
    [CN_SQL_OBJ_VERSION_FIND] =
        "SELECT version_id, etag, owner, acl FROM obj_version WHERE bucket_id = ? AND okey = ?",
    [CN_SQL_OBJ_VERSION_DELETE] = "DELETE FROM obj_version WHERE version_id = ?",
    [CN_SQL_OBJ_VERSION_SET_ACL] = "UPDATE obj_version SET acl = ? WHERE version_id = ?",
    [CN_SQL_OBJ_VERSION_INSERT_PUT] =
        "INSERT INTO obj_version (version_id, bucket_id, okey, size, etag, sha256, content_type, "
        "mtime_ms, owner, acl, nparts, umeta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
    [CN_SQL_OBJ_VERSION_INSERT_COPY] =
        "INSERT INTO obj_version (version_id, bucket_id, okey, size, etag, sha256, "
        "content_type, mtime_ms, owner, acl, nparts, umeta) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_OBJ_VERSION_INSERT_MPU] =
        "INSERT INTO obj_version (version_id, bucket_id, okey, size, etag, sha256, content_type, "
        "mtime_ms, owner, acl, nparts, cksum_alg, cksum, umeta) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_OBJ_SEGMENTS_DELETE] = "DELETE FROM obj_segment WHERE version_id = ?",
    [CN_SQL_OBJ_SEGMENT_INSERT_PUT] =
        "INSERT INTO obj_segment (version_id, seq, digest, size, part_number, etag, sha256) "
        "VALUES (?, 0, ?, ?, 1, ?, ?)",
    [CN_SQL_OBJ_SEGMENT_INSERT_PART] =
        "INSERT INTO obj_segment (version_id, seq, digest, size, part_number, etag, sha256, "
        "cksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_OBJ_SEGMENTS_COPY] =
        "INSERT INTO obj_segment (version_id, seq, digest, size, part_number, etag, sha256) "
        "SELECT ?, seq, digest, size, part_number, etag, sha256 FROM obj_segment "
        "WHERE version_id = ?",
    [CN_SQL_OBJ_SEGMENTS_OF_VERSION] =
        "SELECT digest, size FROM obj_segment WHERE version_id = ? ORDER BY seq",
    [CN_SQL_OBJ_SEGMENT_PARTS] =
        "SELECT part_number, size, etag, sha256, cksum FROM obj_segment WHERE version_id = ? "
        "ORDER BY seq",
    /* ---- listing */
    [CN_SQL_OBJ_LIST_AFTER] =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts FROM obj_version "
        "WHERE bucket_id = ? AND okey > ? ORDER BY okey LIMIT ?",
    [CN_SQL_OBJ_LIST_FROM] =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts FROM obj_version "
        "WHERE bucket_id = ? AND okey >= ? ORDER BY okey LIMIT ?",
    [CN_SQL_OBJ_LIST_FIRST] =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts FROM obj_version "
        "WHERE bucket_id = ? ORDER BY okey LIMIT ?",
    /* ---- multipart uploads and parts */
    [CN_SQL_OBJ_UPLOAD_OPEN] = "SELECT bucket_id, okey, created_ms, cksum_alg FROM obj_upload "
                               "WHERE upload_id = ? AND done_ms IS NULL",
    [CN_SQL_OBJ_UPLOAD_ROW] =
        "SELECT content_type, umeta, owner, acl, cksum_alg, bucket_id, okey, created_ms, "
        "done_ms, done_etag, done_cksum, done_version, done_sha256 FROM obj_upload "
        "WHERE upload_id = ?",
    [CN_SQL_OBJ_UPLOAD_INSERT] =
        "INSERT INTO obj_upload (upload_id, bucket_id, okey, content_type, owner, acl, "
        "created_ms, cksum_alg, umeta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_OBJ_UPLOAD_MARK_DONE] =
        "UPDATE obj_upload SET done_ms = ?, done_etag = ?, done_cksum = ?, done_version = ?, "
        "done_sha256 = ? WHERE upload_id = ?",
    [CN_SQL_OBJ_UPLOAD_DELETE] = "DELETE FROM obj_upload WHERE upload_id = ?",
    [CN_SQL_OBJ_UPLOADS_OF_BUCKET] =
        "SELECT okey, upload_id, owner, created_ms FROM obj_upload WHERE bucket_id = ? "
        "AND created_ms > ? AND done_ms IS NULL ORDER BY okey, created_ms, upload_id",
    [CN_SQL_OBJ_UPLOADS_TO_SWEEP] =
        "SELECT upload_id FROM obj_upload WHERE (done_ms IS NULL AND created_ms <= ?) "
        "OR done_ms <= ? ORDER BY created_ms LIMIT 64",
    [CN_SQL_OBJ_PARTS_OF_UPLOAD] =
        "SELECT part_number, digest, size, etag, md5, sha256, cksum FROM obj_part "
        "WHERE upload_id = ? ORDER BY part_number",
    [CN_SQL_OBJ_PARTS_PAGE] =
        "SELECT part_number, size, etag, sha256, mtime_ms, cksum FROM obj_part "
        "WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?",
    [CN_SQL_OBJ_PART_DIGEST] =
        "SELECT digest FROM obj_part WHERE upload_id = ? AND part_number = ?",
    [CN_SQL_OBJ_PART_UPSERT] =
        "INSERT INTO obj_part (upload_id, part_number, digest, size, etag, md5, sha256, mtime_ms, "
        "cksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (upload_id, part_number) DO UPDATE "
        "SET digest = excluded.digest, size = excluded.size, etag = excluded.etag, "
        "md5 = excluded.md5, sha256 = excluded.sha256, mtime_ms = excluded.mtime_ms, "
        "cksum = excluded.cksum",
    [CN_SQL_OBJ_PARTS_UNLISTED_DELETE] =
        "DELETE FROM obj_part WHERE upload_id = ? AND part_number NOT IN "
        "(SELECT part_number FROM obj_segment WHERE version_id = ?)",
    [CN_SQL_OBJ_UPLOAD_PARTS_DELETE] = "DELETE FROM obj_part WHERE upload_id = ?",
    /* ---- versioning (statements of the versioning work go here) */
    [CN_SQL_OBJ_V_CUR_OF_KEY] =
        "SELECT version_id, vnull FROM obj_version WHERE bucket_id = ? AND okey = ?",
    [CN_SQL_OBJ_V_CUR_BY_ID] =
        "SELECT vnull FROM obj_version WHERE version_id = ? AND bucket_id = ? AND okey = ?",
    [CN_SQL_OBJ_V_HIST_BY_ID] =
        "SELECT marker, vnull FROM obj_history WHERE version_id = ? AND bucket_id = ? AND okey = ?",
    [CN_SQL_OBJ_V_HIST_NEWEST] =
        "SELECT version_id, marker, vnull FROM obj_history "
        "WHERE bucket_id = ? AND okey = ? ORDER BY version_id DESC LIMIT 1",
    [CN_SQL_OBJ_V_HIST_NULL] = "SELECT version_id, marker FROM obj_history "
                               "WHERE bucket_id = ? AND okey = ? AND vnull = 1",
    [CN_SQL_OBJ_V_TO_HISTORY] =
        "INSERT INTO obj_history (version_id, bucket_id, okey, marker, vnull, size, etag, sha256, "
        "content_type, umeta, mtime_ms, owner, acl, nparts, cksum_alg, cksum, noncurrent_ms) "
        "SELECT version_id, bucket_id, okey, 0, vnull, size, etag, sha256, content_type, umeta, "
        "mtime_ms, owner, acl, nparts, cksum_alg, cksum, CAST(? AS BIGINT) FROM obj_version "
        "WHERE version_id = ?",
    [CN_SQL_OBJ_V_FROM_HISTORY] =
        "INSERT INTO obj_version (version_id, bucket_id, okey, vnull, size, etag, sha256, "
        "content_type, umeta, mtime_ms, owner, acl, nparts, cksum_alg, cksum) "
        "SELECT version_id, bucket_id, okey, vnull, size, etag, sha256, content_type, umeta, "
        "mtime_ms, owner, acl, nparts, cksum_alg, cksum FROM obj_history "
        "WHERE version_id = ? AND marker = 0",
    [CN_SQL_OBJ_V_HIST_DELETE] = "DELETE FROM obj_history WHERE version_id = ?",
    [CN_SQL_OBJ_V_MARKER_INSERT] =
        "INSERT INTO obj_history (version_id, bucket_id, okey, marker, vnull, size, etag, sha256, "
        "content_type, umeta, mtime_ms, owner, acl, nparts, cksum_alg, cksum, noncurrent_ms) "
        "VALUES (?, ?, ?, 1, ?, 0, '', '', '', NULL, ?, ?, NULL, 0, NULL, NULL, 0)",
    [CN_SQL_OBJ_V_HIST_NONCURRENT] =
        "UPDATE obj_history SET noncurrent_ms = ? WHERE version_id = ? AND noncurrent_ms = 0",
    [CN_SQL_OBJ_V_SET_VNULL] = "UPDATE obj_version SET vnull = ? WHERE version_id = ?",
    [CN_SQL_OBJ_V_TAGS_DELETE] = "DELETE FROM obj_version_tag WHERE version_id = ?",
    [CN_SQL_OBJ_V_LOCK_DELETE] = "DELETE FROM obj_version_lock WHERE version_id = ?",
    [CN_SQL_OBJ_V_TAG_INSERT] =
        "INSERT INTO obj_version_tag (version_id, tkey, tvalue) VALUES (?, ?, ?)",
    [CN_SQL_OBJ_V_LOCK_INSERT] = "INSERT INTO obj_version_lock (version_id, mode, retain_until_ms, "
                                 "legal_hold) VALUES (?, ?, ?, ?)",
    [CN_SQL_OBJ_V_LOCK_ROW] =
        "SELECT mode, retain_until_ms, legal_hold FROM obj_version_lock WHERE version_id = ?",
    [CN_SQL_OBJ_V_CUR_ROW] =
        "SELECT version_id, size, etag, sha256, content_type, umeta, mtime_ms, owner, acl, nparts, "
        "cksum_alg, cksum, 0, vnull FROM obj_version WHERE version_id = ?",
    [CN_SQL_OBJ_V_HIST_ROW] =
        "SELECT version_id, size, etag, sha256, content_type, umeta, mtime_ms, owner, acl, nparts, "
        "cksum_alg, cksum, marker, vnull FROM obj_history WHERE version_id = ?",
    [CN_SQL_OBJ_V_BUCKET_HAS_HISTORY] = "SELECT 1 FROM obj_history WHERE bucket_id = ? LIMIT 1",
    [CN_SQL_OBJ_V_NEXT_CUR_AFTER] =
        "SELECT okey FROM obj_version WHERE bucket_id = ? AND okey > ? ORDER BY okey LIMIT 1",
    [CN_SQL_OBJ_V_NEXT_CUR_FROM] =
        "SELECT okey FROM obj_version WHERE bucket_id = ? AND okey >= ? ORDER BY okey LIMIT 1",
    [CN_SQL_OBJ_V_NEXT_HIST_AFTER] =
        "SELECT okey FROM obj_history WHERE bucket_id = ? AND okey > ? ORDER BY okey LIMIT 1",
    [CN_SQL_OBJ_V_NEXT_HIST_FROM] =
        "SELECT okey FROM obj_history WHERE bucket_id = ? AND okey >= ? ORDER BY okey LIMIT 1",
    [CN_SQL_OBJ_V_LIST_CUR_KEY] =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts, version_id, "
        "vnull, 0 FROM obj_version WHERE bucket_id = ? AND okey = ?",
    [CN_SQL_OBJ_V_LIST_HIST_KEY] =
        "SELECT okey, size, etag, sha256, mtime_ms, content_type, owner, nparts, version_id, "
        "vnull, marker FROM obj_history WHERE bucket_id = ? AND okey = ? "
        "AND version_id < ? ORDER BY version_id DESC LIMIT ?",
    [CN_SQL_OBJ_V_UPLOAD_SET_ATTRS] = "UPDATE obj_upload SET tags = ?, lock_mode = ?, "
                                      "lock_until_ms = ?, legal_hold = ? WHERE upload_id = ?",
    [CN_SQL_OBJ_V_UPLOAD_ATTRS] =
        "SELECT tags, lock_mode, lock_until_ms, legal_hold FROM obj_upload WHERE upload_id = ?",
    [CN_SQL_OBJ_V_KEY_READ] = KEY_READ_COLS KEY_READ_FROM,
    /* The same, with (after the tag count) the stamp of its head read in its
     * own snapshot, as CN_SQL_OBJGEN_HLOAD reads it: the sum of the bucket
     * slot's (?3) and key slot's (?4) generations, then the bucket slot's
     * (rows mode, objects/gen.c 2). */
    [CN_SQL_OBJ_V_KEY_READ_GEN] =
        KEY_READ_COLS ", (SELECT CAST(COALESCE(SUM(g.gen), 0) AS BIGINT) FROM cn_obj_gen g "
                      "WHERE g.slot IN (?3, ?4)), "
                      "(SELECT CAST(COALESCE(MAX(g.gen), 0) AS BIGINT) FROM cn_obj_gen g "
                      "WHERE g.slot = ?3) " KEY_READ_FROM,
    [CN_SQL_OBJ_V_TAGS_COUNT] = "SELECT COUNT(*) FROM obj_version_tag WHERE version_id = ?",
    [CN_SQL_OBJ_V_TAGS_COPY] =
        "INSERT INTO obj_version_tag (version_id, tkey, tvalue) "
        "SELECT CAST(? AS BIGINT), tkey, tvalue FROM obj_version_tag WHERE version_id = ?",
    /* ---- tags and lifecycle (statements of the tagging/lifecycle work go here) */
    [CN_SQL_OBJ_TAG_LIST] =
        "SELECT tkey, tvalue FROM obj_version_tag WHERE version_id = ? ORDER BY tkey",
    [CN_SQL_OBJ_TAG_COUNT] = "SELECT COUNT(*) FROM obj_version_tag WHERE version_id = ?",
    [CN_SQL_OBJ_TAG_INSERT] =
        "INSERT INTO obj_version_tag (version_id, tkey, tvalue) VALUES (?, ?, ?)",
    [CN_SQL_OBJ_TAG_DELETE] = "DELETE FROM obj_version_tag WHERE version_id = ?",
    [CN_SQL_OBJ_TAG_COPY] = "INSERT INTO obj_version_tag (version_id, tkey, tvalue) "
                            "SELECT ?, tkey, tvalue FROM obj_version_tag WHERE version_id = ?",
    [CN_SQL_OBJ_TAG_OWNER_CUR] = "SELECT owner, acl FROM obj_version WHERE version_id = ?",
    [CN_SQL_OBJ_TAG_OWNER_HIST] = "SELECT owner, acl FROM obj_history WHERE version_id = ?",
    /* ---- object lock (statements of the object-lock work go here) */
    [CN_SQL_OBJ_LOCK_UPSERT] =
        "INSERT INTO obj_version_lock (version_id, mode, retain_until_ms, legal_hold) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (version_id) DO UPDATE SET mode = excluded.mode, "
        "retain_until_ms = excluded.retain_until_ms, legal_hold = excluded.legal_hold",
    /* ---- the lifecycle worker */
    [CN_SQL_OBJ_LC_BUCKETS] = "SELECT a.bucket_id, b.name, b.owner, a.value FROM obj_bucket_attr a "
                              "JOIN obj_bucket b ON b.bucket_id = a.bucket_id "
                              "WHERE a.name = 'lifecycle' ORDER BY a.bucket_id",
    [CN_SQL_OBJ_LC_STATE] = "SELECT pass_ms, cursor FROM obj_lifecycle WHERE bucket_id = ?",
    [CN_SQL_OBJ_LC_STATE_DELETE] = "DELETE FROM obj_lifecycle WHERE bucket_id = ?",
    [CN_SQL_OBJ_LC_STATE_PUT] =
        "INSERT INTO obj_lifecycle (bucket_id, pass_ms, cursor) VALUES (?, ?, ?) "
        "ON CONFLICT (bucket_id) DO UPDATE SET pass_ms = excluded.pass_ms, cursor = "
        "excluded.cursor",
    [CN_SQL_OBJ_LC_KEYS] = "SELECT okey FROM obj_version WHERE bucket_id = ? AND okey > ? "
                           "UNION SELECT okey FROM obj_history WHERE bucket_id = ? AND okey > ? "
                           "ORDER BY 1 LIMIT ?",
    [CN_SQL_OBJ_LC_CUR] =
        "SELECT version_id, size, mtime_ms FROM obj_version WHERE bucket_id = ? AND okey = ?",
    [CN_SQL_OBJ_LC_HIST] = "SELECT version_id, marker, noncurrent_ms, size FROM obj_history "
                           "WHERE bucket_id = ? AND okey = ? AND version_id < ? "
                           "ORDER BY version_id DESC LIMIT ?",
    [CN_SQL_OBJ_LC_UPLOADS] = "SELECT okey, upload_id, created_ms FROM obj_upload "
                              "WHERE bucket_id = ? AND done_ms IS NULL AND upload_id > ? "
                              "ORDER BY upload_id LIMIT ?",
    /* The lease row: pass_ms its expiry, cursor its holder. */
    [CN_SQL_OBJ_LC_LEASE_SEED] = "INSERT INTO obj_lifecycle (bucket_id, pass_ms, cursor) "
                                 "VALUES (0, 0, NULL) ON CONFLICT (bucket_id) DO NOTHING",
    [CN_SQL_OBJ_LC_LEASE] = "UPDATE obj_lifecycle SET cursor = ?, pass_ms = ? "
                            "WHERE bucket_id = 0 AND (pass_ms < ? OR cursor = ?)",
    /* ---- usage totals (step v5) */
    [CN_SQL_OBJ_USAGE] =
        "SELECT CAST(COALESCE(SUM(o), 0) AS BIGINT), CAST(COALESCE(SUM(v), 0) AS BIGINT), "
        "CAST(COALESCE(SUM(b), 0) AS BIGINT) FROM ("
        "SELECT objects AS o, versions AS v, bytes AS b FROM obj_usage WHERE bucket_id = ?1 "
        "UNION ALL SELECT d_objects, d_versions, d_bytes FROM obj_usage_delta "
        "WHERE bucket_id = ?1) u",
    [CN_SQL_OBJ_USAGE_DELETE] = "DELETE FROM obj_usage WHERE bucket_id = ?",
    [CN_SQL_OBJ_USAGE_DELTA_DELETE] = "DELETE FROM obj_usage_delta WHERE bucket_id = ?",
};

const cn_meta_batch_sql_t cn__sql_obj_engine[CN_SQL_OBJ_E_COUNT] = {
    /* Schema v6. */
    [CN_SQL_OBJ_E_VERSION_NEXT] = {
        .sqlite = "UPDATE obj_seq SET value = value + 1 WHERE name = 'version' RETURNING value",
        .pg = "SELECT nextval('obj_version_id')",
    },
    /* After rows were copied in with their ids (fleet import, tests): the
     * next id past every id stored or counted, never back. */
    [CN_SQL_OBJ_E_VERSION_SYNC] = {
        .sqlite = "DELETE FROM obj_seq WHERE 0 = 1",
        .pg = "SELECT setval('obj_version_id', GREATEST("
              "(SELECT last_value FROM obj_version_id), "
              "(SELECT value FROM obj_seq WHERE name = 'version'), "
              "(SELECT COALESCE(MAX(version_id), 0) FROM obj_version), "
              "(SELECT COALESCE(MAX(version_id), 0) FROM obj_history)))",
    },
    [CN_SQL_OBJ_E_NOW_MS] = {
        .sqlite = "SELECT " CN_SQL_NOW_MS_SQLITE,
        .pg = "SELECT " CN_SQL_NOW_MS_PG,
    },
    /* One round trip for the put's two first questions on PostgreSQL. */
    [CN_SQL_OBJ_E_VERSION_FIND_NEXT] = {
        .sqlite = "SELECT v.version_id, v.etag, v.owner, v.acl, NULL FROM (SELECT 1) n"
                  " LEFT JOIN obj_version v ON v.bucket_id = ?1 AND v.okey = ?2",
        .pg = "SELECT v.version_id, v.etag, v.owner, v.acl, n.id"
              " FROM (SELECT nextval('obj_version_id') AS id) n"
              " LEFT JOIN obj_version v ON v.bucket_id = ?1 AND v.okey = ?2",
    },
    /* A new version row (a put's: nparts 0, no checksum; a multipart
     * completion's) for a key with no current one, its id taken in the
     * statement; no row back when the key has one.  It reads no range
     * of the (bucket_id, okey) index, as the look above does: under
     * SERIALIZABLE that read's predicate lock on the index page made any
     * two writers of new keys on one page fail one of them with 40001.
     * SQLite (one writer, nothing to avoid) never claims: no row back. */
    [CN_SQL_OBJ_E_VERSION_CLAIM] = {
        .sqlite = "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 WHERE 0 = 1",
        .pg = "INSERT INTO obj_version (version_id, bucket_id, okey, size, etag, sha256, "
              "content_type, mtime_ms, owner, acl, nparts, cksum_alg, cksum, umeta) VALUES "
              "(nextval('obj_version_id'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
              "?13) ON CONFLICT (bucket_id, okey) DO NOTHING RETURNING version_id",
    },
    /* SQLite keeps no deltas (its triggers write the base): nothing to do. */
    [CN_SQL_OBJ_E_USAGE_FOLD] = {
        .sqlite = "DELETE FROM obj_usage_delta WHERE 0 = 1",
        /* One statement, so a delta is either folded and gone or neither:
         * the DELETE takes the rows committed when it began (a writer's
         * later rows stay for the next fold), and a bucket deleted since
         * its deltas were written gets no base row back. */
        .pg = "WITH d AS (DELETE FROM obj_usage_delta "
              "RETURNING bucket_id, d_objects, d_versions, d_bytes), "
              "s AS (SELECT bucket_id, SUM(d_objects) AS o, SUM(d_versions) AS v, "
              "SUM(d_bytes) AS b FROM d GROUP BY bucket_id) "
              "INSERT INTO obj_usage (bucket_id, objects, versions, bytes) "
              "SELECT s.bucket_id, s.o, s.v, s.b FROM s "
              "JOIN obj_bucket k ON k.bucket_id = s.bucket_id "
              "ON CONFLICT (bucket_id) DO UPDATE SET objects = obj_usage.objects + "
              "excluded.objects, versions = obj_usage.versions + excluded.versions, "
              "bytes = obj_usage.bytes + excluded.bytes",
    },
};

const cn_sql_set_t cn__sql_obj_set = {
    .component = "objects",
    .schema = schema,
    .nschema = sizeof schema / sizeof schema[0],
    .stmts = cn__sql_obj,
    .nstmts = CN_SQL_OBJ_COUNT,
    .after_import = &cn__sql_obj_engine[CN_SQL_OBJ_E_VERSION_SYNC],
};
