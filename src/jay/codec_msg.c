/* Jay native v1 message layouts: every request and every response of the spec
 * table, decoded and encoded from one flat struct each (include/cairn/jay.h).
 * Each layout is written once, as a list of fields below, and the one reader
 * and the one writer walk it: a layout cannot be read one way and written
 * another.  The layout switches are the table; keep them in its order. */
#include "cairn/jay.h"
#include "jay/codec_int.h"

#include <stddef.h>
#include <string.h>

/* ---- layouts ------------------------------------------------------------------- */

/* What one positional field is on the wire. */
typedef enum {
    F_END = 0,
    F_STR,      /* cn_jay_str_t */
    F_I32,      /* int32_t */
    F_I64,      /* int64_t */
    F_BOOL,     /* bool */
    F_OPT_BOOL, /* bool, trailing: read only if a byte remains, always written */
    F_MAP,      /* cn_jay_list_t of key/value pairs */
    F_INTS,     /* cn_jay_list_t of int32 */
    F_STRS,     /* cn_jay_list_t of strings */
    F_OBJS,     /* cn_jay_list_t of ListObjects entries */
    F_BUCKETS,  /* cn_jay_list_t of ListBuckets entries */
    F_PARTS,    /* cn_jay_list_t of ListParts entries */
    F_KINDS
} field_kind_t;

/* One field: its kind and where its value lives in the struct. */
typedef struct {
    uint8_t kind;
    uint16_t off;
} field_t;

/* An encoder's input array for the lists of one kind (v NULL: none given, the
 * decoded list is written verbatim).  Every list kind has at most one. */
typedef struct {
    const void *v;
    size_t n;
} list_in_t;

#define Q(kind, f)                      \
    {                                   \
        kind, offsetof(cn_jay_req_t, f) \
    }
#define S(kind, f)                       \
    {                                    \
        kind, offsetof(cn_jay_resp_t, f) \
    }
#define END      \
    {            \
        F_END, 0 \
    }

/* Most requests name an object: (bucket, key) first. */
#define Q_OBJECT Q(F_STR, bucket), Q(F_STR, key)

/* The layout of a request with opcode op; NULL when op is not a v1 opcode. */
static const field_t *req_layout(uint8_t op)
{
    static const field_t bucket[] = { Q(F_STR, bucket), END };
    static const field_t empty[] = { END };
    static const field_t object[] = { Q_OBJECT, END };
    static const field_t put[] = { Q_OBJECT, Q(F_STR, content_type), Q(F_MAP, metadata),
                                   Q(F_OPT_BOOL, skip_etag), END };
    static const field_t list[] = { Q(F_STR, bucket),      Q(F_STR, prefix),   Q(F_STR, delimiter),
                                    Q(F_STR, start_after), Q(F_I32, max_keys), END };
    static const field_t range[] = { Q_OBJECT, Q(F_I64, offset), Q(F_I64, length), END };
    static const field_t copy[] = { Q_OBJECT, Q(F_STR, dst_bucket), Q(F_STR, dst_key), END };
    static const field_t create_mp[] = { Q_OBJECT, Q(F_STR, content_type), END };
    static const field_t part[] = { Q_OBJECT, Q(F_STR, upload_id), Q(F_I32, part_number), END };
    static const field_t complete[] = { Q_OBJECT, Q(F_STR, upload_id), Q(F_INTS, part_numbers),
                                        END };
    static const field_t upload[] = { Q_OBJECT, Q(F_STR, upload_id), END };

    switch (op) {
    case CN_JAY_OP_CREATE_BUCKET:
    case CN_JAY_OP_DELETE_BUCKET:
    case CN_JAY_OP_HEAD_BUCKET: return bucket;
    case CN_JAY_OP_LIST_BUCKETS:
    case CN_JAY_OP_PING: return empty;
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_DELETE_OBJECT: return object;
    case CN_JAY_OP_PUT_OBJECT: return put;
    case CN_JAY_OP_LIST_OBJECTS: return list;
    case CN_JAY_OP_GET_OBJECT_RANGE: return range;
    case CN_JAY_OP_COPY_OBJECT: return copy;
    case CN_JAY_OP_CREATE_MULTIPART: return create_mp;
    case CN_JAY_OP_UPLOAD_PART: return part;
    case CN_JAY_OP_COMPLETE_MULTIPART: return complete;
    case CN_JAY_OP_ABORT_MULTIPART:
    case CN_JAY_OP_LIST_PARTS: return upload;
    default: return NULL;
    }
}

/* The layout of a successful response to opcode op; NULL when op is not a v1
 * opcode. */
