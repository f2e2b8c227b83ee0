/* Console API: presigned URLs and multipart uploads.
 *
 * POST buckets/B/presign mints a SigV4 query-signed URL (path-style,
 * UNSIGNED-PAYLOAD, SignedHeaders=host) for a GET (with
 * response-content-disposition=attachment), a PUT, or the PUT of one part
 * of a multipart upload, signed with the session token's own secret (access
 * key = the token id): the S3 face verifies and authorizes the URL when it
 * is used, exactly as any presigned request, so minting grants nothing the
 * token does not hold.  The secret never leaves this file: it is read from
 * identity, turned into a signing key and wiped.  The multipart calls are
 * the objects service's CreateMultipartUpload, CompleteMultipartUpload and
 * AbortMultipartUpload with the session's principal.  URLs are relative to
 * the page's origin, but for a console with an origin of its own (cairnd
 * --console ADDR) a GET link is absolute to the HTTP listener (see
 * presign_host). */
#include "console_data.h"

#include "cairn/s3.h"
#include "cairn/sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRESIGN_MIN_S 60
#define PRESIGN_REGION "us-east-1" /* cairnd accepts any region; S3 clients default to it */

/* The host the URL is for and the base it starts with ("" when relative to
 * the console's own origin).  A console with an origin of its own sends
 * downloads (get) to the HTTP listener, absolute, so that stored bytes never
 * share its origin, and keeps uploads on its own origin, whose listener
 * accepts exactly those (its page may connect nowhere else). */
static bool presign_host(cn_console_call_t *c, bool get, const char **host, size_t *host_len,
                         const char **base)
{
    const cn_console_config_t *cfg = cn__console_cfg(c->con);
    if (get && cfg->own_origin && cfg->s3_base) {
        const char *h = strstr(cfg->s3_base, "://");
        h = h ? h + 3 : cfg->s3_base;
        size_t n = strcspn(h, "/");
        *host = h;
        *host_len = n;
        *base = cfg->s3_base;
        return n > 0;
    }
    *host = cn_http_req_header(c->req, "Host");
    *host_len = *host ? strlen(*host) : 0;
    *base = "";
    return *host_len > 0;
}

typedef struct presign {
    const char *method, *bucket, *key, *upload_id;
    long expires, part;
    int64_t now_ms;
} presign_t;

/* path and query (without the signature) of p, uri-encoded as S3 clients
 * send them. */
