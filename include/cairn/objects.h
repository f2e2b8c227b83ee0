/* cairn objects: buckets, keys and object versions that reference blobs in the
 * store; multipart uploads; the per-bucket and per-object access state (ACL,
 * policy, public access block, generic named settings).
 *
 * The same service serves every object face (Jay native, S3 HTTP): it speaks
 * in semantic requests and results, never in sockets or wire layouts, and it
 * asks authz for one decision per operation.  Bytes are written once into the
 * store; a copy or a completed multipart upload references existing blobs
 * instead of copying them.  A mutation returns only after its blob is durable
 * (published by the store) and its metadata transaction has committed, so an
 * interrupted upload leaves nothing visible.  docs/objects.md has the schema,
 * the S3 semantics kept and the choices made.
 *
 * Threads: a cn_objects_t is safe to use from any number of threads at once;
 * a put session or a reader belongs to one thread at a time.
 */
#ifndef CAIRN_OBJECTS_H
#define CAIRN_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/crypto.h"
#include "cairn/identity.h"
#include "cairn/authz.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_objects cn_objects_t;
typedef struct cn_store cn_store_t; /* cairn/store.h */
typedef struct cn_meta cn_meta_t;   /* cairn/meta.h */

#define CN_BUCKET_NAME_MAX 63
#define CN_OBJECT_KEY_MAX 1024 /* bytes of UTF-8, as S3 */
#define CN_UPLOAD_ID_MAX 64
#define CN_ETAG_MAX 48           /* 32 hex + "-10000" + NUL, with room */
#define CN_OBJECTS_LIST_MAX 1000 /* keys + common prefixes per page */
#define CN_PART_NUMBER_MAX 10000
#define CN_OBJECTS_CONTENT_TYPE_MAX 65535
#define CN_OBJECTS_USER_META_MAX (1u << 20) /* bytes of keys + values */
#define CN_OBJECTS_CKSUM_ALG_MAX 16         /* an additional checksum's algorithm name, with NUL */
#define CN_OBJECTS_CKSUM_MAX 64             /* its value: base64, "-N" for a composite, NUL */

typedef struct cn_objects_opts {
    /* Largest object (and largest part) accepted: CN_E_TOO_LARGE beyond it,
     * before a body byte is stored.  0 = 5 TiB. */
    uint64_t max_object_bytes;
    /* An upload not completed or aborted this long after its creation is
     * expired: NoSuchUpload, and swept.  0 = 7 days. */
    int64_t upload_expiry_ms;
    /* Period of the background sweep of expired uploads.  0 = 10 minutes;
     * < 0 = no background thread (call cn_objects_sweep_uploads yourself). */
    int64_t upload_sweep_ms;
    /* How long a completed upload's record is kept, so that a repeated
     * CompleteMultipartUpload (a retry after a lost reply) is answered with
     * the first completion's result.  0 = 1 hour. */
    int64_t completed_keep_ms;
    /* The data directory of meta (borrowed during the call).  Every process
     * that writes the same metadata through this service shares its write
     * generation table there (DATA/objects.gen), which lets each one cache
     * object heads and serve a current-version GET or HEAD with no SQL while
     * nobody wrote the bucket.  NULL, or a metadata engine other than the
     * embedded SQLite one: no head cache, and writes are not announced, so
     * give it in every process whenever any process on the data dir does. */
    const char *data_dir;
} cn_objects_opts_t;

/* Opens the service over an open meta handle and store (both borrowed; they
 * must outlive it): opens the write generation table (opts->data_dir),
 * applies the "objects" migrations, registers the liveness
 * source "objects" with the store (so its sweeper keeps every blob that an
 * object version or an upload part references) and starts the upload sweeper.
 * opts may be NULL (defaults); it is copied.  Errors: meta errors,
 * CN_E_EXISTS (a liveness source "objects" is already registered), -errno. */
CN_API cn_err_t cn_objects_open(cn_meta_t *meta, cn_store_t *store, const cn_objects_opts_t *opts,
                                cn_objects_t **out);
/* Stops the sweeper and frees the handle.  Sessions and readers must be
 * finished.  NULL is a no-op. */
CN_API void cn_objects_close(cn_objects_t *o);

/* The effective limit (after defaults). */
CN_API uint64_t cn_objects_max_object_bytes(const cn_objects_t *o);

/* ---- the request context ---------------------------------------------------
 * Every operation takes one: who asks (inputs) and, on failure, what the
 * error is about (outputs), so an adapter can tell NoSuchBucket from
 * NoSuchKey and prefix a copy's errors with "source:" / "destination:". */
typedef enum {
    CN_OBJ_WHAT_NONE = 0,
    CN_OBJ_WHAT_BUCKET, /* the bucket (missing: NoSuchBucket; bad name: InvalidBucketName) */
    CN_OBJ_WHAT_KEY,    /* the key (missing: NoSuchKey) */
    CN_OBJ_WHAT_UPLOAD, /* the multipart upload */
    CN_OBJ_WHAT_PART,   /* a listed part (missing, out of order, etag mismatch) */
    CN_OBJ_WHAT_ARG,    /* some other argument */
} cn_objects_what_t;

typedef enum {
    CN_OBJ_SIDE_NONE = 0,
    CN_OBJ_SIDE_SOURCE, /* CopyObject: about the source */
    CN_OBJ_SIDE_DEST,   /* CopyObject: about the destination */
} cn_objects_side_t;

/* The objects service's detail codes (cn_fail_t.detail): which rule refused,
 * for every refusal an adapter answers distinctly; 0 = none (the class and
 * `what` say it all).  Each rule is raised with the one class listed
 * (X(name, class)): adapters map (class, what, detail) to wire codes in one
 * table and their unit tests walk this list.  Not persisted: values may be
 * renumbered, names are the contract. */
#define CN_OBJ_DETAILS(X)                                                                         \
    X(BUCKET_NAME_INVALID, CN_E_INVALID) /* S3 naming rules broken */                             \
    X(KEY_INVALID, CN_E_INVALID)         /* empty, NUL or not UTF-8 */                            \
    X(KEY_TOO_LONG, CN_E_INVALID)        /* over 1024 bytes */                                    \
    X(CONTENT_TYPE_TOO_LONG, CN_E_INVALID)                                                        \
    X(METADATA_KEY_INVALID, CN_E_INVALID)     /* an empty user-metadata key */                    \
    X(METADATA_TOO_LARGE, CN_E_INVALID)       /* keys + values over CN_OBJECTS_USER_META_MAX */   \
    X(CHECKSUM_ALG_INVALID, CN_E_INVALID)     /* an upload's checksum algorithm name */           \
    X(LIST_ARG_INVALID, CN_E_INVALID)         /* max_keys, prefix, delimiter or marker */         \
    X(PART_NUMBER_INVALID, CN_E_INVALID)      /* outside 1..CN_PART_NUMBER_MAX */                 \
    X(PART_LIST_INVALID, CN_E_INVALID)        /* none, too many, or not the first completion's */ \
    X(PART_ORDER, CN_E_INVALID)               /* listed part numbers do not ascend */             \
    X(PART_MISSING, CN_E_INVALID)             /* a listed part was not uploaded */                \
    X(PART_ETAG_MISMATCH, CN_E_INVALID)       /* a listed etag is not the part's */               \
    X(PART_TOO_SMALL, CN_E_INVALID)           /* under the caller's minimum (min_part_size) */    \
    X(POLICY_INVALID, CN_E_INVALID)           /* a bucket policy that does not parse/validate */  \
    X(SETTING_NAME_INVALID, CN_E_INVALID)     /* a bucket attribute's name */                     \
    X(SETTING_UNSET, CN_E_NOT_FOUND)          /* no policy / public access block / attribute */   \
    X(VERSION_ID_INVALID, CN_E_INVALID)       /* not a version id this service wrote */           \
    X(NO_SUCH_VERSION, CN_E_NOT_FOUND)        /* a well-formed id the key does not have */        \
    X(VERSION_IS_MARKER, CN_E_UNSUPPORTED)    /* a read of a delete marker's id */                \
    X(VERSION_LOCKED, CN_E_DENIED)            /* permanent removal of a retained/held version */  \
    X(VERSIONING_STATE_INVALID, CN_E_INVALID) /* not Enabled/Suspended (no way back to off) */    \
    X(BUCKET_STATE_INVALID, CN_E_CONFLICT)    /* suspending versioning under object lock */       \
    X(LOCK_NOT_ENABLED, CN_E_INVALID)  /* a lock operation on a bucket without object lock */     \
    X(LOCK_UNSET, CN_E_NOT_FOUND)      /* the version has no retention / legal hold */            \
    X(LOCK_RETAINED, CN_E_DENIED)      /* shortening / weakening an active retention */           \
    X(LOCK_DATE_PAST, CN_E_INVALID)    /* a retain-until date not in the future */                \
    X(TAGS_INVALID, CN_E_INVALID)      /* a tag set over its limits (S3 InvalidTag) */            \
    X(LIFECYCLE_INVALID, CN_E_INVALID) /* lifecycle rules that do not encode/validate */

