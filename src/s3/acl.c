/* Access control on the S3 face: GetBucketAcl / PutBucketAcl, GetObjectAcl /
 * PutObjectAcl (AccessControlPolicy XML or x-amz-acl / x-amz-grant-*
 * headers), the ACL a write carries (canned or granted), and the public
 * access block (Get / Put / DeletePublicAccessBlock).
 *
 * Grantees are account names (an account's canonical id and display name);
 * an email grantee is resolved to its account here, before the ACL reaches
 * the objects service, which stores it and has authz judge it.  This file
 * never decides an access itself. */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CN__ACL_BODY_MAX (64u * 1024)
#define CN__XSI "http://www.w3.org/2001/XMLSchema-instance"

/* ---- grantees ------------------------------------------------------------------ */

/* The grant headers, in the order their grants are added. */
static const struct {
    const char *header;
    uint32_t perm;
} cn__grant_hdrs[] = {
    { "x-amz-grant-full-control", CN_ACL_FULL_CONTROL },
    { "x-amz-grant-read", CN_ACL_READ },
    { "x-amz-grant-write", CN_ACL_WRITE },
    { "x-amz-grant-read-acp", CN_ACL_READ_ACP },
    { "x-amz-grant-write-acp", CN_ACL_WRITE_ACP },
};
#define CN__NGRANT_HDRS (sizeof cn__grant_hdrs / sizeof cn__grant_hdrs[0])

static bool ws(char c)
{
    return c == ' ' || c == '\t';
}

cn_s3_err_t cn__s3_grant_header_parse(const char *v, size_t n, uint32_t perm, cn__grantee_fn fn,
                                      void *ctx, cn_authz_acl_t *acl)
{
    size_t i = 0;
    bool any = false;
    while (i < n) {
        while (i < n && (ws(v[i]) || v[i] == ','))
            i++;
        if (i == n)
            break;
        size_t ks = i;
        while (i < n && v[i] != '=' && v[i] != ',' && !ws(v[i]))
            i++;
        size_t kl = i - ks;
        while (i < n && ws(v[i]))
            i++;
        if (i == n || v[i] != '=')
            return CN_S3E_INVALID_ARGUMENT;
        i++;
        while (i < n && ws(v[i]))
            i++;
        size_t vs, vl;
        if (i < n && v[i] == '"') {
            vs = ++i;
            while (i < n && v[i] != '"')
                i++;
            if (i == n)
                return CN_S3E_INVALID_ARGUMENT;
            vl = i - vs;
            i++;
        } else {
            vs = i;
            while (i < n && v[i] != ',')
                i++;
            vl = i - vs;
            while (vl && ws(v[vs + vl - 1]))
                vl--;
        }
        while (i < n && ws(v[i]))
            i++;
        if (i < n && v[i] != ',')
            return CN_S3E_INVALID_ARGUMENT;
        cn__grantee_kind_t kind;
        if (kl == 2 && strncasecmp(v + ks, "id", 2) == 0)
            kind = CN__GRANTEE_ID;
        else if (kl == 12 && strncasecmp(v + ks, "emailAddress", 12) == 0)
            kind = CN__GRANTEE_EMAIL;
        else if (kl == 3 && strncasecmp(v + ks, "uri", 3) == 0)
            kind = CN__GRANTEE_URI;
        else
            return CN_S3E_INVALID_ARGUMENT;
        if (vl == 0)
            return CN_S3E_INVALID_ARGUMENT;
        cn_grantee_type_t type = CN_GRANTEE_USER;
        char id[CN_ACCOUNT_NAME_MAX + 1] = "";
        cn_s3_err_t e = fn(ctx, kind, v + vs, vl, &type, id);
        if (e != CN_S3E_NONE)
            return e;
        cn_err_t ae = cn_authz_acl_add(acl, type, type == CN_GRANTEE_USER ? id : NULL, perm);
        if (ae == CN_E_LIMIT)
            return CN_S3E_MALFORMED_ACL;
        if (ae < 0)
            return CN_S3E_INVALID_ARGUMENT;
        any = true;
    }
    return any ? CN_S3E_NONE : CN_S3E_INVALID_ARGUMENT;
}

