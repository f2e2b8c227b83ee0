/* The objects service's statements (the files of src/objects): buckets and
 * their settings, object versions and their segments, multipart uploads and
 * parts, id counters and blob liveness.  Each comment gives the parameters,
 * in order, then the result columns.  See sql.h; no statement here is built
 * or chosen at run time. */
#ifndef CAIRN_META_SQL_OBJECTS_H
#define CAIRN_META_SQL_OBJECTS_H

#include "meta/sql/sql.h"

enum {
    /* ---- counters and liveness */
    /* (name): adds 1 to counter name */
    CN_SQL_OBJ_SEQ_BUMP,
    /* (name) -> value */
    CN_SQL_OBJ_SEQ_VALUE,
    /* (digest) -> 1 when a version's segment names it */
    CN_SQL_OBJ_SEGMENT_DIGEST_LIVE,
    /* (digest) -> 1 when an upload's part names it */
    CN_SQL_OBJ_PART_DIGEST_LIVE,
    /* ---- buckets */
    /* (name) -> bucket_id, gen: what a cached bucket is validated by */
    CN_SQL_OBJ_BUCKET_GEN,
    /* (name, slot, key) -> bucket_id, gen, the slot's cn_obj_gen gen (0:
     * none), key's current versions (0 or 1): a put's pre-read in rows mode */
    CN_SQL_OBJ_BUCKET_PEEK,
    /* (bucket_id) -> owner, created_ms, acl, policy, pab */
    CN_SQL_OBJ_BUCKET_SETTINGS,
    /* (bucket_id) -> name, value: its named settings; by name */
    CN_SQL_OBJ_BUCKET_ATTRS,
    /* (bucket_id): the generation bump of a settings change other than
     * acl, policy or pab (whose statements bump it themselves) */
    CN_SQL_OBJ_BUCKET_GEN_BUMP,
    /* (name) -> 1 when a bucket has it */
    CN_SQL_OBJ_BUCKET_NAME_TAKEN,
    /* (bucket_id) -> 1 when the bucket exists */
    /* (bucket_id, name, owner, created_ms, acl); no policy, no pab */
    CN_SQL_OBJ_BUCKET_INSERT,
    /* (bucket_id) -> 1 when any version is in it */
    CN_SQL_OBJ_BUCKET_HAS_VERSION,
    /* (bucket_id): the parts of its uploads */
    CN_SQL_OBJ_BUCKET_PARTS_DELETE,
    /* (bucket_id): its uploads */
    CN_SQL_OBJ_BUCKET_UPLOADS_DELETE,
    /* (bucket_id): its named settings */
    CN_SQL_OBJ_BUCKET_ATTRS_DELETE,
    /* (bucket_id) */
    CN_SQL_OBJ_BUCKET_DELETE,
    /* (owner) -> bucket_id, name, created_ms, gen, acl, policy, pab; by name */
    CN_SQL_OBJ_BUCKETS_OF_OWNER,
    /* (acl, bucket_id); bumps gen, as SET_POLICY and SET_PAB do */
    CN_SQL_OBJ_BUCKET_SET_ACL,
    /* (bucket_id) -> policy */
    CN_SQL_OBJ_BUCKET_POLICY,
    /* (policy or NULL, bucket_id) */
    CN_SQL_OBJ_BUCKET_SET_POLICY,
    /* (pab bits or NULL, bucket_id) */
    CN_SQL_OBJ_BUCKET_SET_PAB,
    /* (bucket_id, name) -> value */
    CN_SQL_OBJ_BUCKET_ATTR,
    /* (bucket_id, name) */
    CN_SQL_OBJ_BUCKET_ATTR_DELETE,
    /* (bucket_id, name, value): inserted or replaced */
    CN_SQL_OBJ_BUCKET_ATTR_UPSERT,
    /* ---- versions and segments */
    /* (bucket_id, okey) -> the CN__VCOL_* columns (src/objects/objects_int.h) */
    CN_SQL_OBJ_VERSION_ROW,
    /* (okey, bucket name) -> bucket_id, gen, then the CN__VCOL_* columns from
     * column 2 (NULL when the key has no version), then digest, size of each
     * segment: one row per segment, by seq (one row with NULL segment
     * columns for none).  A GET's one statement (src/objects/read.c) */
    CN_SQL_OBJ_KEY_READ,
    /* (bucket_id, okey) -> version_id, etag, owner, acl */
    CN_SQL_OBJ_VERSION_FIND,
    /* (version_id) */
    CN_SQL_OBJ_VERSION_DELETE,
    /* (acl, version_id) */
    CN_SQL_OBJ_VERSION_SET_ACL,
    /* (version_id, bucket_id, okey, size, etag, sha256, content_type, mtime_ms,
     * owner, acl, umeta); nparts 0 */
    CN_SQL_OBJ_VERSION_INSERT_PUT,
    /* (version_id, bucket_id, okey, size, etag, sha256, content_type,
     * mtime_ms, owner, acl, nparts, umeta) */
    CN_SQL_OBJ_VERSION_INSERT_COPY,
    /* (version_id, bucket_id, okey, size, etag, sha256, content_type, mtime_ms,
     * owner, acl, nparts, cksum_alg, cksum, umeta) */
    CN_SQL_OBJ_VERSION_INSERT_MPU,
    /* (version_id): all its segments */
    CN_SQL_OBJ_SEGMENTS_DELETE,
    /* (version_id, digest, size, etag, sha256): seq 0, part 1 */
    CN_SQL_OBJ_SEGMENT_INSERT_PUT,
    /* (version_id, seq, digest, size, part_number, etag, sha256, cksum) */
    CN_SQL_OBJ_SEGMENT_INSERT_PART,
    /* (new version_id, source version_id): the source's segments, copied */
    CN_SQL_OBJ_SEGMENTS_COPY,
    /* (version_id) -> digest, size; by seq */
    CN_SQL_OBJ_SEGMENTS_OF_VERSION,
    /* (version_id) -> part_number, size, etag, sha256, cksum; by seq */
    CN_SQL_OBJ_SEGMENT_PARTS,
    /* ---- listing: one bounded range scan of a bucket's keys, each -> okey, size, etag,
     * sha256, mtime_ms, content_type, owner, nparts; by okey */
    /* (bucket_id, okey, limit): the keys after okey */
    CN_SQL_OBJ_LIST_AFTER,
    /* (bucket_id, okey, limit): okey and the keys after it */
    CN_SQL_OBJ_LIST_FROM,
    /* (bucket_id, limit): from the first key */
    CN_SQL_OBJ_LIST_FIRST,
    /* ---- multipart uploads and parts */
    /* (upload_id) -> bucket_id, okey, created_ms, cksum_alg; not completed */
    CN_SQL_OBJ_UPLOAD_OPEN,
    /* (upload_id) -> content_type, umeta, owner, acl, cksum_alg, bucket_id, okey,
     * created_ms, done_ms, done_etag, done_cksum, done_version, done_sha256 */
    CN_SQL_OBJ_UPLOAD_ROW,
    /* (upload_id, bucket_id, okey, content_type, owner, acl, created_ms,
     * cksum_alg, umeta) */
    CN_SQL_OBJ_UPLOAD_INSERT,
    /* (done_ms, done_etag, done_cksum, done_version, done_sha256, upload_id) */
    CN_SQL_OBJ_UPLOAD_MARK_DONE,
    /* (upload_id) */
    CN_SQL_OBJ_UPLOAD_DELETE,
    /* (bucket_id, created after) -> okey, upload_id, owner, created_ms; not
     * completed; by okey, created_ms, upload_id */
    CN_SQL_OBJ_UPLOADS_OF_BUCKET,
    /* (created cutoff, done cutoff) -> upload_id; at most 64, by created_ms */
    CN_SQL_OBJ_UPLOADS_TO_SWEEP,
    /* (upload_id) -> part_number, digest, size, etag, md5, sha256, cksum; by
     * part_number */
    CN_SQL_OBJ_PARTS_OF_UPLOAD,
    /* (upload_id, after part_number, limit) -> part_number, size, etag, sha256,
     * mtime_ms, cksum; by part_number */
    CN_SQL_OBJ_PARTS_PAGE,
    /* (upload_id, part_number) -> digest */
    CN_SQL_OBJ_PART_DIGEST,
    /* (upload_id, part_number, digest, size, etag, md5, sha256, mtime_ms, cksum):
     * inserted or replaced */
    CN_SQL_OBJ_PART_UPSERT,
    /* (upload_id, version_id): its parts that are not the version's */
    CN_SQL_OBJ_PARTS_UNLISTED_DELETE,
    /* (upload_id): all its parts */
    CN_SQL_OBJ_UPLOAD_PARTS_DELETE,
    /* ---- versioning (statements of the versioning work go here) */
    /* (bucket_id, okey): the current row's (version_id, vnull) */
    CN_SQL_OBJ_V_CUR_OF_KEY,
    /* (version_id, bucket_id, okey): vnull of that current row */
    CN_SQL_OBJ_V_CUR_BY_ID,
    /* (version_id, bucket_id, okey): (marker, vnull) of that history row */
    CN_SQL_OBJ_V_HIST_BY_ID,
    /* (bucket_id, okey): the key's newest history row (version_id, marker, vnull) */
    CN_SQL_OBJ_V_HIST_NEWEST,
    /* (bucket_id, okey): the key's null version in history (version_id, marker) */
    CN_SQL_OBJ_V_HIST_NULL,
    /* (noncurrent_ms, version_id): copies a current row into obj_history */
    CN_SQL_OBJ_V_TO_HISTORY,
    /* (version_id): copies a non-marker history row back into obj_version */
    CN_SQL_OBJ_V_FROM_HISTORY,
    /* (version_id) */
    CN_SQL_OBJ_V_HIST_DELETE,
    /* (version_id, bucket_id, okey, vnull, mtime_ms, owner): a delete marker */
    CN_SQL_OBJ_V_MARKER_INSERT,
    /* (noncurrent_ms, version_id): a latest marker stops being latest */
    CN_SQL_OBJ_V_HIST_NONCURRENT,
    /* (vnull, version_id) */
    CN_SQL_OBJ_V_SET_VNULL,
    /* (version_id) */
    CN_SQL_OBJ_V_TAGS_DELETE,
    CN_SQL_OBJ_V_LOCK_DELETE,
    /* (version_id, tkey, tvalue) */
    CN_SQL_OBJ_V_TAG_INSERT,
    /* (version_id, mode, retain_until_ms, legal_hold) */
    CN_SQL_OBJ_V_LOCK_INSERT,
    /* (version_id): (mode, retain_until_ms, legal_hold) */
    CN_SQL_OBJ_V_LOCK_ROW,
    /* (version_id): CN__VCOL_* columns then (marker, vnull), either table */
    CN_SQL_OBJ_V_CUR_ROW,
    CN_SQL_OBJ_V_HIST_ROW,
    /* (bucket_id): any history row (a noncurrent version or a marker) */
    CN_SQL_OBJ_V_BUCKET_HAS_HISTORY,
    /* (bucket_id, okey): the next key after / from okey, in either table */
    CN_SQL_OBJ_V_NEXT_CUR_AFTER,
    CN_SQL_OBJ_V_NEXT_CUR_FROM,
    CN_SQL_OBJ_V_NEXT_HIST_AFTER,
    CN_SQL_OBJ_V_NEXT_HIST_FROM,
    /* (bucket_id, okey): the listing columns of the current row */
    CN_SQL_OBJ_V_LIST_CUR_KEY,
    /* (bucket_id, okey, below, limit): the key's history rows with
     * version_id < below, newest first */
    CN_SQL_OBJ_V_LIST_HIST_KEY,
    /* (tags, lock_mode, lock_until_ms, legal_hold, upload_id) */
    CN_SQL_OBJ_V_UPLOAD_SET_ATTRS,
    /* (upload_id): (tags, lock_mode, lock_until_ms, legal_hold) */
    CN_SQL_OBJ_V_UPLOAD_ATTRS,
    /* KEY_READ with the version's vnull last: the current-version read */
    CN_SQL_OBJ_V_KEY_READ,
    /* KEY_READ with its head's stamp (?3 bucket slot, ?4 key slot) last */
    CN_SQL_OBJ_V_KEY_READ_GEN,
    /* (version_id, from version_id): a copy's tags are its source's */
    CN_SQL_OBJ_V_TAGS_COPY,
    /* (version_id): how many tags it has */
    CN_SQL_OBJ_V_TAGS_COUNT,
    /* ---- tags and lifecycle (statements of the tagging/lifecycle work go here) */
    /* (version_id): tkey, tvalue of the version's tags, by key */
    CN_SQL_OBJ_TAG_LIST,
    /* (version_id): COUNT(*) of its tags (the primary key's prefix) */
    CN_SQL_OBJ_TAG_COUNT,
    /* (version_id, tkey, tvalue) */
    CN_SQL_OBJ_TAG_INSERT,
    /* (version_id): all its tags */
    CN_SQL_OBJ_TAG_DELETE,
    /* (to version_id, from version_id): copies the tags of one version to another */
    CN_SQL_OBJ_TAG_COPY,
    /* (version_id): owner, acl of a current / a history version */
    CN_SQL_OBJ_TAG_OWNER_CUR,
    CN_SQL_OBJ_TAG_OWNER_HIST,
    /* ---- object lock (statements of the object-lock work go here) */
    /* (version_id, mode, retain_until_ms, legal_hold): insert or replace (a
     * row is read and removed by CN_SQL_OBJ_V_LOCK_ROW / _V_LOCK_DELETE) */
    CN_SQL_OBJ_LOCK_UPSERT,
    /* ---- the lifecycle worker (src/objects/lifecycle_run.c) */
    /* (): bucket_id, name, owner, value of every bucket with a lifecycle setting */
    CN_SQL_OBJ_LC_BUCKETS,
    /* (bucket_id): pass_ms, cursor of its worker state */
    CN_SQL_OBJ_LC_STATE,
    /* (bucket_id, pass_ms, cursor): insert or replace its worker state */
    CN_SQL_OBJ_LC_STATE_PUT,
    /* (bucket_id): its worker state, with the bucket */
    CN_SQL_OBJ_LC_STATE_DELETE,
    /* (bucket_id, after, bucket_id, after, limit): the next keys with a
     * version or a marker, in byte order */
    CN_SQL_OBJ_LC_KEYS,
    /* (bucket_id, okey): version_id, size, mtime_ms of its current version */
    CN_SQL_OBJ_LC_CUR,
    /* (bucket_id, okey, below, limit): version_id, marker, noncurrent_ms,
     * size of its history rows with version_id < below, newest first */
    CN_SQL_OBJ_LC_HIST,
    /* (bucket_id, after upload_id, limit): okey, upload_id, created_ms of
     * unfinished uploads, by upload_id */
    CN_SQL_OBJ_LC_UPLOADS,
    /* (): makes the fleet's lifecycle lease row (the state row of bucket_id
     * 0: pass_ms its expiry, cursor its holder) unless it exists */
    CN_SQL_OBJ_LC_LEASE_SEED,
    /* (holder, until_ms, now_ms, holder): takes or renews the lease when
     * expired or already held (then LC_STATE of 0 names holder) */
    CN_SQL_OBJ_LC_LEASE,
    /* (bucket_id): objects, versions, bytes of its usage (base + deltas) */
    CN_SQL_OBJ_USAGE,
    /* (bucket_id): its usage base row, with the bucket */
    CN_SQL_OBJ_USAGE_DELETE,
    /* (bucket_id): its usage deltas, with the bucket */
    CN_SQL_OBJ_USAGE_DELTA_DELETE,
    CN_SQL_OBJ_COUNT
};

