/* cairn authz: the one authorization decision for every face (Jay native, S3,
 * blob operations), over facts the caller passes in.
 *
 * It holds the S3 access model: actions, access control lists (canned ACLs,
 * grants, a canonical JSON serialization for storage), bucket policies (JSON
 * parsed with jansson into an immutable, thread-shareable form), the public
 * access block, the native protocol's bucket visibility, and blob namespace
 * grants.  It is pure computation: it never touches SQL, files or sockets and
 * never logs; callers look the facts up, call cn_authz_decide, and log the
 * reason it hands back.  The evaluation order is written out in docs/authz.md.
 */
#ifndef CAIRN_AUTHZ_H
#define CAIRN_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/identity.h" /* cn_perms_t, CN_PERM_*, CN_ACCOUNT_NAME_MAX, cn_ns_grant_t */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- actions ---------------------------------------------------------------
 * The S3 action vocabulary (as IAM spells it) that every face's operations
 * map onto; the table of which operation uses which action, and which token
 * permission each action needs, is in docs/authz.md. */
typedef enum {
    CN_ACT_INVALID = 0,
    /* account level: no bucket facts */
    CN_ACT_LIST_ALL_MY_BUCKETS, /* s3:ListAllMyBuckets       bucket:list   */
    CN_ACT_CREATE_BUCKET,       /* s3:CreateBucket           bucket:create */
    /* bucket level */
    CN_ACT_DELETE_BUCKET,                  /* s3:DeleteBucket           bucket:delete */
    CN_ACT_LIST_BUCKET,                    /* s3:ListBucket             object:list   */
    CN_ACT_LIST_BUCKET_VERSIONS,           /* s3:ListBucketVersions     object:list   */
    CN_ACT_LIST_BUCKET_MULTIPART_UPLOADS,  /* s3:ListBucketMultipartUploads object:list */
    CN_ACT_GET_BUCKET_LOCATION,            /* s3:GetBucketLocation      bucket:list   */
    CN_ACT_GET_BUCKET_ACL,                 /* s3:GetBucketAcl           bucket:list   */
    CN_ACT_PUT_BUCKET_ACL,                 /* s3:PutBucketAcl           bucket:create */
    CN_ACT_GET_BUCKET_POLICY,              /* s3:GetBucketPolicy        bucket:list   */
    CN_ACT_PUT_BUCKET_POLICY,              /* s3:PutBucketPolicy        bucket:create */
    CN_ACT_DELETE_BUCKET_POLICY,           /* s3:DeleteBucketPolicy     bucket:create */
    CN_ACT_GET_BUCKET_POLICY_STATUS,       /* s3:GetBucketPolicyStatus  bucket:list   */
    CN_ACT_GET_BUCKET_PUBLIC_ACCESS_BLOCK, /* s3:GetBucketPublicAccessBlock bucket:list */
    CN_ACT_PUT_BUCKET_PUBLIC_ACCESS_BLOCK, /* s3:PutBucketPublicAccessBlock bucket:create */
    CN_ACT_GET_BUCKET_CORS,                /* s3:GetBucketCORS          bucket:list   */
    CN_ACT_PUT_BUCKET_CORS,                /* s3:PutBucketCORS          bucket:create */
    CN_ACT_GET_BUCKET_TAGGING,             /* s3:GetBucketTagging       bucket:list   */
    CN_ACT_PUT_BUCKET_TAGGING,             /* s3:PutBucketTagging       bucket:configure */
    /* object level: a key */
    CN_ACT_GET_OBJECT,                  /* s3:GetObject              object:get    */
    CN_ACT_GET_OBJECT_ATTRIBUTES,       /* s3:GetObjectAttributes    object:get    */
    CN_ACT_PUT_OBJECT,                  /* s3:PutObject              object:put    */
    CN_ACT_DELETE_OBJECT,               /* s3:DeleteObject           object:delete */
    CN_ACT_GET_OBJECT_ACL,              /* s3:GetObjectAcl           object:get    */
    CN_ACT_PUT_OBJECT_ACL,              /* s3:PutObjectAcl           object:put    */
    CN_ACT_GET_OBJECT_TAGGING,          /* s3:GetObjectTagging       object:get    */
    CN_ACT_PUT_OBJECT_TAGGING,          /* s3:PutObjectTagging       object:put    */
    CN_ACT_DELETE_OBJECT_TAGGING,       /* s3:DeleteObjectTagging    object:put    */
    CN_ACT_ABORT_MULTIPART_UPLOAD,      /* s3:AbortMultipartUpload   object:put    */
    CN_ACT_LIST_MULTIPART_UPLOAD_PARTS, /* s3:ListMultipartUploadParts object:put */
    /* object lock (issue 25): governed by the bucket, never granted by an ACL */
    CN_ACT_GET_BUCKET_OBJECT_LOCK_CONFIGURATION, /* s3:GetBucketObjectLockConfiguration bucket:list */
    CN_ACT_PUT_BUCKET_OBJECT_LOCK_CONFIGURATION, /* s3:PutBucketObjectLockConfiguration bucket:configure */
    CN_ACT_GET_OBJECT_RETENTION,                 /* s3:GetObjectRetention     object:get    */
    CN_ACT_PUT_OBJECT_RETENTION,                 /* s3:PutObjectRetention     object:lock   */
    CN_ACT_GET_OBJECT_LEGAL_HOLD,                /* s3:GetObjectLegalHold     object:get    */
    CN_ACT_PUT_OBJECT_LEGAL_HOLD,                /* s3:PutObjectLegalHold     object:lock   */
    CN_ACT_BYPASS_GOVERNANCE_RETENTION, /* s3:BypassGovernanceRetention object:bypass-governance */
    /* lifecycle configuration (issue 25): bucket settings */
    CN_ACT_GET_LIFECYCLE_CONFIGURATION, /* s3:GetLifecycleConfiguration bucket:list */
    CN_ACT_PUT_LIFECYCLE_CONFIGURATION, /* s3:PutLifecycleConfiguration bucket:configure */
    /* versioning (issue 25): a bucket setting */
    CN_ACT_GET_BUCKET_VERSIONING, /* s3:GetBucketVersioning      bucket:list   */
    CN_ACT_PUT_BUCKET_VERSIONING, /* s3:PutBucketVersioning      bucket:configure */
    CN_ACT_END
} cn_authz_action_t;