/* Text of child name of node, trimmed of surrounding whitespace. */
static const char *acl_child(const cn_xml_doc_t *d, int node, const char *name, size_t *len)
{
    const char *t = cn_xml_child_text(d, node, name, len);
    if (!t)
        return NULL;
    while (*len && (ws(*t) || *t == '\n' || *t == '\r')) {
        t++;
        (*len)--;
    }
    while (*len && (ws(t[*len - 1]) || t[*len - 1] == '\n' || t[*len - 1] == '\r'))
        (*len)--;
    return t;
}

cn_s3_err_t cn__s3_acl_xml_parse(const cn_xml_doc_t *d, cn__grantee_fn fn, void *ctx,
                                 cn_authz_acl_t *acl, char owner[CN_ACCOUNT_NAME_MAX + 1])
{
    owner[0] = 0;
    int root = cn_xml_root(d);
    const char *rn = root >= 0 ? cn_xml_name(d, root) : NULL;
    if (!rn || strcmp(rn, "AccessControlPolicy") != 0)
        return CN_S3E_MALFORMED_ACL;
    int on = cn_xml_child(d, root, "Owner");
    if (on >= 0) {
        size_t l = 0;
        const char *id = acl_child(d, on, "ID", &l);
        if (id) {
            if (l == 0 || l > CN_ACCOUNT_NAME_MAX)
                return CN_S3E_INVALID_ARGUMENT;
            memcpy(owner, id, l);
            owner[l] = 0;
        }
    }
    int list = cn_xml_child(d, root, "AccessControlList");
    if (list < 0)
        return CN_S3E_MALFORMED_ACL;
    for (int g = cn_xml_child(d, list, "Grant"); g >= 0; g = cn_xml_next(d, g, "Grant")) {
        int ge = cn_xml_child(d, g, "Grantee");
        size_t pl = 0;
        const char *ps = acl_child(d, g, "Permission", &pl);
        uint32_t perm = 0;
        if (ge < 0 || !ps || cn_authz_acl_perm_parse(ps, pl, &perm) < 0)
            return CN_S3E_MALFORMED_ACL;
        size_t l = 0;
        const char *v;
        cn__grantee_kind_t kind;
        if ((v = acl_child(d, ge, "ID", &l)))
            kind = CN__GRANTEE_ID;
        else if ((v = acl_child(d, ge, "EmailAddress", &l)))
            kind = CN__GRANTEE_EMAIL;
        else if ((v = acl_child(d, ge, "URI", &l)))
            kind = CN__GRANTEE_URI;
        else
            return CN_S3E_MALFORMED_ACL;
        if (l == 0)
            return CN_S3E_INVALID_ARGUMENT;
        cn_grantee_type_t type = CN_GRANTEE_USER;
        char id[CN_ACCOUNT_NAME_MAX + 1] = "";
        cn_s3_err_t e = fn(ctx, kind, v, l, &type, id);
        if (e != CN_S3E_NONE)
            return e;
        cn_err_t ae = cn_authz_acl_add(acl, type, type == CN_GRANTEE_USER ? id : NULL, perm);
        if (ae == CN_E_LIMIT)
            return CN_S3E_MALFORMED_ACL;
        if (ae < 0)
            return CN_S3E_INVALID_ARGUMENT;
    }
    return CN_S3E_NONE;
}

/* The resolver over the identity service: ids must be accounts, emails
 * resolve to their account, URIs must be the known groups. */
