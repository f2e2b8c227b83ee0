/* The Jay client's operations (include/cairn/client.h): each encodes one
 * request with the codec, runs it on a pooled connection (with the one retry
 * the spec allows), maps an error answer to a cn_err_t, and copies a success
 * answer into caller-owned results. */
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- results ------------------------------------------------------------------- */

static char *dup_s(cn_jay_str_t s, bool *ok)
{
    char *p = malloc((size_t)s.len + 1);
    if (!p) {
        *ok = false;
        return NULL;
    }
    if (s.len)
        memcpy(p, s.p, s.len);
    p[s.len] = '\0';
    return p;
}

void cn_client_object_clear(cn_client_object_t *o)
{
    if (!o)
        return;
    free(o->key);
    free(o->content_type);
    free(o->etag);
    free(o->checksum);
    free(o->last_modified);
    for (size_t i = 0; i < o->n_meta; i++) {
        free(o->meta[i].key);
        free(o->meta[i].value);
    }
    free(o->meta);
    memset(o, 0, sizeof *o);
}

/* The empty write result: no strings, size unknown. */
static void written_init(cn_client_written_t *w)
{
    memset(w, 0, sizeof *w);
    w->size = -1;
}

void cn_client_written_clear(cn_client_written_t *w)
{
    if (!w)
        return;
    free(w->etag);
    free(w->checksum);
    free(w->last_modified);
    written_init(w);
}

void cn_client_listing_clear(cn_client_listing_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n_objects; i++)
        cn_client_object_clear(&l->objects[i]);
    free(l->objects);
    for (size_t i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i]);
    free(l->prefixes);
    free(l->next_start_after);
    memset(l, 0, sizeof *l);
}

void cn_client_bucket_clear(cn_client_bucket_t *b)
{
    if (!b)
        return;
    free(b->bucket_id);
    free(b->name);
    free(b->created_at);
    free(b->visibility);
    memset(b, 0, sizeof *b);
}

void cn_client_buckets_clear(cn_client_buckets_t *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        cn_client_bucket_clear(&b->v[i]);
    free(b->v);
    memset(b, 0, sizeof *b);
}

void cn_client_parts_clear(cn_client_parts_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].etag);
        free(p->v[i].checksum);
    }
    free(p->v);
    memset(p, 0, sizeof *p);
}

static cn_err_t copy_object_info(const cn_jay_resp_t *r, cn_client_object_t *o)
{
    bool ok = true;
    memset(o, 0, sizeof *o);
    o->content_type = dup_s(r->content_type, &ok);
    o->size = r->size;
    o->etag = dup_s(r->etag, &ok);
    o->checksum = dup_s(r->checksum, &ok);
    o->last_modified = dup_s(r->last_modified, &ok);
    if (r->metadata.count) {
        o->meta = calloc(r->metadata.count, sizeof *o->meta);
        ok = ok && o->meta;
        cn_jay_iter_t it = cn_jay_iter(&r->metadata);
        cn_jay_kv_t kv;
        while (ok && cn_jay_next_kv(&it, &kv)) {
            o->meta[o->n_meta].key = dup_s(kv.key, &ok);
            o->meta[o->n_meta].value = dup_s(kv.value, &ok);
            o->n_meta++;
        }
    }
    if (!ok) {
        cn_client_object_clear(o);
        return -ENOMEM;
    }
    return CN_OK;
}

static cn_err_t copy_written(const cn_jay_resp_t *r, cn_client_written_t *w)
{
    bool ok = true;
    written_init(w);
    w->etag = dup_s(r->etag, &ok);
    w->checksum = dup_s(r->checksum, &ok);
    w->last_modified = r->last_modified.len ? dup_s(r->last_modified, &ok) : NULL;
    w->size = r->size;
    if (!ok) {
        cn_client_written_clear(w);
        return -ENOMEM;
    }
    return CN_OK;
}

/* ---- the exchange ------------------------------------------------------------------ */

