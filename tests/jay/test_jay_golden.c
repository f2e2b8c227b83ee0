/* Golden tests: every handshake message, the frame header and every request
 * and response layout of Jay native v1, against fixtures written by hand from
 * the spec (tests/jay/golden/).  Each message is encoded and compared byte for
 * byte, then the fixture is decoded and every field compared.
 * Usage: test_jay_golden GOLDEN_DIR */
#include "cn_test.h"
#include "golden.h"

#include "cairn/jay.h"

#define S(lit) ((cn_jay_str_t){ (lit), (uint16_t)(sizeof(lit) - 1) })
/* The same, as a brace initializer for static tables. */
#define SI(lit)                            \
    {                                      \
        (lit), (uint16_t)(sizeof(lit) - 1) \
    }

static bool str_is(cn_jay_str_t s, cn_jay_str_t want)
{
    return s.len == want.len && (s.len == 0 || memcmp(s.p, want.p, s.len) == 0);
}
#define CHECK_JSTR(a, b)                                                                   \
    do {                                                                                   \
        if (!str_is((a), (b))) {                                                           \
            fprintf(stderr, "# %s:%d: %s: \"%.*s\" != \"%.*s\"\n", __FILE__, __LINE__, #a, \
                    (int)(a).len, (a).p ? (a).p : "", (int)(b).len, (b).p);                \
            cn_test_failures++;                                                            \
            cn_test_current_failed = 1;                                                    \
        }                                                                                  \
    } while (0)

static const char MD5_HELLO[] = "5d41402abc4b2a76b9719d911017c592";
static const char SHA_HELLO[] = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
static const char TS[] = "2026-11-02T10:00:00.000Z";

/* Compares the encoder's output with the fixture, printing the first difference. */
static void check_bytes(const char *name, const cn_buf_t *got, const cn_buf_t *want)
{
    size_t n = got->len < want->len ? got->len : want->len;
    for (size_t i = 0; i < n; i++) {
        if (got->data[i] != want->data[i]) {
            fprintf(stderr, "# %s: byte %zu: encoder 0x%02x, fixture 0x%02x\n", name, i,
                    got->data[i], want->data[i]);
            CN_CHECK(0);
            return;
        }
    }
    if (got->len != want->len)
        fprintf(stderr, "# %s: encoder %zu bytes, fixture %zu\n", name, got->len, want->len);
    CN_CHECK_EQ(got->len, want->len);
}

/* ---- handshake -------------------------------------------------------------- */

static void test_hello(void)
{
    cn_buf_t fx = { 0 }, enc = { 0 };
    CN_CHECK(golden_load("hello", &fx) == 0);
    CN_CHECK_EQ(cn_jay_hello_encode(&enc, "tok1:s3cr:et", 12), 0);
    check_bytes("hello", &enc, &fx);

    cn_jay_hello_t h;
    CN_CHECK_EQ(cn_jay_hello_decode(fx.data, fx.len, &h), 0);
    CN_CHECK_EQ(h.verdict, CN_JAY_HS_OK);
    CN_CHECK_EQ(h.version, 1);
    CN_CHECK_EQ(h.flags, 0);
    CN_CHECK_EQ(h.consumed, fx.len);
    CHECK_JSTR(h.auth, S("tok1:s3cr:et"));
    cn_jay_str_t id, secret;
    CN_CHECK_EQ(cn_jay_auth_split(h.auth, &id, &secret), 0);
    CHECK_JSTR(id, S("tok1"));
    CHECK_JSTR(secret, S("s3cr:et"));
    cn_buf_free(&fx);
    cn_buf_free(&enc);
}

static void test_welcome(void)
{
    static const struct {
        const char *name;
        uint8_t status;
    } cases[] = {
        { "welcome_ok", CN_JAY_HS_OK },
        { "welcome_auth_failed", CN_JAY_HS_AUTH_FAILED },
        { "welcome_version_mismatch", CN_JAY_HS_VERSION_MISMATCH },
        { "welcome_server_busy", CN_JAY_HS_SERVER_BUSY },
        { "welcome_malformed", CN_JAY_HS_MALFORMED },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cn_buf_t fx = { 0 }, enc = { 0 };
        uint8_t out[CN_JAY_WELCOME_LEN];
        CN_CHECK(golden_load(cases[i].name, &fx) == 0);
        cn_jay_welcome_encode(out, cases[i].status);
        cn_buf_append(&enc, out, sizeof out);
        check_bytes(cases[i].name, &enc, &fx);
        cn_jay_welcome_t w;
        CN_CHECK_EQ(cn_jay_welcome_decode(fx.data, fx.len, &w), 0);
        CN_CHECK_EQ(w.version, 1);
        CN_CHECK_EQ(w.status, cases[i].status);
        cn_buf_free(&fx);
        cn_buf_free(&enc);
    }
}