static cn_s3_err_t acl_resolve(void *ctx, cn__grantee_kind_t kind, const char *v, size_t n,
                               cn_grantee_type_t *type, char id[CN_ACCOUNT_NAME_MAX + 1])
{
    cn__s3_rq_t *q = ctx;
    char buf[CN_EMAIL_MAX + 1];
    if (kind == CN__GRANTEE_URI) {
        return cn_authz_group_parse(v, n, type) == CN_OK ? CN_S3E_NONE : CN_S3E_INVALID_ARGUMENT;
    }
    if (n >= sizeof buf || memchr(v, 0, n))
        return kind == CN__GRANTEE_EMAIL ? CN_S3E_UNRESOLVABLE_GRANT_BY_EMAIL
                                         : CN_S3E_INVALID_ARGUMENT;
    memcpy(buf, v, n);
    buf[n] = 0;
    cn_account_t a;
    cn_err_t e = kind == CN__GRANTEE_EMAIL ? cn_identity_account_by_email(q->s3->identity, buf, &a)
                                           : cn_identity_account_get(q->s3->identity, buf, &a);
    if (e == CN_E_NOT_FOUND || e == CN_E_INVALID)
        return kind == CN__GRANTEE_EMAIL ? CN_S3E_UNRESOLVABLE_GRANT_BY_EMAIL
                                         : CN_S3E_INVALID_ARGUMENT;
    if (e < 0)
        return CN_S3E_INTERNAL_ERROR;
    *type = CN_GRANTEE_USER;
    snprintf(id, CN_ACCOUNT_NAME_MAX + 1, "%s", a.name);
    return CN_S3E_NONE;
}

static const char *acl_err_msg(cn_s3_err_t e)
{
    switch (e) {
    case CN_S3E_INVALID_ARGUMENT: return "Invalid id or grantee";
    case CN_S3E_UNRESOLVABLE_GRANT_BY_EMAIL: return NULL;
    default: return NULL;
    }
}

/* The canned ACL of the request: the x-amz-acl header, or for a presigned
 * URL the signed x-amz-acl query parameter. */
static const char *canned_name(cn__s3_rq_t *q)
{
    const char *c = cn_http_req_header(q->r, "x-amz-acl");
    if (!c && cn_http_req_auth(q->r) == CN_HTTP_AUTH_SIGV4_QUERY)
        c = cn_http_req_query(q->r, "x-amz-acl");
    return c;
}

static bool grant_hdrs_in(cn__s3_rq_t *q)
{
    for (size_t i = 0; i < CN__NGRANT_HDRS; i++)
        if (cn_http_req_header(q->r, cn__grant_hdrs[i].header))
            return true;
    return false;
}

bool cn__s3_acl_in_request(cn__s3_rq_t *q)
{
    return canned_name(q) || grant_hdrs_in(q);
}

bool cn__s3_acl_from_request(cn__s3_rq_t *q, const char *owner, const char *bucket_owner,
                             bool for_bucket, cn_authz_acl_t *acl, bool *present,
                             const char **canned_out)
{
    *present = false;
    if (canned_out)
        *canned_out = NULL;
    const char *canned = canned_name(q);
    bool grants = grant_hdrs_in(q);
    if (!canned && !grants)
        return true;
    if (canned && grants) {
        cn__s3_error(q, CN_S3E_INVALID_REQUEST,
                     "Specifying both Canned ACLs and Header Grants is not allowed");
        return false;
    }
    if (canned) {
        if (cn_authz_acl_canned(acl, canned, strlen(canned), owner,
                                bucket_owner && bucket_owner[0] ? bucket_owner : NULL,
                                for_bucket) != CN_OK) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "unknown canned ACL");
            return false;
        }
        if (canned_out)
            *canned_out = canned;
        *present = true;
        return true;
    }
    if (cn_authz_acl_init(acl, owner) != CN_OK) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return false;
    }
    for (size_t i = 0; i < CN__NGRANT_HDRS; i++) {
        const char *v = cn_http_req_header(q->r, cn__grant_hdrs[i].header);
        if (!v)
            continue;
        cn_s3_err_t e =
            cn__s3_grant_header_parse(v, strlen(v), cn__grant_hdrs[i].perm, acl_resolve, q, acl);
        if (e != CN_S3E_NONE) {
            cn__s3_error(q, e, acl_err_msg(e));
            return false;
        }
    }
    *present = true;
    return true;
}

/* ---- the XML answer ---------------------------------------------------------------- */

static void acl_raw(cn_xml_writer_t *w, const char *s)
{
    if (w->err == CN_OK)
        w->err = cn_buf_append_str(w->out, s);
}