/* "s3:GetObject" for an action; NULL for CN_ACT_INVALID or out of range. */
CN_API const char *cn_authz_action_name(cn_authz_action_t act);
/* Parses an action name (case-insensitive, as IAM compares them) of len bytes;
 * CN_ACT_INVALID if unknown. */
CN_API cn_authz_action_t cn_authz_action_parse(const char *name, size_t len);
/* The token permission the action needs (one CN_PERM_* bit); 0 for invalid. */
CN_API cn_perms_t cn_authz_action_perm(cn_authz_action_t act);
/* true for actions that name an object (need a key). */
CN_API bool cn_authz_action_is_object(cn_authz_action_t act);

/* ---- source addresses ------------------------------------------------------ */
typedef struct cn_authz_ip {
    uint8_t family;   /* 0 = unknown, 4 or 6 */
    uint8_t addr[16]; /* network order; v4 uses the first 4 bytes */
} cn_authz_ip_t;

/* Fills *out from a socket address (AF_INET / AF_INET6; an IPv4-mapped IPv6
 * address becomes IPv4, so dual-stack listeners match IPv4 CIDRs).  Any other
 * family gives family 0.  Never fails. */
CN_API void cn_authz_ip_from_sockaddr(const struct sockaddr *sa, cn_authz_ip_t *out);
/* Parses a textual v4 or v6 address (NUL-terminated; mapped v6 → v4).
 * CN_E_INVALID if it is neither. */
CN_API cn_err_t cn_authz_ip_parse(const char *s, cn_authz_ip_t *out);

/* ---- access control lists --------------------------------------------------- */
enum { /* S3 ACL permissions, as bits */
    CN_ACL_READ = 1u << 0,
    CN_ACL_WRITE = 1u << 1,
    CN_ACL_READ_ACP = 1u << 2,
    CN_ACL_WRITE_ACP = 1u << 3,
    CN_ACL_FULL_CONTROL = 1u << 4,
};

