/* libFuzzer harness: protocol 4's handshake as a TLS listener and a client
 * see it.  Input: one selector byte (bit0: decode a control hello-ok, with
 * its binding secret; bit1: a data connection's hello-ok; else a hello),
 * then the payload.  Invariants: an accepted hello has a caller tag 0..2,
 * a delegated certificate (1..16,384 bytes, inside the input) exactly when
 * its caller is 2, is at most 16,692 bytes and re-encodes to the input; an
 * accepted hello-ok re-encodes to the input; nothing but CN_OK,
 * CN_E_PROTOCOL and (hello) CN_E_UNSUPPORTED is ever returned. */
#include "fuzz_scribe_common.h"

static void hello_ok(const uint8_t *p, size_t n, bool control)
{
    cn_buf_t b = { 0 };
    cn_scribe_hello_ok_t ok;
    cn_err_t e = cn_scribe_dec_hello_ok(p, n, control, &ok);
    if (e == CN_OK) {
        if (ok.timeout_s == 0 || ok.has_binding != control || cn_scribe_enc_hello_ok(&b, &ok))
            abort();
        fz_same(&b, p, n);
    } else if (e != CN_E_PROTOCOL) {
        abort();
    }
    cn_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1, *end = data + size;
    size_t n = size - 1;
    if (data[0] & 3) {
        hello_ok(p, n, data[0] & 1);
        return 0;
    }
    cn_scribe_hello_t h;
    cn_err_t e = cn_scribe_dec_hello(p, n, 4, false, &h);
    if (e == CN_E_UNSUPPORTED || e == CN_E_PROTOCOL)
        return 0;
    if (e != CN_OK || n > 16692 || h.version != 4 || h.caller > CN_SCRIBE_CALLER_DELEGATED)
        abort();
    if ((h.caller == CN_SCRIBE_CALLER_DELEGATED) != (h.delegated_cert.len > 0) ||
        h.delegated_cert.len > CN_SCRIBE_MAX_CERTIFICATE)
        abort();
    fz_in(h.client, p, end);
    fz_in(h.delegated_cert, p, end);
    cn_buf_t b = { 0 };
    if (cn_scribe_enc_hello(&b, &h) != CN_OK)
        abort();
    fz_same(&b, p, n);
    cn_buf_free(&b);
    return 0;
}
