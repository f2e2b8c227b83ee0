/* bench_store: the store's durable-write throughput against the machine's
 * own limits, measured in the same run on the same file system.
 *
 *   bench_store [--quick] [--dir DIR]
 *
 * Prints one result per line, "name value unit [note]", machine-readable by
 * taking the first three fields:
 *   seq_write_fsync    write 1 GiB then fsync (the large-blob limit)
 *   serial_fsync       append 4 KiB + fdatasync, in a loop (the small-blob limit)
 *   blake3             in-memory hashing speed
 *   publish_1g         staged write + publish of one 1 GiB blob, and its ratio
 *   small_4k_w1/w32    10,000 durable 4 KiB blobs from 1 and 32 writers, and ratios
 *   small_4k_w32_pack  the same 32 writers with pack files on (64 KiB threshold,
 *                      meta index), in a fresh data dir, and its ratio
 *   inodes_10k_files / inodes_10k_pack
 *                      inodes the data dir gained for those blobs, scaled to
 *                      10,000 (files and directories: blob tree, packs, meta)
 *   small_4k_w32_{files,pack}_cpu
 *                      process CPU (user + system) per blob of those runs
 *   small_4k_w32_{files,pack}_batch
 *                      mean blobs per group commit of those runs
 *   compact_*          one pack of 4 KiB blobs with 10 % live compacted:
 *                      MB/s of pack reclaimed, and the p99 of foreground
 *                      4 KiB reads (one reader thread) while it runs, beside
 *                      the p99 of the same reads without it
 * --quick shrinks the sizes (64 MiB, 1,000 blobs) for a smoke run; --packs
 * runs only serial_fsync, the files/packs pair and compaction.  DIR
 * (default: the current directory) is where a scratch data dir is made and
 * removed; put it on the file system the store will use.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cairn/crypto.h"
#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/util.h"

#define MIB (1024.0 * 1024.0)

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, rc < 0 ? cn_strerror(rc) : strerror(errno));
    exit(1);
}

static double now_s(void)
{
    return (double)cn_mono_ns() / 1e9;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
}

static void rm_rf(const char *path)
{
    DIR *dir = opendir(path);
    if (!dir) {
        unlink(path);
        return;
    }
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        rm_rf(p);
    }
    closedir(dir);
    rmdir(path);
}

static const char *fs_name(const char *dir)
{
    struct statfs sf;
    if (statfs(dir, &sf) < 0)
        return "unknown";
    switch ((unsigned long)sf.f_type) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x794c7630: return "overlayfs";
    case 0x2FC12FC1: return "zfs";
    case 0x6969: return "nfs";
    default: return "other";
    }
}

static void cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                c[strcspn(c, "\n")] = '\0';
                for (char *q = c; *q; q++)
                    if (*q == ' ')
                        *q = '_';
                snprintf(out, cap, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

/* ---- machine limits -------------------------------------------------------- */

/* dir is at most 2 KiB (main checks), so these paths always fit. */
static double bench_seq_write_fsync(const char *dir, uint64_t total, const uint8_t *buf,
                                    size_t chunk)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/seq.bin", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        die("open seq", -errno);
    double t0 = now_s();
    for (uint64_t off = 0; off < total; off += chunk) {
        cn_err_t rc = cn_write_full(fd, buf + (off / chunk % 8) * 64, chunk);
        if (rc < 0)
            die("write seq", rc);
    }
    if (fsync(fd) < 0)
        die("fsync seq", -errno);
    double dt = now_s() - t0;
    close(fd);
    unlink(p);
    return (double)total / MIB / dt;
}

static double bench_serial_fsync(const char *dir, int n)
{
    char p[4096];
    uint8_t b[4096];
    fill(b, sizeof b, 42);
    snprintf(p, sizeof p, "%s/fsync.bin", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        die("open fsync", -errno);
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (cn_write_full(fd, b, sizeof b) < 0 || fdatasync(fd) < 0)
            die("fsync loop", -errno);
    }
    double dt = now_s() - t0;
    close(fd);
    unlink(p);
    return n / dt;
}

