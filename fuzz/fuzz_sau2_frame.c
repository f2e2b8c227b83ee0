/* libFuzzer harness: SAU2 frames as the auth listener and the client read
 * them.  The input is a byte stream read frame by frame: a head, then its
 * payload decoded both as a request and as a reply.  Invariants: a head that
 * parses re-encodes to the same 8 bytes and names at most 1 MiB; a refused
 * head ends the stream; every slice a decoder hands out lies inside the
 * payload; a decoded request re-encodes to the same payload (the codec is
 * canonical) and its intent can be taken; a decoded reply's rows walk to
 * exactly its row count. */
#include "cairn/sau2.h"

#include <stdlib.h>
#include <string.h>

static void inside(cn_sau2_str_t s, const uint8_t *lo, size_t n)
{
    if (s.len && (s.p < lo || s.p + s.len > lo + n))
        abort();
}

static void check_request(const uint8_t *p, size_t n)
{
    static cn_sau2_req_t q; /* large: kept off the stack */
    if (cn_sau2_dec_request(p, n, &q) != 0)
        return;
    for (uint16_t i = 0; i < q.argc; i++)
        inside(q.argv[i], p, n);
    if (q.has_secret)
        inside(q.secret, p, n);
    cn_buf_t b = { 0 };
    if (cn_sau2_enc_request(&b, &q) != 0 || b.len != n + CN_SAU2_HDR_LEN ||
        memcmp(b.data + CN_SAU2_HDR_LEN, p, n) != 0)
        abort();
    cn_buf_free(&b);
    cn_digest_t d;
    if (cn_sau2_intent(&q, 0, &d) != 0)
        abort();
}

static void check_reply(const uint8_t *p, size_t n)
{
    static cn_sau2_row_t row;
    cn_sau2_reply_view_t v;
    if (cn_sau2_dec_reply(p, n, &v) != 0)
        return;
    if (v.code) {
        inside(v.message, p, n);
        return;
    }
    size_t off = 0;
    unsigned rows = 0;
    while (cn_sau2_row_next(&v, &off, &row)) {
        for (uint16_t i = 0; i < row.n; i++)
            inside(row.s[i], p, n);
        rows++;
    }
    if (rows != v.nrows || off != v.rows_len)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (size - off >= CN_SAU2_HDR_LEN) {
        uint32_t len;
        if (cn_sau2_frame_parse(data + off, &len) != 0)
            break; /* close the connection */
        uint8_t again[CN_SAU2_HDR_LEN];
        cn_sau2_frame_head(again, len);
        if (memcmp(again, data + off, CN_SAU2_HDR_LEN) != 0 || len > CN_SAU2_MAX_PAYLOAD)
            abort();
        off += CN_SAU2_HDR_LEN;
        size_t take = len < size - off ? len : size - off;
        check_request(data + off, take);
        check_reply(data + off, take);
        off += take;
    }
    return 0;
}
