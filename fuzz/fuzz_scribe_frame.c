/* libFuzzer harness: the SCR1 frame reader.  The input is a byte stream read
 * frame by frame as a server would: a header, then (if the opcode's bound
 * admits it) the payload.  Invariants: a header that parses re-encodes to the
 * same 24 bytes; flags and length obey the header rules; a refused header
 * ends the stream; stream item headers and LZ4 block headers never read past
 * what they were given. */
#include "fuzz_scribe_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (size - off >= CN_SCRIBE_HDR_LEN) {
        cn_scribe_hdr_t h;
        if (cn_scribe_hdr_parse(data + off, &h) != CN_OK)
            break; /* close the connection */
        uint8_t again[CN_SCRIBE_HDR_LEN];
        cn_scribe_hdr_encode(again, &h);
        if (memcmp(again, data + off, CN_SCRIBE_HDR_LEN) != 0 || h.length > CN_SCRIBE_MAX_FRAME ||
            (h.flags & ~3u))
            abort();
        off += CN_SCRIBE_HDR_LEN;
        uint32_t bound;
        if (cn_scribe_request_bound(h.opcode, false, &bound) && h.length > bound)
            break; /* over the opcode's bound: close */
        size_t take = h.length < size - off ? h.length : size - off;
        const uint8_t *payload = data + off;
        /* Exercise the stream-side decoders on the payload bytes too. */
        cn_scribe_get_item_t it;
        long r = cn_scribe_dec_get_item(
            payload, take, (h.flags & 1) ? CN_SCRIBE_CODEC_BE : CN_SCRIBE_CODEC_LE, &it);
        if (r > 0 && (size_t)r > take)
            abort();
        if (take >= CN_SCRIBE_BLOCK_HDR_LEN) {
            cn_scribe_block_t b;
            if (cn_scribe_dec_block(payload, take, &b) == CN_OK &&
                (b.original == 0 || b.original > CN_SCRIBE_BLOCK_MAX ||
                 (b.raw && b.stored != b.original)))
                abort();
        }
        off += take;
    }
    return 0;
}
