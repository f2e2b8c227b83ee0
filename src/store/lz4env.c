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

#include <assert.h>
#include <errno.h>
#include <lz4.h>
#include <pthread.h>
#include <stdatomic.h>
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

static void envix_destroy(cn_cent_t *ent)
{
    cn__envix_t *ix = (cn__envix_t *)ent;
    free(ix->off);
    free(ix->raw);
    free(ix);
}

void cn__envix_put(cn__envix_t *ix)
{
    if (ix)
        cn_cent_release(&ix->ent);
}

/* Bytes an index of n blocks holds (what the cache's budget counts). */
static size_t envix_bytes(uint64_t n)
{
    return sizeof(cn__envix_t) + 8 * ((size_t)n + 1) + ((size_t)n + 7) / 8;
}

/* Reads all of ix->e's index from fd and checks it: its checksum, every
 * stored size against its block's raw length or LZ4's bound, and their sum
 * against the index's offset; keeps the offsets of blocks [ix->first,
 * ix->first + ix->count). */
static cn_err_t index_fill(int fd, cn__envix_t *ix, uint8_t *buf)
{
    const cn__env_t *e = &ix->e;
    int zmax = LZ4_compressBound(1 << e->block_log);
    uint64_t total = CN__ENV_HEADER_LEN;
    uint32_t crc = 0;
    for (uint64_t i = 0; i < e->n_blocks; i += INDEX_CHUNK) {
        size_t k = e->n_blocks - i < INDEX_CHUNK ? (size_t)(e->n_blocks - i) : INDEX_CHUNK;
        CN_TRY(read_index(fd, e, i, k, buf));
        crc = cn_crc32c(crc, buf, 4 * k);
        for (size_t j = 0; j < k; j++) {
            uint32_t ent = get_u32le(buf + 4 * j);
            uint32_t sz = ent & ~CN__ENV_RAW_FLAG;
            bool raw_blk = ent & CN__ENV_RAW_FLAG;
            if (sz == 0 || (raw_blk ? sz != block_raw_len(e, i + j) : (int64_t)sz > zmax))
                return CN_E_CORRUPT;
            uint64_t b = i + j - ix->first; /* wraps below first: not kept */
            if (b <= ix->count)
                ix->off[b] = total;
            if (b < ix->count && raw_blk)
                ix->raw[b / 8] |= (uint8_t)(1u << (b % 8));
            total += sz;
        }
    }
    if (e->n_blocks - ix->first <= ix->count)
        ix->off[e->n_blocks - ix->first] = total;
    return crc == e->index_crc && total == e->index_off ? CN_OK : CN_E_CORRUPT;
}

cn_err_t cn__env_index(int fd, const cn__env_t *e, uint64_t first, uint64_t count,
                       cn__envix_t **out)
{
    *out = NULL;
    if (first > e->n_blocks || count > e->n_blocks - first || count > CN__ENVIX_MAX_BLOCKS)
        return CN_E_INVALID;
    cn__envix_t *ix = calloc(1, sizeof *ix);
    uint8_t *buf = malloc(4 * INDEX_CHUNK);
    cn_err_t rc = ix && buf ? CN_OK : -ENOMEM;
    if (rc == CN_OK) {
        ix->e = *e;
        ix->first = first;
        ix->count = count;
        atomic_init(&ix->ent.refs, 1);
        ix->ent.destroy = envix_destroy;
        ix->off = malloc(8 * ((size_t)count + 1));
        ix->raw = calloc(1, (size_t)count / 8 + 1);
        rc = ix->off && ix->raw ? index_fill(fd, ix, buf) : -ENOMEM;
    }
    free(buf);
    if (rc == CN_OK)
        *out = ix;
    else if (ix)
        cn__envix_put(ix);
    return rc;
}

