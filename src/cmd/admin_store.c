/* `cairn admin --data DIR store compact [--live PCT]`: one pack compaction
 * pass now (cn_store_compact), printing what it reclaimed.
 * `cairn admin --data DIR store pack [--max BYTES]`: moves the small blob
 * files an older data directory holds into packs (cn_store_pack_files),
 * printing what it moved.  Both open the store, which one process holds at
 * a time: stop cairnd first (a running server compacts on its own after
 * every sweep).  Neither deletes a blob: compaction moves what the pack
 * index holds, the migration removes a file only once a pack holds its
 * bytes durably (docs/store.md).
 * `cairn admin --data DIR store recount`: sets the store's running totals
 * to a fresh count (blob files plus pack index rows), printing them before
 * and after; offline like the others, and refused for a fleet (--meta),
 * whose totals cover a tier every node writes.  stdout carries the result
 * line; messages go to stderr.  Exit 0 ok, 1 failure, 2 usage. */
#include "admin_open.h"
#include "cmd.h"

#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/util.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char store_usage[] =
    "usage: cairn admin --data DIR store compact [--live PCT]\n"
    "       rewrites every pack whose live bytes are under PCT % of its size\n"
    "       (default 50) and deletes it; the server must be stopped\n"
    "       cairn admin --data DIR store pack [--max BYTES]\n"
    "       moves every raw blob file of at most BYTES (default 65536, at most\n"
    "       262144) into packs; resumable; the server must be stopped\n"
    "       cairn admin --data DIR store recount\n"
    "       sets the blob and byte totals to a count of the blob files and\n"
    "       pack index rows; the server must be stopped; not for a fleet\n";

static int usage(void)
{
    fputs(store_usage, stderr);
    return 2;
}

/* The one option a store verb takes, "NAME N" with lo <= N <= hi, into *v
 * (left as it is when absent): false on a usage error. */
static bool num_opt(int argc, char **argv, const char *name, unsigned long long lo,
                    unsigned long long hi, unsigned long long *v)
{
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], name) != 0 || i + 1 >= argc)
            return false;
        *v = strtoull(argv[++i], &end, 10);
        if (!*argv[i] || *end || *v < lo || *v > hi)
            return false;
    }
    return true;
}

/* A verb's run over the store of data (opened with packs up to pack_max):
 * op, then its result line by print (also after a failure, which stderr
 * names).  The exit code. */
typedef cn_err_t (*store_op_fn)(cn_store_t *s, void *ctx);
static int store_verb(const char *data, uint64_t pack_max, const char *verb, store_op_fn op,
                      void (*print)(const void *ctx), void *ctx)
{
    cn_meta_t *meta = NULL;
    cn_store_t *store = NULL;
    int rc = 1;
    cn_err_t e = cn__admin_open_store(data, pack_max, &meta, &store);
    if (e >= 0 && (e = op(store, ctx)) < 0)
        fprintf(stderr, "cairn admin: store %s: %s (nothing lost; run it again)\n", verb,
                cn_strerror(e));
    else if (e >= 0)
        rc = 0;
    if (store)
        print(ctx);
    cn_store_close(store);
    cn_meta_close(meta);
    return rc;
}

typedef struct pack_run {
    uint64_t max;
    cn_store_pack_stats_t st;
} pack_run_t;

static cn_err_t pack_op(cn_store_t *s, void *ctx)
{
    pack_run_t *p = ctx;
    return cn_store_pack_files(s, p->max, &p->st);
}

static void pack_print(const void *ctx)
{
    const cn_store_pack_stats_t *st = &((const pack_run_t *)ctx)->st;
    printf("packed %" PRIu64 " of %" PRIu64 " small blob file(s) (%" PRIu64 " bytes), %" PRIu64
           " kept as files; %" PRIu64 " file(s) looked at\n",
           st->moved, st->candidates, st->bytes_moved, st->kept, st->files);
}

typedef struct compact_run {
    unsigned pct;
    cn_store_compact_stats_t st;
} compact_run_t;

static cn_err_t compact_op(cn_store_t *s, void *ctx)
{
    compact_run_t *c = ctx;
    return cn_store_compact(s, c->pct, &c->st);
}

static void compact_print(const void *ctx)
{
    const cn_store_compact_stats_t *st = &((const compact_run_t *)ctx)->st;
    printf("compacted %" PRIu64 " of %" PRIu64 " pack(s): %" PRIu64 " bytes freed, %" PRIu64
           " record(s) moved (%" PRIu64 " bytes), %" PRIu64 " kept\n",
           st->packs_retired, st->packs, st->bytes_freed, st->records_moved, st->bytes_moved,
           st->packs_kept);
}

static cn_err_t recount_op(cn_store_t *s, void *ctx)
{
    return cn_store_usage_recount(s, ctx);
}

static void recount_print(const void *ctx)
{
    const cn_store_recount_t *r = ctx;
    printf("recounted: %" PRId64 " blob(s), %" PRId64 " byte(s) (were %" PRId64 " blob(s), %" PRId64
           " byte(s))\n",
           r->blobs, r->bytes, r->blobs_before, r->bytes_before);
}

/* A fleet's totals count its shared tier, which every node puts into and
 * the sweeper of any node removes from: one directory's walk says nothing
 * about them, and stopping a whole fleet is not this command's to check. */
static int recount(const char *data, int argc)
{
    if (argc != 1)
        return usage();
    if (strcmp(cn__admin_meta_target(data), data) != 0) {
        fputs("cairn admin: store recount works on one data directory and its own meta.db; "
              "it refuses --meta (a fleet's totals count the shared blob tier that every node "
              "writes, docs/store.md \"Usage totals\")\n",
              stderr);
        return 1;
    }
    cn_store_recount_t r = { 0 };
    return store_verb(data, CN_STORE_PACK_DEFAULT_MAX, "recount", recount_op, recount_print, &r);
}

int cn_cmd_admin_store(const char *data, int argc, char **argv)
{
    unsigned long long v = 0;
    if (argc >= 1 && strcmp(argv[0], "recount") == 0)
        return recount(data, argc);
    if (argc >= 1 && strcmp(argv[0], "pack") == 0) {
        pack_run_t p = { .max = CN_STORE_PACK_DEFAULT_MAX };
        if (!num_opt(argc, argv, "--max", 1, 256 * 1024, &v))
            return usage();
        p.max = v ? v : p.max;
        return store_verb(data, p.max, "pack", pack_op, pack_print, &p);
    }
    if (argc < 1 || strcmp(argv[0], "compact") != 0 || !num_opt(argc, argv, "--live", 1, 100, &v))
        return usage();
    compact_run_t c = { .pct = (unsigned)v };
    return store_verb(data, CN_STORE_PACK_DEFAULT_MAX, "compact", compact_op, compact_print, &c);
}
