/* Jay native v1 codec: handshake, frame header, metadata primitives, the
 * error-code table and list iteration (include/cairn/jay.h).  No I/O, no
 * allocation in any decoder. */
#include "cairn/jay.h"
#include "jay/codec_int.h"

#include <errno.h>
#include <string.h>

/* ---- tables ------------------------------------------------------------------ */

static const struct {
    const char *s;
    uint8_t status;
} cn__codes[CN_JAY_CODE_END] = {
    [CN_JAY_CODE_NONE] = { "", CN_JAY_ST_INTERNAL },
    [CN_JAY_CODE_ACCESS_DENIED] = { CN_JAY_CODE_ACCESS_DENIED_S, CN_JAY_ST_FORBIDDEN },
    [CN_JAY_CODE_BUCKET_ALREADY_EXISTS] = { CN_JAY_CODE_BUCKET_ALREADY_EXISTS_S,
                                            CN_JAY_ST_CONFLICT },
    [CN_JAY_CODE_BUCKET_NOT_EMPTY] = { CN_JAY_CODE_BUCKET_NOT_EMPTY_S, CN_JAY_ST_CONFLICT },
    [CN_JAY_CODE_ENTITY_TOO_LARGE] = { CN_JAY_CODE_ENTITY_TOO_LARGE_S, CN_JAY_ST_BAD_REQUEST },
    [CN_JAY_CODE_INTERNAL_ERROR] = { CN_JAY_CODE_INTERNAL_ERROR_S, CN_JAY_ST_INTERNAL },
    [CN_JAY_CODE_INVALID_ARGUMENT] = { CN_JAY_CODE_INVALID_ARGUMENT_S, CN_JAY_ST_BAD_REQUEST },
    [CN_JAY_CODE_INVALID_BUCKET_NAME] = { CN_JAY_CODE_INVALID_BUCKET_NAME_S,
                                          CN_JAY_ST_BAD_REQUEST },
    [CN_JAY_CODE_INVALID_RANGE] = { CN_JAY_CODE_INVALID_RANGE_S, CN_JAY_ST_BAD_REQUEST },
    [CN_JAY_CODE_NO_SUCH_BUCKET] = { CN_JAY_CODE_NO_SUCH_BUCKET_S, CN_JAY_ST_NOT_FOUND },
    [CN_JAY_CODE_NO_SUCH_KEY] = { CN_JAY_CODE_NO_SUCH_KEY_S, CN_JAY_ST_NOT_FOUND },
    [CN_JAY_CODE_NO_SUCH_UPLOAD] = { CN_JAY_CODE_NO_SUCH_UPLOAD_S, CN_JAY_ST_NOT_FOUND },
    [CN_JAY_CODE_RATE_LIMIT_EXCEEDED] = { CN_JAY_CODE_RATE_LIMIT_EXCEEDED_S,
                                          CN_JAY_ST_BAD_REQUEST },
    [CN_JAY_CODE_UNKNOWN_OP] = { CN_JAY_CODE_UNKNOWN_OP_S, CN_JAY_ST_BAD_REQUEST },
};

const char *cn_jay_code_str(cn_jay_code_t code)
{
    if ((unsigned)code >= CN_JAY_CODE_END)
        return "";
    return cn__codes[code].s;
}

uint8_t cn_jay_code_status(cn_jay_code_t code)
{
    if ((unsigned)code >= CN_JAY_CODE_END)
        return CN_JAY_ST_INTERNAL;
    return cn__codes[code].status;
}

cn_jay_code_t cn_jay_code_parse(const char *p, size_t n)
{
    if (!p || n == 0)
        return CN_JAY_CODE_NONE;
    for (int c = CN_JAY_CODE_NONE + 1; c < CN_JAY_CODE_END; c++)
        if (strlen(cn__codes[c].s) == n && memcmp(cn__codes[c].s, p, n) == 0)
            return (cn_jay_code_t)c;
    return CN_JAY_CODE_NONE;
}