static cn_err_t map_answer(uint8_t status, cn_jay_str_t code)
{
    switch (cn_jay_code_parse(code.p, code.len)) {
    case CN_JAY_CODE_ACCESS_DENIED: return CN_E_DENIED;
    case CN_JAY_CODE_BUCKET_ALREADY_EXISTS: return CN_E_EXISTS;
    case CN_JAY_CODE_BUCKET_NOT_EMPTY: return CN_E_NOT_EMPTY;
    case CN_JAY_CODE_ENTITY_TOO_LARGE: return CN_E_TOO_LARGE;
    case CN_JAY_CODE_INTERNAL_ERROR: return -EIO;
    case CN_JAY_CODE_INVALID_ARGUMENT:
    case CN_JAY_CODE_INVALID_BUCKET_NAME: return CN_E_INVALID;
    case CN_JAY_CODE_INVALID_RANGE: return CN_E_RANGE;
    case CN_JAY_CODE_NO_SUCH_BUCKET:
    case CN_JAY_CODE_NO_SUCH_KEY: return CN_E_NOT_FOUND;
    case CN_JAY_CODE_NO_SUCH_UPLOAD: return CN_E_NO_UPLOAD;
    case CN_JAY_CODE_RATE_LIMIT_EXCEEDED: return CN_E_RATE_LIMITED;
    case CN_JAY_CODE_UNKNOWN_OP: return CN_E_UNSUPPORTED;
    default: break;
    }
    /* A code this client does not know: the status still classifies it. */
    switch (status) {
    case CN_JAY_ST_NOT_FOUND: return CN_E_NOT_FOUND;
    case CN_JAY_ST_CONFLICT: return CN_E_CONFLICT;
    case CN_JAY_ST_BAD_REQUEST: return CN_E_INVALID;
    case CN_JAY_ST_FORBIDDEN: return CN_E_DENIED;
    default: return -EIO;
    }
}

/* The failures a server's idle reaping produces on a pooled connection. */
static bool stale_failure(cn_err_t e)
{
    return e == CN_E_CLOSED || e == -ECONNRESET || e == -EPIPE || e == -ECONNABORTED;
}

/* Runs request q with an optional body and sink.  On CN_OK, *resp holds the
 * decoded success answer, borrowing from call->rmeta, which the caller frees
 * (also on error). */
static cn_err_t exchange(cn_client_t *cl, const cn_jay_req_t *q, cn_client_body_t *body,
                         cn_client_sink_t *sink, cn__jcall_t *call, cn_jay_resp_t *resp,
                         cn_jay_error_t *err)
{
    cn_buf_t frame = { 0 };
    int64_t data_len = body ? body->len : 0;
    if (err)
        memset(err, 0, sizeof *err);
    memset(call, 0, sizeof *call);
    cn_err_t e = cn_jay_req_encode(&frame, q, data_len);
    if (e) {
        cn__err_set(err, "the %s request cannot be encoded: %s", cn_jay_op_name(q->op),
                    cn_strerror(e));
        return e;
    }
    call->frame = frame.data;
    call->frame_len = frame.len;
    call->body = body;
    call->sink = sink;
    /* The server answers an upload only once it is durable (fsync of up to
     * data_len bytes), and a completion only once every part is hashed: allow
     * what the server's own deadline allows, 1 MB/s of the body on top. */
    if (q->op == CN_JAY_OP_COMPLETE_MULTIPART)
        call->reply_timeout_ms = cl->complete_ms;
    else if (data_len > 0) {
        int64_t ms = cl->cfg.io_timeout_ms + data_len / 1000;
        call->reply_timeout_ms = ms > INT32_MAX ? INT32_MAX : (int)ms;
    }
    for (int attempt = 0;; attempt++) {
        cn__jconn_t *c;
        bool reused;
        e = cn__pool_get(cl, attempt > 0, &c, &reused, err);
        if (e)
            goto out;
        e = cn__jconn_call(c, call, err);
        if (!e) {
            cn__pool_put(cl, c);
            break;
        }
        cn__jconn_close(c);
        /* The one retry: a pooled connection the server may have reaped, no
         * response byte seen, and no body that would have to be rewound. */
        if (attempt == 0 && reused && !call->got_byte && data_len == 0 && stale_failure(e)) {
            cn__pool_note_retry(cl);
            if (err)
                memset(err, 0, sizeof *err);
            continue;
        }
        goto out;
    }
    if (call->rh.code != CN_JAY_ST_OK) {
        cn_jay_resp_t er;
        if (cn_jay_resp_decode(q->op, call->rh.code, call->rmeta.data, call->rmeta.len, &er)) {
            cn__err_set(err, "undecodable error answer (status 0x%02x)", call->rh.code);
            if (err)
                err->status = call->rh.code;
            e = map_answer(call->rh.code, (cn_jay_str_t){ "", 0 });
            goto out;
        }
        if (err) {
            memset(err, 0, sizeof *err);
            err->status = call->rh.code;
            snprintf(err->code, sizeof err->code, "%.*s", (int)er.code.len, er.code.p);
            snprintf(err->message, sizeof err->message, "%.*s", (int)er.message.len, er.message.p);
        }
        e = map_answer(call->rh.code, er.code);
        goto out;
    }
    e = cn_jay_resp_decode(q->op, CN_JAY_ST_OK, call->rmeta.data, call->rmeta.len, resp);
    if (e) {
        cn__err_set(err, "undecodable %s answer from the server", cn_jay_op_name(q->op));
        e = CN_E_PROTOCOL;
    }
out:
    cn_buf_free(&frame);
    return e;
}

