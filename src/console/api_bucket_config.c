/* Console API: a bucket's configurations — visibility, lifecycle, CORS and
 * object lock (docs/console.md, "Bucket configuration").
 *
 * An adapter only.  Lifecycle, CORS and object-lock configurations travel
 * as JSON in the shape of the AWS SDKs' (S3's XML elements as members, a
 * repeated element as a plural array: "Rules", "CORSRules", "AllowedOrigins",
 * "Tags"); this file turns that JSON into S3's document and back, and the S3
 * face's cn_s3_conf_* validate and store it with the objects service, so a
 * configuration made here is the one S3 reads back, refused with the same
 * codes and reasons.  Never decides an access, never validates a
 * configuration itself (a rule it does not know is S3's to refuse). */
#include "console_data.h"

#include "cairn/s3.h"
#include "cairn/xml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONF_DEPTH_MAX 8  /* JSON nesting of a configuration */
#define CONF_NAME_MAX 64  /* a member name (an element name) */
#define CONF_NODES 100000 /* elements of a stored document */

/* JSON plural arrays and the S3 element each item becomes, in the
 * configurations (1 << cn_s3_conf_t) that repeat it (an object-lock
 * configuration's one Rule stays an object). */
#define LC (1u << CN_S3_CONF_LIFECYCLE)
#define CORS (1u << CN_S3_CONF_CORS)
static const struct {
    const char *list, *elem;
    unsigned kinds;
} conf_lists[] = {
    { "Rules", "Rule", LC },
    { "CORSRules", "CORSRule", CORS },
    { "AllowedHeaders", "AllowedHeader", CORS },
    { "AllowedMethods", "AllowedMethod", CORS },
    { "AllowedOrigins", "AllowedOrigin", CORS },
    { "ExposeHeaders", "ExposeHeader", CORS },
    { "Tags", "Tag", LC },
};
#undef LC
#undef CORS
#define CONF_NLISTS (sizeof conf_lists / sizeof conf_lists[0])

/* Elements read back as JSON numbers, and as booleans. */
static const char *const conf_ints[] = { "Days",
                                         "Years",
                                         "MaxAgeSeconds",
                                         "NoncurrentDays",
                                         "NewerNoncurrentVersions",
                                         "DaysAfterInitiation",
                                         "ObjectSizeGreaterThan",
                                         "ObjectSizeLessThan" };
static const char *const conf_bools[] = { "ExpiredObjectDeleteMarker" };

static const char *const conf_roots[] = { [CN_S3_CONF_LIFECYCLE] = "LifecycleConfiguration",
                                          [CN_S3_CONF_CORS] = "CORSConfiguration",
                                          [CN_S3_CONF_OBJECT_LOCK] = "ObjectLockConfiguration" };

static bool in_set(const char *const *set, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(set[i], s) == 0)
            return true;
    return false;
}

/* ---- JSON → S3 document ------------------------------------------------------ */

typedef struct conf_enc {
    cn_xml_writer_t w;
    unsigned kind; /* 1 << cn_s3_conf_t */
    char why[160];
} conf_enc_t;

/* A member name usable as an element name: [A-Za-z][A-Za-z0-9]*. */
static bool name_ok(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > CONF_NAME_MAX || !((k[0] | 0x20) >= 'a' && (k[0] | 0x20) <= 'z'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((k[i] | 0x20) >= 'a' && (k[i] | 0x20) <= 'z') && !(k[i] >= '0' && k[i] <= '9'))
            return false;
    return true;
}

static bool enc_object(conf_enc_t *x, json_t *obj, int depth);

/* <name>v</name> for one JSON value v: an object nests, a string, integer
 * or boolean is the text. */
static bool enc_value(conf_enc_t *x, const char *name, json_t *v, int depth)
{
    char num[24];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        cn_xml_open(&x->w, name, NULL);
        if (!enc_object(x, v, depth + 1))
            return false;
        cn_xml_close(&x->w);
        return true;
    case JSON_STRING:
        cn_xml_elem_n(&x->w, name, json_string_value(v), json_string_length(v));
        return true;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        cn_xml_elem(&x->w, name, num);
        return true;
    case JSON_TRUE:
    case JSON_FALSE: cn_xml_elem_bool(&x->w, name, json_is_true(v)); return true;
    default:
        snprintf(x->why, sizeof x->why, "%s must be an object, a string, an integer or a boolean",
                 name);
        return false;
    }
}