static const field_t *resp_layout(uint8_t op)
{
    static const field_t stored[] = { S(F_STR, etag), S(F_STR, checksum), END };
    static const field_t info[] = { S(F_STR, content_type),
                                    S(F_I64, size),
                                    S(F_STR, etag),
                                    S(F_STR, checksum),
                                    S(F_STR, last_modified),
                                    S(F_MAP, metadata),
                                    END };
    static const field_t copy[] = { S(F_STR, etag), S(F_STR, checksum), S(F_I64, size),
                                    S(F_STR, last_modified), END };
    static const field_t list[] = { S(F_OBJS, entries), S(F_STRS, common_prefixes),
                                    S(F_BOOL, is_truncated), S(F_STR, next_start_after), END };
    static const field_t buckets[] = { S(F_BUCKETS, entries), END };
    static const field_t head_bucket[] = { S(F_STR, bucket_id), S(F_STR, name),
                                           S(F_STR, created_at), S(F_STR, visibility), END };
    static const field_t complete[] = { S(F_STR, etag), S(F_STR, checksum), S(F_I64, size), END };
    static const field_t parts[] = { S(F_PARTS, entries), END };
    static const field_t create_mp[] = { S(F_STR, upload_id), END };
    static const field_t empty[] = { END };

    if (!cn_jay_op_name(op))
        return NULL;
    switch (op) {
    case CN_JAY_OP_PUT_OBJECT:
    case CN_JAY_OP_UPLOAD_PART: return stored;
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_GET_OBJECT_RANGE: return info;
    case CN_JAY_OP_COPY_OBJECT: return copy;
    case CN_JAY_OP_LIST_OBJECTS: return list;
    case CN_JAY_OP_LIST_BUCKETS: return buckets;
    case CN_JAY_OP_HEAD_BUCKET: return head_bucket;
    case CN_JAY_OP_COMPLETE_MULTIPART: return complete;
    case CN_JAY_OP_LIST_PARTS: return parts;
    case CN_JAY_OP_CREATE_MULTIPART: return create_mp;
    default: /* CreateBucket, DeleteBucket, DeleteObject, AbortMultipartUpload, Ping */
        return empty;
    }
}

/* Any status other than OK. */
static const field_t error_layout[] = { S(F_STR, message), S(F_STR, code), END };

#define AT(type, base, off) ((type *)(void *)((char *)(base) + (off)))
#define CAT(type, base, off) ((const type *)(const void *)((const char *)(base) + (off)))

/* Reads every field of layout into the struct at base (errors sticky in r). */
static void read_fields(cn_rd_t *r, const field_t *layout, void *base)
{
    for (const field_t *f = layout; f->kind != F_END; f++) {
        switch ((field_kind_t)f->kind) {
        case F_STR: *AT(cn_jay_str_t, base, f->off) = cn_jay_r_str(r); break;
        case F_I32: *AT(int32_t, base, f->off) = cn_jay_r_i32(r); break;
        case F_I64: *AT(int64_t, base, f->off) = cn_jay_r_i64(r); break;
        case F_BOOL: *AT(bool, base, f->off) = cn_jay_r_bool(r); break;
        case F_OPT_BOOL:
            /* The one trailing optional field of v1: absent means false. */
            if (cn_rd_left(r) > 0)
                *AT(bool, base, f->off) = cn_jay_r_bool(r);
            break;
        case F_MAP: cn_jay_r_map(r, AT(cn_jay_list_t, base, f->off)); break;
        case F_INTS: cn_jay_r_int_list(r, AT(cn_jay_list_t, base, f->off)); break;
        case F_STRS: cn_jay_r_str_list(r, AT(cn_jay_list_t, base, f->off)); break;
        case F_OBJS: cn__jay_r_obj_list(r, AT(cn_jay_list_t, base, f->off)); break;
        case F_BUCKETS: cn__jay_r_bucket_list(r, AT(cn_jay_list_t, base, f->off)); break;
        case F_PARTS: cn__jay_r_part_list(r, AT(cn_jay_list_t, base, f->off)); break;
        case F_END:
        case F_KINDS: break;
        }
    }
}

/* Writes a list of the given kind from the encoder's input array. */
static void write_input(cn_jay_w_t *w, uint8_t kind, const list_in_t *in)
{
    switch ((field_kind_t)kind) {
    case F_MAP: cn_jay_w_map(w, in->v, in->n); return;
    case F_INTS: cn_jay_w_int_list(w, in->v, in->n); return;
    case F_STRS: cn_jay_w_str_list(w, in->v, in->n); return;
    default: break;
    }
    cn_jay_w_count(w, in->n);
    for (size_t i = 0; i < in->n && !w->err; i++) {
        if (kind == F_OBJS)
            cn_jay_w_obj_entry(w, (const cn_jay_obj_entry_t *)in->v + i);
        else if (kind == F_BUCKETS)
            cn_jay_w_bucket_entry(w, (const cn_jay_bucket_entry_t *)in->v + i);
        else
            cn_jay_w_part_entry(w, (const cn_jay_part_entry_t *)in->v + i);
    }
}