static double bench_blake3(const uint8_t *buf, size_t n, int rounds)
{
    cn_digest_t d;
    double t0 = now_s();
    for (int i = 0; i < rounds; i++)
        cn_blake3(buf, n, &d);
    double dt = now_s() - t0;
    return (double)n * rounds / 1e9 / dt;
}

/* ---- store ------------------------------------------------------------------- */

static double bench_publish_big(cn_store_t *s, uint64_t total, const uint8_t *buf, size_t chunk)
{
    cn_store_writer_t *w;
    double t0 = now_s();
    cn_err_t rc = cn_store_writer_open(s, NULL, (int64_t)total, &w);
    if (rc < 0)
        die("writer_open", rc);
    for (uint64_t off = 0; off < total; off += chunk)
        if ((rc = cn_store_writer_write(w, buf + (off / chunk % 8) * 64, chunk)) < 0)
            die("writer_write", rc);
    cn_digest_t d;
    if ((rc = cn_store_writer_publish(w, &d, NULL)) < 0)
        die("publish", rc);
    double dt = now_s() - t0;
    if ((rc = cn_store_delete(s, &d)) < 0)
        die("delete", rc);
    return (double)total / MIB / dt;
}

typedef struct small_job {
    cn_store_t *s;
    uint64_t seed;
    int n;
} small_job_t;

static double cpu_s(void);

static cn_err_t count_sink(void *ctx, const void *p, size_t n)
{
    (void)p;
    *(uint64_t *)ctx += n;
    return CN_OK;
}

/* An LZ4-enveloped blob of total bytes (half of each chunk compressible),
 * read whole in 256 KiB ranges, in order, as a Scribe stream reads one
 * object: MB/s, and the process's CPU seconds per GiB read in *cpu. */
static double bench_lz4_ranges(cn_store_t *s, uint64_t total, uint8_t *buf, size_t chunk,
                               double *cpu)
{
    cn_store_writer_t *w;
    cn_err_t rc = cn_store_writer_open(s, NULL, (int64_t)total, &w);
    if (rc == 0)
        rc = cn_store_writer_set_form(w, CN_STORE_LZ4);
    memset(buf, 'c', chunk / 2);
    for (uint64_t done = 0; rc == 0 && done < total; done += chunk)
        rc = cn_store_writer_write(w, buf + (done / chunk) % chunk, chunk);
    cn_digest_t d;
    if (rc == 0)
        rc = cn_store_writer_publish(w, &d, NULL);
    if (rc < 0)
        die("lz4 blob", rc);
    uint64_t got = 0, piece = 256u << 10;
    double c0 = cpu_s(), t0 = now_s();
    for (uint64_t off = 0; off < total; off += piece)
        if ((rc = cn_store_read_range(s, &d, off, piece, count_sink, &got, NULL, NULL)) < 0)
            die("lz4 range read", rc);
    double t = now_s() - t0;
    *cpu = (cpu_s() - c0) / ((double)total / (1u << 30));
    if (got != total)
        die("lz4 range read: short", CN_E_CORRUPT);
    return (double)total / 1e6 / t;
}

static void *small_main(void *arg)
{
    small_job_t *j = arg;
    uint8_t b[4096];
    for (int i = 0; i < j->n; i++) {
        fill(b, sizeof b, j->seed + (uint64_t)i);
        cn_err_t rc = cn_store_put(j->s, b, sizeof b, NULL, NULL);
        if (rc < 0)
            die("small put", rc);
    }
    return NULL;
}

static double bench_small(cn_store_t *s, int writers, int total, uint64_t seed)
{
    pthread_t th[64];
    small_job_t jobs[64];
    double t0 = now_s();
    for (int i = 0; i < writers; i++) {
        jobs[i] = (small_job_t){ s, seed + (uint64_t)i * 1000000,
                                 total / writers + (i < total % writers) };
        if (pthread_create(&th[i], NULL, small_main, &jobs[i]))
            die("pthread_create", -EAGAIN);
    }
    for (int i = 0; i < writers; i++)
        pthread_join(th[i], NULL);
    return total / (now_s() - t0);
}

