/* Internals shared by the S3 face's files (src/s3); never included from
 * another module.
 *
 * One cn__s3_rq_t lives per request, from on_request to on_cleanup.  The
 * router fills who asks and what is named (bucket, key), then hands the
 * request to one operation function; an operation either answers at once or
 * installs body callbacks (on_body / on_end / on_cleanup) and answers from
 * on_end.  Operations talk to the objects service only. */
#ifndef CN_S3_INT_H
#define CN_S3_INT_H

#include "cairn/s3.h"
#include "cairn/crypto.h"

#include <stdbool.h>
#include <stdint.h>

struct cn_s3 {
    cn_objects_t *objects;
    cn_identity_t *identity;
    char *domain; /* NULL: path style only */
    size_t domain_len;
    char *region;           /* NULL: us-east-1 */
    uint64_t min_part_size; /* every part but the last, on complete */
};

typedef struct cn__s3_rq cn__s3_rq_t;

struct cn__s3_rq {
    cn_s3_t *s3;
    cn_http_req_t *r;
    cn_objects_req_t orq; /* principal points at .principal (or NULL) */
    cn_principal_t principal;
    bool anonymous;
    bool head;        /* HEAD: errors carry no body */
    uint64_t lc_word; /* GET / HEAD: its info's gen_word, for x-amz-expiration */
    char *bucket;     /* NULL: the service (no bucket named) */
    char *key;        /* NULL: no key; never "" */
    /* body handling installed by an operation (all may be NULL) */
    int (*on_body)(cn__s3_rq_t *q, const uint8_t *p, size_t n);
    void (*on_end)(cn__s3_rq_t *q);
    void (*on_cleanup)(cn__s3_rq_t *q);
    void *op; /* the operation's state, freed by on_cleanup */
    /* a collected (XML / JSON) body */
    cn_buf_t body;
    size_t body_max;
    cn_md5_t *md5;
    bool has_md5;
    uint8_t want_md5[CN_MD5_LEN];
    void (*collected)(cn__s3_rq_t *q);
};

/* ---- helpers (router.c) ------------------------------------------------ */
/* Answers an S3 error (no body for HEAD).  message NULL: the default. */
void cn__s3_error(cn__s3_rq_t *q, cn_s3_err_t e, const char *message);
/* Answers a failed service call: err with q->orq's what and fail.detail
 * picks the code through cn__s3_err_of; side prefixes the message. */
void cn__s3_fail(cn__s3_rq_t *q, cn_err_t err);
/* cn_s3_err_from (cairn/s3.h, the one error table), under the name the
 * adapter's files and its unit tests use. */
cn_s3_err_t cn__s3_err_of(const cn_objects_req_t *orq, cn_err_t err);
/* The S3 route's callbacks (cn_s3_register adds the body cap and registers
 * it); its err_of answers a callback's failure through cn__s3_err_of. */
void cn__s3_route(cn_s3_t *s3, cn_http_route_t *out);
/* Answers an XML document (200 unless status says otherwise). */
void cn__s3_xml(cn__s3_rq_t *q, int status, cn_xml_writer_t *w);
/* Answers a stored configuration document read by a service call that
 * returned e: doc as application/xml (200) on success, else unset (the
 * configuration's own NoSuch*) for CN_E_NOT_FOUND about ARG, else the
 * failure.  Frees doc in every case. */
void cn__s3_answer_doc(cn__s3_rq_t *q, cn_err_t e, cn_buf_t *doc, cn_s3_err_t unset);
/* Answers a mutation that returned e: status with no body, or the failure. */
void cn__s3_answer_done(cn__s3_rq_t *q, cn_err_t e, int status);
/* The Get and Delete of a configuration stored as the bucket's named
 * setting attr (authorized as act): Get answers it through
 * cn__s3_answer_doc (unset: its NoSuch*); Delete answers 204, also when it
 * was not set. */
void cn__s3_setting_get(cn__s3_rq_t *q, const char *attr, cn_authz_action_t act, cn_s3_err_t unset);
void cn__s3_setting_delete(cn__s3_rq_t *q, const char *attr, cn_authz_action_t act);
/* "Wed, 21 Oct 2015 07:28:00 GMT" */
#define CN__S3_HTTP_DATE_MAX 40
void cn__s3_http_date(int64_t unix_ms, char out[CN__S3_HTTP_DATE_MAX]);
/* "2015-10-21T07:28:00.000Z" */
void cn__s3_iso_date(int64_t unix_ms, char out[CN_RFC3339_LEN]);
/* Parses an HTTP date (RFC 1123, RFC 850 or asctime) into Unix ms. */
bool cn__s3_parse_http_date(const char *s, int64_t *unix_ms);
/* etag in double quotes ("" stays empty quotes). */
#define CN__S3_ETAG_MAX (CN_ETAG_MAX + 3)
void cn__s3_quote_etag(const char *etag, char out[CN__S3_ETAG_MAX]);
/* Commits the upload session *put (taken: NULL afterwards, whatever the
 * outcome) into res, and its etag quoted into etag.  false after answering
 * the failure. */