const char *cn_jay_op_name(uint8_t op)
{
    switch (op) {
    case CN_JAY_OP_CREATE_BUCKET: return "CreateBucket";
    case CN_JAY_OP_DELETE_BUCKET: return "DeleteBucket";
    case CN_JAY_OP_HEAD_BUCKET: return "HeadBucket";
    case CN_JAY_OP_LIST_BUCKETS: return "ListBuckets";
    case CN_JAY_OP_PUT_OBJECT: return "PutObject";
    case CN_JAY_OP_GET_OBJECT: return "GetObject";
    case CN_JAY_OP_HEAD_OBJECT: return "HeadObject";
    case CN_JAY_OP_DELETE_OBJECT: return "DeleteObject";
    case CN_JAY_OP_LIST_OBJECTS: return "ListObjects";
    case CN_JAY_OP_GET_OBJECT_RANGE: return "GetObjectRange";
    case CN_JAY_OP_COPY_OBJECT: return "CopyObject";
    case CN_JAY_OP_CREATE_MULTIPART: return "CreateMultipartUpload";
    case CN_JAY_OP_UPLOAD_PART: return "UploadPart";
    case CN_JAY_OP_COMPLETE_MULTIPART: return "CompleteMultipartUpload";
    case CN_JAY_OP_ABORT_MULTIPART: return "AbortMultipartUpload";
    case CN_JAY_OP_LIST_PARTS: return "ListParts";
    case CN_JAY_OP_PING: return "Ping";
    default: return NULL;
    }
}

/* ---- slices -------------------------------------------------------------------- */

cn_err_t cn_jay_str_make_n(const void *p, size_t n, cn_jay_str_t *out)
{
    if (n > CN_JAY_MAX_STR) {
        out->p = NULL;
        out->len = 0;
        return CN_E_LIMIT;
    }
    out->p = n ? (const char *)p : "";
    out->len = (uint16_t)n;
    return CN_OK;
}

cn_err_t cn_jay_str_make(const char *s, cn_jay_str_t *out)
{
    return cn_jay_str_make_n(s ? s : "", s ? strlen(s) : 0, out);
}

bool cn_jay_str_eq(cn_jay_str_t s, const char *cstr)
{
    size_t n = cstr ? strlen(cstr) : 0;
    return n == s.len && (n == 0 || memcmp(s.p, cstr, n) == 0);
}

/* ---- handshake ------------------------------------------------------------------ */

cn_err_t cn_jay_hello_encode(cn_buf_t *out, const void *auth, size_t auth_len)
{
    if (auth_len == 0)
        return CN_E_INVALID;
    if (auth_len > CN_JAY_MAX_STR)
        return CN_E_LIMIT;
    uint8_t h[CN_JAY_HELLO_LEN];
    cn_store_u32be(h, CN_JAY_MAGIC);
    h[4] = CN_JAY_VERSION;
    h[5] = 0;
    cn_store_u16be(h + 6, (uint16_t)auth_len);
    CN_TRY(cn_buf_reserve(out, sizeof h + auth_len));
    cn_buf_append(out, h, sizeof h);
    cn_buf_append(out, auth, auth_len);
    return CN_OK;
}

