/* Jay native v1 message layouts: every request and every response of the spec
 * table, decoded and encoded from one flat struct each (include/cairn/jay.h).
 * The switch statements below are the table; keep them in its order. */
#include "cairn/jay.h"
#include "jay/codec_int.h"

#include <string.h>

/* ---- requests ------------------------------------------------------------------ */

cn_err_t cn_jay_req_decode(uint8_t op, const void *meta, size_t len, cn_jay_req_t *out)
{
    cn_rd_t r = cn_rd_init(meta, len);
    memset(out, 0, sizeof *out);
    out->op = op;
    switch (op) {
    case CN_JAY_OP_CREATE_BUCKET:
    case CN_JAY_OP_DELETE_BUCKET:
    case CN_JAY_OP_HEAD_BUCKET:
        out->bucket = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_LIST_BUCKETS:
    case CN_JAY_OP_PING:
        break;
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_DELETE_OBJECT:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_PUT_OBJECT:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        out->content_type = cn_jay_r_str(&r);
        cn_jay_r_map(&r, &out->metadata);
        /* The one trailing optional field of v1: absent means false. */
        if (cn_rd_left(&r) > 0)
            out->skip_etag = cn_jay_r_bool(&r);
        break;
    case CN_JAY_OP_LIST_OBJECTS:
        out->bucket = cn_jay_r_str(&r);
        out->prefix = cn_jay_r_str(&r);
        out->delimiter = cn_jay_r_str(&r);
        out->start_after = cn_jay_r_str(&r);
        out->max_keys = cn_jay_r_i32(&r);
        break;
    case CN_JAY_OP_GET_OBJECT_RANGE:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        out->offset = cn_jay_r_i64(&r);
        out->length = cn_jay_r_i64(&r);
        break;
    case CN_JAY_OP_COPY_OBJECT:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        out->dst_bucket = cn_jay_r_str(&r);
        out->dst_key = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_CREATE_MULTIPART:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        out->content_type = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_UPLOAD_PART:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        out->upload_id = cn_jay_r_str(&r);
        out->part_number = cn_jay_r_i32(&r);
        break;
    case CN_JAY_OP_COMPLETE_MULTIPART:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        out->upload_id = cn_jay_r_str(&r);
        cn_jay_r_int_list(&r, &out->part_numbers);
        break;
    case CN_JAY_OP_ABORT_MULTIPART:
    case CN_JAY_OP_LIST_PARTS:
        out->bucket = cn_jay_r_str(&r);
        out->key = cn_jay_r_str(&r);
        out->upload_id = cn_jay_r_str(&r);
        break;
    default:
        return CN_E_UNSUPPORTED;
    }
    /* Positional encoding: a leftover byte means the peer wrote a layout we do
     * not know, and guessing would desynchronise nothing but the meaning. */
    if (r.err || cn_rd_left(&r) != 0) {
        uint8_t keep = op;
        memset(out, 0, sizeof *out);
        out->op = keep;
        return CN_E_PROTOCOL;
    }
    return CN_OK;
}

static void w_map_of(cn_jay_w_t *w, const cn_jay_kv_t *kv, size_t n, const cn_jay_list_t *l)
{
    if (kv)
        cn_jay_w_map(w, kv, n);
    else
        cn_jay_w_list(w, l);
}