bool cn__s3_put_commit(cn__s3_rq_t *q, cn_objects_put_t **put, cn_objects_put_result_t *res,
                       char etag[CN__S3_ETAG_MAX]);
/* Answers 200 with a copy's result document (root: "CopyObjectResult",
 * "CopyPartResult"): LastModified and the quoted ETag of res. */
void cn__s3_copy_result(cn__s3_rq_t *q, const char *root, const cn_objects_put_result_t *res);
/* Content-MD5: 0 when absent, 1 with out filled, or CN_E_INVALID (the
 * request was answered InvalidDigest). */
int cn__s3_content_md5(cn__s3_rq_t *q, uint8_t out[CN_MD5_LEN]);
/* Collects the request body (at most max bytes; MalformedXML / EntityTooLarge
 * past it, BadDigest on a Content-MD5 mismatch) and then calls done, which
 * must answer.  Returns 0, or the request was answered. */
int cn__s3_collect(cn__s3_rq_t *q, size_t max, void (*done)(cn__s3_rq_t *q));
/* Parses the collected body as XML.  NULL after answering MalformedXML
 * (or MissingRequestBodyError for an empty body when required). */
cn_xml_doc_t *cn__s3_body_xml(cn__s3_rq_t *q, bool required);
/* A decimal query / header value in [lo, hi]; def when absent.  false after
 * answering InvalidArgument. */
bool cn__s3_int_arg(cn__s3_rq_t *q, const char *value, const char *what, int64_t lo, int64_t hi,
                    int64_t def, int64_t *out);
/* The owner element pair (ID, DisplayName) for an account name. */
void cn__s3_owner(cn_xml_writer_t *w, const char *elem, const char *account);
/* Appends s URL-encoded as S3 does for encoding-type=url (keeps '/'). */
void cn__s3_url_text(cn_xml_writer_t *w, const char *elem, const char *s, bool url);

/* The standard headers stored as metadata under these exact names (and
 * answered as those headers again on GET / HEAD). */
#define CN__S3_SYSTEM_META_COUNT 5
extern const char *const cn__s3_system_meta[CN__S3_SYSTEM_META_COUNT];

/* Put arguments from headers: content type, x-amz-meta-*, canned ACL,
 * If-None-Match / If-Match.  Storage for the strings stays in *h. */
typedef struct cn__s3_put_hdrs {
    cn_objects_put_args_t args;
    cn_objects_kv_t *meta;
    size_t nmeta;
    char *names; /* lowercased metadata names, NUL-separated */
    cn_authz_acl_t *acl;
    cn_objects_retention_t retention; /* x-amz-object-lock-* (args.retention when given) */
} cn__s3_put_hdrs_t;
/* false after answering (InvalidArgument, MetadataTooLarge, NotImplemented,
 * and the object-lock headers' answers: cn__s3_lock_hdrs). */
bool cn__s3_put_hdrs(cn__s3_rq_t *q, cn__s3_put_hdrs_t *h, bool conditions);
void cn__s3_put_hdrs_free(cn__s3_put_hdrs_t *h);
/* The owner of q->bucket (for bucket-owner-* canned ACLs); "" if unknown. */
void cn__s3_bucket_owner(cn__s3_rq_t *q, char out[CN_ACCOUNT_NAME_MAX + 1]);

/* ---- operations: each answers, or installs body callbacks --------------- */
/* bucket.c */
void cn__s3_list_buckets(cn__s3_rq_t *q);
void cn__s3_create_bucket(cn__s3_rq_t *q);
void cn__s3_delete_bucket(cn__s3_rq_t *q);
void cn__s3_head_bucket(cn__s3_rq_t *q);
void cn__s3_get_location(cn__s3_rq_t *q);
/* list.c */
void cn__s3_list_objects(cn__s3_rq_t *q);
void cn__s3_list_versions(cn__s3_rq_t *q); /* ListObjectVersions */
/* object.c */
void cn__s3_put_object(cn__s3_rq_t *q);
void cn__s3_get_object(cn__s3_rq_t *q); /* GET and HEAD */
void cn__s3_delete_object(cn__s3_rq_t *q);
void cn__s3_delete_objects(cn__s3_rq_t *q);
void cn__s3_copy_object(cn__s3_rq_t *q);
void cn__s3_get_object_attributes(cn__s3_rq_t *q);
/* Parses x-amz-copy-source ("bucket/key", "/bucket/key", URL-encoded, an
 * optional "?versionId=" into *version, else NULL) into malloc'd strings.
 * false after answering. */
