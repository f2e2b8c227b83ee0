/* Scribe protocol 4's handshake layouts: golden fixtures hand-written from
 * docs/protocol/scribe.md section 15 for the extended hello of each caller
 * form and at its 16,692-byte maximum, the hello-ok with its binding secret,
 * and the admission response; and the decoder's refusals (caller tags,
 * empty or oversized delegated certificates, trailing bytes, truncations). */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

#define LE CN_SCRIBE_CODEC_LE

static cn_err_t dec_hello4(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_hello_t h;
    (void)c;
    return cn_scribe_dec_hello(p, n, 4, false, &h);
}

static cn_err_t dec_hello_ok4(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_hello_ok_t h;
    (void)c;
    return cn_scribe_dec_hello_ok(p, n, true, &h);
}

/* Encodes h and checks it equals the fixture g, decodes g back. */
static void golden_hello(const cn_scribe_hello_t *h, const uint8_t *g, size_t g_len)
{
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, h), CN_OK);
    CN_CHECK_EQ(b.len, g_len);
    CN_CHECK_MEM(b.data, g, g_len);
    cn_scribe_hello_t d;
    CN_CHECK_EQ(cn_scribe_dec_hello(g, g_len, 4, false, &d), CN_OK);
    CN_CHECK_EQ(d.caller, h->caller);
    CN_CHECK_EQ(d.bind_session, h->bind_session);
    CN_CHECK_MEM(d.binding, h->binding, 32);
    fx_truncation(dec_hello4, g, g_len, LE);
    cn_buf_free(&b);
}