typedef enum {
    CN_OBJ_DETAIL_NONE = 0,
#define CN__OBJ_DETAIL_ENUM(name, cls) CN_OBJ_##name,
    CN_OBJ_DETAILS(CN__OBJ_DETAIL_ENUM)
#undef CN__OBJ_DETAIL_ENUM
    CN_OBJ_DETAIL_COUNT /* one past the last */
} cn_obj_detail_t;

/* The detail's name ("KEY_TOO_LONG"), "NONE" for 0, NULL when out of range. */
CN_API const char *cn_obj_detail_name(cn_obj_detail_t d);

typedef struct cn_objects_req {
    /* in */
    const cn_principal_t *principal; /* NULL = anonymous */
    cn_authz_ip_t source_ip;         /* the peer (family 0 = unknown) */
    bool secure_transport;           /* TLS */
    const char *referer;             /* aws:Referer, may be NULL */
    const char *user_agent;          /* aws:UserAgent, may be NULL */
    cn_authz_grant_hdrs_t grants;    /* x-amz-grant-* as sent (s3:x-amz-grant-*) */
    /* Metadata only (a HEAD, a conditional GET's first look): a get's
     * reader is only its window (offset, length); no blob is opened,
     * fetched from a blob tier or guarded for it. */
    bool no_bytes;
    /* out: set by a failing call */
    cn_objects_what_t what; /* which thing failed */
    cn_objects_side_t side;
    cn_fail_t fail; /* class, detail (cn_obj_detail_t), message */
} cn_objects_req_t;

/* One row of an adapter's error table: a failure of class cls, about what
 * (CN_OBJ_WHAT_ANY: anything), refused by rule detail (0: a failure without
 * a detail), answers code (the adapter's own wire code). */
#define CN_OBJ_WHAT_ANY (-1)
typedef struct cn_obj_err_row {
    cn_err_t cls;
    int what;
    uint16_t detail;
    int code;
} cn_obj_err_row_t;

/* Looks a failed call up in an adapter's table: the first of rows[0..n)
 * whose class is err, whose what is rq->what (or ANY) and whose detail is
 * rq->fail.detail — taken only when rq->fail.cls is err, so details left by
 * an earlier failure never apply; 0 otherwise.  A detail with no row of its
 * own does not fall back to its class: it answers fallback, which the
 * adapter's unit test catches.  Pure; any thread. */
CN_API int cn_objects_err_lookup(const cn_obj_err_row_t *rows, size_t n, const cn_objects_req_t *rq,
                                 cn_err_t err, int fallback);

/* ---- names ------------------------------------------------------------------ */
/* S3 bucket naming rules: 3..63 bytes of [a-z0-9.-], starting and ending with
 * a letter or digit, no "..", not shaped like an IPv4 address, no "xn--",
 * "sthree-" prefix and no "-s3alias" / "--ol-s3" suffix. */
CN_API bool cn_objects_bucket_name_ok(const char *name);
/* 1..1024 bytes of valid UTF-8 without NUL. */
CN_API bool cn_objects_key_ok(const char *key, size_t len);

/* ---- buckets ------------------------------------------------------------------ */
typedef struct cn_bucket_info {
    int64_t bucket_id;
    char name[CN_BUCKET_NAME_MAX + 1];
    char owner[CN_ACCOUNT_NAME_MAX + 1]; /* account name */
    int64_t created_ms;                  /* Unix ms */
    cn_authz_visibility_t visibility;    /* public / private (authz's mapping) */
} cn_bucket_info_t;

/* Creates bucket name owned by the caller's account.  acl (may be NULL =
 * private) is the bucket's initial ACL (owner is rewritten to the caller).
 * Errors: CN_E_INVALID (bad name; what = BUCKET), CN_E_EXISTS (taken, by
 * anyone), CN_E_DENIED, CN_E_DB*.  *out (may be NULL) describes it. */
CN_API cn_err_t cn_objects_bucket_create(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                                         const cn_authz_acl_t *acl, cn_bucket_info_t *out);
/* Deletes an empty bucket; its unfinished uploads are aborted with it.
 * Errors: CN_E_NOT_FOUND, CN_E_NOT_EMPTY (it holds an object), CN_E_DENIED. */
CN_API cn_err_t cn_objects_bucket_delete(cn_objects_t *o, cn_objects_req_t *rq, const char *name);
/* HeadBucket (action s3:ListBucket).  CN_E_NOT_FOUND, CN_E_DENIED. */
CN_API cn_err_t cn_objects_bucket_head(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                                       cn_bucket_info_t *out);

typedef cn_err_t (*cn_objects_bucket_fn)(void *arg, const cn_bucket_info_t *b);
/* Calls fn, in name order, for each bucket the caller's account owns (an
 * anonymous caller: CN_E_DENIED).  A non-zero return from fn stops the walk
 * and is returned.  fn must not call back into the service. */
CN_API cn_err_t cn_objects_bucket_list(cn_objects_t *o, cn_objects_req_t *rq,
                                       cn_objects_bucket_fn fn, void *arg);

/* A bucket's usage: objects = its current versions (delete markers are
 * none), versions = every stored version, current or noncurrent (markers
 * not counted), bytes = the sizes of those versions, what the bucket
 * stores.  Exact: kept in the transaction of every change. */
typedef struct cn_objects_usage {
    int64_t objects, versions, bytes;
} cn_objects_usage_t;
/* bucket's usage into *out, at the cost of one indexed read whatever its
 * size (action s3:ListBucket).  Errors as cn_objects_bucket_head. */
CN_API cn_err_t cn_objects_bucket_usage(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                        cn_objects_usage_t *out);
/* Folds the usage changes of committed writes into each bucket's base row
 * (PostgreSQL: writers append deltas so that they never share a row; a read
 * sums base and deltas, so a fold changes no answer, it bounds the deltas a
 * read sums).  A no-op on SQLite.  The fleet's leased job "usage-fold". */
CN_API cn_err_t cn_objects_usage_fold(cn_objects_t *o);

/* Bucket ACL: get needs s3:GetBucketAcl, set s3:PutBucketAcl and passes the
 * public access block (CN_E_DENIED when BlockPublicAcls refuses it).  A
 * bucket without a stored ACL reads as private (owner FULL_CONTROL). */
CN_API cn_err_t cn_objects_bucket_acl_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          cn_authz_acl_t *out);
CN_API cn_err_t cn_objects_bucket_acl_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const cn_authz_acl_t *acl);
/* Native visibility: sets the bucket ACL authz maps it to (s3:PutBucketAcl). */
CN_API cn_err_t cn_objects_bucket_set_visibility(cn_objects_t *o, cn_objects_req_t *rq,
                                                 const char *bucket, cn_authz_visibility_t vis);

/* Bucket policy as JSON text.  get: CN_E_NOT_FOUND with what = ARG,
 * SETTING_UNSET when none is set (S3: NoSuchBucketPolicy).  set: validated by
 * authz (CN_E_INVALID, POLICY_INVALID, the reason in rq->fail.message:
 * MalformedPolicy), refused by BlockPublicPolicy
 * (CN_E_DENIED); json NULL deletes it.  Actions s3:Get/Put/DeleteBucketPolicy. */
CN_API cn_err_t cn_objects_bucket_policy_get(cn_objects_t *o, cn_objects_req_t *rq,
                                             const char *bucket, cn_buf_t *json);