/* Decodes block first + b (raw length rl) of ix into raw, through z. */
static cn_err_t block_decode(int fd, const cn__envix_t *ix, uint64_t b, uint64_t rl, uint8_t *z,
                             uint8_t *raw)
{
    assert(b < ix->count);
    uint64_t sz = ix->off[b + 1] - ix->off[b];
    if (ix->raw[b / 8] & (1u << (b % 8)))
        return cn_pread_full(fd, raw, (size_t)sz, ix->off[b], CN_E_CORRUPT);
    CN_TRY(cn_pread_full(fd, z, (size_t)sz, ix->off[b], CN_E_CORRUPT));
    int got =
        LZ4_decompress_safe((const char *)z, (char *)raw, (int)sz, (int)(1u << ix->e.block_log));
    return got >= 0 && (uint64_t)got == rl ? CN_OK : CN_E_CORRUPT;
}

/* ---- decode buffers --------------------------------------------------------------
 * Each thread decodes through a pair of buffers of its own, sized for the
 * blocks this store writes and kept for its next read.  The thread-key
 * destructor frees them when the thread exits; the main thread's, still
 * reachable from its thread-local pointer, go with the process.  A read
 * nested in another on the same thread (a sink that reads an envelope), a
 * read of larger blocks, and any read on a thread that could not register
 * them use a pair of their own, freed before they return. */
typedef struct env_bufs {
    uint8_t *z, *raw;
    size_t zcap, rawcap;
    bool busy; /* a read on this thread is decoding through them */
} env_bufs_t;

static pthread_key_t bufs_key;
static pthread_once_t bufs_once = PTHREAD_ONCE_INIT;
static bool bufs_keyed;
static _Thread_local env_bufs_t *thread_bufs;

static void bufs_free(void *p)
{
    env_bufs_t *b = p;
    if (b == thread_bufs)
        thread_bufs = NULL; /* a later destructor that reads starts afresh */
    free(b->z);
    free(b->raw);
    free(b);
}

static void bufs_key_create(void)
{
    bufs_keyed = pthread_key_create(&bufs_key, bufs_free) == 0;
}

/* This thread's pair, not busy, registered for freeing at its exit; NULL
 * when busy or it cannot be made. */
static env_bufs_t *bufs_thread(void)
{
    pthread_once(&bufs_once, bufs_key_create);
    env_bufs_t *b = thread_bufs;
    if (b || !bufs_keyed)
        return b && !b->busy ? b : NULL;
    if (!(b = calloc(1, sizeof *b)))
        return NULL;
    if (pthread_setspecific(bufs_key, b) != 0) {
        free(b);
        return NULL;
    }
    return thread_bufs = b;
}

/* At least n bytes at *p (capacity *cap); what it held is not kept. */
static cn_err_t bufs_grow(uint8_t **p, size_t *cap, size_t n)
{
    if (*cap >= n)
        return CN_OK;
    free(*p);
    *p = malloc(n);
    *cap = *p ? n : 0;
    return *p ? CN_OK : -ENOMEM;
}

static cn_err_t env_decode(int fd, const cn__envix_t *ix, uint64_t off, uint64_t n,
                           cn_store_sink_fn sink, void *ctx, cn_blake3_t *h, env_bufs_t *bufs)
{
    const cn__env_t *e = &ix->e;
    uint64_t bsz = 1ull << e->block_log;
    cn_err_t rc = bufs_grow(&bufs->z, &bufs->zcap, (size_t)LZ4_compressBound((int)bsz));
    if (rc == CN_OK)
        rc = bufs_grow(&bufs->raw, &bufs->rawcap, (size_t)bsz);
    uint8_t *z = bufs->z, *raw = bufs->raw;
    uint64_t end = off + n;
    for (uint64_t b = n ? off / bsz : 0; rc == CN_OK && n && b * bsz < end; b++) {
        uint64_t rl = block_raw_len(e, b);
        rc = b >= ix->first && b - ix->first < ix->count
                 ? block_decode(fd, ix, b - ix->first, rl, z, raw)
                 : CN_E_INVALID; /* outside what ix holds: the caller's error */
        uint64_t bstart = b * bsz;
        uint64_t from = off > bstart ? off - bstart : 0;
        uint64_t to = end - bstart < rl ? end - bstart : rl;
        if (rc == CN_OK) {
            if (h)
                cn_blake3_update(h, raw + from, (size_t)(to - from));
            rc = sink(ctx, raw + from, (size_t)(to - from));
        }
    }
    return rc;
}

