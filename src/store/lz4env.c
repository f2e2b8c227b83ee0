/* The LZ4 envelope: a blob's logical bytes cut into fixed 64 KiB blocks,
 * each LZ4-compressed (or kept as is when that would not shrink it), with an
 * index of stored block sizes at the end so a range read seeks to its first
 * block.  Layout (all integers little-endian; docs/store.md):
 *
 *   header  16 B  "CNZ4" | version=1 u8 | block_log u8 | flags u16 = 0 | 0 u64
 *   blocks        stored blocks, back to back
 *   index   4n B  u32 per block: bit 31 = stored uncompressed, bits 0..30 = size
 *   trailer 32 B  raw_len u64 | n_blocks u64 | crc32c(index) u32 | 0 u32 |
 *                 "CNZE" | crc32c(first 28 trailer bytes) u32
 *
 * Decoding validates everything against the file size before allocating or
 * trusting a count; any inconsistency is CN_E_CORRUPT.
 */
#include "store/store_int.h"

#include <errno.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/util.h"

static const uint8_t hdr_magic[4] = { 'C', 'N', 'Z', '4' };
static const uint8_t tr_magic[4] = { 'C', 'N', 'Z', 'E' };
#define ENV_VERSION 1
#define ENV_MIN_LOG 12
#define ENV_MAX_LOG 20
#define INDEX_CHUNK 4096 /* index entries read at a time */

