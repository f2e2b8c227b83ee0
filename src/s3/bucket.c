/* Bucket operations: ListBuckets, CreateBucket (with object lock enabled
 * when asked), DeleteBucket, HeadBucket, GetBucketLocation,
 * GetBucketVersioning (always unversioned). */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ListBuckets ------------------------------------------------------------ */

typedef struct {
    cn_xml_writer_t *w;
    const char *prefix;
    const char *after; /* continuation token: the last name returned */
    int64_t max;
    int64_t n;
    char last[CN_BUCKET_NAME_MAX + 1];
    bool more;
} cn__lb_t;

static cn_err_t lb_one(void *arg, const cn_bucket_info_t *b)
{
    cn__lb_t *l = arg;
    if (l->prefix && strncmp(b->name, l->prefix, strlen(l->prefix)) != 0)
        return 0;
    if (l->after && strcmp(b->name, l->after) <= 0)
        return 0;
    if (l->n == l->max) {
        l->more = true;
        return 1; /* stop: one past the page says it is truncated */
    }
    char date[CN_RFC3339_LEN];
    cn__s3_iso_date(b->created_ms, date);
    cn_xml_open(l->w, "Bucket", NULL);
    cn_xml_elem(l->w, "Name", b->name);
    cn_xml_elem(l->w, "CreationDate", date);
    cn_xml_close(l->w);
    snprintf(l->last, sizeof l->last, "%s", b->name);
    l->n++;
    return 0;
}

void cn__s3_list_buckets(cn__s3_rq_t *q)
{
    int64_t max;
    if (!cn__s3_int_arg(q, cn_http_req_query(q->r, "max-buckets"), "max-buckets", 1, 10000, 10000,
                        &max))
        return;
    if (q->anonymous) {
        cn__s3_error(q, CN_S3E_ACCESS_DENIED, NULL);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "ListAllMyBucketsResult", CN_S3_XMLNS);
    cn__s3_owner(&w, "Owner", q->principal.account);
    cn_xml_open(&w, "Buckets", NULL);
    const char *prefix = cn_http_req_query(q->r, "prefix");
    const char *tok = cn_http_req_query(q->r, "continuation-token");
    cn__lb_t l = { &w,   prefix && *prefix ? prefix : NULL, tok && *tok ? tok : NULL, max, 0, "",
                   false };
    cn_err_t e = cn_objects_bucket_list(q->s3->objects, &q->orq, lb_one, &l);
    if (e < 0) {
        cn_buf_free(&out);
        cn__s3_fail(q, e);
        return;
    }
    cn_xml_close(&w);
    if (l.more)
        cn_xml_elem(&w, "ContinuationToken", l.last);
    if (prefix)
        cn_xml_elem(&w, "Prefix", prefix);
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}

/* ---- CreateBucket ------------------------------------------------------------- */

/* Creates q->bucket; with x-amz-bucket-object-lock-enabled: true, its
 * versioning "Enabled" and its object lock configuration are written in the
 * creating transaction. */
static cn_err_t create_bucket(cn__s3_rq_t *q, const cn_authz_acl_t *acl)
{
    const char *lock = cn_http_req_header(q->r, "x-amz-bucket-object-lock-enabled");
    if (!lock || strcasecmp(lock, "true") != 0)
        return cn_objects_bucket_create(q->s3->objects, &q->orq, q->bucket, acl, NULL);
    cn_buf_t doc = { 0 };
    cn_err_t e = cn__s3_lock_config_initial(&doc);
    if (e >= 0)
        e = cn_buf_append(&doc, "", 1); /* the settings are NUL-terminated strings */
    if (e >= 0) {
        cn_objects_kv_t settings[] = { { "versioning", "Enabled" },
                                       { CN_OBJECTS_LOCK_ATTR, (const char *)doc.data } };
        e = cn_objects_bucket_create_with(q->s3->objects, &q->orq, q->bucket, acl, settings, 2,
                                          NULL);
    }
    cn_buf_free(&doc);
    return e;
}