void cn__s3_acl_xml(cn_xml_writer_t *w, const cn_authz_acl_t *acl)
{
    cn_xml_open(w, "AccessControlPolicy", CN_S3_XMLNS);
    cn__s3_owner(w, "Owner", acl->owner);
    cn_xml_open(w, "AccessControlList", NULL);
    for (uint32_t i = 0; i < acl->ngrants; i++) {
        const cn_authz_grant_t *g = &acl->grants[i];
        cn_xml_open(w, "Grant", NULL);
        /* The writer has no attributes; the xsi:type pair is written as is
         * (balanced by the raw close below). */
        if (g->type == CN_GRANTEE_USER) {
            acl_raw(w, "<Grantee xmlns:xsi=\"" CN__XSI "\" xsi:type=\"CanonicalUser\">");
            cn_xml_elem(w, "ID", g->id);
            cn_xml_elem(w, "DisplayName", g->id);
        } else {
            acl_raw(w, "<Grantee xmlns:xsi=\"" CN__XSI "\" xsi:type=\"Group\">");
            cn_xml_elem(w, "URI", cn_authz_group_uri((cn_grantee_type_t)g->type));
        }
        acl_raw(w, "</Grantee>");
        cn_xml_elem(w, "Permission", cn_authz_acl_perm_name(g->perm));
        cn_xml_close(w);
    }
    cn_xml_close(w);
    cn_xml_close(w);
}

/* ---- Get / Put Bucket and Object ACL --------------------------------------------------- */

void cn__s3_acl_get(cn__s3_rq_t *q)
{
    cn_authz_acl_t *acl = malloc(sizeof *acl);
    if (!acl) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return;
    }
    cn_err_t e = q->key ? cn_objects_object_acl_get(q->s3->objects, &q->orq, q->bucket, q->key, acl)
                        : cn_objects_bucket_acl_get(q->s3->objects, &q->orq, q->bucket, acl);
    if (e < 0) {
        free(acl);
        cn__s3_fail(q, e);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn__s3_acl_xml(&w, acl);
    free(acl);
    cn__s3_xml(q, 200, &w);
}

static void acl_put_done(cn__s3_rq_t *q)
{
    /* The resource's owner: canned ACLs and grant lists are built for it
     * (the service rewrites the owner field, but private's FULL_CONTROL
     * grant names it too). */
    char owner[CN_ACCOUNT_NAME_MAX + 1] = "", bowner[CN_ACCOUNT_NAME_MAX + 1] = "";
    cn_err_t e = cn_objects_bucket_peek(q->s3->objects, q->bucket, bowner, NULL, NULL, NULL);
    if (e >= 0 && q->key)
        e = cn_objects_object_peek_owner(q->s3->objects, q->bucket, q->key, owner);
    else
        snprintf(owner, sizeof owner, "%s", bowner);
    if (e < 0) {
        /* Missing bucket or key: let the service say which, after its
         * authorization (so no one learns more than they may). */
        q->orq.what = CN_OBJ_WHAT_NONE;
        cn_authz_acl_t probe;
        e = q->key ? cn_objects_object_acl_get(q->s3->objects, &q->orq, q->bucket, q->key, &probe)
                   : cn_objects_bucket_acl_get(q->s3->objects, &q->orq, q->bucket, &probe);
        cn__s3_fail(q, e < 0 ? e : CN_E_NOT_FOUND);
        return;
    }
    cn_authz_acl_t *acl = malloc(sizeof *acl);
    if (!acl) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return;
    }
    bool present = false;
    if (!cn__s3_acl_from_request(q, owner, bowner, q->key == NULL, acl, &present, NULL))
        goto out;
    if (q->body.len) {
        if (present) {
            cn__s3_error(q, CN_S3E_UNEXPECTED_CONTENT, NULL);
            goto out;
        }
        cn_xml_doc_t *d = NULL;
        e = cn_xml_parse(q->body.data, q->body.len, 2000, &d);
        if (e < 0) {
            cn_xml_doc_free(d);
            cn__s3_error(q, e == -ENOMEM ? CN_S3E_INTERNAL_ERROR : CN_S3E_MALFORMED_ACL, NULL);
            goto out;
        }
        char xowner[CN_ACCOUNT_NAME_MAX + 1];
        cn_authz_acl_init(acl, owner);
        cn_s3_err_t se = cn__s3_acl_xml_parse(d, acl_resolve, q, acl, xowner);
        cn_xml_doc_free(d);
        if (se != CN_S3E_NONE) {
            cn__s3_error(q, se, acl_err_msg(se));
            goto out;
        }
        if (xowner[0] && strcmp(xowner, owner) != 0) {
            /* An ACL cannot hand a resource to another owner. */
            cn__s3_error(q, CN_S3E_ACCESS_DENIED, NULL);
            goto out;
        }
        present = true;
    }
    if (!present) {
        cn__s3_error(q, CN_S3E_MISSING_SECURITY_HEADER, NULL);
        goto out;
    }
    e = q->key ? cn_objects_object_acl_set(q->s3->objects, &q->orq, q->bucket, q->key, acl)
               : cn_objects_bucket_acl_set(q->s3->objects, &q->orq, q->bucket, acl);
    if (e < 0) {
        cn__s3_fail(q, e);
        goto out;
    }
    cn_http_respond_empty(q->r, 200, 0);
