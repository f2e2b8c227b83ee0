/* Unit tests of pack files (src/store/pack.c): the record format against
 * golden bytes, the decoder's bounds, the write path (no inode per small
 * blob), reads, delete and sweep, recovery of torn tails (truncated header,
 * truncated body, CRC mismatch, digest mismatch), an index entry never
 * without its bytes, a flipped byte reported and never served, the upgrade
 * of a data directory with small blobs as files (then compacted beside
 * them), a crash loop that kills a writer at random points and at each point
 * between append, sync and index, and compaction (C1-C6 in sweep.c): a pass
 * over packs with 10 % live, moves that race a delete, a corrupt record, and
 * SIGKILL at each compaction hook.
 *
 * Run with an argument "faults" (tests/proof/test_pack_faults.py does, with
 * the LD_PRELOAD fault shim and CN_FAULT_CTL set) it checks ENOSPC on the
 * pack append and EIO from its fdatasync instead, then ENOSPC during
 * compaction. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/util.h"
#include "cn_test.h"
#include "meta/sql/store.h"
#include "meta/test_target.h"
#include "store/store_int.h"
#include "store/storetest.h"

#define PACK_MAX (64u * 1024)

/* A store with meta and packing on (the meta handle closes with it). */
typedef struct pstore {
    cn_meta_t *meta;
    cn_store_t *s;
} pstore_t;

static cn_err_t ps_open(const char *data, uint64_t pack_max, pstore_t *ps)
{
    cn_meta_opts_t mo = { .no_sync = true };
    memset(ps, 0, sizeof *ps);
    CN_TRY(cn_meta_open(cn_test_meta_for(data), &mo, &ps->meta));
    cn_store_opts_t o = { .meta = ps->meta, .pack_max_bytes = pack_max };
    cn_err_t rc = cn_store_open(data, &o, &ps->s);
    if (rc < 0) {
        cn_meta_close(ps->meta);
        ps->meta = NULL;
    }
    return rc;
}

static void ps_close(pstore_t *ps)
{
    cn_store_close(ps->s);
    cn_meta_close(ps->meta);
    memset(ps, 0, sizeof *ps);
}

static void pack_path(const char *data, unsigned id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/packs/%08x.pack", data, id);
}

static off_t file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

static void append_bytes(const char *p, const void *b, size_t n)
{
    int fd = open(p, O_WRONLY | O_APPEND);
    CN_CHECK(fd >= 0);
    CN_CHECK_EQ(cn_write_full(fd, b, n), 0);
    close(fd);
}

/* Reads blob d whole and checks it against the bytes it was made of. */
static bool reads_back(cn_store_t *s, const cn_digest_t *d, const uint8_t *want, size_t n)
{
    uint8_t *buf = malloc(n + 1);
    size_t got = 0;
    cn_digest_t slice;
    cn_err_t rc = cn_store_read_range_buf(s, d, 0, buf, n + 1, &got, &slice);
    bool ok = rc == CN_OK && got == n && memcmp(buf, want, n) == 0 &&
              memcmp(slice.b, d->b, CN_DIGEST_LEN) == 0;
    free(buf);
    return ok;
}

/* ---- record format ---------------------------------------------------------- */

static void test_record_golden(void)
{
    /* "abc" under the digest 00 01 .. 1f: these bytes are the format
     * (docs/store.md); a change to the encoder must change this test.  The
     * CRC32C (61af0778 = 0x7807af61 little-endian) was computed apart from
     * cairn, by a bitwise reference over header bytes 0..43 then "abc". */
    static const char golden[] = "434e503103000000000000000001020304050607"
                                 "08090a0b0c0d0e0f101112131415161718191a1b"
                                 "1c1d1e1f61af0778616263";
    cn_digest_t d;
    for (int i = 0; i < CN_DIGEST_LEN; i++)
        d.b[i] = (uint8_t)i;
    uint8_t rec[CN__PACK_REC_HDR + 3];
    cn__pack_rec_header(&d, CN_STORE_RAW, (const uint8_t *)"abc", 3, rec);
    memcpy(rec + CN__PACK_REC_HDR, "abc", 3);
    char hex[2 * sizeof rec + 1];
    cn_hex_encode(rec, sizeof rec, hex);
    CN_CHECK_STR(hex, golden);

    cn__pack_rec_t r;
    size_t used = 0;
    CN_CHECK_EQ(cn__pack_rec_decode(rec, sizeof rec, PACK_MAX, &r, &used), CN_OK);
    CN_CHECK_EQ(used, sizeof rec);
    CN_CHECK_EQ(r.len, 3);
    CN_CHECK(r.payload == rec + CN__PACK_REC_HDR);
    CN_CHECK_MEM(r.d.b, d.b, CN_DIGEST_LEN);
}

static void test_record_bounds(void)
{
    cn_digest_t d = { { 7 } };
    uint8_t p[100];
    fill(p, sizeof p, 1);
    uint8_t rec[CN__PACK_REC_HDR + sizeof p];
    cn__pack_rec_header(&d, CN_STORE_RAW, p, sizeof p, rec);
    memcpy(rec + CN__PACK_REC_HDR, p, sizeof p);
    cn__pack_rec_t r;
    size_t used;
    /* Every cut is "need more", never a read past the end. */
    for (size_t cut = 0; cut < sizeof rec; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* ASan sees any overread */
        memcpy(copy, rec, cut);
        CN_CHECK_EQ(cn__pack_rec_decode(copy, cut, PACK_MAX, &r, &used), CN_E_AGAIN);
        free(copy);
    }
    /* A length over the limit is refused before it is trusted. */
    CN_CHECK_EQ(cn__pack_rec_decode(rec, sizeof rec, 99, &r, &used), CN_E_CORRUPT);
    uint8_t bad[sizeof rec];
    memcpy(bad, rec, sizeof rec);
    bad[CN__PACK_REC_HDR + 5] ^= 1; /* payload byte: CRC */
    CN_CHECK_EQ(cn__pack_rec_decode(bad, sizeof bad, PACK_MAX, &r, &used), CN_E_CORRUPT);
    memcpy(bad, rec, sizeof rec);
    bad[9] = 1; /* unknown flags */
    CN_CHECK_EQ(cn__pack_rec_decode(bad, sizeof bad, PACK_MAX, &r, &used), CN_E_CORRUPT);
    memcpy(bad, rec, sizeof rec);
    bad[0] = 'X';
    CN_CHECK_EQ(cn__pack_rec_decode(bad, sizeof bad, PACK_MAX, &r, &used), CN_E_CORRUPT);
}

/* ---- the store with packs ---------------------------------------------------- */

enum {
    N_SMALL = 200
};

/* Puts N_SMALL small blobs of seeds base.. (sizes 0 .. ~8 KiB). */
static void put_small(cn_store_t *s, uint32_t base, cn_digest_t *ds)
{
    for (uint32_t i = 0; i < N_SMALL; i++) {
        uint8_t b[8192];
        size_t n = (i * 41) % sizeof b;
        fill(b, n, base + i);
        CN_CHECK_EQ(cn_store_put(s, b, n, NULL, &ds[i]), 0);
    }
}

static bool small_ok(cn_store_t *s, uint32_t base, const cn_digest_t *ds, uint32_t i)
{
    uint8_t b[8192];
    size_t n = (i * 41) % sizeof b;
    fill(b, n, base + i);
    return reads_back(s, &ds[i], b, n);
}

/* A fresh data dir with packs on, open in *ps, holding N_SMALL small blobs
 * of seeds base.. (their digests in ds). */
static char *packed_open(uint32_t base, cn_digest_t *ds, pstore_t *ps)
{
    char *data = mkdata();
    CN_CHECK_EQ(ps_open(data, PACK_MAX, ps), 0);
    put_small(ps->s, base, ds);
    return data;
}

