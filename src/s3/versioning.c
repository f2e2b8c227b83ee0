/* S3 versioning on the wire: Get / PutBucketVersioning, and the version
 * headers every versioned answer carries (x-amz-version-id,
 * x-amz-delete-marker).  The semantics are the objects service's
 * (include/cairn/objects.h, versioning); this file decodes and encodes.
 *
 * Decisions (docs/s3.md, versioning): a bucket whose versioning was never
 * set names no version on the wire; once set, a null version is "null".
 * MFADelete Enabled is NotImplemented; Disabled is accepted as the no-op it
 * is.  Never: answer a version header for a request that was refused. */
#include "s3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CN__VERSIONING_BODY_MAX (16u * 1024)

void cn__s3_version_header(cn__s3_rq_t *q, const char *name, int64_t version_id, bool vnull,
                           bool versioned)
{
    if (vnull && !versioned)
        return;
    char v[CN_OBJECTS_VERSION_ID_MAX];
    cn_objects_version_str(version_id, vnull, v);
    cn_http_resp_header(q->r, name, v);
}

void cn__s3_marker_headers(cn__s3_rq_t *q, const cn_object_info_t *info)
{
    if (!info->delete_marker)
        return;
    cn_http_resp_header(q->r, "x-amz-delete-marker", "true");
    cn__s3_version_header(q, "x-amz-version-id", info->version_id, info->vnull, true);
}

void cn__s3_versioning_get(cn__s3_rq_t *q)
{
    cn_objects_versioning_t st = CN_OBJ_VERSIONING_OFF;
    cn_err_t e = cn_objects_versioning_get(q->s3->objects, &q->orq, q->bucket, &st);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "VersioningConfiguration", CN_S3_XMLNS);
    /* No Status until it was set (S3). */
    if (st != CN_OBJ_VERSIONING_OFF)
        cn_xml_elem(&w, "Status", st == CN_OBJ_VERSIONING_ENABLED ? "Enabled" : "Suspended");
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}

/* An element's text, exact: NULL when absent. */
static const char *child_is(const cn_xml_doc_t *d, int node, const char *elem, size_t *len)
{
    *len = 0;
    return cn_xml_child_text(d, node, elem, len);
}

static void versioning_put_done(cn__s3_rq_t *q)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    int root = cn_xml_root(d);
    const char *rn = cn_xml_name(d, root);
    size_t sl = 0, ml = 0;
    const char *s =
        rn && !strcmp(rn, "VersioningConfiguration") ? child_is(d, root, "Status", &sl) : NULL;
    const char *mfa = rn ? child_is(d, root, "MfaDelete", &ml) : NULL;
    cn_objects_versioning_t st = CN_OBJ_VERSIONING_OFF;
    if (s && sl == 7 && !memcmp(s, "Enabled", 7))
        st = CN_OBJ_VERSIONING_ENABLED;
    else if (s && sl == 9 && !memcmp(s, "Suspended", 9))
        st = CN_OBJ_VERSIONING_SUSPENDED;
    bool mfa_on = mfa && ml == 7 && !memcmp(mfa, "Enabled", 7);
    bool mfa_bad = mfa && !mfa_on && !(ml == 8 && !memcmp(mfa, "Disabled", 8));
    cn_xml_doc_free(d);
    if (mfa_on) {
        cn__s3_error(q, CN_S3E_NOT_IMPLEMENTED, "MFA delete is not supported");
        return;
    }
    /* No Status, or another word: there is no way back to unversioned. */
    if (st == CN_OBJ_VERSIONING_OFF || mfa_bad) {
        cn__s3_error(q, CN_S3E_MALFORMED_XML, NULL);
        return;
    }
    cn_err_t e = cn_objects_versioning_set(q->s3->objects, &q->orq, q->bucket, st);
    cn__s3_answer_done(q, e, 200);
}

void cn__s3_versioning_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__VERSIONING_BODY_MAX, versioning_put_done);
}
