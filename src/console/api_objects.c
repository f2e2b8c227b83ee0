/* Console API: objects — a listing page by prefix and delimiter, one
 * object's details (and its versions on a versioned bucket), DeleteObjects;
 * the presign and multipart calls are presign.c's, routed from this table.
 *
 * An adapter only: every call is the objects-service function the S3 face
 * calls for the same operation, with the session's principal, so bucket
 * policies and ACLs decide exactly as there.  The page token is opaque to
 * the browser: the hex of the service's start-after position. */
#include "console_data.h"

#include "cairn/crypto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LIST_DEFAULT 200
#define DELETE_MAX 1000

/* The start-after key a page token names, or NULL (with *bad when the
 * token is not one this API wrote).  The caller frees it. */
static char *token_decode(const char *tok, bool *bad)
{
    *bad = false;
    if (!tok || !*tok)
        return NULL;
    size_t n = strlen(tok);
    char *out = NULL;
    if (n % 2 == 0 && n / 2 <= CN_OBJECT_KEY_MAX && (out = malloc(n / 2 + 1)) &&
        cn_hex_decode(tok, n, out, n / 2) == CN_OK && !memchr(out, 0, n / 2)) {
        out[n / 2] = 0;
        return out;
    }
    free(out);
    *bad = true;
    return NULL;
}

static json_t *token_encode(const char *s)
{
    if (!s)
        return json_null();
    size_t n = strlen(s);
    char *hex = malloc(2 * n + 1);
    if (!hex)
        return NULL;
    cn_hex_encode(s, n, hex);
    json_t *v = json_string(hex);
    free(hex);
    return v;
}

static json_t *list_doc(const cn_objects_list_t *l)
{
    json_t *prefixes = json_array(), *objects = json_array();
    for (size_t i = 0; prefixes && i < l->nprefixes; i++)
        json_array_append_new(prefixes, json_string(l->prefixes[i]));
    for (size_t i = 0; objects && i < l->nentries; i++) {
        const cn_objects_entry_t *e = &l->entries[i];
        json_array_append_new(objects, json_pack("{s:s,s:I,s:s,s:o}", "key", e->key, "size",
                                                 (json_int_t)e->size, "etag", e->etag, "modified",
                                                 cn__console_time(e->last_modified_ms)));
    }
    return json_pack("{s:o*,s:o*,s:o*}", "prefixes", prefixes, "objects", objects, "next",
                     l->is_truncated ? token_encode(l->next_start_after) : json_null());
}

/* GET buckets/B/objects?prefix=P&delimiter=D&token=T&max=N (N ≤ 1000):
 * ListObjects (s3:ListBucket). */
static int objects_list(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    const char *mx = cn__console_query(c, "max");
    long max = mx && *mx ? strtol(mx, NULL, 10) : LIST_DEFAULT;
    if (max < 1 || max > CN_OBJECTS_LIST_MAX)
        return cn__console_error(c, 400, "BadRequest", "max must be 1..1000");
    bool bad;
    char *after = token_decode(cn__console_query(c, "token"), &bad);
    if (bad)
        return cn__console_error(c, 400, "BadRequest", "token is not a page token");
    const char *delim = cn__console_query(c, "delimiter");
    cn_objects_list_args_t la = {
        .prefix = cn__console_query(c, "prefix"),
        .delimiter = delim && *delim ? delim : NULL,
        .start_after = after,
        .max_keys = (int32_t)max,
    };
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_objects_list_t l = { 0 };
    cn_err_t e = cn_objects_list(cn__console_cfg(c->con)->objects, &rq, b, &la, &l);
    free(after);
    if (e < 0) {
        cn_objects_list_free(&l);
        return cn__console_obj_fail(c, &rq, e);
    }
    json_t *doc = list_doc(&l);
    cn_objects_list_free(&l);
    return doc ? cn__console_json(c, 200, doc) : cn__console_err(c, -ENOMEM);
}

/* The key's versions, newest first, when the bucket has versioning (a
 * ListObjectVersions page of the exact key; [] when it lists none). */
static json_t *object_versions(cn_console_call_t *c, const char *b, const char *key)
{
    json_t *arr = json_array();
    cn_objects_list_args_t la = { .prefix = key, .versions = true, .max_keys = 100 };
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_objects_list_t l = { 0 };
    if (arr && cn_objects_list(cn__console_cfg(c->con)->objects, &rq, b, &la, &l) == CN_OK) {
        for (size_t i = 0; i < l.nentries; i++) {
            const cn_objects_entry_t *e = &l.entries[i];
            if (strcmp(e->key, key) != 0)
                continue;
            char vid[CN_OBJECTS_VERSION_ID_MAX];
            cn_objects_version_str(e->version_id, e->vnull, vid);
            json_array_append_new(arr, json_pack("{s:s,s:I,s:o,s:b,s:b}", "version_id", vid, "size",
                                                 (json_int_t)e->size, "modified",
                                                 cn__console_time(e->last_modified_ms), "latest",
                                                 e->is_latest, "delete_marker", e->delete_marker));
        }
    }
    cn_objects_list_free(&l);
    return arr;
}

