/* cairn's ML-KEM-768 (src/crypto/mlkem.c) from fixed randomness, for the
 * known-answer cross-check of tests/net/test_tls_node.py against an
 * implementation nobody here wrote (the npm mlkem package under Node.js).
 * usage: mlkem_vectors COINS M, COINS the 64 bytes d || z and M the 32-byte
 * message, in hex.  Prints, one a line, in hex: ek, dk, ct, the shared
 * secret of encaps, the one decaps finds in ct, and the one it finds in ct
 * with its first byte flipped (implicit rejection).  Exit 1 on bad input or
 * an ek that fails the modulus check, 2 on usage. */
#include "cairn/crypto.h"

#include <stdio.h>
#include <string.h>

static void put(const uint8_t *p, size_t n)
{
    static char hex[2 * CN_MLKEM768_DK_LEN + 1];
    cn_hex_encode(p, n, hex);
    hex[2 * n] = 0;
    puts(hex);
}

int main(int argc, char **argv)
{
    static uint8_t ek[CN_MLKEM768_EK_LEN], dk[CN_MLKEM768_DK_LEN], ct[CN_MLKEM768_CT_LEN];
    uint8_t coins[64], m[32], ss[CN_MLKEM768_SS_LEN], got[CN_MLKEM768_SS_LEN];
    if (argc != 3) {
        fputs("usage: mlkem_vectors COINS(64 bytes hex) M(32 bytes hex)\n", stderr);
        return 2;
    }
    if (cn_hex_decode(argv[1], strlen(argv[1]), coins, sizeof coins) < 0 ||
        cn_hex_decode(argv[2], strlen(argv[2]), m, sizeof m) < 0)
        return 1;
    cn_mlkem768_keypair(ek, dk, coins);
    if (cn_mlkem768_encaps(ct, ss, ek, m) < 0)
        return 1;
    put(ek, sizeof ek);
    put(dk, sizeof dk);
    put(ct, sizeof ct);
    put(ss, sizeof ss);
    cn_mlkem768_decaps(got, ct, dk);
    put(got, sizeof got);
    ct[0] ^= 1;
    cn_mlkem768_decaps(got, ct, dk);
    put(got, sizeof got);
    return 0;
}