/* Files and directories under path, path included: the inodes a data dir
 * holds (statvfs would count every other process's files too). */
static double inodes_under(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    double n = 1;
    DIR *d = S_ISDIR(st.st_mode) ? opendir(path) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        n += inodes_under(p);
    }
    if (d)
        closedir(d);
    return n;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* 32 writers of small_n 4 KiB blobs into a fresh store at data (packs on
 * when pack_max): blobs/s, the inodes they cost scaled to 10,000, the
 * process CPU seconds per blob and the mean blobs per group commit. */
static double bench_small_fresh(const char *data, uint64_t pack_max, int small_n, double *inodes,
                                double *cpu, double *batch)
{
    cn_meta_t *meta = NULL;
    cn_store_t *s = NULL;
    cn_err_t rc = cn_mkdir_p(data, 0700);
    if (rc == CN_OK)
        rc = cn_meta_open(data, NULL, &meta);
    cn_store_opts_t o = { .meta = meta, .pack_max_bytes = pack_max };
    if (rc == CN_OK)
        rc = cn_store_open(data, &o, &s);
    if (rc < 0)
        die("open fresh store", rc);
    double i0 = inodes_under(data), c0 = cpu_s();
    cn_store_counters_t k0, k1;
    cn_store_counters(s, &k0);
    double v = bench_small(s, 32, small_n, 3ull << 40);
    cn_store_counters(s, &k1);
    *cpu = (cpu_s() - c0) / small_n;
    uint64_t nb = k1.commit_batches - k0.commit_batches;
    *batch = nb ? (double)(k1.commit_blobs - k0.commit_blobs) / nb : 0;
    *inodes = (inodes_under(data) - i0) * 10000.0 / small_n;
    cn_store_close(s);
    cn_meta_close(meta);
    return v;
}

/* ---- compaction ---- */

static void result(const char *name, double v, const char *unit);

typedef struct reader {
    cn_store_t *s;
    const cn_digest_t *live;
    size_t n_live;
    volatile bool stop;
    double *lat; /* seconds, up to cap */
    size_t n, cap;
} reader_t;