CN_API cn_err_t cn_objects_bucket_policy_set(cn_objects_t *o, cn_objects_req_t *rq,
                                             const char *bucket, const char *json, size_t len);

/* Public access block.  get: CN_E_NOT_FOUND with what = ARG when none is set.
 * set with pab NULL deletes it. */
CN_API cn_err_t cn_objects_bucket_pab_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          cn_authz_pab_t *out);
CN_API cn_err_t cn_objects_bucket_pab_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const cn_authz_pab_t *pab);

/* Generic named bucket settings the service stores but does not interpret
 * (S3 "cors", "tagging", ...; name ≤ 64 bytes, value ≤ 1 MiB), authorized as
 * action.  get: CN_E_NOT_FOUND with what = ARG when unset; set with value
 * NULL deletes it. */
CN_API cn_err_t cn_objects_bucket_attr_get(cn_objects_t *o, cn_objects_req_t *rq,
                                           const char *bucket, const char *name,
                                           cn_authz_action_t action, cn_buf_t *value);
CN_API cn_err_t cn_objects_bucket_attr_set(cn_objects_t *o, cn_objects_req_t *rq,
                                           const char *bucket, const char *name,
                                           cn_authz_action_t action, const void *value, size_t len);

/* Facts a face needs before it can ask for anything, read WITHOUT any
 * authorization: the bucket's owner (owner, may be NULL; for bucket-owner-*
 * canned ACLs written by a non-owner) and, when attr is not NULL, one named
 * setting into value with *has_attr (the CORS rules that answer a browser's
 * unauthenticated preflight).  The caller must reveal no more of them than
 * S3 does.  CN_E_NOT_FOUND for a missing bucket, CN_E_INVALID (bad bucket or
 * setting name, attr without value / has_attr), CN_E_DB*.  Thread-safe. */
CN_API cn_err_t cn_objects_bucket_peek(cn_objects_t *o, const char *bucket,
                                       char owner[CN_ACCOUNT_NAME_MAX + 1], const char *attr,
                                       cn_buf_t *value, bool *has_attr);
/* The owner of bucket/key's current version, read WITHOUT authorization
 * (to build a canned ACL for a caller who may write the object's ACL but
 * not read it).  CN_E_NOT_FOUND (bucket or key), CN_E_INVALID, CN_E_DB*. */
CN_API cn_err_t cn_objects_object_peek_owner(cn_objects_t *o, const char *bucket, const char *key,
                                             char owner[CN_ACCOUNT_NAME_MAX + 1]);

/* ---- objects --------------------------------------------------------------- */
typedef struct cn_objects_kv {
    const char *key;
    const char *value;
} cn_objects_kv_t;

/* The current version of an object.  Strings are owned by the info: release
 * with cn_objects_info_free (which accepts a zeroed info). */
typedef struct cn_object_info {
    int64_t version_id;
    uint64_t size;
    char etag[CN_ETAG_MAX];             /* lowercase hex MD5, or "hex-N" (multipart) */
    char sha256[CN_DIGEST_HEX_LEN + 1]; /* lowercase hex SHA-256 of the whole object */
    char *content_type;
    cn_objects_kv_t *meta; /* user metadata, in stored order */
    size_t nmeta;
    int64_t last_modified_ms;
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    uint32_t nparts; /* 0 for a single put, N for multipart */
    /* The additional checksum of a multipart upload created with an
     * algorithm (S3 name, "CRC32"), as the completion stored it: the
     * composite "base64-N"; both "" when none. */
    char checksum_alg[CN_OBJECTS_CKSUM_ALG_MAX];
    char checksum[CN_OBJECTS_CKSUM_MAX];
    void *priv_; /* storage for the strings */
    /* Versioning (issue 25): the version is its key's null version; the
     * bucket's versioning was ever set (S3 then names versions on the wire,
     * "null" included); a failed read of a key whose latest version is a
     * delete marker (CN_E_NOT_FOUND), or of a marker's id, sets
     * delete_marker and version_id / vnull to the marker's. */
    bool vnull;
    bool bucket_versioned;
    bool delete_marker;
    /* The version's retention and legal hold (lock_mode a
     * cn_objects_lock_mode_t, NONE without one; legal_hold 0 / 1) and how
     * many tags it has, read with it (GET / HEAD echo them). */
    int lock_mode;
    int64_t lock_until_ms;
    int legal_hold;
    uint32_t ntags;
    /* PostgreSQL: the bucket slot's generation word (docs/fleet.md) read
     * during this call, under which a cached head answered it, or by the
     * read that answered it; 0 otherwise.  Pass it to
     * cn_objects_lifecycle_expiry_under for an answer without reading it
     * again (the rules then as of that read, during the request: a rule
     * changed concurrently may show in the next answer only, as S3 applies
     * a new configuration with a delay). */
    uint64_t gen_word;
} cn_object_info_t;

CN_API void cn_objects_info_free(cn_object_info_t *info);

/* ---- per-version attributes: tags (S3 object tagging), retention and legal
 * hold (S3 object lock).  Stored per version (obj_version_tag,
 * obj_version_lock), written in the transaction that makes the version. */
#define CN_OBJECTS_TAGS_MAX 10 /* tags per object version */

typedef enum cn_objects_lock_mode {
    CN_OBJ_LOCK_NONE = 0,
    CN_OBJ_LOCK_GOVERNANCE,
    CN_OBJ_LOCK_COMPLIANCE
} cn_objects_lock_mode_t;

typedef struct cn_objects_retention {
    cn_objects_lock_mode_t mode; /* NONE: no explicit retention (the bucket's default applies) */
    int64_t until_ms;            /* retain-until, Unix ms (with a mode) */
    int legal_hold;              /* -1 not given, 0 OFF, 1 ON */
} cn_objects_retention_t;

typedef struct cn_objects_part cn_objects_part_t;

/* CompleteMultipartUpload's check of the chosen parts (see
 * cn_objects_mpu_complete): parts in order, n of them, each with its stored
 * checksum; alg is the upload's checksum algorithm ("" when none).  Writes
 * the object's checksum into checksum ("" for none) or returns a negative
 * error, which stops the completion and is returned (rq's details are the
 * callback's to set). */
typedef cn_err_t (*cn_objects_complete_check_fn)(void *ctx, cn_objects_req_t *rq, const char *alg,
                                                 const cn_objects_part_t *parts, size_t n,
                                                 char checksum[CN_OBJECTS_CKSUM_MAX]);

typedef struct cn_objects_put_args {
    const char *content_type;    /* NULL = "application/octet-stream" */
    const cn_objects_kv_t *meta; /* user metadata (copied) */
    size_t nmeta;
    bool skip_etag;            /* etag "" instead of the MD5 */
    const cn_authz_acl_t *acl; /* NULL = private; owner rewritten */
    const char *canned_acl;    /* its name, for s3:x-amz-acl conditions */
    /* Integrity expectations, checked at commit (CN_E_DIGEST_MISMATCH, and
     * nothing is stored): NULL = none. */
    const uint8_t *expect_md5;    /* 16 bytes */
    const uint8_t *expect_sha256; /* 32 bytes */
    /* expect_sha256 is already verified by the caller against every byte
     * of the body before it calls commit (e.g. the HTTP framework's
     * x-amz-content-sha256 or x-amz-checksum-sha256 check): the service takes
     * it as the body's SHA-256 and hashes nothing itself.  A caller that
     * sets it must never commit a body that failed that check. */
    bool sha256_verified;
    /* Conditional write, checked inside the commit transaction: the key must
     * not exist (if_none_match), or its etag must equal if_match.
     * CN_E_PRECONDITION otherwise. */
    bool if_none_match;
    const char *if_match;
    /* CreateMultipartUpload: the upload's additional checksum algorithm
     * (opaque to the service, < CN_OBJECTS_CKSUM_ALG_MAX bytes; NULL = none). */
    const char *checksum_alg;
    /* CompleteMultipartUpload: the check of the chosen parts (NULL = none;
     * the object then has no additional checksum). */
    cn_objects_complete_check_fn complete_check;
    void *complete_ctx;
    /* Complete only: every chosen part but the last must hold at least this
     * many bytes, else CN_E_INVALID (what PART, PART_TOO_SMALL: S3's
     * EntityTooSmall), judged before complete_check; 0 = no minimum.  The
     * S3 face and the console pass the same value (S3's 5 MiB unless
     * CAIRN_S3_MIN_PART_SIZE says otherwise). */
    uint64_t min_part_size;
    /* Complete only: answer a completion of an already completed upload
     * with the first completion's result (S3's retry after a lost reply).
     * false: CN_E_NO_UPLOAD, as Jay's contract says of a completed upload. */
    bool answer_repeat;
    /* The new version's tags (x-amz-tagging; copied; at most
     * CN_OBJECTS_TAGS_MAX) and explicit retention / legal hold
     * (x-amz-object-lock-*; NULL = none given: the bucket's default
     * retention applies).  CreateMultipartUpload keeps them for the
     * completion. */
    const cn_objects_kv_t *tags;
    size_t ntags;
    const cn_objects_retention_t *retention;
} cn_objects_put_args_t;

