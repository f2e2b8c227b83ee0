/* Tagging on the S3 face: Get / Put / DeleteObjectTagging (?tagging, with
 * ?versionId), Get / Put / DeleteBucketTagging (the bucket's "tagging"
 * setting, stored in canonical XML), and the request forms other
 * operations carry: the x-amz-tagging header (URL-encoded k1=v1&k2=v2) of
 * PutObject, CreateMultipartUpload and CopyObject, and
 * x-amz-tagging-directive (COPY | REPLACE) of CopyObject.
 *
 * Limits (S3's): at most 10 tags on an object, 50 on a bucket; keys of 1 to
 * 128 and values of 0 to 256 characters; unique keys; "aws:" reserved;
 * every breach is 400 InvalidTag, a body that is not a Tagging document
 * MalformedXML.  Never: lets a tag set the service would refuse reach it,
 * or answers anything but what the service stored. */
#include "s3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CN__TAG_BODY_MAX (64u * 1024)
#define CN__TAG_MAX_NODES 1000
#define CN__TAG_ATTR "tagging"

void cn__s3_tags_free(cn__s3_tags_t *t)
{
    cn_buf_free(&t->store);
    memset(t, 0, sizeof *t);
}

/* Appends n bytes at p and a NUL to t's store; the offset in *off. */
static cn_err_t tags_str(cn__s3_tags_t *t, const char *p, size_t n, size_t *off)
{
    *off = t->store.len;
    cn_err_t err = n ? cn_buf_append(&t->store, p, n) : 0;
    return err < 0 ? err : cn_buf_put_u8(&t->store, 0);
}

/* Points the kv array into the store once every string is in. */
static void tags_fix(cn__s3_tags_t *t, const size_t *offs)
{
    for (size_t i = 0; i < t->n; i++) {
        t->kv[i].key = (const char *)t->store.data + offs[2 * i];
        t->kv[i].value = (const char *)t->store.data + offs[2 * i + 1];
    }
}

/* The limits, then InvalidTag with why. */
static cn_s3_err_t tags_check(const cn__s3_tags_t *t, size_t max, char *why, size_t why_len)
{
    return cn_objects_tags_check(t->kv, t->n, max, why, why_len) < 0 ? CN_S3E_INVALID_TAG
                                                                     : CN_S3E_NONE;
}

/* ---- x-amz-tagging ------------------------------------------------------------------- */

/* Form-decodes s[0..n) ('+' is a space, %XX a byte) onto t's store. */
static bool form_decode(cn__s3_tags_t *t, const char *s, size_t n, size_t *off)
{
    *off = t->store.len;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            uint8_t b = 0;
            if (n - i < 3 || cn_hex_decode(s + i + 1, 2, &b, 1) < 0 || b == 0)
                return false; /* a bad escape, or an encoded NUL */
            c = b;
            i += 2;
        }
        if (cn_buf_put_u8(&t->store, (uint8_t)c) < 0)
            return false;
    }
    return cn_buf_put_u8(&t->store, 0) >= 0;
}

cn_s3_err_t cn__s3_tags_parse_query(const char *s, size_t len, size_t max, cn__s3_tags_t *out,
                                    char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    why[0] = 0;
    out->present = true;
    size_t offs[2 * CN__S3_TAGS_CAP];
    size_t i = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && s[e] != '&')
            e++;
        if (e > i) {
            if (out->n >= max || out->n >= CN__S3_TAGS_CAP) {
                snprintf(why, why_len, "at most %zu tags are allowed", max);
                return CN_S3E_INVALID_TAG;
            }
            const char *eq = memchr(s + i, '=', e - i);
            size_t kl = eq ? (size_t)(eq - (s + i)) : e - i;
            const char *v = eq ? eq + 1 : s + e;
            size_t vl = eq ? (size_t)(s + e - v) : 0;
            if (!form_decode(out, s + i, kl, &offs[2 * out->n]) ||
                !form_decode(out, v, vl, &offs[2 * out->n + 1])) {
                snprintf(why, why_len, "the tag set is not URL-encoded k=v pairs");
                return CN_S3E_INVALID_TAG;
            }
            out->n++;
        }
        i = e + 1;
    }
    tags_fix(out, offs);
    return tags_check(out, max, why, why_len);
}

