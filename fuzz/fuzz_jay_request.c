/* libFuzzer harness: every request metadata decoder (the server's side).
 * Input: one opcode byte, then a metadata block.  Invariants: decoding never
 * reads outside the block; every slice lies inside it; every list walks to its
 * count; an accepted request re-encodes, and that encoding decodes and
 * re-encodes to itself (the layout is positional, so a decoder/encoder
 * disagreement shows up as a byte difference). */
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t op = data[0];
    const uint8_t *meta = data + 1, *end = data + size;
    cn_jay_req_t q;
    cn_err_t e = cn_jay_req_decode(op, meta, size - 1, &q);
    if (e == CN_E_UNSUPPORTED) {
        if (cn_jay_op_name(op))
            abort();
        return 0;
    }
    if (e == CN_E_PROTOCOL)
        return 0;
    if (e != CN_OK)
        abort();
    cn_jay_str_t strs[] = { q.bucket,      q.key,       q.content_type, q.prefix, q.delimiter,
                            q.start_after, q.upload_id, q.dst_bucket,   q.dst_key };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        fuzz_touch(strs[i], meta, end);
    fuzz_walk_map(&q.metadata, meta, end);
    fuzz_walk_ints(&q.part_numbers);

    cn_buf_t a = { 0 }, b = { 0 };
    cn_jay_req_t q2;
    if (cn_jay_req_encode(&a, &q, 7) != CN_OK)
        abort();
    if (cn_jay_req_decode(op, a.data + CN_JAY_HDR_LEN, a.len - CN_JAY_HDR_LEN, &q2) != CN_OK)
        abort();
    if (cn_jay_req_encode(&b, &q2, 7) != CN_OK || a.len != b.len || memcmp(a.data, b.data, a.len))
        abort();
    /* Apart from a normalised bool and the optional trailing skip_etag, the
     * encoding is the input itself. */
    if (op != CN_JAY_OP_PUT_OBJECT &&
        (a.len - CN_JAY_HDR_LEN != size - 1 || memcmp(a.data + CN_JAY_HDR_LEN, meta, size - 1)))
        abort();
    cn_buf_free(&a);
    cn_buf_free(&b);
    return 0;
}
