/* libFuzzer harness: the Jay handshake — the server's classification of a
 * client hello, the credential split, and the client's decoding of the reply.
 * Invariants: nothing reads past the input; a decision never claims more bytes
 * than were given; an accepted credential lies inside the input. */
#include "cairn/jay.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cn_jay_hello_t h;
    cn_err_t e = cn_jay_hello_decode(data, size, &h);
    if (e == CN_OK) {
        if (h.consumed > size)
            abort();
        if (h.verdict == CN_JAY_HS_OK) {
            if ((const uint8_t *)h.auth.p != data + CN_JAY_HELLO_LEN || h.auth.len == 0)
                abort();
            cn_jay_str_t id, secret;
            if (cn_jay_auth_split(h.auth, &id, &secret) == CN_OK) {
                if (id.len == 0 || secret.len == 0 || id.len + 1u + secret.len != h.auth.len)
                    abort();
                if (memchr(id.p, ':', id.len))
                    abort();
            }
            /* The encoder reproduces the accepted handshake but for the flags. */
            cn_buf_t b = { 0 };
            if (cn_jay_hello_encode(&b, h.auth.p, h.auth.len) != CN_OK || b.len != h.consumed ||
                memcmp(b.data, data, 5) != 0 || memcmp(b.data + 6, data + 6, b.len - 6) != 0)
                abort();
            cn_buf_free(&b);
        }
    } else if (e != CN_E_AGAIN) {
        abort();
    }
    cn_jay_welcome_t w;
    (void)cn_jay_welcome_decode(data, size, &w);
    return 0;
}