typedef struct cn_objects_put cn_objects_put_t;
/* A put body of at least this many bytes (declared, or reached) hashes MD5
 * and SHA-256 beside the store's write, on the service's hashing pool;
 * a smaller one hashes inline with no hand-off. */
#define CN_OBJECTS_PUT_BESIDE_MIN ((uint64_t)1 << 20)

typedef struct cn_objects_put_result {
    char etag[CN_ETAG_MAX];
    char sha256[CN_DIGEST_HEX_LEN + 1];
    uint8_t md5[CN_MD5_LEN]; /* binary MD5 of the body; zeros for an object put
                              * with skip_etag and no expect_md5 (not hashed) */
    uint64_t size;
    int64_t last_modified_ms;
    int64_t version_id;
    /* CompleteMultipartUpload: the object's additional checksum ("" none). */
    char checksum_alg[CN_OBJECTS_CKSUM_ALG_MAX];
    char checksum[CN_OBJECTS_CKSUM_MAX];
    bool repeated; /* the upload had completed already */
    /* The new version is the null version; the bucket's versioning was
     * ever set (see cn_object_info_t).  CopyObject: the source version. */
    bool vnull;
    bool bucket_versioned;
    int64_t src_version_id;
    bool src_vnull;
    /* A put's bucket settings word as its cn_objects_put_begin read it
     * (PostgreSQL; 0 elsewhere and for other writes): the word to pass to
     * cn_objects_lifecycle_expiry_under for this put's x-amz-expiration,
     * which then needs no read of its own. */
    uint64_t lc_word;
} cn_objects_put_result_t;

/* Starts a streaming put of bucket/key.  size is the declared body length
 * (-1 = unknown; then the limit applies as bytes arrive).  Authorization
 * (s3:PutObject), the bucket, the key and the size limit are checked here,
 * before any byte is accepted: CN_E_NOT_FOUND (bucket), CN_E_INVALID (key,
 * metadata, content type), CN_E_DENIED, CN_E_TOO_LARGE.  *out is the
 * session: write all the bytes, then commit or abort. */
CN_API cn_err_t cn_objects_put_begin(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                     const char *key, const cn_objects_put_args_t *args,
                                     int64_t size, cn_objects_put_t **out);
/* Appends n body bytes (hashed with BLAKE3 by the store, SHA-256 and MD5 here:
 * for bodies of CN_OBJECTS_PUT_BESIDE_MIN or more on the service's hashing
 * pool, from a copy, while the caller goes on).  buf is read only during the
 * call.  CN_E_TOO_LARGE past the
 * limit, CN_E_LENGTH_MISMATCH past the declared size, -errno from the store;
 * after an error only abort is useful. */
CN_API cn_err_t cn_objects_put_write(cn_objects_put_t *p, const void *buf, size_t n);
/* Bytes written so far. */
CN_API uint64_t cn_objects_put_len(const cn_objects_put_t *p);
/* The SHA-256 of the bytes written so far; the session goes on unchanged.
 * For a caller that verifies a body hash itself (S3's signed payload hash,
 * cn_http_req_body_sha_delegate) without hashing the bytes a second time.
 * CN_E_INVALID when the session hashes no SHA-256 (sha256_verified), the
 * sticky error after a failed write, -ENOMEM.  Not concurrent with write. */
CN_API cn_err_t cn_objects_put_sha256(cn_objects_put_t *p, uint8_t out[CN_DIGEST_LEN]);
/* UploadPart: the upload's additional checksum algorithm (as given to
 * cn_objects_mpu_create), or NULL when it has none or p is an object put. */
CN_API const char *cn_objects_put_checksum_alg(const cn_objects_put_t *p);
/* UploadPart: records the part's checksum under the upload's algorithm
 * (base64, computed or verified by the caller over the same bytes) with the
 * part at commit.  CN_E_INVALID when too long or p has no algorithm. */
CN_API cn_err_t cn_objects_put_set_checksum(cn_objects_put_t *p, const char *b64);
/* Makes the object durable and current: the blob is published (fsynced and
 * renamed), then the version row is committed as the key's current version
 * (the previous one kept as noncurrent when versioning is Enabled, else
 * replaced when it is the null version).  CN_E_LENGTH_MISMATCH (fewer bytes than declared),
 * CN_E_DIGEST_MISMATCH, CN_E_PRECONDITION, CN_E_NOT_FOUND (the bucket was
 * deleted meanwhile), CN_E_DB*.  res may be NULL.  Frees p in every case. */
CN_API cn_err_t cn_objects_put_commit(cn_objects_put_t *p, cn_objects_put_result_t *res);
/* Discards the session; nothing becomes visible.  NULL is a no-op. */
CN_API void cn_objects_put_abort(cn_objects_put_t *p);

/* HeadObject (s3:GetObject).  CN_E_NOT_FOUND (what = BUCKET or KEY),
 * CN_E_DENIED.  info filled on success (free it). */
CN_API cn_err_t cn_objects_head(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                const char *key, cn_object_info_t *info);

/* A read of a byte range of the current version. */
typedef struct cn_objects_range {
    /* kind: */
    enum {
        CN_RANGE_ALL = 0, /* the whole object */
        CN_RANGE_FROM,    /* [off, off+len) clamped to the end; len 0 = to the end */
        CN_RANGE_SUFFIX,  /* the last len bytes (all if shorter) */
        CN_RANGE_PART     /* part part_number of a multipart object (1 for a single put) */
    } kind;
    uint64_t off;
    uint64_t len;
    int32_t part_number;
} cn_objects_range_t;

typedef struct cn_objects_reader cn_objects_reader_t;

/* GetObject (s3:GetObject): info describes the whole object; *rd serves the
 * range (NULL range = whole object).  A range that does not intersect the
 * object, including any FROM/SUFFIX range on an empty object, is CN_E_RANGE
 * (info is still filled, so S3 can answer Content-Range: bytes * / size);
 * a part number beyond nparts is CN_E_RANGE too, with rq->what = PART.  CN_E_CORRUPT (what =
 * KEY) when a blob of the current version is missing or shorter than recorded.  Blobs are
 * protected from the sweeper, and their files (up to four) held open, while *rd lives.  Free
 * *rd with cn_objects_reader_free. */
CN_API cn_err_t cn_objects_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               const char *key, const cn_objects_range_t *range,
                               cn_object_info_t *info, cn_objects_reader_t **rd);

/* cn_objects_get answered from the object-head cache only, never touching
 * the metadata (for a caller on an event loop): the same parameters, results
 * and ownership, or CN_E_AGAIN (nothing filled, *rd NULL, rq untouched) when
 * the answer is not cached, a writer of the bucket is in flight, or a blob
 * must be looked at again: then call cn_objects_get, from a thread that may
 * block.  It may still open blob files through the store's descriptor cache.
 * Any thread. */
CN_API cn_err_t cn_objects_get_cached(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                      const char *key, const cn_objects_range_t *range,
                                      cn_object_info_t *info, cn_objects_reader_t **rd);

/* Whether a read of o's metadata stays on this machine (the embedded
 * engine: a file), so that an event loop may make one; false on
 * PostgreSQL, whose answer may wait on the network.  Any thread. */
CN_API bool cn_objects_meta_local(const cn_objects_t *o);

/* The bytes the reader serves and where they start in the object. */
CN_API uint64_t cn_objects_reader_len(const cn_objects_reader_t *rd);
CN_API uint64_t cn_objects_reader_offset(const cn_objects_reader_t *rd);
/* The window's bytes, when they are all in one blob whose bytes the store
 * holds in memory (cn_store_bytes_get): *p valid until
 * cn_objects_reader_free(rd); else false. */