cn_err_t cn_jay_req_encode(cn_buf_t *out, const cn_jay_req_t *q, int64_t data_len)
{
    cn_jay_w_t w;
    if (!cn_jay_op_name(q->op))
        return CN_E_UNSUPPORTED;
    cn_jay_w_begin(&w, out, q->op, 0);
    switch (q->op) {
    case CN_JAY_OP_CREATE_BUCKET:
    case CN_JAY_OP_DELETE_BUCKET:
    case CN_JAY_OP_HEAD_BUCKET:
        cn_jay_w_jstr(&w, q->bucket);
        break;
    case CN_JAY_OP_LIST_BUCKETS:
    case CN_JAY_OP_PING:
        break;
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_DELETE_OBJECT:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        break;
    case CN_JAY_OP_PUT_OBJECT:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        cn_jay_w_jstr(&w, q->content_type);
        w_map_of(&w, q->meta_kv, q->n_meta_kv, &q->metadata);
        cn_jay_w_bool(&w, q->skip_etag);
        break;
    case CN_JAY_OP_LIST_OBJECTS:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->prefix);
        cn_jay_w_jstr(&w, q->delimiter);
        cn_jay_w_jstr(&w, q->start_after);
        cn_jay_w_i32(&w, q->max_keys);
        break;
    case CN_JAY_OP_GET_OBJECT_RANGE:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        cn_jay_w_i64(&w, q->offset);
        cn_jay_w_i64(&w, q->length);
        break;
    case CN_JAY_OP_COPY_OBJECT:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        cn_jay_w_jstr(&w, q->dst_bucket);
        cn_jay_w_jstr(&w, q->dst_key);
        break;
    case CN_JAY_OP_CREATE_MULTIPART:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        cn_jay_w_jstr(&w, q->content_type);
        break;
    case CN_JAY_OP_UPLOAD_PART:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        cn_jay_w_jstr(&w, q->upload_id);
        cn_jay_w_i32(&w, q->part_number);
        break;
    case CN_JAY_OP_COMPLETE_MULTIPART:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        cn_jay_w_jstr(&w, q->upload_id);
        if (q->parts)
            cn_jay_w_int_list(&w, q->parts, q->n_parts);
        else
            cn_jay_w_list(&w, &q->part_numbers);
        break;
    case CN_JAY_OP_ABORT_MULTIPART:
    case CN_JAY_OP_LIST_PARTS:
        cn_jay_w_jstr(&w, q->bucket);
        cn_jay_w_jstr(&w, q->key);
        cn_jay_w_jstr(&w, q->upload_id);
        break;
    }
    return cn_jay_w_end(&w, data_len);
}

/* ---- responses ------------------------------------------------------------------- */

cn_err_t cn_jay_resp_decode(uint8_t op, uint8_t status, const void *meta, size_t len,
                            cn_jay_resp_t *out)
{
    cn_rd_t r = cn_rd_init(meta, len);
    memset(out, 0, sizeof *out);
    out->size = -1;
    if (!cn_jay_op_name(op))
        return CN_E_UNSUPPORTED;
    if (status != CN_JAY_ST_OK) {
        out->message = cn_jay_r_str(&r);
        out->code = cn_jay_r_str(&r);
        goto done;
    }
    switch (op) {
    case CN_JAY_OP_PUT_OBJECT:
    case CN_JAY_OP_UPLOAD_PART:
        out->etag = cn_jay_r_str(&r);
        out->checksum = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_GET_OBJECT_RANGE:
        out->content_type = cn_jay_r_str(&r);
        out->size = cn_jay_r_i64(&r);
        out->etag = cn_jay_r_str(&r);
        out->checksum = cn_jay_r_str(&r);
        out->last_modified = cn_jay_r_str(&r);
        cn_jay_r_map(&r, &out->metadata);
        break;
    case CN_JAY_OP_COPY_OBJECT:
        out->etag = cn_jay_r_str(&r);
        out->checksum = cn_jay_r_str(&r);
        out->size = cn_jay_r_i64(&r);
        out->last_modified = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_LIST_OBJECTS:
        cn__jay_r_obj_list(&r, &out->entries);
        cn_jay_r_str_list(&r, &out->common_prefixes);
        out->is_truncated = cn_jay_r_bool(&r);
        out->next_start_after = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_LIST_BUCKETS:
        cn__jay_r_bucket_list(&r, &out->entries);
        break;
    case CN_JAY_OP_HEAD_BUCKET:
        out->bucket_id = cn_jay_r_str(&r);
        out->name = cn_jay_r_str(&r);
        out->created_at = cn_jay_r_str(&r);
        out->visibility = cn_jay_r_str(&r);
        break;
    case CN_JAY_OP_COMPLETE_MULTIPART:
        out->etag = cn_jay_r_str(&r);
        out->checksum = cn_jay_r_str(&r);
        out->size = cn_jay_r_i64(&r);
        break;
    case CN_JAY_OP_LIST_PARTS:
        cn__jay_r_part_list(&r, &out->entries);
        break;
    case CN_JAY_OP_CREATE_MULTIPART:
        out->upload_id = cn_jay_r_str(&r);
        break;
    default: /* CreateBucket, DeleteBucket, DeleteObject, AbortMultipartUpload, Ping */
        break;
    }
done:
    if (r.err || cn_rd_left(&r) != 0) {
        memset(out, 0, sizeof *out);
        out->size = -1;
        return CN_E_PROTOCOL;
    }
    return CN_OK;
}

