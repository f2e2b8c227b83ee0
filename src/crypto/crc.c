/* CRC-32 (IEEE 802.3, reflected 0xEDB88320) and CRC-32C (Castagnoli,
 * reflected 0x82F63B78), slicing-by-one tables built once; CRC-32C uses
 * SSE4.2's crc32 instruction where the CPU has it (the pack committer
 * checksums every record on one thread). */
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
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <string.h>

/* SSE4.2's crc32 instruction computes exactly CRC-32C (Castagnoli). */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n)
{
    const uint8_t *s = p;
    uint64_t c = ~crc;
    for (; n && ((uintptr_t)s & 7); n--)
        c = _mm_crc32_u8((uint32_t)c, *s++);
    for (; n >= 8; n -= 8, s += 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        c = _mm_crc32_u64(c, w);
    }
    for (; n; n--)
        c = _mm_crc32_u8((uint32_t)c, *s++);
    return ~(uint32_t)c;
}

static int cn__crc32c_hw = -1; /* unknown, then 0 or 1: idempotent, so racing is harmless */

uint32_t cn_crc32c(uint32_t crc, const void *p, size_t n)
{
    int hw = __atomic_load_n(&cn__crc32c_hw, __ATOMIC_RELAXED);
    if (hw < 0) {
        __builtin_cpu_init();
        hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&cn__crc32c_hw, hw, __ATOMIC_RELAXED);
    }
    return hw ? crc32c_hw(crc, p, n) : crc_crc(cn__crc32c_tab, crc, p, n);
}
#else
uint32_t cn_crc32c(uint32_t crc, const void *p, size_t n)
{
    return crc_crc(cn__crc32c_tab, crc, p, n);
}
#endif