CN_API bool cn_objects_reader_mem(const cn_objects_reader_t *rd, const uint8_t **p);

/* Serves the range: for each stored segment, send_fd(ctx, fd, off, len) when
 * the blob is a raw file (for sendfile(2); fd is the reader's, valid during
 * the call), else the bytes through write(ctx, p, n) in bounded chunks.
 * send_fd may be NULL (everything goes through write).  The first non-zero
 * return of a callback stops the read and is returned.  CN_E_CORRUPT /
 * -errno from the store.  Call once. */
typedef cn_err_t (*cn_objects_send_fd_fn)(void *ctx, int fd, uint64_t off, uint64_t len);
typedef cn_err_t (*cn_objects_write_fn)(void *ctx, const void *p, size_t n);
CN_API cn_err_t cn_objects_reader_send(cn_objects_reader_t *rd, cn_objects_send_fd_fn send_fd,
                                       cn_objects_write_fn write, void *ctx);
/* As cn_objects_reader_send, but fd may be shared with other threads: send_fd
 * must read it only by offset (pread, sendfile(2) with an offset pointer),
 * never move its file offset, and neither keep nor dup it.  Spares the open,
 * fstat and close of a small blob's file per read. */
CN_API cn_err_t cn_objects_reader_send_shared(cn_objects_reader_t *rd,
                                              cn_objects_send_fd_fn send_fd,
                                              cn_objects_write_fn write, void *ctx);
/* As cn_objects_reader_send_shared, from the range's byte from on: a body
 * sent in parts resumes where a callback stopped it (it counts what it
 * took).  Any number of calls, one at a time. */
CN_API cn_err_t cn_objects_reader_send_at(cn_objects_reader_t *rd, uint64_t from,
                                          cn_objects_send_fd_fn send_fd, cn_objects_write_fn write,
                                          void *ctx);
/* The reader's bytes at pos (counted from the start of its range) into buf,
 * at most max and within one stored segment: *n bytes, 0 at the end.  It
 * keeps no position, so a body made piece by piece may ask for each piece
 * on another worker (never two at once).  The piece that ends a segment is
 * the one a blob still being fetched verifies whole before it is served
 * (cn_store_read_part), so no range completes on unverified bytes.
 * CN_E_CORRUPT / -errno from the store. */
CN_API cn_err_t cn_objects_reader_read_at(cn_objects_reader_t *rd, uint64_t pos, void *buf,
                                          size_t max, size_t *n);
CN_API void cn_objects_reader_free(cn_objects_reader_t *rd); /* NULL is a no-op */

/* The parts of the current version, in order (S3 GetObjectAttributes
 * ObjectParts, partNumber reads): one part for a single put, N for a
 * multipart object, each with its number, size, etag, SHA-256 and
 * additional checksum (last_modified is the version's).  Authorized as
 * CN_ACT_GET_OBJECT_ATTRIBUTES.  A non-zero return of fn stops the walk and
 * is returned.  CN_E_NOT_FOUND, CN_E_DENIED. */
typedef cn_err_t (*cn_objects_part_fn)(void *arg, const cn_objects_part_t *p);
CN_API cn_err_t cn_objects_object_parts(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                        const char *key, cn_objects_part_fn fn, void *arg);

/* DeleteObject (s3:DeleteObject) of the key's current version: removed, or
 * on a versioned bucket a delete marker written over it (see
 * cn_objects_delete_version).  CN_E_NOT_FOUND (what = BUCKET, or KEY when
 * the key has no current version: S3 answers success there, Jay NoSuchKey). */
CN_API cn_err_t cn_objects_delete(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                  const char *key);

/* Object ACL (s3:GetObjectAcl / s3:PutObjectAcl).  CN_E_NOT_FOUND. */
CN_API cn_err_t cn_objects_object_acl_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const char *key, cn_authz_acl_t *out);
CN_API cn_err_t cn_objects_object_acl_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const char *key, const cn_authz_acl_t *acl);

/* ---- listing ------------------------------------------------------------------ */
typedef struct cn_objects_list_args {
    const char *prefix;       /* NULL = "" */
    const char *delimiter;    /* NULL/"" = none */
    const char *start_after;  /* NULL = from the start; keys > it */
    int32_t max_keys;         /* 0 = 1000; > 1000 clamps; < 0 CN_E_INVALID */
    const char *max_keys_raw; /* as sent, for s3:max-keys (may be NULL) */
    bool versions;            /* ListObjectVersions: s3:ListBucketVersions */
    /* ListObjectVersions: resume within key start_after, after this version
     * (wire form; NULL = after every version of start_after). */
    const char *version_id_marker;
} cn_objects_list_args_t;

typedef struct cn_objects_entry {
    char *key;
    uint64_t size;
    char etag[CN_ETAG_MAX];
    char sha256[CN_DIGEST_HEX_LEN + 1];
    int64_t last_modified_ms;
    char *content_type;
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    uint32_t nparts;
    /* ListObjectVersions only: the version, whether it is the null
     * version, its key's latest, a delete marker (size 0, no etag). */
    int64_t version_id;
    bool vnull, is_latest, delete_marker;
} cn_objects_entry_t;

typedef struct cn_objects_list {
    cn_objects_entry_t *entries;
    size_t nentries;
    char **prefixes; /* common prefixes, in order */
    size_t nprefixes;
    bool is_truncated;
    char *next_start_after; /* the last key or prefix returned when
                                               truncated, else NULL */
    /* ListObjectVersions, truncated after a version: its wire id. */
    char *next_version_id_marker;
} cn_objects_list_t;

/* ListObjects (s3:ListBucket; with args->versions ListObjectVersions,
 * s3:ListBucketVersions: every version and delete marker, each key's newest
 * first, entries carrying their version fields) with S3 semantics: keys > start_after that
 * begin with prefix, in byte order; with a delimiter, keys holding it after
 * the prefix roll up into one common prefix each (a prefix equal to
 * start_after is not repeated); keys and prefixes together count against
 * max_keys.  *out is filled (free with cn_objects_list_free). */
CN_API cn_err_t cn_objects_list(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                const cn_objects_list_args_t *args, cn_objects_list_t *out);
CN_API void cn_objects_list_free(cn_objects_list_t *l); /* accepts a zeroed list */

/* ---- copy -------------------------------------------------------------------- */
typedef struct cn_objects_copy_args {
    /* replace = false: content type and user metadata carry over from the
     * source (Jay; S3 COPY directive); true: taken from put (S3 REPLACE). */
    bool replace;
    const cn_objects_put_args_t *put; /* acl, conditions, replacement metadata; may be NULL */
    /* Conditions on the source (S3 x-amz-copy-source-if-*): CN_E_PRECONDITION. */
    const char *src_if_match;
    const char *src_if_none_match;
    int64_t src_if_modified_since_ms;   /* 0 = none */
    int64_t src_if_unmodified_since_ms; /* 0 = none */
    /* The source version (wire form, x-amz-copy-source ?versionId=); NULL =
     * the current one. */
    const char *src_version;
    /* The new version's tags are the source version's (S3's tagging
     * directive COPY); false: put->tags. */
    bool copy_tags;
} cn_objects_copy_args_t;

/* CopyObject: needs s3:GetObject on the source and s3:PutObject on the
 * destination.  The new version references the source's blobs: no byte is
 * read or written.  Errors carry rq->side (SOURCE / DEST) and rq->what.
 * args may be NULL.  res (may be NULL) receives etag, checksum, size,
 * last_modified. */
CN_API cn_err_t cn_objects_copy(cn_objects_t *o, cn_objects_req_t *rq, const char *src_bucket,
                                const char *src_key, const char *dst_bucket, const char *dst_key,
                                const cn_objects_copy_args_t *args, cn_objects_put_result_t *res);

/* ---- multipart uploads --------------------------------------------------------
 * Choice (docs/objects.md): the completed object references the part blobs
 * in order — nothing is stitched or copied; its checksum (SHA-256 of the whole
 * object) is computed at completion by reading the parts once. */