bool cn__s3_copy_source(cn__s3_rq_t *q, char **bucket, char **key, char **version);
/* The copy source conditions (x-amz-copy-source-if-*).  false after answering. */
bool cn__s3_copy_conditions(cn__s3_rq_t *q, cn_objects_copy_args_t *ca);
/* UploadPart's body path: the put session for part of upload_id. */
void cn__s3_put_part(cn__s3_rq_t *q, const char *upload_id, int32_t part);
/* Conditional headers (names given: plain or x-amz-copy-source-*) against
 * an object's etag and mtime: NONE, PreconditionFailed, or NotModified
 * (GET/HEAD only; a copy answers PreconditionFailed instead). */
cn_s3_err_t cn__s3_conditions(cn__s3_rq_t *q, const char *etag, int64_t mtime_ms,
                              const char *h_match, const char *h_none, const char *h_ms,
                              const char *h_ums, bool is_copy);
/* Streams a reader into a put session (UploadPartCopy). */
cn_err_t cn__s3_reader_to_put(cn_objects_reader_t *rd, cn_objects_put_t *p);
/* multipart.c */
void cn__s3_mpu_create(cn__s3_rq_t *q);
void cn__s3_mpu_upload_part(cn__s3_rq_t *q);
void cn__s3_mpu_upload_part_copy(cn__s3_rq_t *q);
void cn__s3_mpu_complete(cn__s3_rq_t *q);
void cn__s3_mpu_abort(cn__s3_rq_t *q);
void cn__s3_mpu_list_parts(cn__s3_rq_t *q);
void cn__s3_mpu_list_uploads(cn__s3_rq_t *q);
/* policy.c */
void cn__s3_policy_get(cn__s3_rq_t *q);
void cn__s3_policy_put(cn__s3_rq_t *q);
void cn__s3_policy_delete(cn__s3_rq_t *q);
void cn__s3_policy_status(cn__s3_rq_t *q);

/* acl.c */
void cn__s3_acl_get(cn__s3_rq_t *q); /* bucket (no key) or object */
void cn__s3_acl_put(cn__s3_rq_t *q);
void cn__s3_pab_get(cn__s3_rq_t *q);
void cn__s3_pab_put(cn__s3_rq_t *q);
void cn__s3_pab_delete(cn__s3_rq_t *q);
/* Whether the request carries an ACL: a canned one (x-amz-acl, or its
 * signed query parameter) or x-amz-grant-* headers. */
bool cn__s3_acl_in_request(cn__s3_rq_t *q);
/* The ACL a request carries for a new or changed resource owned by owner:
 * x-amz-acl (or the signed x-amz-acl query parameter of a presigned URL),
 * or the x-amz-grant-* headers (then exactly those grants).  *present false
 * when it carries neither; *canned_out (may be NULL) names the canned ACL.
 * bucket_owner ("" / NULL if unknown) is for bucket-owner-* on objects.
 * false after answering InvalidArgument (unknown canned ACL or grantee),
 * UnresolvableGrantByEmailAddress or InvalidRequest (both forms). */
bool cn__s3_acl_from_request(cn__s3_rq_t *q, const char *owner, const char *bucket_owner,
                             bool for_bucket, cn_authz_acl_t *acl, bool *present,
                             const char **canned_out);
/* Writes an AccessControlPolicy document for acl. */
void cn__s3_acl_xml(cn_xml_writer_t *w, const cn_authz_acl_t *acl);

/* Grantees as a request writes them, resolved by fn to the ACL's form:
 * *type and, for CN_GRANTEE_USER, id (the account name).  fn returns NONE or
 * the S3 error to answer (InvalidArgument, UnresolvableGrantByEmailAddress). */
typedef enum {
    CN__GRANTEE_ID,
    CN__GRANTEE_EMAIL,
    CN__GRANTEE_URI
} cn__grantee_kind_t;
typedef cn_s3_err_t (*cn__grantee_fn)(void *ctx, cn__grantee_kind_t kind, const char *v, size_t n,
                                      cn_grantee_type_t *type, char id[CN_ACCOUNT_NAME_MAX + 1]);