static json_t *info_doc(cn_console_call_t *c, const char *b, const char *key,
                        const cn_object_info_t *in)
{
    json_t *meta = json_object();
    for (size_t i = 0; meta && i < in->nmeta; i++)
        json_object_set_new(meta, in->meta[i].key, json_string(in->meta[i].value));
    json_t *cks = json_null();
    if (in->checksum[0])
        cks = json_pack("{s:s,s:s}", "algorithm", in->checksum_alg, "value", in->checksum);
    return json_pack("{s:s,s:I,s:s,s:s,s:o*,s:s,s:o*,s:o,s:o*,s:i}", "key", key, "size",
                     (json_int_t)in->size, "etag", in->etag, "sha256", in->sha256, "checksum", cks,
                     "type", in->content_type ? in->content_type : "application/octet-stream",
                     "metadata", meta, "modified", cn__console_time(in->last_modified_ms),
                     "versions", in->bucket_versioned ? object_versions(c, b, key) : json_array(),
                     "parts", (int)in->nparts);
}

/* GET buckets/B/object?key=K: HeadObject (s3:GetObject). */
static int object_get(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    const char *key = cn__console_query(c, "key");
    if (!key || !*key)
        return cn__console_error(c, 400, "BadRequest", "key is required");
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_object_info_t info = { 0 };
    cn_err_t e = cn_objects_head(cn__console_cfg(c->con)->objects, &rq, b, key, &info);
    if (e < 0) {
        cn_objects_info_free(&info);
        return cn__console_obj_fail(c, &rq, e);
    }
    json_t *doc = info_doc(c, b, key, &info);
    cn_objects_info_free(&info);
    return doc ? cn__console_json(c, 200, doc) : cn__console_err(c, -ENOMEM);
}

/* One key of a DeleteObjects call: S3's per-key semantics (a missing key is
 * deleted; a refusal is that key's error). */
static void delete_one(cn_console_call_t *c, const char *b, const char *key, json_t *deleted,
                       json_t *errors)
{
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e =
        cn_objects_delete_version(cn__console_cfg(c->con)->objects, &rq, b, key, NULL, false, NULL);
    if (e == CN_E_NOT_FOUND && rq.what == CN_OBJ_WHAT_KEY)
        e = CN_OK;
    if (e == CN_OK) {
        json_array_append_new(deleted, json_string(key));
        return;
    }
    cn_s3_err_t s = cn__console_obj_code(&rq, e);
    bool internal = s == CN_S3E_INTERNAL_ERROR || s == CN_S3E_ACCESS_DENIED;
    const char *msg = !internal && rq.fail.message[0] ? rq.fail.message : cn_s3_err_message(s);
    json_array_append_new(
        errors, json_pack("{s:s,s:s,s:s}", "key", key, "code", cn_s3_err_code(s), "message", msg));
}

/* POST buckets/B/delete {"keys": [K...]} (≤ 1000): DeleteObjects, each key
 * authorized as DeleteObject. */
static int objects_delete(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    json_t *keys = c->body ? json_object_get(c->body, "keys") : NULL;
    if (!json_is_array(keys) || json_array_size(keys) == 0 || json_array_size(keys) > DELETE_MAX)
        return cn__console_error(c, 400, "BadRequest", "keys must list 1..1000 keys");
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        if (!json_is_string(k))
            return cn__console_error(c, 400, "BadRequest", "keys must be strings");
    }
    json_t *deleted = json_array(), *errors = json_array();
    if (!deleted || !errors) {
        json_decref(deleted);
        json_decref(errors);
        return cn__console_err(c, -ENOMEM);
    }
    json_array_foreach(keys, i, k) delete_one(c, b, json_string_value(k), deleted, errors);
    return cn__console_json(c, 200, json_pack("{s:o,s:o}", "deleted", deleted, "errors", errors));
}

const cn_console_op_t cn__console_objects_ops[] = {
    { CN_HTTP_GET, "buckets/*/objects", objects_list, 0 },
    { CN_HTTP_GET, "buckets/*/object", object_get, 0 },
    { CN_HTTP_POST, "buckets/*/delete", objects_delete, 0 },
    { CN_HTTP_POST, "buckets/*/presign", cn__console_presign, 0 },
    { CN_HTTP_POST, "buckets/*/uploads", cn__console_upload_create, 0 },
    { CN_HTTP_POST, "buckets/*/uploads/complete", cn__console_upload_complete, 0 },
    { CN_HTTP_POST, "buckets/*/uploads/abort", cn__console_upload_abort, 0 },
    { 0, NULL, NULL, 0 },
};