static void test_hello_anonymous_control(void)
{
    FX(g, "04 00 01 00 00 00 00 00 00 00 00 00 00 00 00 02 00 \"c4\" 00"
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
    CN_CHECK_EQ(g_len, 15 + 2 + 2 + 1 + 32);
    cn_scribe_hello_t h = { .version = 4,
                            .codec = 1,
                            .client = cn_scribe_cstr("c4"),
                            .caller = CN_SCRIBE_CALLER_ANONYMOUS };
    golden_hello(&h, g, g_len);
}

static void test_hello_direct_data(void)
{
    /* a data connection of session 0x0102030405060708 with its binding */
    FX(g, "04 00 01 01 00 00 00 08 07 06 05 04 03 02 01 02 00 \"c4\" 01"
          "a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af"
          "b0 b1 b2 b3 b4 b5 b6 b7 b8 b9 ba bb bc bd be bf");
    cn_scribe_hello_t h = { .version = 4,
                            .codec = 1,
                            .caps = 1,
                            .bind_session = 0x0102030405060708ull,
                            .client = cn_scribe_cstr("c4"),
                            .caller = CN_SCRIBE_CALLER_DIRECT };
    for (int i = 0; i < 32; i++)
        h.binding[i] = (uint8_t)(0xa0 + i);
    golden_hello(&h, g, g_len);
}

static void test_hello_delegated(void)
{
    FX(g, "04 00 01 00 00 00 00 00 00 00 00 00 00 00 00 02 00 \"c4\" 02 03 00 \"crt\""
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
    cn_scribe_hello_t h = { .version = 4,
                            .codec = 1,
                            .client = cn_scribe_cstr("c4"),
                            .caller = CN_SCRIBE_CALLER_DELEGATED,
                            .delegated_cert = cn_scribe_cstr("crt") };
    golden_hello(&h, g, g_len);
}

/* The largest hello: a 256-byte client string and a 16,384-byte delegated
 * certificate make exactly 16,692 bytes, laid out field by field. */
static void test_hello_maximum(void)
{
    static uint8_t cert[CN_SCRIBE_MAX_CERTIFICATE], want[16692];
    static char cl[CN_SCRIBE_MAX_CLIENT_STRING];
    memset(cert, 'P', sizeof cert);
    memset(cl, 'c', sizeof cl);
    FX(head, "04 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 01");
    size_t n = 0;
    memcpy(want, head, head_len);
    n += head_len;
    memcpy(want + n, cl, sizeof cl);
    n += sizeof cl;
    FX(mid, "02 00 40");
    memcpy(want + n, mid, mid_len);
    n += mid_len;
    memcpy(want + n, cert, sizeof cert);
    n += sizeof cert;
    memset(want + n, 0x5a, 32);
    n += 32;
    CN_CHECK_EQ(n, 16692);
    cn_scribe_hello_t h = { .version = 4,
                            .codec = 1,
                            .client = { (const uint8_t *)cl, sizeof cl },
                            .caller = CN_SCRIBE_CALLER_DELEGATED,
                            .delegated_cert = { cert, sizeof cert } };
    memset(h.binding, 0x5a, 32);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_OK);
    CN_CHECK_EQ(b.len, 16692);
    CN_CHECK_MEM(b.data, want, n);
    cn_scribe_hello_t d;
    CN_CHECK_EQ(cn_scribe_dec_hello(want, n, 4, false, &d), CN_OK);
    CN_CHECK_EQ(d.delegated_cert.len, CN_SCRIBE_MAX_CERTIFICATE);
    /* one more certificate byte is over the limit, for the encoder too */
    h.delegated_cert.len = CN_SCRIBE_MAX_CERTIFICATE + 1;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_E_INVALID);
    static uint8_t over[16693];
    memcpy(over, want, 256 + 17 + 1);
    over[256 + 17 + 1] = 0x01;
    over[256 + 17 + 2] = 0x40; /* length 16,385 */
    memset(over + 256 + 17 + 3, 'P', CN_SCRIBE_MAX_CERTIFICATE + 1);
    memset(over + 256 + 17 + 3 + CN_SCRIBE_MAX_CERTIFICATE + 1, 0x5a, 32);
    CN_CHECK_EQ(cn_scribe_dec_hello(over, sizeof over, 4, false, &d), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

static void test_hello_refusals(void)
{
    FX(g, "04 00 01 00 00 00 00 00 00 00 00 00 00 00 00 02 00 \"c4\" 00"
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ee");
    cn_scribe_hello_t d;
    CN_CHECK_EQ(cn_scribe_dec_hello(g, g_len, 4, false, &d), CN_E_PROTOCOL); /* trailing */
    CN_CHECK_EQ(cn_scribe_dec_hello(g, g_len - 1, 4, false, &d), CN_OK);
    size_t caller_at = 15 + 2 + 2;
    for (unsigned t = 3; t < 256; t++) {
        g[caller_at] = (uint8_t)t;
        CN_CHECK_EQ(cn_scribe_dec_hello(g, g_len - 1, 4, false, &d), CN_E_PROTOCOL);
    }
    /* caller 2 with an empty certificate */
    FX(e, "04 00 01 00 00 00 00 00 00 00 00 00 00 00 00 02 00 \"c4\" 02 00 00"
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
          "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
    CN_CHECK_EQ(cn_scribe_dec_hello(e, e_len, 4, false, &d), CN_E_PROTOCOL);
    cn_scribe_hello_t h = { .version = 4, .codec = 1, .caller = 3 };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_hello(&b, &h), CN_E_INVALID);
    /* a protocol-4 hello on a protocol-2 listener, and the reverse */
    g[caller_at] = 0;
    CN_CHECK_EQ(cn_scribe_dec_hello(g, g_len - 1, 2, false, &d), CN_E_UNSUPPORTED);
    g[0] = 2;
    CN_CHECK_EQ(cn_scribe_dec_hello(g, g_len - 1, 4, false, &d), CN_E_UNSUPPORTED);
    cn_buf_free(&b);
}

static void test_hello_ok_binding(void)
{
    FX(g, "04 00 01 08 07 06 05 04 03 02 01 2c 01 00 00 00"
          "10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f"
          "20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f");
    cn_scribe_hello_ok_t h = { .version = 4,
                               .codec = 1,
                               .session = 0x0102030405060708ull,
                               .timeout_s = 300,
                               .has_binding = true };
    for (int i = 0; i < 32; i++)
        h.binding[i] = (uint8_t)(0x10 + i);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_hello_ok(&b, &h), CN_OK);
    CN_CHECK_EQ(b.len, g_len);
    CN_CHECK_MEM(b.data, g, g_len);
    cn_scribe_hello_ok_t d;
    CN_CHECK_EQ(cn_scribe_dec_hello_ok(g, g_len, true, &d), CN_OK);
    CN_CHECK_MEM(d.binding, h.binding, 32);
    fx_truncation(dec_hello_ok4, g, g_len, LE);
    /* a data connection's reply has no secret: 16 bytes, refused as a control's */
    CN_CHECK_EQ(cn_scribe_dec_hello_ok(g, 16, false, &d), CN_OK);
    CN_CHECK_EQ(cn_scribe_dec_hello_ok(g, 16, true, &d), CN_E_PROTOCOL);
    CN_CHECK_EQ(cn_scribe_dec_hello_ok(g, g_len, false, &d), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

/* The admission response is a header with the request's opcode and id, no
 * flags and no payload: nothing else to encode. */
static void test_admission_response(void)
{
    FX(g, "53 43 52 31 06 00 00 00 07 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
    cn_scribe_hdr_t h = { .opcode = CN_SCRIBE_OP_PUT_OBJECTS, .request_id = 7 };
    uint8_t out[CN_SCRIBE_HDR_LEN];
    cn_scribe_hdr_encode(out, &h);
    CN_CHECK_EQ(g_len, sizeof out);
    CN_CHECK_MEM(out, g, g_len);
}

CN_TEST_MAIN(CN_TEST(test_hello_anonymous_control), CN_TEST(test_hello_direct_data),
             CN_TEST(test_hello_delegated), CN_TEST(test_hello_maximum),
             CN_TEST(test_hello_refusals), CN_TEST(test_hello_ok_binding),
             CN_TEST(test_admission_response))
