/* Console API: buckets (list, create, details, delete, policy, versioning),
 * and the helpers every data call shares (console_data.h).
 *
 * An adapter only: each call decodes its JSON, calls the one objects-service
 * function the S3 face calls for the same operation with the session's
 * principal, and encodes the result; bucket policies, ACLs and the public
 * access block are the service's to apply.  Never decides an access. */
#include "console_data.h"

#include "cairn/s3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CN__MOD "console"
#define ANY CN_OBJ_WHAT_ANY

/* The rows where the console answers otherwise than the S3 face, looked up
 * before S3's one table (cn_s3_err_from): the console's bodies are JSON,
 * so a bad versioning state is InvalidArgument, not S3's MalformedXML.
 * Everything else reads the same on both faces. */
static const cn_obj_err_row_t console_only[] = {
    { CN_E_INVALID, ANY, CN_OBJ_VERSIONING_STATE_INVALID, CN_S3E_INVALID_ARGUMENT },
};
#undef ANY

void cn__console_orq(cn_console_call_t *c, cn_objects_req_t *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->principal = c->who;
    const char *ip = cn_http_req_client_ip(c->req);
    if (!ip || cn_authz_ip_parse(ip, &rq->source_ip) != CN_OK)
        memset(&rq->source_ip, 0, sizeof rq->source_ip);
    rq->secure_transport = cn_http_req_is_tls(c->req);
    rq->user_agent = cn_http_req_header(c->req, "User-Agent");
}

cn_s3_err_t cn__console_obj_code(const cn_objects_req_t *rq, cn_err_t e)
{
    cn_s3_err_t s = (cn_s3_err_t)cn_objects_err_lookup(
        console_only, sizeof console_only / sizeof console_only[0], rq, e, CN_S3E_NONE);
    return s != CN_S3E_NONE ? s : cn_s3_err_from(rq, e);
}

int cn__console_obj_fail(cn_console_call_t *c, const cn_objects_req_t *rq, cn_err_t e)
{
    cn_s3_err_t s = cn__console_obj_code(rq, e);
    const char *msg = rq->fail.message[0] ? rq->fail.message : cn_s3_err_message(s);
    if (s == CN_S3E_INTERNAL_ERROR || s == CN_S3E_SERVICE_UNAVAILABLE) {
        cn_warn(CN__MOD, "%s %s: %s (%s)", cn_http_req_method(c->req),
                cn_http_req_path(c->req, NULL), cn_strerror(e), rq->fail.message);
        msg = cn_s3_err_message(s); /* internal detail stays in the log */
    } else if (s == CN_S3E_ACCESS_DENIED) {
        cn_info(CN__MOD, "denied %s %s for %s: %s", cn_http_req_method(c->req),
                cn_http_req_path(c->req, NULL), c->who ? c->who->account : "?", rq->fail.message);
        msg = cn_s3_err_message(s); /* the reason is for the operator */
    }
    return cn__console_error(c, cn_s3_err_status(s), cn_s3_err_code(s), msg);
}

int cn__console_obj_done(cn_console_call_t *c, const cn_objects_req_t *rq, cn_err_t e)
{
    return e < 0 ? cn__console_obj_fail(c, rq, e) : cn__console_json(c, 204, NULL);
}

const char *cn__console_bucket(cn_console_call_t *c)
{
    if (!cn__console_cfg(c->con)->objects || c->nseg < 2) {
        cn__console_error(c, 404, "NotFound", "this node serves no buckets");
        return NULL;
    }
    return c->seg[1];
}

json_t *cn__console_time(int64_t unix_ms)
{
    char t[CN_RFC3339_LEN];
    cn_rfc3339(unix_ms, t);
    return json_string(t);
}