bool cn__s3_tagging_header(cn__s3_rq_t *q, cn__s3_tags_t *out)
{
    memset(out, 0, sizeof *out);
    const char *h = cn_http_req_header(q->r, "x-amz-tagging");
    if (!h)
        return true;
    char why[96];
    cn_s3_err_t e =
        cn__s3_tags_parse_query(h, strlen(h), CN_OBJECTS_TAGS_MAX, out, why, sizeof why);
    if (e != CN_S3E_NONE) {
        cn__s3_tags_free(out);
        cn__s3_error(q, e, why[0] ? why : NULL);
        return false;
    }
    return true;
}

int cn__s3_tagging_directive(cn__s3_rq_t *q)
{
    const char *d = cn_http_req_header(q->r, "x-amz-tagging-directive");
    if (!d || strcmp(d, "COPY") == 0)
        return 0;
    if (strcmp(d, "REPLACE") == 0)
        return 1;
    cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Unknown tagging directive.");
    return -1;
}

/* ---- the Tagging document ------------------------------------------------------------ */

/* A leaf element's text (no child elements), or NULL. */
static const char *leaf(const cn_xml_doc_t *d, int node, size_t *len)
{
    if (cn_xml_child(d, node, NULL) >= 0)
        return NULL;
    return cn_xml_node_text(d, node, len);
}

/* One <Tag>: exactly one Key and at most one Value, nothing else. */
static bool tag_elem(const cn_xml_doc_t *d, int tag, const char **k, size_t *kl, const char **v,
                     size_t *vl)
{
    int nk = 0, nv = 0;
    *v = "";
    *vl = 0;
    for (int c = cn_xml_child(d, tag, NULL); c >= 0; c = cn_xml_next(d, c, NULL)) {
        const char *n = cn_xml_name(d, c);
        if (strcmp(n, "Key") == 0 && nk++ == 0)
            *k = leaf(d, c, kl);
        else if (strcmp(n, "Value") == 0 && nv++ == 0)
            *v = leaf(d, c, vl);
        else
            return false;
    }
    return nk == 1 && *k && *v;
}

cn_s3_err_t cn__s3_tags_parse_xml(const cn_xml_doc_t *d, size_t max, cn__s3_tags_t *out, char *why,
                                  size_t why_len)
{
    memset(out, 0, sizeof *out);
    why[0] = 0;
    out->present = true;
    int root = cn_xml_root(d);
    const char *rn = root >= 0 ? cn_xml_name(d, root) : NULL;
    int set = rn && strcmp(rn, "Tagging") == 0 ? cn_xml_child(d, root, NULL) : -1;
    if (set < 0 || strcmp(cn_xml_name(d, set), "TagSet") != 0 || cn_xml_next(d, set, NULL) >= 0)
        return CN_S3E_MALFORMED_XML;
    size_t offs[2 * CN__S3_TAGS_CAP];
    for (int t = cn_xml_child(d, set, NULL); t >= 0; t = cn_xml_next(d, t, NULL)) {
        const char *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0;
        if (strcmp(cn_xml_name(d, t), "Tag") != 0 || !tag_elem(d, t, &k, &kl, &v, &vl))
            return CN_S3E_MALFORMED_XML;
        if (out->n >= max || out->n >= CN__S3_TAGS_CAP) {
            snprintf(why, why_len, "at most %zu tags are allowed", max);
            return CN_S3E_INVALID_TAG;
        }
        if (tags_str(out, k, kl, &offs[2 * out->n]) < 0 ||
            tags_str(out, v, vl, &offs[2 * out->n + 1]) < 0)
            return CN_S3E_INTERNAL_ERROR;
        out->n++;
    }
    tags_fix(out, offs);
    return tags_check(out, max, why, why_len);
}

void cn__s3_tags_xml(cn_xml_writer_t *w, const cn_objects_kv_t *kv, size_t n)
{
    cn_xml_open(w, "Tagging", CN_S3_XMLNS);
    cn_xml_open(w, "TagSet", NULL);
    for (size_t i = 0; i < n; i++) {
        cn_xml_open(w, "Tag", NULL);
        cn_xml_elem(w, "Key", kv[i].key);
        cn_xml_elem(w, "Value", kv[i].value);
        cn_xml_close(w);
    }
    cn_xml_close(w);
    cn_xml_close(w);
}