static void test_write_read(void)
{
    static cn_digest_t ds[N_SMALL];
    pstore_t ps;
    char *data = packed_open(1000, ds, &ps);
    /* No inode per blob: one pack, no blob files, nothing staged. */
    CN_CHECK_EQ(count_in(data, "packs"), 1);
    CN_CHECK_EQ(count_in(data, "blobs"), 0);
    CN_CHECK_EQ(count_in(data, "staging"), 0);
    for (uint32_t i = 0; i < N_SMALL; i++)
        CN_CHECK(small_ok(ps.s, 1000, ds, i));
    /* ranges and slice digests */
    uint8_t b[8192], got[64];
    fill(b, 41 * 7, 1007);
    size_t n = 0;
    cn_digest_t slice, want;
    CN_CHECK_EQ(cn_store_read_range_buf(ps.s, &ds[7], 10, got, sizeof got, &n, &slice), 0);
    cn_blake3(b + 10, 64, &want);
    CN_CHECK_EQ(n, 64);
    CN_CHECK_MEM(got, b + 10, 64);
    CN_CHECK_MEM(slice.b, want.b, CN_DIGEST_LEN);
    CN_CHECK_EQ(cn_store_read_range_buf(ps.s, &ds[7], 41 * 7 + 1, got, 1, &n, NULL), CN_E_RANGE);
    cn_store_stat_t st;
    CN_CHECK_EQ(cn_store_stat(ps.s, &ds[7], &st), 0);
    CN_CHECK_EQ(st.len, 41 * 7);
    CN_CHECK_EQ(cn_store_verify(ps.s, &ds[7]), 0);
    /* open_fd / fd_get: a private copy; fd_get_at: the pack at an offset */
    int fd = -1;
    uint64_t len = 0, off = 0;
    void *h = NULL;
    CN_CHECK_EQ(cn_store_open_fd(ps.s, &ds[7], &fd, &len), 0);
    CN_CHECK_EQ(len, 41 * 7);
    CN_CHECK_EQ(pread(fd, got, 64, 10), 64);
    CN_CHECK_MEM(got, b + 10, 64);
    close(fd);
    CN_CHECK_EQ(cn_store_fd_get(ps.s, &ds[7], &fd, &len, &h), 0);
    CN_CHECK(h == NULL); /* a private copy, closed by fd_put */
    CN_CHECK_EQ(pread(fd, got, 64, 10), 64);
    CN_CHECK_MEM(got, b + 10, 64);
    cn_store_fd_put(ps.s, fd, h);
    CN_CHECK_EQ(cn_store_fd_get_at(ps.s, &ds[7], &fd, &off, &len, &h), 0);
    CN_CHECK(off > 0);
    CN_CHECK_EQ(pread(fd, got, 64, (off_t)(off + 10)), 64);
    CN_CHECK_MEM(got, b + 10, 64);
    cn_store_fd_put(ps.s, fd, h);
    /* idempotent: nothing appended twice */
    char pp[1024];
    pack_path(data, 1, pp, sizeof pp);
    off_t before = file_size(pp);
    cn_digest_t again;
    CN_CHECK_EQ(cn_store_put(ps.s, b, 41 * 7, NULL, &again), 0);
    CN_CHECK_EQ(file_size(pp), before);
    /* delete, then reopen: gone stays gone; the rest is there */
    CN_CHECK_EQ(cn_store_delete(ps.s, &ds[7]), 0);
    CN_CHECK_EQ(cn_store_delete(ps.s, &ds[7]), CN_E_NOT_FOUND);
    bool present = true;
    CN_CHECK_EQ(cn_store_have(ps.s, &ds[7], 1, &present), 0);
    CN_CHECK(!present);
    ps_close(&ps);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(cn_store_have(ps.s, &ds[7], 1, &present), 0);
    CN_CHECK(!present);
    for (uint32_t i = 0; i < N_SMALL; i++)
        CN_CHECK(i == 7 || small_ok(ps.s, 1000, ds, i));
    /* a large blob still gets its own file */
    uint8_t *big = malloc(300 * 1024);
    fill(big, 300 * 1024, 5);
    cn_digest_t bd;
    CN_CHECK_EQ(cn_store_put(ps.s, big, 300 * 1024, NULL, &bd), 0);
    CN_CHECK_EQ(count_in(data, "blobs"), 1);
    CN_CHECK(reads_back(ps.s, &bd, big, 300 * 1024));
    free(big);
    ps_close(&ps);
    rmdata(data);
}

static cn_err_t hold_none(void *ctx, const cn_digest_t *d, size_t n, bool *live)
{
    (void)d;
    size_t *asked = ctx;
    *asked += n;
    memset(live, 0, n);
    return CN_OK;
}

static void test_sweep(void)
{
    static cn_digest_t ds[N_SMALL];
    pstore_t ps;
    char *data = packed_open(2000, ds, &ps);
    size_t asked = 0;
    CN_CHECK_EQ(cn_store_register_liveness_batch(ps.s, "none", hold_none, &asked), 0);
    cn_store_sweep_stats_t st;
    CN_CHECK_EQ(cn_store_sweep(ps.s, 3600 * 1000, &st), 0);
    CN_CHECK_EQ(st.young, N_SMALL);
    CN_CHECK_EQ(st.deleted, 0);
    cn_store_guard_t *g = NULL;
    CN_CHECK_EQ(cn_store_guard_acquire(ps.s, &ds[3], &g), 0);
    CN_CHECK_EQ(cn_store_sweep(ps.s, 0, &st), 0);
    CN_CHECK_EQ(st.deleted, N_SMALL - 1);
    CN_CHECK_EQ(st.pinned, 1);
    cn_store_guard_release(g);
    CN_CHECK(small_ok(ps.s, 2000, ds, 3));
    bool present = true;
    CN_CHECK_EQ(cn_store_have(ps.s, &ds[4], 1, &present), 0);
    CN_CHECK(!present);
    ps_close(&ps);
    rmdata(data);
}

/* ---- recovery ------------------------------------------------------------------ */

/* A fresh data dir holding N_SMALL packed blobs of seeds base.. (closed);
 * *pp receives its one pack's path and the result its size. */
static char *packed_dir(uint32_t base, cn_digest_t *ds, char *pp, size_t cap, off_t *size)
{
    pstore_t ps;
    char *data = packed_open(base, ds, &ps);
    ps_close(&ps);
    pack_path(data, 1, pp, cap);
    *size = file_size(pp);
    return data;
}

typedef enum {
    TORN_HEADER,
    TORN_BODY,
    BAD_CRC,
    BAD_DIGEST,
    WHOLE
} tail_t;

/* A record of p[0..n) with digest d, damaged as kind says; *len its size. */
static uint8_t *make_tail(tail_t kind, const uint8_t *p, uint32_t n, size_t *len)
{
    cn_digest_t d;
    cn_blake3(p, n, &d);
    if (kind == BAD_DIGEST)
        d.b[0] ^= 0xff; /* the CRC is right, the digest is not */
    uint8_t *rec = malloc(CN__PACK_REC_HDR + n);
    cn__pack_rec_header(&d, CN_STORE_RAW, p, n, rec);
    memcpy(rec + CN__PACK_REC_HDR, p, n);
    *len = CN__PACK_REC_HDR + n;
    if (kind == TORN_HEADER)
        *len = 20;
    else if (kind == TORN_BODY)
        *len = CN__PACK_REC_HDR + n / 2;
    else if (kind == BAD_CRC)
        rec[CN__PACK_REC_HDR + 1] ^= 0x40;
    return rec;
}