static void test_header(void)
{
    cn_buf_t fx = { 0 }, enc = { 0 };
    CN_CHECK(golden_load("header", &fx) == 0);
    cn_jay_hdr_t h = {
        .code = 0x10, .stream_id = 0x01020304, .meta_len = 32, .data_len = 0x100000005LL
    };
    uint8_t out[CN_JAY_HDR_LEN];
    CN_CHECK_EQ(cn_jay_hdr_encode(out, &h), 0);
    cn_buf_append(&enc, out, sizeof out);
    check_bytes("header", &enc, &fx);
    cn_jay_hdr_t d;
    CN_CHECK_EQ(cn_jay_hdr_decode(fx.data, fx.len, &d), 0);
    CN_CHECK_EQ(d.code, 0x10);
    CN_CHECK_EQ(d.stream_id, 0x01020304);
    CN_CHECK_EQ(d.meta_len, 32);
    CN_CHECK_EQ(d.data_len, 0x100000005LL);
    cn_buf_free(&fx);
    cn_buf_free(&enc);
}

/* ---- requests ----------------------------------------------------------------- */

static void check_req(const cn_jay_req_t *got, const cn_jay_req_t *want)
{
    CN_CHECK_EQ(got->op, want->op);
    CHECK_JSTR(got->bucket, want->bucket);
    CHECK_JSTR(got->key, want->key);
    CHECK_JSTR(got->content_type, want->content_type);
    CHECK_JSTR(got->prefix, want->prefix);
    CHECK_JSTR(got->delimiter, want->delimiter);
    CHECK_JSTR(got->start_after, want->start_after);
    CHECK_JSTR(got->upload_id, want->upload_id);
    CHECK_JSTR(got->dst_bucket, want->dst_bucket);
    CHECK_JSTR(got->dst_key, want->dst_key);
    CN_CHECK_EQ(got->skip_etag, want->skip_etag);
    CN_CHECK_EQ(got->max_keys, want->max_keys);
    CN_CHECK_EQ(got->part_number, want->part_number);
    CN_CHECK_EQ(got->offset, want->offset);
    CN_CHECK_EQ(got->length, want->length);
    CN_CHECK_EQ(got->metadata.count, want->n_meta_kv);
    cn_jay_iter_t it = cn_jay_iter(&got->metadata);
    cn_jay_kv_t kv;
    for (size_t i = 0; cn_jay_next_kv(&it, &kv); i++) {
        CN_CHECK(i < want->n_meta_kv);
        if (i >= want->n_meta_kv)
            break;
        CHECK_JSTR(kv.key, want->meta_kv[i].key);
        CHECK_JSTR(kv.value, want->meta_kv[i].value);
    }
    CN_CHECK_EQ(got->part_numbers.count, want->n_parts);
    it = cn_jay_iter(&got->part_numbers);
    int32_t pn;
    for (size_t i = 0; cn_jay_next_i32(&it, &pn); i++) {
        CN_CHECK(i < want->n_parts);
        if (i >= want->n_parts)
            break;
        CN_CHECK_EQ(pn, want->parts[i]);
    }
}

/* Encodes want (unless decode_only), compares with the fixture, decodes the
 * fixture and compares every field. */
