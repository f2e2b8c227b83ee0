/* authz ACL: the S3 access control list model — grants, canned ACLs, the
 * public test, and the canonical JSON the objects service stores.  The model
 * is independent of the S3 XML (the HTTP adapter translates); email grantees
 * are resolved to account names before they reach it.
 */
#include "authz_int.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

static const char *const perm_names[] = {
    "READ", "WRITE", "READ_ACP", "WRITE_ACP", "FULL_CONTROL",
};

static bool one_bit(uint32_t v)
{
    return v && !(v & (v - 1));
}

const char *cn_authz_acl_perm_name(uint32_t perm)
{
    if (!one_bit(perm) || perm > CN_ACL_FULL_CONTROL)
        return NULL;
    return perm_names[__builtin_ctz(perm)];
}

cn_err_t cn_authz_acl_perm_parse(const char *s, size_t len, uint32_t *out)
{
    for (size_t i = 0; s && i < sizeof perm_names / sizeof perm_names[0]; i++) {
        if (strlen(perm_names[i]) == len && memcmp(perm_names[i], s, len) == 0) {
            *out = 1u << i;
            return CN_OK;
        }
    }
    return CN_E_INVALID;
}

static const struct {
    cn_grantee_type_t type;
    const char *uri;
    const char *name;
} groups[] = {
    { CN_GRANTEE_ALL_USERS, "http://acs.amazonaws.com/groups/global/AllUsers", "AllUsers" },
    { CN_GRANTEE_AUTH_USERS, "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
      "AuthenticatedUsers" },
    { CN_GRANTEE_LOG_DELIVERY, "http://acs.amazonaws.com/groups/s3/LogDelivery", "LogDelivery" },
};

const char *cn_authz_group_uri(cn_grantee_type_t type)
{
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (groups[i].type == type)
            return groups[i].uri;
    return NULL;
}

static const char *group_name(cn_grantee_type_t type)
{
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (groups[i].type == type)
            return groups[i].name;
    return NULL;
}

cn_err_t cn_authz_group_parse(const char *uri, size_t len, cn_grantee_type_t *out)
{
    for (size_t i = 0; uri && i < sizeof groups / sizeof groups[0]; i++) {
        if (strlen(groups[i].uri) == len && memcmp(groups[i].uri, uri, len) == 0) {
            *out = groups[i].type;
            return CN_OK;
        }
    }
    return CN_E_INVALID;
}

cn_err_t cn_authz_acl_init(cn_authz_acl_t *acl, const char *owner)
{
    memset(acl, 0, sizeof *acl);
    if (!owner || !cn__authz_name_ok(owner, strlen(owner)))
        return CN_E_INVALID;
    memcpy(acl->owner, owner, strlen(owner) + 1);
    return CN_OK;
}

cn_err_t cn_authz_acl_add(cn_authz_acl_t *acl, cn_grantee_type_t type, const char *id,
                          uint32_t perm)
{
    if (!one_bit(perm) || perm > CN_ACL_FULL_CONTROL)
        return CN_E_INVALID;
    if (type == CN_GRANTEE_USER) {
        if (!id || !cn__authz_name_ok(id, strlen(id)))
            return CN_E_INVALID;
    } else if (!cn_authz_group_uri(type)) {
        return CN_E_INVALID;
    } else {
        id = "";
    }
    for (uint32_t i = 0; i < acl->ngrants; i++) {
        const cn_authz_grant_t *g = &acl->grants[i];
        if (g->type == type && g->perm == perm && strcmp(g->id, id) == 0)
            return CN_OK;
    }
    if (acl->ngrants >= CN_ACL_MAX_GRANTS)
        return CN_E_LIMIT;
    cn_authz_grant_t *g = &acl->grants[acl->ngrants++];
    memset(g, 0, sizeof *g);
    g->type = (uint8_t)type;
    g->perm = (uint8_t)perm;
    memcpy(g->id, id, strlen(id) + 1);
    return CN_OK;
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(name, want, len) == 0;
}

