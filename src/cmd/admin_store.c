/* `cairn admin --data DIR store compact [--live PCT]`: one pack compaction
 * pass now (cn_store_compact), printing what it reclaimed.  It opens the
 * store, which one process holds at a time: stop cairnd first (a running
 * server compacts on its own after every sweep).  It never deletes a blob:
 * compaction only moves what the pack index holds (docs/store.md).
 * stdout carries the result line; messages go to stderr.
 * Exit 0 ok, 1 failure, 2 usage. */
#include "admin_open.h"
#include "cmd.h"

#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char store_usage[] =
    "usage: cairn admin --data DIR store compact [--live PCT]\n"
    "       rewrites every pack whose live bytes are under PCT %% of its size\n"
    "       (default 50) and deletes it; the server must be stopped\n";

static int usage(void)
{
    fputs(store_usage, stderr);
    return 2;
}

int cn_cmd_admin_store(const char *data, int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "compact") != 0)
        return usage();
    unsigned pct = 0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--live") != 0 || i + 1 >= argc)
            return usage();
        unsigned long v = strtoul(argv[++i], &end, 10);
        if (!*argv[i] || *end || v < 1 || v > 100)
            return usage();
        pct = (unsigned)v;
    }
    cn_meta_t *meta = NULL;
    cn_store_t *store = NULL;
    int rc = 1;
    cn_store_compact_stats_t st = { 0 };
    cn_err_t e = cn__admin_open_store(data, CN_STORE_PACK_DEFAULT_MAX, &meta, &store);
    if (e >= 0 && (e = cn_store_compact(store, pct, &st)) < 0)
        fprintf(stderr, "cairn admin: store compact: %s (nothing lost; run it again)\n",
                cn_strerror(e));
    else if (e >= 0)
        rc = 0;
    if (store)
        printf("compacted %" PRIu64 " of %" PRIu64 " pack(s): %" PRIu64 " bytes freed, %" PRIu64
               " record(s) moved (%" PRIu64 " bytes), %" PRIu64 " kept\n",
               st.packs_retired, st.packs, st.bytes_freed, st.records_moved, st.bytes_moved,
               st.packs_kept);
    cn_store_close(store);
    cn_meta_close(meta);
    return rc;
}