static void req_case(const char *name, const cn_jay_req_t *want, int64_t data_len, bool decode_only)
{
    cn_buf_t fx = { 0 }, enc = { 0 };
    CN_CHECK(golden_load(name, &fx) == 0);
    if (fx.len < CN_JAY_HDR_LEN) {
        CN_CHECK(0);
        cn_buf_free(&fx);
        return;
    }
    if (!decode_only) {
        CN_CHECK_EQ(cn_jay_req_encode(&enc, want, data_len), 0);
        check_bytes(name, &enc, &fx);
    }
    cn_jay_hdr_t h;
    CN_CHECK_EQ(cn_jay_hdr_decode(fx.data, fx.len, &h), 0);
    CN_CHECK_EQ(h.code, want->op);
    CN_CHECK_EQ(h.stream_id, 0);
    CN_CHECK_EQ(h.meta_len, fx.len - CN_JAY_HDR_LEN);
    CN_CHECK_EQ(h.data_len, data_len);
    cn_jay_req_t got;
    cn_err_t e = cn_jay_req_decode(h.code, fx.data + CN_JAY_HDR_LEN, h.meta_len, &got);
    if (e)
        fprintf(stderr, "# %s: decode failed: %s\n", name, cn_errname(e));
    CN_CHECK_EQ(e, 0);
    check_req(&got, want);

    /* The decoded struct re-encodes to the same bytes (lists pass through). */
    if (!decode_only) {
        cn_buf_t again = { 0 };
        CN_CHECK_EQ(cn_jay_req_encode(&again, &got, data_len), 0);
        check_bytes(name, &again, &fx);
        cn_buf_free(&again);
    }
    cn_buf_free(&fx);
    cn_buf_free(&enc);
}

static const cn_jay_kv_t META_OWNER[] = { { SI("owner"), SI("ann") } };
static const int32_t PARTS_123[] = { 1, 2, 3 };

static void test_requests(void)
{
    static const struct {
        const char *name;
        uint8_t op;
    } bucket_ops[] = {
        { "req_create_bucket", CN_JAY_OP_CREATE_BUCKET },
        { "req_delete_bucket", CN_JAY_OP_DELETE_BUCKET },
        { "req_head_bucket", CN_JAY_OP_HEAD_BUCKET },
    };
    for (size_t i = 0; i < 3; i++) {
        cn_jay_req_t q = { .op = bucket_ops[i].op, .bucket = S("photos") };
        req_case(bucket_ops[i].name, &q, 0, false);
    }
    cn_jay_req_t lb = { .op = CN_JAY_OP_LIST_BUCKETS };
    req_case("req_list_buckets", &lb, 0, false);
    cn_jay_req_t ping = { .op = CN_JAY_OP_PING };
    req_case("req_ping", &ping, 0, false);

    static const struct {
        const char *name;
        uint8_t op;
    } key_ops[] = {
        { "req_get_object", CN_JAY_OP_GET_OBJECT },
        { "req_head_object", CN_JAY_OP_HEAD_OBJECT },
        { "req_delete_object", CN_JAY_OP_DELETE_OBJECT },
    };
    for (size_t i = 0; i < 3; i++) {
        cn_jay_req_t q = { .op = key_ops[i].op, .bucket = S("photos"), .key = S("a/b.jpg") };
        req_case(key_ops[i].name, &q, 0, false);
    }

    cn_jay_req_t put = { .op = CN_JAY_OP_PUT_OBJECT,
                         .bucket = S("photos"),
                         .key = S("a/b.jpg"),
                         .content_type = S("image/jpeg"),
                         .meta_kv = META_OWNER,
                         .n_meta_kv = 1 };
    req_case("req_put_object", &put, 5, false);
    req_case("req_put_object_legacy", &put, 5, true);
    cn_jay_req_t put2 = { .op = CN_JAY_OP_PUT_OBJECT,
                          .bucket = S("photos"),
                          .key = S("k"),
                          .content_type = S(""),
                          .skip_etag = true };
    req_case("req_put_object_skip_etag", &put2, 0, false);

    cn_jay_req_t lo = { .op = CN_JAY_OP_LIST_OBJECTS,
                        .bucket = S("photos"),
                        .prefix = S("2024/"),
                        .delimiter = S("/"),
                        .start_after = S("2024/a"),
                        .max_keys = 1000 };
    req_case("req_list_objects", &lo, 0, false);

    cn_jay_req_t rng = { .op = CN_JAY_OP_GET_OBJECT_RANGE,
                         .bucket = S("photos"),
                         .key = S("a/b.jpg"),
                         .offset = 1024,
                         .length = -1 };
    req_case("req_get_object_range", &rng, 0, false);

    cn_jay_req_t cp = { .op = CN_JAY_OP_COPY_OBJECT,
                        .bucket = S("photos"),
                        .key = S("a/b.jpg"),
                        .dst_bucket = S("backup"),
                        .dst_key = S("c.jpg") };
    req_case("req_copy_object", &cp, 0, false);

    cn_jay_req_t mc = { .op = CN_JAY_OP_CREATE_MULTIPART,
                        .bucket = S("photos"),
                        .key = S("big.iso"),
                        .content_type = S("application/octet-stream") };
    req_case("req_create_multipart", &mc, 0, false);

    cn_jay_req_t up = { .op = CN_JAY_OP_UPLOAD_PART,
                        .bucket = S("photos"),
                        .key = S("big.iso"),
                        .upload_id = S("u-7f3a"),
                        .part_number = 3 };
    req_case("req_upload_part", &up, 4 << 20, false);

    cn_jay_req_t cm = { .op = CN_JAY_OP_COMPLETE_MULTIPART,
                        .bucket = S("photos"),
                        .key = S("big.iso"),
                        .upload_id = S("u-7f3a"),
                        .parts = PARTS_123,
                        .n_parts = 3 };
    req_case("req_complete_multipart", &cm, 0, false);

    cn_jay_req_t ab = { .op = CN_JAY_OP_ABORT_MULTIPART,
                        .bucket = S("photos"),
                        .key = S("big.iso"),
                        .upload_id = S("u-7f3a") };
    req_case("req_abort_multipart", &ab, 0, false);
    cn_jay_req_t lp = ab;
    lp.op = CN_JAY_OP_LIST_PARTS;
    req_case("req_list_parts", &lp, 0, false);
}