cn_err_t cn_jay_hello_decode(const void *buf, size_t len, cn_jay_hello_t *out)
{
    const uint8_t *p = buf;
    uint8_t magic[4];
    cn_store_u32be(magic, CN_JAY_MAGIC);
    memset(out, 0, sizeof *out);
    /* Decide "not a Jay client" as early as one wrong byte allows, so a peer
     * that sent "GET " is answered without waiting for bytes that never come. */
    for (size_t i = 0; i < 4 && i < len; i++) {
        if (p[i] != magic[i]) {
            out->verdict = CN_JAY_HS_MALFORMED;
            out->consumed = i + 1;
            return CN_OK;
        }
    }
    if (len < 5)
        return CN_E_AGAIN;
    out->version = p[4];
    if (p[4] != CN_JAY_VERSION) {
        out->verdict = CN_JAY_HS_VERSION_MISMATCH;
        out->consumed = 5;
        return CN_OK;
    }
    if (len < CN_JAY_HELLO_LEN)
        return CN_E_AGAIN;
    out->flags = p[5];
    uint16_t auth_len = cn_load_u16be(p + 6);
    if (auth_len == 0) {
        out->verdict = CN_JAY_HS_AUTH_FAILED;
        out->consumed = CN_JAY_HELLO_LEN;
        return CN_OK;
    }
    if (len - CN_JAY_HELLO_LEN < auth_len)
        return CN_E_AGAIN;
    out->verdict = CN_JAY_HS_OK;
    out->auth.p = (const char *)p + CN_JAY_HELLO_LEN;
    out->auth.len = auth_len;
    out->consumed = CN_JAY_HELLO_LEN + (size_t)auth_len;
    return CN_OK;
}

cn_err_t cn_jay_auth_split(cn_jay_str_t auth, cn_jay_str_t *token_id, cn_jay_str_t *secret)
{
    const char *colon = auth.len ? memchr(auth.p, ':', auth.len) : NULL;
    if (!colon)
        return CN_E_AUTH;
    size_t id_len = (size_t)(colon - auth.p);
    size_t secret_len = auth.len - id_len - 1;
    if (id_len == 0 || secret_len == 0)
        return CN_E_AUTH;
    token_id->p = auth.p;
    token_id->len = (uint16_t)id_len;
    secret->p = colon + 1;
    secret->len = (uint16_t)secret_len;
    return CN_OK;
}

void cn_jay_welcome_encode(uint8_t out[CN_JAY_WELCOME_LEN], uint8_t status)
{
    cn_store_u32be(out, CN_JAY_MAGIC);
    out[4] = CN_JAY_VERSION;
    out[5] = status;
    out[6] = 0;
    out[7] = 0;
}

cn_err_t cn_jay_welcome_decode(const void *buf, size_t len, cn_jay_welcome_t *out)
{
    const uint8_t *p = buf;
    if (len < CN_JAY_WELCOME_LEN)
        return CN_E_AGAIN;
    if (cn_load_u32be(p) != CN_JAY_MAGIC)
        return CN_E_PROTOCOL;
    out->version = p[4];
    out->status = p[5];
    if (out->status == CN_JAY_HS_OK && out->version != CN_JAY_VERSION)
        return CN_E_PROTOCOL;
    return CN_OK;
}

/* ---- frame header ------------------------------------------------------------ */

cn_err_t cn_jay_hdr_encode(uint8_t out[CN_JAY_HDR_LEN], const cn_jay_hdr_t *h)
{
    if (h->meta_len > CN_JAY_MAX_META)
        return CN_E_LIMIT;
    if (h->data_len < 0)
        return CN_E_INVALID;
    out[0] = h->code;
    cn_store_u32be(out + 1, h->stream_id);
    cn_store_u32be(out + 5, h->meta_len);
    cn_store_u64be(out + 9, (uint64_t)h->data_len);
    return CN_OK;
}

cn_err_t cn_jay_hdr_decode(const void *buf, size_t len, cn_jay_hdr_t *out)
{
    const uint8_t *p = buf;
    if (len < CN_JAY_HDR_LEN)
        return CN_E_AGAIN;
    out->code = p[0];
    out->stream_id = cn_load_u32be(p + 1);
    out->meta_len = cn_load_u32be(p + 5);
    out->data_len = (int64_t)cn_load_u64be(p + 9);
    if (out->meta_len > CN_JAY_MAX_META)
        return CN_E_LIMIT;
    if (out->data_len < 0)
        return CN_E_PROTOCOL;
    return CN_OK;
}

/* ---- writer -------------------------------------------------------------------- */