cn_err_t cn__env_read(int fd, const cn__envix_t *ix, uint64_t off, uint64_t n,
                      cn_store_sink_fn sink, void *ctx, cn_blake3_t *h)
{
    /* Blocks larger than this store writes are some other writer's: their
     * buffers are not kept, so what a thread keeps stays bounded. */
    env_bufs_t *b = ix->e.block_log <= CN__ENV_BLOCK_LOG ? bufs_thread() : NULL;
    if (!b) {
        env_bufs_t own = { 0 };
        cn_err_t rc = env_decode(fd, ix, off, n, sink, ctx, h, &own);
        free(own.z);
        free(own.raw);
        return rc;
    }
    b->busy = true;
    cn_err_t rc = env_decode(fd, ix, off, n, sink, ctx, h, b);
    b->busy = false;
    return rc;
}

/* ---- the store's cache of indexes ------------------------------------------------ */

/* d's file shape (size bytes, e) as the cache's key (CN__ENVIX_KEY_LEN):
 * an index is found again only for the same digest, file size, index
 * checksum, block count and raw length. */
static void envix_key(uint8_t *key, const cn_digest_t *d, uint64_t size, const cn__env_t *e)
{
    memcpy(key, d->b, CN_DIGEST_LEN);
    put_u64le(key + CN_DIGEST_LEN, size);
    put_u32le(key + CN_DIGEST_LEN + 8, e->index_crc);
    put_u64le(key + CN_DIGEST_LEN + 12, e->n_blocks);
    put_u64le(key + CN_DIGEST_LEN + 20, e->raw_len);
}

_Static_assert(CN__ENVIX_SLOTS % CN_CACHE_WAYS == 0, "whole sets of the cache");

void cn__envix_open(cn_store_t *s)
{
    (void)cn_cache_init(&s->envix, CN__ENVIX_SLOTS, CN__ENVIX_BUDGET); /* -ENOMEM: off */
}

cn_err_t cn__envix_get(cn_store_t *s, const cn_digest_t *d, int fd, uint64_t size,
                       const cn__env_t *e, uint64_t off, uint64_t n, cn__envix_t **out)
{
    if (e->n_blocks > CN__ENVIX_MAX_BLOCKS) { /* too large to keep: the range's blocks only */
        uint64_t bsz = 1ull << e->block_log, first = n ? off / bsz : 0;
        uint64_t last = n ? (off + n - 1) / bsz + 1 : 0;
        return cn__env_index(fd, e, first, last - first, out);
    }
    uint8_t key[CN__ENVIX_KEY_LEN];
    envix_key(key, d, size, e);
    cn_cent_t *hit = cn_cache_find(&s->envix, (const char *)key, sizeof key, 0, 0);
    if (hit) {
        *out = (cn__envix_t *)hit;
        return CN_OK;
    }
    /* Built outside the cache's lock: reads of other blobs go on meanwhile. */
    CN_TRY(cn__env_index(fd, e, 0, e->n_blocks, out));
    atomic_fetch_add_explicit(&s->envix_builds, 1, memory_order_relaxed);
    cn__envix_t *ix = *out;
    memcpy(ix->kbuf, key, sizeof key);
    ix->ent.key = (const char *)ix->kbuf;
    ix->ent.klen = sizeof key;
    ix->ent.hash = cn_cache_hash(ix->ent.key, ix->ent.klen);
    ix->ent.cost = envix_bytes(e->n_blocks);
    cn_cache_offer(&s->envix, &ix->ent);
    return CN_OK;
}

uint64_t cn__store_envix_builds(cn_store_t *s)
{
    return atomic_load_explicit(&s->envix_builds, memory_order_relaxed);
}

void cn__envix_close(cn_store_t *s)
{
    cn_cache_destroy(&s->envix);
}