/* ---- responses -------------------------------------------------------------------- */

static void check_resp(uint8_t op, const cn_jay_resp_t *got, const cn_jay_resp_t *want)
{
    CHECK_JSTR(got->etag, want->etag);
    CHECK_JSTR(got->checksum, want->checksum);
    CHECK_JSTR(got->content_type, want->content_type);
    CHECK_JSTR(got->last_modified, want->last_modified);
    CN_CHECK_EQ(got->size, want->size);
    CHECK_JSTR(got->bucket_id, want->bucket_id);
    CHECK_JSTR(got->name, want->name);
    CHECK_JSTR(got->created_at, want->created_at);
    CHECK_JSTR(got->visibility, want->visibility);
    CHECK_JSTR(got->upload_id, want->upload_id);
    CN_CHECK_EQ(got->is_truncated, want->is_truncated);
    CHECK_JSTR(got->next_start_after, want->next_start_after);
    CHECK_JSTR(got->message, want->message);
    CHECK_JSTR(got->code, want->code);

    CN_CHECK_EQ(got->metadata.count, want->n_meta_kv);
    cn_jay_iter_t it = cn_jay_iter(&got->metadata);
    cn_jay_kv_t kv;
    for (size_t i = 0; i < want->n_meta_kv && cn_jay_next_kv(&it, &kv); i++) {
        CHECK_JSTR(kv.key, want->meta_kv[i].key);
        CHECK_JSTR(kv.value, want->meta_kv[i].value);
    }
    CN_CHECK_EQ(got->common_prefixes.count, want->n_prefixes);
    it = cn_jay_iter(&got->common_prefixes);
    cn_jay_str_t s;
    for (size_t i = 0; i < want->n_prefixes && cn_jay_next_str(&it, &s); i++)
        CHECK_JSTR(s, want->prefixes[i]);

    size_t seen = 0;
    it = cn_jay_iter(&got->entries);
    if (op == CN_JAY_OP_LIST_OBJECTS) {
        cn_jay_obj_entry_t e;
        for (; seen < want->n_entries && cn_jay_next_obj(&it, &e); seen++) {
            const cn_jay_obj_entry_t *w = &want->objs[seen];
            CHECK_JSTR(e.key, w->key);
            CN_CHECK_EQ(e.size, w->size);
            CHECK_JSTR(e.etag, w->etag);
            CHECK_JSTR(e.checksum, w->checksum);
            CHECK_JSTR(e.last_modified, w->last_modified);
            CHECK_JSTR(e.content_type, w->content_type);
        }
    } else if (op == CN_JAY_OP_LIST_BUCKETS) {
        cn_jay_bucket_entry_t e;
        for (; seen < want->n_entries && cn_jay_next_bucket(&it, &e); seen++) {
            CHECK_JSTR(e.name, want->buckets[seen].name);
            CHECK_JSTR(e.created_at, want->buckets[seen].created_at);
        }
    } else if (op == CN_JAY_OP_LIST_PARTS) {
        cn_jay_part_entry_t e;
        for (; seen < want->n_entries && cn_jay_next_part(&it, &e); seen++) {
            const cn_jay_part_entry_t *w = &want->parts[seen];
            CN_CHECK_EQ(e.part_number, w->part_number);
            CN_CHECK_EQ(e.size, w->size);
            CHECK_JSTR(e.etag, w->etag);
            CHECK_JSTR(e.checksum, w->checksum);
        }
    }
    CN_CHECK_EQ(got->entries.count, want->n_entries);
    CN_CHECK_EQ(seen, want->n_entries);
}

