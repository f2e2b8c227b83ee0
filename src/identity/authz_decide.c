/* authz decide: the one access decision.  Every face maps its operation onto
 * an S3 action and asks cn_authz_decide; blob operations ask
 * cn_authz_namespace_decide.  Order (docs/authz.md): the token's permissions
 * cap everything; a matching Deny in the bucket policy refuses; the owner is
 * allowed; then an ACL grant allows; then a policy Allow allows; otherwise
 * the request is refused.
 */
#include "authz_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Who governs an action: the bucket (its owner and ACL) or the object. */
enum {
    GOV_ACCOUNT,
    GOV_BUCKET,
    GOV_OBJECT
};

typedef struct act_info {
    const char *name;
    cn_perms_t perm;
    uint8_t gov;
    uint8_t acl;     /* the ACL permission that grants it (0: none can) */
    bool owner_only; /* only the bucket owner, whatever ACL or policy say */
    bool object;     /* needs a key */
} act_info_t;

static const act_info_t acts[CN_ACT_END] = {
    [CN_ACT_LIST_ALL_MY_BUCKETS] = { "s3:ListAllMyBuckets", CN_PERM_BUCKET_LIST, GOV_ACCOUNT, 0,
                                     false, false },
    [CN_ACT_CREATE_BUCKET] = { "s3:CreateBucket", CN_PERM_BUCKET_CREATE, GOV_ACCOUNT, 0, false,
                               false },
    [CN_ACT_DELETE_BUCKET] = { "s3:DeleteBucket", CN_PERM_BUCKET_DELETE, GOV_BUCKET, 0, false,
                               false },
    [CN_ACT_LIST_BUCKET] = { "s3:ListBucket", CN_PERM_OBJECT_LIST, GOV_BUCKET, CN_ACL_READ, false,
                             false },
    [CN_ACT_LIST_BUCKET_VERSIONS] = { "s3:ListBucketVersions", CN_PERM_OBJECT_LIST, GOV_BUCKET,
                                      CN_ACL_READ, false, false },
    [CN_ACT_LIST_BUCKET_MULTIPART_UPLOADS] = { "s3:ListBucketMultipartUploads", CN_PERM_OBJECT_LIST,
                                               GOV_BUCKET, CN_ACL_READ, false, false },
    [CN_ACT_GET_BUCKET_LOCATION] = { "s3:GetBucketLocation", CN_PERM_BUCKET_LIST, GOV_BUCKET, 0,
                                     false, false },
    [CN_ACT_GET_BUCKET_ACL] = { "s3:GetBucketAcl", CN_PERM_BUCKET_LIST, GOV_BUCKET, CN_ACL_READ_ACP,
                                false, false },
    [CN_ACT_PUT_BUCKET_ACL] = { "s3:PutBucketAcl", CN_PERM_BUCKET_CREATE, GOV_BUCKET,
                                CN_ACL_WRITE_ACP, false, false },
    [CN_ACT_GET_BUCKET_POLICY] = { "s3:GetBucketPolicy", CN_PERM_BUCKET_LIST, GOV_BUCKET, 0, true,
                                   false },
    [CN_ACT_PUT_BUCKET_POLICY] = { "s3:PutBucketPolicy", CN_PERM_BUCKET_CREATE, GOV_BUCKET, 0, true,
                                   false },
    [CN_ACT_DELETE_BUCKET_POLICY] = { "s3:DeleteBucketPolicy", CN_PERM_BUCKET_CREATE, GOV_BUCKET, 0,
                                      true, false },
    [CN_ACT_GET_BUCKET_POLICY_STATUS] = { "s3:GetBucketPolicyStatus", CN_PERM_BUCKET_LIST,
                                          GOV_BUCKET, 0, true, false },
    [CN_ACT_GET_BUCKET_PUBLIC_ACCESS_BLOCK] = { "s3:GetBucketPublicAccessBlock",
                                                CN_PERM_BUCKET_LIST, GOV_BUCKET, 0, true, false },
    [CN_ACT_PUT_BUCKET_PUBLIC_ACCESS_BLOCK] = { "s3:PutBucketPublicAccessBlock",
                                                CN_PERM_BUCKET_CREATE, GOV_BUCKET, 0, true, false },
    [CN_ACT_GET_BUCKET_CORS] = { "s3:GetBucketCORS", CN_PERM_BUCKET_LIST, GOV_BUCKET, 0, false,
                                 false },
    [CN_ACT_PUT_BUCKET_CORS] = { "s3:PutBucketCORS", CN_PERM_BUCKET_CREATE, GOV_BUCKET, 0, false,
                                 false },
    [CN_ACT_GET_BUCKET_TAGGING] = { "s3:GetBucketTagging", CN_PERM_BUCKET_LIST, GOV_BUCKET, 0,
                                    false, false },
    /* An issue-25 bucket setting: bucket:configure (which bucket:create implies). */
    [CN_ACT_PUT_BUCKET_TAGGING] = { "s3:PutBucketTagging", CN_PERM_BUCKET_CONFIGURE, GOV_BUCKET, 0,
                                    false, false },
    [CN_ACT_GET_OBJECT] = { "s3:GetObject", CN_PERM_OBJECT_GET, GOV_OBJECT, CN_ACL_READ, false,
                            true },
    [CN_ACT_GET_OBJECT_ATTRIBUTES] = { "s3:GetObjectAttributes", CN_PERM_OBJECT_GET, GOV_OBJECT,
                                       CN_ACL_READ, false, true },
    [CN_ACT_PUT_OBJECT] = { "s3:PutObject", CN_PERM_OBJECT_PUT, GOV_BUCKET, CN_ACL_WRITE, false,
                            true },
    [CN_ACT_DELETE_OBJECT] = { "s3:DeleteObject", CN_PERM_OBJECT_DELETE, GOV_BUCKET, CN_ACL_WRITE,
                               false, true },
    [CN_ACT_GET_OBJECT_ACL] = { "s3:GetObjectAcl", CN_PERM_OBJECT_GET, GOV_OBJECT, CN_ACL_READ_ACP,
                                false, true },
    [CN_ACT_PUT_OBJECT_ACL] = { "s3:PutObjectAcl", CN_PERM_OBJECT_PUT, GOV_OBJECT, CN_ACL_WRITE_ACP,
                                false, true },
    [CN_ACT_GET_OBJECT_TAGGING] = { "s3:GetObjectTagging", CN_PERM_OBJECT_GET, GOV_OBJECT,
                                    CN_ACL_READ, false, true },
    [CN_ACT_PUT_OBJECT_TAGGING] = { "s3:PutObjectTagging", CN_PERM_OBJECT_PUT, GOV_OBJECT, 0, false,
                                    true },
    [CN_ACT_DELETE_OBJECT_TAGGING] = { "s3:DeleteObjectTagging", CN_PERM_OBJECT_PUT, GOV_OBJECT, 0,
                                       false, true },
    [CN_ACT_ABORT_MULTIPART_UPLOAD] = { "s3:AbortMultipartUpload", CN_PERM_OBJECT_PUT, GOV_BUCKET,
                                        CN_ACL_WRITE, false, true },
    [CN_ACT_LIST_MULTIPART_UPLOAD_PARTS] = { "s3:ListMultipartUploadParts", CN_PERM_OBJECT_PUT,
                                             GOV_BUCKET, CN_ACL_WRITE, false, true },
    /* Object lock: the bucket owner and its policy decide; no ACL grants it. */
    [CN_ACT_GET_BUCKET_OBJECT_LOCK_CONFIGURATION] = { "s3:GetBucketObjectLockConfiguration",
                                                      CN_PERM_BUCKET_LIST, GOV_BUCKET, 0, false,
                                                      false },
    [CN_ACT_PUT_BUCKET_OBJECT_LOCK_CONFIGURATION] = { "s3:PutBucketObjectLockConfiguration",
                                                      CN_PERM_BUCKET_CONFIGURE, GOV_BUCKET, 0,
                                                      false, false },
    [CN_ACT_GET_OBJECT_RETENTION] = { "s3:GetObjectRetention", CN_PERM_OBJECT_GET, GOV_BUCKET, 0,
                                      false, true },
    [CN_ACT_PUT_OBJECT_RETENTION] = { "s3:PutObjectRetention", CN_PERM_OBJECT_LOCK, GOV_BUCKET, 0,
                                      false, true },
    [CN_ACT_GET_OBJECT_LEGAL_HOLD] = { "s3:GetObjectLegalHold", CN_PERM_OBJECT_GET, GOV_BUCKET, 0,
                                       false, true },
    [CN_ACT_PUT_OBJECT_LEGAL_HOLD] = { "s3:PutObjectLegalHold", CN_PERM_OBJECT_LOCK, GOV_BUCKET, 0,
                                       false, true },
    [CN_ACT_BYPASS_GOVERNANCE_RETENTION] = { "s3:BypassGovernanceRetention",
                                             CN_PERM_OBJECT_BYPASS_GOVERNANCE, GOV_BUCKET, 0, false,
                                             true },
    [CN_ACT_GET_LIFECYCLE_CONFIGURATION] = { "s3:GetLifecycleConfiguration", CN_PERM_BUCKET_LIST,
                                             GOV_BUCKET, 0, false, false },
    [CN_ACT_PUT_LIFECYCLE_CONFIGURATION] = { "s3:PutLifecycleConfiguration",
                                             CN_PERM_BUCKET_CONFIGURE, GOV_BUCKET, 0, false,
                                             false },
    /* Versioning: read as every bucket setting is, changed with bucket:configure. */
    [CN_ACT_GET_BUCKET_VERSIONING] = { "s3:GetBucketVersioning", CN_PERM_BUCKET_LIST, GOV_BUCKET, 0,
                                       false, false },
    [CN_ACT_PUT_BUCKET_VERSIONING] = { "s3:PutBucketVersioning", CN_PERM_BUCKET_CONFIGURE,
                                       GOV_BUCKET, 0, false, false },
};