/* One x-amz-grant-* value ('id="a", emailAddress="b", uri="c"', n bytes):
 * appends a perm grant per grantee to acl.  NONE, InvalidArgument (syntax),
 * MalformedACLError (over 100 grants) or fn's error.  Pure apart from fn. */
cn_s3_err_t cn__s3_grant_header_parse(const char *v, size_t n, uint32_t perm, cn__grantee_fn fn,
                                      void *ctx, cn_authz_acl_t *acl);
/* An AccessControlPolicy document: grants appended to acl (initialised by
 * the caller), the Owner/ID written to owner ("" when absent).  NONE,
 * MalformedACLError, InvalidArgument or fn's error.  Pure apart from fn. */
cn_s3_err_t cn__s3_acl_xml_parse(const cn_xml_doc_t *d, cn__grantee_fn fn, void *ctx,
                                 cn_authz_acl_t *acl, char owner[CN_ACCOUNT_NAME_MAX + 1]);

/* versioning.c */
void cn__s3_versioning_get(cn__s3_rq_t *q);
void cn__s3_versioning_put(cn__s3_rq_t *q);
/* Answers header name = the wire form of a version, unless it is a null
 * version of a bucket whose versioning was never set (S3 names none). */
void cn__s3_version_header(cn__s3_rq_t *q, const char *name, int64_t version_id, bool vnull,
                           bool versioned);
/* x-amz-delete-marker: true and the marker's x-amz-version-id, when info
 * says a read met a delete marker; nothing otherwise. */
void cn__s3_marker_headers(cn__s3_rq_t *q, const cn_object_info_t *info);

/* cors.c */
void cn__s3_cors_get(cn__s3_rq_t *q);
void cn__s3_cors_put(cn__s3_rq_t *q);
void cn__s3_cors_delete(cn__s3_rq_t *q);
void cn__s3_cors_preflight(cn__s3_rq_t *q); /* OPTIONS on a bucket or object */
/* For a request with an Origin header on a bucket: adds the matching CORS
 * rule's response headers (nothing when none matches).  Never answers. */
void cn__s3_cors_actual(cn__s3_rq_t *q);
/* Validates a CORSConfiguration document and appends its canonical form
 * to out.  NONE, MalformedXML, InvalidRequest (unsupported method, more
 * than one wildcard); -ENOMEM as InternalError.  Pure. */
cn_s3_err_t cn__s3_cors_normalize(const cn_xml_doc_t *d, cn_buf_t *out, char *why, size_t why_len);
/* The first rule of a (validated) configuration matching origin, method and
 * the comma-separated request headers (NULL: none): its node, or -1. */
int cn__s3_cors_match(const cn_xml_doc_t *d, const char *origin, const char *method,
                      const char *req_headers);

/* lock.c: S3 Object Lock */
void cn__s3_lock_config_get(cn__s3_rq_t *q); /* GET ?object-lock */
void cn__s3_lock_config_put(cn__s3_rq_t *q); /* PUT ?object-lock */
void cn__s3_retention_get(cn__s3_rq_t *q);   /* GET key?retention[&versionId] */
void cn__s3_retention_put(cn__s3_rq_t *q);
void cn__s3_legal_hold_get(cn__s3_rq_t *q); /* GET key?legal-hold[&versionId] */
void cn__s3_legal_hold_put(cn__s3_rq_t *q);
/* The x-amz-object-lock-mode / -retain-until-date / -legal-hold headers of
 * a write (PutObject, CopyObject, CreateMultipartUpload) into *r (mode NONE
 * and legal_hold -1 for what is absent); *given is true when any was sent,
 * then pass r as the put args' retention.  false after answering
 * InvalidArgument (mode without date or the reverse, an unknown mode, a
 * date not ISO 8601 or not in the future, a hold not ON/OFF).  The token's
 * object:lock (AccessDenied) and the bucket's object lock (InvalidRequest) are
 * checked by the service when the write begins (cn__lock_put_check). */
bool cn__s3_lock_hdrs(cn__s3_rq_t *q, cn_objects_retention_t *r, bool *given);
/* Adds x-amz-object-lock-mode / -retain-until-date / -legal-hold for a
 * version's lock row (nothing for a version without one). */