static cn_err_t presign_parts(cn_console_call_t *c, const presign_t *p, cn_buf_t *path,
                              cn_buf_t *query, char amz_date[17], char scope[96])
{
    char d[CN_DATE_MAX];
    cn_date_format(p->now_ms, CN_DATE_AMZ, d);
    memcpy(amz_date, d, 16);
    amz_date[16] = 0;
    snprintf(scope, 96, "%.8s/%s/s3/aws4_request", amz_date, PRESIGN_REGION);
    cn_err_t e = cn_buf_append_str(path, "/");
    e = e ? e : cn_sigv4_uri_encode(path, p->bucket, strlen(p->bucket), false);
    e = e ? e : cn_buf_append_str(path, "/");
    e = e ? e : cn_sigv4_uri_encode(path, p->key, strlen(p->key), true);
    char cred[CN_TOKEN_ID_MAX + 100];
    snprintf(cred, sizeof cred, "%s/%s", c->who->token_id, scope);
    e = e ? e : cn_buf_append_str(query, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=");
    e = e ? e : cn_sigv4_uri_encode(query, cred, strlen(cred), false);
    e = e ? e
          : cn_buf_printf(query, "&X-Amz-Date=%s&X-Amz-Expires=%ld&X-Amz-SignedHeaders=host",
                          amz_date, p->expires);
    if (p->upload_id) {
        e = e ? e : cn_buf_printf(query, "&partNumber=%ld&uploadId=", p->part);
        e = e ? e : cn_sigv4_uri_encode(query, p->upload_id, strlen(p->upload_id), false);
    }
    if (strcmp(p->method, "GET") == 0)
        e = e ? e : cn_buf_append_str(query, "&response-content-disposition=attachment");
    return e;
}

/* The signature of p's canonical request under the token's secret. */
static cn_err_t presign_sign(cn_console_call_t *c, const presign_t *p, const cn_buf_t *path,
                             const cn_buf_t *query, const char *host, size_t host_len,
                             const char *amz_date, const char *scope, char sig[65])
{
    cn_http_kv_t hv = { "host", 4, host, host_len };
    cn_buf_t canon = { 0 };
    cn_err_t e = cn_sigv4_canonical_request(&canon, p->method, (const char *)path->data, path->len,
                                            (const char *)query->data, query->len, &hv, 1, "host",
                                            4, "UNSIGNED-PAYLOAD");
    uint8_t secret[CN_SECRET_MAX], key[32];
    size_t slen = 0;
    if (e == CN_OK)
        e = cn_identity_lookup_secret(cn__console_cfg(c->con)->identity, c->who->token_id, secret,
                                      sizeof secret, &slen, NULL);
    if (e == CN_OK) {
        cn_sigv4_signing_key(secret, slen, amz_date, PRESIGN_REGION, "s3", key);
        cn_sigv4_sign(key, amz_date, scope, (const char *)canon.data, canon.len, sig);
    }
    memset(secret, 0, sizeof secret);
    memset(key, 0, sizeof key);
    cn_buf_free(&canon);
    return e;
}

/* Reads and checks the presign body into p; false after answering 400. */
static bool presign_args(cn_console_call_t *c, presign_t *p)
{
    memset(p, 0, sizeof *p);
    p->bucket = c->seg[1];
    p->method = cn__console_body_str(c, "method");
    p->key = cn__console_body_str(c, "key");
    p->upload_id = cn__console_body_str(c, "upload_id");
    json_t *ex = c->body ? json_object_get(c->body, "expires") : NULL;
    json_t *pt = c->body ? json_object_get(c->body, "part") : NULL;
    p->expires = json_is_integer(ex) ? (long)json_integer_value(ex) : 3600;
    p->part = json_is_integer(pt) ? (long)json_integer_value(pt) : 0;
    p->now_ms = cn_wall_ms();
    const char *why = NULL;
    if (!p->method || (strcmp(p->method, "GET") != 0 && strcmp(p->method, "PUT") != 0))
        why = "method must be GET or PUT";
    else if (!p->key || !cn_objects_key_ok(p->key, strlen(p->key)))
        why = "key must be 1..1024 bytes of UTF-8";
    else if (ex && !json_is_integer(ex))
        why = "expires must be a number of seconds";
    else if (p->expires < PRESIGN_MIN_S || p->expires > CN_SIGV4_MAX_EXPIRES)
        why = "expires must be 60..604800 seconds";
    else if (p->upload_id && (strcmp(p->method, "PUT") != 0 || p->part < 1 ||
                              p->part > CN_PART_NUMBER_MAX || strlen(p->upload_id) > 64))
        why = "a part URL is a PUT with part 1..10000 and an upload_id";
    if (why)
        cn__console_error(c, 400, "BadRequest", why);
    return why == NULL;
}

int cn__console_presign(cn_console_call_t *c)
{
    if (!cn__console_bucket(c))
        return 0;
    presign_t p;
    if (!presign_args(c, &p))
        return 0;
    const char *host, *base;
    size_t host_len;
    if (!presign_host(c, !strcmp(p.method, "GET"), &host, &host_len, &base))
        return cn__console_error(c, 400, "BadRequest", "the request has no Host");
    cn_buf_t path = { 0 }, query = { 0 }, url = { 0 };
    char amz_date[17], scope[96], sig[65];
    cn_err_t e = presign_parts(c, &p, &path, &query, amz_date, scope);
    if (e == CN_OK)
        e = presign_sign(c, &p, &path, &query, host, host_len, amz_date, scope, sig);
    if (e == CN_OK)
        e = cn_buf_printf(&url, "%s%.*s?%.*s&X-Amz-Signature=%s", base, (int)path.len,
                          (const char *)path.data, (int)query.len, (const char *)query.data, sig);
    json_t *doc = NULL;
    if (e == CN_OK)
        doc = json_pack("{s:s%,s:o}", "url", (const char *)url.data, url.len, "expires_at",
                        cn__console_time(p.now_ms / 1000 * 1000 + p.expires * 1000));
    cn_buf_free(&path);
    cn_buf_free(&query);
    cn_buf_free(&url);
    if (e == CN_E_AUTH)
        return cn__console_error(c, 401, "Unauthorized", "the session's token is not active");
    if (e < 0 || !doc)
        return cn__console_err(c, e < 0 ? e : -ENOMEM);
    return cn__console_json(c, 200, doc);
}

/* POST buckets/B/uploads {"key","type"}: CreateMultipartUpload. */
int cn__console_upload_create(cn_console_call_t *c)
{
    const char *b = cn__console_bucket(c);
    if (!b)
        return 0;
    const char *key = cn__console_body_str(c, "key");
    if (!key)
        return cn__console_error(c, 400, "BadRequest", "key is required");
    cn_objects_put_args_t args = { .content_type = cn__console_body_str(c, "type") };
    if (args.content_type && !*args.content_type)
        args.content_type = NULL;
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    char id[CN_UPLOAD_ID_MAX + 1];
    cn_err_t e = cn_objects_mpu_create(cn__console_cfg(c->con)->objects, &rq, b, key, &args, id);
    if (e < 0)
        return cn__console_obj_fail(c, &rq, e);
    return cn__console_json(c, 200, json_pack("{s:s}", "upload_id", id));
}

/* The parts of a completion body into nums / etags (n of them); false
 * after answering 400. */
static bool complete_parts(cn_console_call_t *c, json_t *parts, int32_t **nums, const char ***etags,
                           size_t *n)
{
    *n = json_is_array(parts) ? json_array_size(parts) : 0;
    if (*n == 0 || *n > CN_PART_NUMBER_MAX) {
        cn__console_error(c, 400, "BadRequest", "parts must list 1..10000 parts");
        return false;
    }
    *nums = calloc(*n, sizeof **nums);
    *etags = calloc(*n, sizeof **etags);
    if (!*nums || !*etags) {
        cn__console_err(c, -ENOMEM);
        return false;
    }
    for (size_t i = 0; i < *n; i++) {
        json_t *pt = json_array_get(parts, i);
        json_t *num = json_object_get(pt, "part"), *et = json_object_get(pt, "etag");
        if (!json_is_integer(num) || (et && !json_is_string(et))) {
            cn__console_error(c, 400, "BadRequest", "each part is {\"part\": N, \"etag\": E}");
            return false;
        }
        (*nums)[i] = (int32_t)json_integer_value(num);
        (*etags)[i] = et ? json_string_value(et) : NULL;
    }
    return true;
}

/* The bucket, "key" and "upload_id" of an upload call on one; false after
 * answering (404 without buckets, 400 without key or id). */
static bool upload_of(cn_console_call_t *c, const char **b, const char **key, const char **id)
{
    *b = cn__console_bucket(c);
    if (!*b)
        return false;
    *key = cn__console_body_str(c, "key");
    *id = cn__console_body_str(c, "upload_id");
    if (*key && *id)
        return true;
    cn__console_error(c, 400, "BadRequest", "key and upload_id are required");
    return false;
}

/* POST buckets/B/uploads/complete {"key","upload_id","parts":[{"part","etag"}]}. */
int cn__console_upload_complete(cn_console_call_t *c)
{
    const char *b, *key, *id;
    if (!upload_of(c, &b, &key, &id))
        return 0;
    int32_t *nums = NULL;
    const char **etags = NULL;
    size_t n = 0;
    if (complete_parts(c, c->body ? json_object_get(c->body, "parts") : NULL, &nums, &etags, &n)) {
        cn_objects_req_t rq;
        cn__console_orq(c, &rq);
        uint64_t min = cn__console_cfg(c->con)->min_part_size;
        cn_objects_put_args_t args = { .answer_repeat = true,
                                       .min_part_size = min ? min : CN_S3_MIN_PART_SIZE };
        cn_objects_put_result_t res;
        cn_err_t e = cn_objects_mpu_complete(cn__console_cfg(c->con)->objects, &rq, b, key, id,
                                             nums, etags, n, &args, &res);
        if (e < 0)
            cn__console_obj_fail(c, &rq, e);
        else
            cn__console_json(
                c, 200, json_pack("{s:s,s:I}", "etag", res.etag, "size", (json_int_t)res.size));
    }
    free(nums);
    free(etags);
    return 0;
}

/* POST buckets/B/uploads/abort {"key","upload_id"}: AbortMultipartUpload. */
int cn__console_upload_abort(cn_console_call_t *c)
{
    const char *b, *key, *id;
    if (!upload_of(c, &b, &key, &id))
        return 0;
    cn_objects_req_t rq;
    cn__console_orq(c, &rq);
    cn_err_t e = cn_objects_mpu_abort(cn__console_cfg(c->con)->objects, &rq, b, key, id);
    return cn__console_obj_done(c, &rq, e);
}