/* CreateMultipartUpload (s3:PutObject).  upload_id receives a new id (hex,
 * NUL-terminated).  args as for put (content type, metadata, ACL, checksum
 * algorithm: CN_E_INVALID when too long); integrity expectations are
 * ignored. */
CN_API cn_err_t cn_objects_mpu_create(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                      const char *key, const cn_objects_put_args_t *args,
                                      char upload_id[CN_UPLOAD_ID_MAX + 1]);

/* UploadPart (s3:PutObject): a put session whose commit records part
 * part_number (1..10000) of upload_id, replacing an earlier upload of the same
 * number.  CN_E_NO_UPLOAD (unknown, completed, aborted or expired upload, or
 * one for another bucket/key), CN_E_INVALID (part number), CN_E_TOO_LARGE.
 * args may be NULL (only expect_md5 / expect_sha256 are used). */
CN_API cn_err_t cn_objects_part_begin(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                      const char *key, const char *upload_id, int32_t part_number,
                                      const cn_objects_put_args_t *args, int64_t size,
                                      cn_objects_put_t **out);

/* CompleteMultipartUpload (s3:PutObject) from the listed part numbers, which
 * must exist and ascend strictly (CN_E_INVALID, what = PART, otherwise;
 * etags, when not NULL, must match each part's etag — quotes ignored).
 * The object's etag is the MD5 of the concatenated binary part MD5s, hex,
 * then "-N"; its checksum the SHA-256 of all its bytes; its additional
 * checksum what args->complete_check writes (called with the chosen parts
 * before anything is committed).  args (may be NULL) also supplies
 * if_none_match / if_match.  Parts not listed are dropped; the upload can
 * take no more parts.  Its record (and the listed parts' rows) is kept for
 * opts.completed_keep_ms: a repeated completion then lists the same parts
 * (else CN_E_INVALID, what = PART), passes complete_check again and is
 * answered with the first completion's etag and checksum (res->repeated;
 * conditions are not judged again).  CN_E_NO_UPLOAD, CN_E_TOO_LARGE (total
 * over the limit), CN_E_CONFLICT (a listed part was replaced while
 * completing). */
CN_API cn_err_t cn_objects_mpu_complete(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                        const char *key, const char *upload_id,
                                        const int32_t *parts, const char *const *etags, size_t n,
                                        const cn_objects_put_args_t *args,
                                        cn_objects_put_result_t *res);

/* AbortMultipartUpload (s3:AbortMultipartUpload).  CN_E_NO_UPLOAD. */
CN_API cn_err_t cn_objects_mpu_abort(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                     const char *key, const char *upload_id);

struct cn_objects_part {
    int32_t part_number;
    uint64_t size;
    char etag[CN_ETAG_MAX];
    char sha256[CN_DIGEST_HEX_LEN + 1];
    int64_t last_modified_ms;
    char checksum[CN_OBJECTS_CKSUM_MAX]; /* under the upload's algorithm; "" none */
};

/* ListParts (s3:ListMultipartUploadParts): parts with number > marker in
 * ascending order, at most max (0 = all; S3 caps it at 1000 itself), through
 * fn.  *truncated (may be NULL) says whether more remain.  CN_E_NO_UPLOAD. */
CN_API cn_err_t cn_objects_mpu_list_parts(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const char *key, const char *upload_id, int32_t marker,
                                          uint32_t max, cn_objects_part_fn fn, void *arg,
                                          bool *truncated);

typedef struct cn_objects_upload {
    const char *key;
    const char *upload_id;
    const char *owner;
    int64_t created_ms;
} cn_objects_upload_t;

typedef cn_err_t (*cn_objects_upload_fn)(void *arg, const cn_objects_upload_t *u);
/* ListMultipartUploads (s3:ListBucketMultipartUploads): unexpired uploads
 * whose key begins with prefix (NULL = all), ordered by key then creation,
 * after (key_marker, upload_id_marker) (NULL = from the start), at most max
 * (0 = 1000). */
CN_API cn_err_t cn_objects_mpu_list(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *prefix, const char *key_marker,
                                    const char *upload_id_marker, uint32_t max,
                                    cn_objects_upload_fn fn, void *arg, bool *truncated);

/* Removes every upload older than the expiry and every completed upload's
 * record older than opts.completed_keep_ms (and their part rows; the blobs
 * become sweepable unless an object references them), as of now_ms (Unix ms; 0 = now).  *removed (may be
 * NULL) = uploads removed.  Called by the background sweeper; tests call it
 * directly. */
CN_API cn_err_t cn_objects_sweep_uploads(cn_objects_t *o, int64_t now_ms, uint64_t *removed);

/* ---- versioning (S3; issue 25) ------------------------------------------------
 * A bucket is unversioned until versioning is set, then Enabled or Suspended
 * for good.  Enabled: every write makes a new version and a delete writes a
 * delete marker; the replaced version stays, noncurrent.  Unversioned or
 * Suspended: a write replaces the key's null version (and a delete leaves a
 * null marker once versioning was set).  docs/s3.md has the wire form. */
#define CN_OBJECTS_VERSION_ID_MAX 16 /* a version id's wire form, with NUL */

typedef enum cn_objects_versioning {
    CN_OBJ_VERSIONING_OFF = 0, /* never set */
    CN_OBJ_VERSIONING_ENABLED,
    CN_OBJ_VERSIONING_SUSPENDED
} cn_objects_versioning_t;

/* A version's wire form: "null" for a null version, else 13 characters of
 * base32 (0-9a-v) of version_id, fixed width, so that string order is
 * sequence order.  Pure. */
CN_API void cn_objects_version_str(int64_t version_id, bool vnull,
                                   char out[CN_OBJECTS_VERSION_ID_MAX]);
/* Parses a wire form: *is_null for "null" (*version_id 0), else the id.
 * CN_E_INVALID for anything else.  Pure. */
CN_API cn_err_t cn_objects_version_parse(const char *s, int64_t *version_id, bool *is_null);

/* GetBucketVersioning / PutBucketVersioning.  set: Enabled or Suspended only
 * (CN_E_INVALID, VERSIONING_STATE_INVALID: there is no way back to off);
 * Suspended on a bucket with object lock (setting "object-lock") is
 * CN_E_CONFLICT, BUCKET_STATE_INVALID. */
CN_API cn_err_t cn_objects_versioning_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          cn_objects_versioning_t *out);
CN_API cn_err_t cn_objects_versioning_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          cn_objects_versioning_t state);

/* HeadObject / GetObject of one version (wire form; NULL = the current one,
 * as cn_objects_head / cn_objects_get).  CN_E_INVALID (VERSION_ID_INVALID),
 * CN_E_NOT_FOUND (NO_SUCH_VERSION), CN_E_UNSUPPORTED (VERSION_IS_MARKER, with
 * info->delete_marker and its id set). */
CN_API cn_err_t cn_objects_head_version(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                        const char *key, const char *version,
                                        cn_object_info_t *info);
CN_API cn_err_t cn_objects_get_version(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                       const char *key, const char *version,
                                       const cn_objects_range_t *range, cn_object_info_t *info,
                                       cn_objects_reader_t **rd);

/* cn_objects_object_parts of one version (wire form; NULL = the current
 * one), with the errors of cn_objects_head_version. */
CN_API cn_err_t cn_objects_object_parts_version(cn_objects_t *o, cn_objects_req_t *rq,
                                                const char *bucket, const char *key,
                                                const char *version, cn_objects_part_fn fn,
                                                void *arg);

/* What a delete did: removed version version_id for good (delete_marker: it
 * was a marker), or wrote marker version_id (delete_marker); has_version
 * false when nothing was named (an unversioned delete). */
typedef struct cn_objects_delete_result {
    bool has_version;
    int64_t version_id;
    bool vnull;
    bool delete_marker;
} cn_objects_delete_result_t;

/* DeleteObject (s3:DeleteObject) with S3's versioning semantics: version
 * NULL deletes the key (Enabled: a new marker; Suspended: a null marker in
 * place of the null version; unversioned: the version is removed, and
 * CN_E_NOT_FOUND, what = KEY, when there is none), else removes that version
 * for good (a latest marker's removal makes the newest remaining version
 * current again), refused while it is locked (CN_E_DENIED, VERSION_LOCKED;
 * bypass: x-amz-bypass-governance-retention, honoured for GOVERNANCE when
 * the caller may).  res may be NULL. */