static void *reader_main(void *arg)
{
    reader_t *r = arg;
    uint8_t b[4096];
    uint64_t x = 88172645463325252ull;
    while (!r->stop && r->n < r->cap) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t got = 0;
        double t0 = now_s();
        cn_err_t rc =
            cn_store_read_range_buf(r->s, &r->live[x % r->n_live], 0, b, sizeof b, &got, NULL);
        if (rc < 0)
            die("read during compaction", rc);
        r->lat[r->n++] = now_s() - t0;
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double p99(reader_t *r)
{
    if (!r->n)
        return 0;
    qsort(r->lat, r->n, sizeof *r->lat, cmp_double);
    return r->lat[(size_t)((double)r->n * 0.99)];
}

/* Starts r's reader thread (stopped by r->stop). */
static void reads_while(reader_t *r, pthread_t *th)
{
    r->stop = false;
    r->n = 0;
    if (pthread_create(th, NULL, reader_main, r))
        die("pthread_create", -EAGAIN);
}

/* n 4 KiB blobs fill pack 1 exactly; 90 % are deleted; one pass compacts it
 * while one thread reads the live 10 %. */
static void bench_compact(const char *data, int n)
{
    char max[32];
    snprintf(max, sizeof max, "%d", n * (4096 + 48));
    setenv("CAIRN_TEST_PACK_FILE_MAX", max, 1); /* the store's test hook: one pack of n */
    cn_meta_t *meta = NULL;
    cn_store_t *s = NULL;
    cn_err_t rc = cn_mkdir_p(data, 0700);
    if (rc == CN_OK)
        rc = cn_meta_open(data, NULL, &meta);
    cn_store_opts_t o = { .meta = meta, .pack_max_bytes = 64 * 1024 };
    if (rc == CN_OK)
        rc = cn_store_open(data, &o, &s);
    unsetenv("CAIRN_TEST_PACK_FILE_MAX");
    if (rc < 0)
        die("open compaction store", rc);
    cn_digest_t *live = malloc(sizeof *live * (size_t)(n / 10 + 1));
    size_t n_live = 0;
    uint8_t b[4096];
    for (int i = 0; i <= n && live; i++) { /* the last one rolls to pack 2 */
        cn_digest_t d;
        fill(b, sizeof b, (5ull << 40) + (uint64_t)i);
        if ((rc = cn_store_put(s, b, sizeof b, NULL, &d)) < 0)
            die("compaction put", rc);
        if (i % 10 == 0 && i < n)
            live[n_live++] = d;
        else if (i < n && (rc = cn_store_delete(s, &d)) < 0)
            die("compaction delete", rc);
    }
    reader_t r = { .s = s, .live = live, .n_live = n_live, .cap = 1u << 22 };
    r.lat = malloc(sizeof *r.lat * r.cap);
    if (!live || !r.lat)
        die("malloc", -ENOMEM);
    pthread_t th;
    reads_while(&r, &th);
    usleep(1000000);
    r.stop = true;
    pthread_join(th, NULL);
    double quiet = p99(&r);
    reads_while(&r, &th);
    double t0 = now_s(), c0 = cpu_s();
    cn_store_compact_stats_t st;
    if ((rc = cn_store_compact(s, 50, &st)) < 0)
        die("compact", rc);
    double t = now_s() - t0, cpu = cpu_s() - c0;
    r.stop = true;
    pthread_join(th, NULL);
    result("compact_pack", (double)st.bytes_freed / MIB, "MiB");
    result("compact_live", 100.0 * (double)st.bytes_moved / (double)st.bytes_freed, "percent");
    result("compact_rate", (double)st.bytes_freed / MIB / t, "MiB/s");
    result("compact_cpu", cpu / t, "cpu_s/s");
    result("compact_get_p99_quiet", quiet * 1e6, "us");
    result("compact_get_p99_during", p99(&r) * 1e6, "us");
    result("compact_get_reads_during", (double)r.n, "reads");
    free(r.lat);
    free(live);
    cn_store_close(s);
    cn_meta_close(meta);
}

static void result(const char *name, double v, const char *unit)
{
    printf("%s %.2f %s\n", name, v, unit);
    fflush(stdout);
}

static void ratio(const char *name, double v, const char *of, double target)
{
    if (target > 0)
        printf("%s %.3f x_%s target>=%.2f %s\n", name, v, of, target,
               v >= target ? "met" : "not_met");
    else
        printf("%s %.3f x_%s\n", name, v, of);
    fflush(stdout);
}

/* Files against packs, fresh data dirs, same run: the ratio is the figure;
 * then compaction of one pack with 10 % live. */
static void packs_vs_files(const char *dir, int small_n, double fs)
{
    double in_files = 0, in_pack = 0, cf = 0, cp = 0, bf = 0, bp = 0;
    char d1[4200], d2[4200], d3[4200];
    snprintf(d1, sizeof d1, "%s/files", dir);
    snprintf(d2, sizeof d2, "%s/pack", dir);
    snprintf(d3, sizeof d3, "%s/compact", dir);
    double wf = bench_small_fresh(d1, 0, small_n, &in_files, &cf, &bf);
    result("small_4k_w32_files", wf, "blobs/s");
    ratio("small_4k_w32_files_ratio", wf / fs, "serial_fsync", 0);
    result("small_4k_w32_files_cpu", cf * 1e6, "us/blob");
    double wp = bench_small_fresh(d2, 64 * 1024, small_n, &in_pack, &cp, &bp);
    result("small_4k_w32_pack", wp, "blobs/s");
    ratio("small_4k_w32_pack_ratio", wp / fs, "serial_fsync", 10.0);
    result("small_4k_w32_pack_cpu", cp * 1e6, "us/blob");
    result("small_4k_w32_files_batch", bf, "blobs/batch");
    result("small_4k_w32_pack_batch", bp, "blobs/batch");
    result("inodes_10k_files", in_files, "inodes");
    result("inodes_10k_pack", in_pack, "inodes");
    bench_compact(d3, small_n * 2);
}

int main(int argc, char **argv)
{
    bool quick = false, packs_only = false;
    const char *base = ".";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--packs"))
            packs_only = true;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            base = argv[++i];
        else {
            fprintf(stderr, "usage: bench_store [--quick] [--packs] [--dir DIR]\n");
            return 2;
        }
    }
    cn_log_configure(CN_LOG_WARN, false);
    uint64_t big = quick ? 64ull << 20 : 1ull << 30;
    int small_n = quick ? 1000 : 10000;
    int fsync_n = quick ? 300 : 2000;
    size_t chunk = 1u << 20;

    char dir[2048];
    if ((size_t)snprintf(dir, sizeof dir, "%s/cairn-bench-XXXXXX", base) >= sizeof dir)
        die("--dir", -ENAMETOOLONG);
    if (!mkdtemp(dir))
        die("mkdtemp", -errno);

    /* 1 MiB chunks taken at shifting offsets from a random 2 MiB buffer. */
    uint8_t *buf = malloc(2 * chunk);
    size_t hash_n = 256u << 20;
    uint8_t *hbuf = malloc(hash_n);
    if (!buf || !hbuf)
        die("malloc", -ENOMEM);
    fill(buf, 2 * chunk, 1);
    fill(hbuf, hash_n, 2);

    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("machine_nproc %ld cpus\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("machine_cpu %s model\n", cpu);
    printf("machine_fs %s type\n", fs_name(dir));
    printf("blake3_backend %s simd\n", cn_blake3_backend());
    printf("mode %s %s\n", quick ? "quick" : "full", quick ? "64MiB/1000" : "1GiB/10000");
    fflush(stdout);

    if (packs_only) {
        double fs = bench_serial_fsync(dir, fsync_n);
        result("serial_fsync", fs, "ops/s");
        packs_vs_files(dir, small_n, fs);
        free(buf);
        free(hbuf);
        rm_rf(dir);
        return 0;
    }
    double seq = bench_seq_write_fsync(dir, big, buf, chunk);
    result("seq_write_fsync", seq, "MB/s");
    double fs = bench_serial_fsync(dir, fsync_n);
    result("serial_fsync", fs, "ops/s");
    double b3 = bench_blake3(hbuf, hash_n, quick ? 2 : 8);
    result("blake3", b3, "GB/s");
    ratio("blake3_ratio", b3 * 1e9 / MIB / seq, "seq_write_fsync", 0);
    free(hbuf);

    char data[4096];
    snprintf(data, sizeof data, "%s/data", dir);
    cn_store_t *s;
    cn_err_t rc = cn_store_open(data, NULL, &s);
    if (rc < 0)
        die("cn_store_open", rc);
    double pub = bench_publish_big(s, big, buf, chunk);
    result("publish_1g", pub, "MB/s");
    ratio("publish_1g_ratio", pub / seq, "seq_write_fsync", 0.80);

    double lz_cpu = 0,
           lz = bench_lz4_ranges(s, quick ? 64ull << 20 : 256ull << 20, buf, chunk, &lz_cpu);
    result("lz4_range_256k", lz, "MB/s");
    result("lz4_range_256k_cpu", lz_cpu, "s/GiB");

    double w1 = bench_small(s, 1, small_n, 1ull << 40);
    result("small_4k_w1", w1, "blobs/s");
    ratio("small_4k_w1_ratio", w1 / fs, "serial_fsync", 0);
    cn_store_counters_t c0, c1;
    cn_store_counters(s, &c0);
    double w32 = bench_small(s, 32, small_n, 2ull << 40);
    cn_store_counters(s, &c1);
    result("small_4k_w32", w32, "blobs/s");
    ratio("small_4k_w32_ratio", w32 / fs, "serial_fsync", 3.0);
    uint64_t nb = c1.commit_batches - c0.commit_batches;
    result("small_4k_w32_batch", nb ? (double)(c1.commit_blobs - c0.commit_blobs) / nb : 0,
           "blobs/batch");

    cn_store_close(s);

    packs_vs_files(dir, small_n, fs);

    free(buf);
    rm_rf(dir);
    return 0;
}