static void w_fail(cn_jay_w_t *w, cn_err_t e)
{
    if (!w->err)
        w->err = e;
}

static void w_bytes(cn_jay_w_t *w, const void *p, size_t n)
{
    if (w->err)
        return;
    cn_err_t e = cn_buf_append(w->buf, p, n);
    if (e)
        w_fail(w, e);
}

void cn_jay_w_begin(cn_jay_w_t *w, cn_buf_t *buf, uint8_t code, uint32_t stream_id)
{
    uint8_t h[CN_JAY_HDR_LEN] = { 0 };
    w->buf = buf;
    w->start = buf->len;
    w->err = CN_OK;
    h[0] = code;
    cn_store_u32be(h + 1, stream_id);
    w_bytes(w, h, sizeof h);
}

void cn_jay_w_str(cn_jay_w_t *w, const void *p, size_t n)
{
    if (n > CN_JAY_MAX_STR) {
        w_fail(w, CN_E_LIMIT);
        return;
    }
    uint8_t l[2];
    cn_store_u16be(l, (uint16_t)n);
    w_bytes(w, l, 2);
    if (n)
        w_bytes(w, p, n);
}

void cn_jay_w_cstr(cn_jay_w_t *w, const char *s)
{
    cn_jay_w_str(w, s, s ? strlen(s) : 0);
}

void cn_jay_w_jstr(cn_jay_w_t *w, cn_jay_str_t s)
{
    cn_jay_w_str(w, s.p, s.len);
}

void cn_jay_w_i32(cn_jay_w_t *w, int32_t v)
{
    uint8_t b[4];
    cn_store_u32be(b, (uint32_t)v);
    w_bytes(w, b, 4);
}

void cn_jay_w_i64(cn_jay_w_t *w, int64_t v)
{
    uint8_t b[8];
    cn_store_u64be(b, (uint64_t)v);
    w_bytes(w, b, 8);
}

void cn_jay_w_bool(cn_jay_w_t *w, bool v)
{
    uint8_t b = v ? 1 : 0;
    w_bytes(w, &b, 1);
}

void cn_jay_w_count(cn_jay_w_t *w, size_t n)
{
    if (n > CN_JAY_MAX_COUNT) {
        w_fail(w, CN_E_LIMIT);
        return;
    }
    uint8_t l[2];
    cn_store_u16be(l, (uint16_t)n);
    w_bytes(w, l, 2);
}

void cn_jay_w_str_list(cn_jay_w_t *w, const cn_jay_str_t *v, size_t n)
{
    cn_jay_w_count(w, n);
    for (size_t i = 0; i < n && !w->err; i++)
        cn_jay_w_jstr(w, v[i]);
}

void cn_jay_w_int_list(cn_jay_w_t *w, const int32_t *v, size_t n)
{
    cn_jay_w_count(w, n);
    for (size_t i = 0; i < n && !w->err; i++)
        cn_jay_w_i32(w, v[i]);
}

void cn_jay_w_map(cn_jay_w_t *w, const cn_jay_kv_t *kv, size_t n)
{
    cn_jay_w_count(w, n);
    for (size_t i = 0; i < n && !w->err; i++) {
        cn_jay_w_jstr(w, kv[i].key);
        cn_jay_w_jstr(w, kv[i].value);
    }
}

void cn_jay_w_list(cn_jay_w_t *w, const cn_jay_list_t *l)
{
    cn_jay_w_count(w, l->count);
    if (l->len)
        w_bytes(w, l->p, l->len);
}

cn_err_t cn_jay_w_end(cn_jay_w_t *w, int64_t data_len)
{
    if (!w->err && data_len < 0)
        w_fail(w, CN_E_INVALID);
    if (!w->err) {
        size_t meta = w->buf->len - w->start - CN_JAY_HDR_LEN;
        if (meta > CN_JAY_MAX_META) {
            w_fail(w, CN_E_LIMIT);
        } else {
            uint8_t *h = w->buf->data + w->start;
            cn_store_u32be(h + 5, (uint32_t)meta);
            cn_store_u64be(h + 9, (uint64_t)data_len);
        }
    }
    if (w->err && w->buf->len > w->start)
        w->buf->len = w->start;
    return w->err;
}

