/* Opening a data directory's metadata and store for the offline admin
 * commands (repo backup/restore, store compact), which hold the store alone:
 * a running cairnd makes the open fail with CN_E_BUSY, and the message says
 * to stop it.  Never opens anything a server would need exclusively without
 * saying so. */
#include "admin_open.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *admin_meta; /* --meta or CAIRN_META; NULL: the data dir's */

void cn__admin_set_meta(const char *meta)
{
    admin_meta = meta && *meta ? meta : NULL;
}

const char *cn__admin_meta_target(const char *data)
{
    return admin_meta ? admin_meta : data;
}

static const char *admin_key; /* --identity-key or CAIRN_IDENTITY_KEY */

void cn__admin_set_key(const char *key_file)
{
    admin_key = key_file;
}

const char *cn__admin_key(void)
{
    return admin_key;
}

void cn__admin_open_failed(const char *data, const char *what, cn_err_t e)
{
    fprintf(stderr, "cairn admin: cannot open the %s of %s: %s%s\n", what, data, cn_strerror(e),
            e == CN_E_BUSY ? " (is cairnd running? stop it first)" : "");
}

cn_err_t cn__admin_open_store(const char *data, uint64_t pack_max_bytes, cn_meta_t **meta,
                              cn_store_t **store)
{
    *meta = NULL;
    *store = NULL;
    cn_err_t e = cn_meta_open(cn__admin_meta_target(data), NULL, meta);
    if (e < 0) {
        cn__admin_open_failed(data, "metadata", e);
        return e;
    }
    cn_store_opts_t so = { .meta = *meta, .pack_max_bytes = pack_max_bytes };
    e = cn_store_open(data, &so, store);
    if (e < 0)
        cn__admin_open_failed(data, "store", e);
    return e;
}

int cn__admin_tier_flag(int argc, char **argv, int *i, struct cn_store_tier *t)
{
    static const char *const names[] = { "--blob-store", "--blob-endpoint", "--blob-region",
                                         "--blob-credentials" };
    const char **slots[] = { &t->blob_store, &t->endpoint, &t->region, &t->credentials_file };
    if (!strcmp(argv[*i], "--blob-virtual-host")) {
        t->virtual_host = true;
        return 1;
    }
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (strcmp(argv[*i], names[k]) != 0)
            continue;
        if (*i + 1 >= argc || !argv[*i + 1][0])
            return -1;
        *slots[k] = argv[++*i];
        return 1;
    }
    return 0;
}

cn_err_t cn__admin_open_tier(cn_meta_t *meta, const struct cn_store_tier *t, char dir[4096],
                             cn_store_t **store)
{
    *store = NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, 4096, "%s/cairn-admin-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        cn_err_t e = -errno;
        fprintf(stderr, "cairn admin: cannot make a scratch directory %s: %s\n", dir,
                cn_strerror(e));
        dir[0] = 0;
        return e;
    }
    cn_store_opts_t so = { .meta = meta, .tier = *t };
    so.tier.cache_bytes = 64u << 20; /* staging and a small cache, not one worth keeping */
    cn_err_t e = cn_store_open(dir, &so, store);
    if (e < 0)
        fprintf(stderr, "cairn admin: cannot open the blob tier %s: %s\n", t->blob_store,
                cn_strerror(e));
    return e;
}

void cn__admin_scratch_remove(const char *dir)
{
    cn_err_t e = dir[0] ? cn_remove_tree(dir) : CN_OK;
    if (e < 0)
        fprintf(stderr, "cairn admin: cannot remove %s: %s\n", dir, cn_strerror(e));
}