cn_err_t cn_jay_resp_encode(cn_buf_t *out, uint8_t op, uint8_t status, uint32_t stream_id,
                            const cn_jay_resp_t *s, int64_t data_len)
{
    cn_jay_w_t w;
    if (!cn_jay_op_name(op))
        return CN_E_UNSUPPORTED;
    cn_jay_w_begin(&w, out, status, stream_id);
    if (status != CN_JAY_ST_OK) {
        cn_jay_w_jstr(&w, s->message);
        cn_jay_w_jstr(&w, s->code);
        return cn_jay_w_end(&w, data_len);
    }
    switch (op) {
    case CN_JAY_OP_PUT_OBJECT:
    case CN_JAY_OP_UPLOAD_PART:
        cn_jay_w_jstr(&w, s->etag);
        cn_jay_w_jstr(&w, s->checksum);
        break;
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_GET_OBJECT_RANGE:
        cn_jay_w_jstr(&w, s->content_type);
        cn_jay_w_i64(&w, s->size);
        cn_jay_w_jstr(&w, s->etag);
        cn_jay_w_jstr(&w, s->checksum);
        cn_jay_w_jstr(&w, s->last_modified);
        w_map_of(&w, s->meta_kv, s->n_meta_kv, &s->metadata);
        break;
    case CN_JAY_OP_COPY_OBJECT:
        cn_jay_w_jstr(&w, s->etag);
        cn_jay_w_jstr(&w, s->checksum);
        cn_jay_w_i64(&w, s->size);
        cn_jay_w_jstr(&w, s->last_modified);
        break;
    case CN_JAY_OP_LIST_OBJECTS:
        if (s->objs) {
            cn_jay_w_count(&w, s->n_entries);
            for (size_t i = 0; i < s->n_entries && !w.err; i++)
                cn_jay_w_obj_entry(&w, &s->objs[i]);
        } else {
            cn_jay_w_list(&w, &s->entries);
        }
        if (s->prefixes)
            cn_jay_w_str_list(&w, s->prefixes, s->n_prefixes);
        else
            cn_jay_w_list(&w, &s->common_prefixes);
        cn_jay_w_bool(&w, s->is_truncated);
        cn_jay_w_jstr(&w, s->next_start_after);
        break;
    case CN_JAY_OP_LIST_BUCKETS:
        if (s->buckets) {
            cn_jay_w_count(&w, s->n_entries);
            for (size_t i = 0; i < s->n_entries && !w.err; i++)
                cn_jay_w_bucket_entry(&w, &s->buckets[i]);
        } else {
            cn_jay_w_list(&w, &s->entries);
        }
        break;
    case CN_JAY_OP_HEAD_BUCKET:
        cn_jay_w_jstr(&w, s->bucket_id);
        cn_jay_w_jstr(&w, s->name);
        cn_jay_w_jstr(&w, s->created_at);
        cn_jay_w_jstr(&w, s->visibility);
        break;
    case CN_JAY_OP_COMPLETE_MULTIPART:
        cn_jay_w_jstr(&w, s->etag);
        cn_jay_w_jstr(&w, s->checksum);
        cn_jay_w_i64(&w, s->size);
        break;
    case CN_JAY_OP_LIST_PARTS:
        if (s->parts) {
            cn_jay_w_count(&w, s->n_entries);
            for (size_t i = 0; i < s->n_entries && !w.err; i++)
                cn_jay_w_part_entry(&w, &s->parts[i]);
        } else {
            cn_jay_w_list(&w, &s->entries);
        }
        break;
    case CN_JAY_OP_CREATE_MULTIPART:
        cn_jay_w_jstr(&w, s->upload_id);
        break;
    default:
        break;
    }
    return cn_jay_w_end(&w, data_len);
}

cn_err_t cn_jay_error_encode(cn_buf_t *out, uint8_t status, uint32_t stream_id,
                             const char *message, const char *code)
{
    cn_jay_w_t w;
    if (status == CN_JAY_ST_OK)
        return CN_E_INVALID;
    cn_jay_w_begin(&w, out, status, stream_id);
    cn_jay_w_cstr(&w, message);
    cn_jay_w_cstr(&w, code);
    return cn_jay_w_end(&w, 0);
}