typedef enum {
    CN_GRANTEE_USER = 1,   /* a canonical id: an account name */
    CN_GRANTEE_ALL_USERS,  /* http://acs.amazonaws.com/groups/global/AllUsers */
    CN_GRANTEE_AUTH_USERS, /* http://acs.amazonaws.com/groups/global/AuthenticatedUsers */
    CN_GRANTEE_LOG_DELIVERY, /* http://acs.amazonaws.com/groups/s3/LogDelivery (never a cairn caller) */
} cn_grantee_type_t;

#define CN_ACL_MAX_GRANTS 100 /* S3's limit per ACL */

typedef struct cn_authz_grant {
    uint8_t type;                     /* cn_grantee_type_t */
    uint8_t perm;                     /* exactly one CN_ACL_* bit */
    char id[CN_ACCOUNT_NAME_MAX + 1]; /* CN_GRANTEE_USER only, else "" */
} cn_authz_grant_t;

/* An ACL is plain data (no pointers): copy it, keep it on the stack.
 * A zero-initialised ACL has no owner and no grants. */
typedef struct cn_authz_acl {
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    uint32_t ngrants;
    cn_authz_grant_t grants[CN_ACL_MAX_GRANTS];
} cn_authz_acl_t;

/* "READ", "WRITE", "READ_ACP", "WRITE_ACP", "FULL_CONTROL"; NULL unless perm
 * is exactly one bit. */
CN_API const char *cn_authz_acl_perm_name(uint32_t perm);
/* Parses one of those names (exact case) of len bytes.  CN_E_INVALID else. */
CN_API cn_err_t cn_authz_acl_perm_parse(const char *s, size_t len, uint32_t *out);
/* The group URI of a group grantee type; NULL for CN_GRANTEE_USER. */
CN_API const char *cn_authz_group_uri(cn_grantee_type_t type);
/* Parses a group URI (exact, http:// form as S3 sends it) of len bytes into its
 * type.  CN_E_INVALID for any other URI. */
CN_API cn_err_t cn_authz_group_parse(const char *uri, size_t len, cn_grantee_type_t *out);

/* Starts acl as owner's empty ACL (no grants — not even the owner's own).
 * CN_E_INVALID if owner is empty or longer than CN_ACCOUNT_NAME_MAX. */
CN_API cn_err_t cn_authz_acl_init(cn_authz_acl_t *acl, const char *owner);

/* Appends one grant; id is the account name for CN_GRANTEE_USER (resolve
 * emails to names before calling) and ignored (may be NULL) for groups.
 * An identical grant already present is not repeated.  Errors: CN_E_INVALID
 * (bad type, perm not one bit, bad id), CN_E_LIMIT (CN_ACL_MAX_GRANTS held). */
CN_API cn_err_t cn_authz_acl_add(cn_authz_acl_t *acl, cn_grantee_type_t type, const char *id,
                                 uint32_t perm);

/* Builds the canned ACL `name` (len bytes) owned by owner:
 *   private                     owner FULL_CONTROL
 *   public-read                 + AllUsers READ
 *   public-read-write           + AllUsers READ, AllUsers WRITE
 *   authenticated-read          + AuthenticatedUsers READ
 *   bucket-owner-read           + bucket_owner READ          (objects)
 *   bucket-owner-full-control   + bucket_owner FULL_CONTROL  (objects)
 *   log-delivery-write          + LogDelivery WRITE, READ_ACP (buckets only)
 * for_bucket says whether the ACL is for a bucket (bucket-owner-* then equal
 * private, as on S3) or an object; bucket_owner may be NULL for a bucket.  A
 * bucket-owner grant is left out when the bucket owner is the owner.
 * Errors: CN_E_INVALID for an unknown name (S3: 400 InvalidArgument) or
 * log-delivery-write on an object, or a bad owner. */