/* ---- reader -------------------------------------------------------------------- */

cn_jay_str_t cn_jay_r_str(cn_rd_t *r)
{
    cn_jay_str_t s = { "", 0 };
    uint16_t n = cn_rd_u16be(r);
    const uint8_t *p = cn_rd_bytes(r, n);
    if (!p)
        return s;
    s.p = n ? (const char *)p : "";
    s.len = n;
    return s;
}

int32_t cn_jay_r_i32(cn_rd_t *r)
{
    return (int32_t)cn_rd_u32be(r);
}
int64_t cn_jay_r_i64(cn_rd_t *r)
{
    return (int64_t)cn_rd_u64be(r);
}
bool cn_jay_r_bool(cn_rd_t *r)
{
    return cn_rd_u8(r) != 0;
}

uint16_t cn_jay_r_count(cn_rd_t *r, size_t min_elem_size)
{
    uint16_t n = cn_rd_u16be(r);
    if (r->err)
        return 0;
    if (min_elem_size && (size_t)n > cn_rd_left(r) / min_elem_size) {
        r->err = CN_E_PROTOCOL;
        return 0;
    }
    return n;
}

/* Positions out at the current offset with count elements; the caller then
 * walks them with elem() and closes the slice. */
static void list_open(cn_rd_t *r, cn_jay_list_t *out, size_t min_elem)
{
    out->count = cn_jay_r_count(r, min_elem);
    out->p = r->err ? NULL : r->p + r->off;
    out->len = 0;
}

static void list_close(cn_rd_t *r, cn_jay_list_t *out)
{
    if (r->err) {
        out->p = NULL;
        out->count = 0;
        out->len = 0;
        return;
    }
    out->len = (size_t)(r->p + r->off - out->p);
}

void cn_jay_r_str_list(cn_rd_t *r, cn_jay_list_t *out)
{
    list_open(r, out, 2);
    for (uint16_t i = 0; i < out->count && !r->err; i++)
        (void)cn_jay_r_str(r);
    list_close(r, out);
}

void cn_jay_r_int_list(cn_rd_t *r, cn_jay_list_t *out)
{
    list_open(r, out, 4);
    if (!r->err)
        (void)cn_rd_bytes(r, (size_t)out->count * 4);
    list_close(r, out);
}

void cn_jay_r_map(cn_rd_t *r, cn_jay_list_t *out)
{
    list_open(r, out, 4);
    for (uint16_t i = 0; i < out->count && !r->err; i++) {
        (void)cn_jay_r_str(r);
        (void)cn_jay_r_str(r);
    }
    list_close(r, out);
}

/* ---- iteration ------------------------------------------------------------------ */

cn_jay_iter_t cn_jay_iter(const cn_jay_list_t *l)
{
    cn_jay_iter_t it;
    it.rd = cn_rd_init(l->p, l->len);
    it.left = l->count;
    return it;
}

/* Reads an element with fn; stops (false) when the list is done or a list
 * that was not validated runs short. */
#define CN__NEXT(it, body)                   \
    do {                                     \
        if ((it)->left == 0 || (it)->rd.err) \
            return false;                    \
        body;                                \
        if ((it)->rd.err) {                  \
            (it)->left = 0;                  \
            return false;                    \
        }                                    \
        (it)->left--;                        \
        return true;                         \
    } while (0)

bool cn_jay_next_str(cn_jay_iter_t *it, cn_jay_str_t *out)
{
    CN__NEXT(it, *out = cn_jay_r_str(&it->rd));
}