void cn__s3_lock_echo(cn__s3_rq_t *q, const cn_objects_retention_t *r);
/* The same for version_id, read by cn_objects_version_lock (one indexed
 * lookup; blocks: never call it on the event loop). */
void cn__s3_lock_echo_version(cn__s3_rq_t *q, int64_t version_id);
/* An ISO 8601 date-time with Z or a ±HH:MM offset (fractions to the ms)
 * into Unix ms.  Pure. */
bool cn__s3_lock_date(const char *s, size_t n, int64_t *unix_ms);
/* Validates an ObjectLockConfiguration document: its canonical form into
 * out, its compact default retention into dflt ("" for none).  NONE,
 * MalformedXML, InvalidRetentionPeriod.  Pure. */
cn_s3_err_t cn__s3_lock_config_parse(const cn_xml_doc_t *d, cn_buf_t *out, char dflt[32]);
/* The configuration of a bucket created with object lock enabled. */
cn_err_t cn__s3_lock_config_initial(cn_buf_t *out);
/* Retention (Mode + RetainUntilDate, or neither) and LegalHold (ON/OFF)
 * documents.  NONE or MalformedXML.  Pure. */
cn_s3_err_t cn__s3_retention_parse(const cn_xml_doc_t *d, cn_objects_retention_t *r);
cn_s3_err_t cn__s3_legal_hold_parse(const cn_xml_doc_t *d, bool *on);

/* tagging.c: object and bucket tagging, x-amz-tagging */
void cn__s3_obj_tagging_get(cn__s3_rq_t *q);
void cn__s3_obj_tagging_put(cn__s3_rq_t *q);
void cn__s3_obj_tagging_delete(cn__s3_rq_t *q);
void cn__s3_bucket_tagging_get(cn__s3_rq_t *q);
void cn__s3_bucket_tagging_put(cn__s3_rq_t *q);
void cn__s3_bucket_tagging_delete(cn__s3_rq_t *q);
/* A tag set a request carries (strings in store). */
#define CN__S3_TAGS_CAP CN_OBJECTS_BUCKET_TAGS_MAX
typedef struct cn__s3_tags {
    bool present; /* the request carried a tag set (an empty one too) */
    size_t n;
    cn_objects_kv_t kv[CN__S3_TAGS_CAP];
    cn_buf_t store;
} cn__s3_tags_t;
void cn__s3_tags_free(cn__s3_tags_t *t); /* accepts a zeroed set */
/* x-amz-tagging (PutObject, CreateMultipartUpload, CopyObject with REPLACE):
 * *out filled (out->present false when the header is absent; then n 0);
 * point the put args' tags / ntags at out->kv / out->n and free it after
 * the call.  false after answering InvalidTag. */
bool cn__s3_tagging_header(cn__s3_rq_t *q, cn__s3_tags_t *out);
/* x-amz-tagging-directive of CopyObject: 0 COPY (also when absent: the
 * source version's tags go with the copy), 1 REPLACE (the x-amz-tagging
 * header's set, none when absent), -1 after answering InvalidArgument. */
int cn__s3_tagging_directive(cn__s3_rq_t *q);
/* Pure parsers (tested and fuzzed apart): the URL-encoded k=v&k=v form and
 * a Tagging document, each into *out with at most max tags and the limits
 * of cn_objects_tags_check.  NONE, InvalidTag or MalformedXML with a reason
 * in why (may stay ""); free *out whatever the result. */
cn_s3_err_t cn__s3_tags_parse_query(const char *s, size_t len, size_t max, cn__s3_tags_t *out,
                                    char *why, size_t why_len);
cn_s3_err_t cn__s3_tags_parse_xml(const cn_xml_doc_t *d, size_t max, cn__s3_tags_t *out, char *why,
                                  size_t why_len);
/* Writes a Tagging document of kv[0..n). */
void cn__s3_tags_xml(cn_xml_writer_t *w, const cn_objects_kv_t *kv, size_t n);

/* lifecycle.c: Get / Put / DeleteBucketLifecycleConfiguration */
void cn__s3_lifecycle_get(cn__s3_rq_t *q);
void cn__s3_lifecycle_put(cn__s3_rq_t *q);
void cn__s3_lifecycle_delete(cn__s3_rq_t *q);
/* A decoded LifecycleConfiguration: its rules (strings point into the
 * document or into ids), and the document to store (the one sent, or its
 * canonical re-encoding when a rule had no ID and was given one). */