CN_API cn_err_t cn_authz_acl_canned(cn_authz_acl_t *acl, const char *name, size_t len,
                                    const char *owner, const char *bucket_owner, bool for_bucket);

/* true if any grant goes to AllUsers or AuthenticatedUsers (the S3 meaning of
 * a public ACL, for BlockPublicAcls / IgnorePublicAcls). */
CN_API bool cn_authz_acl_is_public(const cn_authz_acl_t *acl);

/* Appends acl's canonical serialization to out: compact JSON with sorted keys,
 *   {"grants":[{"id":"alice","perm":"FULL_CONTROL"},{"group":"AllUsers","perm":"READ"}],"owner":"alice"}
 * grants in their stored order.  The same ACL always yields the same bytes.
 * Errors: -ENOMEM. */
CN_API cn_err_t cn_authz_acl_serialize(const cn_authz_acl_t *acl, cn_buf_t *out);
/* Parses a serialization (len bytes) back into *acl.  Errors: CN_E_INVALID for
 * anything cn_authz_acl_serialize would not have written. */
CN_API cn_err_t cn_authz_acl_parse(const char *json, size_t len, cn_authz_acl_t *acl);

/* ---- bucket policies --------------------------------------------------------- */
typedef struct cn_authz_policy cn_authz_policy_t; /* immutable once parsed */

#define CN_AUTHZ_POLICY_MAX 20480 /* bytes, S3's bucket policy limit */
#define CN_AUTHZ_ERR_MAX 256

/* Parses and validates a bucket policy document (len bytes of JSON) for
 * bucket: Version, Id, Statement (one object or a non-empty list) of Sid,
 * Effect, Principal/NotPrincipal, Action/NotAction, Resource/NotResource and
 * Condition; every resource must be an arn:aws:s3::: ARN within bucket.
 * On success *out is a new policy the caller frees with
 * cn_authz_policy_free; it may then be shared read-only between threads.
 * Errors: CN_E_INVALID with a one-line reason in err (S3: 400 MalformedPolicy;
 * err may be NULL), -ENOMEM. */
CN_API cn_err_t cn_authz_policy_parse(const char *json, size_t len, const char *bucket,
                                      cn_authz_policy_t **out, char err[CN_AUTHZ_ERR_MAX]);
CN_API void cn_authz_policy_free(cn_authz_policy_t *p); /* NULL is a no-op */

/* true when the policy is public by the AWS rule (GetBucketPolicyStatus):
 * some Allow statement applies to every principal ("*", or NotPrincipal) and
 * carries no condition that pins it to fixed values — an aws:SourceIp range no
 * wider than /8 (IPv4) or /32 (IPv6), or an exact aws:SourceAccount,
 * aws:SourceArn, aws:SourceVpc(e), aws:PrincipalOrgID, aws:PrincipalAccount,
 * aws:userid or aws:username.  NULL is not public. */
CN_API bool cn_authz_policy_is_public(const cn_authz_policy_t *p);

/* Appends to out the policy that grants every caller s3:GetObject on every key
 * of bucket — what "make the objects of this bucket world-readable" means as a
 * policy.  Errors: -ENOMEM, CN_E_INVALID (bad bucket name). */
CN_API cn_err_t cn_authz_policy_public_read(const char *bucket, cn_buf_t *out);

/* ---- the facts the caller passes in ------------------------------------------ */
typedef struct cn_authz_pab {     /* public access block of a bucket */
    bool block_public_acls;       /* refuse to store public ACLs */
    bool ignore_public_acls;      /* public grants grant nothing */
    bool block_public_policy;     /* refuse to store public policies */
    bool restrict_public_buckets; /* a public policy grants only the owner */
} cn_authz_pab_t;

typedef struct cn_authz_tag {
    const char *key;
    const char *value;
} cn_authz_tag_t;

typedef struct cn_authz_bucket {
    const char *name;                /* required */
    const char *owner;               /* account name, required */
    const cn_authz_acl_t *acl;       /* NULL = private (owner FULL_CONTROL) */
    const cn_authz_policy_t *policy; /* NULL = none */
    cn_authz_pab_t pab;              /* all false = none set */
} cn_authz_bucket_t;