/* Writes every field of layout from the struct at base: a list from in[kind]
 * when that is given, else the decoded list verbatim. */
static void write_fields(cn_jay_w_t *w, const field_t *layout, const void *base,
                         const list_in_t in[F_KINDS])
{
    for (const field_t *f = layout; f->kind != F_END; f++) {
        switch ((field_kind_t)f->kind) {
        case F_STR: cn_jay_w_jstr(w, *CAT(cn_jay_str_t, base, f->off)); break;
        case F_I32: cn_jay_w_i32(w, *CAT(int32_t, base, f->off)); break;
        case F_I64: cn_jay_w_i64(w, *CAT(int64_t, base, f->off)); break;
        case F_BOOL:
        case F_OPT_BOOL: cn_jay_w_bool(w, *CAT(bool, base, f->off)); break;
        case F_END:
        case F_KINDS: break;
        default:
            if (in[f->kind].v)
                write_input(w, f->kind, &in[f->kind]);
            else
                cn_jay_w_list(w, CAT(cn_jay_list_t, base, f->off));
            break;
        }
    }
}

/* ---- requests ------------------------------------------------------------------ */

cn_err_t cn_jay_req_decode(uint8_t op, const void *meta, size_t len, cn_jay_req_t *out)
{
    cn_rd_t r = cn_rd_init(meta, len);
    const field_t *layout = req_layout(op);
    memset(out, 0, sizeof *out);
    out->op = op;
    if (!layout)
        return CN_E_UNSUPPORTED;
    read_fields(&r, layout, out);
    /* Positional encoding: a leftover byte means the peer wrote a layout we do
     * not know, and guessing would desynchronise nothing but the meaning. */
    if (r.err || cn_rd_left(&r) != 0) {
        memset(out, 0, sizeof *out);
        out->op = op;
        return CN_E_PROTOCOL;
    }
    return CN_OK;
}

cn_err_t cn_jay_req_encode(cn_buf_t *out, const cn_jay_req_t *q, int64_t data_len)
{
    cn_jay_w_t w;
    const field_t *layout = req_layout(q->op);
    const list_in_t in[F_KINDS] = {
        [F_MAP] = { q->meta_kv, q->n_meta_kv },
        [F_INTS] = { q->parts, q->n_parts },
    };
    if (!layout)
        return CN_E_UNSUPPORTED;
    cn_jay_w_begin(&w, out, q->op, 0);
    write_fields(&w, layout, q, in);
    return cn_jay_w_end(&w, data_len);
}

/* ---- responses ------------------------------------------------------------------- */

cn_err_t cn_jay_resp_decode(uint8_t op, uint8_t status, const void *meta, size_t len,
                            cn_jay_resp_t *out)
{
    cn_rd_t r = cn_rd_init(meta, len);
    const field_t *layout = resp_layout(op);
    memset(out, 0, sizeof *out);
    out->size = -1;
    if (!layout)
        return CN_E_UNSUPPORTED;
    read_fields(&r, status == CN_JAY_ST_OK ? layout : error_layout, out);
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
    const field_t *layout = resp_layout(op);
    const list_in_t in[F_KINDS] = {
        [F_MAP] = { s->meta_kv, s->n_meta_kv }, [F_STRS] = { s->prefixes, s->n_prefixes },
        [F_OBJS] = { s->objs, s->n_entries },   [F_BUCKETS] = { s->buckets, s->n_entries },
        [F_PARTS] = { s->parts, s->n_entries },
    };
    if (!layout)
        return CN_E_UNSUPPORTED;
    cn_jay_w_begin(&w, out, status, stream_id);
    write_fields(&w, status == CN_JAY_ST_OK ? layout : error_layout, s, in);
    return cn_jay_w_end(&w, data_len);
}

cn_err_t cn_jay_error_encode(cn_buf_t *out, uint8_t status, uint32_t stream_id, const char *message,
                             const char *code)
{
    cn_jay_w_t w;
    if (status == CN_JAY_ST_OK)
        return CN_E_INVALID;
    cn_jay_w_begin(&w, out, status, stream_id);
    cn_jay_w_cstr(&w, message);
    cn_jay_w_cstr(&w, code);
    return cn_jay_w_end(&w, 0);
}