static void resp_case(const char *name, uint8_t op, uint8_t status, uint32_t stream_id,
                      const cn_jay_resp_t *want, int64_t data_len)
{
    cn_buf_t fx = { 0 }, enc = { 0 };
    CN_CHECK(golden_load(name, &fx) == 0);
    if (fx.len < CN_JAY_HDR_LEN) {
        CN_CHECK(0);
        cn_buf_free(&fx);
        return;
    }
    CN_CHECK_EQ(cn_jay_resp_encode(&enc, op, status, stream_id, want, data_len), 0);
    check_bytes(name, &enc, &fx);
    cn_jay_hdr_t h;
    CN_CHECK_EQ(cn_jay_hdr_decode(fx.data, fx.len, &h), 0);
    CN_CHECK_EQ(h.code, status);
    CN_CHECK_EQ(h.stream_id, stream_id);
    CN_CHECK_EQ(h.meta_len, fx.len - CN_JAY_HDR_LEN);
    CN_CHECK_EQ(h.data_len, data_len);
    cn_jay_resp_t got;
    cn_err_t e = cn_jay_resp_decode(op, h.code, fx.data + CN_JAY_HDR_LEN, h.meta_len, &got);
    if (e)
        fprintf(stderr, "# %s: decode failed: %s\n", name, cn_errname(e));
    CN_CHECK_EQ(e, 0);
    check_resp(op, &got, want);

    cn_buf_t again = { 0 };
    CN_CHECK_EQ(cn_jay_resp_encode(&again, op, status, stream_id, &got, data_len), 0);
    check_bytes(name, &again, &fx);
    cn_buf_free(&again);
    cn_buf_free(&fx);
    cn_buf_free(&enc);
}

#define SA(a) ((cn_jay_str_t){ (a), (uint16_t)(sizeof(a) - 1) })