/* A plural array: each item an element named as conf_lists says. */
static bool enc_list(conf_enc_t *x, const char *key, json_t *arr, int depth)
{
    size_t k = 0;
    while (k < CONF_NLISTS &&
           !((conf_lists[k].kinds & x->kind) && !strcmp(conf_lists[k].list, key)))
        k++;
    if (k == CONF_NLISTS) {
        snprintf(x->why, sizeof x->why, "%s may not be an array", key);
        return false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_array(v)) {
            snprintf(x->why, sizeof x->why, "%s holds no arrays", key);
            return false;
        }
        if (!enc_value(x, conf_lists[k].elem, v, depth))
            return false;
    }
    return true;
}

static bool enc_object(conf_enc_t *x, json_t *obj, int depth)
{
    if (depth > CONF_DEPTH_MAX) {
        snprintf(x->why, sizeof x->why, "the configuration is nested too deep");
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        if (!name_ok(key)) {
            snprintf(x->why, sizeof x->why, "\"%.64s\" is not a member of a configuration", key);
            return false;
        }
        if (json_is_array(v) ? !enc_list(x, key, v, depth) : !enc_value(x, key, v, depth))
            return false;
    }
    return true;
}

/* The S3 document of kind for the JSON configuration conf into out.
 * false with x->why set when conf has no such document; -ENOMEM shows as
 * cn_xml_finish's error in *e. */
static bool conf_encode(conf_enc_t *x, cn_s3_conf_t kind, json_t *conf, cn_buf_t *out, cn_err_t *e)
{
    x->why[0] = 0;
    x->kind = 1u << kind;
    *e = CN_OK;
    if (!json_is_object(conf)) {
        snprintf(x->why, sizeof x->why, "configuration must be a JSON object");
        return false;
    }
    cn_xml_begin(&x->w, out);
    cn_xml_open(&x->w, conf_roots[kind], CN_S3_XMLNS);
    bool ok = enc_object(x, conf, 1);
    cn_xml_close(&x->w);
    *e = cn_xml_finish(&x->w);
    return ok;
}

/* ---- S3 document → JSON ------------------------------------------------------- */

/* A leaf's text as JSON: a number or a boolean for the elements so read
 * when the text is one, else the string. */
static json_t *dec_leaf(const char *name, const char *t, size_t n)
{
    if (in_set(conf_ints, sizeof conf_ints / sizeof conf_ints[0], name) && n && n <= 18 &&
        strspn(t, "0123456789") >= n)
        return json_integer((json_int_t)strtoll(t, NULL, 10));
    if (in_set(conf_bools, sizeof conf_bools / sizeof conf_bools[0], name) &&
        ((n == 4 && !memcmp(t, "true", 4)) || (n == 5 && !memcmp(t, "false", 5))))
        return json_boolean(n == 4);
    return json_stringn(t, n);
}

/* Element node's children as a JSON object (kind: 1 << cn_s3_conf_t) (a stored document is S3's own
 * canonical one: Filter and the like come back as objects even empty). */