static void recover_case(tail_t kind)
{
    static cn_digest_t ds[N_SMALL];
    char pp[1024];
    off_t good;
    char *data = packed_dir(3000, ds, pp, sizeof pp, &good);
    pstore_t ps;
    uint8_t p[3000];
    fill(p, sizeof p, 77);
    size_t len;
    uint8_t *rec = make_tail(kind, p, sizeof p, &len);
    append_bytes(pp, rec, len);
    free(rec);

    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    for (uint32_t i = 0; i < N_SMALL; i++)
        CN_CHECK(small_ok(ps.s, 3000, ds, i));
    cn_digest_t d;
    cn_blake3(p, sizeof p, &d);
    bool present = false;
    CN_CHECK_EQ(cn_store_have(ps.s, &d, 1, &present), 0);
    if (kind == WHOLE) {
        /* synced but never indexed (a crash between sync and index): kept */
        CN_CHECK(present);
        CN_CHECK(reads_back(ps.s, &d, p, sizeof p));
        CN_CHECK_EQ(file_size(pp), good + (off_t)len);
    } else {
        CN_CHECK(!present);
        CN_CHECK_EQ(file_size(pp), good); /* the torn tail is cut */
    }
    /* the next write lands after what was kept, and survives a reopen */
    uint8_t q[500];
    fill(q, sizeof q, 78);
    cn_digest_t qd;
    CN_CHECK_EQ(cn_store_put(ps.s, q, sizeof q, NULL, &qd), 0);
    ps_close(&ps);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK(reads_back(ps.s, &qd, q, sizeof q));
    ps_close(&ps);
    rmdata(data);
}

static void test_recover_torn_header(void)
{
    recover_case(TORN_HEADER);
}
static void test_recover_torn_body(void)
{
    recover_case(TORN_BODY);
}
static void test_recover_bad_crc(void)
{
    recover_case(BAD_CRC);
}
static void test_recover_bad_digest(void)
{
    recover_case(BAD_DIGEST);
}
static void test_recover_unindexed(void)
{
    recover_case(WHOLE);
}

/* A pack cut below what its index covers: the entries past the cut go, the
 * rest stays served — never an index entry without its bytes. */
static void test_index_never_without_bytes(void)
{
    static cn_digest_t ds[N_SMALL];
    char pp[1024];
    off_t size;
    char *data = packed_dir(4000, ds, pp, sizeof pp, &size);
    pstore_t ps;
    CN_CHECK_EQ(truncate(pp, size / 2), 0);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    size_t kept = 0;
    for (uint32_t i = 0; i < N_SMALL; i++) {
        bool present = false;
        CN_CHECK_EQ(cn_store_have(ps.s, &ds[i], 1, &present), 0);
        if (present) {
            kept++;
            CN_CHECK(small_ok(ps.s, 4000, ds, i));
        }
    }
    CN_CHECK(kept > 0 && kept < N_SMALL);
    ps_close(&ps);
    rmdata(data);
}

/* A flipped byte inside an indexed record: reported, never served. */
static void test_flipped_byte(void)
{
    char *data = mkdata();
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    uint8_t p[4096];
    fill(p, sizeof p, 9);
    cn_digest_t d;
    CN_CHECK_EQ(cn_store_put(ps.s, p, sizeof p, NULL, &d), 0);
    char pp[1024];
    pack_path(data, 1, pp, sizeof pp);
    int fd = open(pp, O_RDWR);
    uint8_t c;
    CN_CHECK_EQ(pread(fd, &c, 1, CN__PACK_REC_HDR + 100), 1);
    c ^= 1;
    CN_CHECK_EQ(pwrite(fd, &c, 1, CN__PACK_REC_HDR + 100), 1);
    close(fd);
    uint8_t got[16];
    size_t n = 99;
    CN_CHECK_EQ(cn_store_read_range_buf(ps.s, &d, 0, got, sizeof got, &n, NULL), CN_E_CORRUPT);
    CN_CHECK_EQ(n, 0);
    CN_CHECK_EQ(cn_store_verify(ps.s, &d), CN_E_CORRUPT);
    int f = -1;
    uint64_t len;
    CN_CHECK_EQ(cn_store_open_fd(ps.s, &d, &f, &len), CN_E_CORRUPT);
    /* Zero-copy reads hash a record on its first use: nothing handed out. */
    uint64_t off = 0;
    void *h = NULL;
    f = -1;
    CN_CHECK_EQ(cn_store_fd_get_at(ps.s, &d, &f, &off, &len, &h), CN_E_CORRUPT);
    CN_CHECK_EQ(f, -1);
    CN_CHECK_EQ(cn_store_open_fd_at(ps.s, &d, &f, &off, &len), CN_E_CORRUPT);
    CN_CHECK_EQ(f, -1);
    ps_close(&ps);
    rmdata(data);
}

/* P9: a zero-copy read is the pack's own inode at the payload's offset,
 * without a copy; a file blob comes at offset 0. */
static void test_zero_copy_at(void)
{
    static cn_digest_t ds[N_SMALL];
    pstore_t ps;
    char *data = packed_open(1500, ds, &ps);
    char pp[1024];
    pack_path(data, 1, pp, sizeof pp);
    struct stat pack_st, fd_st;
    CN_CHECK_EQ(stat(pp, &pack_st), 0);
    cn__pack_live_t *ents = NULL;
    size_t n = 0;
    CN_CHECK_EQ(cn__pack_live_list(ps.s, 1, &ents, &n), 0);
    CN_CHECK_EQ(n, N_SMALL);
    for (uint32_t i = 0; i < N_SMALL; i += 7) {
        for (int round = 0; round < 2; round++) { /* hashed, then marked */
            int fd = -1;
            uint64_t off = 0, len = 0;
            void *h = NULL;
            CN_CHECK_EQ(cn_store_fd_get_at(ps.s, &ds[i], &fd, &off, &len, &h), 0);
            CN_CHECK(fstat(fd, &fd_st) == 0 && fd_st.st_ino == pack_st.st_ino);
            uint64_t rec = UINT64_MAX;
            for (size_t k = 0; k < n; k++)
                if (!memcmp(ents[k].d.b, ds[i].b, CN_DIGEST_LEN))
                    rec = ents[k].off;
            CN_CHECK_EQ(off, rec + CN__PACK_REC_HDR);
            uint8_t want[8192], got[8192];
            size_t wn = (i * 41) % sizeof want;
            fill(want, wn, 1500 + i);
            CN_CHECK_EQ(len, wn);
            CN_CHECK(pread(fd, got, wn, (off_t)off) == (ssize_t)wn && !memcmp(got, want, wn));
            cn_store_fd_put(ps.s, fd, h);
            CN_CHECK_EQ(cn_store_open_fd_at(ps.s, &ds[i], &fd, &off, &len), 0);
            CN_CHECK(pread(fd, got, wn, (off_t)off) == (ssize_t)wn && !memcmp(got, want, wn));
            close(fd);
        }
    }
    free(ents);
    /* A blob over the threshold is a file: offset 0. */
    static uint8_t big[PACK_MAX + 1];
    fill(big, sizeof big, 77);
    cn_digest_t bd;
    CN_CHECK_EQ(cn_store_put(ps.s, big, sizeof big, NULL, &bd), 0);
    int fd = -1;
    uint64_t off = 9, len = 0;
    CN_CHECK_EQ(cn_store_open_fd_at(ps.s, &bd, &fd, &off, &len), 0);
    CN_CHECK(off == 0 && len == sizeof big);
    CN_CHECK(fstat(fd, &fd_st) == 0 && fd_st.st_ino != pack_st.st_ino);
    close(fd);
    ps_close(&ps);
    rmdata(data);
}

/* A data directory written without packs: its files are served, new small
 * blobs go into packs. */