/* Slices of C strings, refusing (not truncating) what the wire cannot carry. */
#define MAKE(field, s)                                                 \
    do {                                                               \
        if (cn_jay_str_make((s), &(field)) != CN_OK) {                 \
            cn__err_set(err, "%s is longer than 65535 bytes", #field); \
            return CN_E_LIMIT;                                         \
        }                                                              \
    } while (0)

/* The (bucket, key) that object requests start with, then the upload id of
 * the multipart ones. */
#define MAKE_OBJECT(b, k)    \
    do {                     \
        MAKE(q.bucket, (b)); \
        MAKE(q.key, (k));    \
    } while (0)
#define MAKE_UPLOAD(b, k, u)    \
    do {                        \
        MAKE_OBJECT((b), (k));  \
        MAKE(q.upload_id, (u)); \
    } while (0)

static cn_err_t simple(cn_client_t *cl, const cn_jay_req_t *q, cn_jay_error_t *err)
{
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(cl, q, NULL, NULL, &call, &r, err);
    cn_buf_free(&call.rmeta);
    return e;
}

/* Runs q, with body when it has bytes, whose answer is a write result. */
static cn_err_t written_call(cn_client_t *cl, const cn_jay_req_t *q, cn_client_body_t *body,
                             cn_client_written_t *out, cn_jay_error_t *err)
{
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(cl, q, body && body->len > 0 ? body : NULL, NULL, &call, &r, err);
    if (!e)
        e = copy_written(&r, out);
    cn_buf_free(&call.rmeta);
    return e;
}

/* ---- operations ------------------------------------------------------------------ */

cn_err_t cn_client_ping(cn_client_t *c, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_PING };
    return simple(c, &q, err);
}

static cn_err_t bucket_op(cn_client_t *c, uint8_t op, const char *bucket, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = op };
    MAKE(q.bucket, bucket);
    return simple(c, &q, err);
}

cn_err_t cn_client_create_bucket(cn_client_t *c, const char *bucket, cn_jay_error_t *err)
{
    return bucket_op(c, CN_JAY_OP_CREATE_BUCKET, bucket, err);
}

cn_err_t cn_client_delete_bucket(cn_client_t *c, const char *bucket, cn_jay_error_t *err)
{
    return bucket_op(c, CN_JAY_OP_DELETE_BUCKET, bucket, err);
}

cn_err_t cn_client_head_bucket(cn_client_t *c, const char *bucket, cn_client_bucket_t *out,
                               cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_HEAD_BUCKET };
    memset(out, 0, sizeof *out);
    MAKE(q.bucket, bucket);
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(c, &q, NULL, NULL, &call, &r, err);
    if (!e) {
        bool ok = true;
        out->bucket_id = dup_s(r.bucket_id, &ok);
        out->name = dup_s(r.name, &ok);
        out->created_at = dup_s(r.created_at, &ok);
        out->visibility = dup_s(r.visibility, &ok);
        if (!ok) {
            cn_client_bucket_clear(out);
            e = -ENOMEM;
        }
    }
    cn_buf_free(&call.rmeta);
    return e;
}

cn_err_t cn_client_list_buckets(cn_client_t *c, cn_client_buckets_t *out, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_LIST_BUCKETS };
    memset(out, 0, sizeof *out);
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(c, &q, NULL, NULL, &call, &r, err);
    if (!e && r.entries.count) {
        bool ok = (out->v = calloc(r.entries.count, sizeof *out->v)) != NULL;
        cn_jay_iter_t it = cn_jay_iter(&r.entries);
        cn_jay_bucket_entry_t b;
        while (ok && cn_jay_next_bucket(&it, &b)) {
            out->v[out->n].name = dup_s(b.name, &ok);
            out->v[out->n].created_at = dup_s(b.created_at, &ok);
            out->n++;
        }
        if (!ok) {
            cn_client_buckets_clear(out);
            e = -ENOMEM;
        }
    }
    cn_buf_free(&call.rmeta);
    return e;
}

