/* CRC-32 (IEEE 802.3, reflected 0xEDB88320) and CRC-32C (Castagnoli,
 * reflected 0x82F63B78), slicing-by-one tables built once. */
#include "cairn/crypto.h"

#include <pthread.h>

static uint32_t cn__crc32_tab[256], cn__crc32c_tab[256];
static pthread_once_t cn__crc_once = PTHREAD_ONCE_INIT;

static void crc_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t a = i, b = i;
        for (int k = 0; k < 8; k++) {
            a = (a >> 1) ^ (0xEDB88320u & (0u - (a & 1)));
            b = (b >> 1) ^ (0x82F63B78u & (0u - (b & 1)));
        }
        cn__crc32_tab[i] = a;
        cn__crc32c_tab[i] = b;
    }
}

static uint32_t crc_crc(const uint32_t *tab, uint32_t crc, const void *p, size_t n)
{
    pthread_once(&cn__crc_once, crc_tables);
    const uint8_t *s = p;
    crc = ~crc;
    while (n--)
        crc = tab[(crc ^ *s++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

uint32_t cn_crc32(uint32_t crc, const void *p, size_t n)
{
    return crc_crc(cn__crc32_tab, crc, p, n);
}
uint32_t cn_crc32c(uint32_t crc, const void *p, size_t n)
{
    return crc_crc(cn__crc32c_tab, crc, p, n);
}