/* Statements written once per engine (cn_meta_batch_text picks one). */
enum {
    /* (): folds every committed usage delta into its bucket's base row */
    CN_SQL_OBJ_E_USAGE_FOLD,
    /* () -> the next version id (unique, increasing, gaps allowed) */
    CN_SQL_OBJ_E_VERSION_NEXT,
    /* (): moves the version ids past every id stored (after a copy) */
    CN_SQL_OBJ_E_VERSION_SYNC,
    /* (bucket_id, key) -> VERSION_FIND's columns (NULL: no current
     * version), then the next version id where a read can take it
     * (PostgreSQL's nextval; NULL on SQLite, whose counter is an UPDATE):
     * always one row */
    CN_SQL_OBJ_E_VERSION_FIND_NEXT,
    /* (bucket_id, key, size, etag, sha256, content_type, mtime_ms, owner,
     * acl, nparts, cksum_alg, cksum, umeta) -> the new version's id when key
     * had no current version and the row went in; no row otherwise (always
     * on SQLite) */
    CN_SQL_OBJ_E_VERSION_CLAIM,
    /* () -> the database's clock, Unix ms (the lifecycle lease's times: on
     * PostgreSQL the server's, so the nodes' clocks need not agree) */
    CN_SQL_OBJ_E_NOW_MS,
    CN_SQL_OBJ_E_COUNT
};

extern const char *const cn__sql_obj[CN_SQL_OBJ_COUNT];
extern const cn_meta_batch_sql_t cn__sql_obj_engine[CN_SQL_OBJ_E_COUNT];
extern const cn_sql_set_t cn__sql_obj_set;

#endif