bool cn_jay_next_i32(cn_jay_iter_t *it, int32_t *out)
{
    CN__NEXT(it, *out = cn_jay_r_i32(&it->rd));
}

bool cn_jay_next_kv(cn_jay_iter_t *it, cn_jay_kv_t *out)
{
    CN__NEXT(it, {
        out->key = cn_jay_r_str(&it->rd);
        out->value = cn_jay_r_str(&it->rd);
    });
}

static void r_obj(cn_rd_t *r, cn_jay_obj_entry_t *e)
{
    e->key = cn_jay_r_str(r);
    e->size = cn_jay_r_i64(r);
    e->etag = cn_jay_r_str(r);
    e->checksum = cn_jay_r_str(r);
    e->last_modified = cn_jay_r_str(r);
    e->content_type = cn_jay_r_str(r);
}

static void r_bucket(cn_rd_t *r, cn_jay_bucket_entry_t *e)
{
    e->name = cn_jay_r_str(r);
    e->created_at = cn_jay_r_str(r);
}

static void r_part(cn_rd_t *r, cn_jay_part_entry_t *e)
{
    e->part_number = cn_jay_r_i32(r);
    e->size = cn_jay_r_i64(r);
    e->etag = cn_jay_r_str(r);
    e->checksum = cn_jay_r_str(r);
}

bool cn_jay_next_obj(cn_jay_iter_t *it, cn_jay_obj_entry_t *out)
{
    CN__NEXT(it, r_obj(&it->rd, out));
}

bool cn_jay_next_bucket(cn_jay_iter_t *it, cn_jay_bucket_entry_t *out)
{
    CN__NEXT(it, r_bucket(&it->rd, out));
}

bool cn_jay_next_part(cn_jay_iter_t *it, cn_jay_part_entry_t *out)
{
    CN__NEXT(it, r_part(&it->rd, out));
}

/* Smallest encodings: an object entry is five empty strings and an i64, a
 * bucket two empty strings, a part an i32, an i64 and two empty strings. */
void cn__jay_r_obj_list(cn_rd_t *r, cn_jay_list_t *out)
{
    cn_jay_obj_entry_t e;
    list_open(r, out, 5 * 2 + 8);
    for (uint16_t i = 0; i < out->count && !r->err; i++)
        r_obj(r, &e);
    list_close(r, out);
}

void cn__jay_r_bucket_list(cn_rd_t *r, cn_jay_list_t *out)
{
    cn_jay_bucket_entry_t e;
    list_open(r, out, 2 * 2);
    for (uint16_t i = 0; i < out->count && !r->err; i++)
        r_bucket(r, &e);
    list_close(r, out);
}

void cn__jay_r_part_list(cn_rd_t *r, cn_jay_list_t *out)
{
    cn_jay_part_entry_t e;
    list_open(r, out, 4 + 8 + 2 * 2);
    for (uint16_t i = 0; i < out->count && !r->err; i++)
        r_part(r, &e);
    list_close(r, out);
}

void cn_jay_w_obj_entry(cn_jay_w_t *w, const cn_jay_obj_entry_t *e)
{
    cn_jay_w_jstr(w, e->key);
    cn_jay_w_i64(w, e->size);
    cn_jay_w_jstr(w, e->etag);
    cn_jay_w_jstr(w, e->checksum);
    cn_jay_w_jstr(w, e->last_modified);
    cn_jay_w_jstr(w, e->content_type);
}

void cn_jay_w_bucket_entry(cn_jay_w_t *w, const cn_jay_bucket_entry_t *e)
{
    cn_jay_w_jstr(w, e->name);
    cn_jay_w_jstr(w, e->created_at);
}

void cn_jay_w_part_entry(cn_jay_w_t *w, const cn_jay_part_entry_t *e)
{
    cn_jay_w_i32(w, e->part_number);
    cn_jay_w_i64(w, e->size);
    cn_jay_w_jstr(w, e->etag);
    cn_jay_w_jstr(w, e->checksum);
}