cn_err_t cn_client_put_object(cn_client_t *c, const char *bucket, const char *key,
                              const cn_client_put_opts_t *opts, cn_client_body_t *body,
                              cn_client_written_t *out, cn_jay_error_t *err)
{
    static const cn_client_put_opts_t none = { 0 };
    cn_jay_req_t q = { .op = CN_JAY_OP_PUT_OBJECT };
    cn_err_t e;
    if (!opts)
        opts = &none;
    written_init(out);
    MAKE_OBJECT(bucket, key);
    MAKE(q.content_type, opts->content_type);
    q.skip_etag = opts->skip_etag;
    cn_jay_kv_t *kv = NULL;
    if (opts->n_meta) {
        if (opts->n_meta > CN_JAY_MAX_COUNT) {
            cn__err_set(err, "more than 65535 metadata pairs");
            return CN_E_LIMIT;
        }
        kv = calloc(opts->n_meta, sizeof *kv);
        if (!kv)
            return -ENOMEM;
        for (size_t i = 0; i < opts->n_meta; i++) {
            if (cn_jay_str_make(opts->meta_keys[i], &kv[i].key) ||
                cn_jay_str_make(opts->meta_values[i], &kv[i].value)) {
                free(kv);
                cn__err_set(err, "a metadata key or value is longer than 65535 bytes");
                return CN_E_LIMIT;
            }
        }
        q.meta_kv = kv;
        q.n_meta_kv = opts->n_meta;
    }
    e = written_call(c, &q, body, out, err);
    free(kv);
    return e;
}

static cn_err_t get_common(cn_client_t *c, cn_jay_req_t *q, cn_client_sink_t *sink,
                           cn_client_object_t *info, int64_t *served, cn_jay_error_t *err)
{
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(c, q, NULL, sink, &call, &r, err);
    if (!e && info)
        e = copy_object_info(&r, info);
    if (!e && served)
        *served = call.served;
    cn_buf_free(&call.rmeta);
    return e;
}

cn_err_t cn_client_get_object(cn_client_t *c, const char *bucket, const char *key,
                              cn_client_sink_t *sink, cn_client_object_t *info, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_GET_OBJECT };
    if (info)
        memset(info, 0, sizeof *info);
    MAKE_OBJECT(bucket, key);
    return get_common(c, &q, sink, info, NULL, err);
}

cn_err_t cn_client_get_range(cn_client_t *c, const char *bucket, const char *key, int64_t offset,
                             int64_t length, cn_client_sink_t *sink, cn_client_object_t *info,
                             int64_t *served, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_GET_OBJECT_RANGE, .offset = offset, .length = length };
    if (info)
        memset(info, 0, sizeof *info);
    MAKE_OBJECT(bucket, key);
    return get_common(c, &q, sink, info, served, err);
}

cn_err_t cn_client_head_object(cn_client_t *c, const char *bucket, const char *key,
                               cn_client_object_t *info, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_HEAD_OBJECT };
    memset(info, 0, sizeof *info);
    MAKE_OBJECT(bucket, key);
    return get_common(c, &q, NULL, info, NULL, err);
}

cn_err_t cn_client_delete_object(cn_client_t *c, const char *bucket, const char *key,
                                 cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_DELETE_OBJECT };
    MAKE_OBJECT(bucket, key);
    return simple(c, &q, err);
}

cn_err_t cn_client_list_objects(cn_client_t *c, const char *bucket,
                                const cn_client_list_opts_t *opts, cn_client_listing_t *out,
                                cn_jay_error_t *err)
{
    static const cn_client_list_opts_t none = { 0 };
    cn_jay_req_t q = { .op = CN_JAY_OP_LIST_OBJECTS };
    if (!opts)
        opts = &none;
    memset(out, 0, sizeof *out);
    MAKE(q.bucket, bucket);
    MAKE(q.prefix, opts->prefix);
    MAKE(q.delimiter, opts->delimiter);
    MAKE(q.start_after, opts->start_after);
    q.max_keys = opts->max_keys;
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(c, &q, NULL, NULL, &call, &r, err);
    if (e)
        goto out;
    bool ok = true;
    if (r.entries.count)
        ok = (out->objects = calloc(r.entries.count, sizeof *out->objects)) != NULL;
    cn_jay_iter_t it = cn_jay_iter(&r.entries);
    cn_jay_obj_entry_t o;
    while (ok && cn_jay_next_obj(&it, &o)) {
        cn_client_object_t *d = &out->objects[out->n_objects++];
        d->key = dup_s(o.key, &ok);
        d->size = o.size;
        d->etag = dup_s(o.etag, &ok);
        d->checksum = dup_s(o.checksum, &ok);
        d->last_modified = dup_s(o.last_modified, &ok);
        d->content_type = dup_s(o.content_type, &ok);
    }
    if (ok && r.common_prefixes.count)
        ok = (out->prefixes = calloc(r.common_prefixes.count, sizeof *out->prefixes)) != NULL;
    it = cn_jay_iter(&r.common_prefixes);
    cn_jay_str_t s;
    while (ok && cn_jay_next_str(&it, &s))
        out->prefixes[out->n_prefixes++] = dup_s(s, &ok);
    out->is_truncated = r.is_truncated;
    if (ok)
        out->next_start_after = dup_s(r.next_start_after, &ok);
    if (!ok) {
        cn_client_listing_clear(out);
        e = -ENOMEM;
    }
out:
    cn_buf_free(&call.rmeta);
    return e;
}

