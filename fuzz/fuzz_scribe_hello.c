/* libFuzzer harness: the handshake.  Input: one selector byte (bit0: a TLS
 * listener, protocol 4; bit1: allow_test_codec; bit2: decode a hello-ok
 * instead), then the payload.  Invariants: an accepted hello re-encodes to
 * the input; its strings lie inside it; unsupported versions and codecs are
 * reported as such and nothing else. */
#include "fuzz_scribe_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const uint8_t *p = data + 1, *end = data + size;
    size_t n = size - 1;
    cn_buf_t b = { 0 };
    if (sel & 4) {
        cn_scribe_hello_ok_t ok;
        if (cn_scribe_dec_hello_ok(p, n, sel & 1, &ok) == CN_OK) {
            if (ok.timeout_s == 0 || cn_scribe_enc_hello_ok(&b, &ok) != CN_OK)
                abort();
            fz_same(&b, p, n);
        }
        cn_buf_free(&b);
        return 0;
    }
    uint16_t version = (sel & 1) ? 4 : 2;
    cn_scribe_hello_t h;
    cn_err_t e = cn_scribe_dec_hello(p, n, version, sel & 2, &h);
    if (e == CN_E_UNSUPPORTED) {
        if (n >= 3 && (p[0] | p[1] << 8) == version && (p[2] == 1 || (p[2] == 2 && (sel & 2))))
            abort();
        return 0;
    }
    if (e == CN_E_PROTOCOL)
        return 0;
    if (e != CN_OK)
        abort();
    fz_in(h.client, p, end);
    fz_in(h.delegated_cert, p, end);
    if (h.caps & ~1u || cn_scribe_enc_hello(&b, &h) != CN_OK)
        abort();
    fz_same(&b, p, n);
    cn_buf_free(&b);
    return 0;
}
