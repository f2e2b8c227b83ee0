/* Bucket policy: GetBucketPolicy, PutBucketPolicy, DeleteBucketPolicy (JSON,
 * validated and enforced by authz through the objects service: the same
 * policy the native protocol sees) and GetBucketPolicyStatus. */
#include "s3_int.h"

#include <stdlib.h>
#include <string.h>

void cn__s3_policy_get(cn__s3_rq_t *q)
{
    cn_buf_t json = { 0 };
    cn_err_t e = cn_objects_bucket_policy_get(q->s3->objects, &q->orq, q->bucket, &json);
    if (e < 0) {
        cn_buf_free(&json);
        if (e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)
            cn__s3_error(q, CN_S3E_NO_SUCH_BUCKET_POLICY, NULL);
        else
            cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_buf(q->r, 200, "application/json", &json);
    cn_buf_free(&json);
}

static void policy_put_done(cn__s3_rq_t *q)
{
    if (q->body.len == 0) {
        cn__s3_error(q, CN_S3E_MALFORMED_POLICY,
                     "Policies must be valid JSON and the first "
                     "byte must be '{'");
        return;
    }
    cn_err_t e = cn_objects_bucket_policy_set(q->s3->objects, &q->orq, q->bucket,
                                              (const char *)q->body.data, q->body.len);
    if (e < 0) { /* POLICY_INVALID: MalformedPolicy, with the reason */
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 204, 0);
}

void cn__s3_policy_put(cn__s3_rq_t *q)
{
    /* Twice the policy limit: an oversized body still reaches authz, which
     * answers MalformedPolicy with the reason rather than a generic error. */
    cn__s3_collect(q, 2 * CN_AUTHZ_POLICY_MAX, policy_put_done);
}

void cn__s3_policy_delete(cn__s3_rq_t *q)
{
    cn_err_t e = cn_objects_bucket_policy_set(q->s3->objects, &q->orq, q->bucket, NULL, 0);
    if (e < 0 && !(e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_ARG)) {
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 204, 0);
}

void cn__s3_policy_status(cn__s3_rq_t *q)
{
    cn_buf_t json = { 0 };
    cn_objects_req_t rq = q->orq;
    /* Reading the policy needs s3:GetBucketPolicy; the status is derived
     * from it, so that right covers both. */
    cn_err_t e = cn_objects_bucket_policy_get(q->s3->objects, &rq, q->bucket, &json);
    if (e < 0) {
        cn_buf_free(&json);
        q->orq = rq;
        if (e == CN_E_NOT_FOUND && rq.what == CN_OBJ_WHAT_ARG)
            cn__s3_error(q, CN_S3E_NO_SUCH_BUCKET_POLICY, NULL);
        else
            cn__s3_fail(q, e);
        return;
    }
    cn_authz_policy_t *p = NULL;
    bool pub = false;
    if (cn_authz_policy_parse((const char *)json.data, json.len, q->bucket, &p, NULL) == CN_OK)
        pub = cn_authz_policy_is_public(p);
    cn_authz_policy_free(p);
    cn_buf_free(&json);
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "PolicyStatus", CN_S3_XMLNS);
    cn_xml_elem_bool(&w, "IsPublic", pub);
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}