static void create_done(cn__s3_rq_t *q)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, false);
    if (!d && cn_http_req_responded(q->r))
        return;
    if (d) {
        int root = cn_xml_root(d);
        const char *name = cn_xml_name(d, root);
        if (!name || strcmp(name, "CreateBucketConfiguration") != 0) {
            cn_xml_doc_free(d);
            cn__s3_error(q, CN_S3E_MALFORMED_XML, NULL);
            return;
        }
        size_t ll = 0;
        const char *loc = cn_xml_child_text(d, root, "LocationConstraint", &ll);
        const char *want = q->s3->region ? q->s3->region : "us-east-1";
        if (loc && ll && !(strlen(want) == ll && memcmp(loc, want, ll) == 0) && q->s3->region) {
            cn_xml_doc_free(d);
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "The specified location-constraint is not valid");
            return;
        }
        cn_xml_doc_free(d);
    }
    if (q->anonymous) {
        cn__s3_error(q, CN_S3E_ACCESS_DENIED, NULL);
        return;
    }
    cn_authz_acl_t *acl = malloc(sizeof *acl);
    if (!acl) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return;
    }
    bool present = false;
    if (!cn__s3_acl_from_request(q, q->principal.account, NULL, true, acl, &present, NULL)) {
        free(acl);
        return;
    }
    cn_authz_acl_t *aclp = present ? acl : NULL;
    cn_err_t e = create_bucket(q, aclp);
    free(acl);
    if (e == CN_E_EXISTS) {
        char owner[CN_ACCOUNT_NAME_MAX + 1];
        cn__s3_bucket_owner(q, owner);
        cn__s3_error(q,
                     strcmp(owner, q->principal.account) == 0 ? CN_S3E_BUCKET_ALREADY_OWNED
                                                              : CN_S3E_BUCKET_ALREADY_EXISTS,
                     NULL);
        return;
    }
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    char loc[CN_BUCKET_NAME_MAX + 2];
    snprintf(loc, sizeof loc, "/%s", q->bucket);
    cn_http_resp_header(q->r, "Location", loc);
    cn_http_respond_empty(q->r, 200, 0);
}

void cn__s3_create_bucket(cn__s3_rq_t *q)
{
    if (!cn_objects_bucket_name_ok(q->bucket)) {
        cn__s3_error(q, CN_S3E_INVALID_BUCKET_NAME, NULL);
        return;
    }
    cn__s3_collect(q, 64 * 1024, create_done);
}

/* ---- DeleteBucket / HeadBucket / location / versioning --------------------------- */

void cn__s3_delete_bucket(cn__s3_rq_t *q)
{
    cn_err_t e = cn_objects_bucket_delete(q->s3->objects, &q->orq, q->bucket);
    if (e < 0) {
        if (e == CN_E_NOT_FOUND)
            q->orq.what = CN_OBJ_WHAT_BUCKET;
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 204, 0);
}

static const char *bucket_region(const cn__s3_rq_t *q)
{
    return q->s3->region ? q->s3->region : "us-east-1";
}

void cn__s3_head_bucket(cn__s3_rq_t *q)
{
    cn_bucket_info_t bi;
    cn_err_t e = cn_objects_bucket_head(q->s3->objects, &q->orq, q->bucket, &bi);
    if (e < 0) {
        if (e == CN_E_NOT_FOUND)
            q->orq.what = CN_OBJ_WHAT_BUCKET;
        cn__s3_fail(q, e);
        return;
    }
    cn_http_resp_header(q->r, "x-amz-bucket-region", bucket_region(q));
    cn_http_respond_empty(q->r, 200, 0);
}

void cn__s3_get_location(cn__s3_rq_t *q)
{
    /* The bucket attribute read authorizes s3:GetBucketLocation; no
     * attribute is ever stored under this name, so "not set" means allowed. */
    cn_buf_t v = { 0 };
    cn_err_t e = cn_objects_bucket_attr_get(q->s3->objects, &q->orq, q->bucket, "location",
                                            CN_ACT_GET_BUCKET_LOCATION, &v);
    cn_buf_free(&v);
    if (e < 0 && !(e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)) {
        cn__s3_fail(q, e);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "LocationConstraint", CN_S3_XMLNS);
    if (q->s3->region && strcmp(q->s3->region, "us-east-1") != 0)
        cn_xml_text(&w, q->s3->region, strlen(q->s3->region));
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}