CN_API cn_err_t cn_objects_delete_version(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const char *key, const char *version,
                                          bool bypass_governance, cn_objects_delete_result_t *res);

/* ---- object lock (S3 Object Lock) --------------------------------------------------
 * A bucket with object lock keeps two named settings: "object-lock" (the
 * ObjectLockConfiguration document as the face stored it, for readback) and
 * "object-lock-default" (the default retention a new version gets, compact:
 * "GOVERNANCE D30", "COMPLIANCE Y2"; absent = none).  Object lock is never
 * turned off.  A version's retention and legal hold live in obj_version_lock.
 * The server clock decides whether a retention is still active. */
#define CN_OBJECTS_LOCK_ATTR "object-lock"
#define CN_OBJECTS_LOCK_DEFAULT_ATTR "object-lock-default"

/* CreateBucket with named settings written in the creating transaction
 * (settings[i].key = name, .value = NUL-terminated value; n ≤ 16), so that
 * no one ever sees the bucket without them (S3's object-lock-enabled
 * bucket: versioning "Enabled" and "object-lock").  Settings need the
 * token's bucket:configure as well as s3:CreateBucket (CN_E_DENIED).
 * Otherwise as cn_objects_bucket_create, which is this call with n = 0. */
CN_API cn_err_t cn_objects_bucket_create_with(cn_objects_t *o, cn_objects_req_t *rq,
                                              const char *name, const cn_authz_acl_t *acl,
                                              const cn_objects_kv_t *settings, size_t n,
                                              cn_bucket_info_t *out);

/* PutObjectLockConfiguration (s3:PutBucketObjectLockConfiguration): stores
 * doc (len bytes, the face's canonical document) as "object-lock" and
 * dflt (NULL = no default retention) as "object-lock-default", in one
 * transaction, only while the bucket's versioning is "Enabled" (else
 * CN_E_CONFLICT, BUCKET_STATE_INVALID).  dflt must parse
 * (cn_objects_lock_default_parse): CN_E_INVALID otherwise. */
CN_API cn_err_t cn_objects_lock_config_set(cn_objects_t *o, cn_objects_req_t *rq,
                                           const char *bucket, const char *doc, size_t len,
                                           const char *dflt);
/* GetObjectLockConfiguration (s3:GetBucketObjectLockConfiguration): the
 * stored document into doc.  CN_E_NOT_FOUND with what = ARG and
 * SETTING_UNSET when the bucket has no object lock. */
CN_API cn_err_t cn_objects_lock_config_get(cn_objects_t *o, cn_objects_req_t *rq,
                                           const char *bucket, cn_buf_t *doc);

/* The compact default retention ("GOVERNANCE D30" / "COMPLIANCE Y2": a mode,
 * then D days or Y years, 1..36500 days or 1..100 years) into *mode, *days
 * or *years (the other 0).  false when s (n bytes) is not one.  Pure. */
CN_API bool cn_objects_lock_default_parse(const char *s, size_t n, cn_objects_lock_mode_t *mode,
                                          int32_t *days, int32_t *years);
/* The retain-until date a default gives a version written at now_ms: days
 * of 86,400 s, years of 365 days, from the write.  Pure. */
CN_API int64_t cn_objects_lock_default_until(int32_t days, int32_t years, int64_t now_ms);

/* Get/PutObjectRetention and Get/PutObjectLegalHold on one version of key:
 * version NULL = the current version, else a version id as the face shows
 * it (ver's resolver; "null" = the null version).  Every call refuses a
 * bucket without object lock (CN_E_INVALID, LOCK_NOT_ENABLED) and a missing
 * key (CN_E_NOT_FOUND, what = KEY) or version (ver's details).
 *
 * retention_get (s3:GetObjectRetention) / legal_hold_get
 * (s3:GetObjectLegalHold): out->mode / until_ms and out->legal_hold (0/1)
 * of the version; CN_E_NOT_FOUND with LOCK_UNSET when it has no retention
 * (retention_get) or no lock row at all (legal_hold_get).
 *
 * retention_set (s3:PutObjectRetention): r->mode NONE removes the retention.
 * A retention in force (until in the future) may always be extended in its
 * own mode; anything else — shortening, removing, changing the mode — is
 * allowed for GOVERNANCE only with bypass and s3:BypassGovernanceRetention,
 * and never for COMPLIANCE, whoever asks (CN_E_DENIED, LOCK_RETAINED).  A
 * new until_ms must be in the future (CN_E_INVALID, LOCK_DATE_PAST).
 *
 * legal_hold_set (s3:PutObjectLegalHold): ON or OFF; no bypass needed. */
CN_API cn_err_t cn_objects_retention_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                         const char *key, const char *version,
                                         cn_objects_retention_t *out);
CN_API cn_err_t cn_objects_legal_hold_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const char *key, const char *version,
                                          cn_objects_retention_t *out);
CN_API cn_err_t cn_objects_retention_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                         const char *key, const char *version,
                                         const cn_objects_retention_t *r, bool bypass);
CN_API cn_err_t cn_objects_legal_hold_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                          const char *key, const char *version, bool on);

/* The lock row of version_id (as a read just found it), read WITHOUT any
 * authorization, for GET/HEAD to echo x-amz-object-lock-*: *out is zeroed
 * (mode NONE, legal_hold 0) when the version has none.  One indexed lookup
 * in its own read transaction.  CN_E_DB*. */
CN_API cn_err_t cn_objects_version_lock(cn_objects_t *o, int64_t version_id,
                                        cn_objects_retention_t *out);

/* ---- tagging and lifecycle configuration (S3; issue 25) ----------------------
 * A version's tags live with the version (obj_version_tag); the bucket's
 * lifecycle configuration is its "lifecycle" setting: the accepted document
 * for byte-exact readback and, ahead of it, the rules in a compact encoded
 * form the service matches without any XML.  docs/s3.md has the wire side. */
#define CN_OBJECTS_TAG_KEY_MAX 128    /* characters (UTF-8 code points) */
#define CN_OBJECTS_TAG_VALUE_MAX 256  /* characters */
#define CN_OBJECTS_BUCKET_TAGS_MAX 50 /* tags per bucket */

/* Checks a tag set against S3's limits: at most max tags, keys of 1..128
 * and values of 0..256 characters of valid UTF-8 with no control character
 * (U+0000..U+001F, U+007F: XML 1.0 cannot carry them back), unique keys,
 * none beginning "aws:" (reserved).  CN_E_INVALID with a one-line reason in
 * why (why_len > 0), or 0.  Pure. */
CN_API cn_err_t cn_objects_tags_check(const cn_objects_kv_t *tags, size_t n, size_t max, char *why,
                                      size_t why_len);

/* A version's tags as read; strings owned by the set. */
typedef struct cn_objects_tagset {
    cn_objects_kv_t *tags;
    size_t ntags;
    int64_t version_id; /* the version the tags belong to */
    bool vnull;
    bool bucket_versioned; /* versioning was ever set (S3 then answers x-amz-version-id) */
    cn_buf_t priv_;
} cn_objects_tagset_t;
CN_API void cn_objects_tagset_free(cn_objects_tagset_t *t); /* accepts a zeroed set */

/* GetObjectTagging (s3:GetObjectTagging, with s3:ExistingObjectTag/<k>):
 * version is the wire form (NULL = the current version).  CN_E_NOT_FOUND
 * (what = KEY: no such key, or its latest version is a delete marker;
 * NO_SUCH_VERSION), CN_E_INVALID (VERSION_ID_INVALID), CN_E_UNSUPPORTED
 * (VERSION_IS_MARKER), CN_E_DENIED.  out filled on success (free it). */
CN_API cn_err_t cn_objects_tags_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *key, const char *version, cn_objects_tagset_t *out);
/* PutObjectTagging (s3:PutObjectTagging, with s3:RequestObjectTag/<k>,
 * s3:RequestObjectTagKeys and s3:ExistingObjectTag/<k>): replaces the
 * version's tags with tags (checked with cn_objects_tags_check:
 * CN_E_INVALID, TAGS_INVALID).  tags NULL with n 0: DeleteObjectTagging
 * (s3:DeleteObjectTagging), which removes them all.  Errors as
 * cn_objects_tags_get.  res (may be NULL) receives version_id / vnull /
 * bucket_versioned (no tags). */
