/* libFuzzer harness: the 17-byte frame header.  Invariants: an accepted header
 * re-encodes to the same bytes; meta_len over 1 MiB and a negative data_len
 * are always refused. */
#include "cairn/jay.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cn_jay_hdr_t h;
    cn_err_t e = cn_jay_hdr_decode(data, size, &h);
    if (size < CN_JAY_HDR_LEN) {
        if (e != CN_E_AGAIN)
            abort();
        return 0;
    }
    if (e == CN_OK) {
        if (h.meta_len > CN_JAY_MAX_META || h.data_len < 0)
            abort();
        uint8_t out[CN_JAY_HDR_LEN];
        if (cn_jay_hdr_encode(out, &h) != CN_OK || memcmp(out, data, sizeof out) != 0)
            abort();
    } else if (e == CN_E_LIMIT) {
        if (h.meta_len <= CN_JAY_MAX_META)
            abort();
    } else if (e == CN_E_PROTOCOL) {
        if (h.data_len >= 0)
            abort();
    } else {
        abort();
    }
    return 0;
}