static void test_responses(void)
{
    cn_jay_resp_t put = { .etag = SA(MD5_HELLO), .checksum = SA(SHA_HELLO), .size = -1 };
    resp_case("resp_put_object", CN_JAY_OP_PUT_OBJECT, 0, 0, &put, 0);
    cn_jay_resp_t part = { .etag = S("e1"), .checksum = S("c1"), .size = -1 };
    resp_case("resp_upload_part", CN_JAY_OP_UPLOAD_PART, 0, 0, &part, 0);

    cn_jay_resp_t get = { .content_type = S("text/plain"),
                          .size = 5,
                          .etag = SA(MD5_HELLO),
                          .checksum = SA(SHA_HELLO),
                          .last_modified = SA(TS),
                          .meta_kv = META_OWNER,
                          .n_meta_kv = 1 };
    resp_case("resp_get_object", CN_JAY_OP_GET_OBJECT, 0, 0, &get, 5);
    cn_jay_resp_t head = { .content_type = S("a/b"),
                           .size = 4096,
                           .etag = S("e"),
                           .checksum = S("c"),
                           .last_modified = S("t") };
    resp_case("resp_head_object", CN_JAY_OP_HEAD_OBJECT, 0, 0, &head, 0);
    resp_case("resp_get_object_range", CN_JAY_OP_GET_OBJECT_RANGE, 0, 0, &head, 100);

    cn_jay_resp_t cp = {
        .etag = SA(MD5_HELLO), .checksum = SA(SHA_HELLO), .size = 5, .last_modified = SA(TS)
    };
    resp_case("resp_copy_object", CN_JAY_OP_COPY_OBJECT, 0, 0, &cp, 0);

    static const cn_jay_obj_entry_t objs[] = {
        { SI("2024/a.txt"), 5, SI("e1"), SI("c1"), SI("2026-11-02T10:00:00.000Z"),
          SI("text/plain") },
        { SI("2024/b"), 0, SI("e2"), SI("c2"), SI("t"), SI("") },
    };
    static const cn_jay_str_t prefixes[] = { SI("2024/sub/") };
    cn_jay_resp_t lo = { .objs = objs,
                         .n_entries = 2,
                         .prefixes = prefixes,
                         .n_prefixes = 1,
                         .is_truncated = true,
                         .next_start_after = S("2024/b"),
                         .size = -1 };
    resp_case("resp_list_objects", CN_JAY_OP_LIST_OBJECTS, 0, 0, &lo, 0);

    static const cn_jay_bucket_entry_t buckets[] = {
        { SI("photos"), SI("2026-11-02T10:00:00.000Z") },
        { SI("backup"), SI("t") },
    };
    cn_jay_resp_t lb = { .buckets = buckets, .n_entries = 2, .size = -1 };
    resp_case("resp_list_buckets", CN_JAY_OP_LIST_BUCKETS, 0, 0, &lb, 0);

    cn_jay_resp_t hb = { .bucket_id = S("b-01"),
                         .name = S("photos"),
                         .created_at = SA(TS),
                         .visibility = S("private"),
                         .size = -1 };
    resp_case("resp_head_bucket", CN_JAY_OP_HEAD_BUCKET, 0, 0, &hb, 0);

    cn_jay_resp_t cm = { .etag = S("3858f62230ac3c915f300c664312c11f-2"),
                         .checksum = SA(SHA_HELLO),
                         .size = 8 << 20 };
    resp_case("resp_complete_multipart", CN_JAY_OP_COMPLETE_MULTIPART, 0, 0, &cm, 0);

    static const cn_jay_part_entry_t parts[] = {
        { 1, 4 << 20, SI("e1"), SI("c1") },
        { 2, 5, SI("e2"), SI("c2") },
    };
    cn_jay_resp_t lp = { .parts = parts, .n_entries = 2, .size = -1 };
    resp_case("resp_list_parts", CN_JAY_OP_LIST_PARTS, 0, 0, &lp, 0);

    cn_jay_resp_t mc = { .upload_id = S("u-7f3a"), .size = -1 };
    resp_case("resp_create_multipart", CN_JAY_OP_CREATE_MULTIPART, 0, 0, &mc, 0);

    static const uint8_t empty_ops[] = { CN_JAY_OP_CREATE_BUCKET, CN_JAY_OP_DELETE_BUCKET,
                                         CN_JAY_OP_DELETE_OBJECT, CN_JAY_OP_ABORT_MULTIPART,
                                         CN_JAY_OP_PING };
    cn_jay_resp_t empty = { .size = -1 };
    for (size_t i = 0; i < sizeof empty_ops; i++)
        resp_case("resp_empty", empty_ops[i], 0, 0x2A, &empty, 0);

    cn_jay_resp_t nf = { .message = S("no such key: a/b.jpg"), .code = S("NoSuchKey"), .size = -1 };
    resp_case("resp_error_not_found", CN_JAY_OP_GET_OBJECT, CN_JAY_ST_NOT_FOUND, 0, &nf, 0);
    cn_jay_resp_t uo = { .message = S("unknown opcode 0x30"), .code = S("UnknownOp"), .size = -1 };
    resp_case("resp_error_unknown_op", CN_JAY_OP_PING, CN_JAY_ST_BAD_REQUEST, 0, &uo, 0);

    /* cn_jay_error_encode writes the same bytes as the error layout. */
    cn_buf_t fx = { 0 }, enc = { 0 };
    CN_CHECK(golden_load("resp_error_not_found", &fx) == 0);
    CN_CHECK_EQ(
        cn_jay_error_encode(&enc, CN_JAY_ST_NOT_FOUND, 0, "no such key: a/b.jpg", "NoSuchKey"), 0);
    check_bytes("resp_error_not_found", &enc, &fx);
    cn_buf_free(&fx);
    cn_buf_free(&enc);
}

static void run(void);
int main(int argc, char **argv)
{
    if (argc > 1)
        golden_dir = argv[1];
    run();
    return cn_test_failures ? 1 : 0;
}

static void run(void)
{
    static const cn_test_case_t cases[] = {
        CN_TEST(test_hello),    CN_TEST(test_welcome),   CN_TEST(test_header),
        CN_TEST(test_requests), CN_TEST(test_responses),
    };
    cn_test_run(cases, sizeof cases / sizeof cases[0]);
}