typedef struct cn__s3_lc {
    cn_objects_lc_rule_t *rules;
    size_t nrules;
    cn_objects_kv_t *tags; /* the rules' tag filters */
    char *ids;             /* generated IDs */
    cn_buf_t doc;          /* the re-encoding, when generated (else empty) */
    bool generated;
} cn__s3_lc_t;
void cn__s3_lc_free(cn__s3_lc_t *lc);
/* Validates a LifecycleConfiguration document into *out (whose strings
 * point into d: keep d while out is used).  NONE; MalformedXML,
 * InvalidArgument, InvalidRequest, InvalidTag with a reason in why; or
 * NotImplemented for a valid transition (one storage class here).  Free
 * *out whatever the result.  Pure but for the random generated IDs. */
cn_s3_err_t cn__s3_lc_parse(const cn_xml_doc_t *d, cn__s3_lc_t *out, char *why, size_t why_len);
/* x-amz-expiration for the answer to a GET, HEAD or PUT of version_id of
 * key (its size, tag count, last-modified time) in q->bucket: added when an
 * enabled rule expires it (cn_objects_lifecycle_expiry).  Never answers and
 * never fails the request.  On an event loop it answers from the rules
 * cached per bucket generation (cn_objects_lifecycle_expiry_cached) and
 * returns false, adding nothing, when they cannot say: then decline to a
 * worker; else true. */
bool cn__s3_expiration_header(cn__s3_rq_t *q, const char *key, uint64_t size, int64_t version_id,
                              uint32_t ntags, int64_t last_modified_ms);
/* The header's value: expiry-date="<HTTP date>", rule-id="<ID>" (control
 * characters, '"', '\\' and '%' of the ID percent-encoded), appended. */
void cn__s3_expiration_value(int64_t expiry_ms, const char *rule_id, cn_buf_t *out);

/* post.c */
void cn__s3_post_object(cn__s3_rq_t *q); /* POST /bucket, multipart/form-data */

/* The multipart/form-data parser: incremental over any slicing of the body,
 * no allocation; part data reaches the callbacks as slices of the input (or
 * of the delimiter, for bytes held back by a partial match). */
#define CN__FORM_BOUNDARY_MAX 70 /* RFC 2046 */
#define CN__FORM_NAME_MAX 256
#define CN__FORM_FILENAME_MAX 1024
#define CN__FORM_MAX_HEADERS 16
typedef struct cn__form_part {
    char name[CN__FORM_NAME_MAX + 1];
    char filename[CN__FORM_FILENAME_MAX + 1];
    bool has_filename;
    char content_type[256];
} cn__form_part_t;
typedef struct cn__form_cb {
    int (*part)(void *ctx, const cn__form_part_t *p);   /* a part's headers are in */
    int (*data)(void *ctx, const uint8_t *p, size_t n); /* its next bytes */
    int (*part_end)(void *ctx);                         /* it ended */
} cn__form_cb_t;
typedef struct cn__form {
    char delim[4 + CN__FORM_BOUNDARY_MAX + 1]; /* "\r\n--" boundary */
    size_t dlen;
    size_t match;
    int state;
    char line[2048];
    size_t line_len;
    int nheaders;
    bool has_name;
    cn__form_part_t part;
} cn__form_t;
/* The boundary parameter of a multipart/form-data Content-Type, checked
 * against RFC 2046's characters.  false when absent or invalid. */
bool cn__form_boundary(const char *content_type, char *out, size_t cap);
void cn__form_init(cn__form_t *f, const char *boundary);
/* 0, CN_E_INVALID (malformed), or a callback's negative return; after an
 * error the parser stays failed. */
int cn__form_feed(cn__form_t *f, const uint8_t *p, size_t n, const cn__form_cb_t *cb, void *ctx);
/* true once the closing delimiter was seen. */
bool cn__form_done(const cn__form_t *f);

/* A form field for the policy check (value NUL-terminated at vlen). */
typedef struct cn__post_field {
    char *name;
    size_t nlen;
    char *value;
    size_t vlen;
    bool covered; /* out: a condition named it */
} cn__post_field_t;
/* Checks a POST policy document (JSON, len bytes) for bucket at now_ms
 * against the fields: expiration, every condition, every non-exempt field
 * covered.  *len_min / *len_max from content-length-range (0 / INT64_MAX
 * without one).  NONE, InvalidPolicyDocument or AccessDenied with why. */
cn_s3_err_t cn__s3_post_policy_check(const char *json, size_t len, int64_t now_ms,
                                     const char *bucket, cn__post_field_t *fs, size_t nf,
                                     int64_t *len_min, int64_t *len_max, char *why, size_t why_len);

#endif