static void test_upgrade(void)
{
    char *data = mkdata();
    pstore_t ps;
    static cn_digest_t old[N_SMALL], fresh[N_SMALL];
    /* As the tree before packs left it: the store component at schema
     * version 1 (pins only), small blobs as files through the journal. */
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(data), &mo, &ps.meta), 0);
    CN_CHECK_EQ(cn_meta_migrate(ps.meta, "store", cn__sql_store_set.schema, 1), 0);
    int64_t version = 0;
    CN_CHECK_EQ(cn_meta_schema_version(ps.meta, "store", &version), 0);
    CN_CHECK_EQ(version, 1);
    cn_meta_close(ps.meta);
    CN_CHECK_EQ(cn_store_open(data, NULL, &ps.s), 0);
    put_small(ps.s, 5000, old);
    cn_store_close(ps.s);
    size_t files = count_in(data, "blobs");
    CN_CHECK(files >= N_SMALL - 1); /* the empty blob may repeat */
    CN_CHECK_EQ(count_in(data, "packs"), 0);

    /* migrates 1 -> the last step (v3: usage totals, v4: blob rows) */
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(cn_meta_schema_version(ps.meta, "store", &version), 0);
    CN_CHECK_EQ(version, cn__sql_store_set.schema[cn__sql_store_set.nschema - 1].version);
    for (uint32_t i = 0; i < N_SMALL; i++)
        CN_CHECK(small_ok(ps.s, 5000, old, i));
    put_small(ps.s, 6000, fresh);
    /* an old blob put again is refreshed where it is, not packed (P4: its
     * directory was there at open, so the tree is probed) */
    char pack1[512];
    pack_path(data, 1, pack1, sizeof pack1);
    off_t packed = file_size(pack1);
    put_small(ps.s, 5000, old);
    CN_CHECK_EQ(file_size(pack1), packed);
    CN_CHECK_EQ(count_in(data, "blobs"), files); /* the new ones went to the pack */
    CN_CHECK_EQ(count_in(data, "packs"), 1);
    /* The usage totals (docs/store.md): the first open since step v3
     * counted the old files; the new digests count once each, by their
     * pack rows; the old ones put again count nothing. */
    size_t distinct = files;
    for (uint32_t i = 0; i < N_SMALL; i++) {
        bool seen = false;
        for (uint32_t j = 0; j < N_SMALL && !seen; j++)
            seen = !memcmp(fresh[i].b, old[j].b, CN_DIGEST_LEN) ||
                   (j < i && !memcmp(fresh[i].b, fresh[j].b, CN_DIGEST_LEN));
        distinct += !seen;
    }
    uint64_t ub = 0, uy = 0;
    CN_CHECK_EQ(cn_store_usage(ps.s, &ub, &uy), 0);
    CN_CHECK_EQ(ub, distinct);
    CN_CHECK(uy > 0);
    ps_close(&ps);
    /* Packs on disk are served even with packing off for new blobs. */
    CN_CHECK_EQ(ps_open(data, 0, &ps), 0);
    for (uint32_t i = 0; i < N_SMALL; i++)
        CN_CHECK(small_ok(ps.s, 6000, fresh, i) && small_ok(ps.s, 5000, old, i));
    ps_close(&ps);
    /* Compaction beside the old files: most new blobs deleted, their pack
     * rewritten once closed; old files and the rest are still served. */
    setenv("CAIRN_TEST_PACK_FILE_MAX", "1", 1); /* every batch rolls: pack 1 closes */
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    unsetenv("CAIRN_TEST_PACK_FILE_MAX");
    for (uint32_t i = 0; i < N_SMALL; i++)
        if (i % 10)
            CN_CHECK_EQ(cn_store_delete(ps.s, &fresh[i]), 0);
    uint8_t b[100];
    fill(b, sizeof b, 6999);
    CN_CHECK_EQ(cn_store_put(ps.s, b, sizeof b, NULL, NULL), 0); /* rolls to pack 2 */
    cn_store_compact_stats_t st;
    CN_CHECK_EQ(cn_store_compact(ps.s, 0, &st), 0);
    CN_CHECK_EQ(st.packs_retired, 1);
    CN_CHECK_EQ(count_in(data, "blobs"), files);
    for (uint32_t i = 0; i < N_SMALL; i++) {
        bool present = false;
        CN_CHECK(small_ok(ps.s, 5000, old, i));
        CN_CHECK_EQ(cn_store_have(ps.s, &fresh[i], 1, &present), 0);
        CN_CHECK(present == (i % 10 == 0) && (!present || small_ok(ps.s, 6000, fresh, i)));
    }
    ps_close(&ps);
    rmdata(data);
}

/* P4 with a tree that had no blob directory at open: a file this process
 * puts (an LZ4 blob is never packed) is found by a later raw put of the
 * same digest, which refreshes it instead of appending a record. */
static void test_file_put_since_open(void)
{
    char *data = mkdata();
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    uint8_t b[3000];
    fill(b, sizeof b, 4242);
    cn_digest_t d, d2;
    CN_CHECK_EQ(cn_store_put(ps.s, b, 100, NULL, NULL), 0); /* opens pack 1 */
    char pack1[512];
    pack_path(data, 1, pack1, sizeof pack1);
    off_t packed = file_size(pack1);
    cn_store_writer_t *w = NULL;
    CN_CHECK_EQ(cn_store_writer_open(ps.s, NULL, -1, &w), 0);
    CN_CHECK_EQ(cn_store_writer_set_form(w, CN_STORE_LZ4), 0);
    CN_CHECK_EQ(cn_store_writer_write(w, b, sizeof b), 0);
    CN_CHECK_EQ(cn_store_writer_publish(w, &d, NULL), 0);
    CN_CHECK_EQ(count_in(data, "blobs"), 1);
    CN_CHECK_EQ(cn_store_put(ps.s, b, sizeof b, NULL, &d2), 0);
    CN_CHECK_MEM(d.b, d2.b, CN_DIGEST_LEN);
    CN_CHECK_EQ(file_size(pack1), packed); /* no record appended */
    CN_CHECK(reads_back(ps.s, &d, b, sizeof b));
    ps_close(&ps);
    /* Reopened: the directory is found at open, the answer is the same. */
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(cn_store_put(ps.s, b, sizeof b, NULL, NULL), 0);
    CN_CHECK_EQ(file_size(pack1), packed);
    CN_CHECK_EQ(count_in(data, "blobs"), 1);
    ps_close(&ps);
    rmdata(data);
}

/* ---- crash loop ---------------------------------------------------------------- */

enum {
    CRASH_THREADS = 4,
    CRASH_ROUNDS = 24
};

typedef struct crash_writer {
    cn_store_t *s;
    int pipe_fd;
    uint32_t base;
} crash_writer_t;

static size_t crash_len(uint32_t seed)
{
    return 1 + (seed * 2654435761u) % 16384;
}

static void *crash_write_main(void *arg)
{
    crash_writer_t *w = arg;
    uint8_t b[16384];
    for (uint32_t i = 0;; i++) {
        uint32_t seed = w->base + i;
        fill(b, crash_len(seed), seed);
        if (cn_store_put(w->s, b, crash_len(seed), NULL, NULL) != 0)
            continue;
        /* acknowledged: tell the parent (4 bytes, atomic on a pipe) */
        if (write(w->pipe_fd, &seed, sizeof seed) != sizeof seed)
            _exit(3);
    }
    return NULL;
}

static void crash_child(const char *data, int pipe_fd, uint32_t base)
{
    pstore_t ps;
    if (ps_open(data, PACK_MAX, &ps) != 0)
        _exit(2);
    crash_writer_t w[CRASH_THREADS];
    pthread_t t[CRASH_THREADS];
    for (int i = 0; i < CRASH_THREADS; i++) {
        w[i] = (crash_writer_t){ ps.s, pipe_fd, base + (uint32_t)i * 1000000u };
        pthread_create(&t[i], NULL, crash_write_main, &w[i]);
    }
    for (;;)
        pause();
}

typedef struct seen {
    cn_store_t *s;
    size_t n, bad;
} seen_t;

/* Every indexed digest must have its bytes: a ghost fails verify. */
static cn_err_t check_all(void *ctx, const cn_digest_t *d, size_t n, bool *live)
{
    seen_t *sn = ctx;
    for (size_t i = 0; i < n; i++) {
        live[i] = true;
        sn->n++;
        if (cn_store_verify(sn->s, &d[i]) != 0)
            sn->bad++;
    }
    return CN_OK;
}