cn_err_t cn_authz_acl_canned(cn_authz_acl_t *acl, const char *name, size_t len, const char *owner,
                             const char *bucket_owner, bool for_bucket)
{
    CN_TRY(cn_authz_acl_init(acl, owner));
    if (!name)
        return CN_E_INVALID;
    CN_TRY(cn_authz_acl_add(acl, CN_GRANTEE_USER, owner, CN_ACL_FULL_CONTROL));
    if (name_is(name, len, "private"))
        return CN_OK;
    if (name_is(name, len, "public-read"))
        return cn_authz_acl_add(acl, CN_GRANTEE_ALL_USERS, NULL, CN_ACL_READ);
    if (name_is(name, len, "public-read-write")) {
        CN_TRY(cn_authz_acl_add(acl, CN_GRANTEE_ALL_USERS, NULL, CN_ACL_READ));
        return cn_authz_acl_add(acl, CN_GRANTEE_ALL_USERS, NULL, CN_ACL_WRITE);
    }
    if (name_is(name, len, "authenticated-read"))
        return cn_authz_acl_add(acl, CN_GRANTEE_AUTH_USERS, NULL, CN_ACL_READ);
    bool bo_read = name_is(name, len, "bucket-owner-read");
    bool bo_full = name_is(name, len, "bucket-owner-full-control");
    if (bo_read || bo_full) {
        /* On a bucket the owner is the bucket owner: the same as private. */
        if (for_bucket || !bucket_owner || strcmp(bucket_owner, owner) == 0) {
            if (!for_bucket && !bucket_owner)
                return CN_E_INVALID;
            return CN_OK;
        }
        return cn_authz_acl_add(acl, CN_GRANTEE_USER, bucket_owner,
                                bo_full ? CN_ACL_FULL_CONTROL : CN_ACL_READ);
    }
    if (name_is(name, len, "log-delivery-write") && for_bucket) {
        CN_TRY(cn_authz_acl_add(acl, CN_GRANTEE_LOG_DELIVERY, NULL, CN_ACL_WRITE));
        return cn_authz_acl_add(acl, CN_GRANTEE_LOG_DELIVERY, NULL, CN_ACL_READ_ACP);
    }
    return CN_E_INVALID;
}

bool cn_authz_acl_is_public(const cn_authz_acl_t *acl)
{
    for (uint32_t i = 0; acl && i < acl->ngrants && i < CN_ACL_MAX_GRANTS; i++)
        if (acl->grants[i].type == CN_GRANTEE_ALL_USERS ||
            acl->grants[i].type == CN_GRANTEE_AUTH_USERS)
            return true;
    return false;
}

cn_err_t cn_authz_acl_serialize(const cn_authz_acl_t *acl, cn_buf_t *out)
{
    cn_err_t rc = -ENOMEM;
    char *text = NULL;
    json_t *root = json_object(), *grants = json_array();
    if (!root || !grants || json_object_set_new(root, "owner", json_string(acl->owner)))
        goto out;
    for (uint32_t i = 0; i < acl->ngrants && i < CN_ACL_MAX_GRANTS; i++) {
        const cn_authz_grant_t *g = &acl->grants[i];
        const char *pname = cn_authz_acl_perm_name(g->perm);
        const char *gname = group_name((cn_grantee_type_t)g->type);
        if (!pname || (g->type != CN_GRANTEE_USER && !gname)) {
            rc = CN_E_INVALID;
            goto out;
        }
        json_t *o = json_pack("{s:s,s:s}", g->type == CN_GRANTEE_USER ? "id" : "group",
                              g->type == CN_GRANTEE_USER ? g->id : gname, "perm", pname);
        if (!o || json_array_append_new(grants, o))
            goto out;
    }
    if (json_object_set(root, "grants", grants))
        goto out;
    text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text)
        goto out;
    rc = cn_buf_append_str(out, text);
out:
    free(text);
    json_decref(grants);
    json_decref(root);
    return rc;
}

cn_err_t cn_authz_acl_parse(const char *text, size_t len, cn_authz_acl_t *acl)
{
    cn_err_t rc = CN_E_INVALID;
    memset(acl, 0, sizeof *acl);
    json_t *root = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    json_t *owner = json_object_get(root, "owner"), *grants = json_object_get(root, "grants");
    if (!json_is_object(root) || json_object_size(root) != 2 || !json_is_string(owner) ||
        !json_is_array(grants) || json_array_size(grants) > CN_ACL_MAX_GRANTS)
        goto out;
    if (cn_authz_acl_init(acl, json_string_value(owner)))
        goto out;
    size_t i;
    json_t *g;
    json_array_foreach(grants, i, g)
    {
        json_t *perm = json_object_get(g, "perm"), *id = json_object_get(g, "id");
        json_t *grp = json_object_get(g, "group");
        uint32_t p;
        if (!json_is_object(g) || json_object_size(g) != 2 || !json_is_string(perm) ||
            cn_authz_acl_perm_parse(json_string_value(perm), json_string_length(perm), &p))
            goto out;
        cn_err_t e = CN_E_INVALID;
        if (json_is_string(id)) {
            e = cn_authz_acl_add(acl, CN_GRANTEE_USER, json_string_value(id), p);
        } else if (json_is_string(grp)) {
            for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++)
                if (strcmp(groups[k].name, json_string_value(grp)) == 0)
                    e = cn_authz_acl_add(acl, groups[k].type, NULL, p);
        }
        if (e)
            goto out;
    }
    rc = CN_OK;
out:
    json_decref(root);
    if (rc)
        memset(acl, 0, sizeof *acl);
    return rc;
}