typedef struct cn_authz_object {
    const char *owner;          /* account name, required */
    const cn_authz_acl_t *acl;  /* NULL = private (owner FULL_CONTROL) */
    const cn_authz_tag_t *tags; /* its tags, for s3:ExistingObjectTag/<k> */
    size_t ntags;
} cn_authz_object_t;

/* The x-amz-grant-* header values of a request as sent (NULL = absent), for
 * the s3:x-amz-grant-* condition keys.  authz shows them to a policy only on
 * the actions S3 gives those keys: PutObject, PutObjectAcl, PutBucketAcl and
 * CreateBucket; on any other action the keys are absent. */
typedef struct cn_authz_grant_hdrs {
    const char *read;         /* x-amz-grant-read */
    const char *write;        /* x-amz-grant-write */
    const char *read_acp;     /* x-amz-grant-read-acp */
    const char *write_acp;    /* x-amz-grant-write-acp */
    const char *full_control; /* x-amz-grant-full-control */
} cn_authz_grant_hdrs_t;

typedef struct cn_authz_req {
    const char *principal; /* account name; NULL = anonymous (AllUsers) */
    cn_perms_t perms;      /* the token's permissions; ignored when anonymous */
    cn_authz_action_t action;
    const char *key;         /* object actions: required */
    cn_authz_ip_t source_ip; /* family 0 = unknown: IP conditions see no value */
    bool secure_transport;   /* aws:SecureTransport (TLS) */
    /* Condition values; NULL = not present in this request. */
    const char *prefix;           /* s3:prefix */
    const char *delimiter;        /* s3:delimiter */
    const char *max_keys;         /* s3:max-keys, as sent */
    const char *x_amz_acl;        /* s3:x-amz-acl */
    const char *referer;          /* aws:Referer */
    const char *user_agent;       /* aws:UserAgent */
    cn_authz_grant_hdrs_t grants; /* s3:x-amz-grant-* (see above) */
    /* The tag set the request writes (x-amz-tagging on PutObject, the body
     * of PutObjectTagging), for s3:RequestObjectTag/<k> and the
     * multi-valued s3:RequestObjectTagKeys; req_tags_given false = the
     * request carries none (both keys absent). */
    const cn_authz_tag_t *req_tags;
    size_t nreq_tags;
    bool req_tags_given;
    /* The server's own worker acting for the bucket's owner (lifecycle): a
     * bucket policy's Deny does not apply; everything else does. */
    bool service;
} cn_authz_req_t;

/* ---- the decision -------------------------------------------------------------- */
typedef enum {
    /* allowed */
    CN_WHY_ACCOUNT = 1,  /* an account-level action within the token's permissions */
    CN_WHY_OWNER,        /* the principal owns the bucket (or object) */
    CN_WHY_ACL,          /* an ACL grant */
    CN_WHY_POLICY_ALLOW, /* a bucket policy Allow statement */
    CN_WHY_NS_OPERATOR,  /* blob namespace: operator authority (admin) */
    CN_WHY_NS_GRANT,     /* blob namespace: a grant */
    /* denied */
    CN_WHY_TOKEN = 32,       /* the token lacks the action's permission */
    CN_WHY_ANONYMOUS,        /* the action needs an account */
    CN_WHY_POLICY_DENY,      /* a bucket policy Deny statement */
    CN_WHY_NO_GRANT,         /* nothing allowed it (implicit deny) */
    CN_WHY_NS_CLOSED,        /* blob namespace: no grant (closed by default) */
    CN_WHY_NS_OPERATOR_ONLY, /* blob namespace: needs operator authority */
    CN_WHY_END               /* one past the last denial */
} cn_authz_why_t;

#define CN_AUTHZ_REASON_MAX 192

typedef struct cn_authz_decision {
    bool allow;
    cn_authz_why_t why;
    char reason[CN_AUTHZ_REASON_MAX]; /* one line for logs; never a secret */
} cn_authz_decision_t;

