/* libFuzzer harness: every response metadata decoder (the client's side: a
 * server is untrusted input too).  Input: the request opcode byte, the status
 * byte, then a metadata block.  Invariants as in fuzz_jay_request.c. */
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_entries(uint8_t op, const cn_jay_list_t *l, const uint8_t *lo, const uint8_t *hi)
{
    cn_jay_iter_t it = cn_jay_iter(l);
    unsigned n = 0;
    if (op == CN_JAY_OP_LIST_OBJECTS) {
        cn_jay_obj_entry_t e;
        while (cn_jay_next_obj(&it, &e)) {
            fuzz_touch(e.key, lo, hi);
            fuzz_touch(e.content_type, lo, hi);
            n++;
        }
    } else if (op == CN_JAY_OP_LIST_BUCKETS) {
        cn_jay_bucket_entry_t e;
        while (cn_jay_next_bucket(&it, &e)) {
            fuzz_touch(e.name, lo, hi);
            n++;
        }
    } else if (op == CN_JAY_OP_LIST_PARTS) {
        cn_jay_part_entry_t e;
        while (cn_jay_next_part(&it, &e)) {
            fuzz_touch(e.checksum, lo, hi);
            n++;
        }
    }
    if (n != l->count)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t op = data[0], status = data[1];
    const uint8_t *meta = data + 2, *end = data + size;
    cn_jay_resp_t r;
    cn_err_t e = cn_jay_resp_decode(op, status, meta, size - 2, &r);
    if (e == CN_E_UNSUPPORTED || e == CN_E_PROTOCOL)
        return 0;
    if (e != CN_OK)
        abort();
    cn_jay_str_t strs[] = {
        r.etag,       r.checksum,   r.content_type, r.last_modified,    r.bucket_id, r.name,
        r.created_at, r.visibility, r.upload_id,    r.next_start_after, r.message,   r.code
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        fuzz_touch(strs[i], meta, end);
    fuzz_walk_map(&r.metadata, meta, end);
    fuzz_walk_strs(&r.common_prefixes, meta, end);
    walk_entries(op, &r.entries, meta, end);

    cn_buf_t a = { 0 }, b = { 0 };
    cn_jay_resp_t r2;
    if (cn_jay_resp_encode(&a, op, status, 9, &r, 0) != CN_OK)
        abort();
    if (cn_jay_resp_decode(op, status, a.data + CN_JAY_HDR_LEN, a.len - CN_JAY_HDR_LEN, &r2))
        abort();
    if (cn_jay_resp_encode(&b, op, status, 9, &r2, 0) != CN_OK || a.len != b.len ||
        memcmp(a.data, b.data, a.len))
        abort();
    cn_buf_free(&a);
    cn_buf_free(&b);
    return 0;
}
