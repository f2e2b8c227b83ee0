/* Bucket configuration documents for other faces (cairn/s3.h,
 * cn_s3_conf_*): the web console edits a bucket's lifecycle, CORS and
 * object-lock configurations, writes them as the S3 document, and stores
 * and reads them through here, so that one validation (this face's, with
 * S3's codes and reasons) and one stored form serve both faces and S3 reads
 * back byte for byte what the console wrote.
 *
 * Never: stores a document its S3 PUT would refuse, or reads or writes the
 * metadata other than through the one objects-service call that S3's own
 * operation makes. */
#include "s3_int.h"

#include <errno.h>
#include <string.h>

#define CN__CONF_MAX_NODES 100000 /* as a request body's (cn__s3_body_xml) */
#define CN__CONF_CORS_ATTR "cors" /* cors.c's setting */

/* Validates lifecycle document d and stores it (the re-encoding when a rule
 * was given an ID).  Returns the S3 error of an invalid document, or NONE
 * with *err the service's result. */
static cn_s3_err_t lifecycle_put(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                 const cn_xml_doc_t *d, const void *xml, size_t len, char *why,
                                 size_t why_len, cn_err_t *err)
{
    cn__s3_lc_t lc;
    cn_s3_err_t se = cn__s3_lc_parse(d, &lc, why, why_len);
    if (se == CN_S3E_NONE) {
        const char *doc = lc.generated ? (const char *)lc.doc.data : (const char *)xml;
        size_t n = lc.generated ? lc.doc.len : len;
        *err = cn_objects_lifecycle_set(o, rq, bucket, lc.rules, lc.nrules, doc, n);
    }
    cn__s3_lc_free(&lc);
    return se;
}

static cn_s3_err_t cors_put(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                            const cn_xml_doc_t *d, char *why, size_t why_len, cn_err_t *err)
{
    cn_buf_t out = { 0 };
    cn_s3_err_t se = cn__s3_cors_normalize(d, &out, why, why_len);
    if (se == CN_S3E_NONE)
        *err = cn_objects_bucket_attr_set(o, rq, bucket, CN__CONF_CORS_ATTR, CN_ACT_PUT_BUCKET_CORS,
                                          out.data, out.len);
    cn_buf_free(&out);
    return se;
}

static cn_s3_err_t lock_put(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                            const cn_xml_doc_t *d, cn_err_t *err)
{
    cn_buf_t doc = { 0 };
    char dflt[32];
    cn_s3_err_t se = cn__s3_lock_config_parse(d, &doc, dflt);
    if (se == CN_S3E_NONE)
        *err = cn_objects_lock_config_set(o, rq, bucket, (const char *)doc.data, doc.len,
                                          dflt[0] ? dflt : NULL);
    cn_buf_free(&doc);
    return se;
}

cn_s3_err_t cn_s3_conf_put(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                           cn_s3_conf_t kind, const void *xml, size_t len, char *why,
                           size_t why_len, cn_err_t *err)
{
    why[0] = 0;
    *err = CN_E_INVALID;
    cn_xml_doc_t *d = NULL;
    cn_err_t pe = cn_xml_parse(xml, len, CN__CONF_MAX_NODES, &d);
    cn_s3_err_t se = CN_S3E_MALFORMED_XML;
    if (pe == -ENOMEM)
        se = CN_S3E_INTERNAL_ERROR;
    else if (pe == CN_OK && kind == CN_S3_CONF_LIFECYCLE)
        se = lifecycle_put(o, rq, bucket, d, xml, len, why, why_len, err);
    else if (pe == CN_OK && kind == CN_S3_CONF_CORS)
        se = cors_put(o, rq, bucket, d, why, why_len, err);
    else if (pe == CN_OK && kind == CN_S3_CONF_OBJECT_LOCK)
        se = lock_put(o, rq, bucket, d, err);
    cn_xml_doc_free(d);
    return se;
}

cn_err_t cn_s3_conf_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                        cn_s3_conf_t kind, cn_buf_t *doc)
{
    switch (kind) {
    case CN_S3_CONF_LIFECYCLE: return cn_objects_lifecycle_get(o, rq, bucket, doc);
    case CN_S3_CONF_CORS:
        return cn_objects_bucket_attr_get(o, rq, bucket, CN__CONF_CORS_ATTR, CN_ACT_GET_BUCKET_CORS,
                                          doc);
    case CN_S3_CONF_OBJECT_LOCK: return cn_objects_lock_config_get(o, rq, bucket, doc);
    }
    return CN_E_INVALID;
}

cn_err_t cn_s3_conf_delete(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                           cn_s3_conf_t kind)
{
    cn_err_t e = CN_E_UNSUPPORTED; /* object lock is never turned off */
    if (kind == CN_S3_CONF_LIFECYCLE)
        e = cn_objects_lifecycle_set(o, rq, bucket, NULL, 0, NULL, 0);
    else if (kind == CN_S3_CONF_CORS)
        e = cn_objects_bucket_attr_set(o, rq, bucket, CN__CONF_CORS_ATTR, CN_ACT_PUT_BUCKET_CORS,
                                       NULL, 0);
    if (e == CN_E_NOT_FOUND && rq->what == CN_OBJ_WHAT_ARG)
        e = CN_OK; /* deleting what is not set is still a success, as on S3 */
    return e;
}

cn_err_t cn_s3_conf_lock_initial(cn_buf_t *out)
{
    return cn__s3_lock_config_initial(out);
}
