/* crypto: BLAKE3 against Debian's b3sum, SHA-256/MD5/HMAC/CRC known vectors,
 * hex and base64 round trips. */
#include "cn_test.h"
#include "cairn/crypto.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static void b3sum_of_file(const char *path, char out[65])
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "b3sum --no-names '%s'", path);
    FILE *p = popen(cmd, "r");
    out[0] = 0;
    if (!p)
        return;
    if (!fgets(out, 65, p))
        out[0] = 0;
    pclose(p);
}

static void test_blake3_matches_b3sum(void)
{
    /* Sizes straddle the chunk (1024) and SIMD batch boundaries. */
    static const size_t sizes[] = { 0,    1,    63,   64,    65,      1023,
                                    1024, 1025, 4096, 16385, 1 << 20, (1 << 20) + 7 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        uint8_t *data = malloc(n + 1);
        for (size_t k = 0; k < n; k++)
            data[k] = (uint8_t)(k * 31 + (k >> 8));
        char path[] = "/tmp/cn_b3_XXXXXX";
        int fd = mkstemp(path);
        CN_CHECK(fd >= 0);
        CN_CHECK((size_t)write(fd, data, n) == n);
        close(fd);
        char expect[65];
        b3sum_of_file(path, expect);
        unlink(path);

        cn_digest_t d;
        cn_blake3(data, n, &d);
        char got[65];
        cn_digest_hex(&d, got);
        CN_CHECK_STR(got, expect);

        /* Streaming in odd pieces gives the same digest. */
        cn_blake3_t h;
        cn_blake3_init(&h);
        for (size_t off = 0; off < n;) {
            size_t step = (off % 7 + 1) * 97;
            if (step > n - off)
                step = n - off;
            cn_blake3_update(&h, data + off, step);
            off += step;
        }
        cn_digest_t d2;
        cn_blake3_final(&h, &d2);
        CN_CHECK_MEM(d.b, d2.b, CN_DIGEST_LEN);
        free(data);
    }
}

static void test_sha256_md5_vectors(void)
{
    uint8_t out[32];
    char hex[65];
    cn_sha256("abc", 3, out);
    cn_hex_encode(out, 32, hex);
    CN_CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cn_md5("", 0, out);
    cn_hex_encode(out, 16, hex);
    CN_CHECK_STR(hex, "d41d8cd98f00b204e9800998ecf8427e");

    cn_sha256_t *h;
    CN_CHECK_EQ(cn_sha256_new(&h), 0);
    cn_sha256_update(h, "a", 1);
    cn_sha256_update(h, "bc", 2);
    cn_sha256_final(h, out);
    cn_hex_encode(out, 32, hex);
    CN_CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

    /* RFC 4231 test case 2 */
    cn_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, out);
    cn_hex_encode(out, 32, hex);
    CN_CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

    /* RFC 4231 test case 6: a key longer than the block is hashed first */
    uint8_t long_key[131];
    memset(long_key, 0xaa, sizeof long_key);
    cn_hmac_sha256(long_key, sizeof long_key,
                   "Test Using Larger Than Block-Size Key - Hash Key First", 54, out);
    cn_hex_encode(out, 32, hex);
    CN_CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

    /* a key of exactly one block is used as is (Python's hmac module) */
    uint8_t block_key[64];
    memset(block_key, 0x0b, sizeof block_key);
    cn_hmac_sha256(block_key, sizeof block_key, "Hi There", 8, out);
    cn_hex_encode(out, 32, hex);
    CN_CHECK_STR(hex, "21cd586aeca0579d99a1c938127c92525a371f807bc5ba6eb78bc825bd4f2be3");
}

/* A key prepared once gives the MAC of the one-shot, and of OpenSSL's own
 * HMAC, for keys shorter than, as long as and longer than a block, and
 * messages across block boundaries; a copied prepared key works as well. */