static void put_u32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64le(const uint8_t *p)
{
    return (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32;
}

void cn__env_header(uint8_t out[CN__ENV_HEADER_LEN])
{
    memset(out, 0, CN__ENV_HEADER_LEN);
    memcpy(out, hdr_magic, 4);
    out[4] = ENV_VERSION;
    out[5] = CN__ENV_BLOCK_LOG;
}

void cn__env_trailer(uint64_t raw_len, uint64_t n_blocks, uint32_t index_crc,
                     uint8_t out[CN__ENV_TRAILER_LEN])
{
    memset(out, 0, CN__ENV_TRAILER_LEN);
    put_u64le(out, raw_len);
    put_u64le(out + 8, n_blocks);
    put_u32le(out + 16, index_crc);
    memcpy(out + 24, tr_magic, 4);
    put_u32le(out + 28, cn_crc32c(0, out, 28));
}

cn_err_t cn__env_open(int fd, uint64_t size, cn__env_t *e)
{
    uint8_t hdr[CN__ENV_HEADER_LEN], tr[CN__ENV_TRAILER_LEN];
    memset(e, 0, sizeof *e);
    if (size < CN__ENV_HEADER_LEN + CN__ENV_TRAILER_LEN)
        return CN_E_CORRUPT;
    CN_TRY(cn_pread_full(fd, hdr, sizeof hdr, 0, CN_E_CORRUPT));
    CN_TRY(cn_pread_full(fd, tr, sizeof tr, size - CN__ENV_TRAILER_LEN, CN_E_CORRUPT));
    if (memcmp(hdr, hdr_magic, 4) != 0 || hdr[4] != ENV_VERSION || hdr[5] < ENV_MIN_LOG ||
        hdr[5] > ENV_MAX_LOG)
        return CN_E_CORRUPT;
    if (memcmp(tr + 24, tr_magic, 4) != 0 || get_u32le(tr + 28) != cn_crc32c(0, tr, 28))
        return CN_E_CORRUPT;
    e->block_log = hdr[5];
    e->raw_len = get_u64le(tr);
    e->n_blocks = get_u64le(tr + 8);
    e->index_crc = get_u32le(tr + 16);
    uint64_t bsz = 1ull << e->block_log;
    uint64_t want_blocks = e->raw_len / bsz + (e->raw_len % bsz != 0);
    if (e->n_blocks != want_blocks)
        return CN_E_CORRUPT;
    /* Every block takes at least one stored byte; bound n before using it. */
    uint64_t body = size - CN__ENV_HEADER_LEN - CN__ENV_TRAILER_LEN;
    if (e->n_blocks > body / 5)
        return CN_E_CORRUPT;
    e->index_off = size - CN__ENV_TRAILER_LEN - 4 * e->n_blocks;
    return CN_OK;
}

/* Raw length of block i. */
static uint64_t block_raw_len(const cn__env_t *e, uint64_t i)
{
    uint64_t bsz = 1ull << e->block_log;
    return i + 1 < e->n_blocks ? bsz : e->raw_len - i * bsz;
}

/* Reads index entries [first, first+n) into out. */
static cn_err_t read_index(int fd, const cn__env_t *e, uint64_t first, size_t n, uint8_t *out)
{
    return cn_pread_full(fd, out, 4 * n, e->index_off + 4 * first, CN_E_CORRUPT);
}

cn_err_t cn__env_read(int fd, const cn__env_t *e, uint64_t off, uint64_t n, cn_store_sink_fn sink,
                      void *ctx, cn_blake3_t *h)
{
    uint64_t bsz = 1ull << e->block_log;
    uint64_t first = n ? off / bsz : 0;
    uint64_t stored_off = CN__ENV_HEADER_LEN;
    uint32_t crc = 0;
    cn_err_t rc = CN_OK;
    int zmax = LZ4_compressBound((int)bsz);
    uint8_t *ix = malloc(4 * INDEX_CHUNK);
    uint8_t *z = malloc((size_t)zmax);
    uint8_t *raw = malloc((size_t)bsz);
    if (!ix || !z || !raw) {
        rc = -ENOMEM;
        goto out;
    }
    /* Pass 1: the whole index — its checksum, the stored size it implies,
     * and the file offset of the first block served. */
    uint64_t total = CN__ENV_HEADER_LEN;
    for (uint64_t i = 0; i < e->n_blocks; i += INDEX_CHUNK) {
        size_t k = e->n_blocks - i < INDEX_CHUNK ? (size_t)(e->n_blocks - i) : INDEX_CHUNK;
        if ((rc = read_index(fd, e, i, k, ix)) < 0)
            goto out;
        crc = cn_crc32c(crc, ix, 4 * k);
        for (size_t j = 0; j < k; j++) {
            uint32_t ent = get_u32le(ix + 4 * j);
            uint32_t sz = ent & ~CN__ENV_RAW_FLAG;
            bool raw_blk = ent & CN__ENV_RAW_FLAG;
            uint64_t rl = block_raw_len(e, i + j);
            if (sz == 0 || (raw_blk ? sz != rl : (int64_t)sz > zmax)) {
                rc = CN_E_CORRUPT;
                goto out;
            }
            if (i + j == first)
                stored_off = total;
            total += sz;
        }
    }
    if (crc != e->index_crc || total != e->index_off) {
        rc = CN_E_CORRUPT;
        goto out;
    }
    /* Pass 2: decode the blocks that hold [off, off+n). */
    uint64_t end = off + n;
    for (uint64_t b = first; n && b * bsz < end; b++) {
        uint8_t ent_b[4];
        if ((rc = read_index(fd, e, b, 1, ent_b)) < 0)
            goto out;
        uint32_t ent = get_u32le(ent_b);
        uint32_t sz = ent & ~CN__ENV_RAW_FLAG;
        uint64_t rl = block_raw_len(e, b);
        if (ent & CN__ENV_RAW_FLAG) {
            if ((rc = cn_pread_full(fd, raw, sz, stored_off, CN_E_CORRUPT)) < 0)
                goto out;
        } else {
            if ((rc = cn_pread_full(fd, z, sz, stored_off, CN_E_CORRUPT)) < 0)
                goto out;
            int got = LZ4_decompress_safe((const char *)z, (char *)raw, (int)sz, (int)bsz);
            if (got < 0 || (uint64_t)got != rl) {
                rc = CN_E_CORRUPT;
                goto out;
            }
        }
        stored_off += sz;
        uint64_t bstart = b * bsz;
        uint64_t from = off > bstart ? off - bstart : 0;
        uint64_t to = end - bstart < rl ? end - bstart : rl;
        cn_blake3_update(h, raw + from, (size_t)(to - from));
        if ((rc = sink(ctx, raw + from, (size_t)(to - from))) != CN_OK)
            goto out;
    }
out:
    free(ix);
    free(z);
    free(raw);
    return rc;
}