static void crash_round(const char *data, int round, cn_buf_t *acked)
{
    int fds[2];
    CN_CHECK_EQ(pipe(fds), 0);
    char hook[32] = "";
    if (round % 4) /* points 1..3: appended / synced / indexed, not acknowledged */
        snprintf(hook, sizeof hook, "%d:%d", round % 4, 1 + (round * 7) % 13);
    /* On PostgreSQL the data dir's database is made here, before the fork,
     * so that the child writes the one the parent checks. */
    (void)cn_test_meta_for(data);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (hook[0])
            setenv("CAIRN_TEST_PACK_CRASH", hook, 1);
        crash_child(data, fds[1], (uint32_t)round * 10000000u);
    }
    close(fds[1]);
    /* After the first acknowledgement (or the child's death at its hook
     * point), a moment later: the kill lands at a random point of the
     * writes, however slow the build. */
    uint32_t seed;
    if (read(fds[0], &seed, sizeof seed) == sizeof seed)
        cn_buf_append(acked, &seed, sizeof seed);
    usleep((useconds_t)((round * 7919) % 50000));
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    while (read(fds[0], &seed, sizeof seed) == sizeof seed)
        cn_buf_append(acked, &seed, sizeof seed);
    close(fds[0]);

    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    if (!ps.s)
        return;
    size_t lost = 0;
    const uint32_t *a = (const uint32_t *)acked->data;
    for (size_t i = 0; i < acked->len / sizeof *a; i++) {
        uint8_t b[16384];
        cn_digest_t d;
        fill(b, crash_len(a[i]), a[i]);
        cn_blake3(b, crash_len(a[i]), &d);
        if (!reads_back(ps.s, &d, b, crash_len(a[i])))
            lost++;
    }
    CN_CHECK_EQ(lost, 0);
    seen_t sn = { ps.s, 0, 0 };
    char name[16];
    snprintf(name, sizeof name, "check%d", round);
    CN_CHECK_EQ(cn_store_register_liveness_batch(ps.s, name, check_all, &sn), 0);
    CN_CHECK_EQ(cn_store_sweep(ps.s, 0, NULL), 0);
    CN_CHECK_EQ(sn.bad, 0);
    CN_CHECK(sn.n >= acked->len / sizeof *a);
    ps_close(&ps);
}

static void test_crash_loop(void)
{
    char *data = mkdata();
    cn_buf_t acked = { 0 };
    for (int round = 0; round < CRASH_ROUNDS; round++)
        crash_round(data, round, &acked);
    CN_CHECK(acked.len > 0);
    cn_buf_free(&acked);
    CN_CHECK_EQ(count_in(data, "staging"), 0);
    rmdata(data);
}

/* ---- compaction (src/store/sweep.c, C1-C6; pack.c, P7-P8) ------------------------ */

/* A closed data dir of many ~16 KiB packs holding N_SMALL blobs of seeds
 * base.., of which only every tenth is left (the rest deleted): ~10 % live.
 * *packs receives how many pack files it has. */
static char *sparse_dir(uint32_t base, cn_digest_t *ds, size_t *packs)
{
    setenv("CAIRN_TEST_PACK_FILE_MAX", "16384", 1);
    char *data = mkdata();
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    unsetenv("CAIRN_TEST_PACK_FILE_MAX");
    put_small(ps.s, base, ds);
    for (uint32_t i = 0; i < N_SMALL; i++)
        if (i % 10)
            CN_CHECK_EQ(cn_store_delete(ps.s, &ds[i]), 0);
    ps_close(&ps);
    *packs = count_in(data, "packs");
    return data;
}

/* Every tenth blob reads back, verified; every other one is gone. */
static size_t sparse_bad(cn_store_t *s, uint32_t base, const cn_digest_t *ds)
{
    size_t bad = 0;
    for (uint32_t i = 0; i < N_SMALL; i++) {
        bool present = false;
        if (cn_store_have(s, &ds[i], 1, &present) != 0 || present != (i % 10 == 0))
            bad++;
        else if (present && !small_ok(s, base, ds, i))
            bad++;
    }
    return bad;
}

static void test_compact(void)
{
    static cn_digest_t ds[N_SMALL];
    size_t before;
    char *data = sparse_dir(7000, ds, &before);
    CN_CHECK(before > 10);
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    /* C5: a location looked up before the pass, and a borrowed descriptor. */
    cn__pack_loc_t old;
    CN_CHECK(cn__pack_find(ps.s, &ds[10], &old));
    int bfd = -1;
    uint64_t boff = 0, blen = 0;
    void *h = NULL;
    CN_CHECK_EQ(cn_store_fd_get_at(ps.s, &ds[10], &bfd, &boff, &blen, &h), 0);
    cn_store_compact_stats_t st;
    CN_CHECK_EQ(cn_store_compact(ps.s, 50, &st), 0);
    CN_CHECK_EQ(st.packs, before - 1);
    CN_CHECK(st.packs_retired > before / 2);
    CN_CHECK(st.records_moved > 0 && st.records_moved <= N_SMALL / 10);
    CN_CHECK(st.bytes_freed > 4 * st.bytes_moved);
    CN_CHECK_EQ(count_in(data, "packs"), before - st.packs_retired);
    CN_CHECK_EQ(sparse_bad(ps.s, 7000, ds), 0);
    /* The old location still reads the old, right bytes (the file is
     * unlinked, its descriptor kept until the next pass). */
    uint8_t *buf = malloc(old.len + 1);
    CN_CHECK_EQ(cn__pack_read(&old, buf), 0);
    uint8_t want[8192];
    fill(want, 410, 7000 + 10);
    CN_CHECK(pread(bfd, buf, blen, (off_t)boff) == (ssize_t)blen && !memcmp(buf, want, blen));
    cn_store_fd_put(ps.s, bfd, h);
    free(buf);
    /* A second pass at 100 % finds nothing under 50 % left and moves only
     * what lies in packs with any dead byte. */
    CN_CHECK_EQ(cn_store_compact(ps.s, 100, &st), 0);
    CN_CHECK_EQ(st.packs_kept, 0);
    size_t after = count_in(data, "packs");
    ps_close(&ps);
    /* Reopened: nothing deleted comes back (no ghost), nothing live is lost. */
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(sparse_bad(ps.s, 7000, ds), 0);
    CN_CHECK_EQ(count_in(data, "packs"), after);
    CN_CHECK_EQ(cn_store_compact(ps.s, 101, NULL), CN_E_INVALID);
    ps_close(&ps);
    rmdata(data);
}

/* Readers racing compaction (P9, C5): threads take zero-copy descriptors
 * of the surviving blobs and read them while passes move the blobs and
 * retire their packs; every read is byte-exact, and a descriptor taken
 * before two passes (the second closes the retired pack's own descriptor)
 * still reads its blob. */
typedef struct zc_race {
    cn_store_t *s;
    const cn_digest_t *ds;
    atomic_bool stop;
    atomic_long reads, bad;
} zc_race_t;

static void *zc_reader(void *arg)
{
    zc_race_t *z = arg;
    uint8_t want[8192], got[8192];
    for (uint32_t i = 0; !atomic_load(&z->stop); i = (i + 10) % N_SMALL) {
        int fd = -1;
        uint64_t off = 0, len = 0;
        void *h = NULL;
        size_t wn = (i * 41) % sizeof want;
        fill(want, wn, 7100 + i);
        if (cn_store_fd_get_at(z->s, &z->ds[i], &fd, &off, &len, &h) != 0 || len != wn ||
            pread(fd, got, wn, (off_t)off) != (ssize_t)wn || memcmp(got, want, wn) != 0)
            atomic_fetch_add(&z->bad, 1);
        if (fd >= 0)
            cn_store_fd_put(z->s, fd, h);
        atomic_fetch_add(&z->reads, 1);
    }
    return NULL;
}