static void test_hmac_prepared(void)
{
    uint8_t key[150], msg[300], a[32], b[32], c[32];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 13 + 5);
    static const size_t klen[] = { 0, 1, 20, 32, 63, 64, 65, 131, 150 };
    for (size_t k = 0; k < sizeof klen / sizeof klen[0]; k++) {
        cn_hmac_sha256_key_t pk, copy;
        cn_hmac_sha256_key_init(&pk, key, klen[k]);
        copy = pk;
        for (size_t m = 0; m <= sizeof msg; m += 23) {
            size_t outl = 0;
            cn_hmac_sha256(key, klen[k], msg, m, a);
            cn_hmac_sha256_keyed(&pk, msg, m, b);
            CN_CHECK(EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, klen[k], msg, m, c,
                               sizeof c, &outl) != NULL);
            CN_CHECK_MEM(a, c, 32);
            CN_CHECK_MEM(b, c, 32);
            cn_hmac_sha256_keyed(&copy, msg, m, b); /* the states are not consumed */
            CN_CHECK_MEM(b, c, 32);
        }
        cn_hmac_sha256_key_wipe(&pk);
        cn_hmac_sha256_key_wipe(&copy);
    }
    /* cn_sha256 across block boundaries, against OpenSSL's EVP */
    for (size_t m = 0; m <= sizeof msg; m += 17) {
        unsigned int l = 0;
        cn_sha256(msg, m, a);
        CN_CHECK(EVP_Digest(msg, m, c, &l, EVP_sha256(), NULL) == 1);
        CN_CHECK_MEM(a, c, 32);
    }
}

static void test_crc_vectors(void)
{
    CN_CHECK_EQ(cn_crc32(0, "123456789", 9), 0xCBF43926u);
    CN_CHECK_EQ(cn_crc32c(0, "123456789", 9), 0xE3069283u);
    CN_CHECK_EQ(cn_crc32(cn_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);

    /* RFC 3720, B.4: CRC-32C of 32-byte patterns */
    uint8_t b[32];
    memset(b, 0, sizeof b);
    CN_CHECK_EQ(cn_crc32c(0, b, 32), 0x8A9136AAu);
    memset(b, 0xFF, sizeof b);
    CN_CHECK_EQ(cn_crc32c(0, b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    CN_CHECK_EQ(cn_crc32c(0, b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    CN_CHECK_EQ(cn_crc32c(0, b, 32), 0x113FDB5Cu);
}

/* Bit by bit, the definition: what any faster path must equal. */
static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *s, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *s++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static void test_crc32c_any_alignment(void)
{
    uint8_t buf[4096 + 16];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
    int bad = 0;
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n < 300; n += 1 + n / 16)
            bad += cn_crc32c(0, buf + off, n) != crc32c_bitwise(0, buf + off, n);
    CN_CHECK_EQ(bad, 0);
    /* chained over an odd split equals one call */
    uint32_t whole = cn_crc32c(0, buf + 3, 4096);
    CN_CHECK_EQ(cn_crc32c(cn_crc32c(0, buf + 3, 1027), buf + 1030, 4096 - 1027), whole);
    CN_CHECK_EQ(whole, crc32c_bitwise(0, buf + 3, 4096));
}

static void test_hex_base64(void)
{
    uint8_t b[4];
    CN_CHECK_EQ(cn_hex_decode("DEADbeef", 8, b, 4), 0);
    CN_CHECK_EQ(b[0], 0xde);
    CN_CHECK_EQ(b[3], 0xef);
    CN_CHECK(cn_hex_decode("deadbee", 7, b, 4) < 0);
    CN_CHECK(cn_hex_decode("deadbeeg", 8, b, 4) < 0);

    char enc[16];
    cn_base64_encode("hello", 5, enc);
    CN_CHECK_STR(enc, "aGVsbG8=");
    uint8_t dec[16];
    CN_CHECK_EQ(cn_base64_decode("aGVsbG8=", 8, dec, sizeof dec), 5);
    CN_CHECK_MEM(dec, "hello", 5);
    CN_CHECK(cn_base64_decode("aGVsbG8", 7, dec, sizeof dec) < 0);
    CN_CHECK(cn_base64_decode("aG=sbG8=", 8, dec, sizeof dec) < 0);
}

static void test_ct_equal(void)
{
    CN_CHECK(cn_ct_equal("secret", "secret", 6));
    CN_CHECK(!cn_ct_equal("secret", "secreT", 6));
    uint8_t r1[32], r2[32];
    CN_CHECK_EQ(cn_random_bytes(r1, 32), 0);
    CN_CHECK_EQ(cn_random_bytes(r2, 32), 0);
    CN_CHECK(!cn_ct_equal(r1, r2, 32));
}

CN_TEST_MAIN(CN_TEST(test_blake3_matches_b3sum), CN_TEST(test_sha256_md5_vectors),
             CN_TEST(test_hmac_prepared), CN_TEST(test_crc_vectors),
             CN_TEST(test_crc32c_any_alignment), CN_TEST(test_hex_base64), CN_TEST(test_ct_equal))
