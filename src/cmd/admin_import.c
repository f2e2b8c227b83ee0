/* `cairn admin --meta URL [--identity-key FILE] fleet import --from DATA
 * [blob tier flags | --blob-dir DIR]`: moves a stopped embedded deployment
 * into a fleet (docs/fleet.md "Moving an embedded deployment in").  The
 * metadata first (cn_meta_import: every service's rows, table by table),
 * then every blob of DATA's store uploaded to the fleet's blob tier (or a
 * node's local store), each verified against its digest by the target's
 * writer; the import is marked finished last.  Resumable: a run after a
 * kill skips the tables recorded as copied and the blobs the target has.
 *
 * The identity key is not resealed: the fleet keeps the source's key
 * (DATA/identity.key), and an --identity-key naming another key is refused
 * before anything is copied.  This file must never write into DATA's
 * database or store (it writes only DATA/import.id, the import's name, and
 * the tier's staging under DATA/import-work). */
#include "admin_open.h"
#include "cmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

typedef struct imp_args {
    const char *from, *blob_dir;
    struct cn_store_tier tier;
} imp_args_t;

typedef struct imp_run {
    cn_meta_t *src_meta, *dst_meta;
    cn_store_t *src, *dst;
    long stop_after; /* CAIRN_IMPORT_STOP_AFTER (tests): stop after this many steps */
    long steps;
    uint64_t blobs, uploaded, bytes;
} imp_run_t;

static const char import_usage[] =
    "usage: cairn admin --meta postgres://... [--identity-key FILE] fleet import --from DATA\n"
    "         [--blob-store s3://BUCKET/PREFIX --blob-endpoint URL [--blob-region R]\n"
    "          [--blob-credentials FILE] [--blob-virtual-host] | --blob-dir DIR]\n";

static int imp_usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "cairn admin: fleet import: %s\n", msg);
    fputs(import_usage, stderr);
    return EXIT_USAGE;
}

static int parse_args(int argc, char **argv, imp_args_t *a)
{
    static const char *const names[] = { "--from", "--blob-dir" };
    const char **slots[] = { &a->from, &a->blob_dir };
    for (int i = 0; i < argc; i++) {
        int taken = cn__admin_tier_flag(argc, argv, &i, &a->tier);
        if (taken < 0)
            return imp_usage("an option needs a value");
        if (taken)
            continue;
        size_t k = 0;
        while (k < sizeof names / sizeof names[0] && strcmp(argv[i], names[k]))
            k++;
        if (k == sizeof names / sizeof names[0] || i + 1 >= argc || !argv[i + 1][0])
            return imp_usage(k < sizeof names / sizeof names[0] ? "an option needs a value"
                                                                : argv[i]);
        *slots[k] = argv[++i];
    }
    if (!a->from)
        return imp_usage("--from DATA is required");
    if (!a->tier.blob_store == !a->blob_dir)
        return imp_usage("name the target of the blobs: --blob-store ... or --blob-dir DIR");
    if (a->tier.blob_store && !a->tier.endpoint)
        return imp_usage("--blob-store needs --blob-endpoint");
    return EXIT_OK;
}

/* ---- the key and the import's name ---------------------------------------------- */

static cn_err_t read_key(const char *path, uint8_t key[32])
{
    char buf[130];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return -errno;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    return n == 64 ? cn_hex_decode(buf, 64, key, 32) : CN_E_INVALID;
}

/* The fleet keeps the source's key: a different --identity-key would make
 * every copied token secret unreadable.  EXIT_OK, or a message and 1. */
static int check_key(const char *from, const char *fleet_key)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/identity.key", from);
    uint8_t src[32], dst[32];
    cn_err_t e = read_key(path, src);
    if (e < 0) {
        fprintf(stderr, "cairn admin: fleet import: %s: %s\n", path, cn_strerror(e));
        return EXIT_SERVER;
    }
    if (!fleet_key) {
        fprintf(stderr,
                "cairn admin: fleet import: the fleet keeps this deployment's identity "
                "key: give every node --identity-key with a copy of %s\n",
                path);
        return EXIT_OK;
    }
    if ((e = read_key(fleet_key, dst)) < 0) {
        fprintf(stderr, "cairn admin: fleet import: %s: %s\n", fleet_key, cn_strerror(e));
        return EXIT_SERVER;
    }
    if (!cn_ct_equal(src, dst, 32)) {
        fprintf(stderr,
                "cairn admin: fleet import: %s is not the key of %s (%s): token secrets "
                "are sealed with it and are not resealed; use a copy of it as the "
                "fleet's key\n",
                fleet_key, from, path);
        return EXIT_SERVER;
    }
    return EXIT_OK;
}