static void test_zero_copy_races_compaction(void)
{
    static cn_digest_t ds[N_SMALL];
    size_t before;
    char *data = sparse_dir(7100, ds, &before);
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    int held = -1;
    uint64_t hoff = 0, hlen = 0;
    void *hh = NULL;
    CN_CHECK_EQ(cn_store_fd_get_at(ps.s, &ds[20], &held, &hoff, &hlen, &hh), 0);
    zc_race_t z = { .s = ps.s, .ds = ds };
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CN_CHECK_EQ(pthread_create(&t[i], NULL, zc_reader, &z), 0);
    cn_store_compact_stats_t st;
    CN_CHECK_EQ(cn_store_compact(ps.s, 50, &st), 0);
    CN_CHECK(st.packs_retired > before / 2);
    uint64_t retired = st.packs_retired;
    CN_CHECK_EQ(cn_store_compact(ps.s, 100, &st), 0); /* closes the retired packs' descriptors */
    retired += st.packs_retired;
    while (atomic_load(&z.reads) < 2000)
        usleep(1000);
    atomic_store(&z.stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CN_CHECK_EQ(atomic_load(&z.bad), 0);
    CN_CHECK(retired > 0);
    CN_CHECK(count_in(data, "packs") < before);
    uint8_t want[8192], got[8192];
    size_t wn = (20 * 41) % sizeof want;
    fill(want, wn, 7100 + 20);
    CN_CHECK(hlen == wn && pread(held, got, wn, (off_t)hoff) == (ssize_t)wn &&
             !memcmp(got, want, wn));
    cn_store_fd_put(ps.s, held, hh);
    ps_close(&ps);
    rmdata(data);
}

/* P10: an old data directory's small files move into packs (a damaged one
 * stays a file, a large one too); everything reads back, after a reopen as
 * well; a second run has nothing left to do. */
static void test_pack_files(void)
{
    static cn_digest_t ds[N_SMALL];
    char *data = mkdata();
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, 0, &ps), 0); /* packs off: small blobs as files */
    put_small(ps.s, 9500, ds);
    static uint8_t big[PACK_MAX + 1];
    fill(big, sizeof big, 9499);
    cn_digest_t bd;
    CN_CHECK_EQ(cn_store_put(ps.s, big, sizeof big, NULL, &bd), 0);
    ps_close(&ps);
    size_t files = count_in(data, "blobs");
    CN_CHECK(files >= N_SMALL + 1);
    /* One small file damaged: never packed, left for a scrub. */
    char hex[CN_DIGEST_HEX_LEN + 1], fp[1200];
    cn_digest_hex(&ds[3], hex);
    snprintf(fp, sizeof fp, "%s/blobs/%.2s/%.2s/%s", data, hex, hex + 2, hex);
    CN_CHECK_EQ(chmod(fp, 0644), 0);
    int fd = open(fp, O_RDWR);
    CN_CHECK(fd >= 0 && pwrite(fd, "!", 1, 5) == 1);
    close(fd);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(cn_store_pack_files(ps.s, 0, NULL), 0);
    ps_close(&ps);
    /* Reopened with packs: the run above moved all but two. */
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    cn_store_pack_stats_t st;
    CN_CHECK_EQ(cn_store_pack_files(ps.s, PACK_MAX, &st), 0);
    CN_CHECK_EQ(st.candidates, 1); /* the damaged one */
    CN_CHECK_EQ(st.moved, 0);
    CN_CHECK_EQ(st.kept, 1);
    CN_CHECK_EQ(st.files, 2);
    for (uint32_t i = 0; i < N_SMALL; i++)
        if (i != 3)
            CN_CHECK(small_ok(ps.s, 9500, ds, i));
    CN_CHECK(reads_back(ps.s, &bd, big, sizeof big));
    CN_CHECK_EQ(cn_store_verify(ps.s, &ds[3]), CN_E_CORRUPT);
    cn__pack_loc_t loc;
    CN_CHECK(cn__pack_find(ps.s, &ds[10], &loc));
    CN_CHECK(!cn__pack_find(ps.s, &ds[3], &loc));
    CN_CHECK_EQ(cn_store_pack_files(ps.s, 300 * 1024, NULL), CN_E_INVALID);
    ps_close(&ps);
    CN_CHECK_EQ(count_in(data, "blobs"), files - (N_SMALL - 1));
    rmdata(data);
}

/* P7: a move whose entry is gone or elsewhere changes nothing. */
static void test_compact_move_races(void)
{
    static cn_digest_t ds[N_SMALL];
    pstore_t ps;
    char *data = packed_open(8000, ds, &ps);
    cn__pack_live_t *ents = NULL;
    size_t n = 0;
    CN_CHECK_EQ(cn__pack_live_list(ps.s, 1, &ents, &n), 0);
    CN_CHECK_EQ(n, N_SMALL);
    /* ents[5] deleted first: its move must not bring it back. */
    cn_digest_t gone = ents[5].d;
    CN_CHECK_EQ(cn_store_delete(ps.s, &gone), 0);
    uint8_t pay[8192] = { 0 };
    cn__commit_req_t r[3] = {
        { .payload = pay, .payload_len = 0, .d = gone, .move_pack = 1, .move_off = ents[5].off },
        { .payload = pay,
          .payload_len = 0,
          .d = ents[6].d,
          .move_pack = 1,
          .move_off = ents[6].off + 1 }, /* not where the index has it */
        { .payload = pay,
          .payload_len = 0,
          .d = ents[7].d,
          .move_pack = 2,
          .move_off = ents[7].off }, /* not in that pack */
    };
    cn__committer_submit_packed(ps.s, r, 3);
    for (int i = 0; i < 3; i++)
        CN_CHECK_EQ(r[i].rc, 0);
    bool present = true;
    CN_CHECK_EQ(cn_store_have(ps.s, &gone, 1, &present), 0);
    CN_CHECK(!present);
    cn__pack_live_t *again = NULL;
    size_t m = 0;
    CN_CHECK_EQ(cn__pack_live_list(ps.s, 1, &again, &m), 0);
    CN_CHECK_EQ(m, N_SMALL - 1); /* nothing moved */
    for (uint32_t i = 0; i < N_SMALL; i++)
        if (memcmp(ds[i].b, gone.b, CN_DIGEST_LEN) != 0)
            CN_CHECK(small_ok(ps.s, 8000, ds, i));
    free(again);
    free(ents);
    ps_close(&ps);
    /* ... and still not after a reopen (the recovery scan sees no copy). */
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(cn_store_have(ps.s, &gone, 1, &present), 0);
    CN_CHECK(!present);
    ps_close(&ps);
    rmdata(data);
}

/* C2: a live record that fails its check is never copied; its pack stays. */
static void test_compact_corrupt(void)
{
    static cn_digest_t ds[N_SMALL];
    size_t before;
    char *data = sparse_dir(9000, ds, &before);
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    cn__pack_loc_t loc;
    CN_CHECK(cn__pack_find(ps.s, &ds[10], &loc));
    uint8_t b;
    CN_CHECK_EQ(pread(loc.fd, &b, 1, (off_t)loc.off + 3), 1);
    b ^= 0x40;
    CN_CHECK_EQ(pwrite(loc.fd, &b, 1, (off_t)loc.off + 3), 1);
    cn_store_compact_stats_t st;
    CN_CHECK_EQ(cn_store_compact(ps.s, 100, &st), 0);
    CN_CHECK_EQ(st.packs_kept, 1);
    CN_CHECK(st.packs_retired > 0);
    CN_CHECK_EQ(cn_store_verify(ps.s, &ds[10]), CN_E_CORRUPT);
    for (uint32_t i = 20; i < N_SMALL; i += 10)
        CN_CHECK(small_ok(ps.s, 9000, ds, i));
    ps_close(&ps);
    rmdata(data);
}

/* SIGKILL at each compaction hook (1: copies appended, not synced; 2:
 * synced, not indexed; 3: index moved, pack not yet marked; 4: marked, not
 * unlinked): nothing lost, nothing deleted back, no entry without its bytes,
 * and the next pass reclaims the disk. */