/* Decides one access.  bucket is NULL only for account-level actions
 * (ListAllMyBuckets, CreateBucket); object is the existing object for object
 * actions that read or change one (GetObject, *ObjectAcl, *ObjectTagging),
 * NULL when there is none (a new key, or a missing one: then it is judged as
 * a private object of the bucket owner).  Order: the token ceiling, the
 * policy's explicit Deny, ownership, ACL grants, the policy's Allow; see
 * docs/authz.md.  Returns 0 (allowed) or CN_E_DENIED, with *out filled either
 * way (out may be NULL); CN_E_INVALID for a missing required fact (no bucket
 * for a bucket action, no key for an object action, unknown action).  Pure:
 * thread-safe, no allocation. */
CN_API cn_err_t cn_authz_decide(const cn_authz_req_t *req, const cn_authz_bucket_t *bucket,
                                const cn_authz_object_t *object, cn_authz_decision_t *out);

/* Public access block checks for storing an ACL or a policy: CN_E_DENIED (S3:
 * 403 AccessDenied) when BlockPublicAcls / BlockPublicPolicy is set and the
 * ACL / policy is public, else 0.  pab may be NULL (nothing blocked). */
CN_API cn_err_t cn_authz_pab_check_acl(const cn_authz_pab_t *pab, const cn_authz_acl_t *acl);
CN_API cn_err_t cn_authz_pab_check_policy(const cn_authz_pab_t *pab,
                                          const cn_authz_policy_t *policy);

/* ---- native protocol visibility ------------------------------------------------ */
typedef enum {
    CN_VIS_PRIVATE = 0,
    CN_VIS_PUBLIC = 1
} cn_authz_visibility_t;

/* "public" when an anonymous caller may read the bucket: list it (an ACL READ
 * for AllUsers that IgnorePublicAcls does not void, or a policy Allow) or get
 * every object in it by policy.  Otherwise "private". */
CN_API cn_authz_visibility_t cn_authz_visibility(const cn_authz_bucket_t *bucket);
/* "public" / "private". */
CN_API const char *cn_authz_visibility_name(cn_authz_visibility_t v);
/* Parses "public" / "private".  CN_E_INVALID otherwise. */
CN_API cn_err_t cn_authz_visibility_parse(const char *s, cn_authz_visibility_t *out);
/* The bucket ACL that sets visibility v for owner: canned public-read or
 * private.  Errors: CN_E_INVALID (bad owner or v). */
CN_API cn_err_t cn_authz_visibility_acl(cn_authz_visibility_t v, const char *owner,
                                        cn_authz_acl_t *out);

/* ---- blob namespaces ------------------------------------------------------------ */
/* Operator-only namespace operation (blobs/delete); combine with nothing. */
#define CN_AUTHZ_NS_DELETE (1u << 8)

/* Decides a blob operation on namespace ns.  action is CN_NS_READ (fetch,
 * stat, have), CN_NS_WRITE (put) or CN_AUTHZ_NS_DELETE.  grants are the
 * namespace's grants (entries for other namespaces are ignored; ngrants 0 =
 * closed: everyone but an operator is denied).  principal NULL = anonymous,
 * always denied.  A token with CN_PERM_ADMIN is the operator and may do every
 * action; CN_AUTHZ_NS_DELETE needs it, a grant never suffices; read and write
 * also need CN_PERM_BLOBS_READ / CN_PERM_BLOBS_WRITE.  Returns 0 or
 * CN_E_DENIED with *out filled (may be NULL); CN_E_INVALID for a bad action.
 * Pure, thread-safe. */
CN_API cn_err_t cn_authz_namespace_decide(const cn_ns_grant_t *grants, size_t ngrants,
                                          const char *ns, const char *principal, cn_perms_t perms,
                                          uint32_t action, cn_authz_decision_t *out);

/* The same decision when the caller already holds the principal's actions on
 * the namespace (cn_identity_ns_actions): held = CN_NS_* bits, 0 = none. */
CN_API cn_err_t cn_authz_namespace_decide_held(uint32_t held, const char *principal,
                                               cn_perms_t perms, uint32_t action,
                                               cn_authz_decision_t *out);

#ifdef __cplusplus
}
#endif
#endif