/* DATA/import.id: drawn at the first import of DATA, kept, so a rerun is
 * known as the same import. */
static cn_err_t import_id(const char *from, char id[40])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/import.id", from);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, id, 39);
        close(fd);
        if (n < 8)
            return CN_E_CORRUPT;
        id[n] = 0;
        id[strcspn(id, "\r\n")] = 0;
        return 0;
    }
    uint8_t r[16];
    CN_TRY(cn_random_bytes(r, sizeof r));
    memcpy(id, "import-", 7);
    cn_hex_encode(r, sizeof r, id + 7);
    char line[48];
    int n = snprintf(line, sizeof line, "%s\n", id);
    return cn_file_replace(path, line, (size_t)n, 0600);
}

/* ---- steps ------------------------------------------------------------------------ */

/* The test hook: a kill at a known point, without a signal's timing. */
static cn_err_t step_done(imp_run_t *r)
{
    if (r->stop_after > 0 && ++r->steps >= r->stop_after) {
        fprintf(stderr,
                "cairn admin: fleet import: stopped after %ld steps "
                "(CAIRN_IMPORT_STOP_AFTER)\n",
                r->steps);
        return CN_E_SHUTDOWN;
    }
    return 0;
}

static cn_err_t on_table(void *arg, const char *table, int64_t rows)
{
    if (rows < 0) {
        printf("table %s: copied before\n", table);
        return 0;
    }
    printf("table %s: %lld rows\n", table, (long long)rows);
    fflush(stdout);
    return step_done(arg);
}

static cn_err_t sink_write(void *ctx, const void *p, size_t n)
{
    return cn_store_writer_write(ctx, p, n);
}

/* One blob: skipped when the target has it (a resumed run), else streamed
 * from DATA's store into the target's writer, which publishes it only if
 * the bytes hash to d (CN_E_DIGEST_MISMATCH otherwise). */
static cn_err_t copy_blob(void *arg, const void *digest)
{
    imp_run_t *r = arg;
    cn_digest_t d;
    memcpy(&d, digest, sizeof d);
    bool have = false;
    r->blobs++;
    CN_TRY(cn_store_have(r->dst, &d, 1, &have));
    if (have)
        return 0;
    cn_store_stat_t st;
    CN_TRY(cn_store_stat(r->src, &d, &st));
    cn_store_writer_t *w = NULL;
    CN_TRY(cn_store_writer_open(r->dst, &d, (int64_t)st.len, &w));
    cn_err_t e = cn_store_read_range(r->src, &d, 0, st.len, sink_write, w, NULL, NULL);
    if (e < 0) {
        cn_store_writer_abort(w);
        return e;
    }
    CN_TRY(cn_store_writer_publish(w, NULL, NULL));
    r->uploaded++;
    r->bytes += st.len;
    return step_done(r);
}

/* Every blob file of DATA/blobs/ab/cd/<hex>[.lz4] (store.h's layout),
 * then every packed blob (the pack index in DATA's metadata). */
static cn_err_t walk_blobs(const char *from, imp_run_t *r)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/blobs", from);
    cn_err_t e = 0;
    for (unsigned a = 0; a < 256 * 256 && e >= 0; a++) {
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/%02x/%02x", dir, a >> 8, a & 0xff);
        DIR *dh = opendir(sub);
        if (!dh)
            continue;
        for (struct dirent *de; e >= 0 && (de = readdir(dh));) {
            size_t n = strlen(de->d_name);
            cn_digest_t d;
            if ((n != CN_DIGEST_HEX_LEN && !(n == CN_DIGEST_HEX_LEN + 4 &&
                                             !strcmp(de->d_name + CN_DIGEST_HEX_LEN, ".lz4"))) ||
                cn_digest_parse(de->d_name, CN_DIGEST_HEX_LEN, &d) < 0)
                continue;
            e = copy_blob(r, &d);
        }
        closedir(dh);
    }
    return e < 0 ? e : cn_meta_import_packed(r->src_meta, copy_blob, r);
}