static void compact_crash_case(int point)
{
    static cn_digest_t ds[N_SMALL];
    size_t before;
    char *data = sparse_dir(10000 + (uint32_t)point * 1000, ds, &before);
    pid_t pid = fork();
    if (pid == 0) {
        char hook[8];
        snprintf(hook, sizeof hook, "%d", point);
        setenv("CAIRN_TEST_COMPACT_CRASH", hook, 1);
        pstore_t ps;
        if (ps_open(data, PACK_MAX, &ps) != 0)
            _exit(2);
        cn_store_compact(ps.s, 100, NULL);
        _exit(0); /* the hook was never reached: the parent fails */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CN_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(sparse_bad(ps.s, 10000 + (uint32_t)point * 1000, ds), 0);
    seen_t sn = { ps.s, 0, 0 };
    CN_CHECK_EQ(cn_store_register_liveness_batch(ps.s, "check", check_all, &sn), 0);
    CN_CHECK_EQ(cn_store_sweep(ps.s, 0, NULL), 0); /* and its compaction pass */
    CN_CHECK_EQ(sn.bad, 0);
    CN_CHECK_EQ(sn.n, N_SMALL / 10);
    cn_store_compact_stats_t st;
    CN_CHECK_EQ(cn_store_compact(ps.s, 100, &st), 0);
    CN_CHECK(count_in(data, "packs") < before / 2);
    CN_CHECK_EQ(sparse_bad(ps.s, 10000 + (uint32_t)point * 1000, ds), 0);
    ps_close(&ps);
    rmdata(data);
}

static void test_compact_crash(void)
{
    for (int point = 1; point <= 4; point++)
        compact_crash_case(point);
}

/* ---- faults (argument "faults", under the LD_PRELOAD shim) ----------------------- */

/* A new inode each time, so the shim notices the change on its next call. */
static void set_fault(const char *ctl, const char *text)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.new", ctl);
    FILE *f = fopen(tmp, "w");
    CN_CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
        CN_CHECK_EQ(rename(tmp, ctl), 0);
    }
}

/* Failures the shim injected since the control file last changed. */
static long fault_hits(const char *ctl)
{
    char p[1024];
    snprintf(p, sizeof p, "%s.hits", ctl);
    FILE *f = fopen(p, "r");
    long n = 0;
    if (f) {
        if (fscanf(f, "%ld", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

static void fault_case(cn_store_t *s, const char *ctl, const char *cfg, cn_err_t want,
                       uint32_t seed)
{
    uint8_t b[3000];
    fill(b, sizeof b, seed);
    cn_digest_t d;
    set_fault(ctl, cfg);
    CN_CHECK_EQ(cn_store_put(s, b, sizeof b, NULL, &d), want);
    CN_CHECK(fault_hits(ctl) > 0); /* the fault was really met */
    bool present = true;
    cn_blake3(b, sizeof b, &d);
    CN_CHECK_EQ(cn_store_have(s, &d, 1, &present), 0);
    CN_CHECK(!present);
    set_fault(ctl, "off\n");
    CN_CHECK_EQ(cn_store_put(s, b, sizeof b, NULL, &d), 0);
    CN_CHECK(reads_back(s, &d, b, sizeof b));
}

/* ENOSPC while compaction copies: the pass fails, nothing is lost, and the
 * next pass (space back) reclaims the disk. */
static void test_compact_enospc(const char *ctl)
{
    static cn_digest_t ds[N_SMALL];
    size_t before;
    char *data = sparse_dir(12000, ds, &before);
    pstore_t ps;
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    set_fault(ctl, "ops=write\nerrno=ENOSPC\npattern=*/packs/*.pack\n");
    cn_store_compact_stats_t st;
    CN_CHECK_EQ(cn_store_compact(ps.s, 100, &st), -ENOSPC);
    CN_CHECK(fault_hits(ctl) > 0);
    CN_CHECK_EQ(st.records_moved, 0); /* (a pack with nothing live may go) */
    set_fault(ctl, "off\n");
    CN_CHECK_EQ(sparse_bad(ps.s, 12000, ds), 0);
    CN_CHECK_EQ(cn_store_compact(ps.s, 100, &st), 0);
    CN_CHECK(st.packs_retired > 0);
    CN_CHECK(count_in(data, "packs") < before / 2);
    ps_close(&ps);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(sparse_bad(ps.s, 12000, ds), 0);
    ps_close(&ps);
    rmdata(data);
}

static void test_faults(void)
{
    const char *ctl = getenv("CN_FAULT_CTL");
    CN_CHECK(ctl != NULL);
    if (!ctl)
        return;
    char *data = mkdata();
    pstore_t ps;
    set_fault(ctl, "off\n");
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    fault_case(ps.s, ctl, "ops=write\nerrno=ENOSPC\npattern=*/packs/*.pack\n", -ENOSPC, 1);
    fault_case(ps.s, ctl, "ops=fdatasync\nerrno=EIO\npattern=*/packs/*.pack\n", -EIO, 2);
    ps_close(&ps);
    /* consistent after a reopen: both blobs, nothing torn */
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    for (uint32_t seed = 1; seed <= 2; seed++) {
        uint8_t b[3000];
        cn_digest_t d;
        fill(b, sizeof b, seed);
        cn_blake3(b, sizeof b, &d);
        CN_CHECK(reads_back(ps.s, &d, b, sizeof b));
    }
    ps_close(&ps);
    rmdata(data);
    test_compact_enospc(ctl);
}

/* ---- the committer's two stages (P11) ----------------------------------------- */

enum {
    PIPE_LEN = 3000
};

typedef struct put_job {
    cn_store_t *s;
    uint32_t seed;
    size_t len;
    pthread_t th;
    cn_digest_t d;
    cn_err_t rc;
    atomic_bool done;
} put_job_t;

static void *put_main(void *arg)
{
    put_job_t *j = arg;
    uint8_t *b = malloc(j->len);
    fill(b, j->len, j->seed);
    j->rc = cn_store_put(j->s, b, j->len, NULL, &j->d);
    free(b);
    atomic_store(&j->done, true);
    return NULL;
}

static void put_start(put_job_t *j, cn_store_t *s, uint32_t seed, size_t len)
{
    j->s = s;
    j->seed = seed;
    j->len = len;
    j->rc = CN_E_INVALID;
    atomic_init(&j->done, false);
    CN_CHECK_EQ(pthread_create(&j->th, NULL, put_main, j), 0);
}

static void put_join(put_job_t *j)
{
    pthread_join(j->th, NULL);
    CN_CHECK_EQ(j->rc, 0);
}

/* Waits (5 s at most) until the file at p is at least size bytes long. */
static bool grows_to(const char *p, off_t size)
{
    for (int i = 0; i < 500; i++) {
        if (file_size(p) >= size)
            return true;
        usleep(10000);
    }
    return false;
}

/* A fresh packed store whose index transactions each wait 1 s
 * (pack_file_max: the roll size, NULL for the default), with a put of
 * PIPE_LEN bytes of seed started in *a and its record appended to pack 1
 * (its path in pp, its size before in *base). */
static char *slow_first_put(pstore_t *ps, const char *pack_file_max, put_job_t *a, uint32_t seed,
                            char pp[4096], off_t *base)
{
    char *data = mkdata();
    setenv("CAIRN_TEST_PACK_INDEX_DELAY_MS", "1000", 1);
    if (pack_file_max)
        setenv("CAIRN_TEST_PACK_FILE_MAX", pack_file_max, 1);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, ps), 0);
    unsetenv("CAIRN_TEST_PACK_INDEX_DELAY_MS");
    unsetenv("CAIRN_TEST_PACK_FILE_MAX");
    pack_path(data, 1, pp, 4096);
    *base = file_size(pp);
    put_start(a, ps->s, seed, PIPE_LEN);
    CN_CHECK(grows_to(pp, *base + CN__PACK_REC_HDR + PIPE_LEN));
    return data;
}

/* P12: with zeros kept ahead, the pack's file runs past its records (no
 * file growth per sync); the records read back; a clean close cuts the
 * zeros; zeros a crash left are cut by recovery, and the next record lands
 * right after the last one. */
static void test_zeros_ahead(void)
{
    enum {
        AHEAD = 256 * 1024,
        N = 40,
        LEN = 3000
    };
    char *data = mkdata();
    char pp[1024];
    pack_path(data, 1, pp, sizeof pp);
    pstore_t ps;
    cn_meta_opts_t mo = { .no_sync = true };
    memset(&ps, 0, sizeof ps);
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(data), &mo, &ps.meta), 0);
    cn_store_opts_t o = { .meta = ps.meta, .pack_max_bytes = PACK_MAX, .pack_zero_ahead = AHEAD };
    CN_CHECK_EQ(cn_store_open(data, &o, &ps.s), 0);
    cn_digest_t ds[N];
    uint8_t b[LEN];
    for (uint32_t i = 0; i < N; i++) {
        fill(b, sizeof b, 4000 + i);
        CN_CHECK_EQ(cn_store_put(ps.s, b, sizeof b, NULL, &ds[i]), 0);
    }
    off_t records = (off_t)N * (CN__PACK_REC_HDR + LEN);
    CN_CHECK(file_size(pp) > records && file_size(pp) <= records + AHEAD + 64 * 1024);
    CN_CHECK_EQ(file_size(pp) % (64 * 1024), 0);
    for (uint32_t i = 0; i < N; i++) {
        fill(b, sizeof b, 4000 + i);
        CN_CHECK(reads_back(ps.s, &ds[i], b, sizeof b));
    }
    ps_close(&ps);
    CN_CHECK_EQ(file_size(pp), records); /* a clean close cuts them */
    /* zeros a crash left behind: recovery cuts them, nothing is lost */
    static const uint8_t zeros[100000];
    append_bytes(pp, zeros, sizeof zeros);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK_EQ(file_size(pp), records);
    for (uint32_t i = 0; i < N; i++) {
        fill(b, sizeof b, 4000 + i);
        CN_CHECK(reads_back(ps.s, &ds[i], b, sizeof b));
    }
    fill(b, sizeof b, 4999);
    cn_digest_t last;
    CN_CHECK_EQ(cn_store_put(ps.s, b, sizeof b, NULL, &last), 0);
    ps_close(&ps);
    CN_CHECK_EQ(file_size(pp), records + CN__PACK_REC_HDR + LEN);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    CN_CHECK(reads_back(ps.s, &last, b, sizeof b));
    ps_close(&ps);
    rmdata(data);
}