CN_API cn_err_t cn_objects_tags_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *key, const char *version,
                                    const cn_objects_kv_t *tags, size_t n,
                                    cn_objects_tagset_t *res);
/* The number of tags of version_id (x-amz-tagging-count on GET / HEAD of a
 * version the caller already read and was allowed): one indexed count, no
 * authorization.  CN_E_DB*. */
CN_API cn_err_t cn_objects_tags_count(cn_objects_t *o, int64_t version_id, uint32_t *n);

/* One lifecycle rule, as an adapter decoded and validated it.  Strings are
 * NUL-terminated and never hold NUL. */
#define CN_OBJECTS_LC_RULES_MAX 1000
#define CN_OBJECTS_LC_ID_MAX 255
typedef struct cn_objects_lc_rule {
    const char *id; /* 1..255 bytes, unique in the configuration */
    bool enabled;
    const char *prefix;          /* "" = every key */
    const cn_objects_kv_t *tags; /* all must be on the object */
    size_t ntags;
    int64_t size_gt, size_lt; /* ObjectSizeGreaterThan / LessThan; -1 = none */
    int32_t exp_days;         /* Expiration Days; 0 = none */
    int64_t exp_date_ms;      /* Expiration Date (midnight UTC); 0 = none */
    bool exp_marker;          /* ExpiredObjectDeleteMarker true */
    int32_t nc_days;          /* NoncurrentVersionExpiration NoncurrentDays; 0 = none */
    int32_t nc_newer;         /* NewerNoncurrentVersions; 0 = none */
    int32_t abort_days;       /* AbortIncompleteMultipartUpload; 0 = none */
} cn_objects_lc_rule_t;

/* A decoded configuration: rules (pointing into its own storage). */
typedef struct cn_objects_lc {
    cn_objects_lc_rule_t *rules;
    size_t nrules;
    const char *doc; /* the stored document, doc_len bytes */
    size_t doc_len;
    void *priv_;
} cn_objects_lc_t;

/* The stored value of rules[0..n) and their document (doc_len bytes): the
 * encoded rules then the document, appended to out.  CN_E_INVALID (too
 * many rules, an ID too long or repeated, a string with NUL, more than
 * CN_OBJECTS_TAGS_MAX tags), -ENOMEM.  Pure. */
CN_API cn_err_t cn_objects_lc_encode(const cn_objects_lc_rule_t *rules, size_t n, const char *doc,
                                     size_t doc_len, cn_buf_t *out);
/* Decodes a stored value (copied: v may go).  CN_E_CORRUPT, -ENOMEM.  Pure. */
CN_API cn_err_t cn_objects_lc_decode(const void *v, size_t len, cn_objects_lc_t *out);
CN_API void cn_objects_lc_free(cn_objects_lc_t *lc); /* accepts a zeroed one */

/* The expiration S3 announces for an object (x-amz-expiration): among lc's
 * enabled rules with an Expiration by Days or Date whose filter matches key
 * (prefix), size (strict bounds) and tags, the earliest expiry: Days counted
 * from last_modified_ms and rounded up to the next midnight UTC (day_ms
 * > 0: a test's day length, then unrounded), a Date as given.  1 with
 * *expiry_ms and rule_id (the rule's ID) set, or 0 when no rule applies.
 * Pure. */
CN_API int cn_objects_lc_expiry(const cn_objects_lc_t *lc, const char *key, uint64_t size,
                                const cn_objects_kv_t *tags, size_t ntags, int64_t last_modified_ms,
                                int64_t day_ms, int64_t *expiry_ms,
                                char rule_id[CN_OBJECTS_LC_ID_MAX + 1]);

/* Put / Get / DeleteBucketLifecycleConfiguration (s3:PutLifecycleConfiguration,
 * s3:GetLifecycleConfiguration; bucket:configure to change): set stores
 * cn_objects_lc_encode's value as the bucket's "lifecycle" setting (rules
 * NULL with n 0 deletes it); get appends the stored document to doc
 * (CN_E_NOT_FOUND, what = ARG, SETTING_UNSET when none). */
CN_API cn_err_t cn_objects_lifecycle_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                         const cn_objects_lc_rule_t *rules, size_t n,
                                         const char *doc, size_t doc_len);
CN_API cn_err_t cn_objects_lifecycle_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                         cn_buf_t *doc);
/* cn_objects_lc_expiry over bucket's configuration for version_id of key
 * (its size and last-modified time; its tags are read only when a rule that
 * could match filters on tags), read WITHOUT authorization, for the answer
 * to a read or write the caller already made: 1 / 0 as there; 0 as well
 * when the bucket has none.  No SQL while the rules cached under the
 * bucket's settings word hold (docs/architecture.md), else one read
 * transaction that refills that cache; plus one for the tags when needed; the compact rules are decoded per call (no
 * XML).  Blocks: never on an event loop.  CN_E_NOT_FOUND (bucket),
 * CN_E_DB*. */
CN_API int cn_objects_lifecycle_expiry(cn_objects_t *o, const char *bucket, const char *key,
                                       uint64_t size, int64_t version_id, int64_t last_modified_ms,
                                       int64_t *expiry_ms, char rule_id[CN_OBJECTS_LC_ID_MAX + 1]);

/* cn_objects_lifecycle_expiry for an answer built from an info whose
 * gen_word is word, or from a put's result whose lc_word is word: the rules
 * cached under that word, when there are, answer without reading the word
 * again (the rules are then a state current when the word was read, during
 * the request).  word 0: exactly cn_objects_lifecycle_expiry. */
CN_API int cn_objects_lifecycle_expiry_under(cn_objects_t *o, const char *bucket, uint64_t word,
                                             const char *key, uint64_t size, int64_t version_id,
                                             int64_t last_modified_ms, int64_t *expiry_ms,
                                             char rule_id[CN_OBJECTS_LC_ID_MAX + 1]);

/* cn_objects_lifecycle_expiry with no SQL and no blocking, for an event
 * loop: from the bucket's rules as the last blocking call decoded them,
 * while no settings write has touched the bucket since (object writes do
 * not invalidate them).  ntags: how many tags the
 * version has (its info's ntags).  1 / 0 as there, or CN_E_AGAIN when it
 * cannot answer so (rules not cached under the bucket's current
 * generation, or a tag filter that needs the version's tags): ask the
 * blocking call from a worker. */
CN_API int cn_objects_lifecycle_expiry_cached(cn_objects_t *o, const char *bucket, const char *key,
                                              uint64_t size, uint32_t ntags,
                                              int64_t last_modified_ms, int64_t *expiry_ms,
                                              char rule_id[CN_OBJECTS_LC_ID_MAX + 1]);

/* The lifecycle worker (docs/s3.md, "The lifecycle worker"): one thread
 * that applies the buckets' enabled lifecycle rules to stored objects and
 * uploads through the calls a client's DELETE and AbortMultipartUpload use
 * (so versioning, object lock, metrics and blob liveness apply), one runner
 * per fleet (a lease row in the metadata). */
typedef struct cn_objects_lc_opts {
    int64_t interval_ms; /* a bucket's passes start this far apart; 0 = 1 hour */
    int64_t max_ops;     /* actions per second, all buckets together; 0 = 1,000 */
    int64_t day_ms;      /* tests only: a lifecycle day; 0 = a real day, rounded */
    /* What names this node in the fleet's lease, stable across restarts
     * (cairnd: its data directory; hashed with the host name), so that a
     * restarted runner takes its lease back at once.  NULL: the process. */
    const char *holder;
    /* The node's id in the fleet's registry (cairnd's --node-id or
     * DATA/node.id), which names the lease instead of holder when set, so
     * that `cairn admin fleet status` shows which node runs the worker. */
    const char *node_id;
} cn_objects_lc_opts_t;

/* Starts the worker on o (opts copied; NULL = defaults); cn_objects_close
 * stops it.  With day_ms > 0 the worker wakes every max(1 s, day_ms / 10)
 * and the interval is that too.  CN_E_EXISTS when already started, -errno. */
CN_API cn_err_t cn_objects_lifecycle_start(cn_objects_t *o, const cn_objects_lc_opts_t *opts);

#ifdef __cplusplus
}
#endif
#endif