static const act_info_t *info(cn_authz_action_t a)
{
    if (a <= CN_ACT_INVALID || a >= CN_ACT_END || !acts[a].name)
        return NULL;
    return &acts[a];
}

const char *cn_authz_action_name(cn_authz_action_t act)
{
    const act_info_t *i = info(act);
    return i ? i->name : NULL;
}

cn_authz_action_t cn_authz_action_parse(const char *name, size_t len)
{
    for (int a = CN_ACT_INVALID + 1; name && a < CN_ACT_END; a++)
        if (acts[a].name && strlen(acts[a].name) == len &&
            strncasecmp(acts[a].name, name, len) == 0)
            return (cn_authz_action_t)a;
    return CN_ACT_INVALID;
}

cn_perms_t cn_authz_action_perm(cn_authz_action_t act)
{
    const act_info_t *i = info(act);
    return i ? i->perm : 0;
}

bool cn_authz_action_is_object(cn_authz_action_t act)
{
    const act_info_t *i = info(act);
    return i && i->object;
}

/* ---- the decision ------------------------------------------------------------ */
__attribute__((format(printf, 4, 5))) static cn_err_t verdict(cn_authz_decision_t *out, bool allow,
                                                              cn_authz_why_t why, const char *fmt,
                                                              ...)
{
    if (out) {
        out->allow = allow;
        out->why = why;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(out->reason, sizeof out->reason, fmt, ap);
        va_end(ap);
        /* Keys and names come from clients: keep the reason one printable line. */
        for (char *c = out->reason; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    }
    return allow ? CN_OK : CN_E_DENIED;
}

static const char *who(const cn_authz_req_t *r)
{
    return r->principal ? r->principal : "anonymous";
}

static bool grantee_matches(const cn_authz_grant_t *g, const char *principal, bool ignore_public)
{
    switch (g->type) {
    case CN_GRANTEE_USER: return principal && strcmp(g->id, principal) == 0;
    case CN_GRANTEE_ALL_USERS: return !ignore_public;
    case CN_GRANTEE_AUTH_USERS: return !ignore_public && principal;
    default: return false;
    }
}

static const cn_authz_grant_t *acl_grants(const cn_authz_acl_t *acl, const char *principal,
                                          uint32_t need, bool ignore_public)
{
    for (uint32_t i = 0; acl && i < acl->ngrants && i < CN_ACL_MAX_GRANTS; i++) {
        const cn_authz_grant_t *g = &acl->grants[i];
        if ((g->perm & (need | CN_ACL_FULL_CONTROL)) &&
            grantee_matches(g, principal, ignore_public))
            return g;
    }
    return NULL;
}

static bool policy_self_management(cn_authz_action_t a)
{
    return a == CN_ACT_GET_BUCKET_POLICY || a == CN_ACT_PUT_BUCKET_POLICY ||
           a == CN_ACT_DELETE_BUCKET_POLICY;
}

cn_err_t cn_authz_decide(const cn_authz_req_t *req, const cn_authz_bucket_t *bucket,
                         const cn_authz_object_t *object, cn_authz_decision_t *out)
{
    const act_info_t *ai = req ? info(req->action) : NULL;
    if (!ai)
        return CN_E_INVALID;
    bool anon = req->principal == NULL;

    if (!anon && !cn_perms_allow(req->perms, ai->perm))
        return verdict(out, false, CN_WHY_TOKEN, "token of %s lacks %s for %s", who(req),
                       cn_perm_name(ai->perm), ai->name);
    if (ai->gov == GOV_ACCOUNT) {
        if (anon)
            return verdict(out, false, CN_WHY_ANONYMOUS, "%s needs an account", ai->name);
        return verdict(out, true, CN_WHY_ACCOUNT, "%s may %s", who(req), ai->name);
    }
    if (!bucket || !bucket->name || !bucket->owner || (ai->object && !req->key))
        return CN_E_INVALID;

    bool bucket_owner = !anon && strcmp(req->principal, bucket->owner) == 0;
    cn__pctx_t pc = { req, ai->name, bucket->name, ai->object ? req->key : NULL, object, anon };
    cn__peval_t pe = { -1, -1 };
    cn__authz_policy_eval(bucket->policy, &pc, &pe);

    /* The owner can always repair its own policy, so no Deny locks it out. */
    if (pe.deny_idx >= 0 && !(bucket_owner && policy_self_management(req->action)) &&
        !(bucket_owner && req->service)) {
        size_t n;
        const char *sid = cn__authz_policy_sid(bucket->policy, pe.deny_idx, &n);
        return verdict(out, false, CN_WHY_POLICY_DENY,
                       "%s denied %s on %s by bucket policy statement %d%s%.*s%s", who(req),
                       ai->name, bucket->name, pe.deny_idx + 1, n ? " (" : "", (int)n, sid,
                       n ? ")" : "");
    }

    /* Object-governed actions on a missing object are judged as on a private
     * object of the bucket owner. */
    bool by_object = ai->gov == GOV_OBJECT && object && object->owner;
    const char *owner = by_object ? object->owner : bucket->owner;
    const cn_authz_acl_t *acl =
        ai->gov == GOV_OBJECT ? (by_object ? object->acl : NULL) : bucket->acl;
    if (!anon && strcmp(req->principal, owner) == 0)
        return verdict(out, true, CN_WHY_OWNER, "%s owns %s%s%s", who(req), bucket->name,
                       by_object ? "/" : "", by_object ? req->key : "");
    if (ai->owner_only)
        return verdict(out, false, CN_WHY_NO_GRANT, "only the owner of %s may %s", bucket->name,
                       ai->name);

    if (ai->acl) {
        const cn_authz_grant_t *g =
            acl_grants(acl, req->principal, ai->acl, bucket->pab.ignore_public_acls);
        if (g)
            return verdict(out, true, CN_WHY_ACL, "%s granted %s to %s by the %s ACL", ai->name,
                           cn_authz_acl_perm_name(g->perm),
                           g->type == CN_GRANTEE_USER        ? g->id
                           : g->type == CN_GRANTEE_ALL_USERS ? "AllUsers"
                                                             : "AuthenticatedUsers",
                           ai->gov == GOV_OBJECT ? "object" : "bucket");
    }

    if (pe.allow_idx >= 0) {
        bool restricted = bucket->pab.restrict_public_buckets &&
                          cn_authz_policy_is_public(bucket->policy) && !bucket_owner;
        size_t n;
        const char *sid = cn__authz_policy_sid(bucket->policy, pe.allow_idx, &n);
        if (restricted)
            return verdict(out, false, CN_WHY_NO_GRANT,
                           "%s not allowed %s on %s: RestrictPublicBuckets limits the public "
                           "policy to the owner",
                           who(req), ai->name, bucket->name);
        return verdict(out, true, CN_WHY_POLICY_ALLOW,
                       "%s allowed %s on %s by bucket policy statement %d%s%.*s%s", who(req),
                       ai->name, bucket->name, pe.allow_idx + 1, n ? " (" : "", (int)n, sid,
                       n ? ")" : "");
    }
    return verdict(out, false, CN_WHY_NO_GRANT, "nothing grants %s %s on %s%s%s", who(req),
                   ai->name, bucket->name, ai->object ? "/" : "", ai->object ? req->key : "");
}

/* ---- public access block ---------------------------------------------------------- */
cn_err_t cn_authz_pab_check_acl(const cn_authz_pab_t *pab, const cn_authz_acl_t *acl)
{
    return pab && pab->block_public_acls && cn_authz_acl_is_public(acl) ? CN_E_DENIED : CN_OK;
}

cn_err_t cn_authz_pab_check_policy(const cn_authz_pab_t *pab, const cn_authz_policy_t *policy)
{
    return pab && pab->block_public_policy && cn_authz_policy_is_public(policy) ? CN_E_DENIED
                                                                                : CN_OK;
}

/* ---- visibility -------------------------------------------------------------------- */
cn_authz_visibility_t cn_authz_visibility(const cn_authz_bucket_t *bucket)
{
    if (!bucket || !bucket->name || !bucket->owner)
        return CN_VIS_PRIVATE;
    cn_authz_req_t r;
    memset(&r, 0, sizeof r);
    r.action = CN_ACT_LIST_BUCKET;
    if (cn_authz_decide(&r, bucket, NULL, NULL) == CN_OK)
        return CN_VIS_PUBLIC;
    /* "*" as a key is matched only by resource patterns that cover every key. */
    r.action = CN_ACT_GET_OBJECT;
    r.key = "*";
    if (cn_authz_decide(&r, bucket, NULL, NULL) == CN_OK)
        return CN_VIS_PUBLIC;
    return CN_VIS_PRIVATE;
}

const char *cn_authz_visibility_name(cn_authz_visibility_t v)
{
    return v == CN_VIS_PUBLIC ? "public" : "private";
}

cn_err_t cn_authz_visibility_parse(const char *s, cn_authz_visibility_t *out)
{
    if (s && strcmp(s, "public") == 0)
        *out = CN_VIS_PUBLIC;
    else if (s && strcmp(s, "private") == 0)
        *out = CN_VIS_PRIVATE;
    else
        return CN_E_INVALID;
    return CN_OK;
}

cn_err_t cn_authz_visibility_acl(cn_authz_visibility_t v, const char *owner, cn_authz_acl_t *out)
{
    const char *canned = v == CN_VIS_PUBLIC    ? "public-read"
                         : v == CN_VIS_PRIVATE ? "private"
                                               : NULL;
    if (!canned)
        return CN_E_INVALID;
    return cn_authz_acl_canned(out, canned, strlen(canned), owner, owner, true);
}

/* ---- blob namespaces ------------------------------------------------------------------ */
static const char *ns_action_name(uint32_t a)
{
    return a == CN_NS_READ           ? "read"
           : a == CN_NS_WRITE        ? "write"
           : a == CN_AUTHZ_NS_DELETE ? "delete"
                                     : NULL;
}

cn_err_t cn_authz_namespace_decide_held(uint32_t held, const char *principal, cn_perms_t perms,
                                        uint32_t action, cn_authz_decision_t *out)
{
    const char *an = ns_action_name(action);
    if (!an)
        return CN_E_INVALID;
    const char *p = principal ? principal : "anonymous";
    if (!principal)
        return verdict(out, false, CN_WHY_ANONYMOUS, "blob %s needs an account", an);
    if (perms & CN_PERM_ADMIN)
        return verdict(out, true, CN_WHY_NS_OPERATOR, "%s holds operator authority", p);
    if (action == CN_AUTHZ_NS_DELETE)
        return verdict(out, false, CN_WHY_NS_OPERATOR_ONLY,
                       "blobs/delete needs operator authority; %s has none", p);
    cn_perms_t need = action == CN_NS_READ ? CN_PERM_BLOBS_READ : CN_PERM_BLOBS_WRITE;
    if (!(perms & need))
        return verdict(out, false, CN_WHY_TOKEN, "token of %s lacks %s", p, cn_perm_name(need));
    if (!(held & action))
        return verdict(out, false, CN_WHY_NS_CLOSED, "%s holds no %s grant on the namespace", p,
                       an);
    return verdict(out, true, CN_WHY_NS_GRANT, "%s holds a %s grant on the namespace", p, an);
}

cn_err_t cn_authz_namespace_decide(const cn_ns_grant_t *grants, size_t ngrants, const char *ns,
                                   const char *principal, cn_perms_t perms, uint32_t action,
                                   cn_authz_decision_t *out)
{
    if (!ns)
        return CN_E_INVALID;
    uint32_t held = 0;
    for (size_t i = 0; principal && grants && i < ngrants; i++)
        if (strcmp(grants[i].ns, ns) == 0 && strcmp(grants[i].account, principal) == 0)
            held |= grants[i].actions;
    return cn_authz_namespace_decide_held(held & CN_NS_ALL, principal, perms, action, out);
}