cn_err_t cn_client_copy_object(cn_client_t *c, const char *src_bucket, const char *src_key,
                               const char *dst_bucket, const char *dst_key,
                               cn_client_written_t *out, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_COPY_OBJECT };
    written_init(out);
    MAKE_OBJECT(src_bucket, src_key);
    MAKE(q.dst_bucket, dst_bucket);
    MAKE(q.dst_key, dst_key);
    return written_call(c, &q, NULL, out, err);
}

cn_err_t cn_client_create_multipart(cn_client_t *c, const char *bucket, const char *key,
                                    const char *content_type, char **upload_id, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_CREATE_MULTIPART };
    *upload_id = NULL;
    MAKE_OBJECT(bucket, key);
    MAKE(q.content_type, content_type);
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(c, &q, NULL, NULL, &call, &r, err);
    if (!e && r.upload_id.len == 0) {
        cn__err_set(err, "the server returned an empty upload id");
        e = CN_E_PROTOCOL;
    }
    if (!e) {
        bool ok = true;
        *upload_id = dup_s(r.upload_id, &ok);
        if (!ok)
            e = -ENOMEM;
    }
    cn_buf_free(&call.rmeta);
    return e;
}

cn_err_t cn_client_upload_part(cn_client_t *c, const char *bucket, const char *key,
                               const char *upload_id, int32_t part_number, cn_client_body_t *body,
                               cn_client_written_t *out, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_UPLOAD_PART, .part_number = part_number };
    written_init(out);
    MAKE_UPLOAD(bucket, key, upload_id);
    return written_call(c, &q, body, out, err);
}

cn_err_t cn_client_complete_multipart(cn_client_t *c, const char *bucket, const char *key,
                                      const char *upload_id, const int32_t *parts, size_t n_parts,
                                      cn_client_written_t *out, cn_jay_error_t *err)
{
    static const int32_t no_parts[1];
    cn_jay_req_t q = { .op = CN_JAY_OP_COMPLETE_MULTIPART,
                       .parts = parts ? parts : no_parts,
                       .n_parts = parts ? n_parts : 0 };
    written_init(out);
    MAKE_UPLOAD(bucket, key, upload_id);
    return written_call(c, &q, NULL, out, err);
}

cn_err_t cn_client_abort_multipart(cn_client_t *c, const char *bucket, const char *key,
                                   const char *upload_id, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_ABORT_MULTIPART };
    MAKE_UPLOAD(bucket, key, upload_id);
    return simple(c, &q, err);
}

cn_err_t cn_client_list_parts(cn_client_t *c, const char *bucket, const char *key,
                              const char *upload_id, cn_client_parts_t *out, cn_jay_error_t *err)
{
    cn_jay_req_t q = { .op = CN_JAY_OP_LIST_PARTS };
    memset(out, 0, sizeof *out);
    MAKE_UPLOAD(bucket, key, upload_id);
    cn__jcall_t call;
    cn_jay_resp_t r;
    cn_err_t e = exchange(c, &q, NULL, NULL, &call, &r, err);
    if (!e && r.entries.count) {
        bool ok = (out->v = calloc(r.entries.count, sizeof *out->v)) != NULL;
        cn_jay_iter_t it = cn_jay_iter(&r.entries);
        cn_jay_part_entry_t p;
        while (ok && cn_jay_next_part(&it, &p)) {
            cn_client_part_t *d = &out->v[out->n++];
            d->part_number = p.part_number;
            d->size = p.size;
            d->etag = dup_s(p.etag, &ok);
            d->checksum = dup_s(p.checksum, &ok);
        }
        if (!ok) {
            cn_client_parts_clear(out);
            e = -ENOMEM;
        }
    }
    cn_buf_free(&call.rmeta);
    return e;
}