/* The collected body as a tag set of at most max tags; false after answering. */
static bool body_tags(cn__s3_rq_t *q, size_t max, cn__s3_tags_t *t)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return false;
    char why[96];
    cn_s3_err_t e = cn__s3_tags_parse_xml(d, max, t, why, sizeof why);
    cn_xml_doc_free(d);
    if (e != CN_S3E_NONE) {
        cn__s3_tags_free(t);
        cn__s3_error(q, e, why[0] ? why : NULL);
        return false;
    }
    return true;
}

/* ---- object tagging ---------------------------------------------------------------- */

static void version_header(cn__s3_rq_t *q, const cn_objects_tagset_t *ts)
{
    if (!ts->bucket_versioned)
        return;
    char v[CN_OBJECTS_VERSION_ID_MAX];
    cn_objects_version_str(ts->version_id, ts->vnull, v);
    cn_http_resp_header(q->r, "x-amz-version-id", v);
}

void cn__s3_obj_tagging_get(cn__s3_rq_t *q)
{
    cn_objects_tagset_t ts;
    cn_err_t e = cn_objects_tags_get(q->s3->objects, &q->orq, q->bucket, q->key,
                                     cn_http_req_query(q->r, "versionId"), &ts);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn__s3_tags_xml(&w, ts.tags, ts.ntags);
    version_header(q, &ts);
    cn_objects_tagset_free(&ts);
    cn__s3_xml(q, 200, &w);
}

static void obj_tagging_put_done(cn__s3_rq_t *q)
{
    cn__s3_tags_t t;
    if (!body_tags(q, CN_OBJECTS_TAGS_MAX, &t))
        return;
    cn_objects_tagset_t res;
    static const cn_objects_kv_t none[1];
    cn_err_t e =
        cn_objects_tags_set(q->s3->objects, &q->orq, q->bucket, q->key,
                            cn_http_req_query(q->r, "versionId"), t.n ? t.kv : none, t.n, &res);
    cn__s3_tags_free(&t);
    if (e >= 0)
        version_header(q, &res);
    cn__s3_answer_done(q, e, 200);
}

void cn__s3_obj_tagging_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__TAG_BODY_MAX, obj_tagging_put_done);
}

void cn__s3_obj_tagging_delete(cn__s3_rq_t *q)
{
    cn_objects_tagset_t res;
    cn_err_t e = cn_objects_tags_set(q->s3->objects, &q->orq, q->bucket, q->key,
                                     cn_http_req_query(q->r, "versionId"), NULL, 0, &res);
    if (e >= 0)
        version_header(q, &res);
    cn__s3_answer_done(q, e, 204);
}

/* ---- bucket tagging ---------------------------------------------------------------- */

void cn__s3_bucket_tagging_get(cn__s3_rq_t *q)
{
    cn__s3_setting_get(q, CN__TAG_ATTR, CN_ACT_GET_BUCKET_TAGGING, CN_S3E_NO_SUCH_TAG_SET);
}

static void bucket_tagging_put_done(cn__s3_rq_t *q)
{
    cn__s3_tags_t t;
    if (!body_tags(q, CN_OBJECTS_BUCKET_TAGS_MAX, &t))
        return;
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn__s3_tags_xml(&w, t.kv, t.n);
    cn__s3_tags_free(&t);
    cn_err_t e = cn_xml_finish(&w);
    if (e >= 0)
        e = cn_objects_bucket_attr_set(q->s3->objects, &q->orq, q->bucket, CN__TAG_ATTR,
                                       CN_ACT_PUT_BUCKET_TAGGING, out.data, out.len);
    cn_buf_free(&out);
    cn__s3_answer_done(q, e, 204);
}

void cn__s3_bucket_tagging_put(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__TAG_BODY_MAX, bucket_tagging_put_done);
}

void cn__s3_bucket_tagging_delete(cn__s3_rq_t *q)
{
    /* S3 authorizes DeleteBucketTagging as s3:PutBucketTagging. */
    cn__s3_setting_delete(q, CN__TAG_ATTR, CN_ACT_PUT_BUCKET_TAGGING);
}