const char *cn__console_body_str(const cn_console_call_t *c, const char *name)
{
    json_t *v = c->body ? json_object_get(c->body, name) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static cn_err_t list_one(void *arg, const cn_bucket_info_t *b)
{
    json_t *o = json_pack("{s:s,s:o}", "name", b->name, "created", cn__console_time(b->created_ms));
    return cn__console_append(arg, o);
}

/* Sets "objects", "versions" and "bytes" of doc from bucket b's usage
 * totals (cn_objects_bucket_usage: exact, one read whatever the bucket's
 * size); a denied read leaves them out. */
static void bucket_usage(cn_console_call_t *c, const char *b, json_t *doc)
{
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_objects_usage_t u;
    if (cn_objects_bucket_usage(cn__console_cfg(c->con)->objects, &rq, b, &u) != CN_OK)
        return;
    json_object_set_new(doc, "objects", json_integer((json_int_t)u.objects));
    json_object_set_new(doc, "versions", json_integer((json_int_t)u.versions));
    json_object_set_new(doc, "bytes", json_integer((json_int_t)u.bytes));
}

/* GET buckets: the caller's buckets (s3:ListAllMyBuckets as on S3). */
static int buckets_list(cn_console_call_t *c)
{
    cn_objects_t *o = cn__console_cfg(c->con)->objects;
    if (!o)
        return cn__console_json(c, 200, json_pack("{s:[]}", "buckets"));
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    json_t *arr = json_array();
    if (!arr)
        return cn__console_err(c, -ENOMEM);
    cn_err_t e = cn_objects_bucket_list(o, &rq, list_one, arr);
    if (e < 0) {
        json_decref(arr);
        return cn__console_obj_fail(c, &rq, e);
    }
    size_t i;
    json_t *b;
    json_array_foreach(arr, i, b)
    {
        bucket_usage(c, json_string_value(json_object_get(b, "name")), b);
    }
    return cn__console_json(c, 200, json_pack("{s:o}", "buckets", arr));
}

/* CreateBucket with object lock, as S3's x-amz-bucket-object-lock-enabled:
 * versioning "Enabled" and S3's initial ObjectLockConfiguration, written
 * with the bucket. */
static cn_err_t create_locked(cn_objects_t *o, cn_objects_req_t *rq, const char *name,
                              cn_bucket_info_t *info)
{
    cn_buf_t doc = { 0 };
    cn_err_t e = cn_s3_conf_lock_initial(&doc);
    if (e >= 0)
        e = cn_buf_append(&doc, "", 1); /* the settings are NUL-terminated strings */
    if (e >= 0) {
        cn_objects_kv_t settings[] = { { "versioning", "Enabled" },
                                       { CN_OBJECTS_LOCK_ATTR, (const char *)doc.data } };
        e = cn_objects_bucket_create_with(o, rq, name, NULL, settings, 2, info);
    }
    cn_buf_free(&doc);
    return e;
}

/* POST buckets {"name", "object_lock": BOOL}: CreateBucket (with object
 * lock when asked); a bucket the caller already owns is
 * BucketAlreadyOwnedByYou, as on S3. */
static int buckets_create(cn_console_call_t *c)
{
    cn_objects_t *o = cn__console_cfg(c->con)->objects;
    const char *name = cn__console_body_str(c, "name");
    if (!o)
        return cn__console_error(c, 404, "NotFound", "this node serves no buckets");
    if (!name)
        return cn__console_error(c, 400, "BadRequest", "name is required");
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_bucket_info_t info;
    json_t *lock = c->body ? json_object_get(c->body, "object_lock") : NULL;
    cn_err_t e = json_is_true(lock) ? create_locked(o, &rq, name, &info)
                                    : cn_objects_bucket_create(o, &rq, name, NULL, &info);
    if (e == CN_E_EXISTS) {
        char owner[CN_ACCOUNT_NAME_MAX + 1] = "";
        if (cn_objects_bucket_peek(o, name, owner, NULL, NULL, NULL) == CN_OK &&
            strcmp(owner, c->who->account) == 0)
            return cn__console_error(c, 409, "BucketAlreadyOwnedByYou",
                                     cn_s3_err_message(CN_S3E_BUCKET_ALREADY_OWNED));
    }
    if (e < 0)
        return cn__console_obj_fail(c, &rq, e);
    return cn__console_json(c, 201, json_pack("{s:s}", "name", info.name));
}

static const char *versioning_name(cn_objects_versioning_t v)
{
    return v == CN_OBJ_VERSIONING_ENABLED     ? "Enabled"
           : v == CN_OBJ_VERSIONING_SUSPENDED ? "Suspended"
                                              : "Off";
}

/* The bucket's policy as JSON (null when none is set or the caller may not
 * read it; a denied read is not an error of the details page). */
static json_t *bucket_policy(cn_objects_t *o, cn_objects_req_t *rq, const char *b)
{
    cn_buf_t pol = { 0 };
    json_t *out = NULL;
    if (cn_objects_bucket_policy_get(o, rq, b, &pol) == CN_OK && pol.len)
        out = json_loadb((const char *)pol.data, pol.len, 0, NULL);
    cn_buf_free(&pol);
    return out ? out : json_null();
}

/* GET buckets/B: HeadBucket, then its versioning and policy. */
static int bucket_get(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    cn_objects_t *o = cn__console_cfg(c->con)->objects;
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_bucket_info_t info;
    cn_err_t e = cn_objects_bucket_head(o, &rq, b, &info);
    if (e < 0)
        return cn__console_obj_fail(c, &rq, e);
    cn_objects_versioning_t v = CN_OBJ_VERSIONING_OFF;
    cn_objects_req_t rq2;
    cn__console_orq(c, &rq2);
    if (cn_objects_versioning_get(o, &rq2, b, &v) < 0)
        v = CN_OBJ_VERSIONING_OFF;
    cn__console_orq(c, &rq2);
    json_t *doc = json_pack("{s:s,s:o,s:s,s:o,s:b,s:s}", "name", info.name, "created",
                            cn__console_time(info.created_ms), "versioning", versioning_name(v),
                            "policy", bucket_policy(o, &rq2, b), "public",
                            info.visibility == CN_VIS_PUBLIC, "owner", info.owner);
    if (doc)
        bucket_usage(c, b, doc);
    return cn__console_json(c, 200, doc);
}

/* DELETE buckets/B: DeleteBucket (409 BucketNotEmpty). */
static int bucket_delete(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e = cn_objects_bucket_delete(cn__console_cfg(c->con)->objects, &rq, b);
    return cn__console_obj_done(c, &rq, e);
}

/* PUT buckets/B/policy {"policy": OBJECT} and DELETE buckets/B/policy:
 * PutBucketPolicy (400 MalformedPolicy with authz's reason) / Delete. */
static int policy_put(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    json_t *p = c->body ? json_object_get(c->body, "policy") : NULL;
    if (!json_is_object(p))
        return cn__console_error(c, 400, "MalformedPolicy", "policy must be a JSON object");
    char *text = json_dumps(p, JSON_COMPACT);
    if (!text)
        return cn__console_err(c, -ENOMEM);
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e =
        cn_objects_bucket_policy_set(cn__console_cfg(c->con)->objects, &rq, b, text, strlen(text));
    free(text);
    return cn__console_obj_done(c, &rq, e);
}

static int policy_delete(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e = cn_objects_bucket_policy_set(cn__console_cfg(c->con)->objects, &rq, b, NULL, 0);
    if (e == CN_E_NOT_FOUND && rq.what != CN_OBJ_WHAT_BUCKET)
        e = CN_OK; /* no policy to delete: S3 answers 204 too */
    return cn__console_obj_done(c, &rq, e);
}

/* PUT buckets/B/versioning {"status": "Enabled" | "Suspended"}. */
static int versioning_put(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    const char *s = cn__console_body_str(c, "status");
    cn_objects_versioning_t v;
    if (s && strcmp(s, "Enabled") == 0)
        v = CN_OBJ_VERSIONING_ENABLED;
    else if (s && strcmp(s, "Suspended") == 0)
        v = CN_OBJ_VERSIONING_SUSPENDED;
    else
        return cn__console_error(c, 400, "BadRequest", "status must be Enabled or Suspended");
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e = cn_objects_versioning_set(cn__console_cfg(c->con)->objects, &rq, b, v);
    return cn__console_obj_done(c, &rq, e);
}

const cn_console_op_t cn__console_buckets_ops[] = {
    { CN_HTTP_GET, "buckets", buckets_list, 0 },
    { CN_HTTP_POST, "buckets", buckets_create, 0 },
    { CN_HTTP_GET, "buckets/*", bucket_get, 0 },
    { CN_HTTP_DELETE, "buckets/*", bucket_delete, 0 },
    { CN_HTTP_PUT, "buckets/*/policy", policy_put, 0 },
    { CN_HTTP_DELETE, "buckets/*/policy", policy_delete, 0 },
    { CN_HTTP_PUT, "buckets/*/versioning", versioning_put, 0 },
    { CN_HTTP_PUT, "buckets/*/visibility", cn__console_visibility_put, 0 },
    { CN_HTTP_GET, "buckets/*/lifecycle", cn__console_conf_get, 0 },
    { CN_HTTP_PUT, "buckets/*/lifecycle", cn__console_conf_put, 0 },
    { CN_HTTP_DELETE, "buckets/*/lifecycle", cn__console_conf_delete, 0 },
    { CN_HTTP_GET, "buckets/*/cors", cn__console_conf_get, 0 },
    { CN_HTTP_PUT, "buckets/*/cors", cn__console_conf_put, 0 },
    { CN_HTTP_DELETE, "buckets/*/cors", cn__console_conf_delete, 0 },
    { CN_HTTP_GET, "buckets/*/object-lock", cn__console_conf_get, 0 },
    { CN_HTTP_PUT, "buckets/*/object-lock", cn__console_conf_put, 0 },
    { 0, NULL, NULL, 0 },
};