/* While one batch waits for its index transaction, the next batch's record
 * is appended and synced; each put returns only once its own is indexed. */
static void test_stages_overlap(void)
{
    pstore_t ps;
    put_job_t a, b;
    char pp[4096];
    off_t base, rec = CN__PACK_REC_HDR + PIPE_LEN;
    char *data = slow_first_put(&ps, NULL, &a, 9101, pp, &base);
    put_start(&b, ps.s, 9102, PIPE_LEN);
    CN_CHECK(grows_to(pp, base + 2 * rec));
    CN_CHECK(!atomic_load(&a.done)); /* b's record synced while a's index is pending */
    CN_CHECK(!atomic_load(&b.done));
    put_join(&a);
    put_join(&b);
    uint8_t want[PIPE_LEN];
    fill(want, sizeof want, 9101);
    CN_CHECK(reads_back(ps.s, &a.d, want, sizeof want));
    ps_close(&ps);
    CN_CHECK_EQ(ps_open(data, PACK_MAX, &ps), 0);
    fill(want, sizeof want, 9102);
    CN_CHECK(reads_back(ps.s, &b.d, want, sizeof want));
    CN_CHECK_EQ(file_size(pp), base + 2 * rec);
    ps_close(&ps);
    rmdata(data);
}

/* A put of a digest whose record is between the stages waits for its index
 * and refreshes it: one record, not two. */
static void test_stages_same_digest(void)
{
    pstore_t ps;
    put_job_t a, again;
    char pp[4096];
    off_t base, rec = CN__PACK_REC_HDR + PIPE_LEN;
    char *data = slow_first_put(&ps, NULL, &a, 9201, pp, &base);
    put_start(&again, ps.s, 9201, PIPE_LEN);
    put_join(&a);
    put_join(&again);
    CN_CHECK_EQ(memcmp(a.d.b, again.d.b, CN_DIGEST_LEN), 0);
    CN_CHECK_EQ(file_size(pp), base + rec);
    uint8_t want[PIPE_LEN];
    fill(want, sizeof want, 9201);
    CN_CHECK(reads_back(ps.s, &a.d, want, sizeof want));
    ps_close(&ps);
    rmdata(data);
}

/* The pack rolls only once the batch in flight is indexed: the new pack
 * does not exist while it is pending. */
static void test_stages_roll(void)
{
    pstore_t ps;
    put_job_t a, big;
    char p1[4096], p2[4096];
    off_t base;
    char *data = slow_first_put(&ps, "8192", &a, 9301, p1, &base);
    pack_path(data, 2, p2, sizeof p2);
    put_start(&big, ps.s, 9302, 6000); /* does not fit beside a: a roll */
    usleep(300000);
    CN_CHECK(!atomic_load(&a.done));
    CN_CHECK_EQ(file_size(p2), -1);
    put_join(&a);
    put_join(&big);
    CN_CHECK_EQ(file_size(p2), (off_t)(CN__PACK_REC_HDR + 6000));
    uint8_t want[6000];
    fill(want, sizeof want, 9302);
    CN_CHECK(reads_back(ps.s, &big.d, want, sizeof want));
    ps_close(&ps);
    rmdata(data);
}

static void skip_slow_on_pg(void)
{
    CN_SKIP("SIGKILL rounds, about 80 s under ASan on PostgreSQL (store_pack runs them on "
            "SQLite): CAIRN_SLOW_TESTS=1 runs them here too");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "faults") == 0) {
        static const cn_test_case_t faults[] = { CN_TEST(test_faults) };
        return cn_test_run(faults, 1);
    }
    static cn_test_case_t cases[] = {
        CN_TEST(test_record_golden),
        CN_TEST(test_record_bounds),
        CN_TEST(test_write_read),
        CN_TEST(test_sweep),
        CN_TEST(test_recover_torn_header),
        CN_TEST(test_recover_torn_body),
        CN_TEST(test_recover_bad_crc),
        CN_TEST(test_recover_bad_digest),
        CN_TEST(test_recover_unindexed),
        CN_TEST(test_index_never_without_bytes),
        CN_TEST(test_flipped_byte),
        CN_TEST(test_upgrade),
        CN_TEST(test_file_put_since_open),
        CN_TEST(test_crash_loop),
        CN_TEST(test_compact),
        CN_TEST(test_compact_move_races),
        CN_TEST(test_compact_corrupt),
        CN_TEST(test_compact_crash),
        CN_TEST(test_zero_copy_at),
        CN_TEST(test_zero_copy_races_compaction),
        CN_TEST(test_pack_files),
        CN_TEST(test_stages_overlap),
        CN_TEST(test_stages_same_digest),
        CN_TEST(test_stages_roll),
        CN_TEST(test_zeros_ahead),
    };
    const size_t n = sizeof cases / sizeof cases[0];
    /* store_pack_pg: the two crash loops only with CAIRN_SLOW_TESTS=1
     * (make test's time); every other case runs on both engines. */
    const char *slow = getenv("CAIRN_SLOW_TESTS");
    if (cn_test_meta_pg() && !(slow && !strcmp(slow, "1")))
        for (size_t i = 0; i < n; i++)
            if (cases[i].fn == test_crash_loop || cases[i].fn == test_compact_crash)
                cases[i].fn = skip_slow_on_pg;
    return cn_test_run(cases, n);
}
