/* One LZ4 transfer block (docs/protocol/scribe.md, transfer compression):
 * the sender's half, shared by Scribe's server and its client, which both
 * link LZ4.  Kept out of the codec library on purpose: the codec's golden
 * tests and fuzzers link it alone, without LZ4.  It never allocates. */
#include <lz4.h>

#include "cairn/scribe.h"

size_t cn_scribe_pack_block(const uint8_t *in, size_t n, uint8_t *scratch,
                            uint8_t hdr[CN_SCRIBE_BLOCK_HDR_LEN], const uint8_t **data)
{
    int enc = LZ4_compress_default((const char *)in, (char *)scratch, (int)n,
                                   LZ4_compressBound(CN_SCRIBE_BLOCK_MAX));
    cn_scribe_block_t b = { (uint32_t)n, (uint32_t)n, true };
    *data = in;
    if (enc > 0 && (size_t)enc < n) {
        b.stored = (uint32_t)enc;
        b.raw = false;
        *data = scratch;
    }
    cn_scribe_enc_block(hdr, &b);
    return b.stored;
}