static json_t *dec_object(const cn_xml_doc_t *d, int node, unsigned kind)
{
    json_t *o = json_object();
    for (int c = cn_xml_child(d, node, NULL); o && c >= 0; c = cn_xml_next(d, c, NULL)) {
        const char *name = cn_xml_name(d, c);
        size_t n = 0;
        const char *t = cn_xml_node_text(d, c, &n);
        bool leaf = cn_xml_child(d, c, NULL) < 0 &&
                    !(n == 0 && (strcmp(name, "Filter") == 0 || strcmp(name, "And") == 0));
        json_t *v = leaf ? dec_leaf(name, t ? t : "", t ? n : 0) : dec_object(d, c, kind);
        size_t k = 0;
        while (k < CONF_NLISTS &&
               !((conf_lists[k].kinds & kind) && !strcmp(conf_lists[k].elem, name)))
            k++;
        if (k < CONF_NLISTS) {
            json_t *arr = json_object_get(o, conf_lists[k].list);
            if (!arr && json_object_set_new(o, conf_lists[k].list, arr = json_array()) < 0)
                arr = NULL;
            if (json_array_append_new(arr, v) < 0)
                v = NULL;
        } else if (json_object_set_new(o, name, v) < 0) {
            v = NULL;
        }
        if (!v) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

/* ---- the calls --------------------------------------------------------------- */

static cn_s3_conf_t conf_kind(const cn_console_call_t *c)
{
    const char *s = c->seg[2];
    return strcmp(s, "lifecycle") == 0 ? CN_S3_CONF_LIFECYCLE
           : strcmp(s, "cors") == 0    ? CN_S3_CONF_CORS
                                       : CN_S3_CONF_OBJECT_LOCK;
}

/* A document refused: S3's code and reason, but the console's bodies are
 * JSON, so what S3 calls MalformedXML is InvalidArgument here (as for a
 * bad versioning state, api_buckets.c). */
static int conf_refused(cn_console_call_t *c, cn_s3_err_t s, const char *why)
{
    if (s == CN_S3E_MALFORMED_XML)
        s = CN_S3E_INVALID_ARGUMENT;
    const char *msg = why && why[0] && s != CN_S3E_INTERNAL_ERROR ? why : cn_s3_err_message(s);
    return cn__console_error(c, cn_s3_err_status(s), cn_s3_err_code(s), msg);
}

/* GET buckets/B/{lifecycle,cors,object-lock}: {"configuration": JSON}, null
 * when none is set (object lock: the bucket has none). */
int cn__console_conf_get(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_buf_t doc = { 0 };
    cn_s3_conf_t kind = conf_kind(c);
    cn_err_t e = cn_s3_conf_get(cn__console_cfg(c->con)->objects, &rq, b, kind, &doc);
    if (e < 0) {
        cn_buf_free(&doc);
        if (e == CN_E_NOT_FOUND && rq.what == CN_OBJ_WHAT_ARG)
            return cn__console_json(c, 200, json_pack("{s:n}", "configuration"));
        return cn__console_obj_fail(c, &rq, e);
    }
    json_t *conf = NULL;
    cn_xml_doc_t *d = NULL;
    e = cn_xml_parse(doc.data, doc.len, CONF_NODES, &d);
    if (e == CN_OK && !(conf = dec_object(d, cn_xml_root(d), 1u << kind)))
        e = -ENOMEM;
    cn_xml_doc_free(d);
    cn_buf_free(&doc);
    if (e < 0)
        return cn__console_err(c, e); /* a stored document S3 wrote is well-formed */
    return cn__console_json(c, 200, json_pack("{s:o}", "configuration", conf));
}

/* PUT buckets/B/{lifecycle,cors,object-lock} {"configuration": JSON}:
 * S3's document made from it, validated and stored as S3's PUT does. */
int cn__console_conf_put(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    cn_s3_conf_t kind = conf_kind(c);
    conf_enc_t x;
    cn_buf_t doc = { 0 };
    cn_err_t e;
    json_t *conf = c->body ? json_object_get(c->body, "configuration") : NULL;
    bool ok = conf_encode(&x, kind, conf, &doc, &e);
    if (!ok || e < 0) {
        cn_buf_free(&doc); /* a refusal first: its writer was left mid-element */
        return ok ? cn__console_err(c, e) : conf_refused(c, CN_S3E_MALFORMED_XML, x.why);
    }
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    char why[200];
    cn_s3_err_t s = cn_s3_conf_put(cn__console_cfg(c->con)->objects, &rq, b, kind, doc.data,
                                   doc.len, why, sizeof why, &e);
    cn_buf_free(&doc);
    if (s != CN_S3E_NONE)
        return conf_refused(c, s, why);
    return cn__console_obj_done(c, &rq, e);
}

/* DELETE buckets/B/{lifecycle,cors}: none set is success, as on S3. */
int cn__console_conf_delete(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e = cn_s3_conf_delete(cn__console_cfg(c->con)->objects, &rq, b, conf_kind(c));
    return cn__console_obj_done(c, &rq, e);
}

/* PUT buckets/B/visibility {"public": BOOL}: the native visibility, the
 * bucket ACL authz maps it to (s3:PutBucketAcl, the public access block). */
int cn__console_visibility_put(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    json_t *p = c->body ? json_object_get(c->body, "public") : NULL;
    if (!json_is_boolean(p))
        return conf_refused(c, CN_S3E_INVALID_ARGUMENT, "public must be true or false");
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e = cn_objects_bucket_set_visibility(cn__console_cfg(c->con)->objects, &rq, b,
                                                  json_is_true(p) ? CN_VIS_PUBLIC : CN_VIS_PRIVATE);
    return cn__console_obj_done(c, &rq, e);
}