out:
    free(acl);
}

void cn__s3_acl_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__ACL_BODY_MAX, acl_put_done);
}

/* ---- public access block ------------------------------------------------------------------ */

void cn__s3_pab_get(cn__s3_rq_t *q)
{
    cn_authz_pab_t p;
    cn_err_t e = cn_objects_bucket_pab_get(q->s3->objects, &q->orq, q->bucket, &p);
    if (e < 0) {
        if (e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)
            cn__s3_error(q, CN_S3E_NO_SUCH_PUBLIC_ACCESS_BLOCK, NULL);
        else
            cn__s3_fail(q, e);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "PublicAccessBlockConfiguration", CN_S3_XMLNS);
    cn_xml_elem_bool(&w, "BlockPublicAcls", p.block_public_acls);
    cn_xml_elem_bool(&w, "IgnorePublicAcls", p.ignore_public_acls);
    cn_xml_elem_bool(&w, "BlockPublicPolicy", p.block_public_policy);
    cn_xml_elem_bool(&w, "RestrictPublicBuckets", p.restrict_public_buckets);
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}

/* "true" / "false" (surrounding whitespace allowed); absent = false. */
static bool xml_bool(const cn_xml_doc_t *d, int node, const char *name, bool *out)
{
    size_t l = 0;
    const char *t = acl_child(d, node, name, &l);
    *out = false;
    if (!t)
        return true;
    if (l == 4 && strncasecmp(t, "true", 4) == 0)
        *out = true;
    else if (!(l == 5 && strncasecmp(t, "false", 5) == 0))
        return false;
    return true;
}

static void pab_put_done(cn__s3_rq_t *q)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    int root = cn_xml_root(d);
    const char *rn = cn_xml_name(d, root);
    cn_authz_pab_t p;
    memset(&p, 0, sizeof p);
    bool ok = rn && strcmp(rn, "PublicAccessBlockConfiguration") == 0 &&
              xml_bool(d, root, "BlockPublicAcls", &p.block_public_acls) &&
              xml_bool(d, root, "IgnorePublicAcls", &p.ignore_public_acls) &&
              xml_bool(d, root, "BlockPublicPolicy", &p.block_public_policy) &&
              xml_bool(d, root, "RestrictPublicBuckets", &p.restrict_public_buckets);
    cn_xml_doc_free(d);
    if (!ok) {
        cn__s3_error(q, CN_S3E_MALFORMED_XML, NULL);
        return;
    }
    cn_err_t e = cn_objects_bucket_pab_set(q->s3->objects, &q->orq, q->bucket, &p);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 200, 0);
}

void cn__s3_pab_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__ACL_BODY_MAX, pab_put_done);
}

void cn__s3_pab_delete(cn__s3_rq_t *q)
{
    cn_err_t e = cn_objects_bucket_pab_set(q->s3->objects, &q->orq, q->bucket, NULL);
    if (e < 0 && !(e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)) {
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 204, 0);
}