/* ---- the command ------------------------------------------------------------------- */

static int open_all(const imp_args_t *a, const char *meta_url, imp_run_t *r)
{
    const cn_meta_opts_t must = { .must_exist = true };
    cn_err_t e = cn_meta_open(a->from, &must, &r->src_meta);
    if (e < 0) {
        cn__admin_open_failed(a->from, "metadata", e);
        return EXIT_SERVER;
    }
    cn_store_opts_t so = { .meta = r->src_meta };
    if ((e = cn_store_open(a->from, &so, &r->src)) < 0) {
        cn__admin_open_failed(a->from, "store", e);
        return EXIT_SERVER;
    }
    if ((e = cn_meta_open(meta_url, NULL, &r->dst_meta)) < 0) {
        fprintf(stderr, "cairn admin: fleet import: cannot open %s: %s\n", meta_url,
                cn_strerror(e));
        return EXIT_SERVER;
    }
    return EXIT_OK;
}

/* The target's store, once its metadata is taken (opening it records the
 * store's schema there, which would make a fresh target look used). */
static int open_target_store(const imp_args_t *a, imp_run_t *r)
{
    cn_err_t e = 0;
    cn_store_opts_t to = { .meta = r->dst_meta, .tier = a->tier };
    char work[4096];
    snprintf(work, sizeof work, "%s/import-work", a->from);
    if (a->tier.blob_store && !a->tier.cache_bytes)
        to.tier.cache_bytes = 64u << 20; /* staging of uploads, not a cache worth keeping */
    const char *where = a->tier.blob_store ? work : a->blob_dir;
    if ((e = cn_store_open(where, &to, &r->dst)) < 0) {
        fprintf(stderr, "cairn admin: fleet import: cannot open the target blob store: %s\n",
                cn_strerror(e));
        return EXIT_SERVER;
    }
    return EXIT_OK;
}

static int run_import(const imp_args_t *a, const char *meta_url, imp_run_t *r)
{
    char id[40];
    cn_err_t e = import_id(a->from, id);
    if (e < 0) {
        fprintf(stderr, "cairn admin: fleet import: %s/import.id: %s\n", a->from, cn_strerror(e));
        return EXIT_SERVER;
    }
    int rc = open_all(a, meta_url, r);
    if (rc != EXIT_OK)
        return rc;
    const cn_meta_import_opts_t o = { id, on_table, r };
    e = cn_meta_import(r->src_meta, r->dst_meta, &o);
    if (e == CN_E_EXISTS) {
        fprintf(stderr,
                "cairn admin: fleet import: %s is not empty (another deployment's, or "
                "this import finished already): refused\n",
                meta_url);
        return EXIT_CONFLICT;
    }
    if (e >= 0 && (rc = open_target_store(a, r)) != EXIT_OK)
        return rc;
    if (e >= 0)
        e = walk_blobs(a->from, r);
    if (e >= 0)
        e = cn_meta_import_finish(r->dst_meta, id);
    if (e < 0) {
        fprintf(stderr, "cairn admin: fleet import: %s (run it again to resume)\n", cn_strerror(e));
        return EXIT_SERVER;
    }
    printf("imported %s: %llu blobs (%llu uploaded, %llu bytes)\n", id,
           (unsigned long long)r->blobs, (unsigned long long)r->uploaded,
           (unsigned long long)r->bytes);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_SERVER;
}

int cn__admin_fleet_import(const char *data, int argc, char **argv)
{
    (void)data;
    imp_args_t a = { 0 };
    int rc = parse_args(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc;
    const char *url = cn__admin_meta_target(NULL);
    if (!url || strncmp(url, "postgres", 8))
        return imp_usage("the fleet's metadata is --meta postgres://...");
    if ((rc = check_key(a.from, cn__admin_key())) != EXIT_OK)
        return rc;
    const char *stop = getenv("CAIRN_IMPORT_STOP_AFTER");
    imp_run_t r = { .stop_after = stop ? strtol(stop, NULL, 10) : 0 };
    rc = run_import(&a, url, &r);
    cn_store_close(r.dst);
    cn_store_close(r.src);
    cn_meta_close(r.dst_meta);
    cn_meta_close(r.src_meta);
    return rc;
}
