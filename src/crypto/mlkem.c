/* ML-KEM-768 (FIPS 203) over PQClean's "clean" implementation, which meson
 * builds from the pinned npm pqclean package.  This file only adapts it: the
 * randomness is always the caller's (from OpenSSL's RAND_bytes in production,
 * fixed in known-answer tests) and FIPS 203's input check on an encapsulation
 * key, which PQClean leaves to its caller, is done here.  It must never hold
 * an ML-KEM algorithm of its own. */
#include "cairn/crypto.h"

#include <openssl/rand.h>

#include "kem.h"

_Static_assert(CN_MLKEM768_EK_LEN == PQCLEAN_MLKEM768_CLEAN_CRYPTO_PUBLICKEYBYTES, "ek size");
_Static_assert(CN_MLKEM768_DK_LEN == PQCLEAN_MLKEM768_CLEAN_CRYPTO_SECRETKEYBYTES, "dk size");
_Static_assert(CN_MLKEM768_CT_LEN == PQCLEAN_MLKEM768_CLEAN_CRYPTO_CIPHERTEXTBYTES, "ct size");
_Static_assert(CN_MLKEM768_SS_LEN == PQCLEAN_MLKEM768_CLEAN_CRYPTO_BYTES, "ss size");

/* PQClean's kem.c names this for its randomized entry points, which cairn
 * never calls (it passes coins to the _derand ones); defined so that the
 * library links, and from OpenSSL's CSPRNG should anything reach it. */
int PQCLEAN_randombytes(uint8_t *out, size_t n);
int PQCLEAN_randombytes(uint8_t *out, size_t n)
{
    return RAND_bytes(out, (int)n) == 1 ? 0 : -1;
}

void cn_mlkem768_keypair(uint8_t ek[CN_MLKEM768_EK_LEN], uint8_t dk[CN_MLKEM768_DK_LEN],
                         const uint8_t coins[64])
{
    PQCLEAN_MLKEM768_CLEAN_crypto_kem_keypair_derand(ek, dk, coins);
}

/* FIPS 203 section 7.2 "modulus check": the 3 x 256 twelve-bit coefficients
 * packed in the first 1,152 bytes must each be below q = 3329. */
static bool ek_in_range(const uint8_t *ek)
{
    unsigned bad = 0;
    for (size_t i = 0; i < 1152; i += 3) {
        unsigned a = ek[i] | (unsigned)(ek[i + 1] & 0x0f) << 8;
        unsigned b = (unsigned)(ek[i + 1] >> 4) | (unsigned)ek[i + 2] << 4;
        bad |= (a >= 3329) | (b >= 3329);
    }
    return !bad;
}

cn_err_t cn_mlkem768_encaps(uint8_t ct[CN_MLKEM768_CT_LEN], uint8_t ss[CN_MLKEM768_SS_LEN],
                            const uint8_t ek[CN_MLKEM768_EK_LEN], const uint8_t m[32])
{
    if (!ek_in_range(ek))
        return CN_E_INVALID;
    PQCLEAN_MLKEM768_CLEAN_crypto_kem_enc_derand(ct, ss, ek, m);
    return CN_OK;
}

void cn_mlkem768_decaps(uint8_t ss[CN_MLKEM768_SS_LEN], const uint8_t ct[CN_MLKEM768_CT_LEN],
                        const uint8_t dk[CN_MLKEM768_DK_LEN])
{
    PQCLEAN_MLKEM768_CLEAN_crypto_kem_dec(ss, ct, dk);
}
